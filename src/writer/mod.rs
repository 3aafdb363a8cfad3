//! [`TimeFWriter`]: serializes a [`TimeFDataset`] into a staged version that
//! [`StagedVersion::commit`] publishes (seed "TimeFWriter"; FORMAT-BRIEF §1, §5).
//!
//! Sequence of [`TimeFWriter::write`]:
//! 1. Validate (names, references, id encodings) and refuse an existing version,
//!    all before any I/O.
//! 2. Start the version on its storage ([`crate::storage::Staging`]: a local
//!    staging directory, or a claim on an object store).
//! 3. Stream series in `(spec_type, channel, time_series_id)` order: run each
//!    loader once, validate its values (count; finite, unless the connector
//!    that stored them checked them), cut chunks, cut row
//!    groups and shards ([`crate::layout`]). Each row group is encoded on the
//!    rayon pool while the next series load, its chunks' statistics computed
//!    page by page as the pages are encoded, so the encoder reads the values
//!    from memory once; encoded row groups are appended
//!    to their shard file strictly in order, so bytes never depend on threads.
//!    Once nothing more is pushed, the row groups whose pages are not
//!    encoded yet spread their pages over the pool, so the write's end does
//!    not wait on one thread while the others idle; a thread waiting for a
//!    row group's pages takes up no later row group meanwhile (but for the
//!    windows `runtime::map_on_pool` names), so row groups finish in
//!    order and each is appended while the next ones encode.
//!    At most a few row groups are in flight: memory is bounded by the row-group
//!    target, not by the dataset.
//! 4. Write the index, samples, annotations and task files, then the manifest.
//!
//! Dropping the [`StagedVersion`] (or an error at any step) removes what was
//! written; [`StagedVersion::commit`] publishes it atomically.

mod base;
pub mod distributed;
mod files;
mod index_rows;
mod page_splice;
pub mod plan;
mod shards;
mod values_pages;

use std::path::PathBuf;
use std::sync::Arc;

use crate::dataset::{validate_name, SeriesValues, TimeFDataset, ValuesSource};
use crate::encoding::Codec;
use crate::error::{Error, Result};
use crate::layout;
use crate::manifest::{self, Manifest};
pub use crate::options::{
    WriterOptions, WriterOptionsBuilder, DEFAULT_CHUNK_MAX_BYTES, DEFAULT_COMPRESSION_LEVEL,
    DEFAULT_ROW_GROUP_TARGET_BYTES, DEFAULT_SHARD_TARGET_BYTES, ROW_GROUP_SLACK_CHUNKS,
};
use crate::reader::Version;
use crate::storage::{Location, Staging};
use crate::tables::{self, IdEncodings, IdSpace};
use base::BaseShards;
pub use base::CopyStats;
use files::SeriesOutput;
use plan::Planner;
use shards::{SeriesKeys, ShardStream};

/// What the writer reports while it works (seed: `WriteProgressEvent`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum WriteProgressEvent {
    /// Writing began: totals to expect.
    Started {
        /// Unique series to write.
        series: u64,
        /// Samples.
        samples: u64,
    },
    /// One more series was loaded and chunked.
    SeriesWritten {
        /// Series done so far.
        done: u64,
        /// Series in all.
        total: u64,
        /// Values of this series.
        values: u64,
    },
    /// A file was closed in staging (`path` relative to the version directory).
    FileWritten {
        /// The file.
        path: String,
        /// Its size in bytes.
        bytes: u64,
    },
}

/// A progress callback.
pub type ProgressFn = Arc<dyn Fn(&WriteProgressEvent) + Send + Sync>;

/// A progress callback that may stop the write: an `Err` aborts it (nothing is
/// left on disk) and comes back as [`Error::Aborted`] carrying that error. It runs
/// on the thread that called [`TimeFWriter::write`], after each series, so a
/// binding can check for an interrupt (Ctrl-C) there.
pub type TryProgressFn =
    Arc<dyn Fn(&WriteProgressEvent) -> std::result::Result<(), crate::dataset::LoaderError> + Send + Sync>;

/// Writes datasets under `root` as `<root>/<name>/<version>/`, on local disk or
/// on an object store (see [`crate::storage`]).
#[derive(Clone)]
pub struct TimeFWriter {
    root: Location,
    options: WriterOptions,
    progress: Option<TryProgressFn>,
    derived_from: Option<manifest::DerivedFrom>,
    base: Option<Arc<Version>>,
}

