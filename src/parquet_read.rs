//! Reading a version's Parquet files: opening one with its footer checked
//! (docs/format.md "Limits a reader checks"), and typed access to the columns
//! of a decoded batch, every mismatch [`Error::Corrupt`] naming the file.
//! Below the reader, the chunk decode ([`crate::chunks`]) and `verify`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use crate::error::{Error, Result};
use crate::footer::{contain, read_metadata, version_arrow_error, version_parquet_error, CheckedPages};
use crate::storage::{Location, ReadFailure, Source};
use crate::text_column::{is_text, texts};

/// Canonical strings of an id column (uuid16 or string), or of any UTF-8 column.
pub(crate) fn strings(path: &Path, col: &ArrayRef) -> Result<Vec<Option<String>>> {
    match col.data_type() {
        DataType::FixedSizeBinary(16) => {
            let a = col.as_fixed_size_binary();
            Ok((0..a.len())
                .map(|i| {
                    a.is_valid(i).then(|| {
                        let b: [u8; 16] = a.value(i).try_into().unwrap_or([0; 16]);
                        uuid::Uuid::from_bytes(b).hyphenated().to_string()
                    })
                })
                .collect())
        }
        t if is_text(t, true) => texts(col.as_ref())
            .map_err(|(r, why)| Error::Corrupt { path: path.into(), reason: format!("row {r} of a batch: {why}") }),
        t => Err(Error::Corrupt { path: path.into(), reason: format!("a column of type {t} where text is expected") }),
    }
}

pub(crate) fn req(path: &Path, v: Vec<Option<String>>, column: &str) -> Result<Vec<String>> {
    v.into_iter()
        .map(|s| {
            s.ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("null in required column {column}") })
        })
        .collect()
}

pub(crate) fn col<'a>(path: &Path, batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    batch
        .column_by_name(name)
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} missing") })
}

pub(crate) fn f64s(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<Option<f64>>> {
    let a = col(path, batch, name)?
        .as_primitive_opt::<Float64Type>()
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} is not float64") })?;
    Ok((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))).collect())
}

pub(crate) fn i32s(path: &Path, batch: &RecordBatch, name: &str) -> Result<Vec<Option<i32>>> {
    let a = col(path, batch, name)?
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} is not int32") })?;
    Ok((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i))).collect())
}

/// The rows of a list column as `(range into the child, child)`; null lists are `None`.
pub(crate) fn lists(
    path: &Path,
    batch: &RecordBatch,
    name: &str,
) -> Result<(Vec<Option<std::ops::Range<usize>>>, ArrayRef)> {
    let c = col(path, batch, name)?;
    let l = c
        .as_list_opt::<i32>()
        .ok_or_else(|| Error::Corrupt { path: path.into(), reason: format!("column {name} is not a list") })?;
    let o = l.value_offsets();
    let ranges = (0..l.len()).map(|i| l.is_valid(i).then(|| o[i] as usize..o[i + 1] as usize)).collect();
    Ok((ranges, Arc::clone(l.values())))
}

/// Opens a Parquet file of a version: the footer's sizes checked against the
/// file (docs/format.md "Limits a reader checks"), the page index read when
/// `page_index` asks for it; every failure of the bytes is [`Error::Corrupt`].
pub(crate) fn open_parquet(
    loc: &Location,
    page_index: PageIndexPolicy,
) -> Result<(CheckedPages<Source>, Arc<ParquetMetaData>)> {
    let path = &loc.to_path_buf();
    let file = loc.open()?;
    let meta = contain(|| read_metadata(&file, page_index, page_index))
        .map_err(|panic| Error::Corrupt { path: path.clone(), reason: panic })?
        .map_err(|e| version_parquet_error(path, e))?;
    Ok((CheckedPages::new(file, &meta), Arc::new(meta)))
}

/// A decoder's error on a file of a version: the failed read behind it when
/// one failed (I/O, object store), else [`Error::Corrupt`].
pub(crate) fn decode_error(path: &Path, failure: &ReadFailure, e: arrow_schema::ArrowError) -> Error {
    match failure.take() {
        Some(io) => crate::storage::read_failed(path, io),
        None => version_arrow_error(path, e),
    }
}
