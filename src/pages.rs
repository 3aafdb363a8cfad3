//! The values page reader: the pages of a shard row group's `values` column
//! chunk (`list<float32>`, BYTE_STREAM_SPLIT, zstd, v1 data pages with CRCs,
//! pages cut at rows: docs/format.md §3-5) decoded straight into float32, the
//! one decoder of shard values every read path ([`crate::chunks::decode`]) and
//! the distributed commit's statistics check use.
//!
//! Given the column chunk's footer entry and offset index, the pages a
//! selection of rows needs are fetched in one ranged read, and each page is
//! held to docs/format.md "Limits a reader checks" before it is decompressed:
//! its sizes ([`page_problem`]), its full header ([`values_header_problem`]),
//! the running total of the chunk's claimed values, its place in the offset
//! index, then its CRC. It is decompressed with this thread's zstd context
//! into this thread's buffer (both reused), its repetition and definition
//! levels must give exactly the rows the offset index puts in it (every row
//! starts at a repetition level 0; an empty list is one entry of definition
//! level 0), and its values must fill the rest exactly; only then are the
//! selected rows' values un-split. So a crafted page is refused with a reason,
//! never decoded into other rows' values, and memory follows the index's
//! count of the chunk's values, not a claim of the page.

use std::cell::RefCell;
use std::ops::Range;
use std::path::Path;

use parquet::basic::{Compression, Encoding};
use parquet::file::page_index::offset_index::PageLocation;
use parquet::file::reader::ChunkReader;

use crate::error::{Error, Result};
use crate::footer::{page_problem, values_header_problem, version_parquet_error};
use crate::thrift::{PageHeader, PageKind, PageSizes};

/// The values of the selected rows of one row group, in row order: row `i`'s
/// values are `values[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct RowValues {
    /// The values, row after row.
    pub(crate) values: Vec<f32>,
    /// `rows + 1` offsets into `values`, from 0.
    pub(crate) offsets: Vec<i32>,
}

/// A row group's values column chunk as its footer and offset index describe it.
pub(crate) struct ValuesChunk<'a> {
    /// The column chunk's codec (footer).
    pub(crate) compression: Compression,
    /// File offset of the column chunk's first byte (footer).
    pub(crate) start: u64,
    /// Its pages (offset index), each starting a row.
    pub(crate) pages: &'a [PageLocation],
    /// Rows of the row group (footer).
    pub(crate) rows: u64,
    /// Level entries the index puts in the chunk (a value each, one per empty
    /// chunk): the most its pages may claim together.
    pub(crate) entries: u64,
}

/// Reads the values of the rows `selected` (row offsets within the row
/// group, strictly increasing, each below [`ValuesChunk::rows`]; `None`: every
/// row) of `chunk` from `file`, the shard at `path`, with one ranged read of
/// the pages that hold them.
///
/// # Errors
/// [`Error::Corrupt`] naming `path` and the page for anything the bytes
/// contradict (see the module); I/O and store errors of the read.
pub(crate) fn read_values<R: ChunkReader>(
    path: &Path,
    file: &R,
    chunk: &ValuesChunk<'_>,
    selected: Option<&[usize]>,
) -> Result<RowValues> {
    let mut out = RowValues::default();
    read_values_into(path, file, chunk, selected, &mut out)?;
    Ok(out)
}

/// [`read_values`] into `out`, a caller's buffers reused from row group to
/// row group (cleared first, their capacity kept): a decode then writes to
/// memory already touched, not to freshly mapped pages. On an error `out`
/// holds a part of the rows.
///
/// # Errors
/// Those of [`read_values`].
pub(crate) fn read_values_into<R: ChunkReader>(
    path: &Path,
    file: &R,
    chunk: &ValuesChunk<'_>,
    selected: Option<&[usize]>,
    out: &mut RowValues,
) -> Result<()> {
    let corrupt = |reason: String| Error::Corrupt { path: path.to_path_buf(), reason };
    out.values.clear();
    out.offsets.clear();
    out.offsets.push(0);
    let plan = PagePlan::new(chunk, selected).map_err(corrupt)?;
    let Some(span) = plan.span.clone() else { return Ok(()) };
    let length = usize::try_from(span.end - span.start)
        .map_err(|_| corrupt(format!("a values column chunk of {} bytes", span.end - span.start)))?;
    let bytes = file.get_bytes(span.start, length).map_err(|e| version_parquet_error(path, e))?;
    READER.with(|r| r.borrow_mut().decode(chunk, &plan, span.start, &bytes, out)).map_err(corrupt)
}

