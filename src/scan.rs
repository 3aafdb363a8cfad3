//! Bulk reading of a version (docs/format.md §9, "Bulk reads"): every series,
//! or those of a set of samples, channels or a task split, streamed in index
//! order as Arrow record batches of chunk rows, or as whole series.
//!
//! Row groups are the unit of work: [`ScanOptions::threads`] threads decode
//! them in parallel, at most [`ScanOptions::row_groups_in_flight`] decoded or
//! being decoded ahead of the consumer (bounded memory), and a reorder buffer
//! hands them out in index order whatever the threads' timing. Every file is
//! read through the version's storage seam ([`crate::storage::Location`]) with
//! the reader's checks: shard paths must be listed in the manifest, page
//! claims are checked ([`crate::footer::CheckedPages`]), every decoded row must
//! be the `(time_series_id, chunk_idx, n_values)` the index points at, and a
//! decoder panic on crafted bytes becomes [`Error::Corrupt`]: each row group
//! goes through the reader's one row-group decode (`chunks::decode`), the one
//! [`Version::read_series`] uses for a single series.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::chunks::{self, chunk_schema, Plan};
use crate::dataset::{unknown_channel_hint, DatasetInfo, SeriesMeta, SeriesValues, TimeFDataset};
use crate::error::{Error, Result};
use crate::pages::RowValues;
use crate::reader::Version;
use crate::storage::Location;

/// Decoding threads when none is set: 0, meaning one per available core
/// (`std::thread::available_parallelism`).
pub const DEFAULT_THREADS: usize = 0;

/// Row groups decoded or being decoded ahead of the consumer, at most (4).
/// With the writer's 4 MiB row groups (at most 20 MiB with its slack) a scan
/// holds about `4 x` a row group's values, plus the batch the consumer holds.
pub const DEFAULT_ROW_GROUPS_IN_FLIGHT: usize = 4;

/// How a scan runs; immutable, built with [`ScanOptions::builder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOptions {
    threads: usize,
    row_groups_in_flight: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions { threads: DEFAULT_THREADS, row_groups_in_flight: DEFAULT_ROW_GROUPS_IN_FLIGHT }
    }
}

impl ScanOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> ScanOptionsBuilder {
        ScanOptionsBuilder(ScanOptions::default())
    }
    /// Decoding threads ([`DEFAULT_THREADS`]; 0 is one per available core).
    pub fn threads(&self) -> usize {
        self.threads
    }
    /// Row groups in flight at most ([`DEFAULT_ROW_GROUPS_IN_FLIGHT`]).
    pub fn row_groups_in_flight(&self) -> usize {
        self.row_groups_in_flight
    }
    /// The threads a scan starts: [`ScanOptions::threads`], or the available
    /// cores for 0, never more than the row groups in flight.
    fn effective_threads(&self) -> usize {
        let n = match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        n.min(self.row_groups_in_flight).max(1)
    }
}

/// Consuming builder of [`ScanOptions`]; [`ScanOptionsBuilder::try_build`] validates.
#[derive(Debug, Clone)]
pub struct ScanOptionsBuilder(ScanOptions);

impl ScanOptionsBuilder {
    /// Decoding threads (0: one per available core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.0.threads = threads;
        self
    }
    /// Row groups in flight at most (>= 1).
    pub fn row_groups_in_flight(mut self, row_groups: usize) -> Self {
        self.0.row_groups_in_flight = row_groups;
        self
    }
    /// The options.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] `row_groups_in_flight` when it is 0.
    pub fn try_build(self) -> Result<ScanOptions> {
        if self.0.row_groups_in_flight == 0 {
            return Err(Error::InvalidOption { option: "row_groups_in_flight", reason: "must be at least 1".into() });
        }
        Ok(self.0)
    }
}

