//! Series values across the boundary: numpy / Arrow / buffer-protocol objects
//! into the core's float32 buffers, and the core's buffers back into numpy,
//! without a copy where the memory allows.

use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;
use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyList, PyTuple};
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
/// (integers, floats or booleans, or an object array of real numbers),
/// naming the first value refused:
/// - an integer float32 does not hold exactly ("value k = 16777217 is not
///   exactly representable as float32");
/// - a finite value beyond the float32 range ("value k = 1e39 is outside the
///   float32 range");
/// - a masked value of a `numpy.ma` masked array ("value k is masked
///   (missing)"; the mask is looked at first, and an array with none masked
///   is taken by its data);
/// - a `None` of an object array ("value k is None (missing)"; the first
///   `None` comes before any other refusal, as the Arrow connector refuses a
///   null first);
/// - a null of a pyarrow array or chunked array, a polars series, or a pandas
///   nullable array (missing value `pandas.NA`: `Int64`, `Float64`,
///   `boolean`, `int64[pyarrow]`, ...), series or index of one, subclasses
///   too ("value k is null (missing)"; looked at first, before numpy would
///   turn it into NaN or an object; a NaN is not a null there).
///
/// Values numpy would convert but not as numbers are refused: complex (the
/// imaginary part would be lost), `datetime64`/`timedelta64` (the unit would
/// be lost), text, which numpy would parse (`str`/`bytes` dtypes), and an
/// object array holding anything but real numbers (pandas and pyarrow
/// strings become `str` objects), in a single-field structured array's field
/// too. numpy's `TypeError` or `OverflowError` for what is not numbers or
/// does not fit.
pub fn to_values(obj: &Bound<'_, PyAny>) -> PyResult<SeriesValues> {
    let py = obj.py();
    let np = py.import("numpy")?;
    if let Some(k) = first_null(&np, obj)? {
        return Err(PyValueError::new_err(format!("value {k} is null (missing)")));
    }
    let arr = unmasked(&np, np.call_method1("asanyarray", (obj,))?)?;
    let source = numbers_of(&arr)?.map_err(PyValueError::new_err)?;
    let float32 = np.getattr("float32")?;
    let arr = if source.array.getattr("dtype")?.eq(&float32)? {
        np.call_method1("require", (&arr, float32, "CA"))?
    } else {
        // an overflow is reported below by its value, not warned of by numpy
        // (a RuntimeWarning, or an exception under `-W error`); an underflow
        // rounds to zero, as the Arrow connector rounds it
        let ignore = [("over", "ignore"), ("under", "ignore")].into_py_dict(py)?;
        let errstate = np.call_method("errstate", (), Some(&ignore))?;
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
    if let Some(reason) = inexact(&np, &source, arr.readonly().as_slice()?)? {
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

/// The position of the first null of `obj` when it is Arrow-backed data
/// whose nulls numpy would turn into NaN (pyarrow, polars, pandas' nullable
/// numbers) or into objects it cannot take (pandas' nullable booleans): a
/// pyarrow `Array` or `ChunkedArray` ([`arrow_first_null`]), a polars
/// `Series`, a pandas extension array whose missing value is `pandas.NA`
/// (one backed by pyarrow is looked at as pyarrow data), or a pandas `Series`
/// or `Index` of one; subclasses too. Other objects (numpy-backed pandas data
/// among them, whose NaN is a value here) have none. A library not imported
/// has made none of them.
fn first_null(np: &Bound<'_, PyModule>, obj: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    // what numpy converts as it is, at no cost
    if obj.is_instance(&np.getattr("ndarray")?)? || obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return Ok(None);
    }
    let modules = obj.py().import("sys")?.getattr("modules")?;
    let loaded = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        let module = modules.call_method1("get", (name,))?;
        Ok((!module.is_none()).then_some(module))
    };
    let is = |x: &Bound<'_, PyAny>, module: &Bound<'_, PyAny>, classes: &[&str]| -> PyResult<bool> {
        for class in classes {
            if x.is_instance(&module.getattr(*class)?)? {
                return Ok(true);
            }
        }
        Ok(false)
    };
    let pyarrow = loaded("pyarrow")?;
    if let Some(pa) = &pyarrow {
        if is(obj, pa, &["Array", "ChunkedArray"])? {
            return arrow_first_null(np, pa, obj);
        }
    }
    if let Some(pl) = loaded("polars")? {
        if is(obj, &pl, &["Series"])? {
            if obj.call_method0("null_count")?.extract::<u64>()? == 0 {
                return Ok(None);
            }
            return first_true(np, obj.call_method0("is_null")?);
        }
    }
    let Some(pd) = loaded("pandas")? else { return Ok(None) };
    let array = if is(obj, &pd.getattr("api")?.getattr("extensions")?, &["ExtensionArray"])? {
        obj.clone()
    } else if is(obj, &pd, &["Series", "Index"])? && !is(obj, &pd, &["MultiIndex"])? {
        obj.getattr("array")?
    } else {
        return Ok(None);
    };
    // numpy-backed data (datetime64, ...) has a numpy dtype, without `na_value`
    let dtype = array.getattr("dtype")?;
    if !dtype.hasattr("na_value")? || !dtype.getattr("na_value")?.is(&pd.getattr("NA")?) {
        return Ok(None);
    }
    // its `isna` misses a null in a dictionary's values, as pyarrow's `is_null` on an extension array does
    if let Some(pa) = &pyarrow {
        if is(&array, &pd.getattr("arrays")?, &["ArrowExtensionArray"])? {
            return arrow_first_null(np, pa, &array.call_method0("__arrow_array__")?);
        }
    }
    first_true(np, array.call_method0("isna")?)
}

/// The position of the first null of a pyarrow `Array` or `ChunkedArray`.
/// Its `null_count` tells when its type keeps every null in its validity
/// bitmaps; an extension type's storage and a dictionary's or run-end
/// encoding's values may hold more, which its `null_count` (and `is_null`
/// before pyarrow 26) leaves out: such data is looked at chunk by chunk
/// ([`chunk_first_null`]).
fn arrow_first_null(
    np: &Bound<'_, PyModule>,
    pa: &Bound<'_, PyAny>,
    obj: &Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    if counts_its_nulls(pa, obj.getattr("type")?)? {
        return counted_first_null(np, obj);
    }
    let chunks: Vec<Bound<'_, PyAny>> = match obj.is_instance(&pa.getattr("ChunkedArray")?)? {
        true => obj.getattr("chunks")?.extract()?,
        false => vec![obj.clone()],
    };
    let mut offset = 0;
    for chunk in chunks {
        let len: usize = chunk.len()?;
        if let Some(k) = chunk_first_null(np, pa, chunk)? {
            return Ok(Some(offset + k));
        }
        offset += len;
    }
    Ok(None)
}

