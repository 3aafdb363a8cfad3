//! `manifest.json`: the record that marks a version committed (FORMAT-BRIEF §4).
//!
//! Keys come out in the declaration order of these structs and maps are
//! `BTreeMap`s, so the bytes are a pure function of the version: no wall clock,
//! no host name, no absolute path. `schemas/manifest.schema.json` describes it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::dataset::{Annotation, SeriesMeta, Task};
use crate::error::{Error, Result};
use crate::options::WriterOptions;

pub use crate::names::FORMAT;
/// The manifest's `format_version` value this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The whole manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Name, version and descriptive fields.
    pub dataset: DatasetBlock,
    /// Versions of the software that wrote the bytes.
    pub created_by: CreatedBy,
    /// The dataset's derived schema.
    pub schema: SchemaBlock,
    /// Entity counts.
    pub counts: Counts,
    /// Storage of each of the six id spaces: `uuid16` or `string`.
    pub id_encoding: BTreeMap<String, String>,
    /// Every file of the version except the manifest, sorted by path.
    pub files: Vec<FileEntry>,
    /// Every writer option that shapes bytes.
    pub writer: WriterBlock,
    /// Where the samples come from, sorted by id.
    pub sources: Vec<SourceEntry>,
    /// Per spec type and channel, merged from the chunk statistics.
    pub statistics: BTreeMap<String, BTreeMap<String, ChannelStats>>,
    /// For a version written by a copy-on-write edit: its base and the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<DerivedFrom>,
    /// The manifest's seal: lowercase hex sha256 of the manifest's bytes as
    /// [`Manifest::to_bytes`] writes them without this key (`docs/format.md`
    /// §6, "Integrity"). Absent in versions written before the seal existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_sha256: Option<String>,
}

/// `dataset` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetBlock {
    /// Dataset name (the parent directory's name).
    pub name: String,
    /// Dataset version (the version directory's name).
    pub version: String,
    /// Free text.
    pub description: Option<String>,
    /// License.
    pub license: Option<String>,
    /// Citation.
    pub citation: Option<String>,
}

/// `created_by` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedBy {
    /// `timef <crate version>`.
    #[serde(rename = "crate")]
    pub crate_version: String,
    /// `parquet-rs <version>`.
    pub parquet: String,
}

/// `schema` block: what the dataset holds, derived at write time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SchemaBlock {
    /// spec type -> channel -> rates and units.
    pub time_series: BTreeMap<String, BTreeMap<String, ChannelSchema>>,
    /// annotation key -> types and value kinds.
    pub annotations: BTreeMap<String, AnnotationSchema>,
    /// task name -> task types and count.
    pub tasks: BTreeMap<String, TaskSchema>,
    /// Sample metadata keys, sorted.
    pub sample_metadata: Vec<String>,
}

fn sorted_unique<T: Ord + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
    it.collect::<BTreeSet<_>>().into_iter().collect()
}

/// The block is derived from the dataset's entities; the writer builds it and
/// `timef verify` rebuilds it from the stored files, through these same methods.
impl SchemaBlock {
    /// Records one unique series: its channel's rates and units (sorted, distinct) and series count.
    pub fn add_series(&mut self, m: &SeriesMeta) {
        self.add_channel_series(&m.spec_type, &m.channel, m.units.as_deref(), m.sampling_rate_hz);
    }

    /// [`SchemaBlock::add_series`] from a series' fields, borrowed: a name is
    /// copied only the first time its channel is seen.
    pub(crate) fn add_channel_series(
        &mut self,
        spec_type: &str,
        channel: &str,
        units: Option<&str>,
        sampling_rate_hz: f64,
    ) {
        let channels = match self.time_series.get_mut(spec_type) {
            Some(channels) => channels,
            None => self.time_series.entry(spec_type.to_string()).or_default(),
        };
        let ch = match channels.get_mut(channel) {
            Some(ch) => ch,
            None => channels.entry(channel.to_string()).or_default(),
        };
        if !ch.sampling_rates_hz.contains(&sampling_rate_hz) {
            ch.sampling_rates_hz.push(sampling_rate_hz);
            ch.sampling_rates_hz.sort_by(f64::total_cmp);
        }
        if let Some(u) = units {
            if !ch.units.iter().any(|x| x == u) {
                ch.units.push(u.to_string());
                ch.units.sort();
            }
        }
        ch.series += 1;
    }

