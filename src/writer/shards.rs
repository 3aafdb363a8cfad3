//! The shard writer: encodes chunks into row groups and shard files, in the
//! order and at the places the [`Planner`] decides (FORMAT-BRIEF §5;
//! `docs/format.md` §1 "One write pipeline").
//!
//! Both the single-machine writer and a part of a distributed write run it:
//! each row group is encoded on the process's rayon pool while the next chunks arrive,
//! and encoded row groups are appended to their shard file strictly in order,
//! so bytes never depend on threads. At most a few row groups are in flight:
//! memory is bounded by the row-group target, not by the dataset.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvError, TryRecvError};
use std::sync::Arc;

use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::SerializedFileWriter;

use super::base::{BaseChunk, BasePages, BaseRowGroup, BaseShards, CopyStats};
use super::index_rows::{IndexRow, IndexRows, IndexSpill};
use super::page_splice;
use super::plan::{Placed, Planner, RowGroupEnd};
use super::values_pages::{self, ValuesCodec};
use crate::dataset::columns::SeriesColumns;
use crate::dataset::SeriesValues;
use crate::encoding::{encode_chunk, self_check, EncodedChunk, FileSchema, IdEncoding};
use crate::error::{Error, Result};
use crate::layout::{self, key_hash, shard_path, VALUE_BYTES};
use crate::manifest;
use crate::stats::{ChannelStats, Partial};
use crate::storage::{FileSink, StagedFile};
use crate::tables;

/// The series of a write in write order: position `i` is row `rows[i]` of
/// `columns`. Chunks and index rows name their series by position.
#[derive(Debug)]
pub(crate) struct SeriesKeys {
    pub(crate) columns: Arc<SeriesColumns>,
    pub(crate) rows: Vec<u32>,
}

impl SeriesKeys {
    /// Every row of `columns` in write order.
    pub(crate) fn in_write_order(columns: Arc<SeriesColumns>) -> SeriesKeys {
        let rows = columns.write_order();
        SeriesKeys { columns, rows }
    }

    /// The rows of `columns` in their stored order (already in write order).
    pub(crate) fn as_stored(columns: SeriesColumns) -> SeriesKeys {
        let rows = (0..columns.len() as u32).collect();
        SeriesKeys { columns: Arc::new(columns), rows }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }
    /// The row of position `pos`.
    pub(crate) fn row(&self, pos: u32) -> usize {
        self.rows[pos as usize] as usize
    }
    pub(crate) fn id(&self, pos: u32) -> &str {
        self.columns.id(self.row(pos))
    }
    pub(crate) fn spec_type(&self, pos: u32) -> &str {
        self.columns.spec_type(self.row(pos))
    }
    pub(crate) fn channel(&self, pos: u32) -> &str {
        self.columns.channel(self.row(pos))
    }
}

/// Where a chunk's values are until its row group is built.
enum ChunkValues {
    /// Held: the series' loader ran.
    Held(SeriesValues),
    /// A chunk of the base ([`super::base`]).
    Base(BaseChunk),
}

struct PendingChunk {
    /// The chunk's index row.
    row: IndexRow,
    values: ChunkValues,
    hash: u64,
}

/// A built row group: its column chunks, its index rows, and what it took
/// from the base (`values` pages copied and bytes read).
type BuiltRowGroup = (Vec<EncodedChunk>, Vec<IndexRow>, CopyStats);

enum InFlight {
    RowGroup {
        shard: u32,
        rx: Receiver<Result<BuiltRowGroup>>,
    },
    CloseShard,
    /// A shard placed as a copy of the base's file: its index rows and
    /// entry, and the check of its key columns against the index (on the
    /// compute pool: bytes read), which must pass before the write goes on.
    CopiedShard {
        rows: Vec<IndexRow>,
        entry: manifest::FileEntry,
        pages: u64,
        keys: Receiver<Result<u64>>,
    },
}

