//! Issue 4: copy-on-write edits on versions ingested from the real files, with
//! and without cascade; the surviving content is identical to the base.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{assert_conforming, cli, real, tree};
use timef::edit::{edit_version, plan, Cascade, Edit};
use timef::error::EditBlocker;
use timef::reader::Version;
use timef::Error;

fn ingest(root: &Path, kind: &str, name: &str, files: &[&str]) -> PathBuf {
    let paths: Vec<String> = files.iter().map(|f| real(f).display().to_string()).collect();
    let mut args = vec!["--quiet", "ingest", kind, "--root", root.to_str().unwrap(), "--name", name, "--version", "v1"];
    args.extend(paths.iter().map(String::as_str));
    let (code, _, err) = cli(&args);
    assert_eq!(code, 0, "{err}");
    root.join(name).join("v1")
}

fn remove(ids: &[&str], cascade: Cascade) -> Edit {
    Edit::remove_samples(ids.iter().copied(), cascade)
}

/// Every surviving sample, annotation, task and series of `new` equals the base's.
fn assert_survivors_identical(base: &Version, new: &Version, removed: &BTreeSet<String>) {
    let base_samples: Vec<_> =
        base.samples().unwrap().into_iter().filter(|s| !removed.contains(&s.sample_id)).collect();
    assert_eq!(new.samples().unwrap(), base_samples);
    let base_ann: Vec<_> = base.annotations().unwrap().into_iter().filter(|(s, _)| !removed.contains(s)).collect();
    assert_eq!(new.annotations().unwrap(), base_ann);
    for name in new.task_names() {
        for t in new.tasks(&name).unwrap() {
            let mut b = base.tasks(&name).unwrap().into_iter().find(|x| x.task_id == t.task_id).unwrap();
            b.sample_ids.retain(|s| !removed.contains(s));
            assert_eq!(t, b);
        }
    }
    for meta in new.series().unwrap() {
        let id = &meta.time_series_id;
        assert_eq!(new.read_series(id).unwrap(), base.read_series(id).unwrap(), "{id}");
        assert!(base.series().unwrap().contains(&meta));
    }
}

#[test]
fn tsf_forecasting_edit_refused_then_cascaded() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = ingest(root.path(), "tsf", "tsf", &["tsf/UnitTest_Tsf_Loader.tsf"]);
    let before = tree(root.path());
    // removing a target sample breaks its forecasting task: refused before any I/O
    let err = edit_version(&base_dir, root.path(), "v2", remove(&["tsf-T1/target", "tsf-T3/context"], Cascade::Refuse))
        .unwrap_err();
    match err {
        Error::Edit { blockers } => assert_eq!(
            blockers,
            vec![
                EditBlocker {
                    id: "tsf-T1/forecast".into(),
                    field: "target_sample_id",
                    reason: "task forecast/tsf-T1/forecast: target_sample_id tsf-T1/target would be removed".into()
                },
                EditBlocker {
                    id: "tsf-T3/forecast".into(),
                    field: "context_sample_ids",
                    reason: "task forecast/tsf-T3/forecast: context_sample_ids entry tsf-T3/context would be removed"
                        .into()
                },
            ]
        ),
        other => panic!("{other}"),
    }
    assert_eq!(tree(root.path()), before);
    // unknown ids are an error, not ignored
    let err = edit_version(&base_dir, root.path(), "v2", remove(&["nope"], Cascade::Refuse)).unwrap_err();
    assert_eq!(err.to_string(), "edit refused: unknown sample id nope");

    let op = || remove(&["tsf-T1/target"], Cascade::RemoveDependents);
    let planned = plan(&base_dir, root.path(), "v2", op()).unwrap();
    let (dir, done) = edit_version(&base_dir, root.path(), "v2", op()).unwrap();
    assert_eq!(planned, done);
    assert_eq!(done.tasks, vec![("forecast".to_string(), "tsf-T1/forecast".to_string())]);
    // T1's series stays: its context sample still references it
    assert!(done.series.is_empty());
    assert_conforming(&dir);
    let (base, new) = (Version::open(&base_dir).unwrap(), Version::open(&dir).unwrap());
    let d = new.manifest().derived_from.clone().unwrap();
    assert_eq!(d.dataset_version, "v1");
    assert_eq!(d.manifest_sha256, base.manifest_sha256());
    // sha256 of "tsf-T1/target\n"
    assert_eq!(
        d.operation,
        serde_json::json!({"cascade": true, "steps": [{"op": "remove_samples", "count": 1,
            "ids_sha256": "b3f49252eea575f451e86a0b68008012d30e9b50762a91352864f7c10143c5a3"}]})
    );
    assert_eq!(d.removed["samples"], 1);
    assert_eq!(d.removed["tasks"], 1);
    assert_eq!(new.manifest().counts.tasks["forecast"], 1);
    assert_survivors_identical(&base, &new, &["tsf-T1/target".to_string()].into());
}

