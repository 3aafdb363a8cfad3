//! Reader for Monash forecasting archive `.tsf` files (Godahewa et al., NeurIPS 2021).
//!
//! A `.tsf` file is a header of `@` tags (`@relation`, `@attribute NAME TYPE`,
//! `@frequency`, `@horizon`, `@missing`, `@equallength`) and `#` comments, then
//! `@data` and one series per line: the attribute values in declaration order,
//! separated by `:`, then the values separated by `,`.
//!
//! [`parse_tsf`] parses a file eagerly into a [`TsfFile`], so every malformed case
//! is reported as [`Error::InvalidInput`] with the path and 1-based line before any
//! dataset is built; [`read_tsf`] maps that onto a [`TimeFDataset`]:
//!
//! * one series per data line, id `"{name}-{series_name}"`, channel `"0"`,
//!   sampling rate from [`frequency_hz`], `t_start_s` from the `start_timestamp`
//!   date attribute (UTC epoch seconds, else 0);
//! * without `@horizon`, one sample per series (same id as the series);
//! * with `@horizon h`, each series longer than `h` becomes a context sample
//!   (all but the last `h` values), a target sample (the last `h` values) and a
//!   forecasting task under the task name `forecast`; shorter series get one
//!   plain sample and no task;
//! * other attributes become sample metadata.
//!
//! Window bounds are seconds on the series' time axis: with start `t0`, `n` values
//! and period `P = 1 / rate`, the context is `[t0, t0 + (n-h)·P]` and the target
//! `[t0 + (n-h)·P, t0 + n·P]`. They are computed as multiples of `P` (an integer
//! number of seconds for every known frequency) rather than divisions by the rate,
//! because `1 / (1 / 31556952.0)` is not exactly `31556952.0` in `f64`.
//!
//! Missing values (`?`, or `NaN` in any case) follow [`OnMissing`]: an error naming
//! the line, series and value (default), or the series line is left out. Not
//! supported, each an error naming the line: infinite values, values outside the
//! `f32` range, dates other than `YYYY-MM-DD HH-MM-SS`. Unknown header tags are
//! ignored. The text is UTF-8 unless [`TsfOptions::encoding`] says otherwise.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::connectors::{
    civil_epoch_s, decimal, Dropped, IdMode, OnMissing, TextEncoding, DEFAULT_SAMPLING_RATE_HZ, DEFAULT_SPEC_TYPE,
};
use crate::dataset::{Sample, SeriesMeta, SeriesRef, Source, Task, TaskType, TimeFDataset};
use crate::error::{Error, Result};

/// Task name under which the forecasting tasks of a file with `@horizon` are stored.
pub const FORECAST_TASK_NAME: &str = "forecast";

/// Seconds in a mean Gregorian year (365.2425 days); the base of the yearly,
/// quarterly and monthly rates, because calendar months and years have no fixed length.
pub(crate) const GREGORIAN_YEAR_S: f64 = 31_556_952.0;

/// Options of [`read_tsf`].
#[derive(Debug, Clone, PartialEq)]
pub struct TsfOptions {
    /// Dataset name (a path component); also the prefix of every series id and the source id.
    pub name: String,
    /// Dataset version (a path component).
    pub version: String,
    /// Spec type of every series; [`DEFAULT_SPEC_TYPE`] when `None`.
    pub spec_type: Option<String>,
    /// How ids are spelled.
    pub ids: IdMode,
    /// What to do with a series holding a missing value (`?` or `NaN`).
    pub on_missing: OnMissing,
    /// Text encoding of the file (UTF-8 by default).
    pub encoding: TextEncoding,
}

impl TsfOptions {
    /// Options with readable string ids, the default spec type, missing values
    /// refused and UTF-8 text.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        TsfOptions {
            name: name.into(),
            version: version.into(),
            spec_type: None,
            ids: IdMode::String,
            on_missing: OnMissing::Error,
            encoding: TextEncoding::Utf8,
        }
    }
}

/// Declared type of a `.tsf` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeType {
    /// `string`: free text.
    String,
    /// `numeric`: a finite number.
    Numeric,
    /// `date`: `YYYY-MM-DD HH-MM-SS` (UTC).
    Date,
}

/// One `@attribute NAME TYPE` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsfAttribute {
    /// Attribute name as written (matched case-sensitively, e.g. `series_name`).
    pub name: String,
    /// Declared type.
    pub kind: AttributeType,
}

/// One data line of a `.tsf` file.
#[derive(Debug, Clone, PartialEq)]
pub struct TsfSeries {
    /// 1-based line number in the file.
    pub line: usize,
    /// Series name: the `series_name` attribute, else the first string attribute,
    /// else the 0-based index of the line among the data lines.
    pub name: String,
    /// Attribute values (trimmed text), in declaration order.
    pub attributes: Vec<String>,
    /// The `start_timestamp` date attribute as UTC epoch seconds, when declared.
    pub start_s: Option<f64>,
    /// The values, parsed as `f64` and narrowed to `f32`; all finite.
    pub values: Vec<f32>,
}

