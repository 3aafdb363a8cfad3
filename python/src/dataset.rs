//! `TimeFDataset`: the core's in-memory dataset, built from Python.
//!
//! Every `add_*` validates through the core (`TimeFValidationError` naming the
//! id and field). Series values are given up front (viewed, not copied) or by a
//! loader: a zero-argument callable the writer calls once per unique series, in
//! its `(spec_type, channel, time_series_id)` order, with the GIL held.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use timef::dataset::{LoaderError, SeriesValues};
use timef::{Annotation, Sample, SeriesMeta, SeriesRef, Source, Task, TaskType};

use crate::errors::to_py;
use crate::values::to_values;

/// A dataset version before it is written.
#[pyclass(name = "TimeFDataset", module = "timef._timef", frozen)]
pub struct PyDataset {
    inner: Mutex<Option<timef::TimeFDataset>>,
    /// What took the dataset out (`TimeFWriter.write`, `edit_version`), for
    /// the error of a later use.
    taken_by: std::sync::OnceLock<&'static str>,
    name: String,
    version: String,
    /// The version `Version.to_dataset` read this dataset from: its writer's base.
    base: Option<Arc<timef::reader::Version>>,
}

/// A loader calling the Python callable `f` with the GIL held; its exception
/// travels through the core unchanged, and what it returns that is not values
/// (`None`, a 2-d array) is a `TimeFValidationError` naming series `id`.
fn py_loader(id: String, f: Py<PyAny>) -> timef::Loader {
    Box::new(move || -> Result<SeriesValues, LoaderError> {
        Python::attach(|py| {
            let out = f.bind(py).call0()?;
            if out.is_none() {
                return Err(to_py(timef::Error::validation(&id, "values", "the loader returned None, not its values")));
            }
            series_values(py, &id, &out)
        })
        .map_err(|e| Box::new(e) as LoaderError)
    })
}

/// [`to_values`] of series `id`'s values; its `ValueError`, `TypeError` or
/// `OverflowError` (not one-dimensional, a refused dtype, not numbers, too large)
/// becomes a `TimeFValidationError` with `id` the series and `field` `"values"`.
fn series_values(py: Python<'_>, id: &str, obj: &Bound<'_, PyAny>) -> PyResult<SeriesValues> {
    to_values(obj).map_err(|e| {
        if e.is_instance_of::<PyValueError>(py)
            || e.is_instance_of::<PyTypeError>(py)
            || e.is_instance_of::<PyOverflowError>(py)
        {
            to_py(timef::Error::validation(id, "values", e.value(py).to_string()))
        } else {
            e
        }
    })
}

impl PyDataset {
    /// Wraps a dataset built by the core (a connector's).
    pub fn wrap(d: timef::TimeFDataset) -> Self {
        let (name, version) = (d.info.name.clone(), d.info.version.clone());
        PyDataset { inner: Mutex::new(Some(d)), taken_by: std::sync::OnceLock::new(), name, version, base: None }
    }

    /// Wraps `base.to_dataset(..)`: a writer of it copies `base`'s unchanged
    /// `values` pages (`TimeFWriter::with_base`).
    pub fn wrap_from(d: timef::TimeFDataset, base: Arc<timef::reader::Version>) -> Self {
        PyDataset { base: Some(base), ..Self::wrap(d) }
    }

    /// The version this dataset was read from, if any.
    pub fn base(&self) -> Option<Arc<timef::reader::Version>> {
        self.base.clone()
    }

