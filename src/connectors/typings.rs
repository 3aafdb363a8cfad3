//! The column typings the Arrow connector accepts for `item_id`, `start`,
//! `target` and `freq`, and their exact conversions (`docs/format.md`,
//! "Connector inputs").
//!
//! * `item_id`: string, large string, string view, a dictionary of those, or any
//!   signed or unsigned integer (printed in decimal).
//! * `start`: timestamp of any unit, with or without a zone (the stored instant is
//!   UTC), `date32`, `date64`, or an ISO-8601 string. Parquet INT96 is decoded by
//!   the connector itself from its Julian day and nanoseconds ([`int96_seconds`]).
//! * `target`: list, large list, list view, large list view or fixed-size list of
//!   any integer or float type; a list of such lists is multivariate.
//! * `freq`: a pandas offset alias ([`pandas_frequency_hz`]).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};

use crate::connectors::tsf::GREGORIAN_YEAR_S;
use crate::connectors::{civil_epoch_s, decimal};
use crate::dataset::SeriesValues;
use crate::text_column::{is_text, text_at, texts};

/// Largest magnitude of whole seconds that an `f64` holds exactly (2^53).
const MAX_EXACT_S: i64 = 1 << 53;

/// Julian day number of 1970-01-01 (the epoch of Parquet INT96 timestamps' day field).
const JULIAN_DAY_OF_EPOCH: i64 = 2_440_588;

/// Nanoseconds in a day.
const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// Why a column of a connector's input cannot be read; the caller adds the
/// file, and the row's number in the whole input.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The column's type is not one the connector reads.
    Typing(String),
    /// Row `.0` of the column cannot be read.
    Row(usize, String),
}

/// `item_id` as text per row (`None` for null).
pub(crate) fn item_ids(c: &ArrayRef) -> std::result::Result<Vec<Option<String>>, Refused> {
    text_rows(c, "item_id", true, "a string, a dictionary of strings or an integer")
}

/// `freq` as text per row (`None` for null).
pub(crate) fn frequencies(c: &ArrayRef) -> std::result::Result<Vec<Option<String>>, Refused> {
    text_rows(c, "freq", false, "a string or a dictionary of strings")
}

/// Column `name`'s rows as text ([`texts`]), integers too with `integers`;
/// a refused typing names what is wanted.
fn text_rows(
    c: &ArrayRef,
    name: &str,
    integers: bool,
    want: &str,
) -> std::result::Result<Vec<Option<String>>, Refused> {
    if !is_text(c.data_type(), integers) {
        return Err(Refused::Typing(format!("{name} has type {}, want {want}", c.data_type())));
    }
    texts(c.as_ref()).map_err(|(r, why)| Refused::Row(r, format!("{name}: {why}")))
}

/// `ticks` of `per_s` per second as epoch seconds: whole seconds exact, a
/// fraction correctly rounded while `ticks` is within ±2^53 (else within an ulp); refused beyond ±2^53 s, where whole seconds stop being exact.
pub(crate) fn ticks_to_s(ticks: i64, per_s: i64) -> std::result::Result<f64, String> {
    let (whole, frac) = (ticks.div_euclid(per_s), ticks.rem_euclid(per_s));
    // unsigned: `i64::MIN.abs()` overflows (to itself, which passed the bound)
    if whole.unsigned_abs() > MAX_EXACT_S as u64 {
        return Err(format!("{whole} s since 1970 is beyond ±2^53 s, where float64 seconds are not exact"));
    }
    Ok(if frac == 0 {
        whole as f64
    } else if ticks.unsigned_abs() <= MAX_EXACT_S as u64 {
        // one correctly rounded division of two exact values
        ticks as f64 / per_s as f64
    } else {
        whole as f64 + frac as f64 / per_s as f64
    })
}

/// A Parquet INT96 timestamp (nanoseconds of the day in the first 8 bytes, little
/// endian, then the Julian day) as epoch seconds, exact in whole seconds; never
/// wrapped (the parquet crate's nanosecond conversion wraps beyond 1677-2262).
pub fn int96_seconds(words: [u32; 3]) -> std::result::Result<f64, String> {
    let nanos = (u64::from(words[1]) << 32) | u64::from(words[0]);
    let day = i64::from(words[2] as i32);
    if nanos >= NANOS_PER_DAY as u64 {
        return Err(format!("INT96 timestamp with {nanos} ns in a day (at most 86400e9 - 1)"));
    }
    let (whole, frac) = ((day - JULIAN_DAY_OF_EPOCH) * 86_400 + nanos as i64 / 1_000_000_000, nanos % 1_000_000_000);
    ticks_to_s(whole, 1).map(|s| if frac == 0 { s } else { s + frac as f64 / 1e9 })
}

