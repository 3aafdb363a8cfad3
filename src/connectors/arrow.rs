//! GluonTS-style Arrow/Parquet training files (GluonTS, Chronos and similar):
//! `item_id` (the row index if absent), `start` (optional), `target` (a list of
//! numbers, or a list of such lists for multivariate), `freq` (optional pandas
//! offset alias). Every typing pandas, polars, Spark and GluonTS write for these
//! columns is accepted ([`crate::connectors::typings`]).
//!
//! Ids (the same rule as `ref_writer.py`): sample = item_id; series = item_id
//! (univariate) or `"{item_id}/{dim}"`; channel `"0"` or `"{dim}"`; view `main`;
//! source = the dataset name; `t_start_s` = `start` in epoch seconds.
//!
//! One pass reads the input in order and checks every value, so each refusal
//! names the file, the 0-based row, the item and the channel
//! (`<file>: row 1: item gap: channel 0: value 1 is NaN (missing)`), and
//! [`OnMissing`] is applied before anything is written. An Arrow IPC file or
//! stream is memory-mapped: float32 values stay zero-copy slices of the
//! mapping. A Parquet file's footer is parsed once and its row groups are decoded
//! once, in order; converted values (Parquet, or non-float32 IPC) go to an
//! unnamed temporary file in the system temporary directory, memory-mapped for
//! the loaders. Either way resident memory follows the series in flight, not
//! the input size (`docs/format.md`, "Connector inputs").

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};

use crate::connectors::typings::{self, Refused, ValueError};
use crate::connectors::{unreadable, Dropped, IdMode, OnMissing, DEFAULT_SAMPLING_RATE_HZ, DEFAULT_SPEC_TYPE};
use crate::dataset::{Sample, SeriesMeta, SeriesRef, SeriesValues, Source, TimeFDataset};
use crate::error::{Error, Result};
use crate::footer::contain;

mod distributed;
pub use distributed::{arrow_part_series, arrow_row_parts, arrow_series_ids, ArrowMetaPass};
mod ipc;
use ipc::{decode_ipc, map_ipc};
pub use ipc::{MAX_IPC_BUFFER_BYTES, MAX_IPC_DICTIONARY_BYTES};
mod mapped;
use mapped::{advise_dont_need, is_in, is_zero_copy, release_batch, whole_pages_of, MappedValues};
mod parquet_input;
use parquet_input::open_parquet;

/// Options of [`read_arrow`].
#[derive(Debug, Clone, PartialEq)]
pub struct ArrowOptions {
    /// Dataset name (also the source id).
    pub name: String,
    /// Dataset version.
    pub version: String,
    /// Spec type of every series ([`DEFAULT_SPEC_TYPE`] if `None`).
    pub spec_type: Option<String>,
    /// Sampling rate in Hz of every series: when `None`, each row's `freq` (a pandas
    /// offset alias), else [`DEFAULT_SAMPLING_RATE_HZ`]. When given with a `freq`
    /// column, the two must agree (relative 1e-9).
    pub sampling_rate_hz: Option<f64>,
    /// How ids are spelled.
    pub ids: IdMode,
    /// What to do with a row whose target holds a missing value (NaN or null).
    pub on_missing: OnMissing,
}

impl ArrowOptions {
    /// Options with the defaults for `name` / `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ArrowOptions {
            name: name.into(),
            version: version.into(),
            spec_type: None,
            sampling_rate_hz: None,
            ids: IdMode::String,
            on_missing: OnMissing::Error,
        }
    }
}

/// Where one series' float32 values are held until the writer takes them.
enum Held {
    /// A zero-copy slice of the IPC mapping, or values of in-memory input.
    Mapped(SeriesValues),
    /// `len` values at value offset `at` of the spill file.
    Spilled { at: usize, len: usize },
    /// Checked and counted, not kept (the metadata pass of a distributed write).
    Counted(usize),
}

/// The unnamed temporary file converted values are appended to (little-endian float32).
struct Spill {
    out: std::io::BufWriter<File>,
    values: usize,
}

