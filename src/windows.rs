//! Training windows over a version (docs/format.md §10, "Windows for
//! training"): every window of `context_length + prediction_length` values at
//! a stride, over the series a [`Selection`] takes, in index order or in an
//! elastic deterministic shuffle with locality, split among any number of
//! consumers (ranks x DataLoader workers) that together take every window
//! exactly once per epoch, and resumable after any window.
//!
//! The order is a pure function of (version, selection, window parameters,
//! seed, epoch), never of the consumers: consumers only cut the one global
//! sequence into contiguous spans ([`Share`]). The shuffle is computed here with
//! SplitMix64 ([`SplitMix64`]), not a dependency's generator, so it stays the
//! same across dependency versions.
//!
//! Data is read by *block*: the series whose first chunk lies in one row group
//! of the selection, read with the row groups their chunks span, through the
//! bulk read path's one seam ([`crate::scan`]'s `RowGroups`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use crate::dataset::SeriesMeta;
use crate::error::{Error, Result};
use crate::pages::RowValues;
use crate::reader::Version;
use crate::scan::{RowGroups, Selection};
use crate::storage::object::ReadStats;

mod read_ahead;
use read_ahead::{Fetch, Footers};

/// Blocks (row groups where series start) whose windows are shuffled
/// together, when none is set (8). Memory: about two buffers' decoded values
/// are held (the one handed out and the next, read ahead), `8 x` a row group's
/// values each; with the writer's 4 MiB row groups about 64 MiB at most.
pub const DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS: usize = 8;

/// How windows are cut and ordered; `WindowOptions::new(context, prediction)`
/// then set fields. Checked by [`WindowPlan::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowOptions {
    /// Values of a window's past part (>= 1).
    pub context_length: usize,
    /// Values of a window's future part (>= 0).
    pub prediction_length: usize,
    /// Values between the starts of consecutive windows of a series (>= 1);
    /// `None`: the window length (windows do not overlap).
    pub stride: Option<usize>,
    /// A series shorter than one window (but not empty) gives one window, its
    /// values at the end and zeros before them ([`WindowBatch::padding`]);
    /// otherwise (default) it gives none.
    pub pad: bool,
    /// Each window stacks the selected series of one sample, `[channels,
    /// length]`, rows in the sample's series order (docs/format.md §10);
    /// otherwise (default) each series gives windows of its own.
    pub stack_channels: bool,
    /// Shuffled order (default), or index order.
    pub shuffle: bool,
    /// Seed of the shuffle (default 0).
    pub seed: u64,
    /// Blocks whose windows are shuffled together ([`DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS`], >= 1).
    pub shuffle_buffer_row_groups: usize,
    /// Row groups decoded in parallel (0, default: one per available core).
    pub threads: usize,
}

