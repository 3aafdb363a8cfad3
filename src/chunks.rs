//! The chunks of a version's series as `time_series_index.parquet` points at
//! them (docs/format.md §7 "Reading" and §9 "Bulk reads"): the index's rows
//! and their structural checks, the plan of the row groups a read needs, and
//! the one function ([`decode`]) that decodes a row group's selected rows from
//! a shard and checks each against its index pointer. Random access
//! ([`crate::reader::Version::read_series`], a one-series plan) and the bulk
//! scan ([`crate::scan`], on threads) both read through it, so a decoder panic
//! on crafted bytes is contained here, once.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, Float32Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::reader::ChunkReader;

use crate::dataset::SeriesMeta;
use crate::error::{Error, Result};
use crate::footer::{contain, version_parquet_error, CheckedPages};
use crate::limits::DEFAULT_BATCH_ROWS;
use crate::pages::{self, RowValues, ValuesChunk};
use crate::parquet_read::{col, decode_error, open_parquet, strings};
use crate::storage::{Location, ReadFailure, Source};

/// The leaf column of a shard's values (`values: list<float32>`).
pub(crate) const VALUES_LEAF: &str = "values.list.element";

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

/// The index of a version, checked as a whole when it is read: series in
/// `(spec_type, channel, time_series_id)` order, each series' chunks
/// consecutive rows, numbered 0, 1, ... with `value_offset` the sum
/// of the chunks before, every chunk carries its chunk 0's metadata, and no
/// count, row group or row offset is negative. So a repeated or reordered row
/// is refused before any shard is read, by every read path.
#[derive(Debug)]
pub(crate) struct Index {
    path: PathBuf,
    entries: Vec<IndexEntry>,
    /// `(shard_path, row_group)` -> the level entries (a value each, or one
    /// for an empty chunk) its values column chunk holds by the index: the
    /// most a values page of it may decode to.
    row_group_entries: HashMap<(String, i32), u64>,
}

impl Index {
    /// Checks `entries`, the rows of the index file at `path` in file order.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming `path` and the first row that breaks a rule.
    pub(crate) fn new(path: PathBuf, entries: Vec<IndexEntry>) -> Result<Index> {
        let corrupt =
            |row: usize, reason: String| Error::Corrupt { path: path.clone(), reason: format!("row {row}: {reason}") };
        let mut first: Option<&IndexEntry> = None;
        let (mut next_chunk, mut next_value) = (0i32, 0i64);
        let mut row_group_entries: HashMap<(String, i32), u64> = HashMap::new();
        let mut run: Option<(&str, i32, u64)> = None;
        let add = |map: &mut HashMap<(String, i32), u64>, shard: &str, rg: i32, n: u64| {
            let total = map.entry((shard.to_string(), rg)).or_default();
            *total = total.saturating_add(n);
        };
        for (i, e) in entries.iter().enumerate() {
            let id = e.meta.time_series_id.as_str();
            match first {
                Some(f) if f.meta.time_series_id == id => {
                    if e.meta != f.meta {
                        return Err(corrupt(
                            i,
                            format!("{id} chunk {} disagrees with its chunk 0's metadata", e.chunk_idx),
                        ));
                    }
                }
                Some(f) => {
                    // sorted by series (no set of the ids seen, so memory does not grow with
                    // them): a series met again after others sorts before the previous one
                    let (a, b) = (&e.meta, &f.meta);
                    if (&a.spec_type, &a.channel, &a.time_series_id) <= (&b.spec_type, &b.channel, &b.time_series_id) {
                        return Err(corrupt(
                            i,
                            format!(
                                "{id} does not sort after the previous series {} (spec_type, channel, time_series_id): \
                                 a series' chunks are consecutive rows, in series order",
                                f.meta.time_series_id
                            ),
                        ));
                    }
                    first = Some(e);
                    (next_chunk, next_value) = (0, 0);
                }
                None => {
                    first = Some(e);
                    (next_chunk, next_value) = (0, 0);
                }
            }
            if e.chunk_idx != next_chunk || e.value_offset != next_value || e.n_values < 0 {
                return Err(corrupt(
                    i,
                    format!(
                        "{id} chunk {} at value {} with {} values, expected chunk {next_chunk} at value {next_value}",
                        e.chunk_idx, e.value_offset, e.n_values
                    ),
                ));
            }
            if e.row_group < 0 || e.row_offset < 0 {
                return Err(corrupt(i, format!("negative row group {} or row offset {}", e.row_group, e.row_offset)));
            }
            next_chunk = next_chunk.saturating_add(1);
            next_value = next_value.saturating_add(i64::from(e.n_values));
            // consecutive rows share a row group: one map entry per run, not per row
            let chunk_entries = u64::from(e.n_values.unsigned_abs().max(1));
            match &mut run {
                Some((shard, rg, n)) if *shard == e.shard_path && *rg == e.row_group => *n += chunk_entries,
                _ => {
                    if let Some((shard, rg, n)) = run.replace((e.shard_path.as_str(), e.row_group, chunk_entries)) {
                        add(&mut row_group_entries, shard, rg, n);
                    }
                }
            }
        }
        if let Some((shard, rg, n)) = run {
            add(&mut row_group_entries, shard, rg, n);
        }
        Ok(Index { path, entries, row_group_entries })
    }

