//! Rows of annotations, tasks and sources to set, read from a file (CLI
//! `timef edit --set-annotations FILE`, `--set-tasks FILE`, `--set-sources
//! FILE`): JSON lines (`.jsonl`, `.ndjson`, `.json`), Parquet (`.parquet`) or
//! CSV with a header line (`.csv`; annotations and sources only: a task's
//! `sample_ids` is a list). Each row is read into JSON and then into the
//! entity by one set of rules, whatever the file's format; a column the entity
//! does not have is an error, as is a missing required one
//! (`docs/format.md` §7, "Row files").

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::Array;
use arrow_array::RecordBatch;
use arrow_schema::DataType;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dataset::{Annotation, Source, Task, TaskType};
use crate::error::{Error, Result};
use crate::text_column::{integer_at, is_text, text_at};

/// One annotation row: an annotation attached to one sample.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnnotationRow {
    annotation_id: String,
    sample_id: String,
    annotation_type: String,
    key: String,
    #[serde(default)]
    value_str: Option<String>,
    #[serde(default)]
    value_num: Option<f64>,
    #[serde(default)]
    t_start_s: Option<f64>,
    #[serde(default)]
    t_end_s: Option<f64>,
    #[serde(default)]
    channel: Option<String>,
}

/// One task row: a task under its task name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskRow {
    task_name: String,
    task_id: String,
    task_type: String,
    #[serde(default)]
    split: Option<String>,
    sample_ids: Vec<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    target_sample_id: Option<String>,
    #[serde(default)]
    context_sample_ids: Option<Vec<String>>,
    #[serde(default)]
    from_task: Option<String>,
    #[serde(default)]
    horizon: Option<i32>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    answer: Option<String>,
}

/// One source row.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceRow {
    source_id: String,
    name: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    license: Option<String>,
    #[serde(default)]
    citation: Option<String>,
}

/// Columns of CSV files read as numbers (every other column is text).
const NUMERIC: [&str; 4] = ["value_num", "t_start_s", "t_end_s", "horizon"];

/// The rows of `path` as JSON objects with their 1-based line (JSON lines,
/// CSV counting the header) or 0-based row (Parquet, in the reason).
fn json_rows(path: &Path) -> Result<Vec<(usize, Map<String, Value>)>> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "jsonl" | "ndjson" | "json" => {
            let text = std::fs::read_to_string(path).map_err(io)?;
            // a byte order mark (Windows editors write one) is not part of the first row,
            // as the csv reader below and the connectors take it
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let mut rows = Vec::new();
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match serde_json::from_str::<Value>(line) {
                    Ok(Value::Object(m)) => rows.push((i + 1, m)),
                    Ok(_) => return Err(Error::input(path, Some(i + 1), "a row must be a JSON object")),
                    Err(e) => return Err(Error::input(path, Some(i + 1), e.to_string())),
                }
            }
            Ok(rows)
        }
        "parquet" => {
            let file = std::fs::File::open(path).map_err(io)?;
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .and_then(|b| b.build())
                .map_err(|e| Error::input(path, None, e.to_string()))?;
            let mut rows = Vec::new();
            for batch in reader {
                let batch = batch.map_err(|e| Error::input(path, None, e.to_string()))?;
                batch_rows(path, &batch, &mut rows)?;
            }
            Ok(rows)
        }
        "csv" => {
            let bytes = std::fs::read(path).map_err(io)?;
            let mut lines = Lines { bytes: &bytes, at: 0, line: 1 };
            let mut reader = csv::Reader::from_reader(bytes.as_slice());
            let header = reader.headers().map_err(|e| csv_error(path, None, &mut lines, e))?.clone();
            let mut rows = Vec::new();
            for record in reader.records() {
                let record = record.map_err(|e| csv_error(path, Some(&header), &mut lines, e))?;
                let line = lines.of(record.position().map_or(0, csv::Position::byte));
                let mut row = Map::new();
                for (name, field) in header.iter().zip(record.iter()) {
                    if field.is_empty() {
                        continue; // an empty field is a missing value
                    }
                    let value = if NUMERIC.contains(&name) {
                        // spaces around a number are not part of it (as arrow-csv read them)
                        match field.trim().parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                            Some(n) if n.as_f64().is_some_and(f64::is_finite) => Value::Number(n),
                            _ => {
                                return Err(Error::input(
                                    path,
                                    Some(line),
                                    format!("{name} {field:?} is not a finite number"),
                                ))
                            }
                        }
                    } else {
                        Value::String(field.to_string())
                    };
                    row.insert(name.to_string(), value);
                }
                rows.push((line, row));
            }
            Ok(rows)
        }
        _ => Err(Error::input(path, None, "expected a .jsonl, .ndjson, .json, .parquet or .csv file")),
    }
}

