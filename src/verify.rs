//! `timef verify`: a full check of one committed version that reports every
//! problem it finds, each with its file and location, as a [`VerifyReport`].
//!
//! The checks, in the order they run (later ones use what earlier ones read):
//! 1. `manifest.json`: its bytes are the canonical serialization of what they
//!    parse to and match its seal `manifest_sha256` (docs/format.md §6,
//!    "Integrity"); dataset name and version match the directories, `files`
//!    sorted and inside the version, `id_encoding` complete, writer options sane.
//! 2. Files: every listed file exists with the manifest's size and sha256; no
//!    file on disk is unlisted; the required tables are listed.
//! 3. Every Parquet file: magic and footer readable; schema exactly the
//!    format's (FORMAT-BRIEF §3, with the manifest's id encodings, in the
//!    current or the earlier form of its column types, one form per version); zstd;
//!    statistics, column and offset index present. Every page of every column
//!    chunk is walked with [`crate::thrift`]: its header decodes, its CRC-32 is
//!    present and matches the page as stored, the pages tile the chunk, their
//!    value counts add up to the footer's, the pinned encodings took, and the
//!    offset index lists exactly the data pages. Shards are numbered
//!    consecutively and their row groups and totals keep the size rules of the
//!    manifest's `writer` block (FORMAT-BRIEF §5).
//! 4. Every row group is decoded by the parquet crate's reader, whose `crc`
//!    feature verifies every page's CRC again while it decompresses and decodes
//!    the values. The decoded rows feed the logical checks: sort orders, index
//!    pointers, chunk numbering and sizes, `n_values` and chunk statistics
//!    against the values, finite values, referential integrity, shared
//!    annotations, forecasting tasks, id encodings, and the manifest's counts,
//!    statistics and derived schema.
//!
//! A file that cannot be used (footer unreadable, schema wrong, pages broken)
//! is reported once; the checks that need it are listed in
//! [`VerifyReport::skipped`] instead of producing a cascade of findings. A
//! panic of the parquet crate on corrupt bytes is caught and reported as a
//! finding.
//!
//! Memory is bounded by the version's keys, not its values: pages stream
//! through the CRC in blocks, values decode one row group at a time in batches
//! of at most [`SHARD_BATCH_VALUES`] values, and what is kept is one compact
//! record per chunk, the sample and task ids, and a fingerprint per annotation.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Float32Type;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::schema::types::Type;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::dataset::{is_canonical_uuid, validate_name, SeriesMeta, TaskType};
use crate::encoding::{FileSchema, IdEncoding, Pin};
use crate::error::{Error, Result};
use crate::footer::{contain, CheckedPages};
use crate::layout::shard_path;
use crate::manifest::{self, Manifest, Partial, SchemaBlock};
use crate::reader;
use crate::storage::local::{open_in, walk_in, Entry, VersionDir, SYMLINK};
use crate::storage::version_path::path_problem;
use crate::storage::{Location, CLAIM, MANIFEST};
use crate::tables::{self, IdEncodings, IdSpace};
use crate::thrift::{chunk_pages, PageKind};

/// Values decoded at once from a shard: a batch holds as many chunks as fit
/// (at least one), so memory does not grow with row groups or shards.
pub const SHARD_BATCH_VALUES: usize = 1 << 22;
/// Rows decoded at once from the index, samples, annotations and task files.
const TABLE_BATCH_ROWS: usize = 8192;

const INDEX: &str = "time_series_index.parquet";
const SAMPLES: &str = "samples.parquet";
const ANNOTATIONS: &str = "annotations.parquet";
/// Leaf path of the series values in a shard.
const VALUES_LEAF: &str = "values.list.element";

/// What a [`Finding`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Check {
    /// `manifest.json` itself: names, the `files` list, `id_encoding`, writer
    /// options, and its `schema` block against the stored entities.
    Manifest,
    /// A listed file is missing or not a file, a file on disk is unlisted, a
    /// required file is not listed, or a path is not one of the format's.
    Listing,
    /// A file's size differs from the manifest's.
    Size,
    /// A file's sha256 differs from the manifest's.
    Checksum,
    /// A Parquet file's magic or footer is unreadable.
    Footer,
    /// Columns, types, nesting or logical types differ from the format (in
    /// either form of its column types), or the files of a version mix the
    /// two forms (`docs/format.md`, "Column types").
    Schema,
    /// A pinned encoding or the zstd codec did not take.
    Encoding,
    /// Column statistics, column index or offset index are missing, or the
    /// offset index disagrees with the pages.
    PageIndex,
    /// A page header does not decode, pages do not tile their column chunk,
    /// or their value counts disagree with the footer.
    PageHeader,
    /// A page carries no CRC-32, or one that does not match its bytes.
    PageCrc,
    /// The parquet reader could not decode a row group's values.
    Decode,
    /// Rows out of the format's sort order, or duplicate keys.
    Order,
    /// An index row does not land on its `(time_series_id, chunk_idx)`, or a
    /// shard row has no index row.
    Pointer,
    /// Chunk numbering, value offsets, or chunk, row-group or shard sizes
    /// break the layout rules (FORMAT-BRIEF §5).
    Chunking,
    /// `n_values` or chunk statistics disagree with the stored values, or the
    /// manifest's statistics with the chunks.
    Statistics,
    /// Stored values break a rule: non-finite, empty chunk, length against
    /// `t_end_s`, sampling rate, window bounds.
    Values,
    /// A reference does not resolve (samples → series and sources,
    /// annotations → samples, tasks → samples and tasks), a task id repeats,
    /// or a task lacks a required field.
    Integrity,
    /// Rows of one annotation attached to several samples differ.
    SharedAnnotation,
    /// `id_encoding` disagrees with the ids stored (FORMAT-BRIEF §2).
    Ids,
    /// The manifest's counts or per-file row counts disagree with the files.
    Counts,
}

impl Check {
    /// The check's name as printed and serialized (`page-crc`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Check::Manifest => "manifest",
            Check::Listing => "listing",
            Check::Size => "size",
            Check::Checksum => "checksum",
            Check::Footer => "footer",
            Check::Schema => "schema",
            Check::Encoding => "encoding",
            Check::PageIndex => "page-index",
            Check::PageHeader => "page-header",
            Check::PageCrc => "page-crc",
            Check::Decode => "decode",
            Check::Order => "order",
            Check::Pointer => "pointer",
            Check::Chunking => "chunking",
            Check::Statistics => "statistics",
            Check::Values => "values",
            Check::Integrity => "integrity",
            Check::SharedAnnotation => "shared-annotation",
            Check::Ids => "ids",
            Check::Counts => "counts",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file at fault, relative to the version directory (`/`-separated).
    pub file: String,
    /// Where in the file, e.g. `row group 2, column values.list.element, page 3`.
    pub location: String,
    /// Which check failed.
    pub check: Check,
    /// What was found (one line).
    pub message: String,
}

impl fmt::Display for Finding {
    /// `FAIL [check] file location: message`, the CLI's line format.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FAIL [{}] {} {}: {}", self.check, self.file, self.location, self.message)
    }
}

/// The warning of a version whose `manifest.json` has no seal
/// (`manifest_sha256`): a change of its hand-written fields cannot be found
/// (`docs/format.md` §6, "Integrity").
pub const UNSEALED: &str = "manifest.json is unsealed (no manifest_sha256): a change of its description, license, \
     citation, sources, created_by or writer options cannot be found; written before the seal existed, by a writer \
     that does not seal, or its seal was removed";

/// Everything [`verify`] found, with what it covered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Every finding, in the order the checks ran.
    pub findings: Vec<Finding>,
    /// Files examined, `manifest.json` included.
    pub files_checked: usize,
    /// Pages whose header and CRC were checked.
    pub pages_checked: u64,
    /// Rows decoded by the parquet reader.
    pub rows_checked: u64,
    /// Series values decoded and checked against the index.
    pub values_checked: u64,
    /// Checks that could not run because a file they need is unusable (its
    /// findings say why), one line each.
    pub skipped: Vec<String>,
    /// What a reader of the report must know that is not a finding, one line
    /// each: a manifest without its seal (`docs/format.md` §6, "Integrity").
    pub warnings: Vec<String>,
}

impl VerifyReport {
    /// True when nothing was found.
    pub fn is_ok(&self) -> bool {
        self.findings.is_empty()
    }

    /// One line: the verdict and what was covered.
    pub fn summary(&self) -> String {
        let covered = format!(
            "{} files, {} pages, {} rows, {} values",
            self.files_checked, self.pages_checked, self.rows_checked, self.values_checked
        );
        let mut skipped = match self.skipped.len() {
            0 => String::new(),
            n => format!("; {n} check(s) skipped"),
        };
        if !self.warnings.is_empty() {
            skipped.push_str(&format!("; {} warning(s)", self.warnings.len()));
        }
        if self.is_ok() {
            format!("ok: {covered} verified{skipped}")
        } else {
            format!("FAILED: {} finding(s) in {covered}{skipped}", self.findings.len())
        }
    }

