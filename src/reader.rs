//! Reading a committed version back (issue 4, "Reader").
//!
//! [`Version::open`] refuses anything that is not a committed TimeF v1 version.
//! Tables are read through arrow-rs; ids always come back as canonical strings,
//! whatever their storage. [`Version::read_series`] follows the index pointers
//! and reads only the row groups, and within them only the rows (through the
//! page index), that hold the series' chunks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int32Type, Int64Type};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use crate::dataset::{
    Annotation, DatasetInfo, Sample, SeriesMeta, SeriesRef, SeriesValues, Source, Task, TaskType, TimeFDataset,
};
use crate::error::{Error, Result};
use crate::footer::{
    contain, read_metadata, version_arrow_error, version_parquet_error, CheckedPages, DEFAULT_BATCH_ROWS,
};
use crate::manifest::{Manifest, MAX_MANIFEST_BYTES};
use crate::storage::version_path::path_problem;
use crate::storage::{Location, ReadFailure, Small, Source as FileSource, MANIFEST};

/// One row of `time_series_index.parquet`: one chunk of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// Series-level metadata (repeated on every chunk row).
    pub meta: SeriesMeta,
    /// Chunk number within the series.
    pub chunk_idx: i32,
    /// Index of the chunk's first value within its series.
    pub value_offset: i64,
    /// Values in the chunk.
    pub n_values: i32,
    /// Shard holding the chunk, relative to the version directory.
    pub shard_path: String,
    /// Row group within the shard.
    pub row_group: i32,
    /// Row within the row group.
    pub row_offset: i32,
    /// Chunk minimum.
    pub min: f32,
    /// Chunk maximum.
    pub max: f32,
    /// Chunk mean.
    pub mean: f64,
    /// Chunk population standard deviation.
    pub std: f64,
}

/// A committed version opened for reading, on local disk or an object store
/// (reads go through [`crate::storage`]: ranged GETs of what is needed).
#[derive(Debug)]
pub struct Version {
    dir: PathBuf,
    loc: Location,
    manifest: Manifest,
    manifest_sha256: String,
    /// The manifest's `files` paths: the only files of the version a reader opens.
    listed: std::collections::BTreeSet<String>,
    index: OnceLock<Vec<IndexEntry>>,
    /// series id -> its chunks' rows in the index (contiguous: the index is sorted by series)
    series_rows: OnceLock<std::collections::HashMap<String, std::ops::Range<usize>>>,
}

/// Canonical strings of an id column (uuid16 or string), or of any UTF-8 column.
pub(crate) fn strings(path: &Path, col: &ArrayRef) -> Result<Vec<Option<String>>> {
    match col.data_type() {
        DataType::FixedSizeBinary(16) => {
            let a = col.as_fixed_size_binary();
            Ok((0..a.len())
                .map(|i| {
                    a.is_valid(i).then(|| {
                        let b: [u8; 16] = a.value(i).try_into().unwrap_or([0; 16]);
                        uuid::Uuid::from_bytes(b).hyphenated().to_string()
                    })
                })
                .collect())
        }
        DataType::Utf8 => {
            let a = col.as_string::<i32>();
            Ok((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i).to_string())).collect())
        }
        _ => {
            let c = arrow::compute::cast(col, &DataType::Utf8).map_err(|e| version_arrow_error(path, e))?;
            strings(path, &c)
        }
    }
}

pub(crate) fn req(path: &Path, v: Vec<Option<String>>, column: &str) -> Result<Vec<String>> {
    v.into_iter()
        .map(|s| {
            s.ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("null in required column {column}") })
        })
        .collect()
}

pub(crate) fn col<'a>(path: &Path, batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    batch
        .column_by_name(name)
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} missing") })
}

pub(crate) fn f64s(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<Option<f64>>> {
    let a = col(path, batch, name)?
        .as_primitive_opt::<Float64Type>()
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} is not float64") })?;
    Ok((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))).collect())
}

pub(crate) fn i32s(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<Option<i32>>> {
    let a = col(path, batch, name)?
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} is not int32") })?;
    Ok((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))).collect())
}

