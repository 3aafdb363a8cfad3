//! `manifest.json`: the record that marks a version committed (FORMAT-BRIEF §4).
//!
//! Keys come out in the declaration order of these structs and maps are
//! `BTreeMap`s, so the bytes are a pure function of the version: no wall clock,
//! no host name, no absolute path. `schemas/manifest.schema.json` describes it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::dataset::{Annotation, SeriesMeta, Source, Task};
use crate::error::{Error, Result};
use crate::options::WriterOptions;

pub use crate::names::FORMAT;
pub use crate::stats::{ChannelStats, Partial};
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

impl SourceEntry {
    /// The source this entry records, as a dataset holds it.
    pub fn source(&self) -> Source {
        Source {
            source_id: self.source_id.clone(),
            name: self.name.clone(),
            url: self.url.clone(),
            license: self.license.clone(),
            citation: self.citation.clone(),
        }
    }
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
}
