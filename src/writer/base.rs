//! Writing a version derived from a base: the base's series are taken from
//! the base's shards by the writer itself, and every `values` page whose rows
//! are the rows of a base page is stored as that page's bytes, neither
//! decompressed nor encoded (`docs/format.md` §7, "Cost follows the change").
//!
//! A `values` page is a function of its rows (section 4: cuts are row-aligned
//! and content-defined), so after an edit most pages of the write hold exactly
//! the rows of a page of the base. For each row group it builds, the writer
//! reads the `values` pages of the base row groups that hold its chunks (one
//! ranged read per base row group, of just the pages holding those chunks,
//! located by the offset index) and checks each page's header and CRC. A page of the write whose rows are a base page's (from a shard this
//! build wrote) is that page as stored; the other pages are encoded from
//! their rows' values, decoding only the base pages those rows are in; the
//! column chunk is assembled from both ([`super::page_splice`]). A chunk's
//! statistics come from the base's index ("Statistics as stored"), so no
//! value is read for them. The files are byte-identical to a fresh write of
//! the same dataset.
//!
//! Which series come from the base ([`BaseShards::series`]): a series whose id
//! the base holds with the same metadata, when the write's options are the
//! base's (so its chunks are the base's). Its loader is not run.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::Compression;
use parquet::file::metadata::page_index::RowGroupPageIndex;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::SchemaDescriptor;

use super::page_splice::StoredPage;
use super::WriterOptions;
use crate::encoding::FileSchema;
use crate::error::{Error, Result};
use crate::footer::PageChecks;
use crate::manifest::FileEntry;
use crate::pages::{RowValues, ValuesChunk};
use crate::reader::{IndexEntry, Version};
use crate::stats::ChannelStats;
use crate::storage::{FileSink, Location, Source};

/// What a write took from its base and what it compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// `values` pages stored as the base's bytes (header and body), neither
    /// decompressed nor encoded.
    pub pages_copied: u64,
    /// `values` pages encoded and compressed.
    pub pages_encoded: u64,
    /// Base `values` pages decompressed and decoded (for the values of
    /// pages encoded).
    pub pages_decoded: u64,
    /// Shards placed as copies of the base's files (their pages are counted
    /// in `pages_copied`).
    pub shards_copied: u64,
    /// Bytes read from the base's shards: footers, page indexes and the
    /// `values` column chunks of the base row groups the write takes chunks from.
    pub bytes_read: u64,
}

/// A base shard: its reader and its footer with the offset index.
pub(crate) struct BaseFooter {
    path: String,
    /// Where the shard is, for errors (`docs/format.md` "Limits a reader checks").
    file: std::path::PathBuf,
    /// One read at a time: a local file's reads seek a descriptor that its
    /// clones share, so row groups built on several threads would interleave.
    source: Mutex<Source>,
    /// Its footer with the page indexes, as the parquet crate's Arrow reader takes it.
    meta: ArrowReaderMetadata,
    /// What its pages are held to, built once from `meta` for every read of its key columns.
    checks: PageChecks,
    /// Its `values` pages may be stored in the write as they are: the shard
    /// was written by this build (`created_by`, which names the byte rules,
    /// `docs/format.md` §7) with the write's `values` column.
    reusable: bool,
    /// The whole file may be the write's shard: besides, its schema (the id
    /// encoding of the series ids) and key-value metadata are the write's.
    whole: bool,
    /// Where it is, for a copy of the whole file.
    loc: Location,
    /// Its entry in the base's manifest (`None`: not listed).
    entry: Option<FileEntry>,
}

/// Row group `row_group` of a base shard, whose rows are, by the base's
/// index, chunk `chunks[i].1` of series `chunks[i].0` holding `lengths[i]`
/// values each (checked against the shard's key columns and pages as they
/// are read).
#[derive(Clone)]
pub(crate) struct BaseRowGroup {
    footer: Arc<BaseFooter>,
    row_group: usize,
    lengths: Arc<[u32]>,
    chunks: Arc<[(String, i32)]>,
}

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
    /// The last row group [`BaseShards::chunk`] handed out, by group.
    last: Option<(usize, BaseRowGroup)>,
    footers: BTreeMap<String, Arc<BaseFooter>>,
    /// The write's shard schema and properties, which a base shard's footer
    /// must match for its pages or its whole file to be reused.
    schema: Arc<FileSchema>,
    props: WriterPropertiesPtr,
    bytes_read: u64,
}

