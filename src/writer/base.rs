//! Writing a version derived from a base: the base's series are read from the
//! base's shards by the writer itself, and every shard row group that holds
//! exactly the chunks of a base row group is copied as bytes instead of
//! encoded (`docs/format.md` §7, "Cost follows the change").
//!
//! A shard row group is a pure function of its chunks (series id, chunk index,
//! values) and the options (§4): the same chunks under the same options give
//! the same column chunks, pages, CRCs, statistics and page indexes, whoever
//! encodes them. So when a row group of the write holds exactly the chunks of a
//! row group of the base, in the same order, its five column chunks are taken
//! from the base's shard (one ranged read) with the base's column metadata and
//! page indexes, and spliced in as an encoded row group would be
//! (`SerializedRowGroupWriter::append_column` relocates the offsets). Its values
//! are decoded once, for the chunks' statistics only (the index and the
//! manifest need each chunk's sum of squared deviations, which no file stores).
//! A row group that changed is encoded; the base chunks in it are decoded from
//! the base row groups that hold them. The files are byte-identical to a fresh
//! write of the same dataset.
//!
//! Which series come from the base ([`BaseShards::series`]): a series whose id
//! the base holds with the same metadata, when the write's options are the
//! base's (so its chunks are the base's). Its loader is not run.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Float32Type;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::SchemaDescriptor;

use super::WriterOptions;
use crate::encoding::EncodedChunk;
use crate::error::{Error, Result};
use crate::manifest::Partial;
use crate::reader::{IndexEntry, Version};
use crate::storage::Source;

/// What a write took from its base and what it encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Shard row groups copied from the base as bytes.
    pub row_groups_copied: u64,
    /// Shard row groups encoded from values.
    pub row_groups_encoded: u64,
    /// `values` pages inside the copied row groups.
    pub pages_copied: u64,
    /// `values` pages encoded.
    pub pages_encoded: u64,
    /// Bytes read from the base's shards: footers, page indexes, copied row
    /// groups and the `values` column chunks decoded for changed row groups.
    pub bytes_read: u64,
}

/// A base shard: its reader and its footer with page indexes.
pub(crate) struct BaseFooter {
    path: String,
    source: Source,
    meta: Arc<ParquetMetaData>,
    arrow: ArrowReaderMetadata,
}

/// Row group `row_group` of a base shard.
#[derive(Clone)]
pub(crate) struct BaseRowGroup {
    footer: Arc<BaseFooter>,
    row_group: usize,
}

/// A base row group found equal to a row group being written.
pub(crate) struct BaseCopy(BaseRowGroup);

/// Where a chunk of the write lies in the base: its row group and row.
#[derive(Clone)]
pub(crate) struct BaseChunk {
    pub(crate) at: BaseRowGroup,
    pub(crate) row: usize,
}

/// The base of a write: its index (in write order), grouped by row group, and
/// the footers of the shards read so far (each read once).
pub(crate) struct BaseShards {
    version: Arc<Version>,
    /// Each base row group as (shard path, row group, index rows), in index order.
    groups: Vec<(String, usize, Range<usize>)>,
    /// The index row the walk of [`BaseShards::series`] has reached.
    next: usize,
    footers: BTreeMap<String, Arc<BaseFooter>>,
    created_by: String,
    bytes_read: u64,
}

impl BaseShards {
    /// The base `version` of a write with `options`, or `None` when the base
    /// was written with other options (its chunks would not be the write's).
    pub(crate) fn new(version: Arc<Version>, options: &WriterOptions, created_by: String) -> Result<Option<Self>> {
        if version.manifest().writer.options().ok() != Some(*options) {
            return Ok(None);
        }
        let index = version.index()?;
        let mut groups: Vec<(String, usize, Range<usize>)> = Vec::new();
        for (i, e) in index.iter().enumerate() {
            let rg = usize::try_from(e.row_group).unwrap_or(usize::MAX);
            match groups.last_mut() {
                Some((shard, g, rows)) if *shard == e.shard_path && *g == rg && rows.end == i => rows.end += 1,
                _ => groups.push((e.shard_path.clone(), rg, i..i + 1)),
            }
        }
        Ok(Some(BaseShards { version, groups, next: 0, footers: BTreeMap::new(), created_by, bytes_read: 0 }))
    }