/// Appends `batch`'s rows as JSON objects, numbered on from `rows.len() + 1`.
fn batch_rows(path: &Path, batch: &RecordBatch, rows: &mut Vec<(usize, Map<String, Value>)>) -> Result<()> {
    let first = rows.len();
    for r in 0..batch.num_rows() {
        rows.push((first + r, Map::new()));
    }
    for (field, col) in batch.schema().fields().iter().zip(batch.columns()) {
        for r in 0..batch.num_rows() {
            let v = cell(col.as_ref(), r)
                .map_err(|why| refused(path, first + r, true, format!("{}: {why}", field.name())))?;
            if !v.is_null() {
                rows[first + r].1.insert(field.name().clone(), v);
            }
        }
    }
    Ok(())
}

/// The 1-based line of a byte offset of a CSV file, counted on from the last
/// offset asked for (offsets come in order). The csv crate's own line count
/// lags one line behind after a CRLF line end; its byte offsets do not (a
/// record's offset may sit on the CR or LF that ends the previous line, which
/// is skipped).
struct Lines<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
}

impl Lines<'_> {
    fn of(&mut self, byte: u64) -> usize {
        let mut to = usize::try_from(byte).unwrap_or(usize::MAX).min(self.bytes.len());
        while to < self.bytes.len() && matches!(self.bytes[to], b'\r' | b'\n') {
            to += 1;
        }
        if to > self.at {
            // a line ends at LF, CRLF or a lone CR (as the csv crate reads them)
            let ends = (self.at..to)
                .filter(|&i| match self.bytes[i] {
                    b'\n' => true,
                    b'\r' => self.bytes.get(i + 1) != Some(&b'\n'),
                    _ => false,
                })
                .count();
            self.line += ends;
            self.at = to;
        }
        self.line
    }
}

/// A CSV file's error, naming the line it is on (the reason is built here:
/// the csv crate's own message counts lines its own way and fields from 0).
fn csv_error(path: &Path, header: Option<&csv::StringRecord>, lines: &mut Lines<'_>, e: csv::Error) -> Error {
    let line = e.position().map(|p| lines.of(p.byte()));
    let message = e.to_string();
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Error::io(path, io),
        csv::ErrorKind::Utf8 { err, .. } => {
            let column = header
                .and_then(|h| h.get(err.field()))
                .map_or_else(|| format!("field {}", err.field() + 1), |name| format!("column {name}"));
            Error::input(path, line, format!("invalid UTF-8 in {column}"))
        }
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            Error::input(path, line, format!("{len} fields where the header has {expected_len}"))
        }
        _ => Error::input(path, line, message),
    }
}

/// Row `r` of `col` as JSON: text (strings, dictionaries of strings or of
/// integers), integers, floats, and lists of them.
fn cell(col: &dyn Array, r: usize) -> std::result::Result<Value, String> {
    if col.is_null(r) {
        return Ok(Value::Null);
    }
    Ok(match col.data_type() {
        DataType::List(_) => {
            let items = col.as_list::<i32>().value(r);
            Value::Array((0..items.len()).map(|i| cell(items.as_ref(), i)).collect::<std::result::Result<_, _>>()?)
        }
        DataType::LargeList(_) => {
            let items = col.as_list::<i64>().value(r);
            Value::Array((0..items.len()).map(|i| cell(items.as_ref(), i)).collect::<std::result::Result<_, _>>()?)
        }
        t if t.is_integer() => match integer_at(col, r) {
            Some(v) => {
                i64::try_from(v).map(Value::from).or_else(|_| u64::try_from(v).map(Value::from)).unwrap_or(Value::Null)
            }
            None => Value::Null,
        },
        t if is_text(t, true) => match text_at(col, r)? {
            Some(s) => Value::String(s.into_owned()),
            None => Value::Null,
        },
        DataType::Float16 => float(col.as_primitive::<Float16Type>().value(r).to_f64()),
        DataType::Float32 => float(f64::from(col.as_primitive::<Float32Type>().value(r))),
        DataType::Float64 => float(col.as_primitive::<Float64Type>().value(r)),
        t => return Err(format!("a column of type {t} is not read")),
    })
}