impl BaseShards {
    /// The base `version` of a write with `options` whose shards have
    /// `schema` and `props`, or `None` when the base was written with other
    /// options (its chunks would not be the write's).
    pub(crate) fn new(
        version: Arc<Version>,
        options: &WriterOptions,
        schema: Arc<FileSchema>,
        props: WriterPropertiesPtr,
    ) -> Result<Option<Self>> {
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
        let footers = BTreeMap::new();
        Ok(Some(BaseShards { version, groups, next: 0, last: None, footers, schema, props, bytes_read: 0 }))
    }

    /// Bytes read so far for footers and offset indexes.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The base index rows of the series with metadata `meta` when the base
    /// holds it with exactly this metadata and chunks `0..n` of
    /// `chunk_values` values each (the last shorter); `None` otherwise. Series
    /// must be asked in write order: the base's index is walked once.
    pub(crate) fn series(&mut self, meta: &crate::SeriesMeta, chunk_values: usize) -> Result<Option<Range<usize>>> {
        fn key_of(e: &IndexEntry) -> (&str, &str, &str) {
            (&e.meta.spec_type, &e.meta.channel, &e.meta.time_series_id)
        }
        let index = self.version.index()?;
        let key = (meta.spec_type.as_str(), meta.channel.as_str(), meta.time_series_id.as_str());
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

    /// The statistics of index row `i` of the base as its index stores them:
    /// those of the chunk's values, which are the base's (`docs/format.md`
    /// "Statistics as stored"), so the chunk's values are not read for them.
    pub(crate) fn stats(&self, i: usize) -> Result<ChannelStats> {
        let e = &self.version.index()?[i];
        let count = u64::try_from(e.n_values).unwrap_or(0);
        Ok(ChannelStats { count, min: f64::from(e.min), max: f64::from(e.max), mean: e.mean, std: e.std })
    }

    /// Where index row `i` of the base lies.
    pub(crate) fn chunk(&mut self, i: usize) -> Result<BaseChunk> {
        let g = self.groups.partition_point(|(_, _, rows)| rows.end <= i);
        let (shard, row_group, rows) = self.groups.get(g).cloned().ok_or_else(|| Error::Corrupt {
            path: self.version.dir().join("time_series_index.parquet"),
            reason: format!("no row {i}"),
        })?;
        let at = match &self.last {
            Some((last, at)) if *last == g => at.clone(),
            _ => {
                let e = &self.version.index()?[i];
                let origin =
                    format!("time_series_index.parquet row {i} ({} chunk {})", e.meta.time_series_id, e.chunk_idx);
                let footer = self.footer(&shard, origin)?;
                let group = &self.version.index()?[rows.clone()];
                let lengths: Arc<[u32]> = group.iter().map(|e| e.n_values as u32).collect();
                let chunks = group.iter().map(|e| (e.meta.time_series_id.clone(), e.chunk_idx)).collect();
                let at = BaseRowGroup { footer, row_group, lengths, chunks };
                at.check_group(group)?;
                self.last = Some((g, at.clone()));
                at
            }
        };
        Ok(BaseChunk { at, row: i - rows.start })
    }

    /// The footer of base shard `path` with its offset index, read once.
    fn footer(&mut self, path: &str, origin: String) -> Result<Arc<BaseFooter>> {
        if let Some(f) = self.footers.get(path) {
            return Ok(Arc::clone(f));
        }
        let loc = self.version.file(path, || origin)?;
        let file = loc.to_path_buf();
        let counted = Counted::new(loc.open()?);
        let loc = loc.clone();
        let meta = crate::footer::contain(|| {
            let meta = crate::footer::read_metadata(&counted, PageIndexPolicy::Required, PageIndexPolicy::Required)?;
            ArrowReaderMetadata::try_new(Arc::new(meta), ArrowReaderOptions::new())
        })
        .map_err(|panic| Error::Corrupt { path: file.clone(), reason: panic })?
        .map_err(|e| crate::footer::version_parquet_error(&file, e))?;
        self.bytes_read += counted.read.load(Ordering::Relaxed);
        let (reusable, whole) = self.reuse(meta.metadata());
        let source = Mutex::new(counted.inner);
        let entry = self.version.manifest().files.iter().find(|f| f.path == path).cloned();
        let footer = Arc::new(BaseFooter {
            path: path.to_string(),
            file,
            source,
            checks: PageChecks::of(meta.metadata()),
            meta,
            reusable,
            whole,
            loc,
            entry,
        });
        self.footers.insert(path.to_string(), Arc::clone(&footer));
        Ok(footer)
    }
}

impl BaseShards {
    /// Whether the `values` pages of a base shard with footer `meta` may be
    /// reused, and whether its whole file may: its bytes are a function of its
    /// rows, the options (checked in [`BaseShards::new`]), the byte rules
    /// (`created_by`), the schema (the id encoding of the series ids is
    /// decided by the whole dataset, `docs/format.md` §6) and the key-value
    /// metadata (the Arrow schema); each must be the write's.
    fn reuse(&self, meta: &ParquetMetaData) -> (bool, bool) {
        let file = meta.file_metadata();
        let leaf = |d: &SchemaDescriptor| d.num_columns().checked_sub(1).map(|c| d.column(c));
        let base_values = leaf(file.schema_descr());
        let values_same = base_values.is_some() && base_values == leaf(&self.schema.descr);
        let pages = file.created_by() == Some(self.props.created_by()) && values_same;
        let whole = pages
            && file.schema_descr().root_schema() == self.schema.descr.root_schema()
            && file.key_value_metadata() == self.props.key_value_metadata();
        (pages, whole)
    }
}

/// A base shard's reader that counts the bytes asked of it (the footer and
/// offset index; the key columns of a row group).
struct Counted {
    inner: Source,
    read: Arc<AtomicU64>,
}

impl Counted {
    fn new(inner: Source) -> Counted {
        Counted { inner, read: Arc::default() }
    }
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

/// One `values` page of a base row group: its rows, its header and body as
/// stored (checked as every reader checks them), and its rows' values once
/// decoded.
struct BasePage {
    /// Its number in the column chunk (the offset and column indexes' entry).
    k: usize,
    first_row: usize,
    rows: usize,
    stored: Bytes,
    /// Its values are BYTE_STREAM_SPLIT (else PLAIN).
    split: bool,
    /// It has a CRC (checked): only such a page is stored as it is.
    crc: bool,
    /// Its rows' values, once [`BasePages::decode`] decoded it.
    decoded: Option<RowValues>,
}

/// The `values` pages of a base row group that a row group of the write
/// takes rows from, read and checked; each decoded only when asked
/// ([`BasePages::decode`]).
pub(crate) struct BasePages {
    at: BaseRowGroup,
    pages: Vec<BasePage>,
    /// The bytes read (the pages, back to back) and their file offset.
    bytes: Bytes,
    from: u64,
}

impl BaseRowGroup {
    pub(crate) fn corrupt(&self, why: String) -> Error {
        Error::Corrupt { path: self.footer.file.clone(), reason: format!("row group {}: {why}", self.row_group) }
    }

