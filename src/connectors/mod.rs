//! Connectors: turn files of the field's public formats into a [`crate::TimeFDataset`].
//!
//! Each connector is usable without the CLI; all share [`IdMode`], the
//! missing-value policy [`OnMissing`] and the defaults below (default spec type
//! `unknown`, default sampling rate 1 Hz). The text connectors share
//! [`TextEncoding`] (`docs/format.md`, "Connector inputs").

pub mod arrow;
pub mod tsf;
pub mod typings;
pub mod ucr;

/// Spec type used when the caller gives none.
pub const DEFAULT_SPEC_TYPE: &str = "unknown";

/// Sampling rate in Hz used when neither the caller nor the file gives one.
pub const DEFAULT_SAMPLING_RATE_HZ: f64 = 1.0;

/// The namespace of the UUIDv5 ids made by [`IdMode::Uuid`]
/// (`docs/format.md`, "Connector ids"): UUIDv5 of the URL namespace and `https://timef.dev/ids/v1`.
pub const ID_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0xbdf6_e50b_617c_5b86_9d6a_1774_ddd3_2bb9);

/// The error for an input file that cannot be opened or read:
/// [`crate::Error::Missing`] when it does not exist (Python's
/// `FileNotFoundError`), else [`crate::Error::Io`] naming it (permission,
/// a directory, a failing disk). A file that reads but is malformed is
/// [`crate::Error::InvalidInput`].
pub(crate) fn unreadable(path: &std::path::Path, e: std::io::Error) -> crate::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        crate::Error::Missing { path: path.to_path_buf(), what: "no such input file".into() }
    } else {
        crate::Error::io(path, e)
    }
}

/// Seconds since 1970-01-01T00:00:00 UTC of a proleptic Gregorian date and a
/// time of day; `None` for a date or time that does not exist (month 13,
/// February 29 of a common year, hour 24, second 60). The date parsers of the
/// text connectors each keep their own grammar and share this arithmetic.
pub(crate) fn civil_epoch_s(year: u32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Option<i64> {
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    Some(date.and_hms_opt(hour, minute, second)?.and_utc().timestamp())
}

/// The value of `digits` when it is 1 to 9 ASCII digits, else `None`.
pub(crate) fn decimal(digits: &[u8]) -> Option<u32> {
    ((1..=9).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit))
        .then(|| digits.iter().fold(0, |acc, &d| acc * 10 + u32::from(d - b'0')))
}

/// How connectors spell ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdMode {
    /// Readable ids built from names, e.g. `ArrowHead-train-0/0` (stored as strings).
    #[default]
    String,
    /// Each readable id mapped to a UUIDv5 in [`ID_NAMESPACE`] (stored as uuid16).
    Uuid,
}

impl IdMode {
    /// The id for the readable form `readable`.
    pub fn id(self, readable: &str) -> String {
        match self {
            IdMode::String => readable.to_string(),
            IdMode::Uuid => uuid::Uuid::new_v5(&ID_NAMESPACE, readable.as_bytes()).hyphenated().to_string(),
        }
    }
}

/// What a connector does with a case (an Arrow row, a `.tsf` series line, a
/// `.ts` case) that holds a missing value: NaN or a null element in an Arrow
/// target, `?` or `NaN` in a `.tsf` or `.ts` file. TimeF stores finite values
/// only (FORMAT-BRIEF §5), so a missing value cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnMissing {
    /// Refuse the input with [`crate::Error::InvalidInput`] naming the file, the
    /// line or row, the case (item) and the channel. The default.
    #[default]
    Error,
    /// Leave the whole case out (every channel of it); the others keep their ids.
    /// The dropped cases are listed in the connector's [`Dropped`] report.
    DropCase,
}

/// The cases a connector left out under [`OnMissing::DropCase`], in input
/// order, and what it accepted with a warning.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dropped {
    /// One entry per dropped case: its readable id (Arrow `item_id`, `.tsf`
    /// series name, `.ts` `"{file}: case {index}"`).
    pub cases: Vec<String>,
    /// One line per input accepted with a warning (the CLI prints each on
    /// stderr), e.g. `.ts` splits whose `@problemName`s differ by a suffix.
    pub warnings: Vec<String>,
}

impl Dropped {
    /// The one-line summary the CLI prints on stderr, `None` when nothing was dropped:
    /// `dropped 2 cases with missing values (--on-missing drop-case): a, b` (at most 10 named).
    pub fn summary(&self) -> Option<String> {
        const NAMED: usize = 10;
        if self.cases.is_empty() {
            return None;
        }
        let n = self.cases.len();
        let mut names = self.cases.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
        if n > NAMED {
            names.push_str(&format!(", ... ({} more)", n - NAMED));
        }
        let noun = if n == 1 { "case" } else { "cases" };
        Some(format!("dropped {n} {noun} with missing values (--on-missing drop-case): {names}"))
    }
}