    /// The rows, in file order.
    pub(crate) fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }
}

/// One chunk a plan expects at a row of a row group.
#[derive(Debug)]
struct ChunkRow {
    /// Position of its series in [`Plan::series`].
    series: usize,
    chunk_idx: i32,
    value_offset: i64,
    n_values: i32,
    row_offset: usize,
}

/// A row group to decode and the rows of it that are selected, in row order.
#[derive(Debug)]
pub(crate) struct Unit {
    shard: usize,
    row_group: usize,
    rows: Vec<ChunkRow>,
    /// Level entries the index says the row group's values column chunk holds.
    values_entries: u64,
}

impl Unit {
    /// `(series number in [`Plan::series`], chunk_idx, n_values)` of the selected rows, in row order.
    pub(crate) fn chunks(&self) -> impl Iterator<Item = (usize, i32, i32)> + '_ {
        self.rows.iter().map(|r| (r.series, r.chunk_idx, r.n_values))
    }
}

/// A shard and its footer, read once by the first read that needs it.
struct Shard {
    loc: Location,
    meta: OnceLock<ArrowReaderMetadata>,
}

/// The row groups a read decodes, in index order, and the series they hold.
pub(crate) struct Plan {
    series: Vec<SeriesMeta>,
    shards: Vec<Shard>,
    units: Vec<Unit>,
    values: u64,
    chunks: u64,
}

impl Plan {
    /// The series read, in index order.
    pub(crate) fn series(&self) -> &[SeriesMeta] {
        &self.series
    }
    /// The row groups to decode, in index order.
    pub(crate) fn units(&self) -> &[Unit] {
        &self.units
    }
    /// Values the read yields.
    pub(crate) fn values(&self) -> u64 {
        self.values
    }
    /// Chunks (rows) the read yields.
    pub(crate) fn chunks(&self) -> u64 {
        self.chunks
    }
    /// The shard file `unit` reads (for errors).
    pub(crate) fn shard_path(&self, unit: &Unit) -> PathBuf {
        self.shards[unit.shard].loc.to_path_buf()
    }
}

