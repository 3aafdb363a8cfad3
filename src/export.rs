//! Writing a [`Scan`] to one Arrow IPC or Parquet file (`timef export`;
//! docs/format.md §9, "Bulk reads"): the scan's chunk rows as they come, in
//! index order, so memory stays bounded by the scan's row groups in flight
//! (Arrow IPC) plus one output row group (Parquet).
//!
//! The file appears whole or not at all: it is written to a temporary file
//! beside `out` and linked to `out` at the end, never replacing a file there.

use std::io::Write;
use std::path::Path;

use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::error::{Error, Result};
use crate::scan::{scan_schema, Scan};

/// Uncompressed bytes an exported Parquet row group holds before it is
/// flushed (64 MiB): the export's memory past the scan's.
pub const EXPORT_ROW_GROUP_BYTES: usize = 64 << 20;

/// zstd level of an exported Parquet file (3, as the version's shards).
pub const EXPORT_ZSTD_LEVEL: i32 = 3;

/// The file format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportFormat {
    /// Parquet: zstd level [`EXPORT_ZSTD_LEVEL`], `values` BYTE_STREAM_SPLIT,
    /// row groups of about [`EXPORT_ROW_GROUP_BYTES`].
    Parquet,
    /// Arrow IPC file format (Feather v2), uncompressed: memory-mappable.
    ArrowIpc,
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportSummary {
    /// Series written.
    pub series: u64,
    /// Chunk rows written.
    pub chunks: u64,
    /// float32 values written.
    pub values: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
}

/// Writes every batch of `scan` to `out` in `format`, schema
/// [`crate::scan::scan_schema`].
///
/// # Errors
/// The scan's errors ([`Error::Corrupt`], I/O, object store); [`Error::Io`] on
/// `out` (`AlreadyExists` when a file is there); [`Error::Missing`] naming
/// the folder of `out` when it does not exist; [`Error::Validation`] (field
/// `out`) when `out` is inside a committed version, which never changes.
/// Nothing is left at `out` on error.
pub fn export(scan: Scan, out: &Path, format: ExportFormat) -> Result<ExportSummary> {
    crate::storage::Location::local(out).ensure_outside_versions("out", "a file")?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".timef-export-");
    // created as any new file is (0666 less the umask), not tempfile's private 0600
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    // counted as a live write from before its temporary file, so that Ctrl-C
    // stops it at the next batch or before the rename and the temporary file is
    // removed instead of the process exiting at once
    let _live = crate::storage::LiveGuard::new();
    let tmp = builder.tempfile_in(parent).map_err(|e| match e.kind() {
        // one rule for what does not exist (docs/format.md "Exit codes")
        std::io::ErrorKind::NotFound => crate::storage::missing_dir(parent),
        _ => Error::io_temp(out, e),
    })?;
    let file = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file().try_clone().map_err(|e| Error::io(out, e))?);
    let (series, chunks, values) = (scan.series_meta().len() as u64, scan.chunks(), scan.values());
    let arrow_err = |e: arrow_schema::ArrowError| Error::Arrow { path: out.to_path_buf(), source: e };
    let parquet_err = |e: parquet::errors::ParquetError| Error::parquet(out, e);
    let mut file = match format {
        ExportFormat::ArrowIpc => {
            let mut w = arrow_ipc::writer::FileWriter::try_new(file, &scan_schema()).map_err(arrow_err)?;
            for batch in scan {
                crate::storage::check_interrupted(out)?;
                w.write(&batch?).map_err(arrow_err)?;
            }
            w.finish().map_err(arrow_err)?;
            w.into_inner().map_err(arrow_err)?
        }
        ExportFormat::Parquet => {
            let level = ZstdLevel::try_new(EXPORT_ZSTD_LEVEL).map_err(parquet_err)?;
            let values = ColumnPath::from(vec!["values".to_string(), "list".into(), "item".into()]);
            let props = WriterProperties::builder()
                .set_compression(Compression::ZSTD(level))
                .set_column_dictionary_enabled(values.clone(), false)
                .set_column_encoding(values, Encoding::BYTE_STREAM_SPLIT)
                .set_max_row_group_row_count(None)
                .build();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, scan_schema(), Some(props)).map_err(parquet_err)?;
            for batch in scan {
                crate::storage::check_interrupted(out)?;
                w.write(&batch?).map_err(parquet_err)?;
                if w.in_progress_size() >= EXPORT_ROW_GROUP_BYTES {
                    w.flush().map_err(parquet_err)?;
                }
            }
            w.into_inner().map_err(parquet_err)?
        }
    };
    file.flush().map_err(|e| Error::io(out, e))?;
    drop(file);
    tmp.as_file().sync_all().map_err(|e| Error::io(out, e))?;
    let bytes = tmp.as_file().metadata().map_err(|e| Error::io(out, e))?.len();
    // the last moment a Ctrl-C can stop the export
    crate::storage::check_interrupted(out)?;
    tmp.persist_noclobber(out).map_err(|e| Error::io(out, e.error))?;
    Ok(ExportSummary { series, chunks, values, bytes })
}
