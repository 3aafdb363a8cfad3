//! Reading untrusted Parquet files (a version's, or a connector's input)
//! without trusting their numbers (docs/format.md "Limits a reader checks"):
//! every size and count in a footer is checked against the file's real size
//! before anything is read or allocated from it, batches are bounded, and a
//! panic of the parquet or arrow crates on crafted bytes is contained and
//! becomes an error.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{Arc, Mutex, Once};

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::ChunkReader;

use crate::error::Error;
use crate::limits::MAX_PAGE_HEADER_BYTES;
pub use crate::limits::{DEFAULT_BATCH_ROWS, MAX_PAGE_BYTES, MAX_PAGE_EXPANSION};
use crate::thrift::{PageError, PageHeader, PageKind, PageSizes};
use parquet::basic::Encoding;

/// Why the sizes and counts of `meta` cannot hold in a file of `file_len`
/// bytes, or `None`: row counts are not negative and add up to the file's;
/// every column chunk's offsets and length are not negative and lie inside the
/// file; so do the column and offset indexes.
pub fn size_problem(meta: &ParquetMetaData, file_len: u64) -> Option<String> {
    let inside = |start: i64, len: i64| {
        u64::try_from(start)
            .ok()
            .zip(u64::try_from(len).ok())
            .and_then(|(s, l)| s.checked_add(l))
            .is_some_and(|end| end <= file_len)
    };
    let mut rows: i64 = 0;
    for (g, rg) in meta.row_groups().iter().enumerate() {
        if rg.num_rows() < 0 {
            return Some(format!("row group {g} claims {} rows", rg.num_rows()));
        }
        rows = rows.saturating_add(rg.num_rows());
        for (c, col) in rg.columns().iter().enumerate() {
            let at = || format!("row group {g} column chunk {c}");
            let start = col.dictionary_page_offset().unwrap_or(col.data_page_offset());
            if col.data_page_offset() < 0 || start < 0 || col.compressed_size() < 0 || col.num_values() < 0 {
                return Some(format!(
                    "{}: negative offset, length or count (offset {start}, length {}, values {})",
                    at(),
                    col.compressed_size(),
                    col.num_values()
                ));
            }
            if !inside(start, col.compressed_size()) || !inside(col.data_page_offset(), 0) {
                return Some(format!(
                    "{}: bytes {start}..+{} lie beyond the file's {file_len} bytes",
                    at(),
                    col.compressed_size()
                ));
            }
            for (what, offset, len) in [
                ("offset index", col.offset_index_offset(), col.offset_index_length()),
                ("column index", col.column_index_offset(), col.column_index_length()),
            ] {
                if let (Some(offset), Some(len)) = (offset, len) {
                    if !inside(offset, i64::from(len)) {
                        return Some(format!("{}: {what} at {offset}..+{len} lies beyond the file", at()));
                    }
                }
            }
        }
    }
    let claimed = meta.file_metadata().num_rows();
    if claimed != rows {
        return Some(format!("the footer claims {claimed} rows, its row groups {rows}"));
    }
    overlap_problem(meta)
}

/// Why the column chunks of `meta` cannot hold, or `None`: no two share a
/// byte (each from its dictionary or first data page, over its stored size),
/// so no pointer can read another chunk's pages as its own. A negative offset
/// or size is left to [`size_problem`].
pub(crate) fn overlap_problem(meta: &ParquetMetaData) -> Option<String> {
    let mut ranges: Vec<(u64, u64, usize, usize)> = Vec::new();
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for (c, col) in rg.columns().iter().enumerate() {
            // not `byte_range`, which panics on a negative offset or size (those are size_problem's)
            let start = col.dictionary_page_offset().unwrap_or(col.data_page_offset());
            if let (Ok(start), Ok(len)) = (u64::try_from(start), u64::try_from(col.compressed_size())) {
                ranges.push((start, start.saturating_add(len), g, c));
            }
        }
    }
    // ties by row group and column: the later chunk is the one named as overlapping
    ranges.sort_unstable_by_key(|&(start, _, g, c)| (start, g, c));
    ranges.windows(2).find(|w| w[1].0 < w[0].1).map(|w| {
        let ((s0, e0, g0, c0), (s1, e1, g1, c1)) = (w[0], w[1]);
        format!("row group {g1} column chunk {c1} (bytes {s1}..{e1}) overlaps row group {g0} column chunk {c0} (bytes {s0}..{e0})")
    })
}