    /// Locks the dataset; `ValueError` naming what took it once it was taken.
    fn lock(&self) -> PyResult<MutexGuard<'_, Option<timef::TimeFDataset>>> {
        let g = self.inner.lock().map_err(|_| PyValueError::new_err("dataset lock poisoned"))?;
        if g.is_none() {
            let by = self.taken_by.get().copied().unwrap_or("a writer");
            return Err(PyValueError::new_err(format!(
                "dataset {}/{} was already handed to {by} (its loaders run once): build it again",
                self.name, self.version
            )));
        }
        Ok(g)
    }

    fn with<T>(&self, f: impl FnOnce(&mut timef::TimeFDataset) -> timef::Result<T>) -> PyResult<T> {
        let mut g = self.lock()?;
        match g.as_mut() {
            Some(d) => f(d).map_err(to_py),
            None => Err(PyValueError::new_err("dataset was already written")),
        }
    }

    /// `ValueError` naming what took the dataset, once one did.
    pub fn check_untaken(&self) -> PyResult<()> {
        self.lock().map(drop)
    }

    /// True when the dataset holds nothing (`TimeFDataset::is_empty`), or
    /// `ValueError` once taken.
    pub fn holds_nothing(&self) -> PyResult<bool> {
        Ok(self.lock()?.as_ref().is_none_or(timef::TimeFDataset::is_empty))
    }

    /// Takes the dataset out for `by` (a writer, an edit); later uses raise
    /// `ValueError` naming `by`.
    pub fn take(&self, by: &'static str) -> PyResult<timef::TimeFDataset> {
        let d = self.lock()?.take().ok_or_else(|| PyValueError::new_err("dataset was already written"))?;
        let _ = self.taken_by.set(by);
        Ok(d)
    }

    /// `<name>/<version>`, the dataset's place under a root.
    pub fn name_version(&self) -> (String, String) {
        (self.name.clone(), self.version.clone())
    }
}

fn id_or_new(id: Option<String>) -> String {
    id.unwrap_or_else(timef::new_id)
}

#[pymethods]
impl PyDataset {
    #[new]
    #[pyo3(signature = (dataset_name, dataset_version, *, description=None, license=None, citation=None))]
    fn new(
        dataset_name: String,
        dataset_version: String,
        description: Option<String>,
        license: Option<String>,
        citation: Option<String>,
    ) -> PyResult<Self> {
        let mut d = timef::TimeFDataset::new(dataset_name, dataset_version).map_err(to_py)?;
        d.info.description = description;
        d.info.license = license;
        d.info.citation = citation;
        Ok(Self::wrap(d))
    }

    /// The dataset's name: a path component (1-128 characters of `[A-Za-z0-9._-]`, not starting with `.`).
    #[getter]
    fn dataset_name(&self) -> String {
        self.name.clone()
    }

    /// The version's name: a path component, as `dataset_name`.
    #[getter]
    fn dataset_version(&self) -> String {
        self.version.clone()
    }

