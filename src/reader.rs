//! Reading a committed version back (issue 4, "Reader").
//!
//! [`Version::open`] refuses anything that is not a committed TimeF v1 version.
//! Tables are read through arrow-rs; ids always come back as canonical strings,
//! whatever their storage. [`Version::read_series`] follows the index pointers
//! and reads only the row groups, and within them only the rows (through the
//! page index), that hold the series' chunks.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::reader::{ChunkReader, Length};
use sha2::{Digest, Sha256};

pub use crate::chunks::IndexEntry;
use crate::chunks::{self, Index};
use crate::dataset::{Annotation, Sample, SeriesMeta, SeriesRef, SeriesValues, Task, TaskType};
use crate::error::{Error, Result};
use crate::footer::{contain, version_arrow_error, version_parquet_error};
use crate::limits::{DEFAULT_BATCH_ROWS, MAX_MANIFEST_BYTES};
use crate::manifest::Manifest;
use crate::parquet_read::{col, decode_error, f64s, i32s, lists, open_parquet, req, strings};
use crate::storage::version_path::path_problem;
use crate::storage::{Location, Small, MANIFEST};

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
    index: OnceLock<Index>,
    /// series id -> its chunks' rows in the index (contiguous: the index is sorted by series)
    series_rows: OnceLock<std::collections::HashMap<String, std::ops::Range<usize>>>,
}

