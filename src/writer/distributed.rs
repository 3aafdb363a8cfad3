//! Distributed writes: plan -> write parts -> commit (`docs/format.md` §1
//! "Distributed writes"; the shape of Lance's `write_fragments` + commit).
//!
//! 1. The coordinator plans ([`DistributedWrite::plan`]) from the dataset's
//!    metadata and each series' number of values ([`PlanInput`]): the sorted
//!    order, the id encodings, the whole layout ([`Layout`]) and the assignment
//!    of whole shards to parts. It claims the version (local: creates the
//!    staging directory `<dataset>/.tmp-<version>-<write id>` and holds its
//!    `flock` until commit or abort; object store: the claim object, holding
//!    the write id, and the parts' prefix `<dataset>/.tmp-<version>-<write id>/`
//!    beside the version) and hands out one [`PartTask`] per part.
//! 2. Each worker runs [`write_part`] with the values of its series: it encodes
//!    its shards with the single-machine writer's code, writes them into its
//!    write's staging only through [`PartStaging`] (complete files only), and
//!    returns a [`PartRecord`]. Workers take no lock; a part run twice writes
//!    the same bytes; a task whose staging is not its write's, or whose write
//!    is over, is refused.
//! 3. The coordinator commits ([`DistributedWrite::commit`]): every planned
//!    shard exactly once, index rows checked against the plan, the staging
//!    closed to parts, each shard made a file of the version (object store: a
//!    server-side copy under the claim) and re-hashed against its record; then
//!    the index, samples, annotations, tasks and manifest, and the publish of
//!    the single-machine writer.
//!
//! The committed bytes equal a single-machine write of the same dataset,
//! whatever the number of parts and the order they finish: the layout is a
//! pure function of the sorted series and their sizes, and channel statistics
//! merge the chunk partials in index order.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::files::{self, SeriesOutput};
use super::index_rows::{IndexRow, IndexSpill};
use super::plan::{bad_plan, chunks, Layout, PlannedSeries, PlannedShard, Planner};
use super::shards::{SeriesKeys, ShardStream};
use super::{decide_ids, push_series, Finite, WriterOptions};
use crate::dataset::columns::SeriesColumns;
use crate::dataset::{validate_name, SeriesValues, TimeFDataset};
use crate::encoding::{Codec, IdEncoding};
use crate::error::{Error, PartProblem, Result};
use crate::layout::shard_path;
use crate::manifest::FileEntry;
use crate::stats::{ChannelStats, Partial};
use crate::storage::{Location, PartStaging, Staging, StagingRef, StorageOptions};
use crate::tables::{self, IdSpace};

/// What a plan is made from: the dataset's metadata (its loaders never run)
/// and the number of float32 values of each series, by `time_series_id`.
pub struct PlanInput {
    /// Samples, series metadata, sources, annotations, tasks.
    pub dataset: TimeFDataset,
    /// Values of every series of `dataset`, and of no other.
    pub n_values: BTreeMap<String, u64>,
}

impl PlanInput {
    /// `dataset` whose series hold `n_values` values each.
    pub fn new(dataset: TimeFDataset, n_values: BTreeMap<String, u64>) -> PlanInput {
        PlanInput { dataset, n_values }
    }
}

/// The plan of a distributed write: small, deterministic for its input and
/// options (except `write_id`), serializable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Names the write and its staging (a UUID v4, simple form).
    pub write_id: String,
    /// Dataset name.
    pub name: String,
    /// Dataset version.
    pub version: String,
    /// The options every part uses.
    pub options: TaskOptions,
    /// `uuid16` or `string`: the `time_series_id` encoding of the shards.
    pub time_series_id_encoding: String,
    /// Sorted series and their shards.
    pub layout: Layout,
    /// Part `p` writes shards `parts[p]` (consecutive, whole shards).
    pub parts: Vec<Vec<u32>>,
}

