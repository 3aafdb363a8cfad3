//! Issue 25 §1: every edit operation (remove series and channels, add,
//! set annotations, re-split, change metadata, and any combination) writes
//! byte for byte a fresh write of the resulting dataset (the manifest equal but
//! for its lineage and seal), from the library and the CLI; refusals name the
//! id and field; the lineage lists each operation.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{assert_conforming, cli, file_bytes, real, small_options};
use proptest::prelude::*;
use timef::edit::{edit_version, ids_sha256, Cascade, Edit};
use timef::error::EditBlocker;
use timef::{Annotation, Error, Sample, SeriesMeta, SeriesRef, Source, Task, TaskType, TimeFDataset};

/// `manifest.json` of `dir` without its lineage and seal.
fn manifest_sans_lineage(dir: &Path) -> serde_json::Value {
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let o = m.as_object_mut().unwrap();
    o.remove("derived_from");
    o.remove("manifest_sha256");
    m
}

/// `edited` holds the files of `fresh` with the same bytes, the manifest
/// aside, whose content but for the lineage and seal is the same too.
fn assert_fresh(edited: &Path, fresh: &Path) {
    let (mut a, mut b) = (file_bytes(edited), file_bytes(fresh));
    a.remove("manifest.json");
    b.remove("manifest.json");
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "file lists differ");
    for (rel, bytes) in &a {
        assert!(bytes == &b[rel], "{rel} differs between {} and {}", edited.display(), fresh.display());
    }
    assert_eq!(manifest_sans_lineage(edited), manifest_sans_lineage(fresh));
}

fn operation(dir: &Path) -> serde_json::Value {
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["derived_from"]["operation"].clone()
}

/// `timef edit BASE --out-root ROOT --version VERSION --add-ucr FILE`: (exit code, stdout, stderr).
fn add_ucr(base: &Path, root: &Path, version: &str, file: &Path) -> (i32, String, String) {
    let (base, root, file) = (base.to_str().unwrap(), root.to_str().unwrap(), file.to_str().unwrap());
    cli(&["--quiet", "edit", base, "--out-root", root, "--version", version, "--add-ucr", file])
}

fn ingest(root: &Path, kind: &str, name: &str, version: &str, files: &[PathBuf]) -> PathBuf {
    let r = root.to_str().unwrap();
    let mut args = vec!["--quiet", "ingest", kind, "--root", r, "--name", name, "--version", version];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let (code, _, err) = cli(&args);
    assert_eq!(code, 0, "{err}");
    root.join(name).join(version)
}

/// What the model dataset holds: `n` base samples of channels I and II
/// (`s000`, ...), each with a class label and all in task `t-diagnosis`,
/// changed as an edit would change them.
#[derive(Debug, Clone, Default)]
struct Spec {
    n: usize,
    removed: BTreeSet<usize>,
    drop_channel: Option<&'static str>,
    relabel: BTreeMap<usize, String>,
    added: usize,
    resplit: bool,
    description: Option<String>,
}

fn sid(i: usize) -> String {
    format!("s{i:03}")
}

fn label(i: usize) -> Annotation {
    Annotation {
        annotation_id: format!("{}/class", sid(i)),
        annotation_type: "label".into(),
        key: "class".into(),
        value_str: Some(if i % 2 == 0 { "normal" } else { "afib" }.into()),
        ..Default::default()
    }
}

/// Adds sample `i` with its series (the channels in `channels`) and its label.
fn add_sample(d: &mut TimeFDataset, i: usize, channels: &[&str], value: Option<&String>) {
    let mut refs = Vec::new();
    for (c, ch) in ["I", "II"].iter().enumerate().filter(|(_, ch)| channels.contains(ch)) {
        let id = format!("{}/{ch}", sid(i));
        common::add_series(d, &id, "ecg", ch, 250.0, (i * 2 + c) as u32, 60 + 41 * i);
        refs.push(SeriesRef { time_series_id: id, view: "main".into() });
    }
    d.add_sample(Sample {
        sample_id: sid(i),
        source_id: "src".into(),
        subject_id: Some(format!("p{}", i % 3)),
        series: refs,
        metadata: BTreeMap::from([("site".to_string(), format!("site-{}", i % 2))]),
        ..Default::default()
    })
    .unwrap();
    let a = Annotation { value_str: value.cloned().or(label(i).value_str), ..label(i) };
    d.add_annotation(a, &[sid(i)]).unwrap();
}

/// The samples of `spec` that are added (`n..n + added`), as a dataset.
fn added(spec: &Spec) -> TimeFDataset {
    let mut d = common::dataset_with_source("other-name", "x");
    for i in spec.n..spec.n + spec.added {
        add_sample(&mut d, i, &["I", "II"], None);
    }
    d
}

