//! Staging and the no-clobber publish (FORMAT-BRIEF §1): an existing version is
//! refused before any I/O; a version is only ever created whole by one rename;
//! dropping, aborting or failing leaves no version and no staging directory;
//! two writers racing for one version get exactly one winner.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use timef::reader::Version;
use timef::{Error, Sample, SeriesMeta, TimeFWriter, WriteProgressEvent};

use common::*;

fn writer(root: &Path) -> TimeFWriter {
    TimeFWriter::new(root, small_options())
}

#[test]
fn an_existing_version_is_refused_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), ecg_dataset("v", "1", 3), small_options());
    let before = (tree(tmp.path()), file_bytes(tmp.path()));

    // a dataset whose loaders count their runs: none may run
    let runs = Arc::new(AtomicUsize::new(0));
    let mut d = dataset_with_source("v", "1");
    let counter = Arc::clone(&runs);
    let loader = Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(vec![1.0f32; 4].into())
    });
    d.add_series(SeriesMeta::new("x", "ecg", "I", 1.0), loader).unwrap();
    d.add_sample(Sample {
        sample_id: "s".into(),
        source_id: "src".into(),
        series: main_refs(&["x"]),
        ..Default::default()
    })
    .unwrap();
    match TimeFWriter::new(tmp.path(), timef::WriterOptions::default()).write(d).unwrap_err() {
        Error::AlreadyExists { path } => assert_eq!(path, dir),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!((tree(tmp.path()), file_bytes(tmp.path())), before, "the root changed");
}

#[test]
fn a_directory_without_manifest_is_not_a_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v/1");
    std::fs::create_dir_all(&dir).unwrap();
    match Version::open(&dir).unwrap_err() {
        Error::NotAVersion { path, reason } => assert_eq!((path, reason.as_str()), (dir.clone(), "no manifest.json")),
        other => panic!("expected NotAVersion, got {other:?}"),
    }
    // an empty leftover directory is replaced by the publish
    assert_eq!(commit(tmp.path(), ecg_dataset("v", "1", 1), small_options()), dir);
    assert_conforming(&dir);

    // a non-empty one is in the way: refused before any I/O, and the stray file survives
    let stray = tmp.path().join("v/2/notes.txt");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, "keep me").unwrap();
    match writer(tmp.path()).write(ecg_dataset("v", "2", 1)).unwrap_err() {
        Error::NotAVersion { path, reason } => assert_eq!(
            (path, reason.as_str()),
            (
                tmp.path().join("v/2"),
                "exists but holds no committed version (no manifest.json); remove it or choose another version"
            )
        ),
        other => panic!("expected NotAVersion, got {other:?}"),
    }
    // one that appears between write and commit is never replaced either
    std::fs::remove_file(&stray).unwrap();
    let staged = writer(tmp.path()).write(ecg_dataset("v", "2", 1)).unwrap();
    std::fs::write(&stray, "keep me").unwrap();
    match staged.commit().unwrap_err() {
        Error::AlreadyExists { path } => assert_eq!(path, tmp.path().join("v/2")),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&stray).unwrap(), "keep me");
    let left: Vec<String> =
        tree(tmp.path()).into_iter().filter(|p| p.starts_with("v/2") || p.contains(".tmp-")).collect();
    assert_eq!(left, ["v/2", "v/2/notes.txt"]);
}

#[test]
fn dropping_or_aborting_a_staged_version_leaves_nothing() {
    for abort in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let staged = writer(tmp.path()).write(ecg_dataset("v", "1", 3)).unwrap();
        let staging = staged.staging_dir().to_path_buf();
        assert_eq!(staging.parent().unwrap(), tmp.path().join("v"));
        let name = staging.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".tmp-1-"), "{name}");
        // the staged version is complete: its manifest lists every other file
        let staged_files: Vec<String> = file_bytes(&staging).into_keys().filter(|p| p != "manifest.json").collect();
        let listed: Vec<String> = staged.manifest().files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(listed, staged_files);
        assert!(staging.join("manifest.json").is_file());
        if abort {
            staged.abort();
        } else {
            drop(staged);
        }
        assert!(tree(tmp.path()).is_empty(), "abort={abort}: {:?}", tree(tmp.path()));
    }
}