/// Claims from which [`claim_problem`] asks the allocator first (16 MiB).
const PROBED_CLAIM_BYTES: u64 = 16 << 20;

/// Why `bytes` claimed by a file cannot be allocated, or `None`: a claim of
/// at least 16 MiB is reserved and released first, so an allocation the
/// process cannot make (an address-space limit, `ulimit -v`) is refused here
/// instead of aborting the decoder that would make it.
pub fn claim_problem(bytes: u64) -> Option<String> {
    if bytes < PROBED_CLAIM_BYTES {
        return None;
    }
    let fits = usize::try_from(bytes).is_ok_and(|n| Vec::<u8>::new().try_reserve_exact(n).is_ok());
    (!fits).then(|| format!("{bytes} bytes are more than this process can allocate"))
}

/// Why a page with these header sizes cannot be decoded safely, or `None`:
/// sizes are not negative, and the uncompressed size is at most
/// [`MAX_PAGE_EXPANSION`] times the stored size (at least one byte), at most
/// [`MAX_PAGE_BYTES`], and allocatable ([`claim_problem`]).
pub fn page_problem(sizes: &PageSizes) -> Option<String> {
    let (stored, plain) = (sizes.compressed_page_size, sizes.uncompressed_page_size);
    let (Ok(stored), Ok(plain)) = (u64::try_from(stored), u64::try_from(plain)) else {
        return Some(format!("page claims negative sizes (stored {stored}, uncompressed {plain})"));
    };
    let cap = stored.max(1).saturating_mul(MAX_PAGE_EXPANSION).min(MAX_PAGE_BYTES);
    if plain > cap {
        return Some(format!("a page of {stored} bytes claims to decompress to {plain} (at most {cap})"));
    }
    claim_problem(plain).map(|why| format!("a page of {stored} bytes claims to decompress to {plain}: {why}"))
}

/// [`values_header_problem`] of the page header at the start of `header`,
/// which must decode in full (fail closed).
pub fn values_page_problem(header: &[u8], entries: u64) -> Option<String> {
    match PageHeader::decode(header) {
        Ok((h, _)) => values_header_problem(&h, entries),
        Err(e) => Some(format!("values page: {e}")),
    }
}

/// Why a page of a TimeF values column chunk that the index says holds
/// `entries` level entries cannot be decoded safely, or `None`: it is no
/// dictionary page and its values are not dictionary-encoded (the format never
/// writes either, and a dictionary run expands a few bytes to any count); it
/// claims at most `entries` values, none negative, and at most
/// [`MAX_PAGE_BYTES`] of decoded float32 values, which the process can
/// allocate ([`claim_problem`]).
pub fn values_header_problem(header: &PageHeader, entries: u64) -> Option<String> {
    let (num_values, encoding) = match header.kind {
        PageKind::Data { num_values, encoding, .. } | PageKind::DataV2 { num_values, encoding, .. } => {
            (num_values, encoding)
        }
        PageKind::Dictionary { .. } => {
            return Some("a dictionary page in a values column chunk (the format never writes one)".into())
        }
        PageKind::Index => return Some("an index page in a values column chunk".into()),
    };
    if matches!(encoding, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY) {
        return Some(format!("a values page encoded {encoding} (the format never writes dictionary-encoded values)"));
    }
    let Ok(count) = u64::try_from(num_values) else {
        return Some(format!("a values page claims {num_values} values"));
    };
    if count > entries {
        return Some(format!("a values page claims {count} values, the index puts {entries} in its row group"));
    }
    let bytes = count.saturating_mul(4);
    if bytes > MAX_PAGE_BYTES {
        return Some(format!("a values page claims {count} values, {bytes} bytes decoded (at most {MAX_PAGE_BYTES})"));
    }
    claim_problem(bytes).map(|why| format!("a values page claims {count} values: {why}"))
}