/// True for a pyarrow type whose arrays' `null_count` counts every null:
/// not an extension type, a dictionary or a run-end encoding.
fn counts_its_nulls(pa: &Bound<'_, PyAny>, ty: Bound<'_, PyAny>) -> PyResult<bool> {
    let types = pa.getattr("types")?;
    Ok(!ty.is_instance(&pa.getattr("ExtensionType")?)?
        && !types.call_method1("is_dictionary", (&ty,))?.is_truthy()?
        && !types.call_method1("is_run_end_encoded", (&ty,))?.is_truthy()?)
}

/// The position of the first null of one pyarrow array: an extension array
/// by its storage; a dictionary array decoded when its dictionary may hold a
/// null, and a run-end-encoded one when its values may (their nulls then
/// count once the array is dense), else by `null_count`. An array pyarrow
/// cannot decode (a run-end-encoded dictionary, ...) is judged by `is_null`
/// where pyarrow implements it, else left to numpy, as before.
fn chunk_first_null<'py>(
    np: &Bound<'py, PyModule>,
    pa: &Bound<'py, PyAny>,
    mut chunk: Bound<'py, PyAny>,
) -> PyResult<Option<usize>> {
    let (extension, types) = (pa.getattr("ExtensionArray")?, pa.getattr("types")?);
    let not_implemented = pa.getattr("lib")?.getattr("ArrowNotImplementedError")?;
    // values that may hold a null: any whose type does not count its own
    let may_hold_a_null = |values: Bound<'py, PyAny>| -> PyResult<bool> {
        Ok(!counts_its_nulls(pa, values.getattr("type")?)? || values.getattr("null_count")?.extract::<u64>()? > 0)
    };
    loop {
        let ty = chunk.getattr("type")?;
        let decoded = if chunk.is_instance(&extension)? {
            Ok(chunk.getattr("storage")?)
        } else if types.call_method1("is_dictionary", (&ty,))?.is_truthy()? {
            if !may_hold_a_null(chunk.getattr("dictionary")?)? {
                break;
            }
            chunk.call_method0("dictionary_decode")
        } else if types.call_method1("is_run_end_encoded", (&ty,))?.is_truthy()? {
            if !may_hold_a_null(chunk.getattr("values")?)? {
                return Ok(None);
            }
            pa.getattr("compute")?.call_method1("run_end_decode", (&chunk,))
        } else {
            break;
        };
        chunk = match decoded {
            Ok(dense) => dense,
            // not decoded (a run-end-encoded dictionary): `is_null` may tell, from pyarrow 26
            Err(e) if e.is_instance(chunk.py(), &not_implemented) => {
                return match chunk.call_method0("is_null") {
                    Ok(mask) => first_true(np, mask),
                    Err(e) if e.is_instance(chunk.py(), &not_implemented) => Ok(None),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
    }
    counted_first_null(np, &chunk)
}

/// The position of the first null of a pyarrow array or chunked array whose
/// `null_count` counts its every null: none when that is 0, else by `is_null`.
fn counted_first_null(np: &Bound<'_, PyModule>, arr: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if arr.getattr("null_count")?.extract::<u64>()? == 0 {
        return Ok(None);
    }
    first_true(np, arr.call_method0("is_null")?)
}

/// The position of the first true value of a one-dimensional boolean `mask`
/// (any array numpy converts), if any.
fn first_true(np: &Bound<'_, PyModule>, mask: Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let mask = np.call_method1("asarray", (mask,))?;
    if mask.getattr("ndim")?.extract::<usize>()? != 1 || !mask.call_method0("any")?.is_truthy()? {
        return Ok(None);
    }
    Ok(Some(mask.call_method0("argmax")?.extract()?))
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
    if ma.call_method1("getmask", (&arr,))?.is(&ma.getattr("nomask")?) {
        return ma.call_method1("getdata", (&arr,));
    }
    // a structured array's row is masked when its fields are (numpy converts
    // only a single-field one, [`numbers_of`])
    let mask = match arr.getattr("dtype")?.getattr("names")?.is_none() {
        true => ma.call_method1("getmaskarray", (&arr,))?,
        false => arr.getattr("recordmask")?,
    };
    // (an array of other dimensions is refused by them; a 0-d structured
    // one's record mask is not 0-d)
    if arr.getattr("ndim")?.extract::<usize>()? == 1 {
        if let Some(k) = first_true(np, mask)? {
            return Err(PyValueError::new_err(format!("value {k} is masked (missing)")));
        }
    }
    ma.call_method1("getdata", (&arr,))
}

/// Fields of single-field structured arrays looked through, at most (32):
/// numpy converts such an array by its field's values.
const MAX_FIELD_DEPTH: usize = 32;

/// The values numpy converts for an array ([`numbers_of`]).
struct Numbers<'py> {
    /// The array, or the field a single-field structured array is converted by.
    array: Bound<'py, PyAny>,
    /// An object array's integers, by position, to compare with their float32.
    ints: Vec<(usize, Int<'py>)>,
}

/// An integer of an object array: within `i64`, or a Python `int`.
enum Int<'py> {
    Small(i64),
    Big(Bound<'py, PyAny>),
}

/// The values numpy converts for `arr` (a numpy array), or why they are
/// refused though numpy would convert them ([`to_values`]). An array numpy
/// refuses itself is returned as it is. A field that holds several values a
/// row is refused (numpy would keep the first).
fn numbers_of<'py>(arr: &Bound<'py, PyAny>) -> PyResult<Result<Numbers<'py>, String>> {
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
            "O" => match object_numbers(&arr)? {
                Ok(ints) => return Ok(Ok(Numbers { array: arr, ints })),
                Err(reason) => Some(reason),
            },
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
        return Ok(reason.map_or(Ok(Numbers { array: arr, ints: Vec::new() }), Err));
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
/// float arrays only where a value became infinite; an object array's
/// integers one by one (a Python `int` beyond `i64` by Python, which
/// compares an `int` and a `float` exactly).
fn inexact(np: &Bound<'_, PyModule>, source: &Numbers<'_>, values: &[f32]) -> PyResult<Option<String>> {
    let dtype = source.array.getattr("dtype")?;
    let itemsize: usize = dtype.getattr("itemsize")?.extract()?;
    let as_contiguous = |to: &str| -> PyResult<Bound<'_, PyAny>> {
        let to = [("dtype", np.getattr(to)?)].into_py_dict(np.py())?;
        np.call_method("ascontiguousarray", (&source.array,), Some(&to))
    };
    // (`as` saturates: 2^63 and 2^64, the float32 of the largest integers,
    // are out of range, not equal; a comparison with NaN fails)
    let exact_i64 = |x: i64, y: f32| (-TWO_TO_63..TWO_TO_63).contains(&y) && y as i64 == x;
    match dtype.getattr("kind")?.extract::<String>()?.as_str() {
        "i" if itemsize >= 4 => {
            first_inexact(&as_contiguous("int64")?, values, |x: i64| x.unsigned_abs() <= 1 << 24, exact_i64)
        }
        "u" if itemsize >= 4 => first_inexact(
            &as_contiguous("uint64")?,
            values,
            |x: u64| x <= 1 << 24,
            |x: u64, y| (0.0..2.0 * TWO_TO_63).contains(&y) && y as u64 == x,
        ),
        "f" if itemsize > 4 => first_outside(&source.array, values, &[]),
        "O" => {
            let mut int_refused = None;
            for (k, x) in &source.ints {
                let y = values.get(*k).copied().unwrap_or(f32::NAN);
                let exact = match x {
                    Int::Small(x) => exact_i64(*x, y),
                    Int::Big(x) => x.eq(f64::from(y))?,
                };
                if !exact {
                    let x = match x {
                        Int::Small(x) => x.to_string(),
                        Int::Big(x) => x.str()?.to_string(),
                    };
                    int_refused = Some((*k, if y.is_infinite() { outside(&x) } else { not_exact(&x) }));
                    break;
                }
            }
            let ints: Vec<usize> = source.ints.iter().map(|(k, _)| *k).collect();
            let bound = int_refused.as_ref().map_or(values.len(), |(k, _)| *k);
            Ok(match first_outside(&source.array, values.get(..bound).unwrap_or(values), &ints)? {
                Some(reason) => Some(reason),
                None => int_refused.map(|(k, reason)| format!("value {k} = {reason}")),
            })
        }
        _ => Ok(None),
    }
}

