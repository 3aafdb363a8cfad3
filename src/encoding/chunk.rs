//! The column-chunk encoder (FORMAT-BRIEF §3): values go to the parquet
//! crate's typed column writers, which hand finished pages to its own
//! `CrcPageWriter`. That page writer serializes the Thrift page header itself
//! ([`crate::thrift`]) so it can carry the CRC-32 of the page bytes (the
//! parquet crate, as of 60.1, never writes one), and buffers the chunk in
//! memory so chunks of one row group can be encoded on several threads and
//! spliced into the file in order with `SerializedRowGroupWriter::append_column`,
//! which relocates offsets.
//!
//! Page boundaries are chosen by the caller (a page plan of row counts): each
//! page is one `write_batch` call, and the pinned properties ([`super`]) make
//! the column writer close a page after every call and never in between. This
//! is how TimeF's row-aligned content-defined chunking (`docs/format.md`,
//! "Pages") is realised.

use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::column::writer::{get_column_writer, get_typed_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::data_type::{
    ByteArray, ByteArrayType, DataType, DoubleType, FixedLenByteArray, FixedLenByteArrayType, FloatType, Int32Type,
    Int64Type,
};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::schema::types::{ColumnDescPtr, ColumnDescriptor};

use crate::error::{Error, Result};

use super::IdEncoding;

/// The values of one leaf column chunk, in Parquet physical form.
#[derive(Debug)]
pub(crate) enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(Vec<ByteArray>),
    Fixed(Vec<FixedLenByteArray>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bytes(v) => v.len(),
            Values::Fixed(v) => v.len(),
        }
    }
}

/// One leaf column chunk: non-null values plus definition / repetition levels
/// (absent for a required, non-repeated leaf).
#[derive(Debug)]
pub(crate) struct LeafData {
    pub values: Values,
    pub def: Option<Vec<i16>>,
    pub rep: Option<Vec<i16>>,
}

/// Page boundaries of a column chunk as consecutive row counts
/// (each entry one data page; zero-row pages are not allowed).
pub(crate) type PagePlan = [usize];

/// A column chunk encoded into memory, ready to splice into a row group.
pub(crate) struct EncodedChunk {
    pub bytes: ChunkBytes,
    pub close: ColumnCloseResult,
}

/// A column chunk's bytes as consecutive segments, read end to end by the
/// file writer without first being joined: a `values` page copied from a
/// base stays in the buffer its row group was read into (`docs/format.md`
/// §7, "Cost follows the change"), so its bytes are copied once less.
#[derive(Debug, Default)]
pub(crate) struct ChunkBytes {
    segments: Vec<Bytes>,
    len: u64,
}

impl ChunkBytes {
    /// Appends `bytes` after the segments so far.
    pub(crate) fn push(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.len += bytes.len() as u64;
            self.segments.push(bytes);
        }
    }

    /// The bytes from `start` on, as segments (the first one cut at `start`).
    fn segments_from(&self, start: u64) -> std::vec::IntoIter<Bytes> {
        let mut skip = start;
        let mut rest = Vec::new();
        for s in &self.segments {
            let n = s.len() as u64;
            if skip >= n {
                skip -= n;
                continue;
            }
            rest.push(s.slice(skip as usize..));
            skip = 0;
        }
        rest.into_iter()
    }
}

impl From<Bytes> for ChunkBytes {
    fn from(bytes: Bytes) -> Self {
        let mut c = ChunkBytes::default();
        c.push(bytes);
        c
    }
}

impl parquet::file::reader::Length for ChunkBytes {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for ChunkBytes {
    type T = SegmentsRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<SegmentsRead> {
        Ok(SegmentsRead { rest: self.segments_from(start), current: Bytes::new() })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let mut segments = self.segments_from(start);
        match segments.next() {
            Some(first) if first.len() >= length => Ok(first.slice(..length)),
            first => {
                let mut joined = Vec::with_capacity(length);
                for s in first.into_iter().chain(segments) {
                    let take = (length - joined.len()).min(s.len());
                    joined.extend_from_slice(&s[..take]);
                }
                if joined.len() < length {
                    let end = start.saturating_add(length as u64);
                    return Err(parquet::errors::ParquetError::EOF(format!(
                        "bytes {start}..{end} of a column chunk of {}",
                        self.len
                    )));
                }
                Ok(Bytes::from(joined))
            }
        }
    }
}

/// A reader of a [`ChunkBytes`] from an offset on.
pub(crate) struct SegmentsRead {
    rest: std::vec::IntoIter<Bytes>,
    current: Bytes,
}

impl std::io::Read for SegmentsRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rest.next() {
                Some(next) => self.current = next,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        bytes::Buf::advance(&mut self.current, n);
        Ok(n)
    }
}

