//! [`TimeFWriter`]: serializes a [`TimeFDataset`] into a staged version that
//! [`StagedVersion::commit`] publishes (seed "TimeFWriter"; FORMAT-BRIEF §1, §5).
//!
//! Sequence of [`TimeFWriter::write`]:
//! 1. Validate (names, references, id encodings) and refuse an existing version,
//!    all before any I/O.
//! 2. Start the version on its storage ([`crate::storage::Staging`]: a local
//!    staging directory, or a claim on an object store).
//! 3. Stream series in `(spec_type, channel, time_series_id)` order: run each
//!    loader once, validate its values, cut chunks, compute chunk statistics,
//!    cut row groups and shards ([`crate::layout`]). Each row group is encoded on
//!    the rayon pool while the next series load; encoded row groups are appended
//!    to their shard file strictly in order, so bytes never depend on threads.
//!    At most a few row groups are in flight: memory is bounded by the row-group
//!    target, not by the dataset.
//! 4. Write the index, samples, annotations and task files, then the manifest.
//!
//! Dropping the [`StagedVersion`] (or an error at any step) removes what was
//! written; [`StagedVersion::commit`] publishes it atomically.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, RecvError, TryRecvError};
use std::sync::Arc;

use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::SerializedFileWriter;

use crate::dataset::{validate_name, Loader, SeriesMeta, SeriesValues, TimeFDataset};
use crate::encoding::{encode_chunk, encode_values, self_check, Codec, EncodedChunk, FileSchema};
use crate::error::{Error, Result};
use crate::layout::{self, key_hash, shard_path, CutRules, RowGroupCutter, ShardCutter, VALUE_BYTES};
use crate::manifest::{self, Manifest, Partial};
use crate::storage::{Location, StagedFile, Staging};
use crate::tables::{self, Columns, IdEncodings, IdSpace};

/// Default shard target: a shard closes after the row group that takes its
/// uncompressed float32 value bytes past this (128 MiB; seed).
pub const DEFAULT_SHARD_TARGET_BYTES: u64 = 128 << 20;
/// Default row-group target in uncompressed float32 value bytes (4 MiB; seed).
pub const DEFAULT_ROW_GROUP_TARGET_BYTES: u64 = 4 << 20;
/// Default largest chunk in bytes of float32 values (1 MiB = 262144 values; seed).
pub const DEFAULT_CHUNK_MAX_BYTES: u64 = 1 << 20;
/// Default pinned zstd level (3; seed).
pub const DEFAULT_COMPRESSION_LEVEL: i32 = 3;
/// A row group may exceed its target by at most this many chunks' worth of
/// bytes: `row_group_max_bytes = row_group_target_bytes + 4 * chunk_max_bytes`.
pub const ROW_GROUP_SLACK_CHUNKS: u64 = 4;

/// Largest row group in values: `list` offsets are 32-bit (FORMAT-BRIEF §5).
const MAX_ROW_GROUP_VALUES: u64 = (1 << 31) - 1;

/// Options that shape a version's bytes; immutable, built with
/// [`WriterOptions::builder`]. All sizes are uncompressed float32 value bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    shard_target_bytes: u64,
    row_group_target_bytes: u64,
    chunk_max_bytes: u64,
    compression_level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            shard_target_bytes: DEFAULT_SHARD_TARGET_BYTES,
            row_group_target_bytes: DEFAULT_ROW_GROUP_TARGET_BYTES,
            chunk_max_bytes: DEFAULT_CHUNK_MAX_BYTES,
            compression_level: DEFAULT_COMPRESSION_LEVEL,
        }
    }
}

impl WriterOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> WriterOptionsBuilder {
        WriterOptionsBuilder(WriterOptions::default())
    }
    /// Shard target in bytes ([`DEFAULT_SHARD_TARGET_BYTES`]).
    pub fn shard_target_bytes(&self) -> u64 {
        self.shard_target_bytes
    }
    /// Row-group target in bytes ([`DEFAULT_ROW_GROUP_TARGET_BYTES`]).
    pub fn row_group_target_bytes(&self) -> u64 {
        self.row_group_target_bytes
    }
    /// Hard cap of a row group in bytes: target + [`ROW_GROUP_SLACK_CHUNKS`] chunks.
    pub fn row_group_max_bytes(&self) -> u64 {
        self.row_group_target_bytes + ROW_GROUP_SLACK_CHUNKS * self.chunk_max_bytes
    }
    /// Hard cap of a shard in bytes: shard target + one row group's cap.
    pub fn shard_max_bytes(&self) -> u64 {
        self.shard_target_bytes + self.row_group_max_bytes()
    }
    /// Largest chunk in bytes ([`DEFAULT_CHUNK_MAX_BYTES`]).
    pub fn chunk_max_bytes(&self) -> u64 {
        self.chunk_max_bytes
    }
    /// Largest chunk in values.
    pub fn chunk_max_values(&self) -> usize {
        (self.chunk_max_bytes / VALUE_BYTES) as usize
    }
    /// zstd level ([`DEFAULT_COMPRESSION_LEVEL`]).
    pub fn compression_level(&self) -> i32 {
        self.compression_level
    }
    fn cut_rules(&self) -> CutRules {
        CutRules {
            row_group_target_bytes: self.row_group_target_bytes,
            row_group_max_bytes: self.row_group_max_bytes(),
            shard_target_bytes: self.shard_target_bytes,
        }
    }
}

