//! Reader for UCR/UEA `.ts` files (the sktime/aeon `.ts` format of the UCR and UEA
//! classification archives and the TSER regression archive).
//!
//! A file is a header of `@tag value` lines (tag names case-insensitive, `#`/`%`
//! comment lines allowed) closed by `@data`, then one case per line: dimensions
//! separated by `:`, values by `,`, and the class label or regression target as the
//! last `:` field. [`read_ucr`] parses every file eagerly, so each malformed input
//! surfaces as [`Error::InvalidInput`] with the file and 1-based line, and turns the
//! cases into samples, series, annotations and one task per split.
//!
//! ```no_run
//! use timef::connectors::ucr::{read_ucr, UcrOptions};
//! let opts = UcrOptions::new("ArrowHead", "1.0.0");
//! let ds = read_ucr(&["ArrowHead_TRAIN.ts", "ArrowHead_TEST.ts"], &opts)?;
//! # Ok::<(), timef::Error>(())
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use super::{Dropped, IdMode, TextEncoding, DEFAULT_SAMPLING_RATE_HZ, DEFAULT_SPEC_TYPE};
use crate::dataset::{Annotation, Sample, SeriesMeta, SeriesRef, Source, Task, TaskType, TimeFDataset};
use crate::error::{Error, Result};

mod parse;
#[cfg(test)]
pub(super) use parse::parse_datetime;
pub use parse::{parse_ts, parse_ts_file, parse_ts_file_encoded, TsCase, TsChannel, TsFile, TsLabel, TsResponse};

/// The connectors' shared missing-value policy; for `.ts` files a case is
/// missing when a channel has an interior gap or no values at all (trailing
/// `?`/`NaN` is padding of a shorter case and is trimmed).
pub use super::OnMissing;

/// Options of [`read_ucr`]. Plain fields with [`Default`], plus [`UcrOptions::new`]
/// and consuming `with_*` setters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UcrOptions {
    /// Dataset name (a path component); also the source id and the prefix of every id.
    pub name: String,
    /// Dataset version (a path component).
    pub version: String,
    /// Spec type of every series; [`DEFAULT_SPEC_TYPE`] when `None`.
    pub spec_type: Option<String>,
    /// Sampling rate of every series. When `None`, evenly spaced timestamps give the
    /// rate (`1 / dt`), else [`DEFAULT_SAMPLING_RATE_HZ`]. When set together with
    /// timestamps, the two must agree (relative 1e-9), else the file is refused.
    pub sampling_rate_hz: Option<f64>,
    /// How ids are spelled.
    pub ids: IdMode,
    /// What to do with cases that have missing values other than trailing padding.
    pub on_missing: OnMissing,
    /// Text encoding of the files (UTF-8 by default).
    pub encoding: TextEncoding,
    /// The `@problemName` the files are splits of when it is known beforehand,
    /// as the name of the source of a version ingested from other splits
    /// (`timef edit --add-ucr`): each file's must equal it or differ by a
    /// suffix (then with a warning), and the source takes it. `None`: the
    /// first file's `@problemName` is the one.
    pub problem_name: Option<String>,
}

impl UcrOptions {
    /// Options for dataset `name` at `version`, everything else default.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        UcrOptions { name: name.into(), version: version.into(), ..Default::default() }
    }

    /// Sets [`UcrOptions::spec_type`].
    pub fn with_spec_type(mut self, spec_type: impl Into<String>) -> Self {
        self.spec_type = Some(spec_type.into());
        self
    }

    /// Sets [`UcrOptions::sampling_rate_hz`].
    pub fn with_sampling_rate_hz(mut self, hz: f64) -> Self {
        self.sampling_rate_hz = Some(hz);
        self
    }

    /// Sets [`UcrOptions::ids`].
    pub fn with_ids(mut self, ids: IdMode) -> Self {
        self.ids = ids;
        self
    }

    /// Sets [`UcrOptions::on_missing`].
    pub fn with_on_missing(mut self, on_missing: OnMissing) -> Self {
        self.on_missing = on_missing;
        self
    }

    /// Sets [`UcrOptions::problem_name`].
    pub fn with_problem_name(mut self, problem_name: impl Into<String>) -> Self {
        self.problem_name = Some(problem_name.into());
        self
    }

    /// Sets [`UcrOptions::encoding`].
    pub fn with_encoding(mut self, encoding: TextEncoding) -> Self {
        self.encoding = encoding;
        self
    }

    fn validate(&self) -> Result<()> {
        if let Some(hz) = self.sampling_rate_hz {
            if !(hz.is_finite() && hz > 0.0) {
                return Err(Error::InvalidOption {
                    option: "sampling_rate_hz",
                    reason: format!("must be finite and > 0, got {hz}"),
                });
            }
        }
        if self.spec_type.as_deref() == Some("") {
            return Err(Error::InvalidOption { option: "spec_type", reason: "must not be empty".into() });
        }
        Ok(())
    }
}