/// The tasks `spec` re-splits to (task name, task) over the kept base samples.
fn resplit(kept: &[String]) -> Vec<(String, Task)> {
    vec![
        (
            "diagnosis".to_string(),
            Task {
                split: Some("val".into()),
                ..Task::new("t-diagnosis", TaskType::Classification, kept[..1].to_vec())
            },
        ),
        (
            "holdout".to_string(),
            Task { split: Some("test".into()), ..Task::new("t-holdout", TaskType::Classification, kept.to_vec()) },
        ),
    ]
}

/// The dataset `spec` describes, built from scratch (the fresh write's input).
fn model(version: &str, spec: &Spec) -> TimeFDataset {
    let mut d = common::dataset_with_source("ecg", version);
    d.info.description = spec.description.clone();
    let channels: Vec<&str> = ["I", "II"].into_iter().filter(|c| Some(*c) != spec.drop_channel).collect();
    let kept: Vec<String> = (0..spec.n).filter(|i| !spec.removed.contains(i)).map(sid).collect();
    for i in (0..spec.n).filter(|i| !spec.removed.contains(i)) {
        add_sample(&mut d, i, &channels, spec.relabel.get(&i));
    }
    for i in spec.n..spec.n + spec.added {
        add_sample(&mut d, i, &["I", "II"], None);
    }
    let tasks = if spec.resplit {
        resplit(&kept)
    } else {
        let t = Task { split: Some("train".into()), ..Task::new("t-diagnosis", TaskType::Classification, kept) };
        vec![("diagnosis".to_string(), t)]
    };
    for (name, t) in tasks {
        d.add_task(&name, t).unwrap();
    }
    d
}

/// The edit that turns the base of `spec.n` samples into `spec`'s dataset.
fn edit_of(spec: &Spec) -> Edit {
    let kept: Vec<String> = (0..spec.n).filter(|i| !spec.removed.contains(i)).map(sid).collect();
    Edit {
        remove_sample_ids: spec.removed.iter().map(|&i| sid(i)).collect(),
        remove_channels: spec.drop_channel.iter().map(|c| c.to_string()).collect(),
        add: if spec.added > 0 { vec![added(spec)] } else { Vec::new() },
        set_annotations: spec
            .relabel
            .iter()
            .map(|(&i, v)| (Annotation { value_str: Some(v.clone()), ..label(i) }, BTreeSet::from([sid(i)])))
            .collect(),
        set_tasks: if spec.resplit { resplit(&kept) } else { Vec::new() },
        description: spec.description.clone(),
        ..Default::default()
    }
}

/// Writes the base (`spec.n` samples), the edit and the fresh write; asserts identity.
fn check(spec: &Spec) {
    let tmp = tempfile::tempdir().unwrap();
    let base =
        common::commit(&tmp.path().join("a"), model("v1", &Spec { n: spec.n, ..Default::default() }), small_options());
    let (dir, _) = edit_version(&base, &tmp.path().join("a"), "v2", edit_of(spec)).unwrap();
    let fresh = common::commit(&tmp.path().join("b"), model("v2", spec), small_options());
    assert_fresh(&dir, &fresh);
}

