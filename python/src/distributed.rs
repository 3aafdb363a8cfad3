//! The three steps of a distributed write for any framework (Ray, Dask, Spark,
//! a job queue): `plan` on the coordinator (one pass over the rows, no value
//! kept; a `DistributedWrite` that owns the staging), `split_parts` and
//! `write_part` on workers, `DistributedWrite.commit` on the coordinator
//! (`docs/format.md` §1, "Distributed writes").
//!
//! Only Arrow tables and small JSON records cross the boundary: every connector
//! rule (typings, missing values, ids) and every byte is the core's. `PartTask`,
//! `PartRouter` and `PartRecord` pickle as their JSON, so any framework ships
//! them; `DistributedWrite` does not pickle (it holds the staging's lock). The
//! GIL is released while the core checks, encodes, hashes or does I/O.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::RecordBatch;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};
use serde_json::{json, Value};
use timef::connectors::arrow::{self as connector, ArrowOptions};
use timef::connectors::{IdMode, OnMissing};
use timef::distributed::{DistributedWrite, PartRecord, PartTask};
use timef::storage::{StagingRef, StorageOptions};

use crate::errors::to_py;
use crate::writer::writer_options;
use crate::{core_root, id_mode, json_to_py, on_missing};

/// The record batches of `source` (anything exporting `__arrow_c_stream__`:
/// a pyarrow Table or RecordBatchReader, a polars DataFrame, ...).
fn batches(source: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    if !source.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "expected an Arrow table (an object with __arrow_c_stream__), got {}",
            source.get_type().name()?
        )));
    }
    let reader = RecordBatchStreamReader::from_pyarrow_bound(source)?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The batches of every table of `sources`, in order.
fn all_batches(sources: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    let mut out = Vec::new();
    for source in sources.try_iter()? {
        out.extend(batches(&source?)?);
    }
    Ok(out)
}

/// `batches` as a `pyarrow.Table` of `schema`'s columns.
fn to_table(py: Python<'_>, batches: Vec<RecordBatch>, schema: arrow_schema::SchemaRef) -> PyResult<Py<PyAny>> {
    let list = PyList::empty(py);
    for b in &batches {
        list.append(b.to_pyarrow(py)?)?;
    }
    let pa = py.import("pyarrow")?;
    let schema = schema.as_ref().to_pyarrow(py)?;
    Ok(pa.getattr("Table")?.call_method1("from_batches", (list, schema))?.unbind())
}

fn id_mode_name(ids: IdMode) -> &'static str {
    match ids {
        IdMode::Uuid => "uuid",
        _ => "string",
    }
}

fn on_missing_name(m: OnMissing) -> &'static str {
    match m {
        OnMissing::DropCase => "drop_case",
        _ => "error",
    }
}

/// The connector options as they travel beside a task or router (JSON).
fn connector_json(o: &ArrowOptions) -> Value {
    json!({
        "name": o.name,
        "version": o.version,
        "spec_type": o.spec_type,
        "sampling_rate_hz": o.sampling_rate_hz,
        "ids": id_mode_name(o.ids),
        "on_missing": on_missing_name(o.on_missing),
    })
}

fn connector_from_json(v: &Value, what: &str) -> PyResult<ArrowOptions> {
    let bad = || PyValueError::new_err(format!("not a valid {what}: bad \"connector\""));
    let text = |k: &str| v.get(k).and_then(Value::as_str).ok_or_else(bad);
    Ok(ArrowOptions {
        name: text("name")?.to_string(),
        version: text("version")?.to_string(),
        spec_type: v.get("spec_type").and_then(Value::as_str).map(str::to_string),
        sampling_rate_hz: v.get("sampling_rate_hz").and_then(Value::as_f64),
        ids: id_mode(text("ids")?)?,
        on_missing: on_missing(text("on_missing")?)?,
    })
}