impl Spill {
    fn new() -> std::io::Result<Spill> {
        Ok(Spill { out: std::io::BufWriter::new(tempfile::tempfile()?), values: 0 })
    }

    fn push(&mut self, v: &[f32]) -> std::io::Result<Held> {
        use std::io::Write;
        let at = self.values;
        for x in v {
            self.out.write_all(&x.to_le_bytes())?;
        }
        self.values += v.len();
        Ok(Held::Spilled { at, len: v.len() })
    }

    /// The spilled values' file mapped read-only (`None` if empty).
    fn finish(self) -> std::io::Result<Option<Arc<memmap2::Mmap>>> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        if self.values == 0 {
            return Ok(None);
        }
        // SAFETY: the file is unnamed and private to this process; nothing else writes it.
        Ok(Some(Arc::new(unsafe { memmap2::Mmap::map(&file) }?)))
    }
}

/// Bytes of a mapping released at once behind the checking pass (4 MiB):
/// consecutive series are released in blocks this large, not one `madvise`
/// (and TLB shootdown) a series.
const RELEASE_BLOCK_BYTES: usize = 4 << 20;

/// One input row that passed every check.
struct Row {
    readable: String,
    t_start_s: f64,
    rate_hz: f64,
    /// `None` for univariate rows.
    dims: Option<usize>,
    channels: Vec<Held>,
}

/// Reads a GluonTS-style file (Arrow IPC file, Arrow IPC stream, or Parquet,
/// told apart by their magic bytes) into a dataset whose loaders read lazily.
///
/// # Errors
/// [`Error::InvalidInput`] naming the file, the 0-based row, the item and the
/// channel for every refused value (missing under [`OnMissing::Error`], not
/// convertible to float32, infinite, empty, null), a refused column typing, a
/// duplicate `item_id`, a `freq` that disagrees with `sampling_rate_hz`, an empty
/// table; [`Error::Missing`] for a file that does not exist, [`Error::Io`] for
/// one that cannot be read; [`Error::Validation`] for bad names or rates.
pub fn read_arrow(path: impl AsRef<Path>, opts: &ArrowOptions) -> Result<TimeFDataset> {
    read_arrow_with_report(path, opts).map(|(d, _)| d)
}

/// [`read_arrow`], also returning the rows left out under [`OnMissing::DropCase`]
/// (by readable item id).
pub fn read_arrow_with_report(path: impl AsRef<Path>, opts: &ArrowOptions) -> Result<(TimeFDataset, Dropped)> {
    let path = path.as_ref();
    let mut magic = [0u8; 4];
    {
        use std::io::Read;
        let mut f = File::open(path).map_err(|e| unreadable(path, e))?;
        let n = f.read(&mut magic).map_err(|e| unreadable(path, e))?;
        if n < 4 {
            return Err(Error::input(path, None, "file too short to be Arrow IPC or Parquet"));
        }
    }
    let ipc_map = if &magic == b"PAR1" { None } else { Some(map_ipc(path)?) };
    let mut read = Read::new(path, opts, false, ipc_map.clone())?;
    match &ipc_map {
        None => {
            let bad = |e: String| Error::input(path, None, format!("not a readable Parquet file: {e}"));
            let (mut batches, int96_starts, claimed) = open_parquet(path)?;
            read.pass.int96_starts = int96_starts;
            let mut rows = 0u64;
            // a row group's claimed row count is checked against the rows its
            // pages hold; a decoded batch is read at once, not held (`Read::hold`)
            while let Some(batch) = contain(|| batches.next()).map_err(bad)? {
                let batch = batch.map_err(|e| bad(e.to_string()))?;
                rows += batch.num_rows() as u64;
                if rows > claimed {
                    break;
                }
                read.batch(&batch)?;
            }
            if rows != claimed {
                return Err(bad(format!("the footer claims {claimed} rows, the pages hold {rows}")));
            }
        }
        Some(map) => {
            let decoded = decode_ipc(path, map, &mut |batch| read.hold(batch));
            // the held batch's rows come before the file's next refusal, as in the file
            read.release_held()?;
            decoded?;
        }
    }
    read.finish().map(|(d, dropped, _)| (d, dropped))
}

