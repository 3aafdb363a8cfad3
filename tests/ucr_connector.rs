//! The UCR/UEA `.ts` connector on the real archive files in `tests/data/real/ucr`
//! and on the bad-input corpus in `tests/data/bad`.
//!
//! Expected numbers were read from the files with python3/awk, not from the parser.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use timef::connectors::ucr::{parse_ts_file, read_ucr, OnMissing, TsFile, TsLabel, TsResponse, UcrOptions};
use timef::connectors::IdMode;
use timef::dataset::is_canonical_uuid;
use timef::{Error, TaskType, TimeFDataset};

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/real/ucr");
const BAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bad");

fn real(file: &str) -> PathBuf {
    Path::new(REAL).join(file)
}

fn parse(file: &str) -> TsFile {
    parse_ts_file(real(file), OnMissing::Error).unwrap()
}

fn read(name: &str, files: &[&str]) -> TimeFDataset {
    let paths: Vec<PathBuf> = files.iter().map(|f| real(f)).collect();
    let ds = read_ucr(&paths, &UcrOptions::new(name, "1.0.0")).unwrap();
    ds.validate_references().unwrap();
    ds
}

/// The decimal text of a cell parsed as f32.
fn f32_of(text: &str) -> f32 {
    text.parse().unwrap()
}

/// Value `k` of dimension `dim` of case `case`.
fn cell(f: &TsFile, case: usize, dim: usize, k: usize) -> f32 {
    f.cases[case].channels[dim].values[k]
}

fn class(f: &TsFile, case: usize) -> &str {
    match &f.cases[case].label {
        Some(TsLabel::Class(l)) => l,
        other => panic!("case {case}: {other:?}"),
    }
}

/// class label -> number of annotations with it.
fn label_counts(ds: &TimeFDataset) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (a, samples) in ds.annotations() {
        assert_eq!((a.annotation_type.as_str(), a.key.as_str()), ("label", "class"));
        assert_eq!(samples.len(), 1);
        *counts.entry(a.value_str.clone().unwrap()).or_insert(0) += samples.len();
    }
    counts
}

fn annotation_value(ds: &TimeFDataset, id: &str) -> (Option<String>, Option<f64>) {
    let (a, _) = ds.annotations().find(|(a, _)| a.annotation_id == id).unwrap();
    (a.value_str.clone(), a.value_num)
}

#[test]
fn arrowhead_values() {
    let train = parse("ArrowHead_TRAIN.ts");
    let test = parse("ArrowHead_TEST.ts");
    assert_eq!(train.problem_name.as_deref(), Some("ArrowHead"));
    assert_eq!(train.response, TsResponse::Class(vec!["0".into(), "1".into(), "2".into()]));
    assert_eq!((train.cases.len(), test.cases.len()), (36, 175));
    for f in [&train, &test] {
        assert!(f.cases.iter().all(|c| c.channels.len() == 1 && c.channels[0].values.len() == 251));
        assert!(f.cases.iter().enumerate().all(|(i, c)| c.index == i));
    }
    // The first data line of ArrowHead_TRAIN.ts is line 18.
    assert_eq!((train.cases[0].line, train.cases[35].line), (18, 53));
    assert_eq!(cell(&train, 0, 0, 0), f32_of("-1.9630089"));
    assert_eq!(cell(&train, 0, 0, 250), f32_of("-1.9091529"));
    assert_eq!(cell(&train, 1, 0, 5), f32_of("-1.6573775"));
    assert_eq!(cell(&train, 35, 0, 0), f32_of("-1.80105"));
    assert_eq!(cell(&test, 100, 0, 125), f32_of("-0.4658179"));
    assert_eq!(cell(&test, 174, 0, 250), f32_of("-1.6207831"));
    assert_eq!((class(&train, 0), class(&train, 1), class(&train, 35)), ("0", "1", "2"));
    assert_eq!((class(&test, 0), class(&test, 100), class(&test, 174)), ("0", "1", "2"));
}

