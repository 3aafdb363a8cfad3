//! Pinned Parquet properties, the column-chunk encoder, page CRCs and the
//! read-back self-check (FORMAT-BRIEF §3).
//!
//! Every TimeF file is written through this module, one column chunk at a time
//! (the shards' `values` column aside: `crate::writer` encodes its pages,
//! `docs/format.md` §5): values go to the parquet crate's typed column writers, which hand finished
//! pages to its own `CrcPageWriter`. That page writer serializes the Thrift page header
//! itself ([`crate::thrift`]) so it can carry the CRC-32 of the page bytes (the
//! parquet crate, as of 60.1, never writes one), and buffers the chunk in memory so chunks of one row
//! group can be encoded on several threads and spliced into the file in order
//! with `SerializedRowGroupWriter::append_column`, which relocates offsets.
//!
//! Page boundaries are chosen by the caller (a page plan of row counts): each page is one
//! `write_batch` call, and the pinned properties make the column writer close a
//! page after every call and never in between. This is how TimeF's row-aligned
//! content-defined chunking (`docs/format.md`, "Pages") is realised.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{
    ColumnOrder, Compression, Encoding, LogicalType, Repetition, SortOrder, Type as PhysicalType, ZstdLevel,
};
use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::column::writer::{get_column_writer, get_typed_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::data_type::{
    ByteArray, ByteArrayType, DataType, DoubleType, FixedLenByteArray, FixedLenByteArrayType, FloatType, Int32Type,
    Int64Type,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr, WriterVersion};
use parquet::schema::types::{ColumnDescPtr, ColumnDescriptor, ColumnPath, SchemaDescriptor, Type, TypePtr};

use crate::error::{Error, Result};

/// How a leaf column is encoded; pinned per column by the format, never left to
/// the parquet crate's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// PLAIN values, no dictionary (ids, measurements).
    Plain,
    /// Dictionary with RLE_DICTIONARY data pages (categoricals).
    Dictionary,
    /// DELTA_BINARY_PACKED (monotonic integers).
    Delta,
    /// BYTE_STREAM_SPLIT (float32 series values).
    ByteStreamSplit,
}

/// How ids of one id space are stored (FORMAT-BRIEF §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdEncoding {
    /// `FIXED_LEN_BYTE_ARRAY(16)`, without a logical type (`docs/format.md`,
    /// "Column types": versions written before 2026-11-30 carry the Parquet
    /// `UUID` logical type, see [`FileSchema::earlier`]).
    Uuid16,
    /// UTF-8 `BYTE_ARRAY`.
    String,
}

impl IdEncoding {
    /// The manifest's spelling: `uuid16` or `string`.
    pub fn as_str(self) -> &'static str {
        match self {
            IdEncoding::Uuid16 => "uuid16",
            IdEncoding::String => "string",
        }
    }
}

/// Builds Parquet schemas leaf by leaf and records each leaf's [`Pin`].
#[derive(Debug, Default)]
pub(crate) struct SchemaBuilder {
    fields: Vec<TypePtr>,
    pins: Vec<(String, Pin)>,
}

fn prim(name: &str, t: PhysicalType, rep: Repetition, logical: Option<LogicalType>, len: i32) -> Result<TypePtr> {
    let mut b = Type::primitive_type_builder(name, t).with_repetition(rep).with_logical_type(logical);
    if len > 0 {
        b = b.with_length(len);
    }
    Ok(Arc::new(b.build().map_err(schema_err)?))
}

fn schema_err(e: parquet::errors::ParquetError) -> Error {
    Error::parquet("<schema>", e)
}

/// One leaf's physical shape.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Leaf {
    /// An id of the given storage.
    Id(IdEncoding),
    /// A dictionary-encoded UTF-8 categorical.
    Cat,
    /// Plain UTF-8.
    Utf8,
    /// int32 with the given pin.
    I32(Pin),
    /// int64 with the given pin.
    I64(Pin),
    /// float32.
    F32,
    /// float64.
    F64,
    /// float32 series values, BYTE_STREAM_SPLIT.
    Values,
}