/// [`count_problem`] of the page header at the start of `header`; a header
/// that does not decode in full is left to the size checks and the parquet
/// crate (pages of other writers' files).
pub fn dictionary_problem(header: &[u8]) -> Option<String> {
    PageHeader::decode(header).ok().and_then(|(h, _)| count_problem(&h))
}

/// Why a page header's counts cannot hold, or `None`: no count is negative,
/// and a dictionary page claims at most one entry per uncompressed byte (every
/// entry takes at least one), since the decoder reserves the entries it is
/// told of.
pub fn count_problem(h: &PageHeader) -> Option<String> {
    match h.kind {
        PageKind::Dictionary { num_values, .. } if num_values < 0 || num_values > h.uncompressed_page_size => {
            Some(format!("a dictionary page of {} bytes claims {num_values} entries", h.uncompressed_page_size))
        }
        PageKind::Data { num_values, .. } | PageKind::DataV2 { num_values, .. } if num_values < 0 => {
            Some(format!("a data page claims {num_values} values"))
        }
        _ => None,
    }
}

/// Why the page locations of the offset indexes of `meta` cannot hold, or
/// `None`: each page lies inside its column chunk, in order, with a size that
/// is not negative.
fn page_location_problem(meta: &ParquetMetaData) -> Option<String> {
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let index = meta.page_index_for_row_group(g);
        for (c, col) in rg.columns().iter().enumerate() {
            let Some(pages) = index.offset_index(c) else { continue };
            let (start, len) = col.byte_range();
            let end = start.saturating_add(len);
            let mut at = start;
            for (p, page) in pages.page_locations().iter().enumerate() {
                let offset = u64::try_from(page.offset).unwrap_or(u64::MAX);
                let size = u64::try_from(page.compressed_page_size).unwrap_or(u64::MAX);
                if offset < at || offset.checked_add(size).is_none_or(|e| e > end) {
                    return Some(format!(
                        "row group {g} column chunk {c}: page {p} at {}..+{} lies outside the chunk {start}..{end}",
                        page.offset, page.compressed_page_size
                    ));
                }
                at = offset + size;
            }
        }
    }
    None
}

/// The footer of `reader`, its sizes checked by [`size_problem`] before the
/// offset and column indexes (as `offset_index` and `column_index` ask) are
/// read from them, and every page location of the offset index checked to lie
/// inside its column chunk.
///
/// # Errors
/// The parquet crate's error, or [`ParquetError::General`] with the size problem.
pub fn read_metadata<R: ChunkReader>(
    reader: &R,
    offset_index: PageIndexPolicy,
    column_index: PageIndexPolicy,
) -> std::result::Result<ParquetMetaData, ParquetError> {
    let meta = ParquetMetaDataReader::new().with_page_index_policy(PageIndexPolicy::Skip).parse_and_finish(reader)?;
    if let Some(problem) = size_problem(&meta, reader.len()) {
        return Err(ParquetError::General(problem));
    }
    if offset_index == PageIndexPolicy::Skip && column_index == PageIndexPolicy::Skip {
        return Ok(meta);
    }
    let mut with_index = ParquetMetaDataReader::new_with_metadata(meta)
        .with_offset_index_policy(offset_index)
        .with_column_index_policy(column_index);
    with_index.read_page_indexes(reader)?;
    let meta = with_index.finish()?;
    match page_location_problem(&meta) {
        Some(problem) => Err(ParquetError::General(problem)),
        None => Ok(meta),
    }
}

/// A [`ChunkReader`] that checks every page header the parquet crate is about
/// to decode with [`page_problem`] (the decoder allocates a page's claimed
/// uncompressed size at once), and every range it asks for against the file's
/// size (the crate allocates a range's length before reading it).
///
/// The parquet crate (60.1) reads a page header either from
/// [`ChunkReader::get_read`] at the header's offset (a column chunk walked
/// page by page) or from [`ChunkReader::get_bytes`] of a whole page at a page
/// location of the offset index; both are checked, the first when the header
/// is read, so a reader it opens and never reads costs nothing.
pub struct CheckedPages<R> {
    inner: R,
    checks: PageChecks,
}