/// The byte-shaping options, as they travel in a plan or task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskOptions {
    /// [`WriterOptions::shard_target_bytes`].
    pub shard_target_bytes: u64,
    /// [`WriterOptions::row_group_target_bytes`].
    pub row_group_target_bytes: u64,
    /// [`WriterOptions::chunk_max_bytes`].
    pub chunk_max_bytes: u64,
    /// [`WriterOptions::compression_level`].
    pub compression_level: i32,
}

impl TaskOptions {
    fn of(o: &WriterOptions) -> TaskOptions {
        TaskOptions {
            shard_target_bytes: o.shard_target_bytes(),
            row_group_target_bytes: o.row_group_target_bytes(),
            chunk_max_bytes: o.chunk_max_bytes(),
            compression_level: o.compression_level(),
        }
    }

    /// The options, validated as [`crate::options::WriterOptionsBuilder::try_build`] does.
    ///
    /// # Errors
    /// [`Error::InvalidOption`].
    pub fn to_options(&self) -> Result<WriterOptions> {
        WriterOptions::builder()
            .shard_target_bytes(self.shard_target_bytes)
            .row_group_target_bytes(self.row_group_target_bytes)
            .chunk_max_bytes(self.chunk_max_bytes)
            .compression_level(self.compression_level)
            .try_build()
    }
}

impl Plan {
    /// For each series id, the parts whose shards hold its chunks (one part,
    /// or several for a series whose chunks span parts), in part order.
    pub fn router(&self) -> HashMap<String, Vec<u32>> {
        let mut part_of_shard = vec![0u32; self.layout.shards.len()];
        for (p, shards) in self.parts.iter().enumerate() {
            for &s in shards {
                if let Some(slot) = part_of_shard.get_mut(s as usize) {
                    *slot = p as u32;
                }
            }
        }
        let chunk_values = (self.options.chunk_max_bytes / crate::layout::VALUE_BYTES) as usize;
        let mut out: HashMap<String, Vec<u32>> = HashMap::new();
        for shard in &self.layout.shards {
            for i in self.layout.series_of(shard, chunk_values) {
                let parts = out.entry(self.layout.series[i as usize].meta.time_series_id.clone()).or_default();
                let p = part_of_shard[shard.shard as usize];
                if parts.last() != Some(&p) {
                    parts.push(p);
                }
            }
        }
        out
    }
}

/// What one worker needs to write one part: serializable, holds only the
/// series its shards touch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartTask {
    /// The write's id.
    pub write_id: String,
    /// The part number.
    pub part: u32,
    /// Where to write.
    pub staging: StagingRef,
    /// The byte-shaping options.
    pub options: TaskOptions,
    /// `uuid16` or `string`.
    pub time_series_id_encoding: String,
    /// The series the shards touch, in write order.
    pub series: Vec<PlannedSeries>,
    /// The shards, in order; `first_series` counts within `series` above.
    pub shards: Vec<PlannedShard>,
}

/// One index row of a part record: a chunk, where it landed, and its
/// statistics as the index stores them ([`crate::stats::ChannelStats`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartIndexRow {
    /// The chunk's series.
    pub time_series_id: String,
    /// Chunk index within the series.
    pub chunk_idx: u32,
    /// Offset of the chunk's first value within the series.
    pub value_offset: u64,
    /// Values in the chunk.
    pub n_values: u32,
    /// Shard number.
    pub shard: u32,
    /// Row group within the shard.
    pub row_group: u32,
    /// Row within the row group.
    pub row_offset: u32,
    /// Chunk statistics: values.
    pub n: u64,
    /// Chunk statistics: smallest value.
    pub min: f64,
    /// Chunk statistics: largest value.
    pub max: f64,
    /// Chunk statistics: mean.
    pub mean: f64,
    /// Chunk statistics: population standard deviation.
    pub std: f64,
}

/// What a worker reports of a written part (serde JSON, a few hundred bytes
/// per shard plus ~200 bytes per chunk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    /// The write's id.
    pub write_id: String,
    /// The part number.
    pub part: u32,
    /// Its shard files (path, size, rows, sha256), in shard order.
    pub files: Vec<FileEntry>,
    /// Its chunks in write order.
    pub index: Vec<PartIndexRow>,
}