    /// Bytes read so far for footers and page indexes.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The base index rows of the series with metadata `meta` when the base
    /// holds it with exactly this metadata and chunks `0..n` of
    /// `chunk_values` values each (the last shorter); `None` otherwise. Series
    /// must be asked in write order: the base's index is walked once.
    pub(crate) fn series(&mut self, meta: &crate::SeriesMeta, chunk_values: usize) -> Result<Option<Range<usize>>> {
        let index = self.version.index()?;
        let key = (meta.spec_type.as_str(), meta.channel.as_str(), meta.time_series_id.as_str());
        fn key_of(e: &IndexEntry) -> (&str, &str, &str) {
            (&e.meta.spec_type, &e.meta.channel, &e.meta.time_series_id)
        }
        while self.next < index.len() && key_of(&index[self.next]) < key {
            self.next += 1;
        }
        let start = self.next;
        let mut end = start;
        while end < index.len() && key_of(&index[end]) == key {
            end += 1;
        }
        self.next = end;
        let rows = &index[start..end];
        let chunked = rows.iter().enumerate().all(|(k, e)| {
            let full = e.n_values as usize == chunk_values;
            e.chunk_idx as usize == k
                && e.value_offset as u64 == (k * chunk_values) as u64
                && e.n_values > 0
                && (full || k + 1 == rows.len())
                && e.meta == *meta
        });
        Ok((!rows.is_empty() && chunked).then_some(start..end))
    }

    /// Values in index row `i` of the base.
    pub(crate) fn n_values(&self, i: usize) -> Result<u32> {
        Ok(self.version.index()?[i].n_values as u32)
    }

    /// Where index row `i` of the base lies.
    pub(crate) fn chunk(&mut self, i: usize) -> Result<BaseChunk> {
        let g = self.groups.partition_point(|(_, _, rows)| rows.end <= i);
        let (shard, row_group, rows) = self.groups.get(g).cloned().ok_or_else(|| Error::Corrupt {
            path: self.version.dir().join("time_series_index.parquet"),
            reason: format!("no row {i}"),
        })?;
        let footer = self.footer(&shard)?;
        Ok(BaseChunk { at: BaseRowGroup { footer, row_group }, row: i - rows.start })
    }

    /// The base row group whose chunks are exactly the index rows `rows`, in
    /// order, when its column chunks can be copied into a file of schema
    /// `descr` (the same schema, written by this build).
    pub(crate) fn copy(&mut self, rows: &[usize], descr: &SchemaDescriptor) -> Result<Option<BaseCopy>> {
        let Some(&first) = rows.first() else { return Ok(None) };
        let g = self.groups.partition_point(|(_, _, r)| r.end <= first);
        let Some((shard, row_group, range)) = self.groups.get(g).cloned() else { return Ok(None) };
        if range.start != first || range.len() != rows.len() || !rows.iter().zip(range).all(|(&a, b)| a == b) {
            return Ok(None);
        }
        let footer = self.footer(&shard)?;
        let meta = &footer.meta;
        let fits = meta.file_metadata().schema_descr().root_schema() == descr.root_schema()
            && meta.file_metadata().created_by() == Some(self.created_by.as_str())
            && meta.row_groups().get(row_group).is_some_and(|rg| rg.num_rows() == rows.len() as i64)
            && meta.page_index().is_some_and(|p| {
                (0..descr.num_columns()).all(|i| p.column_index(row_group, i).zip(p.offset_index(row_group, i)).is_some())
            });
        Ok(fits.then_some(BaseCopy(BaseRowGroup { footer, row_group })))
    }

    /// The footer of base shard `path` with its page indexes, read once.
    fn footer(&mut self, path: &str) -> Result<Arc<BaseFooter>> {
        if let Some(f) = self.footers.get(path) {
            return Ok(Arc::clone(f));
        }
        let loc = self.version.file(path, || format!("time_series_index.parquet shard_path {path:?}"))?;
        let file = loc.to_path_buf();
        let counted = Counted { inner: loc.open()?, read: AtomicU64::new(0) };
        let parquet_err = |e| crate::footer::version_parquet_error(&file, e);
        let meta = crate::footer::contain(|| crate::footer::read_metadata_as_written(&counted))
            .map_err(|panic| Error::Corrupt { path: file.clone(), reason: panic })?
            .map_err(parquet_err)?;
        self.bytes_read += counted.read.load(Ordering::Relaxed);
        let meta = Arc::new(meta);
        let arrow = ArrowReaderMetadata::try_new(Arc::clone(&meta), ArrowReaderOptions::new()).map_err(parquet_err)?;
        let footer = Arc::new(BaseFooter { path: path.to_string(), source: counted.inner, meta, arrow });
        self.footers.insert(path.to_string(), Arc::clone(&footer));
        Ok(footer)
    }
}

/// A base shard's reader that counts the bytes asked of it (the footer and page indexes).
struct Counted {
    inner: Source,
    read: AtomicU64,
}