/// What [`CheckedPages`] holds a file's pages to, built once from its footer
/// ([`PageChecks::of`]) and shared by every reader of that file
/// ([`PageChecks::wrap`]): building it walks every column chunk of the footer.
#[derive(Debug, Clone)]
pub(crate) struct PageChecks {
    /// Offsets where the offset index says a page (or the dictionary page
    /// before the first located page) starts.
    page_starts: Arc<HashSet<u64>>,
    /// The column chunks of flat columns (no repetition), by start: their
    /// data pages claim at most their row group's rows together.
    flat: Arc<[Claims]>,
}

/// A flat column chunk's byte range, the most values its data pages may claim
/// together, and what the pages read so far claimed (by page offset, so a
/// header read twice counts once): many small pages, each within the limit,
/// are refused once together they pass it.
#[derive(Debug, Clone)]
struct Claims {
    start: u64,
    end: u64,
    /// Its row group's rows.
    limit: u64,
    claimed: Arc<Mutex<(BTreeMap<u64, u64>, u64)>>,
}

impl Claims {
    fn new(byte_range: (u64, u64), limit: u64) -> Claims {
        let (start, len) = byte_range;
        let claimed = Arc::new(Mutex::new((BTreeMap::new(), 0)));
        Claims { start, end: start.saturating_add(len), limit, claimed }
    }

    fn contains(&self, at: u64) -> bool {
        (self.start..self.end).contains(&at)
    }

    /// The page rules of the header at `at` ([`dictionary_problem`]), then
    /// whether the values claimed by the chunk's data pages so far, this
    /// one's included, pass the limit.
    fn problem(&self, at: u64, header: &[u8]) -> Option<String> {
        let first = dictionary_problem(header);
        if first.is_some() {
            return first;
        }
        let count = match PageHeader::decode(header) {
            Ok((
                PageHeader { kind: PageKind::Data { num_values, .. } | PageKind::DataV2 { num_values, .. }, .. },
                _,
            )) => u64::try_from(num_values).unwrap_or(u64::MAX),
            _ => 0,
        };
        // a poisoned lock only means another page's check panicked: the counts stay valid
        let mut claimed = self.claimed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (pages, total) = &mut *claimed;
        if pages.insert(at, count).is_none() {
            *total = total.saturating_add(count);
        }
        let (total, limit) = (*total, self.limit);
        (total > limit).then(|| {
            format!(
                "the data pages of a flat column chunk claim {total} values so far, its row group holds {limit} rows"
            )
        })
    }
}

impl PageChecks {
    /// The checks of the pages of a file whose footer (and offset index, if
    /// read) is `meta`.
    pub(crate) fn of(meta: &ParquetMetaData) -> PageChecks {
        let mut page_starts = HashSet::new();
        let mut flat = Vec::new();
        for (g, rg) in meta.row_groups().iter().enumerate() {
            let index = meta.page_index_for_row_group(g);
            for (c, col) in rg.columns().iter().enumerate() {
                if col.column_descr().max_rep_level() == 0 {
                    flat.push(Claims::new(col.byte_range(), u64::try_from(rg.num_rows()).unwrap_or(0)));
                }
                if let Some(pages) = index.offset_index(c) {
                    page_starts.insert(col.byte_range().0);
                    page_starts.extend(pages.page_locations().iter().filter_map(|p| u64::try_from(p.offset).ok()));
                }
            }
        }
        flat.sort_by_key(|c| c.start);
        PageChecks { page_starts: Arc::new(page_starts), flat: flat.into() }
    }

    /// `inner`, a reader of the file, its pages held to these checks (what a
    /// flat column chunk's pages claimed is counted across every reader, by
    /// page offset, so a header read twice counts once).
    pub(crate) fn wrap<R: ChunkReader>(&self, inner: R) -> CheckedPages<R> {
        CheckedPages { inner, checks: self.clone() }
    }
}

impl<R: ChunkReader> CheckedPages<R> {
    /// Checks the pages of `inner`, whose footer (and offset index, if read) is `meta`.
    pub fn new(inner: R, meta: &ParquetMetaData) -> CheckedPages<R> {
        PageChecks::of(meta).wrap(inner)
    }

