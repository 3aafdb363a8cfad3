//! GluonTS-style Arrow/Parquet training files (GluonTS, Chronos and similar):
//! `item_id` (string; the row index if absent), `start` (timestamp, optional),
//! `target` (`list<float32|float64>`, or `list<list<...>>` for multivariate).
//!
//! Ids (issue 3; the same rule as `ref_writer.py`): sample = item_id; series =
//! item_id (univariate) or `"{item_id}/{dim}"`; channel `"0"` or `"{dim}"`;
//! view `main`; source = the dataset name; `t_start_s` = `start` in epoch seconds.
//!
//! Reading streams: an Arrow IPC file or stream is memory-mapped and decoded
//! zero-copy, so a series' loader copies just its own values out of the mapping;
//! a Parquet file is read one row group at a time. Nothing is loaded whole.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::buffer::Buffer;
use arrow::datatypes::{DataType, Float32Type, Float64Type, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::connectors::{unreadable, IdMode, DEFAULT_SAMPLING_RATE_HZ, DEFAULT_SPEC_TYPE};
use crate::dataset::{LoaderError, Sample, SeriesMeta, SeriesRef, SeriesValues, Source, TimeFDataset};
use crate::error::{Error, Result};

/// Options of [`read_arrow`].
#[derive(Debug, Clone, PartialEq)]
pub struct ArrowOptions {
    /// Dataset name (also the source id).
    pub name: String,
    /// Dataset version.
    pub version: String,
    /// Spec type of every series ([`DEFAULT_SPEC_TYPE`] if `None`).
    pub spec_type: Option<String>,
    /// Sampling rate in Hz of every series ([`DEFAULT_SAMPLING_RATE_HZ`] if `None`).
    pub sampling_rate_hz: Option<f64>,
    /// How ids are spelled.
    pub ids: IdMode,
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
        }
    }
}

/// Where rows live: decoded batches (over a mapping of the file, or in memory),
/// or Parquet row groups read on demand.
enum Input {
    Ipc { batches: Vec<RecordBatch>, map: Option<Arc<memmap2::Mmap>> },
    Parquet { path: PathBuf, cache: Mutex<Option<(usize, RecordBatch)>> },
}

impl Input {
    fn batch(&self, b: usize) -> std::result::Result<RecordBatch, LoaderError> {
        match self {
            Input::Ipc { batches, .. } => batches.get(b).cloned().ok_or_else(|| "batch out of range".into()),
            Input::Parquet { path, cache } => {
                let mut cache = cache.lock().map_err(|_| "row-group cache poisoned")?;
                if let Some((i, batch)) = cache.as_ref() {
                    if *i == b {
                        return Ok(batch.clone());
                    }
                }
                let batch = read_row_group(path, b)?;
                *cache = Some((b, batch.clone()));
                Ok(batch)
            }
        }
    }
}

