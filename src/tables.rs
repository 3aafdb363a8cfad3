//! The five file kinds of a version: their Parquet schemas (FORMAT-BRIEF §3,
//! columns in file order) and the conversion of rows into leaf columns.

use std::collections::BTreeMap;

use crate::encoding::{list_levels, optional_levels, FileSchema, IdEncoding, Leaf, LeafData, SchemaBuilder, Values};
use crate::error::Result;

/// The six id spaces (FORMAT-BRIEF §2), in manifest order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdSpace {
    /// `sample_id`.
    Sample,
    /// `time_series_id`.
    TimeSeries,
    /// `annotation_id`.
    Annotation,
    /// `task_id`.
    Task,
    /// `source_id`.
    Source,
    /// `subject_id`.
    Subject,
}

impl IdSpace {
    /// All six, in order.
    pub const ALL: [IdSpace; 6] =
        [IdSpace::Sample, IdSpace::TimeSeries, IdSpace::Annotation, IdSpace::Task, IdSpace::Source, IdSpace::Subject];

    /// The space's name, as in `manifest.id_encoding`.
    pub fn name(self) -> &'static str {
        match self {
            IdSpace::Sample => "sample_id",
            IdSpace::TimeSeries => "time_series_id",
            IdSpace::Annotation => "annotation_id",
            IdSpace::Task => "task_id",
            IdSpace::Source => "source_id",
            IdSpace::Subject => "subject_id",
        }
    }
}

/// The storage chosen for each id space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdEncodings(pub [IdEncoding; 6]);

impl IdEncodings {
    /// The storage of `space`.
    pub fn get(&self, space: IdSpace) -> IdEncoding {
        self.0[space as usize]
    }
    /// The decision rule: uuid16 when the space has at least one value and every
    /// value is a canonical UUID, else string (`docs/format.md`, "Ids").
    pub fn decide<'a>(space_values: [Box<dyn Iterator<Item = &'a str> + 'a>; 6]) -> IdEncodings {
        IdEncodings(space_values.map(|mut it| {
            let mut any = false;
            let all = it.all(|v| {
                any = true;
                crate::dataset::is_canonical_uuid(v)
            });
            if any && all {
                IdEncoding::Uuid16
            } else {
                IdEncoding::String
            }
        }))
    }
}

/// `time_series/shard-NNNNN.parquet`.
pub fn shard_schema(ids: IdEncodings) -> Result<FileSchema> {
    SchemaBuilder::default()
        .column("time_series_id", Leaf::Id(ids.get(IdSpace::TimeSeries)), false)?
        .column("chunk_idx", Leaf::I32(crate::encoding::Pin::Delta), false)?
        .column("spec_type", Leaf::Cat, false)?
        .column("channel", Leaf::Cat, false)?
        .list("values", Leaf::Values, false)?
        .finish()
}

/// `time_series_index.parquet`.
pub fn index_schema(ids: IdEncodings) -> Result<FileSchema> {
    use crate::encoding::Pin::{Delta, Plain};
    SchemaBuilder::default()
        .column("time_series_id", Leaf::Id(ids.get(IdSpace::TimeSeries)), false)?
        .column("chunk_idx", Leaf::I32(Delta), false)?
        .column("spec_type", Leaf::Cat, false)?
        .column("channel", Leaf::Cat, false)?
        .column("units", Leaf::Cat, true)?
        .column("sampling_rate_hz", Leaf::F64, false)?
        .column("t_start_s", Leaf::F64, false)?
        .column("t_end_s", Leaf::F64, true)?
        .column("value_offset", Leaf::I64(Delta), false)?
        .column("n_values", Leaf::I32(Plain), false)?
        .column("shard_path", Leaf::Cat, false)?
        .column("row_group", Leaf::I32(Delta), false)?
        .column("row_offset", Leaf::I32(Delta), false)?
        .column("min", Leaf::F32, false)?
        .column("max", Leaf::F32, false)?
        .column("mean", Leaf::F64, false)?
        .column("std", Leaf::F64, false)?
        .finish()
}

/// `samples.parquet`.
pub fn samples_schema(ids: IdEncodings) -> Result<FileSchema> {
    SchemaBuilder::default()
        .column("sample_id", Leaf::Id(ids.get(IdSpace::Sample)), false)?
        .column("source_id", Leaf::Id(ids.get(IdSpace::Source)), false)?
        .column("subject_id", Leaf::Id(ids.get(IdSpace::Subject)), true)?
        .column("t_start_s", Leaf::F64, true)?
        .column("t_end_s", Leaf::F64, true)?
        .list_of_struct(
            "series",
            vec![("time_series_id", Leaf::Id(ids.get(IdSpace::TimeSeries))), ("view", Leaf::Cat)],
            false,
        )?
        .key_value_list("metadata")?
        .finish()
}

/// `annotations.parquet`.
pub fn annotations_schema(ids: IdEncodings) -> Result<FileSchema> {
    SchemaBuilder::default()
        .column("sample_id", Leaf::Id(ids.get(IdSpace::Sample)), false)?
        .column("annotation_id", Leaf::Id(ids.get(IdSpace::Annotation)), false)?
        .column("annotation_type", Leaf::Cat, false)?
        .column("key", Leaf::Cat, false)?
        .column("value_str", Leaf::Utf8, true)?
        .column("value_num", Leaf::F64, true)?
        .column("t_start_s", Leaf::F64, true)?
        .column("t_end_s", Leaf::F64, true)?
        .column("channel", Leaf::Cat, true)?
        .finish()
}