/// "`x` is not exactly representable as float32", said of an integer.
fn not_exact(x: &str) -> String {
    format!("{x} is not exactly representable as float32")
}

/// "`x` is outside the float32 range", said of a value.
fn outside(x: &str) -> String {
    format!("{x} is outside the float32 range")
}

/// [`inexact`]'s reason for the first finite value of `source` (not at a
/// position of `skip`, sorted) whose float32 in `values` is infinite. A value
/// is finite when it equals itself and neither infinity, compared by Python
/// (a `longdouble` or `Decimal` beyond the float64 range is finite too).
fn first_outside(source: &Bound<'_, PyAny>, values: &[f32], skip: &[usize]) -> PyResult<Option<String>> {
    // (a fold, not a search that stops, is vectorized)
    if !values.iter().fold(false, |any, y| any | y.is_infinite()) {
        return Ok(None);
    }
    for k in (0..values.len()).filter(|&k| values[k].is_infinite() && skip.binary_search(&k).is_err()) {
        let x = source.get_item(k)?;
        if !x.eq(&x)? || x.eq(f64::INFINITY)? || x.eq(f64::NEG_INFINITY)? {
            continue;
        }
        // as the Arrow connector writes a float64 (`1e39`), else as Python does
        let x = match x.extract::<f64>() {
            Ok(f) if f.is_finite() => format!("{f:?}"),
            _ => x.str()?.to_string(),
        };
        return Ok(Some(format!("value {k} = {}", outside(&x))));
    }
    Ok(None)
}