/// Encodes `data` as one column chunk of `descr` in a single data page (the
/// shards' id, chunk index, spec type and channel columns). `rel` names the
/// file in errors.
pub(crate) fn encode_chunk(
    rel: &str,
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    data: LeafData,
) -> Result<EncodedChunk> {
    let rows = row_bytes(&data, descr.max_def_level(), false).len();
    // the builder of the one page hands out `data` itself, once
    let data = std::sync::Mutex::new(Some(data));
    let build: LeafBuilder<'_> = Box::new(move |_| {
        let taken = data.lock().ok().and_then(|mut d| d.take());
        taken.ok_or_else(|| general(rel, "a one-page chunk was built twice".into()))
    });
    encode_pages(rel, descr, props, &[rows], &build)
}

/// Builds the data of one leaf column of a small table for a range of its
/// rows (one page, or one block of rows while its pages are cut).
pub(crate) type LeafBuilder<'a> = Box<dyn Fn(std::ops::Range<usize>) -> Result<LeafData> + Sync + 'a>;

/// Encodes one leaf column chunk of `n_rows` rows a page at a time, so that a
/// table of millions of rows never holds more than a page of one column's
/// values: `build` makes the data of a row range. Pages follow
/// [`crate::layout::TablePages`] on the leaf's own bytes ([`row_bytes`]) and the
/// rows' key hashes `hashes` (`docs/format.md` §4, "Small tables"). `rel`
/// names the file in errors.
pub(crate) fn encode_leaf_pages(
    rel: &str,
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    hashes: &[u64],
    build: &LeafBuilder<'_>,
) -> Result<EncodedChunk> {
    // rows per block while the page cuts are found: small enough to stay far
    // below a page of memory per column, large enough to amortize `build`
    const CUT_BLOCK_ROWS: usize = 1 << 14;
    let max_def = descr.max_def_level();
    // a dictionary leaf stores an index a value, not the value
    let dictionary = props.dictionary_enabled(descr.path());
    let mut cuts = crate::layout::TablePages::default();
    // a leaf whose every row is the same bytes is cut without a build: the
    // first of the two builds was a third of a small table's CPU
    if let Some(width) = fixed_row_bytes(&descr, dictionary) {
        for hash in hashes {
            cuts.push(width, *hash);
        }
        return encode_pages(rel, descr, props, &cuts.finish(), build);
    }
    let mut lo = 0;
    while lo < hashes.len() {
        let hi = (lo + CUT_BLOCK_ROWS).min(hashes.len());
        let block = build(lo..hi)?;
        for (bytes, hash) in row_bytes(&block, max_def, dictionary).into_iter().zip(&hashes[lo..hi]) {
            cuts.push(bytes, *hash);
        }
        lo = hi;
    }
    encode_pages(rel, descr, props, &cuts.finish(), build)
}

/// Encodes one leaf column chunk with one data page per entry of `pages` (row
/// counts), each page's data made by `build`: the one dispatch over physical types.
pub(crate) fn encode_pages(
    rel: &str,
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    pages: &PagePlan,
    build: &LeafBuilder<'_>,
) -> Result<EncodedChunk> {
    let mut buf = Vec::new();
    let close = {
        let writer = get_column_writer(descr.clone(), Arc::clone(props), Box::new(CrcPageWriter { buf: &mut buf }));
        match descr.physical_type() {
            PhysicalType::INT32 => write_built::<Int32Type>(rel, writer, pages, build)?,
            PhysicalType::INT64 => write_built::<Int64Type>(rel, writer, pages, build)?,
            PhysicalType::FLOAT => write_built::<FloatType>(rel, writer, pages, build)?,
            PhysicalType::DOUBLE => write_built::<DoubleType>(rel, writer, pages, build)?,
            PhysicalType::BYTE_ARRAY => write_built::<ByteArrayType>(rel, writer, pages, build)?,
            PhysicalType::FIXED_LEN_BYTE_ARRAY => write_built::<FixedLenByteArrayType>(rel, writer, pages, build)?,
            other => return Err(general(rel, format!("no leaf of a TimeF file is {other}"))),
        }
    };
    Ok(EncodedChunk { bytes: Bytes::from(buf).into(), close })
}

