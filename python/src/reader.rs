//! `Version` (a committed version opened for reading), `open` and `verify`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_pyarrow::ToPyArrow;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;
use crate::values::to_numpy;
use crate::windows::{PyWindowPlan, PyWindows};
use crate::{core_root, json_to_py, Count};

/// A committed version opened for reading (`timef.open`).
#[pyclass(name = "Version", module = "timef._timef", frozen)]
pub struct PyVersion {
    inner: Arc<timef::reader::Version>,
}

impl PyVersion {
    /// The stored table of file `path` as a `pyarrow.Table`.
    fn table<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyAny>> {
        let v = Arc::clone(&self.inner);
        let batch = py.detach(|| v.table(path)).map_err(to_py)?;
        let schema = batch.schema().to_pyarrow(py)?;
        let batch = batch.to_pyarrow(py)?;
        py.import("pyarrow")?.getattr("Table")?.call_method1("from_batches", (vec![batch], schema))
    }
}

#[pymethods]
impl PyVersion {
    /// The version directory.
    #[getter]
    fn dir(&self) -> String {
        self.inner.dir().display().to_string()
    }

    /// The manifest (`manifest.json`) as a dict.
    #[getter]
    fn manifest(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let json = serde_json::to_string(self.inner.manifest())
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        json_to_py(py, &json)
    }

    /// sha256 (hex) of the `manifest.json` bytes.
    #[getter]
    fn manifest_sha256(&self) -> String {
        self.inner.manifest_sha256().to_string()
    }