/// A float as a JSON number (NaN and infinities, which JSON has not, as null).
fn float(v: f64) -> Value {
    serde_json::Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null)
}

/// Every row as `T`; `origin` names the rows in errors (a file, or an edit
/// argument such as `<set_annotations>`), `rows` are numbered as lines unless
/// `numbered_rows` (Parquet), where the number goes in the reason.
fn typed<T: for<'de> Deserialize<'de>>(
    origin: &Path,
    rows: Vec<(usize, Map<String, Value>)>,
    numbered_rows: bool,
) -> Result<Vec<(usize, T)>> {
    rows.into_iter()
        .map(|(at, m)| {
            serde_json::from_value(Value::Object(m)).map(|t| (at, t)).map_err(|e| {
                let why = e.to_string();
                // a CSV's columns are its header's, a Parquet file's its schema's: a
                // column of another name is named there, not at the first row (review 138)
                let csv = origin.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
                match why.starts_with("unknown field") {
                    true if csv => Error::input(origin, Some(1), why),
                    true if numbered_rows => Error::input(origin, None, why),
                    _ => refused(origin, at, numbered_rows, why),
                }
            })
        })
        .collect()
}

/// The refusal of the row at `at` of `origin`: its 0-based row where rows are
/// numbered (Parquet), else its 1-based line (docs/format.md §8, "Refusals").
fn refused(origin: &Path, at: usize, numbered_rows: bool, why: String) -> Error {
    match numbered_rows {
        true => Error::input(origin, None, format!("row {at}: {why}")),
        false => Error::input(origin, Some(at), why),
    }
}