/// Like [`read_arrow`], over record batches already in memory (e.g. a table
/// handed over through the Arrow C data interface); `label` stands for the file
/// in errors. Float32 values stay zero-copy slices of the batches; other value
/// types are converted and held in memory.
///
/// # Errors
/// As [`read_arrow`].
pub fn read_arrow_batches(batches: Vec<RecordBatch>, label: &Path, opts: &ArrowOptions) -> Result<TimeFDataset> {
    let mut read = Read::new(label, opts, true, None)?;
    for batch in batches {
        read.hold(batch)?;
    }
    read.finish().map(|(d, _, _)| d)
}

/// One read of an input: the pass over its rows, each kept row added to the
/// dataset as it is checked.
struct Read<'a> {
    pass: Pass<'a>,
    out: Out,
    /// A batch handed in by [`Read::hold`] whose rows are not read yet, and
    /// the values of its first rows checked while the batch before it was read.
    held: Option<(RecordBatch, CheckedAhead)>,
}

/// Where the rows of a [`Read`] go.
struct Out {
    dataset: TimeFDataset,
    source_id: String,
    spec_type: String,
    spill: Spill,
    /// The spill's values, mapped when the pass ends.
    spilled: (Arc<MappedValues>, u32),
    /// The IPC input's values.
    ipc: Option<(Arc<memmap2::Mmap>, u32)>,
    /// Readable ids of the rows left out, so a later row with the same id is refused.
    dropped_ids: std::collections::HashSet<String>,
    dropped: Dropped,
    kept: usize,
    /// Values of each series counted but not kept.
    counted: std::collections::BTreeMap<String, u64>,
}

impl Out {
    /// True when a row with readable id `readable` was read before.
    fn seen(&self, opts: &ArrowOptions, readable: &str) -> bool {
        self.dropped_ids.contains(readable)
            || match opts.ids {
                IdMode::String => self.dataset.contains_sample(readable),
                IdMode::Uuid => self.dataset.contains_sample(&opts.ids.id(readable)),
            }
    }

    /// Adds a kept row: its series (channel `"0"` or `"{dim}"`), then its sample.
    fn add(&mut self, opts: &ArrowOptions, row: Row) -> Result<()> {
        let sample_id = opts.ids.id(&row.readable);
        let mut refs = Vec::with_capacity(row.channels.len());
        for (d, held) in row.channels.into_iter().enumerate() {
            // a univariate row's series has the sample's id
            let (time_series_id, channel) = match row.dims {
                Some(_) => (opts.ids.id(&format!("{}/{d}", row.readable)), d.to_string()),
                None => (sample_id.clone(), "0".to_string()),
            };
            let mut meta = SeriesMeta::new(&time_series_id, &self.spec_type, channel, row.rate_hz);
            meta.t_start_s = row.t_start_s;
            let d = &mut self.dataset;
            match held {
                Held::Counted(len) => {
                    self.counted.insert(time_series_id.clone(), len as u64);
                    let refuse = time_series_id.clone();
                    d.add_series(
                        meta,
                        Box::new(move || {
                            Err(format!("series {refuse}: the metadata pass keeps no values (a part writes them)")
                                .into())
                        }),
                    )?;
                }
                Held::Mapped(v) => match &self.ipc {
                    Some((map, store)) => match MappedValues::offset_of(&v, map) {
                        Some(at) => d.add_series_stored(meta, *store, at, v.len() as u64)?,
                        None => d.add_series_values(meta, v)?,
                    },
                    None => d.add_series_values(meta, v)?,
                },
                Held::Spilled { at, len } => d.add_series_stored(meta, self.spilled.1, at as u64, len as u64)?,
            }
            refs.push(SeriesRef { time_series_id, view: "main".into() });
        }
        self.dataset.add_sample(Sample {
            sample_id,
            source_id: self.source_id.clone(),
            series: refs,
            ..Default::default()
        })?;
        self.kept += 1;
        Ok(())
    }
}