/// Reads UCR/UEA `.ts` files into one dataset.
///
/// Each file is one split: `train`/`test` from a `_TRAIN`/`_TEST` file-stem suffix
/// (case-insensitive), else the lower-cased stem; two files of the same split are an
/// error. Every case becomes a sample `"{name}-{split}-{case}"` (case = 0-based index
/// among the file's data lines) with one series per dimension (`"{sample}/{dim}"`,
/// view `main`, channel `"{dim}"`). Class labels become `label`/`class` annotations,
/// regression targets `number`/`target` annotations, and each labelled file one task
/// named after its split. The dataset description is the first file's `@problemName`
/// and leading comment lines.
///
/// Errors: [`Error::InvalidInput`] (path and 1-based line) for every malformed file,
/// [`Error::Missing`] for a file that does not exist, [`Error::Io`] when one cannot
/// be read, [`Error::InvalidOption`] for bad options,
/// [`Error::Validation`] when the name, version or a split is not a valid path component.
pub fn read_ucr(paths: &[impl AsRef<Path>], opts: &UcrOptions) -> Result<TimeFDataset> {
    read_ucr_with_report(paths, opts).map(|(ds, _)| ds)
}

/// [`read_ucr`], also returning the cases left out under [`OnMissing::DropCase`]
/// (each named `"{file}: case {index}"`, index 0-based among the file's data lines).
pub fn read_ucr_with_report(paths: &[impl AsRef<Path>], opts: &UcrOptions) -> Result<(TimeFDataset, Dropped)> {
    opts.validate()?;
    let mut dropped = Dropped::default();
    if paths.is_empty() {
        return Err(Error::InvalidOption { option: "paths", reason: "at least one .ts file is needed".into() });
    }
    // Splits first, so a duplicate is reported before any file is parsed.
    let mut splits: BTreeMap<String, &Path> = BTreeMap::new();
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        let path = p.as_ref();
        let split = split_of(path);
        if let Some(other) = splits.insert(split.clone(), path) {
            return Err(Error::input(
                path,
                None,
                format!("maps to split '{split}' like {}; give one file per split", other.display()),
            ));
        }
        files.push((path, split));
    }

    let mut ds = TimeFDataset::new(opts.name.as_str(), opts.version.as_str())?;
    // the problem every file is a split of: its name, and where that name is from
    let mut problem = opts.problem_name.clone().map(|n| (n, "the base".to_string()));
    let mut first: Option<(&Path, TsResponse, Option<usize>)> = None;
    for (i, (path, split)) in files.into_iter().enumerate() {
        let file = parse_ts_file_encoded(path, opts.on_missing, opts.encoding)?;
        dropped.cases.extend(file.dropped.iter().map(|i| format!("{}: case {i}", path.display())));
        let dims = file.cases.first().map(|c| c.channels.len());
        // the files of one dataset are splits of one problem: same name, labels, dimensions
        let differs = |what: String, of: &str| {
            Error::input(path, None, format!("{what} differ from {of}'s; the files are not one dataset"))
        };
        match (&file.problem_name, &problem) {
            // aeon ships splits named so (`Covid3MonthDiscrete`, `JapaneseVowels_eq`):
            // one problem whose name differs by a suffix is read as one dataset, named by the option
            (Some(this), Some((known, of))) => {
                if !(this.starts_with(known.as_str()) || known.starts_with(this.as_str())) {
                    let why =
                        format!("@problemName {this:?} differs from {known:?} of {of}; the files are not one dataset");
                    return Err(Error::input(path, None, why));
                }
                if this != known {
                    dropped.warnings.push(format!(
                        "@problemName {known:?} of {of} and {this:?} of {} differ by a suffix; read as one dataset named {}",
                        path.display(),
                        opts.name
                    ));
                }
            }
            (Some(this), None) => problem = Some((this.clone(), path.display().to_string())),
            (None, _) => {}
        }
        if let Some((first_path, response, first_dims)) = &first {
            let differs = |what: String| differs(what, &first_path.display().to_string());
            if &file.response != response {
                return Err(differs(format!("the declared labels or targets ({:?})", file.response)));
            }
            if dims.is_some() && first_dims.is_some() && dims != *first_dims {
                return Err(differs(format!("the dimensions ({})", dims.unwrap_or(0))));
            }
        } else {
            first = Some((path, file.response.clone(), dims));
        }
        if i == 0 {
            ds.info.description = file.description();
            ds.add_source(Source {
                source_id: opts.ids.id(&opts.name),
                name: problem.as_ref().map_or_else(|| opts.name.clone(), |(name, _)| name.clone()),
                ..Default::default()
            })?;
        }
        add_file(&mut ds, opts, path, &split, file)?;
    }
    Ok((ds, dropped))
}

