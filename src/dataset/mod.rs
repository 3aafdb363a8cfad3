//! The in-memory dataset model that a [`crate::writer::TimeFWriter`] serializes.
//!
//! Entities follow FORMAT-BRIEF §3 (samples, time series, annotations, tasks,
//! sources). Intrinsic rules are checked when an entity is inserted and fail with
//! [`Error::Validation`] naming the id and field; cross-entity rules (every reference
//! resolves) are checked by [`TimeFDataset::validate_references`], which the writer
//! calls before any I/O. Every iteration is sorted by id, so the output never
//! depends on insertion order.

pub(crate) mod columns;
pub(crate) mod merge;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use columns::{SampleColumns, SeriesColumns};

/// Error type a series loader may return.
pub type LoaderError = Box<dyn std::error::Error + Send + Sync>;

/// One series' float32 values: immutable, reference counted and cheaply sliced
/// (an Arrow `ScalarBuffer`), so a connector can hand out values it already holds,
/// e.g. in a memory-mapped Arrow file, without a copy. `Vec<f32>` converts with `.into()`.
pub type SeriesValues = arrow_buffer::ScalarBuffer<f32>;

/// Produces one series' float32 values. Runs at most once (seed, "Streaming and chunking").
pub type Loader = Box<dyn FnOnce() -> std::result::Result<SeriesValues, LoaderError> + Send>;

/// A new UUIDv7 id in canonical form (lowercase 8-4-4-4-12 hex), time ordered so
/// that sorting by id clusters by creation time (seed, "Id storage").
pub fn new_id() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

/// True when `s` is a canonical UUID string: lowercase hex in 8-4-4-4-12 groups
/// (FORMAT-BRIEF §2; an uppercase or unhyphenated UUID is not canonical).
pub fn is_canonical_uuid(s: &str) -> bool {
    // of the forms `try_parse` takes (simple, braced, urn, any case) only the
    // hyphenated one is 36 characters long
    s.len() == 36 && !s.bytes().any(|b| b.is_ascii_uppercase()) && uuid::Uuid::try_parse(s).is_ok()
}

pub use crate::names::validate_name;

fn non_empty(id: &str, field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() {
        Err(Error::validation(id, field, "must not be empty"))
    } else {
        Ok(())
    }
}

fn finite_opt(id: &str, field: &'static str, v: Option<f64>) -> Result<()> {
    match v {
        Some(x) if !x.is_finite() => Err(Error::validation(id, field, format!("{x} is not finite"))),
        _ => Ok(()),
    }
}

/// Name, version and descriptive fields of a dataset (manifest `dataset` block).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DatasetInfo {
    /// Path component `<dataset_name>`.
    pub name: String,
    /// Path component `<dataset_version>`.
    pub version: String,
    /// Free text.
    pub description: Option<String>,
    /// License identifier or text.
    pub license: Option<String>,
    /// How to cite the dataset.
    pub citation: Option<String>,
}

/// Where samples come from (manifest `sources`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Source {
    /// Id in the `source_id` space.
    pub source_id: String,
    /// Human-readable name.
    pub name: String,
    /// Where the source can be found.
    pub url: Option<String>,
    /// The source's license.
    pub license: Option<String>,
    /// How to cite the source.
    pub citation: Option<String>,
}

/// Series-level metadata: one row of the index per chunk repeats it (FORMAT-BRIEF §3).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SeriesMeta {
    /// Id in the `time_series_id` space.
    pub time_series_id: String,
    /// Signal kind, e.g. `ecg`, `accelerometer`, `unknown`.
    pub spec_type: String,
    /// Channel (lead, axis, dimension) within the spec type.
    pub channel: String,
    /// Physical units of the values, if known.
    pub units: Option<String>,
    /// Samples per second; finite and > 0.
    pub sampling_rate_hz: f64,
    /// Start in seconds (epoch seconds with wall-clock time, else 0-based).
    pub t_start_s: f64,
    /// End in seconds when known; then `len == round((t_end_s - t_start_s) * sampling_rate_hz)`.
    pub t_end_s: Option<f64>,
}

impl SeriesMeta {
    /// A series with no units, starting at 0 s, end unknown.
    pub fn new(
        time_series_id: impl Into<String>,
        spec_type: impl Into<String>,
        channel: impl Into<String>,
        sampling_rate_hz: f64,
    ) -> Self {
        SeriesMeta {
            time_series_id: time_series_id.into(),
            spec_type: spec_type.into(),
            channel: channel.into(),
            units: None,
            sampling_rate_hz,
            t_start_s: 0.0,
            t_end_s: None,
        }
    }