/// `tasks/task=<name>/part-0.parquet`.
pub fn tasks_schema(ids: IdEncodings) -> Result<FileSchema> {
    let sample = Leaf::Id(ids.get(IdSpace::Sample));
    SchemaBuilder::default()
        .column("task_id", Leaf::Id(ids.get(IdSpace::Task)), false)?
        .column("task_type", Leaf::Cat, false)?
        .column("split", Leaf::Cat, true)?
        .list("sample_ids", sample, false)?
        .column("target", Leaf::Cat, true)?
        .column("target_sample_id", sample, true)?
        .list("context_sample_ids", sample, true)?
        .column("from_task", Leaf::Id(ids.get(IdSpace::Task)), true)?
        .column("horizon", Leaf::I32(crate::encoding::Pin::Plain), true)?
        .column("prompt", Leaf::Utf8, true)?
        .column("answer", Leaf::Utf8, true)?
        .finish()
}

fn bytes_of<'a>(values: impl Iterator<Item = &'a str>) -> Values {
    Values::Bytes(crate::encoding::byte_arrays(values))
}

fn leaf(values: Values, def: Option<Vec<i16>>, rep: Option<Vec<i16>>) -> LeafData {
    LeafData { values, def, rep }
}

/// A required id column.
pub(crate) fn ids<'a>(ids: impl Iterator<Item = &'a str>, enc: IdEncoding) -> Result<LeafData> {
    Ok(leaf(crate::encoding::id_values(ids, enc)?, None, None))
}

/// A nullable id column.
pub(crate) fn opt_ids(ids: &[Option<&str>], enc: IdEncoding) -> Result<LeafData> {
    let values = crate::encoding::id_values(ids.iter().flatten().copied(), enc)?;
    Ok(leaf(values, Some(optional_levels(ids)), None))
}

/// A required UTF-8 (categorical or plain) column.
pub(crate) fn strs<'a>(values: impl Iterator<Item = &'a str>) -> LeafData {
    leaf(bytes_of(values), None, None)
}

/// A nullable UTF-8 column.
pub(crate) fn opt_strs(values: &[Option<&str>]) -> LeafData {
    leaf(bytes_of(values.iter().flatten().copied()), Some(optional_levels(values)), None)
}

/// A required int32 column.
pub(crate) fn i32s(values: Vec<i32>) -> LeafData {
    leaf(Values::I32(values), None, None)
}

/// A nullable int32 column.
pub(crate) fn opt_i32s(values: &[Option<i32>]) -> LeafData {
    leaf(Values::I32(values.iter().flatten().copied().collect()), Some(optional_levels(values)), None)
}

/// A required int64 column.
pub(crate) fn i64s(values: Vec<i64>) -> LeafData {
    leaf(Values::I64(values), None, None)
}

/// A required float32 column.
pub(crate) fn f32s(values: Vec<f32>) -> LeafData {
    leaf(Values::F32(values), None, None)
}

/// A required float64 column.
pub(crate) fn f64s(values: Vec<f64>) -> LeafData {
    leaf(Values::F64(values), None, None)
}

/// A nullable float64 column.
pub(crate) fn opt_f64s(values: &[Option<f64>]) -> LeafData {
    leaf(Values::F64(values.iter().flatten().copied().collect()), Some(optional_levels(values)), None)
}

/// A list of ids; `None` rows are null lists (only when `nullable`).
pub(crate) fn id_lists(rows: &[Option<&[String]>], nullable: bool, enc: IdEncoding) -> Result<LeafData> {
    let values = crate::encoding::id_values(rows.iter().flatten().flat_map(|r| r.iter().map(String::as_str)), enc)?;
    let (def, rep) = list_levels(rows.iter().map(|r| r.map(<[String]>::len)), nullable);
    Ok(leaf(values, Some(def), Some(rep)))
}

/// The `time_series_id` leaf of a required list of `{time_series_id, view}` structs.
pub(crate) fn series_ref_ids<'a>(
    lens: &[usize],
    ids: impl Iterator<Item = &'a str>,
    enc: IdEncoding,
) -> Result<LeafData> {
    let (def, rep) = list_levels(lens.iter().map(|&n| Some(n)), false);
    let ids = crate::encoding::id_values(ids, enc)?;
    Ok(leaf(ids, Some(def), Some(rep)))
}

/// The `view` leaf of a required list of `{time_series_id, view}` structs:
/// rows of `lens` entries, their views in order.
pub(crate) fn series_ref_views<'a>(lens: &[usize], views: impl Iterator<Item = &'a str>) -> LeafData {
    let (def, rep) = list_levels(lens.iter().map(|&n| Some(n)), false);
    leaf(bytes_of(views), Some(def), Some(rep))
}

/// The `key` (`keys`) or `value` leaf of a nullable list of `{key, value}`
/// pairs in key order (keys are unique: they come from a map); an empty map is
/// stored as null.
pub(crate) fn key_value_leaf(rows: &[&BTreeMap<String, String>], keys: bool) -> LeafData {
    let shape = rows.iter().map(|m| (!m.is_empty()).then_some(m.len()));
    let (def, rep) = list_levels(shape, true);
    let values = match keys {
        true => bytes_of(rows.iter().flat_map(|m| m.keys().map(String::as_str))),
        false => bytes_of(rows.iter().flat_map(|m| m.values().map(String::as_str))),
    };
    leaf(values, Some(def), Some(rep))
}