#[test]
fn removing_both_windows_drops_the_series() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = ingest(root.path(), "tsf", "tsf", &["tsf/UnitTest_Tsf_Loader.tsf"]);
    let (dir, done) = edit_version(
        &base_dir,
        root.path(),
        "v2",
        remove(&["tsf-T3/context", "tsf-T3/target"], Cascade::RemoveDependents),
    )
    .unwrap();
    assert_eq!(done.series, vec!["tsf-T3".to_string()]);
    let new = Version::open(&dir).unwrap();
    assert_eq!(new.manifest().counts.time_series, 2);
    assert_conforming(&dir);
}

#[test]
fn ucr_classification_edit() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = ingest(root.path(), "ucr", "ArrowHead", &["ucr/ArrowHead_TRAIN.ts", "ucr/ArrowHead_TEST.ts"]);
    let ids = ["ArrowHead-train-0", "ArrowHead-train-17", "ArrowHead-test-100"];
    let (dir, done) = edit_version(&base_dir, root.path(), "v2", remove(&ids, Cascade::Refuse)).unwrap();
    assert!(done.tasks.is_empty());
    assert_eq!(
        done.stripped_tasks,
        vec![("test".to_string(), "ArrowHead-test".to_string()), ("train".to_string(), "ArrowHead-train".to_string())]
    );
    assert_eq!(done.annotations.len(), 3);
    assert_eq!(done.series.len(), 3);
    assert_conforming(&dir);
    let (base, new) = (Version::open(&base_dir).unwrap(), Version::open(&dir).unwrap());
    assert_eq!(new.manifest().counts.samples, 211 - 3);
    let removed: BTreeSet<String> = ids.iter().map(|s| s.to_string()).collect();
    assert_survivors_identical(&base, &new, &removed);
    assert_eq!(new.tasks("train").unwrap()[0].sample_ids.len(), 36 - 2);
}

#[test]
fn removing_every_sample_of_a_task_needs_cascade() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = ingest(root.path(), "ucr", "UnitTest", &["ucr/UnitTest_TRAIN.ts"]);
    let base = Version::open(&base_dir).unwrap();
    let all: Vec<String> = base.samples().unwrap().into_iter().map(|s| s.sample_id).collect();
    let keep_one: Vec<&str> = all.iter().skip(1).map(String::as_str).collect();
    // all but one: the task survives with one sample
    let (_, done) = edit_version(&base_dir, root.path(), "v2", remove(&keep_one, Cascade::Refuse)).unwrap();
    assert!(done.tasks.is_empty());
    let every: Vec<&str> = all.iter().map(String::as_str).collect();
    let err = edit_version(&base_dir, root.path(), "v3", remove(&every, Cascade::Refuse)).unwrap_err();
    assert_eq!(err.to_string(), "edit refused: task train/UnitTest-train: its last sample would be removed");
}