/// Whether the rows of `path` are numbered (Parquet), not lines.
fn numbered_rows(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// The rows of `path` (see the module doc), each as `T`.
fn file_rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<(usize, T)>> {
    typed(path, json_rows(path)?, numbered_rows(path))
}

/// JSON objects given in memory (Python's dicts), numbered from 1 as lines of `origin`.
fn value_rows<T: for<'de> Deserialize<'de>>(origin: &str, rows: Vec<Value>) -> Result<Vec<(usize, T)>> {
    let origin = Path::new(origin);
    let mut objects = Vec::with_capacity(rows.len());
    for (i, v) in rows.into_iter().enumerate() {
        match v {
            Value::Object(m) => objects.push((i + 1, m)),
            _ => return Err(Error::input(origin, Some(i + 1), "a row must be an object")),
        }
    }
    typed(origin, objects, false)
}

/// The annotations of `rows`, each with the samples it is attached to (the
/// rows of one `annotation_id` must agree on its fields).
fn annotations(
    origin: &Path,
    rows: Vec<(usize, AnnotationRow)>,
    numbered: bool,
) -> Result<Vec<(Annotation, BTreeSet<String>)>> {
    let mut by_id: BTreeMap<String, (Annotation, BTreeSet<String>)> = BTreeMap::new();
    for (at, r) in rows {
        let a = Annotation {
            annotation_id: r.annotation_id,
            annotation_type: r.annotation_type,
            key: r.key,
            value_str: r.value_str,
            value_num: r.value_num,
            t_start_s: r.t_start_s,
            t_end_s: r.t_end_s,
            channel: r.channel,
        };
        let entry = by_id.entry(a.annotation_id.clone()).or_insert_with(|| (a.clone(), BTreeSet::new()));
        if entry.0 != a {
            return Err(refused(
                origin,
                at,
                numbered,
                format!("annotation {} differs from its earlier row", a.annotation_id),
            ));
        }
        entry.1.insert(r.sample_id);
    }
    Ok(by_id.into_values().collect())
}

fn task(r: TaskRow) -> (String, Task) {
    let task = Task {
        split: r.split,
        target: r.target,
        target_sample_id: r.target_sample_id,
        context_sample_ids: r.context_sample_ids,
        from_task: r.from_task,
        horizon: r.horizon,
        prompt: r.prompt,
        answer: r.answer,
        ..Task::new(r.task_id, TaskType::parse(&r.task_type), r.sample_ids)
    };
    (r.task_name, task)
}

fn source(r: SourceRow) -> Source {
    Source { source_id: r.source_id, name: r.name, url: r.url, license: r.license, citation: r.citation }
}

/// The annotations of the rows of `path` (annotation_id, sample_id,
/// annotation_type, key, value_str, value_num, t_start_s, t_end_s, channel:
/// one row per (annotation, sample)), each with its samples.
///
/// # Errors
/// [`Error::InvalidInput`] naming the file and line (or row) for a malformed
/// row, a missing or unknown column, or rows of one id that differ; [`Error::Io`].
pub fn read_annotation_rows(path: &Path) -> Result<Vec<(Annotation, BTreeSet<String>)>> {
    annotations(path, file_rows(path)?, numbered_rows(path))
}

/// [`read_annotation_rows`] of rows given as JSON objects; errors name `origin` and the 1-based row.
pub fn annotation_rows(origin: &str, rows: Vec<Value>) -> Result<Vec<(Annotation, BTreeSet<String>)>> {
    annotations(Path::new(origin), value_rows(origin, rows)?, false)
}

/// The tasks of the rows of `path` (task_name, task_id, task_type, split,
/// sample_ids, target, target_sample_id, context_sample_ids, from_task,
/// horizon, prompt, answer) as (task name, task).
///
/// # Errors
/// As [`read_annotation_rows`].
pub fn read_task_rows(path: &Path) -> Result<Vec<(String, Task)>> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        return Err(Error::input(
            path,
            None,
            "tasks are not read from CSV (a task's sample_ids is a list): give a .jsonl or .parquet file",
        ));
    }
    Ok(file_rows(path)?.into_iter().map(|(_, r)| task(r)).collect())
}

/// [`read_task_rows`] of rows given as JSON objects.
pub fn task_rows(origin: &str, rows: Vec<Value>) -> Result<Vec<(String, Task)>> {
    Ok(value_rows(origin, rows)?.into_iter().map(|(_, r)| task(r)).collect())
}

/// The sources of the rows of `path` (source_id, name, url, license, citation).
///
/// # Errors
/// As [`read_annotation_rows`].
pub fn read_source_rows(path: &Path) -> Result<Vec<Source>> {
    Ok(file_rows(path)?.into_iter().map(|(_, r)| source(r)).collect())
}

