//! A Parquet input of the GluonTS connector as record batches: the footer
//! parsed once and checked against the file, batches bounded by the values
//! they hold, and an INT96 `start` decoded from its raw days and nanoseconds.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::connectors::{typings, unreadable};
use crate::error::{Error, Result};
use crate::footer::{contain, read_metadata, CheckedPages, DEFAULT_BATCH_ROWS};

/// Target values a Parquet input's record batch holds at most (about 8 MiB as
/// float64; a batch holds at least one row).
const PARQUET_BATCH_VALUES: usize = 1 << 20;

/// A Parquet file as record batches of every row group in order (footer parsed
/// once, its sizes checked against the file), plus the `start` column decoded
/// from INT96 when it is stored so, and the rows the footer claims.
#[allow(clippy::type_complexity)]
pub(super) fn open_parquet(
    path: &Path,
) -> Result<(
    Box<dyn Iterator<Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>>>,
    Option<Vec<Option<f64>>>,
    u64,
)> {
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use parquet::arrow::ProjectionMask;
    use parquet::file::metadata::PageIndexPolicy;
    let file = File::open(path).map_err(|e| unreadable(path, e))?;
    let bad = |e: parquet::errors::ParquetError| Error::input(path, None, format!("not a readable Parquet file: {e}"));
    let panicked = |e: String| Error::input(path, None, format!("not a readable Parquet file: {e}"));
    let footer = contain(|| read_metadata(&file, PageIndexPolicy::Skip, PageIndexPolicy::Skip))
        .map_err(panicked)?
        .map_err(bad)?;
    let claimed = u64::try_from(footer.file_metadata().num_rows()).unwrap_or(0);
    let file = CheckedPages::new(file, &footer);
    let meta = ArrowReaderMetadata::try_new(Arc::new(footer), ArrowReaderOptions::new()).map_err(bad)?;
    // before the INT96 `start` is taken out of the batches, where a second
    // column of its name would no longer be seen
    for name in ["item_id", "start", "freq", "target"] {
        typings::named_once(meta.schema(), name).map_err(|why| Error::input(path, None, why))?;
    }
    let schema = meta.metadata().file_metadata().schema_descr_ptr();
    let int96 = (0..schema.num_columns()).find(|&i| {
        let c = schema.column(i);
        c.path().parts() == ["start"] && c.physical_type() == parquet::basic::Type::INT96
    });
    let starts = match int96 {
        Some(leaf) => Some(contain(|| int96_column(path, &file, meta.metadata(), leaf)).map_err(panicked)??),
        None => None,
    };
    // the wrapping nanosecond decoding of an INT96 `start` is never used
    let mask = ProjectionMask::leaves(&schema, (0..schema.num_columns()).filter(|&i| Some(i) != int96));
    // batches sized so that one holds about PARQUET_BATCH_VALUES target values,
    // whatever the row groups: memory follows the batch, not the input
    let target_leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| schema.column(i).path().parts().first().is_some_and(|p| p == "target"))
        .collect();
    let values_per_row = meta
        .metadata()
        .row_groups()
        .iter()
        .map(|rg| {
            let values: i64 = target_leaves.iter().map(|&i| rg.column(i).num_values().max(0)).sum();
            usize::try_from(values / rg.num_rows().max(1)).unwrap_or(usize::MAX).max(1)
        })
        .max()
        .unwrap_or(1);
    let batch_rows = (PARQUET_BATCH_VALUES / values_per_row).clamp(1, 1024);
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
        .with_projection(mask)
        .with_batch_size(batch_rows)
        .build()
        .map_err(bad)?;
    Ok((Box::new(reader), starts, claimed))
}

/// Every row's INT96 `start` (leaf column `leaf`) in epoch seconds, decoded from
/// the raw Julian day and nanoseconds ([`typings::int96_seconds`]).
fn int96_column(
    path: &Path,
    file: &CheckedPages<File>,
    meta: &parquet::file::metadata::ParquetMetaData,
    leaf: usize,
) -> Result<Vec<Option<f64>>> {
    use parquet::column::reader::ColumnReader;
    use parquet::file::reader::RowGroupReader;
    let bad = |e: parquet::errors::ParquetError| Error::input(path, None, format!("not a readable Parquet file: {e}"));
    let chunk = Arc::new(CheckedPages::new(file.inner().try_clone().map_err(|e| unreadable(path, e))?, meta));
    let props = Arc::new(parquet::file::properties::ReaderProperties::builder().build());
    let mut out = Vec::new();
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let page_index = meta.page_index_for_row_group(g);
        let reader = parquet::file::serialized_reader::SerializedRowGroupReader::new(
            Arc::clone(&chunk),
            rg,
            page_index,
            Arc::clone(&props),
        )
        .map_err(bad)?;
        let ColumnReader::Int96ColumnReader(mut col) = reader.get_column_reader(leaf).map_err(bad)? else {
            return Err(Error::input(path, None, "start: INT96 column without an INT96 reader"));
        };
        let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
        let max_def = rg.column(leaf).column_descr().max_def_level();
        // in bounded batches: the footer's row count is only a claim
        let mut done = 0;
        while done < rows {
            let want = (rows - done).min(DEFAULT_BATCH_ROWS);
            let (mut defs, mut values) = (Vec::with_capacity(want), Vec::with_capacity(want));
            let (records, _, _) = col.read_records(want, Some(&mut defs), None, &mut values).map_err(bad)?;
            if records == 0 {
                return Err(Error::input(path, None, format!("start: row group {g} holds {done} of {rows} rows")));
            }
            let mut vals = values.iter();
            for r in 0..records {
                let present = max_def == 0 || defs.get(r) == Some(&max_def);
                let v = if present { vals.next() } else { None };
                out.push(match v {
                    None => None,
                    Some(x) => {
                        let row = out.len();
                        let d = x.data();
                        Some(
                            typings::int96_seconds([d[0], d[1], d[2]])
                                .map_err(|why| Error::input(path, None, format!("row {row}: start: {why}")))?,
                        )
                    }
                });
            }
            done += records;
        }
    }
    Ok(out)
}