macro_rules! json_methods {
    ($t:ty) => {
        impl $t {
            /// Serializes to JSON.
            pub fn to_json(&self) -> String {
                serde_json::to_string(self).unwrap_or_default()
            }
            /// Parses JSON written by `to_json`.
            ///
            /// # Errors
            /// [`Error::InvalidInput`] naming the type when the text is not one.
            pub fn from_json(text: &str) -> Result<Self> {
                serde_json::from_str(text).map_err(|e| json_refusal(stringify!($t), &e))
            }
        }
    };
}
/// The refusal of JSON that is not a `what`. A value of the wrong type or
/// shape is named by its place only: serde's text repeats it, and a string
/// there may be a URL with credentials (review 132).
fn json_refusal(what: &str, e: &serde_json::Error) -> Error {
    let why = match e.classify() {
        serde_json::error::Category::Data => {
            format!("a value of the wrong type or shape at line {} column {}", e.line(), e.column())
        }
        _ => e.to_string(),
    };
    Error::input(what, None, format!("not a valid {what}: {why}"))
}

json_methods!(Plan);
json_methods!(PartTask);
json_methods!(PartRecord);

fn id_encoding(write_id: &str, text: &str) -> Result<IdEncoding> {
    match text {
        "uuid16" => Ok(IdEncoding::Uuid16),
        "string" => Ok(IdEncoding::String),
        other => Err(bad_plan(write_id, None, None, format!("unknown id encoding {other:?}"))),
    }
}

/// A distributed write in progress on the coordinator: owns the version's
/// staging (local `flock`, or object-store claim and parts' prefix) from plan
/// to commit. Dropping it, or [`DistributedWrite::abort`], removes the staging
/// and every part.
pub struct DistributedWrite {
    staging: Staging,
    plan: Plan,
    dataset: TimeFDataset,
    options: WriterOptions,
    /// [`Location::max_part_file_bytes`] of the version.
    max_file_bytes: Option<u64>,
}

impl std::fmt::Debug for DistributedWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedWrite").field("write_id", &self.plan.write_id).finish_non_exhaustive()
    }
}

impl DistributedWrite {
    /// Plans the write of `input` under `root` (`<root>/<name>/<version>/`) in at
    /// most `parts` parts (at least 1; fewer when there are fewer shards), and
    /// claims the version.
    ///
    /// # Errors
    /// [`Error::Validation`] (names, references, a series without a count or
    /// with a count its `t_end_s` contradicts), [`Error::AlreadyExists`] (before
    /// any I/O), [`Error::InvalidOption`] (`shard_target_bytes`: on an object
    /// store, shards of more than 4/5 of [`crate::storage::MAX_OBJECT_COPY_BYTES`]
    /// of values), I/O and store errors.
    pub fn plan(root: &Location, input: PlanInput, options: WriterOptions, parts: u32) -> Result<DistributedWrite> {
        let PlanInput { dataset, n_values } = input;
        validate_name(&dataset.info.name, "dataset_name")?;
        validate_name(&dataset.info.version, "dataset_version")?;
        dataset.validate_references()?;
        let mut series = Vec::with_capacity(dataset.series_count());
        for m in dataset.series() {
            let n = n_values.get(&m.time_series_id).ok_or_else(|| {
                Error::validation(&m.time_series_id, "n_values", "the plan input gives no number of values")
            })?;
            series.push(PlannedSeries { meta: m, n_values: *n });
        }
        if let Some(extra) = n_values.keys().find(|id| !dataset.contains_series(id)) {
            return Err(Error::validation(
                extra,
                "n_values",
                "a number of values for a series the dataset does not hold",
            ));
        }
        let target = root.join(&dataset.info.name).join(&dataset.info.version);
        let max_file_bytes = target.max_part_file_bytes();
        if let Some(max) = max_file_bytes {
            // values only: keys, statistics and metadata fit in the rest
            let max_values = max / 5 * 4;
            if options.shard_max_bytes() > max_values {
                return Err(Error::InvalidOption {
                    option: "shard_target_bytes",
                    reason: format!(
                        "shards of up to {} bytes of values, over the {max_values} a distributed write to an object store stages: the commit copies each shard in one request, at most {max} bytes (S3 CopyObject)",
                        options.shard_max_bytes()
                    ),
                });
            }
        }
        let layout = Layout::new(series, &options)?;
        let parts = layout.assign(parts);
        target.ensure_absent()?;
        let ids = decide_ids(&dataset);
        let staging = Staging::create_for_parts(&target)?;
        let plan = Plan {
            write_id: staging.write_id(),
            name: dataset.info.name.clone(),
            version: dataset.info.version.clone(),
            options: TaskOptions::of(&options),
            time_series_id_encoding: ids.get(IdSpace::TimeSeries).as_str().to_string(),
            layout,
            parts,
        };
        Ok(DistributedWrite { staging, plan, dataset, options, max_file_bytes })
    }

