//! `timef._timef`: the native module of the `timef` Python package, a thin
//! layer over the Rust core (no format logic here): dataset building, the
//! writer, edits, connectors, reading and verification.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_pyarrow::FromPyArrow;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use timef::connectors::{arrow::ArrowOptions, tsf::TsfOptions, ucr::UcrOptions, IdMode, OnMissing, TextEncoding};
use timef::storage::{Location, StorageOptions};

mod dataset;
mod distributed;
mod errors;
mod reader;
mod values;
mod windows;
mod writer;

use dataset::PyDataset;
use errors::to_py;

/// The core's location of `root` (`str` or `os.PathLike`): a local path, or an
/// object-store URL (`s3://`, `gs://`, `az://`, `file://`, `memory://`) whose
/// credentials and endpoint come from the environment, overridden by
/// `storage_options` (keys as `object_store` names them, e.g. `aws_region`).
/// The one place a binding turns a root into a core location.
///
/// Raises `ValueError` for `storage_options` on a local path (naming the option)
/// and `TimeFInputError`-style errors for a bad URL or an unknown option.
pub(crate) fn core_root(
    root: &Bound<'_, PyAny>,
    storage_options: Option<HashMap<String, String>>,
) -> PyResult<Location> {
    let path: PathBuf = root.extract()?;
    let text = path.to_string_lossy();
    let options: StorageOptions = storage_options.unwrap_or_default().into_iter().collect();
    let loc = Location::parse(&text, &options).map_err(to_py)?;
    refuse_options_without_settings(&text, &options)?;
    Ok(loc)
}

/// Raises `ValueError` naming the first of `options` when the place `text`
/// has no settings ([`timef::storage::takes_storage_options`]): a key given for a local path,
/// `file://` or `memory://` is a mistake to name, not to drop.
pub(crate) fn refuse_options_without_settings(text: &str, options: &StorageOptions) -> PyResult<()> {
    match (timef::storage::takes_storage_options(text), options.keys().next()) {
        (false, Some(option)) => Err(PyValueError::new_err(format!(
            "storage_options[{option:?}]: storage options apply to cloud object-store URLs (s3://, gs://, az://), \
             not {text:?}"
        ))),
        _ => Ok(()),
    }
}

/// A JSON document as Python objects (`json.loads`).
pub(crate) fn json_to_py(py: Python<'_>, json: &str) -> PyResult<Py<PyAny>> {
    Ok(py.import("json")?.call_method1("loads", (json,))?.unbind())
}

/// How often [`interruptible`] looks for Python's signals.
const SIGNAL_LOOK: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs `work` without the GIL on a thread of its own while this thread looks
/// for Python's signals every [`SIGNAL_LOOK`]: on a Ctrl-C (whatever the
/// SIGINT handler raises, `KeyboardInterrupt` by default) the core is asked
/// to stop (`timef::storage::interrupt`: a write or edit aborts at its next
/// write and removes what it wrote, a verify removes its copy), `work` is
/// waited for, the request withdrawn, and the handler's exception raised.
/// When `work` had already done what it does (a commit renamed the version
/// in), the exception carries `late`'s note (Python 3.11's `add_note`), as
/// the CLI says "interrupted too late". A Ctrl-C reached Python only once a
/// long call returned, after an edit had committed.
///
/// The request is the process's: a write, edit or verify of another thread
/// running meanwhile stops too, with `InterruptedError` (errno `EINTR`).
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> timef::Result<T> + Send,
    late: impl FnOnce(&T) -> Option<String>,
) -> PyResult<T> {
    // a Ctrl-C while the arguments were taken in stops the call before it starts
    // (review 131: a short call found it only once it had committed)
    py.check_signals()?;
    std::thread::scope(|scope| {
        let (done, finished) = std::sync::mpsc::channel();
        // (a receiver is not shared between threads, as `detach` asks, unless locked)
        let finished = std::sync::Mutex::new(finished);
        let handle = scope.spawn(move || {
            let out = work();
            let _ = done.send(());
            out
        });
        let joined = |handle: std::thread::ScopedJoinHandle<'_, timef::Result<T>>| match handle.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        // the handler's exception, with `late`'s note when `out` did its work
        let raise = |signal: PyErr, out: &timef::Result<T>| {
            if let Some(note) = out.as_ref().ok().and_then(late) {
                let _ = signal.value(py).call_method1("add_note", (note,));
            }
            Err(signal)
        };
        loop {
            let waited = py.detach(|| match finished.lock() {
                Ok(finished) => finished.recv_timeout(SIGNAL_LOOK),
                Err(_) => Err(std::sync::mpsc::RecvTimeoutError::Disconnected),
            });
            if !matches!(waited, Err(std::sync::mpsc::RecvTimeoutError::Timeout)) {
                // sent, or the thread ended without sending (a panic): joined,
                // then a signal that came since the last look (review 130: one
                // in the last 0.1 s was raised by Python after the call, bare)
                let out = py.detach(|| joined(handle));
                return match py.check_signals() {
                    Err(signal) => raise(signal, &out),
                    Ok(()) => out.map_err(to_py),
                };
            }
            if let Err(signal) = py.check_signals() {
                timef::storage::interrupt();
                // withdrawn whatever the work ends with, a panic included
                let out = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| joined(handle))));
                timef::storage::clear_interrupt();
                let out = out.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                return raise(signal, &out);
            }
        }
    })
}