/// Consuming builder of [`WriterOptions`]; [`WriterOptionsBuilder::try_build`] validates.
#[derive(Debug, Clone)]
pub struct WriterOptionsBuilder(WriterOptions);

impl WriterOptionsBuilder {
    /// Shard target in uncompressed value bytes (> 0).
    pub fn shard_target_bytes(mut self, bytes: u64) -> Self {
        self.0.shard_target_bytes = bytes;
        self
    }
    /// Row-group target in uncompressed value bytes (> 0).
    pub fn row_group_target_bytes(mut self, bytes: u64) -> Self {
        self.0.row_group_target_bytes = bytes;
        self
    }
    /// Largest chunk in bytes (a positive multiple of 4).
    pub fn chunk_max_bytes(mut self, bytes: u64) -> Self {
        self.0.chunk_max_bytes = bytes;
        self
    }
    /// zstd level (1..=22).
    pub fn compression_level(mut self, level: i32) -> Self {
        self.0.compression_level = level;
        self
    }
    /// Validates and returns the options.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the option: a zero target, a chunk size
    /// that is not a positive multiple of 4, a level outside 1..=22, or a row-group
    /// cap that would allow 2^31 values.
    pub fn try_build(self) -> Result<WriterOptions> {
        let o = self.0;
        let bad = |option: &'static str, reason: String| Err(Error::InvalidOption { option, reason });
        if o.shard_target_bytes == 0 {
            return bad("shard_target_bytes", "must be > 0".into());
        }
        if o.row_group_target_bytes == 0 {
            return bad("row_group_target_bytes", "must be > 0".into());
        }
        if o.chunk_max_bytes == 0 || !o.chunk_max_bytes.is_multiple_of(VALUE_BYTES) {
            return bad("chunk_max_bytes", format!("{} is not a positive multiple of 4", o.chunk_max_bytes));
        }
        if !(1..=22).contains(&o.compression_level) {
            return bad("compression_level", format!("{} is outside 1..=22", o.compression_level));
        }
        let cap = o.row_group_target_bytes.checked_add(ROW_GROUP_SLACK_CHUNKS.saturating_mul(o.chunk_max_bytes));
        if cap.is_none_or(|c| c / VALUE_BYTES > MAX_ROW_GROUP_VALUES)
            || o.shard_target_bytes.checked_add(cap.unwrap_or(0)).is_none()
        {
            return bad("row_group_target_bytes", "row groups could reach 2^31 values".into());
        }
        Ok(o)
    }
}

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
}

impl StagedVersion {
    /// The manifest that was written.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
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
        TimeFWriter { root, options, progress: None, derived_from: None }
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
        let codec = Codec { zstd_level: self.options.compression_level };
        let created_by = format!(
            "timef {} (parquet-rs {})",
            env!("CARGO_PKG_VERSION"),
            parquet::file::properties::DEFAULT_CREATED_BY.rsplit(' ').next().unwrap_or("")
        );

