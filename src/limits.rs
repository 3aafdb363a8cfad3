//! The size limits a reader checks (docs/format.md "Limits a reader checks"):
//! bounds the reader owns, never taken from the file or manifest it reads.
//! Below everything that checks them (storage, footer, thrift, manifest,
//! reader), so no import runs upward.

/// Largest `manifest.json` a version may have, in bytes (256 MiB): the writer
/// refuses to commit a larger one, the reader and `verify` refuse to read one
/// (a bound against a device or a huge file in its place; a real manifest is a
/// few hundred bytes per file; `docs/format.md`, "Limits").
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// Rows of one record batch when a whole table is read: memory follows the
/// batch, never a row count a footer claims.
pub const DEFAULT_BATCH_ROWS: usize = 8192;

/// Bytes a page may claim to decompress to per byte it is stored in (65536):
/// above what zstd, the densest codec a TimeF writer or common Parquet writer
/// uses, reaches on constant data (about 32768x). A claim is allocated at once
/// by the decoder, so it is checked before the page is decoded.
pub const MAX_PAGE_EXPANSION: u64 = 1 << 16;

/// Largest uncompressed page a reader decodes (256 MiB), and the most a
/// values page may decode to (its values at 4 bytes each). TimeF pages hold at
/// most a chunk (`chunk_max_bytes`) plus levels; a page of another writer holds
/// at least one row, and a row of 64 Mi float32 values is past anything a
/// GluonTS-style input holds.
pub const MAX_PAGE_BYTES: u64 = 256 << 20;

/// Largest page header the page walk accepts, in bytes. TimeF headers are
/// under 64 bytes; headers of other writers carry page statistics, which
/// parquet writers truncate to well below this.
pub const MAX_PAGE_HEADER_BYTES: usize = 1 << 20;