fn read_row_group(path: &Path, rg: usize) -> std::result::Result<RecordBatch, LoaderError> {
    let file = File::open(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let rows = builder.metadata().row_group(rg).num_rows() as usize;
    let mut reader = builder.with_row_groups(vec![rg]).with_batch_size(rows.max(1)).build()?;
    let schema = {
        use arrow::array::RecordBatchReader;
        reader.schema()
    };
    Ok(reader.next().transpose()?.unwrap_or_else(|| RecordBatch::new_empty(schema)))
}

/// Reads a GluonTS-style file (Arrow IPC file, Arrow IPC stream, or Parquet,
/// told apart by their magic bytes) into a dataset whose loaders read lazily.
///
/// # Errors
/// [`Error::InvalidInput`] naming the file and row for a missing or mistyped
/// `target`, a null target, a duplicate `item_id`, or an unreadable file;
/// [`Error::Validation`] for bad names or rates.
pub fn read_arrow(path: impl AsRef<Path>, opts: &ArrowOptions) -> Result<TimeFDataset> {
    let path = path.as_ref();
    let mut magic = [0u8; 6];
    {
        use std::io::Read;
        let mut f = File::open(path).map_err(|e| unreadable(path, e))?;
        let n = f.read(&mut magic).map_err(|e| unreadable(path, e))?;
        if n < 4 {
            return Err(Error::input(path, None, "file too short to be Arrow IPC or Parquet"));
        }
    }
    let (input, batches): (Input, Box<dyn Iterator<Item = Result<RecordBatch>>>) = if &magic[..4] == b"PAR1" {
        let file = File::open(path).map_err(|e| unreadable(path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| Error::input(path, None, format!("not a readable Parquet file: {e}")))?;
        let groups = builder.metadata().num_row_groups();
        let p = path.to_path_buf();
        let it = (0..groups).map(move |g| read_row_group(&p, g).map_err(|e| Error::input(&p, None, e.to_string())));
        (Input::Parquet { path: path.to_path_buf(), cache: Mutex::new(None) }, Box::new(it))
    } else {
        let (batches, map) = decode_ipc(path)?;
        (Input::Ipc { batches: batches.clone(), map: Some(map) }, Box::new(batches.into_iter().map(Ok)))
    };
    build(path, Arc::new(input), batches, opts)
}

/// Like [`read_arrow`], over record batches already in memory (e.g. a table
/// handed over through the Arrow C data interface). `label` stands for the
/// file in errors. Values of float32 targets are sliced zero-copy.
///
/// # Errors
/// As [`read_arrow`].
pub fn read_arrow_batches(batches: Vec<RecordBatch>, label: &Path, opts: &ArrowOptions) -> Result<TimeFDataset> {
    let it = Box::new(batches.clone().into_iter().map(Ok));
    build(label, Arc::new(Input::Ipc { batches, map: None }), it, opts)
}

/// The dataset of `batches`, whose rows `input` serves to the loaders.
fn build(
    path: &Path,
    input: Arc<Input>,
    batches: Box<dyn Iterator<Item = Result<RecordBatch>>>,
    opts: &ArrowOptions,
) -> Result<TimeFDataset> {
    let mut dataset = TimeFDataset::new(&opts.name, &opts.version)?;
    let spec_type = opts.spec_type.clone().unwrap_or_else(|| DEFAULT_SPEC_TYPE.to_string());
    let rate = opts.sampling_rate_hz.unwrap_or(DEFAULT_SAMPLING_RATE_HZ);
    let source_id = opts.ids.id(&opts.name);
    dataset.add_source(Source { source_id: source_id.clone(), name: opts.name.clone(), ..Default::default() })?;

    let mut row_base = 0usize;
    let mut seen = std::collections::HashSet::new();
    for (b, batch) in batches.enumerate() {
        let batch = batch?;
        let rows = Rows::of(path, &batch)?;
        for r in 0..batch.num_rows() {
            let readable = match &rows.item_id {
                Some(ids) => {
                    ids(r).ok_or_else(|| Error::input(path, None, format!("row {}: item_id is null", row_base + r)))?
                }
                None => (row_base + r).to_string(),
            };
            let t_start_s = rows.start_s(r);
            let dims = rows.dims(r).map_err(|reason| Error::input(path, None, format!("item {readable}: {reason}")))?;
            let sample_id = opts.ids.id(&readable);
            let mut refs = Vec::with_capacity(dims.unwrap_or(1));
            for d in 0..dims.unwrap_or(1) {
                let (series_readable, channel) = match dims {
                    Some(_) => (format!("{readable}/{d}"), d.to_string()),
                    None => (readable.clone(), "0".to_string()),
                };
                let time_series_id = opts.ids.id(&series_readable);
                let mut meta = SeriesMeta::new(&time_series_id, &spec_type, channel, rate);
                meta.t_start_s = t_start_s;
                let (input, item, dim) = (Arc::clone(&input), series_readable, dims.map(|_| d));
                let (file, row) = (path.to_path_buf(), row_base + r);
                dataset.add_series(
                    meta,
                    Box::new(move || {
                        let batch = input.batch(b)?;
                        let values = series_values(&batch, r, dim)
                            .map_err(|e| format!("{}: row {row}: item {item}: {e}", file.display()))?;
                        Ok(match input.as_ref() {
                            Input::Ipc { map: Some(map), .. } => release_on_drop(values, map),
                            Input::Ipc { map: None, .. } | Input::Parquet { .. } => values,
                        })
                    }),
                )?;
                refs.push(SeriesRef { time_series_id, view: "main".into() });
            }
            if !seen.insert(sample_id.clone()) {
                return Err(Error::input(path, None, format!("row {}: duplicate item_id {readable}", row_base + r)));
            }
            dataset.add_sample(Sample {
                sample_id,
                source_id: source_id.clone(),
                series: refs,
                ..Default::default()
            })?;
        }
        row_base += batch.num_rows();
    }
    Ok(dataset)
}

/// Keeps a zero-copy slice of the mapping alive and, when the writer drops it
/// (its last chunk encoded), tells the kernel its pages are no longer needed,
/// so resident memory follows the series in flight, not the file size.
struct ReleaseOnDrop {
    values: SeriesValues,
    map: Arc<memmap2::Mmap>,
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        let page = 4096;
        let base = self.map.as_ptr() as usize;
        let start = (self.values.as_ptr() as usize).saturating_sub(base);
        let end = start + self.values.len() * std::mem::size_of::<f32>();
        // whole pages inside this series only, so neighbours keep theirs
        let (first, last) = (start.div_ceil(page) * page, end / page * page);
        if last > first && last <= self.map.len() {
            // SAFETY: the mapping is read-only and file-backed; MADV_DONTNEED
            // only drops resident pages, which fault back in from the file if
            // another slice still reads them.
            let _ = unsafe { self.map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, first, last - first) };
        }
    }
}