impl Length for Counted {
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl ChunkReader for Counted {
    type T = <Source as ChunkReader>::T;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        // the footer reader asks for ranges; a stream counts as the rest of the file
        self.read.fetch_add(self.inner.len().saturating_sub(start), Ordering::Relaxed);
        self.inner.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read.fetch_add(length as u64, Ordering::Relaxed);
        self.inner.get_bytes(start, length)
    }
}

/// The decoded `values` column of a base row group: row `r` is
/// `values[offsets[r]..offsets[r + 1]]`.
pub(crate) struct RowGroupValues {
    pub(crate) values: arrow::buffer::ScalarBuffer<f32>,
    offsets: arrow::buffer::OffsetBuffer<i32>,
}

impl RowGroupValues {
    /// The values of row `r`, or `None` past the last row.
    pub(crate) fn row(&self, r: usize) -> Option<&[f32]> {
        let (start, end) = (*self.offsets.get(r)?, *self.offsets.get(r + 1)?);
        self.values.get(start as usize..end as usize)
    }
}

impl BaseRowGroup {
    pub(crate) fn corrupt(&self, why: String) -> Error {
        Error::Corrupt { path: self.footer.path.clone().into(), reason: format!("row group {}: {why}", self.row_group) }
    }

    /// Byte range of the whole row group (`all`) or of its `values` column chunk.
    fn range(&self, all: bool) -> Result<(u64, usize)> {
        let rg = self.footer.meta.row_groups().get(self.row_group).ok_or_else(|| self.corrupt("missing".into()))?;
        let columns = if all { rg.columns() } else { &rg.columns()[rg.columns().len().saturating_sub(1)..] };
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for c in columns {
            let (start, len) = c.byte_range();
            lo = lo.min(start);
            hi = hi.max(start.saturating_add(len));
        }
        let len = hi.checked_sub(lo).and_then(|l| usize::try_from(l).ok());
        len.map(|l| (lo, l)).ok_or_else(|| self.corrupt("no column chunk".into()))
    }

    /// Reads the byte range `(start, len)` of the shard.
    fn read(&self, (start, len): (u64, usize)) -> Result<Bytes> {
        let f = &self.footer;
        f.source.get_bytes(start, len).map_err(|e| crate::footer::version_parquet_error(f.path.as_ref(), e))
    }

    /// Decodes the `values` column of the row group from `bytes`, which hold
    /// the shard's bytes from offset `at` on (at least that column chunk).
    fn decode(&self, bytes: Bytes, at: u64) -> Result<RowGroupValues> {
        let f = &self.footer;
        let descr = f.meta.file_metadata().schema_descr();
        let rows = f.meta.row_groups()[self.row_group].num_rows() as usize;
        let err = |e: parquet::errors::ParquetError| crate::footer::version_parquet_error(f.path.as_ref(), e);
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(At { bytes, at }, f.arrow.clone())
            .with_row_groups(vec![self.row_group])
            .with_projection(ProjectionMask::leaves(descr, [descr.num_columns() - 1]))
            .with_batch_size(rows.max(1))
            .build()
            .map_err(err)?;
        let mut batches = Vec::new();
        for b in reader {
            batches.push(b.map_err(|e| self.corrupt(format!("values: {e}")))?);
        }
        let [batch] = batches.as_slice() else {
            return Err(self.corrupt(format!("{} batches of values, want 1", batches.len())));
        };
        let list = batch.column(0).as_list_opt::<i32>().ok_or_else(|| self.corrupt("values is not a list".into()))?;
        let floats = list.values().as_primitive_opt::<Float32Type>();
        match floats {
            Some(v) if list.len() == rows && list.null_count() == 0 => {
                Ok(RowGroupValues { values: v.values().clone(), offsets: list.offsets().clone() })
            }
            _ => Err(self.corrupt("values are not {rows} lists of float32".into())),
        }
    }

    /// Reads and decodes the row group's `values` column; returns the values
    /// and the bytes read.
    pub(crate) fn values(&self) -> Result<(RowGroupValues, u64)> {
        let range = self.range(false)?;
        let bytes = self.read(range)?;
        Ok((self.decode(bytes, range.0)?, range.1 as u64))
    }

    /// Row `row` of `values` (this row group's, decoded), which must hold
    /// `n_values` finite values, and its statistics.
    pub(crate) fn chunk<'v>(&self, values: &'v RowGroupValues, row: usize, n_values: u32) -> Result<(&'v [f32], Partial)> {
        let v = values.row(row).filter(|v| v.len() == n_values as usize);
        let v = v.ok_or_else(|| self.corrupt(format!("row {row} does not hold the {n_values} values the index says")))?;
        let partial = Partial::of(v);
        if !partial.mean.is_finite() {
            return Err(self.corrupt(format!("row {row} holds a value that is not finite")));
        }
        Ok((v, partial))
    }

    /// The same base row group as `other`.
    pub(crate) fn same(&self, other: &BaseRowGroup) -> bool {
        Arc::ptr_eq(&self.footer, &other.footer) && self.row_group == other.row_group
    }
}

