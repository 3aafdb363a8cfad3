//! Series values across the boundary: numpy / Arrow / buffer-protocol objects
//! into the core's float32 buffers, and the core's buffers back into numpy,
//! without a copy where the memory allows.

use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;
use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};
use timef::dataset::SeriesValues;

/// Keeps a numpy array alive while the core holds a view of its memory. The
/// reference is released through PyO3's pool when the last view drops on a
/// thread without the GIL (an encoder thread).
struct NumpyOwner {
    _array: AssertUnwindSafe<Py<PyArray1<f32>>>,
}

/// `obj` as float32 values: anything `numpy.require(obj, float32, "CA")`
/// accepts (numpy arrays, sequences, pyarrow and polars arrays through
/// `__array__`, buffer-protocol objects). A C-contiguous, aligned float32
/// array is viewed, not copied; other inputs are converted by numpy
/// (float64 is rounded to float32). The array must not be changed until the
/// write that uses it ends.
///
/// Errors: `ValueError` unless the values are one-dimensional numbers
/// (integers, floats or booleans, or objects numpy converts to float). Values
/// numpy would convert but not as numbers are refused: complex (the imaginary
/// part would be lost), `datetime64`/`timedelta64` (the unit would be lost),
/// and text, which numpy would parse: `str`/`bytes` dtypes, and `str`,
/// `bytes`, `bytearray` or `memoryview` objects (what pandas and pyarrow
/// strings become), in a single-field structured array's field too. numpy's
/// `TypeError` or `OverflowError` for what is not numbers or does not fit.
pub fn to_values(obj: &Bound<'_, PyAny>) -> PyResult<SeriesValues> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let arr = np.call_method1("asanyarray", (obj,))?;
    if let Some(reason) = refused(&arr)? {
        return Err(PyValueError::new_err(reason));
    }
    let arr = np.call_method1("require", (arr, np.getattr("float32")?, "CA"))?;
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(PyValueError::new_err(format!("must be one-dimensional, got {ndim} dimensions")));
    }
    let arr = arr.cast_into::<PyArray1<f32>>().map_err(PyErr::from)?;
    let len = arr.len();
    // `require(..., "CA")` returned a C-contiguous, aligned float32 array of `len` values
    let ptr = arr.data() as *mut u8;
    match NonNull::new(ptr) {
        Some(ptr) if len > 0 && (ptr.as_ptr() as usize).is_multiple_of(std::mem::align_of::<f32>()) => {
            let owner = Arc::new(NumpyOwner { _array: AssertUnwindSafe(arr.unbind()) });
            // SAFETY: ptr/len describe the array's data, which `owner` keeps alive.
            let buffer = unsafe { Buffer::from_custom_allocation(ptr, len * std::mem::size_of::<f32>(), owner) };
            Ok(SeriesValues::new(buffer, 0, len))
        }
        _ => Ok(arr.readonly().as_slice().map(|s| s.to_vec()).unwrap_or_default().into()),
    }
}

/// Why the values of `arr` (a numpy array) are refused though numpy would
/// convert them ([`to_values`]); `None` when they are numbers, or when numpy
/// refuses them itself. A single-field structured array is judged by its
/// field's values, which numpy converts.
fn refused(arr: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let dtype = arr.getattr("dtype")?;
    Ok(match dtype.getattr("kind")?.extract::<String>()?.as_str() {
        "c" => Some("complex values are not taken (their imaginary part would be lost)".to_string()),
        "M" | "m" => {
            Some(format!("{} values are not taken (their unit would be lost): convert them to numbers", dtype.str()?))
        }
        "U" | "S" | "T" => Some(format!("text values ({}) are not taken: numbers only", dtype.str()?)),
        "O" => {
            text_object(arr)?.map(|k| format!("text values (object; value {k} is text) are not taken: numbers only"))
        }
        "V" => match dtype.getattr("names")?.extract::<Option<Vec<String>>>()? {
            Some(names) if names.len() == 1 => return refused(&arr.get_item(&names[0])?),
            _ => None,
        },
        _ => None,
    })
}

/// The position of the first text element (`str`, `bytes`, `bytearray`,
/// `memoryview`: numpy parses each as a number) of `arr`, an object array; a
/// 0-d one's value, or a multi-dimensional one's rows, are refused later by
/// their dimensions.
fn text_object(arr: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if arr.getattr("ndim")?.extract::<usize>()? != 1 {
        return Ok(None);
    }
    for (k, x) in arr.try_iter()?.enumerate() {
        let x = x?;
        if x.is_instance_of::<PyString>()
            || x.is_instance_of::<PyBytes>()
            || x.is_instance_of::<PyByteArray>()
            || x.is_instance_of::<PyMemoryView>()
        {
            return Ok(Some(k));
        }
    }
    Ok(None)
}

/// `values` as a 1-D float32 numpy array: the core's allocation is handed to
/// numpy when it is the buffer's sole owner (what the reader returns), else copied.
pub fn to_numpy<'py>(py: Python<'py>, values: SeriesValues) -> Bound<'py, PyArray1<f32>> {
    match values.into_inner().into_vec::<f32>() {
        Ok(vec) => PyArray1::from_vec(py, vec),
        Err(buffer) => PyArray1::from_slice(py, buffer.typed_data::<f32>()),
    }
}