    /// `samples.parquet` as stored.
    fn samples<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.table(py, "samples.parquet")
    }

    /// `annotations.parquet` as stored (one row per (sample, annotation)).
    fn annotations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.table(py, "annotations.parquet")
    }

    /// `time_series_index.parquet` as stored (one row per chunk).
    fn index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.table(py, "time_series_index.parquet")
    }

    /// Task names, sorted.
    fn task_names(&self) -> Vec<String> {
        self.inner.task_names()
    }

    /// `tasks/task=<task_name>/part-0.parquet` as stored.
    fn task<'py>(&self, py: Python<'py>, task_name: &str) -> PyResult<Bound<'py, PyAny>> {
        if !self.inner.task_names().iter().any(|n| n == task_name) {
            return Err(to_py(timef::Error::validation(task_name, "task_name", "no such task in this version")));
        }
        self.table(py, &format!("tasks/task={task_name}/part-0.parquet"))
    }

    /// The values of one series as a float32 array (the decoded buffer, not a copy).
    fn read_series<'py>(&self, py: Python<'py>, time_series_id: &str) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let v = Arc::clone(&self.inner);
        let values = py.detach(|| v.read_series(time_series_id)).map_err(to_py)?;
        Ok(to_numpy(py, values))
    }

    /// A sample's series restricted to its window: `{time_series_id: float32 array}`
    /// in the sample's series order.
    fn read_sample<'py>(&self, py: Python<'py>, sample_id: &str) -> PyResult<Bound<'py, PyDict>> {
        let v = Arc::clone(&self.inner);
        let series = py
            .detach(|| -> timef::Result<Vec<(String, timef::dataset::SeriesValues)>> {
                let sample = v.samples()?.into_iter().find(|s| s.sample_id == sample_id).ok_or_else(|| {
                    timef::Error::validation(sample_id, "sample_id", "no such sample in this version")
                })?;
                sample
                    .series
                    .iter()
                    .map(|r| Ok((r.time_series_id.clone(), v.read_sample_series(&sample, &r.time_series_id)?)))
                    .collect()
            })
            .map_err(to_py)?;
        let out = PyDict::new(py);
        for (id, values) in series {
            out.set_item(id, to_numpy(py, values))?;
        }
        Ok(out)
    }

    /// The selected series' chunks in index order as a `pyarrow.RecordBatchReader`
    /// (`timef::scan`): columns time_series_id, chunk_idx, value_offset, values.
    #[pyo3(signature = (*, samples = None, channels = None, task = None, split = None, threads = Count::of(0)),
           text_signature = "($self, /, *, samples=None, channels=None, task=None, split=None, threads=0)")]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        samples: Option<Vec<String>>,
        channels: Option<Vec<String>>,
        task: Option<String>,
        split: Option<String>,
        threads: Count,
    ) -> PyResult<Bound<'py, PyAny>> {
        use arrow_pyarrow::IntoPyArrow;
        use timef::scan::{scan_schema, ScanOptions};
        let threads: usize = threads.get("threads")?;
        let selection = selection(samples, channels, task, split)?;
        let v = Arc::clone(&self.inner);
        let scan = py
            .detach(|| {
                let options = ScanOptions::builder().threads(threads).try_build()?;
                timef::scan::scan(&v, &selection, &options)
            })
            .map_err(to_py)?;
        let batches = scan.map(|b| b.map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e))));
        let reader: Box<dyn arrow_array::RecordBatchReader + Send> =
            Box::new(arrow_array::RecordBatchIterator::new(batches, scan_schema()));
        reader.into_pyarrow(py)
    }

    /// The windows of `context_length + prediction_length` values at `stride`
    /// (default: the window length) over the selected series (as `scan` takes
    /// them), each series alone or with `stack_channels` the selected series of
    /// each sample stacked, shuffled with `seed` (`shuffle`) by blocks of row
    /// groups in buffers of `shuffle_buffer_row_groups` (`timef::windows`,
    /// docs/format.md §10). A plan of no window over series that hold values
    /// (each shorter than a window, `pad` off) warns (`UserWarning`).
    #[pyo3(signature = (context_length, prediction_length = Count::of(0), *, task = None, split = None, samples = None,
                        channels = None, stride = None, pad = false, stack_channels = false, shuffle = true,
                        seed = Count::of(0),
                        shuffle_buffer_row_groups = Count::of(timef::windows::DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS as i128),
                        threads = Count::of(0)),
           // help() shows the defaults (a constant's would show as `...`; test_write checks them)
           text_signature = "($self, /, context_length, prediction_length=0, *, task=None, split=None, samples=None, \
                             channels=None, stride=None, pad=False, stack_channels=False, shuffle=True, seed=0, \
                             shuffle_buffer_row_groups=8, threads=0)")]
    #[allow(clippy::too_many_arguments)]
    fn window_plan(
        &self,
        py: Python<'_>,
        context_length: Count,
        prediction_length: Count,
        task: Option<String>,
        split: Option<String>,
        samples: Option<Vec<String>>,
        channels: Option<Vec<String>>,
        stride: Option<Count>,
        pad: bool,
        stack_channels: bool,
        shuffle: bool,
        seed: Count,
        shuffle_buffer_row_groups: Count,
        threads: Count,
    ) -> PyResult<PyWindowPlan> {
        let options = timef::windows::WindowOptions {
            stride: stride.map(|s| s.get("stride")).transpose()?,
            pad,
            stack_channels,
            shuffle,
            seed: seed.get("seed")?,
            shuffle_buffer_row_groups: shuffle_buffer_row_groups.get("shuffle_buffer_row_groups")?,
            threads: threads.get("threads")?,
            ..timef::windows::WindowOptions::new(
                context_length.get("context_length")?,
                prediction_length.get("prediction_length")?,
            )
        };
        PyWindowPlan::new(py, &self.inner, selection(samples, channels, task, split)?, options)
    }

    /// The windows of `window_plan(context_length, prediction_length,
    /// **options)` (every keyword argument of `window_plan`) that rank `rank`
    /// of `world_size` takes in `epoch`, as dict batches of at most
    /// `batch_size` numpy arrays (see `WindowPlan.windows`). Raises
    /// `TimeFValidationError` (`field` the option) for `world_size` 0, `rank`
    /// not below `world_size`, `batch_size` 0, and as `window_plan`.
    #[pyo3(signature = (context_length, prediction_length = Count::of(0), *, epoch = Count::of(0), rank = Count::of(0),
                        world_size = Count::of(1), batch_size = Count::of(256), **options),
           text_signature = "($self, /, context_length, prediction_length=0, *, epoch=0, rank=0, world_size=1, \
                             batch_size=256, **options)")]
    #[allow(clippy::too_many_arguments)]
    fn windows(
        slf: &Bound<'_, Self>,
        context_length: Count,
        prediction_length: Count,
        epoch: Count,
        rank: Count,
        world_size: Count,
        batch_size: Count,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyWindows> {
        let (epoch, rank, world_size) =
            (epoch.get("epoch")?, rank.get::<usize>("rank")?, world_size.get("world_size")?);
        let batch_size = batch_size.get("batch_size")?;
        // named as given here (the plan's own check names `consumer`)
        let bad = |option, reason| to_py(timef::Error::InvalidOption { option, reason });
        if world_size == 0 {
            return Err(bad("world_size", "must be at least 1".into()));
        }
        if rank >= world_size {
            return Err(bad("rank", format!("{rank} is not below world_size {world_size}")));
        }
        let lengths: (u64, u64) = (context_length.get("context_length")?, prediction_length.get("prediction_length")?);
        let plan = slf.call_method("window_plan", lengths, options)?;
        let plan = plan.cast::<PyWindowPlan>()?;
        let share = timef::windows::Share { consumer: rank, consumers: world_size, consumed: Vec::new(), taken: 0 };
        plan.get().iter(slf.py(), epoch, share, batch_size)
    }

    /// Checks the version end to end; returns the report as a dict
    /// (`findings`: list of {file, location, check, message}; empty when conforming).
    fn verify(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        verify_at(py, self.inner.location())
    }

    /// This version as a `TimeFDataset` named `dataset_version` (the dataset's
    /// name unchanged) whose series load lazily from this version's shards:
    /// add to it and write it with `TimeFWriter` to derive a new version (whose
    /// writer copies this version's unchanged compressed `values` pages).
    fn to_dataset(&self, py: Python<'_>, dataset_version: &str) -> PyResult<crate::dataset::PyDataset> {
        let v = Arc::clone(&self.inner);
        let name = v.manifest().dataset.name.clone();
        let d = py.detach(|| v.to_dataset(&name, dataset_version)).map_err(to_py)?;
        Ok(crate::dataset::PyDataset::wrap_from(d, v))
    }

    fn __repr__(&self) -> String {
        format!("Version({:?})", self.dir())
    }
}

