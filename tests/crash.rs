//! Writers killed with SIGKILL at every named point of a write
//! (`TIMEF_TEST_PAUSE_AT`, docs/format.md §1 "Crash tests"), then `ls` and
//! `gc`: what a dead writer left is counted and removed, nothing committed is
//! touched, and the version can be written again. A live writer's staging
//! survives `gc` run beside it.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;

const POINTS: [&str; 6] =
    ["staging-created", "mid-shard", "shards-written", "manifest-staged", "before-rename", "after-rename"];

/// `timef ingest ucr` of BasicMotions_TRAIN.ts as `BasicMotions/<version>`,
/// paused at `point`; returns once the writer says it paused there.
fn paused_writer(root: &Path, version: &str, point: &str) -> Child {
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let mut child = Command::new(env!("CARGO_BIN_EXE_timef"))
        .args(["--quiet", "ingest", "ucr", "--root", root.to_str().unwrap(), "--name", "BasicMotions"])
        .args(["--version", version, train.to_str().unwrap()])
        .env(timef::storage::PAUSE_AT_ENV, point)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run timef");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let want = format!("timef: paused at {point}");
    loop {
        match lines.next() {
            Some(Ok(line)) if line == want => break,
            Some(Ok(_)) => {}
            other => panic!("{point}: the writer ended before pausing: {other:?}, {:?}", child.wait()),
        }
    }
    child
}

fn kill(mut child: Child) {
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

fn staging_dirs(root: &Path) -> Vec<PathBuf> {
    let ds = root.join("BasicMotions");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&ds)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect::<Vec<PathBuf>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p: &PathBuf| p.file_name().unwrap().to_string_lossy().starts_with(".tmp-"))
        .collect();
    out.sort();
    out
}

fn run(args: &[&str]) -> String {
    let (code, out, err) = cli(args);
    assert_eq!(code, 0, "timef {args:?}: {err}");
    out
}

#[test]
fn writers_killed_at_every_point_leave_only_what_gc_clears() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let r = root.to_str().unwrap();
    // a committed version beside the killed writers must never change
    let committed = root.join("BasicMotions/base");
    let train = real("ucr/BasicMotions_TRAIN.ts");
    run(&[
        "--quiet",
        "ingest",
        "ucr",
        "--root",
        r,
        "--name",
        "BasicMotions",
        "--version",
        "base",
        train.to_str().unwrap(),
    ]);
    let committed_bytes = file_bytes(&committed);
    for (i, point) in POINTS.iter().enumerate() {
        let version = format!("v{i}");
        kill(paused_writer(root, &version, point));
        let dir = root.join("BasicMotions").join(&version);
        let stale = staging_dirs(root);
        let ls = run(&["ls", r]);
        if *point == "after-rename" {
            // renamed: committed and complete, nothing stale
            assert!(stale.is_empty(), "{point}: {stale:?}");
            assert!(!ls.contains("stale"), "{point}: {ls}");
            assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0, "{point}: the renamed version verifies");
        } else {
            assert_eq!(stale.len(), 1, "{point}: one staging directory left: {stale:?}");
            assert!(!dir.exists(), "{point}: the version is not visible");
            assert!(
                ls.contains("  (1 stale staging director(ies) of dead writers: `timef gc` removes them)"),
                "{point}: {ls}"
            );
            let dry = run(&["gc", r, "--older-than-s", "0", "--dry-run"]);
            assert!(dry.contains(&format!("would remove {}", stale[0].display())), "{point}: {dry}");
            assert_eq!(staging_dirs(root), stale, "{point}: a dry run removes nothing");
        }
        let gc = run(&["gc", r, "--older-than-s", "0"]);
        let cleared = if *point == "after-rename" { 0 } else { 1 };
        assert!(gc.contains(&format!("{cleared} claim(s) cleared")), "{point}: {gc}");
        assert!(staging_dirs(root).is_empty(), "{point}: nothing stale after gc");
        assert!(!run(&["ls", r]).contains("stale"), "{point}");
        assert_eq!(file_bytes(&committed), committed_bytes, "{point}: the committed version is untouched");
        if *point != "after-rename" {
            run(&[
                "--quiet",
                "ingest",
                "ucr",
                "--root",
                r,
                "--name",
                "BasicMotions",
                "--version",
                &version,
                train.to_str().unwrap(),
            ]);
        }
        assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0, "{point}: the version written again verifies");
        // the same data files as an undisturbed write (the manifest names the version)
        let (mut again, mut base) = (file_bytes(&dir), committed_bytes.clone());
        again.remove("manifest.json");
        base.remove("manifest.json");
        assert!(again == base, "{point}: the data files differ from an undisturbed write's");
    }
}

#[test]
fn a_live_writers_staging_survives_gc_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let r = root.to_str().unwrap();
    let writer = paused_writer(root, "live", "mid-shard");
    let staging = staging_dirs(root);
    assert_eq!(staging.len(), 1);
    let ls = run(&["ls", r]);
    assert!(!ls.contains("stale"), "a live writer's staging is not stale: {ls}");
    let gc = run(&["gc", r, "--older-than-s", "0"]);
    assert!(gc.contains("0 claim(s) cleared"), "{gc}");
    assert!(gc.contains(&format!("kept (younger than 0 s, or its writer alive) {}", staging[0].display())), "{gc}");
    assert_eq!(staging_dirs(root), staging, "gc left the live writer's staging");
    assert!(staging[0].join("time_series").is_dir(), "with its files");
    kill(writer);
    assert!(run(&["ls", r]).contains("(1 stale staging director(ies)"));
    assert!(run(&["gc", r, "--older-than-s", "0"]).contains("1 claim(s) cleared"));
    assert!(staging_dirs(root).is_empty());
}