/// Parses `{"<key>": ..., "connector": ...}` written by a `json` getter below.
fn parse_wrapped(text: &str, key: &str, what: &str) -> PyResult<(Value, ArrowOptions)> {
    let mut doc: Value =
        serde_json::from_str(text).map_err(|e| PyValueError::new_err(format!("not a valid {what}: {e}")))?;
    let inner = doc
        .get_mut(key)
        .map(Value::take)
        .ok_or_else(|| PyValueError::new_err(format!("not a valid {what}: no {key:?} member")))?;
    let connector = connector_from_json(doc.get("connector").unwrap_or(&Value::Null), what)?;
    Ok((inner, connector))
}

/// One part of a distributed write as a worker needs it: its shards, the
/// series they hold, where to write, the options (picklable as its JSON).
#[pyclass(name = "PartTask", module = "timef._timef", frozen)]
pub struct PyPartTask {
    task: PartTask,
    connector: ArrowOptions,
}

#[pymethods]
impl PyPartTask {
    /// The task from its `json` (raises `ValueError` for anything else).
    #[new]
    fn new(json: &str) -> PyResult<Self> {
        let (task, connector) = parse_wrapped(json, "task", "PartTask")?;
        let task = PartTask::from_json(&task.to_string()).map_err(to_py)?;
        Ok(PyPartTask { task, connector })
    }

    /// The task as JSON (what pickling stores).
    #[getter]
    fn json(&self) -> String {
        let task: Value = serde_json::from_str(&self.task.to_json()).unwrap_or(Value::Null);
        json!({"task": task, "connector": connector_json(&self.connector)}).to_string()
    }

    /// The part number (0-based).
    #[getter]
    fn part(&self) -> u32 {
        self.task.part
    }

    /// The id of the write the part belongs to.
    #[getter]
    fn write_id(&self) -> &str {
        &self.task.write_id
    }

    /// The shard numbers the part writes (consecutive).
    #[getter]
    fn shards(&self) -> Vec<u32> {
        self.task.shards.iter().map(|s| s.shard).collect()
    }

    /// The ids of the series the part's shards hold (in write order).
    #[getter]
    fn time_series_ids(&self) -> Vec<String> {
        self.task.series.iter().map(|s| s.meta.time_series_id.clone()).collect()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let json = slf.get().json();
        PyTuple::new(slf.py(), [slf.get_type().into_any(), PyTuple::new(slf.py(), [json])?.into_any()])
    }

    fn __repr__(&self) -> String {
        format!("PartTask(write_id={:?}, part={}, shards={:?})", self.task.write_id, self.task.part, self.shards())
    }
}

/// What a worker reports of a written part: its shard files (path, bytes,
/// rows, sha256) and index rows with partial statistics (picklable as its JSON).
#[pyclass(name = "PartRecord", module = "timef._timef", frozen)]
pub struct PyPartRecord {
    record: PartRecord,
}

#[pymethods]
impl PyPartRecord {
    /// The record from its `json` (raises `TimeFInputError` for anything else).
    #[new]
    fn new(json: &str) -> PyResult<Self> {
        Ok(PyPartRecord { record: PartRecord::from_json(json).map_err(to_py)? })
    }

    /// The record as JSON (what pickling stores).
    #[getter]
    fn json(&self) -> String {
        self.record.to_json()
    }

    /// The part number.
    #[getter]
    fn part(&self) -> u32 {
        self.record.part
    }

    /// The id of the write.
    #[getter]
    fn write_id(&self) -> &str {
        &self.record.write_id
    }

    /// The shard files written, as dicts `path`, `bytes`, `rows`, `sha256`, in shard order.
    #[getter]
    fn files(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let files = serde_json::to_string(&self.record.files).map_err(|e| PyValueError::new_err(e.to_string()))?;
        json_to_py(py, &files)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let json = slf.get().json();
        PyTuple::new(slf.py(), [slf.get_type().into_any(), PyTuple::new(slf.py(), [json])?.into_any()])
    }