/// A parsed `.tsf` file.
#[derive(Debug, Clone, PartialEq)]
pub struct TsfFile {
    /// `@relation` value.
    pub relation: Option<String>,
    /// `#` comment lines of the header, marker and surrounding blanks stripped.
    pub comments: Vec<String>,
    /// `@attribute` declarations, in order.
    pub attributes: Vec<TsfAttribute>,
    /// `@frequency` value as written.
    pub frequency: Option<String>,
    /// `@horizon` value (a positive integer that fits in `i32`).
    pub horizon: Option<usize>,
    /// `@missing` value.
    pub missing: Option<bool>,
    /// `@equallength` value (when `true`, all series were checked to be of equal length).
    pub equal_length: Option<bool>,
    /// The series, in file order; at least one, names unique.
    pub series: Vec<TsfSeries>,
    /// Names of the series left out under [`OnMissing::DropCase`], in file order.
    pub dropped: Vec<String>,
    /// Seconds between two values (1/rate); kept separately so that windows are
    /// exact multiples of it rather than divisions by a rounded rate.
    period_s: f64,
    /// Index of the attribute that names the series.
    name_attr: Option<usize>,
    /// Index of the `start_timestamp` date attribute.
    start_attr: Option<usize>,
}

impl TsfFile {
    /// Values per second: [`frequency_hz`] of `@frequency`, else
    /// [`DEFAULT_SAMPLING_RATE_HZ`].
    pub fn sampling_rate_hz(&self) -> f64 {
        1.0 / self.period_s
    }

    /// Seconds between two consecutive values (`1 / sampling_rate_hz`).
    pub fn period_s(&self) -> f64 {
        self.period_s
    }

    /// Dataset description: the `@relation` value, then the header comment lines,
    /// joined by `'\n'` with trailing empty lines dropped; `None` when all are absent.
    pub fn description(&self) -> Option<String> {
        let mut lines: Vec<&str> = self.relation.iter().map(String::as_str).collect();
        lines.extend(self.comments.iter().map(String::as_str));
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        if lines.is_empty() {
            None
        } else {
            Some(lines.join("\n"))
        }
    }
}

/// Sampling rate in Hz of a `.tsf` `@frequency` value, or `None` when unknown.
///
/// Matching is case-insensitive. Calendar units use the mean Gregorian year
/// (Y = 31 556 952 s = 365.2425 days), since months and years vary in length:
///
/// | frequency            | Hz             |
/// |----------------------|----------------|
/// | `yearly`             | 1 / Y          |
/// | `quarterly`          | 4 / Y          |
/// | `monthly`            | 12 / Y         |
/// | `weekly`             | 1 / 604 800    |
/// | `daily`              | 1 / 86 400     |
/// | `hourly`             | 1 / 3 600      |
/// | `half_hourly`        | 1 / 1 800      |
/// | `minutely`           | 1 / 60         |
/// | `N_seconds`          | 1 / N          |
/// | `N_minutes`          | 1 / (60 N)     |
/// | `N_hours`            | 1 / (3 600 N)  |
///
/// `N` is a positive integer; the singular unit (`1_minute`) is accepted too.
pub fn frequency_hz(freq: &str) -> Option<f64> {
    frequency_period_s(freq).map(|p| 1.0 / p)
}

/// Seconds between values for `freq` (the table of [`frequency_hz`]); every entry
/// is an integer number of seconds, so window bounds computed from it are exact.
fn frequency_period_s(freq: &str) -> Option<f64> {
    let f = freq.trim().to_ascii_lowercase();
    let fixed = match f.as_str() {
        "yearly" => Some(GREGORIAN_YEAR_S),
        "quarterly" => Some(GREGORIAN_YEAR_S / 4.0),
        "monthly" => Some(GREGORIAN_YEAR_S / 12.0),
        "weekly" => Some(604_800.0),
        "daily" => Some(86_400.0),
        "hourly" => Some(3_600.0),
        "half_hourly" => Some(1_800.0),
        "minutely" => Some(60.0),
        _ => None,
    };
    if fixed.is_some() {
        return fixed;
    }
    let (count, unit) = f.split_once('_')?;
    // Digits only: `u64::from_str` would also take a leading `+`.
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = count.parse().ok().filter(|&n| n > 0)?;
    let unit_s = match unit {
        "second" | "seconds" => 1.0,
        "minute" | "minutes" => 60.0,
        "hour" | "hours" => 3_600.0,
        _ => return None,
    };
    Some(n as f64 * unit_s)
}

/// Reads a `.tsf` file into a [`TimeFDataset`] (mapping in the module docs).
///
/// Every malformed-file case is an [`Error::InvalidInput`] with `path` and the
/// 1-based line; a file that does not exist is [`Error::Missing`], one that
/// cannot be read [`Error::Io`]; an invalid dataset name
/// or version is an [`Error::Validation`].
pub fn read_tsf(path: impl AsRef<Path>, opts: &TsfOptions) -> Result<TimeFDataset> {
    read_tsf_with_report(path, opts).map(|(ds, _)| ds)
}

/// [`read_tsf`], also returning the series left out under [`OnMissing::DropCase`].
pub fn read_tsf_with_report(path: impl AsRef<Path>, opts: &TsfOptions) -> Result<(TimeFDataset, Dropped)> {
    let file = parse_tsf_with(path, opts.on_missing, opts.encoding)?;
    let dropped = Dropped { cases: file.dropped.clone(), ..Default::default() };
    Ok((build_dataset(file, opts)?, dropped))
}

/// Parses a UTF-8 `.tsf` file without building a dataset (the first half of
/// [`read_tsf`]); missing values are errors.
pub fn parse_tsf(path: impl AsRef<Path>) -> Result<TsfFile> {
    parse_tsf_with(path, OnMissing::Error, TextEncoding::Utf8)
}

