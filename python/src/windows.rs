//! `WindowPlan` and `Windows`: training windows of a version (`timef::windows`)
//! as numpy batches; the order, shares and resume arithmetic stay in the core.

use std::sync::{Arc, Mutex};

use arrow_pyarrow::ToPyArrow;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use timef::scan::Selection;
use timef::windows::{drop_remainder, merge_consumed, Share, WindowBatch, WindowOptions, WindowPlan};

use crate::errors::to_py;
use crate::Count;

/// The windows of a selection under window parameters, seed and shuffle
/// (`Version.window_plan`): their number and their order in each epoch.
/// Pickles to nothing; build one per process.
#[pyclass(name = "WindowPlan", module = "timef._timef", frozen)]
pub struct PyWindowPlan {
    inner: Arc<WindowPlan>,
}

impl PyWindowPlan {
    /// The plan of `selection` in `version`, built without the GIL.
    pub(crate) fn new(
        py: Python<'_>,
        version: &Arc<timef::reader::Version>,
        selection: Selection,
        options: WindowOptions,
    ) -> PyResult<PyWindowPlan> {
        let v = Arc::clone(version);
        let plan = py.detach(|| WindowPlan::new(&v, &selection, options)).map_err(to_py)?;
        if let Some(why) = plan.why_empty() {
            // a plan of no window trains on nothing: said, not left to `len 0` (review 146)
            let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
            let message =
                std::ffi::CString::new(why).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
            PyErr::warn(py, &category, &message, 1)?;
        }
        Ok(PyWindowPlan { inner: Arc::new(plan) })
    }

    /// The iterator of `share`'s windows in `epoch`, in batches of at most
    /// `batch_size` (at least 1, else `InvalidOption` `batch_size`).
    pub(crate) fn iter(&self, py: Python<'_>, epoch: u64, share: Share, batch_size: usize) -> PyResult<PyWindows> {
        if batch_size == 0 {
            return Err(to_py(timef::Error::InvalidOption {
                option: "batch_size",
                reason: "must be at least 1".into(),
            }));
        }
        let plan = Arc::clone(&self.inner);
        let windows = py.detach(|| plan.windows(epoch, &share)).map_err(to_py)?;
        Ok(PyWindows { plan: Arc::clone(&self.inner), windows: Mutex::new(windows), batch_size })
    }
}

fn share(consumer: Count, consumers: Count, consumed: Vec<(u64, u64)>, taken: Count) -> PyResult<Share> {
    Ok(Share {
        consumer: consumer.get("consumer")?,
        consumers: consumers.get("consumers")?,
        consumed,
        taken: taken.get("taken")?,
    })
}

#[pymethods]
impl PyWindowPlan {
    /// Windows per epoch.
    fn __len__(&self) -> usize {
        self.inner.len() as usize
    }

    /// Blocks (row groups where selected series start): the units of `read_block` and `block_windows`.
    #[getter]
    fn blocks(&self) -> usize {
        self.inner.blocks().len()
    }

    /// The channels each window stacks, in row order, with `stack_channels`
    /// (the first selected sample's); empty otherwise.
    #[getter]
    fn channels(&self) -> Vec<String> {
        self.inner.blocks().channels().to_vec()
    }