/// Which pages of a chunk a selection needs, and the bytes to read for them.
struct PagePlan<'s> {
    /// `(page number, its rows)` of the pages holding selected rows, in order.
    pages: Vec<(usize, Range<u64>)>,
    /// File bytes of those pages (from the chunk's start when page 0 is
    /// needed, so bytes before the first located page are checked too).
    span: Option<Range<u64>>,
    selected: Option<&'s [usize]>,
}

impl<'s> PagePlan<'s> {
    fn new(chunk: &ValuesChunk<'_>, selected: Option<&'s [usize]>) -> std::result::Result<PagePlan<'s>, String> {
        if !matches!(chunk.compression, Compression::ZSTD(_)) {
            return Err(format!("a values column chunk compressed {} (the format writes ZSTD)", chunk.compression));
        }
        let locations = chunk.pages;
        if chunk.rows > 0 && locations.is_empty() {
            return Err("a values column chunk without an offset index (the format writes one)".into());
        }
        let mut pages = Vec::new();
        let mut next = selected.map(|s| s.iter().copied().peekable());
        for (p, page) in locations.iter().enumerate() {
            let first = u64::try_from(page.first_row_index).unwrap_or(u64::MAX);
            let end = match locations.get(p + 1) {
                Some(n) => u64::try_from(n.first_row_index).unwrap_or(u64::MAX),
                None => chunk.rows,
            };
            if (p == 0 && first != 0) || first >= end || end > chunk.rows {
                return Err(format!(
                    "values page {p} of the offset index starts at row {}, its row group holds {} rows",
                    page.first_row_index, chunk.rows
                ));
            }
            let wanted = match &mut next {
                None => true,
                Some(rows) => {
                    let mut any = false;
                    while rows.next_if(|&r| (r as u64) < end).is_some() {
                        any = true;
                    }
                    any
                }
            };
            if wanted {
                pages.push((p, first..end));
            }
        }
        if let Some(row) = next.and_then(|mut rows| rows.next()) {
            return Err(format!("row {row} is beyond the {} rows of the row group", chunk.rows));
        }
        let span = match (pages.first(), pages.last()) {
            (Some(&(p0, _)), Some(&(p1, _))) => {
                let last = &locations[p1];
                let start = if p0 == 0 { chunk.start } else { locations[p0].offset as u64 };
                // inside the chunk, in order: footer::read_metadata checked the locations
                Some(start..last.offset as u64 + last.compressed_page_size as u64)
            }
            _ => None,
        };
        Ok(PagePlan { pages, span, selected })
    }
}

thread_local! {
    /// This thread's page reader: its zstd context and buffers are reused
    /// from page to page and row group to row group.
    static READER: RefCell<PageReader> = RefCell::new(PageReader::default());
}

/// A zstd decompression context and the buffers of one page, reused.
#[derive(Default)]
struct PageReader {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// The decompressed page (grown to the largest page met, never shrunk
    /// below: its initialized length is reused).
    plain: Vec<u8>,
    /// Level entry at which each row of the page starts.
    starts: Vec<u32>,
    /// Level entries of definition level 0 (empty rows).
    empties: Vec<u32>,
    /// Index of each row's first value in the page, then the page's values.
    value_start: Vec<usize>,
}

