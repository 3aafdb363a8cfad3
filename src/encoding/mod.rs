//! Pinned Parquet schemas and properties, and the read-back self-check
//! (FORMAT-BRIEF §3). Every TimeF file is written with these properties, one
//! column chunk at a time through [`chunk`]'s encoder (the shards' `values`
//! column aside: `crate::writer` encodes its pages, `docs/format.md` §5).

use std::path::Path;
use std::sync::Arc;

use parquet::basic::{
    ColumnOrder, Compression, Encoding, LogicalType, Repetition, SortOrder, Type as PhysicalType, ZstdLevel,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr, WriterVersion};
use parquet::schema::types::{ColumnPath, SchemaDescriptor, Type, TypePtr};

use crate::error::{Error, Result};

mod chunk;
#[cfg(test)]
pub(crate) use chunk::encode_pages;
pub(crate) use chunk::{
    byte_arrays, encode_chunk, encode_leaf_pages, id_values, list_levels, optional_levels, ChunkBytes, EncodedChunk,
    LeafBuilder, LeafData, PagePlan, Values,
};

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