#[test]
fn arrowhead_dataset() {
    let ds = read("ArrowHead", &["ArrowHead_TRAIN.ts", "ArrowHead_TEST.ts"]);
    assert_eq!((ds.samples().count(), ds.series().count(), ds.annotations().count()), (211, 211, 211));
    let counts = label_counts(&ds);
    let expected: BTreeMap<String, usize> = [("0", 81), ("1", 65), ("2", 65)].map(|(l, n)| (l.to_string(), n)).into();
    assert_eq!(counts, expected);
    assert_eq!(annotation_value(&ds, "ArrowHead-train-1/class"), (Some("1".into()), None));
    assert_eq!(annotation_value(&ds, "ArrowHead-test-174/class"), (Some("2".into()), None));

    let tasks: Vec<_> = ds.tasks().collect();
    assert_eq!(tasks.len(), 2);
    let (name, test) = tasks[0];
    assert_eq!((name, test.task_id.as_str(), test.sample_ids.len()), ("test", "ArrowHead-test", 175));
    assert_eq!(
        (test.task_type.clone(), test.target.as_deref(), test.split.as_deref()),
        (TaskType::Classification, Some("class"), Some("test"))
    );
    let (name, train) = tasks[1];
    assert_eq!((name, train.task_id.as_str()), ("train", "ArrowHead-train"));
    // In case order, not id order ("-10" sorts before "-2").
    let expected: Vec<String> = (0..36).map(|i| format!("ArrowHead-train-{i}")).collect();
    assert_eq!(train.sample_ids, expected);

    let sample = ds.samples().find(|s| s.sample_id == "ArrowHead-test-7").unwrap();
    assert_eq!(sample.source_id, "ArrowHead");
    assert_eq!(sample.series.len(), 1);
    assert_eq!(
        (sample.series[0].time_series_id.as_str(), sample.series[0].view.as_str()),
        ("ArrowHead-test-7/0", "main")
    );
    for m in ds.series() {
        assert_eq!(
            (m.spec_type.as_str(), m.channel.as_str(), m.sampling_rate_hz, m.t_start_s),
            ("unknown", "0", 1.0, 0.0)
        );
        assert_eq!((m.t_end_s, m.units.as_deref()), (None, None));
    }
    let sources: Vec<_> = ds.sources().collect();
    assert_eq!(sources.len(), 1);
    assert_eq!((sources[0].source_id.as_str(), sources[0].name.as_str()), ("ArrowHead", "ArrowHead"));

    let description = ds.info.description.as_deref().unwrap();
    assert_eq!(description.lines().count(), 11);
    assert!(
        description.starts_with("ArrowHead\nThe arrowhead data consists of outlines of the images of\narrowheads."),
        "{description}"
    );
    assert!(description.ends_with("\n\"Avonlea\", \"Clovis\" and \"Mix\"."), "{description}");
}

#[test]
fn basic_motions_multivariate() {
    let train = parse("BasicMotions_TRAIN.ts");
    let test = parse("BasicMotions_TEST.ts");
    assert_eq!((train.cases.len(), test.cases.len()), (40, 40));
    for f in [&train, &test] {
        for c in &f.cases {
            assert_eq!(c.channels.len(), 6);
            assert!(c.channels.iter().all(|ch| ch.values.len() == 100));
        }
    }
    assert_eq!(cell(&train, 0, 0, 0), f32_of("0.079106"));
    assert_eq!(cell(&train, 0, 5, 99), f32_of("-0.03196"));
    assert_eq!(cell(&train, 39, 3, 50), f32_of("-1.58737"));
    assert_eq!(cell(&train, 39, 5, 5), f32_of("1.376964"));
    assert_eq!(cell(&test, 0, 0, 0), f32_of("-0.740653"));
    assert_eq!(cell(&test, 17, 2, 7), f32_of("-3.06966"));
    assert_eq!((class(&train, 0), class(&train, 20), class(&train, 39)), ("Standing", "Walking", "Badminton"));
    let per_ten: Vec<&str> = (0..4).map(|i| class(&test, i * 10)).collect();
    assert_eq!(per_ten, vec!["Standing", "Running", "Walking", "Badminton"]);

    let ds = read("BasicMotions", &["BasicMotions_TRAIN.ts", "BasicMotions_TEST.ts"]);
    assert_eq!((ds.samples().count(), ds.series().count()), (80, 480));
    let sample = ds.samples().find(|s| s.sample_id == "BasicMotions-train-39").unwrap();
    let series: Vec<&str> = sample.series.iter().map(|r| r.time_series_id.as_str()).collect();
    let expected: Vec<String> = (0..6).map(|d| format!("BasicMotions-train-39/{d}")).collect();
    assert_eq!(series, expected);
    let channels: Vec<String> =
        ds.series().filter(|m| m.time_series_id.starts_with("BasicMotions-test-3/")).map(|m| m.channel).collect();
    assert_eq!(channels, vec!["0", "1", "2", "3", "4", "5"]);
    let counts = label_counts(&ds);
    assert_eq!(counts.values().copied().collect::<Vec<_>>(), vec![20, 20, 20, 20]);
    assert_eq!(ds.tasks().map(|(_, t)| t.sample_ids.len()).collect::<Vec<_>>(), vec![40, 40]);
}

