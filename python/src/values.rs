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
/// (integers, floats or booleans, or an object array of real numbers). Values
/// numpy would convert but not as numbers are refused: complex (the imaginary
/// part would be lost), `datetime64`/`timedelta64` (the unit would be lost),
/// text, which numpy would parse (`str`/`bytes` dtypes), and an object array
/// holding anything but real numbers and `None` (pandas and pyarrow strings
/// become `str` objects), in a single-field structured array's field too. numpy's
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

/// Fields of single-field structured arrays looked through, at most (32):
/// numpy converts such an array by its field's values.
const MAX_FIELD_DEPTH: usize = 32;

/// Why the values of `arr` (a numpy array) are refused though numpy would
/// convert them ([`to_values`]); `None` when they are numbers, or when numpy
/// refuses them itself. A single-field structured array is judged by its
/// field's values, unless the field holds several values a row (numpy would
/// keep the first).
fn refused(arr: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let mut arr = arr.clone();
    for _ in 0..=MAX_FIELD_DEPTH {
        let dtype = arr.getattr("dtype")?;
        let reason = match dtype.getattr("kind")?.extract::<String>()?.as_str() {
            "c" => Some("complex values are not taken (their imaginary part would be lost)".to_string()),
            "M" | "m" => Some(format!(
                "{} values are not taken (their unit would be lost): convert them to numbers",
                dtype.str()?
            )),
            "U" | "S" | "T" => Some(format!("text values ({}) are not taken: numbers only", dtype.str()?)),
            "O" => not_a_number(&arr)?.map(|(k, name)| format!("value {k} is not a number ({name})")),
            "V" => match dtype.getattr("names")?.extract::<Option<Vec<String>>>()?.as_deref() {
                Some([name]) => {
                    let field = arr.get_item(name)?;
                    let ndim = |a: &Bound<'_, PyAny>| a.getattr("ndim").and_then(|n| n.extract::<usize>());
                    if ndim(&field)? != ndim(&arr)? {
                        Some(format!("structured values ({}) of several values a row are not taken", dtype.str()?))
                    } else {
                        arr = field;
                        continue;
                    }
                }
                _ => None,
            },
            _ => None,
        };
        return Ok(reason);
    }
    Ok(Some(format!("structured values nested more than {MAX_FIELD_DEPTH} fields deep are not taken")))
}

/// The position and type name of the first element of `arr`, an object
/// array, that is not a number. Numbers here are real numbers
/// (`numbers.Real`, but not numpy's `timedelta64`, which registers as one),
/// `decimal.Decimal`, numpy bools, and `None` (missing: NaN, refused later as
/// not finite); numpy would also convert text (parsing it), complex numbers,
/// dates and 0-d arrays. A 0-d array's value, or a multi-dimensional one's
/// rows, are refused later by their dimensions.
fn not_a_number(arr: &Bound<'_, PyAny>) -> PyResult<Option<(usize, String)>> {
    if arr.getattr("ndim")?.extract::<usize>()? != 1 {
        return Ok(None);
    }
    let py = arr.py();
    let np = py.import("numpy")?;
    let numbers = pyo3::types::PyTuple::new(
        py,
        [py.import("numbers")?.getattr("Real")?, py.import("decimal")?.getattr("Decimal")?, np.getattr("bool_")?],
    )?;
    let timedelta = np.getattr("timedelta64")?;
    for (k, x) in arr.try_iter()?.enumerate() {
        let x = x?;
        if !x.is_none() && (!x.is_instance(numbers.as_any())? || x.is_instance(&timedelta)?) {
            return Ok(Some((k, x.get_type().name()?.to_string())));
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