/// The plan of a read of the index rows `rows` (whole series), taking the
/// series for which `take` (given a series' chunk 0 metadata) is true;
/// `shard` gives the location of a row's shard, checked (called once per shard
/// path, in index order, before any shard is opened).
///
/// # Errors
/// `shard`'s errors; [`Error::Corrupt`] when two chunks of one row group are
/// not in row order.
pub(crate) fn plan(
    index: &Index,
    rows: Range<usize>,
    mut take: impl FnMut(&SeriesMeta) -> bool,
    mut shard: impl FnMut(usize, &IndexEntry) -> Result<Location>,
) -> Result<Plan> {
    let mut plan = Plan { series: Vec::new(), shards: Vec::new(), units: Vec::new(), values: 0, chunks: 0 };
    let mut shard_numbers: BTreeMap<&str, usize> = BTreeMap::new();
    let mut taken = false;
    let start = rows.start;
    for (i, e) in index.entries[rows].iter().enumerate().map(|(k, e)| (start + k, e)) {
        // a series is taken or left whole, by its chunk 0 ([`Index::new`]: the others agree)
        if e.chunk_idx == 0 {
            taken = take(&e.meta);
            if taken {
                plan.series.push(e.meta.clone());
            }
        }
        if !taken {
            continue;
        }
        let shard = match shard_numbers.get(e.shard_path.as_str()) {
            Some(&n) => n,
            None => {
                plan.shards.push(Shard { loc: shard(i, e)?, meta: OnceLock::new() });
                shard_numbers.insert(e.shard_path.as_str(), plan.shards.len() - 1);
                plan.shards.len() - 1
            }
        };
        // not negative: checked by Index::new
        let (row_group, row_offset) = (e.row_group as usize, e.row_offset as usize);
        let row = ChunkRow {
            series: plan.series.len() - 1,
            chunk_idx: e.chunk_idx,
            value_offset: e.value_offset,
            n_values: e.n_values,
            row_offset,
        };
        match plan.units.last_mut() {
            Some(u) if u.shard == shard && u.row_group == row_group => {
                // index order is shard order: rows of a row group increase
                if u.rows.last().is_some_and(|r| r.row_offset >= row_offset) {
                    return Err(Error::Corrupt {
                        path: index.path.clone(),
                        reason: format!("row {i}: row offset {row_offset} is not after the previous chunk's"),
                    });
                }
                u.rows.push(row);
            }
            _ => {
                let values_entries =
                    index.row_group_entries.get(&(e.shard_path.clone(), e.row_group)).copied().unwrap_or(0);
                plan.units.push(Unit { shard, row_group, rows: vec![row], values_entries })
            }
        }
        plan.values += e.n_values as u64;
        plan.chunks += 1;
    }
    Ok(plan)
}

/// The schema of decoded chunk rows ([`crate::scan::scan_schema`]).
pub(crate) fn chunk_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(SCHEMA.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("time_series_id", DataType::Utf8, false),
            Field::new("chunk_idx", DataType::Int32, false),
            Field::new("value_offset", DataType::Int64, false),
            Field::new("values", DataType::List(values_item()), false),
        ]))
    }))
}

fn values_item() -> Arc<Field> {
    Arc::new(Field::new_list_field(DataType::Float32, false))
}

/// Checked footer and page index of a shard, read once.
fn shard_meta(shard: &Shard) -> Result<(CheckedPages<Source>, ArrowReaderMetadata)> {
    let path = shard.loc.to_path_buf();
    if let Some(meta) = shard.meta.get() {
        let file = shard.loc.open()?;
        return Ok((CheckedPages::new(file, meta.metadata()), meta.clone()));
    }
    let (file, meta) = open_parquet(&shard.loc, PageIndexPolicy::Optional)?;
    let meta =
        ArrowReaderMetadata::try_new(meta, ArrowReaderOptions::new()).map_err(|e| version_parquet_error(&path, e))?;
    // another thread may have set it meanwhile: both read the same bytes
    let _ = shard.meta.set(meta.clone());
    Ok((file, meta))
}

/// Decodes one row group of `plan` into batches of [`chunk_schema`], one row
/// per selected chunk, after checking every decoded row against the index
/// (`time_series_id`, `chunk_idx`, `n_values`). The values column chunk is
/// read by [`pages::read_values`] (its pages held to what the index says the
/// row group holds before they are decoded), the key columns by the parquet crate.
///
/// # Errors
/// [`Error::Corrupt`] naming the shard for anything its bytes contradict,
/// including a panic of the decoder (contained here); I/O and store errors.
pub(crate) fn decode(plan: &Plan, unit: &Unit) -> Result<Vec<RecordBatch>> {
    contain(|| decode_unit(plan, unit))
        .unwrap_or_else(|panic| Err(Error::Corrupt { path: plan.shard_path(unit), reason: panic }))
}

/// [`decode`]'s values alone, checked as it checks them, into `out` (its
/// buffers reused: [`pages::read_values_into`]): row `i` is the unit's
/// `i`-th selected chunk (`Unit::chunks` order).
///
/// # Errors
/// Those of [`decode`].
pub(crate) fn decode_values(plan: &Plan, unit: &Unit, out: &mut RowValues) -> Result<()> {
    contain(|| decode_unit_values(plan, unit, out))
        .unwrap_or_else(|panic| Err(Error::Corrupt { path: plan.shard_path(unit), reason: panic }))
}