#[test]
fn cascade_follows_from_task_edges() {
    let root = tempfile::tempdir().unwrap();
    let mut d = common::ecg_dataset("ecg", "v1", 4);
    let derived = timef::Task {
        from_task: Some("t-diagnosis".into()),
        ..timef::Task::new("t-derived", timef::TaskType::Classification, vec!["s000".into()])
    };
    d.add_task("derived", derived).unwrap();
    let derived2 = timef::Task {
        from_task: Some("t-derived".into()),
        ..timef::Task::new("t-derived2", timef::TaskType::Classification, vec!["s003".into()])
    };
    d.add_task("derived2", derived2).unwrap();
    let only = timef::Task::new("t-only", timef::TaskType::Regression, vec!["s001".into()]);
    d.add_task("only", only).unwrap();
    let base_dir = common::commit(root.path(), d, common::small_options());
    let err = edit_version(&base_dir, root.path(), "v2", remove(&["s000", "s001"], Cascade::Refuse)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "edit refused: task derived/t-derived: its last sample would be removed; task only/t-only: its last sample would be removed"
    );
    let (dir, done) =
        edit_version(&base_dir, root.path(), "v2", remove(&["s000", "s001"], Cascade::RemoveDependents)).unwrap();
    // t-derived2 still has s003 but derives from the removed t-derived
    assert_eq!(
        done.tasks,
        vec![
            ("derived".to_string(), "t-derived".to_string()),
            ("derived2".to_string(), "t-derived2".to_string()),
            ("only".to_string(), "t-only".to_string())
        ]
    );
    assert_conforming(&dir);
    assert_eq!(Version::open(&dir).unwrap().task_names(), vec!["diagnosis".to_string()]);
}

#[test]
fn cli_edit_dry_run_and_exit_codes() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = ingest(root.path(), "tsf", "tsf", &["tsf/UnitTest_Tsf_Loader.tsf"]);
    let b = base_dir.to_str().unwrap();
    let r = root.path().to_str().unwrap();
    let before = tree(root.path());
    let (code, out, _) =
        cli(&["edit", b, "--out-root", r, "--version", "v2", "--remove-sample", "tsf-T2", "--dry-run"]);
    assert_eq!((code, out.as_str()), (0, "remove sample tsf-T2\nremove series tsf-T2\n"));
    assert_eq!(tree(root.path()), before);
    // the dataset's fields an edit sets are in its plan too (review 138: a dry run printed nothing)
    let (code, out, _) =
        cli(&["edit", b, "--out-root", r, "--version", "v2", "--license", "MIT", "--citation", "x", "--dry-run"]);
    assert_eq!((code, out.as_str()), (0, "set dataset license\nset dataset citation\n"));
    assert_eq!(tree(root.path()), before);
    let (code, _, err) = cli(&["edit", b, "--out-root", r, "--version", "v2", "--remove-sample", "tsf-T1/context"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "timef: error: edit refused: task forecast/tsf-T1/forecast: context_sample_ids entry tsf-T1/context would be \
         removed (--cascade removes those tasks, and the tasks derived from them, too)\n"
    );
    // blockers of both kinds: one hint for both (it named the tasks alone)
    let args = ["edit", b, "--out-root", r, "--version", "v2", "--remove-sample", "tsf-T1/context", "--remove-series"];
    let (code, _, err) = cli(&[&args[..], &["tsf-T2"]].concat());
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "timef: error: edit refused: sample tsf-T2: its last series would be removed; task forecast/tsf-T1/forecast: \
             context_sample_ids entry tsf-T1/context would be removed (--cascade removes those samples and tasks, and \
             the tasks that would lose them or derive from them, too)\n"
        )
    );
    // a dry run checks the target too
    let (code, _, err) =
        cli(&["edit", b, "--out-root", r, "--version", "v1", "--remove-sample", "tsf-T2", "--dry-run"]);
    assert_eq!((code, err), (2, format!("timef: error: version already exists: {b}\n")));
    let list = root.path().join("rm.txt");
    // after a byte order mark, as Windows editors write one: the first line is still a comment
    std::fs::write(&list, "\u{feff}# drop T1's context\r\ntsf-T1/context\r\n\r\n").unwrap();
    // `timef edit` of version `version` removing the samples `list` names, with `more`
    let remove_listed = |version: &str, list: &Path, more: &[&str]| {
        let args = ["edit", b, "--out-root", r, "--version", version, "--remove-samples-from", list.to_str().unwrap()];
        cli(&[&args[..], more].concat())
    };
    let (code, out, err) = remove_listed("v2", &list, &["--cascade"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "remove sample tsf-T1/context\nremove task forecast/tsf-T1/forecast\n{}\n",
            root.path().join("tsf/v2").display()
        )
    );
    // stderr says what the write took from the base: what the library counts for the same edit
    let twin = tempfile::tempdir().unwrap();
    let edit = Edit {
        remove_sample_ids: ["tsf-T1/context".to_string()].into(),
        cascade: Cascade::RemoveDependents,
        ..Default::default()
    };
    let at = |p: &Path| timef::storage::Location::from_path(p).unwrap();
    let (_, _, c) = timef::edit::edit_version_counted_at(&at(&base_dir), &at(twin.path()), "v2", edit).unwrap();
    assert!(c.pages_copied + c.pages_encoded > 0 && c.bytes_read > 0, "{c:?}");
    let total = c.pages_copied + c.pages_encoded;
    let line = format!(
        "timef: copied {} of {total} values pages, {} bytes read from the base's shards\n",
        c.pages_copied, c.bytes_read
    );
    assert_eq!(err, line);
    // an unknown id of the list is refused at its line (review 146), one given as an option as it is
    let list9 = root.path().join("rm9.txt");
    std::fs::write(&list9, "# ids\ntsf-T1/context\n\n  tsf-T9  \n").unwrap();
    let (code9, _, err9) = remove_listed("v9", &list9, &["--remove-sample", "tsf-T8", "--dry-run"]);
    let want = format!(
        "timef: error: edit refused: unknown sample id tsf-T8; unknown sample id tsf-T9 ({}:4)\n",
        list9.display()
    );
    assert_eq!((code9, err9), (2, want));
    // the step read from the file lists it as its input (docs/format.md §7,
    // "Lineage"; it had none): `sha256sum rm.txt`, then of "tsf-T1/context\n"
    let d = Version::open(root.path().join("tsf/v2")).unwrap().manifest().derived_from.clone().unwrap();
    assert_eq!(
        d.operation,
        serde_json::json!({"cascade": true, "steps": [{"op": "remove_samples", "count": 1,
            "ids_sha256": "683734cbdd54a1bc62fe8dbc8928096cb1a671a6a379b7d88aa88b0898da8779",
            "inputs": [{"file": "rm.txt",
                        "sha256": "65d32102f8571388c61aca38a28b74f211d41fda2abe8baf56f3310acbd45304"}]}]})
    );
}