/// The rows of a list column as `(range into the child, child)`; null lists are `None`.
pub(crate) fn lists(
    path: &Path,
    batch: &RecordBatch,
    name: &str,
) -> Result<(Vec<Option<std::ops::Range<usize>>>, ArrayRef)> {
    let c = col(path, batch, name)?;
    let l = c
        .as_list_opt::<i32>()
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} is not a list") })?;
    let o = l.value_offsets();
    let ranges = (0..l.len()).map(|i| l.is_valid(i).then(|| o[i] as usize..o[i + 1] as usize)).collect();
    Ok((ranges, Arc::clone(l.values())))
}

/// Opens a Parquet file of a version: the footer's sizes checked against the
/// file (docs/format.md "Limits a reader checks"), the page index read when
/// `page_index` asks for it; every failure of the bytes is [`Error::Corrupt`].
pub(crate) fn open_parquet(
    loc: &Location,
    page_index: PageIndexPolicy,
) -> Result<(CheckedPages<FileSource>, Arc<ParquetMetaData>)> {
    let path = &loc.to_path_buf();
    let file = loc.open()?;
    let meta = contain(|| read_metadata(&file, page_index, page_index))
        .map_err(|panic| Error::Corrupt { path: path.clone(), reason: panic })?
        .map_err(|e| version_parquet_error(path, e))?;
    Ok((CheckedPages::new(file, &meta), Arc::new(meta)))
}

/// A decoder's error on a file of a version: the failed read behind it when
/// one failed (I/O, object store), else [`Error::Corrupt`].
fn decode_error(path: &Path, failure: &ReadFailure, e: arrow::error::ArrowError) -> Error {
    match failure.take() {
        Some(io) => Error::io(path, io),
        None => version_arrow_error(path, e),
    }
}

/// Reads a whole (small) table file into one batch, decoded in batches of
/// [`DEFAULT_BATCH_ROWS`] rows; the rows decoded must be the rows the footer claims.
fn read_table(loc: &Location) -> Result<RecordBatch> {
    let path = &loc.to_path_buf();
    let (file, meta) = open_parquet(loc, PageIndexPolicy::Skip)?;
    let claimed = meta.file_metadata().num_rows();
    let failure = file.inner().read_failure();
    let read = || -> Result<RecordBatch> {
        let arrow = ArrowReaderMetadata::try_new(meta, ArrowReaderOptions::new())
            .map_err(|e| version_parquet_error(path, e))?;
        let schema = arrow.schema().clone();
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, arrow)
            .with_batch_size(DEFAULT_BATCH_ROWS)
            .build()
            .map_err(|e| version_parquet_error(path, e))?;
        let mut batches = Vec::new();
        let mut rows = 0i64;
        for batch in reader {
            let batch = batch.map_err(|e| decode_error(path, &failure, e))?;
            rows += batch.num_rows() as i64;
            if rows > claimed {
                break;
            }
            batches.push(batch);
        }
        if rows != claimed {
            return Err(Error::Corrupt {
                path: path.clone(),
                reason: format!("the footer claims {claimed} rows, the pages hold {rows}"),
            });
        }
        arrow::compute::concat_batches(&schema, &batches).map_err(|e| version_arrow_error(path, e))
    };
    contain(read).map_err(|panic| Error::Corrupt { path: path.clone(), reason: panic })?
}

/// `loc` opened as a version ([`Location::open_version`]); a missing
/// directory is [`Error::Missing`], a file is not a version.
pub(crate) fn open_version(loc: &Location) -> Result<Location> {
    match loc.open_version() {
        Err(Error::Io { source, .. })
            if matches!(source.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) =>
        {
            Err(loc.no_manifest())
        }
        other => other,
    }
}

/// The bytes of the `manifest.json` of the version at `loc`.
///
/// # Errors
/// [`Error::Missing`] when nothing is at `loc`; [`Error::NotAVersion`] when
/// the manifest is missing, or not a regular file of sane
/// size (so a FIFO or /dev/zero in its place cannot hang or exhaust memory).
pub(crate) fn manifest_bytes(loc: &Location) -> Result<Vec<u8>> {
    let dir = loc.to_path_buf();
    match open_version(loc)?.version_file(MANIFEST)?.read_small(MAX_MANIFEST_BYTES)? {
        Small::Bytes(b) => Ok(b),
        Small::Missing => Err(loc.no_manifest()),
        Small::Refused(why) => Err(Error::NotAVersion { path: dir, reason: format!("manifest.json is {why}") }),
    }
}