    /// The plan.
    pub fn plan_ref(&self) -> &Plan {
        &self.plan
    }

    /// The write id (names the staging).
    pub fn write_id(&self) -> &str {
        &self.plan.write_id
    }

    /// Where parts write: the local staging directory, or the URL of the
    /// parts' prefix on an object store; `<dataset>/.tmp-<version>-<write id>`
    /// either way.
    pub fn staging_dir(&self) -> PathBuf {
        match self.staging.part_ref() {
            StagingRef::Local { dir } => dir,
            StagingRef::Object { url } => PathBuf::from(url),
        }
    }

    /// One task per part, in part order.
    pub fn part_tasks(&self) -> Vec<PartTask> {
        let chunk_values = self.options.chunk_max_values();
        let layout = &self.plan.layout;
        self.plan
            .parts
            .iter()
            .enumerate()
            .map(|(p, shard_ids)| {
                let planned: Vec<&PlannedShard> = shard_ids.iter().map(|&s| &layout.shards[s as usize]).collect();
                let first = planned.first().map_or(0, |s| s.first_series);
                let last = planned.iter().map(|s| *layout.series_of(s, chunk_values).end()).max().unwrap_or(first);
                PartTask {
                    write_id: self.plan.write_id.clone(),
                    part: p as u32,
                    staging: self.staging.part_ref(),
                    options: self.plan.options,
                    time_series_id_encoding: self.plan.time_series_id_encoding.clone(),
                    series: layout.series[first as usize..=last as usize].to_vec(),
                    shards: planned
                        .iter()
                        .map(|s| PlannedShard { first_series: s.first_series - first, ..**s })
                        .collect(),
                }
            })
            .collect()
    }

    /// Removes the staging and every part written into it.
    pub fn abort(self) {}

    /// Checks the part records against the plan and the staged files, writes
    /// the index, samples, annotations, tasks and manifest, and publishes.
    /// Returns the version's path or URL.
    ///
    /// # Errors
    /// [`Error::Part`] for a record of another write, a missing, duplicate or
    /// unplanned shard, a staged file whose size or sha256 is not the record's,
    /// index rows that do not match the plan, or a stray file in staging;
    /// [`Error::InvalidOption`] for a shard an object store cannot copy in one
    /// request; [`Error::AlreadyExists`] when another writer committed the
    /// version first. Nothing is published on error, and the staging is removed.
    pub fn commit(mut self, records: &[PartRecord]) -> Result<PathBuf> {
        let series = self.check(records)?;
        let noop = |_| Ok(());
        files::finish_version(&mut self.staging, &self.dataset, &self.options, series, None, &noop)?;
        self.staging.publish()
    }