fn decode_unit(plan: &Plan, unit: &Unit) -> Result<Vec<RecordBatch>> {
    let mut values = RowValues::default();
    decode_unit_values(plan, unit, &mut values)?;
    let corrupt = |reason: String| Error::Corrupt { path: plan.shard_path(unit), reason };
    let list = ListArray::try_new(
        values_item(),
        OffsetBuffer::new(ScalarBuffer::from(values.offsets)),
        Arc::new(Float32Array::from(values.values)) as ArrayRef,
        None,
    )
    .map_err(|e| corrupt(format!("values: {e}")))?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            unit.rows.iter().map(|r| plan.series[r.series].time_series_id.as_str()),
        )),
        Arc::new(Int32Array::from_iter_values(unit.rows.iter().map(|r| r.chunk_idx))),
        Arc::new(Int64Array::from_iter_values(unit.rows.iter().map(|r| r.value_offset))),
        Arc::new(list),
    ];
    Ok(vec![RecordBatch::try_new(chunk_schema(), columns).map_err(|e| corrupt(format!("arrow: {e}")))?])
}

fn decode_unit_values(plan: &Plan, unit: &Unit, out: &mut RowValues) -> Result<()> {
    let shard = &plan.shards[unit.shard];
    let path = shard.loc.to_path_buf();
    let corrupt = |reason: String| Error::Corrupt { path: path.clone(), reason };
    let (file, meta) = shard_meta(shard)?;
    let group = meta
        .metadata()
        .row_groups()
        .get(unit.row_group)
        .ok_or_else(|| corrupt(format!("no row group {}", unit.row_group)))?;
    let rg_rows = usize::try_from(group.num_rows()).unwrap_or(0);
    if unit.rows.last().is_some_and(|r| r.row_offset >= rg_rows) {
        return Err(corrupt(format!("row offset beyond row group {} of {rg_rows} rows", unit.row_group)));
    }
    let roots = meta.parquet_schema().root_schema().get_fields();
    if !roots.iter().any(|f| f.name() == "values") {
        return Err(corrupt("shard has no values column".into()));
    }
    let (c, values) = group
        .columns()
        .iter()
        .enumerate()
        .find(|(_, c)| c.column_path().string() == VALUES_LEAF)
        .ok_or_else(|| corrupt(format!("shard has no {VALUES_LEAF} column")))?;
    if u64::try_from(values.num_values()).ok() != Some(unit.values_entries) {
        return Err(corrupt(format!(
            "row group {} values column chunk holds {} values by the footer, the index puts {} in it",
            unit.row_group,
            values.num_values(),
            unit.values_entries
        )));
    }
    let selected: Option<Vec<usize>> =
        (unit.rows.len() < rg_rows).then(|| unit.rows.iter().map(|r| r.row_offset).collect());
    let page_index = meta.metadata().page_index_for_row_group(unit.row_group);
    let chunk = ValuesChunk {
        compression: values.compression(),
        start: values.byte_range().0,
        pages: page_index.offset_index(c).map_or(&[][..], |o| o.page_locations().as_slice()),
        rows: rg_rows as u64,
        entries: unit.values_entries,
    };
    pages::read_values_into(&path, file.inner(), &chunk, selected.as_deref(), out)?;
    let failure = file.inner().read_failure();
    let keys = read_keys(&path, file, &failure, meta, &[unit.row_group], selected.as_deref())?;
    if keys.len() > unit.rows.len() {
        return Err(corrupt(format!("row group {} holds more rows than selected", unit.row_group)));
    }
    if keys.len() < unit.rows.len() || out.offsets.len() != unit.rows.len() + 1 {
        return Err(corrupt(format!("row group {} holds fewer rows than the index points at", unit.row_group)));
    }
    for (i, row) in unit.rows.iter().enumerate() {
        let want = &plan.series[row.series].time_series_id;
        if let Some(why) = keys.problem(i, want, row.chunk_idx) {
            return Err(corrupt(why));
        }
        let len = out.offsets[i + 1] - out.offsets[i];
        if len != row.n_values {
            return Err(corrupt(format!(
                "{want} chunk {}: the index says {} values, the shard holds {len}",
                row.chunk_idx, row.n_values
            )));
        }
    }
    Ok(())
}