/// Which series a scan reads: the intersection of the filters set, every
/// series of the version when none is. Built by chaining; immutable once given
/// to [`scan`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    samples: Option<BTreeSet<String>>,
    channels: Option<BTreeSet<String>>,
    task: Option<(String, Option<String>)>,
    series: Option<BTreeSet<String>>,
}

impl Selection {
    /// Every series of the version.
    pub fn all() -> Selection {
        Selection::default()
    }
    /// Only these series (the loaders of a copy-on-write edit).
    pub(crate) fn series_ids(mut self, ids: BTreeSet<String>) -> Selection {
        self.series = Some(ids);
        self
    }
    /// Only the series of these samples (every series a sample lists, whatever its view).
    pub fn samples<I: IntoIterator<Item = S>, S: Into<String>>(mut self, sample_ids: I) -> Selection {
        self.samples = Some(sample_ids.into_iter().map(Into::into).collect());
        self
    }
    /// Only the series of these channels.
    pub fn channels<I: IntoIterator<Item = S>, S: Into<String>>(mut self, channels: I) -> Selection {
        self.channels = Some(channels.into_iter().map(Into::into).collect());
        self
    }
    /// Only the series of the samples that tasks of `task_name` reference
    /// (`sample_ids`, `context_sample_ids` and `target_sample_id`), restricted
    /// to the tasks of `split` when given.
    pub fn task(mut self, task_name: impl Into<String>, split: Option<&str>) -> Selection {
        self.task = Some((task_name.into(), split.map(String::from)));
        self
    }
}

/// The schema of a scan's record batches: one row per chunk, in index order.
///
/// | column | type | meaning |
/// | --- | --- | --- |
/// | `time_series_id` | utf8 | canonical id (uuid16 ids as hyphenated lowercase) |
/// | `chunk_idx` | int32 | chunk number within the series, 0, 1, ... |
/// | `value_offset` | int64 | index of the chunk's first value within its series |
/// | `values` | list of float32 (`item`, not null) | the chunk's values |
///
/// A series' chunks are consecutive rows; a series' values are its chunks'
/// `values` concatenated. No column is nullable.
pub fn scan_schema() -> SchemaRef {
    chunk_schema()
}

/// The series ids `selection` takes from `version`, checked against it.
///
/// # Errors
/// [`Error::Validation`] for a sample, channel, task name or split the
/// version does not have.
/// The series ids the selection keeps (`None`: every series).
fn selected_ids(version: &Version, selection: &Selection) -> Result<Option<BTreeSet<String>>> {
    let of_samples = sample_series_ids(version, selection)?;
    Ok(match (of_samples, &selection.series) {
        (Some(a), Some(b)) => Some(a.intersection(b).cloned().collect()),
        (a, b) => a.or_else(|| b.clone()),
    })
}

/// The series of the samples the selection names, directly or through a task.
fn sample_series_ids(version: &Version, selection: &Selection) -> Result<Option<BTreeSet<String>>> {
    let Some(wanted) = selected_samples(version, selection)? else { return Ok(None) };
    Ok(Some(
        version
            .samples()?
            .iter()
            .filter(|s| wanted.contains(&s.sample_id))
            .flat_map(|s| s.series.iter().map(|r| r.time_series_id.clone()))
            .collect(),
    ))
}

