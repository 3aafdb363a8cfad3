//! The Python exceptions and the one mapping from `timef::Error` to them.
//!
//! Python users expect built-in exception types: `FileExistsError` for an
//! existing version, `ValueError` subclasses for bad input (with the id, field
//! and reason as attributes), `OSError` (with `errno` and `filename`) for I/O.
//! A Python exception raised inside a loader or progress callback travels
//! through the core boxed in its error and comes back unchanged.

use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyMemoryError, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyList;
use timef::error::PartProblem;
use timef::Error;

pyo3::create_exception!(
    timef,
    TimeFValidationError,
    PyValueError,
    "A dataset entity breaks a rule of the format. Attributes: `id` (the entity, or a path \
     component), `field` (the offending field or option), `reason` (the rule it breaks)."
);
pyo3::create_exception!(
    timef,
    TimeFEditError,
    PyValueError,
    "A copy-on-write edit was refused before any I/O. Attributes: `id` and `field` (the first \
     blocker's entity and field, e.g. the unknown id and \"remove_sample_ids\", or a task id and \
     \"target_sample_id\"), `reason` (every blocker, joined with \"; \"), `blockers` (list of str, one \
     per blocker), `ids` and `fields` (lists of str, each blocker's entity and field). The message \
     shows the first 10 blockers and counts the rest."
);
pyo3::create_exception!(
    timef,
    TimeFInputError,
    PyValueError,
    "An input file of a connector is malformed. Attributes: `path` (str), `line` (1-based int or \
     None), `reason`."
);
pyo3::create_exception!(
    timef,
    NotAVersionError,
    PyValueError,
    "The directory is not a committed TimeF version. Attributes: `path`, `reason`."
);
pyo3::create_exception!(
    timef,
    CorruptVersionError,
    PyValueError,
    "Stored bytes do not match what the manifest or the format promises. Attributes: `path`, `reason`."
);

pyo3::create_exception!(
    timef,
    PartRecordError,
    PyValueError,
    "A distributed write's part, part record or task was refused (commit or write_part); nothing \
     was published. Attributes: `write_id`, `part` (int or None), `shard` (int or None), `problem` \
     (\"missing_shard\", \"duplicate_shard\", \"unknown_shard\", \"hash_mismatch\", \"size_mismatch\", \
     \"index_mismatch\", \"unplanned_series\", \"missing_series\", \"wrong_write\", \"plan_mismatch\", \
     \"stray_file\", \"statistics_mismatch\"), `reason`."
);

/// The `problem` attribute of a `PartRecordError`.
fn problem_name(p: &PartProblem) -> &'static str {
    match p {
        PartProblem::MissingShard => "missing_shard",
        PartProblem::DuplicateShard => "duplicate_shard",
        PartProblem::UnknownShard(_) => "unknown_shard",
        PartProblem::HashMismatch { .. } => "hash_mismatch",
        PartProblem::SizeMismatch { .. } => "size_mismatch",
        PartProblem::IndexMismatch(_) => "index_mismatch",
        PartProblem::UnplannedSeries(_) => "unplanned_series",
        PartProblem::MissingSeries(_) => "missing_series",
        PartProblem::WrongWrite(_) => "wrong_write",
        PartProblem::PlanMismatch(_) => "plan_mismatch",
        PartProblem::StrayFile(_) => "stray_file",
        PartProblem::WrongStaging(_) => "wrong_staging",
        PartProblem::StatisticsMismatch { .. } => "statistics_mismatch",
        _ => "other",
    }
}