/// Review 138: a `.ts` split added without `--spec-type`/`--sampling-rate-hz`
/// came in as `unknown` at 1 Hz beside the base's `imu` at 10 Hz, silently.
#[test]
fn added_series_of_no_kind_of_the_base_are_warned_about() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let (train, test) = (real("ucr/BasicMotions_TRAIN.ts"), real("ucr/BasicMotions_TEST.ts"));
    let args = ["--quiet", "ingest", "ucr", "--root", r, "--name", "BM", "--version", "v1", "--spec-type", "imu"];
    let (code, _, err) = cli(&[&args[..], &["--sampling-rate-hz", "10", train.to_str().unwrap()]].concat());
    assert_eq!((code, err.as_str()), (0, ""));
    let base = root.path().join("BM/v1");
    let edit = |version: &str, options: &[&str]| {
        let args = ["--quiet", "edit", base.to_str().unwrap(), "--out-root", r, "--version", version, "--add-ucr"];
        let (code, _, err) = cli(&[&args[..], &[test.to_str().unwrap()], options].concat());
        assert_eq!(code, 0, "{err}");
        err
    };
    assert_eq!(
        edit("v2", &[]),
        "timef: warning: the added series are unknown at 1 Hz, the base's imu at 10 Hz: give --spec-type and \
         --sampling-rate-hz to read them as the base's\n"
    );
    assert_eq!(edit("v3", &["--spec-type", "imu", "--sampling-rate-hz", "10"]), "");
}

