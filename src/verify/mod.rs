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

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::schema::types::Type;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::chunks::VALUES_LEAF;
use crate::dataset::{is_canonical_uuid, validate_name, SeriesMeta, TaskType};
use crate::encoding::{FileSchema, IdEncoding, Pin};
use crate::error::{Error, Result};
use crate::footer::{contain, count_problem, values_header_problem, CheckedPages};
use crate::layout::shard_path;
use crate::manifest::{self, Manifest, SchemaBlock};
use crate::stats::Partial;
use crate::storage::local::{open_in, walk_in, Entry, VersionDir, SYMLINK};
use crate::storage::version_path::path_problem;
use crate::storage::{check_interrupted, pause_point, LiveGuard, Location, CLAIM, MANIFEST};
use crate::tables::{self, IdEncodings, IdSpace};
use crate::thrift::{chunk_pages, PageKind};
use crate::{parquet_read, reader};

mod files;
mod pages;
mod pointers;
mod references;
mod report;
mod statistics;

use pages::ColumnTypes;
use pointers::{IndexState, ShardState};
use references::{AnnotationState, SampleState, TaskState};
pub use report::{Check, Finding, VerifyReport, UNSEALED};
use statistics::{close, partial_of};

/// Values decoded at once from a shard: a batch holds as many chunks as fit
/// (at least one), so memory does not grow with row groups or shards.
pub const SHARD_BATCH_VALUES: usize = 1 << 22;
/// Rows decoded at once from the index, samples, annotations and task files.
const TABLE_BATCH_ROWS: usize = 8192;

const INDEX: &str = "time_series_index.parquet";
const SAMPLES: &str = "samples.parquet";
const ANNOTATIONS: &str = "annotations.parquet";

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
    let bytes = reader::manifest_bytes(loc)?;
    if crate::storage::object::is_gc_fence(&bytes) {
        return Err(Error::NotAVersion {
            path: loc.to_path_buf(),
            reason: "its manifest.json is gc's fence: a dead writer's version gc cleared, not a version \
                     (a later `timef gc` run removes the fence)"
                .into(),
        });
    }
    // an unparsable manifest is a finding of the local checks, not an error here
    let listed: BTreeSet<String> =
        Manifest::parse(&bytes).map(|m| m.files.into_iter().map(|f| f.path).collect()).unwrap_or_default();
    let shown = loc.to_path_buf();
    let segment = |p: Option<&Path>| {
        p.and_then(|p| p.file_name()).map_or_else(|| "_".to_string(), |s| s.to_string_lossy().into_owned())
    };
    // listed before the copy exists: a Ctrl-C while a listing waits (on a
    // mute store, say) ends the process at once, with nothing to remove
    let (objects, unlistable) = loc.list_files()?;
    // counted live from before the copy, so that Ctrl-C stops the verify at
    // its next object, block or check and the copy is removed (it is the
    // version's size) instead of the process exiting at once; `tmp` is
    // dropped first
    let _live = LiveGuard::new();
    let tmp = tempfile::Builder::new()
        .prefix("timef-verify-")
        .tempdir()
        .map_err(|e| Error::io_temp(std::env::temp_dir(), e))?;
    // named like the original, so the name checks see the version's own names
    let copy = tmp.path().join(segment(shown.parent())).join(segment(Some(&shown)));
    // a claim beside a committed version is the commit's last step not yet
    // done (docs/format.md, "Storage backends and the commit"), not a stray file
    // objects a local copy cannot hold (a key that is also a "directory" of
    // other keys, a segment too long): findings, not a failed verify
    let mut uncopied: Vec<(String, String)> =
        unlistable.into_iter().map(|(level, why)| (level, format!("{why}: not checked"))).collect();
    // the files the manifest names first: an object in their way is the finding
    let (mut objects, others): (Vec<_>, Vec<_>) = objects
        .into_iter()
        .filter(|(rel, _)| rel != CLAIM)
        .partition(|(rel, _)| rel == MANIFEST || listed.contains(rel));
    objects.extend(others);
    let mut vanished = false;
    for (i, (rel, _)) in objects.into_iter().enumerate() {
        if i == 1 {
            pause_point("verify-copying");
        }
        check_interrupted(&shown)?;
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
            let streamed = loc.join(&rel).stream(&mut |block| {
                check_interrupted(&shown)?;
                std::io::Write::write_all(&mut out, block).map_err(|e| Error::io(&dst, e))
            });
            // a stop while it streamed (or waited for a block) names the version
            check_interrupted(&shown)?;
            match streamed {
                // the manifest gone since the listing: the version is (or its place)
                Err(e) if crate::storage::not_there(&e) && rel == MANIFEST => return Err(loc.no_manifest()),
                // a file gone since the listing: left out of the copy, so it is
                // the finding of a listed file that is missing, not a failed verify
                Err(e) if crate::storage::not_there(&e) => {
                    drop(out);
                    std::fs::remove_file(&dst).map_err(|e| Error::io(&dst, e))?;
                    vanished = true;
                    continue;
                }
                streamed => streamed?,
            };
        }
        std::io::Write::flush(&mut out).map_err(|e| Error::io(&dst, e))?;
    }
    pause_point("verify-copied");
    // files gone meanwhile, the version's place with them: missing, as at open
    if vanished {
        if let gone @ Error::Missing { .. } = loc.no_manifest() {
            return Err(gone);
        }
    }
    let report = verify_local(&copy);
    // a stop there names the version, not its copy
    check_interrupted(&shown)?;
    let mut report = report?;
    for (rel, why) in uncopied {
        report.push(&rel, "object", Check::Listing, why);
    }
    // the copy goes before the last look: a Ctrl-C while it is removed
    // stops the verify too, and no report follows its notice
    pause_point("verify-checked");
    drop(tmp);
    check_interrupted(&shown)?;
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
    // between files and check families: a Ctrl-C of a verify that holds a
    // temporary copy stops here (a local one's exits at once)
    let stop = || check_interrupted(version_dir);
    for (rel, kind) in v.files() {
        stop()?;
        v.parquet(rel, kind);
    }
    stop()?;
    v.layout();
    let mut index = v.index();
    stop()?;
    let shards = v.shards(&mut index);
    stop()?;
    let samples = v.samples(&mut index);
    stop()?;
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
        // a Ctrl-C of a verify holding a copy stops it between row groups
        // (verify_local then returns the interrupt)
        if crate::storage::interrupted() {
            return false;
        }
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
}