impl Version {
    /// Opens the version at `dir`, a local directory or (when its text is one)
    /// an object-store URL with options from the environment.
    ///
    /// # Errors
    /// [`Error::Missing`] when nothing is at `dir` (no directory; no bucket; no
    /// object under the prefix); [`Error::NotAVersion`] without `manifest.json`,
    /// or with a manifest of another `format` / `format_version` or one that
    /// does not parse; [`Error::InvalidUrl`], [`Error::UnknownStorageOption`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Version> {
        Version::open_at(Location::from_path(dir.as_ref())?)
    }

    /// Opens the version at `loc` (see [`Location::parse`]).
    ///
    /// # Errors
    /// As [`Version::open`]; [`Error::ObjectStore`] when the store fails.
    pub fn open_at(loc: Location) -> Result<Version> {
        let v = Version::open_unchecked(loc)?;
        for (i, f) in v.manifest.files.iter().enumerate() {
            if let Some(problem) = path_problem(&f.path) {
                return Err(Error::Corrupt {
                    path: v.dir.join(MANIFEST),
                    reason: format!("files[{i}]: path {:?} {problem}", f.path),
                });
            }
        }
        // task names become folder names (tasks/task=<name>/): checked like a user's
        for name in v.manifest.counts.tasks.keys() {
            if let Err(Error::Validation { reason, .. }) = crate::dataset::validate_name(name, "task_name") {
                return Err(Error::Corrupt {
                    path: v.dir.join(MANIFEST),
                    reason: format!("counts.tasks: task name {name:?} {reason}"),
                });
            }
        }
        Ok(v)
    }

    /// [`Version::open_at`] without checking the manifest's `files` paths
    /// (`verify` reports each bad one as a finding instead).
    pub(crate) fn open_unchecked(loc: Location) -> Result<Version> {
        // opened once: every file of the version is read through this handle
        let loc = open_version(&loc)?;
        let bytes = manifest_bytes(&loc)?;
        let manifest = Manifest::parse(&bytes).map_err(|p| Error::NotAVersion {
            path: loc.to_path_buf(),
            reason: format!("manifest.json {}: {}", p.location, p.reason),
        })?;
        let manifest_sha256 = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(&bytes))
        };
        let listed = manifest.files.iter().map(|f| f.path.clone()).collect();
        Ok(Version {
            dir: loc.to_path_buf(),
            loc,
            manifest,
            manifest_sha256,
            listed,
            index: OnceLock::new(),
            series_rows: OnceLock::new(),
        })
    }

    /// The version directory (a URL stays a URL).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the version lives.
    pub fn location(&self) -> &Location {
        &self.loc
    }

    /// The file `rel` of this version, which `origin` (a file and row, or
    /// "the format" for a file the format names) points at: only a path that
    /// satisfies the path rules and is listed in the manifest's `files`
    /// (docs/format.md "Paths inside a version"). Local files are then opened
    /// without following a symbolic link.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming `origin` and the path, before anything is opened.
    pub(crate) fn file(&self, rel: &str, origin: impl FnOnce() -> String) -> Result<Location> {
        let problem =
            path_problem(rel).or_else(|| (!self.listed.contains(rel)).then_some("is not listed in manifest.json"));
        match problem {
            None => self.loc.version_file(rel),
            Some(problem) => {
                Err(Error::Corrupt { path: self.dir.clone(), reason: format!("{}: path {rel:?} {problem}", origin()) })
            }
        }
    }

    /// A file the format names (`samples.parquet`, ...): [`Version::file`].
    fn named(&self, rel: &str) -> Result<Location> {
        self.file(rel, || "the format's file".into())
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// sha256 (hex) of the `manifest.json` bytes.
    pub fn manifest_sha256(&self) -> &str {
        &self.manifest_sha256
    }

    /// The series index, one entry per chunk, in file order
    /// (`spec_type, channel, time_series_id, chunk_idx`). Read once and cached.
    pub fn index(&self) -> Result<&[IndexEntry]> {
        if let Some(i) = self.index.get() {
            return Ok(i);
        }
        let i = self.read_index()?;
        Ok(self.index.get_or_init(|| i))
    }

    fn read_index(&self) -> Result<Vec<IndexEntry>> {
        let p = self.named("time_series_index.parquet")?;
        index_rows(&p.to_path_buf(), &read_table(&p)?)
    }

    /// The whole stored table of file `path` (relative to the version directory,
    /// `/`-separated, one of the manifest's `files`), as its Parquet file holds it:
    /// ids in their stored encoding (`uuid16` or string), categoricals as
    /// dictionaries. For bindings that hand tables to Arrow readers unchanged.
    ///
    /// # Errors
    /// [`Error::Validation`] when `path` is not a file of the version; I/O and
    /// parquet errors.
    pub fn table(&self, path: &str) -> Result<RecordBatch> {
        if !self.listed.contains(path) {
            return Err(Error::validation(path, "path", "not a file of this version"));
        }
        read_table(&self.file(path, || "the caller's table".into())?)
    }

    /// Series metadata, one per series, in index order.
    pub fn series(&self) -> Result<Vec<SeriesMeta>> {
        let mut out: Vec<SeriesMeta> = Vec::new();
        for e in self.index()? {
            if out.last().is_none_or(|m| m.time_series_id != e.meta.time_series_id) {
                out.push(e.meta.clone());
            }
        }
        Ok(out)
    }

    /// The values of series `time_series_id`, read by following its index
    /// pointers: only the row groups that hold its chunks are read, and within
    /// them only its rows, selected through the page index.
    ///
    /// # Errors
    /// [`Error::Validation`] for an unknown id; [`Error::Corrupt`] when a pointer
    /// does not land on the expected `(time_series_id, chunk_idx)`.
    pub fn read_series(&self, time_series_id: &str) -> Result<SeriesValues> {
        let index = self.index()?;
        let rows = self.series_rows.get_or_init(|| {
            let mut map = std::collections::HashMap::new();
            let mut start = 0;
            for i in 1..=index.len() {
                if i == index.len() || index[i].meta.time_series_id != index[start].meta.time_series_id {
                    map.insert(index[start].meta.time_series_id.clone(), start..i);
                    start = i;
                }
            }
            map
        });
        let range = match rows.get(time_series_id) {
            Some(r) => r.clone(),
            None => return Err(Error::validation(time_series_id, "time_series_id", "no such series in this version")),
        };
        let chunks: Vec<&IndexEntry> = index[range.clone()].iter().collect();
        // every shard path checked before any shard is opened
        let mut shards: BTreeMap<&str, Location> = BTreeMap::new();
        for (row, c) in range.zip(&chunks) {
            if !shards.contains_key(c.shard_path.as_str()) {
                let origin = || format!("time_series_index.parquet row {row} ({time_series_id} chunk {})", c.chunk_idx);
                shards.insert(c.shard_path.as_str(), self.file(&c.shard_path, origin)?);
            }
        }
        // group consecutive chunks by (shard, row group)
        let mut groups: BTreeMap<(&str, i32), Vec<&IndexEntry>> = BTreeMap::new();
        for c in &chunks {
            groups.entry((c.shard_path.as_str(), c.row_group)).or_default().push(c);
        }
        let mut parts: Vec<(i32, Vec<f32>)> = Vec::with_capacity(chunks.len());
        for ((shard, rg), entries) in groups {
            let loc = &shards[shard];
            let path = loc.to_path_buf();
            let (file, meta) = open_parquet(loc, PageIndexPolicy::Optional)?;
            let failure = file.inner().read_failure();
            let arrow = ArrowReaderMetadata::try_new(meta, ArrowReaderOptions::new())
                .map_err(|e| version_parquet_error(&path, e))?;
            let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, arrow);
            let rg_rows = builder
                .metadata()
                .row_groups()
                .get(usize::try_from(rg).unwrap_or(usize::MAX))
                .map(|m| usize::try_from(m.num_rows()).unwrap_or(0))
                .ok_or_else(|| Error::Corrupt { path: path.clone(), reason: format!("no row group {rg}") })?;
            let mut offsets: Vec<usize> =
                entries.iter().map(|e| usize::try_from(e.row_offset).unwrap_or(usize::MAX)).collect();
            offsets.sort_unstable();
            if offsets.last().is_some_and(|&o| o >= rg_rows) {
                return Err(Error::Corrupt { path, reason: format!("row offset beyond row group {rg}") });
            }
            let selection = RowSelection::from_consecutive_ranges(offsets.iter().map(|&o| o..o + 1), rg_rows);
            // by name, so a shard missing a column is reported, not indexed past
            let roots = builder.parquet_schema().root_schema().get_fields();
            let root = |name: &str| {
                roots
                    .iter()
                    .position(|f| f.name() == name)
                    .ok_or_else(|| Error::Corrupt { path: path.clone(), reason: format!("shard has no {name} column") })
            };
            let wanted = [root("time_series_id")?, root("chunk_idx")?, root("values")?];
            let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
            let reader = builder
                .with_row_groups(vec![rg as usize])
                .with_row_selection(selection)
                .with_projection(mask)
                .with_batch_size(DEFAULT_BATCH_ROWS)
                .build()
                .map_err(|e| version_parquet_error(&path, e))?;
            let batches = contain(|| reader.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|panic| Error::Corrupt { path: path.clone(), reason: panic })?
                .map_err(|e| decode_error(&path, &failure, e))?;
            for batch in batches {
                let ids = strings(&path, col(&path, &batch, "time_series_id")?)?;
                let idx = i32s(&path, &batch, "chunk_idx")?;
                let (ranges, values) = lists(&path, &batch, "values")?;
                let values = values
                    .as_primitive_opt::<Float32Type>()
                    .ok_or_else(|| Error::Corrupt { path: path.clone(), reason: "values are not float32".into() })?;
                for i in 0..batch.num_rows() {
                    if ids[i].as_deref() != Some(time_series_id) {
                        return Err(Error::Corrupt {
                            path: path.clone(),
                            reason: format!("pointer of {time_series_id} lands on {:?}", ids[i]),
                        });
                    }
                    let r = ranges[i].clone().unwrap_or(0..0);
                    parts.push((idx[i].unwrap_or(-1), values.values()[r].to_vec()));
                }
            }
        }
        parts.sort_by_key(|(k, _)| *k);
        let expected: Vec<i32> = (0..chunks.len() as i32).collect();
        if parts.iter().map(|(k, _)| *k).collect::<Vec<_>>() != expected {
            return Err(Error::Corrupt {
                path: self.dir.clone(),
                reason: format!("chunks of {time_series_id} do not match the index"),
            });
        }
        Ok(parts.into_iter().flat_map(|(_, v)| v).collect::<Vec<f32>>().into())
    }

    /// The values of a sample's series restricted to the sample's window
    /// (`t_start_s`/`t_end_s`, on the series' time axis; the whole series when unset).
    pub fn read_sample_series(&self, sample: &Sample, time_series_id: &str) -> Result<SeriesValues> {
        let values = self.read_series(time_series_id)?;
        let meta = self
            .index()?
            .iter()
            .find(|e| e.meta.time_series_id == time_series_id)
            .map(|e| e.meta.clone())
            .ok_or_else(|| Error::validation(time_series_id, "time_series_id", "no such series"))?;
        let at = |t: f64| {
            (((t - meta.t_start_s) * meta.sampling_rate_hz).round_ties_even().max(0.0) as usize).min(values.len())
        };
        let start = sample.t_start_s.map_or(0, at);
        let end = sample.t_end_s.map_or(values.len(), at).max(start);
        Ok(values.slice(start, end - start))
    }

    /// All samples, sorted by id.
    pub fn samples(&self) -> Result<Vec<Sample>> {
        let p = self.named("samples.parquet")?;
        sample_rows(&p.to_path_buf(), &read_table(&p)?)
    }

    /// All annotation rows as `(sample_id, annotation)`, sorted by (sample, annotation id).
    pub fn annotations(&self) -> Result<Vec<(String, Annotation)>> {
        let p = self.named("annotations.parquet")?;
        annotation_rows(&p.to_path_buf(), &read_table(&p)?)
    }

    /// Task names, sorted.
    pub fn task_names(&self) -> Vec<String> {
        self.manifest.counts.tasks.keys().cloned().collect()
    }

    /// The tasks of `task_name`, sorted by id.
    pub fn tasks(&self, task_name: &str) -> Result<Vec<Task>> {
        crate::dataset::validate_name(task_name, "task_name")?;
        let p = self
            .file(&format!("tasks/task={task_name}/part-0.parquet"), || format!("manifest.json task {task_name:?}"))?;
        task_rows(&p.to_path_buf(), &read_table(&p)?)
    }

    /// The whole version as a dataset whose series loaders read lazily from this
    /// version's shards, named `name`/`version`. The base of a copy-on-write
    /// edit. Loaders called in index order (as the writer calls them) share one
    /// scan of the series whose loaders are alive at the first call, so each
    /// page is decoded once and a removed series' pages are not read; out of
    /// order, a loader reads its series alone.
    pub fn to_dataset(self: &Arc<Self>, name: &str, version: &str) -> Result<TimeFDataset> {
        let m = &self.manifest;
        let mut d = TimeFDataset::new(name, version)?;
        d.info = DatasetInfo {
            name: name.to_string(),
            version: version.to_string(),
            description: m.dataset.description.clone(),
            license: m.dataset.license.clone(),
            citation: m.dataset.citation.clone(),
        };
        for s in &m.sources {
            d.add_source(Source {
                source_id: s.source_id.clone(),
                name: s.name.clone(),
                url: s.url.clone(),
                license: s.license.clone(),
                citation: s.citation.clone(),
            })?;
        }
        // the writer loads series in index order: one scan answers them all
        let cursor = crate::scan::SeriesCursor::new(Arc::clone(self));
        for meta in self.series()? {
            let loader = crate::scan::SeriesCursor::loader(&cursor, meta.time_series_id.clone());
            d.add_series(meta, loader)?;
        }
        for s in self.samples()? {
            d.add_sample(s)?;
        }
        for (sample, a) in self.annotations()? {
            d.add_annotation(a, &[sample])?;
        }
        for name in self.task_names() {
            for t in self.tasks(&name)? {
                d.add_task(&name, t)?;
            }
        }
        Ok(d)
    }
}

