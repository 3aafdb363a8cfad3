//! The selection's series grouped in stacks and blocks, and their values read
//! one block at a time (docs/format.md §10): the unit of the shuffle's
//! locality and of `timef.ray.read`'s parallel reads.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use arrow_array::RecordBatch;

use super::read_ahead::{Fetch, Footers};
use crate::dataset::SeriesMeta;
use crate::error::{Error, Result};
use crate::pages::RowValues;
use crate::reader::Version;
use crate::scan::{RowGroups, Selection};
use crate::storage::object::ReadStats;

/// The stacks whose first series' chunk 0 lies in one row group of the selection.
#[derive(Debug, Clone)]
struct Block {
    /// Row groups to read (ascending): every row group a chunk of its stacks lies in.
    row_groups: Vec<usize>,
    /// Stack numbers (index order of their first series).
    stacks: Range<usize>,
}

/// What windows are cut from: each selected series alone, or with
/// [`super::WindowOptions::stack_channels`] the selected series of each sample,
/// stacked. Stack `k` is `series[starts[k]..starts[k + 1]]`.
#[derive(Debug, Default)]
struct Stacks {
    series: Vec<usize>,
    starts: Vec<usize>,
    /// The sample of each stack; empty unless stacked.
    samples: Vec<String>,
    /// The channels of every stack, in row order; empty unless stacked.
    channels: Vec<String>,
}

/// The selection's series grouped in stacks and blocks, read one block at a
/// time: the unit of the shuffle's locality and of `timef.ray.read`'s parallel reads.
pub struct SeriesBlocks {
    row_groups: RowGroups,
    blocks: Vec<Block>,
    lengths: Vec<u64>,
    sample_ids: Vec<String>,
    stacks: Stacks,
    footers: Footers,
    pub(super) pool: Pool,
}

/// Buffers reused from one read to the next (a fresh buffer is faulted in
/// page by page as it is first written: a third of a read's time): the values
/// of decoded row groups, and of whole buffers ([`BlockValues`], handed back
/// by [`super::Windows`] once its windows are out). At most
/// [`MAX_POOLED_BUFFERS`] and [`MAX_POOLED_ROW_GROUPS`] are kept.
#[derive(Default)]
pub(super) struct Pool {
    values: Mutex<Vec<Vec<f32>>>,
    rows: Mutex<Vec<RowValues>>,
}

/// Buffers of values a [`Pool`] keeps: the one handed out and the one read ahead.
const MAX_POOLED_BUFFERS: usize = 2;
/// Decoded row groups a [`Pool`] keeps.
const MAX_POOLED_ROW_GROUPS: usize = 64;

impl Pool {
    /// An empty values buffer, reused when one was given back.
    fn values(&self) -> Vec<f32> {
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or_default();
        values.clear();
        values
    }
    /// Takes back the buffers of `values` once its windows are out.
    pub(super) fn give_block(&self, values: BlockValues) {
        let mut pool = self.values.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < MAX_POOLED_BUFFERS && values.joined.capacity() > 0 {
            pool.push(values.joined);
        }
        drop(pool);
        self.give_rows(values.decoded);
    }
    /// Buffers for a decoded row group, reused when some were given back.
    fn rows(&self) -> RowValues {
        self.rows.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or_default()
    }
    fn give_rows(&self, rows: Vec<RowValues>) {
        let mut pool = self.rows.lock().unwrap_or_else(|p| p.into_inner());
        pool.extend(rows);
        pool.truncate(MAX_POOLED_ROW_GROUPS);
    }
}