        let mut staging = Staging::create(&target)?;
        crate::storage::pause_point("staging-created");
        self.emit(WriteProgressEvent::Started {
            series: dataset.series.len() as u64,
            samples: dataset.samples.len() as u64,
        })?;
        let mut series = self.write_series(&mut staging, &mut dataset, ids, codec, &created_by)?;
        crate::storage::pause_point("shards-written");
        let mut files = std::mem::take(&mut series.files);
        files.push(write_index(&mut staging, &series.metas, &series.index, ids, codec, &created_by)?);
        files.push(write_samples(&mut staging, &dataset, ids, codec, &created_by)?);
        files.push(write_annotations(&mut staging, &dataset, ids, codec, &created_by)?);
        for (name, tasks) in &dataset.tasks {
            files.push(write_tasks(&mut staging, name, tasks, ids, codec, &created_by)?);
        }
        for f in &files[series.shards..] {
            self.emit(WriteProgressEvent::FileWritten { path: f.path.clone(), bytes: f.bytes })?;
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));

        let manifest = build_manifest(&dataset, &self.options, ids, files, &series, self.derived_from.clone());
        staging.stage_manifest(manifest.to_bytes())?;
        crate::storage::pause_point("manifest-staged");
        Ok(StagedVersion { staging, manifest })
    }

    fn write_series(
        &self,
        staging: &mut Staging,
        dataset: &mut TimeFDataset,
        ids: IdEncodings,
        codec: Codec,
        created_by: &str,
    ) -> Result<SeriesOutput> {
        let mut order: Vec<(SeriesMeta, Loader)> = Vec::with_capacity(dataset.series.len());
        for entry in dataset.series.values_mut() {
            let loader = entry
                .loader
                .take()
                .ok_or_else(|| Error::validation(&entry.meta.time_series_id, "loader", "the loader already ran"))?;
            order.push((entry.meta.clone(), loader));
        }
        order.sort_by(|(a, _), (b, _)| {
            (&a.spec_type, &a.channel, &a.time_series_id).cmp(&(&b.spec_type, &b.channel, &b.time_series_id))
        });
        let schema = Arc::new(tables::shard_schema(ids)?);
        let props = schema.properties(codec, created_by)?;
        let metas: Vec<SeriesMeta> = order.iter().map(|(m, _)| m.clone()).collect();
        let keys: Arc<Vec<SeriesMeta>> = Arc::new(metas.clone());
        let mut stream = ShardStream {
            staging,
            schema,
            props,
            keys,
            ts_enc: ids.get(IdSpace::TimeSeries),
            rg: Vec::new(),
            rg_bytes: 0,
            cutter: RowGroupCutter::new(self.options.cut_rules()),
            shard_cutter: ShardCutter::new(self.options.shard_target_bytes),
            shard_no: 0,
            rg_in_shard: 0,
            in_flight: VecDeque::new(),
            max_in_flight: 2 * rayon::current_num_threads() + 1,
            current: None,
            files: Vec::new(),
            index: Vec::new(),
        };
        let mut stats: BTreeMap<(String, String), Partial> = BTreeMap::new();
        let chunk_values = self.options.chunk_max_values();
        let total = order.len() as u64;
        for (i, (meta, loader)) in order.into_iter().enumerate() {
            let values = loader().map_err(|source| Error::Loader { series_id: meta.time_series_id.clone(), source })?;
            validate_values(&meta, &values)?;
            let channel_stats = stats.entry((meta.spec_type.clone(), meta.channel.clone())).or_default();
            let chunks = layout::chunk_count(values.len(), chunk_values);
            layout::check_chunks(&meta.time_series_id, chunks)?;
            for k in 0..chunks {
                let range = k * chunk_values..((k + 1) * chunk_values).min(values.len());
                let chunk = values.slice(range.start, range.len());
                let partial = Partial::of(&chunk);
                if !partial.mean.is_finite() {
                    return Err(non_finite(&meta, &values));
                }
                channel_stats.merge(&partial);
                stream.push_chunk(i as u32, k as u32, &meta.time_series_id, chunk, range.start, partial)?;
            }
            self.emit(WriteProgressEvent::SeriesWritten { done: i as u64 + 1, total, values: values.len() as u64 })?;
        }
        let (files, index) = stream.finish()?;
        Ok(SeriesOutput { shards: files.len(), files, index, metas, stats })
    }
}

/// Per-series checks as each loader runs (FORMAT-BRIEF §5).
fn validate_values(meta: &SeriesMeta, values: &[f32]) -> Result<()> {
    let id = &meta.time_series_id;
    if values.is_empty() {
        return Err(Error::validation(id, "values", "a series needs at least one value"));
    }
    if let Some(pos) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::validation(id, "values", format!("value {pos} is {}, not finite", values[pos])));
    }
    if let Some(end) = meta.t_end_s {
        let expected = ((end - meta.t_start_s) * meta.sampling_rate_hz).round_ties_even();
        if expected != values.len() as f64 {
            return Err(Error::validation(
                id,
                "t_end_s",
                format!("{} values, but round((t_end_s - t_start_s) * sampling_rate_hz) = {expected}", values.len()),
            ));
        }
    }
    Ok(())
}

/// The error for a series with a non-finite value (found through its chunk's mean).
fn non_finite(meta: &SeriesMeta, values: &[f32]) -> Error {
    let pos = values.iter().position(|v| !v.is_finite()).unwrap_or(0);
    Error::validation(&meta.time_series_id, "values", format!("value {pos} is {}, not finite", values[pos]))
}