impl<'a> Read<'a> {
    /// A read of `path` (named in errors); `ipc` is the input's mapping when
    /// it is an Arrow IPC file or stream.
    fn new(path: &'a Path, opts: &'a ArrowOptions, in_memory: bool, ipc: Option<Arc<memmap2::Mmap>>) -> Result<Self> {
        let mut dataset = TimeFDataset::new(&opts.name, &opts.version)?;
        let source_id = opts.ids.id(&opts.name);
        dataset.add_source(Source { source_id: source_id.clone(), name: opts.name.clone(), ..Default::default() })?;
        let spilled = Arc::new(MappedValues::new());
        let spilled_store = dataset.add_store(Arc::clone(&spilled) as Arc<dyn crate::dataset::ValuesStore>);
        let ipc = match ipc {
            Some(map) => {
                let store = MappedValues::new();
                store.set(Arc::clone(&map)).map_err(|e| Error::io(path, e))?;
                Some((map, dataset.add_store(Arc::new(store))))
            }
            None => None,
        };
        Ok(Read {
            pass: Pass { path, opts, row_base: 0, in_memory, count_only: false, int96_starts: None, checked: 0..0 },
            out: Out {
                dataset,
                source_id,
                spec_type: opts.spec_type.clone().unwrap_or_else(|| DEFAULT_SPEC_TYPE.to_string()),
                spill: Spill::new().map_err(|e| Error::io(std::env::temp_dir(), e))?,
                spilled: (spilled, spilled_store),
                ipc,
                dropped_ids: std::collections::HashSet::new(),
                dropped: Dropped::default(),
                kept: 0,
                counted: std::collections::BTreeMap::new(),
            },
            held: None,
        })
    }

    /// Reads the rows of `batch` now.
    fn batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.pass.batch(batch, &mut self.out, CheckedAhead::default())
    }

    /// Reads the rows of the batch held before, while the compute pool checks
    /// the values of `batch`'s first rows ([`CheckedAhead::first_of`]), then
    /// holds `batch`: the pass's work on one thread and the values check on
    /// the others overlap across batches, and every refusal still comes in
    /// row order (a caller that meets an error of its own after this call
    /// first reads the held rows, [`Read::release_held`]). Only a batch that
    /// takes no memory of its own is held: a zero-copy slice of an IPC
    /// input's mapping, or batches handed over in memory. A decoded Parquet
    /// batch or a decompressed IPC batch is read at once, so memory holds one
    /// (`docs/format.md` §1, "Limits a reader checks").
    fn hold(&mut self, batch: RecordBatch) -> Result<()> {
        let free = match &self.out.ipc {
            Some((map, _)) => is_zero_copy(map, &batch),
            None => self.pass.in_memory,
        };
        if !free {
            self.release_held()?;
            return self.batch(&batch);
        }
        let Some((before, ahead)) = self.held.take() else {
            self.held = Some((batch, CheckedAhead::default()));
            return Ok(());
        };
        let (pass, out) = (&mut self.pass, &mut self.out);
        let mut next = CheckedAhead::default();
        match crate::runtime::compute_pool() {
            Ok(pool) => pool.in_place_scope(|scope| {
                scope.spawn(|_| next = CheckedAhead::first_of(&batch));
                pass.batch(&before, out, ahead)
            })?,
            Err(_) => pass.batch(&before, out, ahead)?,
        }
        self.held = Some((batch, next));
        Ok(())
    }

    /// Reads the rows of the batch [`Read::hold`] holds, if any.
    fn release_held(&mut self) -> Result<()> {
        match self.held.take() {
            Some((batch, ahead)) => self.pass.batch(&batch, &mut self.out, ahead),
            None => Ok(()),
        }
    }

    /// Reads the held batch's rows ([`Read::release_held`]), then returns the
    /// dataset of the rows kept, whose series hand out their values, and the
    /// number of values of each series counted but not kept.
    #[allow(clippy::type_complexity)]
    fn finish(mut self) -> Result<(TimeFDataset, Dropped, std::collections::BTreeMap<String, u64>)> {
        self.release_held()?;
        let Read { pass, out, .. } = self;
        let path = pass.path;
        if pass.row_base == 0 {
            return Err(Error::input(path, None, "the table has no rows"));
        }
        if out.kept == 0 {
            return Err(Error::input(path, None, "every row has missing values (all were dropped)"));
        }
        let temp = |e| Error::io(std::env::temp_dir(), e);
        if let Some(map) = out.spill.finish().map_err(temp)? {
            out.spilled.0.set(map).map_err(temp)?;
        }
        Ok((out.dataset, out.dropped, out.counted))
    }
}