/// Text encoding of a `.ts` or `.tsf` input.
///
/// `Latin1` decodes every byte `b` to the code point `U+00b` (ISO-8859-1 exactly,
/// so 0x80-0x9F become C1 controls); `Cp1252` is windows-1252 as the WHATWG
/// Encoding Standard defines it (0x80 is `€`, 0x93 `“`). Web browsers treat the
/// label `latin-1` as windows-1252; TimeF keeps the two apart so that each name
/// means one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextEncoding {
    /// UTF-8 (a leading byte order mark is skipped). The default.
    #[default]
    Utf8,
    /// ISO-8859-1: each byte is the code point of the same number.
    Latin1,
    /// windows-1252 (WHATWG), decoded with `encoding_rs`.
    Cp1252,
}

impl TextEncoding {
    /// Decodes `bytes`; UTF-8 is borrowed when valid. `Err(offset)` is the byte
    /// offset of the first invalid UTF-8 sequence (the single-byte encodings
    /// accept every byte).
    pub fn decode(self, bytes: &[u8]) -> std::result::Result<std::borrow::Cow<'_, str>, usize> {
        match self {
            TextEncoding::Utf8 => std::str::from_utf8(bytes).map(Into::into).map_err(|e| e.valid_up_to()),
            TextEncoding::Latin1 => Ok(bytes.iter().map(|&b| char::from(b)).collect::<String>().into()),
            TextEncoding::Cp1252 => Ok(encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes).0),
        }
    }

    /// The hint appended to an invalid-UTF-8 error.
    pub(crate) const UTF8_HINT: &'static str =
        "the file must be UTF-8, or name its encoding with --encoding latin-1 or --encoding cp1252";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tricky dates through all three date grammars: `.tsf` (`YYYY-MM-DD
    /// HH-MM-SS`), `.ts` (`YYYY-M-D[ H:M[:S.f]]`) and ISO-8601 with offsets.
    /// The expected epoch seconds come from Python's `calendar.timegm`.
    #[test]
    fn tricky_dates_give_the_same_epoch_seconds_in_every_parser() {
        let cases: [(&str, Option<i64>); 16] = [
            ("1970-01-01 00:00:00", Some(0)),
            ("1969-12-31 23:59:59", Some(-1)),
            ("2000-02-29 00:00:00", Some(951_782_400)),
            ("1900-02-29 00:00:00", None),
            ("1900-02-28 23:59:59", Some(-2_203_891_201)),
            ("1900-03-01 00:00:00", Some(-2_203_891_200)),
            ("2100-02-29 00:00:00", None),
            ("2400-02-29 00:00:00", Some(13_574_563_200)),
            ("1600-02-29 06:07:08", Some(-11_670_976_372)),
            ("2024-02-29 12:34:56", Some(1_709_210_096)),
            ("2023-02-29 00:00:00", None),
            ("0000-01-01 00:00:00", Some(-62_167_219_200)),
            ("9999-12-31 23:59:59", Some(253_402_300_799)),
            ("2024-04-31 00:00:00", None),
            ("2024-01-01 24:00:00", None),
            ("2024-01-01 23:59:60", None),
        ];
        for (text, want) in cases {
            let want = want.map(|s| s as f64);
            let (date, time) = text.split_once(' ').unwrap();
            assert_eq!(tsf::parse_date(&format!("{date} {}", time.replace(':', "-"))), want, "tsf {text}");
            assert_eq!(ucr::parse_datetime(text), want, "ts {text}");
            assert_eq!(ucr::parse_datetime(&format!("{date}T{time}Z")), want, "ts {text}");
            assert_eq!(typings::parse_iso8601(&format!("{date}T{time}Z")), want, "iso {text}");
            assert_eq!(typings::parse_iso8601(text), want, "iso {text}");
        }
        // time zones (ISO only): local time minus the offset
        for (text, want) in [
            ("2000-01-01T00:00:00+05:30", 946_684_800 - 19_800),
            ("2000-01-01T00:00-0800", 946_684_800 + 28_800),
            ("2000-03-01T01:00:00+02", 951_868_800 - 3_600),
            ("1970-01-01T00:00:00-00:00", 0),
        ] {
            assert_eq!(typings::parse_iso8601(text), Some(want as f64), "{text}");
        }
        assert_eq!(typings::parse_iso8601("2000-01-01T00:00:00+24:00"), None);
        // one-digit month and day and a fractional second (`.ts` only)
        assert_eq!(ucr::parse_datetime("2000-2-9 1:02:03.25"), Some(950_058_123.25));
        assert_eq!(ucr::parse_datetime("2000-2-30"), None);
        assert_eq!(civil_epoch_s(2000, 13, 1, 0, 0, 0), None);
    }

    #[test]
    fn decimal_takes_one_to_nine_ascii_digits() {
        assert_eq!(decimal(b"0"), Some(0));
        assert_eq!(decimal(b"0042"), Some(42));
        assert_eq!(decimal(b"999999999"), Some(999_999_999));
        for bad in [&b""[..], b"1234567890", b"+1", b"1a", b" 1", "١".as_bytes()] {
            assert_eq!(decimal(bad), None, "{bad:?}");
        }
    }
}