    /// Adds where samples come from (`name`, `url`, `license`, `citation`: free
    /// text) and returns its id (`source_id`, a new UUIDv7 when `None`).
    /// Raises `TimeFValidationError` naming the id and field: an empty id, or
    /// the same id added before with other fields.
    #[pyo3(signature = (*, source_id=None, name=String::new(), url=None, license=None, citation=None),
           text_signature = "($self, /, *, source_id=None, name='', url=None, license=None, citation=None)")]
    fn add_source(
        &self,
        source_id: Option<String>,
        name: String,
        url: Option<String>,
        license: Option<String>,
        citation: Option<String>,
    ) -> PyResult<String> {
        let source_id = id_or_new(source_id);
        let s = Source { source_id: source_id.clone(), name, url, license, citation };
        self.with(|d| d.add_source(s))?;
        Ok(source_id)
    }

    /// Adds one time series and returns its id (`time_series_id`, a new UUIDv7
    /// when `None`): exactly one of `values` (a 1-D array or sequence of
    /// numbers, float32 on disk; viewed without a copy when float32 and
    /// contiguous: do not change it until the write ends) or `loader` (a
    /// zero-argument callable returning such values, called once, lazily,
    /// while writing, with the GIL held). `sampling_rate_hz` in Hz, finite and
    /// > 0; `t_start_s` (default 0.0) and `t_end_s` in seconds on the series'
    /// axis; with `t_end_s`, `len(values) == round((t_end_s - t_start_s) *
    /// sampling_rate_hz)`. The same id with equal metadata is kept once (the
    /// first values or loader win). Values must be non-empty and finite
    /// (checked while writing). Raises `TimeFValidationError` with `id` the
    /// series and `field` the field (`"values"` for values refused here:
    /// not 1-D numbers, null, or not exactly float32), `TypeError` for a
    /// `loader` that is not callable, `ValueError` unless exactly one of
    /// `values` and `loader` is given.
    #[pyo3(signature = (*, time_series_id=None, spec_type, channel, sampling_rate_hz, values=None, loader=None,
                        units=None, t_start_s=0.0, t_end_s=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_series(
        &self,
        time_series_id: Option<String>,
        spec_type: String,
        channel: String,
        sampling_rate_hz: f64,
        values: Option<&Bound<'_, PyAny>>,
        loader: Option<&Bound<'_, PyAny>>,
        units: Option<String>,
        t_start_s: f64,
        t_end_s: Option<f64>,
    ) -> PyResult<String> {
        let time_series_id = id_or_new(time_series_id);
        let loader: timef::Loader = match (values, loader) {
            (Some(v), None) => {
                let v = series_values(v.py(), &time_series_id, v)?;
                Box::new(move || Ok(v))
            }
            (None, Some(f)) if f.is_callable() => py_loader(time_series_id.clone(), f.clone().unbind()),
            (None, Some(_)) => return Err(PyTypeError::new_err("loader must be a zero-argument callable")),
            _ => return Err(PyValueError::new_err("give exactly one of values= or loader=")),
        };
        let meta = SeriesMeta {
            time_series_id: time_series_id.clone(),
            spec_type,
            channel,
            units,
            sampling_rate_hz,
            t_start_s,
            t_end_s,
        };
        self.with(|d| d.add_series(meta, loader))?;
        Ok(time_series_id)
    }

    /// Adds a sample over one or more series and returns its id (`sample_id`,
    /// a new UUIDv7 when `None`): `series` holds ids (view `"main"`) or
    /// `(time_series_id, view)` pairs; `t_start_s`/`t_end_s` are the sample's
    /// bounds in seconds on the series' axis (`t_end_s >= t_start_s`);
    /// `metadata` maps strings to strings. Raises `TimeFValidationError`
    /// naming the sample and field (empty ids, no series, bounds not finite or
    /// reversed, the same id added before with other content), `TypeError`
    /// for a `series` entry that is neither form. References are checked when
    /// the dataset is written.
    #[pyo3(signature = (*, sample_id=None, source_id, series, subject_id=None, t_start_s=None, t_end_s=None,
                        metadata=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_sample(
        &self,
        sample_id: Option<String>,
        source_id: String,
        series: &Bound<'_, PyAny>,
        subject_id: Option<String>,
        t_start_s: Option<f64>,
        t_end_s: Option<f64>,
        metadata: Option<BTreeMap<String, String>>,
    ) -> PyResult<String> {
        let sample_id = id_or_new(sample_id);
        let mut refs = Vec::new();
        for item in series.try_iter()? {
            let item = item?;
            let r = if let Ok(id) = item.extract::<String>() {
                SeriesRef { time_series_id: id, view: "main".into() }
            } else if let Ok((id, view)) = item.extract::<(String, String)>() {
                SeriesRef { time_series_id: id, view }
            } else {
                return Err(PyTypeError::new_err(
                    "series entries are a time_series_id or a (time_series_id, view) pair",
                ));
            };
            refs.push(r);
        }
        let s = Sample {
            sample_id: sample_id.clone(),
            source_id,
            subject_id,
            t_start_s,
            t_end_s,
            series: refs,
            metadata: metadata.unwrap_or_default(),
        };
        self.with(|d| d.add_sample(s))?;
        Ok(sample_id)
    }

    /// Attaches an annotation (`annotation_type` and `key` non-empty; a value
    /// `value_str` and/or `value_num`; `t_start_s`/`t_end_s` in seconds on the
    /// series' axis; `channel` it concerns, if one) to the samples
    /// `sample_ids` and returns its id (`annotation_id`, a new UUIDv7 when
    /// `None`). The same id again attaches it to more samples; its fields must
    /// then be equal. Raises `TimeFValidationError` naming the annotation and
    /// field: empty id, type or key, a non-finite number, `t_end_s` before
    /// `t_start_s`, no sample, or fields that differ from the same id's.
    #[pyo3(signature = (*, annotation_id=None, sample_ids, annotation_type, key, value_str=None, value_num=None,
                        t_start_s=None, t_end_s=None, channel=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_annotation(
        &self,
        annotation_id: Option<String>,
        sample_ids: Vec<String>,
        annotation_type: String,
        key: String,
        value_str: Option<String>,
        value_num: Option<f64>,
        t_start_s: Option<f64>,
        t_end_s: Option<f64>,
        channel: Option<String>,
    ) -> PyResult<String> {
        let annotation_id = id_or_new(annotation_id);
        let a = Annotation {
            annotation_id: annotation_id.clone(),
            annotation_type,
            key,
            value_str,
            value_num,
            t_start_s,
            t_end_s,
            channel,
        };
        self.with(|d| d.add_annotation(a, &sample_ids))?;
        Ok(annotation_id)
    }

    /// Adds a task under `task_name` (a path component: the tasks file's name)
    /// and returns its id (`task_id`, a new UUIDv7 when `None`). `task_type`:
    /// `classification`, `regression`, `forecasting` (needs `target_sample_id`
    /// and `context_sample_ids`), `qa` or any other name; `split` names the
    /// split (e.g. `train`); the other fields are stored as given (the tasks
    /// files of docs/format.md §3). Raises `TimeFValidationError` naming the
    /// task and field: an empty id, a bad `task_name`, no sample, a
    /// forecasting task without its target or context samples, or the same id
    /// added before with other content or under another task name.
    #[pyo3(signature = (task_name, *, task_id=None, task_type, sample_ids, split=None, target=None,
                        target_sample_id=None, context_sample_ids=None, from_task=None, horizon=None, prompt=None,
                        answer=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_task(
        &self,
        task_name: &str,
        task_id: Option<String>,
        task_type: &str,
        sample_ids: Vec<String>,
        split: Option<String>,
        target: Option<String>,
        target_sample_id: Option<String>,
        context_sample_ids: Option<Vec<String>>,
        from_task: Option<String>,
        horizon: Option<i32>,
        prompt: Option<String>,
        answer: Option<String>,
    ) -> PyResult<String> {
        let task_id = id_or_new(task_id);
        let t = Task {
            task_id: task_id.clone(),
            task_type: TaskType::parse(task_type),
            split,
            sample_ids,
            target,
            target_sample_id,
            context_sample_ids,
            from_task,
            horizon,
            prompt,
            answer,
        };
        self.with(|d| d.add_task(task_name, t))?;
        Ok(task_id)
    }

    /// Subject ids of the samples, sorted, each once.
    #[getter]
    fn subjects(&self) -> PyResult<Vec<String>> {
        self.with(|d| {
            let s: std::collections::BTreeSet<String> = d.samples().filter_map(|s| s.subject_id.clone()).collect();
            Ok(s.into_iter().collect())
        })
    }

    /// Sample ids, sorted.
    #[getter]
    fn sample_ids(&self) -> PyResult<Vec<String>> {
        self.with(|d| Ok(d.samples().map(|s| s.sample_id.clone()).collect()))
    }

    /// Time series ids, sorted.
    #[getter]
    fn time_series_ids(&self) -> PyResult<Vec<String>> {
        self.with(|d| Ok(d.series().map(|s| s.time_series_id.clone()).collect()))
    }

    /// Source ids, sorted.
    #[getter]
    fn source_ids(&self) -> PyResult<Vec<String>> {
        self.with(|d| Ok(d.sources().map(|s| s.source_id.clone()).collect()))
    }

    fn __repr__(&self) -> String {
        format!("TimeFDataset({:?}, {:?})", self.name, self.version)
    }
}