    /// The commit's checks; returns the shards and index for the small tables.
    fn check(&mut self, records: &[PartRecord]) -> Result<SeriesOutput> {
        let plan = &self.plan;
        let id = plan.write_id.as_str();
        let err = |part: Option<u32>, shard: Option<u32>, problem| Error::Part {
            write_id: id.to_string(),
            part,
            shard,
            problem,
        };
        // each planned shard: the record (part) and file entry that claim it
        let mut found: Vec<Option<(u32, &FileEntry)>> = vec![None; plan.layout.shards.len()];
        for r in records {
            if r.write_id != plan.write_id {
                let why = format!("record of write {} given to write {}", r.write_id, plan.write_id);
                return Err(err(Some(r.part), None, PartProblem::WrongWrite(why)));
            }
            for f in &r.files {
                let shard = (0..found.len() as u32).find(|&s| shard_path(s) == f.path);
                let Some(s) = shard else {
                    return Err(err(Some(r.part), None, PartProblem::UnknownShard(f.path.clone())));
                };
                if found[s as usize].is_some() {
                    return Err(err(Some(r.part), Some(s), PartProblem::DuplicateShard));
                }
                found[s as usize] = Some((r.part, f));
            }
        }
        let mut entries = Vec::with_capacity(found.len());
        for (s, f) in found.iter().enumerate() {
            match f {
                Some(f) => entries.push(*f),
                None => return Err(err(None, Some(s as u32), PartProblem::MissingShard)),
            }
        }
        // the index rows each record gives, by shard
        let mut rows_of: Vec<Vec<&PartIndexRow>> = vec![Vec::new(); found.len()];
        for r in records {
            for row in &r.index {
                let owner = found.get(row.shard as usize).and_then(|f| *f).map(|(p, _)| p);
                if owner != Some(r.part) {
                    let why = format!(
                        "{} chunk {} placed in a shard the record does not hold",
                        row.time_series_id, row.chunk_idx
                    );
                    return Err(err(Some(r.part), Some(row.shard), PartProblem::IndexMismatch(why)));
                }
                rows_of[row.shard as usize].push(row);
            }
        }
        // the plan's chunks, placed again by the planner
        let chunk_values = self.options.chunk_max_values();
        let mut planner = Planner::new(&self.options, 0);
        let mut index = IndexSpill::new();
        let mut next_in_shard = vec![0usize; found.len()];
        for (i, k, offset, n) in chunks(&plan.layout.series, chunk_values) {
            let s = &plan.layout.series[i as usize];
            let at = planner.place(n, crate::layout::key_hash(&s.meta.time_series_id, k)).at;
            let shard = at.shard as usize;
            let part = found.get(shard).and_then(|f| *f).map(|(p, _)| p);
            let got = rows_of.get(shard).and_then(|rows| rows.get(next_in_shard[shard]));
            let want = (s.meta.time_series_id.as_str(), k, offset, n, at.shard, at.row_group, at.row_offset);
            let Some(row) = got.filter(|r| {
                (r.time_series_id.as_str(), r.chunk_idx, r.value_offset, r.n_values, r.shard, r.row_group, r.row_offset)
                    == want
                    && r.n == u64::from(n)
            }) else {
                let why = format!(
                    "expected {} chunk {k} at row group {} row {}",
                    s.meta.time_series_id, at.row_group, at.row_offset
                );
                return Err(err(part, Some(at.shard), PartProblem::IndexMismatch(why)));
            };
            next_in_shard[shard] += 1;
            index.push(&IndexRow {
                series: i,
                chunk_idx: k,
                value_offset: offset,
                n_values: n,
                shard: at.shard,
                row_group: at.row_group,
                row_offset: at.row_offset,
                stats: ChannelStats { count: row.n, min: row.min, max: row.max, mean: row.mean, std: row.std },
            })?;
        }
        for (s, rows) in rows_of.iter().enumerate() {
            if rows.len() != next_in_shard[s] {
                let part = found[s].map(|(p, _)| p);
                let why = format!("{} index rows where the plan has {}", rows.len(), next_in_shard[s]);
                return Err(err(part, Some(s as u32), PartProblem::IndexMismatch(why)));
            }
        }
        // no part writes from here on, and nothing else is staged
        let staged = self.staging.seal_parts()?;
        if let Some(stray) = staged.iter().find(|f| !entries.iter().any(|(_, e)| &e.path == *f)) {
            return Err(err(None, None, PartProblem::StrayFile(stray.clone())));
        }
        // the version's bytes are the recorded ones
        let mut files = Vec::with_capacity(entries.len());
        for (s, (part, entry)) in entries.iter().enumerate() {
            let (part, shard) = (Some(*part), Some(s as u32));
            if let Some(max) = self.max_file_bytes.filter(|max| entry.bytes > *max) {
                return Err(Error::InvalidOption {
                    option: "shard_target_bytes",
                    reason: format!(
                        "shard {s} of write {id} is {} bytes, over the {max} an object store copies in one request (S3 CopyObject); write with a smaller shard_target_bytes",
                        entry.bytes
                    ),
                });
            }
            let (staged, loc) = self.staging.take_part_file(&entry.path)?;
            if staged.bytes != entry.bytes {
                return Err(err(
                    part,
                    shard,
                    PartProblem::SizeMismatch { expected: entry.bytes, actual: staged.bytes },
                ));
            }
            if staged.sha256 != entry.sha256 {
                let problem = PartProblem::HashMismatch { expected: entry.sha256.clone(), actual: staged.sha256 };
                return Err(err(part, shard, problem));
            }
            if entry.rows != next_in_shard[s] as u64 {
                let why = format!("file records {} rows where the plan has {}", entry.rows, next_in_shard[s]);
                return Err(err(part, shard, PartProblem::IndexMismatch(why)));
            }
            check_statistics(&loc, &rows_of[s], |problem| err(part, shard, problem))?;
            files.push((*entry).clone());
        }
        let columns = SeriesColumns::from_metas(plan.layout.series.iter().map(|s| &s.meta));
        let keys = Arc::new(SeriesKeys::as_stored(columns));
        Ok(SeriesOutput { files, index: index.finish(), keys })
    }
}