/// [`parse_tsf`] with a missing-value policy and a text encoding.
pub fn parse_tsf_with(path: impl AsRef<Path>, on_missing: OnMissing, encoding: TextEncoding) -> Result<TsfFile> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| crate::connectors::unreadable(path, e))?;
    parse_tsf_bytes(path, &bytes, on_missing, encoding)
}

/// Builds the dataset from a parsed file.
fn build_dataset(file: TsfFile, opts: &TsfOptions) -> Result<TimeFDataset> {
    let mut ds = TimeFDataset::new(opts.name.clone(), opts.version.clone())?;
    ds.info.description = file.description();
    let source_id = opts.ids.id(&opts.name);
    ds.add_source(Source {
        source_id: source_id.clone(),
        name: file.relation.clone().unwrap_or_else(|| opts.name.clone()),
        ..Default::default()
    })?;
    let spec_type = opts.spec_type.as_deref().unwrap_or(DEFAULT_SPEC_TYPE);
    let rate = file.sampling_rate_hz();
    let period = file.period_s;
    for s in file.series {
        let readable = format!("{}-{}", opts.name, s.name);
        let series_id = opts.ids.id(&readable);
        let t0 = s.start_s.unwrap_or(0.0);
        let mut meta = SeriesMeta::new(series_id.clone(), spec_type, "0", rate);
        meta.t_start_s = t0;
        // The series name and start are already in the ids and the series
        // metadata; every other attribute is only kept here.
        let metadata: BTreeMap<String, String> = file
            .attributes
            .iter()
            .zip(&s.attributes)
            .enumerate()
            .filter(|(i, _)| Some(*i) != file.name_attr && Some(*i) != file.start_attr)
            .map(|(_, (a, v))| (a.name.clone(), v.clone()))
            .collect();
        let n = s.values.len();
        let values = s.values;
        ds.add_series_values(meta, values.into())?;

        let sample = |sample_id: String, window: Option<(f64, f64)>| Sample {
            sample_id,
            source_id: source_id.clone(),
            subject_id: None,
            t_start_s: window.map(|w| w.0),
            t_end_s: window.map(|w| w.1),
            series: vec![SeriesRef { time_series_id: series_id.clone(), view: "main".to_string() }],
            metadata: metadata.clone(),
        };
        match file.horizon {
            Some(h) if n > h => {
                // Multiples of the integer period, not divisions by the rate,
                // so the bounds are exact seconds.
                let split = t0 + (n - h) as f64 * period;
                let end = t0 + n as f64 * period;
                let context_id = opts.ids.id(&format!("{readable}/context"));
                let target_id = opts.ids.id(&format!("{readable}/target"));
                ds.add_sample(sample(context_id.clone(), Some((t0, split))))?;
                ds.add_sample(sample(target_id.clone(), Some((split, end))))?;
                let mut task = Task::new(
                    opts.ids.id(&format!("{readable}/forecast")),
                    TaskType::Forecasting,
                    vec![context_id.clone(), target_id.clone()],
                );
                task.target_sample_id = Some(target_id);
                task.context_sample_ids = Some(vec![context_id]);
                // The parser only accepts horizons that fit in i32.
                task.horizon = i32::try_from(h).ok();
                ds.add_task(FORECAST_TASK_NAME, task)?;
            }
            _ => ds.add_sample(sample(series_id.clone(), None))?,
        }
    }
    Ok(ds)
}

/// Decodes the text, naming the line of the first invalid UTF-8 byte.
fn decode<'a>(path: &Path, bytes: &'a [u8], encoding: TextEncoding) -> Result<std::borrow::Cow<'a, str>> {
    encoding.decode(bytes).map_err(|valid_up_to| {
        let ok = bytes.get(..valid_up_to).unwrap_or_default();
        let line = ok.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = ok.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        Error::input(path, Some(line), format!("invalid UTF-8 at byte {col} of the line ({})", TextEncoding::UTF8_HINT))
    })
}

/// A header tag that may appear at most once, with the line it was set on.
struct Once<T> {
    tag: &'static str,
    value: Option<(T, usize)>,
}

impl<T> Once<T> {
    fn new(tag: &'static str) -> Self {
        Once { tag, value: None }
    }

    fn set(&mut self, path: &Path, line: usize, value: T) -> Result<()> {
        if let Some((_, first)) = &self.value {
            return Err(Error::input(path, Some(line), format!("{} given twice (first on line {first})", self.tag)));
        }
        self.value = Some((value, line));
        Ok(())
    }

    fn get(self) -> Option<T> {
        self.value.map(|(v, _)| v)
    }
}