/// The key columns of rows of a shard's row group, as decoded: each row's
/// `time_series_id` (text; a UUID in its hyphenated form) and `chunk_idx`.
pub(crate) struct Keys {
    ids: Vec<Option<String>>,
    chunk_idx: Vec<Option<i32>>,
}

impl Keys {
    /// Rows read.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Why row `i` is not chunk `chunk_idx` of series `want`, the chunk an
    /// index pointer says it is (`None`: it is).
    pub(crate) fn problem(&self, i: usize, want: &str, chunk_idx: i32) -> Option<String> {
        let (id, chunk) = (self.ids.get(i)?.as_deref(), self.chunk_idx.get(i).copied().flatten());
        if id == Some(want) && chunk == Some(chunk_idx) {
            return None;
        }
        let id = id.map_or_else(|| "a null id".to_string(), |id| format!("{id:?}"));
        let chunk = chunk.map_or_else(|| "a null chunk".to_string(), |c| format!("chunk {c}"));
        Some(format!("pointer of {want} chunk {chunk_idx} lands on {id} {chunk}"))
    }
}

/// Decodes the key columns (`time_series_id`, `chunk_idx`: one page each
/// per row group) of row groups `row_groups` (ascending) of the shard at
/// `path`, their rows `selected` (positions in those row groups' rows one
/// after another; every row: `None`), through the parquet crate, `file`
/// checking each page header first. The reads of [`decode`] and an edit's
/// base row groups and whole shards (`src/writer/base.rs`) check index
/// pointers with it.
///
/// # Errors
/// [`Error::Corrupt`] naming the shard when it lacks a key column or its
/// bytes do not decode (a decoder panic is the caller's to contain); I/O
/// and store errors.
pub(crate) fn read_keys<R: ChunkReader + 'static>(
    path: &Path,
    file: CheckedPages<R>,
    failure: &ReadFailure,
    meta: ArrowReaderMetadata,
    row_groups: &[usize],
    selected: Option<&[usize]>,
) -> Result<Keys> {
    let corrupt = |reason: String| Error::Corrupt { path: path.to_path_buf(), reason };
    let roots = meta.parquet_schema().root_schema().get_fields();
    let root = |name: &str| {
        roots.iter().position(|f| f.name() == name).ok_or_else(|| corrupt(format!("shard has no {name} column")))
    };
    let mask = ProjectionMask::roots(meta.parquet_schema(), [root("time_series_id")?, root("chunk_idx")?]);
    let groups = meta.metadata().row_groups();
    let rows_of = |g: usize| groups.get(g).map_or(0, |g| usize::try_from(g.num_rows()).unwrap_or(0));
    let rg_rows: usize = row_groups.iter().map(|&g| rows_of(g)).sum();
    if let Some(&g) = row_groups.iter().find(|&&g| g >= groups.len()) {
        return Err(corrupt(format!("no row group {g}")));
    }
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
        .with_row_groups(row_groups.to_vec())
        .with_projection(mask)
        .with_batch_size(DEFAULT_BATCH_ROWS);
    if let Some(rows) = selected {
        if rows.iter().any(|&r| r >= rg_rows) {
            let g = row_groups.first().copied().unwrap_or(0);
            return Err(corrupt(format!("row offset beyond row group {g} of {rg_rows} rows")));
        }
        let ranges = rows.iter().map(|&r| r..r + 1);
        builder = builder.with_row_selection(RowSelection::from_consecutive_ranges(ranges, rg_rows));
    }
    let reader = builder.build().map_err(|e| version_parquet_error(path, e))?;
    let mut keys = Keys { ids: Vec::new(), chunk_idx: Vec::new() };
    for batch in reader {
        let batch = batch.map_err(|e| decode_error(path, failure, e))?;
        keys.ids.extend(strings(path, col(path, &batch, "time_series_id")?)?);
        let chunk_idx = col(path, &batch, "chunk_idx")?
            .as_primitive_opt::<Int32Type>()
            .ok_or_else(|| corrupt("chunk_idx is not int32".into()))?;
        keys.chunk_idx.extend(chunk_idx.iter());
    }
    Ok(keys)
}