/// The index entries of one batch of `time_series_index.parquet` (`path` names it in errors).
pub(crate) fn index_rows(p: &Path, b: &RecordBatch) -> Result<Vec<IndexEntry>> {
    let ids = req(p, strings(p, col(p, b, "time_series_id")?)?, "time_series_id")?;
    let spec = req(p, strings(p, col(p, b, "spec_type")?)?, "spec_type")?;
    let chan = req(p, strings(p, col(p, b, "channel")?)?, "channel")?;
    let units = strings(p, col(p, b, "units")?)?;
    let shard = req(p, strings(p, col(p, b, "shard_path")?)?, "shard_path")?;
    let rate = f64s(p, b, "sampling_rate_hz")?;
    let t0 = f64s(p, b, "t_start_s")?;
    let t1 = f64s(p, b, "t_end_s")?;
    let chunk = i32s(p, b, "chunk_idx")?;
    let n = i32s(p, b, "n_values")?;
    let rg = i32s(p, b, "row_group")?;
    let ro = i32s(p, b, "row_offset")?;
    let mean = f64s(p, b, "mean")?;
    let std = f64s(p, b, "std")?;
    let off = col(p, b, "value_offset")?
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| Error::Corrupt { path: p.to_path_buf(), reason: "value_offset is not int64".into() })?
        .clone();
    let f32col = |name: &str| -> Result<Vec<f32>> {
        Ok(col(p, b, name)?
            .as_primitive_opt::<Float32Type>()
            .ok_or_else(|| Error::Corrupt { path: p.to_path_buf(), reason: format!("{name} is not float32") })?
            .values()
            .to_vec())
    };
    let (min, max) = (f32col("min")?, f32col("max")?);
    let bad = |what: &str| Error::Corrupt { path: p.to_path_buf(), reason: format!("null {what}") };
    (0..b.num_rows())
        .map(|i| {
            Ok(IndexEntry {
                meta: SeriesMeta {
                    time_series_id: ids[i].clone(),
                    spec_type: spec[i].clone(),
                    channel: chan[i].clone(),
                    units: units[i].clone(),
                    sampling_rate_hz: rate[i].ok_or_else(|| bad("sampling_rate_hz"))?,
                    t_start_s: t0[i].ok_or_else(|| bad("t_start_s"))?,
                    t_end_s: t1[i],
                },
                chunk_idx: chunk[i].ok_or_else(|| bad("chunk_idx"))?,
                value_offset: off.value(i),
                n_values: n[i].ok_or_else(|| bad("n_values"))?,
                shard_path: shard[i].clone(),
                row_group: rg[i].ok_or_else(|| bad("row_group"))?,
                row_offset: ro[i].ok_or_else(|| bad("row_offset"))?,
                min: min[i],
                max: max[i],
                mean: mean[i].ok_or_else(|| bad("mean"))?,
                std: std[i].ok_or_else(|| bad("std"))?,
            })
        })
        .collect()
}