/// [`parse_tsf_with`] over bytes already in memory (e.g. received over a
/// network or produced by a fuzzer); `path` only names the file in errors.
///
/// # Errors
/// As [`parse_tsf`]: [`Error::InvalidInput`] naming `path` and the 1-based line.
pub fn parse_tsf_bytes(path: &Path, bytes: &[u8], on_missing: OnMissing, encoding: TextEncoding) -> Result<TsfFile> {
    let text = decode(path, bytes, encoding)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Err(Error::input(path, Some(1), "empty file"));
    }
    // `split('\n')` plus stripping one `\r` handles LF and CRLF and keeps line
    // numbers equal to what an editor shows.
    let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));

    let mut relation = Once::new("@relation");
    let mut frequency = Once::new("@frequency");
    let mut horizon = Once::new("@horizon");
    let mut missing = Once::new("@missing");
    let mut equal_length = Once::new("@equallength");
    let mut comments = Vec::new();
    let mut attributes: Vec<TsfAttribute> = Vec::new();
    let mut period_s = 1.0 / DEFAULT_SAMPLING_RATE_HZ;
    let mut data_line = None;
    let mut last_content_line = 1;

    for (no, raw) in lines.by_ref() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        last_content_line = no;
        if let Some(comment) = line.strip_prefix('#') {
            comments.push(comment.trim().to_string());
            continue;
        }
        if !line.starts_with('@') {
            return Err(Error::input(path, Some(no), "expected a header tag (@...) or a # comment before @data"));
        }
        let (tag, rest) = match line.split_once(char::is_whitespace) {
            Some((t, r)) => (t, r.trim()),
            None => (line, ""),
        };
        let tag = tag.to_ascii_lowercase();
        let require_value = |tag: &str| {
            if rest.is_empty() {
                Err(Error::input(path, Some(no), format!("{tag} needs a value")))
            } else {
                Ok(rest)
            }
        };
        match tag.as_str() {
            "@data" => {
                data_line = Some(no);
                break;
            }
            "@relation" => relation.set(path, no, require_value("@relation")?.to_string())?,
            "@attribute" => {
                let attr = parse_attribute(path, no, rest)?;
                if attributes.iter().any(|a| a.name == attr.name) {
                    return Err(Error::input(path, Some(no), format!("attribute {} declared twice", attr.name)));
                }
                attributes.push(attr);
            }
            "@frequency" => {
                let f = require_value("@frequency")?;
                period_s = frequency_period_s(f).ok_or_else(|| {
                    Error::input(
                        path,
                        Some(no),
                        format!(
                            "unknown frequency {f:?} (known: yearly, quarterly, monthly, weekly, \
                             daily, hourly, half_hourly, minutely, N_hours, N_minutes, N_seconds)"
                        ),
                    )
                })?;
                frequency.set(path, no, f.to_string())?;
            }
            "@horizon" => {
                let h = require_value("@horizon")?;
                let value =
                    h.parse::<usize>().ok().filter(|&v| v > 0 && i32::try_from(v).is_ok()).ok_or_else(|| {
                        Error::input(
                            path,
                            Some(no),
                            format!("@horizon {h:?} is not a positive integer (at most 2^31-1)"),
                        )
                    })?;
                horizon.set(path, no, value)?;
            }
            "@missing" => missing.set(path, no, parse_bool(path, no, "@missing", rest)?)?,
            "@equallength" => equal_length.set(path, no, parse_bool(path, no, "@equallength", rest)?)?,
            // tags only a UCR/UEA .ts header has: the wrong subcommand, most likely
            t @ ("@problemname" | "@classlabel" | "@targetlabel" | "@univariate" | "@dimensions") => {
                return Err(Error::input(
                    path,
                    Some(no),
                    format!("{t} is a UCR/UEA .ts tag, not a .tsf one; use `timef ingest ucr`"),
                ))
            }
            // Unknown tags are skipped, as the Monash reference loader does, so
            // that files with newer header tags still load.
            _ => {}
        }
    }

    let Some(data_line) = data_line else {
        return Err(Error::input(path, Some(last_content_line), "no @data line: the file ends inside the header"));
    };

    let name_attr = attributes
        .iter()
        .position(|a| a.name == "series_name")
        .or_else(|| attributes.iter().position(|a| a.kind == AttributeType::String));
    let start_attr = attributes.iter().position(|a| a.name == "start_timestamp" && a.kind == AttributeType::Date);
    let equal_length = equal_length.get();

    let mut series: Vec<TsfSeries> = Vec::new();
    let mut dropped = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut index = 0usize;
    for (no, raw) in lines {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        index += 1;
        let s = match parse_data_line(path, no, index - 1, line, &attributes, name_attr, start_attr, on_missing)? {
            DataLine::Kept(s) => s,
            DataLine::Dropped(name) => {
                dropped.push(name);
                continue;
            }
        };
        if let Some(first) = seen.get(&s.name) {
            return Err(Error::input(
                path,
                Some(no),
                format!("duplicate series name {:?} (first on line {first})", s.name),
            ));
        }
        if equal_length == Some(true) {
            if let Some(first) = series.first() {
                if first.values.len() != s.values.len() {
                    return Err(Error::input(
                        path,
                        Some(no),
                        format!(
                            "@equallength true but series {:?} has {} values and series {:?} \
                             (line {}) has {}",
                            s.name,
                            s.values.len(),
                            first.name,
                            first.line,
                            first.values.len()
                        ),
                    ));
                }
            }
        }
        seen.insert(s.name.clone(), no);
        series.push(s);
    }
    if series.is_empty() {
        let why = if dropped.is_empty() { "no series after @data" } else { "every series has missing values" };
        return Err(Error::input(path, Some(data_line), why));
    }

    Ok(TsfFile {
        relation: relation.get(),
        comments,
        attributes,
        frequency: frequency.get(),
        horizon: horizon.get(),
        missing: missing.get(),
        equal_length,
        series,
        dropped,
        period_s,
        name_attr,
        start_attr,
    })
}

/// Parses the `NAME TYPE` of an `@attribute` line.
fn parse_attribute(path: &Path, no: usize, rest: &str) -> Result<TsfAttribute> {
    let mut words = rest.split_whitespace();
    let (Some(name), Some(kind), None) = (words.next(), words.next(), words.next()) else {
        return Err(Error::input(path, Some(no), "@attribute needs exactly a name and a type"));
    };
    let kind = match kind.to_ascii_lowercase().as_str() {
        "string" => AttributeType::String,
        "numeric" => AttributeType::Numeric,
        "date" => AttributeType::Date,
        _ => {
            return Err(Error::input(
                path,
                Some(no),
                format!("attribute {name} has unknown type {kind:?} (expected string, numeric or date)"),
            ))
        }
    };
    Ok(TsfAttribute { name: name.to_string(), kind })
}