#[test]
fn a_loader_failing_halfway_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    // ten series of 4 000 values (16 000 bytes each) in stream order a0..a9; a5 fails
    let mut d = dataset_with_source("v", "1");
    let seen_at_failure = Arc::new(Mutex::new(Vec::new()));
    let later_runs = Arc::new(AtomicUsize::new(0));
    for i in 0..10u32 {
        let id = format!("a{i}");
        let meta = SeriesMeta::new(&id, "ecg", "I", 100.0);
        let loader: timef::Loader = match i {
            5 => {
                let (root, seen) = (root.clone(), Arc::clone(&seen_at_failure));
                Box::new(move || {
                    *seen.lock().unwrap() = tree(&root);
                    Err("sensor offline".into())
                })
            }
            _ => {
                let later = Arc::clone(&later_runs);
                let v = values(i, 4000);
                Box::new(move || {
                    if i > 5 {
                        later.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(v.into())
                })
            }
        };
        d.add_series(meta, loader).unwrap();
        d.add_sample(Sample {
            sample_id: format!("s{i}"),
            source_id: "src".into(),
            series: main_refs(&[&id]),
            ..Default::default()
        })
        .unwrap();
    }
    let done = Arc::new(Mutex::new(Vec::new()));
    let progress = Arc::clone(&done);
    let w = writer(&root).with_progress(Arc::new(move |e: &WriteProgressEvent| {
        if let WriteProgressEvent::SeriesWritten { done, .. } = e {
            progress.lock().unwrap().push(*done);
        }
    }));
    match w.write(d).unwrap_err() {
        Error::Loader { series_id, source } => {
            assert_eq!((series_id.as_str(), source.to_string().as_str()), ("a5", "sensor offline"))
        }
        other => panic!("expected Error::Loader, got {other:?}"),
    }
    assert_eq!(*done.lock().unwrap(), [1, 2, 3, 4, 5], "five series were written before the failure");
    assert_eq!(later_runs.load(Ordering::SeqCst), 0, "no loader runs after the failing one");
    // when a5's loader ran, staging already held a finished shard
    let seen = seen_at_failure.lock().unwrap().clone();
    assert!(
        seen.iter().any(|p| p.starts_with("v/.tmp-1-") && p.ends_with("time_series/shard-00000.parquet")),
        "{seen:?}"
    );
    assert!(tree(&root).is_empty(), "{:?}", tree(&root));
}

#[test]
fn two_writers_racing_for_one_version_get_one_winner() {
    for round in 0..4 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let barrier = Arc::new(Barrier::new(2));
        let threads: Vec<_> = ["A", "B"]
            .into_iter()
            .map(|who| {
                let (root, barrier) = (root.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let mut d = ecg_dataset("race", "1", 4);
                    d.info.description = Some(format!("writer {who}"));
                    let staged = writer(&root).write(d);
                    // both have staged before either publishes
                    barrier.wait();
                    (who, staged.expect("both writes succeed").commit())
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let version = root.join("race/1");
        let winners: Vec<&str> = results.iter().filter(|r| r.1.is_ok()).map(|r| r.0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        for (who, r) in &results {
            match r {
                Ok(path) => assert_eq!(path, &version),
                Err(Error::AlreadyExists { path }) => assert_eq!(path, &version, "{who}"),
                Err(other) => panic!("round {round}: writer {who}: {other:?}"),
            }
        }
        // the published version is entirely the winner's, and the loser's staging is gone
        let m = Version::open(&version).unwrap().manifest().clone();
        assert_eq!(m.dataset.description, Some(format!("writer {}", winners[0])));
        assert!(tree(&root).iter().all(|p| p == "race" || p.starts_with("race/1")), "{:?}", tree(&root));
        assert_conforming(&version);
    }
}

/// `gc` on a local root removes the staging of a writer that is gone and never
/// a live writer's (it holds the staging directory's `flock`), even at age 0;
/// the live writer then commits a version that verifies.
#[test]
fn gc_removes_dead_staging_and_never_a_live_writers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dead = root.join(format!("ecg/.tmp-v0-{}", "deadbeef".repeat(4)));
    std::fs::create_dir_all(dead.join("time_series")).unwrap();
    std::fs::write(dead.join("time_series/shard-00000.parquet"), b"partial").unwrap();
    let staged = TimeFWriter::new(root, small_options()).write(ecg_dataset("ecg", "v1", 3)).unwrap();
    let live = staged.staging_dir();
    let report = timef::storage::gc(&timef::storage::Location::local(root), 0).unwrap();
    assert_eq!(report.removed_claims, [dead.display().to_string()]);
    assert_eq!(report.removed_files, [dead.join("time_series/shard-00000.parquet").display().to_string()]);
    assert_eq!(report.kept_claims, [live.display().to_string()]);
    assert!(!dead.exists() && live.is_dir());
    let dir = staged.commit().unwrap();
    assert!(timef::verify::verify(&dir).unwrap().is_ok());
    assert_eq!(
        tree(&root.join("ecg")),
        ["v1".to_string()].into_iter().chain(tree(&dir).into_iter().map(|p| format!("v1/{p}"))).collect::<Vec<_>>()
    );
}