impl Leaf {
    fn build(self, name: &str, rep: Repetition) -> Result<(TypePtr, Pin)> {
        Ok(match self {
            Leaf::Id(IdEncoding::Uuid16) => {
                (prim(name, PhysicalType::FIXED_LEN_BYTE_ARRAY, rep, None, 16)?, Pin::Plain)
            }
            Leaf::Id(IdEncoding::String) | Leaf::Utf8 => {
                (prim(name, PhysicalType::BYTE_ARRAY, rep, Some(LogicalType::String), 0)?, Pin::Plain)
            }
            Leaf::Cat => (prim(name, PhysicalType::BYTE_ARRAY, rep, Some(LogicalType::String), 0)?, Pin::Dictionary),
            Leaf::I32(p) => (prim(name, PhysicalType::INT32, rep, None, 0)?, p),
            Leaf::I64(p) => (prim(name, PhysicalType::INT64, rep, None, 0)?, p),
            Leaf::F32 => (prim(name, PhysicalType::FLOAT, rep, None, 0)?, Pin::Plain),
            Leaf::F64 => (prim(name, PhysicalType::DOUBLE, rep, None, 0)?, Pin::Plain),
            Leaf::Values => (prim(name, PhysicalType::FLOAT, rep, None, 0)?, Pin::ByteStreamSplit),
        })
    }
}

fn rep_of(nullable: bool) -> Repetition {
    if nullable {
        Repetition::OPTIONAL
    } else {
        Repetition::REQUIRED
    }
}

impl SchemaBuilder {
    /// A top-level primitive column.
    pub fn column(mut self, name: &str, leaf: Leaf, nullable: bool) -> Result<Self> {
        let (t, pin) = leaf.build(name, rep_of(nullable))?;
        self.fields.push(t);
        self.pins.push((name.to_string(), pin));
        Ok(self)
    }

    /// A three-level list `name.list.element` of required `leaf`s (Parquet LIST spec).
    pub fn list(self, name: &str, leaf: Leaf, nullable: bool) -> Result<Self> {
        self.list_of(name, nullable, vec![("element", leaf)], false)
    }

    /// A list of required structs with the given required fields:
    /// leaves `name.list.element.<field>`.
    pub fn list_of_struct(self, name: &str, fields: Vec<(&str, Leaf)>, nullable: bool) -> Result<Self> {
        self.list_of(name, nullable, fields, true)
    }

    fn list_of(mut self, name: &str, nullable: bool, fields: Vec<(&str, Leaf)>, as_struct: bool) -> Result<Self> {
        let mut leaves = Vec::new();
        let element = if as_struct {
            for (f, leaf) in &fields {
                let (t, pin) = leaf.build(f, Repetition::REQUIRED)?;
                leaves.push(t);
                self.pins.push((format!("{name}.list.element.{f}"), pin));
            }
            Arc::new(
                Type::group_type_builder("element")
                    .with_repetition(Repetition::REQUIRED)
                    .with_fields(leaves)
                    .build()
                    .map_err(schema_err)?,
            )
        } else {
            let (t, pin) = fields[0].1.build("element", Repetition::REQUIRED)?;
            self.pins.push((format!("{name}.list.element"), pin));
            t
        };
        let list = Type::group_type_builder("list")
            .with_repetition(Repetition::REPEATED)
            .with_fields(vec![element])
            .build()
            .map_err(schema_err)?;
        let outer = Type::group_type_builder(name)
            .with_repetition(rep_of(nullable))
            .with_logical_type(Some(LogicalType::List))
            .with_fields(vec![Arc::new(list)])
            .build()
            .map_err(schema_err)?;
        self.fields.push(Arc::new(outer));
        Ok(self)
    }

    /// A nullable list of `{key, value}` UTF-8 pairs (both required): leaves
    /// `name.list.element.key` / `.value`. Used instead of a Parquet MAP, which
    /// Hugging Face `datasets` cannot load (`docs/format.md`, "Column types").
    pub fn key_value_list(self, name: &str) -> Result<Self> {
        self.list_of(name, true, vec![("key", Leaf::Utf8), ("value", Leaf::Utf8)], true)
    }

    /// The finished schema with its pins, in leaf order.
    pub fn finish(self) -> Result<FileSchema> {
        let root = Type::group_type_builder("schema").with_fields(self.fields).build().map_err(schema_err)?;
        let descr = Arc::new(SchemaDescriptor::new(Arc::new(root)));
        if descr.num_columns() != self.pins.len() {
            return Err(Error::SelfCheck {
                path: "<schema>".into(),
                column: String::new(),
                reason: format!("{} leaves but {} pins", descr.num_columns(), self.pins.len()),
            });
        }
        Ok(FileSchema { descr, pins: self.pins.into_iter().map(|(_, p)| p).collect() })
    }
}

