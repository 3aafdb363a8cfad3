//! The `.ts` parser: bytes -> [`TsFile`]. Independent of the dataset model, so
//! that it can be unit-tested on in-memory text and callers can inspect a file's
//! values directly (the dataset keeps values behind loaders that only the writer runs).

use std::path::Path;

use crate::connectors::{civil_epoch_s, decimal, OnMissing, TextEncoding};
use crate::error::{Error, Result};

/// Relative tolerance when checking that timestamps are evenly spaced.
const TIMESTAMP_TOLERANCE: f64 = 1e-6;

/// One parsed value with its time: the timestamp, or the value's index without
/// timestamps; the value is `None` when missing.
type Point = (f64, Option<f64>);

/// What the cases of a file carry besides their values, as its header declares it.
#[derive(Debug, Clone, PartialEq)]
pub enum TsResponse {
    /// No label or target (`@classLabel false`, no `@targetLabel true`).
    None,
    /// `@classLabel true ...`: the declared class labels, in header order.
    Class(Vec<String>),
    /// `@targetLabel true`: one regression target per case.
    Target,
}

/// One case's class label or regression target.
#[derive(Debug, Clone, PartialEq)]
pub enum TsLabel {
    /// The label text as in the file (blanks around the field removed).
    Class(String),
    /// The parsed target.
    Target(f64),
}

/// One dimension (channel) of a case, trailing padding trimmed.
#[derive(Debug, Clone, PartialEq)]
pub struct TsChannel {
    /// The values, parsed as f64 and stored as f32.
    pub values: Vec<f32>,
    /// The first timestamp in seconds; 0 without `@timeStamps true`.
    pub t_start_s: f64,
    /// `1 / dt` of evenly spaced timestamps (at least two points), else `None`.
    pub rate_hz: Option<f64>,
}

/// One kept data line.
#[derive(Debug, Clone, PartialEq)]
pub struct TsCase {
    /// 0-based index among the file's data lines (a dropped case keeps its slot).
    pub index: usize,
    /// 1-based line number in the file.
    pub line: usize,
    /// One entry per dimension.
    pub channels: Vec<TsChannel>,
    /// The label or target, when the header declares one.
    pub label: Option<TsLabel>,
}

/// A parsed `.ts` file.
#[derive(Debug, Clone, PartialEq)]
pub struct TsFile {
    /// The `@problemName` value (blank runs collapsed to one space).
    pub problem_name: Option<String>,
    /// The comment lines before the first tag, `#`/`%` markers and outer blanks stripped.
    pub comments: Vec<String>,
    /// What each case carries besides values.
    pub response: TsResponse,
    /// The kept cases, in file order.
    pub cases: Vec<TsCase>,
    /// 0-based indices (among the data lines) of the cases dropped under [`OnMissing::DropCase`].
    pub dropped: Vec<usize>,
}

impl TsFile {
    /// `@problemName`, then the leading comments (outer empty comment lines
    /// dropped), joined by `\n`; `None` when there is neither.
    pub fn description(&self) -> Option<String> {
        let start = self.comments.iter().position(|c| !c.is_empty());
        let end = self.comments.iter().rposition(|c| !c.is_empty());
        let comments = match (start, end) {
            (Some(s), Some(e)) => self.comments.get(s..=e).unwrap_or_default(),
            _ => &[],
        };
        let parts: Vec<&str> =
            self.problem_name.iter().map(String::as_str).chain(comments.iter().map(String::as_str)).collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.join("\n"))
        }
    }
}

/// Header tags seen so far, with the line each came from (for error messages).
#[derive(Debug, Default)]
struct Header {
    problem_name: Option<String>,
    comments: Vec<String>,
    seen_tag: bool,
    timestamps: bool,
    univariate: Option<(bool, usize)>,
    dimensions: Option<(usize, usize)>,
    class_labels: Option<(Vec<String>, usize)>,
    target: Option<usize>,
}

/// Where the expected dimension count comes from.
struct ExpectedDims {
    count: usize,
    why: String,
}

/// Parser state for one file; `path` goes into every error.
struct Parser<'a> {
    path: &'a Path,
    on_missing: OnMissing,
}

impl Parser<'_> {
    fn err(&self, line: usize, reason: impl Into<String>) -> Error {
        Error::input(self.path, Some(line), reason)
    }
}

/// Reads and parses one `.ts` file without building a dataset (the values are
/// returned directly). Same rules and errors as [`read_ucr`](super::read_ucr).
pub fn parse_ts_file(path: impl AsRef<Path>, on_missing: OnMissing) -> Result<TsFile> {
    parse_ts_file_encoded(path, on_missing, TextEncoding::Utf8)
}

/// [`parse_ts_file`] for a file in `encoding`.
pub fn parse_ts_file_encoded(path: impl AsRef<Path>, on_missing: OnMissing, encoding: TextEncoding) -> Result<TsFile> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| crate::connectors::unreadable(path, e))?;
    match encoding {
        // UTF-8 is checked line by line, so the error names the line
        TextEncoding::Utf8 => parse_ts(path, &bytes, on_missing),
        other => match other.decode(&bytes) {
            Ok(text) => parse_ts(path, text.as_bytes(), on_missing),
            Err(_) => Err(Error::input(path, None, "cannot decode the file")),
        },
    }
}