#[test]
fn basic_motions_with_rate_and_spec_type() {
    let opts = UcrOptions::new("BasicMotions", "1").with_sampling_rate_hz(10.0).with_spec_type("imu");
    let ds = read_ucr(&[real("BasicMotions_TEST.ts")], &opts).unwrap();
    assert!(ds.series().all(|m| m.sampling_rate_hz == 10.0 && m.spec_type == "imu"));
}

#[test]
fn italy_power_demand() {
    let f = parse("ItalyPowerDemand_TRAIN.ts");
    assert_eq!(f.cases.len(), 67);
    assert!(f.cases.iter().all(|c| c.channels.len() == 1 && c.channels[0].values.len() == 24));
    assert_eq!(cell(&f, 0, 0, 0), f32_of("-0.71051757"));
    assert_eq!(cell(&f, 0, 0, 23), f32_of("-0.26923494"));
    assert_eq!(cell(&f, 33, 0, 12), f32_of("0.75584899"));
    assert_eq!(cell(&f, 66, 0, 0), f32_of("0.98403309"));
    let labels: String = (0..67).map(|i| class(&f, i)).collect();
    assert_eq!(labels, "1122112112211212112112111112211221221212112212222112221221122112122");

    let ds = read("ItalyPowerDemand", &["ItalyPowerDemand_TRAIN.ts"]);
    let counts = label_counts(&ds);
    assert_eq!((counts["1"], counts["2"]), (34, 33));
    let tasks: Vec<_> = ds.tasks().collect();
    assert_eq!(tasks.len(), 1);
    assert_eq!((tasks[0].0, tasks[0].1.sample_ids.len()), ("train", 67));
    assert!(ds
        .info
        .description
        .as_deref()
        .unwrap()
        .starts_with("ItalyPowerDemand\nThe data was derived from twelve monthly"));
}

#[test]
fn italy_power_demand_uuid_ids() {
    let opts = UcrOptions::new("ItalyPowerDemand", "1").with_ids(IdMode::Uuid);
    let ds = read_ucr(&[real("ItalyPowerDemand_TRAIN.ts")], &opts).unwrap();
    ds.validate_references().unwrap();
    let id = |s: &str| IdMode::Uuid.id(s);
    let sample = ds.samples().find(|s| s.sample_id == id("ItalyPowerDemand-train-5")).unwrap();
    assert_eq!(sample.source_id, id("ItalyPowerDemand"));
    assert_eq!(sample.series[0].time_series_id, id("ItalyPowerDemand-train-5/0"));
    assert!(ds.samples().all(|s| is_canonical_uuid(&s.sample_id)));
    assert!(ds.series().all(|m| is_canonical_uuid(&m.time_series_id) && m.channel == "0"));
    assert!(ds.annotations().all(|(a, _)| is_canonical_uuid(&a.annotation_id)));
    assert!(ds.annotations().any(|(a, _)| a.annotation_id == id("ItalyPowerDemand-train-66/class")));
    let (name, task) = ds.tasks().next().unwrap();
    assert_eq!((name, task.task_id.clone()), ("train", id("ItalyPowerDemand-train")));
    assert_eq!(task.sample_ids[0], id("ItalyPowerDemand-train-0"));
    let source = ds.sources().next().unwrap();
    assert_eq!((source.source_id.clone(), source.name.as_str()), (id("ItalyPowerDemand"), "ItalyPowerDemand"));
}