    /// Requests and bytes of the reads through the opened version's store
    /// handle so far (every reader of that `timef.open` counted): a dict of
    /// `requests`, `bytes`, `read_ahead_requests`, `read_ahead_bytes`,
    /// `read_ahead_hits`; `None` for a local version.
    fn read_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = self.inner.blocks().read_stats() else { return Ok(None) };
        let out = PyDict::new(py);
        out.set_item("requests", s.requests)?;
        out.set_item("bytes", s.bytes)?;
        out.set_item("read_ahead_requests", s.read_ahead_requests)?;
        out.set_item("read_ahead_bytes", s.read_ahead_bytes)?;
        out.set_item("read_ahead_hits", s.read_ahead_hits)?;
        Ok(Some(out))
    }

    /// Row groups of the selection: the units of `read_row_group`.
    #[getter]
    fn row_groups(&self) -> usize {
        self.inner.blocks().row_groups()
    }

    /// The windows of consumer `consumer` of `consumers` in `epoch`, skipping
    /// the positions in `consumed` and the first `taken` of its span, as an
    /// iterator of dict batches of at most `batch_size` windows. Raises
    /// `TimeFValidationError` (`field` the option) for a consumer outside
    /// `consumers` and for `batch_size` 0.
    #[pyo3(signature = (*, epoch = Count::of(0), consumer = Count::of(0), consumers = Count::of(1), consumed = Vec::new(),
                        taken = Count::of(0), batch_size = Count::of(256)),
           text_signature = "($self, /, *, epoch=0, consumer=0, consumers=1, consumed=(), taken=0, batch_size=256)")]
    fn windows(
        &self,
        py: Python<'_>,
        epoch: Count,
        consumer: Count,
        consumers: Count,
        consumed: Vec<(u64, u64)>,
        taken: Count,
        batch_size: Count,
    ) -> PyResult<PyWindows> {
        self.iter(py, epoch.get("epoch")?, share(consumer, consumers, consumed, taken)?, batch_size.get("batch_size")?)
    }

    /// `(id, start)` of the windows the same share takes, in order, computed
    /// from the index alone (no value is read); the id is the window's
    /// `time_series_id`, or its `sample_id` with `stack_channels`.
    #[pyo3(signature = (*, epoch = Count::of(0), consumer = Count::of(0), consumers = Count::of(1), consumed = Vec::new(),
                        taken = Count::of(0)),
           text_signature = "($self, /, *, epoch=0, consumer=0, consumers=1, consumed=(), taken=0)")]
    fn order(
        &self,
        epoch: Count,
        consumer: Count,
        consumers: Count,
        consumed: Vec<(u64, u64)>,
        taken: Count,
    ) -> PyResult<Vec<(String, i64)>> {
        let share = share(consumer, consumers, consumed, taken)?;
        let order = self.inner.order_of(epoch.get("epoch")?, &share).map_err(to_py)?;
        let blocks = self.inner.blocks();
        Ok(order.into_iter().map(|(k, start)| (blocks.stack_id(k).to_string(), start)).collect())
    }

    /// The positions handed out once consumer `c` of `len(taken)` took
    /// `taken[c]` windows of its span (after `consumed`): the `consumed` of any
    /// later split (sorted half-open `(start, end)` pairs).
    fn merge_consumed(&self, consumed: Vec<(u64, u64)>, taken: Vec<u64>) -> PyResult<Vec<(u64, u64)>> {
        merge_consumed(self.inner.len(), &consumed, taken.len(), &taken).map_err(to_py)
    }

    /// `consumed` and the last windows not in it past a multiple of
    /// `ranks`: with it, every rank of a split (any workers each) takes the
    /// same number of windows (`drop_last`; `timef::windows::drop_remainder`).
    /// Raises `TimeFValidationError` (`field` `ranks`) for `ranks` 0 or
    /// negative, or a bad `consumed`.
    fn drop_remainder(&self, consumed: Vec<(u64, u64)>, ranks: Count) -> PyResult<Vec<(u64, u64)>> {
        // named as the argument is, not as the core's `world_size` (review 148)
        let ranks: usize = ranks.get("ranks")?;
        if ranks == 0 {
            return Err(to_py(timef::Error::InvalidOption { option: "ranks", reason: "must be at least 1".into() }));
        }
        drop_remainder(self.inner.len(), &consumed, ranks).map_err(to_py)
    }

    /// Every window of block `block`, in index order, as one dict batch.
    fn block_windows<'py>(&self, py: Python<'py>, block: usize) -> PyResult<Bound<'py, PyDict>> {
        self.check_block(block)?;
        let plan = Arc::clone(&self.inner);
        let batch = py.detach(|| plan.block_windows(block)).map_err(to_py)?;
        batch_dict(py, &self.inner, batch)
    }

    /// The whole series of block `block` as a `pyarrow.Table` (columns
    /// time_series_id, sample_id, t_start_s, sampling_rate_hz, values), in index order.
    fn read_block<'py>(&self, py: Python<'py>, block: usize) -> PyResult<Bound<'py, PyAny>> {
        self.check_block(block)?;
        let plan = Arc::clone(&self.inner);
        let values = py.detach(|| plan.blocks().read_blocks(&[block], plan.options().threads)).map_err(to_py)?;
        let blocks = self.inner.blocks();
        let series = blocks.series();
        let numbers: Vec<usize> = values.iter().map(|(s, _)| s).collect();
        let columns = PyDict::new(py);
        columns.set_item(
            "time_series_id",
            numbers.iter().map(|&s| series[s].time_series_id.as_str()).collect::<Vec<_>>(),
        )?;
        columns.set_item("sample_id", numbers.iter().map(|&s| blocks.sample_id(s)).collect::<Vec<_>>())?;
        columns.set_item("t_start_s", numbers.iter().map(|&s| series[s].t_start_s).collect::<Vec<_>>())?;
        columns
            .set_item("sampling_rate_hz", numbers.iter().map(|&s| series[s].sampling_rate_hz).collect::<Vec<_>>())?;
        let arrays: Vec<Bound<'py, PyArray1<f32>>> = values.iter().map(|(_, v)| PyArray1::from_slice(py, v)).collect();
        let pa = py.import("pyarrow")?;
        let list_type = pa.call_method1("list_", (pa.call_method0("float32")?,))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("type", list_type)?;
        columns.set_item("values", pa.call_method("array", (PyList::new(py, arrays)?,), Some(&kwargs))?)?;
        let table = pa.getattr("table")?.call1((columns,));
        // the decode buffers serve the next block this worker reads
        blocks.give_back(values);
        table
    }

    /// Row group `i` of the selection as a `pyarrow.Table` of chunk rows
    /// (the columns of `Version.scan`).
    fn read_row_group<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        if i >= self.inner.blocks().row_groups() {
            return Err(to_py(timef::Error::InvalidOption {
                option: "row_group",
                reason: format!("{i} is not below {}", self.inner.blocks().row_groups()),
            }));
        }
        let plan = Arc::clone(&self.inner);
        let batches = py.detach(|| plan.blocks().read_row_group(i)).map_err(to_py)?;
        let schema = timef::scan::scan_schema().to_pyarrow(py)?;
        let batches = batches.iter().map(|b| b.to_pyarrow(py)).collect::<PyResult<Vec<_>>>()?;
        py.import("pyarrow")?.getattr("Table")?.call_method1("from_batches", (batches, schema))
    }
}

