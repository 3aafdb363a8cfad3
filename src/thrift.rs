//! Parquet page headers on the wire: the Thrift compact-protocol encoder the
//! writer uses (the parquet crate, as of 60.1, never writes a page CRC, so TimeF
//! serializes page headers itself), its decoder, and the walk over the pages of
//! one column chunk that `timef verify` and the tests use.
//!
//! Only `PageHeader` and its sub-headers are covered (parquet.thrift); fields
//! this module does not know are skipped, so headers written by other
//! implementations (with page statistics, say) decode too. The decoder never
//! panics and never allocates in proportion to what a corrupt header claims.

use std::io::Read;

use parquet::basic::{Encoding, PageType};
use parquet::column::page::{CompressedPage, Page};

/// Thrift compact type ids (Thrift compact protocol spec).
pub(crate) const T_STOP: u8 = 0;
pub(crate) const T_TRUE: u8 = 1;
pub(crate) const T_FALSE: u8 = 2;
pub(crate) const T_BYTE: u8 = 3;
pub(crate) const T_I16: u8 = 4;
pub(crate) const T_I32: u8 = 5;
pub(crate) const T_I64: u8 = 6;
pub(crate) const T_DOUBLE: u8 = 7;
pub(crate) const T_BINARY: u8 = 8;
pub(crate) const T_LIST: u8 = 9;
pub(crate) const T_SET: u8 = 10;
pub(crate) const T_MAP: u8 = 11;
pub(crate) const T_STRUCT: u8 = 12;

/// parquet.thrift `Encoding` ids of the encodings the parquet crate knows
/// (the deprecated BIT_PACKED aside: no TimeF file may use it).
const ENCODING_IDS: [(Encoding, i32); 9] = [
    (Encoding::PLAIN, 0),
    (Encoding::PLAIN_DICTIONARY, 2),
    (Encoding::RLE, 3),
    (Encoding::DELTA_BINARY_PACKED, 5),
    (Encoding::DELTA_LENGTH_BYTE_ARRAY, 6),
    (Encoding::DELTA_BYTE_ARRAY, 7),
    (Encoding::RLE_DICTIONARY, 8),
    (Encoding::BYTE_STREAM_SPLIT, 9),
    (Encoding::ALP, 10),
];

/// parquet.thrift `PageType` ids.
const PAGE_TYPE_IDS: [(PageType, i32); 4] =
    [(PageType::DATA_PAGE, 0), (PageType::INDEX_PAGE, 1), (PageType::DICTIONARY_PAGE, 2), (PageType::DATA_PAGE_V2, 3)];

/// Deepest nesting of unknown structs, lists and maps the decoder skips; a
/// bound so a corrupt header cannot exhaust the stack.
const MAX_DEPTH: usize = 16;

pub use crate::limits::MAX_PAGE_HEADER_BYTES;

// ------------------------------------------------------------------ encoder

/// Thrift compact-protocol encoder for exactly the `PageHeader` fields TimeF writes.
pub(crate) struct Compact {
    pub(crate) out: Vec<u8>,
    last: Vec<i16>,
}

impl Compact {
    pub(crate) fn new() -> Self {
        Compact { out: Vec::with_capacity(48), last: vec![0] }
    }
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }
    fn field(&mut self, id: i16, ty: u8) {
        let last = self.last.last().copied().unwrap_or(0);
        let delta = id - last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | ty);
        } else {
            self.out.push(ty);
            self.varint(((id << 1) ^ (id >> 15)) as u16 as u64);
        }
        if let Some(l) = self.last.last_mut() {
            *l = id;
        }
    }
    pub(crate) fn i32(&mut self, id: i16, v: i32) {
        self.field(id, T_I32);
        self.varint(((v << 1) ^ (v >> 31)) as u32 as u64);
    }
    fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { T_TRUE } else { T_FALSE });
    }
    pub(crate) fn begin(&mut self, id: i16) {
        self.field(id, T_STRUCT);
        self.last.push(0);
    }
    pub(crate) fn end(&mut self) {
        self.out.push(T_STOP);
        self.last.pop();
    }
}