#[test]
fn covid_regression() {
    let f = parse("Covid3Month_TRAIN.ts");
    assert_eq!(f.problem_name.as_deref(), Some("Covid3Month"));
    assert_eq!(f.response, TsResponse::Target);
    assert_eq!(f.cases.len(), 140);
    assert!(f.cases.iter().all(|c| c.channels.len() == 1 && c.channels[0].values.len() == 84));
    assert_eq!(cell(&f, 0, 0, 83), f32_of("12.0"));
    assert_eq!(cell(&f, 139, 0, 83), f32_of("5.0"));
    assert_eq!(f.cases[1].label, Some(TsLabel::Target(0.07758620689655173)));
    assert_eq!(f.cases[84].label, Some(TsLabel::Target(0.17647058823529413)));

    let ds = read("Covid3Month", &["Covid3Month_TRAIN.ts"]);
    assert_eq!((ds.samples().count(), ds.annotations().count()), (140, 140));
    let (a, _) = ds.annotations().find(|(a, _)| a.annotation_id == "Covid3Month-train-139/target").unwrap();
    assert_eq!((a.annotation_type.as_str(), a.key.as_str()), ("number", "target"));
    assert_eq!((a.value_str.clone(), a.value_num), (None, Some(0.005509641873278237)));
    assert_eq!(annotation_value(&ds, "Covid3Month-train-0/target"), (None, Some(0.0)));
    let (name, task) = ds.tasks().next().unwrap();
    assert_eq!((name, task.task_type.clone(), task.target.as_deref()), ("train", TaskType::Regression, Some("target")));
    assert_eq!(task.sample_ids.len(), 140);
    assert_eq!(
        ds.info.description.as_deref().unwrap(),
        "Covid3Month\nDataset Information\n\
         The goal of this dataset is to predict COVID-19's death rate on 1st April 2020 for each country using daily confirmed cases for the last three months.\n\
         This dataset contains 201 time series, where each time series is the daily confirmed cases for a country.\n\
         The data was obtained from WHO's COVID-19 database.\n\
         \n\
         Please refer to https://covid19.who.int/ for more details"
    );
}

#[test]
fn unit_test_percent_comments() {
    let f = parse("UnitTest_TRAIN.ts");
    assert_eq!(f.cases.len(), 20);
    assert_eq!(cell(&f, 0, 0, 0), f32_of("573.0"));
    assert_eq!(cell(&f, 19, 0, 23), f32_of("150.0"));
    let labels: String = (0..20).map(|i| class(&f, i)).collect();
    assert_eq!(labels, "11111111112222222222");
    let ds = read("UnitTest", &["UnitTest_TRAIN.ts"]);
    assert_eq!(
        ds.info.description.as_deref().unwrap(),
        "UnitTest\nThis is a cut down version of the problem ChinaTown, useful for code examples and very slow unit tests\n\
         The Train set is the same as ChinaTown, but the test set is reduced from 340 cases to 22 cases"
    );
}

#[test]
fn every_real_file_reads() {
    let mut n = 0;
    for entry in std::fs::read_dir(REAL).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ts") {
            let stem = path.file_stem().unwrap().to_string_lossy().replace(['_'], "-");
            let ds = read_ucr(&[&path], &UcrOptions::new(stem, "1")).unwrap();
            ds.validate_references().unwrap();
            assert!(ds.samples().count() > 0);
            assert_eq!(ds.tasks().count(), 1, "{}", path.display());
            n += 1;
        }
    }
    assert_eq!(n, 7);
}