#[test]
fn each_operation_writes_a_fresh_write_of_its_result() {
    let n = 5;
    let base = Spec { n, ..Default::default() };
    check(&Spec { removed: [1, 3].into(), ..base.clone() });
    check(&Spec { drop_channel: Some("II"), ..base.clone() });
    check(&Spec { relabel: [(0, "afib".to_string()), (4, "other".to_string())].into(), ..base.clone() });
    check(&Spec { added: 3, ..base.clone() });
    check(&Spec { resplit: true, ..base.clone() });
    check(&Spec { description: Some("twelve-lead, re-labelled".into()), ..base.clone() });
    check(&Spec {
        removed: [2].into(),
        drop_channel: Some("I"),
        relabel: [(3, "normal".to_string())].into(),
        added: 2,
        resplit: true,
        description: Some("all at once".into()),
        ..base
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn random_combinations_write_a_fresh_write(
        n in 2usize..6,
        removed_mask in 0u32..32,
        channel in 0usize..3,
        relabel_mask in 0u32..32,
        added in 0usize..3,
        resplit in any::<bool>(),
        describe in any::<bool>(),
    ) {
        // at least one base sample stays (sample 0 is never removed)
        let removed: BTreeSet<usize> = (1..n).filter(|i| removed_mask & (1 << i) != 0).collect();
        let relabel = (0..n)
            .filter(|i| relabel_mask & (1 << i) != 0 && !removed.contains(i))
            .map(|i| (i, format!("label-{i}")))
            .collect();
        check(&Spec {
            n,
            removed,
            drop_channel: [None, Some("I"), Some("II")][channel],
            relabel,
            added,
            resplit,
            description: describe.then(|| "described".to_string()),
        });
    }
}

#[test]
fn lineage_lists_each_operation_with_counts_and_id_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let base = common::commit(root, model("v1", &Spec { n: 4, ..Default::default() }), small_options());
    let spec = Spec {
        n: 4,
        removed: [1].into(),
        drop_channel: Some("II"),
        relabel: [(0, "afib".to_string())].into(),
        added: 1,
        resplit: true,
        description: Some("d".into()),
    };
    let mut e = edit_of(&spec);
    e.remove_annotation_ids.insert("s002/class".into());
    let (dir, plan) = edit_version(&base, root, "v2", e).unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(plan.samples, s(&["s001"]));
    assert_eq!(plan.series, s(&["s000/II", "s001/I", "s001/II", "s002/II", "s003/II"]));
    assert_eq!(plan.annotations, s(&["s001/class", "s002/class"]));
    assert_eq!(plan.added_samples, s(&["s004"]));
    assert_eq!(plan.added.series, s(&["s004/I", "s004/II"]));
    assert_eq!(plan.added.annotations, s(&["s004/class"]));
    assert!(plan.added.sources.is_empty() && plan.added.tasks.is_empty());
    let sha = |ids: &[&str]| ids_sha256(s(ids).iter());
    assert_eq!(sha(&["s001"]), "a67472d2757e74c5bc99f1a1f748e9b5263b0775db1a54523e3d3ccaa882f925");
    assert_eq!(
        operation(&dir),
        serde_json::json!({"cascade": false, "steps": [
            {"op": "remove_annotations", "count": 1, "ids_sha256": sha(&["s002/class"])},
            {"op": "remove_channels", "count": 1, "ids_sha256": sha(&["II"])},
            {"op": "remove_samples", "count": 1, "ids_sha256": sha(&["s001"])},
            {"op": "add", "count": 1, "ids_sha256": sha(&["s004"]), "samples": 1, "time_series": 2,
             "annotations": 1, "tasks": 0, "sources": 0},
            {"op": "set_annotations", "count": 1, "ids_sha256": sha(&["s000/class"])},
            {"op": "set_tasks", "count": 2, "ids_sha256": sha(&["t-diagnosis", "t-holdout"])},
            {"op": "set_dataset", "fields": ["description"]},
        ]})
    );
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        m["derived_from"]["removed"],
        serde_json::json!({"annotations": 2, "samples": 1, "tasks": 0, "time_series": 5})
    );
    assert_conforming(&dir);
    let (code, out, _) = cli(&["info", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("derived from version v1 ({})", operation(&dir))), "{out}");
}

fn blockers(e: Error) -> Vec<(String, &'static str, String)> {
    match e {
        Error::Edit { blockers } => {
            blockers.into_iter().map(|EditBlocker { id, field, reason }| (id, field, reason)).collect()
        }
        other => panic!("{other}"),
    }
}

#[test]
fn refusals_name_every_id_and_field_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let base = common::commit(root, model("v1", &Spec { n: 3, ..Default::default() }), small_options());
    let before = common::tree(root);
    let t = |id: &str, field: &'static str, reason: &str| (id.to_string(), field, reason.to_string());
    let e = Edit {
        remove_sample_ids: ["nope".to_string()].into(),
        remove_series_ids: ["s000/III".to_string()].into(),
        remove_channels: ["V1".to_string(), "ecg/I".to_string()].into(),
        remove_annotation_ids: ["s000/label".to_string()].into(),
        remove_task_ids: ["t-none".to_string()].into(),
        ..Default::default()
    };
    let err = edit_version(&base, root, "v2", e).unwrap_err();
    assert_eq!(
        err.to_string(),
        "edit refused: unknown sample id nope; unknown series id s000/III; unknown channel V1 (channels: I, II); \
         unknown channel ecg/I (a channel is named without its spec type: I; channels: I, II); \
         unknown annotation id s000/label; unknown task id t-none"
    );
    assert_eq!(
        blockers(err),
        vec![
            t("nope", "remove_sample_ids", "unknown sample id nope"),
            t("s000/III", "remove_series_ids", "unknown series id s000/III"),
            // the base's channels, and a channel named as `info` shows it (review 146)
            t("V1", "remove_channels", "unknown channel V1 (channels: I, II)"),
            t(
                "ecg/I",
                "remove_channels",
                "unknown channel ecg/I (a channel is named without its spec type: I; channels: I, II)"
            ),
            t("s000/label", "remove_annotation_ids", "unknown annotation id s000/label"),
            t("t-none", "remove_task_ids", "unknown task id t-none"),
        ]
    );
    // a sample left without series: refused, or removed with --cascade
    let both =
        || Edit { remove_series_ids: ["s001/I".to_string(), "s001/II".to_string()].into(), ..Default::default() };
    assert_eq!(
        blockers(edit_version(&base, root, "v2", both()).unwrap_err()),
        vec![t("s001", "series", "sample s001: its last series would be removed")]
    );
    // every channel: every sample and then the task's last sample
    let all = Edit { remove_channels: ["I".to_string(), "II".to_string()].into(), ..Default::default() };
    assert_eq!(
        edit_version(&base, root, "v2", all).unwrap_err().to_string(),
        "edit refused: sample s000: its last series would be removed; sample s001: its last series would be removed; \
         sample s002: its last series would be removed"
    );
    assert_eq!(common::tree(root), before, "a refused edit writes nothing");
    let (dir, plan) = edit_version(&base, root, "v2", Edit { cascade: Cascade::RemoveDependents, ..both() }).unwrap();
    assert_eq!(plan.samples, vec!["s001".to_string()]);
    assert_eq!(plan.stripped_tasks, vec![("diagnosis".to_string(), "t-diagnosis".to_string())]);
    let fresh = common::commit(
        &root.join("b"),
        model("v2", &Spec { n: 3, removed: [1].into(), ..Default::default() }),
        small_options(),
    );
    assert_fresh(&dir, &fresh);
}

