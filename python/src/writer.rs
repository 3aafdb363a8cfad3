//! `TimeFWriter` (a context manager over the core writer's stage-then-commit),
//! `WriteProgressEvent`, `edit_version` and the connectors' dataset readers.
//!
//! The GIL is released while the core works; loaders and the progress callback
//! take it back one call at a time on the writing thread, so they run in the
//! writer's deterministic order and the bytes equal the CLI's. The progress hook
//! also checks for signals after every series: Ctrl-C aborts the write and
//! removes the staging directory.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use serde_json::json;
use timef::dataset::LoaderError;
use timef::writer::{StagedVersion, WriterOptions};
use timef::WriteProgressEvent;

use crate::dataset::PyDataset;
use crate::errors::to_py;
use crate::{committed_late, interruptible};
use crate::{core_root, json_to_py};
use timef::storage::Location;

/// One progress report of a write. `kind` is
/// `"started"` (`series`, `samples` set), `"series_written"` (`done`, `total`,
/// `values` set) or `"file_written"` (`path`, `bytes` set); the other fields are None.
#[pyclass(name = "WriteProgressEvent", module = "timef._timef", frozen, get_all)]
pub struct PyProgressEvent {
    /// What happened: `"started"`, `"series_written"`, `"file_written"` (or
    /// `"other"`, a kind this build does not name).
    kind: &'static str,
    /// `started`: unique series to write.
    series: Option<u64>,
    /// `started`: samples.
    samples: Option<u64>,
    /// `series_written`: series done so far.
    done: Option<u64>,
    /// `series_written`: series in all.
    total: Option<u64>,
    /// `series_written`: values of this series.
    values: Option<u64>,
    /// `file_written`: the file, relative to the version directory.
    path: Option<String>,
    /// `file_written`: its size in bytes.
    bytes: Option<u64>,
}

#[pymethods]
impl PyProgressEvent {
    fn __repr__(&self) -> String {
        let fields = [
            ("series", self.series),
            ("samples", self.samples),
            ("done", self.done),
            ("total", self.total),
            ("values", self.values),
            ("bytes", self.bytes),
        ];
        let mut parts: Vec<String> = fields.iter().filter_map(|(k, v)| v.map(|v| format!("{k}={v}"))).collect();
        if let Some(p) = &self.path {
            parts.push(format!("path={p:?}"));
        }
        format!("WriteProgressEvent({:?}, {})", self.kind, parts.join(", "))
    }
}

impl From<&WriteProgressEvent> for PyProgressEvent {
    fn from(e: &WriteProgressEvent) -> Self {
        let mut out = PyProgressEvent {
            kind: "other",
            series: None,
            samples: None,
            done: None,
            total: None,
            values: None,
            path: None,
            bytes: None,
        };
        match e {
            WriteProgressEvent::Started { series, samples } => {
                out.kind = "started";
                out.series = Some(*series);
                out.samples = Some(*samples);
            }
            WriteProgressEvent::SeriesWritten { done, total, values } => {
                out.kind = "series_written";
                out.done = Some(*done);
                out.total = Some(*total);
                out.values = Some(*values);
            }
            WriteProgressEvent::FileWritten { path, bytes } => {
                out.kind = "file_written";
                out.path = Some(path.clone());
                out.bytes = Some(*bytes);
            }
            _ => {}
        }
        out
    }
}

/// The writer options, validated by the core (`TimeFValidationError` naming the option).
pub(crate) fn writer_options(
    shard_target_bytes: u64,
    row_group_target_bytes: u64,
    chunk_max_bytes: u64,
    compression: &str,
    compression_level: i32,
) -> PyResult<WriterOptions> {
    if compression != "zstd" {
        return Err(to_py(timef::Error::InvalidOption {
            option: "compression",
            reason: format!("{compression:?}: TimeF pins zstd"),
        }));
    }
    WriterOptions::builder()
        .shard_target_bytes(shard_target_bytes)
        .row_group_target_bytes(row_group_target_bytes)
        .chunk_max_bytes(chunk_max_bytes)
        .compression_level(compression_level)
        .try_build()
        .map_err(to_py)
}

/// Serializes a `TimeFDataset` under `root` as `<root>/<name>/<version>/`;
/// committed when the `with` block exits cleanly.
#[pyclass(name = "TimeFWriter", module = "timef._timef", frozen)]
pub struct PyWriter {
    writer: timef::TimeFWriter,
    dataset: Py<PyDataset>,
    target: Location,
    staged: Mutex<Option<StagedVersion>>,
    manifest: Mutex<Option<String>>,
    copied: Mutex<Option<timef::writer::CopyStats>>,
    committed: Mutex<bool>,
}