impl SeriesBlocks {
    /// The blocks of the series `selection` takes from `version`, each
    /// series a stack of its own, or with `stack_channels` the selected
    /// series of each sample the selection takes (docs/format.md §10).
    ///
    /// # Errors
    /// Those of [`crate::scan::scan`] (an unknown sample, channel, task or
    /// split; a contradictory index); with `stack_channels`,
    /// [`Error::Validation`] naming a sample whose series differ in length,
    /// sampling rate or start, or whose channels are not the first sample's.
    pub fn new(version: &Version, selection: &Selection, stack_channels: bool) -> Result<SeriesBlocks> {
        let row_groups = RowGroups::plan(version, selection)?;
        let n = row_groups.series().len();
        let mut lengths = vec![0u64; n];
        let mut spans = vec![0usize..0; n];
        for i in 0..row_groups.len() {
            for (series, chunk_idx, n_values) in row_groups.chunks(i) {
                lengths[series] += u64::try_from(n_values).unwrap_or(0);
                if chunk_idx == 0 {
                    spans[series].start = i;
                }
                spans[series].end = i + 1;
            }
        }
        // each series' window carries the first sample (samples.parquet order) that lists it
        let mut sample_ids = vec![String::new(); n];
        let number: BTreeMap<&str, usize> =
            row_groups.series().iter().enumerate().map(|(i, m)| (m.time_series_id.as_str(), i)).collect();
        let samples = version.samples()?;
        for sample in &samples {
            for r in &sample.series {
                if let Some(&i) = number.get(r.time_series_id.as_str()) {
                    if sample_ids[i].is_empty() {
                        sample_ids[i] = sample.sample_id.clone();
                    }
                }
            }
        }
        let stacks = if stack_channels {
            let taken = crate::scan::selected_samples(version, selection)?;
            let stacks = samples.iter().filter(|s| taken.as_ref().is_none_or(|t| t.contains(&s.sample_id))).map(|s| {
                let series: Vec<usize> =
                    s.series.iter().filter_map(|r| number.get(r.time_series_id.as_str()).copied()).collect();
                (s.sample_id.as_str(), series)
            });
            stack_samples(row_groups.series(), &lengths, stacks)?
        } else {
            Stacks { series: (0..n).collect(), starts: (0..=n).collect(), ..Stacks::default() }
        };
        let mut blocks: Vec<Block> = Vec::new();
        for k in 0..stacks.starts.len() - 1 {
            let series = &stacks.series[stacks.starts[k]..stacks.starts[k + 1]];
            let first = series.iter().map(|&s| spans[s].start).min().unwrap_or(0);
            if blocks.last().is_none_or(|b| b.row_groups[0] != first) {
                blocks.push(Block { row_groups: vec![first], stacks: k..k });
            }
            if let Some(b) = blocks.last_mut() {
                b.stacks.end = k + 1;
                b.row_groups.extend(series.iter().flat_map(|&s| spans[s].clone()));
            }
        }
        for b in &mut blocks {
            b.row_groups.sort_unstable();
            b.row_groups.dedup();
        }
        Ok(SeriesBlocks {
            row_groups,
            blocks,
            lengths,
            sample_ids,
            stacks,
            footers: Footers::default(),
            pool: Pool::default(),
        })
    }
    /// Blocks, numbered `0..len()` in index order.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }
    /// Whether the selection has no stack.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
    /// The selected series in index order; series numbers index it.
    pub fn series(&self) -> &[SeriesMeta] {
        self.row_groups.series()
    }
    /// Values of series number `series`.
    pub fn series_len(&self, series: usize) -> u64 {
        self.lengths[series]
    }
    /// The sample of series number `series`: the first sample (in
    /// `samples.parquet` order) listing it, `""` for none.
    pub fn sample_id(&self, series: usize) -> &str {
        &self.sample_ids[series]
    }
    /// Stacks, numbered `0..stacks()`: the series (one each, numbered as
    /// series) or with `stack_channels` the samples windows are cut from.
    pub fn stacks(&self) -> usize {
        self.stacks.starts.len() - 1
    }
    /// Series numbers of stack `stack`, in row order.
    pub fn stack_series(&self, stack: usize) -> &[usize] {
        &self.stacks.series[self.stacks.starts[stack]..self.stacks.starts[stack + 1]]
    }
    /// The id of stack `stack`: its sample's with `stack_channels`, else its series'.
    pub fn stack_id(&self, stack: usize) -> &str {
        match self.stacks.samples.get(stack) {
            Some(sample) => sample,
            None => &self.series()[stack].time_series_id,
        }
    }
    /// The sample of stack `stack` ([`SeriesBlocks::sample_id`] of its series unless stacked).
    pub fn stack_sample_id(&self, stack: usize) -> &str {
        match self.stacks.samples.get(stack) {
            Some(sample) => sample,
            None => self.sample_id(stack),
        }
    }
    /// The channels of every stack, in row order, with `stack_channels`; empty otherwise.
    pub fn channels(&self) -> &[String] {
        &self.stacks.channels
    }
    /// Values of each series of stack `stack` (equal within a stack).
    pub(super) fn stack_len(&self, stack: usize) -> u64 {
        self.stack_series(stack).first().map_or(0, |&s| self.lengths[s])
    }
    /// Stack numbers of block `block`.
    pub fn block_stacks(&self, block: usize) -> Range<usize> {
        self.blocks[block].stacks.clone()
    }
    /// The block holding stack `stack`.
    pub(super) fn block_of(&self, stack: usize) -> usize {
        self.blocks.partition_point(|b| b.stacks.end <= stack)
    }
    /// Row groups of the selection (the units [`SeriesBlocks::read_row_group`] reads).
    pub fn row_groups(&self) -> usize {
        self.row_groups.len()
    }
    /// Row group `i` of the selection, decoded and checked, as batches of
    /// [`crate::scan::scan_schema`] (its selected chunks, in index order).
    ///
    /// # Errors
    /// Those of a scan's shard reads ([`Error::Corrupt`], [`Error::Io`]...).
    pub fn read_row_group(&self, i: usize) -> Result<Vec<RecordBatch>> {
        self.row_groups.read(i)
    }
    /// The values of every series of `blocks`, reading each row group they
    /// span once, on `threads` threads (0: one per core).
    ///
    /// # Errors
    /// Those of [`SeriesBlocks::read_row_group`].
    pub fn read_blocks(&self, blocks: &[usize], threads: usize) -> Result<BlockValues> {
        let mut wanted: BTreeSet<usize> = BTreeSet::new();
        for &b in blocks {
            wanted.extend(self.blocks[b].stacks.clone().flat_map(|k| self.stack_series(k).iter().copied()));
        }
        let units = self.block_row_groups(blocks);
        let decoded = self.read_units(&units, threads)?;
        // a row group whose values the blocks mostly want is kept and its series used where
        // they were decoded; a series spanning row groups, or in a row group mostly of
        // other blocks' series (an edge of the block set), is copied into one buffer reused
        // for the whole block set (many series-sized ones in a shuffled order fragment
        // glibc's heap, and a fresh one is faulted in page by page as it is first written)
        let mut out = BlockValues { decoded: Vec::new(), joined: self.pool.values(), series: Vec::new() };
        let mut done = Vec::new();
        for (&unit, rows) in units.iter().zip(decoded) {
            let runs = self.series_runs(unit, &rows.offsets);
            let wanted_values: usize = runs.iter().filter(|(s, _)| wanted.contains(s)).map(|(_, r)| r.len()).sum();
            let keep = 2 * wanted_values >= rows.values.len();
            let k = out.decoded.len();
            for (series, run) in runs.into_iter().filter(|(s, _)| wanted.contains(s)) {
                let continued = out.series.last().is_some_and(|(last, _)| *last == series);
                if !continued && keep {
                    out.series.push((series, Place::Decoded(k, run)));
                    continue;
                }
                // copied: after the part of the series the previous row groups hold
                let start = match out.series.last().map(|(_, p)| p.clone()) {
                    Some(Place::Joined(range)) if continued => range.start,
                    Some(Place::Decoded(j, range)) if continued => {
                        let at = out.joined.len();
                        out.joined.extend_from_slice(&out.decoded[j].values[range]);
                        at
                    }
                    _ => out.joined.len(),
                };
                out.joined.extend_from_slice(&rows.values[run]);
                let place = Place::Joined(start..out.joined.len());
                match out.series.last_mut() {
                    Some((_, last)) if continued => *last = place,
                    _ => out.series.push((series, place)),
                }
            }
            match keep {
                true => out.decoded.push(rows),
                false => done.push(rows),
            }
        }
        self.pool.give_rows(done);
        Ok(out)
    }