/// Cuts row groups and shards (through its [`Planner`]) and keeps the encode
/// pipeline in order.
pub(crate) struct ShardStream<'a> {
    staging: &'a mut dyn FileSink,
    schema: Arc<FileSchema>,
    props: WriterPropertiesPtr,
    values_codec: Arc<ValuesCodec>,
    keys: Arc<SeriesKeys>,
    ts_enc: IdEncoding,
    planner: Planner,
    rg: Vec<PendingChunk>,
    in_flight: VecDeque<InFlight>,
    max_in_flight: usize,
    current: Option<ParquetFile>,
    files: Vec<manifest::FileEntry>,
    index: IndexSpill,
    base: Option<BaseShards>,
    /// The row groups of the open shard so far, while each is exactly the
    /// base row group with its path and number ([`ShardStream::flush_row_group`]).
    held: Vec<Vec<PendingChunk>>,
    stats: CopyStats,
    /// Set by [`ShardStream::finish`] (or [`ShardStream::ending`]): nothing
    /// more will be pushed, so the row groups whose `values` pages are not
    /// encoded yet, the write's last, spread their pages over the pool
    /// ([`values_pages::encode`]) and the pool drains after them. Read by
    /// each row group right before its pages: one queued when the flag was
    /// set takes it too.
    finishing: Arc<AtomicBool>,
}