impl PyWriter {
    fn staged(&self) -> PyResult<std::sync::MutexGuard<'_, Option<StagedVersion>>> {
        self.staged.lock().map_err(|_| PyValueError::new_err("writer lock poisoned"))
    }
}

#[pymethods]
impl PyWriter {
    #[new]
    #[pyo3(signature = (root, dataset, *,
        shard_target_bytes = timef::writer::DEFAULT_SHARD_TARGET_BYTES,
        row_group_target_bytes = timef::writer::DEFAULT_ROW_GROUP_TARGET_BYTES,
        chunk_max_bytes = timef::writer::DEFAULT_CHUNK_MAX_BYTES,
        compression = "zstd",
        compression_level = timef::writer::DEFAULT_COMPRESSION_LEVEL,
        progress_cb = None,
        storage_options = None),
        // the defaults as numbers: help() cannot print the Rust consts above (tests/test_write.py checks them)
        text_signature = "(root, dataset, *, shard_target_bytes=134217728, row_group_target_bytes=4194304, \
                          chunk_max_bytes=1048576, compression='zstd', compression_level=3, progress_cb=None, \
                          storage_options=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        root: &Bound<'_, PyAny>,
        dataset: Py<PyDataset>,
        shard_target_bytes: u64,
        row_group_target_bytes: u64,
        chunk_max_bytes: u64,
        compression: &str,
        compression_level: i32,
        progress_cb: Option<Py<PyAny>>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let root = core_root(root, storage_options)?;
        let options = writer_options(
            shard_target_bytes,
            row_group_target_bytes,
            chunk_max_bytes,
            compression,
            compression_level,
        )?;
        let (name, version) = dataset.get().name_version();
        let target = root.join(&name).join(&version);
        let base = dataset.get().base();
        let mut writer = timef::TimeFWriter::at(root, options).with_try_progress(Arc::new(
            move |e: &WriteProgressEvent| -> Result<(), LoaderError> {
                Python::attach(|py| {
                    py.check_signals()?;
                    if let Some(cb) = &progress_cb {
                        cb.call1(py, (PyProgressEvent::from(e),))?;
                    }
                    Ok(())
                })
                .map_err(|e: PyErr| Box::new(e) as LoaderError)
            },
        ));
        if let Some(base) = base {
            writer = writer.with_base(base);
        }
        Ok(PyWriter {
            writer,
            dataset,
            target,
            staged: Mutex::new(None),
            manifest: Mutex::new(None),
            copied: Mutex::new(None),
            committed: Mutex::new(false),
        })
    }

    /// The directory the version is (or will be) committed to.
    #[getter]
    fn version_dir(&self) -> String {
        self.target.to_string()
    }

    /// The manifest written by `write()`, as a dict (None before).
    #[getter]
    fn manifest(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let m = self.manifest.lock().map_err(|_| PyValueError::new_err("writer lock poisoned"))?;
        m.as_deref().map(|s| json_to_py(py, s)).transpose()
    }

    /// What `write()` took from the version the dataset was read from
    /// (`Version.to_dataset`), as a dict: `pages_copied` (`values` pages
    /// stored as the base's bytes), `pages_encoded` (compressed),
    /// `pages_decoded` (base pages decompressed), `shards_copied` (shards
    /// placed as copies of the base's files), `bytes_read` (from the base's
    /// shards). None before `write()`.
    #[getter]
    fn copied(&self) -> PyResult<Option<HashMap<&'static str, u64>>> {
        let c = self.copied.lock().map_err(|_| PyValueError::new_err("writer lock poisoned"))?;
        Ok(c.map(|c| {
            HashMap::from([
                ("pages_copied", c.pages_copied),
                ("pages_encoded", c.pages_encoded),
                ("pages_decoded", c.pages_decoded),
                ("shards_copied", c.shards_copied),
                ("bytes_read", c.bytes_read),
            ])
        }))
    }

    /// True once the version is committed.
    #[getter]
    fn committed(&self) -> bool {
        self.committed.lock().map(|c| *c).unwrap_or(false)
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let target = &slf.get().target;
        slf.py().detach(|| target.ensure_absent()).map_err(to_py)?;
        Ok(slf)
    }

    /// Writes the whole dataset into a staging directory (the GIL released while
    /// the core encodes; loaders and `progress_cb` called with it held).
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        if self.staged()?.is_some() || self.committed() {
            return Err(PyValueError::new_err("write() was already called"));
        }
        let dataset = self.dataset.get().take("TimeFWriter.write")?;
        let writer = &self.writer;
        let staged = py.detach(|| writer.write(dataset)).map_err(to_py)?;
        let json = serde_json::to_string(staged.manifest()).map_err(|e| PyValueError::new_err(e.to_string()))?;
        *self.manifest.lock().map_err(|_| PyValueError::new_err("writer lock poisoned"))? = Some(json);
        *self.copied.lock().map_err(|_| PyValueError::new_err("writer lock poisoned"))? = Some(staged.copied());
        *self.staged()? = Some(staged);
        Ok(())
    }

    /// Publishes the written version atomically and returns its directory.
    fn commit(&self, py: Python<'_>) -> PyResult<String> {
        if self.committed() {
            return Err(PyValueError::new_err(format!("{} is already committed", self.target)));
        }
        let staged =
            self.staged()?.take().ok_or_else(|| PyValueError::new_err("nothing to commit: call write() first"))?;
        let committed = || self.committed.lock().map_err(|_| PyValueError::new_err("writer lock poisoned"));
        let dir = interruptible(
            py,
            || staged.commit(),
            |dir| {
                // committed, though a Ctrl-C came too late to stop it (review 130)
                if let Ok(mut c) = committed() {
                    *c = true;
                }
                committed_late(dir)
            },
        )?;
        *committed()? = true;
        Ok(dir.display().to_string())
    }

    /// Removes the staging directory of a written, uncommitted version.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        // removing staging (or an object store's uploads) is I/O: without the GIL
        let staged = self.staged()?.take();
        py.detach(|| drop(staged));
        Ok(())
    }

    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some() {
            self.abort(py)?;
        } else if self.staged()?.is_some() {
            self.commit(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("TimeFWriter(version_dir={:?})", self.target.to_string())
    }
}