/// State of the one pass over the input's rows.
struct Pass<'a> {
    path: &'a Path,
    opts: &'a ArrowOptions,
    /// Rows of the batches before the current one.
    row_base: usize,
    /// The batches live in memory for the whole write (not a mapped file), so
    /// their values are held as they are instead of spilled.
    in_memory: bool,
    /// Values are checked and counted, not kept ([`ArrowMetaPass`]).
    count_only: bool,
    /// A Parquet input's INT96 `start` in epoch seconds, every row of the
    /// input ([`typings::int96_seconds`]; the parquet crate's own decoding wraps).
    int96_starts: Option<Vec<Option<f64>>>,
    /// Checked values of the IPC mapping not released yet (a byte range of
    /// it): consecutive series are released together, in blocks of
    /// [`RELEASE_BLOCK_BYTES`], not one `madvise` a series.
    checked: std::ops::Range<usize>,
}

impl Pass<'_> {
    /// Checks and converts every row of `batch`; kept rows go to `out` as they
    /// are checked, their converted values to its spill (or they stay zero-copy
    /// slices of the IPC mapping, whose pages under the batch are then released
    /// until the writer reads them again). `ahead` holds the checks of its
    /// first rows when they were made while the batch before was read.
    fn batch(&mut self, batch: &RecordBatch, out: &mut Out, ahead: CheckedAhead) -> Result<()> {
        self.rows(batch, out, ahead)?;
        if let Some((map, _)) = &out.ipc {
            advise_dont_need(map, whole_pages_of(map, std::mem::replace(&mut self.checked, 0..0)));
            release_batch(map, batch);
        }
        Ok(())
    }

    /// Adds `values` (a checked slice of `map`) to the checked range,
    /// releasing that range first when `values` does not continue it, and
    /// after once it spans [`RELEASE_BLOCK_BYTES`].
    fn release_checked(&mut self, map: &memmap2::Mmap, values: &[f32]) {
        let start = (values.as_ptr() as usize).saturating_sub(map.as_ptr() as usize);
        let end = start + std::mem::size_of_val(values);
        if start == self.checked.end && !self.checked.is_empty() {
            self.checked.end = end;
        } else {
            advise_dont_need(map, whole_pages_of(map, std::mem::replace(&mut self.checked, start..end)));
        }
        if self.checked.len() >= RELEASE_BLOCK_BYTES {
            advise_dont_need(map, whole_pages_of(map, std::mem::replace(&mut self.checked, 0..0)));
        }
    }

    fn rows(&mut self, batch: &RecordBatch, out: &mut Out, mut ahead: CheckedAhead) -> Result<()> {
        let path = self.path;
        let at = |row: usize, what: String| Error::input(path, None, format!("row {row}: {what}"));
        let typing = |why: String| Error::input(path, None, why);
        // a refused typing, or a row of this batch that cannot be read
        let refused = |refused: Refused| match refused {
            Refused::Typing(why) => typing(why),
            Refused::Row(r, why) => at(self.row_base + r, why),
        };
        let column = |name| typings::column(batch, name).map_err(typing);
        let mut ids = match column("item_id")? {
            Some(c) => Some(typings::item_ids(c).map_err(refused)?),
            None => None,
        };
        let starts = match (column("start")?, self.int96_starts.as_deref()) {
            (_, Some(all)) => Some(
                all.get(self.row_base..self.row_base + batch.num_rows())
                    .ok_or_else(|| typing("start: INT96 rows do not match the table".into()))?
                    .to_vec(),
            ),
            (Some(c), None) => Some(typings::start_seconds(c).map_err(refused)?),
            (None, None) => None,
        };
        let freqs = match column("freq")? {
            Some(c) => Some(typings::frequencies(c).map_err(refused)?),
            None => None,
        };
        let target = column("target")?.ok_or_else(|| typing("no target column".into()))?;
        let want = "want a list of numbers or a list of lists of numbers";
        let element = typings::list_element(target.data_type())
            .ok_or_else(|| typing(format!("target has type {}, {want}", target.data_type())))?;
        let multivariate = typings::list_element(element).is_some();
        let leaf = typings::list_element(element).unwrap_or(element);
        if !typings::is_value_type(leaf) {
            return Err(typing(format!("target values have type {leaf}, {want} (integers or floats)")));
        }
        for r in 0..batch.num_rows() {
            let row = self.row_base + r;
            let readable = match &mut ids {
                Some(ids) => ids[r].take().ok_or_else(|| at(row, "item_id is null".into()))?,
                None => row.to_string(),
            };
            let item = |what: String| at(row, format!("item {readable}: {what}"));
            if out.seen(self.opts, &readable) {
                return Err(at(row, format!("duplicate item_id {readable}")));
            }
            let rate_hz = self.rate(freqs.as_ref().and_then(|f| f[r].as_deref())).map_err(&item)?;
            if target.is_null(r) {
                return Err(item("target is null".into()));
            }
            let outer = || typings::list_value(target.as_ref(), r).ok_or_else(|| item("target is not a list".into()));
            let in_channel = |d: usize, e: ValueError| match e {
                ValueError::Missing(m) => ValueError::Missing(format!("channel {d}: {m}")),
                ValueError::Invalid(m) => ValueError::Invalid(format!("channel {d}: {m}")),
            };
            let mut held = Vec::new();
            if multivariate {
                let outer = outer()?;
                if outer.is_empty() {
                    return Err(item("multivariate target with no channel".into()));
                }
                let channels = (0..outer.len())
                    .map(|d| typings::list_value(outer.as_ref(), d).filter(|_| outer.is_valid(d)))
                    .collect::<Option<Vec<_>>>()
                    .map_or_else(
                        || {
                            let d = (0..outer.len()).find(|&d| outer.is_null(d)).unwrap_or(0);
                            Err(ValueError::Missing(format!("channel {d}: is null (missing)")))
                        },
                        Ok,
                    )
                    .or_else(|e| self.missing(e, &item, out, &readable).map(|_| Vec::new()))?;
                for (d, values) in channels.iter().enumerate() {
                    match typings::to_f32(values) {
                        Ok(v) => held.push(v),
                        Err(e) => {
                            self.missing(in_channel(d, e), &item, out, &readable)?;
                            held.clear();
                            break;
                        }
                    }
                }
            } else {
                // checked ahead: the row's list is built only when it was not
                // (an allocation a row)
                let checked = match ahead.take(target.as_ref(), r) {
                    Some(checked) => checked,
                    None => typings::to_f32(&outer()?),
                };
                match checked {
                    Ok(v) => held.push(v),
                    Err(e) => self.missing(in_channel(0, e), &item, out, &readable)?,
                }
            }
            // a row left out (its values missing under drop-case)
            if held.is_empty() {
                continue;
            }
            let channels = held
                .into_iter()
                .map(|v| match &out.ipc {
                    _ if self.count_only => Ok(Held::Counted(v.len())),
                    Some((map, _)) if is_in(&v, map) => {
                        // checked: give the pages back until the writer reads them again
                        self.release_checked(map, &v);
                        Ok(Held::Mapped(v))
                    }
                    None if self.in_memory => Ok(Held::Mapped(v)),
                    _ => out.spill.push(&v),
                })
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|e| Error::io(std::env::temp_dir(), e))?;
            // a kept row's ids must not be empty (an id is a non-empty string)
            if readable.is_empty() && self.opts.ids == IdMode::String {
                return Err(at(row, "item_id is empty".into()));
            }
            out.add(
                self.opts,
                Row {
                    readable,
                    t_start_s: starts.as_ref().and_then(|s| s[r]).unwrap_or(0.0),
                    rate_hz,
                    dims: multivariate.then_some(channels.len()),
                    channels,
                },
            )?;
        }
        self.row_base += batch.num_rows();
        Ok(())
    }

    /// The rate of a row: its `freq`, the option, or the default; a `freq` and an
    /// option that disagree (relative 1e-9) are refused.
    fn rate(&self, freq: Option<&str>) -> std::result::Result<f64, String> {
        let option = self.opts.sampling_rate_hz;
        let Some(freq) = freq else { return Ok(option.unwrap_or(DEFAULT_SAMPLING_RATE_HZ)) };
        match (typings::pandas_frequency_hz(freq), option) {
            (Ok(hz), Some(o)) if ((hz - o) / o).abs() > 1e-9 => {
                Err(format!("freq {freq:?} is {hz:?} Hz but --sampling-rate-hz is {o:?} Hz"))
            }
            (Ok(hz), _) => Ok(hz),
            // an alias without a fixed rate: the option, when given, says what it is
            (Err(_), Some(o)) => Ok(o),
            (Err(why), None) => Err(why),
        }
    }

    /// Applies [`OnMissing`] to a refused value: a missing one is dropped (its row
    /// recorded) under [`OnMissing::DropCase`]; anything else is an error.
    fn missing(&self, e: ValueError, item: &dyn Fn(String) -> Error, out: &mut Out, readable: &str) -> Result<()> {
        match (e, self.opts.on_missing) {
            (ValueError::Missing(_), OnMissing::DropCase) => {
                out.dropped.cases.push(readable.to_string());
                out.dropped_ids.insert(readable.to_string());
                Ok(())
            }
            (ValueError::Missing(m), OnMissing::Error) => {
                Err(item(format!("{m}; TimeF stores only finite values (--on-missing drop-case leaves such rows out)")))
            }
            (ValueError::Invalid(m), _) => Err(item(m)),
        }
    }
}

