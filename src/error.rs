//! The crate's one public error type.
//!
//! Modelled on `object_store::Error` and lance's `Error`: one `#[non_exhaustive]`
//! enum whose variants carry the path, id or option at fault and the source error.
//! Module-private detail (parser positions, parquet errors) converts into it.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One reason a copy-on-write edit is refused ([`Error::Edit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditBlocker {
    /// The entity at fault: a sample, series, annotation, task or source id,
    /// or a channel name.
    pub id: String,
    /// The field at fault: the edit's argument (`remove_sample_ids`, ...) for
    /// an id it names that does not exist, else the entity's field whose
    /// reference would be lost or whose content differs.
    pub field: &'static str,
    /// One line naming the entity, e.g. `task train/t1: its last sample would be removed`.
    pub reason: String,
}

/// How many of an [`Error::Edit`]'s blockers its message shows, one line
/// each joined by `; `; the rest are counted (`… and 230 more`).
pub const BLOCKERS_SHOWN: usize = 10;

fn refusal(blockers: &[EditBlocker]) -> String {
    let shown: Vec<&str> = blockers.iter().take(BLOCKERS_SHOWN).map(|b| b.reason.as_str()).collect();
    match blockers.len().saturating_sub(BLOCKERS_SHOWN) {
        0 => shown.join("; "),
        more => format!("{}; … and {more} more", shown.join("; ")),
    }
}