/// Python dicts (or any JSON-serializable objects) as JSON values, through `json.dumps`.
fn json_values(
    py: Python<'_>,
    origin: &str,
    id_field: &str,
    rows: &[Bound<'_, PyAny>],
) -> PyResult<Vec<serde_json::Value>> {
    let dumps = py.import("json")?.getattr("dumps")?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            refuse_non_finite(origin, i + 1, id_field, r)?;
            let text: String = dumps.call1((r,))?.extract()?;
            serde_json::from_str(&text).map_err(|e| PyValueError::new_err(e.to_string()))
        })
        .collect()
}

/// Refuses a NaN or infinite float in row `row` (a dict) of `origin`, which
/// JSON cannot carry to the row parser: for a numeric field of the rows, as
/// the core refuses it (`TimeFValidationError` naming the row's `id_field`
/// and the field, as `TimeFDataset.add_annotation` does); elsewhere a
/// malformed row (`TimeFInputError` naming the row).
fn refuse_non_finite(origin: &str, row: usize, id_field: &str, r: &Bound<'_, PyAny>) -> PyResult<()> {
    const NUMERIC: [&str; 4] = ["value_num", "t_start_s", "t_end_s", "horizon"];
    let Ok(dict) = r.cast::<pyo3::types::PyDict>() else { return Ok(()) };
    for (key, value) in dict.iter() {
        let Ok(x) = value.cast::<pyo3::types::PyFloat>().map(|f| f.value()) else { continue };
        if x.is_finite() {
            continue;
        }
        let key: String = key.str()?.extract()?;
        let e = match NUMERIC.into_iter().find(|f| *f == key) {
            Some(field) => {
                let id = dict.get_item(id_field)?.and_then(|i| i.extract::<String>().ok()).unwrap_or_default();
                timef::Error::validation(id, field, format!("{x} is not finite"))
            }
            None => timef::Error::input(std::path::Path::new(origin), Some(row), format!("{key}: {x} is not finite")),
        };
        return Err(to_py(e));
    }
    Ok(())
}