    fn __repr__(&self) -> String {
        let paths: Vec<&str> = self.record.files.iter().map(|f| f.path.as_str()).collect();
        format!("PartRecord(write_id={:?}, part={}, files={paths:?})", self.record.write_id, self.record.part)
    }
}

/// Which parts need each series of a write (picklable as its JSON): what a
/// worker splits rows by (`split_parts`).
#[pyclass(name = "PartRouter", module = "timef._timef", frozen)]
pub struct PyPartRouter {
    parts: BTreeMap<String, Vec<u32>>,
    connector: ArrowOptions,
}

#[pymethods]
impl PyPartRouter {
    /// The router from its `json` (raises `ValueError` for anything else).
    #[new]
    fn new(json: &str) -> PyResult<Self> {
        let (parts, connector) = parse_wrapped(json, "parts", "PartRouter")?;
        let parts =
            serde_json::from_value(parts).map_err(|e| PyValueError::new_err(format!("not a valid PartRouter: {e}")))?;
        Ok(PyPartRouter { parts, connector })
    }

    /// The router as JSON (what pickling stores).
    #[getter]
    fn json(&self) -> String {
        json!({"parts": self.parts, "connector": connector_json(&self.connector)}).to_string()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let json = slf.get().json();
        PyTuple::new(slf.py(), [slf.get_type().into_any(), PyTuple::new(slf.py(), [json])?.into_any()])
    }

    fn __repr__(&self) -> String {
        format!("PartRouter(series={})", self.parts.len())
    }
}

/// A distributed write on its coordinator, from plan to commit: owns the
/// version's staging (a local lock or an object-store claim). Leaving its
/// `with` block without a commit, `abort()`, or losing the object removes the
/// staging and every part. Not picklable.
#[pyclass(name = "DistributedWrite", module = "timef._timef", frozen)]
pub struct PyDistributedWrite {
    write: Mutex<Option<DistributedWrite>>,
    connector: ArrowOptions,
    version_dir: String,
    write_id: String,
}

impl PyDistributedWrite {
    fn with_write<T>(&self, f: impl FnOnce(&DistributedWrite) -> T) -> PyResult<T> {
        let g = self.write.lock().map_err(|_| PyValueError::new_err("write lock poisoned"))?;
        g.as_ref().map(f).ok_or_else(|| {
            PyValueError::new_err(format!("distributed write {} was already committed or aborted", self.write_id))
        })
    }

    fn take(&self) -> PyResult<Option<DistributedWrite>> {
        Ok(self.write.lock().map_err(|_| PyValueError::new_err("write lock poisoned"))?.take())
    }
}

#[pymethods]
impl PyDistributedWrite {
    /// The id of the write (it names the staging).
    #[getter]
    fn write_id(&self) -> &str {
        &self.write_id
    }

    /// The directory or URL the version is committed to.
    #[getter]
    fn version_dir(&self) -> &str {
        &self.version_dir
    }

    /// One `PartTask` per part, in part order (parts with no shard left out).
    fn tasks(&self) -> PyResult<Vec<PyPartTask>> {
        let connector = &self.connector;
        self.with_write(|w| {
            w.part_tasks()
                .into_iter()
                .filter(|t| !t.shards.is_empty())
                .map(|task| PyPartTask { task, connector: connector.clone() })
                .collect()
        })
    }

    /// The `PartRouter` workers split rows with.
    #[getter]
    fn router(&self) -> PyResult<PyPartRouter> {
        let connector = self.connector.clone();
        self.with_write(|w| PyPartRouter { parts: w.plan_ref().router().into_iter().collect(), connector })
    }