#[test]
fn an_added_id_is_refused_unless_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let base = common::commit(root, model("v1", &Spec { n: 2, ..Default::default() }), small_options());
    // the base's own samples again: identical, nothing added, the same bytes
    let mut same = common::dataset_with_source("x", "y");
    add_sample(&mut same, 1, &["I", "II"], None);
    let (dir, plan) = edit_version(&base, root, "v2", Edit { add: vec![same], ..Default::default() }).unwrap();
    assert!(plan.added_samples.is_empty() && plan.added == Default::default());
    let fresh = common::commit(&root.join("b"), model("v2", &Spec { n: 2, ..Default::default() }), small_options());
    assert_fresh(&dir, &fresh);
    assert_eq!(operation(&dir), serde_json::json!({"cascade": false, "steps": []}));
    // other values, other metadata, another label, another source name
    let mut other = TimeFDataset::new("x", "y").unwrap();
    other.add_source(Source { source_id: "src".into(), name: "renamed".into(), ..Default::default() }).unwrap();
    other.add_series_values(SeriesMeta::new("s000/I", "ecg", "I", 250.0), vec![1.0f32; 60].into()).unwrap();
    other.add_series_values(SeriesMeta::new("s000/II", "ecg", "II", 100.0), vec![1.0f32; 60].into()).unwrap();
    other
        .add_sample(Sample {
            sample_id: "s000".into(),
            source_id: "src".into(),
            series: common::main_refs(&["s000/I"]),
            ..Default::default()
        })
        .unwrap();
    other.add_annotation(Annotation { value_str: Some("x".into()), ..label(1) }, &["s000".to_string()]).unwrap();
    // the base's task under another task name, of another type, over other samples
    let task = Task { split: Some("train".into()), ..Task::new("t-diagnosis", TaskType::Regression, vec![sid(0)]) };
    other.add_task("severity", task).unwrap();
    let err = edit_version(&base, root, "v3", Edit { add: vec![other], ..Default::default() }).unwrap_err();
    let t = |id: &str, field: &'static str, reason: &str| (id.to_string(), field, reason.to_string());
    // each on its id's field, naming the fields that differ, the held value first, in the entity's field order
    assert_eq!(
        blockers(err),
        vec![
            t(
                "src",
                "source_id",
                r#"added source src exists with other content: name "test source" (added "renamed")"#
            ),
            t(
                "s000/II",
                "time_series_id",
                "added series s000/II exists with other content: sampling_rate_hz 250 (added 100)"
            ),
            t(
                "s000",
                "sample_id",
                r#"added sample s000 exists with other content: subject_id "p0" (added none), series 2 entries (added 1 entry), metadata["site"] "site-0" (added none)"#
            ),
            t(
                "s001/class",
                "annotation_id",
                r#"added annotation s001/class exists with other content: value_str "afib" (added "x")"#
            ),
            t(
                "t-diagnosis",
                "task_id",
                r#"added task t-diagnosis exists with other content: task_name "diagnosis" (added "severity"), task_type "classification" (added "regression"), sample_ids 2 entries (added 1 entry)"#
            ),
            t("s000/I", "values", "added series s000/I exists with other values: values[0] 0 (added 1)"),
        ]
    );
}