/// Every failure the library reports.
///
/// Variants separate the cases a caller handles differently: a version that
/// already exists, a directory that is not a version, a version whose bytes are
/// corrupt, input that is invalid, and I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A committed version (its `manifest.json`) already exists at `path`
    /// (FORMAT-BRIEF §1: checked before any I/O; the publish rename never replaces it).
    #[error("version already exists: {}", path.display())]
    AlreadyExists {
        /// The version directory.
        path: PathBuf,
    },

    /// `path` is not a committed TimeF version (no `manifest.json`, or a manifest
    /// of another `format` / `format_version`).
    #[error("not a TimeF version: {}: {reason}", path.display())]
    NotAVersion {
        /// The directory that was opened.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },

    /// Stored bytes do not match what the manifest or the format promises.
    #[error("corrupt version: {}: {reason}", path.display())]
    Corrupt {
        /// The file at fault.
        path: PathBuf,
        /// What was found.
        reason: String,
    },

    /// A dataset entity breaks a rule of the format; `id` names the entity
    /// (sample, series, annotation, task, source id, or a path component) and
    /// `field` the offending field.
    #[error("invalid {field} of {id}: {reason}")]
    Validation {
        /// The entity at fault.
        id: String,
        /// The field at fault.
        field: &'static str,
        /// The rule it breaks.
        reason: String,
    },

    /// An option value is out of range (`option` is its builder or CLI name).
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option's name.
        option: &'static str,
        /// The rule it breaks.
        reason: String,
    },

    /// An input file of a connector is malformed. `line` is 1-based when known.
    #[error("{}{}: {reason}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    InvalidInput {
        /// The input file.
        path: PathBuf,
        /// 1-based line number, when the format is line oriented.
        line: Option<usize>,
        /// What is wrong, naming the case or series.
        reason: String,
    },

    /// A series loader failed; `series_id` names the series.
    #[error("loading series {series_id}: {source}")]
    Loader {
        /// The series whose loader failed.
        series_id: String,
        /// The loader's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A progress callback ([`crate::writer::TryProgressFn`]) stopped the write,
    /// e.g. on an interrupt; `source` is its error. Nothing was left on disk.
    #[error("write aborted by the progress callback: {source}")]
    Aborted {
        /// The callback's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A copy-on-write edit cannot be applied (unknown ids, required
    /// references that would be lost without `cascade`, an added id that
    /// exists with other content, naming the fields that differ). Every
    /// blocker is in `blockers`, sorted as found (`docs/format.md` §7); the
    /// message shows the first [`BLOCKERS_SHOWN`] and counts the rest.
    #[error("edit refused: {}", refusal(blockers))]
    Edit {
        /// One per blocking (entity, field); never empty.
        blockers: Vec<EditBlocker>,
    },

    /// A pinned encoding or property did not take in a written file
    /// (the read-back self-check, FORMAT-BRIEF §3).
    #[error("self-check of {}: column {column}: {reason}", path.display())]
    SelfCheck {
        /// The written file (relative to the version directory).
        path: PathBuf,
        /// The column's leaf path.
        column: String,
        /// The encodings or properties seen, and what was expected.
        reason: String,
    },

    /// Memory for `what` could not be had: `bytes` more were asked of the
    /// allocator and refused (a batch of windows of a very long context under
    /// an address-space or container limit). Nothing was written; Python
    /// raises `MemoryError`. The CLI exits 3.
    #[error("cannot allocate {bytes} bytes for {what}")]
    OutOfMemory {
        /// What needed the memory (the window, its lengths).
        what: String,
        /// The bytes asked for.
        bytes: u64,
    },

    /// An operating-system I/O error on `path`.
    #[error("I/O on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// An object store refused or failed a request on `url` (denied access, a
    /// network failure, a timeout; a missing bucket is [`Error::Missing`]).
    /// `url` never carries credentials; an XML error body shows as its code and
    /// message. The CLI exits 3.
    #[error("object store {url}: {}", condensed(source))]
    ObjectStore {
        /// The object's or prefix's URL.
        url: String,
        /// The `object_store` error.
        #[source]
        source: Box<object_store::Error>,
    },

    /// A root or version given as a URL that cannot be used: it does not parse,
    /// its scheme is not supported by this build, or a storage option is unknown
    /// or malformed (named, its value never shown). The CLI exits 2.
    #[error("invalid URL {url}: {reason}")]
    InvalidUrl {
        /// The URL without user info, query or fragment.
        url: String,
        /// What is wrong.
        reason: String,
    },

    /// Nothing is at `path`: no such local directory or file, no such bucket or
    /// container, or no object under the prefix (docs/format.md "Exit codes":
    /// one rule for every backend). `what` says which. The CLI exits 2.
    #[error("not found: {}: {what}", path.display())]
    Missing {
        /// The path or URL that was named.
        path: PathBuf,
        /// What does not exist (e.g. "bucket b does not exist").
        what: String,
    },

    /// A storage option key the store at `url` does not take; `close` lists
    /// the keys it takes that are closest to it. The CLI exits 2.
    #[error(
        "unknown storage option `{key}` for {url}{}",
        if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")) }
    )]
    UnknownStorageOption {
        /// The store's URL, without credentials.
        url: String,
        /// The key as given.
        key: String,
        /// The store's keys closest to it, closest first.
        close: Vec<String>,
    },

    /// The object store at `url` lacks what a safe commit needs (`lacks`
    /// says what, e.g. conditional writes, and what was left as it was):
    /// found by a writer before any data file was written, or by `gc` before
    /// its fence and any delete (docs/format.md §1 "Storage backends and the
    /// commit"). The CLI exits 3.
    #[error("object store {url} cannot take a TimeF write: it lacks {lacks}")]
    UnsafeStore {
        /// The store's URL (`s3://bucket`), without credentials.
        url: String,
        /// What it lacks and how that was found.
        lacks: String,
    },

    /// The parquet crate failed while encoding or decoding `path`.
    #[error("parquet {}: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The parquet error.
        #[source]
        source: parquet::errors::ParquetError,
    },

    /// A distributed write's part, part record or task is refused (wrong hash,
    /// missing or duplicate shard, index rows not matching the plan, a series
    /// not in the part); `write_id` names the write, `part` and `shard` the
    /// part and shard when known. Nothing is published.
    #[error(
        "distributed write {write_id}{}{}: {problem}",
        part.map(|p| format!(", part {p}")).unwrap_or_default(),
        shard.map(|s| format!(", shard {s}")).unwrap_or_default()
    )]
    Part {
        /// The write id (the plan's).
        write_id: String,
        /// The part, when known.
        part: Option<u32>,
        /// The shard, when known.
        shard: Option<u32>,
        /// What is wrong.
        problem: PartProblem,
    },

    /// The arrow crate failed on `path`.
    #[error("arrow {}: {source}", path.display())]
    Arrow {
        /// The file.
        path: PathBuf,
        /// The arrow error.
        #[source]
        source: arrow_schema::ArrowError,
    },
}