    fn validate(&self) -> Result<()> {
        let id = &self.time_series_id;
        non_empty(id, "time_series_id", id)?;
        non_empty(id, "spec_type", &self.spec_type)?;
        non_empty(id, "channel", &self.channel)?;
        if !(self.sampling_rate_hz.is_finite() && self.sampling_rate_hz > 0.0) {
            return Err(Error::validation(
                id,
                "sampling_rate_hz",
                format!("must be finite and > 0, got {}", self.sampling_rate_hz),
            ));
        }
        finite_opt(id, "t_start_s", Some(self.t_start_s))?;
        finite_opt(id, "t_end_s", self.t_end_s)
    }
}

/// One entry of a sample's `series` list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeriesRef {
    /// The referenced series.
    pub time_series_id: String,
    /// The role the series plays in the sample (categorical, e.g. `main`).
    pub view: String,
}

/// One sample: a window over one or more series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sample {
    /// Id in the `sample_id` space.
    pub sample_id: String,
    /// Id in the `source_id` space; must name a source of the dataset.
    pub source_id: String,
    /// Id in the `subject_id` space, if known.
    pub subject_id: Option<String>,
    /// Window start in seconds on the series' time axis, if not the whole series.
    pub t_start_s: Option<f64>,
    /// Window end in seconds, if not the whole series.
    pub t_end_s: Option<f64>,
    /// At least one series.
    pub series: Vec<SeriesRef>,
    /// Free key/value metadata; `None` and empty are stored as null.
    pub metadata: BTreeMap<String, String>,
}

/// One annotation; attachable to several samples (stored once per sample).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Annotation {
    /// Id in the `annotation_id` space.
    pub annotation_id: String,
    /// Kind: `label`, `event`, `text`, `number`, ...
    pub annotation_type: String,
    /// What is annotated, e.g. `class`, `target`.
    pub key: String,
    /// Text value.
    pub value_str: Option<String>,
    /// Numeric value.
    pub value_num: Option<f64>,
    /// Event start in seconds.
    pub t_start_s: Option<f64>,
    /// Event end in seconds.
    pub t_end_s: Option<f64>,
    /// Channel the annotation is about.
    pub channel: Option<String>,
}

/// What a task asks for (categorical `task_type`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskType {
    /// Predict a class label.
    Classification,
    /// Predict a number.
    Regression,
    /// Predict the continuation of a series; needs `target_sample_id` and `context_sample_ids`.
    Forecasting,
    /// Question answering (`prompt`, `answer`).
    Qa,
    /// Any other kind, by name.
    Other(String),
}