/// The sample ids the selection names, directly or through a task (`None`:
/// no sample filter), each checked against the version.
///
/// # Errors
/// [`Error::Validation`] for a task name, split or sample the version does not have.
pub(crate) fn selected_samples(version: &Version, selection: &Selection) -> Result<Option<BTreeSet<String>>> {
    let mut sample_filter: Option<BTreeSet<String>> = selection.samples.clone();
    if let Some((name, split)) = &selection.task {
        if !version.task_names().contains(name) {
            return Err(Error::validation(name, "task_name", "no such task in this version"));
        }
        let tasks = version.tasks(name)?;
        let chosen: Vec<_> = tasks.iter().filter(|t| split.is_none() || t.split == *split).collect();
        if let (Some(split), true) = (split, chosen.is_empty()) {
            let splits: BTreeSet<&str> = tasks.iter().filter_map(|t| t.split.as_deref()).collect();
            let known = splits.into_iter().collect::<Vec<_>>().join(", ");
            return Err(Error::validation(split, "split", format!("no task of {name} has it (splits: {known})")));
        }
        let of_task: BTreeSet<String> = chosen
            .iter()
            .flat_map(|t| {
                t.sample_ids
                    .iter()
                    .chain(t.context_sample_ids.iter().flatten())
                    .chain(t.target_sample_id.iter())
                    .cloned()
            })
            .collect();
        sample_filter = Some(match sample_filter {
            Some(given) => given.intersection(&of_task).cloned().collect(),
            None => of_task,
        });
    }
    if let Some(given) = &selection.samples {
        let samples = version.samples()?;
        let known: BTreeSet<&str> = samples.iter().map(|s| s.sample_id.as_str()).collect();
        if let Some(missing) = given.iter().find(|id| !known.contains(id.as_str())) {
            return Err(Error::validation(missing, "sample_id", "no such sample in this version"));
        }
    }
    Ok(sample_filter)
}

/// The work of a scan of `selection`: the selected chunks of the index
/// grouped by row group, in index order, every shard path checked.
fn plan(version: &Version, selection: &Selection) -> Result<Plan> {
    let ids = selected_ids(version, selection)?;
    let index = version.checked_index()?;
    if let Some(channels) = &selection.channels {
        let known: BTreeSet<&str> = index.entries().iter().map(|e| e.meta.channel.as_str()).collect();
        if let Some(missing) = channels.iter().find(|c| !known.contains(c.as_str())) {
            let why = format!("no such channel in this version{}", unknown_channel_hint(missing, known));
            return Err(Error::validation(missing, "channel", why));
        }
    }
    let take = |m: &SeriesMeta| {
        ids.as_ref().is_none_or(|ids| ids.contains(&m.time_series_id))
            && selection.channels.as_ref().is_none_or(|c| c.contains(&m.channel))
    };
    chunks::plan(index, 0..index.entries().len(), take, |row, e| version.shard(row, e))
}

/// What the threads and the consumer share.
#[derive(Default)]
struct State {
    /// Next unit a thread takes.
    next_unit: usize,
    /// Next unit the consumer hands out; threads stay within
    /// `row_groups_in_flight` units of it.
    next_out: usize,
    /// Decoded units not yet handed out.
    done: BTreeMap<usize, Result<Vec<RecordBatch>>>,
    /// Set when the consumer is gone or met an error: threads stop.
    stop: bool,
}

struct Shared {
    plan: Plan,
    in_flight: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // a poisoned lock only means a thread panicked outside `contain`: the state is still whole
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn work(&self) {
        loop {
            let at = {
                let mut s = self.lock();
                while !s.stop && s.next_unit < self.plan.units().len() && s.next_unit >= s.next_out + self.in_flight {
                    s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
                }
                if s.stop || s.next_unit >= self.plan.units().len() {
                    return;
                }
                s.next_unit += 1;
                s.next_unit - 1
            };
            let result = chunks::decode(&self.plan, &self.plan.units()[at]);
            let mut s = self.lock();
            s.done.insert(at, result);
            self.changed.notify_all();
        }
    }
}

/// A running scan: an iterator of record batches of [`scan_schema`] in index
/// order (one or more per row group read, each row one selected chunk).
/// Dropping it stops the threads.
///
/// After an `Err` the iterator ends.
pub struct Scan {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    pending: VecDeque<RecordBatch>,
    failed: bool,
}

