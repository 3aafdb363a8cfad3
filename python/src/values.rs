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
use pyo3::types::IntoPyDict;
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
/// array is viewed, not copied; other inputs are converted by numpy. The
/// values taken are those the Arrow connector takes (`timef::connectors`'
/// `to_f32`): floats are rounded to nearest float32, integers must be exact
/// in float32 (32- and 64-bit ones above 2^24 often are not). The array must
/// not be changed until the write that uses it ends.
///
/// Errors: `ValueError` unless the values are one-dimensional numbers
/// (integers, floats or booleans, or an object array of real numbers), with
/// the first value refused: an integer not exactly representable as float32
/// ("value k = 16777217 is not exactly representable as float32"), a finite
/// value beyond the float32 range ("value k = 1e39 is outside the float32
/// range"), a masked value of a `numpy.ma` masked array ("value k is masked
/// (missing)"; an unmasked one is taken by its data). Values numpy would
/// convert but not as numbers are refused: complex (the imaginary part would
/// be lost), `datetime64`/`timedelta64` (the unit would be lost), text, which
/// numpy would parse (`str`/`bytes` dtypes), and an object array holding
/// anything but real numbers and `None` (pandas and pyarrow strings become
/// `str` objects), in a single-field structured array's field too. numpy's
/// `TypeError` or `OverflowError` for what is not numbers or does not fit.
pub fn to_values(obj: &Bound<'_, PyAny>) -> PyResult<SeriesValues> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let arr = unmasked(&np, np.call_method1("asanyarray", (obj,))?)?;
    let source = numbers_of(&arr)?.map_err(PyValueError::new_err)?;
    let float32 = np.getattr("float32")?;
    let arr = if source.getattr("dtype")?.eq(&float32)? {
        np.call_method1("require", (&arr, float32, "CA"))?
    } else {
        // an overflow is reported below by its value, not warned of by numpy
        // (a RuntimeWarning, or an exception under `-W error`)
        let errstate = np.call_method("errstate", (), Some(&[("over", "ignore")].into_py_dict(py)?))?;
        errstate.call_method0("__enter__")?;
        let converted = np.call_method1("require", (&arr, float32, "CA"));
        errstate.call_method1("__exit__", (py.None(), py.None(), py.None()))?;
        converted?
    };
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(PyValueError::new_err(format!("must be one-dimensional, got {ndim} dimensions")));
    }
    let arr = arr.cast_into::<PyArray1<f32>>().map_err(PyErr::from)?;
    if let Some(reason) = not_exact(&np, &source, arr.readonly().as_slice()?)? {
        return Err(PyValueError::new_err(reason));
    }
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

/// `arr`'s data when it is a `numpy.ma` masked array with no value masked
/// (numpy would convert the masked values' data as if they were there);
/// `arr` itself when it is not a masked array. A masked value is missing, as
/// a null is to the Arrow connector.
fn unmasked<'py>(np: &Bound<'py, PyModule>, arr: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let ma = np.getattr("ma")?;
    if !arr.is_instance(&ma.getattr("MaskedArray")?)? {
        return Ok(arr);
    }
    let mask = ma.call_method1("getmaskarray", (&arr,))?;
    // (an array of other dimensions is refused by them)
    if mask.getattr("ndim")?.extract::<usize>()? == 1 && mask.call_method0("any")?.is_truthy()? {
        let k: usize = mask.call_method0("argmax")?.extract()?;
        return Err(PyValueError::new_err(format!("value {k} is masked (missing)")));
    }
    ma.call_method1("getdata", (&arr,))
}

/// Fields of single-field structured arrays looked through, at most (32):
/// numpy converts such an array by its field's values.
const MAX_FIELD_DEPTH: usize = 32;

/// The array whose values numpy converts for `arr` (a numpy array): `arr`,
/// or the field a single-field structured array is converted by; or why its
/// values are refused though numpy would convert them ([`to_values`]). An
/// array numpy refuses itself is returned as it is. A field that holds
/// several values a row is refused (numpy would keep the first).
fn numbers_of<'py>(arr: &Bound<'py, PyAny>) -> PyResult<Result<Bound<'py, PyAny>, String>> {
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
        return Ok(reason.map_or(Ok(arr), Err));
    }
    Ok(Err(format!("structured values nested more than {MAX_FIELD_DEPTH} fields deep are not taken")))
}

