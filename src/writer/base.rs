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
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::reader::{ChunkReader, Length};
use parquet::schema::types::SchemaDescriptor;

use super::page_splice::StoredPage;
use super::WriterOptions;
use crate::encoding::FileSchema;
use crate::error::{Error, Result};
use crate::footer::{page_problem, values_header_problem};
use crate::manifest::{ChannelStats, FileEntry};
use crate::reader::{IndexEntry, Version};
use crate::storage::{FileSink, Location, Source};
use crate::thrift::PageKind;

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
    meta: ParquetMetaData,
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

/// Row group `row_group` of a base shard, whose rows hold `lengths` values each.
#[derive(Clone)]
pub(crate) struct BaseRowGroup {
    footer: Arc<BaseFooter>,
    row_group: usize,
    lengths: Arc<[u32]>,
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
                let index = self.version.index()?;
                let lengths: Arc<[u32]> = index[rows.clone()].iter().map(|e| e.n_values as u32).collect();
                let at = BaseRowGroup { footer, row_group, lengths };
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
        let counted = Counted { inner: loc.open()?, read: AtomicU64::new(0) };
        let loc = loc.clone();
        let meta = crate::footer::contain(|| {
            crate::footer::read_metadata(&counted, PageIndexPolicy::Required, PageIndexPolicy::Required)
        })
        .map_err(|panic| Error::Corrupt { path: file.clone(), reason: panic })?
        .map_err(|e| crate::footer::version_parquet_error(&file, e))?;
        self.bytes_read += counted.read.load(Ordering::Relaxed);
        let (reusable, whole) = self.reuse(&meta);
        let source = Mutex::new(counted.inner);
        let entry = self.version.manifest().files.iter().find(|f| f.path == path).cloned();
        let footer = Arc::new(BaseFooter { path: path.to_string(), file, source, meta, reusable, whole, loc, entry });
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

/// A base shard's reader that counts the bytes asked of it (the footer and offset index).
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

/// One `values` page of a base row group: its rows, its header and body as
/// stored (CRC and header checked), and its values once decoded.
struct BasePage {
    /// Its number in the column chunk (the offset and column indexes' entry).
    k: usize,
    first_row: usize,
    rows: usize,
    stored: Bytes,
    header_len: usize,
    uncompressed_page_size: usize,
    /// Its values are BYTE_STREAM_SPLIT (else PLAIN).
    split: bool,
    /// It has a CRC (checked): only such a page is stored as it is.
    crc: bool,
    /// The page's values and the start of each row in them (and the end),
    /// once [`BasePages::decode`] decoded it.
    decoded: Option<(Vec<f32>, Vec<usize>)>,
}

/// The `values` pages of a base row group, read and checked; each decoded
/// only when asked ([`BasePages::decode`]).
pub(crate) struct BasePages {
    at: BaseRowGroup,
    pages: Vec<BasePage>,
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
        self.footer.meta.num_row_groups()
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
        let leaf = f.meta.file_metadata().schema_descr().num_columns().saturating_sub(1);
        let pages = (0..f.meta.num_row_groups())
            .map(|g| f.meta.page_index_for_row_group(g).offset_index(leaf).map_or(0, |o| o.page_locations.len()))
            .sum::<usize>();
        Ok(Some((entry, pages as u64)))
    }