    /// The same base row group as `other`.
    pub(crate) fn same(&self, other: &BaseRowGroup) -> bool {
        Arc::ptr_eq(&self.footer, &other.footer) && self.row_group == other.row_group
    }

    /// In the same base shard as `other`.
    pub(crate) fn same_shard(&self, other: &BaseRowGroup) -> bool {
        Arc::ptr_eq(&self.footer, &other.footer)
    }

    /// This is row group `row_group` of `rows` rows of a shard at `path`
    /// written by this build: a row group of the write with exactly its rows
    /// has exactly its bytes.
    pub(crate) fn is(&self, path: &str, row_group: u32, rows: usize) -> bool {
        let f = &self.footer;
        f.whole && f.path == path && self.row_group == row_group as usize && self.lengths.len() == rows
    }

    /// Row groups of the shard.
    pub(crate) fn shard_row_groups(&self) -> usize {
        self.footer.meta.metadata().num_row_groups()
    }

    /// Places a copy of the whole shard at its path through `staging`
    /// (`docs/format.md` §7); returns its manifest entry (the base's) and
    /// its `values` pages, or `None` when the staging cannot copy from the
    /// base's backend.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the shard when the base's manifest does not
    /// list it or the file's size is not the size it lists.
    pub(crate) fn copy_shard(&self, staging: &mut dyn FileSink) -> Result<Option<(FileEntry, u64)>> {
        let f = &self.footer;
        let corrupt = |reason: String| Error::Corrupt { path: f.file.clone(), reason };
        let entry = f.entry.clone().ok_or_else(|| corrupt("not in the base's manifest files".into()))?;
        let Some(bytes) = staging.copy_file(&f.path, &f.loc)? else { return Ok(None) };
        if bytes != entry.bytes {
            return Err(corrupt(format!("{bytes} bytes, the base's manifest says {}", entry.bytes)));
        }
        let leaf = f.meta.metadata().file_metadata().schema_descr().num_columns().saturating_sub(1);
        let pages = (0..f.meta.metadata().num_row_groups())
            .map(|g| {
                f.meta.metadata().page_index_for_row_group(g).offset_index(leaf).map_or(0, |o| o.page_locations.len())
            })
            .sum::<usize>();
        Ok(Some((entry, pages as u64)))
    }