    /// `(series number, range of its values)` of the runs of row group `unit`
    /// decoded with `offsets`, in row order: the wanted chunks sit in index
    /// order, so each series is one run.
    fn series_runs(&self, unit: usize, offsets: &[i32]) -> Vec<(usize, Range<usize>)> {
        let mut runs = Vec::new();
        let mut row = 0;
        let mut chunks = self.row_groups.chunks(unit).peekable();
        while let Some((series, _, _)) = chunks.next() {
            let first = row;
            row += 1;
            while chunks.next_if(|&(s, _, _)| s == series).is_some() {
                row += 1;
            }
            let (Some(&from), Some(&to)) = (offsets.get(first), offsets.get(row)) else { break };
            runs.push((series, from as usize..to as usize));
        }
        runs
    }

    /// Takes back the buffers of `values` for the next read (those
    /// [`SeriesBlocks::read_blocks`] returns are otherwise freed when dropped,
    /// and the next read decodes into fresh memory).
    pub fn give_back(&self, values: BlockValues) {
        self.pool.give_block(values);
    }

    /// The row groups `blocks` read, ascending.
    fn block_row_groups(&self, blocks: &[usize]) -> Vec<usize> {
        let mut units: Vec<usize> = blocks.iter().flat_map(|&b| self.blocks[b].row_groups.iter().copied()).collect();
        units.sort_unstable();
        units.dedup();
        units
    }

