//! The `.tsf` connector against the real Monash unit-test files and a corpus of
//! malformed files.
//!
//! Expected numbers come from reading the files by hand: both have 3 yearly series
//! with `@horizon 4`; T1 and T2 start 1979-01-01 (283 996 800 s), T3 1973-01-01
//! (94 694 400 s); T1 has 7 values, T2 3, T3 5. A year is 31 556 952 s (the mean
//! Gregorian year of `frequency_hz`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use timef::connectors::tsf::{parse_tsf, read_tsf, TsfOptions};
use timef::connectors::IdMode;
use timef::{Error, Sample, SeriesRef, Task, TaskType, TimeFDataset};

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/real/tsf");
const BAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bad");

const YEAR: f64 = 31_556_952.0;
const T_1979: f64 = 283_996_800.0;
const T_1973: f64 = 94_694_400.0;

fn real(file: &str) -> PathBuf {
    Path::new(REAL).join(file)
}

fn read(file: &str) -> TimeFDataset {
    read_tsf(real(file), &TsfOptions::new("monash", "1")).expect("real file reads")
}

fn sample(id: &str, series: &str, window: Option<(f64, f64)>, meta: &[(&str, &str)]) -> Sample {
    Sample {
        sample_id: id.to_string(),
        source_id: "monash".to_string(),
        subject_id: None,
        t_start_s: window.map(|w| w.0),
        t_end_s: window.map(|w| w.1),
        series: vec![SeriesRef { time_series_id: series.to_string(), view: "main".to_string() }],
        metadata: meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }
}

fn forecast(series: &str) -> Task {
    let mut t = Task::new(
        format!("{series}/forecast"),
        TaskType::Forecasting,
        vec![format!("{series}/context"), format!("{series}/target")],
    );
    t.target_sample_id = Some(format!("{series}/target"));
    t.context_sample_ids = Some(vec![format!("{series}/context")]);
    t.horizon = Some(4);
    t
}

/// Samples expected from either file; `groups` gives T1, T2, T3's `series_group`.
fn expected_samples(groups: Option<[&str; 3]>) -> Vec<Sample> {
    let g = |i: usize| -> Vec<(&str, &str)> { groups.map(|gs| vec![("series_group", gs[i])]).unwrap_or_default() };
    vec![
        // T1: 7 values, horizon 4 -> context = 3 years, target = 4 years.
        sample("monash-T1/context", "monash-T1", Some((T_1979, 378_667_656.0)), &g(0)),
        sample("monash-T1/target", "monash-T1", Some((378_667_656.0, 504_895_464.0)), &g(0)),
        // T2: 3 values <= horizon -> one plain sample, no task.
        sample("monash-T2", "monash-T2", None, &g(1)),
        // T3: 5 values -> context = 1 year, target = 4 years.
        sample("monash-T3/context", "monash-T3", Some((T_1973, 126_251_352.0)), &g(2)),
        sample("monash-T3/target", "monash-T3", Some((126_251_352.0, 252_479_160.0)), &g(2)),
    ]
}

fn check_common(ds: &TimeFDataset) {
    // The literal window bounds above are start + k * YEAR.
    assert_eq!(T_1979 + 3.0 * YEAR, 378_667_656.0);
    assert_eq!(T_1979 + 7.0 * YEAR, 504_895_464.0);
    assert_eq!(T_1973 + YEAR, 126_251_352.0);
    assert_eq!(T_1973 + 5.0 * YEAR, 252_479_160.0);

    assert_eq!(ds.info.name, "monash");
    assert_eq!(ds.info.version, "1");
    assert_eq!(ds.info.description.as_deref(), Some("test\nDataset Information\nMeta-data for unit testing"));
    let sources: Vec<_> = ds.sources().map(|s| (s.source_id.as_str(), s.name.as_str())).collect();
    assert_eq!(sources, vec![("monash", "test")]);

    let series: Vec<_> = ds.series().collect();
    assert_eq!(series.len(), 3);
    let ids: Vec<_> = series.iter().map(|s| s.time_series_id.as_str()).collect();
    assert_eq!(ids, vec!["monash-T1", "monash-T2", "monash-T3"]);
    let starts: Vec<_> = series.iter().map(|s| s.t_start_s).collect();
    assert_eq!(starts, vec![T_1979, T_1979, T_1973]);
    for s in &series {
        assert_eq!(s.sampling_rate_hz, 1.0 / YEAR);
        assert_eq!(s.spec_type, "unknown");
        assert_eq!(s.channel, "0");
        assert_eq!(s.units, None);
        assert_eq!(s.t_end_s, None);
    }

    let tasks: Vec<_> = ds.tasks().map(|(n, t)| (n, t.clone())).collect();
    assert_eq!(tasks, vec![("forecast", forecast("monash-T1")), ("forecast", forecast("monash-T3"))]);
    ds.validate_references().expect("references resolve");
}

