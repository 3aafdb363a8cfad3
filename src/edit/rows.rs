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
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dataset::{Annotation, Source, Task, TaskType};
use crate::error::{Error, Result};

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
/// CSV counting the header) or row number (Parquet, in the reason).
fn json_rows(path: &Path) -> Result<Vec<(usize, Map<String, Value>)>> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "jsonl" | "ndjson" | "json" => {
            let text = std::fs::read_to_string(path).map_err(io)?;
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
            let file = std::fs::File::open(path).map_err(io)?;
            let mut header = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(&file), &mut header).map_err(io)?;
            let fields: Vec<Field> = header
                .trim_end_matches(['\r', '\n'])
                .split(',')
                .map(|name| {
                    let t = if NUMERIC.contains(&name) { DataType::Float64 } else { DataType::Utf8 };
                    Field::new(name, t, true)
                })
                .collect();
            let file = std::fs::File::open(path).map_err(io)?;
            let reader = arrow_csv::ReaderBuilder::new(Arc::new(Schema::new(fields)))
                .with_header(true)
                .build(file)
                .map_err(|e| Error::input(path, None, e.to_string()))?;
            let mut rows = Vec::new();
            for batch in reader {
                let batch = batch.map_err(|e| Error::input(path, None, e.to_string()))?;
                batch_rows(path, &batch, &mut rows)?;
            }
            // line numbers: the header is line 1
            Ok(rows.into_iter().map(|(i, m)| (i + 1, m)).collect())
        }
        _ => Err(Error::input(path, None, "expected a .jsonl, .ndjson, .json, .parquet or .csv file")),
    }
}

/// Appends `batch`'s rows as JSON objects, numbered on from `rows.len() + 1`.
fn batch_rows(path: &Path, batch: &RecordBatch, rows: &mut Vec<(usize, Map<String, Value>)>) -> Result<()> {
    let first = rows.len();
    for r in 0..batch.num_rows() {
        rows.push((first + r + 1, Map::new()));
    }
    for (field, col) in batch.schema().fields().iter().zip(batch.columns()) {
        for r in 0..batch.num_rows() {
            let v = cell(path, col.as_ref(), r)?;
            if !v.is_null() {
                rows[first + r].1.insert(field.name().clone(), v);
            }
        }
    }
    Ok(())
}

/// Row `r` of `col` as JSON: text, numbers, and lists of them.
fn cell(path: &Path, col: &dyn Array, r: usize) -> Result<Value> {
    if col.is_null(r) {
        return Ok(Value::Null);
    }
    let cast =
        |t: &DataType| arrow_cast::cast(&col.slice(r, 1), t).map_err(|e| Error::input(path, None, e.to_string()));
    Ok(match col.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Dictionary(..) => {
            Value::String(cast(&DataType::Utf8)?.as_string::<i32>().value(0).to_string())
        }
        DataType::List(_) => {
            let items = col.as_list::<i32>().value(r);
            Value::Array((0..items.len()).map(|i| cell(path, items.as_ref(), i)).collect::<Result<_>>()?)
        }
        DataType::LargeList(_) => {
            let items = col.as_list::<i64>().value(r);
            Value::Array((0..items.len()).map(|i| cell(path, items.as_ref(), i)).collect::<Result<_>>()?)
        }
        t if t.is_integer() => {
            Value::from(cast(&DataType::Int64)?.as_primitive::<arrow_array::types::Int64Type>().value(0))
        }
        t if t.is_floating() => serde_json::Number::from_f64(
            cast(&DataType::Float64)?.as_primitive::<arrow_array::types::Float64Type>().value(0),
        )
        .map(Value::Number)
        .unwrap_or(Value::Null),
        t => return Err(Error::input(path, None, format!("a column of type {t} is not read"))),
    })
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
        .map(|(line, m)| {
            serde_json::from_value(Value::Object(m)).map(|t| (line, t)).map_err(|e| {
                if numbered_rows {
                    Error::input(origin, None, format!("row {line}: {e}"))
                } else {
                    Error::input(origin, Some(line), e.to_string())
                }
            })
        })
        .collect()
}

/// The rows of `path` (see the module doc), each as `T`.
fn file_rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<(usize, T)>> {
    let parquet = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
    typed(path, json_rows(path)?, parquet)
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
fn annotations(origin: &Path, rows: Vec<(usize, AnnotationRow)>) -> Result<Vec<(Annotation, BTreeSet<String>)>> {
    let mut by_id: BTreeMap<String, (Annotation, BTreeSet<String>)> = BTreeMap::new();
    for (line, r) in rows {
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
            return Err(Error::input(
                origin,
                Some(line),
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
    annotations(path, file_rows(path)?)
}

/// [`read_annotation_rows`] of rows given as JSON objects; errors name `origin` and the 1-based row.
pub fn annotation_rows(origin: &str, rows: Vec<Value>) -> Result<Vec<(Annotation, BTreeSet<String>)>> {
    annotations(Path::new(origin), value_rows(origin, rows)?)
}

/// The tasks of the rows of `path` (task_name, task_id, task_type, split,
/// sample_ids, target, target_sample_id, context_sample_ids, from_task,
/// horizon, prompt, answer) as (task name, task).
///
/// # Errors
/// As [`read_annotation_rows`].
pub fn read_task_rows(path: &Path) -> Result<Vec<(String, Task)>> {
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