/// Series added again with the base's metadata have their values compared
/// with the base's, read in the base's index order (one scan) while the
/// blockers stay in id order, whatever the spec types put first.
#[test]
fn values_added_again_are_compared_in_index_order_and_refused_in_id_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // ids against their index order: spec type "z" holds "a…", "a" holds "b…"
    let series = [("a1", "z"), ("a2", "z"), ("b1", "a"), ("b2", "a")];
    let build = |version: &str, seed: u32| {
        let mut d = common::dataset_with_source("x", version);
        for (i, (id, spec)) in series.iter().enumerate() {
            let seed = if *id == "a2" || *id == "b1" { seed } else { 0 } + i as u32;
            common::add_series(&mut d, id, spec, "c", 10.0, seed, 600);
            common::add_sample_of(&mut d, &format!("s-{id}"), &[id]);
        }
        d
    };
    let base = common::commit(root, build("v1", 0), small_options());
    // the same values again: taken
    let (_, plan) = edit_version(&base, root, "v2", Edit { add: vec![build("y", 0)], ..Default::default() }).unwrap();
    assert!(plan.added_samples.is_empty() && plan.added == Default::default());
    let err = edit_version(&base, root, "v3", Edit { add: vec![build("y", 100)], ..Default::default() }).unwrap_err();
    let held = |seed: u32| common::values(seed, 600)[0];
    let reason = |id: &str, seed: u32| {
        format!("added series {id} exists with other values: values[0] {} (added {})", held(seed), held(seed + 100))
    };
    let want = vec![("a2".to_string(), "values", reason("a2", 1)), ("b1".to_string(), "values", reason("b1", 2))];
    assert_eq!(blockers(err), want);
    // each addition is compared, in either order: the changed one before or after the same
    // (review 142: one comparison per series took only the last addition's values)
    for add in [vec![build("y", 100), build("z", 0)], vec![build("y", 0), build("z", 100)]] {
        let err = edit_version(&base, root, "v3", Edit { add, ..Default::default() }).unwrap_err();
        assert_eq!(blockers(err), want);
    }
    // a series the base does not hold, carried by two additions: refused as such
    // (it was compared with the base, which said "no such series in this version")
    let with_new = |version: &str| {
        let mut d = build(version, 0);
        common::add_series(&mut d, "c1", "a", "c", 10.0, 9, 600);
        common::add_sample_of(&mut d, "s-c1", &["c1"]);
        d
    };
    // (once, however many carry it: review 143)
    let add = vec![with_new("y"), with_new("z"), with_new("w")];
    let err = edit_version(&base, root, "v3", Edit { add, ..Default::default() }).unwrap_err();
    let twice = "added series c1 is added by more than one of the edit's additions: give it once".to_string();
    assert_eq!(blockers(err), vec![("c1".to_string(), "time_series_id", twice.clone())]);
    // ... also with other metadata in each (review 143: "exists with other content: sampling_rate_hz
    // 10 (added 20)", the first addition's rate as the held one, then "give it once" at the next try);
    // a sample two additions carry with other content differs between them, not from the base
    let other_rate = |version: &str| {
        let mut d = build(version, 0);
        common::add_series(&mut d, "c1", "a", "c", 20.0, 9, 600);
        common::add_sample_of(&mut d, "s-c1", &["c1", "a1"]);
        d
    };
    let add = vec![with_new("y"), other_rate("z")];
    let err = edit_version(&base, root, "v3", Edit { add, ..Default::default() }).unwrap_err();
    let between = r#"added sample s-c1 differs between the edit's additions: series 1 entry (added 2 entries)"#;
    assert_eq!(
        blockers(err),
        vec![("c1".to_string(), "time_series_id", twice), ("s-c1".to_string(), "sample_id", between.to_string())]
    );
}

#[test]
fn a_refusal_shows_ten_blockers_and_counts_the_rest() {
    let blocker = |i: usize| EditBlocker {
        id: format!("s{i}"),
        field: "remove_sample_ids",
        reason: format!("unknown sample id s{i}"),
    };
    let shown: Vec<String> = (0..10).map(|i| format!("unknown sample id s{i}")).collect();
    let err = Error::Edit { blockers: (0..10).map(blocker).collect() };
    assert_eq!(err.to_string(), format!("edit refused: {}", shown.join("; ")));
    let err = Error::Edit { blockers: (0..240).map(blocker).collect() };
    assert_eq!(err.to_string(), format!("edit refused: {}; … and 230 more", shown.join("; ")));
}

#[test]
fn cli_add_ucr_equals_an_ingest_of_both_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (train, test) = (real("ucr/ArrowHead_TRAIN.ts"), real("ucr/ArrowHead_TEST.ts"));
    let base = ingest(&tmp.path().join("a"), "ucr", "ArrowHead", "v1", &[train.clone()]);
    let fresh = ingest(&tmp.path().join("b"), "ucr", "ArrowHead", "v2", &[train, test.clone()]);
    let r = tmp.path().join("a");
    let (code, out, err) = add_ucr(&base, &r, "v2", &test);
    assert_eq!(code, 0, "{err}");
    let dir = r.join("ArrowHead/v2");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 175 + 2);
    assert_eq!(lines[0], "add sample ArrowHead-test-0");
    assert_eq!(lines[175], "add 175 sample(s), 175 series, 175 annotation(s), 1 task(s), 0 source(s)");
    assert_eq!(lines[176], dir.display().to_string());
    assert_fresh(&dir, &fresh);
    let added: Vec<String> = (0..175).map(|i| format!("ArrowHead-test-{i}")).collect();
    assert_eq!(
        operation(&dir),
        serde_json::json!({"cascade": false, "steps": [{"op": "add", "count": 175, "ids_sha256": ids_sha256(added.iter()),
            "inputs": [{"file": "ArrowHead_TEST.ts",
                        "sha256": "5417dab42626d41df5e435bb22458c2df40dfad4bcd3b59559bbe72e20e84904"}],
            "samples": 175, "time_series": 175, "annotations": 175, "tasks": 1, "sources": 0}]})
    );
}