impl TaskType {
    /// The stored name.
    pub fn as_str(&self) -> &str {
        match self {
            TaskType::Classification => "classification",
            TaskType::Regression => "regression",
            TaskType::Forecasting => "forecasting",
            TaskType::Qa => "qa",
            TaskType::Other(s) => s,
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> TaskType {
        match s {
            "classification" => TaskType::Classification,
            "regression" => TaskType::Regression,
            "forecasting" => TaskType::Forecasting,
            "qa" => TaskType::Qa,
            other => TaskType::Other(other.to_string()),
        }
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task row (FORMAT-BRIEF §3, `tasks/task=<name>/part-0.parquet`).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Id in the `task_id` space (unique across all task names).
    pub task_id: String,
    /// What the task asks for.
    pub task_type: TaskType,
    /// `train`, `val`, `test`, ...
    pub split: Option<String>,
    /// At least one sample.
    pub sample_ids: Vec<String>,
    /// Annotation key or variable the task predicts.
    pub target: Option<String>,
    /// Forecasting: the sample to predict (required there).
    pub target_sample_id: Option<String>,
    /// Forecasting: the samples to predict from (required and non-empty there).
    pub context_sample_ids: Option<Vec<String>>,
    /// The task this one derives from.
    pub from_task: Option<String>,
    /// Forecasting horizon in values.
    pub horizon: Option<i32>,
    /// QA prompt.
    pub prompt: Option<String>,
    /// QA answer.
    pub answer: Option<String>,
}

impl Task {
    /// A task of `task_type` over `sample_ids` with every optional field unset.
    pub fn new(task_id: impl Into<String>, task_type: TaskType, sample_ids: Vec<String>) -> Self {
        Task {
            task_id: task_id.into(),
            task_type,
            split: None,
            sample_ids,
            target: None,
            target_sample_id: None,
            context_sample_ids: None,
            from_task: None,
            horizon: None,
            prompt: None,
            answer: None,
        }
    }

    fn validate(&self) -> Result<()> {
        let id = &self.task_id;
        non_empty(id, "task_id", id)?;
        if self.sample_ids.is_empty() {
            return Err(Error::validation(id, "sample_ids", "a task needs at least one sample"));
        }
        if self.task_type == TaskType::Forecasting {
            if self.target_sample_id.is_none() {
                return Err(Error::validation(id, "target_sample_id", "a forecasting task needs a target sample"));
            }
            if self.context_sample_ids.as_ref().is_none_or(|c| c.is_empty()) {
                return Err(Error::validation(id, "context_sample_ids", "a forecasting task needs context samples"));
            }
        }
        Ok(())
    }

    /// Every sample id the task references (sample_ids, target, context), in that order.
    pub fn referenced_samples(&self) -> impl Iterator<Item = &String> {
        self.sample_ids.iter().chain(self.target_sample_id.iter()).chain(self.context_sample_ids.iter().flatten())
    }
}

/// Where a series' values come from until the writer takes them.
pub(crate) enum ValuesSource {
    /// Values already held (a zero-copy slice, or values a connector decoded).
    Ready(SeriesValues),
    /// `len` values at value offset `offset` of the dataset's store `store`.
    Stored { store: u32, offset: u64, len: u64 },
    /// A loader that runs once.
    Load(Loader),
    /// The values the version whose manifest has sha256 `manifest_sha256`
    /// holds for this series, read by `loader` (`Version::to_dataset`): a
    /// writer whose base is that version copies them from its shards without
    /// running the loader (`TimeFWriter::with_base`). The version is named by
    /// its manifest's hash, not held, so the dataset sits below the reader.
    Version { manifest_sha256: Arc<str>, loader: Loader },
    /// Already taken.
    Taken,
}

impl ValuesSource {
    /// The values as a loader (`stores` are the dataset's); `None` once taken.
    pub(crate) fn into_loader(self, stores: &[Arc<dyn ValuesStore>]) -> Option<Loader> {
        match self {
            ValuesSource::Ready(v) => Some(Box::new(move || Ok(v))),
            ValuesSource::Stored { store, offset, len } => {
                let store = Arc::clone(stores.get(store as usize)?);
                Some(Box::new(move || store.values(offset, len)))
            }
            ValuesSource::Load(loader) | ValuesSource::Version { loader, .. } => Some(loader),
            ValuesSource::Taken => None,
        }
    }
}

/// Values held for many series by a connector (e.g. a memory-mapped input),
/// handed out one series at a time ([`TimeFDataset::add_series_stored`]).
pub(crate) trait ValuesStore: Send + Sync {
    /// `len` values at value offset `offset`.
    fn values(&self, offset: u64, len: u64) -> std::result::Result<SeriesValues, LoaderError>;

    /// Whether every value this store hands out was found finite when its
    /// series was added (its connector checked each series as it read it):
    /// the writer then does not scan them again as they load. Should the
    /// store's bytes change meanwhile, the chunk's statistics are not finite
    /// and the writer refuses the series when its row group is encoded
    /// (`shards::build_row_group`), with the same error.
    fn checked_finite(&self) -> bool;
}

/// A whole dataset version before it is written.
///
/// Insert entities with the `add_*` methods; each validates the entity's own
/// fields and refuses a second entity with the same id and different content.
/// Series and samples are stored column by column (module `dataset::columns`), so a dataset
/// of millions of series costs tens of bytes a series; the iterators hand out
/// owned rows, sorted by id.
#[derive(Default)]
pub struct TimeFDataset {
    /// Name, version, description.
    pub info: DatasetInfo,
    pub(crate) sources: BTreeMap<String, Source>,
    pub(crate) samples: SampleColumns,
    /// Series metadata, shared read-only with the writer's encoders.
    pub(crate) series: Arc<SeriesColumns>,
    /// Each series' values, by series row.
    pub(crate) values: Vec<ValuesSource>,
    pub(crate) stores: Vec<Arc<dyn ValuesStore>>,
    /// annotation id -> (annotation, the samples it is attached to)
    pub(crate) annotations: BTreeMap<String, (Annotation, BTreeSet<String>)>,
    /// task name -> task id -> task
    pub(crate) tasks: BTreeMap<String, BTreeMap<String, Task>>,
}

impl fmt::Debug for TimeFDataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeFDataset")
            .field("info", &self.info)
            .field("sources", &self.sources.len())
            .field("samples", &self.samples.len())
            .field("series", &self.series.len())
            .field("annotations", &self.annotations.len())
            .field("tasks", &self.tasks.len())
            .finish()
    }
}

/// Most series or samples one dataset holds (rows are `u32`, and a sample
/// names a series by row below bit 31).
pub const MAX_ROWS: usize = 1 << 31;

impl TimeFDataset {
    /// An empty dataset named `name` at `version`; both are validated path components.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Result<Self> {
        let info = DatasetInfo { name: name.into(), version: version.into(), ..Default::default() };
        validate_name(&info.name, "dataset_name")?;
        validate_name(&info.version, "dataset_version")?;
        Ok(TimeFDataset { info, ..Default::default() })
    }

