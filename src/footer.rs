//! Reading untrusted Parquet files (a version's, or a connector's input)
//! without trusting their numbers (docs/format.md "Limits a reader checks"):
//! every size and count in a footer is checked against the file's real size
//! before anything is read or allocated from it, batches are bounded, and a
//! panic of the parquet or arrow crates on crafted bytes is contained and
//! becomes an error.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::ChunkReader;

use crate::error::Error;

/// Rows of one record batch when a whole table is read: memory follows the
/// batch, never a row count a footer claims.
pub const DEFAULT_BATCH_ROWS: usize = 8192;

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
    (claimed != rows).then(|| format!("the footer claims {claimed} rows, its row groups {rows}"))
}

/// The footer of `reader`, its sizes checked by [`size_problem`] before the
/// offset and column indexes (as `offset_index` and `column_index` ask) are
/// read from them.
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
    with_index.finish()
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
                Ok(io) => Error::io(path, *io),
                Err(inner) => corrupt(path, format!("parquet: {inner}")),
            },
        },
        other => corrupt(path, format!("parquet: {other}")),
    }
}

/// An arrow error on a file of a version: [`Error::Corrupt`] naming the file,
/// except an I/O failure.
pub fn version_arrow_error(path: &Path, e: arrow::error::ArrowError) -> Error {
    use arrow::error::ArrowError;
    match e {
        ArrowError::IoError(_, io) => Error::io(path, io),
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