    /// The CLI's text: one line per finding, one `warning: ` line per warning,
    /// then [`VerifyReport::summary`] (skipped checks are counted there and
    /// listed in the JSON form).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&f.to_string());
            out.push('\n');
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    fn push(&mut self, file: &str, location: impl Into<String>, check: Check, message: impl Into<String>) {
        // one finding, one line: messages of nested errors may span lines
        let message = message.into().replace(['\n', '\r'], " ");
        self.findings.push(Finding { file: file.to_string(), location: location.into(), check, message });
    }
}

/// Verifies the committed version at `version_dir` (a local directory, or a
/// URL: see [`verify_at`]) and reports every finding.
///
/// # Errors
/// Only when `version_dir` is not a version: [`Error::NotAVersion`] (no
/// `manifest.json`, or not a regular file) or [`Error::Io`] reading the
/// manifest. Every other problem is a [`Finding`], a `manifest.json` that does
/// not parse included (docs/format.md §6, "Integrity").
pub fn verify(version_dir: &Path) -> Result<VerifyReport> {
    verify_at(&Location::from_path(version_dir)?)
}

/// Verifies the version at `loc`. On an object store every object under the
/// version is streamed once (one GET) into a private temporary directory
/// (`TMPDIR`), removed afterwards, and the local checks run on that copy:
/// memory stays bounded as for a local version; the copy needs the version's
/// size in temporary disk. Unlisted objects are not downloaded, only reported.
///
/// # Errors
/// As [`verify`]; [`Error::ObjectStore`] when a download fails.
pub fn verify_at(loc: &Location) -> Result<VerifyReport> {
    if let Some(dir) = loc.as_local() {
        return verify_local(dir);
    }
    // an unparsable manifest is a finding of the local checks, not an error here
    let listed: BTreeSet<String> = Manifest::parse(&reader::manifest_bytes(loc)?)
        .map(|m| m.files.into_iter().map(|f| f.path).collect())
        .unwrap_or_default();
    let shown = loc.to_path_buf();
    let segment = |p: Option<&Path>| {
        p.and_then(|p| p.file_name()).map_or_else(|| "_".to_string(), |s| s.to_string_lossy().into_owned())
    };
    let tmp = tempfile::Builder::new().prefix("timef-verify-").tempdir().map_err(|e| Error::io("<TMPDIR>", e))?;
    // named like the original, so the name checks see the version's own names
    let copy = tmp.path().join(segment(shown.parent())).join(segment(Some(&shown)));
    let (objects, _) = loc.list_files()?;
    // a claim beside a committed version is the commit's last step not yet
    // done (docs/format.md, "Storage backends and the commit"), not a stray file
    // objects a local copy cannot hold (a key that is also a "directory" of
    // other keys, a segment too long): findings, not a failed verify
    let mut uncopied: Vec<(String, String)> = Vec::new();
    // the files the manifest names first: an object in their way is the finding
    let (mut objects, others): (Vec<_>, Vec<_>) = objects
        .into_iter()
        .filter(|(rel, _)| rel != CLAIM)
        .partition(|(rel, _)| rel == MANIFEST || listed.contains(rel));
    objects.extend(others);
    for (rel, _) in objects {
        if let Some(problem) = path_problem(&rel) {
            uncopied.push((rel, format!("object key {problem}: not checked")));
            continue;
        }
        let dst = copy.join(&rel);
        let created = match dst.parent() {
            Some(parent) => std::fs::create_dir_all(parent).and_then(|()| File::create(&dst)),
            None => File::create(&dst),
        };
        let conflict = |e: &std::io::Error| {
            use rustix::io::Errno;
            Errno::from_io_error(e)
                .is_some_and(|n| [Errno::NOTDIR, Errno::ISDIR, Errno::EXIST, Errno::NAMETOOLONG].contains(&n))
        };
        let created = match created {
            Ok(f) => f,
            Err(e) if conflict(&e) => {
                uncopied.push((
                    rel,
                    format!(
                        "an object under the version that no file system can hold beside the others ({e}): not checked"
                    ),
                ));
                continue;
            }
            Err(e) => return Err(Error::io(&dst, e)),
        };
        let mut out = std::io::BufWriter::new(created);
        if rel == MANIFEST || listed.contains(&rel) {
            let mut failed = None;
            loc.join(&rel).stream(&mut |block| {
                if failed.is_none() {
                    failed = std::io::Write::write_all(&mut out, block).err();
                }
            })?;
            if let Some(e) = failed {
                return Err(Error::io(&dst, e));
            }
        }
        std::io::Write::flush(&mut out).map_err(|e| Error::io(&dst, e))?;
    }
    let mut report = verify_local(&copy)?;
    for (rel, why) in uncopied {
        report.push(&rel, "object", Check::Listing, why);
    }
    Ok(report)
}

fn verify_local(version_dir: &Path) -> Result<VerifyReport> {
    let version = reader::open_version(&Location::local(version_dir))?;
    let handle = version.local_version_dir()?;
    let bytes = reader::manifest_bytes(&version)?;
    let manifest = match Manifest::parse(&bytes) {
        Ok(m) => m,
        Err(problem) => {
            // present but unusable: a finding (exit 1), not "not a version"
            let mut report = VerifyReport { files_checked: 1, ..VerifyReport::default() };
            report.push(MANIFEST, problem.location, Check::Manifest, problem.reason);
            report.skipped.push("every other check: manifest.json does not parse, so the files are unknown".into());
            return Ok(report);
        }
    };
    let mut v = Verifier::new(&handle, &manifest);
    v.manifest_bytes(&bytes);
    v.manifest_fields();
    for (rel, kind) in v.files() {
        v.parquet(rel, kind);
    }
    v.layout();
    let mut index = v.index();
    let shards = v.shards(&mut index);
    let samples = v.samples(&mut index);
    let annotations = v.annotations(&samples);
    let tasks = v.tasks(&samples);
    v.totals(&index, &shards, &samples, &annotations, &tasks);
    Ok(v.report)
}

/// The kind of a file of the format, from its path (FORMAT-BRIEF §1).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Index,
    Samples,
    Annotations,
    Shard(u32),
    Task(String),
}

fn kind_of(rel: &str) -> Option<Kind> {
    match rel {
        INDEX => return Some(Kind::Index),
        SAMPLES => return Some(Kind::Samples),
        ANNOTATIONS => return Some(Kind::Annotations),
        _ => {}
    }
    if let Some(n) = rel.strip_prefix("time_series/shard-").and_then(|r| r.strip_suffix(".parquet")) {
        let digits = n.len() == 5 && n.bytes().all(|b| b.is_ascii_digit());
        return if digits { n.parse().ok().map(Kind::Shard) } else { None };
    }
    let name = rel.strip_prefix("tasks/task=")?.strip_suffix("/part-0.parquet")?;
    validate_name(name, "task_name").is_ok().then(|| Kind::Task(name.to_string()))
}

/// A Parquet file whose footer was read.
struct PqFile {
    rel: String,
    path: PathBuf,
    /// The file, opened without following a symbolic link.
    file: File,
    kind: Kind,
    meta: Arc<ParquetMetaData>,
    /// The schema is exactly the format's: the logical checks may read it.
    schema_ok: bool,
    /// Row groups with page findings: not handed to the reader, which would
    /// only fail on the same bytes again.
    bad_row_groups: BTreeSet<usize>,
}

/// Which ids of one space were seen, for the uuid16-or-string rule.
#[derive(Debug, Clone, Copy)]
struct IdSeen {
    any: bool,
    all_canonical: bool,
}

impl Default for IdSeen {
    fn default() -> Self {
        IdSeen { any: false, all_canonical: true }
    }
}

fn saw(seen: &mut [IdSeen; 6], space: IdSpace, id: &str) {
    let s = &mut seen[space as usize];
    s.any = true;
    s.all_canonical &= is_canonical_uuid(id);
}

/// Runs `f`, turning a panic of the parquet crate on corrupt bytes into an error.
fn guard<T>(f: impl FnOnce() -> std::result::Result<T, String>) -> std::result::Result<T, String> {
    contain(f).and_then(|r| r)
}