/// Writes a new version of `base_dir` with an edit applied (copy-on-write) and
/// returns its directory. With `dry_run=True` it makes every check (the
/// target's absence included), writes nothing and returns what the edit would
/// do, as `timef edit --dry-run`: a dict of sorted lists `remove_samples`,
/// `remove_tasks` and `strip_samples_from_tasks` (`[task_name, task_id]`),
/// `remove_annotations`, `remove_series`, `add_samples`, `add_series`,
/// `add_annotations`, `add_tasks`, `add_sources` (ids), and `set` (the ids of
/// `set_annotations`, `set_tasks` and `set_sources` as given, and in
/// `set_dataset` the fields of `description`, `license` and `citation` given). The datasets
/// in `add` are handed to the edit as to `TimeFWriter.write`, once the other
/// arguments are read and the edit names an operation: from there the call
/// spends them whatever its outcome, a dry run and a refused edit included (an added series that the base holds with the
/// same id and metadata has its values loaded to compare them with the
/// base's, and loaders run once), so a retry builds them again. A refused
/// edit raises `TimeFEditError` naming its blockers (docs/format.md §7), a
/// new source spelled as another's UUID or the reverse included (read
/// additions with the base's `ids=`). An edit that names no operation raises
/// `ValueError`, as the CLI refuses it.
#[pyfunction]
#[pyo3(signature = (base_dir, out_root, *, dataset_version, remove_sample_ids = Vec::new(),
                    remove_series_ids = Vec::new(), remove_channels = Vec::new(), remove_annotation_ids = Vec::new(),
                    remove_task_ids = Vec::new(), add = Vec::new(), set_annotations = Vec::new(),
                    set_tasks = Vec::new(), set_sources = Vec::new(), description = None, license = None,
                    citation = None, cascade = false, dry_run = false, storage_options = None),
          text_signature = "(base_dir, out_root, *, dataset_version, remove_sample_ids=(), remove_series_ids=(), \
                            remove_channels=(), remove_annotation_ids=(), remove_task_ids=(), add=(), \
                            set_annotations=(), set_tasks=(), set_sources=(), description=None, license=None, \
                            citation=None, cascade=False, dry_run=False, storage_options=None)")]