/// Refuses a record whose chunk statistics are not those of the values in
/// its staged shard (docs/format.md "Trust model"): the shard at `loc` is
/// decoded row group by row group by the values page reader
/// ([`crate::pages::read_values`], the readers' own), and each row's [`Partial`] is compared,
/// field by field and bit for bit, with the record's row at that place
/// (`rows`, the record's rows of this shard in row order, already checked
/// against the plan's placement).
///
/// # Errors
/// `mismatch(`[`PartProblem::StatisticsMismatch`]`)` naming the chunk and
/// field, or [`PartProblem::IndexMismatch`] when the shard's rows are not the
/// record's; [`Error::Corrupt`] when the shard does not decode; I/O and store errors.
fn check_statistics(loc: &Location, rows: &[&PartIndexRow], mismatch: impl Fn(PartProblem) -> Error) -> Result<()> {
    use parquet::file::metadata::PageIndexPolicy;

    use crate::footer::contain;
    use crate::pages::{read_values, ValuesChunk};
    use crate::parquet_read::open_parquet;

    let path = loc.to_path_buf();
    let (file, meta) = open_parquet(loc, PageIndexPolicy::Optional)?;
    let corrupt = |reason: String| Error::Corrupt { path: path.clone(), reason };
    let unexpected = |why: String| mismatch(PartProblem::IndexMismatch(why));
    let mut expected = rows.iter();
    for (rg, group) in meta.row_groups().iter().enumerate() {
        let (c, values_chunk) = group
            .columns()
            .iter()
            .enumerate()
            .find(|(_, c)| c.column_path().string() == crate::chunks::VALUES_LEAF)
            .ok_or_else(|| corrupt("shard has no values column".into()))?;
        let entries: u64 =
            rows.iter().filter(|r| r.row_group as usize == rg).map(|r| u64::from(r.n_values.max(1))).sum();
        if u64::try_from(values_chunk.num_values()).ok() != Some(entries) {
            return Err(unexpected(format!(
                "row group {rg} values column chunk holds {} values by the footer, the record puts {entries} in it",
                values_chunk.num_values()
            )));
        }
        let page_index = meta.page_index_for_row_group(rg);
        let chunk = ValuesChunk {
            compression: values_chunk.compression(),
            start: values_chunk.byte_range().0,
            pages: page_index.offset_index(c).map_or(&[][..], |o| o.page_locations().as_slice()),
            rows: u64::try_from(group.num_rows()).unwrap_or(0),
            entries,
        };
        let staged =
            contain(|| read_values(&path, file.inner(), &chunk, None)).unwrap_or_else(|panic| Err(corrupt(panic)))?;
        for (row_offset, w) in staged.offsets.windows(2).enumerate() {
            let Some(row) = expected.next().filter(|r| (r.row_group, r.row_offset) == (rg as u32, row_offset as u32))
            else {
                return Err(unexpected(format!(
                    "row group {rg} row {row_offset} of the staged shard is not the record's next row"
                )));
            };
            let staged = Partial::of(&staged.values[w[0] as usize..w[1] as usize]).to_stats();
            let fields = [
                ("n", row.n as f64, staged.count as f64),
                ("min", row.min, staged.min),
                ("max", row.max, staged.max),
                ("mean", row.mean, staged.mean),
                ("std", row.std, staged.std),
            ];
            let differs = (row.n != staged.count).then_some(fields[0]).or_else(|| {
                fields[1..].iter().copied().find(|(_, recorded, staged)| recorded.to_bits() != staged.to_bits())
            });
            if let Some((field, recorded, staged)) = differs {
                return Err(mismatch(PartProblem::StatisticsMismatch {
                    time_series_id: row.time_series_id.clone(),
                    chunk_idx: row.chunk_idx,
                    field,
                    recorded: format!("{recorded:?}"),
                    staged: format!("{staged:?}"),
                }));
            }
        }
    }
    if let Some(row) = expected.next() {
        return Err(unexpected(format!(
            "{} chunk {} at row group {} row {} is not in the staged shard",
            row.time_series_id, row.chunk_idx, row.row_group, row.row_offset
        )));
    }
    Ok(())
}