/// The uuid16-or-string decision for each space over every value used anywhere.
fn decide_ids(d: &TimeFDataset) -> IdEncodings {
    let samples = Box::new(d.samples.keys().map(String::as_str));
    let series = Box::new(d.series.keys().map(String::as_str));
    let annotations = Box::new(d.annotations.keys().map(String::as_str));
    let tasks =
        Box::new(d.tasks().flat_map(|(_, t)| std::iter::once(t.task_id.as_str()).chain(t.from_task.as_deref())));
    let sources =
        Box::new(d.sources.keys().map(String::as_str).chain(d.samples.values().map(|s| s.source_id.as_str())));
    let subjects = Box::new(d.samples.values().filter_map(|s| s.subject_id.as_deref()));
    IdEncodings::decide([samples, series, annotations, tasks, sources, subjects])
}

/// One index row before and after its row group is placed.
#[derive(Debug, Clone)]
struct IndexRow {
    series: u32,
    chunk_idx: u32,
    value_offset: u64,
    n_values: u32,
    shard: u32,
    row_group: u32,
    row_offset: u32,
    partial: Partial,
}

struct SeriesOutput {
    files: Vec<manifest::FileEntry>,
    shards: usize,
    index: Vec<IndexRow>,
    metas: Vec<SeriesMeta>,
    stats: BTreeMap<(String, String), Partial>,
}

struct PendingChunk {
    series: u32,
    chunk_idx: u32,
    values: SeriesValues,
    hash: u64,
}

enum InFlight {
    RowGroup { shard: u32, rx: Receiver<Result<Vec<EncodedChunk>>> },
    CloseShard,
}

/// Cuts row groups and shards and keeps the encode pipeline in order.
struct ShardStream<'a> {
    staging: &'a mut Staging,
    schema: Arc<FileSchema>,
    props: WriterPropertiesPtr,
    keys: Arc<Vec<SeriesMeta>>,
    ts_enc: crate::encoding::IdEncoding,
    rg: Vec<PendingChunk>,
    rg_bytes: u64,
    cutter: RowGroupCutter,
    shard_cutter: ShardCutter,
    shard_no: u32,
    rg_in_shard: u32,
    in_flight: VecDeque<InFlight>,
    max_in_flight: usize,
    current: Option<ParquetFile>,
    files: Vec<manifest::FileEntry>,
    index: Vec<IndexRow>,
}