fn parse_bool(path: &Path, no: usize, tag: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::input(path, Some(no), format!("{tag} {value:?} is not true or false"))),
    }
}

/// A parsed data line: kept, or left out (by name) under [`OnMissing::DropCase`].
enum DataLine {
    Kept(TsfSeries),
    Dropped(String),
}

/// Parses one data line (`index` is its 0-based position among data lines).
#[allow(clippy::too_many_arguments)]
fn parse_data_line(
    path: &Path,
    no: usize,
    index: usize,
    line: &str,
    attributes: &[TsfAttribute],
    name_attr: Option<usize>,
    start_attr: Option<usize>,
    on_missing: OnMissing,
) -> Result<DataLine> {
    let err = |reason: String| Error::input(path, Some(no), reason);
    // Dates contain no ':' (their time is `HH-MM-SS`), so the first N fields are
    // the attributes and the remainder is the series.
    let mut fields = line.splitn(attributes.len() + 1, ':');
    let values_text: Vec<&str> = fields.by_ref().take(attributes.len()).map(str::trim).collect();
    let Some(series_text) = fields.next().filter(|_| values_text.len() == attributes.len()) else {
        let names: Vec<&str> = attributes.iter().map(|a| a.name.as_str()).collect();
        // Name the series when its field was present and not the last one (the
        // last field is most likely the values).
        let named = name_attr.filter(|&i| i + 1 < values_text.len());
        let series = match named.and_then(|i| values_text.get(i)) {
            Some(n) if !n.is_empty() => format!("series {n}: "),
            _ => String::new(),
        };
        return Err(err(format!(
            "{series}too few fields: expected {} separated by ':' (the attribute values {}, then the \
             series), found {}",
            attributes.len() + 1,
            names.join(", "),
            line.split(':').count()
        )));
    };
    let name = match name_attr.and_then(|i| values_text.get(i)) {
        Some(v) => v.to_string(),
        None => index.to_string(),
    };
    if name.is_empty() {
        return Err(err("empty series name".to_string()));
    }

    let mut start_s = None;
    for (i, (attr, text)) in attributes.iter().zip(&values_text).enumerate() {
        match attr.kind {
            AttributeType::String => {}
            AttributeType::Numeric => {
                if !text.parse::<f64>().is_ok_and(f64::is_finite) {
                    return Err(err(format!(
                        "series {name}: attribute {} value {text:?} is not a finite number",
                        attr.name
                    )));
                }
            }
            AttributeType::Date => {
                let t = parse_date(text).ok_or_else(|| {
                    err(format!(
                        "series {name}: attribute {} value {text:?} is not a date \
                         YYYY-MM-DD HH-MM-SS",
                        attr.name
                    ))
                })?;
                if Some(i) == start_attr {
                    start_s = Some(t);
                }
            }
        }
    }

    if series_text.contains(':') {
        return Err(err(format!(
            "series {name}: too many fields: expected {} attribute values and the series",
            attributes.len()
        )));
    }
    let series_text = series_text.trim();
    if series_text.is_empty() {
        return Err(err(format!("series {name} has no values")));
    }
    let mut values = Vec::new();
    for (k, v) in series_text.split(',').enumerate() {
        let v = v.trim();
        if v == "?" || v.eq_ignore_ascii_case("nan") {
            return match on_missing {
                OnMissing::DropCase => Ok(DataLine::Dropped(name)),
                OnMissing::Error => Err(err(format!(
                    "series {name}: value {k} (0-based) is missing ({v:?}); TimeF stores \
                     only finite values (--on-missing drop-case leaves such series out)"
                ))),
            };
        }
        // Rust also parses "NaN" and "inf"; TimeF refuses non-finite values.
        let x = v
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| err(format!("series {name}: value {k} (0-based) {v:?} is not a finite number")))?;
        let x32 = x as f32;
        if !x32.is_finite() {
            return Err(err(format!("series {name}: value {k} (0-based) {v:?} is out of the float32 range")));
        }
        values.push(x32);
    }

    Ok(DataLine::Kept(TsfSeries {
        line: no,
        name,
        attributes: values_text.into_iter().map(str::to_string).collect(),
        start_s,
        values,
    }))
}