/// Parses the bytes of a `.ts` file; `path` only names the file in errors.
pub fn parse_ts(path: &Path, bytes: &[u8], on_missing: OnMissing) -> Result<TsFile> {
    let p = Parser { path, on_missing };
    // A UTF-8 byte order mark is allowed before the first line.
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // The last line's number, for errors at the end of the file (1 for an empty file).
    let last_line = body.split(|&b| b == b'\n').count() - usize::from(body.ends_with(b"\n"));
    let last_line = last_line.max(1);

    let mut header = Header::default();
    let mut data_tag: Option<(usize, TsResponse, Option<ExpectedDims>)> = None;
    let mut cases = Vec::new();
    let mut dropped = Vec::new();
    let mut n_data_lines = 0usize;
    let mut any_content = false;

    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let no = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = std::str::from_utf8(raw).map_err(|e| {
            p.err(
                no,
                format!(
                    "line is not valid UTF-8 (byte {} of the line is invalid); {}",
                    e.valid_up_to() + 1,
                    TextEncoding::UTF8_HINT
                ),
            )
        })?;
        let t = text.trim();
        if t.is_empty() {
            continue;
        }
        any_content = true;
        match &mut data_tag {
            None => {
                if t.starts_with('#') || t.starts_with('%') {
                    // Only comments before the first tag describe the dataset.
                    if !header.seen_tag {
                        header.comments.push(t.trim_start_matches(['#', '%']).trim().to_string());
                    }
                } else if let Some(tag) = t.strip_prefix('@') {
                    if p.tag(&mut header, no, tag)? {
                        data_tag = Some(p.finish_header(&header, no)?);
                    }
                } else {
                    return Err(p.err(no, "data line before the @data tag (is @data missing?)"));
                }
            }
            Some((_, response, expected)) => {
                let index = n_data_lines;
                n_data_lines += 1;
                match p.case(no, t, index, &header, response, expected)? {
                    Some(case) => cases.push(case),
                    None => dropped.push(index),
                }
            }
        }
    }

    let Some((data_line, response, _)) = data_tag else {
        return Err(if any_content {
            p.err(last_line, "file ends before the @data tag (truncated header or missing @data)")
        } else {
            p.err(1, "file is empty")
        });
    };
    if n_data_lines == 0 {
        return Err(p.err(data_line, "no data lines after @data"));
    }
    Ok(TsFile { problem_name: header.problem_name, comments: header.comments, response, cases, dropped })
}