/// [`read_source_rows`] of rows given as JSON objects.
pub fn source_rows(origin: &str, rows: Vec<Value>) -> Result<Vec<Source>> {
    Ok(value_rows(origin, rows)?.into_iter().map(|(_, r)| source(r)).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::{Int8Type, UInt8Type};
    use arrow_array::{
        ArrayRef, DictionaryArray, Float32Array, Int64Array, LargeStringArray, ListArray, StringArray, UInt64Array,
    };
    use serde_json::json;

    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn invalid(e: Error) -> (Option<usize>, String) {
        match e {
            Error::InvalidInput { line, reason, .. } => (line, reason),
            other => panic!("not InvalidInput: {other:?}"),
        }
    }

    #[test]
    fn csv_rows_numbers_quotes_and_missing_fields_with_the_line_each_starts_on() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "a.csv",
            "annotation_id,sample_id,annotation_type,key,value_str,value_num,t_start_s\r\n\
             a1,s1,label,class,\"normal, sinus\",,\r\n\
             a2,s2,measure,hr,,72.5,1e1\r\n\
             a3,s3,note,text,\"two\nlines\",,\r\n\
             a4,s4,measure,hr,, -0 ,\t2\r\n",
        );
        let rows = json_rows(&p).unwrap();
        let want = vec![
            (
                2,
                json!({"annotation_id": "a1", "sample_id": "s1", "annotation_type": "label", "key": "class",
                       "value_str": "normal, sinus"}),
            ),
            (
                3,
                json!({"annotation_id": "a2", "sample_id": "s2", "annotation_type": "measure", "key": "hr",
                       "value_num": 72.5, "t_start_s": 10.0}),
            ),
            (
                4,
                json!({"annotation_id": "a3", "sample_id": "s3", "annotation_type": "note", "key": "text",
                       "value_str": "two\nlines"}),
            ),
            (
                6,
                json!({"annotation_id": "a4", "sample_id": "s4", "annotation_type": "measure", "key": "hr",
                       "value_num": -0.0, "t_start_s": 2.0}),
            ),
        ];
        assert_eq!(rows.into_iter().map(|(l, m)| (l, Value::Object(m))).collect::<Vec<_>>(), want);
        let annotations = read_annotation_rows(&p).unwrap();
        assert_eq!(annotations.len(), 4);
        assert_eq!(annotations[0].0.value_str.as_deref(), Some("normal, sinus"));
        assert_eq!((annotations[1].0.value_num, annotations[1].0.t_start_s), (Some(72.5), Some(10.0)));
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_row_of_json_lines_or_csv() {
        let dir = tempfile::tempdir().unwrap();
        let want = vec![(1, json!({"annotation_id": "a1", "sample_id": "s1", "annotation_type": "l", "key": "k"}))];
        for (name, body) in [
            ("a.jsonl", "\u{feff}{\"annotation_id\": \"a1\", \"sample_id\": \"s1\", \"annotation_type\": \"l\", \"key\": \"k\"}\r\n"),
            ("a.csv", "\u{feff}annotation_id,sample_id,annotation_type,key\r\na1,s1,l,k\r\n"),
        ] {
            let rows = json_rows(&write(dir.path(), name, body)).unwrap();
            let line = if name.ends_with("csv") { 2 } else { 1 };
            let got: Vec<_> = rows.into_iter().map(|(l, m)| (l + 1 - line, Value::Object(m))).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn csv_errors_name_the_line_the_column_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let head = "annotation_id,sample_id,annotation_type,key,value_num\n";
        for (body, want) in [
            ("a1,s1,m,hr,1\na2,s2,m,hr,fast\n", (Some(3), "value_num \"fast\" is not a finite number".to_string())),
            ("a1,s1,m,hr,NaN\n", (Some(2), "value_num \"NaN\" is not a finite number".to_string())),
            ("a1,s1,m,hr,inf\n", (Some(2), "value_num \"inf\" is not a finite number".to_string())),
        ] {
            let p = write(dir.path(), "e.csv", &format!("{head}{body}"));
            assert_eq!(invalid(json_rows(&p).unwrap_err()), want, "{body}");
        }
        // a column of another name: the header's line, not the first row's (review 138)
        let p = write(dir.path(), "h.csv", "annotation_id,sample_id,annotation_type,key,valu_str\nx,s1,label,c,W\n");
        let e = read_annotation_rows(&p).unwrap_err();
        let known = "`annotation_id`, `sample_id`, `annotation_type`, `key`, `value_str`, `value_num`, `t_start_s`, \
                     `t_end_s`, `channel`";
        assert_eq!(invalid(e), (Some(1), format!("unknown field `valu_str`, expected one of {known}")));
        let p = write(dir.path(), "r.csv", &format!("{head}a1,s1,m,hr,1\na2,s2,m\n"));
        assert_eq!(invalid(json_rows(&p).unwrap_err()), (Some(3), "3 fields where the header has 5".to_string()));
        let p = write(dir.path(), "u.csv", &format!("{head}a1,s1,m,hr,1,extra\n"));
        assert_eq!(invalid(json_rows(&p).unwrap_err()), (Some(2), "6 fields where the header has 5".to_string()));
        // CRLF and a lone CR end lines too: the line is the record's, not the csv crate's count
        let crlf = "annotation_id,sample_id,annotation_type,key,value_num\r\na1,s1,m,hr,1\r\n\r\na2,s2,m\r\n";
        let p = write(dir.path(), "crlf.csv", crlf);
        assert_eq!(invalid(json_rows(&p).unwrap_err()), (Some(4), "3 fields where the header has 5".to_string()));
        let cr = "annotation_id,sample_id,annotation_type,key,value_num\ra1,s1,m,hr,1\ra2,s2,m,hr,x\r";
        let p = write(dir.path(), "cr.csv", cr);
        assert_eq!(
            invalid(json_rows(&p).unwrap_err()),
            (Some(3), "value_num \"x\" is not a finite number".to_string())
        );
        let mut bytes = format!("{head}a1,s1,m,hr,1\na2,s2,").into_bytes();
        bytes.extend_from_slice(b"\xff\xfe,hr,2\n");
        let p = dir.path().join("utf8.csv");
        std::fs::write(&p, bytes).unwrap();
        assert_eq!(
            invalid(json_rows(&p).unwrap_err()),
            (Some(3), "invalid UTF-8 in column annotation_type".to_string())
        );
        match json_rows(&dir.path().join("missing.csv")).unwrap_err() {
            Error::Io { path, source } => {
                assert_eq!((path, source.kind()), (dir.path().join("missing.csv"), std::io::ErrorKind::NotFound))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_column_of_another_name_is_named_at_the_header_or_the_schema() {
        let mut row = Map::new();
        for (key, value) in [("source_id", "s"), ("name", "n"), ("urls", "x")] {
            row.insert(key.into(), Value::String(value.into()));
        }
        let why = "unknown field `urls`, expected one of `source_id`, `name`, `url`, `license`, `citation`";
        // a CSV's header is its line 1, a Parquet file's schema no row; a JSON line's keys are its own
        for (file, line) in [("x.csv", Some(1)), ("x.parquet", None), ("x.jsonl", Some(3))] {
            let rows = vec![(3, row.clone())];
            let Err(e) = typed::<SourceRow>(Path::new(file), rows, numbered_rows(Path::new(file))) else {
                panic!("{file}: taken")
            };
            assert_eq!(invalid(e), (line, why.to_string()), "{file}");
        }
    }

    #[test]
    fn parquet_cells_of_every_text_integer_and_float_typing() {
        let dict = DictionaryArray::<Int8Type>::try_new(
            vec![Some(1), None, Some(0)].into(),
            Arc::new(StringArray::from(vec!["x", "y"])),
        )
        .unwrap();
        let int_dict =
            DictionaryArray::<UInt8Type>::try_new(vec![0u8, 0, 1].into(), Arc::new(Int64Array::from(vec![7, -8])))
                .unwrap();
        let list = ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![]),
            None,
        ]);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("text", Arc::new(dict)),
            ("id", Arc::new(int_dict)),
            ("large", Arc::new(LargeStringArray::from(vec![Some("l"), Some(""), None]))),
            ("big", Arc::new(UInt64Array::from(vec![u64::MAX, 0, 1]))),
            ("f32", Arc::new(Float32Array::from(vec![Some(0.1f32), Some(f32::NAN), None]))),
            // 1.5 as IEEE half-precision bits
            (
                "f16",
                arrow_array::make_array(
                    arrow_data::ArrayData::builder(DataType::Float16)
                        .len(3)
                        .add_buffer(arrow_buffer::Buffer::from_slice_ref([0x3e00u16; 3]))
                        .build()
                        .unwrap(),
                ),
            ),
            ("list", Arc::new(list)),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut rows = Vec::new();
        batch_rows(Path::new("x.parquet"), &batch, &mut rows).unwrap();
        let got: Vec<_> = rows.into_iter().map(|(r, m)| (r, Value::Object(m))).collect();
        assert_eq!(
            got,
            vec![
                (
                    0,
                    json!({"text": "y", "id": "7", "large": "l", "big": u64::MAX, "f32": f64::from(0.1f32),
                           "f16": 1.5, "list": [1, 2]})
                ),
                (1, json!({"id": "7", "large": "", "big": 0, "f16": 1.5, "list": []})),
                (2, json!({"text": "x", "id": "-8", "big": 1, "f16": 1.5})),
            ]
        );
    }
}