    /// Adds a source; an equal duplicate is ignored, a different one is an error.
    pub fn add_source(&mut self, source: Source) -> Result<()> {
        non_empty(&source.source_id, "source_id", &source.source_id)?;
        insert_unique(&mut self.sources, source.source_id.clone(), source, "source_id")
    }

    /// Sets the source of id `source.source_id`, adding it or replacing the
    /// one held (its samples keep naming it); returns the one replaced.
    ///
    /// # Errors
    /// [`Error::Validation`] for an empty `source_id`.
    pub fn set_source(&mut self, source: Source) -> Result<Option<Source>> {
        non_empty(&source.source_id, "source_id", &source.source_id)?;
        Ok(self.sources.insert(source.source_id.clone(), source))
    }

    /// Adds a series and its loader. The same id with equal metadata is deduplicated
    /// (the first loader is kept, so each unique series loads once); with different
    /// metadata it is an error.
    ///
    /// # Errors
    /// [`Error::Validation`] naming the id and field.
    pub fn add_series(&mut self, meta: SeriesMeta, loader: Loader) -> Result<()> {
        self.insert_series(meta, ValuesSource::Load(loader))
    }

    /// Adds a series whose values are already held (no loader to run), as
    /// [`TimeFDataset::add_series`].
    ///
    /// # Errors
    /// As [`TimeFDataset::add_series`].
    pub fn add_series_values(&mut self, meta: SeriesMeta, values: SeriesValues) -> Result<()> {
        self.insert_series(meta, ValuesSource::Ready(values))
    }

    /// Registers a store of values for [`TimeFDataset::add_series_stored`]; returns its number.
    pub(crate) fn add_store(&mut self, store: Arc<dyn ValuesStore>) -> u32 {
        self.stores.push(store);
        self.stores.len() as u32 - 1
    }

    /// Adds a series whose `len` values lie at value offset `offset` of store `store`.
    pub(crate) fn add_series_stored(&mut self, meta: SeriesMeta, store: u32, offset: u64, len: u64) -> Result<()> {
        self.insert_series(meta, ValuesSource::Stored { store, offset, len })
    }

    /// Adds a series whose values `loader` reads from the version whose
    /// manifest has sha256 `manifest_sha256` ([`ValuesSource::Version`]).
    pub(crate) fn add_series_of(&mut self, meta: SeriesMeta, manifest_sha256: Arc<str>, loader: Loader) -> Result<()> {
        self.insert_series(meta, ValuesSource::Version { manifest_sha256, loader })
    }

    fn insert_series(&mut self, meta: SeriesMeta, values: ValuesSource) -> Result<()> {
        meta.validate()?;
        match self.series.ids.find(&meta.time_series_id) {
            Some(row) if self.series.equals(row as usize, &meta) => Ok(()),
            Some(_) => {
                Err(Error::validation(&meta.time_series_id, "time_series_id", "added twice with different metadata"))
            }
            None if self.series.len() >= MAX_ROWS => {
                Err(Error::validation(&meta.time_series_id, "time_series_id", "a dataset holds at most 2^31 series"))
            }
            None => {
                Arc::make_mut(&mut self.series).push(&meta);
                self.values.push(values);
                Ok(())
            }
        }
    }

