//! The layout planner: where each chunk goes (shard, row group, row offset),
//! computed from the sorted series and their number of values only
//! (`docs/format.md` §1 "One write pipeline: plan, parts, commit"; FORMAT-BRIEF §5).
//!
//! [`Planner`] is an incremental state machine fed each chunk's size and key
//! hash in write order. The single-machine writer feeds it as each loader runs
//! (streaming, bounded memory); a distributed write feeds it from metadata up
//! front ([`Layout::new`]), and each part feeds it again from the start of each
//! of its shards. Same code, same cuts: the layout cannot depend on who writes.
//!
//! A shard always starts with fresh cutter state (a shard closes only at a
//! row-group cut, and both cutters reset there), which is what lets a part
//! re-run the planner from the first chunk of any shard.

use serde::{Deserialize, Serialize};

use crate::dataset::SeriesMeta;
use crate::error::{Error, Result};
use crate::layout::{self, key_hash, RowGroupCutter, ShardCutter, VALUE_BYTES};
use crate::options::WriterOptions;

/// Where one chunk lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Shard number (`time_series/shard-NNNNN.parquet`).
    pub shard: u32,
    /// Row group within the shard, 0-based.
    pub row_group: u32,
    /// Row within the row group, 0-based.
    pub row_offset: u32,
}

/// A row group closed by the planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowGroupEnd {
    /// The closed row group's shard.
    pub shard: u32,
    /// True when the shard closed with it.
    pub shard_end: bool,
}

/// What placing one chunk decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// A row group closed before the chunk (the chunk would pass the maximum).
    pub before: Option<RowGroupEnd>,
    /// Where the chunk goes.
    pub at: Placement,
    /// A row group closed after the chunk (content-defined cut).
    pub after: Option<RowGroupEnd>,
}

/// The incremental layout state machine (see the module docs).
#[derive(Debug)]
pub struct Planner {
    rules: crate::layout::CutRules,
    cutter: RowGroupCutter,
    shard_cutter: ShardCutter,
    shard: u32,
    row_group: u32,
    rows: u32,
    rg_bytes: u64,
}

impl Planner {
    /// A planner at the start of shard `first_shard` (0 for a whole write).
    pub fn new(options: &WriterOptions, first_shard: u32) -> Planner {
        Planner {
            rules: options.cut_rules(),
            cutter: RowGroupCutter::new(options.cut_rules()),
            shard_cutter: ShardCutter::new(options.shard_target_bytes()),
            shard: first_shard,
            row_group: 0,
            rows: 0,
            rg_bytes: 0,
        }
    }

    /// Places the next chunk of `n_values` values whose key hash is `hash`
    /// ([`key_hash`] of its series id and chunk index).
    pub fn place(&mut self, n_values: u32, hash: u64) -> Placed {
        let bytes = u64::from(n_values) * VALUE_BYTES;
        let before = if self.cutter.cut_before(bytes) { self.end_row_group() } else { None };
        let at = Placement { shard: self.shard, row_group: self.row_group, row_offset: self.rows };
        self.rows += 1;
        self.rg_bytes += bytes;
        let after = if self.cutter.cut_after(bytes, hash) { self.end_row_group() } else { None };
        Placed { before, at, after }
    }

    /// Closes the last row group, if it holds any chunk, and the shard (which
    /// may hold only closed row groups: the caller closes it either way); the
    /// planner then continues at the start of the next shard.
    pub fn finish(&mut self) -> Option<RowGroupEnd> {
        let end = self.end_row_group();
        if end.is_none_or(|e| !e.shard_end) && (end.is_some() || self.row_group > 0) {
            self.shard += 1;
            self.row_group = 0;
        }
        self.cutter = RowGroupCutter::new(self.rules);
        self.shard_cutter = ShardCutter::new(self.rules.shard_target_bytes);
        end.map(|e| RowGroupEnd { shard_end: true, ..e })
    }

    fn end_row_group(&mut self) -> Option<RowGroupEnd> {
        if self.rows == 0 {
            return None;
        }
        let shard = self.shard;
        let shard_end = self.shard_cutter.close_after(std::mem::take(&mut self.rg_bytes));
        self.rows = 0;
        if shard_end {
            self.shard += 1;
            self.row_group = 0;
        } else {
            self.row_group += 1;
        }
        Some(RowGroupEnd { shard, shard_end })
    }
}

/// One series as the plan knows it: the index's metadata and its number of
/// values (in a task's JSON, the metadata's fields then `n_values`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedSeries {
    /// The series' metadata.
    #[serde(flatten)]
    pub meta: SeriesMeta,
    /// Number of float32 values (>= 1).
    pub n_values: u64,
}

/// One shard of a plan: its chunks are `chunks` consecutive chunks of the
/// sorted series, starting at chunk `first_chunk` of series `first_series`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedShard {
    /// Shard number.
    pub shard: u32,
    /// Position of the first chunk's series in the plan's sorted series.
    pub first_series: u32,
    /// Chunk index of the first chunk within that series.
    pub first_chunk: u32,
    /// Chunks (index rows) in the shard.
    pub chunks: u64,
    /// Uncompressed value bytes of the shard.
    pub value_bytes: u64,
}