impl PageReader {
    /// Decodes the pages of `plan` from `bytes` (the file's bytes from
    /// `at`), appending the selected rows to `out`.
    fn decode(
        &mut self,
        chunk: &ValuesChunk<'_>,
        plan: &PagePlan<'_>,
        at: u64,
        bytes: &[u8],
        out: &mut RowValues,
    ) -> std::result::Result<(), String> {
        let mut claimed = 0u64;
        let mut selected = plan.selected.map(|s| s.iter().copied().peekable());
        let chunk_start = chunk.start;
        if plan.pages.first().is_some_and(|&(p, _)| p == 0) {
            let first = chunk.pages[0].offset as u64;
            if chunk_start < first {
                // bytes before the first located page: a page the offset index does not list
                let head = &bytes[..(first - chunk_start) as usize];
                let problem = page_header(head, chunk.entries)
                    .err()
                    .unwrap_or_else(|| "a page the offset index does not list".to_string());
                return Err(format!("page at byte {chunk_start}: {problem}"));
            }
        }
        for (p, rows) in &plan.pages {
            let location = &chunk.pages[*p];
            let offset = location.offset as u64;
            let from = (offset - at) as usize;
            let page = bytes
                .get(from..from + location.compressed_page_size as usize)
                .ok_or_else(|| format!("page at byte {offset}: outside the bytes read of its column chunk"))?;
            let in_page = |r: usize| (r as u64) < rows.end;
            let rows_here: Vec<usize> = match &mut selected {
                None => Vec::new(),
                Some(s) => std::iter::from_fn(|| s.next_if(|&r| in_page(r))).collect(),
            };
            let select = match plan.selected {
                None => None,
                Some(_) => Some(&rows_here[..]),
            };
            self.page(chunk, page, rows, select, &mut claimed, out)
                .map_err(|problem| format!("page at byte {offset}: {problem}"))?;
        }
        Ok(())
    }

    /// Checks and decodes one page (`page`: header and body, as the offset
    /// index locates them) holding the rows `rows`, appending the rows
    /// `selected` (`None`: all) to `out`.
    fn page(
        &mut self,
        chunk: &ValuesChunk<'_>,
        page: &[u8],
        rows: &Range<u64>,
        selected: Option<&[usize]>,
        claimed: &mut u64,
        out: &mut RowValues,
    ) -> std::result::Result<(), String> {
        let StoredPage { header, header_len, entries, split } = check_stored(page, chunk.entries)?;
        *claimed = claimed.saturating_add(entries);
        if *claimed > chunk.entries {
            return Err(format!(
                "the values pages claim {} values so far, the index puts {} in their row group",
                *claimed, chunk.entries
            ));
        }
        let body = &page[header_len..];
        let PageReader { zstd, plain, starts, empties, value_start } = self;
        let plain = decompress(zstd, plain, body, header.uncompressed_page_size as usize)?;
        let (rep, rest) = level_run(plain, "repetition")?;
        let (def, values) = level_run(rest, "definition")?;
        let page_rows = rows.end - rows.start;
        starts.clear();
        empties.clear();
        zero_levels(rep, entries, |at| {
            if starts.is_empty() && at != 0 {
                return Err("the page's first level entry continues a row of the page before".into());
            }
            if starts.len() as u64 >= page_rows {
                return Err(format!(
                    "repetition levels start more rows than the {page_rows} the offset index puts in the page"
                ));
            }
            starts.push(at as u32);
            Ok(())
        })
        .map_err(|e| format!("repetition levels: {e}"))?;
        if (starts.len() as u64) < page_rows {
            return Err(format!(
                "repetition levels start {} rows, the offset index puts {page_rows} in the page",
                starts.len()
            ));
        }
        zero_levels(def, entries, |at| {
            empties.push(at as u32);
            Ok(())
        })
        .map_err(|e| format!("definition levels: {e}"))?;
        let n = entries - empties.len() as u64;
        if values.len() as u64 != n * 4 {
            return Err(format!(
                "{} bytes of values after the levels, {n} float32 values take {}",
                values.len(),
                n * 4
            ));
        }
        let n = n as usize;
        // row j holds level entries starts[j]..starts[j + 1]; an empty row is
        // one entry, of definition level 0, and no value
        value_start.clear();
        let mut empty = empties.iter().peekable();
        for (j, &s) in starts.iter().enumerate() {
            let e = starts.get(j + 1).map_or(entries, |&s| u64::from(s));
            value_start.push(s as usize - (empties.len() - empty.len()));
            if let Some(&z) = empty.next_if(|&&z| u64::from(z) < e) {
                if z != s || e != u64::from(s) + 1 {
                    return Err(format!("definition level 0 inside row {j} of the page (a value is missing)"));
                }
            }
        }
        value_start.push(n);
        let first_row = rows.start as usize;
        let mut push = |rows: Range<usize>| -> std::result::Result<(), String> {
            let range = value_start[rows.start]..value_start[rows.end];
            let total = out.values.len() as u64 + range.len() as u64;
            if total > i32::MAX as u64 {
                return Err(format!("{total} values in one row group (at most 2^31 - 1)"));
            }
            if split {
                unsplit(values, n, range, &mut out.values);
            } else {
                let plain = &values[range.start * 4..range.end * 4];
                out.values.extend(plain.chunks_exact(4).map(|v| f32::from_le_bytes([v[0], v[1], v[2], v[3]])));
            }
            let base = *out.offsets.last().unwrap_or(&0) - value_start[rows.start] as i32;
            out.offsets.extend(value_start[rows.start + 1..=rows.end].iter().map(|&v| base + v as i32));
            Ok(())
        };
        match selected {
            None => push(0..starts.len())?,
            Some(rows) => {
                // consecutive selected rows are un-split in one run
                let mut k = 0;
                while k < rows.len() {
                    let j0 = rows[k] - first_row;
                    let mut j1 = j0 + 1;
                    while rows.get(k + j1 - j0).is_some_and(|&r| r - first_row == j1) {
                        j1 += 1;
                    }
                    push(j0..j1)?;
                    k += j1 - j0;
                }
            }
        }
        Ok(())
    }
}