    /// Records one unique annotation (not one row per sample).
    pub fn add_annotation(&mut self, a: &Annotation) {
        let e = self.annotations.entry(a.key.clone()).or_default();
        e.count += 1;
        e.annotation_types = sorted_unique(e.annotation_types.iter().cloned().chain([a.annotation_type.clone()]));
        let kinds =
            a.value_str.as_ref().map(|_| "str".to_string()).into_iter().chain(a.value_num.map(|_| "num".to_string()));
        e.value_kinds = sorted_unique(e.value_kinds.iter().cloned().chain(kinds));
    }

    /// Records one task of `task_name`.
    pub fn add_task(&mut self, task_name: &str, t: &Task) {
        let e = self.tasks.entry(task_name.to_string()).or_default();
        e.count += 1;
        e.task_types = sorted_unique(e.task_types.iter().cloned().chain([t.task_type.as_str().to_string()]));
        e.splits = sorted_unique(e.splits.iter().cloned().chain(t.split.clone()));
    }
}

/// One channel of a spec type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChannelSchema {
    /// Distinct sampling rates in Hz, ascending.
    pub sampling_rates_hz: Vec<f64>,
    /// Distinct units, sorted.
    pub units: Vec<String>,
    /// Number of series.
    pub series: u64,
}

/// One annotation key.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnnotationSchema {
    /// Distinct `annotation_type`s, sorted.
    pub annotation_types: Vec<String>,
    /// Which value fields are used: `str`, `num` (sorted).
    pub value_kinds: Vec<String>,
    /// Number of annotations (not rows).
    pub count: u64,
}

/// One task name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskSchema {
    /// Distinct task types, sorted.
    pub task_types: Vec<String>,
    /// Distinct splits, sorted.
    pub splits: Vec<String>,
    /// Number of tasks.
    pub count: u64,
}

/// `counts` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Samples.
    pub samples: u64,
    /// Unique series.
    pub time_series: u64,
    /// Chunks (index rows).
    pub chunks: u64,
    /// float32 values.
    pub values: u64,
    /// Unique annotations (not rows).
    pub annotations: u64,
    /// Tasks per task name.
    pub tasks: BTreeMap<String, u64>,
    /// Shard files.
    pub shards: u64,
}

/// One file of the version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the version directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Parquet rows.
    pub rows: u64,
    /// Lowercase hex sha256.
    pub sha256: String,
}

pub use crate::limits::MAX_MANIFEST_BYTES;

/// `writer` block: every option that shapes bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriterBlock {
    /// Shard target, uncompressed value bytes.
    pub shard_target_bytes: u64,
    /// Hard cap of a shard, uncompressed value bytes.
    pub shard_max_bytes: u64,
    /// Row-group target, uncompressed value bytes.
    pub row_group_target_bytes: u64,
    /// Hard cap of a row group, uncompressed value bytes.
    pub row_group_max_bytes: u64,
    /// Largest chunk, bytes of float32 values.
    pub chunk_max_bytes: u64,
    /// Always `zstd`.
    pub compression: String,
    /// Pinned zstd level.
    pub compression_level: i32,
    /// Page-cut parameters (`docs/format.md`, "Layout").
    pub content_defined_chunking: CdcBlock,
}

/// Content-defined page and row-group cuts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CdcBlock {
    /// `row-key-v1`: cuts after rows whose key hash meets a mask.
    pub method: String,
    /// Smallest page before a content-defined cut, uncompressed bytes.
    pub min_chunk_size: u64,
    /// Largest page, uncompressed bytes.
    pub max_chunk_size: u64,
}

/// One source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// Id in the `source_id` space.
    pub source_id: String,
    /// Name.
    pub name: String,
    /// URL.
    pub url: Option<String>,
    /// License.
    pub license: Option<String>,
    /// Citation.
    pub citation: Option<String>,
}

/// Statistics of values as stored: a channel's in the manifest (merged from
/// its chunks' with [`Partial::as_stored`]), a chunk's in the index (`min`
/// and `max` there float32). The default is the empty one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ChannelStats {
    /// Values.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Population standard deviation.
    pub std: f64,
}

/// `derived_from` block of an edited version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DerivedFrom {
    /// The base version's `dataset.version`.
    pub dataset_version: String,
    /// sha256 of the base's `manifest.json` bytes.
    pub manifest_sha256: String,
    /// The operation and its arguments.
    pub operation: serde_json::Value,
    /// Entities removed, by kind.
    pub removed: BTreeMap<String, u64>,
}