/// aeon ships TEST files whose `@problemName` is the TRAIN's with a suffix
/// (`JapaneseVowels_eq`): added to a base ingested from the TRAIN alone, the
/// cases take the base's name and source, with the warning an ingest of both
/// gives, and the version is a fresh ingest of both.
#[test]
fn cli_add_ucr_whose_problem_name_differs_by_a_suffix() {
    let tmp = tempfile::tempdir().unwrap();
    let (train, test) = (tmp.path().join("Toy_TRAIN.ts"), tmp.path().join("Toy_TEST.ts"));
    std::fs::write(&train, "@problemName toy\n@univariate true\n@classLabel true a b\n@data\n1,2,3:a\n4,5,6:b\n")
        .unwrap();
    std::fs::write(&test, "@problemName toy_eq\n@univariate true\n@classLabel true a b\n@data\n7,8,9:b\n").unwrap();
    let base = ingest(&tmp.path().join("a"), "ucr", "toy", "v1", &[train.clone()]);
    let fresh = ingest(&tmp.path().join("b"), "ucr", "toy", "v2", &[train, test.clone()]);
    let r = tmp.path().join("a");
    let (code, out, err) = add_ucr(&base, &r, "v2", &test);
    assert_eq!(code, 0, "{err}");
    let dir = r.join("toy/v2");
    assert_eq!(
        out,
        format!(
            "add sample toy-test-0\nadd 1 sample(s), 1 series, 1 annotation(s), 1 task(s), 0 source(s)\n{}\n",
            dir.display()
        )
    );
    let warning = format!(
        "timef: warning: @problemName \"toy\" of the base and \"toy_eq\" of {} differ by a suffix; read as one dataset named toy",
        test.display()
    );
    assert_eq!(err.lines().next(), Some(warning.as_str()), "{err}");
    assert_fresh(&dir, &fresh);
    let v = timef::reader::Version::open(&dir).unwrap();
    let samples: Vec<(String, String)> = v.samples().unwrap().into_iter().map(|s| (s.sample_id, s.source_id)).collect();
    let want = [("toy-test-0", "toy"), ("toy-train-0", "toy"), ("toy-train-1", "toy")];
    assert_eq!(samples, want.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(&v.read_series("toy-test-0/0").unwrap()[..], &[7.0f32, 8.0, 9.0][..]);
    let labels: Vec<(String, String)> =
        v.annotations().unwrap().into_iter().map(|(s, a)| (s, a.value_str.unwrap_or_default())).collect();
    let want = [("toy-test-0", "b"), ("toy-train-0", "a"), ("toy-train-1", "b")];
    assert_eq!(labels, want.map(|(a, b)| (a.to_string(), b.to_string())));
    // a name that is no suffix of the base's is refused, naming the file
    let other = tmp.path().join("Other_TEST.ts");
    std::fs::write(&other, "@problemName yot\n@univariate true\n@classLabel true a b\n@data\n7,8,9:a\n").unwrap();
    let (code, _, err) = add_ucr(&base, &r, "v3", &other);
    assert_eq!(
        (code, err),
        (
            2,
            format!(
                "timef: error: {}: @problemName \"yot\" differs from \"toy\" of the base; the files are not one dataset\n",
                other.display()
            )
        )
    );
}

#[test]
fn cli_relabel_resplit_and_describe_from_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("a");
    let base = common::commit(&root, model("v1", &Spec { n: 4, ..Default::default() }), small_options());
    let spec = Spec {
        n: 4,
        relabel: [(1, "normal".to_string())].into(),
        resplit: true,
        description: Some("relabelled".into()),
        ..Default::default()
    };
    let fresh = common::commit(&tmp.path().join("b"), model("v2", &spec), small_options());
    let csv = tmp.path().join("labels.csv");
    std::fs::write(&csv, "annotation_id,sample_id,annotation_type,key,value_str\ns001/class,s001,label,class,normal\n")
        .unwrap();
    let jsonl = tmp.path().join("labels.jsonl");
    std::fs::write(
        &jsonl,
        "{\"annotation_id\": \"s001/class\", \"sample_id\": \"s001\", \"annotation_type\": \"label\", \"key\": \"class\", \"value_str\": \"normal\"}\n",
    )
    .unwrap();
    let tasks = tmp.path().join("split.jsonl");
    std::fs::write(
        &tasks,
        "{\"task_name\": \"diagnosis\", \"task_id\": \"t-diagnosis\", \"task_type\": \"classification\", \"split\": \"val\", \"sample_ids\": [\"s000\"]}\n\
         {\"task_name\": \"holdout\", \"task_id\": \"t-holdout\", \"task_type\": \"classification\", \"split\": \"test\", \"sample_ids\": [\"s000\", \"s001\", \"s002\", \"s003\"]}\n",
    )
    .unwrap();
    let r = root.to_str().unwrap();
    for (version, labels) in [("v2", &csv), ("v3", &jsonl)] {
        let (code, out, err) = cli(&[
            "edit",
            base.to_str().unwrap(),
            "--out-root",
            r,
            "--version",
            version,
            "--set-annotations",
            labels.to_str().unwrap(),
            "--set-tasks",
            tasks.to_str().unwrap(),
            "--description",
            "relabelled",
        ]);
        assert_eq!(code, 0, "{err}");
        let dir = root.join("ecg").join(version);
        assert_eq!(
            out,
            format!(
                "set annotation s001/class\nset task diagnosis/t-diagnosis\nset task holdout/t-holdout\nset dataset \
                 description\n{}\n",
                dir.display()
            )
        );
        if version == "v2" {
            assert_fresh(&dir, &fresh);
        } else {
            // the same bytes as the CSV's edit (the version name is in the manifest only)
            let (mut a, mut b) = (file_bytes(&dir), file_bytes(&root.join("ecg/v2")));
            a.remove("manifest.json");
            b.remove("manifest.json");
            assert_eq!(a, b);
        }
        let steps = &operation(&dir)["steps"];
        let file = labels.file_name().unwrap().to_str().unwrap();
        assert_eq!(steps[0]["op"], "set_annotations");
        assert_eq!(steps[0]["inputs"][0]["file"], file);
        assert_eq!(steps[0]["inputs"][0]["sha256"], timef::edit::InputFile::hash(labels).unwrap().sha256);
    }
    // a row file missing a required column, and one with a column no annotation has
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"annotation_id\": \"s001/class\", \"sample_id\": \"s001\", \"annotation_type\": \"label\"}\n",
    )
    .unwrap();
    let (code, _, err) = cli(&[
        "edit",
        base.to_str().unwrap(),
        "--out-root",
        r,
        "--version",
        "v9",
        "--set-annotations",
        bad.to_str().unwrap(),
    ]);
    assert_eq!((code, err), (2, format!("timef: error: {}:1: missing field `key`\n", bad.display())));
    let (code, _, err) = cli(&["edit", base.to_str().unwrap(), "--out-root", r, "--version", "v9"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "timef: error: invalid option of timef edit: no operation given: name at least one (--remove-*, \
             --add-*, --set-*, --description, --license, --citation; see timef edit --help)\n"
        )
    );
    // a row or id file that holds none is refused by name, not read as no operation
    let (empty, header) = (tmp.path().join("empty.csv"), tmp.path().join("header.csv"));
    let empty_jsonl = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    std::fs::write(&empty_jsonl, "").unwrap();
    std::fs::write(&header, "sample_id,annotation_id\n").unwrap();
    for (option, file) in [
        ("--set-annotations", &empty),
        ("--set-annotations", &header),
        ("--set-tasks", &empty_jsonl),
        ("--set-sources", &empty),
        ("--remove-samples-from", &empty),
    ] {
        let args = ["edit", base.to_str().unwrap(), "--out-root", r, "--version", "v9", option, file.to_str().unwrap()];
        let (code, _, err) = cli(&args);
        let want = format!("timef: error: invalid option {option}: {}: holds no rows\n", file.display());
        assert_eq!((code, err), (2, want), "{option}");
    }
    assert!(!root.join("ecg/v9").exists() && root.join("ecg/v1").exists());
}