/// 2^63 as float32 (exact).
const TWO_TO_63: f32 = 9_223_372_036_854_775_808.0;

/// Why `values` (`source`'s values converted to float32, one-dimensional)
/// do not hold `source`'s numbers as the Arrow connector requires: the
/// first integer float32 does not hold exactly, or finite number beyond the
/// float32 range (numpy makes it infinite); `None` when they do. Integers
/// of 1 or 2 bytes, booleans and float32 or narrower are always exact and
/// not looked at; a NaN or infinity of the source is refused later as not
/// finite. Integer arrays are compared whole (a copy as 64-bit integers);
/// float arrays only where a value became infinite; object arrays element by
/// element, an integer compared exactly by Python (`int == float`).
fn not_exact(np: &Bound<'_, PyModule>, source: &Bound<'_, PyAny>, values: &[f32]) -> PyResult<Option<String>> {
    let not_exact =
        |k: usize, x: &dyn std::fmt::Display| format!("value {k} = {x} is not exactly representable as float32");
    let outside = |k: usize, x: &dyn std::fmt::Display| format!("value {k} = {x} is outside the float32 range");
    let dtype = source.getattr("dtype")?;
    let itemsize: usize = dtype.getattr("itemsize")?.extract()?;
    let as_contiguous = |to: &str| -> PyResult<Bound<'_, PyAny>> {
        np.call_method("ascontiguousarray", (source,), Some(&[("dtype", np.getattr(to)?)].into_py_dict(source.py())?))
    };
    match dtype.getattr("kind")?.extract::<String>()?.as_str() {
        // (`as` saturates: 2^63 and 2^64, the float32 of the largest
        // integers, are out of range, not equal; a comparison with NaN fails)
        "i" if itemsize >= 4 => first_inexact(&as_contiguous("int64")?, values, |x: i64, y| {
            (-TWO_TO_63..TWO_TO_63).contains(&y) && y as i64 == x
        }),
        "u" if itemsize >= 4 => first_inexact(&as_contiguous("uint64")?, values, |x: u64, y| {
            (0.0..2.0 * TWO_TO_63).contains(&y) && y as u64 == x
        }),
        "f" if itemsize > 4 => match values.iter().position(|y| y.is_infinite()) {
            Some(k) => {
                let x: f64 = source.get_item(k)?.extract()?;
                Ok(x.is_finite().then(|| outside(k, &format!("{x:?}"))))
            }
            None => Ok(None),
        },
        "O" => {
            let py = source.py();
            let int_like = pyo3::types::PyTuple::new(
                py,
                [py.get_type::<pyo3::types::PyInt>().into_any(), np.getattr("integer")?],
            )?;
            for (k, (x, &y)) in source.try_iter()?.zip(values).enumerate() {
                let x = x?;
                if x.is_instance(int_like.as_any())? {
                    // Python compares an int and a float exactly
                    let x = x.call_method0("__index__")?;
                    if !x.eq(f64::from(y))? {
                        let x = x.str()?;
                        return Ok(Some(if y.is_infinite() { outside(k, &x) } else { not_exact(k, &x) }));
                    }
                } else if y.is_infinite() && !x.is_none() {
                    let x: f64 = x.extract()?;
                    if x.is_finite() {
                        return Ok(Some(outside(k, &format!("{x:?}"))));
                    }
                }
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// [`not_exact`]'s reason for the first of `ints` (a contiguous 1-D numpy
/// array of `T`) that its float32 in `values` does not hold exactly
/// (`exact(x, y)`: float32 `y` is integer `x`).
fn first_inexact<T: numpy::Element + Copy + std::fmt::Display>(
    ints: &Bound<'_, PyAny>,
    values: &[f32],
    exact: impl Fn(T, f32) -> bool,
) -> PyResult<Option<String>> {
    let ints = ints.cast::<PyArray1<T>>().map_err(PyErr::from)?.readonly();
    let ints = ints.as_slice()?;
    let k = ints.iter().zip(values).position(|(&x, &y)| !exact(x, y));
    Ok(k.map(|k| format!("value {k} = {} is not exactly representable as float32", ints[k])))
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