/// The samples of one batch of `samples.parquet` (`path` names it in errors).
pub(crate) fn sample_rows(p: &Path, b: &RecordBatch) -> Result<Vec<Sample>> {
    let ids = req(p, strings(p, col(p, b, "sample_id")?)?, "sample_id")?;
    let src = req(p, strings(p, col(p, b, "source_id")?)?, "source_id")?;
    let subj = strings(p, col(p, b, "subject_id")?)?;
    let (t0, t1) = (f64s(p, b, "t_start_s")?, f64s(p, b, "t_end_s")?);
    let (series, entries) = lists(p, b, "series")?;
    let entries = entries
        .as_struct_opt()
        .ok_or_else(|| Error::Corrupt { path: p.to_path_buf(), reason: "series entries are not structs".into() })?;
    let ts = req(
        p,
        strings(
            p,
            entries.column_by_name("time_series_id").ok_or_else(|| Error::Corrupt {
                path: p.to_path_buf(),
                reason: "series.time_series_id missing".into(),
            })?,
        )?,
        "series.time_series_id",
    )?;
    let views = req(
        p,
        strings(
            p,
            entries
                .column_by_name("view")
                .ok_or_else(|| Error::Corrupt { path: p.to_path_buf(), reason: "series.view missing".into() })?,
        )?,
        "series.view",
    )?;
    let metadata = key_value_rows(p, b, "metadata", &ids)?;
    (0..b.num_rows())
        .map(|i| {
            let r = series[i].clone().unwrap_or(0..0);
            Ok(Sample {
                sample_id: ids[i].clone(),
                source_id: src[i].clone(),
                subject_id: subj[i].clone(),
                t_start_s: t0[i],
                t_end_s: t1[i],
                series: r.map(|j| SeriesRef { time_series_id: ts[j].clone(), view: views[j].clone() }).collect(),
                metadata: metadata[i].clone(),
            })
        })
        .collect()
}