/// Starts a scan of the series of `version` that `selection` takes.
///
/// # Errors
/// [`Error::Validation`] for a sample, channel, task or split the version does
/// not have; [`Error::Corrupt`] when the index contradicts itself (chunks not
/// consecutive, a shard path not in the manifest). Errors of the shards come
/// from the iterator.
pub fn scan(version: &Version, selection: &Selection, options: &ScanOptions) -> Result<Scan> {
    let plan = plan(version, selection)?;
    let threads = options.effective_threads().min(plan.units().len().max(1));
    let shared = Arc::new(Shared {
        plan,
        in_flight: options.row_groups_in_flight,
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    });
    let mut handles = Vec::with_capacity(threads);
    for n in 0..threads {
        let worker = Arc::clone(&shared);
        let spawned = std::thread::Builder::new().name(format!("timef-scan-{n}")).spawn(move || worker.work());
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) if handles.is_empty() => return Err(Error::io(version.dir(), e)),
            // fewer threads still finish the scan
            Err(_) => break,
        }
    }
    Ok(Scan { shared, threads: handles, pending: VecDeque::new(), failed: false })
}

impl Scan {
    /// The series the scan yields, in order.
    pub fn series_meta(&self) -> &[SeriesMeta] {
        self.shared.plan.series()
    }
    /// Chunks (rows) the scan yields.
    pub fn chunks(&self) -> u64 {
        self.shared.plan.chunks()
    }
    /// Values the scan yields.
    pub fn values(&self) -> u64 {
        self.shared.plan.values()
    }
    /// Row groups the scan reads.
    pub fn row_groups(&self) -> usize {
        self.shared.plan.units().len()
    }
    /// The scan as whole series: `(metadata, values)` in index order, each
    /// series' chunks concatenated (memory: one whole series plus the row
    /// groups in flight).
    pub fn series(self) -> SeriesScan {
        SeriesScan { scan: self, next: 0, current: Vec::new(), batch: None, row: 0 }
    }

    fn next_unit(&mut self) -> Option<Result<Vec<RecordBatch>>> {
        let shared = &self.shared;
        let mut s = shared.lock();
        if s.next_out >= shared.plan.units().len() {
            return None;
        }
        loop {
            let at = s.next_out;
            if let Some(r) = s.done.remove(&at) {
                s.next_out += 1;
                shared.changed.notify_all();
                return Some(r);
            }
            if self.threads.iter().all(JoinHandle::is_finished) && !s.done.contains_key(&at) {
                // every thread ended without this unit: only a panic outside `contain` does that
                return Some(Err(Error::Corrupt {
                    path: shared.plan.shard_path(&shared.plan.units()[at]),
                    reason: "a decoding thread ended early".into(),
                }));
            }
            s = shared
                .changed
                .wait_timeout(s, std::time::Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Iterator for Scan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Some(Ok(b));
            }
            if self.failed {
                return None;
            }
            match self.next_unit()? {
                Ok(batches) => self.pending.extend(batches),
                Err(e) => {
                    self.failed = true;
                    self.shared.lock().stop = true;
                    self.shared.changed.notify_all();
                    return Some(Err(e));
                }
            }
        }
    }
}

impl Drop for Scan {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// A scan as whole series ([`Scan::series`]).
pub struct SeriesScan {
    scan: Scan,
    next: usize,
    current: Vec<f32>,
    batch: Option<RecordBatch>,
    row: usize,
}

impl Iterator for SeriesScan {
    type Item = Result<(SeriesMeta, SeriesValues)>;