/// Column `name` of `batch` (`None` when it has none); refused when more than
/// one column has that name: which one is meant cannot be told, and taking
/// the first would drop the others' values unseen.
pub(crate) fn column<'b>(batch: &'b RecordBatch, name: &str) -> std::result::Result<Option<&'b ArrayRef>, String> {
    Ok(named_once(batch.schema_ref(), name)?.map(|i| batch.column(i)))
}

/// The position of the field `name` of `schema` (`None` when it has none);
/// refused as [`column`] refuses.
pub(crate) fn named_once(schema: &arrow_schema::Schema, name: &str) -> std::result::Result<Option<usize>, String> {
    let at: Vec<usize> = (0..schema.fields().len()).filter(|&i| schema.field(i).name() == name).collect();
    match at[..] {
        [] => Ok(None),
        [i] => Ok(Some(i)),
        _ => Err(format!("{} columns are named {name}: keep one", at.len())),
    }
}

/// `start` per row in epoch seconds (`None` for null); a row whose value
/// cannot be converted exactly is [`Refused::Row`].
pub(crate) fn start_seconds(c: &ArrayRef) -> std::result::Result<Vec<Option<f64>>, Refused> {
    let each =
        |f: &dyn Fn(usize) -> std::result::Result<f64, String>| -> std::result::Result<Vec<Option<f64>>, Refused> {
            (0..c.len())
                .map(|r| if c.is_null(r) { Ok(None) } else { f(r).map(Some).map_err(|e| Refused::Row(r, e)) })
                .collect()
        };
    match c.data_type() {
        DataType::Timestamp(unit, _) => {
            let (v, per_s): (&dyn Fn(usize) -> i64, i64) = match unit {
                TimeUnit::Second => (&|r| c.as_primitive::<TimestampSecondType>().value(r), 1),
                TimeUnit::Millisecond => (&|r| c.as_primitive::<TimestampMillisecondType>().value(r), 1_000),
                TimeUnit::Microsecond => (&|r| c.as_primitive::<TimestampMicrosecondType>().value(r), 1_000_000),
                TimeUnit::Nanosecond => (&|r| c.as_primitive::<TimestampNanosecondType>().value(r), 1_000_000_000),
            };
            each(&|r| ticks_to_s(v(r), per_s))
        }
        DataType::Date32 => {
            let d = c.as_primitive::<arrow_array::types::Date32Type>();
            each(&|r| Ok(i64::from(d.value(r)) as f64 * 86_400.0))
        }
        DataType::Date64 => {
            let d = c.as_primitive::<arrow_array::types::Date64Type>();
            each(&|r| ticks_to_s(d.value(r), 1_000))
        }
        t if is_text(t, false) => (0..c.len())
            .map(|r| match text_at(c.as_ref(), r).map_err(|e| Refused::Row(r, format!("start: {e}")))? {
                None => Ok(None),
                Some(s) => parse_iso8601(&s)
                    .map(Some)
                    .ok_or_else(|| Refused::Row(r, format!("start {s:?} is not an ISO-8601 date-time"))),
            })
            .collect(),
        other => {
            Err(Refused::Typing(format!("start has type {other}, want a timestamp, a date or an ISO-8601 string")))
        }
    }
}