/// The message of a decoding error, without the absolute path the reader
/// helpers put in (the finding names the file).
fn reason(e: &Error) -> String {
    match e {
        Error::Corrupt { reason, .. } => reason.clone(),
        Error::Parquet { source, .. } => source.to_string(),
        Error::Arrow { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The OS error inside an [`Error::Io`], without the path the finding already names.
fn source_of(e: &Error) -> String {
    match e {
        Error::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// `a` and `b` agree up to the rounding of a differently ordered summation.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * (1.0 + a.abs().max(b.abs()))
}

/// A rebuilt [`Partial`] from stored chunk statistics.
fn partial_of(n: i32, min: f32, max: f32, mean: f64, std: f64) -> Partial {
    let n = u64::try_from(n).unwrap_or(0);
    Partial { n, min: f64::from(min), max: f64::from(max), mean, m2: std * std * n as f64 }
}

/// One-line description of a schema node, for schema findings.
fn describe(t: &Type) -> String {
    let info = t.get_basic_info();
    let rep = if info.has_repetition() { format!("{} ", info.repetition()) } else { String::new() };
    let logical = info.logical_type_ref().map(|l| format!(" ({l:?})")).unwrap_or_default();
    match t {
        Type::PrimitiveType { physical_type, type_length, .. } => {
            let len = if *type_length > 0 { format!("({type_length})") } else { String::new() };
            format!("{rep}{physical_type}{len}{logical}")
        }
        Type::GroupType { fields, .. } => {
            let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
            format!("{rep}group{logical} [{}]", names.join(", "))
        }
    }
}

/// Differences between a file's schema and the format's, as (column, message).
fn schema_diffs(path: &str, actual: &Type, expected: &Type, out: &mut Vec<(String, String)>) {
    let (a, e) = (actual.get_basic_info(), expected.get_basic_info());
    let is_root = path.is_empty();
    let same_node = match (actual, expected) {
        (
            Type::PrimitiveType { physical_type: pa, type_length: la, .. },
            Type::PrimitiveType { physical_type: pe, type_length: le, .. },
        ) => pa == pe && (*pe != parquet::basic::Type::FIXED_LEN_BYTE_ARRAY || la == le),
        (Type::GroupType { fields: fa, .. }, Type::GroupType { fields: fe, .. }) => {
            fa.len() == fe.len() && fa.iter().zip(fe).all(|(x, y)| x.name() == y.name())
        }
        _ => false,
    };
    let same = same_node
        && (is_root
            || (a.name() == e.name()
                && a.has_repetition() == e.has_repetition()
                && (!e.has_repetition() || a.repetition() == e.repetition())
                && a.logical_type_ref() == e.logical_type_ref()));
    if !same {
        let column = if is_root { "schema".to_string() } else { path.to_string() };
        out.push((column, format!("expected {}, found {}", describe(expected), describe(actual))));
        return;
    }
    if let (Type::GroupType { fields: fa, .. }, Type::GroupType { fields: fe, .. }) = (actual, expected) {
        for (x, y) in fa.iter().zip(fe) {
            let child = if is_root { y.name().to_string() } else { format!("{path}.{}", y.name()) };
            schema_diffs(&child, x, y, out);
        }
    }
}

/// Why the pages of a column chunk break its pin, if they do.
fn pin_problem(pin: Pin, dictionary_page: bool, encodings: &[Encoding]) -> Option<String> {
    let only = |want: Encoding| !encodings.is_empty() && encodings.iter().all(|e| *e == want);
    let ok = match pin {
        Pin::Dictionary => {
            dictionary_page
                && !encodings.is_empty()
                && encodings.iter().all(|e| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY))
        }
        Pin::Plain => !dictionary_page && only(Encoding::PLAIN),
        Pin::Delta => !dictionary_page && only(Encoding::DELTA_BINARY_PACKED),
        Pin::ByteStreamSplit => !dictionary_page && only(Encoding::BYTE_STREAM_SPLIT),
    };
    let dict = if dictionary_page { "a dictionary page and " } else { "" };
    (!ok).then(|| format!("pinned {pin:?}, found {dict}data pages encoded {encodings:?}"))
}

/// Where a decoded batch starts.
#[derive(Debug, Clone, Copy)]
struct Pos {
    rg: usize,
    row_in_rg: usize,
    /// Row within the file.
    global: u64,
}

/// Decodes every row group of `f` with the parquet crate's reader (which
/// verifies page CRCs) in batches of `batch_rows` rows and hands each batch to
/// `each`. A failure becomes a [`Check::Decode`] finding and ends that row
/// group. Returns true when every row group decoded and was handed over.
fn scan(
    report: &mut VerifyReport,
    f: &PqFile,
    batch_rows: usize,
    mut each: impl FnMut(&mut VerifyReport, Pos, &RecordBatch) -> Result<()>,
) -> bool {
    let file = &f.file;
    let options = ArrowReaderOptions::new();
    let arrow = match guard(|| ArrowReaderMetadata::try_new(Arc::clone(&f.meta), options).map_err(|e| e.to_string())) {
        Ok(a) => a,
        Err(e) => {
            report.push(&f.rel, "footer", Check::Decode, format!("no Arrow reading of this schema: {e}"));
            return false;
        }
    };
    let mut complete = true;
    let mut global = 0u64;
    for rg in 0..f.meta.num_row_groups() {
        let rows = u64::try_from(f.meta.row_group(rg).num_rows()).unwrap_or(0);
        if f.bad_row_groups.contains(&rg) {
            complete = false;
            report.skipped.push(format!("{}: row group {rg} not decoded: its pages have findings", f.rel));
            global += rows;
            continue;
        }
        let outcome = guard(|| {
            let handle = file.try_clone().map_err(|e| e.to_string())?;
            let handle = CheckedPages::new(handle, &f.meta);
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(handle, arrow.clone())
                .with_row_groups(vec![rg])
                .with_batch_size(batch_rows.max(1))
                .build()
                .map_err(|e| e.to_string())?;
            let mut row = 0usize;
            for batch in reader {
                let batch = batch.map_err(|e| e.to_string())?;
                report.rows_checked += batch.num_rows() as u64;
                each(report, Pos { rg, row_in_rg: row, global: global + row as u64 }, &batch)
                    .map_err(|e| reason(&e))?;
                row += batch.num_rows();
            }
            if row as u64 != rows {
                return Err(format!("decoded {row} rows, the footer says {rows}"));
            }
            Ok(())
        });
        if let Err(msg) = outcome {
            report.push(&f.rel, format!("row group {rg}"), Check::Decode, msg);
            complete = false;
        }
        global += rows;
    }
    complete
}

/// One index row, kept compact for the pointer and statistics checks.
#[derive(Debug, Clone)]
struct ChunkRec {
    series: u32,
    chunk_idx: i32,
    n_values: i32,
    min: f32,
    max: f32,
    mean: f64,
    std: f64,
    /// Row in the index file.
    row: u64,
}

/// Where a series' next chunk must start.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    next_chunk: i32,
    next_offset: i64,
    last_n: i32,
}

/// What the index scan keeps.
#[derive(Debug, Default)]
struct IndexState {
    complete: bool,
    series: Vec<SeriesMeta>,
    series_no: HashMap<String, u32>,
    progress: Vec<Progress>,
    chunks: Vec<ChunkRec>,
    /// (shard number, row group, row) -> chunk number
    by_target: HashMap<(u32, u32, u32), u32>,
    channels: BTreeMap<(String, String), Partial>,
    values: u64,
    referenced: Vec<bool>,
}

/// What the shard scans found.
#[derive(Debug, Default)]
struct ShardState {
    complete: bool,
    values: u64,
}

/// What the samples scan keeps.
#[derive(Debug, Default)]
struct SampleState {
    complete: bool,
    ids: HashSet<String>,
}

/// What the annotations scan keeps.
#[derive(Debug, Default)]
struct AnnotationState {
    complete: bool,
    unique: u64,
}

/// What the task scans keep.
#[derive(Debug, Default)]
struct TaskState {
    complete: bool,
    counts: BTreeMap<String, u64>,
}

struct Verifier<'a> {
    dir: &'a Path,
    /// The version directory, opened once: every file is opened through it.
    handle: &'a VersionDir,
    m: &'a Manifest,
    report: VerifyReport,
    /// The manifest's id encodings, when all six are valid.
    ids: Option<IdEncodings>,
    /// `writer.chunk_max_bytes` in values, when valid.
    chunk_values: Option<u64>,
    /// Valid listed paths.
    listed: BTreeSet<String>,
    /// Parquet files whose footer was read, sorted by path.
    files: Vec<PqFile>,
    seen: [IdSeen; 6],
    /// The manifest's `schema` block as the stored entities give it.
    derived: SchemaBlock,
    /// The column types of the first file whose schema tells them, and that file.
    column_types: Option<(ColumnTypes, String)>,
}

/// The two forms of TimeF v1 column types (`docs/format.md`, "Column types").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ColumnTypes {
    /// uuid16 without a logical type; key/value lists (written since 2026-11-30).
    Current,
    /// uuid16 with the Parquet `UUID` logical type; MAP (written before).
    Earlier,
}

impl ColumnTypes {
    fn describe(self) -> &'static str {
        match self {
            ColumnTypes::Current => "current (uuid16 without UUID logical type, key/value list)",
            ColumnTypes::Earlier => "earlier (UUID logical type, MAP)",
        }
    }
}

impl<'a> Verifier<'a> {
    fn new(handle: &'a VersionDir, m: &'a Manifest) -> Self {
        Verifier {
            dir: handle.path(),
            handle,
            m,
            report: VerifyReport::default(),
            ids: None,
            chunk_values: None,
            listed: BTreeSet::new(),
            files: Vec::new(),
            seen: [IdSeen::default(); 6],
            derived: SchemaBlock::default(),
            column_types: None,
        }
    }

    fn manifest_finding(&mut self, location: impl Into<String>, check: Check, message: impl Into<String>) {
        self.report.push(MANIFEST, location, check, message);
    }