    /// Level entries of the `values` column chunk by the index (a value
    /// each, one per empty chunk).
    fn entries(&self) -> u64 {
        self.lengths.iter().map(|&l| u64::from(l.max(1))).sum()
    }

    /// The row group's footer entry: it holds exactly the index's `group`
    /// rows, each where its pointer says (an edit takes a base row group's
    /// rows in index order, as the writer writes them: docs/format.md §7,
    /// "Cost follows the change"), and its `values` column chunk the level
    /// entries their counts make.
    fn check_group(&self, group: &[IndexEntry]) -> Result<()> {
        let rg = self.footer.meta.metadata().row_groups().get(self.row_group);
        let rg = rg.ok_or_else(|| self.corrupt("missing".into()))?;
        if let Some((k, e)) = group.iter().enumerate().find(|(k, e)| usize::try_from(e.row_offset).ok() != Some(*k)) {
            return Err(self.corrupt(format!(
                "the index puts {} chunk {} at row {}, its row {k} in the index's order",
                e.meta.time_series_id, e.chunk_idx, e.row_offset
            )));
        }
        if usize::try_from(rg.num_rows()).ok() != Some(group.len()) {
            return Err(self.corrupt(format!("{} rows, the index points at {}", rg.num_rows(), group.len())));
        }
        let values = rg.columns().last().map_or(0, |c| c.num_values());
        if u64::try_from(values).ok() != Some(self.entries()) {
            return Err(self.corrupt(format!(
                "values column chunk holds {values} values by the footer, the index puts {} in it",
                self.entries()
            )));
        }
        Ok(())
    }

    /// The row group's page index, for [`BaseRowGroup::values_chunk`].
    fn page_index(&self) -> RowGroupPageIndex {
        self.footer.meta.metadata().page_index_for_row_group(self.row_group)
    }

    /// The row group's `values` column chunk as its footer and offset index
    /// (in `page_index`, [`BaseRowGroup::page_index`]) describe it.
    fn values_chunk<'p>(&self, page_index: &'p RowGroupPageIndex) -> Result<ValuesChunk<'p>> {
        let meta = self.footer.meta.metadata();
        let rg = meta.row_groups().get(self.row_group).ok_or_else(|| self.corrupt("missing".into()))?;
        let leaf = rg.num_columns().checked_sub(1).ok_or_else(|| self.corrupt("no column".into()))?;
        let column = rg.column(leaf);
        let locations = page_index.offset_index(leaf);
        Ok(ValuesChunk {
            compression: column.compression(),
            start: column.byte_range().0,
            pages: locations
                .map(|o| o.page_locations.as_slice())
                .ok_or_else(|| self.corrupt("no offset index".into()))?,
            rows: self.lengths.len() as u64,
            entries: self.entries(),
        })
    }