/// The selection of `scan`, `window_plan` and `windows`.
fn selection(
    samples: Option<Vec<String>>,
    channels: Option<Vec<String>>,
    task: Option<String>,
    split: Option<String>,
) -> PyResult<timef::scan::Selection> {
    if split.is_some() && task.is_none() {
        return Err(to_py(timef::Error::InvalidOption { option: "split", reason: "needs task".into() }));
    }
    let mut selection = timef::scan::Selection::all();
    if let Some(samples) = samples {
        selection = selection.samples(samples);
    }
    if let Some(channels) = channels {
        selection = selection.channels(channels);
    }
    if let Some(task) = task {
        selection = selection.task(task, split.as_deref());
    }
    Ok(selection)
}

fn verify_at(py: Python<'_>, loc: &timef::storage::Location) -> PyResult<Py<PyAny>> {
    let report = crate::interruptible(py, || timef::verify::verify_at(loc), |_| None)?;
    let json = serde_json::to_string(&report).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    json_to_py(py, &json)
}

/// Opens the committed version at `version_dir`.
#[pyfunction]
#[pyo3(signature = (version_dir, *, storage_options = None))]
pub fn open(
    py: Python<'_>,
    version_dir: &Bound<'_, PyAny>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<PyVersion> {
    let dir = core_root(version_dir, storage_options)?;
    let v = py.detach(|| timef::reader::Version::open_at(dir)).map_err(to_py)?;
    Ok(PyVersion { inner: Arc::new(v) })
}

/// Checks the version at `version_dir` end to end (see `Version.verify`).
#[pyfunction]
#[pyo3(signature = (version_dir, *, storage_options = None))]
pub fn verify(
    py: Python<'_>,
    version_dir: &Bound<'_, PyAny>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Py<PyAny>> {
    let dir = core_root(version_dir, storage_options)?;
    verify_at(py, &dir)
}