impl PyWindowPlan {
    fn check_block(&self, block: usize) -> PyResult<()> {
        if block >= self.inner.blocks().len() {
            return Err(to_py(timef::Error::InvalidOption {
                option: "block",
                reason: format!("{block} is not below {}", self.inner.blocks().len()),
            }));
        }
        Ok(())
    }
}

/// A batch as a dict of numpy arrays: `time_series_id` (not with
/// `stack_channels`) and `sample_id` (lists of str), `start` (int64 `[n]`),
/// `start_s` (float64 `[n]`), `past_values` (float32 `[n, context_length]`,
/// with `stack_channels` `[n, channels, context_length]`), `future_values`
/// (the same with `prediction_length`), and with `pad`, `past_observed_mask`
/// and `future_observed_mask` (bool, shaped as the values, False where padded).
fn batch_dict<'py>(py: Python<'py>, plan: &WindowPlan, batch: WindowBatch) -> PyResult<Bound<'py, PyDict>> {
    let n = batch.len();
    let options = plan.options();
    let (context, prediction) = (options.context_length, options.prediction_length);
    let blocks = plan.blocks();
    let rows = blocks.channels().len().max(1);
    let shape = |len: usize| if options.stack_channels { vec![n, rows, len] } else { vec![n, len] };
    let out = PyDict::new(py);
    if !options.stack_channels {
        out.set_item("time_series_id", batch.stack.iter().map(|&k| blocks.stack_id(k)).collect::<Vec<_>>())?;
    }
    out.set_item("sample_id", batch.stack.iter().map(|&k| blocks.stack_sample_id(k)).collect::<Vec<_>>())?;
    out.set_item("start", PyArray1::from_vec(py, batch.start))?;
    out.set_item("start_s", PyArray1::from_vec(py, batch.start_s))?;
    if options.pad {
        // asked, not assumed: an allocation refused would abort the process
        let mask = |from: usize, len: usize| -> PyResult<Vec<bool>> {
            let values = n.saturating_mul(rows).saturating_mul(len);
            let mut mask = Vec::new();
            mask.try_reserve_exact(values).map_err(|_| {
                to_py(timef::Error::OutOfMemory {
                    what: format!("the observed mask of {n} windows of {rows} x {len} values"),
                    bytes: values as u64,
                })
            })?;
            for &p in &batch.padding {
                for _ in 0..rows {
                    mask.extend((from..from + len).map(|j| j >= p as usize));
                }
            }
            Ok(mask)
        };
        out.set_item("past_observed_mask", PyArray1::from_vec(py, mask(0, context)?).reshape(shape(context))?)?;
        out.set_item(
            "future_observed_mask",
            PyArray1::from_vec(py, mask(context, prediction)?).reshape(shape(prediction))?,
        )?;
    }
    out.set_item("past_values", PyArray1::from_vec(py, batch.past_values).reshape(shape(context))?)?;
    out.set_item("future_values", PyArray1::from_vec(py, batch.future_values).reshape(shape(prediction))?)?;
    Ok(out)
}

/// An iterator of dict batches of windows (`WindowPlan.windows`,
/// `Version.windows`): read errors raise from `next`, and so does
/// `MemoryError` when a batch's values or masks cannot be allocated.
#[pyclass(name = "Windows", module = "timef._timef", frozen)]
pub struct PyWindows {
    plan: Arc<WindowPlan>,
    windows: Mutex<timef::windows::Windows>,
    batch_size: usize,
}

#[pymethods]
impl PyWindows {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let batch = py.detach(|| {
            let mut w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
            w.next_batch(self.batch_size)
        });
        match batch {
            None => Ok(None),
            Some(Err(e)) => Err(to_py(e)),
            Some(Ok(b)) => batch_dict(py, &self.plan, b).map(Some),
        }
    }
}