/// A file's Parquet schema and the pinned encoding of each leaf (in leaf order).
#[derive(Debug, Clone)]
pub struct FileSchema {
    /// The Parquet schema.
    pub descr: Arc<SchemaDescriptor>,
    /// The pinned encoding of each leaf column, in leaf order.
    pub pins: Vec<Pin>,
}

/// Codec settings that shape bytes (recorded in the manifest's `writer` block).
#[derive(Debug, Clone, Copy)]
pub struct Codec {
    /// zstd level.
    pub zstd_level: i32,
}

/// `write_batch_size` and page size limits high enough that the column writer
/// never splits a `write_batch` call into several pages: page cuts are ours.
const NO_AUTOMATIC_PAGE_CUT: usize = 1 << 40;
const WRITE_BATCH_LEVELS: usize = 1 << 30;

impl FileSchema {
    /// The pinned writer properties for this schema: zstd at the pinned level,
    /// page-level statistics (column and offset index), dictionary only on
    /// [`Pin::Dictionary`] leaves, one data page per `write_batch` call.
    pub fn properties(&self, codec: Codec, created_by: &str) -> Result<WriterPropertiesPtr> {
        let level = ZstdLevel::try_new(codec.zstd_level)
            .map_err(|e| Error::InvalidOption { option: "compression_level", reason: e.to_string() })?;
        let mut b = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_created_by(created_by.to_string())
            .set_compression(Compression::ZSTD(level))
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_dictionary_enabled(false)
            .set_write_batch_size(WRITE_BATCH_LEVELS)
            .set_data_page_size_limit(NO_AUTOMATIC_PAGE_CUT)
            .set_dictionary_page_size_limit(NO_AUTOMATIC_PAGE_CUT)
            .set_data_page_row_count_limit(1);
        b = b.set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            "ARROW:schema".to_string(),
            parquet::arrow::encode_arrow_schema(&self.arrow_schema()?),
        )]));
        for (i, pin) in self.pins.iter().enumerate() {
            let path = self.descr.column(i).path().clone();
            b = match pin {
                Pin::Plain => b.set_column_encoding(path, Encoding::PLAIN),
                Pin::Dictionary => b.set_column_dictionary_enabled(path, true),
                Pin::Delta => b.set_column_encoding(path, Encoding::DELTA_BINARY_PACKED),
                Pin::ByteStreamSplit => b.set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT),
            };
        }
        Ok(Arc::new(b.build()))
    }
}

impl FileSchema {
    /// The Arrow schema stored in the file's `ARROW:schema` metadata, so that
    /// Arrow readers (pyarrow, polars, DuckDB) see uuid16 ids as plain
    /// `fixed_size_binary(16)` and top-level categoricals as
    /// `dictionary<int32, utf8>`.
    pub fn arrow_schema(&self) -> Result<arrow_schema::Schema> {
        use arrow_schema::{DataType, Field, Schema};
        let inferred = parquet::arrow::parquet_to_arrow_schema(&self.descr, None).map_err(schema_err)?;
        let fields: Vec<Field> = inferred
            .fields()
            .iter()
            .map(|f| {
                let leaf = (0..self.descr.num_columns()).find(|&i| self.descr.column(i).path().string() == *f.name());
                match (leaf.map(|i| self.pins[i]), f.data_type()) {
                    (Some(Pin::Dictionary), DataType::Utf8) => Field::new(
                        f.name(),
                        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                        f.is_nullable(),
                    ),
                    _ => f.as_ref().clone(),
                }
            })
            .collect();
        Ok(Schema::new(fields))
    }
}

impl FileSchema {
    /// The same columns in the column types of versions written before
    /// 2026-11-30, which are TimeF v1 too (`docs/format.md`, "Column types"):
    /// uuid16 leaves carry the Parquet `UUID` logical type, and key/value lists
    /// are Parquet MAPs (`<name>.key_value.key` / `.value`). Leaves and pins are
    /// the same, in the same order. `verify` accepts either form.
    pub fn earlier(&self) -> Result<FileSchema> {
        let root = earlier_node(self.descr.root_schema())?;
        Ok(FileSchema { descr: Arc::new(SchemaDescriptor::new(root)), pins: self.pins.clone() })
    }
}