/// What is wrong with a part of a distributed write (see [`Error::Part`];
/// `docs/format.md` §1 "Distributed writes").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartProblem {
    /// A planned shard is in no part record.
    #[error("shard missing: no part record lists it")]
    MissingShard,
    /// A shard is listed by two records, or twice by one.
    #[error("shard listed twice")]
    DuplicateShard,
    /// A record lists a file that is not a planned shard.
    #[error("not a planned shard: {0}")]
    UnknownShard(String),
    /// The staged shard's sha256 is not the record's.
    #[error("sha256 mismatch: record says {expected}, staged file has {actual}")]
    HashMismatch {
        /// The record's sha256.
        expected: String,
        /// The staged file's sha256.
        actual: String,
    },
    /// The staged shard's size in bytes is not the record's.
    #[error("size mismatch: record says {expected} bytes, staged file has {actual}")]
    SizeMismatch {
        /// The record's size.
        expected: u64,
        /// The staged file's size.
        actual: u64,
    },
    /// The record's index rows do not match the plan's layout.
    #[error("index rows do not match the plan: {0}")]
    IndexMismatch(String),
    /// A part was given a series its shards do not hold.
    #[error("series {0} is not in this part's shards")]
    UnplannedSeries(String),
    /// A part was not given a series its shards hold.
    #[error("series {0} was not given to this part")]
    MissingSeries(String),
    /// The record or task belongs to another write, or names an unknown part.
    #[error("{0}")]
    WrongWrite(String),
    /// The task contradicts the layout its options give (a tampered task).
    #[error("task does not match its layout: {0}")]
    PlanMismatch(String),
    /// A file under the staging is not part of the version.
    #[error("unexpected file in staging: {0}")]
    StrayFile(String),
    /// A record's chunk statistics are not those of the values in the staged shard.
    #[error("{time_series_id} chunk {chunk_idx}: {field} is {recorded} in the record, {staged} in the staged shard")]
    StatisticsMismatch {
        /// The chunk's series.
        time_series_id: String,
        /// The chunk.
        chunk_idx: u32,
        /// The statistic: `n`, `min`, `max`, `mean` or `m2`.
        field: &'static str,
        /// The record's value.
        recorded: String,
        /// The value computed from the staged shard.
        staged: String,
    },
    /// A task's staging is not its write's `<dataset>/.tmp-<version>-<write id>`
    /// (a tampered task: it could point at a committed version or another
    /// write's staging).
    #[error("{0}")]
    WrongStaging(String),
}

impl Error {
    /// The failure of series `series_id`'s loader: [`Error::Loader`], unless
    /// the loader failed with a `timef` error (a series read from a version:
    /// [`crate::Version::to_dataset`]), which is returned as it is, so a
    /// failed read of the base is I/O, a damaged base is corrupt, and so on,
    /// as for any read of that version.
    pub(crate) fn loading(series_id: impl Into<String>, source: Box<dyn std::error::Error + Send + Sync>) -> Self {
        match source.downcast::<Error>() {
            Ok(read) => *read,
            Err(source) => Error::Loader { series_id: series_id.into(), source },
        }
    }

    /// An object store's answer that the object is not there (a `NotFound`
    /// of [`Error::ObjectStore`]): Python raises `FileNotFoundError` for it,
    /// as for a local file.
    pub fn is_object_not_found(&self) -> bool {
        matches!(self, Error::ObjectStore { source, .. } if matches!(**source, object_store::Error::NotFound { .. }))
    }

    /// Builds an [`Error::Validation`].
    pub fn validation(id: impl Into<String>, field: &'static str, reason: impl Into<String>) -> Self {
        Error::Validation { id: id.into(), field, reason: reason.into() }
    }

    /// Builds an [`Error::InvalidInput`].
    pub fn input(path: impl Into<PathBuf>, line: Option<usize>, reason: impl Into<String>) -> Self {
        Error::InvalidInput { path: path.into(), line, reason: reason.into() }
    }

    /// Builds an [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// An [`Error::Io`] on `path` from the `tempfile` crate creating a
    /// temporary file or directory in it (or beside it). Its error reads
    /// `<OS error> at path "<temporary name>"` (tempfile's private
    /// `PathError`): the OS error is kept, the random name the user never
    /// sees is left out.
    pub(crate) fn io_temp(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let text = source.to_string();
        let os = text
            .split_once(" at path ")
            .and_then(|(os, _)| os.strip_suffix(')')?.rsplit_once(" (os error "))
            .and_then(|(_, n)| n.parse::<i32>().ok())
            .filter(|&n| n > 0);
        let source = match (source.raw_os_error(), os) {
            (None, Some(errno)) => std::io::Error::from_raw_os_error(errno),
            _ => source,
        };
        Error::io(path, source)
    }