/// [`inexact`]'s reason for the first of `ints` (a contiguous 1-D numpy
/// array of `T`) that its float32 in `values` does not hold exactly
/// (`exact(x, y)`: float32 `y` is integer `x`; `small(x)`: `x` is within
/// ±2^24, where every integer is exact in float32).
fn first_inexact<T: numpy::Element + Copy + std::fmt::Display>(
    ints: &Bound<'_, PyAny>,
    values: &[f32],
    small: impl Fn(T) -> bool,
    exact: impl Fn(T, f32) -> bool,
) -> PyResult<Option<String>> {
    let ints = ints.cast::<PyArray1<T>>().map_err(PyErr::from)?.readonly();
    let ints = ints.as_slice()?;
    // blocks of small integers passed whole (a fold is vectorized; the float
    // to integer casts of `exact` are not), the others checked, a failing
    // one searched
    const BLOCK: usize = 4096;
    let k = ints.chunks(BLOCK).zip(values.chunks(BLOCK)).enumerate().find_map(|(b, (xs, ys))| {
        let all = xs.iter().fold(true, |all, &x| all & small(x))
            || xs.iter().zip(ys).fold(true, |all, (&x, &y)| all & exact(x, y));
        (!all).then(|| xs.iter().zip(ys).position(|(&x, &y)| !exact(x, y)).map(|k| b * BLOCK + k)).flatten()
    });
    Ok(k.map(|k| format!("value {k} = {}", not_exact(&ints[k].to_string()))))
}