/// [`interruptible`]'s note for a call that committed the version at `dir`.
pub(crate) fn committed_late(dir: &std::path::Path) -> Option<String> {
    Some(format!("timef: interrupted too late: {} was committed", dir.display()))
}

/// A whole-number argument of any sign (a count, size, position or seed):
/// [`Count::get`] refuses one below 0, or past its type, as
/// `TimeFValidationError` naming the argument (`field`), as every other bad
/// option is; extracted as `usize` or `u64` directly, `-1` raised a bare
/// `OverflowError` naming nothing.
#[derive(Clone, Copy)]
pub(crate) struct Count {
    value: i128,
    /// An int past i128 (2**200), kept as its sign in `value`.
    past: bool,
}

impl FromPyObject<'_, '_> for Count {
    type Error = PyErr;

    /// Any Python `int` (a `float` or `str` is refused with `TypeError`, as
    /// Python's own integer arguments are).
    fn extract(obj: Borrowed<'_, '_, PyAny>) -> PyResult<Self> {
        match obj.extract::<i128>() {
            Ok(value) => Ok(Count::of(value)),
            // an int past i128 (2**200) is refused by `get` as out of range, by
            // its sign, not as a bare OverflowError naming nothing (review 148)
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) => {
                Ok(Count { value: if obj.lt(0)? { -1 } else { i128::MAX }, past: true })
            }
            Err(e) => Err(e),
        }
    }
}

impl Count {
    /// The count `value` (a default of a signature).
    pub(crate) const fn of(value: i128) -> Count {
        Count { value, past: false }
    }

    /// The value as `T`, or the refusal naming `option`.
    pub(crate) fn get<T: TryFrom<i128>>(self, option: &'static str) -> PyResult<T> {
        T::try_from(self.value).map_err(|_| {
            // an int past i128 was kept as its sign (`extract`): not shown
            let shown = if self.past { "the value".to_string() } else { self.value.to_string() };
            let reason = match self.value < 0 {
                // not "at least 0": an option's own minimum may be 1 (review 147)
                true => format!("{shown} is negative"),
                false => format!("{shown} is too large"),
            };
            to_py(timef::Error::InvalidOption { option, reason })
        })
    }
}

/// Paths given as one path (`str` or `os.PathLike`) or as a sequence of
/// them: a `str` is one path, never a sequence of one-letter ones.
pub(crate) enum Paths {
    One(PathBuf),
    Many(Vec<PathBuf>),
}

