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

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::reader::Version;
use crate::scan::Selection;

mod blocks;
mod read_ahead;
mod share;
pub use blocks::{BlockValues, SeriesBlocks};
use share::span;
pub use share::{drop_remainder, merge_consumed, Share};

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
        // the option past the limit on its own, else the sum's last term
        let limit = i32::MAX as usize;
        if self.context_length > limit {
            return bad("context_length", "the window length must be below 2^31 values");
        }
        if self.context_length.checked_add(self.prediction_length).is_none_or(|l| l > limit) {
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
    /// Why an epoch has no window though the selection holds values: every
    /// series (or stack) is shorter than one window and `pad` is off. `None`
    /// when there are windows, or no values to cut.
    pub fn why_empty(&self) -> Option<String> {
        let longest = (0..self.blocks.stacks()).map(|k| self.blocks.stack_len(k)).max().filter(|&n| n > 0)?;
        (self.total == 0).then(|| {
            format!(
                "no series of the selection holds one window of {} values (the longest holds {longest}); \
                 pad=True gives each shorter one a window, padded",
                self.options.window_length()
            )
        })
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
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the allocator refuses the list (its
    /// length is what the index says the series hold: a series of 10^8
    /// values has 10^8 windows of stride 1, 1.6 GB of list).
    fn buffer_windows(&self, order: &EpochOrder, epoch: u64, g: usize) -> Result<Vec<(usize, i64)>> {
        let mut out = Vec::new();
        reserve_windows(&mut out, order.starts[g + 1] - order.starts[g])?;
        for &b in &order.buffers[g] {
            for k in self.blocks.block_stacks(b) {
                let n = self.blocks.stack_len(k);
                out.extend((0..windows_of(&self.options, n)).map(|w| (k, window_start(&self.options, n, w))));
            }
        }
        if self.options.shuffle {
            SplitMix64::for_shuffle(self.options.seed, epoch, g as u64 + 1).shuffle(&mut out);
        }
        Ok(out)
    }

    /// The windows of buffer `g` in `ranges` (positions in its order).
    ///
    /// # Errors
    /// As [`WindowPlan::buffer_windows`].
    fn windows_in(
        &self,
        order: &EpochOrder,
        epoch: u64,
        g: usize,
        ranges: Vec<Range<usize>>,
    ) -> Result<Vec<(usize, i64)>> {
        let all = self.buffer_windows(order, epoch, g)?;
        let mut out = Vec::new();
        reserve_windows(&mut out, ranges.iter().map(|r| r.len() as u64).sum())?;
        for r in ranges {
            out.extend_from_slice(&all[r]);
        }
        Ok(out)
    }

    /// `(stack number, start)` of the windows `share` takes in `epoch`, in
    /// order, without reading values: the order alone. A stack is a series
    /// (numbered as [`SeriesBlocks::series`]) unless `stack_channels`.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] `consumer` for a consumer outside `consumers`;
    /// [`Error::OutOfMemory`] when the allocator refuses the list.
    pub fn order_of(&self, epoch: u64, share: &Share) -> Result<Vec<(usize, i64)>> {
        let order = self.order(epoch);
        let work = tasks(&order, &span(self.total, share)?);
        let mut out = Vec::new();
        reserve_windows(&mut out, work.iter().flat_map(|(_, ranges)| ranges).map(|r| r.len() as u64).sum())?;
        for (g, ranges) in work {
            out.extend(self.windows_in(&order, epoch, g, ranges)?);
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
    /// read errors, and [`Error::OutOfMemory`] for a buffer's list of
    /// windows, come from the iterator.
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
                    let items = plan.windows_in(&order, epoch, g, ranges)?;
                    let needed: BTreeSet<usize> = items.iter().map(|&(k, _)| plan.blocks.block_of(k)).collect();
                    Ok((items, needed.into_iter().collect::<Vec<usize>>()))
                });
                let fetch = |(items, needed): (Vec<(usize, i64)>, Vec<usize>)| {
                    (plan.blocks.fetch_blocks(&needed), items, needed)
                };
                // a buffer's list refused: its error comes after the windows before it
                let mut next = buffers.next().map(|b| b.map(fetch));
                while let Some(buffer) = next.take() {
                    let (mut fetched, items, needed) = match buffer {
                        Ok(b) => b,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                    if let Err(e) = fetched.wait() {
                        let _ = tx.send(Err(e));
                        return;
                    }
                    // the next buffer's bytes arrive while this one is decoded
                    next = buffers.next().map(|b| b.map(fetch));
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
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the allocator refuses the window's values
    /// (a padded window is as long as the options say, whatever its series).
    fn push_window(&self, batch: &mut WindowBatch, values: &BlockValues, stack: usize, start: i64) -> Result<()> {
        let (context, length) = (self.options.context_length, self.options.window_length());
        let padding = (-start.min(0)) as usize;
        let from = start.max(0) as usize;
        let series = self.blocks.stack_series(stack);
        if !series.iter().all(|&s| values.get(s).is_some()) {
            return Ok(());
        }
        // asked, not assumed: an allocation refused would abort the process
        let rows = series.len();
        let refused = |_| Error::OutOfMemory {
            what: format!(
                "a window of {rows} x {length} values (context_length {context}, prediction_length {})",
                self.options.prediction_length
            ),
            bytes: (rows as u64).saturating_mul(length as u64).saturating_mul(4),
        };
        batch.past_values.try_reserve(rows.saturating_mul(context)).map_err(refused)?;
        batch.future_values.try_reserve(rows.saturating_mul(length - context)).map_err(refused)?;
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
        Ok(())
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
                self.push_window(&mut batch, &values, k, window_start(&self.options, n, w))?;
            }
        }
        self.blocks.pool.give_block(values);
        Ok(batch)
    }
}

/// Reserves room for `windows` more `(stack, start)` pairs in `list`.
///
/// # Errors
/// [`Error::OutOfMemory`] when the allocator refuses it (an allocation
/// refused would abort the process).
fn reserve_windows(list: &mut Vec<(usize, i64)>, windows: u64) -> Result<()> {
    let bytes = windows.saturating_mul(std::mem::size_of::<(usize, i64)>() as u64);
    let refused = || Error::OutOfMemory { what: format!("the order of {windows} windows"), bytes };
    let windows = usize::try_from(windows).map_err(|_| refused())?;
    list.try_reserve_exact(windows).map_err(|_| refused())
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
                if let Err(e) = self.plan.push_window(&mut batch, &buffer.values, stack, start) {
                    self.done = true;
                    return Some(Err(e));
                }
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
}