/// Parses `YYYY-MM-DD HH-MM-SS` (UTC) into epoch seconds; strict so that a
/// misread field cannot silently shift a series in time.
pub(super) fn parse_date(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() != 19 {
        return None;
    }
    let seps = [(4, b'-'), (7, b'-'), (10, b' '), (13, b'-'), (16, b'-')];
    if !seps.iter().all(|&(i, c)| b.get(i) == Some(&c)) {
        return None;
    }
    let num = |from: usize, to: usize| b.get(from..to).and_then(decimal);
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    Some(civil_epoch_s(y, m, d, num(11, 13)?, num(14, 16)?, num(17, 19)?)? as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("mem.tsf")
    }

    fn parse(text: &str) -> Result<TsfFile> {
        parse_tsf_bytes(p(), text.as_bytes(), OnMissing::Error, TextEncoding::Utf8)
    }

    fn input_err(r: Result<TsfFile>) -> (Option<usize>, String) {
        match r {
            Err(Error::InvalidInput { path, line, reason }) => {
                assert_eq!(path, p());
                (line, reason)
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    /// Takes every series' values out of the dataset through its loader.
    fn values(ds: &mut TimeFDataset) -> BTreeMap<String, Vec<f32>> {
        let ids: Vec<String> = ds.series().map(|m| m.time_series_id).collect();
        ids.into_iter()
            .map(|id| {
                let load = ds.take_loader(&id).expect("loader present");
                (id, load().expect("loader ok").to_vec())
            })
            .collect()
    }

    const Y: f64 = 31_556_952.0;

    #[test]
    fn frequency_table() {
        assert_eq!(frequency_hz("yearly"), Some(1.0 / Y));
        assert_eq!(frequency_hz("quarterly"), Some(1.0 / (Y / 4.0)));
        assert_eq!(frequency_hz("monthly"), Some(1.0 / (Y / 12.0)));
        assert_eq!(frequency_hz("weekly"), Some(1.0 / 604_800.0));
        assert_eq!(frequency_hz("daily"), Some(1.0 / 86_400.0));
        assert_eq!(frequency_hz("Hourly"), Some(1.0 / 3_600.0));
        assert_eq!(frequency_hz("half_hourly"), Some(1.0 / 1_800.0));
        assert_eq!(frequency_hz("minutely"), Some(1.0 / 60.0));
        assert_eq!(frequency_hz("10_minutes"), Some(1.0 / 600.0));
        assert_eq!(frequency_hz("4_minutes"), Some(1.0 / 240.0));
        assert_eq!(frequency_hz("1_minute"), Some(1.0 / 60.0));
        assert_eq!(frequency_hz("4_seconds"), Some(1.0 / 4.0));
        assert_eq!(frequency_hz("2_hours"), Some(1.0 / 7_200.0));
        // Same numbers as the n/Y spelling of the table.
        assert_eq!(frequency_hz("quarterly"), Some(4.0 / Y));
        assert_eq!(frequency_hz("monthly"), Some(12.0 / Y));
        // Quarterly and monthly periods are whole seconds, so windows stay exact.
        assert_eq!(Y / 4.0, 7_889_238.0);
        assert_eq!(Y / 12.0, 2_629_746.0);
        for bad in ["", "fortnightly", "0_minutes", "_minutes", "+5_minutes", "5_", "5_days", "x_seconds", "5_minutes_"]
        {
            assert_eq!(frequency_hz(bad), None, "{bad}");
        }
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-01 00-00-00"), Some(0.0));
        assert_eq!(parse_date("1979-01-01 00-00-00"), Some(283_996_800.0));
        assert_eq!(parse_date("1973-01-01 00-00-00"), Some(94_694_400.0));
        assert_eq!(parse_date("2000-02-29 12-34-56"), Some(951_827_696.0));
        assert_eq!(parse_date("1969-12-31 23-59-59"), Some(-1.0));
        assert_eq!(parse_date("2024-03-01 00-00-00"), Some(1_709_251_200.0));
        for bad in [
            "1979-01-01",
            "1979-01-01 00:00:00",
            "1979-13-01 00-00-00",
            "1979-02-29 00-00-00",
            "1900-02-29 00-00-00",
            "1979-01-00 00-00-00",
            "1979-01-01 24-00-00",
            "1979-01-01 00-60-00",
            "1979-01-01 00-00-60",
            "1979-1-01 00-00-00 ",
            "19a9-01-01 00-00-00",
            "1979-01-01T00-00-00",
            "1979-01-01 00-00-0é",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    const SMALL: &str = "# Comment one\n#  two \n#\n@relation rel\n@attribute series_name string\n\
        @attribute start_timestamp date\n@frequency daily\n@horizon 2\n@data\n\
        a:1970-01-02 00-00-00:1,2,3,4.5\nb:1970-01-01 00-00-00:7,8\n";

    #[test]
    fn crlf_and_bom_parse_like_lf() {
        let lf = parse(SMALL).unwrap();
        let crlf_text = format!("\u{feff}{}", SMALL.replace('\n', "\r\n"));
        let crlf = parse(&crlf_text).unwrap();
        assert_eq!(lf, crlf);
        assert_eq!(lf.relation.as_deref(), Some("rel"));
        assert_eq!(lf.comments, vec!["Comment one", "two", ""]);
        assert_eq!(lf.description().as_deref(), Some("rel\nComment one\ntwo"));
        assert_eq!(lf.series.len(), 2);
        assert_eq!(lf.series[0].values, vec![1.0, 2.0, 3.0, 4.5]);
        assert_eq!(lf.series[0].line, 10);
        assert_eq!(lf.series[0].start_s, Some(86_400.0));
    }

    #[test]
    fn tags_case_insensitive_and_blank_lines() {
        let text = "\n@RELATION r\n\n@Attribute name STRING\n@FREQUENCY 10_Minutes\n@DATA\n\n# c\nx:1, 2 ,3\n\n";
        let f = parse(text).unwrap();
        assert_eq!(f.sampling_rate_hz(), 1.0 / 600.0);
        assert_eq!(f.series[0].name, "x");
        assert_eq!(f.series[0].values, vec![1.0, 2.0, 3.0]);
        assert_eq!(f.series[0].line, 9);
    }

    #[test]
    fn horizon_windows_are_exact() {
        let mut ds = read_tsf_text(SMALL, &TsfOptions::new("small", "1")).unwrap();
        let samples: Vec<_> = ds.samples().map(|s| (s.sample_id.clone(), s.t_start_s, s.t_end_s)).collect();
        assert_eq!(
            samples,
            vec![
                ("small-a/context".to_string(), Some(86_400.0), Some(86_400.0 * 3.0)),
                ("small-a/target".to_string(), Some(86_400.0 * 3.0), Some(86_400.0 * 5.0)),
                ("small-b".to_string(), None, None),
            ]
        );
        let tasks: Vec<_> = ds.tasks().map(|(n, t)| (n.to_string(), t.clone())).collect();
        assert_eq!(tasks.len(), 1);
        let (name, t) = &tasks[0];
        assert_eq!(name, "forecast");
        assert_eq!(t.task_id, "small-a/forecast");
        assert_eq!(t.task_type, TaskType::Forecasting);
        assert_eq!(t.sample_ids, vec!["small-a/context", "small-a/target"]);
        assert_eq!(t.context_sample_ids, Some(vec!["small-a/context".to_string()]));
        assert_eq!(t.target_sample_id.as_deref(), Some("small-a/target"));
        assert_eq!(t.horizon, Some(2));
        let series: Vec<_> = ds.series().collect();
        assert_eq!(series[0].time_series_id, "small-a");
        assert_eq!(series[0].t_start_s, 86_400.0);
        assert_eq!(series[0].sampling_rate_hz, 1.0 / 86_400.0);
        assert_eq!(series[1].t_start_s, 0.0);
        let v = values(&mut ds);
        assert_eq!(v["small-a"], vec![1.0, 2.0, 3.0, 4.5]);
        assert_eq!(v["small-b"], vec![7.0, 8.0]);
        ds.validate_references().unwrap();
    }

    #[test]
    fn defaults_without_optional_tags() {
        // No frequency, no start, no horizon, no string attribute: 1 Hz, t0 = 0,
        // one whole-series sample each, named by data-line index.
        let text = "@attribute weight numeric\n@data\n1.5:1,2\n2:3\n";
        let ds = read_tsf_text(text, &TsfOptions::new("d", "v")).unwrap();
        let series: Vec<_> = ds.series().collect();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0], {
            let mut m = SeriesMeta::new("d-0", DEFAULT_SPEC_TYPE, "0", 1.0);
            m.t_start_s = 0.0;
            m
        });
        let samples: Vec<_> = ds.samples().collect();
        assert_eq!(samples[0].sample_id, "d-0");
        assert_eq!(samples[0].source_id, "d");
        assert_eq!(samples[0].t_start_s, None);
        assert_eq!(samples[0].metadata.get("weight").map(String::as_str), Some("1.5"));
        assert_eq!(samples[1].metadata.get("weight").map(String::as_str), Some("2"));
        assert_eq!(ds.tasks().count(), 0);
        let sources: Vec<_> = ds.sources().cloned().collect();
        assert_eq!(sources[0].name, "d");
        assert_eq!(ds.info.description, None);
    }

    #[test]
    fn uuid_ids() {
        let opts = TsfOptions { ids: IdMode::Uuid, spec_type: Some("sales".into()), ..TsfOptions::new("small", "1") };
        let ds = read_tsf_text(SMALL, &opts).unwrap();
        let u = |s: &str| IdMode::Uuid.id(s);
        let sample_ids: Vec<_> = ds.samples().map(|s| s.sample_id.clone()).collect();
        let mut expected = vec![u("small-a/context"), u("small-a/target"), u("small-b")];
        expected.sort();
        assert_eq!(sample_ids, expected);
        assert!(ds.samples().all(|s| s.source_id == u("small")));
        assert_eq!(ds.sources().next().map(|s| s.source_id.clone()), Some(u("small")));
        let (_, t) = ds.tasks().next().unwrap();
        assert_eq!(t.task_id, u("small-a/forecast"));
        assert_eq!(t.target_sample_id, Some(u("small-a/target")));
        assert!(ds.series().all(|s| s.spec_type == "sales"));
        let mut series_ids: Vec<_> = ds.series().map(|s| s.time_series_id.clone()).collect();
        series_ids.sort();
        let mut want = vec![u("small-a"), u("small-b")];
        want.sort();
        assert_eq!(series_ids, want);
    }

    fn read_tsf_text(text: &str, opts: &TsfOptions) -> Result<TimeFDataset> {
        build_dataset(parse(text)?, opts)
    }

    #[test]
    fn first_string_attribute_names_the_series() {
        let text = "@attribute n numeric\n@attribute id string\n@attribute g string\n@data\n3:x:G:1\n";
        let ds = read_tsf_text(text, &TsfOptions::new("d", "v")).unwrap();
        let s = ds.samples().next().unwrap();
        assert_eq!(s.sample_id, "d-x");
        let meta: Vec<_> = s.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(meta, vec![("g", "G"), ("n", "3")]);
    }

    #[test]
    fn malformed_inputs() {
        let h = "@attribute series_name string\n@attribute start_timestamp date\n@data\n";
        let cases: Vec<(String, usize, &str)> = vec![
            ("".into(), 1, "empty file"),
            ("  \n\n".into(), 1, "empty file"),
            ("# only\n@relation r\n\n".into(), 2, "no @data"),
            ("@relation r\n@data\n# nothing\n".into(), 2, "no series"),
            ("hello\n@data\n".into(), 1, "expected a header tag"),
            (format!("{h}a:1979-01-01 00-00-00:1,?,3\n"), 4, "series a: value 1 (0-based) is missing"),
            (format!("{h}a:1979-01-01 00-00-00:1,x,3\n"), 4, "series a: value 1 (0-based) \"x\""),
            (format!("{h}a:1979-01-01 00-00-00:1,,3\n"), 4, "series a: value 1 (0-based) \"\""),
            (format!("{h}a:1979-01-01 00-00-00:NaN\n"), 4, "series a: value 0"),
            (format!("{h}a:1979-01-01 00-00-00:1e300\n"), 4, "float32 range"),
            (format!("{h}a:1979-01-01 00-00-00:  \n"), 4, "series a has no values"),
            (format!("{h}a:1979-01-01 00-00-00\n"), 4, "series a: too few fields"),
            (
                "@attribute s string\n@data\n1,2\n".into(),
                3,
                "expected 2 separated by ':' (the attribute values s, then",
            ),
            (format!("{h}a:1979-01-01 00-00-00:1:2\n"), 4, "series a: too many fields"),
            (format!("{h}a:1979-02-30 00-00-00:1\n"), 4, "series a: attribute start_timestamp"),
            (format!("{h}:1979-01-01 00-00-00:1\n"), 4, "empty series name"),
            (
                format!("{h}a:1979-01-01 00-00-00:1\n\nb:1979-01-01 00-00-00:1\na:1979-01-01 00-00-00:1\n"),
                7,
                "duplicate series name \"a\" (first on line 4)",
            ),
            ("@attribute x float\n@data\n".into(), 1, "attribute x has unknown type \"float\""),
            ("@attribute x\n@data\n".into(), 1, "exactly a name and a type"),
            ("@attribute x string\n@attribute x string\n@data\n".into(), 2, "attribute x declared twice"),
            ("@attribute x numeric\n@data\nabc:1\n".into(), 3, "attribute x value \"abc\""),
            ("@frequency fortnightly\n@data\n".into(), 1, "unknown frequency \"fortnightly\""),
            ("@frequency\n@data\n".into(), 1, "@frequency needs a value"),
            ("@horizon 2.5\n@data\n".into(), 1, "@horizon \"2.5\""),
            ("@horizon 0\n@data\n".into(), 1, "@horizon \"0\""),
            ("@horizon 3000000000\n@data\n".into(), 1, "@horizon \"3000000000\""),
            ("@horizon 1\n@horizon 1\n@data\n".into(), 2, "@horizon given twice (first on line 1)"),
            ("@missing maybe\n@data\n".into(), 1, "@missing \"maybe\""),
            ("@equallength true\n@attribute s string\n@data\na:1,2\nb:1\n".into(), 5, "series \"b\" has 1 values"),
        ];
        for (text, line, reason) in cases {
            let (l, r) = input_err(parse(&text));
            assert_eq!(l, Some(line), "{text:?}: {r}");
            assert!(r.contains(reason), "{text:?}: {r:?} lacks {reason:?}");
        }
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let (l, r) =
            input_err(parse_tsf_bytes(p(), b"@relation r\n@data\nabc\xff:1\n", OnMissing::Error, TextEncoding::Utf8));
        assert_eq!(l, Some(3));
        assert!(r.contains("UTF-8"), "{r}");
    }

    #[test]
    fn real_files_through_loaders() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/real/tsf");
        let path = dir.join("UnitTest_Tsf_Loader.tsf");
        if !path.exists() {
            return; // the shared data is checked by tests/tsf_connector.rs
        }
        let mut ds = read_tsf(&path, &TsfOptions::new("tsf", "1")).unwrap();
        let v = values(&mut ds);
        assert_eq!(v.len(), 3);
        assert_eq!(v["tsf-T1"].len(), 7);
        // the decimal text as float32 (it has more digits than float32 holds)
        let f32s = |texts: &[&str]| texts.iter().map(|t| t.parse::<f32>().unwrap()).collect::<Vec<_>>();
        assert_eq!(v["tsf-T1"][0], f32s(&["25092.2284"])[0]);
        assert_eq!(v["tsf-T2"], f32s(&["887896.51", "887068.98", "971549.04"]));
        assert_eq!(v["tsf-T3"], vec![227921.0_f32, 230995.0, 183635.0, 238605.0, 254186.0]);
    }

    mod no_panics {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
                let _ = parse_tsf_bytes(p(), &bytes, OnMissing::Error, TextEncoding::Utf8);
            }

            #[test]
            fn data_lines_after_a_valid_header(
                lines in proptest::collection::vec("[A-Za-z0-9?]{0,3}(:[-0-9 ?.,eE]{0,12}){0,3}", 0..8)
            ) {
                let text = format!("@attribute series_name string\n@attribute start_timestamp date\n\
                    @attribute w numeric\n@horizon 1\n@data\n{}", lines.join("\n"));
                if let Ok(f) = parse(&text) {
                    let _ = build_dataset(f, &TsfOptions::new("d", "v"));
                }
            }

            #[test]
            fn tsf_like_text(
                lines in proptest::collection::vec(
                    "(@(relation|attribute|frequency|horizon|missing|equallength|data)|#|[a-z0-9]{0,3})( [a-z_0-9]{0,8}){0,3}(:[-0-9 ?.,e]{0,20}){0,3}",
                    0..12,
                )
            ) {
                let text = lines.join("\n");
                if let Ok(f) = parse(&text) {
                    let _ = build_dataset(f, &TsfOptions::new("d", "v"));
                }
            }
        }
    }
}