/// Parses a tag's boolean value (`true`/`false`, any case).
fn parse_bool(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

impl Parser<'_> {
    /// Applies one `@tag value` line (without the `@`) to `h`; true for `@data`.
    /// A repeated tag overrides the earlier one.
    fn tag(&self, h: &mut Header, no: usize, tag: &str) -> Result<bool> {
        h.seen_tag = true;
        let (name, value) = tag.split_once(char::is_whitespace).unwrap_or((tag, ""));
        let mut words = value.split_whitespace();
        let bool_value = |words: &mut std::str::SplitWhitespace<'_>| -> Result<bool> {
            let w = words.next().unwrap_or("");
            parse_bool(w).ok_or_else(|| self.err(no, format!("@{name} needs true or false, found '{w}'")))
        };
        match name.to_ascii_lowercase().as_str() {
            "data" => return Ok(true),
            "problemname" => {
                let v = words.collect::<Vec<_>>().join(" ");
                h.problem_name = if v.is_empty() { None } else { Some(v) };
            }
            "timestamps" => h.timestamps = bool_value(&mut words)?,
            "univariate" => h.univariate = Some((bool_value(&mut words)?, no)),
            "dimensions" => {
                let w = words.next().unwrap_or("");
                match w.parse::<usize>() {
                    Ok(d) if d > 0 => h.dimensions = Some((d, no)),
                    _ => return Err(self.err(no, format!("@dimensions needs a positive integer, found '{w}'"))),
                }
            }
            "classlabel" => {
                let on = bool_value(&mut words)?;
                let labels: Vec<String> = words.map(str::to_string).collect();
                h.class_labels = match (on, labels.is_empty()) {
                    (true, false) => Some((labels, no)),
                    (true, true) => return Err(self.err(no, "@classLabel true needs the list of class labels")),
                    (false, true) => None,
                    (false, false) => return Err(self.err(no, "@classLabel false must not list class labels")),
                };
            }
            "targetlabel" => h.target = bool_value(&mut words)?.then_some(no),
            // tags only a Monash .tsf header has: the wrong subcommand, most likely
            t @ ("relation" | "attribute" | "frequency" | "horizon") => {
                return Err(self.err(no, format!("@{t} is a Monash .tsf tag, not a .ts one; use `timef ingest tsf`")))
            }
            // @missing, @equalLength and @seriesLength are advisory: missing values and
            // lengths are taken from the data. Other tags are not part of the format.
            _ => {}
        }
        Ok(false)
    }

    /// Checks the header at `@data` (line `no`) and fixes the response kind and the
    /// expected dimension count if the header declares one.
    fn finish_header(&self, h: &Header, no: usize) -> Result<(usize, TsResponse, Option<ExpectedDims>)> {
        let response = match (&h.class_labels, h.target) {
            (Some((_, cl)), Some(tl)) => {
                let cl = *cl;
                return Err(self.err(cl.max(tl), "@classLabel true and @targetLabel true cannot both be set"));
            }
            (Some((labels, _)), None) => TsResponse::Class(labels.clone()),
            (None, Some(_)) => TsResponse::Target,
            (None, None) => TsResponse::None,
        };
        let expected = match (h.univariate, h.dimensions) {
            (Some((true, ul)), Some((d, dl))) if d != 1 => {
                return Err(self.err(dl.max(ul), format!("@dimensions {d} contradicts @univariate true")));
            }
            (_, Some((d, dl))) => Some(ExpectedDims { count: d, why: format!("@dimensions at line {dl}") }),
            (Some((true, ul)), None) => Some(ExpectedDims { count: 1, why: format!("@univariate true at line {ul}") }),
            _ => None,
        };
        Ok((no, response, expected))
    }

    /// Parses data line `no` (trimmed text `t`), case `index`. `None` when the case is
    /// dropped under [`OnMissing::DropCase`].
    fn case(
        &self,
        no: usize,
        t: &str,
        index: usize,
        h: &Header,
        response: &TsResponse,
        expected: &mut Option<ExpectedDims>,
    ) -> Result<Option<TsCase>> {
        let mut fields = split_fields(t, h.timestamps);
        let response_text = match response {
            TsResponse::None => None,
            _ => {
                let what = if matches!(response, TsResponse::Target) { "regression target" } else { "class label" };
                if fields.len() < 2 {
                    return Err(self
                        .err(no, format!("case {index}: expected dimensions then ':' and the {what}, found no ':'")));
                }
                fields.pop()
            }
        };

        match expected {
            Some(e) if e.count != fields.len() => {
                return Err(self.err(
                    no,
                    format!("case {index} has {} dimensions, expected {} ({})", fields.len(), e.count, e.why),
                ));
            }
            Some(_) => {}
            None => *expected = Some(ExpectedDims { count: fields.len(), why: format!("as case 0 at line {no}") }),
        }

        let case_response = match (response, response_text) {
            (TsResponse::Class(declared), Some(text)) => {
                let label = text.trim();
                if !declared.iter().any(|d| d == label) {
                    return Err(self.err(
                        no,
                        format!(
                            "case {index}: class label '{label}' is not declared in @classLabel ({})",
                            declared.join(" ")
                        ),
                    ));
                }
                Some(TsLabel::Class(label.to_string()))
            }
            (TsResponse::Target, Some(text)) => {
                let text = text.trim();
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => Some(TsLabel::Target(v)),
                    parsed => {
                        let why = match parsed {
                            Ok(v) if v.is_nan() => "regression target is missing".to_string(),
                            _ if text == "?" => "regression target is missing".to_string(),
                            Ok(_) => format!("regression target '{text}' is not finite"),
                            Err(_) => format!("regression target '{text}' is not a number"),
                        };
                        return Err(self.err(no, format!("case {index}: {why}")));
                    }
                }
            }
            _ => None,
        };

        let mut channels = Vec::with_capacity(fields.len());
        // Missing-value problems are collected, not returned at once, so that a hard
        // error in a later dimension still wins over dropping the case.
        let mut missing_problem: Option<String> = None;
        for (dim, field) in fields.iter().enumerate() {
            let at = |k: usize, why: String| self.err(no, format!("case {index}, dimension {dim}, value {k}: {why}"));
            let points: Vec<Point> = if h.timestamps {
                parse_tuples(field).map_err(|(k, why)| at(k, why))?
            } else {
                split_values(field)
                    .enumerate()
                    .map(|(k, tok)| Ok((k as f64, parse_value(tok).map_err(|why| at(k, why))?)))
                    .collect::<Result<_>>()?
            };
            let kept = match trim_padding(&points) {
                Ok(kept) => kept,
                Err(why) => {
                    missing_problem.get_or_insert(format!("case {index}, dimension {dim}: {why}"));
                    continue;
                }
            };
            let (t_start_s, rate_hz) = if h.timestamps {
                spacing(kept).map_err(|why| self.err(no, format!("case {index}, dimension {dim}: {why}")))?
            } else {
                (0.0, None)
            };
            let values = kept.iter().filter_map(|&(_, v)| v.map(|v| v as f32)).collect();
            channels.push(TsChannel { values, t_start_s, rate_hz });
        }
        match (missing_problem, self.on_missing) {
            (None, _) => Ok(Some(TsCase { index, line: no, channels, label: case_response })),
            (Some(_), OnMissing::DropCase) => Ok(None),
            (Some(why), OnMissing::Error) => Err(self.err(no, why)),
        }
    }
}