#[test]
fn readme_curation_round_trip_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let blocks: Vec<&str> = text.split("<!-- curation-example -->\n```sh\n").skip(1).collect();
    assert_eq!(blocks.len(), 1, "README.md must hold one ```sh block after <!-- curation-example -->");
    let block = blocks[0].split("```").next().unwrap();
    assert!(block.lines().count() <= 8);
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo.join("examples"), tmp.path().join("examples")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_timef")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("sh")
        .args(["-ec", block])
        .current_dir(tmp.path())
        .env("PATH", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}{stdout}");
    // BasicMotions is a few pages: dedup says its share says little
    let note = stderr.lines().find(|l| l.starts_with("timef: note: the new version has only ")).unwrap_or_default();
    assert!(note.ends_with(" pages; a values page holds at least 256 KiB of values (docs/format.md §4), so a small version shares few pages after any edit, and the share says little below ~32 pages"), "{stderr}");
    let dir = tmp.path().join("out/BasicMotions");
    let v3 = timef::reader::Version::open(dir.join("v3")).unwrap();
    assert_eq!(v3.manifest().counts.samples, 80);
    assert_eq!(v3.task_names(), ["test", "train", "val"]);
    // the re-split leaves no sample in two splits (review 146: val's two were in test too)
    let of = |name: &str| v3.tasks(name).unwrap().into_iter().flat_map(|t| t.sample_ids).collect::<Vec<_>>();
    let (val, test) = (of("val"), of("test"));
    assert_eq!((val.len(), test.len()), (2, 38));
    assert!(val.iter().all(|s| !test.contains(s)));
    let label = v3.annotations().unwrap().into_iter().find(|(s, _)| s == "BasicMotions-train-0").unwrap().1;
    assert_eq!(label.value_str.as_deref(), Some("Walking"));
    let ops: Vec<String> =
        operation(&dir.join("v3"))["steps"].as_array().unwrap().iter().map(|s| s["op"].to_string()).collect();
    assert_eq!(ops, ["\"set_annotations\"", "\"set_tasks\""]);
    // v2 is the ingest of both files (the description and source of the first)
    let (code, _, err) = cli(&[
        "--quiet",
        "ingest",
        "ucr",
        "--root",
        tmp.path().join("c").to_str().unwrap(),
        "--name",
        "BasicMotions",
        "--version",
        "v2",
        "--spec-type",
        "imu",
        "--sampling-rate-hz",
        "10",
        repo.join("examples/data/BasicMotions_TRAIN.ts").to_str().unwrap(),
        repo.join("examples/data/BasicMotions_TEST.ts").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_fresh(&dir.join("v2"), &tmp.path().join("c/BasicMotions/v2"));
    assert!(stdout.lines().last().unwrap().contains(" pages shared; "), "{stdout}");
}

/// A task whose `context_sample_ids` holds a removed sample twice blocks
/// the removal once (review 145: the same line came twice).
#[test]
fn a_context_entry_held_twice_is_one_blocker() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = common::dataset_with_source("x", "v1");
    for id in ["x1", "x2"] {
        common::add_series(&mut d, id, "ecg", "c", 10.0, 0, 40);
        common::add_sample_of(&mut d, id, &[id]);
    }
    let task = Task {
        context_sample_ids: Some(vec!["x1".into(), "x1".into()]),
        target_sample_id: Some("x2".into()),
        ..Task::new("t1", TaskType::Forecasting, vec!["x2".into()])
    };
    d.add_task("fc", task).unwrap();
    let base = common::commit(tmp.path(), d, small_options());
    let edit = Edit { remove_sample_ids: BTreeSet::from(["x1".to_string()]), ..Default::default() };
    let err = edit_version(&base, tmp.path(), "v2", edit).unwrap_err();
    let why = "task fc/t1: context_sample_ids entry x1 would be removed".to_string();
    assert_eq!(blockers(err), vec![("t1".to_string(), "context_sample_ids", why)]);
}