impl ShardStream<'_> {
    fn push_chunk(
        &mut self,
        series: u32,
        chunk_idx: u32,
        id: &str,
        values: SeriesValues,
        value_offset: usize,
        partial: Partial,
    ) -> Result<()> {
        let bytes = values.len() as u64 * VALUE_BYTES;
        if self.cutter.cut_before(bytes) {
            self.flush_row_group()?;
        }
        self.index.push(IndexRow {
            series,
            chunk_idx,
            value_offset: value_offset as u64,
            n_values: values.len() as u32,
            shard: 0,
            row_group: 0,
            row_offset: 0,
            partial,
        });
        let hash = key_hash(id, chunk_idx);
        self.rg.push(PendingChunk { series, chunk_idx, values, hash });
        self.rg_bytes += bytes;
        if self.cutter.cut_after(bytes, hash) {
            self.flush_row_group()?;
        }
        Ok(())
    }

    fn flush_row_group(&mut self) -> Result<()> {
        if self.rg.is_empty() {
            return Ok(());
        }
        layout::check_row_group(self.shard_no, self.rg_in_shard)?;
        let rows = std::mem::take(&mut self.rg);
        let first = self.index.len() - rows.len();
        for (offset, row) in self.index[first..].iter_mut().enumerate() {
            row.shard = self.shard_no;
            row.row_group = self.rg_in_shard;
            row.row_offset = offset as u32;
        }
        let (tx, rx) = sync_channel(1);
        let (schema, props, keys, enc) =
            (Arc::clone(&self.schema), Arc::clone(&self.props), Arc::clone(&self.keys), self.ts_enc);
        rayon::spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                encode_shard_row_group(&rows, &schema, &props, &keys, enc)
            }))
            .unwrap_or_else(|_| {
                Err(Error::SelfCheck {
                    path: "time_series".into(),
                    column: "values".into(),
                    reason: "row-group encoder panicked".into(),
                })
            });
            // the receiver is gone only if the write already failed
            let _ = tx.send(result);
        });
        self.in_flight.push_back(InFlight::RowGroup { shard: self.shard_no, rx });
        self.rg_in_shard += 1;
        if self.shard_cutter.close_after(std::mem::take(&mut self.rg_bytes)) {
            self.in_flight.push_back(InFlight::CloseShard);
            self.shard_no += 1;
            self.rg_in_shard = 0;
        }
        self.drain(self.max_in_flight)
    }

    /// Appends finished row groups, oldest first, until at most `limit` are in flight.
    fn drain(&mut self, limit: usize) -> Result<()> {
        while self.in_flight.len() > limit {
            match self.in_flight.pop_front() {
                Some(InFlight::RowGroup { shard, rx }) => {
                    let chunks = receive_helping(&rx).map_err(|_| Error::SelfCheck {
                        path: shard_path(shard).into(),
                        column: "values".into(),
                        reason: "row-group encoder vanished".into(),
                    })??;
                    if self.current.is_none() {
                        let file = ParquetFile::create(
                            self.staging,
                            &shard_path(shard),
                            Arc::clone(&self.schema),
                            &self.props,
                        )?;
                        self.current = Some(file);
                    }
                    if let Some(file) = self.current.as_mut() {
                        file.append_row_group(chunks)?;
                        crate::storage::pause_point("mid-shard");
                    }
                }
                Some(InFlight::CloseShard) => {
                    if let Some(file) = self.current.take() {
                        self.files.push(file.finish(self.staging)?);
                    }
                }
                None => break,
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(Vec<manifest::FileEntry>, Vec<IndexRow>)> {
        self.flush_row_group()?;
        self.drain(0)?;
        if let Some(file) = self.current.take() {
            self.files.push(file.finish(self.staging)?);
        }
        Ok((self.files, self.index))
    }
}

/// Waits for a row group spawned on the rayon pool. On a pool thread (the writer
/// runs inside `ThreadPool::install`), blocking at once could deadlock: the
/// encode job may be queued behind this very thread, e.g. in a one-thread pool.
/// So the thread runs queued pool work until the result arrives, and blocks only
/// when nothing is left that it could run (the job is then running elsewhere).
fn receive_helping<T>(rx: &Receiver<T>) -> std::result::Result<T, RecvError> {
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
            Err(TryRecvError::Empty) => match rayon::yield_now() {
                Some(rayon::Yield::Executed) => {}
                None | Some(rayon::Yield::Idle) => return rx.recv(),
            },
        }
    }
}

/// Encodes one shard row group's five column chunks.
fn encode_shard_row_group(
    rows: &[PendingChunk],
    schema: &FileSchema,
    props: &WriterPropertiesPtr,
    keys: &[SeriesMeta],
    enc: crate::encoding::IdEncoding,
) -> Result<Vec<EncodedChunk>> {
    let meta = |r: &PendingChunk| &keys[r.series as usize];
    let mut cols = Columns::default();
    cols.ids(rows.iter().map(|r| meta(r).time_series_id.as_str()), enc)?;
    cols.i32s(rows.iter().map(|r| r.chunk_idx as i32).collect());
    cols.strs(rows.iter().map(|r| meta(r).spec_type.as_str()));
    cols.strs(rows.iter().map(|r| meta(r).channel.as_str()));
    let one_page = [rows.len()];
    let err = |e| Error::parquet("time_series", e);
    let mut chunks = cols
        .leaves
        .iter()
        .enumerate()
        .map(|(i, leaf)| encode_chunk(schema.descr.column(i), props, leaf, &one_page).map_err(err))
        .collect::<Result<Vec<_>>>()?;
    let value_pages = layout::values_pages(rows.iter().map(|r| (r.values.len() as u64 * VALUE_BYTES, r.hash)));
    let values: Vec<&[f32]> = rows.iter().map(|r| &r.values[..]).collect();
    chunks.push(encode_values(schema.descr.column(4), props, &values, &value_pages).map_err(err)?);
    Ok(chunks)
}

/// A Parquet file being written in staging from encoded column chunks.
struct ParquetFile {
    writer: SerializedFileWriter<FooterSink>,
    rel: String,
    schema: Arc<FileSchema>,
    rows: u64,
}

/// The sink of a [`ParquetFile`]: passes bytes on to the staged file until
/// the footer starts, then keeps them, so the footer is rewritten
/// ([`crate::footer`]) before it reaches storage.
struct FooterSink {
    file: StagedFile,
    /// Bytes passed on.
    passed: u64,
    /// The footer, once it started.
    footer: Option<Vec<u8>>,
}

impl std::io::Write for FooterSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.footer {
            Some(kept) => {
                kept.extend_from_slice(buf);
                Ok(buf.len())
            }
            None => {
                let n = self.file.write(buf)?;
                self.passed += n as u64;
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.footer {
            Some(_) => Ok(()),
            None => self.file.flush(),
        }
    }
}