impl<'a> ShardStream<'a> {
    /// A stream writing shards of `keys` (the series chunks will name by
    /// position) through `staging`, placed by `planner`.
    pub(crate) fn new(
        staging: &'a mut dyn FileSink,
        schema: Arc<FileSchema>,
        props: WriterPropertiesPtr,
        keys: Arc<SeriesKeys>,
        ts_enc: IdEncoding,
        planner: Planner,
    ) -> Result<Self> {
        let values_codec = Arc::new(ValuesCodec::new(&props, &schema.descr.column(4))?);
        Ok(ShardStream {
            staging,
            schema,
            props,
            values_codec,
            keys,
            ts_enc,
            planner,
            rg: Vec::new(),
            in_flight: VecDeque::new(),
            max_in_flight: 2 * crate::runtime::compute_pool()?.current_num_threads() + 1,
            current: None,
            files: Vec::new(),
            index: IndexSpill::new(),
            base: None,
            held: Vec::new(),
            stats: CopyStats::default(),
            finishing: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Takes series from `base` ([`ShardStream::base_series`]) and copies
    /// each `values` page whose rows are a page of `base` ([`super::base`]).
    pub(crate) fn with_base(mut self, base: BaseShards) -> Self {
        self.base = Some(base);
        self
    }

    /// The base index rows of series `meta` (in write order) when its values
    /// are read from the base, else `None` (the series' loader runs).
    pub(crate) fn base_series(
        &mut self,
        meta: &crate::SeriesMeta,
        chunk_values: usize,
    ) -> Result<Option<std::ops::Range<usize>>> {
        match &mut self.base {
            Some(b) => b.series(meta, chunk_values),
            None => Ok(None),
        }
    }

    /// Values in index row `base_row` of the base.
    pub(crate) fn base_values(&self, base_row: usize) -> Result<u32> {
        match &self.base {
            Some(b) => b.n_values(base_row),
            None => Ok(0),
        }
    }

    /// Adds the next chunk in write order, index row `base_row` of the base
    /// ([`ShardStream::base_series`]); returns where it landed.
    pub(crate) fn push_base_chunk(
        &mut self,
        series: u32,
        chunk_idx: u32,
        value_offset: u64,
        base_row: usize,
    ) -> Result<Placed> {
        let base = self.base.as_mut().ok_or_else(|| Error::SelfCheck {
            path: "time_series".into(),
            column: "values".into(),
            reason: "a base chunk without a base".into(),
        })?;
        let stats = base.stats(base_row)?;
        let n_values = stats.count as u32;
        // a failed read of the base is that read's error, as for any read of a version
        let at = base.chunk(base_row)?;
        self.push(series, chunk_idx, value_offset, n_values, stats, ChunkValues::Base(at))
    }

    /// Continues with `planner` (a part starting its next shard); the
    /// previous shard must be closed ([`ShardStream::close_shard`]).
    pub(crate) fn restart(&mut self, planner: Planner) {
        self.planner = planner;
    }

    /// Adds the next chunk in write order; returns where it landed. Its
    /// statistics are computed where its row group is encoded.
    pub(crate) fn push_chunk(
        &mut self,
        series: u32,
        chunk_idx: u32,
        values: SeriesValues,
        value_offset: u64,
    ) -> Result<Placed> {
        let n_values = values.len() as u32;
        self.push(series, chunk_idx, value_offset, n_values, ChannelStats::default(), ChunkValues::Held(values))
    }

    fn push(
        &mut self,
        series: u32,
        chunk_idx: u32,
        value_offset: u64,
        n_values: u32,
        stats: ChannelStats,
        values: ChunkValues,
    ) -> Result<Placed> {
        let hash = key_hash(self.keys.id(series), chunk_idx);
        let placed = self.planner.place(n_values, hash);
        layout::check_row_group(placed.at.shard, placed.at.row_group)?;
        if let Some(end) = placed.before {
            self.flush_row_group(end)?;
        }
        let row = IndexRow {
            series,
            chunk_idx,
            value_offset,
            n_values,
            shard: placed.at.shard,
            row_group: placed.at.row_group,
            row_offset: placed.at.row_offset,
            stats,
        };
        self.rg.push(PendingChunk { row, values, hash });
        if let Some(end) = placed.after {
            self.flush_row_group(end)?;
        }
        Ok(placed)
    }

    /// Closes the open row group, if any, and the open shard file (the end of
    /// a part's shard, or of the write).
    pub(crate) fn close_shard(&mut self) -> Result<()> {
        match self.planner.finish() {
            Some(end) => self.flush_row_group(end),
            // every row group is closed: only the file is open, if any
            None => {
                if let Some(shard) = self.held.first().and_then(|g| g.first()).map(|r| r.row.shard) {
                    self.release_held(shard)?;
                }
                self.in_flight.push_back(InFlight::CloseShard);
                self.drain(self.max_in_flight)
            }
        }
    }

    /// Closes the open row group. While the open shard's row groups are
    /// exactly those of the base shard with its path, each is held, not
    /// encoded; a shard that ends so is a copy of the base's file
    /// (`docs/format.md` §7), else its held row groups are encoded in order.
    fn flush_row_group(&mut self, end: RowGroupEnd) -> Result<()> {
        let rows = std::mem::take(&mut self.rg);
        let whole = base_row_group(&rows, end.shard)
            .filter(|at| match self.held.first() {
                None => rows[0].row.row_group == 0,
                Some(first) => base_row_group(first, end.shard).is_some_and(|f| f.same_shard(at)),
            })
            .cloned();
        match whole {
            Some(at) => {
                self.held.push(rows);
                if !end.shard_end {
                    return Ok(());
                }
                let copied = match self.held.len() == at.shard_row_groups() {
                    true => at.copy_shard(&mut *self.staging)?,
                    false => None,
                };
                if let Some((entry, pages)) = copied {
                    let keys = self.check_held_keys()?;
                    let rows = self.held.drain(..).flatten().map(|r| r.row).collect();
                    self.in_flight.push_back(InFlight::CopiedShard { rows, entry, pages, keys });
                } else {
                    self.release_held(end.shard)?;
                    self.in_flight.push_back(InFlight::CloseShard);
                }
            }
            None => {
                self.release_held(end.shard)?;
                self.spawn_row_group(rows, end.shard)?;
                if end.shard_end {
                    self.in_flight.push_back(InFlight::CloseShard);
                }
            }
        }
        self.drain(self.max_in_flight)
    }

    /// Checks, on the compute pool, that the held row groups' rows (a shard
    /// placed whole) are the chunks the index says, as a rebuilt row group's
    /// are ([`super::base::check_shard_keys`]); the result arrives on the
    /// receiver.
    fn check_held_keys(&self) -> Result<Receiver<Result<u64>>> {
        let groups: Vec<BaseRowGroup> = self
            .held
            .iter()
            .filter_map(|held| match held.first().map(|r| &r.values) {
                Some(ChunkValues::Base(c)) => Some(c.at.clone()),
                _ => None,
            })
            .collect();
        let (tx, rx) = sync_channel(1);
        crate::runtime::compute_pool()?.spawn(move || {
            let refs: Vec<&BaseRowGroup> = groups.iter().collect();
            // the receiver is gone only if the write already failed
            let _ = tx.send(super::base::check_shard_keys(&refs));
        });
        Ok(rx)
    }

    /// Encodes the held row groups of shard `shard`, in order.
    fn release_held(&mut self, shard: u32) -> Result<()> {
        for rows in std::mem::take(&mut self.held) {
            self.spawn_row_group(rows, shard)?;
            self.drain(self.max_in_flight)?;
        }
        Ok(())
    }

    /// Encodes row group `rows` of shard `shard` on the compute pool.
    fn spawn_row_group(&mut self, rows: Vec<PendingChunk>, shard: u32) -> Result<()> {
        let (tx, rx) = sync_channel(1);
        let (schema, props, codec, keys, enc, finishing) = (
            Arc::clone(&self.schema),
            Arc::clone(&self.props),
            Arc::clone(&self.values_codec),
            Arc::clone(&self.keys),
            self.ts_enc,
            Arc::clone(&self.finishing),
        );
        crate::runtime::compute_pool()?.spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                build_row_group(rows, &schema, &props, &codec, &keys, enc, &finishing)
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
        self.in_flight.push_back(InFlight::RowGroup { shard, rx });
        Ok(())
    }

    /// Appends finished row groups, oldest first, until at most `limit` are in flight.
    fn drain(&mut self, limit: usize) -> Result<()> {
        while self.in_flight.len() > limit {
            match self.in_flight.pop_front() {
                Some(InFlight::RowGroup { shard, rx }) => {
                    let (chunks, rows, took) = receive_helping(&rx).map_err(|_| Error::SelfCheck {
                        path: shard_path(shard).into(),
                        column: "values".into(),
                        reason: "row-group encoder vanished".into(),
                    })??;
                    for row in &rows {
                        self.index.push(row)?;
                    }
                    self.stats.pages_copied += took.pages_copied;
                    self.stats.pages_encoded += took.pages_encoded;
                    self.stats.pages_decoded += took.pages_decoded;
                    self.stats.bytes_read += took.bytes_read;
                    if self.current.is_none() {
                        let file = ParquetFile::create(
                            &mut *self.staging,
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
                        self.files.push(file.finish(&*self.staging)?);
                    }
                }
                Some(InFlight::CopiedShard { rows, entry, pages, keys }) => {
                    self.stats.bytes_read += receive_helping(&keys).map_err(|_| Error::SelfCheck {
                        path: entry.path.clone().into(),
                        column: "time_series_id".into(),
                        reason: "the check of a copied shard's keys vanished".into(),
                    })??;
                    for row in &rows {
                        self.index.push(row)?;
                    }
                    self.files.push(entry);
                    self.stats.shards_copied += 1;
                    self.stats.pages_copied += pages;
                }
                None => break,
            }
        }
        Ok(())
    }

    /// Tells the stream that nothing more will be pushed after the current
    /// shard ([`ShardStream::finish`] does too).
    pub(crate) fn ending(&self) {
        self.finishing.store(true, Ordering::Relaxed);
    }

    /// Closes the last shard, waits for every row group and returns the shard
    /// files (in shard order), the index rows (in chunk order) and what was
    /// copied from the base.
    pub(crate) fn finish(mut self) -> Result<(Vec<manifest::FileEntry>, IndexRows, CopyStats)> {
        self.ending();
        self.close_shard()?;
        self.drain(0)?;
        if let Some(file) = self.current.take() {
            self.files.push(file.finish(&*self.staging)?);
        }
        let mut stats = self.stats;
        stats.bytes_read += self.base.as_ref().map_or(0, BaseShards::bytes_read);
        Ok((self.files, self.index.finish(), stats))
    }
}

/// The base row group `rows` are exactly, with its shard path (that of
/// write shard `shard`) and number, from a shard this build wrote.
fn base_row_group(rows: &[PendingChunk], shard: u32) -> Option<&BaseRowGroup> {
    let ChunkValues::Base(first) = &rows.first()?.values else { return None };
    let exact = rows
        .iter()
        .enumerate()
        .all(|(k, r)| matches!(&r.values, ChunkValues::Base(c) if c.at.same(&first.at) && c.row == k));
    (exact && first.at.is(&shard_path(shard), rows[0].row.row_group, rows.len())).then_some(&first.at)
}

/// Waits for a row group spawned on the rayon pool. When the writer runs on a
/// pool thread (a caller inside `ThreadPool::install` of the compute pool),
/// blocking at once could deadlock: the encode job may be queued behind this
/// very thread, e.g. in a one-thread pool.
/// So the thread runs queued pool work until the result arrives, and blocks only
/// when nothing is left that it could run (the job is then running elsewhere).
pub(crate) fn receive_helping<T>(rx: &Receiver<T>) -> std::result::Result<T, RecvError> {
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

/// Encodes one shard row group's five column chunks. A `values` page whose
/// rows are exactly a base page's is that page as stored (never
/// decompressed); the other pages are encoded, their base chunks' values
/// decoded from just the base pages that hold them ([`super::base`],
/// [`super::page_splice`]).
fn build_row_group(
    mut rows: Vec<PendingChunk>,
    schema: &FileSchema,
    props: &WriterPropertiesPtr,
    codec: &ValuesCodec,
    keys: &SeriesKeys,
    enc: IdEncoding,
    finishing: &AtomicBool,
) -> Result<BuiltRowGroup> {
    let mut took = CopyStats::default();
    // each base row group the rows come from, with the span of its rows they take
    let mut spans: Vec<(&BaseRowGroup, std::ops::Range<usize>)> = Vec::new();
    for r in &rows {
        if let ChunkValues::Base(c) = &r.values {
            match spans.iter_mut().find(|(at, _)| at.same(&c.at)) {
                Some((_, span)) => *span = span.start.min(c.row)..span.end.max(c.row + 1),
                None => spans.push((&c.at, c.row..c.row + 1)),
            }
        }
    }
    let mut bases: Vec<BasePages> = Vec::with_capacity(spans.len());
    for (at, span) in spans {
        let (pages, read) = at.pages(span)?;
        took.bytes_read += read;
        bases.push(pages);
    }
    let base_of = |bases: &[BasePages], c: &BaseChunk| {
        bases.iter().position(|b| b.of(&c.at)).ok_or_else(|| c.at.corrupt("a base row group was not read".into()))
    };
    let value_pages = layout::values_pages(rows.iter().map(|r| (u64::from(r.row.n_values) * VALUE_BYTES, r.hash)));
    // each page whose rows are exactly a base page's is copied as stored
    let mut copied = Vec::with_capacity(value_pages.len());
    let mut start = 0;
    for &n in &value_pages {
        let page = &rows[start..start + n];
        start += n;
        let first = match &page[0].values {
            ChunkValues::Base(c) => Some(c),
            ChunkValues::Held(_) => None,
        };
        let consecutive = first.filter(|f| {
            page.iter()
                .enumerate()
                .all(|(k, r)| matches!(&r.values, ChunkValues::Base(c) if c.at.same(&f.at) && c.row == f.row + k))
        });
        copied.push(match consecutive {
            Some(f) => {
                // the page's extremes in total order, from its rows' index statistics
                let total = |a: &f32, b: &f32| a.total_cmp(b);
                let min = page.iter().map(|r| r.row.stats.min as f32).min_by(total).unwrap_or_default();
                let max = page.iter().map(|r| r.row.stats.max as f32).max_by(total).unwrap_or_default();
                bases[base_of(&bases, f)?].copyable(f.row..f.row + n, (min, max))?
            }
            None => None,
        });
    }
    // the rows of the other pages, their base pages decoded
    let mut encoded_pages = Vec::new();
    let mut start = 0;
    for (&n, copy) in value_pages.iter().zip(&copied) {
        if copy.is_none() {
            for r in &rows[start..start + n] {
                if let ChunkValues::Base(c) = &r.values {
                    let b = base_of(&bases, c)?;
                    took.pages_decoded += u64::from(bases[b].decode(c.row)?);
                }
            }
            encoded_pages.push(n);
        }
        start += n;
    }
    let mut values: Vec<&[f32]> = Vec::new();
    // per entry of `values`: the row of a held chunk, whose statistics are computed below
    let mut held: Vec<Option<usize>> = Vec::new();
    let mut start = 0;
    for (&n, copy) in value_pages.iter().zip(&copied) {
        if copy.is_none() {
            for (k, r) in rows[start..start + n].iter().enumerate() {
                let (v, row) = match &r.values {
                    ChunkValues::Held(v) => (&v[..], Some(start + k)),
                    ChunkValues::Base(c) => (bases[base_of(&bases, c)?].chunk(c.row, r.row.n_values)?, None),
                };
                values.push(v);
                held.push(row);
            }
        }
        start += n;
    }
    let leaves = [
        tables::ids(rows.iter().map(|r| keys.id(r.row.series)), enc)?,
        tables::i32s(rows.iter().map(|r| r.row.chunk_idx as i32).collect()),
        tables::strs(rows.iter().map(|r| keys.spec_type(r.row.series))),
        tables::strs(rows.iter().map(|r| keys.channel(r.row.series))),
    ];
    let mut chunks = leaves
        .into_iter()
        .enumerate()
        .map(|(i, leaf)| encode_chunk("time_series", schema.descr.column(i), props, leaf))
        .collect::<Result<Vec<_>>>()?;
    let descr = schema.descr.column(4);
    took.pages_encoded = encoded_pages.len() as u64;
    took.pages_copied = value_pages.len() as u64 - took.pages_encoded;
    let splice_err = |reason: String| Error::SelfCheck {
        path: "time_series".into(),
        column: "values".into(),
        reason: format!("building the values column chunk: {reason}"),
    };
    // a held chunk's statistics (per row) on the thread that encodes its page,
    // right before the page is split: the split then reads its values from
    // cache (`push_series`, or a store's connector, refused a non-finite value)
    let page_stats = |page: std::ops::Range<usize>| -> Vec<(usize, ChannelStats)> {
        page.filter_map(|k| held[k].map(|row| (row, Partial::of(values[k]).to_stats()))).collect()
    };
    let (encoded, taken) =
        values_pages::encode(codec, &values, &encoded_pages, finishing.load(Ordering::Relaxed), &page_stats)
            .map_err(splice_err)?;
    let mut stats: Vec<Option<ChannelStats>> = vec![None; rows.len()];
    for (row, s) in taken.into_iter().flatten() {
        stats[row] = Some(s);
    }
    for (r, s) in rows.iter_mut().zip(stats) {
        match (&r.values, s) {
            // a non-finite value makes the mean NaN or infinite (a float64
            // sum of float32 values cannot overflow): values a store's check
            // passed that changed since (`push_series`)
            (ChunkValues::Held(v), Some(s)) if !s.mean.is_finite() => {
                super::refuse_non_finite(keys.id(r.row.series), v, r.row.value_offset as usize)?;
                return Err(splice_err(format!("chunk {} has a non-finite mean", r.row.chunk_idx)));
            }
            (ChunkValues::Held(_), Some(s)) => r.row.stats = s,
            (ChunkValues::Held(_), None) => {
                return Err(splice_err(format!("no statistics for chunk {}", r.row.chunk_idx)))
            }
            (ChunkValues::Base(_), _) => {}
        }
    }
    let mut fresh = encoded.into_iter();
    let pages = copied
        .into_iter()
        .map(|copy| copy.or_else(|| fresh.next()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| splice_err("fewer encoded pages than planned".into()))?;
    let chunk = page_splice::splice(descr, codec.compression(), pages).map_err(splice_err)?;
    chunks.push(chunk);
    let index = rows.iter().map(|r| r.row).collect();
    Ok((chunks, index, took))
}

/// A Parquet file being written in staging from encoded column chunks.
pub(crate) struct ParquetFile {
    writer: SerializedFileWriter<FooterSink>,
    rel: String,
    /// The file's path or URL where it is written, as errors name it.
    shown: PathBuf,
    schema: Arc<FileSchema>,
    rows: u64,
}

/// The sink of a [`ParquetFile`]: passes bytes on to the staged file until
/// the footer starts, then keeps them, so the footer is rewritten
/// ([`crate::float_order`]) before it reaches storage. Bytes are passed on in
/// blocks of up to [`PASS_BLOCK_BYTES`], and at the end of each row group: the
/// parquet crate splices a column chunk through an 8 KiB buffer, which would
/// otherwise be one write (and one hash update) per 8 KiB.
struct FooterSink {
    file: StagedFile,
    /// Bytes accepted before the footer (passed on, or in `block`).
    passed: u64,
    /// Bytes accepted, not yet passed on.
    block: Vec<u8>,
    /// The footer, once it started.
    footer: Option<Vec<u8>>,
}

/// The bytes a [`FooterSink`] gathers before passing them on (1 MiB).
const PASS_BLOCK_BYTES: usize = 1 << 20;

impl FooterSink {
    fn new(file: StagedFile) -> FooterSink {
        FooterSink { file, passed: 0, block: Vec::new(), footer: None }
    }

    /// Passes the gathered bytes on.
    fn pass_block(&mut self) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.block = self.file.write_owned(std::mem::take(&mut self.block))?;
        }
        Ok(())
    }
}

impl std::io::Write for FooterSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.footer {
            Some(kept) => kept.extend_from_slice(buf),
            None => {
                // a block is passed on before it would outgrow its buffer (a
                // grown buffer is a copy of the block)
                if self.block.len() + buf.len() > self.block.capacity().max(PASS_BLOCK_BYTES) {
                    self.pass_block()?;
                }
                if self.block.capacity() == 0 {
                    self.block.reserve_exact(PASS_BLOCK_BYTES);
                }
                self.block.extend_from_slice(buf);
                self.passed += buf.len() as u64;
                if self.block.len() >= PASS_BLOCK_BYTES {
                    self.pass_block()?;
                }
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.footer {
            Some(_) => Ok(()),
            None => {
                self.pass_block()?;
                self.file.flush()
            }
        }
    }
}

impl ParquetFile {
    pub(crate) fn create(
        staging: &mut dyn FileSink,
        rel: &str,
        schema: Arc<FileSchema>,
        props: &WriterPropertiesPtr,
    ) -> Result<Self> {
        let staged = staging.create_file(rel)?;
        let shown = staged.path().to_path_buf();
        let writer =
            SerializedFileWriter::new(FooterSink::new(staged), schema.descr.root_schema_ptr(), Arc::clone(props))
                .map_err(|e| Error::parquet(&shown, e))?;
        Ok(ParquetFile { writer, rel: rel.to_string(), shown, schema, rows: 0 })
    }

    pub(crate) fn append_row_group(&mut self, chunks: Vec<EncodedChunk>) -> Result<()> {
        let shown = self.shown.as_path();
        let mut rg = self.writer.next_row_group().map_err(|e| Error::parquet(shown, e))?;
        for c in chunks {
            rg.append_column(&c.bytes, c.close).map_err(|e| Error::parquet(shown, e))?;
        }
        let meta = rg.close().map_err(|e| Error::parquet(shown, e))?;
        self.rows += meta.num_rows() as u64;
        // a row group's bytes reach storage when it is appended, as they did
        // before the sink gathered blocks (a writer killed mid-shard leaves them)
        self.writer.inner_mut().pass_block().map_err(|e| Error::io(shown, e))
    }

    /// Writes the footer (float leaves in type-defined order, `docs/format.md`
    /// §3), completes the file, then reads the footer back from storage and
    /// checks the pins.
    pub(crate) fn finish(mut self, staging: &dyn FileSink) -> Result<manifest::FileEntry> {
        let (rel, shown) = (self.rel.clone(), self.shown.clone());
        self.writer.flush().map_err(|e| Error::io(&shown, e))?;
        self.writer.inner_mut().footer = Some(Vec::new());
        // into_inner writes the footer
        let mut sink = self.writer.into_inner().map_err(|e| Error::parquet(&shown, e))?;
        // flushed above; passed on here too so no byte before the footer can stay behind
        sink.pass_block().map_err(|e| Error::io(&shown, e))?;
        let (mut file, mut footer) = (sink.file, sink.footer.unwrap_or_default());
        let floats: Vec<bool> = self
            .schema
            .descr
            .columns()
            .iter()
            .map(|c| matches!(c.physical_type(), parquet::basic::Type::FLOAT | parquet::basic::Type::DOUBLE))
            .collect();
        crate::float_order::type_defined_float_order(&mut footer, sink.passed, &floats)
            .map_err(|e| Error::parquet(&shown, parquet::errors::ParquetError::General(e)))?;
        std::io::Write::write_all(&mut file, &footer).map_err(|e| Error::io(&shown, e))?;
        let written = file.finish()?;
        let stored = staging.open_staged(&rel)?;
        let meta = ParquetMetaDataReader::new().parse_and_finish(&stored).map_err(|e| Error::parquet(&shown, e))?;
        self_check(Path::new(&rel), &self.schema, &meta)?;
        Ok(manifest::FileEntry { path: written.path, bytes: written.bytes, rows: self.rows, sha256: written.sha256 })
    }
}