/// A task the edit sets replaces one an addition of the same edit brings, as
/// a set annotation or source does (review 144: refused as "added twice with
/// different content").
#[test]
fn a_set_task_replaces_an_added_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = common::dataset_with_source("x", "v1");
    common::add_series(&mut d, "x1", "ecg", "c", 10.0, 0, 40);
    common::add_sample_of(&mut d, "x1", &["x1"]);
    let base = common::commit(tmp.path(), d, small_options());
    let mut added = common::dataset_with_source("x", "a");
    common::add_series(&mut added, "x2", "ecg", "c", 10.0, 1, 40);
    common::add_sample_of(&mut added, "x2", &["x2"]);
    added.add_task("test", Task::new("t9", TaskType::Classification, vec!["x2".into()])).unwrap();
    let set = Task { split: Some("val".into()), ..Task::new("t9", TaskType::Classification, vec!["x1".into()]) };
    let edit = Edit { add: vec![added], set_tasks: vec![("val".into(), set.clone())], ..Default::default() };
    let (dir, plan) = edit_version(&base, tmp.path(), "v2", edit).unwrap();
    let v = timef::reader::Version::open(&dir).unwrap();
    assert_eq!(v.task_names(), ["val"]);
    assert_eq!(v.tasks("val").unwrap(), [set.clone()]);
    assert_eq!(plan.added.tasks, ["t9"]);
    // a base task the edit sets that an addition brings again is not added (review 147: counted so)
    let again = std::sync::Arc::new(timef::reader::Version::open(&dir).unwrap()).to_dataset("x", "a").unwrap();
    let set = Task { split: Some("test".into()), ..set };
    let edit = Edit { add: vec![again], set_tasks: vec![("val".into(), set.clone())], ..Default::default() };
    let (dir, plan) = edit_version(&dir, tmp.path(), "v3", edit).unwrap();
    assert!(plan.added == Default::default() && plan.added_samples.is_empty(), "{plan:?}");
    assert_eq!(timef::reader::Version::open(&dir).unwrap().tasks("val").unwrap(), [set]);
}