/// `BasicMotions_TRAIN.ts` ingested as `BM/v1` under `root` with the
/// connector's `options`; the version's directory.
fn ingest_bm(root: &Path, options: &[&str]) -> PathBuf {
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let args = ["--quiet", "ingest", "ucr", "--root", root.to_str().unwrap(), "--name", "BM", "--version", "v1"];
    let (code, _, err) = cli(&[&args[..], options, &[train.to_str().unwrap()]].concat());
    assert_eq!((code, err.as_str()), (0, ""));
    root.join("BM/v1")
}

/// What `timef edit --add-*` reads is under the base's name, so of the
/// base's source, described as the base describes it (review 138 #1: a
/// `.tsf` file's `@relation` or an Arrow file's dataset name clashed with a
/// UCR base's `@problemName`, "added source … exists with other content",
/// a record the CLI gives no option to write).
#[test]
fn what_the_cli_adds_is_of_the_base_source() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let base = ingest_bm(root.path(), &["--spec-type", "imu", "--sampling-rate-hz", "10"]);
    let sources = |version: &str| {
        let v = Version::open(root.path().join("BM").join(version)).unwrap();
        v.manifest().sources.iter().map(|s| (s.source_id.clone(), s.name.clone())).collect::<Vec<_>>()
    };
    let held = vec![("BM".to_string(), "BasicMotions".to_string())];
    assert_eq!(sources("v1"), held);
    let edit = |version: &str, add: &[&str]| {
        let args = ["--quiet", "edit", base.to_str().unwrap(), "--out-root", r, "--version", version];
        let (code, _, err) = cli(&[&args[..], add].concat());
        assert_eq!(code, 0, "{err}");
        err
    };
    let tsf = real("tsf/UnitTest_Tsf_Loader.tsf");
    let named = format!(
        "timef: warning: {} names its source \"test\"; what it adds is the base's source BM (\"BasicMotions\")\n",
        tsf.display()
    );
    assert_eq!(edit("v2", &["--add-tsf", tsf.to_str().unwrap(), "--spec-type", "imu"]), named);
    assert_eq!(sources("v2"), held);
    // a .tsf file's rate is its own: only the spec type is the user's to give
    let kinds =
        "timef: warning: the added series are unknown, the base's imu: give --spec-type to read them as the base's\n";
    assert_eq!(edit("v3", &["--add-tsf", tsf.to_str().unwrap()]), format!("{named}{kinds}"));
    let arrow = root.path().join("more.parquet");
    common::gluonts_parquet(&arrow, &["meter-1", "meter-2"]);
    assert_eq!(
        edit("v4", &["--add-arrow", arrow.to_str().unwrap(), "--spec-type", "imu", "--sampling-rate-hz", "10"]),
        ""
    );
    assert_eq!(sources("v4"), held);
    // more blockers than the message shows: the CLI lists every one, a line each
    let mut args = vec!["edit", base.to_str().unwrap(), "--out-root", r, "--version", "v6", "--dry-run"];
    // (an id that holds a line break or a direction override stays on its line, escaped)
    let forged = "a\u{202e}\ntimef: error: fake";
    let unknown: Vec<String> = (0..10).map(|i| format!("nope{i:02}")).chain([forged.to_string()]).collect();
    for id in &unknown {
        args.extend(["--remove-sample", id.as_str()]);
    }
    let lines: String =
        unknown[10..].iter().chain(&unknown[..10]).map(|id| format!("  unknown sample id {id}\n")).collect();
    let lines = lines.replace(forged, r"a\u{202e}\ntimef: error: fake");
    let want = format!("timef: error: edit refused: 11 blockers, a line each:\n{lines}");
    assert_eq!(cli(&args), (2, String::new(), want));
    // fewer: on one line, escaped as well (an erase-line and a carriage return rewrote it
    // as another error on a terminal; a line separator split it in editors)
    let args = ["edit", base.to_str().unwrap(), "--out-root", r, "--version", "v6", "--remove-sample"];
    let want = "timef: error: edit refused: unknown sample id \\u{1b}[2K\\rtimef: error: disk full\\u{2028}x\n";
    assert_eq!(
        cli(&[&args[..], &["\u{1b}[2K\rtimef: error: disk full\u{2028}x"]].concat()),
        (2, String::new(), want.into())
    );
    // the base's own file again: nothing to add, and the plan says so (it printed nothing)
    let args = ["edit", base.to_str().unwrap(), "--out-root", r, "--version", "v5", "--dry-run", "--add-ucr"];
    let again = [train.to_str().unwrap(), "--spec-type", "imu", "--sampling-rate-hz", "10"];
    let zero = "add 0 sample(s), 0 series, 0 annotation(s), 0 task(s), 0 source(s)\n";
    assert_eq!(cli(&[&args[..], &again].concat()), (0, zero.to_string(), String::new()));
    // a base without a source of its name (built in Python, say): the additions take the
    // first one's record, a UCR file's first (review 144: two connectors' own records clashed
    // between additions; review 145: Arrow's, first, then refused the problem's next split)
    let mut d = common::dataset_with_source("D", "v1");
    common::add_series(&mut d, "s1", "imu", "0", 10.0, 0, 30);
    common::add_sample_of(&mut d, "s1", &["s1"]);
    let base = common::commit(root.path(), d, timef::WriterOptions::default());
    let on_d = |base: &Path, version: &str, add: &[&str]| {
        let args = ["--quiet", "edit", base.to_str().unwrap(), "--out-root", r, "--version", version];
        let (code, _, err) = cli(&[&args[..], add, &["--spec-type", "imu", "--sampling-rate-hz", "10"]].concat());
        let v = Version::open(root.path().join("D").join(version)).unwrap();
        let sources = v.manifest().sources.iter().map(|s| (s.source_id.clone(), s.name.clone())).collect::<Vec<_>>();
        (code, err, sources)
    };
    let held = |name: &str| vec![("D".to_string(), name.to_string()), ("src".to_string(), "test source".to_string())];
    let add = ["--add-arrow", arrow.to_str().unwrap(), "--add-ucr", train.to_str().unwrap()];
    assert_eq!(on_d(&base, "v2", &add), (0, String::new(), held("BasicMotions")));
    let test = real("ucr/BasicMotions_TEST.ts");
    let v3 = on_d(&root.path().join("D/v2"), "v3", &["--add-ucr", test.to_str().unwrap()]);
    assert_eq!(v3, (0, String::new(), held("BasicMotions")));
    // a later file naming it otherwise is warned of, its name escaped onto one line as errors are
    let odd = root.path().join("odd\ntimef: error: x.tsf");
    std::fs::copy(&tsf, &odd).unwrap();
    let add = ["--add-tsf", odd.to_str().unwrap(), "--add-ucr", train.to_str().unwrap()];
    let named = format!(
        "timef: warning: {} names its source \"test\"; what it adds is the source of {} D (\"BasicMotions\")\n",
        odd.display().to_string().replace('\n', "\\n"),
        train.display()
    );
    assert_eq!(on_d(&base, "v4", &add), (0, named, held("BasicMotions")));
}

/// An unknown readable id of a space the base stores as UUIDs is shown the
/// UUID a connector gives it, which the edit then takes (review 146: "unknown
/// sample id" alone, though the id was the one the user ingested).
#[test]
fn an_unknown_readable_id_of_a_uuid_space_is_shown_its_uuid() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let base = ingest_bm(root.path(), &["--ids", "uuid", "--spec-type", "imu"]);
    let edit = |id: &str| {
        cli(&["edit", base.to_str().unwrap(), "--out-root", r, "--version", "v2", "--dry-run", "--remove-sample", id])
    };
    let uuid = timef::connectors::IdMode::Uuid.id("BM-train-3");
    let want = format!(
        "timef: error: edit refused: unknown sample id BM-train-3 (this version's sample ids are UUIDs; a connector \
         with --ids uuid names BM-train-3 {uuid})\n"
    );
    assert_eq!(edit("BM-train-3"), (2, String::new(), want));
    let (code, out, _) = edit(&uuid);
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("remove sample {uuid}\n")), "{out}");
}