/// The split a file stands for: `train`/`test` from a `_TRAIN`/`_TEST` stem suffix,
/// else the whole stem lower-cased.
fn split_of(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().to_lowercase()).unwrap_or_default();
    if stem.ends_with("_train") {
        "train".into()
    } else if stem.ends_with("_test") {
        "test".into()
    } else {
        stem
    }
}

/// Moves one parsed file into the dataset.
fn add_file(ds: &mut TimeFDataset, opts: &UcrOptions, path: &Path, split: &str, file: TsFile) -> Result<()> {
    let name = &opts.name;
    let ids = opts.ids;
    let spec_type = opts.spec_type.as_deref().unwrap_or(DEFAULT_SPEC_TYPE);
    let source_id = ids.id(name);
    let mut task_samples = Vec::with_capacity(file.cases.len());
    for case in file.cases {
        let readable = format!("{name}-{split}-{}", case.index);
        let sample_id = ids.id(&readable);
        let mut refs = Vec::with_capacity(case.channels.len());
        for (dim, ch) in case.channels.into_iter().enumerate() {
            if let (Some(given), Some(stamped)) = (opts.sampling_rate_hz, ch.rate_hz) {
                if ((given - stamped) / stamped).abs() > 1e-9 {
                    return Err(Error::input(
                        path,
                        Some(case.line),
                        format!(
                            "case {}, dimension {dim}: the timestamps give {stamped} Hz but the sampling rate option is {given} Hz",
                            case.index
                        ),
                    ));
                }
            }
            let series_id = ids.id(&format!("{readable}/{dim}"));
            let meta = SeriesMeta {
                time_series_id: series_id.clone(),
                spec_type: spec_type.to_string(),
                channel: dim.to_string(),
                units: None,
                sampling_rate_hz: opts.sampling_rate_hz.or(ch.rate_hz).unwrap_or(DEFAULT_SAMPLING_RATE_HZ),
                t_start_s: ch.t_start_s,
                t_end_s: None,
            };
            let values = ch.values;
            ds.add_series_values(meta, values.into())?;
            refs.push(SeriesRef { time_series_id: series_id, view: "main".into() });
        }
        ds.add_sample(Sample {
            sample_id: sample_id.clone(),
            source_id: source_id.clone(),
            series: refs,
            ..Default::default()
        })?;
        let annotation = match case.label {
            Some(TsLabel::Class(label)) => Some(Annotation {
                annotation_id: ids.id(&format!("{readable}/class")),
                annotation_type: "label".into(),
                key: "class".into(),
                value_str: Some(label),
                ..Default::default()
            }),
            Some(TsLabel::Target(v)) => Some(Annotation {
                annotation_id: ids.id(&format!("{readable}/target")),
                annotation_type: "number".into(),
                key: "target".into(),
                value_num: Some(v),
                ..Default::default()
            }),
            None => None,
        };
        if let Some(a) = annotation {
            ds.add_annotation(a, std::slice::from_ref(&sample_id))?;
        }
        task_samples.push(sample_id);
    }
    let (task_type, target) = match file.response {
        TsResponse::None => return Ok(()),
        TsResponse::Class(_) => (TaskType::Classification, "class"),
        TsResponse::Target => (TaskType::Regression, "target"),
    };
    // Every case of the file may have been dropped; a task needs at least one sample.
    if task_samples.is_empty() {
        return Ok(());
    }
    let mut task = Task::new(ids.id(&format!("{name}-{split}")), task_type, task_samples);
    task.split = Some(split.to_string());
    task.target = Some(target.to_string());
    ds.add_task(split, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_from_stems() {
        assert_eq!(split_of(Path::new("/x/ArrowHead_TRAIN.ts")), "train");
        assert_eq!(split_of(Path::new("a_test.ts")), "test");
        assert_eq!(split_of(Path::new("Foo_Valid.ts")), "foo_valid");
    }

    fn dataset_from(text: &str, opts: &UcrOptions) -> Result<TimeFDataset> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Toy_TRAIN.ts");
        std::fs::write(&path, text).unwrap();
        read_ucr(&[&path], opts)
    }

    #[test]
    fn dataset_entities_and_ids() {
        let mut ds = dataset_from(
            "@problemName Toy\n@classLabel true a b\n@data\n1,2:3:b\n?,?:4:a\n5:6:a\n",
            &UcrOptions::new("toy", "1").with_on_missing(OnMissing::DropCase),
        )
        .unwrap();
        let samples: Vec<_> = ds.samples().map(|s| s.sample_id).collect();
        assert_eq!(samples, vec!["toy-train-0", "toy-train-2"]);
        let series: Vec<_> = ds.series().map(|s| (s.time_series_id, s.channel, s.spec_type)).collect();
        assert_eq!(series[0], ("toy-train-0/0".into(), "0".into(), "unknown".into()));
        assert_eq!(series.len(), 4);
        let (name, task) = ds.tasks().next().unwrap();
        assert_eq!((name, task.task_id.as_str(), task.sample_ids.len()), ("train", "toy-train", 2));
        let (a, on) = ds.annotations().next().unwrap();
        assert_eq!((a.annotation_id.as_str(), a.value_str.as_deref()), ("toy-train-0/class", Some("b")));
        assert!(on.contains("toy-train-0"));
        ds.validate_references().unwrap();
        // The loader hands back the values parsed in read_ucr.
        let loaded = (ds.take_loader("toy-train-2/1").unwrap())().unwrap();
        assert_eq!(loaded, vec![6.0]);

        let ds =
            dataset_from("@data\n1\n", &UcrOptions::new("toy", "1").with_ids(IdMode::Uuid).with_sampling_rate_hz(10.0))
                .unwrap();
        let s = ds.samples().next().unwrap();
        assert_eq!(s.sample_id, IdMode::Uuid.id("toy-train-0"));
        assert_eq!(s.source_id, IdMode::Uuid.id("toy"));
        let m = ds.series().next().unwrap();
        assert_eq!((m.channel.as_str(), m.sampling_rate_hz), ("0", 10.0));
        assert_eq!(ds.tasks().count(), 0);
        ds.validate_references().unwrap();
    }

    #[test]
    fn bad_options() {
        let opts = UcrOptions::new("toy", "1").with_sampling_rate_hz(0.0);
        assert!(matches!(
            dataset_from("@data\n1\n", &opts),
            Err(Error::InvalidOption { option: "sampling_rate_hz", .. })
        ));
        let none: [&str; 0] = [];
        assert!(matches!(
            read_ucr(&none, &UcrOptions::new("toy", "1")),
            Err(Error::InvalidOption { option: "paths", .. })
        ));
        let err = read_ucr(&["a/X_TRAIN.ts", "b/x_train.ts"], &UcrOptions::new("toy", "1")).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { line: None, .. }), "{err}");
    }
}