#[allow(clippy::too_many_arguments)]
pub fn edit_version<'py>(
    py: Python<'py>,
    base_dir: &Bound<'py, PyAny>,
    out_root: &Bound<'py, PyAny>,
    dataset_version: String,
    remove_sample_ids: Vec<String>,
    remove_series_ids: Vec<String>,
    remove_channels: Vec<String>,
    remove_annotation_ids: Vec<String>,
    remove_task_ids: Vec<String>,
    add: Vec<PyRef<'py, PyDataset>>,
    set_annotations: Vec<Bound<'py, PyAny>>,
    set_tasks: Vec<Bound<'py, PyAny>>,
    set_sources: Vec<Bound<'py, PyAny>>,
    description: Option<String>,
    license: Option<String>,
    citation: Option<String>,
    cascade: bool,
    dry_run: bool,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Py<PyAny>> {
    // the options configure whichever side is on a cloud store (both when both are)
    let options_for = |root: &Bound<'_, PyAny>| -> PyResult<Option<HashMap<String, String>>> {
        let text: std::path::PathBuf = root.extract()?;
        Ok(if timef::storage::takes_storage_options(&text.to_string_lossy()) { storage_options.clone() } else { None })
    };
    if storage_options.as_ref().is_some_and(|o| !o.is_empty())
        && options_for(base_dir)?.is_none()
        && options_for(out_root)?.is_none()
    {
        return Err(PyValueError::new_err(
            "storage_options apply to cloud object-store URLs (s3://, gs://, az://), but neither base_dir nor \
             out_root is one",
        ));
    }
    let base = core_root(base_dir, options_for(base_dir)?)?;
    let out = core_root(out_root, options_for(out_root)?)?;
    // what can be judged without the base is, before the added datasets are
    // taken (all or none), so such a mistake leaves them usable
    timef::names::validate_name(&dataset_version, "dataset_version").map_err(to_py)?;
    let set_annotations = timef::edit::annotation_rows(
        "<set_annotations>",
        json_values(py, "<set_annotations>", "annotation_id", &set_annotations)?,
    )
    .map_err(to_py)?;
    let set_tasks =
        timef::edit::task_rows("<set_tasks>", json_values(py, "<set_tasks>", "task_id", &set_tasks)?).map_err(to_py)?;
    let set_sources =
        timef::edit::source_rows("<set_sources>", json_values(py, "<set_sources>", "source_id", &set_sources)?)
            .map_err(to_py)?;
    check_rows_alone(&set_annotations, &set_tasks, &set_sources).map_err(to_py)?;
    for (i, d) in add.iter().enumerate() {
        d.check_untaken()?;
        if add[..i].iter().any(|e| e.as_ptr() == d.as_ptr()) {
            let (name, version) = d.name_version();
            return Err(PyValueError::new_err(format!("dataset {name}/{version} is given twice in add")));
        }
    }
    let mut edit = timef::edit::Edit {
        remove_sample_ids: remove_sample_ids.into_iter().collect::<BTreeSet<_>>(),
        remove_series_ids: remove_series_ids.into_iter().collect(),
        remove_channels: remove_channels.into_iter().collect(),
        remove_annotation_ids: remove_annotation_ids.into_iter().collect(),
        remove_task_ids: remove_task_ids.into_iter().collect(),
        add: Vec::new(),
        set_annotations,
        set_tasks,
        set_sources,
        description,
        license,
        citation,
        cascade: if cascade { timef::edit::Cascade::RemoveDependents } else { timef::edit::Cascade::Refuse },
        inputs: Vec::new(),
    };
    // judged before the added datasets are taken, so a mistake leaves them usable (review 148)
    if edit.is_empty() && add.iter().map(|d| d.holds_nothing()).collect::<PyResult<Vec<_>>>()?.iter().all(|&n| n) {
        let add = if add.is_empty() { "" } else { " (the datasets of add hold nothing)" };
        return Err(PyValueError::new_err(format!(
            "no operation given{add}: name at least one of remove_sample_ids, remove_series_ids, remove_channels, \
             remove_annotation_ids, remove_task_ids, add, set_annotations, set_tasks, set_sources, description, \
             license, citation (the CLI refuses the same)"
        )));
    }
    edit.add = add.iter().map(|d| d.take("edit_version (add=)")).collect::<PyResult<_>>()?;
    if dry_run {
        let set = json!({
            "set_annotations": edit.set_annotations.iter().map(|(a, _)| &a.annotation_id).collect::<Vec<_>>(),
            "set_tasks": edit.set_tasks.iter().map(|(n, t)| [n, &t.task_id]).collect::<Vec<_>>(),
            "set_sources": edit.set_sources.iter().map(|s| &s.source_id).collect::<Vec<_>>(),
            "set_dataset": edit.dataset_fields(),
        });
        let plan = interruptible(py, || timef::edit::plan_at(&base, &out, &dataset_version, edit), |_| None)?;
        return dry_run_plan(py, &plan, set);
    }
    let (dir, _plan) = interruptible(
        py,
        || timef::edit::edit_version_at(&base, &out, &dataset_version, edit),
        |(dir, _)| committed_late(dir),
    )?;
    Ok(dir.display().to_string().into_pyobject(py)?.into_any().unbind())
}

/// Refuses a row of `set_*` that breaks a rule of its own (an empty id, a
/// bad task name, a forecasting task without its target, two rows of one id
/// that differ), as the edit would, by adding them to a dataset of their own:
/// the edit adds them to the base's with the same checks.
fn check_rows_alone(
    annotations: &[(timef::Annotation, BTreeSet<String>)],
    tasks: &[(String, timef::Task)],
    sources: &[timef::Source],
) -> timef::Result<()> {
    let mut alone = timef::TimeFDataset::new("rows", "alone")?;
    for (a, samples) in annotations {
        alone.add_annotation(a.clone(), &samples.iter().cloned().collect::<Vec<_>>())?;
    }
    for (name, t) in tasks {
        alone.add_task(name, t.clone())?;
    }
    for source in sources {
        alone.add_source(source.clone())?;
    }
    Ok(())
}

/// What a dry run of [`edit_version`] returns (its doc lists the keys).
fn dry_run_plan(py: Python<'_>, plan: &timef::edit::EditPlan, set: serde_json::Value) -> PyResult<Py<PyAny>> {
    let pairs = |p: &[(String, String)]| p.iter().map(|(n, t)| [n.clone(), t.clone()]).collect::<Vec<_>>();
    let out = json!({
        "remove_samples": plan.samples,
        "remove_tasks": pairs(&plan.tasks),
        "strip_samples_from_tasks": pairs(&plan.stripped_tasks),
        "remove_annotations": plan.annotations,
        "remove_series": plan.series,
        "add_samples": plan.added_samples,
        "add_series": plan.added.series,
        "add_annotations": plan.added.annotations,
        "add_tasks": plan.added.tasks,
        "add_sources": plan.added.sources,
        "set": set,
    });
    json_to_py(py, &out.to_string())
}