/// Parses `YYYY-MM-DD`, optionally followed by `T` or a space and
/// `HH:MM[:SS[.fraction]]`, optionally followed by `Z` or an offset `±HH[:MM]`,
/// into epoch seconds (UTC; no offset means UTC). Whole seconds are exact.
pub(crate) fn parse_iso8601(text: &str) -> Option<f64> {
    let s = text.trim();
    let b = s.as_bytes();
    let num = |from: usize, to: usize| b.get(from..to).and_then(decimal);
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (mut hh, mut mm, mut ss) = (0, 0, 0);
    let mut frac = 0.0;
    let mut rest = &s[10..];
    if let Some(time) = rest.strip_prefix(['T', 't', ' ']) {
        let tb = time.as_bytes();
        let tnum = |from: usize, to: usize| tb.get(from..to).and_then(decimal);
        (hh, mm) = (tnum(0, 2)?, tnum(3, 5)?);
        if tb.get(2) != Some(&b':') {
            return None;
        }
        let mut used = 5;
        if tb.get(5) == Some(&b':') {
            ss = tnum(6, 8)?;
            used = 8;
            if tb.get(8) == Some(&b'.') {
                let digits = tb[9..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits == 0 {
                    return None;
                }
                frac = time.get(8..9 + digits)?.parse::<f64>().ok()?;
                used = 9 + digits;
            }
        }
        rest = &time[used..];
    }
    let mut secs = civil_epoch_s(y, m, d, hh, mm, ss)?;
    match rest.as_bytes() {
        [] | [b'Z' | b'z'] => {}
        [sign @ (b'+' | b'-'), ..] => {
            let o = &rest[1..];
            // ASCII only before slicing by byte position
            if !o.bytes().all(|c| c.is_ascii_digit() || c == b':') {
                return None;
            }
            let (oh, om) = match o.len() {
                2 => (o.parse::<i64>().ok()?, 0),
                4 => (o[..2].parse::<i64>().ok()?, o[2..].parse::<i64>().ok()?),
                5 if o.as_bytes()[2] == b':' => (o[..2].parse::<i64>().ok()?, o[3..].parse::<i64>().ok()?),
                _ => return None,
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let offset = oh * 3_600 + om * 60;
            secs += if *sign == b'+' { -offset } else { offset };
        }
        _ => return None,
    }
    Some(secs as f64 + frac)
}

/// Samples per second of a pandas offset alias (`freq` of a GluonTS dataset):
/// an optional positive integer multiplier, then a unit.
///
/// | unit | period |
/// | --- | --- |
/// | `N`, `ns` | 1 ns |
/// | `U`, `us` | 1 µs |
/// | `L`, `ms` | 1 ms |
/// | `S`, `s` | 1 s |
/// | `T`, `min` | 60 s |
/// | `H`, `h` | 3 600 s |
/// | `D`, `d` | 86 400 s |
/// | `W`, `W-SUN` .. `W-SAT` | 604 800 s |
/// | `M`, `ME`, `MS` | 1/12 of a mean Gregorian year (2 629 746 s) |
/// | `Q`, `QE`, `QS` (and `-JAN` .. `-DEC` anchors) | 1/4 of a mean Gregorian year |
/// | `A`, `Y`, `YE`, `YS`, `AS` (and anchors) | a mean Gregorian year (31 556 952 s) |
///
/// Calendar units use mean lengths, as the `.tsf` connector does for
/// `monthly`/`quarterly`/`yearly`. Business-day and other irregular aliases (`B`,
/// `C`, `BH`, `SM`, ...) have no rate and are refused.
///
/// # Errors
/// Why `freq` is not understood.
pub fn pandas_frequency_hz(freq: &str) -> std::result::Result<f64, String> {
    let f = freq.trim();
    let digits = f.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 =
        if digits == 0 { 1 } else { f[..digits].parse().map_err(|_| format!("freq {freq:?}: bad multiplier"))? };
    if n == 0 {
        return Err(format!("freq {freq:?}: the multiplier must be > 0"));
    }
    let unit = &f[digits..];
    let (base, anchor) = match unit.split_once('-') {
        Some((b, a)) => (b, Some(a)),
        None => (unit, None),
    };
    const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
    const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
    let anchored = |allowed: &[&str]| anchor.is_none_or(|a| allowed.contains(&a));
    // per-second rate for sub-second units (so 1 ns gives exactly 1e9 Hz), else the period
    enum Unit {
        PerS(f64),
        Period(f64),
    }
    let u = match base {
        "N" | "ns" if anchor.is_none() => Unit::PerS(1e9),
        "U" | "us" if anchor.is_none() => Unit::PerS(1e6),
        "L" | "ms" if anchor.is_none() => Unit::PerS(1e3),
        "S" | "s" if anchor.is_none() => Unit::Period(1.0),
        "T" | "min" if anchor.is_none() => Unit::Period(60.0),
        "H" | "h" if anchor.is_none() => Unit::Period(3_600.0),
        "D" | "d" if anchor.is_none() => Unit::Period(86_400.0),
        "W" if anchored(&DAYS) => Unit::Period(604_800.0),
        "M" | "ME" | "MS" if anchor.is_none() => Unit::Period(GREGORIAN_YEAR_S / 12.0),
        "Q" | "QE" | "QS" if anchored(&MONTHS) => Unit::Period(GREGORIAN_YEAR_S / 4.0),
        "A" | "Y" | "YE" | "YS" | "AS" if anchored(&MONTHS) => Unit::Period(GREGORIAN_YEAR_S),
        "B" | "C" | "BH" | "CBH" | "SM" | "SMS" | "BM" | "BME" | "BMS" | "BQ" | "BQE" | "BQS" | "BA" | "BY" | "BYE"
        | "BYS" => {
            return Err(format!(
                "freq {freq:?} is a business-calendar frequency with no fixed sampling rate; give --sampling-rate-hz"
            ))
        }
        _ => return Err(format!("freq {freq:?} is not a known pandas offset alias")),
    };
    Ok(match u {
        Unit::PerS(hz) => hz / n as f64,
        Unit::Period(p) => 1.0 / (n as f64 * p),
    })
}

/// Why a channel's values cannot be taken: a missing value (NaN or null, which
/// [`crate::connectors::OnMissing`] governs) or any other refusal.
#[derive(Debug)]
pub(crate) enum ValueError {
    Missing(String),
    Invalid(String),
}

/// True for the leaf types a target may hold.
pub(crate) fn is_value_type(t: &DataType) -> bool {
    t.is_integer() || matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// The child values of list-typed `a` at `row` (list, large list, list view,
/// large list view, fixed-size list), or `None` when `a` is not a list.
pub(crate) fn list_value(a: &dyn Array, row: usize) -> Option<ArrayRef> {
    Some(match a.data_type() {
        DataType::List(_) => a.as_list::<i32>().value(row),
        DataType::LargeList(_) => a.as_list::<i64>().value(row),
        DataType::ListView(_) => a.as_list_view::<i32>().value(row),
        DataType::LargeListView(_) => a.as_list_view::<i64>().value(row),
        DataType::FixedSizeList(_, _) => a.as_fixed_size_list().value(row),
        _ => return None,
    })
}

/// The element type of list-typed `t`.
pub(crate) fn list_element(t: &DataType) -> Option<&DataType> {
    match t {
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => Some(f.data_type()),
        _ => None,
    }
}

/// One channel's values as float32: zero-copy for float32, widened exactly for
/// float16 and small integers, exact-or-refused for 32- and 64-bit integers,
/// rounded to nearest for float64 (refused beyond the float32 range). NaN and
/// null elements are missing; infinities are refused.
pub(crate) fn to_f32(values: &ArrayRef) -> std::result::Result<SeriesValues, ValueError> {
    if values.is_empty() {
        return Err(ValueError::Invalid("has no values".into()));
    }
    // through the validity bitmap: a call per element was a tenth of a write of small series
    if let Some(k) = values.logical_nulls().and_then(|n| n.iter().position(|valid| !valid)) {
        return Err(ValueError::Missing(format!("value {k} is null (missing)")));
    }
    fn exact<T: Copy + std::fmt::Display>(
        v: &[T],
        f: impl Fn(T) -> f32,
        back: impl Fn(f32, T) -> bool,
    ) -> std::result::Result<SeriesValues, ValueError> {
        let mut out = Vec::with_capacity(v.len());
        for (k, &x) in v.iter().enumerate() {
            let y = f(x);
            if !back(y, x) {
                return Err(ValueError::Invalid(format!("value {k} = {x} is not exactly representable as float32")));
            }
            out.push(y);
        }
        Ok(out.into())
    }
    fn widened<T: Copy + Into<f32>>(v: &[T]) -> SeriesValues {
        v.iter().map(|&x| x.into()).collect::<Vec<f32>>().into()
    }
    let out: SeriesValues = match values.data_type() {
        DataType::Float32 => values.as_primitive::<Float32Type>().values().clone(),
        DataType::Float64 => {
            let wide = values.as_primitive::<Float64Type>().values();
            if let Some(k) = wide.iter().position(|&v| v.is_finite() && (v as f32).is_infinite()) {
                return Err(ValueError::Invalid(format!("value {k} = {:?} is outside the float32 range", wide[k])));
            }
            wide.iter().map(|&v| v as f32).collect::<Vec<_>>().into()
        }
        DataType::Float16 => {
            values.as_primitive::<Float16Type>().values().iter().map(|v| v.to_f32()).collect::<Vec<_>>().into()
        }
        DataType::Int32 => {
            exact(values.as_primitive::<Int32Type>().values(), |x| x as f32, |y, x| y as f64 == f64::from(x))?
        }
        DataType::UInt32 => {
            exact(values.as_primitive::<UInt32Type>().values(), |x| x as f32, |y, x| y as f64 == f64::from(x))?
        }
        DataType::Int64 => exact(
            values.as_primitive::<Int64Type>().values(),
            |x| x as f32,
            |y, x| y as i128 == i128::from(x) && y.is_finite(),
        )?,
        DataType::UInt64 => exact(
            values.as_primitive::<UInt64Type>().values(),
            |x| x as f32,
            |y, x| y as i128 == i128::from(x) && y.is_finite(),
        )?,
        // 8- and 16-bit integers are exact in float32
        DataType::Int8 => widened(values.as_primitive::<Int8Type>().values()),
        DataType::Int16 => widened(values.as_primitive::<Int16Type>().values()),
        DataType::UInt8 => widened(values.as_primitive::<UInt8Type>().values()),
        DataType::UInt16 => widened(values.as_primitive::<UInt16Type>().values()),
        other => return Err(ValueError::Invalid(format!("values of type {other}"))),
    };
    if let Some(k) = crate::dataset::first_non_finite(&out) {
        return Err(if out[k].is_nan() {
            ValueError::Missing(format!("value {k} is NaN (missing)"))
        } else {
            ValueError::Invalid(format!("value {k} is {}, not finite", out[k]))
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_forms() {
        assert_eq!(parse_iso8601("2020-01-01"), Some(1_577_836_800.0));
        assert_eq!(parse_iso8601("2020-01-01T00:00:00Z"), Some(1_577_836_800.0));
        assert_eq!(parse_iso8601("2020-01-01 01:30"), Some(1_577_842_200.0));
        assert_eq!(parse_iso8601("2020-01-01T01:00:00+01:00"), Some(1_577_836_800.0));
        assert_eq!(parse_iso8601("2020-01-01T00:00:00-0130"), Some(1_577_842_200.0));
        assert_eq!(parse_iso8601("1659-01-01T00:00:00"), Some(-9_814_176_000.0));
        assert_eq!(parse_iso8601("9999-12-31"), Some(253_402_214_400.0));
        assert_eq!(parse_iso8601("2020-01-01T00:00:00.25"), Some(1_577_836_800.25));
        for bad in [
            "2020-02-30",
            "2020-1-01",
            "2020-01-01T24:00",
            "2020-01-01X",
            "2020-01-01T00:00:00+1",
            "",
            "2020-01-01T00:00:00.",
            "2020-01-01T00:00+a\u{e9}1",
            "2020-01-01T00:00:00+1:30",
            "2020-01-01T00:00:00.5x",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn pandas_aliases() {
        for (f, hz) in [
            ("H", 1.0 / 3600.0),
            ("h", 1.0 / 3600.0),
            ("15min", 1.0 / 900.0),
            ("15T", 1.0 / 900.0),
            ("2H", 1.0 / 7200.0),
            ("D", 1.0 / 86400.0),
            ("W-SUN", 1.0 / 604800.0),
            ("W", 1.0 / 604800.0),
            ("M", 12.0 / GREGORIAN_YEAR_S),
            ("MS", 12.0 / GREGORIAN_YEAR_S),
            ("Q-DEC", 4.0 / GREGORIAN_YEAR_S),
            ("A", 1.0 / GREGORIAN_YEAR_S),
            ("Y", 1.0 / GREGORIAN_YEAR_S),
            ("S", 1.0),
            ("10s", 0.1),
            ("ms", 1000.0),
            ("L", 1000.0),
            ("U", 1e6),
            ("N", 1e9),
            ("4ns", 2.5e8),
        ] {
            assert_eq!(pandas_frequency_hz(f), Ok(hz), "{f}");
        }
        assert!(pandas_frequency_hz("B").unwrap_err().contains("business"));
        for bad in ["", "0H", "fortnight", "W-XYZ", "H-SUN", "1.5H"] {
            assert!(pandas_frequency_hz(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn int96_is_exact_far_from_1970() {
        // 1659-01-01: Julian day 2326998
        assert_eq!(int96_seconds([0, 0, 2_326_998]), Ok(-9_814_176_000.0));
        assert_eq!(int96_seconds([0, 0, 2_458_850]), Ok(1_577_836_800.0));
        let half_s = 500_000_000u64;
        assert_eq!(int96_seconds([half_s as u32, (half_s >> 32) as u32, 2_440_588]), Ok(0.5));
        assert!(int96_seconds([u32::MAX, u32::MAX, 2_440_588]).is_err());
    }

    #[test]
    fn ticks_keep_whole_seconds() {
        assert_eq!(ticks_to_s(-1, 1000), Ok(-0.001));
        assert_eq!(ticks_to_s(253_402_214_400_000_000, 1_000_000), Ok(253_402_214_400.0));
        assert_eq!(ticks_to_s(i64::MIN, 1_000_000_000), Ok(-9_223_372_037.0 + 0.145224192));
        assert!(ticks_to_s(i64::MAX, 1).is_err());
        // both ends are refused alike (i64::MIN's absolute value overflowed)
        assert_eq!(
            ticks_to_s(i64::MIN, 1),
            Err("-9223372036854775808 s since 1970 is beyond ±2^53 s, where float64 seconds are not exact".into())
        );
        assert_eq!(ticks_to_s(i64::MIN + 1, 1).map_err(|_| ()), Err(()));
    }
}