fn encoding_id(e: Encoding) -> parquet::errors::Result<i32> {
    ENCODING_IDS
        .iter()
        .find(|(known, _)| *known == e)
        .map(|(_, id)| *id)
        .ok_or_else(|| parquet::errors::ParquetError::General(format!("unexpected page encoding {e}")))
}

fn size_i32(n: usize) -> parquet::errors::Result<i32> {
    i32::try_from(n).map_err(|_| parquet::errors::ParquetError::General(format!("page of {n} bytes exceeds i32")))
}

/// The serialized page header of `page`, carrying the CRC-32 of the page bytes
/// as stored (Parquet spec "Checksumming": over the compressed page for v1
/// data and dictionary pages). Page-header statistics stay off: the column
/// index carries them.
pub(crate) fn write_page_header(page: &CompressedPage) -> parquet::errors::Result<Vec<u8>> {
    let (data, uncompressed) = (page.data(), page.uncompressed_size());
    match page.compressed_page() {
        Page::DataPage { num_values, encoding, def_level_encoding, rep_level_encoding, .. } => {
            let levels = (*def_level_encoding, *rep_level_encoding);
            data_page_header(uncompressed, data, *num_values, *encoding, levels)
        }
        Page::DictionaryPage { num_values, encoding, is_sorted, .. } => header_with(2, uncompressed, data, |c| {
            c.begin(7);
            c.i32(1, *num_values as i32);
            c.i32(2, encoding_id(*encoding)?);
            c.bool(3, *is_sorted);
            c.end();
            Ok(())
        }),
        Page::DataPageV2 { .. } => {
            Err(parquet::errors::ParquetError::General("TimeF writes v1 data pages only".into()))
        }
    }
}

/// The serialized header of a v1 data page of `num_values` levels whose body
/// as stored is `body` (`uncompressed` bytes before compression), its values
/// in `encoding` and its (definition, repetition) levels in `levels`; with
/// the body's CRC-32, as [`write_page_header`].
pub(crate) fn data_page_header(
    uncompressed: usize,
    body: &[u8],
    num_values: u32,
    encoding: Encoding,
    levels: (Encoding, Encoding),
) -> parquet::errors::Result<Vec<u8>> {
    header_with(0, uncompressed, body, |c| {
        c.begin(5);
        c.i32(1, num_values as i32);
        c.i32(2, encoding_id(encoding)?);
        c.i32(3, encoding_id(levels.0)?);
        c.i32(4, encoding_id(levels.1)?);
        c.end();
        Ok(())
    })
}

/// A page header of parquet.thrift `PageType` id `page_type`: sizes, CRC-32
/// of `body`, then the sub-header `sub` writes.
fn header_with(
    page_type: i32,
    uncompressed: usize,
    body: &[u8],
    sub: impl FnOnce(&mut Compact) -> parquet::errors::Result<()>,
) -> parquet::errors::Result<Vec<u8>> {
    let mut c = Compact::new();
    c.i32(1, page_type);
    c.i32(2, size_i32(uncompressed)?);
    c.i32(3, size_i32(body.len())?);
    c.i32(4, crc32fast::hash(body) as i32);
    sub(&mut c)?;
    c.end();
    Ok(c.out)
}

// ------------------------------------------------------------------ decoder

/// A decoded `PageHeader` (parquet.thrift).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageHeader {
    /// The page's type and its sub-header.
    pub kind: PageKind,
    /// Page size before compression, without the header.
    pub uncompressed_page_size: i32,
    /// Page size as stored, without the header.
    pub compressed_page_size: i32,
    /// CRC-32 of the page bytes as stored, when the writer recorded one.
    pub crc: Option<i32>,
}

/// The page's type with the fields of its sub-header that a verifier needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageKind {
    /// A v1 data page (`DataPageHeader`).
    Data {
        /// Values in the page, nulls included.
        num_values: i32,
        /// Encoding of the values.
        encoding: Encoding,
        /// Encoding of the definition levels.
        def_level_encoding: Encoding,
        /// Encoding of the repetition levels.
        rep_level_encoding: Encoding,
    },
    /// A v2 data page (`DataPageHeaderV2`).
    DataV2 {
        /// Values in the page, nulls included.
        num_values: i32,
        /// Rows in the page.
        num_rows: i32,
        /// Encoding of the values.
        encoding: Encoding,
    },
    /// A dictionary page (`DictionaryPageHeader`).
    Dictionary {
        /// Entries in the dictionary.
        num_values: i32,
        /// Encoding of the entries.
        encoding: Encoding,
    },
    /// An index page (unused by Parquet writers; has no sub-header fields).
    Index,
}