    /// Reads the pages of the row group's `values` column chunk that hold
    /// its rows `rows` (one ranged read, from the first such page to the
    /// last, located by the offset index) and checks each page's header and
    /// CRC, without decompressing; returns the pages and the bytes read. A
    /// base row group whose rows go to two row groups of the write is read
    /// in two parts, not twice whole.
    pub(crate) fn pages(&self, rows: Range<usize>) -> Result<(BasePages, u64)> {
        let f = &self.footer;
        let rg = f.meta.row_groups().get(self.row_group).ok_or_else(|| self.corrupt("missing".into()))?;
        let leaf = rg.num_columns().checked_sub(1).ok_or_else(|| self.corrupt("no column".into()))?;
        let column = rg.column(leaf);
        if !matches!(column.compression(), Compression::ZSTD(_)) {
            return Err(self.corrupt(format!("values compressed with {:?}, not ZSTD", column.compression())));
        }
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
        let page_index = f.meta.page_index_for_row_group(self.row_group);
        let locations = page_index
            .offset_index(leaf)
            .map(|o| &o.page_locations)
            .ok_or_else(|| self.corrupt("no offset index".into()))?;
        // a page before the first data page the offset index lists (a dictionary page)
        if locations.first().is_some_and(|first| first.offset as u64 > start) {
            let bytes = read(start, end)?;
            let entries: u64 = self.lengths.iter().map(|&l| u64::from(l.max(1))).sum();
            let why = crate::footer::values_page_problem(&bytes, entries)
                .unwrap_or_else(|| "a page before the first data page of the offset index".into());
            return Err(self.corrupt(format!("values page 0: {why}")));
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
        if locations.is_empty() {
            return Ok((BasePages { at: self.clone(), pages: Vec::new() }, 0));
        }
        let from = page_range(first).ok_or_else(|| outside(first))?.start;
        let to = page_range(last).ok_or_else(|| outside(last))?.end.max(from);
        let bytes = read(from, to)?;
        let mut pages = Vec::with_capacity(last + 1 - first);
        for k in first..=last {
            let range = page_range(k).filter(|r| r.start >= from && r.end <= to).ok_or_else(|| outside(k))?;
            let end_row = if k + 1 < locations.len() { first_row(k + 1) } else { self.lengths.len() };
            if end_row < first_row(k) || end_row > self.lengths.len() {
                return Err(self.corrupt(format!("values page {k}: rows {}..{end_row}", first_row(k))));
            }
            let stored = bytes.slice((range.start - from) as usize..(range.end - from) as usize);
            pages.push(self.page(k, stored, first_row(k), end_row - first_row(k))?);
        }
        Ok((BasePages { at: self.clone(), pages }, to - from))
    }

    /// Checks page `k` (header and body, as stored) holding `rows` rows from
    /// `first_row` on: the header as every read path checks it before
    /// decoding (src/footer.rs; the base's pages are as untrusted as any
    /// version's) and the CRC of the body.
    fn page(&self, k: usize, stored: Bytes, first_row: usize, rows: usize) -> Result<BasePage> {
        let bad = |why: String| self.corrupt(format!("values page {k}: {why}"));
        let (header, header_len) = crate::thrift::PageHeader::decode(&stored).map_err(|e| bad(e.to_string()))?;
        let entries: u64 = self.lengths.iter().map(|&l| u64::from(l.max(1))).sum();
        let sizes = crate::thrift::PageSizes {
            uncompressed_page_size: header.uncompressed_page_size,
            compressed_page_size: header.compressed_page_size,
        };
        if let Some(why) = values_header_problem(&header, entries).or_else(|| page_problem(&sizes)) {
            return Err(bad(why));
        }
        let compressed = stored.get(header_len..).unwrap_or_default();
        if compressed.len() != header.compressed_page_size as usize {
            return Err(bad("its size is not the offset index's".into()));
        }
        // checked where there is one, as every reader checks it; a page without
        // one (another writer's) is decoded, never stored as it is
        let crc = header.crc.is_some();
        if header.crc.is_some_and(|c| c != crc32fast::hash(compressed) as i32) {
            return Err(bad("CRC mismatch".into()));
        }
        // the encodings the reader takes (src/pages.rs): PLAIN too, what other
        // Parquet writers store by default (a rewritten shard)
        let split = match header.kind {
            PageKind::Data {
                encoding, def_level_encoding: Encoding::RLE, rep_level_encoding: Encoding::RLE, ..
            } => match encoding {
                Encoding::BYTE_STREAM_SPLIT => true,
                Encoding::PLAIN => false,
                other => return Err(bad(format!("encoded {other} (the format writes BYTE_STREAM_SPLIT)"))),
            },
            PageKind::Data { .. } => return Err(bad("levels not RLE (the format writes RLE levels)".into())),
            _ => return Err(bad("not a v1 data page (the format writes v1 pages)".into())),
        };
        let uncompressed_page_size =
            usize::try_from(header.uncompressed_page_size).map_err(|_| bad("negative size".into()))?;
        Ok(BasePage { k, first_row, rows, stored, header_len, uncompressed_page_size, split, crc, decoded: None })
    }
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
    /// whether it decoded it. A v1 data page of the `values` leaf is its
    /// repetition levels and definition levels (each after its 4-byte
    /// length), then the values BYTE_STREAM_SPLIT (or PLAIN).
    pub(crate) fn decode(&mut self, row: usize) -> Result<bool> {
        let k = self.page_at(row).ok_or_else(|| self.at.corrupt(format!("no values page holds row {row}")))?;
        let at = &self.at;
        let page = &mut self.pages[k];
        if page.decoded.is_some() {
            return Ok(false);
        }
        let k = page.k;
        let bad = |why: String| at.corrupt(format!("values page {k}: {why}"));
        let compressed = page.stored.get(page.header_len..).unwrap_or_default();
        let uncompressed =
            zstd::bulk::decompress(compressed, page.uncompressed_page_size).map_err(|e| bad(e.to_string()))?;
        let mut from = 0;
        for _ in 0..2 {
            let len = uncompressed.get(from..from + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
            from += 4 + len.ok_or_else(|| bad("levels cut short".into()))?;
        }
        let split = uncompressed.get(from..).unwrap_or_default();
        let lengths = &at.lengths[page.first_row..page.first_row + page.rows];
        let n: usize = lengths.iter().map(|&l| l as usize).sum();
        if split.len() != 4 * n {
            return Err(bad(format!("{} value bytes for {n} values", split.len())));
        }
        let values: Vec<f32> = if page.split {
            (0..n).map(|i| f32::from_le_bytes([split[i], split[n + i], split[2 * n + i], split[3 * n + i]])).collect()
        } else {
            split.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        };
        let mut starts = Vec::with_capacity(lengths.len() + 1);
        starts.push(0);
        for &l in lengths {
            starts.push(starts[starts.len() - 1] + l as usize);
        }
        page.decoded = Some((values, starts));
        Ok(true)
    }

    /// The values of row `row` (its page decoded), which must hold
    /// `n_values` finite values.
    pub(crate) fn chunk(&self, row: usize, n_values: u32) -> Result<&[f32]> {
        let v = self.page_at(row).map(|k| &self.pages[k]).and_then(|p| {
            let (values, starts) = p.decoded.as_ref()?;
            values.get(starts[row - p.first_row]..starts[row - p.first_row + 1])
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
        let leaf = f.meta.row_groups()[self.at.row_group].num_columns() - 1;
        let page_index = f.meta.page_index_for_row_group(self.at.row_group);
        let index = page_index.column_index(leaf).ok_or_else(|| self.at.corrupt("no column index".into()))?;
        let page = StoredPage::new(p.stored.clone(), p.rows as i64, index, k, Some(extremes));
        page.map(Some).map_err(|why| self.at.corrupt(format!("values page {k}: {why}")))
    }
}