/// The rows of a key/value column: `list<struct<key, value>>`, or in versions
/// written before 2026-11-30 `map<utf8, utf8>` (`docs/format.md`, "Column
/// types"). A null is an empty map. Keys must be sorted and unique and no key
/// or value null; errors name the row's sample id (`sample_ids`).
fn key_value_rows(
    p: &Path,
    b: &RecordBatch,
    name: &str,
    sample_ids: &[String],
) -> Result<Vec<BTreeMap<String, String>>> {
    let c = col(p, b, name)?;
    let corrupt = |reason: String| Error::Corrupt { path: p.to_path_buf(), reason };
    let (valid, offsets, keys, values): (Vec<bool>, &[i32], &ArrayRef, &ArrayRef) = if let Some(m) = c.as_map_opt() {
        ((0..m.len()).map(|i| m.is_valid(i)).collect(), m.value_offsets(), m.keys(), m.values())
    } else if let Some(l) = c.as_list_opt::<i32>() {
        let entries = l.values().as_struct_opt().ok_or_else(|| corrupt(format!("{name} entries are not structs")))?;
        let field = |f: &str| entries.column_by_name(f).ok_or_else(|| corrupt(format!("{name}.{f} missing")));
        ((0..l.len()).map(|i| l.is_valid(i)).collect(), l.value_offsets(), field("key")?, field("value")?)
    } else {
        return Err(corrupt(format!("{name} is neither a list of key/value structs nor a map")));
    };
    let (keys, values) = (strings(p, keys)?, strings(p, values)?);
    let mut out = Vec::with_capacity(valid.len());
    for (i, &valid) in valid.iter().enumerate() {
        let mut row = BTreeMap::new();
        let range = if valid { offsets[i] as usize..offsets[i + 1] as usize } else { 0..0 };
        let id = sample_ids.get(i).map(String::as_str).unwrap_or_default();
        for j in range {
            let (Some(k), Some(v)) = (&keys[j], &values[j]) else {
                return Err(corrupt(format!("sample {id}: null key or value in {name}")));
            };
            if row.last_key_value().is_some_and(|(last, _): (&String, _)| last >= k) {
                return Err(corrupt(format!(
                    "sample {id}: {name} keys are not sorted and unique ({k:?} after an equal or greater key)"
                )));
            }
            row.insert(k.clone(), v.clone());
        }
        out.push(row);
    }
    Ok(out)
}