    /// Builds an [`Error::Parquet`].
    pub fn parquet(path: impl Into<PathBuf>, source: parquet::errors::ParquetError) -> Self {
        Error::Parquet { path: path.into(), source }
    }

    /// True for errors caused by what the user supplied (input files, dataset
    /// content, options) rather than by the machine; the CLI maps these to exit code 2.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::AlreadyExists { .. }
                | Error::NotAVersion { .. }
                | Error::Corrupt { .. }
                | Error::Validation { .. }
                | Error::InvalidOption { .. }
                | Error::InvalidInput { .. }
                | Error::Loader { .. }
                | Error::Edit { .. }
                | Error::InvalidUrl { .. }
                | Error::UnknownStorageOption { .. }
                | Error::Missing { .. }
                | Error::Part { .. }
        )
    }
}

/// An object store's error as one line: an XML error body the server sent
/// (S3, GCS, Azure) is condensed to its code and message, and the causes the
/// message leaves out are appended (the HTTP client's "error sending request"
/// says why only in its source: "operation timed out", "connection refused").
fn condensed(e: &object_store::Error) -> String {
    let mut text = condense_xml(&e.to_string());
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let line = condense_xml(&c.to_string());
        if !text.contains(&line) {
            text = format!("{text}: {line}");
        }
        cause = c.source();
    }
    text
}

/// The code and message of an XML error body in `text` (S3, GCS's XML API,
/// Azure: `<Error><Code>..</Code><Message>..</Message>..</Error>`).
pub(crate) fn xml_error(text: &str) -> Option<(String, String)> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&format!("</{name}>"))? + start;
        Some(text[start..end].lines().next().unwrap_or("").trim().to_string())
    };
    Some((tag("Code")?, tag("Message").unwrap_or_default()))
}

/// `text` with an XML error body replaced by `<code>: <message>`.
fn condense_xml(text: &str) -> String {
    let Some((code, message)) = xml_error(text) else { return text.to_string() };
    let start = text.find("<?xml").or_else(|| text.find("<Error")).unwrap_or(text.len());
    let head = text[..start].trim_end().trim_end_matches(':');
    let body = if message.is_empty() { code } else { format!("{code}: {message}") };
    format!("{head}: {body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_error_bodies_are_condensed_to_code_and_message() {
        let raw = "Object at location root/ds/v1/manifest.json not found: Error performing GET \
                   http://127.0.0.1:1/b/root in 2ms - Server returned non-2xx status code: 404 Not Found: \
                   <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code><Message>The \
                   specified bucket does not exist</Message><BucketName>b</BucketName></Error>";
        assert_eq!(
            condense_xml(raw),
            "Object at location root/ds/v1/manifest.json not found: Error performing GET http://127.0.0.1:1/b/root \
             in 2ms - Server returned non-2xx status code: 404 Not Found: NoSuchBucket: The specified bucket does \
             not exist"
        );
        // Azure: the message's first line only
        let azure = "403 Forbidden: <?xml version=\"1.0\"?><Error><Code>AuthorizationFailure</Code><Message>This \
                     request is not authorized.\nRequestId:1\nTime:2026</Message></Error>";
        assert_eq!(condense_xml(azure), "403 Forbidden: AuthorizationFailure: This request is not authorized.");
        assert_eq!(condense_xml("no body here"), "no body here");
    }

    #[test]
    fn a_temporary_name_is_left_out_of_the_error_its_creation_gives() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let file = tempfile::Builder::new().prefix(".x-").tempfile_in(&missing).unwrap_err();
        assert!(file.to_string().contains(".x-"), "{file}");
        assert_eq!(
            Error::io_temp(missing.join("out.arrow"), file).to_string(),
            format!("I/O on {}: No such file or directory (os error 2)", missing.join("out.arrow").display())
        );
        let folder = tempfile::Builder::new().prefix(".x-").tempdir_in(&missing).unwrap_err();
        let err = Error::io_temp(&missing, folder);
        assert_eq!(err.to_string(), format!("I/O on {}: No such file or directory (os error 2)", missing.display()));
        assert!(matches!(err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound));
        // an error without an OS error is kept as it is, whatever its path says
        let other = std::io::Error::other("too many temporary files exist at path \"/x (os error 13)\"");
        let kept = Error::io_temp("d", other);
        assert_eq!(kept.to_string(), "I/O on d: too many temporary files exist at path \"/x (os error 13)\"");
        assert!(matches!(kept, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::Other));
    }
}