/// `body` decompressed with `zstd` (made on first use) into `plain` (grown,
/// never shrunk, so its bytes are initialized once): exactly `size` bytes,
/// the header's claim, or a refusal.
fn decompress<'p>(
    zstd: &mut Option<zstd::bulk::Decompressor<'static>>,
    plain: &'p mut Vec<u8>,
    body: &[u8],
    size: usize,
) -> std::result::Result<&'p [u8], String> {
    let zstd = match zstd {
        Some(z) => z,
        None => zstd.insert(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?),
    };
    if plain.len() < size {
        // checked by page_problem: at most MAX_PAGE_BYTES, and allocatable
        plain.resize(size, 0);
    }
    let n = zstd
        .decompress_to_buffer(body, &mut plain[..size])
        .map_err(|e| format!("zstd: {e} (the header claims {size} bytes decompressed)"))?;
    if n != size {
        return Err(format!("decompresses to {n} bytes, its header claims {size}"));
    }
    Ok(&plain[..size])
}

/// The header at the start of `page`, held to the page rules before its
/// body is touched: sizes ([`page_problem`], read alone so a header the full
/// decoder refuses is still size-checked), then the values rules
/// ([`values_header_problem`] against `entries`); returns it and its length.
/// A stored `values` page's header as [`check_stored`] found it.
pub(crate) struct StoredPage {
    pub(crate) header: PageHeader,
    /// Bytes of the header; the body follows.
    pub(crate) header_len: usize,
    /// Level entries the page claims (its header's `num_values`).
    pub(crate) entries: u64,
    /// Its values are BYTE_STREAM_SPLIT (else PLAIN).
    pub(crate) split: bool,
}

/// Checks a stored `values` page (header and body, as the offset index
/// locates it) in a column chunk of `entries` level entries as every read
/// checks it before decompressing (docs/format.md "Limits a reader checks"):
/// its sizes and header, a v1 data page of BYTE_STREAM_SPLIT (or PLAIN:
/// what other Parquet writers store by default, a rewritten shard) values
/// and RLE levels, a body of the size the header gives, and its CRC where
/// it has one. The reader's pages and an edit's base pages, copied or
/// decoded (`src/writer/base.rs`), pass it.
pub(crate) fn check_stored(page: &[u8], entries: u64) -> std::result::Result<StoredPage, String> {
    let (header, header_len) = page_header(page, entries)?;
    let PageKind::Data { num_values, encoding, def_level_encoding, rep_level_encoding } = header.kind else {
        return Err("a v2 data page in a values column chunk (the format writes v1 pages)".into());
    };
    let split = match encoding {
        Encoding::BYTE_STREAM_SPLIT => true,
        Encoding::PLAIN => false,
        other => return Err(format!("a values page encoded {other} (the format writes BYTE_STREAM_SPLIT)")),
    };
    if def_level_encoding != Encoding::RLE || rep_level_encoding != Encoding::RLE {
        return Err(format!(
            "a values page with {rep_level_encoding}/{def_level_encoding} levels (the format writes RLE levels)"
        ));
    }
    let body = &page[header_len..];
    if body.len() != header.compressed_page_size as usize {
        return Err(format!(
            "a header of {header_len} bytes and a body of {} take {} bytes, the offset index locates {}",
            header.compressed_page_size,
            header_len as u64 + header.compressed_page_size as u64,
            page.len()
        ));
    }
    if let Some(crc) = header.crc {
        let actual = crc32fast::hash(body);
        if actual != crc as u32 {
            return Err(format!("CRC-32 {actual:#010x} of the stored page, its header records {:#010x}", crc as u32));
        }
    }
    // not negative: values_header_problem
    Ok(StoredPage { header, header_len, entries: num_values as u64, split })
}