    /// Starts fetching ahead, on an object store, the bytes [`SeriesBlocks::read_blocks`] of `blocks` reads.
    pub(super) fn fetch_blocks(&self, blocks: &[usize]) -> Fetch {
        Fetch::start(&self.footers, &self.row_groups, &self.block_row_groups(blocks))
    }

    /// [`SeriesBlocks::read_blocks`] after [`SeriesBlocks::fetch_blocks`]:
    /// the shards' tails fetched with their footers are freed once read.
    pub(super) fn read_fetched_blocks(&self, blocks: &[usize], threads: usize) -> Result<BlockValues> {
        let values = self.read_blocks(blocks, threads);
        self.footers.decoded(&self.row_groups, &self.block_row_groups(blocks));
        values
    }

    /// Requests and bytes of the reads through the version's store handle so
    /// far (every reader of the opened version counted); `None` on a local path.
    pub fn read_stats(&self) -> Option<ReadStats> {
        (0..self.row_groups.len()).next().and_then(|i| self.row_groups.origin(i).0.read_stats())
    }

    /// The values of row groups `units` decoded on up to `threads` threads,
    /// in the order given, into buffers of the pool.
    fn read_units(&self, units: &[usize], threads: usize) -> Result<Vec<RowValues>> {
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
        .min(units.len())
        .max(1);
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<Result<RowValues>>>> = units.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(&unit) = units.get(at) else { return };
            let mut rows = self.pool.rows();
            let result = self.row_groups.read_values(unit, &mut rows).map(|()| rows);
            let failed = result.is_err();
            *slots[at].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            if failed {
                next.store(units.len(), Ordering::Relaxed);
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(work);
            }
            work();
        });
        let results: Vec<Option<Result<RowValues>>> =
            slots.into_iter().map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner())).collect();
        // every row group taken before a failure was read (the scope joined its thread), so
        // the first failure comes before any row group left unread
        let mut out = Vec::with_capacity(units.len());
        for r in results.into_iter().flatten() {
            out.push(r?);
        }
        Ok(out)
    }
}