impl ParquetFile {
    fn create(staging: &mut Staging, rel: &str, schema: Arc<FileSchema>, props: &WriterPropertiesPtr) -> Result<Self> {
        let file = FooterSink { file: staging.create_file(rel)?, passed: 0, footer: None };
        let writer = SerializedFileWriter::new(file, schema.descr.root_schema_ptr(), Arc::clone(props))
            .map_err(|e| Error::parquet(rel, e))?;
        Ok(ParquetFile { writer, rel: rel.to_string(), schema, rows: 0 })
    }

    fn append_row_group(&mut self, chunks: Vec<EncodedChunk>) -> Result<()> {
        let rel = self.rel.as_str();
        let mut rg = self.writer.next_row_group().map_err(|e| Error::parquet(rel, e))?;
        for c in chunks {
            rg.append_column(&c.bytes, c.close).map_err(|e| Error::parquet(rel, e))?;
        }
        let meta = rg.close().map_err(|e| Error::parquet(rel, e))?;
        self.rows += meta.num_rows() as u64;
        Ok(())
    }

    /// Writes the footer (float leaves in type-defined order, `docs/format.md`
    /// §3), completes the file, then reads the footer back from storage and
    /// checks the pins.
    fn finish(mut self, staging: &Staging) -> Result<manifest::FileEntry> {
        let rel = self.rel.clone();
        self.writer.flush().map_err(|e| Error::io(&rel, e))?;
        self.writer.inner_mut().footer = Some(Vec::new());
        // into_inner writes the footer
        let sink = self.writer.into_inner().map_err(|e| Error::parquet(&rel, e))?;
        let (mut file, mut footer) = (sink.file, sink.footer.unwrap_or_default());
        let floats: Vec<bool> = self
            .schema
            .descr
            .columns()
            .iter()
            .map(|c| matches!(c.physical_type(), parquet::basic::Type::FLOAT | parquet::basic::Type::DOUBLE))
            .collect();
        crate::float_order::type_defined_float_order(&mut footer, sink.passed, &floats)
            .map_err(|e| Error::parquet(&rel, parquet::errors::ParquetError::General(e)))?;
        std::io::Write::write_all(&mut file, &footer).map_err(|e| Error::io(&rel, e))?;
        let written = file.finish()?;
        let stored = staging.open_staged(&rel)?;
        let meta = ParquetMetaDataReader::new().parse_and_finish(&stored).map_err(|e| Error::parquet(&rel, e))?;
        self_check(Path::new(&rel), &self.schema, &meta)?;
        Ok(manifest::FileEntry { path: written.path, bytes: written.bytes, rows: self.rows, sha256: written.sha256 })
    }
}

/// Writes a small table as one row group (none when empty) with content-defined
/// pages shared by all columns.
fn write_table(
    staging: &mut Staging,
    rel: &str,
    schema: FileSchema,
    cols: Columns,
    row_keys: impl Iterator<Item = (u64, u64)>,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let props = schema.properties(codec, created_by)?;
    let pages = layout::table_pages(row_keys);
    let schema = Arc::new(schema);
    let mut file = ParquetFile::create(staging, rel, Arc::clone(&schema), &props)?;
    if !pages.is_empty() {
        use rayon::prelude::*;
        let chunks = cols
            .leaves
            .par_iter()
            .enumerate()
            .map(|(i, leaf)| {
                encode_chunk(schema.descr.column(i), &props, leaf, &pages).map_err(|e| Error::parquet(rel, e))
            })
            .collect::<Result<Vec<_>>>()?;
        file.append_row_group(chunks)?;
    }
    file.finish(staging)
}

fn opt(s: &Option<String>) -> Option<&str> {
    s.as_deref()
}