/// Values of a univariate `target` checked ahead of the pass, on the compute
/// pool ([`typings::to_f32`] of each row's list; the values check is most of
/// the pass), a window of rows holding about [`CHECK_AHEAD_VALUES`] values at
/// a time, so the input pages it faults in before the pass releases them stay
/// about 16 MiB of float32 (a single row with more is checked whole). The pass
/// takes each row's result in row order: the same errors, in the same order,
/// as checking each row when it comes.
#[derive(Default)]
struct CheckedAhead {
    /// The first row of the window.
    start: usize,
    /// Each row's check (`None` for a null row, or once taken).
    rows: Vec<Option<std::result::Result<SeriesValues, ValueError>>>,
}

/// Values checked ahead of the pass at a time (16 MiB of float32).
const CHECK_AHEAD_VALUES: usize = 4 << 20;

impl CheckedAhead {
    /// The checks of the first window of `batch`'s rows, made before the pass
    /// reaches them ([`Read::hold`]): rows of at most [`CHECK_AHEAD_VALUES`]
    /// values together, so a first row with more is checked only when the
    /// pass reaches it. None when its `target` is not a univariate list of
    /// numbers (the pass then refuses its typing, or checks each channel itself).
    fn first_of(batch: &RecordBatch) -> CheckedAhead {
        let mut ahead = CheckedAhead::default();
        let univariate = |t: &arrow_schema::DataType| {
            typings::list_element(t).is_some_and(|e| typings::list_element(e).is_none() && typings::is_value_type(e))
        };
        if let Some(target) = batch.column_by_name("target").filter(|t| !t.is_empty() && univariate(t.data_type())) {
            ahead.check_window(target.as_ref(), 0, true);
        }
        ahead
    }