fn page_header(page: &[u8], entries: u64) -> std::result::Result<(PageHeader, usize), String> {
    let (sizes, _) = PageSizes::decode(page).map_err(|e| e.to_string())?;
    if let Some(problem) = page_problem(&sizes) {
        return Err(problem);
    }
    let (header, len) = PageHeader::decode(page).map_err(|e| format!("values page: {e}"))?;
    match values_header_problem(&header, entries) {
        Some(problem) => Err(problem),
        None => Ok((header, len)),
    }
}

/// Splits a v1 page's RLE level run (4-byte little-endian length, then the
/// levels) off the front of `bytes`.
fn level_run<'b>(bytes: &'b [u8], what: &str) -> std::result::Result<(&'b [u8], &'b [u8]), String> {
    let (len, rest) =
        bytes.split_first_chunk::<4>().ok_or_else(|| format!("the page ends before its {what} levels' length"))?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > rest.len() {
        return Err(format!("{what} levels of {len} bytes, {} remain in the page", rest.len()));
    }
    Ok(rest.split_at(len))
}

/// Decodes exactly `count` levels of bit width 1 (max level 1) from the
/// RLE/bit-packed hybrid `data`, calling `zero` with the entry number of
/// every level 0 in order. A bit-packed group may pad past `count`; an RLE
/// run may not, nor may a level be above 1.
fn zero_levels(
    data: &[u8],
    count: u64,
    mut zero: impl FnMut(u64) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let mut pos = 0usize;
    let mut at = 0u64;
    while at < count {
        let mut header = 0u64;
        let mut shift = 0;
        loop {
            let b = *data.get(pos).ok_or_else(|| format!("{at} of {count} level entries, then the levels end"))?;
            pos += 1;
            if shift > 56 {
                return Err("a run header longer than 9 bytes".into());
            }
            header |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        if header & 1 == 0 {
            let n = header >> 1;
            let level = *data.get(pos).ok_or_else(|| "an RLE run without its level".to_string())?;
            pos += 1;
            if n > count - at {
                return Err(format!("an RLE run of {n} entries after {at} of {count}"));
            }
            match level {
                0 => (at..at + n).try_for_each(&mut zero)?,
                1 => {}
                other => return Err(format!("level {other} (the column's maximum is 1)")),
            }
            at += n;
        } else {
            let groups = (header >> 1) as usize;
            let packed = data.get(pos..pos.saturating_add(groups)).ok_or_else(|| {
                format!("a bit-packed run of {groups} bytes, {} remain", data.len().saturating_sub(pos))
            })?;
            pos += groups;
            for &byte in packed {
                let take = (count - at).min(8);
                let mut zeros = !byte & ((1u16 << take) - 1) as u8;
                while zeros != 0 {
                    zero(at + u64::from(zeros.trailing_zeros()))?;
                    zeros &= zeros - 1;
                }
                at += take;
                if at == count {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Appends values `range` of the BYTE_STREAM_SPLIT `streams` of `n` float32
/// values (byte k of value i at `streams[k * n + i]`) to `out`: 16 values at
/// a time by four byte-interleaves of SSE2 (x86-64's baseline; about 3x the
/// auto-vectorized loop, which moves 4 values a step), the rest one by one.
fn unsplit(streams: &[u8], n: usize, range: Range<usize>, out: &mut Vec<f32>) {
    let (a, b) = (range.start, range.end);
    let (s0, s1, s2, s3) =
        (&streams[a..b], &streams[n + a..n + b], &streams[2 * n + a..2 * n + b], &streams[3 * n + a..3 * n + b]);
    out.reserve(b - a);
    let done = unsplit_blocks(s0, s1, s2, s3, out);
    out.extend(
        s0[done..]
            .iter()
            .zip(&s1[done..])
            .zip(&s2[done..])
            .zip(&s3[done..])
            .map(|(((&b0, &b1), &b2), &b3)| f32::from_bits(u32::from_le_bytes([b0, b1, b2, b3]))),
    );
}

/// Appends the values of the whole blocks of 16 of the four equally long
/// streams to `out`, whose capacity holds them all; returns how many.
#[cfg(target_arch = "x86_64")]
fn unsplit_blocks(s0: &[u8], s1: &[u8], s2: &[u8], s3: &[u8], out: &mut Vec<f32>) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_storeu_si128, _mm_unpackhi_epi16, _mm_unpackhi_epi8, _mm_unpacklo_epi16,
        _mm_unpacklo_epi8,
    };
    let at = out.len();
    let blocks = s0.len() / 16;
    let spare = &mut out.spare_capacity_mut()[..blocks * 16];
    let streams = s0.chunks_exact(16).zip(s1.chunks_exact(16)).zip(s2.chunks_exact(16)).zip(s3.chunks_exact(16));
    for (dst, (((b0, b1), b2), b3)) in spare.chunks_exact_mut(16).zip(streams) {
        // SAFETY: SSE2 is part of x86-64; every load reads a chunk of exactly
        // 16 bytes, and the four stores write the 64 bytes of `dst`, 16
        // float32 slots of `out`'s spare capacity (unaligned accesses).
        unsafe {
            let load = |s: &[u8]| _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
            let (b0, b1, b2, b3) = (load(b0), load(b1), load(b2), load(b3));
            let (lo01, hi01) = (_mm_unpacklo_epi8(b0, b1), _mm_unpackhi_epi8(b0, b1));
            let (lo23, hi23) = (_mm_unpacklo_epi8(b2, b3), _mm_unpackhi_epi8(b2, b3));
            let p = dst.as_mut_ptr().cast::<__m128i>();
            _mm_storeu_si128(p, _mm_unpacklo_epi16(lo01, lo23));
            _mm_storeu_si128(p.add(1), _mm_unpackhi_epi16(lo01, lo23));
            _mm_storeu_si128(p.add(2), _mm_unpacklo_epi16(hi01, hi23));
            _mm_storeu_si128(p.add(3), _mm_unpackhi_epi16(hi01, hi23));
        }
    }
    // SAFETY: the loop above initialized the `blocks * 16` slots after `at`
    unsafe { out.set_len(at + blocks * 16) };
    blocks * 16
}

/// Elsewhere the values are appended one by one ([`unsplit`]'s tail).
#[cfg(not(target_arch = "x86_64"))]
fn unsplit_blocks(_: &[u8], _: &[u8], _: &[u8], _: &[u8], _: &mut Vec<f32>) -> usize {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use parquet::basic::ZstdLevel;

    /// Levels as one bit-packed run (bit width 1), as a v1 page stores them.
    fn bit_packed(levels: &[u8]) -> Vec<u8> {
        let groups = levels.len().div_ceil(8);
        let mut out = vec![((groups << 1) | 1) as u8];
        for g in levels.chunks(8) {
            out.push(g.iter().enumerate().fold(0u8, |b, (i, &l)| b | (l << i)));
        }
        out
    }

    /// The decompressed page of `rows`: repetition levels, definition levels
    /// (an empty row is one entry of level 0), BYTE_STREAM_SPLIT values.
    fn plain(rows: &[&[f32]]) -> (Vec<u8>, i32) {
        let (mut rep, mut def, mut values) = (Vec::new(), Vec::new(), Vec::new());
        for row in rows {
            if row.is_empty() {
                rep.push(0);
                def.push(0);
            }
            for (i, v) in row.iter().enumerate() {
                rep.push(u8::from(i > 0));
                def.push(1);
                values.push(*v);
            }
        }
        let mut out = [bit_packed_run(&rep), bit_packed_run(&def)].concat();
        for k in 0..4 {
            out.extend(values.iter().map(|v| v.to_le_bytes()[k]));
        }
        (out, rep.len() as i32)
    }

    /// A v1 data page (header and zstd `body`) of `entries` level entries,
    /// its header claiming `uncompressed` bytes and `crc`.
    fn page(entries: i32, body: &[u8], uncompressed: i32, crc: u32) -> Vec<u8> {
        let mut c = crate::thrift::Compact::new();
        c.i32(1, 0);
        c.i32(2, uncompressed);
        c.i32(3, body.len() as i32);
        c.i32(4, crc as i32);
        c.begin(5);
        c.i32(1, entries);
        c.i32(2, 9);
        c.i32(3, 3);
        c.i32(4, 3);
        c.end();
        c.end();
        [c.out, body.to_vec()].concat()
    }

    /// The page of the decompressed bytes `plain` holding `entries` level
    /// entries, compressed, its header's sizes and CRC true.
    fn sealed(plain: &[u8], entries: i32) -> Vec<u8> {
        let body = zstd::bulk::compress(plain, 3).unwrap();
        page(entries, &body, plain.len() as i32, crc32fast::hash(&body))
    }

    /// A well-formed page of `rows`.
    fn good_page(rows: &[&[f32]]) -> Vec<u8> {
        let (plain, entries) = plain(rows);
        sealed(&plain, entries)
    }

    /// `levels` as a v1 page stores them: their length, then one bit-packed run.
    fn bit_packed_run(levels: &[u8]) -> Vec<u8> {
        let run = bit_packed(levels);
        [&(run.len() as u32).to_le_bytes()[..], &run].concat()
    }

    /// Reads `selected` rows of the chunk of `pages` (each with its rows), placed from byte 0.
    fn read(
        pages: &[(Vec<u8>, u64)],
        entries: u64,
        selected: Option<&[usize]>,
    ) -> std::result::Result<RowValues, String> {
        let (mut bytes, mut locations, mut row) = (Vec::new(), Vec::new(), 0);
        for (p, rows) in pages {
            locations.push(PageLocation {
                offset: bytes.len() as i64,
                compressed_page_size: p.len() as i32,
                first_row_index: row,
            });
            bytes.extend(p);
            row += *rows as i64;
        }
        let chunk = ValuesChunk {
            compression: Compression::ZSTD(ZstdLevel::default()),
            start: 0,
            pages: &locations,
            rows: row as u64,
            entries,
        };
        read_values(Path::new("shard"), &Bytes::from(bytes), &chunk, selected).map_err(|e| match e {
            Error::Corrupt { reason, .. } => reason,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn pages_decode_to_the_selected_rows_exactly() {
        let (a, b, c, d): (&[f32], &[f32], &[f32], &[f32]) = (&[1.5, -2.0, 3.25], &[], &[f32::MAX], &[7.0; 20]);
        let pages = [(good_page(&[a, b, c]), 3), (good_page(&[d]), 1)];
        let all = read(&pages, 25, None).unwrap();
        let want: Vec<f32> = [a, b, c, d].concat();
        assert_eq!(all, RowValues { values: want, offsets: vec![0, 3, 3, 4, 24] });
        // rows 0 and 2 (one page), rows 1 and 3 (across pages): other rows' values never appear
        assert_eq!(
            read(&pages, 25, Some(&[0, 2])).unwrap(),
            RowValues { values: vec![1.5, -2.0, 3.25, f32::MAX], offsets: vec![0, 3, 4] }
        );
        assert_eq!(
            read(&pages, 25, Some(&[1, 3])).unwrap(),
            RowValues { values: vec![7.0; 20], offsets: vec![0, 0, 20] }
        );
        // page 0 is not read for row 3 alone: its bytes may be anything
        let mut broken = pages.clone();
        broken[0].0.iter_mut().for_each(|b| *b = 0xff);
        assert_eq!(read(&broken, 25, Some(&[3])).unwrap().values, vec![7.0; 20]);
    }

    #[test]
    fn levels_that_claim_more_rows_than_the_offset_index_are_refused() {
        let p = good_page(&[&[1.0, 2.0], &[3.0]]);
        assert_eq!(
            read(&[(p.clone(), 1)], 3, None).unwrap_err(),
            "page at byte 0: repetition levels: repetition levels start more rows than the 1 the offset index puts in the page"
        );
        // and fewer
        let two = good_page(&[&[1.0, 2.0, 3.0]]);
        assert_eq!(
            read(&[(two, 2)], 3, None).unwrap_err(),
            "page at byte 0: repetition levels start 1 rows, the offset index puts 2 in the page"
        );
        // a page claiming more entries than the index puts in the row group
        assert_eq!(
            read(&[(p, 2)], 2, None).unwrap_err(),
            "page at byte 0: a values page claims 3 values, the index puts 2 in its row group"
        );
    }

    #[test]
    fn truncated_zstd_is_refused() {
        let (plain, entries) = plain(&[&[1.0; 100]]);
        let body = zstd::bulk::compress(&plain, 3).unwrap();
        let cut = &body[..body.len() - 3];
        let p = page(entries, cut, plain.len() as i32, crc32fast::hash(cut));
        assert_eq!(
            read(&[(p, 1)], 100, None).unwrap_err(),
            format!(
                "page at byte 0: zstd: Src size is incorrect (the header claims {} bytes decompressed)",
                plain.len()
            )
        );
    }

    #[test]
    fn a_page_whose_uncompressed_size_lies_is_refused() {
        let (plain, entries) = plain(&[&[1.0, 2.0, 3.0]]);
        let body = zstd::bulk::compress(&plain, 3).unwrap();
        let n = plain.len() as i32;
        let more = page(entries, &body, n + 8, crc32fast::hash(&body));
        assert_eq!(
            read(&[(more, 1)], 3, None).unwrap_err(),
            format!("page at byte 0: decompresses to {n} bytes, its header claims {}", n + 8)
        );
        let less = page(entries, &body, n - 1, crc32fast::hash(&body));
        assert_eq!(
            read(&[(less, 1)], 3, None).unwrap_err(),
            format!(
                "page at byte 0: zstd: Destination buffer is too small (the header claims {} bytes decompressed)",
                n - 1
            )
        );
        // a claim past the expansion limit is refused before anything is allocated
        let huge = page(entries, &body, i32::MAX, crc32fast::hash(&body));
        assert_eq!(
            read(&[(huge, 1)], 3, None).unwrap_err(),
            format!(
                "page at byte 0: a page of {} bytes claims to decompress to 2147483647 (at most {})",
                body.len(),
                body.len() << 16
            )
        );
    }

    #[test]
    fn a_crc_mismatch_is_refused_before_decompressing() {
        let mut p = good_page(&[&[1.0, 2.0]]);
        let last = p.len() - 1;
        let (h, len) = PageHeader::decode(&p).unwrap();
        p[last] ^= 1;
        let actual = crc32fast::hash(&p[len..]);
        assert_eq!(
            read(&[(p, 1)], 2, None).unwrap_err(),
            format!(
                "page at byte 0: CRC-32 {actual:#010x} of the stored page, its header records {:#010x}",
                h.crc.unwrap() as u32
            )
        );
    }

    #[test]
    fn levels_above_the_maximum_or_a_missing_value_are_refused() {
        // repetition levels: one RLE run of two entries of level 2
        let rle_of_2 = [&4u32.to_le_bytes()[..], &[2 << 1, 2, 0, 0]].concat();
        let too_high = [&rle_of_2[..], &bit_packed_run(&[1, 1])[..], &[0u8; 8]].concat();
        assert_eq!(
            read(&[(sealed(&too_high, 2), 1)], 2, None).unwrap_err(),
            "page at byte 0: repetition levels: level 2 (the column's maximum is 1)"
        );
        // a row of two entries, the second of definition level 0
        let missing = [&bit_packed_run(&[0, 1])[..], &bit_packed_run(&[1, 0])[..], &[0u8; 4]].concat();
        assert_eq!(
            read(&[(sealed(&missing, 2), 1)], 2, None).unwrap_err(),
            "page at byte 0: definition level 0 inside row 0 of the page (a value is missing)"
        );
    }

    #[test]
    fn unsplit_interleaves_the_four_streams() {
        let values: Vec<f32> = (0..37).map(|i| i as f32 * 1.25 - 7.0e5).collect();
        let mut streams = Vec::new();
        for k in 0..4 {
            streams.extend(values.iter().map(|v| v.to_le_bytes()[k]));
        }
        // blocks of 16 and a tail, from any offset
        for range in [3..30, 0..37, 5..21, 7..7] {
            let mut out = vec![99.0];
            unsplit(&streams, 37, range.clone(), &mut out);
            assert_eq!(out, [&[99.0][..], &values[range]].concat());
        }
    }
}
