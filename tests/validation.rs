//! Every validation rule of FORMAT-BRIEF §1, §3 and §5 fails with the exact
//! [`Error::Validation`] (entity id, field, reason), and a failed write leaves no
//! version and no staging directory: rules checked before any I/O leave the root
//! untouched; rules checked as loaders run leave only the dataset directory that
//! staging was created in (the brief: abort removes only the staging directory).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use timef::reader::Version;
use timef::{
    Annotation, Error, Sample, SeriesMeta, SeriesRef, Task, TaskType, TimeFDataset, TimeFWriter, WriterOptions,
};

use common::*;

/// The (id, field, reason) of an [`Error::Validation`].
type Rejection = (String, &'static str, String);

/// The (id, field, reason) of a validation error; panics on any other error.
fn validation(e: Error) -> Rejection {
    match e {
        Error::Validation { id, field, reason } => (id, field, reason),
        other => panic!("expected Error::Validation, got {other:?}"),
    }
}

fn triple(id: &str, field: &'static str, reason: &str) -> Rejection {
    (id.to_string(), field, reason.to_string())
}

/// Writes `d` under a fresh root; returns the error and the root's tree afterwards.
fn write_fails(d: TimeFDataset) -> (Error, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let e = TimeFWriter::new(tmp.path(), small_options()).write(d).expect_err("write must fail");
    (e, tree(tmp.path()))
}

/// Six ECG samples (enough values for several row groups before a later series)
/// plus sample `extra` over the series `meta` with `values`. Spec type `resp`
/// sorts after `ecg`, so the extra series is loaded last.
fn with_series(meta: SeriesMeta, values: Vec<f32>) -> TimeFDataset {
    let mut d = ecg_dataset("v", "1", 6);
    let id = meta.time_series_id.clone();
    d.add_series(meta, Box::new(move || Ok(values.into()))).unwrap();
    d.add_sample(Sample {
        sample_id: "extra".into(),
        source_id: "src".into(),
        series: main_refs(&[&id]),
        ..Default::default()
    })
    .unwrap();
    d
}

fn resp(id: &str) -> SeriesMeta {
    SeriesMeta::new(id, "resp", "chest", 100.0)
}

#[test]
fn non_finite_and_empty_values_fail_as_their_loader_runs() {
    let mut bad = values(1, 600);
    let cases: [(f32, &str); 3] = [(f32::NAN, "NaN"), (f32::INFINITY, "inf"), (f32::NEG_INFINITY, "-inf")];
    for (v, shown) in cases {
        // in the second chunk, so the first one is fine
        bad[300] = v;
        let (e, left) = write_fails(with_series(resp("r"), bad.clone()));
        assert_eq!(validation(e), triple("r", "values", &format!("value 300 is {shown}, not finite")));
        assert!(left.is_empty(), "nothing may remain: {left:?}");
    }
    let (e, left) = write_fails(with_series(resp("r"), Vec::new()));
    assert_eq!(validation(e), triple("r", "values", "a series needs at least one value"));
    assert!(left.is_empty(), "nothing may remain: {left:?}");
}

/// A non-finite value stops the write as its series loads: no later loader
/// runs, and a later series' own failure (a loader error) is never reached,
/// whatever the row groups in flight on the pool.
#[test]
fn a_non_finite_value_stops_the_write_before_any_later_loader_runs() {
    let later_runs = Arc::new(AtomicUsize::new(0));
    let mut d = dataset_with_source("v", "1");
    let mut bad = values(1, 2000);
    bad[1500] = f32::NAN;
    d.add_series(SeriesMeta::new("a", "ecg", "I", 100.0), Box::new(move || Ok(bad.clone().into()))).unwrap();
    for i in 0..20 {
        let runs = Arc::clone(&later_runs);
        let meta = SeriesMeta::new(format!("b{i:02}"), "ecg", "I", 100.0);
        d.add_series(
            meta,
            Box::new(move || {
                runs.fetch_add(1, Ordering::SeqCst);
                match i {
                    5 => Err("a later loader failed".into()),
                    _ => Ok(values(i, 2000).into()),
                }
            }),
        )
        .unwrap();
    }
    let ids: Vec<String> = std::iter::once("a".to_string()).chain((0..20).map(|i| format!("b{i:02}"))).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    d.add_sample(Sample {
        sample_id: "s".into(),
        source_id: "src".into(),
        series: main_refs(&refs),
        ..Default::default()
    })
    .unwrap();
    let (e, left) = write_fails(d);
    assert_eq!(validation(e), triple("a", "values", "value 1500 is NaN, not finite"));
    assert_eq!(later_runs.load(Ordering::SeqCst), 0, "no loader after the bad series may run");
    assert!(left.is_empty(), "nothing may remain: {left:?}");
}

#[test]
fn t_end_s_must_match_the_number_of_values() {
    // 100 Hz from 10 s to 13 s: 300 values
    let meta = SeriesMeta { t_start_s: 10.0, t_end_s: Some(13.0), ..resp("r") };
    for n in [299, 301] {
        let (e, left) = write_fails(with_series(meta.clone(), values(1, n)));
        let reason = format!("{n} values, but round((t_end_s - t_start_s) * sampling_rate_hz) = 300");
        assert_eq!(validation(e), triple("r", "t_end_s", &reason));
        assert!(left.is_empty(), "nothing may remain: {left:?}");
    }
    // 3 Hz over 1.4 s is 4.2 values: rounded, 4 is right and 5 is not
    let odd = SeriesMeta { sampling_rate_hz: 3.0, t_end_s: Some(1.4), ..resp("r") };
    let (e, _) = write_fails(with_series(odd.clone(), values(1, 5)));
    assert_eq!(validation(e).1, "t_end_s");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = commit(a.path(), with_series(odd, values(1, 4)), small_options());
    assert_eq!(Version::open(&dir).unwrap().read_series("r").unwrap().len(), 4);
    let dir = commit(b.path(), with_series(meta, values(1, 300)), small_options());
    assert_eq!(Version::open(&dir).unwrap().series().unwrap().last().unwrap().t_end_s, Some(13.0));
}

#[test]
fn sampling_rate_must_be_finite_and_positive() {
    let mut d = ecg_dataset("v", "1", 1);
    for (rate, shown) in [(0.0, "0"), (-1.0, "-1"), (f64::NAN, "NaN"), (f64::INFINITY, "inf")] {
        let meta = SeriesMeta::new("r", "resp", "chest", rate);
        let e = d.add_series(meta, Box::new(|| Ok(vec![1.0f32].into()))).unwrap_err();
        assert_eq!(validation(e), triple("r", "sampling_rate_hz", &format!("must be finite and > 0, got {shown}")));
    }
    assert_eq!(d.series().count(), 2, "refused series are not added");
}

#[test]
fn duplicate_series_ids_dedup_when_equal_and_fail_when_different() {
    let mut d = ecg_dataset("v", "1", 1);
    let other = SeriesMeta { units: Some("mV".into()), ..SeriesMeta::new("s000/I", "ecg", "I", 500.0) };
    let e = d.add_series(other, Box::new(|| Ok(vec![1.0f32].into()))).unwrap_err();
    assert_eq!(validation(e), triple("s000/I", "time_series_id", "added twice with different metadata"));
    let rate = SeriesMeta::new("s000/I", "ecg", "I", 250.0);
    let e = d.add_series(rate, Box::new(|| Ok(vec![1.0f32].into()))).unwrap_err();
    assert_eq!(validation(e).1, "time_series_id");

    // an equal entry is deduplicated: the first loader is kept and runs exactly once
    let runs = Arc::new(AtomicUsize::new(0));
    let mut d = dataset_with_source("v", "1");
    for (i, view) in ["a", "b"].iter().enumerate() {
        let runs = Arc::clone(&runs);
        let loader = Box::new(move || {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(vec![i as f32; 10].into())
        });
        d.add_series(SeriesMeta::new("shared", "ecg", "I", 10.0), loader).unwrap();
        d.add_sample(Sample {
            sample_id: format!("s-{view}"),
            source_id: "src".into(),
            series: vec![SeriesRef { time_series_id: "shared".into(), view: view.to_string() }],
            ..Default::default()
        })
        .unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, small_options());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let v = Version::open(&dir).unwrap();
    assert_eq!((v.manifest().counts.time_series, v.manifest().counts.values), (1, 10));
    assert_eq!(&*v.read_series("shared").unwrap(), &[0.0f32; 10], "the first loader's values");
}

#[test]
fn a_shared_annotation_must_be_field_equal() {
    let mut d = ecg_dataset("v", "1", 2);
    let a = Annotation {
        annotation_id: "shared".into(),
        annotation_type: "label".into(),
        key: "quality".into(),
        value_str: Some("good".into()),
        ..Default::default()
    };
    d.add_annotation(a.clone(), &["s000".into()]).unwrap();
    let other = Annotation { value_str: Some("bad".into()), ..a.clone() };
    let e = d.add_annotation(other, &["s001".into()]).unwrap_err();
    assert_eq!(validation(e), triple("shared", "annotation_id", "shared annotation differs between samples"));
    let e = d.add_annotation(Annotation { channel: Some("I".into()), ..a.clone() }, &["s001".into()]).unwrap_err();
    assert_eq!(validation(e).1, "annotation_id");
    // the refused attachments are not recorded: the annotation stays on s000 only
    d.add_annotation(a.clone(), &["s000".into()]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, small_options());
    let rows: Vec<_> =
        Version::open(&dir).unwrap().annotations().unwrap().into_iter().filter(|r| r.1.key == "quality").collect();
    assert_eq!(rows, [("s000".to_string(), a)]);
}

/// An event annotation ends at or after its start, as a sample's window
/// does: one that ends before is refused naming it; a point event (equal
/// times) and an open one (no end) are kept.
#[test]
fn an_annotation_that_ends_before_it_starts_is_refused() {
    let mut d = ecg_dataset("v", "1", 2);
    let event = |id: &str, start: f64, end: Option<f64>| Annotation {
        annotation_id: id.into(),
        annotation_type: "event".into(),
        key: "arrhythmia".into(),
        t_start_s: Some(start),
        t_end_s: end,
        ..Default::default()
    };
    let e = d.add_annotation(event("late", 2.5, Some(1.0)), &["s000".into()]).unwrap_err();
    assert_eq!(validation(e), triple("late", "t_end_s", "1 is before t_start_s 2.5"));
    d.add_annotation(event("point", 2.5, Some(2.5)), &["s000".into()]).unwrap();
    d.add_annotation(event("open", 2.5, None), &["s001".into()]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, small_options());
    let mut ids: Vec<String> = Version::open(&dir)
        .unwrap()
        .annotations()
        .unwrap()
        .into_iter()
        .filter(|r| r.1.key == "arrhythmia")
        .map(|r| r.1.annotation_id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["open", "point"]);
}

#[test]
fn forecasting_tasks_need_a_target_and_context() {
    let mut d = ecg_dataset("v", "1", 2);
    let base = Task {
        target_sample_id: Some("s001".into()),
        context_sample_ids: Some(vec!["s000".into()]),
        horizon: Some(10),
        ..Task::new("fc", TaskType::Forecasting, vec!["s000".into(), "s001".into()])
    };
    let no_target = Task { target_sample_id: None, ..base.clone() };
    let e = d.add_task("forecast", no_target).unwrap_err();
    assert_eq!(validation(e), triple("fc", "target_sample_id", "a forecasting task needs a target sample"));
    for context in [None, Some(vec![])] {
        let e = d.add_task("forecast", Task { context_sample_ids: context, ..base.clone() }).unwrap_err();
        assert_eq!(validation(e), triple("fc", "context_sample_ids", "a forecasting task needs context samples"));
    }
    let e = d.add_task("forecast", Task { sample_ids: vec![], ..base.clone() }).unwrap_err();
    assert_eq!(validation(e), triple("fc", "sample_ids", "a task needs at least one sample"));
    d.add_task("forecast", base).unwrap();
}

#[test]
fn names_must_be_safe_path_components() {
    let reason = "must be 1-128 characters of [A-Za-z0-9._-] not starting with '.'";
    let long = "n".repeat(129);
    for bad in ["", ".", "..", ".hidden", "a/b", "a b", "ä", "a\\b", long.as_str()] {
        assert_eq!(validation(TimeFDataset::new(bad, "1").unwrap_err()), triple(bad, "dataset_name", reason));
        assert_eq!(validation(TimeFDataset::new("ok", bad).unwrap_err()), triple(bad, "dataset_version", reason));
        let mut d = ecg_dataset("v", "1", 1);
        let e = d.add_task(bad, Task::new("t", TaskType::Qa, vec!["s000".into()])).unwrap_err();
        assert_eq!(validation(e), triple(bad, "task_name", reason));
    }
    for good in ["a", "A-z_0.9", "v1.0.0", &"n".repeat(128)] {
        assert!(TimeFDataset::new(good, good).is_ok(), "{good}");
    }
    // names edited after construction are checked again by the writer, before any I/O
    for (name, version, field) in [("..", "1", "dataset_name"), ("v", "../1", "dataset_version")] {
        let mut d = ecg_dataset("v", "1", 1);
        d.info.name = name.into();
        d.info.version = version.into();
        let (e, left) = write_fails(d);
        let bad = if field == "dataset_name" { name } else { version };
        assert_eq!(validation(e), triple(bad, field, reason));
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn unknown_references_fail_before_any_io() {
    let task = |t: Task| move |d: &mut TimeFDataset| d.add_task("t", t.clone()).unwrap();
    type Edit = Box<dyn Fn(&mut TimeFDataset)>;
    let cases: Vec<(Edit, Rejection)> = vec![
        (
            Box::new(task(Task::new("t1", TaskType::Classification, vec!["s000".into(), "nope".into()]))),
            triple("t1", "sample_ids", "unknown sample nope"),
        ),
        (
            Box::new(task(Task {
                target_sample_id: Some("nope".into()),
                context_sample_ids: Some(vec!["s000".into()]),
                ..Task::new("t2", TaskType::Forecasting, vec!["s000".into()])
            })),
            triple("t2", "sample_ids", "unknown sample nope"),
        ),
        (
            Box::new(task(Task {
                target_sample_id: Some("s000".into()),
                context_sample_ids: Some(vec!["nope".into()]),
                ..Task::new("t3", TaskType::Forecasting, vec!["s000".into()])
            })),
            triple("t3", "sample_ids", "unknown sample nope"),
        ),
        (
            Box::new(task(Task {
                from_task: Some("t-none".into()),
                ..Task::new("t4", TaskType::Qa, vec!["s000".into()])
            })),
            triple("t4", "from_task", "unknown task t-none"),
        ),
        (
            Box::new(|d: &mut TimeFDataset| {
                let a = Annotation {
                    annotation_id: "a".into(),
                    annotation_type: "label".into(),
                    key: "k".into(),
                    ..Default::default()
                };
                d.add_annotation(a, &["nope".into()]).unwrap()
            }),
            triple("a", "sample_id", "unknown sample nope"),
        ),
        (
            Box::new(|d: &mut TimeFDataset| {
                let s = Sample {
                    sample_id: "x".into(),
                    source_id: "nope".into(),
                    series: main_refs(&["s000/I"]),
                    ..Default::default()
                };
                d.add_sample(s).unwrap()
            }),
            triple("x", "source_id", "unknown source nope"),
        ),
        (
            Box::new(|d: &mut TimeFDataset| {
                let s = Sample {
                    sample_id: "x".into(),
                    source_id: "src".into(),
                    series: main_refs(&["nope"]),
                    ..Default::default()
                };
                d.add_sample(s).unwrap()
            }),
            triple("x", "series", "unknown series nope"),
        ),
        (
            Box::new(|d: &mut TimeFDataset| add_series(d, "orphan", "ecg", "I", 1.0, 0, 3)),
            triple("orphan", "time_series_id", "series referenced by no sample"),
        ),
    ];
    for (edit, want) in cases {
        let mut d = ecg_dataset("v", "1", 1);
        edit(&mut d);
        let (e, left) = write_fails(d);
        assert_eq!(validation(e), want);
        assert!(left.is_empty(), "nothing may be created before references are checked: {left:?}");
    }
}

#[test]
fn options_out_of_range_name_the_option() {
    let option = |b: timef::writer::WriterOptionsBuilder| match b.try_build().unwrap_err() {
        Error::InvalidOption { option, .. } => option,
        other => panic!("expected InvalidOption, got {other:?}"),
    };
    assert_eq!(option(WriterOptions::builder().chunk_max_bytes(1022)), "chunk_max_bytes");
    assert_eq!(option(WriterOptions::builder().chunk_max_bytes(0)), "chunk_max_bytes");
    assert_eq!(option(WriterOptions::builder().row_group_target_bytes(0)), "row_group_target_bytes");
    assert_eq!(option(WriterOptions::builder().shard_target_bytes(0)), "shard_target_bytes");
    assert_eq!(option(WriterOptions::builder().compression_level(0)), "compression_level");
    assert_eq!(option(WriterOptions::builder().compression_level(23)), "compression_level");
    // a row group of 2^31 values (8 GiB) would overflow the list offsets
    assert_eq!(option(WriterOptions::builder().row_group_target_bytes(8 << 30)), "row_group_target_bytes");
}