/// Sets `attrs` on the exception instance of `err`.
fn with_attrs<'py>(py: Python<'py>, err: PyErr, attrs: &[(&str, Bound<'py, PyAny>)]) -> PyErr {
    let value = err.value(py);
    for (k, v) in attrs {
        // an exception instance always has a __dict__; a failure here would only drop an attribute
        let _ = value.setattr(*k, v);
    }
    err
}

/// POSIX `ENOENT`: the errno of an error of kind `NotFound` that carries none
/// (a distributed write that is over), so Python raises `FileNotFoundError`.
const ENOENT: i32 = 2;

/// POSIX `EIO`: the errno of an I/O failure that carries none of its own (a
/// short read, an object store's or a codec's failure), so that every
/// `OSError` names its file in `filename` and prints it once.
const EIO: i32 = 5;
const EINTR: i32 = 4;

/// An I/O error on `path` as Python raises its own: the subclass the errno
/// picks (`ENOENT` for a `NotFound` without one, `EINTR` for an
/// `Interrupted` one, else `EIO`), printed
/// `[Errno 21] Is a directory: 'path'` with the OS's or the error's own text.
fn io_error(path: &std::path::Path, source: &std::io::Error) -> PyErr {
    let fallback = match source.kind() {
        std::io::ErrorKind::NotFound => ENOENT,
        // a write stopped by a Ctrl-C (`InterruptedError`)
        std::io::ErrorKind::Interrupted => EINTR,
        _ => EIO,
    };
    let text = source.to_string();
    // without Rust's " (os error N)", which `[Errno N]` already says
    let strerror = text.rsplit_once(" (os error ").map_or(text.as_str(), |(t, _)| t);
    // a store's failure inside a read carries the URL in its text: printed once, as `filename`
    PyOSError::new_err(os_args(source.raw_os_error().unwrap_or(fallback), strerror, path))
}

/// `(errno, strerror, filename)` of an `OSError`: Python prints
/// `[Errno N] strerror: 'filename'`, so the path is taken out of the message
/// to be printed once (`version already exists: '/r/d/v1'`).
fn os_args(errno: i32, message: &str, path: &std::path::Path) -> (i32, String, String) {
    let path = path.display().to_string();
    let strerror = if path.is_empty() {
        message.to_string()
    } else {
        message.replacen(&path, "", 1).replacen(": : ", ": ", 1).replacen(" : ", ": ", 1)
    };
    (errno, strerror.trim_end_matches([':', ' ']).to_string(), path)
}

/// The Python exception for `e`. Boxed Python exceptions (from a loader or a
/// progress callback) are returned as they were raised, traceback included.
pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let s = |v: &str| v.into_pyobject(py).map(|o| o.into_any()).unwrap_or_else(|_| py.None().into_bound(py));
        let message = e.to_string();
        let e_not_found = e.is_object_not_found();
        match e {
            Error::AlreadyExists { path } => PyFileExistsError::new_err(os_args(17, &message, &path)),
            Error::NotAVersion { path, reason } => with_attrs(
                py,
                NotAVersionError::new_err(message),
                &[("path", s(&path.display().to_string())), ("reason", s(&reason))],
            ),
            Error::Corrupt { path, reason } => with_attrs(
                py,
                CorruptVersionError::new_err(message),
                &[("path", s(&path.display().to_string())), ("reason", s(&reason))],
            ),
            Error::Validation { id, field, reason } => with_attrs(
                py,
                TimeFValidationError::new_err(message),
                &[("id", s(&id)), ("field", s(field)), ("reason", s(&reason))],
            ),
            Error::InvalidOption { option, reason } => with_attrs(
                py,
                TimeFValidationError::new_err(message),
                &[("id", py.None().into_bound(py)), ("field", s(option)), ("reason", s(&reason))],
            ),
            Error::InvalidInput { path, line, reason } => {
                let line = match line {
                    Some(l) => l.into_pyobject(py).map(|o| o.into_any()).unwrap_or_else(|_| py.None().into_bound(py)),
                    None => py.None().into_bound(py),
                };
                with_attrs(
                    py,
                    TimeFInputError::new_err(message),
                    &[("path", s(&path.display().to_string())), ("line", line), ("reason", s(&reason))],
                )
            }
            Error::Loader { series_id, source } => match source.downcast::<PyErr>() {
                Ok(py_err) => *py_err,
                Err(other) => with_attrs(
                    py,
                    TimeFValidationError::new_err(message),
                    &[("id", s(&series_id)), ("field", s("values")), ("reason", s(&other.to_string()))],
                ),
            },
            Error::Aborted { source } => match source.downcast::<PyErr>() {
                Ok(py_err) => *py_err,
                Err(_) => PyRuntimeError::new_err(message),
            },
            Error::Edit { blockers } => {
                let reasons: Vec<&str> = blockers.iter().map(|b| b.reason.as_str()).collect();
                let ids: Vec<&str> = blockers.iter().map(|b| b.id.as_str()).collect();
                let fields: Vec<&str> = blockers.iter().map(|b| b.field).collect();
                let list =
                    |v: &[&str]| PyList::new(py, v).map(|l| l.into_any()).unwrap_or_else(|_| py.None().into_bound(py));
                let (id, field) = blockers.first().map(|b| (b.id.as_str(), b.field)).unwrap_or(("", ""));
                with_attrs(
                    py,
                    TimeFEditError::new_err(message),
                    &[
                        ("id", s(id)),
                        ("field", s(field)),
                        ("reason", s(&reasons.join("; "))),
                        ("blockers", list(&reasons)),
                        ("ids", list(&ids)),
                        ("fields", list(&fields)),
                    ],
                )
            }
            Error::Io { path, source } => io_error(&path, &source),
            Error::Parquet { path, .. } | Error::Arrow { path, .. } => {
                PyOSError::new_err(os_args(EIO, &message, &path))
            }
            // a URL the user typed: a ValueError naming it (never a credential)
            Error::InvalidUrl { url, reason } => with_attrs(
                py,
                TimeFValidationError::new_err(message),
                &[("id", s(&url)), ("field", s("root")), ("reason", s(&reason))],
            ),
            // nothing there (directory, bucket, container, prefix): the one rule of every backend
            Error::Missing { path, .. } => PyFileNotFoundError::new_err(os_args(ENOENT, &message, &path)),
            Error::UnknownStorageOption { key, close, .. } => with_attrs(
                py,
                TimeFValidationError::new_err(message),
                &[
                    ("id", s(&key)),
                    ("field", s("storage_options")),
                    ("reason", s(&format!("not a key of this store; closest: {}", close.join(", ")))),
                ],
            ),
            // an object that is not there: FileNotFoundError, as for a local file (review 24)
            Error::ObjectStore { url, .. } if e_not_found => {
                PyFileNotFoundError::new_err(os_args(ENOENT, &message, std::path::Path::new(&url)))
            }
            // the store failed (denied, network, timeout) or cannot take a write safely: an OSError naming the URL
            Error::ObjectStore { url, .. } | Error::UnsafeStore { url, .. } => {
                PyOSError::new_err(os_args(EIO, &message, std::path::Path::new(&url)))
            }
            Error::OutOfMemory { .. } => PyMemoryError::new_err(message),
            Error::Part { write_id, part, shard, problem } => {
                let int = |v: Option<u32>| match v {
                    Some(v) => v.into_pyobject(py).map(|o| o.into_any()).unwrap_or_else(|_| py.None().into_bound(py)),
                    None => py.None().into_bound(py),
                };
                with_attrs(
                    py,
                    PartRecordError::new_err(message),
                    &[
                        ("write_id", s(&write_id)),
                        ("part", int(part)),
                        ("shard", int(shard)),
                        ("problem", s(problem_name(&problem))),
                        ("reason", s(&problem.to_string())),
                    ],
                )
            }
            other => PyRuntimeError::new_err(other.to_string()),
        }
    })
}

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TimeFValidationError", py.get_type::<TimeFValidationError>())?;
    m.add("TimeFEditError", py.get_type::<TimeFEditError>())?;
    m.add("TimeFInputError", py.get_type::<TimeFInputError>())?;
    m.add("NotAVersionError", py.get_type::<NotAVersionError>())?;
    m.add("CorruptVersionError", py.get_type::<CorruptVersionError>())?;
    m.add("PartRecordError", py.get_type::<PartRecordError>())?;
    Ok(())
}