fn release_on_drop(values: SeriesValues, map: &Arc<memmap2::Mmap>) -> SeriesValues {
    let len = values.len();
    let ptr = values.as_ptr() as *mut u8;
    let owner = Arc::new(ReleaseOnDrop { values, map: Arc::clone(map) });
    match std::ptr::NonNull::new(ptr) {
        // SAFETY: ptr/len describe memory kept alive by `owner`.
        Some(ptr) => SeriesValues::new(
            unsafe { Buffer::from_custom_allocation(ptr, len * std::mem::size_of::<f32>(), owner) },
            0,
            len,
        ),
        None => owner.values.clone(),
    }
}

/// Maps the file and decodes every record batch zero-copy (IPC file or stream).
fn decode_ipc(path: &Path) -> Result<(Vec<RecordBatch>, Arc<memmap2::Mmap>)> {
    let file = File::open(path).map_err(|e| unreadable(path, e))?;
    // SAFETY: the mapping is read-only; like every mmap-based reader, a file
    // truncated by another process while it is read is outside the contract.
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?);
    let ptr = std::ptr::NonNull::new(map.as_ptr() as *mut u8).ok_or_else(|| Error::input(path, None, "empty file"))?;
    // SAFETY: the buffer covers exactly the mapping, which `map` keeps alive.
    let buffer = unsafe {
        Buffer::from_custom_allocation(ptr, map.len(), Arc::clone(&map) as Arc<dyn arrow::alloc::Allocation>)
    };
    let bad =
        |e: arrow::error::ArrowError| Error::input(path, None, format!("not a readable Arrow IPC file or stream: {e}"));
    if buffer.len() >= 16 && &buffer[..6] == b"ARROW1" {
        use arrow::ipc::reader::{read_footer_length, FileDecoder};
        let trailer = buffer.len() - 10;
        let tail: [u8; 10] =
            buffer[trailer..].try_into().map_err(|_| Error::input(path, None, "truncated IPC file"))?;
        let footer_len = read_footer_length(tail).map_err(bad)?;
        let footer_start =
            trailer.checked_sub(footer_len).ok_or_else(|| Error::input(path, None, "truncated IPC footer"))?;
        let footer = arrow::ipc::root_as_footer(&buffer[footer_start..trailer])
            .map_err(|e| Error::input(path, None, format!("bad IPC footer: {e}")))?;
        let schema = footer.schema().ok_or_else(|| Error::input(path, None, "IPC footer without schema"))?;
        let schema = Arc::new(arrow::ipc::convert::try_fb_to_schema(schema).map_err(bad)?);
        let mut decoder = FileDecoder::new(schema, footer.version());
        let block_data = |block: &arrow::ipc::Block| -> Result<Buffer> {
            let len = block.bodyLength() as usize + block.metaDataLength() as usize;
            let start = block.offset() as usize;
            if start.checked_add(len).is_none_or(|end| end > buffer.len()) {
                return Err(Error::input(path, None, "IPC block beyond end of file"));
            }
            Ok(buffer.slice_with_length(start, len))
        };
        for block in footer.dictionaries().iter().flatten() {
            decoder.read_dictionary(block, &block_data(block)?).map_err(bad)?;
        }
        let mut out = Vec::new();
        for block in footer.recordBatches().iter().flatten() {
            if let Some(batch) = decoder.read_record_batch(block, &block_data(block)?).map_err(bad)? {
                out.push(batch);
            }
        }
        Ok((out, map))
    } else {
        let mut decoder = arrow::ipc::reader::StreamDecoder::new();
        let mut rest = buffer;
        let mut out = Vec::new();
        while !rest.is_empty() {
            match decoder.decode(&mut rest).map_err(bad)? {
                Some(batch) => out.push(batch),
                None if rest.is_empty() => break,
                None => continue,
            }
        }
        decoder.finish().map_err(bad)?;
        Ok((out, map))
    }
}