    fn next(&mut self) -> Option<Self::Item> {
        let meta = self.scan.series_meta().get(self.next)?.clone();
        loop {
            let batch = match &self.batch {
                Some(b) if self.row < b.num_rows() => b,
                _ => match self.scan.next() {
                    Some(Ok(b)) => {
                        self.row = 0;
                        self.batch.insert(b)
                    }
                    Some(Err(e)) => {
                        self.next = usize::MAX;
                        return Some(Err(e));
                    }
                    None => break,
                },
            };
            let ids = batch.column(0).as_string::<i32>();
            if ids.value(self.row) != meta.time_series_id {
                break;
            }
            let list = batch.column(3).as_list::<i32>();
            let values = list.value(self.row);
            self.current.extend_from_slice(values.as_primitive::<Float32Type>().values());
            self.row += 1;
        }
        self.next += 1;
        Some(Ok((meta, std::mem::take(&mut self.current).into())))
    }
}

/// Hands out the series of a version in index order from one scan, for loaders
/// called in that order (a copy-on-write edit writes the kept series in index
/// order): each shard page is decoded once, not once per series on it. The
/// scan starts at the first request and takes only the series whose loaders
/// are still alive then (an edit drops the loaders of what it removes, so its
/// pages are not read). Series the caller skips are dropped; a series asked
/// for after the scan passed it, or once the scan failed, is read on its own
/// ([`Version::read_series`]): any order is answered correctly, and a bad page
/// fails only a series that lies on it.
pub(crate) struct SeriesCursor {
    version: Arc<Version>,
    alive: BTreeSet<String>,
    rest: Option<SeriesScan>,
    started: bool,
}

/// A loader's claim on its series while the scan has not started.
struct Alive {
    cursor: Arc<Mutex<SeriesCursor>>,
    id: String,
}

impl Drop for Alive {
    fn drop(&mut self) {
        if let Ok(mut c) = self.cursor.lock() {
            if !c.started {
                c.alive.remove(&self.id);
            }
        }
    }
}

impl SeriesCursor {
    /// A cursor over the series of `version`, shared by the loaders [`SeriesCursor::loader`] makes.
    pub(crate) fn new(version: Arc<Version>) -> Arc<Mutex<SeriesCursor>> {
        Arc::new(Mutex::new(SeriesCursor { version, alive: BTreeSet::new(), rest: None, started: false }))
    }

    /// The loader of series `id`, reading through `cursor`.
    pub(crate) fn loader(cursor: &Arc<Mutex<SeriesCursor>>, id: String) -> crate::dataset::Loader {
        if let Ok(mut c) = cursor.lock() {
            c.alive.insert(id.clone());
        }
        let alive = Alive { cursor: Arc::clone(cursor), id };
        Box::new(move || {
            let mut c = alive.cursor.lock().map_err(|_| "a loader panicked while reading this version")?;
            c.take(&alive.id).map_err(|e| e.into())
        })
    }

    fn take(&mut self, id: &str) -> Result<SeriesValues> {
        if !self.started {
            self.started = true;
            let selection = Selection::all().series_ids(std::mem::take(&mut self.alive));
            // a scan that cannot start leaves every series to read_series
            self.rest = scan(&self.version, &selection, &ScanOptions::default()).ok().map(Scan::series);
        }
        while let Some(rest) = &mut self.rest {
            match rest.next() {
                Some(Ok((meta, values))) if meta.time_series_id == id => return Ok(values),
                Some(Ok(_)) => {}
                // from here on each series is read alone, so an error names its own series
                Some(Err(_)) | None => self.rest = None,
            }
        }
        self.version.read_series(id)
    }
}

impl Version {
    /// A loader of the values of each series of `ids`, in order. Called in
    /// the version's index order (spec type, channel, id), they share one
    /// scan of those series, each page decoded once; out of order, or once
    /// the scan failed, a loader reads its series alone
    /// ([`Version::read_series`]). A loader's error is this crate's
    /// [`crate::Error`], boxed (an unknown id: [`crate::Error::Validation`]).
    pub fn series_loaders(self: &Arc<Self>, ids: &[String]) -> Vec<crate::dataset::Loader> {
        let cursor = SeriesCursor::new(Arc::clone(self));
        ids.iter().map(|id| SeriesCursor::loader(&cursor, id.clone())).collect()
    }