/// Splits a data line at `:`. With timestamps, a `:` inside `( )` belongs to a
/// date-time (`(2019-01-01 00:00:00,1.5)`) and does not split.
fn split_fields(line: &str, timestamps: bool) -> Vec<&str> {
    if !timestamps {
        return line.split(':').collect();
    }
    let mut fields = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in line.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                fields.push(line.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(line.get(start..).unwrap_or(""));
    fields
}

/// The comma-separated tokens of a dimension; an empty dimension has none.
fn split_values(field: &str) -> impl Iterator<Item = &str> {
    let field = field.trim();
    field.split(',').filter(move |_| !field.is_empty())
}

/// Parses one value token: `None` for missing (`?`, `NaN` in any case).
fn parse_value(tok: &str) -> std::result::Result<Option<f64>, String> {
    let tok = tok.trim();
    if tok == "?" {
        return Ok(None);
    }
    if tok.is_empty() {
        return Err("empty value".into());
    }
    match tok.parse::<f64>() {
        Ok(v) if v.is_nan() => Ok(None),
        Ok(v) if !v.is_finite() => Err(format!("'{tok}' is not finite")),
        Ok(v) if !(v as f32).is_finite() => Err(format!("'{tok}' is outside the float32 range")),
        Ok(v) => Ok(Some(v)),
        Err(_) => Err(format!("'{tok}' is not a number")),
    }
}

/// Parses `(time,value),(time,value),...`; errors carry the 0-based value index.
fn parse_tuples(field: &str) -> std::result::Result<Vec<Point>, (usize, String)> {
    let mut out = Vec::new();
    let mut rest = field.trim();
    if rest.is_empty() {
        return Ok(out);
    }
    loop {
        let k = out.len();
        let Some(after_open) = rest.strip_prefix('(') else {
            return Err((k, format!("expected '(' of a (time,value) pair, found '{}'", preview(rest))));
        };
        let Some((inner, after)) = after_open.split_once(')') else {
            return Err((k, "'(' without a closing ')'".into()));
        };
        // Split at the last comma: a value never contains one, a time might in some locales.
        let Some((time, value)) = inner.rsplit_once(',') else {
            return Err((k, format!("expected (time,value), found '({inner})'")));
        };
        let time = parse_time(time.trim()).map_err(|why| (k, why))?;
        let value = parse_value(value).map_err(|why| (k, why))?;
        out.push((time, value));
        rest = after.trim_start();
        if rest.is_empty() {
            return Ok(out);
        }
        match rest.strip_prefix(',') {
            Some(r) => rest = r.trim_start(),
            None => return Err((k + 1, format!("expected ',' between pairs, found '{}'", preview(rest)))),
        }
    }
}

/// At most 20 characters of `s`, for error messages.
fn preview(s: &str) -> String {
    s.chars().take(20).collect()
}

/// Trims trailing missing values (padding of unequal-length data). An interior gap
/// or a dimension without any value is an error (the caller may drop the case).
fn trim_padding(points: &[Point]) -> std::result::Result<&[Point], String> {
    let Some(last) = points.iter().rposition(|(_, v)| v.is_some()) else {
        return Err(if points.is_empty() { "no values".into() } else { "all values are missing".into() });
    };
    let kept = points.get(..=last).unwrap_or_default();
    match kept.iter().position(|(_, v)| v.is_none()) {
        Some(k) => Err(format!("missing value at position {k} is followed by real values (interior gap)")),
        None => Ok(kept),
    }
}

/// Start and rate of timestamped points: the first time, and the rate of the
/// regular grid through them when there are at least two points
/// (`docs/format.md`, "Timestamped `.ts` series").
///
/// The step is taken from the whole span, `(t_last - t_first) / (n - 1)`, and
/// snapped to the shortest decimal within what the stamps' own precision
/// allows (each stamp, read as an f64, is off by up to half an ulp of its
/// magnitude: ~1.2e-7 s near 1.7e9 epoch seconds), so stamps written for
/// 100 Hz give exactly 100 Hz. A point is off the grid, and the series
/// irregular, when it is further from `t_first + k * step` than
/// [`TIMESTAMP_TOLERANCE`] of a step plus four ulps of the largest stamp.
fn spacing(points: &[Point]) -> std::result::Result<(f64, Option<f64>), String> {
    let (Some(&(t0, _)), Some(&(t_last, _))) = (points.first(), points.last()) else {
        return Ok((0.0, None));
    };
    if points.len() < 2 {
        return Ok((t0, None));
    }
    if let Some(w) = points.windows(2).find(|w| w[1].0 <= w[0].0) {
        return Err(format!("timestamps are not increasing ({} then {})", w[0].0, w[1].0));
    }
    let steps = (points.len() - 1) as f64;
    let magnitude_ulp = ulp(t0.abs().max(t_last.abs()));
    let measured = (t_last - t0) / steps;
    let slack = 2.0 * magnitude_ulp / steps;
    let step = shortest_decimal_within(measured, measured - slack, measured + slack);
    let tolerance = TIMESTAMP_TOLERANCE * step + 4.0 * magnitude_ulp;
    for (k, &(t, _)) in points.iter().enumerate() {
        let on_grid = t0 + k as f64 * step;
        if (t - on_grid).abs() > tolerance {
            return Err(format!(
                "irregular timestamps: value {k} at {t} s is {} s off the regular grid of step {step} s from {t0} s",
                t - on_grid
            ));
        }
    }
    let rate = 1.0 / step;
    // A step so small or so large that the rate is not a positive finite number
    // cannot be stored.
    if rate.is_finite() && rate > 0.0 {
        Ok((t0, Some(rate)))
    } else {
        Err(format!("timestamp step {step} s gives no usable sampling rate"))
    }
}

/// The distance from `x` (finite, non-negative) to the next larger f64.
fn ulp(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1) - x
}

