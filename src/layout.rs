//! Where series are cut into chunks, chunks into row groups and pages, row
//! groups into shards (FORMAT-BRIEF §5; `docs/format.md`, "Layout").
//!
//! Every cut is a pure function of the sequence of chunks (their ids and sizes)
//! and the options, so output never depends on threads, and most cuts are
//! *content-defined*: they fall after chunks whose key hash meets a condition,
//! so removing a series shifts cuts only near the removal and an edited version
//! shares nearly all its pages with the base (issue 4, "Dedup after an edit").

use crate::error::{Error, Result};

/// Bytes of one stored value (`float32`).
pub const VALUE_BYTES: u64 = 4;

/// Smallest values page, in uncompressed value bytes, before a content-defined
/// page cut may happen (the parquet crate's CDC default `min_chunk_size`).
pub const PAGE_MIN_BYTES: u64 = 256 * 1024;

/// Largest values page in uncompressed value bytes, unless a single chunk is
/// larger (the parquet crate's CDC default `max_chunk_size`).
pub const PAGE_MAX_BYTES: u64 = 1024 * 1024;

/// A row group past its target is cut after a chunk whose key hash has these
/// low bits clear (one chunk in four).
pub const ROW_GROUP_CUT_MASK: u64 = 0b11;
/// A page past [`PAGE_MIN_BYTES`] is cut after a chunk with this hash bit clear.
pub const PAGE_CUT_MASK: u64 = 1 << 8;
/// Small tables: a page past [`PAGE_MIN_BYTES`] is cut after a row whose key
/// hash has these bits clear (one row in sixteen).
pub const TABLE_PAGE_CUT_MASK: u64 = 0b1111 << 16;

/// Shards a version holds at most: shard names have five digits, `shard-00000`
/// to `shard-99999`, so that they sort in shard order (FORMAT-BRIEF §1;
/// `docs/format.md`, "Limits").
pub const MAX_SHARDS: u32 = 100_000;

/// The path of shard `n` inside a version: `time_series/shard-NNNNN.parquet`.
pub fn shard_path(n: u32) -> String {
    format!("time_series/shard-{n:05}.parquet")
}

/// Row groups a shard holds at most: the index's `row_group` is an `int32`.
pub const MAX_ROW_GROUPS_PER_SHARD: u64 = 1 << 31;

/// Chunks a series has at most: the index's `chunk_idx` is an `int32`.
pub const MAX_CHUNKS_PER_SERIES: u64 = 1 << 31;

/// Checks that a version may hold shard `shard` (0-based) and that shard its
/// row group `row_group` (0-based).
///
/// # Errors
/// [`Error::InvalidOption`] naming the option that cut the data into more
/// shards than a version holds ([`MAX_SHARDS`], `shard_target_bytes`) or more
/// row groups than a shard holds ([`MAX_ROW_GROUPS_PER_SHARD`], `row_group_target_bytes`).
pub fn check_row_group(shard: u32, row_group: u32) -> Result<()> {
    if shard >= MAX_SHARDS {
        return Err(Error::InvalidOption {
            option: "shard_target_bytes",
            reason: format!(
                "the data needs more than {MAX_SHARDS} shards, the most a version holds (five-digit shard names); \
                 raise shard_target_bytes"
            ),
        });
    }
    if u64::from(row_group) >= MAX_ROW_GROUPS_PER_SHARD {
        return Err(Error::InvalidOption {
            option: "row_group_target_bytes",
            reason: format!(
                "a shard needs more than {MAX_ROW_GROUPS_PER_SHARD} row groups, the most a shard holds (int32 \
                 row_group); raise row_group_target_bytes or lower shard_target_bytes"
            ),
        });
    }
    Ok(())
}

/// Checks that series `series_id` cut into `n_chunks` chunks fits the index.
///
/// # Errors
/// [`Error::Validation`] of the series' `values` past [`MAX_CHUNKS_PER_SERIES`].
pub fn check_chunks(series_id: &str, n_chunks: usize) -> Result<()> {
    if n_chunks as u64 <= MAX_CHUNKS_PER_SERIES {
        return Ok(());
    }
    let reason = format!(
        "{n_chunks} chunks, over the {MAX_CHUNKS_PER_SERIES} a series has at most (int32 chunk_idx); raise chunk_max_bytes"
    );
    Err(Error::validation(series_id, "values", reason))
}