fn write_index(
    staging: &mut Staging,
    metas: &[SeriesMeta],
    index: &[IndexRow],
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let m = |r: &IndexRow| &metas[r.series as usize];
    let shard_paths: Vec<String> = index.iter().map(|r| shard_path(r.shard)).collect();
    let mut c = Columns::default();
    c.ids(index.iter().map(|r| m(r).time_series_id.as_str()), ids.get(IdSpace::TimeSeries))?;
    c.i32s(index.iter().map(|r| r.chunk_idx as i32).collect());
    c.strs(index.iter().map(|r| m(r).spec_type.as_str()));
    c.strs(index.iter().map(|r| m(r).channel.as_str()));
    c.opt_strs(&index.iter().map(|r| opt(&m(r).units)).collect::<Vec<_>>());
    c.f64s(index.iter().map(|r| m(r).sampling_rate_hz).collect());
    c.f64s(index.iter().map(|r| m(r).t_start_s).collect());
    c.opt_f64s(&index.iter().map(|r| m(r).t_end_s).collect::<Vec<_>>());
    c.i64s(index.iter().map(|r| r.value_offset as i64).collect());
    c.i32s(index.iter().map(|r| r.n_values as i32).collect());
    c.strs(shard_paths.iter().map(String::as_str));
    c.i32s(index.iter().map(|r| r.row_group as i32).collect());
    c.i32s(index.iter().map(|r| r.row_offset as i32).collect());
    c.f32s(index.iter().map(|r| r.partial.min as f32).collect());
    c.f32s(index.iter().map(|r| r.partial.max as f32).collect());
    c.f64s(index.iter().map(|r| r.partial.mean).collect());
    c.f64s(index.iter().map(|r| r.partial.std()).collect());
    let keys =
        index.iter().map(|r| (96 + m(r).time_series_id.len() as u64, key_hash(&m(r).time_series_id, r.chunk_idx)));
    write_table(staging, "time_series_index.parquet", tables::index_schema(ids)?, c, keys, codec, created_by)
}

fn write_samples(
    staging: &mut Staging,
    d: &TimeFDataset,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let s: Vec<_> = d.samples.values().collect();
    let mut c = Columns::default();
    c.ids(s.iter().map(|x| x.sample_id.as_str()), ids.get(IdSpace::Sample))?;
    c.ids(s.iter().map(|x| x.source_id.as_str()), ids.get(IdSpace::Source))?;
    c.opt_ids(&s.iter().map(|x| opt(&x.subject_id)).collect::<Vec<_>>(), ids.get(IdSpace::Subject))?;
    c.opt_f64s(&s.iter().map(|x| x.t_start_s).collect::<Vec<_>>());
    c.opt_f64s(&s.iter().map(|x| x.t_end_s).collect::<Vec<_>>());
    c.series_refs(&s.iter().map(|x| x.series.as_slice()).collect::<Vec<_>>(), ids.get(IdSpace::TimeSeries))?;
    c.key_value_lists(&s.iter().map(|x| &x.metadata).collect::<Vec<_>>());
    let keys = s.iter().map(|x| (64 + 48 * x.series.len() as u64, key_hash(&x.sample_id, 0)));
    write_table(staging, "samples.parquet", tables::samples_schema(ids)?, c, keys, codec, created_by)
}

fn write_annotations(
    staging: &mut Staging,
    d: &TimeFDataset,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    // one row per (sample, annotation), sorted by (sample_id, annotation_id)
    let mut rows: Vec<(&str, &crate::dataset::Annotation)> =
        d.annotations.values().flat_map(|(a, samples)| samples.iter().map(move |s| (s.as_str(), a))).collect();
    rows.sort_by(|x, y| (x.0, &x.1.annotation_id).cmp(&(y.0, &y.1.annotation_id)));
    let mut c = Columns::default();
    c.ids(rows.iter().map(|r| r.0), ids.get(IdSpace::Sample))?;
    c.ids(rows.iter().map(|r| r.1.annotation_id.as_str()), ids.get(IdSpace::Annotation))?;
    c.strs(rows.iter().map(|r| r.1.annotation_type.as_str()));
    c.strs(rows.iter().map(|r| r.1.key.as_str()));
    c.opt_strs(&rows.iter().map(|r| opt(&r.1.value_str)).collect::<Vec<_>>());
    c.opt_f64s(&rows.iter().map(|r| r.1.value_num).collect::<Vec<_>>());
    c.opt_f64s(&rows.iter().map(|r| r.1.t_start_s).collect::<Vec<_>>());
    c.opt_f64s(&rows.iter().map(|r| r.1.t_end_s).collect::<Vec<_>>());
    c.opt_strs(&rows.iter().map(|r| opt(&r.1.channel)).collect::<Vec<_>>());
    let keys = rows.iter().map(|r| {
        (64 + r.1.value_str.as_ref().map_or(0, |s| s.len() as u64), key_hash(r.0, 0) ^ key_hash(&r.1.annotation_id, 0))
    });
    write_table(staging, "annotations.parquet", tables::annotations_schema(ids)?, c, keys, codec, created_by)
}