/// The integers of `arr`, an object array, by position; or why its values
/// are refused: its first `None` ("value k is None (missing)", before any
/// other refusal, as the Arrow connector refuses a null first), else its
/// first element that is not a number ("value k is not a number (type)").
/// Numbers here are real numbers (`numbers.Real`, but not numpy's
/// `timedelta64`, which registers as one), `decimal.Decimal` and numpy
/// bools; numpy would also convert text (parsing it), complex numbers, dates
/// and 0-d arrays, and `None` as NaN. Integers are `int`, numpy's, and any
/// `numbers.Integral` (sympy's, gmpy2's), taken by `__index__` within `i64`,
/// else by `int()`; one that neither gives is not a number. A 0-d array's
/// value, or a multi-dimensional one's rows, are refused later by their
/// dimensions.
fn object_numbers<'py>(arr: &Bound<'py, PyAny>) -> PyResult<Result<Vec<(usize, Int<'py>)>, String>> {
    let mut ints = Vec::new();
    if arr.getattr("ndim")?.extract::<usize>()? != 1 {
        return Ok(Ok(ints));
    }
    let py = arr.py();
    let (np, numbers) = (py.import("numpy")?, py.import("numbers")?);
    let real =
        PyTuple::new(py, [numbers.getattr("Real")?, py.import("decimal")?.getattr("Decimal")?, np.getattr("bool_")?])?;
    let (integral, np_integer, timedelta) =
        (numbers.getattr("Integral")?, np.getattr("integer")?, np.getattr("timedelta64")?);
    let mut not_a_number = None;
    for (k, x) in arr.try_iter()?.enumerate() {
        let x = x?;
        if x.is_none() {
            return Ok(Err(format!("value {k} is None (missing)")));
        }
        if not_a_number.is_some() {
            // (only a `None` is looked for past the first refused value)
            continue;
        }
        // the common kinds first, with no walk of abstract classes: a float
        // (numpy's float64 is one), an int, a numpy integer; numpy's
        // timedelta64 registers as an integer and a real number
        let int = if x.is_instance_of::<pyo3::types::PyFloat>() {
            Some(false)
        } else if x.is_instance_of::<pyo3::types::PyInt>() {
            Some(true)
        } else if x.is_instance(&timedelta)? {
            None
        } else if x.is_instance(&np_integer)? {
            Some(true)
        } else if x.is_instance(real.as_any())? {
            Some(x.is_instance(&integral)?)
        } else {
            None
        };
        match int {
            None => not_a_number = Some((k, x)),
            Some(false) => {}
            Some(true) => match integer(&x)? {
                Some(int) => ints.push((k, int)),
                None => not_a_number = Some((k, x)),
            },
        }
    }
    match not_a_number {
        Some((k, x)) => Ok(Err(format!("value {k} is not a number ({})", x.get_type().name()?))),
        None => Ok(Ok(ints)),
    }
}

/// The value of `x`, an integer element of an object array: by `__index__`
/// within `i64`, else by `int()` (beyond `i64`; an int subclass's own value;
/// an Integral's `__int__`); `None` when neither gives one. An exception of
/// the element's own is a refusal; an interrupt, `MemoryError` or
/// `RecursionError` propagates.
fn integer<'py>(x: &Bound<'py, PyAny>) -> PyResult<Option<Int<'py>>> {
    let py = x.py();
    let own = |e: PyErr| -> PyResult<Option<Int<'py>>> {
        match !e.is_instance_of::<PyException>(py)
            || e.is_instance_of::<pyo3::exceptions::PyMemoryError>(py)
            || e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py)
        {
            true => Err(e),
            false => Ok(None),
        }
    };
    match x.extract::<i64>() {
        Ok(v) => Ok(Some(Int::Small(v))),
        Err(e) => {
            own(e)?;
            match py.get_type::<pyo3::types::PyInt>().call1((x,)) {
                Ok(big) => Ok(Some(Int::Big(big))),
                Err(e) => own(e),
            }
        }
    }
}

/// `values` as a 1-D float32 numpy array: the core's allocation is handed to
/// numpy when it is the buffer's sole owner (what the reader returns), else copied.
pub fn to_numpy<'py>(py: Python<'py>, values: SeriesValues) -> Bound<'py, PyArray1<f32>> {
    match values.into_inner().into_vec::<f32>() {
        Ok(vec) => PyArray1::from_vec(py, vec),
        Err(buffer) => PyArray1::from_slice(py, buffer.typed_data::<f32>()),
    }
}
