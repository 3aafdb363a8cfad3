//! The text of a column's rows, where an input may type a textual column
//! several ways: UTF-8 (plain, large, view), integers printed in decimal, and
//! dictionaries of those. Used by the connectors' `item_id`/`freq`/`start`
//! (`docs/format.md`, "Connector inputs"), a version's id columns as another
//! writer may type them, and the rows of `timef edit --set-*` files. It stands
//! in for arrow's cast kernels (arrow-cast), which would add arrow-cast and
//! arrow-ord to the critical path of every build for these few conversions.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::Array;
use arrow_schema::DataType;

/// Whether [`text_at`] reads columns of type `t`: UTF-8, large UTF-8, UTF-8
/// view, with `integers` any signed or unsigned integer, and a dictionary whose
/// values are one of those (keys of any integer type).
pub(crate) fn is_text(t: &DataType, integers: bool) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_text(v, integers),
        t => integers && t.is_integer(),
    }
}

/// Row `r` of `c` as text: `Ok(None)` for a null (also a dictionary key that
/// is null or names a null value), an integer in decimal. A column of a type
/// [`is_text`] refuses reads as null: check the type first.
///
/// # Errors
/// A dictionary key that is negative or beyond its values (an array no Arrow
/// library makes, but one imported over the C data interface is not checked),
/// naming the key (the caller names the row: it knows the input's numbering).
///
/// # Panics
/// Never for `r < c.len()`; `r` beyond the column panics as arrow's accessors do.
pub(crate) fn text_at(c: &dyn Array, r: usize) -> Result<Option<Cow<'_, str>>, String> {
    if c.is_null(r) {
        return Ok(None);
    }
    Ok(Some(match c.data_type() {
        DataType::Utf8 => Cow::Borrowed(c.as_string::<i32>().value(r)),
        DataType::LargeUtf8 => Cow::Borrowed(c.as_string::<i64>().value(r)),
        DataType::Utf8View => Cow::Borrowed(c.as_string_view().value(r)),
        DataType::Dictionary(..) => {
            let d = c.as_any_dictionary();
            let values = d.values();
            // keys are integers (arrow's DictionaryArray); a negative one is as wrong as one too large
            let key = integer_at(d.keys(), r).unwrap_or(-1);
            return match usize::try_from(key).ok().filter(|&k| k < values.len()) {
                Some(k) => text_at(values.as_ref(), k),
                None => Err(format!("dictionary key {key} is not one of its {} values", values.len())),
            };
        }
        _ => match integer_at(c, r) {
            Some(v) => Cow::Owned(v.to_string()),
            None => return Ok(None),
        },
    }))
}

/// Row `r` of an integer column, widened (`None` for another type; a null
/// row reads its slot's value: check nulls first).
pub(crate) fn integer_at(c: &dyn Array, r: usize) -> Option<i128> {
    Some(match c.data_type() {
        DataType::Int8 => c.as_primitive::<Int8Type>().value(r).into(),
        DataType::Int16 => c.as_primitive::<Int16Type>().value(r).into(),
        DataType::Int32 => c.as_primitive::<Int32Type>().value(r).into(),
        DataType::Int64 => c.as_primitive::<Int64Type>().value(r).into(),
        DataType::UInt8 => c.as_primitive::<UInt8Type>().value(r).into(),
        DataType::UInt16 => c.as_primitive::<UInt16Type>().value(r).into(),
        DataType::UInt32 => c.as_primitive::<UInt32Type>().value(r).into(),
        DataType::UInt64 => c.as_primitive::<UInt64Type>().value(r).into(),
        _ => return None,
    })
}

/// Every row of `c` as text ([`text_at`]), owned.
///
/// # Errors
/// As [`text_at`], with the row (of `c`) it is in.
pub(crate) fn texts(c: &dyn Array) -> Result<Vec<Option<String>>, (usize, String)> {
    (0..c.len()).map(|r| text_at(c, r).map(|t| t.map(Cow::into_owned)).map_err(|e| (r, e))).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::{Int8Type, UInt16Type, UInt64Type};
    use arrow_array::{
        ArrayRef, DictionaryArray, Float32Array, Int64Array, LargeStringArray, StringArray, StringViewArray,
        UInt64Array, UInt8Array,
    };

    use super::*;

    fn owned(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|s| s.map(str::to_string)).collect()
    }

    #[test]
    fn strings_of_every_utf8_layout_with_nulls() {
        let want = [Some("a"), None, Some(""), Some("é-1")];
        let arrays: [ArrayRef; 3] = [
            Arc::new(StringArray::from(want.to_vec())),
            Arc::new(LargeStringArray::from(want.to_vec())),
            Arc::new(StringViewArray::from(want.to_vec())),
        ];
        for a in arrays {
            assert!(is_text(a.data_type(), false));
            assert_eq!(texts(a.as_ref()).unwrap(), owned(&want), "{}", a.data_type());
        }
    }

    #[test]
    fn integers_in_decimal_only_when_asked_for() {
        let a = Int64Array::from(vec![Some(-12), None, Some(i64::MIN), Some(0)]);
        assert!(!is_text(a.data_type(), false) && is_text(a.data_type(), true));
        assert_eq!(texts(&a).unwrap(), owned(&[Some("-12"), None, Some("-9223372036854775808"), Some("0")]));
        let u = UInt64Array::from(vec![u64::MAX]);
        assert_eq!(texts(&u).unwrap(), owned(&[Some("18446744073709551615")]));
        assert!(!is_text(&DataType::Float32, true));
        // a type refused reads as null, never as text
        assert_eq!(texts(&Float32Array::from(vec![1.5])).unwrap(), vec![None]);
    }

    #[test]
    fn dictionaries_of_strings_and_of_integers_with_null_keys_and_null_values() {
        let values = StringArray::from(vec![Some("x"), None, Some("z")]);
        let keys = arrow_array::PrimitiveArray::<Int8Type>::from(vec![Some(2), None, Some(1), Some(0), Some(2)]);
        let d = DictionaryArray::<Int8Type>::try_new(keys, Arc::new(values)).unwrap();
        assert!(is_text(d.data_type(), false));
        assert_eq!(texts(&d).unwrap(), owned(&[Some("z"), None, None, Some("x"), Some("z")]));

        let keys = arrow_array::PrimitiveArray::<UInt16Type>::from(vec![1, 0]);
        let d = DictionaryArray::<UInt16Type>::try_new(keys, Arc::new(UInt8Array::from(vec![7, 255]))).unwrap();
        assert!(!is_text(d.data_type(), false) && is_text(d.data_type(), true));
        assert_eq!(texts(&d).unwrap(), owned(&[Some("255"), Some("7")]));
    }

    #[test]
    fn a_dictionary_key_beyond_its_values_is_an_error_naming_it() {
        let keys = arrow_array::PrimitiveArray::<UInt64Type>::from(vec![0, 5]);
        let values: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        // built unchecked, as an import over the C data interface may be
        let d = unsafe { DictionaryArray::<UInt64Type>::new_unchecked(keys, values) };
        assert_eq!(texts(&d), Err((1, "dictionary key 5 is not one of its 1 values".to_string())));
        let keys = arrow_array::PrimitiveArray::<Int8Type>::from(vec![-3]);
        let d = unsafe { DictionaryArray::<Int8Type>::new_unchecked(keys, Arc::new(StringArray::from(vec!["a"]))) };
        assert_eq!(texts(&d), Err((0, "dictionary key -3 is not one of its 1 values".to_string())));
    }
}