impl PageHeader {
    /// Decodes a page header at the start of `buf`; returns it with its length in bytes.
    ///
    /// # Errors
    /// [`PageError::Truncated`] when `buf` ends inside the header (more bytes
    /// may complete it), [`PageError::Malformed`] otherwise. Offsets in errors
    /// are relative to `buf`.
    pub fn decode(buf: &[u8]) -> Result<(PageHeader, usize), PageError> {
        let mut c = Cursor { buf, pos: 0 };
        let header = c.page_header()?;
        Ok((header, c.pos))
    }
}

/// The two sizes of a page header (`PageHeader` fields 2 and 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSizes {
    /// Page size before compression, without the header.
    pub uncompressed_page_size: i32,
    /// Page size as stored, without the header.
    pub compressed_page_size: i32,
}

impl PageSizes {
    /// The sizes of the page header at the start of `buf`, read without
    /// judging the header's other fields (type, sub-headers, encodings), so a
    /// size check holds whatever else a decoder accepts; returns them with the
    /// header's length.
    ///
    /// # Errors
    /// [`PageError::Truncated`] when `buf` ends inside the header,
    /// [`PageError::Malformed`] for bytes that are no Thrift struct or a
    /// header without both sizes.
    pub fn decode(buf: &[u8]) -> Result<(PageSizes, usize), PageError> {
        let mut c = Cursor { buf, pos: 0 };
        let (mut uncompressed, mut compressed) = (None, None);
        let mut last = 0;
        while let Some((id, ty)) = c.field(&mut last)? {
            match id {
                2 | 3 => {
                    c.expect(id, ty, T_I32)?;
                    let v = Some(c.i32()?);
                    if id == 2 {
                        uncompressed = v;
                    } else {
                        compressed = v;
                    }
                }
                _ => c.skip(ty, 0, false)?,
            }
        }
        match (uncompressed, compressed) {
            (Some(uncompressed_page_size), Some(compressed_page_size)) => {
                Ok((PageSizes { uncompressed_page_size, compressed_page_size }, c.pos))
            }
            _ => Err(c.malformed("page header without both sizes")),
        }
    }
}