/// The layout of a whole write: the sorted series and their shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    /// Every series in `(spec_type, channel, time_series_id)` order.
    pub series: Vec<PlannedSeries>,
    /// Every shard in order.
    pub shards: Vec<PlannedShard>,
}

/// Every chunk of the sorted `series` in order: (series position, chunk index,
/// value offset, values), with chunks of at most `chunk_values` values.
pub fn chunks(series: &[PlannedSeries], chunk_values: usize) -> impl Iterator<Item = (u32, u32, u64, u32)> + '_ {
    let c = chunk_values as u64;
    series.iter().enumerate().flat_map(move |(i, s)| {
        (0..layout::chunk_count(s.n_values as usize, chunk_values) as u64).map(move |k| {
            let start = k * c;
            (i as u32, k as u32, start, (s.n_values.min(start + c) - start) as u32)
        })
    })
}

impl Layout {
    /// Plans `series` (sorted here) under `options`.
    ///
    /// # Errors
    /// [`Error::Validation`] for a series with no value, more values than a
    /// 32-bit chunk count allows, or an `n_values` that contradicts its `t_end_s`.
    pub fn new(mut series: Vec<PlannedSeries>, options: &WriterOptions) -> Result<Layout> {
        series.sort_by(|a, b| {
            let (a, b) = (&a.meta, &b.meta);
            (&a.spec_type, &a.channel, &a.time_series_id).cmp(&(&b.spec_type, &b.channel, &b.time_series_id))
        });
        for s in &series {
            let m = &s.meta;
            super::validate_count(&m.time_series_id, m.t_start_s, m.sampling_rate_hz, m.t_end_s, s.n_values)?;
            layout::check_chunks(
                &m.time_series_id,
                layout::chunk_count(s.n_values as usize, options.chunk_max_values()),
            )?;
        }
        let mut shards: Vec<PlannedShard> = Vec::new();
        let mut planner = Planner::new(options, 0);
        let mut open: Option<PlannedShard> = None;
        let mut close = |end: Option<RowGroupEnd>, open: &mut Option<PlannedShard>| {
            if end.is_some_and(|e| e.shard_end) {
                shards.extend(open.take());
            }
        };
        for (i, k, _, n) in chunks(&series, options.chunk_max_values()) {
            let placed = planner.place(n, key_hash(&series[i as usize].meta.time_series_id, k));
            layout::check_row_group(placed.at.shard, placed.at.row_group)?;
            close(placed.before, &mut open);
            let s = open.get_or_insert(PlannedShard {
                shard: placed.at.shard,
                first_series: i,
                first_chunk: k,
                chunks: 0,
                value_bytes: 0,
            });
            s.chunks += 1;
            s.value_bytes += u64::from(n) * VALUE_BYTES;
            close(placed.after, &mut open);
        }
        planner.finish();
        // the last shard closes with the write, whatever its last cut was
        shards.extend(open.take());
        Ok(Layout { series, shards })
    }

    /// The shards' assignment to at most `parts` parts: consecutive runs of
    /// whole shards balanced by value bytes (part `p` takes the shards whose
    /// first byte falls in `[p, p + 1) * total / parts`). Never an empty part.
    pub fn assign(&self, parts: u32) -> Vec<Vec<u32>> {
        let parts = u64::from(parts.max(1));
        let total: u64 = self.shards.iter().map(|s| s.value_bytes).sum::<u64>().max(1);
        let mut out: Vec<Vec<u32>> = Vec::new();
        let (mut before, mut last) = (0u64, None);
        for s in &self.shards {
            let p = (u128::from(before) * u128::from(parts) / u128::from(total)) as u64;
            if last != Some(p) {
                out.push(Vec::new());
                last = Some(p);
            }
            if let Some(v) = out.last_mut() {
                v.push(s.shard);
            }
            before += s.value_bytes;
        }
        out
    }

    /// The series positions a shard's chunks belong to (inclusive range).
    pub fn series_of(&self, shard: &PlannedShard, chunk_values: usize) -> std::ops::RangeInclusive<u32> {
        let mut left = shard.chunks;
        let mut i = shard.first_series;
        let mut k = u64::from(shard.first_chunk);
        loop {
            let n = layout::chunk_count(self.series[i as usize].n_values as usize, chunk_values) as u64 - k;
            if n >= left || i as usize + 1 >= self.series.len() {
                return shard.first_series..=i;
            }
            left -= n;
            i += 1;
            k = 0;
        }
    }
}

/// The error for a plan that contradicts itself (e.g. a tampered task).
pub(crate) fn bad_plan(write_id: &str, part: Option<u32>, shard: Option<u32>, why: String) -> Error {
    Error::Part { write_id: write_id.to_string(), part, shard, problem: crate::error::PartProblem::PlanMismatch(why) }
}