    /// Takes the values of series row `row` (they are handed out once).
    pub(crate) fn take_values(&mut self, row: usize) -> std::result::Result<SeriesValues, LoaderError> {
        match std::mem::replace(&mut self.values[row], ValuesSource::Taken) {
            ValuesSource::Ready(v) => Ok(v),
            ValuesSource::Stored { store, offset, len } => match self.stores.get(store as usize) {
                Some(s) => s.values(offset, len),
                None => Err(format!("no values store {store}").into()),
            },
            ValuesSource::Load(loader) | ValuesSource::Version { loader, .. } => loader(),
            ValuesSource::Taken => Err("the loader already ran".into()),
        }
    }

    /// Whether series row `row`'s values come from a store whose values were
    /// found finite as they were stored ([`ValuesStore::checked_finite`]).
    pub(crate) fn values_checked_finite(&self, row: usize) -> bool {
        match self.values[row] {
            ValuesSource::Stored { store, .. } => self.stores.get(store as usize).is_some_and(|s| s.checked_finite()),
            _ => false,
        }
    }

    /// Whether series row `row`'s values are those the version whose manifest
    /// has sha256 `manifest_sha256` holds for it (added by `to_dataset` of it).
    pub(crate) fn values_of(&self, row: usize, manifest_sha256: &str) -> bool {
        matches!(&self.values[row], ValuesSource::Version { manifest_sha256: m, .. } if &**m == manifest_sha256)
    }

    /// Takes the loader of series `time_series_id` out of the dataset (it runs at
    /// most once; the writer then refuses the dataset). For tests and tools that
    /// need a series' values without writing.
    pub fn take_loader(&mut self, time_series_id: &str) -> Option<Loader> {
        let row = self.series.ids.find(time_series_id)? as usize;
        std::mem::replace(&mut self.values[row], ValuesSource::Taken).into_loader(&self.stores)
    }

    /// Adds a sample (at least one series entry; window bounds finite and
    /// ordered). The same id with equal content is ignored.
    ///
    /// # Errors
    /// [`Error::Validation`] naming the sample and field, or a different sample with the same id.
    pub fn add_sample(&mut self, sample: Sample) -> Result<()> {
        let id = &sample.sample_id;
        non_empty(id, "sample_id", id)?;
        non_empty(id, "source_id", &sample.source_id)?;
        if sample.series.is_empty() {
            return Err(Error::validation(id, "series", "a sample needs at least one series"));
        }
        for r in &sample.series {
            non_empty(id, "series.time_series_id", &r.time_series_id)?;
            non_empty(id, "series.view", &r.view)?;
        }
        finite_opt(id, "t_start_s", sample.t_start_s)?;
        finite_opt(id, "t_end_s", sample.t_end_s)?;
        if let (Some(a), Some(b)) = (sample.t_start_s, sample.t_end_s) {
            if b < a {
                return Err(Error::validation(id, "t_end_s", format!("{b} is before t_start_s {a}")));
            }
        }
        match self.samples.ids.find(id) {
            Some(row) if self.samples.sample(row as usize, &self.series) == sample => Ok(()),
            Some(_) => Err(Error::validation(id, "sample_id", "added twice with different content")),
            None if self.samples.len() >= MAX_ROWS => {
                Err(Error::validation(id, "sample_id", "a dataset holds at most 2^31 samples"))
            }
            None if self.samples.pending_len().saturating_add(sample.series.len()) >= MAX_ROWS => {
                Err(Error::validation(id, "series", "a dataset holds at most 2^31 references to series not added yet"))
            }
            None => {
                self.samples.push(&sample, &self.series);
                Ok(())
            }
        }
    }

    /// Attaches `annotation` to `sample_ids`. Adding the same annotation id again
    /// attaches it to more samples; its fields must then be equal.
    ///
    /// # Errors
    /// [`Error::Validation`] naming the annotation: an empty id, type or key, a
    /// non-finite number, a `t_end_s` before its `t_start_s`, no sample, or
    /// fields that differ from the same id added before.
    pub fn add_annotation(&mut self, annotation: Annotation, sample_ids: &[String]) -> Result<()> {
        let id = &annotation.annotation_id;
        non_empty(id, "annotation_id", id)?;
        non_empty(id, "annotation_type", &annotation.annotation_type)?;
        non_empty(id, "key", &annotation.key)?;
        finite_opt(id, "value_num", annotation.value_num)?;
        finite_opt(id, "t_start_s", annotation.t_start_s)?;
        finite_opt(id, "t_end_s", annotation.t_end_s)?;
        // an event ends at or after its start, as a sample's window does
        if let (Some(a), Some(b)) = (annotation.t_start_s, annotation.t_end_s) {
            if b < a {
                return Err(Error::validation(id, "t_end_s", format!("{b} is before t_start_s {a}")));
            }
        }
        if sample_ids.is_empty() {
            return Err(Error::validation(id, "sample_ids", "an annotation needs at least one sample"));
        }
        let entry = self
            .annotations
            .entry(annotation.annotation_id.clone())
            .or_insert_with(|| (annotation.clone(), BTreeSet::new()));
        if entry.0 != annotation {
            return Err(Error::validation(id, "annotation_id", "shared annotation differs between samples"));
        }
        entry.1.extend(sample_ids.iter().cloned());
        Ok(())
    }