    /// The claims the page at `at` is held to: its flat column chunk's
    /// (column chunks do not overlap: [`size_problem`]). A shard's values
    /// pages are read by [`crate::pages`], which holds them to the values rules.
    fn claims(&self, at: u64) -> Option<&Claims> {
        let flat = &self.checks.flat;
        let i = flat.partition_point(|c| c.start <= at);
        i.checked_sub(1).map(|i| &flat[i]).filter(|c| c.contains(at))
    }

    /// The rules for a page header at `at` beyond its sizes: its flat column
    /// chunk's claims, else a dictionary page's entry count ([`dictionary_problem`]).
    fn header_problem(&self, at: u64, header: &[u8]) -> Option<String> {
        match self.claims(at) {
            Some(c) => c.problem(at, header),
            None => dictionary_problem(header),
        }
    }

    /// The reader checked.
    pub fn inner(&self) -> &R {
        &self.inner
    }
}

impl<R: ChunkReader> parquet::file::reader::Length for CheckedPages<R> {
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl<R: ChunkReader> ChunkReader for CheckedPages<R> {
    type T = HeaderChecked<R::T>;

    fn get_read(&self, start: u64) -> std::result::Result<Self::T, ParquetError> {
        let inner = self.inner.get_read(start)?;
        let claims = self.claims(start).cloned();
        Ok(HeaderChecked { inner, at: start, head: Vec::new(), pos: 0, checked: false, claims })
    }

    fn get_bytes(&self, start: u64, length: usize) -> std::result::Result<Bytes, ParquetError> {
        let len = self.inner.len();
        if start.checked_add(length as u64).is_none_or(|end| end > len) {
            return Err(ParquetError::General(format!("bytes {start}..+{length} lie beyond the file's {len} bytes")));
        }
        let bytes = self.inner.get_bytes(start, length)?;
        if self.checks.page_starts.contains(&start) {
            // fail closed: a header whose sizes cannot be read is refused too
            let problem = match PageSizes::decode(&bytes) {
                Ok((sizes, _)) => page_problem(&sizes).or_else(|| self.header_problem(start, &bytes)),
                Err(e) => Some(e.to_string()),
            };
            if let Some(problem) = problem {
                return Err(ParquetError::General(format!("page at byte {start}: {problem}")));
            }
        }
        Ok(bytes)
    }
}

/// A reader positioned at a page header: on the first read, the header is
/// read ahead (at most [`MAX_PAGE_HEADER_BYTES`]) and checked with
/// [`page_problem`] before any byte is handed out.
pub struct HeaderChecked<T> {
    inner: T,
    /// Offset of the header in the file.
    at: u64,
    head: Vec<u8>,
    pos: usize,
    checked: bool,
    /// The claims of the column chunk the header lies in, when known.
    claims: Option<Claims>,
}

impl<T: Read> HeaderChecked<T> {
    fn check(&mut self) -> std::io::Result<()> {
        self.checked = true;
        let mut want = 256;
        loop {
            let at = self.head.len();
            self.head.resize(want, 0);
            let n = read_up_to(&mut self.inner, &mut self.head[at..])?;
            self.head.truncate(at + n);
            // fail closed: a header whose sizes cannot be read is refused,
            // whatever the parquet crate would accept of it
            match PageSizes::decode(&self.head) {
                Ok((sizes, _)) => {
                    let beyond = || match &self.claims {
                        Some(c) => c.problem(self.at, &self.head),
                        None => dictionary_problem(&self.head),
                    };
                    return match page_problem(&sizes).or_else(beyond) {
                        Some(problem) => Err(PageRefused(problem).into()),
                        None => Ok(()),
                    };
                }
                Err(PageError::Truncated { .. }) if self.head.len() == want && want < MAX_PAGE_HEADER_BYTES => {
                    want = (want * 4).min(MAX_PAGE_HEADER_BYTES);
                }
                Err(PageError::Truncated { .. }) if self.head.len() == want => {
                    return Err(PageRefused(format!("page header longer than {MAX_PAGE_HEADER_BYTES} bytes")).into());
                }
                Err(e) => return Err(PageRefused(e.to_string()).into()),
            }
        }
    }
}

/// A page [`HeaderChecked`] refused: corrupt bytes, not a failed read, though
/// it travels through the parquet crate as an I/O error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct PageRefused(String);

impl From<PageRefused> for std::io::Error {
    fn from(refused: PageRefused) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, refused)
    }
}