/// The `(sample_id, annotation)` rows of one batch of `annotations.parquet`.
pub(crate) fn annotation_rows(p: &Path, b: &RecordBatch) -> Result<Vec<(String, Annotation)>> {
    let s = req(p, strings(p, col(p, b, "sample_id")?)?, "sample_id")?;
    let a = req(p, strings(p, col(p, b, "annotation_id")?)?, "annotation_id")?;
    let ty = req(p, strings(p, col(p, b, "annotation_type")?)?, "annotation_type")?;
    let key = req(p, strings(p, col(p, b, "key")?)?, "key")?;
    let vs = strings(p, col(p, b, "value_str")?)?;
    let ch = strings(p, col(p, b, "channel")?)?;
    let (vn, t0, t1) = (f64s(p, b, "value_num")?, f64s(p, b, "t_start_s")?, f64s(p, b, "t_end_s")?);
    Ok((0..b.num_rows())
        .map(|i| {
            (
                s[i].clone(),
                Annotation {
                    annotation_id: a[i].clone(),
                    annotation_type: ty[i].clone(),
                    key: key[i].clone(),
                    value_str: vs[i].clone(),
                    value_num: vn[i],
                    t_start_s: t0[i],
                    t_end_s: t1[i],
                    channel: ch[i].clone(),
                },
            )
        })
        .collect())
}