/// [`FileSchema::earlier`] of one schema node.
fn earlier_node(t: &Type) -> Result<TypePtr> {
    let info = t.get_basic_info();
    let rep = info.has_repetition().then(|| info.repetition());
    match t {
        Type::PrimitiveType { physical_type: PhysicalType::FIXED_LEN_BYTE_ARRAY, type_length: 16, .. }
            if info.logical_type_ref().is_none() =>
        {
            prim(info.name(), PhysicalType::FIXED_LEN_BYTE_ARRAY, info.repetition(), Some(LogicalType::Uuid), 16)
        }
        Type::PrimitiveType { .. } => Ok(Arc::new(t.clone())),
        Type::GroupType { fields, .. } => {
            let key_value = match (info.logical_type_ref(), fields.as_slice()) {
                (Some(LogicalType::List), [list]) => match list.get_fields() {
                    [element] if element.is_group() => {
                        let names: Vec<&str> = element.get_fields().iter().map(|f| f.name()).collect();
                        (names == ["key", "value"]).then(|| element.get_fields().to_vec())
                    }
                    _ => None,
                },
                _ => None,
            };
            let (logical, fields) = match key_value {
                Some(kv) => {
                    let kv = Type::group_type_builder("key_value")
                        .with_repetition(Repetition::REPEATED)
                        .with_fields(kv.iter().map(|f| earlier_node(f)).collect::<Result<_>>()?)
                        .build()
                        .map_err(schema_err)?;
                    (Some(LogicalType::Map), vec![Arc::new(kv)])
                }
                None => {
                    (info.logical_type_ref().cloned(), fields.iter().map(|f| earlier_node(f)).collect::<Result<_>>()?)
                }
            };
            let mut b = Type::group_type_builder(info.name()).with_logical_type(logical).with_fields(fields);
            if let Some(rep) = rep {
                b = b.with_repetition(rep);
            }
            Ok(Arc::new(b.build().map_err(schema_err)?))
        }
    }
}

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

/// Checks a written file's own footer against the pins (FORMAT-BRIEF §3: a pin
/// that did not take is an error). `rel` names the file in errors.
pub(crate) fn self_check(rel: &Path, schema: &FileSchema, meta: &ParquetMetaData) -> Result<()> {
    let fail = |column: &ColumnPath, reason: String| Error::SelfCheck {
        path: rel.to_path_buf(),
        column: column.string(),
        reason,
    };
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for (i, pin) in schema.pins.iter().enumerate() {
            let col = rg.column(i);
            let path = col.column_path();
            let encodings: Vec<Encoding> = col.encodings().collect();
            let has = |e: Encoding| encodings.contains(&e);
            let dict = has(Encoding::RLE_DICTIONARY) || has(Encoding::PLAIN_DICTIONARY);
            let ok = col.num_values() == 0
                || match pin {
                    Pin::Plain => has(Encoding::PLAIN) && !dict,
                    Pin::Dictionary => has(Encoding::RLE_DICTIONARY),
                    Pin::Delta => has(Encoding::DELTA_BINARY_PACKED) && !dict,
                    Pin::ByteStreamSplit => has(Encoding::BYTE_STREAM_SPLIT) && !dict,
                };
            if !ok {
                return Err(fail(path, format!("row group {g}: pinned {pin:?}, encodings seen {encodings:?}")));
            }
            if !matches!(col.compression(), Compression::ZSTD(_)) {
                return Err(fail(path, format!("row group {g}: compression {:?}, want ZSTD", col.compression())));
            }
            if rg.num_rows() > 0 && (col.column_index_offset().is_none() || col.offset_index_offset().is_none()) {
                return Err(fail(path, format!("row group {g}: column or offset index missing")));
            }
            if rg.num_rows() > 0 && col.statistics().is_none() {
                return Err(fail(path, format!("row group {g}: statistics missing")));
            }
        }
    }
    // float statistics in the order every reader knows (docs/format.md §3)
    let orders = meta.file_metadata().column_orders();
    for (i, col) in schema.descr.columns().iter().enumerate() {
        let float = matches!(col.physical_type(), PhysicalType::FLOAT | PhysicalType::DOUBLE);
        let order = orders.and_then(|o| o.get(i)).copied();
        if float && order != Some(ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED)) {
            return Err(fail(col.path(), format!("column order {order:?}, want TYPE_DEFINED_ORDER(SIGNED)")));
        }
    }
    Ok(())
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