impl FromPyObject<'_, '_> for Paths {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, '_, PyAny>) -> PyResult<Self> {
        match obj.extract::<PathBuf>() {
            Ok(one) => Ok(Paths::One(one)),
            Err(_) => obj.extract::<Vec<PathBuf>>().map(Paths::Many).map_err(|e| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "expected a path (str or os.PathLike) or a sequence of paths: {e}"
                ))
            }),
        }
    }
}

impl From<Paths> for Vec<PathBuf> {
    fn from(p: Paths) -> Self {
        match p {
            Paths::One(p) => vec![p],
            Paths::Many(p) => p,
        }
    }
}

pub(crate) fn id_mode(ids: &str) -> PyResult<IdMode> {
    match ids {
        "string" => Ok(IdMode::String),
        "uuid" => Ok(IdMode::Uuid),
        other => Err(to_py(timef::Error::InvalidOption {
            option: "ids",
            reason: format!("{other:?} is not \"string\" or \"uuid\""),
        })),
    }
}

/// A new UUIDv7 id (canonical lowercase hyphenated string).
#[pyfunction]
fn new_id() -> String {
    timef::new_id()
}

pub(crate) fn on_missing(value: &str) -> PyResult<OnMissing> {
    match value {
        "error" => Ok(OnMissing::Error),
        "drop_case" => Ok(OnMissing::DropCase),
        other => Err(to_py(timef::Error::InvalidOption {
            option: "on_missing",
            reason: format!("{other:?} is not \"error\" or \"drop_case\""),
        })),
    }
}

fn encoding(value: &str) -> PyResult<TextEncoding> {
    match value {
        "utf-8" => Ok(TextEncoding::Utf8),
        "latin-1" => Ok(TextEncoding::Latin1),
        "cp1252" => Ok(TextEncoding::Cp1252),
        other => Err(to_py(timef::Error::InvalidOption {
            option: "encoding",
            reason: format!("{other:?} is not \"utf-8\", \"latin-1\" or \"cp1252\""),
        })),
    }
}

/// A dataset from UCR/UEA `.ts` files (its loaders read lazily while writing).
#[pyfunction]
#[pyo3(signature = (paths, *, dataset_name, dataset_version, spec_type=None, sampling_rate_hz=None, ids="string",
                    on_missing="error", encoding="utf-8"))]
#[allow(clippy::too_many_arguments)]
fn read_ucr(
    py: Python<'_>,
    paths: Paths,
    dataset_name: String,
    dataset_version: String,
    spec_type: Option<String>,
    sampling_rate_hz: Option<f64>,
    ids: &str,
    on_missing: &str,
    encoding: &str,
) -> PyResult<PyDataset> {
    let opts = UcrOptions {
        name: dataset_name,
        version: dataset_version,
        spec_type,
        sampling_rate_hz,
        ids: id_mode(ids)?,
        on_missing: self::on_missing(on_missing)?,
        encoding: self::encoding(encoding)?,
        problem_name: None,
    };
    let paths: Vec<PathBuf> = paths.into();
    let d = py.detach(|| timef::connectors::ucr::read_ucr(&paths, &opts)).map_err(to_py)?;
    Ok(PyDataset::wrap(d))
}

/// A dataset from a Monash `.tsf` file.
#[pyfunction]
#[pyo3(signature = (path, *, dataset_name, dataset_version, spec_type=None, ids="string", on_missing="error",
                    encoding="utf-8"))]
#[allow(clippy::too_many_arguments)]
fn read_tsf(
    py: Python<'_>,
    path: PathBuf,
    dataset_name: String,
    dataset_version: String,
    spec_type: Option<String>,
    ids: &str,
    on_missing: &str,
    encoding: &str,
) -> PyResult<PyDataset> {
    let opts = TsfOptions {
        name: dataset_name,
        version: dataset_version,
        spec_type,
        ids: id_mode(ids)?,
        on_missing: self::on_missing(on_missing)?,
        encoding: self::encoding(encoding)?,
    };
    let d = py.detach(|| timef::connectors::tsf::read_tsf(&path, &opts)).map_err(to_py)?;
    Ok(PyDataset::wrap(d))
}