#[test]
fn two_files_of_one_split_are_refused() {
    let second = real("BasicMotions_TRAIN.ts");
    let err = read_ucr(&[real("ArrowHead_TRAIN.ts"), second.clone()], &UcrOptions::new("x", "1")).unwrap_err();
    match err {
        Error::InvalidInput { path, line, reason } => {
            assert_eq!((path, line), (second, None));
            assert!(reason.contains("split 'train'"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Bad-input corpus
// ---------------------------------------------------------------------------

/// (file, line, words the reason must contain)
const BAD_FILES: &[(&str, usize, &[&str])] = &[
    ("truncated_header.ts", 4, &["file ends before the @data tag"]),
    ("missing_data_tag.ts", 3, &["data line before the @data tag"]),
    ("wrong_dimension_count.ts", 7, &["case 1 has 1 dimensions, expected 2", "@dimensions at line 3"]),
    ("inconsistent_dimensions.ts", 6, &["case 2 has 2 dimensions, expected 3", "case 0 at line 4"]),
    ("dimensions_contradict_univariate.ts", 3, &["@dimensions 3 contradicts @univariate true"]),
    ("non_numeric_value.ts", 5, &["case 1, dimension 1, value 1", "'abc' is not a number"]),
    ("empty_value.ts", 4, &["case 0, dimension 0, value 1", "empty value"]),
    ("infinite_value.ts", 4, &["case 1, dimension 0, value 1", "'inf' is not finite"]),
    ("bom_crlf_non_numeric.ts", 7, &["case 1, dimension 0, value 1", "'2.0.0' is not a number"]),
    ("undeclared_class_label.ts", 5, &["case 1", "class label 'c' is not declared"]),
    ("undeclared_label_case.ts", 5, &["case 1", "class label 'Running' is not declared"]),
    ("missing_class_label.ts", 5, &["case 1", "class label, found no ':'"]),
    ("label_and_target.ts", 3, &["@classLabel true and @targetLabel true"]),
    ("interior_gap.ts", 6, &["case 1, dimension 1", "missing value at position 1", "interior gap"]),
    ("all_missing_dimension.ts", 5, &["case 1, dimension 1", "all values are missing"]),
    ("invalid_utf8.ts", 1, &["not valid UTF-8", "byte 6 of the line"]),
    ("empty.ts", 1, &["file is empty"]),
    ("no_data_lines.ts", 3, &["no data lines after @data"]),
    ("bad_boolean_tag.ts", 2, &["@timeStamps needs true or false", "'yes'"]),
    ("irregular_timestamps.ts", 6, &["case 1, dimension 0", "irregular timestamps"]),
    ("bad_datetime.ts", 4, &["case 0, dimension 0, value 0", "'2019-13-01 00:00:00'"]),
    ("non_numeric_target.ts", 5, &["case 1", "regression target 'high' is not a number"]),
    ("monash_header.ts", 2, &["@relation is a Monash .tsf tag", "timef ingest tsf"]),
];

#[test]
fn bad_files_fail_with_path_line_and_reason() {
    for &(file, want_line, words) in BAD_FILES {
        let want_path = Path::new(BAD).join(file);
        match read_ucr(&[&want_path], &UcrOptions::new("bad", "1")) {
            Err(Error::InvalidInput { path, line, reason }) => {
                assert_eq!(path, want_path, "{file}");
                assert_eq!(line, Some(want_line), "{file}: {reason}");
                for w in words {
                    assert!(reason.contains(w), "{file}: {reason:?} lacks {w:?}");
                }
            }
            other => panic!("{file}: expected InvalidInput, got {other:?}"),
        }
    }
}

#[test]
fn every_bad_ts_file_is_listed() {
    // Other connectors keep their bad files in the same folder with other extensions.
    let mut on_disk: Vec<String> = std::fs::read_dir(BAD)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ts"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = BAD_FILES.iter().map(|(f, _, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn drop_case_keeps_file_positions() {
    let opts = UcrOptions::new("gap", "1").with_on_missing(OnMissing::DropCase);
    let ds = read_ucr(&[Path::new(BAD).join("interior_gap.ts")], &opts).unwrap();
    ds.validate_references().unwrap();
    let samples: Vec<String> = ds.samples().map(|s| s.sample_id).collect();
    assert_eq!(samples, vec!["gap-interior_gap-0"]);
    let (name, task) = ds.tasks().next().unwrap();
    assert_eq!((name, task.sample_ids.clone()), ("interior_gap", vec!["gap-interior_gap-0".to_string()]));

    let ds = read_ucr(&[Path::new(BAD).join("all_missing_dimension.ts")], &opts).unwrap();
    let samples: Vec<String> = ds.samples().map(|s| s.sample_id).collect();
    assert_eq!(samples, vec!["gap-all_missing_dimension-0"]);
    assert_eq!(ds.tasks().count(), 0);
    // Dropping does not excuse other errors.
    let err = read_ucr(&[Path::new(BAD).join("non_numeric_value.ts")], &opts).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { line: Some(5), .. }), "{err}");
}

const MISMATCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mismatch");

/// Files given together must be splits of one problem; a rate given with
/// timestamps must match them.
#[test]
fn inconsistent_files_and_rates_are_refused() {
    let dir = Path::new(MISMATCH);
    let read = |files: &[&str], opts: UcrOptions| {
        let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
        read_ucr(&paths, &opts).unwrap_err()
    };
    let cases: [(&[&str], &str); 2] = [
        (&["Toy_TRAIN.ts", "TwoDims_TEST.ts"], "the dimensions (2) differ from"),
        (
            &["Toy_TRAIN.ts", "OtherLabels_TEST.ts"],
            "the declared labels or targets (Class([\"x\", \"y\"])) differ from",
        ),
    ];
    for (files, want) in cases {
        match read(files, UcrOptions::new("toy", "1")) {
            Error::InvalidInput { path, line: None, reason } => {
                assert_eq!(path, dir.join(files[1]));
                assert!(reason.starts_with(want), "{reason}");
                assert!(reason.contains("Toy_TRAIN.ts's; the files are not one dataset"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
    match read(&["Stamped_TRAIN.ts"], UcrOptions::new("toy", "1").with_sampling_rate_hz(50.0)) {
        Error::InvalidInput { path, line: Some(6), reason } => {
            assert_eq!(path, dir.join("Stamped_TRAIN.ts"));
            assert_eq!(reason, "case 0, dimension 0: the timestamps give 1 Hz but the sampling rate option is 50 Hz");
        }
        other => panic!("{other:?}"),
    }
    // agreeing rates are fine
    let paths = [dir.join("Stamped_TRAIN.ts")];
    assert!(read_ucr(&paths, &UcrOptions::new("toy", "1").with_sampling_rate_hz(1.0)).is_ok());
}

/// aeon ships splits whose `@problemName`s differ by a suffix (`Covid3MonthDiscrete`,
/// `JapaneseVowels_eq`): read as one dataset with a warning naming both; other names are refused.
#[test]
fn problem_names_differing_by_a_suffix_are_one_dataset_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let train = Path::new(MISMATCH).join("Toy_TRAIN.ts");
    let test = tmp.path().join("Toy_TEST.ts");
    std::fs::write(&test, "@problemName toy_eq\n@univariate true\n@classLabel true a b\n@data\n7,8,9:a\n").unwrap();
    let (ds, report) =
        timef::connectors::ucr::read_ucr_with_report(&[&train, &test], &UcrOptions::new("toy", "1")).unwrap();
    assert_eq!(ds.sample_count(), 3);
    assert_eq!(
        report.warnings,
        [format!(
            "@problemName \"toy\" of {} and \"toy_eq\" of {} differ by a suffix; read as one dataset named toy",
            train.display(),
            test.display()
        )]
    );
    assert_eq!(ds.sources().next().unwrap().name, "toy");
    let other = tmp.path().join("Other_TEST.ts");
    std::fs::write(&other, "@problemName yot\n@univariate true\n@classLabel true a b\n@data\n7,8,9:a\n").unwrap();
    match read_ucr(&[&train, &other], &UcrOptions::new("toy", "1")).unwrap_err() {
        Error::InvalidInput { path, line: None, reason } => {
            assert_eq!(path, other);
            assert_eq!(
                reason,
                format!(
                    "@problemName \"yot\" differs from \"toy\" of {}; the files are not one dataset",
                    train.display()
                )
            );
        }
        e => panic!("{e}"),
    }
}