/// Why a page header or a page walk failed. Offsets are absolute file offsets
/// in errors of [`ChunkPages`], and relative to the decoded slice in errors of
/// [`PageHeader::decode`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The bytes end inside a page header.
    #[error("page header truncated at byte {offset}")]
    Truncated {
        /// Where the bytes ran out.
        offset: u64,
    },
    /// The bytes are not a valid page header.
    #[error("malformed page header at byte {offset}: {reason}")]
    Malformed {
        /// Where decoding failed.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A page's body runs past the end of its column chunk.
    #[error("page at byte {offset} claims {size} bytes but only {remaining} remain in the column chunk")]
    Overrun {
        /// The page header's offset.
        offset: u64,
        /// The header's `compressed_page_size`.
        size: i64,
        /// Bytes left in the column chunk after the header.
        remaining: u64,
    },
    /// Reading the column chunk failed.
    #[error("reading the column chunk at byte {offset}: {source}")]
    Io {
        /// Where reading failed.
        offset: u64,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl PageError {
    fn shifted(self, by: u64) -> PageError {
        match self {
            PageError::Truncated { offset } => PageError::Truncated { offset: offset + by },
            PageError::Malformed { offset, reason } => PageError::Malformed { offset: offset + by, reason },
            other => other,
        }
    }
}

/// A read position in Thrift compact-protocol bytes (also walked by [`crate::footer`]).
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

/// The fields of a `DataPageHeader`, `DataPageHeaderV2` or `DictionaryPageHeader`
/// that [`PageKind`] keeps, by field id.
#[derive(Default)]
struct SubHeader {
    i32s: [Option<i32>; 7],
}

impl SubHeader {
    fn get(&self, id: usize) -> Option<i32> {
        self.i32s.get(id).copied().flatten()
    }
}

impl Cursor<'_> {
    pub(crate) fn malformed(&self, reason: impl Into<String>) -> PageError {
        PageError::Malformed { offset: self.pos as u64, reason: reason.into() }
    }

    pub(crate) fn byte(&mut self) -> Result<u8, PageError> {
        let b = *self.buf.get(self.pos).ok_or(PageError::Truncated { offset: self.pos as u64 })?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn skip_bytes(&mut self, n: u64) -> Result<(), PageError> {
        let end = (self.pos as u64).saturating_add(n);
        if end > self.buf.len() as u64 {
            return Err(PageError::Truncated { offset: self.buf.len() as u64 });
        }
        self.pos = end as usize;
        Ok(())
    }

    pub(crate) fn varint(&mut self) -> Result<u64, PageError> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(self.malformed("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.malformed("varint longer than 10 bytes"))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, PageError> {
        let raw = self.varint()?;
        let v = (raw >> 1) as i64 ^ -((raw & 1) as i64);
        i32::try_from(v).map_err(|_| self.malformed(format!("{v} does not fit an i32")))
    }

    /// Reads a field header; `None` at the struct's stop byte.
    pub(crate) fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>, PageError> {
        let h = self.byte()?;
        if h == T_STOP {
            return Ok(None);
        }
        let (delta, ty) = (h >> 4, h & 0x0f);
        let id = if delta == 0 {
            let raw = self.varint()?;
            let v = (raw >> 1) as i64 ^ -((raw & 1) as i64);
            i16::try_from(v).map_err(|_| self.malformed(format!("field id {v} does not fit an i16")))?
        } else {
            last.checked_add(i16::from(delta)).ok_or_else(|| self.malformed("field id overflows"))?
        };
        *last = id;
        Ok(Some((id, ty)))
    }

    /// Skips a value of compact type `ty` (element types in lists and maps are
    /// encoded like field types, booleans there taking one byte).
    pub(crate) fn skip(&mut self, ty: u8, depth: usize, in_collection: bool) -> Result<(), PageError> {
        if depth > MAX_DEPTH {
            return Err(self.malformed("nested too deep"));
        }
        match ty {
            T_TRUE | T_FALSE if in_collection => self.skip_bytes(1),
            T_TRUE | T_FALSE => Ok(()),
            T_BYTE => self.skip_bytes(1),
            T_I16 | T_I32 | T_I64 => self.varint().map(|_| ()),
            T_DOUBLE => self.skip_bytes(8),
            T_BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            T_LIST | T_SET => {
                let h = self.byte()?;
                let (short, elem) = (h >> 4, h & 0x0f);
                let n = if short == 15 { self.varint()? } else { u64::from(short) };
                // every element takes at least one byte, so this loop ends
                // at the end of the buffer whatever `n` claims
                for _ in 0..n {
                    self.skip(elem, depth + 1, true)?;
                }
                Ok(())
            }
            T_MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                for _ in 0..n {
                    self.skip(kv >> 4, depth + 1, true)?;
                    self.skip(kv & 0x0f, depth + 1, true)?;
                }
                Ok(())
            }
            T_STRUCT => {
                let mut last = 0;
                while let Some((_, t)) = self.field(&mut last)? {
                    self.skip(t, depth + 1, false)?;
                }
                Ok(())
            }
            other => Err(self.malformed(format!("unknown compact type {other}"))),
        }
    }

    pub(crate) fn expect(&self, id: i16, ty: u8, want: u8) -> Result<(), PageError> {
        if ty == want {
            Ok(())
        } else {
            Err(self.malformed(format!("field {id} has compact type {ty}, expected {want}")))
        }
    }

    /// A sub-header: its i32 fields 1..=6 (field 7 of `DataPageHeaderV2`,
    /// `is_compressed`, and statistics are skipped).
    fn sub_header(&mut self) -> Result<SubHeader, PageError> {
        let mut out = SubHeader::default();
        let mut last = 0;
        while let Some((id, ty)) = self.field(&mut last)? {
            match usize::try_from(id) {
                Ok(i @ 1..=6) if ty == T_I32 => out.i32s[i] = Some(self.i32()?),
                _ => self.skip(ty, 1, false)?,
            }
        }
        Ok(out)
    }

    fn page_header(&mut self) -> Result<PageHeader, PageError> {
        let (mut page_type, mut uncompressed, mut compressed, mut crc) = (None, None, None, None);
        let (mut data, mut dict, mut data_v2) = (None, None, None);
        let mut last = 0;
        while let Some((id, ty)) = self.field(&mut last)? {
            match id {
                1..=4 => {
                    self.expect(id, ty, T_I32)?;
                    let v = Some(self.i32()?);
                    match id {
                        1 => page_type = v,
                        2 => uncompressed = v,
                        3 => compressed = v,
                        _ => crc = v,
                    }
                }
                5 | 7 | 8 => {
                    self.expect(id, ty, T_STRUCT)?;
                    let sub = Some(self.sub_header()?);
                    match id {
                        5 => data = sub,
                        7 => dict = sub,
                        _ => data_v2 = sub,
                    }
                }
                _ => self.skip(ty, 0, false)?,
            }
        }
        let required = |v: Option<i32>, what: &str| v.ok_or_else(|| self.malformed(format!("{what} missing")));
        let type_id = required(page_type, "type")?;
        let page_type = PAGE_TYPE_IDS
            .iter()
            .find(|(_, id)| *id == type_id)
            .map(|(t, _)| *t)
            .ok_or_else(|| self.malformed(format!("unknown page type {type_id}")))?;
        let uncompressed_page_size = required(uncompressed, "uncompressed_page_size")?;
        let compressed_page_size = required(compressed, "compressed_page_size")?;
        if uncompressed_page_size < 0 || compressed_page_size < 0 {
            return Err(self.malformed("negative page size"));
        }
        let encoding = |sub: &SubHeader, field: usize, what: &str| -> Result<Encoding, PageError> {
            let id = required(sub.get(field), what)?;
            ENCODING_IDS
                .iter()
                .find(|(_, known)| *known == id)
                .map(|(e, _)| *e)
                .ok_or_else(|| self.malformed(format!("{what}: unsupported encoding id {id}")))
        };
        let missing = |what: &str| self.malformed(format!("{what} missing"));
        let kind = match page_type {
            PageType::DATA_PAGE => {
                let s = data.ok_or_else(|| missing("data_page_header"))?;
                PageKind::Data {
                    num_values: required(s.get(1), "data_page_header.num_values")?,
                    encoding: encoding(&s, 2, "data_page_header.encoding")?,
                    def_level_encoding: encoding(&s, 3, "data_page_header.definition_level_encoding")?,
                    rep_level_encoding: encoding(&s, 4, "data_page_header.repetition_level_encoding")?,
                }
            }
            PageType::DICTIONARY_PAGE => {
                let s = dict.ok_or_else(|| missing("dictionary_page_header"))?;
                PageKind::Dictionary {
                    num_values: required(s.get(1), "dictionary_page_header.num_values")?,
                    encoding: encoding(&s, 2, "dictionary_page_header.encoding")?,
                }
            }
            PageType::DATA_PAGE_V2 => {
                let s = data_v2.ok_or_else(|| missing("data_page_header_v2"))?;
                PageKind::DataV2 {
                    num_values: required(s.get(1), "data_page_header_v2.num_values")?,
                    num_rows: required(s.get(3), "data_page_header_v2.num_rows")?,
                    encoding: encoding(&s, 4, "data_page_header_v2.encoding")?,
                }
            }
            _ => PageKind::Index,
        };
        Ok(PageHeader { kind, uncompressed_page_size, compressed_page_size, crc })
    }
}

// ------------------------------------------------------------------ page walk

/// One page of a column chunk, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPage {
    /// Absolute file offset of the page header.
    pub offset: u64,
    /// Length of the serialized header; the body follows it.
    pub header_len: u64,
    /// The decoded header.
    pub header: PageHeader,
    /// CRC-32 of the body as stored (what `header.crc` must equal).
    pub body_crc32: u32,
}

impl StoredPage {
    /// Absolute file offset of the page body.
    pub fn body_offset(&self) -> u64 {
        self.offset + self.header_len
    }
    /// Header plus body, the size the offset index records.
    pub fn total_len(&self) -> u64 {
        self.header_len + self.header.compressed_page_size as u64
    }
}

/// Iterator over the pages of one column chunk read from `reader`, which must
/// be positioned at the chunk's first byte. Page bodies stream through the CRC
/// in blocks, so memory stays bounded whatever sizes the headers claim. Stops
/// after the first error: once a header is wrong, where the next page starts
/// is unknown.
#[derive(Debug)]
pub struct ChunkPages<R> {
    reader: R,
    /// Absolute offset of `buf[0]`.
    buf_offset: u64,
    buf: Vec<u8>,
    /// Absolute end of the column chunk.
    end: u64,
    failed: bool,
}

/// Block size of reads and of CRC streaming.
const BLOCK: usize = 64 * 1024;

/// The pages of the column chunk `[start, start + len)`; `reader` must be
/// positioned at `start` (a `&[u8]` of just the chunk works, as does a seeked file).
pub fn chunk_pages<R: Read>(reader: R, start: u64, len: u64) -> ChunkPages<R> {
    ChunkPages { reader, buf_offset: start, buf: Vec::new(), end: start.saturating_add(len), failed: false }
}

impl<R: Read> ChunkPages<R> {
    fn remaining_unbuffered(&self) -> u64 {
        self.end.saturating_sub(self.buf_offset + self.buf.len() as u64)
    }

    /// Appends up to `want` more bytes of the chunk to the buffer; returns how many.
    fn fill(&mut self, want: usize) -> Result<usize, PageError> {
        let n = (want as u64).min(self.remaining_unbuffered()) as usize;
        let at = self.buf.len();
        self.buf.resize(at + n, 0);
        let offset = self.buf_offset + at as u64;
        self.reader.read_exact(&mut self.buf[at..]).map_err(|source| PageError::Io { offset, source })?;
        Ok(n)
    }

    fn next_page(&mut self) -> Result<StoredPage, PageError> {
        let offset = self.buf_offset;
        // decode the header, reading more only when it is cut off
        let (header, header_len) = loop {
            match PageHeader::decode(&self.buf) {
                Ok(done) => break done,
                Err(PageError::Truncated { .. })
                    if self.buf.len() < MAX_PAGE_HEADER_BYTES && self.remaining_unbuffered() > 0 =>
                {
                    self.fill(BLOCK.min(MAX_PAGE_HEADER_BYTES - self.buf.len()))?;
                }
                Err(e) => return Err(e.shifted(offset)),
            }
        };
        let body = header.compressed_page_size as u64;
        let remaining = self.end - offset - header_len as u64;
        if body > remaining {
            return Err(PageError::Overrun { offset, size: i64::from(header.compressed_page_size), remaining });
        }
        let mut crc = crc32fast::Hasher::new();
        let buffered_body = (self.buf.len() - header_len).min(body as usize);
        crc.update(&self.buf[header_len..header_len + buffered_body]);
        let consumed = header_len + buffered_body;
        self.buf.drain(..consumed);
        self.buf_offset += consumed as u64;
        let mut left = body - buffered_body as u64;
        while left > 0 {
            // the buffer is empty here: the body's rest streams through it
            let n = self.fill(BLOCK.min(left as usize))?;
            crc.update(&self.buf);
            self.buf_offset += n as u64;
            self.buf.clear();
            left -= n as u64;
        }
        Ok(StoredPage { offset, header_len: header_len as u64, header, body_crc32: crc.finalize() })
    }
}

impl<R: Read> Iterator for ChunkPages<R> {
    type Item = Result<StoredPage, PageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.buf_offset >= self.end {
            return None;
        }
        let page = self.next_page();
        self.failed = page.is_err();
        Some(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn data_page(body: &[u8]) -> CompressedPage {
        let page = Page::DataPage {
            buf: Bytes::copy_from_slice(body),
            num_values: 300,
            encoding: Encoding::BYTE_STREAM_SPLIT,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        CompressedPage::new(page, 4096)
    }

    #[test]
    fn verify_decoder_reads_what_the_encoder_writes() {
        let body = b"some compressed bytes".to_vec();
        let header = write_page_header(&data_page(&body)).unwrap();
        let (h, len) = PageHeader::decode(&header).unwrap();
        assert_eq!(len, header.len());
        assert_eq!(h.compressed_page_size as usize, body.len());
        assert_eq!(h.uncompressed_page_size, 4096);
        assert_eq!(h.crc, Some(crc32fast::hash(&body) as i32));
        assert_eq!(
            h.kind,
            PageKind::Data {
                num_values: 300,
                encoding: Encoding::BYTE_STREAM_SPLIT,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE
            }
        );
        let dict = Page::DictionaryPage {
            buf: Bytes::from_static(b"dict"),
            num_values: 3,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let header = write_page_header(&CompressedPage::new(dict, 4)).unwrap();
        let (h, _) = PageHeader::decode(&header).unwrap();
        assert_eq!(h.kind, PageKind::Dictionary { num_values: 3, encoding: Encoding::PLAIN });
        // every strict prefix is reported as truncated, never as a header
        for cut in 0..header.len() {
            assert!(matches!(PageHeader::decode(&header[..cut]), Err(PageError::Truncated { .. })), "cut {cut}");
        }
    }

    #[test]
    fn verify_decoder_skips_unknown_fields() {
        // a header as other writers produce it: page statistics inside the
        // data page header, an unknown list field and a long-form field id
        let bytes = [
            0x15, 0x00, 0x15, 0x14, 0x15, 0x08, // type 0, uncompressed 10, compressed 4
            0x2c, // field 5: data page header
            0x15, 0x02, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, // 1 value, PLAIN, RLE, RLE
            0x1c, 0x18, 0x03, b'm', b'a', b'x', 0x18, 0x03, b'm', b'i', b'n', 0x00, // statistics
            0x00, // end of data page header
            0x49, 0x25, 0x02, 0x04, // field 9: list<i32> [1, 2]
            0x08, 0xd8, 0x04, 0x01, b'x', // field 300: binary "x"
            0x00,
        ];
        let (h, len) = PageHeader::decode(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!((h.uncompressed_page_size, h.compressed_page_size, h.crc), (10, 4, None));
        assert_eq!(
            h.kind,
            PageKind::Data {
                num_values: 1,
                encoding: Encoding::PLAIN,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE
            }
        );
        // a known field with the wrong type is malformed, not silently skipped
        let mut wrong = bytes;
        wrong[0] = 0x16;
        assert!(matches!(PageHeader::decode(&wrong), Err(PageError::Malformed { .. })));
    }

    #[test]
    fn verify_page_walk_streams_bodies_and_stops_at_overruns() {
        let mut chunk = Vec::new();
        let bodies: [&[u8]; 2] = [&[7u8; 200_000], b"tail"];
        for body in bodies {
            chunk.extend(write_page_header(&data_page(body)).unwrap());
            chunk.extend_from_slice(body);
        }
        let pages: Vec<StoredPage> =
            chunk_pages(&chunk[..], 100, chunk.len() as u64).collect::<Result<_, _>>().unwrap();
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[0].offset, 100);
        assert_eq!(pages[1].offset, 100 + pages[0].total_len());
        for (p, body) in pages.iter().zip(bodies) {
            assert_eq!(p.body_crc32, crc32fast::hash(body));
            assert_eq!(p.header.crc, Some(p.body_crc32 as i32));
        }
        let short = &chunk[..chunk.len() - 1];
        let results: Vec<_> = chunk_pages(short, 0, short.len() as u64).collect();
        assert_eq!(results.len(), 2);
        assert!(matches!(results[1], Err(PageError::Overrun { .. })));
    }

    proptest! {
        #[test]
        fn verify_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = PageHeader::decode(&bytes);
            let _ = chunk_pages(&bytes[..], 0, bytes.len() as u64).count();
        }
    }
}