    /// Checks every planned shard against `records` (present once, sha256 and
    /// size of the staged file, index rows), writes the tables and manifest,
    /// publishes the version and returns its directory or URL. On any error the
    /// staging and every part are removed: `PartRecordError`, `FileExistsError`
    /// (another writer committed the version first), `OSError`.
    fn commit(&self, py: Python<'_>, records: Vec<PyRef<'_, PyPartRecord>>) -> PyResult<String> {
        let records: Vec<PartRecord> = records.iter().map(|r| r.record.clone()).collect();
        let write = self.take()?.ok_or_else(|| {
            PyValueError::new_err(format!("distributed write {} was already committed or aborted", self.write_id))
        })?;
        let dir = crate::interruptible(py, || write.commit(&records), |dir| crate::committed_late(dir))?;
        Ok(dir.display().to_string())
    }

    /// Removes the staging and every part (no-op once committed or aborted).
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let write = self.take()?;
        py.detach(|| drop(write));
        Ok(())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type, _exc_value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.abort(py)?;
        Ok(false)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "a DistributedWrite stays on the coordinator (it owns the staging); ship its tasks() and router",
        ))
    }

    fn __repr__(&self) -> String {
        format!("DistributedWrite(write_id={:?}, version_dir={:?})", self.write_id, self.version_dir)
    }
}

#[allow(clippy::too_many_arguments)]
fn arrow_options(
    dataset_name: String,
    dataset_version: String,
    spec_type: Option<String>,
    sampling_rate_hz: Option<f64>,
    ids: &str,
    on_missing_value: &str,
) -> PyResult<ArrowOptions> {
    Ok(ArrowOptions {
        name: dataset_name,
        version: dataset_version,
        spec_type,
        sampling_rate_hz,
        ids: id_mode(ids)?,
        on_missing: on_missing(on_missing_value)?,
    })
}

/// Plans a distributed write of the GluonTS-style rows of `tables` (an
/// iterable of Arrow tables, read one at a time; no value is kept) as the
/// version `<root>/<dataset_name>/<dataset_version>`, and claims the version.
#[pyfunction]
#[pyo3(signature = (root, tables, *, label = None, dataset_name, dataset_version, parts, spec_type = None,
                    sampling_rate_hz = None, ids = "string", on_missing = "error",
                    shard_target_bytes = timef::writer::DEFAULT_SHARD_TARGET_BYTES,
                    row_group_target_bytes = timef::writer::DEFAULT_ROW_GROUP_TARGET_BYTES,
                    chunk_max_bytes = timef::writer::DEFAULT_CHUNK_MAX_BYTES,
                    compression = "zstd",
                    compression_level = timef::writer::DEFAULT_COMPRESSION_LEVEL,
                    storage_options = None),
          text_signature = "(root, tables, *, label=None, dataset_name, dataset_version, parts, spec_type=None, \
                            sampling_rate_hz=None, ids='string', on_missing='error', shard_target_bytes=134217728, \
                            row_group_target_bytes=4194304, chunk_max_bytes=1048576, compression='zstd', \
                            compression_level=3, storage_options=None)")]