/// Reads until `buf` is full or the reader ends; returns the bytes read.
fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<T: Read> Read for HeaderChecked<T> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.checked {
            self.check()?;
        }
        if self.pos < self.head.len() {
            let n = buf.len().min(self.head.len() - self.pos);
            buf[..n].copy_from_slice(&self.head[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

thread_local! {
    /// Set while [`contain`] runs `f` on this thread: its panics are errors, not messages.
    static CONTAINING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, turning a panic inside it (the parquet and arrow crates panic on
/// some crafted bytes) into `Err(message)`; the panic prints nothing.
pub fn contain<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CONTAINING.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let outer = CONTAINING.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    CONTAINING.with(|c| c.set(outer));
    result.map_err(|p| {
        let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        format!("the decoder panicked: {}", what.unwrap_or_default())
    })
}

/// A parquet error on a file of a version: [`Error::Corrupt`] naming the file,
/// except a failure to read the bytes (I/O, object store), which stays what it is.
pub fn version_parquet_error(path: &Path, e: ParquetError) -> Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<Error>() {
            Ok(e) => *e,
            Err(inner) => match inner.downcast::<std::io::Error>() {
                Ok(io) if io.get_ref().is_some_and(|e| e.is::<PageRefused>()) => {
                    corrupt(path, format!("parquet: {io}"))
                }
                Ok(io) => crate::storage::read_failed(path, *io),
                Err(inner) => corrupt(path, format!("parquet: {inner}")),
            },
        },
        other => corrupt(path, format!("parquet: {other}")),
    }
}

/// An arrow error on a file of a version: [`Error::Corrupt`] naming the file,
/// except an I/O failure.
pub fn version_arrow_error(path: &Path, e: arrow_schema::ArrowError) -> Error {
    use arrow_schema::ArrowError;
    match e {
        ArrowError::IoError(_, io) => crate::storage::read_failed(path, io),
        ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(e) => *e,
            Err(inner) => match inner.downcast::<ParquetError>() {
                Ok(p) => version_parquet_error(path, *p),
                Err(inner) => corrupt(path, format!("arrow: {inner}")),
            },
        },
        other => corrupt(path, format!("arrow: {other}")),
    }
}

fn corrupt(path: &Path, reason: String) -> Error {
    Error::Corrupt { path: path.to_path_buf(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v1 data page header (TimeF's encoder): type 0, the two sizes, then a
    /// `DataPageHeader` with one value, PLAIN values and levels encoded as
    /// `level_encoding` (4 is BIT_PACKED, which TimeF's own decoder refuses and
    /// the parquet crate accepts).
    fn header(uncompressed: i32, compressed: i32, level_encoding: i32) -> Vec<u8> {
        let mut c = crate::thrift::Compact::new();
        c.i32(1, 0);
        c.i32(2, uncompressed);
        c.i32(3, compressed);
        c.begin(5);
        c.i32(1, 1);
        c.i32(2, 0);
        c.i32(3, level_encoding);
        c.i32(4, level_encoding);
        c.end();
        c.end();
        c.out
    }

    fn read_checked(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let checked = CheckedPages {
            inner: Bytes::copy_from_slice(bytes),
            checks: PageChecks { page_starts: Arc::default(), flat: Arc::new([]) },
        };
        let mut out = Vec::new();
        checked.get_read(0).map_err(std::io::Error::other)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn a_header_whose_encodings_timef_does_not_know_is_still_size_checked() {
        let h = header(i32::MAX, 10, 4);
        assert!(crate::thrift::PageHeader::decode(&h).is_err(), "BIT_PACKED levels are unknown to the full decoder");
        let err = read_checked(&h).unwrap_err();
        assert_eq!(err.to_string(), "a page of 10 bytes claims to decompress to 2147483647 (at most 655360)");
        // the same header with a claim inside the limits reads through, byte for byte
        let mut page = header(100, 10, 4);
        page.extend([7u8; 10]);
        assert_eq!(read_checked(&page).unwrap(), page);
    }

    #[test]
    fn a_header_without_readable_sizes_is_refused_not_passed_on() {
        let err = read_checked(&[0x15, 0x00, 0x00, 0xff, 0xff]).unwrap_err();
        assert_eq!(err.to_string(), "malformed page header at byte 3: page header without both sizes");
        let err = read_checked(&[0x1f; 64]).unwrap_err();
        assert_eq!(err.to_string(), "malformed page header at byte 1: unknown compact type 15");
    }

    #[test]
    fn a_range_beyond_the_file_is_refused_before_it_is_read() {
        let checked = CheckedPages {
            inner: Bytes::from_static(b"PAR1 tiny"),
            checks: PageChecks { page_starts: Arc::default(), flat: Arc::new([]) },
        };
        let err = checked.get_bytes(4, 1 << 40).unwrap_err().to_string();
        assert_eq!(err, "Parquet error: bytes 4..+1099511627776 lie beyond the file's 9 bytes");
    }

    /// A dictionary page header (type 2) of `uncompressed` bytes claiming `entries` entries, PLAIN.
    fn dictionary_header(uncompressed: i32, entries: i32) -> Vec<u8> {
        let mut c = crate::thrift::Compact::new();
        c.i32(1, 2);
        c.i32(2, uncompressed);
        c.i32(3, 10);
        c.begin(7);
        c.i32(1, entries);
        c.i32(2, 0);
        c.end();
        c.end();
        c.out
    }

    #[test]
    fn counts_a_decoder_would_reserve_are_checked_before_it_decodes() {
        // a dictionary page claiming 2e9 entries in 100 bytes (counted nowhere before)
        let h = dictionary_header(100, 2_000_000_000);
        assert_eq!(
            dictionary_problem(&h),
            Some("a dictionary page of 100 bytes claims 2000000000 entries".to_string())
        );
        assert_eq!(
            dictionary_problem(&dictionary_header(100, -1)),
            Some("a dictionary page of 100 bytes claims -1 entries".into())
        );
        assert_eq!(dictionary_problem(&dictionary_header(100, 25)), None);
        // in a values chunk any dictionary page is refused
        assert_eq!(
            values_page_problem(&dictionary_header(100, 25), u64::MAX),
            Some("a dictionary page in a values column chunk (the format never writes one)".into())
        );
        // a data page: a negative count, and one past the index's or the reader's bound
        let (h, _) = PageHeader::decode(&header(100, 10, 3)).unwrap();
        let with = |n: i32| PageHeader {
            kind: PageKind::Data {
                num_values: n,
                encoding: Encoding::PLAIN,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
            },
            ..h.clone()
        };
        assert_eq!(count_problem(&with(-5)), Some("a data page claims -5 values".into()));
        assert_eq!(values_header_problem(&with(-5), 10), Some("a values page claims -5 values".into()));
        assert_eq!(
            values_header_problem(&with(11), 10),
            Some("a values page claims 11 values, the index puts 10 in its row group".into())
        );
        assert_eq!(values_header_problem(&with(10), 10), None);
        assert_eq!(
            values_header_problem(&with(i32::MAX), u64::MAX),
            Some("a values page claims 2147483647 values, 8589934588 bytes decoded (at most 268435456)".into())
        );
        let dict = PageHeader {
            kind: PageKind::Data {
                num_values: 4,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
            },
            ..h
        };
        assert_eq!(
            values_header_problem(&dict, 10),
            Some("a values page encoded RLE_DICTIONARY (the format never writes dictionary-encoded values)".into())
        );
    }

    #[test]
    fn claims_the_process_cannot_allocate_are_refused() {
        assert_eq!(claim_problem(1 << 20), None);
        assert_eq!(claim_problem(64 << 20), None);
        assert_eq!(
            claim_problem(u64::MAX),
            Some(format!("{} bytes are more than this process can allocate", u64::MAX))
        );
    }
}