    /// The bytes against the canonical serialization of what they parse to
    /// (catching unknown keys, whitespace, key order, number and escape forms)
    /// and the seal against those bytes (catching any changed value, hand-written
    /// fields included): `docs/format.md` §6, "Integrity".
    fn manifest_bytes(&mut self, bytes: &[u8]) {
        let canonical = self.m.to_bytes();
        if canonical != bytes {
            let at = canonical.iter().zip(bytes).position(|(a, b)| a != b).unwrap_or(canonical.len().min(bytes.len()));
            // the canonical text names the field as it should be (a misspelled
            // key by its right name); whitespace belongs to the key it precedes
            let key_at = canonical[at.min(canonical.len())..]
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .map_or(at, |p| at + p);
            let field = manifest::field_at(&canonical, key_at);
            let line_of = |text: &[u8]| {
                let n = text[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count();
                let line = text.split(|&b| b == b'\n').nth(n).unwrap_or_default();
                (n + 1, String::from_utf8_lossy(line).trim().chars().take(80).collect::<String>())
            };
            let ((line, found), (_, expected)) = (line_of(bytes), line_of(&canonical));
            let msg = format!(
                "byte {at} (line {line}) is not the canonical form of the manifest: {found:?}, canonically {expected:?}"
            );
            let location = if field.is_empty() { "document".to_string() } else { field };
            self.manifest_finding(location, Check::Manifest, msg);
        }
        match &self.m.manifest_sha256 {
            Some(recorded) => {
                let sealed = self.m.seal_sha256();
                if *recorded != sealed {
                    let msg = format!(
                        "{recorded}, but the manifest without it hashes to {sealed}: a field changed after the commit"
                    );
                    self.manifest_finding("manifest_sha256", Check::Checksum, msg);
                }
            }
            // nothing tells an earlier writer's manifest (or another
            // writer's) from one whose seal was removed: said, not failed
            None => self.report.warnings.push(UNSEALED.into()),
        }
    }

    fn manifest_fields(&mut self) {
        let m = self.m;
        if let Ok(dir) = std::fs::canonicalize(self.dir) {
            let name_of = |p: Option<&Path>| p.and_then(|p| p.file_name()).map(|s| s.to_string_lossy().into_owned());
            if name_of(Some(&dir)).as_deref() != Some(m.dataset.version.as_str()) {
                self.manifest_finding("dataset.version", Check::Manifest, "differs from the version directory's name");
            }
            if name_of(dir.parent()).as_deref() != Some(m.dataset.name.as_str()) {
                self.manifest_finding("dataset.name", Check::Manifest, "differs from the parent directory's name");
            }
        }
        for (i, pair) in m.files.windows(2).enumerate() {
            if pair[0].path >= pair[1].path {
                let what = if pair[0].path == pair[1].path { "listed twice" } else { "out of order" };
                let msg = format!("{} {what}: files must be sorted by path", pair[1].path);
                self.manifest_finding(format!("files[{}]", i + 1), Check::Manifest, msg);
            }
        }
        let mut encodings = [IdEncoding::String; 6];
        let mut valid = true;
        for space in IdSpace::ALL {
            match m.id_encoding.get(space.name()).map(String::as_str) {
                Some("uuid16") => encodings[space as usize] = IdEncoding::Uuid16,
                Some("string") => {}
                other => {
                    valid = false;
                    let msg = format!("{other:?}, must be \"uuid16\" or \"string\"");
                    self.manifest_finding(format!("id_encoding.{}", space.name()), Check::Manifest, msg);
                }
            }
        }
        for key in m.id_encoding.keys().filter(|k| !IdSpace::ALL.iter().any(|s| s.name() == k.as_str())) {
            self.manifest_finding(format!("id_encoding.{key}"), Check::Manifest, "not an id space of the format");
        }
        if valid {
            self.ids = Some(IdEncodings(encodings));
        } else {
            self.report
                .skipped
                .push("schema checks: id_encoding is invalid, so the expected schemas are unknown".into());
        }
        // the rules of options a user gives: what the writer commits, verify accepts
        match m.writer.options() {
            Ok(_) => {}
            Err(Error::InvalidOption { option, reason }) => {
                self.manifest_finding(format!("writer.{option}"), Check::Manifest, reason);
            }
            Err(e) => self.manifest_finding("writer", Check::Manifest, e.to_string()),
        }
        let chunk = m.writer.chunk_max_bytes;
        self.chunk_values = (chunk > 0 && chunk.is_multiple_of(4)).then_some(chunk / 4);
        for s in &m.sources {
            saw(&mut self.seen, IdSpace::Source, &s.source_id);
        }
    }

    /// Listing, sizes and checksums; returns the present files of the format.
    fn files(&mut self) -> Vec<(String, Kind)> {
        self.report.files_checked += 1; // manifest.json, read by verify_local
        let mut present = Vec::new();
        for (i, entry) in self.m.files.iter().enumerate() {
            let rel = entry.path.as_str();
            let location = format!("manifest files[{i}]");
            if let Some(problem) = path_problem(rel) {
                let msg = format!(
                    "path {problem}: not a file inside the version (docs/format.md \"Paths inside a version\")"
                );
                self.report.push(rel, location, Check::Listing, msg);
                continue;
            }
            if rel == MANIFEST {
                self.report.push(rel, location, Check::Listing, "manifest.json lists itself, not a data file");
                continue;
            }
            self.listed.insert(rel.to_string());
            let kind = kind_of(rel);
            if kind.is_none() {
                self.report.push(rel, &location, Check::Listing, "not a file of the format (FORMAT-BRIEF §1)");
            }
            let mut file = match open_in(self.handle, rel) {
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    self.report.push(rel, location, Check::Listing, "listed in manifest.json but missing");
                    continue;
                }
                Err(Error::Corrupt { reason, .. }) => {
                    self.report.push(rel, location, Check::Listing, reason);
                    continue;
                }
                Err(e) => {
                    self.report.push(rel, location, Check::Listing, format!("cannot open: {}", source_of(&e)));
                    continue;
                }
                Ok(file) => file,
            };
            match file.metadata() {
                Ok(md) if md.len() != entry.bytes => {
                    let msg = format!("{} bytes on disk, manifest.json says {}", md.len(), entry.bytes);
                    self.report.push(rel, "file", Check::Size, msg);
                }
                Ok(_) => {}
                Err(e) => self.report.push(rel, location, Check::Listing, format!("cannot stat: {e}")),
            }
            let mut h = Sha256::new();
            match std::io::copy(&mut file, &mut h).map(|_| hex::encode(h.finalize())) {
                Ok(sha) if sha != entry.sha256 => {
                    let msg = format!("sha256 {sha}, manifest.json says {}", entry.sha256);
                    self.report.push(rel, "file", Check::Checksum, msg);
                }
                Ok(_) => {}
                Err(e) => self.report.push(rel, "file", Check::Checksum, format!("unreadable: {e}")),
            }
            self.report.files_checked += 1;
            present.extend(kind.map(|k| (rel.to_string(), k)));
        }
        for required in [INDEX, SAMPLES, ANNOTATIONS] {
            if !self.listed.contains(required) {
                self.report.push(
                    required,
                    "manifest files",
                    Check::Listing,
                    "required file not listed in manifest.json",
                );
            }
        }
        let (on_disk, errors) = walk_in(self.handle);
        for (dir, e) in errors {
            self.report.push(&dir, "directory", Check::Listing, format!("cannot list: {e}"));
        }
        for Entry { rel, symlink, .. } in on_disk.iter().filter(|e| !self.listed.contains(e.rel.as_str())) {
            match (*symlink, rel.as_str()) {
                (true, _) => self.report.push(rel, "file", Check::Listing, SYMLINK),
                (false, MANIFEST) => {}
                (false, _) => self.report.push(rel, "file", Check::Listing, "on disk but not listed in manifest.json"),
            }
        }
        present
    }

    fn expected_schema(&self, kind: &Kind) -> Option<FileSchema> {
        let ids = self.ids?;
        match kind {
            Kind::Index => tables::index_schema(ids),
            Kind::Samples => tables::samples_schema(ids),
            Kind::Annotations => tables::annotations_schema(ids),
            Kind::Shard(_) => tables::shard_schema(ids),
            Kind::Task(_) => tables::tasks_schema(ids),
        }
        .ok()
    }