/// Typed access to one batch's columns.
struct Rows<'a> {
    item_id: Option<Box<dyn Fn(usize) -> Option<String> + 'a>>,
    start: Option<(&'a ArrayRef, TimeUnit)>,
    target: &'a ArrayRef,
}

fn list_child(a: &ArrayRef) -> Option<&ArrayRef> {
    match a.data_type() {
        DataType::List(_) => Some(a.as_list::<i32>().values()),
        DataType::LargeList(_) => Some(a.as_list::<i64>().values()),
        _ => None,
    }
}

fn list_range(a: &dyn Array, row: usize) -> Option<std::ops::Range<usize>> {
    match a.data_type() {
        DataType::List(_) => {
            let o = a.as_list::<i32>().value_offsets();
            Some(o[row] as usize..o[row + 1] as usize)
        }
        DataType::LargeList(_) => {
            let o = a.as_list::<i64>().value_offsets();
            Some(o[row] as usize..o[row + 1] as usize)
        }
        _ => None,
    }
}

impl<'a> Rows<'a> {
    fn of(path: &Path, batch: &'a RecordBatch) -> Result<Rows<'a>> {
        let item_id: Option<Box<dyn Fn(usize) -> Option<String> + 'a>> = match batch.column_by_name("item_id") {
            None => None,
            Some(c) => match c.data_type() {
                DataType::Utf8 => Some(Box::new(move |r| {
                    c.as_string::<i32>().is_valid(r).then(|| c.as_string::<i32>().value(r).to_string())
                })),
                DataType::LargeUtf8 => Some(Box::new(move |r| {
                    c.as_string::<i64>().is_valid(r).then(|| c.as_string::<i64>().value(r).to_string())
                })),
                DataType::Utf8View => Some(Box::new(move |r| {
                    c.as_string_view().is_valid(r).then(|| c.as_string_view().value(r).to_string())
                })),
                DataType::Int64 | DataType::Int32 => {
                    let c = arrow::compute::cast(c, &DataType::Int64)
                        .map_err(|e| Error::input(path, None, e.to_string()))?;
                    Some(Box::new(move |r| {
                        let a = c.as_primitive::<arrow::datatypes::Int64Type>();
                        a.is_valid(r).then(|| a.value(r).to_string())
                    }))
                }
                other => return Err(Error::input(path, None, format!("item_id has type {other}, want a string"))),
            },
        };
        let start = match batch.column_by_name("start") {
            None => None,
            Some(c) => match c.data_type() {
                DataType::Timestamp(unit, _) => Some((c, *unit)),
                other => return Err(Error::input(path, None, format!("start has type {other}, want a timestamp"))),
            },
        };
        let target = batch.column_by_name("target").ok_or_else(|| Error::input(path, None, "no target column"))?;
        let child = list_child(target).ok_or_else(|| {
            Error::input(
                path,
                None,
                format!("target has type {}, want list<float> or list<list<float>>", target.data_type()),
            )
        })?;
        let leaf = list_child(child).unwrap_or(child);
        if !matches!(leaf.data_type(), DataType::Float32 | DataType::Float64) {
            return Err(Error::input(
                path,
                None,
                format!("target values have type {}, want float32 or float64", leaf.data_type()),
            ));
        }
        Ok(Rows { item_id, start, target })
    }