/// Running statistics of values: count, min, max, mean and the sum of squared
/// deviations, merged with Chan et al.'s pairwise update so per-channel figures
/// come from chunk partials without a second pass over values. The default is
/// the empty partial.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Partial {
    /// Values.
    pub n: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
}

/// The smaller of `a` and `b` in IEEE 754 total order (`-0.0 < 0.0`), so the
/// result never depends on argument order or machine.
fn total_min<T: TotalOrd>(a: T, b: T) -> T {
    if b.total_less(a) {
        b
    } else {
        a
    }
}

/// The larger of `a` and `b` in IEEE 754 total order (`-0.0 < 0.0`).
fn total_max<T: TotalOrd>(a: T, b: T) -> T {
    if a.total_less(b) {
        b
    } else {
        a
    }
}

/// `total_cmp` of f32 and f64 behind one name.
trait TotalOrd: Copy {
    fn total_less(self, other: Self) -> bool;
}

impl TotalOrd for f32 {
    fn total_less(self, other: Self) -> bool {
        self.total_cmp(&other).is_lt()
    }
}

impl TotalOrd for f64 {
    fn total_less(self, other: Self) -> bool {
        self.total_cmp(&other).is_lt()
    }
}

/// Independent accumulators of [`Partial::of`]: lane `i` takes values
/// `i, i + 8, i + 16, ...`, so a pass is eight independent chains a CPU runs
/// as one vector. Every build and CPU does the same operations in the same
/// order on each lane (no fused multiply-add), so the statistics are the same
/// bits everywhere (docs/format.md, "Statistics").
const LANES: usize = 8;

/// Per lane: the smallest and largest value (`<` and `>` comparisons, NaN and
/// a zero's sign left as they come) and the sum in f64.
struct Lanes {
    min: [f32; LANES],
    max: [f32; LANES],
    sum: [f64; LANES],
}

impl Lanes {
    /// The lanes of `body` (a multiple of [`LANES`] values); on x86-64 with AVX2
    /// one 8-wide step a group, else what the compiler makes of the lane loop.
    fn of(body: &[f32]) -> Lanes {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2, checked just above
            return unsafe { Lanes::of_avx2(body) };
        }
        Lanes::of_portable(body)
    }

    fn of_portable(body: &[f32]) -> Lanes {
        let mut lanes = Lanes { min: [f32::INFINITY; LANES], max: [f32::NEG_INFINITY; LANES], sum: [0f64; LANES] };
        for c in body.chunks_exact(LANES) {
            for i in 0..LANES {
                lanes.min[i] = if c[i] < lanes.min[i] { c[i] } else { lanes.min[i] };
                lanes.max[i] = if c[i] > lanes.max[i] { c[i] } else { lanes.max[i] };
                lanes.sum[i] += f64::from(c[i]);
            }
        }
        lanes
    }

    /// [`Lanes::of_portable`] in AVX2: `vminps(v, min)` is `v < min ? v : min`
    /// and `vmaxps(v, max)` is `v > max ? v : max`, the portable selects exactly
    /// (NaN and equal zeros keep the accumulator); lanes 0-3 and 4-7 are summed
    /// as two vectors of f64.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn of_avx2(body: &[f32]) -> Lanes {
        use std::arch::x86_64::*;
        let (mut min, mut max) = (_mm256_set1_ps(f32::INFINITY), _mm256_set1_ps(f32::NEG_INFINITY));
        let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for c in body.chunks_exact(LANES) {
            // SAFETY: `c` holds LANES (8) f32, the 32 bytes an unaligned load reads
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            min = _mm256_min_ps(v, min);
            max = _mm256_max_ps(v, max);
            low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
            high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)));
        }
        let mut lanes = Lanes { min: [0f32; LANES], max: [0f32; LANES], sum: [0f64; LANES] };
        // SAFETY: each store writes 32 bytes into an array of 32 bytes
        unsafe {
            _mm256_storeu_ps(lanes.min.as_mut_ptr(), min);
            _mm256_storeu_ps(lanes.max.as_mut_ptr(), max);
            _mm256_storeu_pd(lanes.sum.as_mut_ptr(), low);
            _mm256_storeu_pd(lanes.sum[4..].as_mut_ptr(), high);
        }
        lanes
    }

    /// Per lane, the sum of `(v - mean)²` in f64 over `body` (a multiple of
    /// [`LANES`] values).
    fn squared_deviations(body: &[f32], mean: f64) -> [f64; LANES] {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2, checked just above
            return unsafe { Lanes::squared_deviations_avx2(body, mean) };
        }
        Lanes::squared_deviations_portable(body, mean)
    }

    fn squared_deviations_portable(body: &[f32], mean: f64) -> [f64; LANES] {
        let mut dev = [0f64; LANES];
        for c in body.chunks_exact(LANES) {
            for i in 0..LANES {
                let d = f64::from(c[i]) - mean;
                dev[i] += d * d;
            }
        }
        dev
    }

    /// [`Lanes::squared_deviations_portable`] in AVX2: subtract, multiply,
    /// then add, rounded one at a time as there.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn squared_deviations_avx2(body: &[f32], mean: f64) -> [f64; LANES] {
        use std::arch::x86_64::*;
        let m = _mm256_set1_pd(mean);
        let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for c in body.chunks_exact(LANES) {
            // SAFETY: `c` holds LANES (8) f32, the 32 bytes an unaligned load reads
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            let d_low = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
            let d_high = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)), m);
            low = _mm256_add_pd(low, _mm256_mul_pd(d_low, d_low));
            high = _mm256_add_pd(high, _mm256_mul_pd(d_high, d_high));
        }
        let mut dev = [0f64; LANES];
        // SAFETY: each store writes 32 bytes into 4 f64 of the array
        unsafe {
            _mm256_storeu_pd(dev.as_mut_ptr(), low);
            _mm256_storeu_pd(dev[4..].as_mut_ptr(), high);
        }
        dev
    }
}