    /// The whole version as a dataset whose series loaders read lazily from this
    /// version's shards, named `name`/`version`. The base of a copy-on-write
    /// edit. Loaders called in index order (as the writer calls them) share one
    /// scan of the series whose loaders are alive at the first call, so each
    /// page is decoded once and a removed series' pages are not read; out of
    /// order, a loader reads its series alone.
    pub fn to_dataset(self: &Arc<Self>, name: &str, version: &str) -> Result<TimeFDataset> {
        let m = self.manifest();
        let mut d = TimeFDataset::new(name, version)?;
        d.info = DatasetInfo {
            name: name.to_string(),
            version: version.to_string(),
            description: m.dataset.description.clone(),
            license: m.dataset.license.clone(),
            citation: m.dataset.citation.clone(),
        };
        for s in &m.sources {
            d.add_source(s.source())?;
        }
        // the writer loads series in index order: one scan answers them all
        let cursor = SeriesCursor::new(Arc::clone(self));
        let manifest_sha256: Arc<str> = Arc::from(self.manifest_sha256());
        for meta in self.series()? {
            let loader = SeriesCursor::loader(&cursor, meta.time_series_id.clone());
            d.add_series_of(meta, Arc::clone(&manifest_sha256), loader)?;
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

/// The row groups of a selection, each read on its own by number: the one
/// seam the window loader (`src/windows.rs`) reads through, in any order.
pub(crate) struct RowGroups {
    plan: Plan,
    /// The shard file and row group number of each row group.
    origins: Vec<(Location, usize)>,
}

impl RowGroups {
    /// The row groups holding the chunks `selection` takes, in index order.
    pub(crate) fn plan(version: &Version, selection: &Selection) -> Result<RowGroups> {
        let plan = plan(version, selection)?;
        let entries = version.checked_index()?.entries();
        // the index row of each planned series' chunk 0 (both in index order)
        let mut first_rows = Vec::with_capacity(plan.series().len());
        let mut row = 0;
        for meta in plan.series() {
            while entries.get(row).is_some_and(|e| e.chunk_idx != 0 || e.meta.time_series_id != meta.time_series_id) {
                row += 1;
            }
            first_rows.push(row);
        }
        let mut origins = Vec::with_capacity(plan.units().len());
        for unit in plan.units() {
            let (series, chunk_idx) = unit.chunks().next().map_or((0, -1), |(s, c, _)| (s, c));
            let at = first_rows[series].wrapping_add(chunk_idx as usize);
            let e = entries.get(at).ok_or_else(|| Error::Corrupt {
                path: version.dir().join("time_series_index.parquet"),
                reason: format!("no row {at} for chunk {chunk_idx}"),
            })?;
            origins.push((version.shard(at, e)?, e.row_group as usize));
        }
        Ok(RowGroups { plan, origins })
    }
    /// The selected series, in index order.
    pub(crate) fn series(&self) -> &[SeriesMeta] {
        self.plan.series()
    }
    /// Row groups, numbered `0..len()` in index order.
    pub(crate) fn len(&self) -> usize {
        self.plan.units().len()
    }
    /// `(series number, chunk_idx, n_values)` of the selected chunks of row group `i`, in row order.
    pub(crate) fn chunks(&self, i: usize) -> impl Iterator<Item = (usize, i32, i32)> + '_ {
        self.plan.units()[i].chunks()
    }
    /// The shard file row group `i` lies in, and its number there.
    pub(crate) fn origin(&self, i: usize) -> (&Location, usize) {
        let (shard, row_group) = &self.origins[i];
        (shard, *row_group)
    }
    /// Row group `i` decoded and checked (`chunks::decode`), as batches of [`scan_schema`].
    pub(crate) fn read(&self, i: usize) -> Result<Vec<RecordBatch>> {
        chunks::decode(&self.plan, &self.plan.units()[i])
    }
    /// Row group `i`'s values alone, decoded and checked as [`RowGroups::read`]
    /// does, into `out` (buffers reused): row `j` is its `j`-th [`RowGroups::chunks`] item.
    pub(crate) fn read_values(&self, i: usize, out: &mut RowValues) -> Result<()> {
        chunks::decode_values(&self.plan, &self.plan.units()[i], out)
    }
}