/// The tasks of one batch of a task file (`path` names it in errors).
pub(crate) fn task_rows(p: &Path, b: &RecordBatch) -> Result<Vec<Task>> {
    let id = req(p, strings(p, col(p, b, "task_id")?)?, "task_id")?;
    let ty = req(p, strings(p, col(p, b, "task_type")?)?, "task_type")?;
    let split = strings(p, col(p, b, "split")?)?;
    let target = strings(p, col(p, b, "target")?)?;
    let tsid = strings(p, col(p, b, "target_sample_id")?)?;
    let from = strings(p, col(p, b, "from_task")?)?;
    let prompt = strings(p, col(p, b, "prompt")?)?;
    let answer = strings(p, col(p, b, "answer")?)?;
    let horizon = i32s(p, b, "horizon")?;
    let (sr, sv) = lists(p, b, "sample_ids")?;
    let sv = strings(p, &sv)?;
    let (cr, cv) = lists(p, b, "context_sample_ids")?;
    let cv = strings(p, &cv)?;
    let take = |r: std::ops::Range<usize>, v: &[Option<String>]| -> Vec<String> {
        v[r].iter().map(|s| s.clone().unwrap_or_default()).collect()
    };
    Ok((0..b.num_rows())
        .map(|i| Task {
            task_id: id[i].clone(),
            task_type: TaskType::parse(&ty[i]),
            split: split[i].clone(),
            sample_ids: take(sr[i].clone().unwrap_or(0..0), &sv),
            target: target[i].clone(),
            target_sample_id: tsid[i].clone(),
            context_sample_ids: cr[i].clone().map(|r| take(r, &cv)),
            from_task: from[i].clone(),
            horizon: horizon[i],
            prompt: prompt[i].clone(),
            answer: answer[i].clone(),
        })
        .collect())
}

/// Committed versions under `root` (a local directory, or a URL):
/// `(dataset name, version)` pairs, sorted. Staging directories (`.tmp-*`),
/// claimed but uncommitted versions, and directories that [`Version::open`]
/// refuses (no manifest, or one of another format) are skipped.
pub fn list_versions(root: &Path) -> Result<Vec<(String, String)>> {
    list_versions_at(&Location::from_path(root)?)
}

/// [`list_versions`] at a [`Location`].
pub fn list_versions_at(root: &Location) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for name in root.list_dirs()? {
        let ds = root.join(&name);
        for version in ds.list_dirs()? {
            if Version::open_at(ds.join(&version)).is_ok() {
                out.push((name.clone(), version));
            }
        }
    }
    out.sort();
    Ok(out)
}