#[allow(clippy::too_many_arguments)]
pub fn plan(
    py: Python<'_>,
    root: &Bound<'_, PyAny>,
    tables: &Bound<'_, PyAny>,
    label: Option<String>,
    dataset_name: String,
    dataset_version: String,
    parts: u32,
    spec_type: Option<String>,
    sampling_rate_hz: Option<f64>,
    ids: &str,
    on_missing: &str,
    shard_target_bytes: u64,
    row_group_target_bytes: u64,
    chunk_max_bytes: u64,
    compression: &str,
    compression_level: i32,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<PyDistributedWrite> {
    let root = core_root(root, storage_options)?;
    let options =
        writer_options(shard_target_bytes, row_group_target_bytes, chunk_max_bytes, compression, compression_level)?;
    let connector = arrow_options(dataset_name, dataset_version, spec_type, sampling_rate_hz, ids, on_missing)?;
    let version_dir = root.join(&connector.name).join(&connector.version).to_string();
    let label = PathBuf::from(label.unwrap_or_else(|| "<tables>".to_string()));
    let mut pass = connector::ArrowMetaPass::new(&label, &connector).map_err(to_py)?;
    // one table at a time: its values are checked and counted, then dropped
    for table in tables.try_iter()? {
        let input = batches(&table?)?;
        py.detach(|| input.iter().try_for_each(|b| pass.batch(b))).map_err(to_py)?;
    }
    let write = py
        .detach(|| -> timef::Result<DistributedWrite> {
            let (input, _dropped) = pass.finish()?;
            DistributedWrite::plan(&root, input, options, parts)
        })
        .map_err(to_py)?;
    let write_id = write.write_id().to_string();
    Ok(PyDistributedWrite { write: Mutex::new(Some(write)), connector, version_dir, write_id })
}

/// The rows of `source` by the part(s) that need them (a row whose series span
/// two parts goes to both): `{part: pyarrow.Table}`, parts without rows left out.
#[pyfunction]
pub fn split_parts(py: Python<'_>, source: &Bound<'_, PyAny>, router: PyRef<'_, PyPartRouter>) -> PyResult<Py<PyDict>> {
    let input = batches(source)?;
    let (routes, opts) = (&router.parts, &router.connector);
    let split = py
        .detach(|| -> timef::Result<BTreeMap<u32, Vec<RecordBatch>>> {
            let mut out: BTreeMap<u32, Vec<RecordBatch>> = BTreeMap::new();
            for b in &input {
                let ids = connector::arrow_series_ids(b, Path::new("<split_parts>"), opts)?;
                let rows = ids.iter().map(|series| {
                    let mut parts: Vec<u32> =
                        series.iter().flat_map(|id| routes.get(id).into_iter().flatten().copied()).collect();
                    parts.sort_unstable();
                    parts.dedup();
                    parts
                });
                let mut by_part: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
                for (row, parts) in rows.enumerate() {
                    for p in parts {
                        by_part.entry(p).or_default().push(row as u32);
                    }
                }
                for (p, rows) in by_part {
                    let indices = arrow_array::UInt32Array::from(rows);
                    let taken = arrow_select::take::take_record_batch(b, &indices)
                        .map_err(|e| timef::Error::Arrow { path: PathBuf::from("<split_parts>"), source: e })?;
                    out.entry(p).or_default().push(taken);
                }
            }
            Ok(out)
        })
        .map_err(to_py)?;
    let schema = match input.first() {
        Some(b) => b.schema(),
        None => return Ok(PyDict::new(py).unbind()),
    };
    let dict = PyDict::new(py);
    for (p, batches) in split {
        dict.set_item(p, to_table(py, batches, schema.clone())?)?;
    }
    Ok(dict.unbind())
}

/// Writes the part `task` from `sources` (Arrow tables holding at least the
/// rows of its series; others are refused) into the write's staging and returns
/// its `PartRecord`. Writing a task again writes the same bytes.
#[pyfunction]
#[pyo3(signature = (task, sources, *, storage_options = None))]
pub fn write_part(
    py: Python<'_>,
    task: PyRef<'_, PyPartTask>,
    sources: &Bound<'_, PyAny>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<PyPartRecord> {
    let input = all_batches(sources)?;
    let options: StorageOptions = storage_options.unwrap_or_default().into_iter().collect();
    let (task, opts) = (&task.task, &task.connector);
    let place = match &task.staging {
        StagingRef::Local { dir } => dir.to_string_lossy().into_owned(),
        StagingRef::Object { url } => url.clone(),
    };
    crate::refuse_options_without_settings(&place, &options)?;
    let record = py
        .detach(|| -> timef::Result<PartRecord> {
            let label = PathBuf::from(format!("<part {}>", task.part));
            let series = connector::arrow_part_series(&input, &label, opts, task)?;
            timef::distributed::write_part(task, series, &options)
        })
        .map_err(to_py)?;
    Ok(PyPartRecord { record })
}