/// The physical types a leaf holds, and where [`Values`] keeps them.
trait Physical: DataType {
    fn slice(values: &Values) -> Option<&[Self::T]>;
}

macro_rules! physical {
    ($($t:ty => $v:ident),*) => {$(
        impl Physical for $t {
            fn slice(values: &Values) -> Option<&[Self::T]> {
                match values {
                    Values::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}
physical!(Int32Type => I32, Int64Type => I64, FloatType => F32, DoubleType => F64, ByteArrayType => Bytes,
    FixedLenByteArrayType => Fixed);

/// Writes one page per entry of `pages` (row counts), each built by `build`.
fn write_built<T: Physical>(
    rel: &str,
    writer: ColumnWriter<'_>,
    pages: &PagePlan,
    build: &LeafBuilder<'_>,
) -> Result<ColumnCloseResult> {
    let mut w = get_typed_column_writer::<T>(writer);
    let mut start = 0;
    for &n in pages {
        let page = build(start..start + n)?;
        let values = T::slice(&page.values).ok_or_else(|| general(rel, "a leaf built another physical type".into()))?;
        w.write_batch(values, page.def.as_deref(), page.rep.as_deref()).map_err(|e| Error::parquet(rel, e))?;
        start += n;
    }
    w.close().map_err(|e| Error::parquet(rel, e))
}

fn general(rel: &str, why: String) -> Error {
    Error::parquet(rel, parquet::errors::ParquetError::General(why))
}

/// Each row's plain-encoded bytes in one leaf: 4 or 8 per number, the length
/// plus 4 per string, the width per fixed-size value, 1 per null or empty list
/// (so that a column of nulls is cut too, and a page never builds more than
/// about 2^18 rows); 1 per value too in a `dictionary` leaf (an index is
/// stored, not the value). A row starts at each repetition level 0 (each
/// level when the leaf is not repeated).
pub(crate) fn row_bytes(data: &LeafData, max_def: i16, dictionary: bool) -> Vec<u64> {
    let width = |i: usize| -> u64 {
        match &data.values {
            _ if dictionary => 1,
            Values::I32(_) | Values::F32(_) => 4,
            Values::I64(_) | Values::F64(_) => 8,
            Values::Bytes(v) => 4 + v[i].len() as u64,
            Values::Fixed(v) => v[i].len() as u64,
        }
    };
    let n_levels = data.def.as_ref().or(data.rep.as_ref()).map_or(data.values.len(), Vec::len);
    let mut rows = Vec::new();
    let mut value = 0;
    for level in 0..n_levels {
        if data.rep.as_ref().is_none_or(|r| r[level] == 0) {
            rows.push(0);
        }
        let present = data.def.as_ref().is_none_or(|d| d[level] == max_def);
        let bytes = if present { width(value) } else { 1 };
        value += usize::from(present);
        if let Some(last) = rows.last_mut() {
            *last += bytes;
        }
    }
    rows
}

/// What [`row_bytes`] gives every row of a leaf whose rows all take the same
/// bytes, without its data: a required, unrepeated leaf (one value a row)
/// that is a `dictionary` leaf (1), a number (4 or 8) or fixed-size (its
/// width). `None` for any other leaf (strings, nullable, lists).
fn fixed_row_bytes(descr: &ColumnDescriptor, dictionary: bool) -> Option<u64> {
    if descr.max_def_level() != 0 || descr.max_rep_level() != 0 {
        return None;
    }
    match descr.physical_type() {
        _ if dictionary => Some(1),
        PhysicalType::INT32 | PhysicalType::FLOAT => Some(4),
        PhysicalType::INT64 | PhysicalType::DOUBLE => Some(8),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => u64::try_from(descr.type_length()).ok(),
        _ => None,
    }
}

/// Builds the levels of a list leaf: `rows` yields `None` for a null list and
/// `Some(n)` for a list of `n` required elements. `nullable` is whether the
/// list itself may be null (max definition level 2) or not (max 1).
pub(crate) fn list_levels(rows: impl Iterator<Item = Option<usize>>, nullable: bool) -> (Vec<i16>, Vec<i16>) {
    let present: i16 = if nullable { 2 } else { 1 };
    let (mut def, mut rep) = (Vec::new(), Vec::new());
    for row in rows {
        match row {
            None => {
                def.push(0);
                rep.push(0);
            }
            Some(0) => {
                def.push(present - 1);
                rep.push(0);
            }
            Some(n) => {
                def.push(present);
                rep.push(0);
                def.extend(std::iter::repeat_n(present, n - 1));
                rep.extend(std::iter::repeat_n(1, n - 1));
            }
        }
    }
    (def, rep)
}

/// Definition levels of a nullable flat leaf (1 present, 0 null).
pub(crate) fn optional_levels<T>(rows: &[Option<T>]) -> Vec<i16> {
    rows.iter().map(|r| i16::from(r.is_some())).collect()
}

/// Serializes pages into an in-memory column chunk, each page header with the
/// CRC-32 of the page bytes as stored (FORMAT-BRIEF §3; [`crate::thrift`]).
struct CrcPageWriter<'a> {
    buf: &'a mut Vec<u8>,
}

impl PageWriter for CrcPageWriter<'_> {
    fn write_page(&mut self, page: CompressedPage) -> parquet::errors::Result<PageWriteSpec> {
        let start = self.buf.len();
        let header = crate::thrift::write_page_header(&page)?;
        self.buf.extend_from_slice(&header);
        self.buf.extend_from_slice(page.data());
        let mut spec = PageWriteSpec::new();
        spec.page_type = page.page_type();
        spec.uncompressed_size = page.uncompressed_size() + header.len();
        spec.compressed_size = page.compressed_size() + header.len();
        spec.num_values = page.num_values();
        spec.offset = start as u64;
        spec.bytes_written = (self.buf.len() - start) as u64;
        Ok(spec)
    }

    fn close(&mut self) -> parquet::errors::Result<()> {
        Ok(())
    }
}

/// Parquet's `FIXED_LEN_BYTE_ARRAY` value of a canonical UUID string.
pub(crate) fn uuid_bytes(id: &str) -> Result<FixedLenByteArray> {
    let u = uuid::Uuid::parse_str(id).map_err(|e| Error::validation(id, "id", e.to_string()))?;
    Ok(FixedLenByteArray::from(u.as_bytes().to_vec()))
}

/// Encodes ids of one space as `FIXED_LEN_BYTE_ARRAY(16)` or UTF-8 values.
pub(crate) fn id_values<'a>(ids: impl Iterator<Item = &'a str>, enc: IdEncoding) -> Result<Values> {
    Ok(match enc {
        IdEncoding::Uuid16 => Values::Fixed(ids.map(uuid_bytes).collect::<Result<_>>()?),
        IdEncoding::String => Values::Bytes(byte_arrays(ids)),
    })
}

/// UTF-8 values as byte arrays sharing one buffer (an allocation per call,
/// not per value: tables of millions of rows build pages of thousands).
pub(crate) fn byte_arrays<'a>(values: impl Iterator<Item = &'a str>) -> Vec<ByteArray> {
    let mut joined = Vec::new();
    let ends: Vec<usize> = values
        .map(|s| {
            joined.extend_from_slice(s.as_bytes());
            joined.len()
        })
        .collect();
    let joined = Bytes::from(joined);
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let value = ByteArray::from(joined.slice(start..end));
            start = end;
            value
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use parquet::schema::types::SchemaDescriptor;

    use super::*;

    #[test]
    fn row_bytes_counts_each_rows_plain_bytes_in_one_leaf() {
        // nullable strings: "ab", null, "" -> 4 + 2, 1, 4 + 0
        let strings = LeafData {
            values: Values::Bytes(byte_arrays(["ab", ""].into_iter())),
            def: Some(vec![1, 0, 1]),
            rep: None,
        };
        assert_eq!(row_bytes(&strings, 1, false), [6, 1, 4]);
        assert_eq!(row_bytes(&strings, 1, true), [1, 1, 1], "a dictionary leaf: 1 a value");
        // required numbers: one value per row
        assert_eq!(
            row_bytes(&LeafData { values: Values::F64(vec![1.0, 2.0]), def: None, rep: None }, 0, false),
            [8, 8]
        );
        // a nullable list of int32: [1, 2, 3], null, [], [4] (definition 2 present, 1 empty, 0 null)
        let (def, rep) = list_levels([Some(3), None, Some(0), Some(1)].into_iter(), true);
        let lists = LeafData { values: Values::I32(vec![1, 2, 3, 4]), def: Some(def), rep: Some(rep) };
        assert_eq!(row_bytes(&lists, 2, false), [12, 1, 1, 4]);
        // fixed-size ids: their width
        let fixed =
            LeafData { values: Values::Fixed(vec![FixedLenByteArray::from(vec![0u8; 16]); 2]), def: None, rep: None };
        assert_eq!(row_bytes(&fixed, 0, false), [16, 16]);
    }

    #[test]
    fn a_leaf_of_fixed_row_bytes_is_cut_as_its_built_rows_would_be() {
        let schema = parquet::schema::parser::parse_message_type(
            "message t { required int32 a; required double b; required fixed_len_byte_array(16) c;
             required binary d (STRING); optional double e; optional group f (LIST) { repeated group list {
             required int32 element; } } }",
        )
        .unwrap();
        let descr = SchemaDescriptor::new(Arc::new(schema));
        let fixed: Vec<Option<u64>> = (0..6).map(|i| fixed_row_bytes(&descr.column(i), false)).collect();
        assert_eq!(fixed, [Some(4), Some(8), Some(16), None, None, None]);
        let dictionary: Vec<Option<u64>> = (0..6).map(|i| fixed_row_bytes(&descr.column(i), true)).collect();
        assert_eq!(dictionary, [Some(1), Some(1), Some(1), Some(1), None, None], "required leaves: 1 a row");
        // what the rows built would give, row by row
        let built = [
            LeafData { values: Values::I32(vec![7; 3]), def: None, rep: None },
            LeafData { values: Values::F64(vec![0.5; 3]), def: None, rep: None },
            LeafData { values: Values::Fixed(vec![FixedLenByteArray::from(vec![1u8; 16]); 3]), def: None, rep: None },
            LeafData { values: Values::Bytes(byte_arrays(["a", "bcd", ""].into_iter())), def: None, rep: None },
        ];
        for (i, data) in built.iter().enumerate() {
            for dict in [false, true] {
                if let Some(w) = fixed_row_bytes(&descr.column(i), dict) {
                    assert_eq!(row_bytes(data, 0, dict), [w; 3], "leaf {i}, dictionary {dict}");
                }
            }
        }
    }

    #[test]
    fn a_column_of_nulls_is_cut_into_pages_too() {
        // 1 byte a null: a page past 256 KiB rows ends at the next row whose hash has bits 16-19 clear
        let mut cuts = crate::layout::TablePages::default();
        let hashes: Vec<u64> = (0..600_000u32).map(|i| crate::layout::key_hash("s", i)).collect();
        let nulls = LeafData { values: Values::F64(Vec::new()), def: Some(vec![0; hashes.len()]), rep: None };
        for (b, h) in row_bytes(&nulls, 1, false).into_iter().zip(&hashes) {
            cuts.push(b, *h);
        }
        let pages = cuts.finish();
        let first_cut = (262_144..).find(|&i| hashes[i - 1] & crate::layout::TABLE_PAGE_CUT_MASK == 0).unwrap();
        assert_eq!(pages[0], first_cut);
        assert_eq!(pages.iter().sum::<usize>(), 600_000);
        assert_eq!(pages.len(), 3, "{pages:?}");
    }

    #[test]
    fn a_chunk_of_segments_reads_as_its_bytes_end_to_end() {
        use parquet::file::reader::{ChunkReader, Length};
        use std::io::Read;
        let mut chunk = ChunkBytes::default();
        for segment in [&b"abc"[..], b"", b"defg", b"h"] {
            chunk.push(Bytes::copy_from_slice(segment));
        }
        assert_eq!(chunk.len(), 8);
        for start in 0..=8u64 {
            let mut read = Vec::new();
            chunk.get_read(start).expect("read").read_to_end(&mut read).expect("read");
            assert_eq!(read, &b"abcdefgh"[start as usize..], "from {start}");
        }
        // a read of one byte at a time crosses each segment's end
        let mut one = [0u8; 1];
        let mut reader = chunk.get_read(2).expect("read");
        let got: Vec<u8> =
            std::iter::from_fn(|| (reader.read(&mut one).expect("read") == 1).then_some(one[0])).collect();
        assert_eq!(got, b"cdefgh");
        // within one segment (a slice) and across segments (joined)
        assert_eq!(chunk.get_bytes(3, 4).expect("bytes"), &b"defg"[..]);
        assert_eq!(chunk.get_bytes(1, 6).expect("bytes"), &b"bcdefg"[..]);
        assert_eq!(chunk.get_bytes(8, 0).expect("bytes"), &b""[..]);
        let past = chunk.get_bytes(6, 3).expect_err("past the end");
        assert_eq!(past.to_string(), "EOF: bytes 6..9 of a column chunk of 8");
    }
}