    /// Adds a task under `task_name` (a validated path component). Task ids are
    /// unique across task names.
    pub fn add_task(&mut self, task_name: &str, task: Task) -> Result<()> {
        validate_name(task_name, "task_name")?;
        task.validate()?;
        for (name, tasks) in &self.tasks {
            if let Some(existing) = tasks.get(&task.task_id) {
                if name != task_name || existing != &task {
                    return Err(Error::validation(&task.task_id, "task_id", "added twice with different content"));
                }
                return Ok(());
            }
        }
        self.tasks.entry(task_name.to_string()).or_default().insert(task.task_id.clone(), task);
        Ok(())
    }

    /// Sources, sorted by id.
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.sources.values()
    }
    /// Samples, sorted by id (each built from the columns as it is handed out).
    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        self.samples.ids.by_id().into_iter().map(move |r| self.samples.sample(r as usize, &self.series))
    }
    /// Series metadata, sorted by id (each built from the columns as it is handed out).
    pub fn series(&self) -> impl Iterator<Item = SeriesMeta> + '_ {
        self.series.ids.by_id().into_iter().map(move |r| self.series.meta(r as usize))
    }
    /// True when the dataset holds no source, series, sample, annotation or
    /// task (its `info` aside).
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
            && self.series.len() == 0
            && self.samples.len() == 0
            && self.annotations.is_empty()
            && self.tasks.is_empty()
    }
    /// Number of samples.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }
    /// Number of series.
    pub fn series_count(&self) -> usize {
        self.series.len()
    }
    /// The sample `sample_id`, if the dataset holds it.
    pub fn sample(&self, sample_id: &str) -> Option<Sample> {
        self.samples.ids.find(sample_id).map(|r| self.samples.sample(r as usize, &self.series))
    }
    /// True when the dataset holds sample `sample_id`.
    pub fn contains_sample(&self, sample_id: &str) -> bool {
        self.samples.ids.find(sample_id).is_some()
    }
    /// True when the dataset holds series `time_series_id`.
    pub fn contains_series(&self, time_series_id: &str) -> bool {
        self.series.ids.find(time_series_id).is_some()
    }
    /// The metadata of series `time_series_id`, if the dataset holds it.
    pub fn series_meta(&self, time_series_id: &str) -> Option<SeriesMeta> {
        self.series.ids.find(time_series_id).map(|r| self.series.meta(r as usize))
    }
    /// Annotations with the samples they are attached to, sorted by annotation id.
    pub fn annotations(&self) -> impl Iterator<Item = (&Annotation, &BTreeSet<String>)> {
        self.annotations.values().map(|(a, s)| (a, s))
    }
    /// Tasks as (task name, task), sorted by name then task id.
    pub fn tasks(&self) -> impl Iterator<Item = (&str, &Task)> {
        self.tasks.iter().flat_map(|(n, ts)| ts.values().map(move |t| (n.as_str(), t)))
    }

    /// Frees the id indexes (lookups by id then scan): the writer needs none
    /// once the references are checked.
    pub(crate) fn release_indexes(&mut self) {
        Arc::make_mut(&mut self.series).ids.release_index();
        self.samples.ids.release_index();
    }

    /// Keeps the samples `keep_sample` accepts (by id), drops from the kept
    /// samples' series lists the series `keep_series` rejects (by id), and
    /// drops every series no kept sample then references; returns the dropped
    /// series' ids, sorted. A kept sample left with no series is the caller's
    /// to refuse first (the edit does, `docs/format.md` §7).
    pub(crate) fn retain(
        &mut self,
        keep_sample: impl Fn(&str) -> bool,
        keep_series: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let kept: Vec<bool> = self.samples.ids().map(&keep_sample).collect();
        let mut referenced = vec![false; self.series.len()];
        for row in (0..self.samples.len()).filter(|&r| kept[r]) {
            for k in self.samples.refs_of(row) {
                if let Some(s) = self.samples.ref_row(k, &self.series) {
                    referenced[s as usize] |= keep_series(self.series.id(s as usize));
                }
            }
        }
        let (series, remap) = self.series.retain(&referenced);
        self.samples = self.samples.retain(&kept, &self.series, &series, &keep_series);
        let mut dropped: Vec<String> =
            (0..remap.len()).filter(|&r| remap[r] == u32::MAX).map(|r| self.series.id(r).to_string()).collect();
        dropped.sort();
        let mut values = std::mem::take(&mut self.values);
        self.values = (0..values.len())
            .filter(|&r| referenced[r])
            .map(|r| std::mem::replace(&mut values[r], ValuesSource::Taken))
            .collect();
        self.series = Arc::new(series);
        dropped
    }

    /// Checks the dataset as a whole: it has at least one sample, samples name
    /// known sources and series, annotations known samples, tasks known samples
    /// and tasks, and every stored series is referenced by a sample. Called by
    /// the writer before any I/O.
    pub fn validate_references(&self) -> Result<()> {
        if self.samples.len() == 0 {
            return Err(Error::validation(&self.info.name, "samples", "a version needs at least one sample"));
        }
        // one pass in storage order; only when something is wrong are the
        // offenders sorted, so the error names the first by id, as ever
        let mut referenced = vec![false; self.series.len()];
        let mut bad: Vec<u32> = Vec::new();
        for s in 0..self.samples.len() {
            let mut ok = self.sources.contains_key(self.samples.source_id(s));
            for k in self.samples.refs_of(s) {
                match self.samples.ref_row(k, &self.series) {
                    Some(r) => referenced[r as usize] = true,
                    None => ok = false,
                }
            }
            if !ok {
                bad.push(s as u32);
            }
        }
        if let Some(s) = bad.into_iter().min_by(|&a, &b| self.samples.id(a as usize).cmp(self.samples.id(b as usize))) {
            let (s, id) = (s as usize, self.samples.id(s as usize));
            let source = self.samples.source_id(s);
            if !self.sources.contains_key(source) {
                return Err(Error::validation(id, "source_id", format!("unknown source {source}")));
            }
            if let Some(k) = self.samples.refs_of(s).find(|&k| self.samples.ref_row(k, &self.series).is_none()) {
                let unknown = self.samples.ref_id(k, &self.series);
                return Err(Error::validation(id, "series", format!("unknown series {unknown}")));
            }
        }
        let orphan = (0..self.series.len())
            .filter(|&r| !referenced[r])
            .min_by(|&a, &b| self.series.id(a).cmp(self.series.id(b)));
        if let Some(orphan) = orphan {
            return Err(Error::validation(self.series.id(orphan), "time_series_id", "series referenced by no sample"));
        }
        for (a, samples) in self.annotations.values() {
            if let Some(s) = samples.iter().find(|s| !self.contains_sample(s)) {
                return Err(Error::validation(&a.annotation_id, "sample_id", format!("unknown sample {s}")));
            }
        }
        let task_ids: BTreeSet<&String> = self.tasks.values().flat_map(|t| t.keys()).collect();
        for (_, t) in self.tasks() {
            if let Some(s) = t.referenced_samples().find(|s| !self.contains_sample(s)) {
                return Err(Error::validation(&t.task_id, "sample_ids", format!("unknown sample {s}")));
            }
            if let Some(f) = &t.from_task {
                if !task_ids.contains(f) {
                    return Err(Error::validation(&t.task_id, "from_task", format!("unknown task {f}")));
                }
            }
        }
        Ok(())
    }
}