impl BaseCopy {
    /// [`BaseRowGroup::chunk`] of the copied row group.
    pub(crate) fn chunk<'v>(&self, values: &'v RowGroupValues, row: usize, n_values: u32) -> Result<(&'v [f32], Partial)> {
        self.0.chunk(values, row, n_values)
    }

    /// The row group's column chunks as the base holds them, ready to splice,
    /// its decoded values, and the bytes read (one ranged read of the row group).
    pub(crate) fn read(&self) -> Result<(Vec<EncodedChunk>, RowGroupValues, u64)> {
        let b = &self.0;
        let (start, len) = b.range(true)?;
        let bytes = b.read((start, len))?;
        let values = b.decode(bytes.clone(), start)?;
        let meta = &b.footer.meta;
        let rg = &meta.row_groups()[b.row_group];
        let index = meta.page_index_for_row_group(b.row_group);
        let page_index = |i: usize| (index.column_index(i).cloned(), index.offset_index(i).cloned());
        let chunks = rg
            .columns()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (offset, length) = c.byte_range();
                let from = (offset - start) as usize;
                let (column_index, offset_index) = page_index(i);
                let metadata = match c.statistics() {
                    Some(stats) => {
                        let signed = c.column_descr().sort_order().is_signed();
                        let stats = as_written(stats.clone(), signed, &values.values);
                        let built = c.clone().into_builder().set_statistics(stats).build();
                        built.map_err(|e| crate::footer::version_parquet_error(b.footer.path.as_ref(), e))?
                    }
                    None => c.clone(),
                };
                Ok(EncodedChunk {
                    bytes: bytes.slice(from..from + length as usize),
                    at: offset,
                    close: ColumnCloseResult {
                        bytes_written: c.compressed_size() as u64,
                        rows_written: rg.num_rows() as u64,
                        metadata,
                        bloom_filter: None,
                        column_index,
                        offset_index,
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((chunks, values, len as u64))
    }
}

/// `stats` of a column chunk read back from a footer, as the column writer
/// made them before the footer was written: the deprecated `min`/`max` fields
/// are written too for a signed sort order, and the float leaf (`values`, whose
/// decoded values are `values`) has the minimum and maximum of its values in
/// IEEE 754 total order, exact. The footer lost both: the parquet crate reads
/// no exactness flag of a number, and [`crate::float_order`] wrote a zero
/// minimum as -0.0 (inexact if it was +0.0), so the footer rewrite then does to
/// the copy what it did to the base.
fn as_written(stats: Statistics, signed: bool, values: &[f32]) -> Statistics {
    let deprecated = stats.is_min_max_deprecated();
    macro_rules! each {
        ($($v:ident),*) => {
            match stats {
                Statistics::Float(s) => {
                    let total = |keep: fn(std::cmp::Ordering) -> bool| {
                        values.iter().copied().reduce(|a, b| if keep(b.total_cmp(&a)) { b } else { a })
                    };
                    let (min, max) = (total(std::cmp::Ordering::is_lt), total(std::cmp::Ordering::is_gt));
                    let fresh =
                        ValueStatistics::new(min, max, s.distinct_count(), s.null_count_opt(), deprecated);
                    Statistics::Float(fresh.with_nan_count(s.nan_count_opt()).with_backwards_compatible_min_max(signed))
                }
                $(Statistics::$v(s) => Statistics::$v(s.with_backwards_compatible_min_max(signed)),)*
            }
        };
    }
    each!(Boolean, Int32, Int64, Int96, Double, ByteArray, FixedLenByteArray)
}

/// Bytes of a file from offset `at` on, read at the file's offsets.
pub(crate) struct At {
    pub(crate) bytes: Bytes,
    pub(crate) at: u64,
}

impl Length for At {
    fn len(&self) -> u64 {
        self.at + self.bytes.len() as u64
    }
}

impl ChunkReader for At {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let rest = self.len().saturating_sub(start) as usize;
        Ok(bytes::Buf::reader(self.get_bytes(start, rest)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let from = start.checked_sub(self.at).and_then(|f| usize::try_from(f).ok());
        match from {
            Some(f) if f.checked_add(length).is_some_and(|end| end <= self.bytes.len()) => {
                Ok(self.bytes.slice(f..f + length))
            }
            _ => Err(parquet::errors::ParquetError::EOF(format!(
                "bytes {start}..+{length} outside the {} bytes held from {}",
                self.bytes.len(),
                self.at
            ))),
        }
    }
}