impl std::fmt::Debug for TimeFWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeFWriter").field("root", &self.root).field("options", &self.options).finish_non_exhaustive()
    }
}

/// A fully written version, not yet visible. [`StagedVersion::commit`]
/// publishes it; dropping it (or [`StagedVersion::abort`]) removes it.
#[derive(Debug)]
pub struct StagedVersion {
    staging: Staging,
    manifest: Manifest,
    copied: CopyStats,
}

impl StagedVersion {
    /// The manifest that was written.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    /// The `values` pages the write copied from its base ([`TimeFWriter::with_base`]) and compressed.
    pub fn copied(&self) -> CopyStats {
        self.copied
    }
    /// Where the files were written: the local staging directory, or the
    /// version's URL on an object store (where they land in place, unlisted
    /// until the manifest exists).
    pub fn staging_dir(&self) -> PathBuf {
        self.staging.dir()
    }
    /// Publishes the version and returns its directory or URL: local, fsync,
    /// no-clobber rename, parent fsync; object store, `manifest.json` created
    /// with `PutMode::Create`, then the claim removed.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] if another writer published the version first; I/O errors.
    pub fn commit(self) -> Result<PathBuf> {
        self.staging.publish()
    }
    /// Removes what was written (and, on an object store, aborts open uploads
    /// and releases the claim).
    pub fn abort(self) {}
}

impl TimeFWriter {
    /// A writer under the local directory `root` with `options`.
    pub fn new(root: impl Into<PathBuf>, options: WriterOptions) -> Self {
        Self::at(Location::local(root), options)
    }

    /// A writer under `root`, a local path or an object-store URL
    /// ([`Location::parse`]), with `options`.
    pub fn at(root: Location, options: WriterOptions) -> Self {
        TimeFWriter { root, options, progress: None, derived_from: None, base: None }
    }

    /// Calls `f` with each [`WriteProgressEvent`].
    pub fn with_progress(self, f: ProgressFn) -> Self {
        self.with_try_progress(Arc::new(move |e: &WriteProgressEvent| {
            f(e);
            Ok(())
        }))
    }

    /// Calls `f` with each [`WriteProgressEvent`]; an `Err` from `f` aborts the
    /// write with [`Error::Aborted`].
    pub fn with_try_progress(mut self, f: TryProgressFn) -> Self {
        self.progress = Some(f);
        self
    }

    /// Records a `derived_from` lineage block in the manifest (copy-on-write edits).
    pub fn with_derived_from(mut self, derived_from: manifest::DerivedFrom) -> Self {
        self.derived_from = Some(derived_from);
        self
    }

    /// Writes derived from `base`, the version the dataset came from
    /// ([`Version::to_dataset`], then edited). When the writer's options are
    /// `base`'s, a series whose values are `base`'s own (added by `to_dataset`
    /// of a version with `base`'s manifest) and that `base` holds with the same
    /// id and metadata is read from `base`'s shards (its loader is not run);
    /// any other series' loader runs as in a fresh write. Each `values` page whose
    /// rows are those of a page of `base` is stored as that page's compressed
    /// bytes (CRC-checked, compared before compression) instead of compressed
    /// again. The files stay byte-identical to a fresh write of the dataset
    /// (`docs/format.md` §7); [`StagedVersion::copied`] tells what was copied.
    pub fn with_base(mut self, base: Arc<Version>) -> Self {
        self.base = Some(base);
        self
    }

    /// The directory (or URL, as a path) `dataset` would be committed to.
    pub fn version_dir(&self, dataset: &TimeFDataset) -> PathBuf {
        self.version_location(dataset).to_path_buf()
    }

    /// Where `dataset` would be committed.
    pub fn version_location(&self, dataset: &TimeFDataset) -> Location {
        self.root.join(&dataset.info.name).join(&dataset.info.version)
    }

    fn emit(&self, event: WriteProgressEvent) -> Result<()> {
        match &self.progress {
            Some(f) => f(&event).map_err(|source| Error::Aborted { source }),
            None => Ok(()),
        }
    }