    /// Footer, schema, page index and every page of one Parquet file.
    fn parquet(&mut self, rel: String, kind: Kind) {
        let path = self.dir.join(&rel);
        let file = match open_in(self.handle, &rel) {
            Ok(f) => f,
            Err(e) => {
                self.report.push(&rel, "file", Check::Footer, format!("cannot open: {}", source_of(&e)));
                return;
            }
        };
        let file_len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut magic = [0u8; 4];
        if (&file).read_exact(&mut magic).is_err() || &magic != b"PAR1" {
            self.report.push(&rel, "byte 0", Check::Footer, "the file does not start with the Parquet magic PAR1");
        }
        let meta = match guard(|| ParquetMetaDataReader::new().parse_and_finish(&file).map_err(|e| e.to_string())) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                self.report.push(&rel, "footer", Check::Footer, format!("unreadable: {e}"));
                return;
            }
        };
        let expected = self.expected_schema(&kind);
        let schema_ok = match &expected {
            Some(s) => {
                let actual = meta.file_metadata().schema();
                let mut diffs = Vec::new();
                schema_diffs("", actual, s.descr.root_schema(), &mut diffs);
                let current = diffs.is_empty();
                let earlier = s.earlier().is_ok_and(|e| {
                    let mut d = Vec::new();
                    schema_diffs("", actual, e.descr.root_schema(), &mut d);
                    d.is_empty()
                });
                match (current, earlier) {
                    (false, false) => {
                        for (column, msg) in &diffs {
                            self.report.push(&rel, format!("column {column}"), Check::Schema, msg.as_str());
                        }
                    }
                    (true, true) => {}
                    (true, false) => self.column_types(&rel, ColumnTypes::Current),
                    (false, true) => self.column_types(&rel, ColumnTypes::Earlier),
                }
                current || earlier
            }
            None => false,
        };
        let pins = expected.filter(|_| schema_ok).map(|s| s.pins);
        let page_index = match guard(|| {
            ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Optional)
                .parse_and_finish(&file)
                .map_err(|e| e.to_string())
        }) {
            Ok(m) => Some(m),
            Err(e) => {
                self.report.push(&rel, "page index", Check::PageIndex, format!("unreadable: {e}"));
                None
            }
        };
        let mut bad_row_groups = BTreeSet::new();
        for rg in 0..meta.num_row_groups() {
            for c in 0..meta.row_group(rg).num_columns() {
                let pin = pins.as_ref().and_then(|p| p.get(c).copied());
                if !self.column_chunk(&rel, &file, file_len, &meta, (rg, c), pin, page_index.as_ref()) {
                    bad_row_groups.insert(rg);
                }
            }
        }
        self.files.push(PqFile { rel, path, file, kind, meta, schema_ok, bad_row_groups });
    }

    /// Records that `rel` uses `types` (its schema matches only that form);
    /// a version's files all use one form, so a second form is a finding.
    fn column_types(&mut self, rel: &str, types: ColumnTypes) {
        match &self.column_types {
            None => self.column_types = Some((types, rel.to_string())),
            Some((first, by)) if *first != types => {
                let msg = format!(
                    "has the {} column types, {by} the {} ones: a version uses one form (docs/format.md, \"Column types\")",
                    types.describe(),
                    first.describe()
                );
                self.report.push(rel, "schema", Check::Schema, msg);
            }
            Some(_) => {}
        }
    }

    /// Checks one column chunk's metadata and walks its pages; false when its
    /// pages are broken, so the reader must not be run on its row group.
    #[allow(clippy::too_many_arguments)]
    fn column_chunk(
        &mut self,
        rel: &str,
        file: &File,
        file_len: u64,
        meta: &ParquetMetaData,
        (rg, c): (usize, usize),
        pin: Option<Pin>,
        page_index: Option<&ParquetMetaData>,
    ) -> bool {
        let rows = meta.row_group(rg).num_rows();
        let col = meta.row_group(rg).column(c);
        let name = col.column_path().string();
        let at = format!("row group {rg}, column {name}");
        let report = &mut self.report;
        if !matches!(col.compression(), Compression::ZSTD(_)) {
            report.push(rel, &at, Check::Encoding, format!("compression {}, the format pins ZSTD", col.compression()));
        }
        if rows > 0 {
            for (missing, what) in [
                (col.statistics().is_none(), "no column statistics"),
                (col.column_index_offset().is_none(), "no column index"),
                (col.offset_index_offset().is_none(), "no offset index"),
            ] {
                if missing {
                    report.push(rel, &at, Check::PageIndex, what);
                }
            }
        }
        let start = col.dictionary_page_offset().filter(|&o| o > 0).unwrap_or(col.data_page_offset());
        let len = col.compressed_size();
        // column data lies between the leading magic and the footer's length and magic
        let (Ok(start), Ok(len)) = (u64::try_from(start), u64::try_from(len)) else {
            report.push(rel, &at, Check::PageHeader, format!("negative offset {start} or length {len} in the footer"));
            return false;
        };
        if start < 4 || start.saturating_add(len) > file_len.saturating_sub(8) {
            let msg = format!("column chunk [{start}, {}) lies outside the file's data", start.saturating_add(len));
            report.push(rel, &at, Check::PageHeader, msg);
            return false;
        }
        let mut reader = file;
        if let Err(e) = reader.seek(SeekFrom::Start(start)) {
            report.push(rel, &at, Check::PageHeader, format!("cannot seek: {e}"));
            return false;
        }
        let (mut ok, mut walked) = (true, true);
        let (mut values, mut dictionary_pages) = (0i64, 0usize);
        let mut encodings: Vec<Encoding> = Vec::new();
        let mut data_pages: Vec<(u64, u64)> = Vec::new();
        for (i, page) in chunk_pages(reader.take(len), start, len).enumerate() {
            let page_at = format!("{at}, page {i}");
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    report.push(rel, page_at, Check::PageHeader, e.to_string());
                    (ok, walked) = (false, false);
                    break;
                }
            };
            report.pages_checked += 1;
            match page.header.crc {
                None => report.push(rel, &page_at, Check::PageCrc, "the page carries no CRC-32"),
                Some(crc) if crc as u32 != page.body_crc32 => {
                    let msg = format!(
                        "CRC-32 {:08x} in the header, {:08x} over the page as stored (byte {})",
                        crc as u32,
                        page.body_crc32,
                        page.body_offset()
                    );
                    report.push(rel, &page_at, Check::PageCrc, msg);
                    ok = false;
                }
                Some(_) => {}
            }
            match page.header.kind {
                PageKind::Dictionary { .. } => {
                    if i > 0 {
                        report.push(
                            rel,
                            &page_at,
                            Check::PageHeader,
                            "a dictionary page that is not the chunk's first",
                        );
                        ok = false;
                    }
                    dictionary_pages += 1;
                }
                PageKind::Data { num_values, encoding, .. } | PageKind::DataV2 { num_values, encoding, .. } => {
                    values += i64::from(num_values);
                    if !encodings.contains(&encoding) {
                        encodings.push(encoding);
                    }
                    data_pages.push((page.offset, page.total_len()));
                }
                PageKind::Index => {
                    report.push(rel, &page_at, Check::PageHeader, "an index page inside a column chunk");
                    ok = false;
                }
            }
        }
        if !walked {
            return false;
        }
        if values != col.num_values() {
            let msg = format!("data pages hold {values} values, the footer says {}", col.num_values());
            report.push(rel, &at, Check::PageHeader, msg);
            ok = false;
        }
        if let Some(problem) =
            pin.filter(|_| col.num_values() > 0).and_then(|p| pin_problem(p, dictionary_pages > 0, &encodings))
        {
            report.push(rel, &at, Check::Encoding, problem);
        }
        if let Some(pi) = page_index.filter(|_| rows > 0 && col.offset_index_offset().is_some()) {
            match pi.page_index_for_row_group(rg).page_locations(c) {
                None => report.push(rel, &at, Check::PageIndex, "the offset index did not load"),
                Some(locations) => {
                    let listed: Vec<(u64, u64)> = locations
                        .iter()
                        .map(|l| {
                            (
                                u64::try_from(l.offset).unwrap_or(u64::MAX),
                                u64::try_from(l.compressed_page_size).unwrap_or(0),
                            )
                        })
                        .collect();
                    if listed != data_pages {
                        let msg = format!(
                            "the offset index lists pages (offset, size) {listed:?}, the chunk holds data pages {data_pages:?}"
                        );
                        report.push(rel, &at, Check::PageIndex, msg);
                    }
                }
            }
        }
        ok
    }

    /// Shard numbering and the row-group and shard size rules, from the footers.
    fn layout(&mut self) {
        let w = &self.m.writer;
        let shards: Vec<(u32, &PqFile)> = self
            .files
            .iter()
            .filter_map(|f| match f.kind {
                Kind::Shard(n) => Some((n, f)),
                _ => None,
            })
            .collect();
        let listed_shards = self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).count();
        for (i, rel) in self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).enumerate() {
            let want = shard_path(i as u32);
            if *rel != want {
                self.report.push(
                    rel,
                    "file name",
                    Check::Listing,
                    format!("shards are not numbered consecutively: expected {want}"),
                );
            }
        }
        for (n, f) in &shards {
            let Some(leaf) =
                f.meta.file_metadata().schema_descr().columns().iter().position(|c| c.path().string() == VALUES_LEAF)
            else {
                continue;
            };
            let last_shard = *n as usize + 1 == listed_shards;
            let mut total = 0u64;
            let groups = f.meta.num_row_groups();
            for rg in 0..groups {
                let values = u64::try_from(f.meta.row_group(rg).column(leaf).num_values()).unwrap_or(0);
                let bytes = values * 4;
                total += values;
                let at = format!("row group {rg}");
                if values >= 1 << 31 {
                    self.report.push(&f.rel, &at, Check::Chunking, format!("{values} values: 2^31 or more"));
                }
                if bytes > w.row_group_max_bytes {
                    let msg = format!("{bytes} value bytes, over writer.row_group_max_bytes {}", w.row_group_max_bytes);
                    self.report.push(&f.rel, &at, Check::Chunking, msg);
                }
                if rg + 1 < groups && bytes <= w.row_group_target_bytes {
                    let msg = format!(
                        "{bytes} value bytes, cut before passing writer.row_group_target_bytes {}",
                        w.row_group_target_bytes
                    );
                    self.report.push(&f.rel, &at, Check::Chunking, msg);
                }
            }
            if !last_shard && total * 4 <= w.shard_target_bytes {
                let msg = format!(
                    "closed at {} value bytes, before passing writer.shard_target_bytes {}",
                    total * 4,
                    w.shard_target_bytes
                );
                self.report.push(&f.rel, "file", Check::Chunking, msg);
            }
            if total * 4 > w.shard_max_bytes {
                let msg = format!("{} value bytes, over writer.shard_max_bytes {}", total * 4, w.shard_max_bytes);
                self.report.push(&f.rel, "file", Check::Chunking, msg);
            }
        }
    }

    /// The index in `files` of `rel` when its logical checks can run: its
    /// footer was read and its schema is the format's. Otherwise records in
    /// `skipped` that `what` cannot run (after decoding every page of a file
    /// whose only fault is its schema).
    fn usable(files: &[PqFile], report: &mut VerifyReport, rel: &str, what: &str) -> Option<usize> {
        let Some(i) = files.iter().position(|f| f.rel == rel) else {
            report.skipped.push(format!("{what}: {rel} is missing or its footer is unreadable"));
            return None;
        };
        if files[i].schema_ok {
            return Some(i);
        }
        scan(report, &files[i], TABLE_BATCH_ROWS, |_, _, _| Ok(()));
        report.skipped.push(format!("{what}: {rel} does not have the format's schema"));
        None
    }

    fn index(&mut self) -> IndexState {
        let mut st = IndexState::default();
        let Some(i) = Self::usable(&self.files, &mut self.report, INDEX, "index checks") else {
            return st;
        };
        // shard path -> (shard number, rows per row group), for pointer ranges
        let shards: HashMap<&str, (u32, Vec<i64>)> = self
            .files
            .iter()
            .filter_map(|f| match f.kind {
                Kind::Shard(n) => {
                    Some((f.rel.as_str(), (n, f.meta.row_groups().iter().map(|g| g.num_rows()).collect())))
                }
                _ => None,
            })
            .collect();
        let listed = &self.listed;
        let f = &self.files[i];
        let (seen, chunk_values) = (&mut self.seen, self.chunk_values);
        let mut prev: Option<(String, String, String, i32)> = None;
        let complete = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
            for (k, e) in reader::index_rows(&f.path, batch)?.into_iter().enumerate() {
                let row = pos.global + k as u64;
                let at = format!("row {row}");
                let id = e.meta.time_series_id.clone();
                let key = (e.meta.spec_type.clone(), e.meta.channel.clone(), id.clone(), e.chunk_idx);
                if let Some(p) = prev.as_ref().filter(|p| **p >= key) {
                    let msg = format!("{key:?} does not sort after the previous row's {p:?} (spec_type, channel, time_series_id, chunk_idx)");
                    report.push(INDEX, &at, Check::Order, msg);
                }
                prev = Some(key);
                saw(seen, IdSpace::TimeSeries, &id);
                let s = match st.series_no.get(&id) {
                    Some(&s) => {
                        if st.series[s as usize] != e.meta {
                            let msg = format!("series-level columns of {id} differ from its first chunk's row");
                            report.push(INDEX, &at, Check::Chunking, msg);
                        }
                        s
                    }
                    None => {
                        let m = &e.meta;
                        if !(m.sampling_rate_hz.is_finite() && m.sampling_rate_hz > 0.0) {
                            let msg =
                                format!("sampling_rate_hz of {id} must be finite and > 0, got {}", m.sampling_rate_hz);
                            report.push(INDEX, &at, Check::Values, msg);
                        }
                        if !m.t_start_s.is_finite() || m.t_end_s.is_some_and(|t| !t.is_finite()) {
                            report.push(
                                INDEX,
                                &at,
                                Check::Values,
                                format!("t_start_s or t_end_s of {id} is not finite"),
                            );
                        }
                        let s = st.series.len() as u32;
                        st.series_no.insert(id.clone(), s);
                        st.series.push(e.meta.clone());
                        st.progress.push(Progress::default());
                        s
                    }
                };
                let p = &mut st.progress[s as usize];
                if e.chunk_idx != p.next_chunk || e.value_offset != p.next_offset {
                    let msg = format!(
                        "{id} chunk {} at value_offset {}, expected chunk {} at {}",
                        e.chunk_idx, e.value_offset, p.next_chunk, p.next_offset
                    );
                    report.push(INDEX, &at, Check::Chunking, msg);
                }
                if let Some(cv) =
                    chunk_values.filter(|&cv| p.next_chunk > 0 && u64::try_from(p.last_n).ok() != Some(cv))
                {
                    let msg = format!(
                        "the chunk before chunk {} of {id} holds {} values; every chunk but a series' last holds {cv}",
                        e.chunk_idx, p.last_n
                    );
                    report.push(INDEX, &at, Check::Chunking, msg);
                }
                if e.n_values <= 0 {
                    report.push(
                        INDEX,
                        &at,
                        Check::Values,
                        format!("{id} chunk {}: n_values {}", e.chunk_idx, e.n_values),
                    );
                } else if let Some(cv) = chunk_values.filter(|&cv| e.n_values as u64 > cv) {
                    let msg = format!(
                        "{id} chunk {}: {} values, over chunk_max_bytes ({cv} values)",
                        e.chunk_idx, e.n_values
                    );
                    report.push(INDEX, &at, Check::Chunking, msg);
                }
                *p = Progress {
                    next_chunk: e.chunk_idx.saturating_add(1),
                    next_offset: e.value_offset.saturating_add(i64::from(e.n_values)),
                    last_n: e.n_values,
                };
                let chunk_no = st.chunks.len() as u32;
                match shards.get(e.shard_path.as_str()) {
                    Some((n, groups)) => {
                        let in_range = usize::try_from(e.row_group)
                            .ok()
                            .and_then(|g| groups.get(g))
                            .is_some_and(|&rows| e.row_offset >= 0 && i64::from(e.row_offset) < rows);
                        if !in_range {
                            let msg = format!(
                                "{id} chunk {} points at {} row group {} row {}, which does not exist",
                                e.chunk_idx, e.shard_path, e.row_group, e.row_offset
                            );
                            report.push(INDEX, &at, Check::Pointer, msg);
                        } else if st.by_target.insert((*n, e.row_group as u32, e.row_offset as u32), chunk_no).is_some()
                        {
                            let msg = format!(
                                "{id} chunk {} points at {} row group {} row {}, as an earlier index row does",
                                e.chunk_idx, e.shard_path, e.row_group, e.row_offset
                            );
                            report.push(INDEX, &at, Check::Pointer, msg);
                        }
                    }
                    // a listed shard whose footer is unreadable has its own finding
                    None if listed.contains(&e.shard_path)
                        && matches!(kind_of(&e.shard_path), Some(Kind::Shard(_))) => {}
                    None => {
                        let msg = format!(
                            "{id} chunk {} points at {}, not a shard of this version",
                            e.chunk_idx, e.shard_path
                        );
                        report.push(INDEX, &at, Check::Pointer, msg);
                    }
                }
                if e.n_values > 0 {
                    st.channels
                        .entry((e.meta.spec_type.clone(), e.meta.channel.clone()))
                        .or_default()
                        .merge(&partial_of(e.n_values, e.min, e.max, e.mean, e.std));
                    st.values += e.n_values as u64;
                }
                st.chunks.push(ChunkRec {
                    series: s,
                    chunk_idx: e.chunk_idx,
                    n_values: e.n_values,
                    min: e.min,
                    max: e.max,
                    mean: e.mean,
                    std: e.std,
                    row,
                });
            }
            Ok(())
        });
        st.complete = complete;
        st.referenced = vec![false; st.series.len()];
        if complete {
            for (meta, p) in st.series.iter().zip(&st.progress) {
                if let Some(end) = meta.t_end_s {
                    let expected = ((end - meta.t_start_s) * meta.sampling_rate_hz).round_ties_even();
                    if expected != p.next_offset as f64 {
                        let msg = format!(
                            "{} values, but round((t_end_s - t_start_s) * sampling_rate_hz) = {expected}",
                            p.next_offset
                        );
                        self.report.push(INDEX, format!("series {}", meta.time_series_id), Check::Values, msg);
                    }
                }
            }
        }
        st
    }

    fn shards(&mut self, st: &mut IndexState) -> ShardState {
        let batch_rows = self.chunk_values.map_or(1, |cv| (SHARD_BATCH_VALUES / cv.max(1) as usize).max(1));
        // a listed shard whose footer is unreadable has its own finding; its
        // values are unknown, so totals over the shards cannot be compared
        let listed = self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).count();
        let readable = self.files.iter().filter(|f| matches!(f.kind, Kind::Shard(_))).count();
        let mut out = ShardState { complete: listed == readable, values: 0 };
        let mut prev: Option<(String, String, String, i32)> = None;
        if !st.complete {
            self.report.skipped.push("shard rows without an index row: the index is unusable".into());
        }
        for f in &self.files {
            let Kind::Shard(n) = f.kind else { continue };
            if !f.schema_ok {
                scan(&mut self.report, f, batch_rows, |_, _, _| Ok(()));
                self.report
                    .skipped
                    .push(format!("pointer and statistics checks of {}: its schema is not the format's", f.rel));
                out.complete = false;
                continue;
            }
            let seen = &mut self.seen;
            let done = scan(&mut self.report, f, batch_rows, |report, pos, batch| {
                let p = f.path.as_path();
                let strs = |name: &str| reader::req(p, reader::strings(p, reader::col(p, batch, name)?)?, name);
                let (ids, spec, chan) = (strs("time_series_id")?, strs("spec_type")?, strs("channel")?);
                let idx = reader::i32s(p, batch, "chunk_idx")?;
                let (ranges, values) = reader::lists(p, batch, "values")?;
                let values = values
                    .as_primitive_opt::<Float32Type>()
                    .ok_or_else(|| Error::Corrupt { path: p.into(), reason: "values are not float32".into() })?;
                for k in 0..batch.num_rows() {
                    let row = pos.row_in_rg + k;
                    let at = format!("row group {}, row {row}", pos.rg);
                    let (id, chunk_idx) = (&ids[k], idx[k].unwrap_or(-1));
                    let key = (spec[k].clone(), chan[k].clone(), id.clone(), chunk_idx);
                    if let Some(prev) = prev.as_ref().filter(|prev| **prev >= key) {
                        let msg = format!("{key:?} does not sort after the previous row's {prev:?} (spec_type, channel, time_series_id, chunk_idx)");
                        report.push(&f.rel, &at, Check::Order, msg);
                    }
                    prev = Some(key);
                    saw(seen, IdSpace::TimeSeries, id);
                    let vals = ranges[k].clone().map_or(&[][..], |r| &values.values()[r]);
                    report.values_checked += vals.len() as u64;
                    out.values += vals.len() as u64;
                    let partial = Partial::of(vals);
                    if vals.is_empty() {
                        report.push(&f.rel, &at, Check::Values, format!("{id} chunk {chunk_idx} holds no values"));
                    } else if !partial.mean.is_finite() {
                        let i = vals.iter().position(|v| !v.is_finite()).unwrap_or(0);
                        let msg = format!("{id} chunk {chunk_idx}: value {i} is {}, not finite", vals[i]);
                        report.push(&f.rel, &at, Check::Values, msg);
                    }
                    let Some(&c) = st.by_target.get(&(n, pos.rg as u32, row as u32)) else {
                        if st.complete {
                            let msg = format!("{id} chunk {chunk_idx} is not pointed at by any row of {INDEX}");
                            report.push(&f.rel, &at, Check::Pointer, msg);
                        }
                        continue;
                    };
                    let ch = &st.chunks[c as usize];
                    let meta = &st.series[ch.series as usize];
                    let index_at = format!("row {}", ch.row);
                    if meta.time_series_id != *id || ch.chunk_idx != chunk_idx {
                        let msg = format!(
                            "{} chunk {} points at {} {at}, which holds {id} chunk {chunk_idx}",
                            meta.time_series_id, ch.chunk_idx, f.rel
                        );
                        report.push(INDEX, index_at, Check::Pointer, msg);
                        continue;
                    }
                    if meta.spec_type != spec[k] || meta.channel != chan[k] {
                        let msg = format!(
                            "{id}: spec_type/channel {}/{} in the index, {}/{} in {} {at}",
                            meta.spec_type, meta.channel, spec[k], chan[k], f.rel
                        );
                        report.push(INDEX, &index_at, Check::Pointer, msg);
                    }
                    if usize::try_from(ch.n_values).ok() != Some(vals.len()) {
                        let msg =
                            format!("{id} chunk {chunk_idx}: n_values {}, the chunk holds {}", ch.n_values, vals.len());
                        report.push(INDEX, &index_at, Check::Statistics, msg);
                    } else if !vals.is_empty() && partial.mean.is_finite() {
                        let stored = partial_of(ch.n_values, ch.min, ch.max, ch.mean, ch.std);
                        for (stat, s, v, ok) in [
                            ("min", stored.min, partial.min, stored.min == partial.min),
                            ("max", stored.max, partial.max, stored.max == partial.max),
                            ("mean", stored.mean, partial.mean, close(stored.mean, partial.mean)),
                            ("std", ch.std, partial.std(), close(ch.std, partial.std())),
                        ] {
                            if !ok {
                                let msg = format!("{id} chunk {chunk_idx}: {stat} {s}, the values give {v}");
                                report.push(INDEX, &index_at, Check::Statistics, msg);
                            }
                        }
                    }
                }
                Ok(())
            });
            out.complete &= done;
        }
        out
    }

    fn samples(&mut self, st: &mut IndexState) -> SampleState {
        let mut out = SampleState::default();
        let Some(i) = Self::usable(&self.files, &mut self.report, SAMPLES, "sample checks") else {
            return out;
        };
        let sources: HashSet<&str> = self.m.sources.iter().map(|s| s.source_id.as_str()).collect();
        let f = &self.files[i];
        let seen = &mut self.seen;
        let mut prev: Option<String> = None;
        let mut metadata_keys = BTreeSet::new();
        if !st.complete {
            self.report.skipped.push("sample -> series references: the index is unusable".into());
        }
        out.complete = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
            for (k, s) in reader::sample_rows(&f.path, batch)?.into_iter().enumerate() {
                let at = format!("row {}", pos.global + k as u64);
                let id = &s.sample_id;
                if let Some(p) = prev.as_ref().filter(|p| *p >= id) {
                    report.push(SAMPLES, &at, Check::Order, format!("sample_id {id} does not sort after {p}"));
                }
                saw(seen, IdSpace::Sample, id);
                saw(seen, IdSpace::Source, &s.source_id);
                if let Some(subject) = &s.subject_id {
                    saw(seen, IdSpace::Subject, subject);
                }
                if !sources.contains(s.source_id.as_str()) {
                    let msg = format!("sample {id}: source {} is not in manifest.json sources", s.source_id);
                    report.push(SAMPLES, &at, Check::Integrity, msg);
                }
                if s.series.is_empty() {
                    report.push(SAMPLES, &at, Check::Integrity, format!("sample {id} has no series"));
                }
                for r in &s.series {
                    saw(seen, IdSpace::TimeSeries, &r.time_series_id);
                    if !st.complete {
                        continue;
                    }
                    match st.series_no.get(&r.time_series_id) {
                        Some(&n) => st.referenced[n as usize] = true,
                        None => {
                            let msg =
                                format!("sample {id} references series {}, which is not in {INDEX}", r.time_series_id);
                            report.push(SAMPLES, &at, Check::Integrity, msg);
                        }
                    }
                }
                if let (Some(a), Some(b)) = (s.t_start_s, s.t_end_s) {
                    if !(a.is_finite() && b.is_finite() && a <= b) {
                        report.push(
                            SAMPLES,
                            &at,
                            Check::Values,
                            format!("sample {id}: window [{a}, {b}] is not ordered"),
                        );
                    }
                }
                metadata_keys.extend(s.metadata.into_keys());
                out.ids.insert(s.sample_id.clone());
                prev = Some(s.sample_id);
            }
            Ok(())
        });
        self.derived.sample_metadata = metadata_keys.into_iter().collect();
        if out.complete && st.complete {
            for (meta, _) in st.series.iter().zip(&st.referenced).filter(|(_, r)| !**r) {
                let at = format!("series {}", meta.time_series_id);
                self.report.push(INDEX, at, Check::Integrity, format!("referenced by no sample of {SAMPLES}"));
            }
        }
        out
    }

    fn annotations(&mut self, samples: &SampleState) -> AnnotationState {
        let mut out = AnnotationState::default();
        let Some(i) = Self::usable(&self.files, &mut self.report, ANNOTATIONS, "annotation checks") else {
            return out;
        };
        if !samples.complete {
            self.report.skipped.push("annotation -> sample references: samples.parquet is unusable".into());
        }
        let f = &self.files[i];
        let (seen, derived) = (&mut self.seen, &mut self.derived);
        let mut fingerprints: HashMap<String, [u8; 32]> = HashMap::new();
        let mut prev: Option<(String, String)> = None;
        out.complete = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
            for (k, (sample, a)) in reader::annotation_rows(&f.path, batch)?.into_iter().enumerate() {
                let at = format!("row {}", pos.global + k as u64);
                let key = (sample, a.annotation_id.clone());
                if let Some(p) = prev.as_ref().filter(|p| **p >= key) {
                    report.push(
                        ANNOTATIONS,
                        &at,
                        Check::Order,
                        format!("{key:?} does not sort after {p:?} (sample_id, annotation_id)"),
                    );
                }
                saw(seen, IdSpace::Sample, &key.0);
                saw(seen, IdSpace::Annotation, &key.1);
                if samples.complete && !samples.ids.contains(&key.0) {
                    let msg = format!("annotation {} is on sample {}, which is not in {SAMPLES}", key.1, key.0);
                    report.push(ANNOTATIONS, &at, Check::Integrity, msg);
                }
                // the fields of the annotation, not the sample it is attached to
                let fingerprint: [u8; 32] = Sha256::digest(format!("{a:?}")).into();
                match fingerprints.get(&a.annotation_id) {
                    Some(seen_before) if *seen_before != fingerprint => {
                        let msg = format!("annotation {} differs from its row for another sample", a.annotation_id);
                        report.push(ANNOTATIONS, &at, Check::SharedAnnotation, msg);
                    }
                    Some(_) => {}
                    None => {
                        fingerprints.insert(a.annotation_id.clone(), fingerprint);
                        derived.add_annotation(&a);
                        out.unique += 1;
                    }
                }
                prev = Some(key);
            }
            Ok(())
        });
        out
    }

    fn tasks(&mut self, samples: &SampleState) -> TaskState {
        let mut out = TaskState { complete: true, counts: BTreeMap::new() };
        let mut all_ids: HashSet<String> = HashSet::new();
        // (file, row, task id, from_task), resolved once every task id is known
        let mut from: Vec<(String, u64, String, String)> = Vec::new();
        let listed_tasks: Vec<String> =
            self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Task(_)))).cloned().collect();
        for rel in listed_tasks {
            let Some(Kind::Task(name)) = kind_of(&rel) else { continue };
            let Some(i) = Self::usable(&self.files, &mut self.report, &rel, "task checks") else {
                out.complete = false;
                continue;
            };
            let f = &self.files[i];
            let (seen, derived) = (&mut self.seen, &mut self.derived);
            let count = out.counts.entry(name.clone()).or_default();
            let mut prev: Option<String> = None;
            let done = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
                for (k, t) in reader::task_rows(&f.path, batch)?.into_iter().enumerate() {
                    let row = pos.global + k as u64;
                    let at = format!("row {row}");
                    let id = &t.task_id;
                    if let Some(p) = prev.as_ref().filter(|p| *p >= id) {
                        report.push(&f.rel, &at, Check::Order, format!("task_id {id} does not sort after {p}"));
                    }
                    if !all_ids.insert(id.clone()) && prev.as_ref() != Some(id) {
                        report.push(
                            &f.rel,
                            &at,
                            Check::Integrity,
                            format!("task_id {id} is used by an earlier task row too"),
                        );
                    }
                    saw(seen, IdSpace::Task, id);
                    for s in t.referenced_samples() {
                        saw(seen, IdSpace::Sample, s);
                        if samples.complete && !samples.ids.contains(s) {
                            report.push(
                                &f.rel,
                                &at,
                                Check::Integrity,
                                format!("task {id} references sample {s}, which is not in {SAMPLES}"),
                            );
                        }
                    }
                    if t.sample_ids.is_empty() {
                        report.push(&f.rel, &at, Check::Integrity, format!("task {id} has no sample_ids"));
                    }
                    if t.task_type == TaskType::Forecasting
                        && (t.target_sample_id.is_none() || t.context_sample_ids.as_ref().is_none_or(|c| c.is_empty()))
                    {
                        let msg = format!("forecasting task {id} lacks target_sample_id or context_sample_ids");
                        report.push(&f.rel, &at, Check::Integrity, msg);
                    }
                    if let Some(parent) = &t.from_task {
                        saw(seen, IdSpace::Task, parent);
                        from.push((f.rel.clone(), row, id.clone(), parent.clone()));
                    }
                    derived.add_task(&name, &t);
                    *count += 1;
                    prev = Some(t.task_id);
                }
                Ok(())
            });
            out.complete &= done;
        }
        if !samples.complete {
            self.report.skipped.push("task -> sample references: samples.parquet is unusable".into());
        }
        if out.complete {
            for (rel, row, id, parent) in from.iter().filter(|(.., parent)| !all_ids.contains(parent)) {
                let msg = format!("task {id}: from_task {parent} names no task of this version");
                self.report.push(rel, format!("row {row}"), Check::Integrity, msg);
            }
        } else {
            self.report.skipped.push("from_task references and task counts: a task file is unusable".into());
        }
        out
    }

    /// The manifest's counts, statistics, derived schema and id encodings
    /// against what the scans found, and per-file row counts against footers.
    fn totals(
        &mut self,
        index: &IndexState,
        shards: &ShardState,
        samples: &SampleState,
        annotations: &AnnotationState,
        tasks: &TaskState,
    ) {
        let m = self.m;
        let c = &m.counts;
        let count = |report: &mut VerifyReport, field: &str, manifest: u64, found: u64, source: &str| {
            if manifest != found {
                let msg = format!("{manifest}, but {found} found in {source}");
                report.push(MANIFEST, format!("counts.{field}"), Check::Counts, msg);
            }
        };
        let report = &mut self.report;
        if samples.complete {
            count(report, "samples", c.samples, samples.ids.len() as u64, SAMPLES);
        }
        if index.complete {
            count(report, "time_series", c.time_series, index.series.len() as u64, INDEX);
            count(report, "chunks", c.chunks, index.chunks.len() as u64, INDEX);
            count(report, "values", c.values, index.values, INDEX);
        }
        if shards.complete {
            count(report, "values", c.values, shards.values, "the shards");
        }
        if annotations.complete {
            count(report, "annotations", c.annotations, annotations.unique, ANNOTATIONS);
        }
        let listed_shards = self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).count();
        count(report, "shards", c.shards, listed_shards as u64, "the files list");
        let listed_tasks: BTreeSet<String> = self
            .listed
            .iter()
            .filter_map(|r| match kind_of(r) {
                Some(Kind::Task(name)) => Some(name),
                _ => None,
            })
            .collect();
        let counted: BTreeSet<String> = c.tasks.keys().cloned().collect();
        if counted != listed_tasks {
            let msg = format!("task names {counted:?}, the files list has task files for {listed_tasks:?}");
            report.push(MANIFEST, "counts.tasks", Check::Counts, msg);
        } else if tasks.complete && c.tasks != tasks.counts {
            let msg = format!("{:?}, the task files hold {:?}", c.tasks, tasks.counts);
            report.push(MANIFEST, "counts.tasks", Check::Counts, msg);
        }
        for f in &self.files {
            let rows = f.meta.file_metadata().num_rows();
            if let Some(entry) = m.files.iter().find(|e| e.path == f.rel) {
                if i64::try_from(entry.rows).ok() != Some(rows) {
                    let msg = format!("manifest.json files[] rows {}, the footer says {rows}", entry.rows);
                    report.push(&f.rel, "footer", Check::Counts, msg);
                }
            }
        }
        if index.complete {
            let derived: BTreeSet<(&str, &str)> =
                index.channels.keys().map(|(s, c)| (s.as_str(), c.as_str())).collect();
            let stated: BTreeSet<(&str, &str)> = m
                .statistics
                .iter()
                .flat_map(|(s, chans)| chans.keys().map(move |c| (s.as_str(), c.as_str())))
                .collect();
            for (spec, channel) in derived.symmetric_difference(&stated) {
                let msg = format!("{spec}/{channel} is in only one of manifest.json statistics and {INDEX}");
                report.push(MANIFEST, format!("statistics.{spec}.{channel}"), Check::Statistics, msg);
            }
            for ((spec, channel), p) in &index.channels {
                let Some(s) = m.statistics.get(spec).and_then(|x| x.get(channel)) else { continue };
                let ok = s.count == p.n
                    && s.min == p.min
                    && s.max == p.max
                    && close(s.mean, p.mean)
                    && close(s.std, p.std());
                if !ok {
                    let msg = format!("{s:?}, the chunk statistics merge to {:?}", p.to_stats());
                    report.push(MANIFEST, format!("statistics.{spec}.{channel}"), Check::Statistics, msg);
                }
            }
            for meta in &index.series {
                self.derived.add_series(meta);
            }
        }
        let d = &self.derived;
        let s = &m.schema;
        for (complete, block, same) in [
            (index.complete, "time_series", d.time_series == s.time_series),
            (annotations.complete, "annotations", d.annotations == s.annotations),
            (tasks.complete, "tasks", d.tasks == s.tasks),
            (samples.complete, "sample_metadata", d.sample_metadata == s.sample_metadata),
        ] {
            if complete && !same {
                let msg = "differs from what the stored entities give (FORMAT-BRIEF §4)";
                self.report.push(MANIFEST, format!("schema.{block}"), Check::Manifest, msg);
            }
        }
        let all = index.complete && shards.complete && samples.complete && annotations.complete && tasks.complete;
        let Some(ids) = self.ids.filter(|_| all) else {
            self.report.skipped.push("id_encoding against the stored ids: a file is unusable".into());
            return;
        };
        for space in IdSpace::ALL {
            let seen = self.seen[space as usize];
            let at = format!("id_encoding.{}", space.name());
            match ids.get(space) {
                IdEncoding::String if seen.any && seen.all_canonical => self.report.push(
                    MANIFEST,
                    at,
                    Check::Ids,
                    "\"string\", but every id of the space is a canonical UUID, so the format requires \"uuid16\"",
                ),
                IdEncoding::Uuid16 if !seen.any => self.report.push(
                    MANIFEST,
                    at,
                    Check::Ids,
                    "\"uuid16\", but the space holds no id, so it must be \"string\"",
                ),
                _ => {}
            }
        }
    }
}