/// The stacks of `samples` (`(sample_id, its selected series numbers in the
/// sample's order)`, samples.parquet order): samples without a selected
/// series are left out; every other must have the first one's channels in its
/// order, and series of one length, sampling rate and start. Stacks are
/// numbered by their first series in index order (then samples.parquet order).
fn stack_samples<'a>(
    meta: &[SeriesMeta],
    lengths: &[u64],
    samples: impl Iterator<Item = (&'a str, Vec<usize>)>,
) -> Result<Stacks> {
    let mut taken: Vec<(usize, &str, Vec<usize>)> = Vec::new();
    let mut channels: Option<Vec<String>> = None;
    for (sample, series) in samples {
        let Some(&head) = series.first() else { continue };
        let names: Vec<String> = series.iter().map(|&s| meta[s].channel.clone()).collect();
        let refuse = |reason: String| Err(Error::validation(sample, "stack_channels", reason));
        match &channels {
            None => channels = Some(names),
            Some(first) if *first != names => {
                return refuse(format!(
                    "its channels [{}] are not the first sample's [{}]: stacked channels need the same channels, in \
                     the same order, in every sample",
                    names.join(", "),
                    first.join(", ")
                ))
            }
            Some(_) => {}
        }
        let (a, first_len) = (&meta[head], lengths[head]);
        if let Some(&other) = series.iter().find(|&&s| {
            lengths[s] != first_len
                || meta[s].sampling_rate_hz != a.sampling_rate_hz
                || meta[s].t_start_s != a.t_start_s
        }) {
            let b = &meta[other];
            return refuse(format!(
                "series {} has {first_len} values at {} Hz from {} s, series {} {} values at {} Hz from {} s: \
                 stacked channels need series of one length, sampling rate and start",
                a.time_series_id,
                a.sampling_rate_hz,
                a.t_start_s,
                b.time_series_id,
                lengths[other],
                b.sampling_rate_hz,
                b.t_start_s
            ));
        }
        let first = series.iter().copied().min().unwrap_or(head);
        taken.push((first, sample, series));
    }
    // stable: samples with the same first series keep samples.parquet order
    taken.sort_by_key(|(first, _, _)| *first);
    let mut stacks = Stacks { starts: vec![0], channels: channels.unwrap_or_default(), ..Stacks::default() };
    for (_, sample, series) in taken {
        stacks.series.extend(series);
        stacks.starts.push(stacks.series.len());
        stacks.samples.push(sample.to_string());
    }
    Ok(stacks)
}

/// The values of the series of some blocks ([`SeriesBlocks::read_blocks`]),
/// series in index order: each where its row group was decoded, or, when it
/// spans several row groups or its row group is mostly of other series,
/// copied into one buffer. [`SeriesBlocks::give_back`] reuses its buffers.
#[derive(Debug, Default)]
pub struct BlockValues {
    /// The row groups kept, in the order read.
    decoded: Vec<RowValues>,
    /// The series copied, one after another.
    joined: Vec<f32>,
    /// `(series number, where its values are)`, ascending.
    series: Vec<(usize, Place)>,
}

/// Where a series' values are in a [`BlockValues`].
#[derive(Debug, Clone)]
enum Place {
    /// In kept row group `.0`, at these values.
    Decoded(usize, Range<usize>),
    /// In the buffer of copied series, at these values.
    Joined(Range<usize>),
}

impl BlockValues {
    /// The values of series number `series`, if read.
    pub fn get(&self, series: usize) -> Option<&[f32]> {
        let at = self.series.binary_search_by_key(&series, |(s, _)| *s).ok()?;
        Some(self.at(&self.series[at].1))
    }
    /// `(series number, values)` of every series read, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &[f32])> + '_ {
        self.series.iter().map(|(s, place)| (*s, self.at(place)))
    }
    /// The values at `place`: places are made by `read_blocks` from the row
    /// groups it keeps and the offsets their decode checked, so always in range.
    fn at(&self, place: &Place) -> &[f32] {
        match place {
            Place::Decoded(k, range) => &self.decoded[*k].values[range.clone()],
            Place::Joined(range) => &self.joined[range.clone()],
        }
    }
}