    /// Writes `dataset` into a staging directory and returns it, ready to commit.
    ///
    /// # Errors
    /// [`Error::Validation`] (names, references, values), [`Error::AlreadyExists`]
    /// (before any I/O), [`Error::Loader`], [`Error::Aborted`], [`Error::SelfCheck`], I/O and parquet
    /// errors, [`Error::ObjectStore`]. On any error nothing is left on disk or
    /// in the store (a process killed outright leaves what [`crate::storage::gc`] clears).
    pub fn write(&self, mut dataset: TimeFDataset) -> Result<StagedVersion> {
        validate_name(&dataset.info.name, "dataset_name")?;
        validate_name(&dataset.info.version, "dataset_version")?;
        dataset.validate_references()?;
        let target = self.version_location(&dataset);
        target.ensure_absent()?;
        let ids = decide_ids(&dataset);
        dataset.release_indexes();

        let mut staging = Staging::create(&target)?;
        crate::storage::pause_point("staging-created");
        self.emit(WriteProgressEvent::Started {
            series: dataset.series_count() as u64,
            samples: dataset.sample_count() as u64,
        })?;
        let (series, copied) = self.write_series(&mut staging, &mut dataset, ids)?;
        crate::storage::pause_point("shards-written");
        let emit = |e| self.emit(e);
        let manifest =
            files::finish_version(&mut staging, &dataset, &self.options, series, self.derived_from.clone(), &emit)?;
        crate::storage::pause_point("manifest-staged");
        Ok(StagedVersion { staging, manifest, copied })
    }

    /// Takes each series' values once in write order and streams their
    /// chunks through the shard writer, placed by the [`Planner`] as they come.
    fn write_series(
        &self,
        staging: &mut Staging,
        dataset: &mut TimeFDataset,
        ids: IdEncodings,
    ) -> Result<(SeriesOutput, CopyStats)> {
        let taken = (0..dataset.values.len()).filter(|&r| matches!(dataset.values[r], ValuesSource::Taken));
        if let Some(row) = taken.min_by(|&a, &b| dataset.series.id(a).cmp(dataset.series.id(b))) {
            return Err(Error::validation(dataset.series.id(row), "loader", "the loader already ran"));
        }
        // the metadata stays in the dataset's columns, shared by the shard
        // encoders and the index; the write order is a permutation of its rows
        let keys = Arc::new(SeriesKeys::in_write_order(Arc::clone(&dataset.series)));
        let codec = Codec { zstd_level: self.options.compression_level() };
        let schema = Arc::new(tables::shard_schema(ids)?);
        let props = schema.properties(codec, &files::created_by())?;
        let planner = Planner::new(&self.options, 0);
        let base = match &self.base {
            Some(base) => BaseShards::new(Arc::clone(base), &self.options, Arc::clone(&schema), Arc::clone(&props))?,
            None => None,
        };
        let mut stream =
            ShardStream::new(staging, schema, props, Arc::clone(&keys), ids.get(IdSpace::TimeSeries), planner)?;
        if let Some(base) = base {
            stream = stream.with_base(base);
        }
        let chunk_values = self.options.chunk_max_values();
        let total = keys.len() as u64;
        let series = Arc::clone(&keys.columns);
        for pos in 0..keys.len() as u32 {
            let row = keys.row(pos);
            let id = series.id(row);
            // only values that are the base's own (its `to_dataset` loaders)
            // come from its shards: any other loader runs, as in a fresh write
            let of_base = self.base.as_ref().is_some_and(|b| dataset.values_of(row, b.manifest_sha256()));
            let base_rows = if of_base { stream.base_series(&series.meta(row), chunk_values)? } else { None };
            if let Some(base_rows) = base_rows {
                // the base's chunks: read from its shards as their row groups are built
                let n_values = (base_rows.len() as u64 - 1) * chunk_values as u64
                    + u64::from(stream.base_values(base_rows.end - 1)?);
                let (start_s, rate_hz, end_s) =
                    (series.t_start_s(row), series.sampling_rate_hz(row), series.t_end_s(row));
                validate_count(id, start_s, rate_hz, end_s, n_values)?;
                for (k, i) in base_rows.enumerate() {
                    stream.push_base_chunk(pos, k as u32, (k * chunk_values) as u64, i)?;
                }
                self.emit(WriteProgressEvent::SeriesWritten { done: u64::from(pos) + 1, total, values: n_values })?;
                continue;
            }
            let checked = if dataset.values_checked_finite(row) { Finite::Checked } else { Finite::Unchecked };
            let values = dataset.take_values(row).map_err(|source| Error::loading(id, source))?;
            let (start_s, rate_hz, end_s) = (series.t_start_s(row), series.sampling_rate_hz(row), series.t_end_s(row));
            validate_count(id, start_s, rate_hz, end_s, values.len() as u64)?;
            let n_chunks = layout::chunk_count(values.len(), chunk_values);
            layout::check_chunks(id, n_chunks)?;
            push_series(&mut stream, pos, id, &values, checked, chunk_values, 0..n_chunks)?;
            self.emit(WriteProgressEvent::SeriesWritten {
                done: u64::from(pos) + 1,
                total,
                values: values.len() as u64,
            })?;
        }
        let (files, index, copied) = stream.finish()?;
        Ok((SeriesOutput { files, index, keys }, copied))
    }
}