impl Partial {
    /// Statistics of one chunk: min, max and sum in one pass, then the squared
    /// deviations in a second pass over the chunk while it is in cache (more
    /// accurate than sum-of-squares), each over eight independent lanes. A
    /// non-finite value makes `mean` non-finite.
    pub fn of(values: &[f32]) -> Partial {
        let body = values.len() - values.len() % LANES;
        let (body, tail) = values.split_at(body);
        let Lanes { mut min, mut max, sum: mut sums } = Lanes::of(body);
        for (i, &v) in tail.iter().enumerate() {
            min[i] = if v < min[i] { v } else { min[i] };
            max[i] = if v > max[i] { v } else { max[i] };
            sums[i] += f64::from(v);
        }
        let n = values.len() as u64;
        let mean = sums.iter().sum::<f64>() / n as f64;
        let mut dev = Lanes::squared_deviations(body, mean);
        for (i, &v) in tail.iter().enumerate() {
            let d = f64::from(v) - mean;
            dev[i] += d * d;
        }
        let fold = |a: [f32; LANES], f: fn(f32, f32) -> f32| a.into_iter().fold(a[0], f);
        let (mut min, mut max) = (fold(min, total_min), fold(max, total_max));
        // `<` cannot tell -0.0 from 0.0, so a zero extreme kept whichever zero
        // came first; in total order -0.0 is the smaller (docs/format.md,
        // "Statistics"), so the sign is settled by whether that zero occurs.
        if min == 0.0 {
            min = if values.iter().any(|v| v.to_bits() == (-0.0f32).to_bits()) { -0.0 } else { 0.0 };
        }
        if max == 0.0 {
            max = if values.iter().any(|v| v.to_bits() == 0.0f32.to_bits()) { 0.0 } else { -0.0 };
        }
        Partial { n, min: f64::from(min), max: f64::from(max), mean, m2: dev.iter().sum() }
    }

    /// Population standard deviation.
    pub fn std(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.m2 / self.n as f64).sqrt()
        }
    }

    /// Merges `other` into `self`.
    pub fn merge(&mut self, other: &Partial) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        self.mean += delta * other.n as f64 / n as f64;
        self.m2 += other.m2 + delta * delta * (self.n as f64) * (other.n as f64) / n as f64;
        self.min = total_min(self.min, other.min);
        self.max = total_max(self.max, other.max);
        self.n = n;
    }

    /// Statistics as the index stores them, as a partial to merge: `m2` is
    /// `std * std * count` from the stored float64 `std`. Every figure merged
    /// from chunk statistics (the manifest's channel statistics, `verify`'s
    /// recomputation of them) merges chunks in this form, so it is a function
    /// of the index as stored and an edit takes an unchanged chunk's figures
    /// from its base's index without reading its values (`docs/format.md`,
    /// "Statistics").
    pub fn as_stored(stats: &ChannelStats) -> Partial {
        let n = stats.count;
        Partial { n, min: stats.min, max: stats.max, mean: stats.mean, m2: stats.std * stats.std * n as f64 }
    }

    /// The stored form (the manifest's, and a chunk's index row's).
    pub fn to_stats(&self) -> ChannelStats {
        ChannelStats { count: self.n, min: self.min, max: self.max, mean: self.mean, std: self.std() }
    }
}