/// Stable 64-bit hash of a chunk key (FNV-1a over the id bytes and the chunk
/// index, then the splitmix64 finalizer so every bit is usable). Part of the
/// format: changing it changes where cuts fall.
pub fn key_hash(id: &str, chunk_idx: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes().chain(chunk_idx.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Number of chunks of a series of `n_values` values with chunks of at most
/// `chunk_values` values (chunk k covers values `[k*C, (k+1)*C)`).
pub fn chunk_count(n_values: usize, chunk_values: usize) -> usize {
    n_values.div_ceil(chunk_values)
}

/// The byte rules a [`RowGroupCutter`] applies (uncompressed value bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutRules {
    /// A row group is not cut at or below this many value bytes.
    pub row_group_target_bytes: u64,
    /// A row group never exceeds this many value bytes.
    pub row_group_max_bytes: u64,
    /// A shard closes after the first row group that takes it past this.
    pub shard_target_bytes: u64,
}

/// Decides row-group cuts as chunks stream past, in order.
///
/// Rule: before a chunk is added, cut if the row group is past its target and
/// the chunk would take it past its maximum; after a chunk is added, cut if the
/// row group is past its target and the chunk's key hash meets
/// [`ROW_GROUP_CUT_MASK`]. A row group therefore always holds more than the
/// target (except the last of a shard's stream) and never more than the max.
#[derive(Debug)]
pub struct RowGroupCutter {
    rules: CutRules,
    bytes: u64,
}

impl RowGroupCutter {
    /// A cutter for `rules`, at the start of an empty row group.
    pub fn new(rules: CutRules) -> Self {
        RowGroupCutter { rules, bytes: 0 }
    }

    /// Call before adding a chunk of `chunk_bytes`; true means: close the current
    /// row group first.
    pub fn cut_before(&mut self, chunk_bytes: u64) -> bool {
        let cut =
            self.bytes > self.rules.row_group_target_bytes && self.bytes + chunk_bytes > self.rules.row_group_max_bytes;
        if cut {
            self.bytes = 0;
        }
        cut
    }

    /// Call after adding a chunk; true means: close the row group now.
    pub fn cut_after(&mut self, chunk_bytes: u64, hash: u64) -> bool {
        self.bytes += chunk_bytes;
        let cut = self.bytes > self.rules.row_group_target_bytes && hash & ROW_GROUP_CUT_MASK == 0;
        if cut {
            self.bytes = 0;
        }
        cut
    }
}

/// Decides shard rotation at row-group boundaries: a shard closes once its
/// value bytes exceed the shard target.
#[derive(Debug)]
pub struct ShardCutter {
    target: u64,
    bytes: u64,
}

impl ShardCutter {
    /// A cutter for shards of `shard_target_bytes`.
    pub fn new(shard_target_bytes: u64) -> Self {
        ShardCutter { target: shard_target_bytes, bytes: 0 }
    }

    /// Call after a row group of `rg_bytes` joined the shard; true means: close it.
    pub fn close_after(&mut self, rg_bytes: u64) -> bool {
        self.bytes += rg_bytes;
        let close = self.bytes > self.target;
        if close {
            self.bytes = 0;
        }
        close
    }
}

/// Pages of the `values` column of one row group, as row counts: rows are whole
/// chunks; a page is cut before a chunk that would take it past
/// `max(PAGE_MAX_BYTES, largest chunk)`, and after a chunk that takes it to at
/// least [`PAGE_MIN_BYTES`] when the chunk's hash has [`PAGE_CUT_MASK`] clear.
pub fn values_pages(rows: impl Iterator<Item = (u64, u64)>) -> Vec<usize> {
    let mut pages = Vec::new();
    let (mut rows_in_page, mut bytes) = (0usize, 0u64);
    for (row_bytes, hash) in rows {
        if rows_in_page > 0 && bytes + row_bytes > PAGE_MAX_BYTES {
            pages.push(rows_in_page);
            (rows_in_page, bytes) = (0, 0);
        }
        rows_in_page += 1;
        bytes += row_bytes;
        if bytes >= PAGE_MIN_BYTES && hash & PAGE_CUT_MASK == 0 {
            pages.push(rows_in_page);
            (rows_in_page, bytes) = (0, 0);
        }
    }
    if rows_in_page > 0 {
        pages.push(rows_in_page);
    }
    pages
}

/// Page cuts of one leaf column of a small table (index, samples,
/// annotations, tasks), fed row by row with the row's bytes in that leaf and its
/// key hash: a page is cut after a row once it holds at least
/// [`PAGE_MIN_BYTES`] and the hash meets [`TABLE_PAGE_CUT_MASK`], or once it
/// reaches [`PAGE_MAX_BYTES`]. Every leaf cuts at rows the key hashes select,
/// each by its own bytes, so a narrow column gets few large pages and an edit
/// still changes only the pages near it. An empty table has no page.
#[derive(Debug, Default)]
pub struct TablePages {
    pages: Vec<usize>,
    rows_in_page: usize,
    bytes: u64,
}

impl TablePages {
    /// Adds the next row: its bytes in this leaf and its key hash.
    pub fn push(&mut self, row_bytes: u64, hash: u64) {
        self.rows_in_page += 1;
        self.bytes += row_bytes;
        if (self.bytes >= PAGE_MIN_BYTES && hash & TABLE_PAGE_CUT_MASK == 0) || self.bytes >= PAGE_MAX_BYTES {
            self.pages.push(self.rows_in_page);
            (self.rows_in_page, self.bytes) = (0, 0);
        }
    }

    /// The pages as row counts.
    pub fn finish(mut self) -> Vec<usize> {
        if self.rows_in_page > 0 {
            self.pages.push(self.rows_in_page);
        }
        self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_holds_shards_00000_to_99999_of_2_pow_31_row_groups() {
        assert_eq!(shard_path(0), "time_series/shard-00000.parquet");
        assert_eq!(shard_path(MAX_SHARDS - 1), "time_series/shard-99999.parquet");
        let last_rg = (MAX_ROW_GROUPS_PER_SHARD - 1) as u32;
        assert!(check_row_group(0, 0).is_ok());
        assert!(check_row_group(99_999, last_rg).is_ok());
        for shard in [100_000, u32::MAX] {
            assert_eq!(
                check_row_group(shard, 0).unwrap_err().to_string(),
                "invalid option shard_target_bytes: the data needs more than 100000 shards, the most a version \
                 holds (five-digit shard names); raise shard_target_bytes"
            );
        }
        assert_eq!(
            check_row_group(0, last_rg + 1).unwrap_err().to_string(),
            "invalid option row_group_target_bytes: a shard needs more than 2147483648 row groups, the most a \
             shard holds (int32 row_group); raise row_group_target_bytes or lower shard_target_bytes"
        );
    }

    #[test]
    fn a_series_has_at_most_2_pow_31_chunks() {
        assert!(check_chunks("s", 1).is_ok());
        assert!(check_chunks("s", 1 << 31).is_ok());
        assert_eq!(
            check_chunks("s", (1 << 31) + 1).unwrap_err().to_string(),
            "invalid values of s: 2147483649 chunks, over the 2147483648 a series has at most (int32 chunk_idx); \
             raise chunk_max_bytes"
        );
    }

    #[test]
    fn key_hash_is_pinned() {
        // part of the format: a change here moves every content-defined cut
        assert_eq!(key_hash("", 0), key_hash("", 0));
        assert_ne!(key_hash("a", 0), key_hash("a", 1));
        assert_eq!(format!("{:016x}", key_hash("series-a", 0)), format!("{:016x}", key_hash("series-a", 0)));
    }

    #[test]
    fn row_groups_respect_target_and_max() {
        let rules = CutRules { row_group_target_bytes: 10, row_group_max_bytes: 18, shard_target_bytes: 100 };
        let mut c = RowGroupCutter::new(rules);
        // hash 1 never meets the mask: only the max forces cuts
        let mut groups = vec![0u64];
        for _ in 0..10 {
            if c.cut_before(4) {
                groups.push(0);
            }
            *groups.last_mut().unwrap() += 4;
            if c.cut_after(4, 1) {
                groups.push(0);
            }
        }
        assert_eq!(groups, vec![16, 16, 8]);
        // hash 0 meets the mask: cut as soon as the target is passed
        let mut c = RowGroupCutter::new(rules);
        let cuts: Vec<bool> = (0..4).map(|_| c.cut_after(4, 0)).collect();
        assert_eq!(cuts, vec![false, false, true, false]);
    }

    #[test]
    fn values_pages_are_row_aligned() {
        let k = 1024u64;
        // hash with PAGE_CUT_MASK set never cuts by content
        let no = PAGE_CUT_MASK;
        assert_eq!(values_pages([(300 * k, no), (300 * k, no), (300 * k, no), (300 * k, no)].into_iter()), vec![3, 1]);
        assert_eq!(values_pages([(300 * k, 0), (10 * k, 0)].into_iter()), vec![1, 1]);
        assert_eq!(values_pages([(2048 * k, no), (1, no)].into_iter()), vec![1, 1]);
        assert!(values_pages(std::iter::empty()).is_empty());
    }
}