/// Whether a series' values were already found finite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finite {
    /// By the connector that stored them ([`crate::dataset::ValuesStore::checked_finite`]).
    Checked,
    /// Not yet: a loader's, or values handed in.
    Unchecked,
}

/// Cuts chunks `chunks` (a range of chunk indexes) of one series (`id`, at
/// write position `series`) and pushes them in order, after refusing a
/// non-finite value in them unless they were `checked`: as the series loads,
/// so a bad value stops the write before any later loader runs. Their
/// statistics are computed where their row group is encoded
/// (`shards::build_row_group`), page by page; a chunk whose statistics are not
/// finite is refused there too.
pub(crate) fn push_series(
    stream: &mut ShardStream<'_>,
    series: u32,
    id: &str,
    values: &SeriesValues,
    checked: Finite,
    chunk_values: usize,
    chunks: std::ops::Range<usize>,
) -> Result<Vec<plan::Placed>> {
    let from = chunks.start * chunk_values;
    let to = chunks.end.saturating_mul(chunk_values).min(values.len());
    if checked == Finite::Unchecked {
        refuse_non_finite(id, values.get(from..to).unwrap_or_default(), from)?;
    }
    let mut placed = Vec::new();
    for k in chunks {
        let range = k * chunk_values..((k + 1) * chunk_values).min(values.len());
        let chunk = values.slice(range.start, range.len());
        placed.push(stream.push_chunk(series, k as u32, chunk, range.start as u64)?);
    }
    Ok(placed)
}

/// Refuses a non-finite value among `values`, values `first..` of series
/// `id`: the error names the first one by its position in the series.
pub(crate) fn refuse_non_finite(id: &str, values: &[f32], first: usize) -> Result<()> {
    match crate::dataset::first_non_finite(values) {
        Some(k) => Err(Error::validation(id, "values", format!("value {} is {}, not finite", first + k, values[k]))),
        None => Ok(()),
    }
}

/// Per-series checks of the number of values of series `id` (start, rate and
/// end as in its metadata), before any value is read (FORMAT-BRIEF §5): at
/// least one, and the count `t_end_s` implies.
pub(crate) fn validate_count(
    id: &str,
    t_start_s: f64,
    sampling_rate_hz: f64,
    t_end_s: Option<f64>,
    n_values: u64,
) -> Result<()> {
    if n_values == 0 {
        return Err(Error::validation(id, "values", "a series needs at least one value"));
    }
    // a rate so small that the series ends past the largest float gives its
    // windows no finite start time (review 127: 1e-320 Hz was taken)
    if !(t_start_s + n_values as f64 / sampling_rate_hz).is_finite() {
        return Err(Error::validation(
            id,
            "sampling_rate_hz",
            format!("{n_values} values at {sampling_rate_hz:e} Hz from t_start_s {t_start_s} end at no finite time"),
        ));
    }
    if let Some(end) = t_end_s {
        let expected = ((end - t_start_s) * sampling_rate_hz).round_ties_even();
        if expected != n_values as f64 {
            return Err(Error::validation(
                id,
                "t_end_s",
                format!("{n_values} values, but round((t_end_s - t_start_s) * sampling_rate_hz) = {expected}"),
            ));
        }
    }
    Ok(())
}

/// The uuid16-or-string decision for each space over every value used anywhere.
pub(crate) fn decide_ids(d: &TimeFDataset) -> IdEncodings {
    let samples = Box::new(d.samples.ids());
    let series = Box::new(d.series.ids());
    let annotations = Box::new(d.annotations.keys().map(String::as_str));
    let tasks =
        Box::new(d.tasks().flat_map(|(_, t)| std::iter::once(t.task_id.as_str()).chain(t.from_task.as_deref())));
    let sources =
        Box::new(d.sources.keys().map(String::as_str).chain((0..d.samples.len()).map(|r| d.samples.source_id(r))));
    let subjects = Box::new((0..d.samples.len()).filter_map(|r| d.samples.subject_id(r)));
    IdEncodings::decide([samples, series, annotations, tasks, sources, subjects])
}