/// Reads a whole (small) table file into one batch, decoded in batches of
/// [`DEFAULT_BATCH_ROWS`] rows: the footer must claim the `rows` the manifest
/// lists for it (checked before anything is decoded, so a footer claiming any
/// count cannot make the decoder reserve it), and the rows decoded must be those.
fn read_table(loc: &Location, rows: u64) -> Result<RecordBatch> {
    let path = &loc.to_path_buf();
    let (file, meta) = open_parquet(loc, PageIndexPolicy::Skip)?;
    let claimed = meta.file_metadata().num_rows();
    if u64::try_from(claimed).ok() != Some(rows) {
        return Err(Error::Corrupt {
            path: path.clone(),
            reason: format!("the footer claims {claimed} rows, manifest.json lists {rows}"),
        });
    }
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
        arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| version_arrow_error(path, e))
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
    /// or with a manifest of another `format` / `format_version`;
    /// [`Error::Corrupt`] with a TimeF manifest that does not parse (not JSON,
    /// a field missing or of the wrong type) or names a file outside the
    /// version; [`Error::InvalidUrl`], [`Error::UnknownStorageOption`].
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
        // another format's manifest.json is not a version; a TimeF one that
        // does not parse is a damaged version (a manifest is written whole, last)
        let manifest = Manifest::parse(&bytes).map_err(|p| match p.other_format {
            true => Error::NotAVersion {
                path: loc.to_path_buf(),
                reason: format!("manifest.json {}: {}", p.location, p.reason),
            },
            false => Error::Corrupt {
                path: loc.to_path_buf().join(MANIFEST),
                reason: format!("{}: {}", p.location, p.reason),
            },
        })?;
        let manifest_sha256 = hex::encode(Sha256::digest(&bytes));
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
            None => self.loc.listed_file(rel),
            Some(problem) => {
                Err(Error::Corrupt { path: self.dir.clone(), reason: format!("{}: path {rel:?} {problem}", origin()) })
            }
        }
    }

    /// The whole small table `rel` (listed, [`Version::file`]), its footer held
    /// to the rows the manifest lists for it ([`read_table`]): the one read of
    /// the index, samples, annotations and tasks tables.
    fn small_table(&self, rel: &str, origin: impl FnOnce() -> String) -> Result<(PathBuf, RecordBatch)> {
        let loc = self.file(rel, origin)?;
        let path = loc.to_path_buf();
        let corrupt = |reason: String| Error::Corrupt { path: path.clone(), reason };
        let entry = self.manifest.files.iter().find(|f| f.path == rel);
        let entry = entry.ok_or_else(|| corrupt("not in manifest.json's files".into()))?;
        // on an object store one GET of the whole file, held while it is hashed and
        // decoded, rather than one download for the hash and requests per page for
        // the decode (best effort: what it misses is read as usual, a failure
        // reported by that read)
        let _whole = loc.read_ahead(Vec::from([0..entry.bytes])).ok();
        // read whole anyway: its bytes are held to the manifest's size and
        // sha256 before a value is decoded (docs/format.md §6), so a table
        // altered at the same size is refused, not carried into an edit
        let source = loc.open()?;
        let len = source.len();
        if len != entry.bytes {
            return Err(corrupt(format!("{len} bytes, manifest.json says {}", entry.bytes)));
        }
        // streamed through the hash: a large index is not held twice
        let mut hasher = Sha256::new();
        let mut read = source.get_read(0).map_err(|e| version_parquet_error(&path, e))?.take(len);
        std::io::copy(&mut read, &mut hasher).map_err(|e| crate::storage::read_failed(&path, e))?;
        let sha256 = hex::encode(hasher.finalize());
        if sha256 != entry.sha256 {
            return Err(corrupt(format!("sha256 {sha256}, manifest.json says {}", entry.sha256)));
        }
        Ok((path.clone(), read_table(&loc, entry.rows)?))
    }

    /// Checks that every file `manifest.json` lists is in the version with the
    /// size in bytes it lists, by one listing of the version (a directory walk, or
    /// one LIST of the prefix on an object store; no file is opened).
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first listed file, in the manifest's order,
    /// that is missing or whose size differs; I/O and store errors of the listing.
    pub fn check_files(&self) -> Result<()> {
        let (found, unreadable_dirs) = self.location().list_files()?;
        let sizes: BTreeMap<&str, u64> = found.iter().map(|(rel, bytes)| (rel.as_str(), *bytes)).collect();
        // its manifest gone since the open: the version (or its place) is, not a file of it
        if !sizes.contains_key(MANIFEST) && unreadable_dirs.is_empty() {
            return Err(self.location().no_manifest());
        }
        let local = self.location().as_local();
        for f in &self.manifest.files {
            let reason = match sizes.get(f.path.as_str()) {
                Some(&bytes) if bytes == f.bytes => continue,
                // a link is listed with its own size: name it for what it is
                Some(_) if local.is_some_and(|d| d.join(&f.path).is_symlink()) => {
                    crate::storage::local::SYMLINK.to_string()
                }
                Some(&bytes) => format!("{bytes} bytes, manifest.json says {}", f.bytes),
                None => {
                    // not seen because a folder on its way could not be listed: that is I/O, not damage
                    let within = |dir: &str| dir == "." || f.path.starts_with(&format!("{dir}/"));
                    if let Some((dir, why)) = unreadable_dirs.iter().find(|(dir, _)| within(dir)) {
                        return Err(Error::io(
                            self.dir().join(dir),
                            std::io::Error::other(format!("cannot list: {why}")),
                        ));
                    }
                    crate::storage::LISTED_BUT_MISSING.to_string()
                }
            };
            return Err(Error::Corrupt { path: self.dir().join(&f.path), reason });
        }
        Ok(())
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
    /// (`spec_type, channel, time_series_id, chunk_idx`). Read and checked
    /// once, then cached.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming `time_series_index.parquet` and the row when
    /// a series' chunks are not consecutive rows numbered 0, 1, ... with
    /// running `value_offset`s, a chunk disagrees with its chunk 0's metadata,
    /// or a count, row group or row offset is negative (docs/format.md "Limits
    /// a reader checks"); I/O and decoding errors.
    pub fn index(&self) -> Result<&[IndexEntry]> {
        Ok(self.checked_index()?.entries())
    }

    /// The index, read and checked once ([`Index::new`]).
    pub(crate) fn checked_index(&self) -> Result<&Index> {
        if let Some(i) = self.index.get() {
            return Ok(i);
        }
        let rel = "time_series_index.parquet";
        let listed = self.manifest.files.iter().find(|f| f.path == rel).map_or(0, |f| f.rows);
        if listed != self.manifest.counts.chunks {
            return Err(Error::Corrupt {
                path: self.dir.join(MANIFEST),
                reason: format!("{rel} is listed with {listed} rows, counts.chunks is {}", self.manifest.counts.chunks),
            });
        }
        let (path, table) = self.small_table(rel, || "the format's file".into())?;
        let i = Index::new(path.clone(), index_rows(&path, &table)?)?;
        Ok(self.index.get_or_init(|| i))
    }

    /// The shard of index row `row` (`e`): [`Version::file`].
    pub(crate) fn shard(&self, row: usize, e: &IndexEntry) -> Result<Location> {
        let origin =
            || format!("time_series_index.parquet row {row} ({} chunk {})", e.meta.time_series_id, e.chunk_idx);
        self.file(&e.shard_path, origin)
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
        Ok(self.small_table(path, || "the caller's table".into())?.1)
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
        let index = self.checked_index()?;
        let rows = self.series_rows.get_or_init(|| {
            let entries = index.entries();
            let mut map = std::collections::HashMap::new();
            let mut start = 0;
            for i in 1..=entries.len() {
                if i == entries.len() || entries[i].meta.time_series_id != entries[start].meta.time_series_id {
                    map.insert(entries[start].meta.time_series_id.clone(), start..i);
                    start = i;
                }
            }
            map
        });
        let Some(range) = rows.get(time_series_id) else {
            return Err(Error::validation(time_series_id, "time_series_id", "no such series in this version"));
        };
        // a scan of one series, in the caller's thread
        let plan = chunks::plan(index, range.clone(), |_| true, |row, e| self.shard(row, e))?;
        let mut values: Vec<f32> = Vec::new();
        for unit in plan.units() {
            for batch in chunks::decode(&plan, unit)? {
                let list = batch.column(3).as_list::<i32>();
                let (o, items) = (list.value_offsets(), list.values().as_primitive::<Float32Type>());
                values.extend_from_slice(&items.values()[o[0] as usize..o[o.len() - 1] as usize]);
            }
        }
        Ok(values.into())
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
        let (path, table) = self.small_table("samples.parquet", || "the format's file".into())?;
        sample_rows(&path, &table)
    }

    /// All annotation rows as `(sample_id, annotation)`, sorted by (sample, annotation id).
    pub fn annotations(&self) -> Result<Vec<(String, Annotation)>> {
        let (path, table) = self.small_table("annotations.parquet", || "the format's file".into())?;
        annotation_rows(&path, &table)
    }

    /// Task names, sorted.
    pub fn task_names(&self) -> Vec<String> {
        self.manifest.counts.tasks.keys().cloned().collect()
    }

    /// The tasks of `task_name`, sorted by id.
    pub fn tasks(&self, task_name: &str) -> Result<Vec<Task>> {
        crate::dataset::validate_name(task_name, "task_name")?;
        let rel = format!("tasks/task={task_name}/part-0.parquet");
        let (path, table) = self.small_table(&rel, || format!("manifest.json task {task_name:?}"))?;
        task_rows(&path, &table)
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