    /// Reads the pages of the row group's `values` column chunk that hold
    /// its rows `rows` (one ranged read, from the first such page to the
    /// last, located by the offset index) and checks each page as every
    /// reader does before decompressing, and the rows' key columns against
    /// the index ([`crate::chunks::read_keys`]); returns the pages and the
    /// bytes read. A base row group whose rows go to two row groups of the
    /// write is read in two parts, not twice whole.
    pub(crate) fn pages(&self, rows: Range<usize>) -> Result<(BasePages, u64)> {
        let f = &self.footer;
        let page_index = self.page_index();
        let chunk = self.values_chunk(&page_index)?;
        if !matches!(chunk.compression, Compression::ZSTD(_)) {
            return Err(self.corrupt(format!("values compressed with {:?}, not ZSTD", chunk.compression)));
        }
        let meta = f.meta.metadata();
        let column =
            meta.row_groups()[self.row_group].columns().last().ok_or_else(|| self.corrupt("no column".into()))?;
        if column.dictionary_page_offset().is_some() {
            // the offset index lists data pages only: the dictionary page is refused here
            return Err(self.corrupt("a dictionary page in a values column chunk (the format never writes one)".into()));
        }
        let (start, len) = column.byte_range();
        let end = start.checked_add(len).ok_or_else(|| self.corrupt("a column chunk past the file's end".into()))?;
        let read = |from: u64, to: u64| {
            let len =
                usize::try_from(to - from).map_err(|_| self.corrupt("a column chunk larger than memory".into()))?;
            let source = f.source.lock().map_err(|_| self.corrupt("a read of this shard panicked".into()))?;
            source.get_bytes(from, len).map_err(|e| crate::footer::version_parquet_error(f.path.as_ref(), e))
        };
        let locations = chunk.pages;
        // a page before the first data page the offset index lists (a dictionary page)
        if locations.first().is_some_and(|first| first.offset as u64 > start) {
            let bytes = read(start, end)?;
            let why = crate::footer::values_page_problem(&bytes, chunk.entries)
                .unwrap_or_else(|| "a page before the first data page of the offset index".into());
            return Err(self.corrupt(format!("values page 0: {why}")));
        }
        if locations.is_empty() || rows.is_empty() {
            return Err(self.corrupt("no values pages".into()));
        }
        // the pages from the one holding the first row asked to the one holding the last
        let first_row = |k: usize| locations[k].first_row_index as usize;
        let first = locations.partition_point(|l| l.first_row_index as usize <= rows.start).saturating_sub(1);
        let last = locations.partition_point(|l| (l.first_row_index as usize) < rows.end).saturating_sub(1).max(first);
        let page_range = |k: usize| {
            let loc = locations.get(k)?;
            let from = u64::try_from(loc.offset).ok().filter(|&o| o >= start)?;
            let to = from.checked_add(u64::try_from(loc.compressed_page_size).ok()?).filter(|&t| t <= end)?;
            Some(from..to)
        };
        let outside = |k: usize| self.corrupt(format!("page {k} outside its column chunk"));
        let from = page_range(first).ok_or_else(|| outside(first))?.start;
        let to = page_range(last).ok_or_else(|| outside(last))?.end.max(from);
        // on an object store the pages and the rows' key columns in concurrent
        // GETs, coalesced (the key columns precede the values), read from memory
        let mut ahead = key_ranges(f.meta.metadata(), &[self.row_group]);
        ahead.push(from..to);
        let _held = f.loc.read_ahead(ahead)?;
        let bytes = read(from, to)?;
        let mut pages = Vec::with_capacity(last + 1 - first);
        for k in first..=last {
            let range = page_range(k).filter(|r| r.start >= from && r.end <= to).ok_or_else(|| outside(k))?;
            let end_row = if k + 1 < locations.len() { first_row(k + 1) } else { self.lengths.len() };
            if end_row < first_row(k) || end_row > self.lengths.len() {
                return Err(self.corrupt(format!("values page {k}: rows {}..{end_row}", first_row(k))));
            }
            let stored = bytes.slice((range.start - from) as usize..(range.end - from) as usize);
            let bad = |why: String| self.corrupt(format!("values page {k}: {why}"));
            let checked = crate::pages::check_stored(&stored, chunk.entries).map_err(bad)?;
            let (split, crc) = (checked.split, checked.header.crc.is_some());
            let (first_row, rows) = (first_row(k), end_row - first_row(k));
            // a page copied as stored is not decompressed: its level entries
            // must be what the index puts in its rows
            let want: u64 = self.lengths[first_row..end_row].iter().map(|&l| u64::from(l.max(1))).sum();
            if checked.entries != want {
                return Err(bad(format!("{} values, the index puts {want} in its rows", checked.entries)));
            }
            pages.push(BasePage { k, first_row, rows, stored, split, crc, decoded: None });
        }
        let keys_read = self.check_keys(rows)?;
        Ok((BasePages { at: self.clone(), pages, bytes, from }, to - from + keys_read))
    }