fn insert_unique<T: PartialEq>(map: &mut BTreeMap<String, T>, id: String, value: T, what: &'static str) -> Result<()> {
    match map.get(&id) {
        Some(existing) if *existing == value => Ok(()),
        Some(_) => Err(Error::validation(id, what, "added twice with different content")),
        None => {
            map.insert(id, value);
            Ok(())
        }
    }
}

/// Channels a refusal of an unknown channel lists at most.
const CHANNELS_LISTED: usize = 20;

/// What a refusal of channel `given`, which `known` (sorted) lacks, adds:
/// the channels there are, the first [`CHANNELS_LISTED`], and, for a name
/// given with its spec type as `info` shows it (`imu/0`), the name alone.
pub(crate) fn unknown_channel_hint<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.into_iter().collect();
    let mut listed = known.iter().take(CHANNELS_LISTED).copied().collect::<Vec<_>>().join(", ");
    if known.len() > CHANNELS_LISTED {
        listed.push_str(&format!(" and {} more", known.len() - CHANNELS_LISTED));
    }
    // after any '/' (a spec type may hold one): the longest name there is
    let alone = given.match_indices('/').map(|(i, _)| &given[i + 1..]).find(|c| known.contains(c));
    match alone {
        Some(c) => format!(" (a channel is named without its spec type: {c}; channels: {listed})"),
        None if known.is_empty() => String::new(),
        None => format!(" (channels: {listed})"),
    }
}