#[test]
fn unit_test_file() {
    let ds = read("UnitTest_Tsf_Loader.tsf");
    check_common(&ds);
    let samples: Vec<Sample> = ds.samples().collect();
    assert_eq!(samples, expected_samples(None));
}

#[test]
fn hierarchical_file_keeps_series_group_as_metadata() {
    let ds = read("UnitTest_Tsf_Loader_hierarchical.tsf");
    check_common(&ds);
    let samples: Vec<Sample> = ds.samples().collect();
    assert_eq!(samples, expected_samples(Some(["G1", "G1", "G2"])));
}

/// The loaders' values are not reachable from outside the crate, so the values
/// are checked on the parsed file (the unit tests check that loaders return them).
#[test]
fn values_of_both_files() {
    for file in ["UnitTest_Tsf_Loader.tsf", "UnitTest_Tsf_Loader_hierarchical.tsf"] {
        let f = parse_tsf(real(file)).unwrap();
        assert_eq!(f.frequency.as_deref(), Some("yearly"));
        assert_eq!(f.horizon, Some(4));
        assert_eq!(f.missing, Some(false));
        assert_eq!(f.equal_length, Some(false));
        assert_eq!(f.sampling_rate_hz(), 1.0 / YEAR);
        assert_eq!(f.period_s(), YEAR);
        let names: Vec<_> = f.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["T1", "T2", "T3"]);
        let lens: Vec<_> = f.series.iter().map(|s| s.values.len()).collect();
        assert_eq!(lens, vec![7, 3, 5]);
        let lines: Vec<_> = f.series.iter().map(|s| s.line).collect();
        let first = if file.contains("hierarchical") { 13 } else { 12 };
        assert_eq!(lines, vec![first, first + 1, first + 2]);
        let starts: Vec<_> = f.series.iter().map(|s| s.start_s).collect();
        assert_eq!(starts, vec![Some(T_1979), Some(T_1979), Some(T_1973)]);

        let t1 = &f.series[0].values;
        assert_eq!(t1[0], "25092.2284".parse::<f32>().unwrap());
        assert_eq!(t1[3], "27697.5047".parse::<f32>().unwrap());
        assert_eq!(t1[6], "30216.8321".parse::<f32>().unwrap());
        let t2: Vec<f32> = ["887896.51", "887068.98", "971549.04"].iter().map(|v| v.parse().unwrap()).collect();
        assert_eq!(f.series[1].values, t2);
        assert_eq!(f.series[2].values, vec![227921.0, 230995.0, 183635.0, 238605.0, 254186.0]);
    }
}