    /// Checks that the shard's rows `rows` are the chunks the index says
    /// (their `time_series_id` and `chunk_idx`, decoded as every read decodes
    /// them: [`crate::chunks::read_keys`]); returns the bytes read.
    fn check_keys(&self, rows: Range<usize>) -> Result<u64> {
        let selected: Option<Vec<usize>> = (rows.len() < self.lengths.len()).then(|| rows.clone().collect());
        let expected: Vec<&(String, i32)> = self.chunks[rows].iter().collect();
        let place = format!("row group {}: ", self.row_group);
        check_keys_of(&self.footer, &[self.row_group], selected.as_deref(), &expected, &place)
    }
}

/// Checks that the rows of row groups `groups` of one base shard (all
/// their rows, in order) are the chunks the index says, before the shard is
/// placed whole (as [`BaseRowGroup::check_keys`] checks a rebuilt row
/// group's); returns the bytes read.
///
/// # Errors
/// [`Error::Corrupt`] naming the shard and the first row that is not.
pub(crate) fn check_shard_keys(groups: &[&BaseRowGroup]) -> Result<u64> {
    let Some(first) = groups.first() else { return Ok(0) };
    let numbers: Vec<usize> = groups.iter().map(|g| g.row_group).collect();
    let expected: Vec<&(String, i32)> = groups.iter().flat_map(|g| g.chunks.iter()).collect();
    // on an object store in concurrent GETs, not two requests per row group one after another
    let _held = first.footer.loc.read_ahead(key_ranges(first.footer.meta.metadata(), &numbers))?;
    check_keys_of(&first.footer, &numbers, None, &expected, "")
}

/// The byte ranges of the key columns (`time_series_id`, `chunk_idx`) of
/// row groups `row_groups` in a shard with footer `meta`.
fn key_ranges(meta: &ParquetMetaData, row_groups: &[usize]) -> Vec<Range<u64>> {
    let keys = ["time_series_id", "chunk_idx"];
    let groups = row_groups.iter().filter_map(|&g| meta.row_groups().get(g));
    groups
        .flat_map(|g| g.columns().iter())
        .filter(|c| c.column_path().parts().first().is_some_and(|root| keys.contains(&root.as_str())))
        .map(|c| {
            let (start, len) = c.byte_range();
            start..start.saturating_add(len)
        })
        .collect()
}

/// [`crate::chunks::read_keys`] of rows `selected` of row groups
/// `row_groups` of the base shard `f` (their bytes fetched ahead by the
/// caller on an object store: [`key_ranges`]), each held to its `expected`
/// (id, chunk); an error's reason starts with `place`. Returns the bytes read.
fn check_keys_of(
    f: &BaseFooter,
    row_groups: &[usize],
    selected: Option<&[usize]>,
    expected: &[&(String, i32)],
    place: &str,
) -> Result<u64> {
    let bad = |why: String| Error::Corrupt { path: f.file.clone(), reason: format!("{place}{why}") };
    let source = f.source.lock().map_err(|_| bad("a read of this shard panicked".into()))?;
    let counted = Counted::new(source.try_clone().map_err(|e| Error::io(&f.file, e))?);
    let read = Arc::clone(&counted.read);
    let failure = counted.inner.read_failure();
    let file = f.checks.wrap(counted);
    let keys = crate::footer::contain(|| {
        crate::chunks::read_keys(&f.file, file, &failure, f.meta.clone(), row_groups, selected)
    })
    .map_err(bad)??;
    drop(source);
    if keys.len() != expected.len() {
        return Err(bad(format!("{} rows read of the {} the index points at", keys.len(), expected.len())));
    }
    for (i, (id, chunk_idx)) in expected.iter().enumerate() {
        if let Some(why) = keys.problem(i, id, *chunk_idx) {
            return Err(bad(why));
        }
    }
    Ok(read.load(Ordering::Relaxed))
}

impl BasePages {
    /// True when these are the pages of `at`.
    pub(crate) fn of(&self, at: &BaseRowGroup) -> bool {
        self.at.same(at)
    }

    fn page_at(&self, row: usize) -> Option<usize> {
        let p = self.pages.partition_point(|p| p.first_row + p.rows <= row);
        self.pages.get(p).filter(|p| p.first_row <= row).map(|_| p)
    }