    fn start_s(&self, r: usize) -> f64 {
        let Some((c, unit)) = self.start else { return 0.0 };
        if c.is_null(r) {
            return 0.0;
        }
        let v = match unit {
            TimeUnit::Second => c.as_primitive::<arrow::datatypes::TimestampSecondType>().value(r) as f64,
            TimeUnit::Millisecond => {
                c.as_primitive::<arrow::datatypes::TimestampMillisecondType>().value(r) as f64 / 1e3
            }
            TimeUnit::Microsecond => {
                c.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().value(r) as f64 / 1e6
            }
            TimeUnit::Nanosecond => c.as_primitive::<arrow::datatypes::TimestampNanosecondType>().value(r) as f64 / 1e9,
        };
        v
    }

    /// `None` for univariate rows, `Some(dims)` for multivariate ones.
    fn dims(&self, r: usize) -> std::result::Result<Option<usize>, String> {
        if self.target.is_null(r) {
            return Err("target is null".into());
        }
        let child = list_child(self.target).ok_or("target is not a list")?;
        if list_child(child).is_none() {
            return Ok(None);
        }
        let range = list_range(self.target.as_ref(), r).ok_or("target is not a list")?;
        if range.is_empty() {
            return Err("multivariate target with no dimension".into());
        }
        Ok(Some(range.len()))
    }
}

/// One series' values (row `r`, dimension `dim`) of `batch` as float32: a
/// zero-copy slice for float32 input, a converted copy for float64.
fn series_values(batch: &RecordBatch, r: usize, dim: Option<usize>) -> std::result::Result<SeriesValues, String> {
    let target = batch.column_by_name("target").ok_or("no target column")?;
    let range = list_range(target.as_ref(), r).ok_or("target is not a list")?;
    let mut values = list_child(target).ok_or("target is not a list")?.slice(range.start, range.len());
    if let Some(d) = dim {
        let inner = list_range(values.as_ref(), d).ok_or("target is not a list of lists")?;
        values = list_child(&values).ok_or("target is not a list of lists")?.slice(inner.start, inner.len());
    }
    if values.null_count() > 0 {
        return Err(format!("{} null values", values.null_count()));
    }
    Ok(match values.data_type() {
        DataType::Float32 => values.as_primitive::<Float32Type>().values().clone(),
        DataType::Float64 => {
            let wide = values.as_primitive::<Float64Type>().values();
            // a finite float64 beyond float32's range would silently become inf
            if let Some(k) = wide.iter().position(|&v| v.is_finite() && (v as f32).is_infinite()) {
                return Err(format!("value {k} = {} is outside the float32 range", wide[k]));
            }
            wide.iter().map(|&v| v as f32).collect::<Vec<_>>().into()
        }
        other => return Err(format!("values of type {other}")),
    })
}