impl WriterBlock {
    /// The block the writer records for options `o`: the one place it is built,
    /// so what [`WriterBlock::options`] accepts is exactly what a writer commits.
    pub fn from_options(o: &WriterOptions) -> WriterBlock {
        WriterBlock {
            shard_target_bytes: o.shard_target_bytes(),
            shard_max_bytes: o.shard_max_bytes(),
            row_group_target_bytes: o.row_group_target_bytes(),
            row_group_max_bytes: o.row_group_max_bytes(),
            chunk_max_bytes: o.chunk_max_bytes(),
            compression: "zstd".to_string(),
            compression_level: o.compression_level(),
            content_defined_chunking: CdcBlock {
                method: "row-key-v1".to_string(),
                min_chunk_size: crate::layout::PAGE_MIN_BYTES,
                max_chunk_size: crate::layout::PAGE_MAX_BYTES,
            },
        }
    }

    /// The writer options this block records, validated as options a user
    /// gives ([`crate::options::WriterOptionsBuilder::try_build`]), with every
    /// other field (derived caps, compression, content-defined chunking)
    /// checked against the block those options give
    /// ([`WriterBlock::from_options`]): a block no writer can produce is refused.
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming the option (field) at fault, the first
    /// in the block's order.
    pub fn options(&self) -> Result<WriterOptions> {
        let o = WriterOptions::builder()
            .shard_target_bytes(self.shard_target_bytes)
            .row_group_target_bytes(self.row_group_target_bytes)
            .chunk_max_bytes(self.chunk_max_bytes)
            .compression_level(self.compression_level)
            .try_build()?;
        let want = WriterBlock::from_options(&o);
        let (cdc, want_cdc) = (&self.content_defined_chunking, &want.content_defined_chunking);
        // JSON text, as the manifest shows the field
        fn json<T: Serialize>(v: &T) -> String {
            serde_json::to_string(v).unwrap_or_default()
        }
        for (option, recorded, derived) in [
            ("row_group_max_bytes", json(&self.row_group_max_bytes), json(&want.row_group_max_bytes)),
            ("shard_max_bytes", json(&self.shard_max_bytes), json(&want.shard_max_bytes)),
            ("compression", json(&self.compression), json(&want.compression)),
            ("content_defined_chunking.method", json(&cdc.method), json(&want_cdc.method)),
            ("content_defined_chunking.min_chunk_size", json(&cdc.min_chunk_size), json(&want_cdc.min_chunk_size)),
            ("content_defined_chunking.max_chunk_size", json(&cdc.max_chunk_size), json(&want_cdc.max_chunk_size)),
        ] {
            if recorded != derived {
                let reason = format!("{recorded}, but the other options give {derived}");
                return Err(Error::InvalidOption { option, reason });
            }
        }
        Ok(o)
    }
}