fn write_tasks(
    staging: &mut Staging,
    name: &str,
    tasks: &BTreeMap<String, crate::dataset::Task>,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let t: Vec<_> = tasks.values().collect();
    let sample = ids.get(IdSpace::Sample);
    let mut c = Columns::default();
    c.ids(t.iter().map(|x| x.task_id.as_str()), ids.get(IdSpace::Task))?;
    c.strs(t.iter().map(|x| x.task_type.as_str()));
    c.opt_strs(&t.iter().map(|x| opt(&x.split)).collect::<Vec<_>>());
    c.id_lists(&t.iter().map(|x| Some(x.sample_ids.as_slice())).collect::<Vec<_>>(), false, sample)?;
    c.opt_strs(&t.iter().map(|x| opt(&x.target)).collect::<Vec<_>>());
    c.opt_ids(&t.iter().map(|x| opt(&x.target_sample_id)).collect::<Vec<_>>(), sample)?;
    c.id_lists(&t.iter().map(|x| x.context_sample_ids.as_deref()).collect::<Vec<_>>(), true, sample)?;
    c.opt_ids(&t.iter().map(|x| opt(&x.from_task)).collect::<Vec<_>>(), ids.get(IdSpace::Task))?;
    c.opt_i32s(&t.iter().map(|x| x.horizon).collect::<Vec<_>>());
    c.opt_strs(&t.iter().map(|x| opt(&x.prompt)).collect::<Vec<_>>());
    c.opt_strs(&t.iter().map(|x| opt(&x.answer)).collect::<Vec<_>>());
    let keys = t.iter().map(|x| (64 + 40 * x.sample_ids.len() as u64, key_hash(&x.task_id, 0)));
    let rel = format!("tasks/task={name}/part-0.parquet");
    write_table(staging, &rel, tables::tasks_schema(ids)?, c, keys, codec, created_by)
}

fn build_manifest(
    d: &TimeFDataset,
    o: &WriterOptions,
    ids: IdEncodings,
    files: Vec<manifest::FileEntry>,
    series: &SeriesOutput,
    derived_from: Option<manifest::DerivedFrom>,
) -> Manifest {
    use manifest::*;
    let mut schema = SchemaBlock::default();
    for m in d.series() {
        schema.add_series(m);
    }
    for (a, _) in d.annotations() {
        schema.add_annotation(a);
    }
    for (name, t) in d.tasks() {
        schema.add_task(name, t);
    }
    schema.sample_metadata =
        d.samples().flat_map(|s| s.metadata.keys().cloned()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut statistics: BTreeMap<String, BTreeMap<String, ChannelStats>> = BTreeMap::new();
    for ((spec, ch), p) in &series.stats {
        statistics.entry(spec.clone()).or_default().insert(ch.clone(), p.to_stats());
    }
    let counts = Counts {
        samples: d.samples.len() as u64,
        time_series: d.series.len() as u64,
        chunks: series.index.len() as u64,
        values: series.index.iter().map(|r| u64::from(r.n_values)).sum(),
        annotations: d.annotations.len() as u64,
        tasks: d.tasks.iter().map(|(n, t)| (n.clone(), t.len() as u64)).collect(),
        shards: series.shards as u64,
    };
    Manifest {
        format: FORMAT.to_string(),
        format_version: FORMAT_VERSION,
        dataset: DatasetBlock {
            name: d.info.name.clone(),
            version: d.info.version.clone(),
            description: d.info.description.clone(),
            license: d.info.license.clone(),
            citation: d.info.citation.clone(),
        },
        created_by: CreatedBy {
            crate_version: format!("timef {}", env!("CARGO_PKG_VERSION")),
            parquet: parquet::file::properties::DEFAULT_CREATED_BY.to_string(),
        },
        schema,
        counts,
        id_encoding: IdSpace::ALL.iter().map(|s| (s.name().to_string(), ids.get(*s).as_str().to_string())).collect(),
        files,
        writer: WriterBlock {
            shard_target_bytes: o.shard_target_bytes,
            shard_max_bytes: o.shard_max_bytes(),
            row_group_target_bytes: o.row_group_target_bytes,
            row_group_max_bytes: o.row_group_max_bytes(),
            chunk_max_bytes: o.chunk_max_bytes,
            compression: "zstd".to_string(),
            compression_level: o.compression_level,
            content_defined_chunking: CdcBlock {
                method: "row-key-v1".to_string(),
                min_chunk_size: layout::PAGE_MIN_BYTES,
                max_chunk_size: layout::PAGE_MAX_BYTES,
            },
        },
        sources: d
            .sources()
            .map(|s| SourceEntry {
                source_id: s.source_id.clone(),
                name: s.name.clone(),
                url: s.url.clone(),
                license: s.license.clone(),
                citation: s.citation.clone(),
            })
            .collect(),
        statistics,
        derived_from,
        manifest_sha256: None,
    }
    .sealed()
}