impl WindowOptions {
    /// Windows of `context_length + prediction_length` values, not
    /// overlapping, one series each, shuffled with seed 0, no padding.
    pub fn new(context_length: usize, prediction_length: usize) -> WindowOptions {
        WindowOptions {
            context_length,
            prediction_length,
            stride: None,
            pad: false,
            stack_channels: false,
            shuffle: true,
            seed: 0,
            shuffle_buffer_row_groups: DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS,
            threads: 0,
        }
    }
    /// Values of a window.
    pub fn window_length(&self) -> usize {
        self.context_length + self.prediction_length
    }
    fn stride(&self) -> usize {
        self.stride.unwrap_or(self.window_length())
    }
    fn check(&self) -> Result<()> {
        let bad = |option: &'static str, reason: &str| Err(Error::InvalidOption { option, reason: reason.into() });
        if self.context_length == 0 {
            return bad("context_length", "must be at least 1");
        }
        if self.context_length.checked_add(self.prediction_length).is_none_or(|l| l > i32::MAX as usize) {
            return bad("prediction_length", "the window length must be below 2^31 values");
        }
        if self.stride == Some(0) {
            return bad("stride", "must be at least 1");
        }
        if self.shuffle_buffer_row_groups == 0 {
            return bad("shuffle_buffer_row_groups", "must be at least 1");
        }
        Ok(())
    }
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", 2014): the state advances by 0x9E3779B97F4A7C15 and each output
/// is the state mixed by `z = (z ^ z>>30) * 0xBF58476D1CE4E5B9;`
/// `z = (z ^ z>>27) * 0x94D049BB133111EB; z ^ z>>31`. The shuffle's only
/// randomness (docs/format.md §10).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with this state.
    pub fn new(state: u64) -> SplitMix64 {
        SplitMix64(state)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A uniform integer in `0..n` (`n >= 1`): Lemire's multiply-shift with
    /// rejection ("Fast random integer generation in an interval", 2019):
    /// `m = x * n` (128-bit); while `low64(m) < (2^64 - n) % n` draw again;
    /// the result is `m >> 64`.
    pub fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
    /// The generator of one shuffle: `s1 = f(seed) ^ epoch`, `s2 = f(s1) ^ stream`,
    /// state `f(s2)`, where `f(x)` is the first output of a generator of state `x`.
    /// Stream 0 orders the blocks, stream `g + 1` the windows of buffer `g`.
    pub fn for_shuffle(seed: u64, epoch: u64, stream: u64) -> SplitMix64 {
        let f = |x: u64| SplitMix64(x).next_u64();
        SplitMix64(f(f(f(seed) ^ epoch) ^ stream))
    }
    /// Fisher-Yates: for `i` from `len - 1` down to 1, swap `items[i]` with `items[below(i + 1)]`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// The stacks whose first series' chunk 0 lies in one row group of the selection.
#[derive(Debug, Clone)]
struct Block {
    /// Row groups to read (ascending): every row group a chunk of its stacks lies in.
    row_groups: Vec<usize>,
    /// Stack numbers (index order of their first series).
    stacks: Range<usize>,
}

/// What windows are cut from: each selected series alone, or with
/// [`WindowOptions::stack_channels`] the selected series of each sample,
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
    pool: Pool,
}

/// Buffers reused from one read to the next (a fresh buffer is faulted in
/// page by page as it is first written: a third of a read's time): the values
/// of decoded row groups, and of whole buffers ([`BlockValues`], handed back
/// by [`Windows`] once its windows are out). At most
/// [`MAX_POOLED_BUFFERS`] and [`MAX_POOLED_ROW_GROUPS`] are kept.
#[derive(Default)]
struct Pool {
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
    fn give_block(&self, values: BlockValues) {
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
    fn stack_len(&self, stack: usize) -> u64 {
        self.stack_series(stack).first().map_or(0, |&s| self.lengths[s])
    }
    /// Stack numbers of block `block`.
    pub fn block_stacks(&self, block: usize) -> Range<usize> {
        self.blocks[block].stacks.clone()
    }
    /// The block holding stack `stack`.
    fn block_of(&self, stack: usize) -> usize {
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
    fn fetch_blocks(&self, blocks: &[usize]) -> Fetch {
        Fetch::start(&self.footers, &self.row_groups, &self.block_row_groups(blocks))
    }

    /// [`SeriesBlocks::read_blocks`] after [`SeriesBlocks::fetch_blocks`]:
    /// the shards' tails fetched with their footers are freed once read.
    fn read_fetched_blocks(&self, blocks: &[usize], threads: usize) -> Result<BlockValues> {
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

/// The windows of a selection under [`WindowOptions`]: how many there are and
/// their order in each epoch. Cheap to share (`Arc`); each
/// [`WindowPlan::windows`] iterator reads its own share.
pub struct WindowPlan {
    blocks: SeriesBlocks,
    options: WindowOptions,
    /// Windows of each block.
    block_windows: Vec<u64>,
    total: u64,
}

/// One consumer's part of an epoch: the `consumer`-th of `consumers`
/// contiguous spans of equal size (within one window) of the windows not in
/// `consumed`, in the global order, less the first `taken` of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Share {
    /// This consumer (`rank * workers + worker`), `< consumers`.
    pub consumer: usize,
    /// Consumers of the epoch (`world_size * workers`), >= 1.
    pub consumers: usize,
    /// Positions of the global sequence already handed out before this split
    /// (sorted, disjoint, half-open), from [`merge_consumed`].
    pub consumed: Vec<(u64, u64)>,
    /// Windows of this span already handed out.
    pub taken: u64,
}

impl Share {
    /// The whole epoch for one consumer.
    pub fn all() -> Share {
        Share { consumer: 0, consumers: 1, consumed: Vec::new(), taken: 0 }
    }
}

/// The positions of `0..total` not in `consumed` (sorted, disjoint).
fn remaining(total: u64, consumed: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for &(a, b) in consumed {
        if a > at {
            out.push((at, a.min(total)));
        }
        at = at.max(b);
    }
    if at < total {
        out.push((at, total));
    }
    out.retain(|(a, b)| a < b);
    out
}

/// Positions `lo..hi` of the sequence `intervals` (counted over their lengths), as global intervals.
fn slice(intervals: &[(u64, u64)], lo: u64, hi: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut seen = 0;
    for &(a, b) in intervals {
        let (from, to) = (seen, seen + (b - a));
        let (l, h) = (lo.max(from), hi.min(to));
        if l < h {
            out.push((a + (l - from), a + (h - from)));
        }
        seen = to;
    }
    out
}

/// The global positions of `share`'s span, less its first `taken`.
fn span(total: u64, share: &Share) -> Result<Vec<(u64, u64)>> {
    if share.consumers == 0 || share.consumer >= share.consumers {
        return Err(Error::InvalidOption {
            option: "consumer",
            reason: format!("consumer {} of {} consumers", share.consumer, share.consumers),
        });
    }
    check_consumed(total, &share.consumed)?;
    let rest = remaining(total, &share.consumed);
    let n: u64 = rest.iter().map(|(a, b)| b - a).sum();
    let cut = |c: usize| (u128::from(n) * c as u128 / share.consumers as u128) as u64;
    let (lo, hi) = (cut(share.consumer), cut(share.consumer + 1));
    Ok(slice(&rest, lo.saturating_add(share.taken).min(hi), hi))
}

/// Refuses `consumed` unless its ranges are non-empty, sorted, disjoint and within `0..total`.
fn check_consumed(total: u64, consumed: &[(u64, u64)]) -> Result<()> {
    let mut at = 0;
    for &(a, b) in consumed {
        if a < at || b <= a || b > total {
            return Err(Error::InvalidOption {
                option: "consumed",
                reason: format!("range {a}..{b} is not sorted, disjoint, non-empty and within 0..{total}"),
            });
        }
        at = b;
    }
    Ok(())
}

/// The positions handed out once each consumer `c` of `consumers` (splitting
/// the windows not in `consumed`, as [`Share`] does) took its first
/// `taken[c]`: the `consumed` of a split of the rest among any number of
/// consumers (an elastic resume).
///
/// # Errors
/// [`Error::InvalidOption`] `taken` unless it has `consumers` counts.
pub fn merge_consumed(total: u64, consumed: &[(u64, u64)], consumers: usize, taken: &[u64]) -> Result<Vec<(u64, u64)>> {
    if taken.len() != consumers || consumers == 0 {
        return Err(Error::InvalidOption {
            option: "taken",
            reason: format!("{} counts for {consumers} consumers", taken.len()),
        });
    }
    check_consumed(total, consumed)?;
    let mut all: Vec<(u64, u64)> = consumed.to_vec();
    for (c, &t) in taken.iter().enumerate() {
        let share = Share { consumer: c, consumers, consumed: consumed.to_vec(), taken: 0 };
        let whole = span(total, &share)?;
        let lengths: u64 = whole.iter().map(|(a, b)| b - a).sum();
        all.extend(slice(&whole, 0, t.min(lengths)));
    }
    all.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in all {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ if a < b => merged.push((a, b)),
            _ => {}
        }
    }
    Ok(merged)
}

/// An epoch's order: buffers of blocks and the windows before each buffer.
struct EpochOrder {
    buffers: Vec<Vec<usize>>,
    /// `starts[g]`: windows of the buffers before `g`; `starts[len]` = total.
    starts: Vec<u64>,
}

impl WindowPlan {
    /// The windows of the series `selection` takes from `version`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] for options out of range; those of [`SeriesBlocks::new`].
    pub fn new(version: &Version, selection: &Selection, options: WindowOptions) -> Result<WindowPlan> {
        options.check()?;
        let blocks = SeriesBlocks::new(version, selection, options.stack_channels)?;
        let block_windows: Vec<u64> = (0..blocks.len())
            .map(|b| blocks.block_stacks(b).map(|k| windows_of(&options, blocks.stack_len(k))).sum())
            .collect();
        let total = block_windows.iter().sum();
        Ok(WindowPlan { blocks, options, block_windows, total })
    }
    /// Windows per epoch.
    pub fn len(&self) -> u64 {
        self.total
    }
    /// Whether an epoch has no window.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
    /// The options.
    pub fn options(&self) -> &WindowOptions {
        &self.options
    }
    /// The series and their blocks.
    pub fn blocks(&self) -> &SeriesBlocks {
        &self.blocks
    }

    fn order(&self, epoch: u64) -> EpochOrder {
        let mut blocks: Vec<usize> = (0..self.blocks.len()).collect();
        if self.options.shuffle {
            SplitMix64::for_shuffle(self.options.seed, epoch, 0).shuffle(&mut blocks);
        }
        // index order reads buffers of the same size too, for the same memory
        let size = self.options.shuffle_buffer_row_groups;
        let buffers: Vec<Vec<usize>> = blocks.chunks(size).map(<[usize]>::to_vec).collect();
        let mut starts = vec![0];
        for buffer in &buffers {
            let n: u64 = buffer.iter().map(|&b| self.block_windows[b]).sum();
            starts.push(starts.last().copied().unwrap_or(0) + n);
        }
        EpochOrder { buffers, starts }
    }

    /// `(stack number, start)` of every window of buffer `g`, in the epoch's order.
    fn buffer_windows(&self, order: &EpochOrder, epoch: u64, g: usize) -> Vec<(usize, i64)> {
        let mut out = Vec::new();
        for &b in &order.buffers[g] {
            for k in self.blocks.block_stacks(b) {
                let n = self.blocks.stack_len(k);
                out.extend((0..windows_of(&self.options, n)).map(|w| (k, window_start(&self.options, n, w))));
            }
        }
        if self.options.shuffle {
            SplitMix64::for_shuffle(self.options.seed, epoch, g as u64 + 1).shuffle(&mut out);
        }
        out
    }

    /// `(stack number, start)` of the windows `share` takes in `epoch`, in
    /// order, without reading values: the order alone. A stack is a series
    /// (numbered as [`SeriesBlocks::series`]) unless `stack_channels`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] `consumer` for a consumer outside `consumers`.
    pub fn order_of(&self, epoch: u64, share: &Share) -> Result<Vec<(usize, i64)>> {
        let order = self.order(epoch);
        let mut out = Vec::new();
        for (g, ranges) in tasks(&order, &span(self.total, share)?) {
            let all = self.buffer_windows(&order, epoch, g);
            for r in ranges {
                out.extend_from_slice(&all[r]);
            }
        }
        Ok(out)
    }

    /// The windows `share` takes in `epoch`, in order, read ahead by one
    /// buffer on a thread of their own. Of each buffer, only the blocks
    /// holding a window of the share are read; on an object store the bytes
    /// of the next buffer's row groups are fetched while one is decoded.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] `consumer` for a consumer outside `consumers`;
    /// read errors come from the iterator.
    pub fn windows(self: &Arc<Self>, epoch: u64, share: &Share) -> Result<Windows> {
        let order = self.order(epoch);
        let work = tasks(&order, &span(self.total, share)?);
        let (tx, rx) = sync_channel(0);
        let plan = Arc::clone(self);
        std::thread::Builder::new()
            .name("timef-windows".into())
            .spawn(move || {
                // each buffer's windows of the share and the blocks holding them
                let mut buffers = work.into_iter().map(|(g, ranges)| {
                    let all = plan.buffer_windows(&order, epoch, g);
                    let items: Vec<(usize, i64)> = ranges.into_iter().flat_map(|r| all[r].iter().copied()).collect();
                    let needed: BTreeSet<usize> = items.iter().map(|&(k, _)| plan.blocks.block_of(k)).collect();
                    (items, needed.into_iter().collect::<Vec<usize>>())
                });
                let fetch = |(items, needed): (Vec<(usize, i64)>, Vec<usize>)| {
                    (plan.blocks.fetch_blocks(&needed), items, needed)
                };
                let mut next = buffers.next().map(fetch);
                while let Some((mut fetched, items, needed)) = next.take() {
                    fetched.wait();
                    // the next buffer's bytes arrive while this one is decoded
                    next = buffers.next().map(fetch);
                    let result = plan.blocks.read_fetched_blocks(&needed, plan.options.threads).map(|values| Buffer {
                        values,
                        items,
                        next: 0,
                    });
                    drop(fetched);
                    let failed = result.is_err();
                    if tx.send(result).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| Error::io(std::path::Path::new("timef-windows thread"), e))?;
        Ok(Windows { plan: Arc::clone(self), rx, current: None, done: false })
    }
}

impl WindowPlan {
    /// Appends the window of stack `stack` at `start` to `batch`, its
    /// series' values taken from `values`; nothing when one is missing there.
    fn push_window(&self, batch: &mut WindowBatch, values: &BlockValues, stack: usize, start: i64) {
        let (context, length) = (self.options.context_length, self.options.window_length());
        let padding = (-start.min(0)) as usize;
        let from = start.max(0) as usize;
        let series = self.blocks.stack_series(stack);
        if !series.iter().all(|&s| values.get(s).is_some()) {
            return;
        }
        for values in series.iter().filter_map(|&s| values.get(s)) {
            // the row is `padding` zeros then `values[from..]`, cut at `context`
            let observed = &values[from..from + length - padding];
            let (past_zeros, future_zeros) = (padding.min(context), padding.saturating_sub(context));
            let (past, future) = observed.split_at(context - past_zeros);
            batch.past_values.resize(batch.past_values.len() + past_zeros, 0.0);
            batch.past_values.extend_from_slice(past);
            batch.future_values.resize(batch.future_values.len() + future_zeros, 0.0);
            batch.future_values.extend_from_slice(future);
        }
        let meta = &self.blocks.series()[series[0]];
        batch.stack.push(stack);
        batch.start.push(start);
        batch.start_s.push(meta.t_start_s + start as f64 / meta.sampling_rate_hz);
        batch.padding.push(padding as u32);
    }

    /// An empty batch with room for `windows` windows: each window's values
    /// are then copied once, never moved by a growing buffer.
    /// Values reserved are at most [`MAX_RESERVED_VALUES`] (windows of a long
    /// context then grow the batch as they come, never over-reserve).
    fn batch_with_capacity(&self, windows: usize) -> WindowBatch {
        let rows = self.blocks.channels().len().max(1);
        let window_values =
            rows.saturating_mul(self.options.context_length.saturating_add(self.options.prediction_length)).max(1);
        let windows = windows.min(MAX_RESERVED_VALUES / window_values);
        let per_window = |len: usize| windows.saturating_mul(rows).saturating_mul(len);
        WindowBatch {
            stack: Vec::with_capacity(windows),
            start: Vec::with_capacity(windows),
            start_s: Vec::with_capacity(windows),
            past_values: Vec::with_capacity(per_window(self.options.context_length)),
            future_values: Vec::with_capacity(per_window(self.options.prediction_length)),
            padding: Vec::with_capacity(windows),
        }
    }

    /// Every window of block `block` in index order (whatever the shuffle):
    /// the unit of a distributed read (`timef.ray.read`).
    ///
    /// # Errors
    /// Those of [`SeriesBlocks::read_blocks`].
    pub fn block_windows(&self, block: usize) -> Result<WindowBatch> {
        let values = self.blocks.read_blocks(&[block], self.options.threads)?;
        let windows = usize::try_from(self.block_windows[block]).unwrap_or(0);
        let mut batch = self.batch_with_capacity(windows);
        for k in self.blocks.block_stacks(block) {
            let n = self.blocks.stack_len(k);
            for w in 0..windows_of(&self.options, n) {
                self.push_window(&mut batch, &values, k, window_start(&self.options, n, w));
            }
        }
        self.blocks.pool.give_block(values);
        Ok(batch)
    }
}

/// The buffers a span covers, each with the ranges of its window list taken.
fn tasks(order: &EpochOrder, span: &[(u64, u64)]) -> Vec<(usize, Vec<Range<usize>>)> {
    let mut out: Vec<(usize, Vec<Range<usize>>)> = Vec::new();
    for &(a, b) in span {
        // the first buffer holding position a
        let mut g = order.starts.partition_point(|&s| s <= a).saturating_sub(1);
        while g < order.buffers.len() && order.starts[g] < b {
            let (lo, hi) = (a.max(order.starts[g]), b.min(order.starts[g + 1]));
            if lo < hi {
                let r = (lo - order.starts[g]) as usize..(hi - order.starts[g]) as usize;
                match out.last_mut() {
                    Some((last, ranges)) if *last == g => ranges.push(r),
                    _ => out.push((g, vec![r])),
                }
            }
            g += 1;
        }
    }
    out
}

/// Windows of a series of `n` values.
fn windows_of(options: &WindowOptions, n: u64) -> u64 {
    let length = options.window_length() as u64;
    if n >= length {
        (n - length) / options.stride() as u64 + 1
    } else {
        u64::from(options.pad && n > 0)
    }
}

/// Start of window `k` of a series of `n` values (negative: padded).
fn window_start(options: &WindowOptions, n: u64, k: u64) -> i64 {
    let length = options.window_length() as u64;
    if n >= length {
        (k * options.stride() as u64) as i64
    } else {
        n as i64 - length as i64
    }
}

/// A decoded buffer and the windows taken from it.
struct Buffer {
    values: BlockValues,
    items: Vec<(usize, i64)>,
    next: usize,
}

/// Windows handed out together: row `i` of each field is window `i`. A
/// window has `C` rows: 1, or with `stack_channels` the stacks' channels
/// ([`SeriesBlocks::channels`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowBatch {
    /// Stack of each window ([`SeriesBlocks::stack_series`]): its series
    /// number ([`SeriesBlocks::series`]) unless `stack_channels`.
    pub stack: Vec<usize>,
    /// Index of each window's first value in its series (negative when padded).
    pub start: Vec<i64>,
    /// Time of each window's first value, seconds: `t_start_s + start / sampling_rate_hz`.
    pub start_s: Vec<f64>,
    /// `[windows, C, context_length]` row-major float32.
    pub past_values: Vec<f32>,
    /// `[windows, C, prediction_length]` row-major float32.
    pub future_values: Vec<f32>,
    /// Leading padded (zero) values of each window; 0 unless [`WindowOptions::pad`].
    pub padding: Vec<u32>,
}

impl WindowBatch {
    /// Windows in the batch.
    pub fn len(&self) -> usize {
        self.stack.len()
    }
    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }
}

/// Windows a batch of [`Windows::next_batch`] has room for from the start.
const MAX_RESERVED_WINDOWS: usize = 4096;
/// Values (float32) a batch has room for from the start: 64 MiB.
const MAX_RESERVED_VALUES: usize = 16 << 20;

/// A consumer's windows ([`WindowPlan::windows`]), read by batch.
pub struct Windows {
    plan: Arc<WindowPlan>,
    rx: Receiver<Result<Buffer>>,
    current: Option<Buffer>,
    done: bool,
}

impl Windows {
    /// Up to `max` next windows (`None` at the end). After an error the
    /// iterator ends.
    ///
    /// # Errors
    /// Those of the reads ([`Error::Corrupt`], [`Error::Io`]...).
    pub fn next_batch(&mut self, max: usize) -> Option<Result<WindowBatch>> {
        // room for a whole batch, up to a bound (a huge `max` ends with the epoch's few windows)
        let mut batch = self.plan.batch_with_capacity(max.clamp(1, MAX_RESERVED_WINDOWS));
        while batch.len() < max.max(1) && !self.done {
            let buffer = match &mut self.current {
                Some(b) if b.next < b.items.len() => b,
                _ => match self.rx.recv() {
                    Ok(Ok(b)) => {
                        // its values buffer goes back to the reader thread, for a buffer ahead
                        if let Some(done) = self.current.take() {
                            self.plan.blocks.pool.give_block(done.values);
                        }
                        self.current.insert(b)
                    }
                    Ok(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    Err(_) => {
                        self.done = true;
                        break;
                    }
                },
            };
            while buffer.next < buffer.items.len() && batch.len() < max.max(1) {
                let (stack, start) = buffer.items[buffer.next];
                buffer.next += 1;
                self.plan.push_window(&mut batch, &buffer.values, stack, start);
            }
        }
        (!batch.is_empty()).then_some(Ok(batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_outputs() {
        // the published first outputs of SplitMix64 from state 0
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn spans_cover_the_rest_once_and_merge() {
        let consumed = vec![(3, 5), (10, 12)];
        let mut all: Vec<u64> = Vec::new();
        for c in 0..3 {
            let s = Share { consumer: c, consumers: 3, consumed: consumed.clone(), taken: 0 };
            for (a, b) in span(20, &s).unwrap() {
                all.extend(a..b);
            }
        }
        assert_eq!(all, [0, 1, 2, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19]);
        // spans of the 16 left: [0 1 2 5 6] [7 8 9 12 13] [14..20]; consumer 0
        // took 2 of its span, 1 took all 5, 2 took none
        let merged = merge_consumed(20, &consumed, 3, &[2, 5, 0]).unwrap();
        assert_eq!(merged, vec![(0, 2), (3, 5), (7, 14)]);
        assert_eq!(remaining(20, &merged), vec![(2, 3), (5, 7), (14, 20)]);
    }
}