impl Manifest {
    /// Serialized bytes (pretty JSON, two-space indent, one trailing
    /// newline): the canonical form `timef verify` requires byte for byte.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("manifest types always serialize");
        out.push(b'\n');
        out
    }

    /// The seal this manifest should carry: lowercase hex sha256 of
    /// [`Manifest::to_bytes`] with `manifest_sha256` left out.
    pub fn seal_sha256(&self) -> String {
        use sha2::Digest;
        let unsealed = Manifest { manifest_sha256: None, ..self.clone() };
        hex::encode(sha2::Sha256::digest(unsealed.to_bytes()))
    }

    /// The manifest with its seal set, as the writer commits it.
    pub fn sealed(mut self) -> Manifest {
        self.manifest_sha256 = Some(self.seal_sha256());
        self
    }

    /// Parses `manifest.json` bytes of TimeF 1 (keys the types do not know
    /// are ignored here; `timef verify` refuses them through the canonical
    /// bytes).
    ///
    /// # Errors
    /// [`ParseProblem`] naming the field (a JSON path) or line and column;
    /// [`ParseProblem::other_format`] tells JSON of another format or format
    /// version (not a TimeF 1 manifest) from a damaged TimeF manifest.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Manifest, ParseProblem> {
        let at = |e: &serde_json::Error| {
            let offset = offset_of(bytes, e.line(), e.column());
            let field = field_at(bytes, offset);
            let line = format!("line {} column {}", e.line(), e.column());
            if field.is_empty() {
                line
            } else {
                format!("{field} ({line})")
            }
        };
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| ParseProblem {
            location: at(&e),
            reason: format!("not JSON: {e}"),
            other_format: false,
        })?;
        if value.get("format").and_then(|v| v.as_str()) != Some(FORMAT)
            || value.get("format_version").and_then(|v| v.as_u64()) != Some(u64::from(FORMAT_VERSION))
        {
            return Err(ParseProblem {
                location: "format".into(),
                reason: format!("format {} version {} is not timef 1", value["format"], value["format_version"]),
                other_format: true,
            });
        }
        // from the bytes, not the value, so a type error carries its position
        serde_json::from_slice(bytes).map_err(|e| ParseProblem {
            location: at(&e),
            reason: e.to_string(),
            other_format: false,
        })
    }
}

/// Why [`Manifest::parse`] refused bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseProblem {
    /// The field as a JSON path (`counts.samples`, `files[2].sha256`), with
    /// line and column when the JSON parser gave them.
    pub location: String,
    /// What is wrong.
    pub reason: String,
    /// The bytes are JSON naming another `format` or `format_version` (not a
    /// TimeF 1 manifest); otherwise a TimeF manifest is damaged (not JSON, or
    /// a field missing or of the wrong type).
    pub other_format: bool,
}

/// Byte offset of 1-based `line` and `column` (0 column: the line's start).
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let start: usize = text.split_inclusive(|&b| b == b'\n').take(line.saturating_sub(1)).map(<[u8]>::len).sum();
    (start + column.saturating_sub(1)).min(text.len())
}