/// The index of the first NaN or infinity in `values`. Blocks of 64 are
/// tested whole, without a branch a value, so the test vectorizes; only the
/// block holding one is searched value by value.
pub(crate) fn first_non_finite(values: &[f32]) -> Option<usize> {
    const BLOCK: usize = 64;
    let exponent = f32::INFINITY.to_bits();
    values.chunks(BLOCK).enumerate().find_map(|(b, block)| {
        let any = block.iter().fold(0u32, |any, v| any | u32::from(v.to_bits() & exponent == exponent));
        match any {
            0 => None,
            _ => block.iter().position(|v| !v.is_finite()).map(|k| b * BLOCK + k),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_channel_is_told_the_channels_there_are() {
        let hint = |given: &str, known: &[&str]| unknown_channel_hint(given, known.iter().copied());
        assert_eq!(hint("V9", &["I", "II"]), " (channels: I, II)");
        assert_eq!(hint("V9", &[]), "");
        assert_eq!(hint("ecg/II", &["I", "II"]), " (a channel is named without its spec type: II; channels: I, II)");
        // a spec type holding '/' (review 147), the longest name after one
        let known = ["a/b", "b"];
        assert_eq!(hint("x/y/a/b", &known), " (a channel is named without its spec type: a/b; channels: a/b, b)");
        let many: Vec<String> = (0..25).map(|i| format!("c{i:02}")).collect();
        let listed: Vec<&str> = many.iter().map(String::as_str).collect();
        let first: Vec<&str> = listed[..20].to_vec();
        assert_eq!(hint("x", &listed), format!(" (channels: {} and 5 more)", first.join(", ")));
    }

    #[test]
    fn the_first_non_finite_value_is_found_in_every_block_position() {
        for len in [1, 63, 64, 65, 200] {
            let clean: Vec<f32> = (0..len).map(|i| i as f32 - 7.5).collect();
            assert_eq!(first_non_finite(&clean), None, "len {len}");
            for k in [0, len / 2, len - 1] {
                for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                    let mut v = clean.clone();
                    v[k] = bad;
                    // a later bad value does not move the answer
                    if k + 1 < len {
                        v[len - 1] = f32::NAN;
                    }
                    assert_eq!(first_non_finite(&v), Some(k), "len {len}, {bad} at {k}");
                }
            }
        }
        assert_eq!(first_non_finite(&[]), None);
        // the largest finite values are finite
        assert_eq!(first_non_finite(&[f32::MAX, f32::MIN, -0.0, f32::MIN_POSITIVE / 2.0]), None);
    }

    #[test]
    fn only_lowercase_hyphenated_uuids_are_canonical() {
        assert!(is_canonical_uuid("0190f5a4-6b1e-7c3d-8e9f-0a1b2c3d4e5f"));
        assert!(is_canonical_uuid("00000000-0000-0000-0000-000000000000"));
        assert!(is_canonical_uuid(&new_id()));
        for not in [
            "0190F5A4-6B1E-7C3D-8E9F-0A1B2C3D4E5F",
            "0190f5a4-6b1e-7c3d-8e9f-0a1b2c3d4e5F",
            "0190f5a46b1e7c3d8e9f0a1b2c3d4e5f",
            "{0190f5a4-6b1e-7c3d-8e9f-0a1b2c3d4e5f}",
            "urn:uuid:0190f5a4-6b1e-7c3d-8e9f-0a1b2c3d4e5f",
            "0190f5a4-6b1e-7c3d-8e9f-0a1b2c3d4e5g",
            "0190f5a46-b1e-7c3d-8e9f-0a1b2c3d4e5f",
            "0190f5a4+6b1e-7c3d-8e9f-0a1b2c3d4e5f",
            "0190f5a4-6b1e-7c3d-8e9f-0a1b2c3d4e5",
            "",
        ] {
            assert!(!is_canonical_uuid(not), "{not}");
        }
    }
}