#[test]
fn uuid_ids_are_canonical_and_consistent() {
    let opts = TsfOptions { ids: IdMode::Uuid, ..TsfOptions::new("monash", "1") };
    let ds = read_tsf(real("UnitTest_Tsf_Loader.tsf"), &opts).unwrap();
    let u = |s: &str| IdMode::Uuid.id(s);
    assert!(ds.samples().all(|s| s.source_id == u("monash")));
    let mut want = vec![
        u("monash-T1/context"),
        u("monash-T1/target"),
        u("monash-T2"),
        u("monash-T3/context"),
        u("monash-T3/target"),
    ];
    want.sort();
    let got: Vec<_> = ds.samples().map(|s| s.sample_id.clone()).collect();
    assert_eq!(got, want);
    for id in got.iter().cloned().chain(ds.series().map(|s| s.time_series_id)) {
        assert!(timef::dataset::is_canonical_uuid(&id), "{id}");
    }
    let task_ids: Vec<_> = ds.tasks().map(|(_, t)| t.task_id.clone()).collect();
    let mut want_tasks = vec![u("monash-T1/forecast"), u("monash-T3/forecast")];
    want_tasks.sort();
    assert_eq!(task_ids, want_tasks);
    ds.validate_references().unwrap();
}

/// (file, line, exact reason) of every malformed `.tsf` file in `tests/data/bad`.
const BAD_CASES: &[(&str, usize, &str)] = &[
    ("empty.tsf", 1, "empty file"),
    ("missing_data_tag.tsf", 4, "no @data line: the file ends inside the header"),
    (
        "bad_date.tsf",
        7,
        "series T2: attribute start_timestamp value \"1979-02-30 00-00-00\" is not a date \
         YYYY-MM-DD HH-MM-SS",
    ),
    ("non_numeric_value.tsf", 7, "series T2: value 2 (0-based) \"abc\" is not a finite number"),
    ("non_numeric_value_crlf_bom.tsf", 8, "series T2: value 1 (0-based) \"5.5.5\" is not a finite number"),
    (
        "missing_value.tsf",
        8,
        "series T2: value 1 (0-based) is missing (\"?\"); TimeF stores only finite values \
         (--on-missing drop-case leaves such series out)",
    ),
    (
        "unknown_frequency.tsf",
        3,
        "unknown frequency \"fortnightly\" (known: yearly, quarterly, monthly, weekly, daily, \
         hourly, half_hourly, minutely, N_hours, N_minutes, N_seconds)",
    ),
    (
        "too_few_fields.tsf",
        7,
        "series T2: too few fields: expected 3 separated by ':' (the attribute values series_name, \
         start_timestamp, then the series), found 2",
    ),
    ("duplicate_series.tsf", 8, "duplicate series name \"T1\" (first on line 6)"),
    (
        "invalid_utf8.tsf",
        7,
        "invalid UTF-8 at byte 2 of the line (the file must be UTF-8, or name its encoding with \
         --encoding latin-1 or --encoding cp1252)",
    ),
    ("bad_horizon.tsf", 4, "@horizon \"four\" is not a positive integer (at most 2^31-1)"),
    (
        "unknown_attribute_type.tsf",
        2,
        "attribute series_name has unknown type \"text\" (expected string, numeric or date)",
    ),
    ("empty_series.tsf", 6, "series T1 has no values"),
    ("ucr_header.tsf", 1, "@problemname is a UCR/UEA .ts tag, not a .tsf one; use `timef ingest ucr`"),
];

#[test]
fn bad_files_fail_with_path_line_and_reason() {
    for &(file, want_line, want_reason) in BAD_CASES {
        let want_path = Path::new(BAD).join(file);
        match read_tsf(&want_path, &TsfOptions::new("bad", "1")) {
            Err(Error::InvalidInput { path, line, reason }) => {
                assert_eq!(path, want_path, "{file}");
                assert_eq!(line, Some(want_line), "{file}: {reason}");
                assert_eq!(reason, want_reason, "{file}");
            }
            Err(other) => panic!("{file}: expected InvalidInput, got {other:?}"),
            Ok(_) => panic!("{file}: read without error"),
        }
    }
}

/// Every `.tsf` file in the corpus has an expectation (the directory also holds
/// other connectors' files, which are skipped).
#[test]
fn bad_corpus_is_fully_covered() {
    let mut on_disk: Vec<String> = std::fs::read_dir(BAD)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tsf"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = BAD_CASES.iter().map(|c| c.0.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}