/// The number with the fewest significant decimal digits in `[lo, hi]`,
/// `x` itself when none shorter than 17 digits is.
fn shortest_decimal_within(x: f64, lo: f64, hi: f64) -> f64 {
    (1..17)
        .filter_map(|digits| format!("{x:.*e}", digits - 1).parse::<f64>().ok())
        .find(|c| (lo..=hi).contains(c))
        .unwrap_or(x)
}

/// A timestamp: a plain number, or `YYYY-MM-DD[ HH:MM[:SS[.fff]]]` (also with `T`
/// and a trailing `Z`) read as UTC, in epoch seconds.
fn parse_time(tok: &str) -> std::result::Result<f64, String> {
    match tok.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!("time '{tok}' is not finite")),
        Err(_) => parse_datetime(tok)
            .ok_or_else(|| format!("time '{tok}' is neither a number nor a YYYY-MM-DD HH:MM:SS date-time")),
    }
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fff]]][Z]` as UTC epoch seconds; `None` if malformed.
pub(in crate::connectors) fn parse_datetime(s: &str) -> Option<f64> {
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t.trim_start())),
        None => (s, None),
    };
    let mut ymd = date.split('-');
    let year = digits(ymd.next()?, 4, 4)?;
    let month = digits(ymd.next()?, 1, 2)?;
    let day = digits(ymd.next()?, 1, 2)?;
    if ymd.next().is_some() {
        return None;
    }
    let midnight_s = civil_epoch_s(year, month, day, 0, 0, 0)? as f64;
    let mut secs = 0.0;
    if let Some(time) = time {
        let mut hms = time.split(':');
        let h = digits(hms.next()?, 1, 2)?;
        let m = digits(hms.next()?, 1, 2)?;
        let s = match hms.next() {
            Some(sec) => {
                let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
                let whole = digits(whole, 1, 2)?;
                if !frac.bytes().all(|b| b.is_ascii_digit()) || whole > 59 {
                    return None;
                }
                sec.parse::<f64>().ok()?
            }
            None => 0.0,
        };
        if hms.next().is_some() || h > 23 || m > 59 {
            return None;
        }
        // a fractional second is added to the time of day first, then to the
        // day: the order decides the last bit of the stamp
        secs = f64::from(h * 3600 + m * 60) + s;
    }
    Some(midnight_s + secs)
}

/// An unsigned decimal of `min..=max` ASCII digits.
fn digits(s: &str, min: usize, max: usize) -> Option<u32> {
    (min..=max).contains(&s.len()).then(|| decimal(s.as_bytes())).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TsFile> {
        parse_ts(Path::new("t.ts"), text.as_bytes(), OnMissing::Error)
    }

    fn parse_drop(text: &str) -> Result<TsFile> {
        parse_ts(Path::new("t.ts"), text.as_bytes(), OnMissing::DropCase)
    }

    /// (line, reason) of an InvalidInput error.
    fn input_err(r: Result<TsFile>) -> (Option<usize>, String) {
        match r {
            Err(Error::InvalidInput { line, reason, .. }) => (line, reason),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    fn values(f: &TsFile) -> Vec<Vec<Vec<f32>>> {
        f.cases.iter().map(|c| c.channels.iter().map(|ch| ch.values.clone()).collect()).collect()
    }

    #[test]
    fn tags_are_case_insensitive_and_values_tolerate_blanks() {
        let f =
            parse("@PROBLEMNAME  Foo\n@TimeStamps\tFALSE\n@CLASSLABEL  true \t a  B\n@Data\n1,2:a\n3,4:B\n").unwrap();
        assert_eq!(f.problem_name.as_deref(), Some("Foo"));
        assert_eq!(f.response, TsResponse::Class(vec!["a".into(), "B".into()]));
        assert_eq!(values(&f), vec![vec![vec![1.0, 2.0]], vec![vec![3.0, 4.0]]]);
        assert_eq!(f.cases[1].label, Some(TsLabel::Class("B".into())));
    }

    #[test]
    fn bom_crlf_comments_and_blank_lines() {
        let text = "\u{feff}# first\r\n%% second\r\n\r\n@problemName P\r\n# not leading\r\n@data\r\n\r\n1.5,2.5\r\n";
        let f = parse(text).unwrap();
        assert_eq!(f.comments, vec!["first", "second"]);
        assert_eq!(f.description().as_deref(), Some("P\nfirst\nsecond"));
        assert_eq!(values(&f), vec![vec![vec![1.5, 2.5]]]);
        assert_eq!(f.response, TsResponse::None);
    }

    #[test]
    fn description_drops_outer_empty_comment_lines() {
        let f = parse("#\n# a\n#\n# b\n%\n@data\n1\n").unwrap();
        assert_eq!(f.description().as_deref(), Some("a\n\nb"));
        assert_eq!(parse("@data\n1\n").unwrap().description(), None);
    }

    #[test]
    fn label_text_is_kept_exactly() {
        let f = parse("@classLabel true 01 Run-1 x.y\n@data\n1:01\n2:Run-1\n3:x.y\n").unwrap();
        let labels: Vec<_> = f.cases.iter().map(|c| c.label.clone()).collect();
        assert_eq!(
            labels,
            vec![
                Some(TsLabel::Class("01".into())),
                Some(TsLabel::Class("Run-1".into())),
                Some(TsLabel::Class("x.y".into()))
            ]
        );
        // "1" is not "01", and case matters.
        let (line, reason) = input_err(parse("@classLabel true 01 A\n@data\n1:1\n"));
        assert_eq!(line, Some(3));
        assert!(reason.contains("case 0") && reason.contains("'1'"), "{reason}");
        let (line, _) = input_err(parse("@classLabel true 01 A\n@data\n1:01\n1:a\n"));
        assert_eq!(line, Some(4));
    }

    #[test]
    fn trailing_missing_values_are_padding() {
        let f = parse("@data\n1,2,?,NaN,nan:3,?\n4,5,6:7,8\n").unwrap();
        assert_eq!(values(&f), vec![vec![vec![1.0, 2.0], vec![3.0]], vec![vec![4.0, 5.0, 6.0], vec![7.0, 8.0]]]);
    }

    #[test]
    fn interior_gap_and_all_missing_are_errors_or_dropped() {
        let text = "@classLabel true a\n@data\n1,2:3:a\n1,?,2:3:a\n4:?,?:a\n5:6:a\n";
        let (line, reason) = input_err(parse(text));
        assert_eq!(line, Some(4));
        assert!(reason.contains("case 1, dimension 0") && reason.contains("interior gap"), "{reason}");
        let f = parse_drop(text).unwrap();
        assert_eq!(f.cases.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 3]);
        let (line, reason) = input_err(parse("@data\n4:?,?\n"));
        assert_eq!(line, Some(2));
        assert!(reason.contains("case 0, dimension 1") && reason.contains("missing"), "{reason}");
        // An empty dimension has no values either.
        let (_, reason) = input_err(parse("@data\n1::2\n"));
        assert!(reason.contains("dimension 1: no values"), "{reason}");
    }

    #[test]
    fn drop_case_does_not_hide_hard_errors() {
        let (line, reason) = input_err(parse_drop("@data\n1,?,2:x\n"));
        assert_eq!(line, Some(2));
        assert!(reason.contains("case 0, dimension 1, value 0") && reason.contains("'x'"), "{reason}");
    }

    #[test]
    fn unequal_lengths_across_channels() {
        let f = parse("@univariate false\n@dimensions 2\n@data\n1,2,3:4\n").unwrap();
        assert_eq!(values(&f), vec![vec![vec![1.0, 2.0, 3.0], vec![4.0]]]);
    }

    #[test]
    fn dimension_count_must_match() {
        let (line, reason) = input_err(parse("@data\n1:2\n3\n"));
        assert_eq!(line, Some(3));
        assert!(reason.contains("case 1 has 1 dimensions, expected 2"), "{reason}");
        let (line, reason) = input_err(parse("@dimensions 3\n@data\n1:2:3\n1:2\n"));
        assert_eq!(line, Some(4));
        assert!(reason.contains("case 1 has 2 dimensions, expected 3"), "{reason}");
        let (line, _) = input_err(parse("@univariate true\n@data\n1:2\n"));
        assert_eq!(line, Some(3));
        let (line, _) = input_err(parse("@univariate true\n@dimensions 2\n@data\n1:2\n"));
        assert_eq!(line, Some(2));
    }

    #[test]
    fn values_are_f64_then_f32() {
        let f = parse("@data\n0.1,1e-3,-2.5E2,+7\n").unwrap();
        assert_eq!(values(&f), vec![vec![vec![0.1f64 as f32, 1e-3f64 as f32, -250.0, 7.0]]]);
        for bad in ["inf", "-Infinity", "1e39", "abc", "1.0.0", ""] {
            let text = format!("@data\n1,{bad},2\n");
            let (line, reason) = input_err(parse(&text));
            assert_eq!(line, Some(2), "{bad}");
            assert!(reason.contains("case 0, dimension 0, value 1"), "{bad}: {reason}");
        }
    }

    #[test]
    fn regression_targets() {
        let f = parse("@targetLabel true\n@data\n1,2:0.07758620689655173\n3:-1e3\n").unwrap();
        assert_eq!(f.response, TsResponse::Target);
        assert_eq!(f.cases[0].label, Some(TsLabel::Target(0.07758620689655173)));
        assert_eq!(f.cases[1].label, Some(TsLabel::Target(-1000.0)));
        for (bad, word) in [("x", "not a number"), ("?", "missing"), ("inf", "not finite"), ("NaN", "missing")] {
            let (line, reason) = input_err(parse(&format!("@targetLabel true\n@data\n1:{bad}\n")));
            assert_eq!(line, Some(3));
            assert!(reason.contains("case 0") && reason.contains(word), "{bad}: {reason}");
        }
        let (_, reason) = input_err(parse("@targetLabel true\n@data\n1,2\n"));
        assert!(reason.contains("found no ':'"), "{reason}");
        let (line, _) = input_err(parse("@targetLabel true\n@classLabel true a\n@data\n1:a\n"));
        assert_eq!(line, Some(2));
    }

    #[test]
    fn timestamps_regular_numbers() {
        let f = parse("@timeStamps true\n@data\n(0.5,1.5),(0.6,2.5),(0.7,3.5),(0.8,?):(10,1),(12,2)\n").unwrap();
        let ch = &f.cases[0].channels;
        assert_eq!(ch[0].values, vec![1.5, 2.5, 3.5]);
        assert_eq!(ch[0].t_start_s, 0.5);
        let rate = ch[0].rate_hz.unwrap();
        assert!((rate - 10.0).abs() < 1e-9, "{rate}");
        assert_eq!((ch[1].t_start_s, ch[1].rate_hz), (10.0, Some(0.5)));
    }

    /// Regular stamps from 1 Hz to 1 kHz, as epoch seconds near 1.7e9 (where an
    /// f64 resolves ~2.4e-7 s) and as date-times with milliseconds: the rate is
    /// exact, the start is the first stamp.
    #[test]
    fn timestamps_regular_rates_epoch_and_dates() {
        for rate in [1u64, 10, 50, 100, 250, 500, 1000] {
            let step_ms = 1000 / rate;
            let stamps: Vec<(u64, u64)> = (0..2000u64).map(|k| (k * step_ms / 1000, k * step_ms % 1000)).collect();
            let epoch: Vec<String> =
                stamps.iter().enumerate().map(|(k, (s, ms))| format!("({}.{ms:03},{k})", 1_700_000_000 + s)).collect();
            // 2023-11-14 22:13:20 UTC is epoch second 1_700_000_000
            let dates: Vec<String> = stamps
                .iter()
                .enumerate()
                .map(|(k, (s, ms))| {
                    let day_s = 80_000 + s;
                    format!("(2023-11-14 {:02}:{:02}:{:02}.{ms:03},{k})", day_s / 3600, day_s / 60 % 60, day_s % 60)
                })
                .collect();
            for stamps in [epoch, dates] {
                let f = parse(&format!("@timeStamps true\n@data\n{}\n", stamps.join(","))).unwrap();
                let ch = &f.cases[0].channels[0];
                assert_eq!((ch.t_start_s, ch.rate_hz), (1_700_000_000.0, Some(rate as f64)), "{rate} Hz");
                assert_eq!(ch.values.len(), 2000);
            }
        }
    }

    /// One stamp off its 100 Hz grid by a millisecond is irregular, whatever the magnitude.
    #[test]
    fn timestamps_one_millisecond_off_is_irregular() {
        for base in [0u64, 1_700_000_000] {
            let mut stamps: Vec<String> = (0..100u64).map(|k| format!("({base}.{:02}0,{k})", k)).collect();
            stamps[50] = format!("({base}.501,50)");
            let (_, reason) = input_err(parse(&format!("@timeStamps true\n@data\n{}\n", stamps.join(","))));
            assert!(reason.contains("irregular timestamps: value 50"), "{reason}");
        }
    }

    #[test]
    fn timestamps_single_point_has_no_rate() {
        let f = parse("@timeStamps true\n@data\n(3,1)\n").unwrap();
        assert_eq!((f.cases[0].channels[0].t_start_s, f.cases[0].channels[0].rate_hz), (3.0, None));
    }

    #[test]
    fn timestamps_date_times_and_labels() {
        let text = "@timestamps true\n@classlabel true a\n@data\n\
                    (2019-01-01 00:00:00,1),(2019-01-01 01:00:00,2):(2019-01-01T00:00:00Z,3),(2019-01-01 00:30:00,4):a\n";
        let f = parse(text).unwrap();
        let ch = &f.cases[0].channels;
        assert_eq!(ch[0].t_start_s, 1_546_300_800.0);
        assert_eq!(ch[0].rate_hz, Some(1.0 / 3600.0));
        assert_eq!(ch[1].rate_hz, Some(1.0 / 1800.0));
        assert_eq!(f.cases[0].label, Some(TsLabel::Class("a".into())));
    }

    #[test]
    fn timestamps_irregular_and_malformed() {
        let (line, reason) = input_err(parse("@timeStamps true\n@data\n(0,1),(1,2),(3,3)\n"));
        assert_eq!(line, Some(3));
        assert!(reason.contains("case 0, dimension 0") && reason.contains("irregular"), "{reason}");
        let (_, reason) = input_err(parse("@timeStamps true\n@data\n(1,1),(0,2)\n"));
        assert!(reason.contains("not increasing"), "{reason}");
        let (_, reason) = input_err(parse("@timeStamps true\n@data\n(yesterday,1)\n"));
        assert!(reason.contains("value 0") && reason.contains("neither a number"), "{reason}");
        let (_, reason) = input_err(parse("@timeStamps true\n@data\n(0,1),(1,2\n"));
        assert!(reason.contains("value 1") && reason.contains("closing"), "{reason}");
        let (_, reason) = input_err(parse("@timeStamps true\n@data\n(0,1),\n"));
        assert!(reason.contains("value 1"), "{reason}");
        let (_, reason) = input_err(parse("@timeStamps true\n@data\n(0,1)(1,2)\n"));
        assert!(reason.contains("value 1") && reason.contains("','"), "{reason}");
        let (_, reason) = input_err(parse("@timeStamps true\n@data\n(0,?),(1,2)\n"));
        assert!(reason.contains("interior gap"), "{reason}");
    }

    #[test]
    fn datetime_parser() {
        assert_eq!(parse_datetime("1970-01-01 00:00:00"), Some(0.0));
        assert_eq!(parse_datetime("2000-03-01"), Some(951_868_800.0));
        assert_eq!(parse_datetime("2020-02-29 12:30:15.5"), Some(1_582_979_415.5));
        assert_eq!(parse_datetime("1969-12-31 23:59"), Some(-60.0));
        for bad in
            ["2019-02-29", "2019-13-01", "2019-01-01 24:00:00", "2019-1", "19-01-01", "2019-01-01 00:00:00:00", "é"]
        {
            assert_eq!(parse_datetime(bad), None, "{bad}");
        }
    }

    #[test]
    fn structural_errors_have_lines() {
        assert_eq!(input_err(parse("")), (Some(1), "file is empty".into()));
        assert_eq!(input_err(parse("\n  \n")).1, "file is empty");
        assert_eq!(input_err(parse("@problemName X\n@classLabel true 1\n")).0, Some(2));
        assert_eq!(input_err(parse("@problemName X\n@class")).0, Some(2));
        let (line, reason) = input_err(parse("@problemName X\n1,2\n"));
        assert_eq!(line, Some(2));
        assert!(reason.contains("@data"), "{reason}");
        assert_eq!(input_err(parse("@problemName X\n@data\n\n")).0, Some(2));
        assert_eq!(input_err(parse("@timeStamps maybe\n@data\n1\n")).0, Some(1));
        assert_eq!(input_err(parse("@dimensions 0\n@data\n1\n")).0, Some(1));
        assert_eq!(input_err(parse("@classLabel true\n@data\n1\n")).0, Some(1));
        assert_eq!(input_err(parse("@classLabel false a\n@data\n1\n")).0, Some(1));
        let (line, reason) = input_err(parse("@classLabel true a\n@data\n1,2\n"));
        assert_eq!(line, Some(3));
        assert!(reason.contains("case 0") && reason.contains("class label"), "{reason}");
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let (line, reason) = input_err(parse_ts(Path::new("t.ts"), b"@data\n1,2\n3,\xff\n", OnMissing::Error));
        assert_eq!(line, Some(3));
        assert!(reason.contains("UTF-8") && reason.contains("byte 3 of the line"), "{reason}");
    }

    #[test]
    fn unknown_tags_are_ignored() {
        let f = parse("@foo bar\n@missing true\n@equalLength false\n@seriesLength 9\n@data\n1\n").unwrap();
        assert_eq!(values(&f), vec![vec![vec![1.0]]]);
    }

    #[test]
    fn no_panic_on_odd_input() {
        for text in [
            "@",
            "@data\n:",
            "@data\n:::",
            "@timestamps true\n@data\n(",
            "@timestamps true\n@data\n)):(",
            "@data\n,",
            "\u{feff}",
            "@classlabel true a\n@data\n:a",
        ] {
            let _ = parse(text);
            let _ = parse_drop(text);
        }
    }

    proptest::proptest! {
        /// Arbitrary text made of the format's own characters never panics the parser.
        #[test]
        fn parser_never_panics(
            header in "(@(data|timestamps true|classlabel true a 1|targetlabel true|dimensions 2|univariate true)\n){0,4}",
            body in "[@#%:,()?.0-9aeinfNT \t\r\n-]{0,120}",
        ) {
            let text = format!("{header}{body}");
            let _ = parse(&text);
            let _ = parse_drop(&text);
        }

        /// Arbitrary bytes never panic it either.
        #[test]
        fn parser_never_panics_on_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = parse_ts(Path::new("t.ts"), &bytes, OnMissing::Error);
        }
    }
}