/// Writes one part: the shards of `task` from `series` (each series of the
/// task exactly once, with all its values), into the write's staging. Returns
/// the record the coordinator's commit needs. Writing the same task again
/// writes the same bytes (a retried or speculative part is safe).
///
/// `storage_options` as in [`Location::parse`] (object stores; unused locally).
///
/// # Errors
/// [`Error::Part`]: a series not in the part's shards
/// ([`PartProblem::UnplannedSeries`], also for one given twice), one missing
/// ([`PartProblem::MissingSeries`]), a task contradicting its layout;
/// [`Error::Validation`]: a series whose number of values is not the planned
/// one, or a non-finite value; [`Error::Part`] with
/// [`PartProblem::WrongStaging`] for a task whose staging is not its write's
/// (see [`PartStaging::open`]); [`Error::Io`] (`NotFound`) when the write is
/// over (committed, aborted, its coordinator dead); I/O, parquet and store
/// errors. A file is under its final name only once complete.
pub fn write_part(
    task: &PartTask,
    series: impl IntoIterator<Item = (String, SeriesValues)>,
    storage_options: &StorageOptions,
) -> Result<PartRecord> {
    let id = task.write_id.as_str();
    let err = |problem| Error::Part { write_id: id.to_string(), part: Some(task.part), shard: None, problem };
    let position: HashMap<&str, usize> =
        task.series.iter().enumerate().map(|(i, s)| (s.meta.time_series_id.as_str(), i)).collect();
    let mut values: Vec<Option<SeriesValues>> = vec![None; task.series.len()];
    for (sid, v) in series {
        match position.get(sid.as_str()) {
            Some(&i) if values[i].is_none() => {
                let planned = &task.series[i];
                if v.len() as u64 != planned.n_values {
                    let why = format!("{} values where the plan has {}", v.len(), planned.n_values);
                    return Err(Error::validation(&sid, "values", why));
                }
                values[i] = Some(v);
            }
            _ => return Err(err(PartProblem::UnplannedSeries(sid))),
        }
    }
    if let Some(i) = values.iter().position(Option::is_none) {
        return Err(err(PartProblem::MissingSeries(task.series[i].meta.time_series_id.clone())));
    }
    let options = task.options.to_options()?;
    let enc = id_encoding(id, &task.time_series_id_encoding)?;
    let mut staging = PartStaging::open(&task.staging, id, task.part, storage_options)?;
    let codec = Codec { zstd_level: options.compression_level() };
    let schema = Arc::new(tables::shard_schema(tables::IdEncodings([enc; 6]))?);
    let props = schema.properties(codec, &files::created_by())?;
    let keys = Arc::new(SeriesKeys::as_stored(SeriesColumns::from_metas(task.series.iter().map(|s| &s.meta))));
    let chunk_values = options.chunk_max_values();
    let first = task.shards.first().map_or(0, |s| s.shard);
    let mut stream = ShardStream::new(&mut staging, schema, props, keys, enc, Planner::new(&options, first))?;
    for (n, shard) in task.shards.iter().enumerate() {
        let mismatch = |why: String| bad_plan(id, Some(task.part), Some(shard.shard), why);
        stream.restart(Planner::new(&options, shard.shard));
        let (mut i, mut k, mut left) = (shard.first_series as usize, shard.first_chunk as usize, shard.chunks);
        while left > 0 {
            let v = values
                .get(i)
                .and_then(Option::as_ref)
                .ok_or_else(|| mismatch("chunks past the task's series".into()))?;
            let count = crate::layout::chunk_count(v.len(), chunk_values);
            let take = (count.saturating_sub(k) as u64).min(left) as usize;
            if take == 0 {
                return Err(mismatch(format!("series {} has no chunk {k}", task.series[i].meta.time_series_id)));
            }
            let sid = task.series[i].meta.time_series_id.as_str();
            for placed in push_series(&mut stream, i as u32, sid, v, Finite::Unchecked, chunk_values, k..k + take)? {
                if placed.at.shard != shard.shard {
                    return Err(mismatch("the planner closed the shard early".into()));
                }
            }
            left -= take as u64;
            (i, k) = (i + 1, 0);
        }
        if n + 1 == task.shards.len() {
            stream.ending();
        }
        stream.close_shard()?;
    }
    let (files, rows, _) = stream.finish()?;
    let mut index = Vec::with_capacity(rows.len());
    rows.for_each(|r| {
        index.push(PartIndexRow {
            time_series_id: task.series[r.series as usize].meta.time_series_id.clone(),
            chunk_idx: r.chunk_idx,
            value_offset: r.value_offset,
            n_values: r.n_values,
            shard: r.shard,
            row_group: r.row_group,
            row_offset: r.row_offset,
            n: r.stats.count,
            min: r.stats.min,
            max: r.stats.max,
            mean: r.stats.mean,
            std: r.stats.std,
        });
        Ok(())
    })?;
    Ok(PartRecord { write_id: task.write_id.clone(), part: task.part, files, index })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of the wrong type is named by its place, never repeated: a
    /// string there may be a URL with credentials (review 132: a `staging`
    /// given as a string was echoed whole).
    #[test]
    fn a_malformed_part_task_is_refused_without_repeating_its_values() {
        let text = r#"{"task": {"staging": "s3://AKIA:hunter2@b/x"}}"#;
        let err = PartTask::from_json(text).unwrap_err().to_string();
        assert!(!err.contains("hunter2") && !err.contains("AKIA"), "{err}");
        assert!(
            err.starts_with("PartTask: not a valid PartTask: a value of the wrong type or shape at line 1 column "),
            "{err}"
        );
        // a syntax error says what it is
        let err = PartTask::from_json("{").unwrap_err().to_string();
        assert_eq!(err, "PartTask: not a valid PartTask: EOF while parsing an object at line 1 column 1");
    }
}
