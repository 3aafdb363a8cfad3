//! [`WriterOptions`]: the options that shape a version's bytes, and their
//! defaults. Below everything that uses them: the writer reads them, the
//! manifest records them (`writer` block, docs/format.md §5) and rebuilds them
//! for an edit, `verify` checks a version against them.

use crate::error::{Error, Result};
use crate::layout::{CutRules, VALUE_BYTES};

/// Default shard target: a shard closes after the row group that takes its
/// uncompressed float32 value bytes past this (128 MiB; seed).
pub const DEFAULT_SHARD_TARGET_BYTES: u64 = 128 << 20;
/// Default row-group target in uncompressed float32 value bytes (4 MiB; seed).
pub const DEFAULT_ROW_GROUP_TARGET_BYTES: u64 = 4 << 20;
/// Default largest chunk in bytes of float32 values (1 MiB = 262144 values; seed).
pub const DEFAULT_CHUNK_MAX_BYTES: u64 = 1 << 20;
/// Default pinned zstd compression level, unitless on zstd's 1..=22 scale (3; seed).
pub const DEFAULT_COMPRESSION_LEVEL: i32 = 3;
/// Slack of a row group, in chunks: a row group may exceed its target by at
/// most this many chunks' worth of bytes: `row_group_max_bytes = row_group_target_bytes + 4 * chunk_max_bytes`.
pub const ROW_GROUP_SLACK_CHUNKS: u64 = 4;

/// Largest row group, in float32 values: `list` offsets are 32-bit (FORMAT-BRIEF §5).
const MAX_ROW_GROUP_VALUES: u64 = (1 << 31) - 1;

/// Options that shape a version's bytes; immutable, built with
/// [`WriterOptions::builder`]. All sizes are uncompressed float32 value bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    shard_target_bytes: u64,
    row_group_target_bytes: u64,
    chunk_max_bytes: u64,
    compression_level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            shard_target_bytes: DEFAULT_SHARD_TARGET_BYTES,
            row_group_target_bytes: DEFAULT_ROW_GROUP_TARGET_BYTES,
            chunk_max_bytes: DEFAULT_CHUNK_MAX_BYTES,
            compression_level: DEFAULT_COMPRESSION_LEVEL,
        }
    }
}

impl WriterOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> WriterOptionsBuilder {
        WriterOptionsBuilder(WriterOptions::default())
    }
    /// Shard target in bytes ([`DEFAULT_SHARD_TARGET_BYTES`]).
    pub fn shard_target_bytes(&self) -> u64 {
        self.shard_target_bytes
    }
    /// Row-group target in bytes ([`DEFAULT_ROW_GROUP_TARGET_BYTES`]).
    pub fn row_group_target_bytes(&self) -> u64 {
        self.row_group_target_bytes
    }
    /// Hard cap of a row group in bytes: target + [`ROW_GROUP_SLACK_CHUNKS`] chunks.
    pub fn row_group_max_bytes(&self) -> u64 {
        self.row_group_target_bytes + ROW_GROUP_SLACK_CHUNKS * self.chunk_max_bytes
    }
    /// Hard cap of a shard in bytes: shard target + one row group's cap.
    pub fn shard_max_bytes(&self) -> u64 {
        self.shard_target_bytes + self.row_group_max_bytes()
    }
    /// Largest chunk in bytes ([`DEFAULT_CHUNK_MAX_BYTES`]).
    pub fn chunk_max_bytes(&self) -> u64 {
        self.chunk_max_bytes
    }
    /// Largest chunk in values.
    pub fn chunk_max_values(&self) -> usize {
        (self.chunk_max_bytes / VALUE_BYTES) as usize
    }
    /// zstd level, unitless 1..=22 ([`DEFAULT_COMPRESSION_LEVEL`]).
    pub fn compression_level(&self) -> i32 {
        self.compression_level
    }
    pub(crate) fn cut_rules(&self) -> CutRules {
        CutRules {
            row_group_target_bytes: self.row_group_target_bytes,
            row_group_max_bytes: self.row_group_max_bytes(),
            shard_target_bytes: self.shard_target_bytes,
        }
    }
}

/// Consuming builder of [`WriterOptions`]; [`WriterOptionsBuilder::try_build`] validates.
#[derive(Debug, Clone)]
pub struct WriterOptionsBuilder(WriterOptions);

impl WriterOptionsBuilder {
    /// Shard target in uncompressed value bytes (> 0).
    pub fn shard_target_bytes(mut self, bytes: u64) -> Self {
        self.0.shard_target_bytes = bytes;
        self
    }
    /// Row-group target in uncompressed value bytes (> 0).
    pub fn row_group_target_bytes(mut self, bytes: u64) -> Self {
        self.0.row_group_target_bytes = bytes;
        self
    }
    /// Largest chunk in bytes (a positive multiple of 4).
    pub fn chunk_max_bytes(mut self, bytes: u64) -> Self {
        self.0.chunk_max_bytes = bytes;
        self
    }
    /// zstd level (1..=22).
    pub fn compression_level(mut self, level: i32) -> Self {
        self.0.compression_level = level;
        self
    }
    /// Validates and returns the options.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the option: a zero target, a chunk size
    /// that is not a positive multiple of 4, a level outside 1..=22, or a row-group
    /// cap that would allow 2^31 values.
    pub fn try_build(self) -> Result<WriterOptions> {
        let o = self.0;
        let bad = |option: &'static str, reason: String| Err(Error::InvalidOption { option, reason });
        if o.shard_target_bytes == 0 {
            return bad("shard_target_bytes", "must be > 0".into());
        }
        if o.row_group_target_bytes == 0 {
            return bad("row_group_target_bytes", "must be > 0".into());
        }
        if o.chunk_max_bytes == 0 || !o.chunk_max_bytes.is_multiple_of(VALUE_BYTES) {
            return bad("chunk_max_bytes", format!("{} is not a positive multiple of 4", o.chunk_max_bytes));
        }
        if !(1..=22).contains(&o.compression_level) {
            return bad("compression_level", format!("{} is outside 1..=22", o.compression_level));
        }
        let cap = o.row_group_target_bytes.checked_add(ROW_GROUP_SLACK_CHUNKS.saturating_mul(o.chunk_max_bytes));
        if cap.is_none_or(|c| c / VALUE_BYTES > MAX_ROW_GROUP_VALUES)
            || o.shard_target_bytes.checked_add(cap.unwrap_or(0)).is_none()
        {
            return bad("row_group_target_bytes", "row groups could reach 2^31 values".into());
        }
        Ok(o)
    }
}