/// The JSON path (`dataset.citation`, `files[2].sha256`) of the key or value
/// that byte `offset` of the JSON `text` belongs to, for findings that name a
/// field; empty outside every key. A tolerant scan: it names a field in text
/// that is no longer valid JSON too.
pub fn field_at(text: &[u8], offset: usize) -> String {
    enum Frame {
        Object { key: Option<String>, expect_key: bool },
        Array { index: usize },
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < text.len() && i <= offset {
        match text[i] {
            b'{' => stack.push(Frame::Object { key: None, expect_key: true }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' if i < offset => {
                stack.pop();
            }
            // the closing bracket itself belongs to its container, not its last key
            b'}' => {
                if let Some(Frame::Object { key, .. }) = stack.last_mut() {
                    *key = None;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array { index }) => *index += 1,
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                None => {}
            },
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut() {
                    if *expect_key {
                        *key = Some(String::from_utf8_lossy(&text[start..i.min(text.len())]).into_owned());
                        *expect_key = false;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(k), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
            }
            Frame::Object { key: None, .. } => {}
            Frame::Array { index } => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

#[cfg(test)]
mod tests {
    /// A zero extreme is -0.0 for min and 0.0 for max when both zeros occur,
    /// wherever they stand (every lane of the vectorized fold), and merging
    /// partials in either order agrees.
    #[test]
    fn zero_extremes_follow_total_order_whatever_the_position() {
        for n in [2usize, 9, 17] {
            for neg in 0..n {
                let mut v = vec![0.0f32; n];
                v[neg] = -0.0;
                let p = Partial::of(&v);
                assert_eq!((p.min.to_bits(), p.max.to_bits()), ((-0.0f64).to_bits(), 0.0f64.to_bits()), "{v:?}");
            }
        }
        let only_neg = Partial::of(&[-0.0, -0.0]);
        assert_eq!((only_neg.min.to_bits(), only_neg.max.to_bits()), ((-0.0f64).to_bits(), (-0.0f64).to_bits()));
        let (a, b) = (Partial::of(&[0.0, 1.0]), Partial::of(&[-0.0, 1.0]));
        let (mut ab, mut ba) = (a, b);
        ab.merge(&b);
        ba.merge(&a);
        assert_eq!((ab.min.to_bits(), ab.max), ((-0.0f64).to_bits(), 1.0));
        assert_eq!((ba.min.to_bits(), ba.max), ((-0.0f64).to_bits(), 1.0));
    }

    use super::*;

    #[test]
    fn verify_manifest_floats_round_trip() {
        // serde_json parses floats exactly only with its `float_roundtrip`
        // feature; without it this chunk maximum (an f32 widened to f64) read
        // back one ulp off, and `timef verify` found the statistics changed
        let x = f64::from(24.805_077_f32);
        assert_eq!(x, 24.805076599121094);
        let back: f64 = serde_json::from_slice(&serde_json::to_vec(&x).unwrap()).unwrap();
        assert_eq!(back.to_bits(), x.to_bits());
    }

    #[test]
    fn field_at_names_keys_values_and_array_items() {
        let text = br#"{
  "dataset": {
    "name": "a\"b",
    "citation": null
  },
  "files": [
    {
      "path": "x"
    },
    {
      "path": "y"
    }
  ]
}
"#;
        let s = std::str::from_utf8(text).unwrap();
        let at = |needle: &str| field_at(text, s.find(needle).unwrap());
        assert_eq!(at("{"), "");
        assert_eq!(at("\"dataset\""), "dataset");
        assert_eq!(at("name"), "dataset.name");
        assert_eq!(at("b\""), "dataset.name");
        assert_eq!(at("null"), "dataset.citation");
        assert_eq!(at("\"x\""), "files[0].path");
        assert_eq!(at("\"y\""), "files[1].path");
        assert_eq!(field_at(text, text.len() - 1), "");
    }

    #[test]
    fn merged_partials_equal_one_pass() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [10.0f32, -4.0];
        let mut m = Partial::of(&a);
        m.merge(&Partial::of(&b));
        let all = Partial::of(&[1.0, 2.0, 3.0, 10.0, -4.0]);
        assert_eq!(m.n, 5);
        assert_eq!((m.min, m.max), (-4.0, 10.0));
        assert!((m.mean - all.mean).abs() < 1e-12);
        assert!((m.std() - all.std()).abs() < 1e-12);
        assert_eq!(all.mean, 2.4);
    }

    /// The AVX2 lanes give the portable lanes' bits, for every length around
    /// the lane width and values that test the selects: NaN first, last and
    /// alone, both zeros, infinities, subnormals and wide magnitudes.
    #[test]
    fn avx2_lanes_are_the_portable_lanes_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        {
            if !std::arch::is_x86_feature_detected!("avx2") {
                println!("skipped: this CPU has no AVX2, so Partial::of takes the portable lanes only");
                return;
            }
            let special = [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY, 1e-45, -3.4e38, 3.4e38];
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            for len in [0usize, 8, 16, 24, 64, 4096] {
                for case in 0..40 {
                    let body: Vec<f32> = (0..len)
                        .map(|_| match next() % 4 {
                            0 if case % 2 == 0 => special[(next() % 8) as usize],
                            _ => f32::from_bits(next() as u32 & 0xbfff_ffff) * 1e-3 + (next() % 100) as f32,
                        })
                        .collect();
                    // SAFETY: this CPU has AVX2, checked above
                    let (portable, avx2) = (Lanes::of_portable(&body), unsafe { Lanes::of_avx2(&body) });
                    let bits32 = |a: [f32; LANES]| a.map(f32::to_bits);
                    let bits64 = |a: [f64; LANES]| a.map(f64::to_bits);
                    assert_eq!(bits32(portable.min), bits32(avx2.min), "min, len {len} case {case}");
                    assert_eq!(bits32(portable.max), bits32(avx2.max), "max, len {len} case {case}");
                    assert_eq!(bits64(portable.sum), bits64(avx2.sum), "sum, len {len} case {case}");
                    let mean = f64::from(body.first().copied().unwrap_or(0.0)) / 3.0;
                    assert_eq!(
                        bits64(Lanes::squared_deviations_portable(&body, mean)),
                        // SAFETY: this CPU has AVX2, checked above
                        bits64(unsafe { Lanes::squared_deviations_avx2(&body, mean) }),
                        "deviations, len {len} case {case}"
                    );
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        println!("skipped: AVX2 lanes exist on x86-64 only");
    }
}