/// A dataset from GluonTS-style data (`item_id`, `start`, `target`): a path to
/// an Arrow IPC or Parquet file, or any object exporting an Arrow stream
/// (`__arrow_c_stream__`: a pyarrow Table, a polars DataFrame, ...).
#[pyfunction]
#[pyo3(signature = (source, *, dataset_name, dataset_version, spec_type=None, sampling_rate_hz=None, ids="string",
                    on_missing="error"))]
#[allow(clippy::too_many_arguments)]
fn read_arrow(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    dataset_name: String,
    dataset_version: String,
    spec_type: Option<String>,
    sampling_rate_hz: Option<f64>,
    ids: &str,
    on_missing: &str,
) -> PyResult<PyDataset> {
    let opts = ArrowOptions {
        name: dataset_name,
        version: dataset_version,
        spec_type,
        sampling_rate_hz,
        ids: id_mode(ids)?,
        on_missing: self::on_missing(on_missing)?,
    };
    let d = if source.hasattr("__arrow_c_stream__")? {
        let reader = RecordBatchStreamReader::from_pyarrow_bound(source)?;
        let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let label = PathBuf::from(format!("<{}>", source.get_type().name()?));
        py.detach(|| timef::connectors::arrow::read_arrow_batches(batches, &label, &opts))
    } else {
        let path: PathBuf = source.extract()?;
        py.detach(|| timef::connectors::arrow::read_arrow(&path, &opts))
    };
    Ok(PyDataset::wrap(d.map_err(to_py)?))
}

#[pymodule]
fn _timef(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDataset>()?;
    m.add_class::<writer::PyWriter>()?;
    m.add_class::<writer::PyProgressEvent>()?;
    m.add_class::<reader::PyVersion>()?;
    m.add_class::<windows::PyWindowPlan>()?;
    m.add_class::<windows::PyWindows>()?;
    m.add_function(wrap_pyfunction!(new_id, m)?)?;
    m.add_function(wrap_pyfunction!(read_ucr, m)?)?;
    m.add_function(wrap_pyfunction!(read_tsf, m)?)?;
    m.add_function(wrap_pyfunction!(read_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(writer::edit_version, m)?)?;
    m.add_function(wrap_pyfunction!(reader::open, m)?)?;
    m.add_function(wrap_pyfunction!(reader::verify, m)?)?;
    m.add_class::<distributed::PyDistributedWrite>()?;
    m.add_class::<distributed::PyPartTask>()?;
    m.add_class::<distributed::PyPartRouter>()?;
    m.add_class::<distributed::PyPartRecord>()?;
    m.add_function(wrap_pyfunction!(distributed::plan, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::split_parts, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::write_part, m)?)?;
    m.add("DEFAULT_SHARD_TARGET_BYTES", timef::writer::DEFAULT_SHARD_TARGET_BYTES)?;
    m.add("DEFAULT_ROW_GROUP_TARGET_BYTES", timef::writer::DEFAULT_ROW_GROUP_TARGET_BYTES)?;
    m.add("DEFAULT_CHUNK_MAX_BYTES", timef::writer::DEFAULT_CHUNK_MAX_BYTES)?;
    m.add("DEFAULT_COMPRESSION", "zstd")?;
    m.add("DEFAULT_COMPRESSION_LEVEL", timef::writer::DEFAULT_COMPRESSION_LEVEL)?;
    m.add("DEFAULT_SPEC_TYPE", timef::connectors::DEFAULT_SPEC_TYPE)?;
    m.add("DEFAULT_SAMPLING_RATE_HZ", timef::connectors::DEFAULT_SAMPLING_RATE_HZ)?;
    m.add("DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS", timef::windows::DEFAULT_SHUFFLE_BUFFER_ROW_GROUPS)?;
    m.add("FORMAT_VERSION", timef::manifest::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    Ok(())
}