    /// The check of row `r` of `target` (once), checking the window that
    /// starts at `r` when `r` is outside the current one; `None` when the
    /// pool is unavailable (the pass then checks the row itself).
    fn take(&mut self, target: &dyn Array, r: usize) -> Option<std::result::Result<SeriesValues, ValueError>> {
        if !(self.start..self.start + self.rows.len()).contains(&r) {
            self.check_window(target, r, false)?;
        }
        self.rows.get_mut(r - self.start).and_then(Option::take)
    }

    /// Checks the window of rows of `target` that starts at row `r`: rows
    /// until they hold [`CHECK_AHEAD_VALUES`] values, the last one possibly
    /// past it, or, `bounded`, only rows within it (none when row `r` alone
    /// has more). `None` when the pool is unavailable.
    fn check_window(&mut self, target: &dyn Array, r: usize, bounded: bool) -> Option<()> {
        use rayon::prelude::*;
        let (mut lists, mut values) = (Vec::new(), 0);
        while r + lists.len() < target.len() && values < CHECK_AHEAD_VALUES {
            let row = r + lists.len();
            let list = typings::list_value(target, row).filter(|_| target.is_valid(row));
            let n = list.as_ref().map_or(0, |l| l.len());
            if bounded && values + n > CHECK_AHEAD_VALUES {
                break;
            }
            values += n;
            lists.push(list);
        }
        let pool = crate::runtime::compute_pool().ok()?;
        self.rows = pool.install(|| lists.par_iter().map(|l| l.as_ref().map(typings::to_f32)).collect());
        self.start = r;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::ArrayRef;

    /// A batch of univariate float32 rows of `lens` values each.
    fn rows_of(lens: &[usize]) -> RecordBatch {
        use arrow_array::builder::{Float32Builder, ListBuilder};
        let mut target = ListBuilder::new(Float32Builder::new());
        for (row, &n) in lens.iter().enumerate() {
            target.values().append_slice(&vec![row as f32; n]);
            target.append(true);
        }
        RecordBatch::try_from_iter([("target", Arc::new(target.finish()) as ArrayRef)]).unwrap()
    }

    /// Ahead of the pass a window stops before the row that would pass
    /// [`CHECK_AHEAD_VALUES`] (none when the first row does), so a held batch
    /// maps or converts at most that many values; the pass's own window takes
    /// at least its first row, whole.
    #[test]
    fn a_window_checked_ahead_of_the_pass_never_passes_the_bound() {
        let half = CHECK_AHEAD_VALUES / 2;
        let batch = rows_of(&[half, half, 1]);
        let ahead = CheckedAhead::first_of(&batch);
        assert_eq!((ahead.start, ahead.rows.len()), (0, 2));
        assert!(ahead.rows.iter().all(|r| matches!(r, Some(Ok(v)) if v.len() == half)));
        let batch = rows_of(&[CHECK_AHEAD_VALUES + 1, 1]);
        assert!(CheckedAhead::first_of(&batch).rows.is_empty());
        // the pass checks that row when it comes: a window of the row alone
        let mut ahead = CheckedAhead::default();
        let target = batch.column_by_name("target").unwrap();
        assert!(matches!(ahead.take(target.as_ref(), 0), Some(Ok(v)) if v.len() == CHECK_AHEAD_VALUES + 1));
        assert_eq!((ahead.start, ahead.rows.len()), (0, 1));
        // a row past the bound ends the pass's window after it
        let batch = rows_of(&[half, half + 1, 1]);
        let mut ahead = CheckedAhead::default();
        assert!(ahead.take(batch.column_by_name("target").unwrap().as_ref(), 0).is_some());
        assert_eq!(ahead.rows.len(), 2);
        assert_eq!(CheckedAhead::first_of(&batch).rows.len(), 1);
    }
}