    /// Decodes the page holding row `row` unless it is decoded; returns
    /// whether it decoded it. It is decoded as every read decodes a page
    /// ([`crate::pages::read_values_into`]: its levels must give exactly the
    /// rows the offset index puts in it), and each row must hold the values
    /// the index says.
    pub(crate) fn decode(&mut self, row: usize) -> Result<bool> {
        let k = self.page_at(row).ok_or_else(|| self.at.corrupt(format!("no values page holds row {row}")))?;
        if self.pages[k].decoded.is_some() {
            return Ok(false);
        }
        let at = &self.at;
        let page = &self.pages[k];
        let rows: Vec<usize> = (page.first_row..page.first_row + page.rows).collect();
        let held = Held { from: self.from, bytes: self.bytes.clone() };
        let mut out = RowValues::default();
        let page_index = at.page_index();
        crate::pages::read_values_into(&at.footer.file, &held, &at.values_chunk(&page_index)?, Some(&rows), &mut out)?;
        for (row, w) in rows.iter().zip(out.offsets.windows(2)) {
            let len = w[1] - w[0];
            if u32::try_from(len).ok() != Some(at.lengths[*row]) {
                let (id, chunk_idx) = &at.chunks[*row];
                return Err(at.corrupt(format!(
                    "{id} chunk {chunk_idx}: the index says {} values, the shard holds {len}",
                    at.lengths[*row]
                )));
            }
        }
        self.pages[k].decoded = Some(out);
        Ok(true)
    }

    /// The values of row `row` (its page decoded), which must hold
    /// `n_values` finite values.
    pub(crate) fn chunk(&self, row: usize, n_values: u32) -> Result<&[f32]> {
        let v = self.page_at(row).map(|k| &self.pages[k]).and_then(|p| {
            let RowValues { values, offsets } = p.decoded.as_ref()?;
            let j = row - p.first_row;
            values.get(usize::try_from(offsets[j]).ok()?..usize::try_from(offsets[j + 1]).ok()?)
        });
        let v = v.filter(|v| v.len() == n_values as usize);
        let v =
            v.ok_or_else(|| self.at.corrupt(format!("row {row} does not hold the {n_values} values the index says")))?;
        if !v.iter().all(|x| x.is_finite()) {
            return Err(self.at.corrupt(format!("row {row} holds a value that is not finite")));
        }
        Ok(v)
    }

    /// The page holding exactly rows `rows` of this row group, whose values'
    /// minimum and maximum in total order are `extremes`, as stored with its
    /// figures, when it may be stored in the write as it is (the shard was
    /// written by this build).
    pub(crate) fn copyable(&self, rows: Range<usize>, extremes: (f32, f32)) -> Result<Option<StoredPage>> {
        let Some(p) = self.page_at(rows.start).map(|i| &self.pages[i]) else { return Ok(None) };
        let k = p.k;
        if !self.at.footer.reusable || !p.crc || !p.split || p.first_row != rows.start || p.rows != rows.len() {
            return Ok(None);
        }
        let f = &self.at.footer;
        let leaf = f.meta.metadata().row_groups()[self.at.row_group].num_columns() - 1;
        let page_index = f.meta.metadata().page_index_for_row_group(self.at.row_group);
        let index = page_index.column_index(leaf).ok_or_else(|| self.at.corrupt("no column index".into()))?;
        let page = StoredPage::new(p.stored.clone(), p.rows as i64, index, k, Some(extremes));
        page.map(Some).map_err(|why| self.at.corrupt(format!("values page {k}: {why}")))
    }
}

/// The bytes of a file read from offset `from` on, as a reader of that file
/// (a range outside them is an error): the pages a [`BasePages`] read.
struct Held {
    from: u64,
    bytes: Bytes,
}

impl Length for Held {
    fn len(&self) -> u64 {
        self.from + self.bytes.len() as u64
    }
}

impl ChunkReader for Held {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use bytes::Buf;
        let rest = usize::try_from(self.len().saturating_sub(start)).unwrap_or(0);
        Ok(self.get_bytes(start, rest)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let at = start.checked_sub(self.from).and_then(|a| usize::try_from(a).ok());
        let range = at.and_then(|a| Some(a..a.checked_add(length)?)).filter(|r| r.end <= self.bytes.len());
        let range = range.ok_or_else(|| {
            parquet::errors::ParquetError::EOF(format!("bytes {start}+{length} were not read with their pages"))
        })?;
        Ok(self.bytes.slice(range))
    }
}
