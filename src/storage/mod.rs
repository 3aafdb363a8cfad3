//! The one storage seam: where a version lives and how it is written, read,
//! listed and committed (docs/format.md "Storage backends and the commit").
//!
//! A [`Location`] is either a local path (the rename protocol of [`local`]:
//! staging directory, fsync, `renameat2(RENAME_NOREPLACE)`) or a URL served by
//! the `object_store` crate (`s3://`, `gs://`, `az://`, `file://`, `memory://`;
//! the conditional-create protocol of [`object`]: a claim object, data files in
//! place, `manifest.json` last with `PutMode::Create`). The writer, reader,
//! verify, edit, dedup, info and ls go through this module only; none of them
//! knows which backend it talks to.
//!
//! The seam a writer uses is shaped as plan -> parts -> commit: [`Staging::create`]
//! claims the version, [`Staging::create_file`] streams one file (returning its
//! path, size and sha256 on [`StagedFile::finish`]), [`Staging::stage_manifest`] and
//! [`Staging::publish`] commit without ever replacing a version, and dropping an
//! unpublished [`Staging`] aborts (removes what this writer put, aborts its
//! multipart uploads, releases the claim). A distributed write's coordinator
//! starts with [`Staging::create_for_parts`]; its workers write through
//! [`PartStaging`], only into `<dataset>/.tmp-<version>-<write id>`
//! (docs/format.md §1 "Distributed writes").
//!
//! Everything stays synchronous for callers: the object-store backend runs its
//! requests on an internal tokio runtime of [`IO_THREADS`] threads.

mod file_hash;
mod file_syncs;
mod gc;
pub mod local;
mod location;
pub mod object;
mod staging;
pub mod store_options;
pub mod version_path;

pub use gc::{gc, gc_dry_run, stale_per_dataset, survey, DatasetSurvey, GcReport, Survey};
pub use location::{is_url, takes_storage_options, Location};
pub(crate) use location::{missing_dir, Prefetched, Small};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use object::install_tls_provider;
pub(crate) use staging::{parse_staged, FileSink};
pub use staging::{PartStaging, StagedFile, Staging, StagingRef, WrittenFile};

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::{Error, Result};

/// Environment variable naming a point of a write where the process stops: it
/// prints `timef: paused at <point>` to stderr and sleeps until it is killed
/// (or, with [`RESUME_ON_ENV`], until it is told to go on). The crash tests'
/// hook (docs/format.md §1, "Crash tests"): they kill the writer there, or run
/// `gc` beside it. Points of a write, in order: `staging-made` (local roots
/// only: the staging directory made under its `.new-*` name, not yet locked),
/// `staging-created`, `mid-shard` (a shard with a row group written, not
/// finished), `shards-written`, `manifest-staged`, `before-rename` and
/// `after-rename` (both local roots only: before the rename; the rename done,
/// the parent directory not yet fsynced). Points of a local `gc`: `gc-place-opened` (the place
/// opened, nothing read in it yet) and, per staging directory, `gc-listed`
/// (listed, not yet opened), `gc-opened` (opened, its lock not yet tried) and `gc-emptied` (emptied, its
/// name not yet removed); of an object-store `gc`:
/// `gc-objects-listed` (every object listed, no claim read yet) and, per dead claim, `gc-claim-judged`
/// (judged dead, not yet taken over) and `gc-claim-taken` (gc's claim put, no object deleted yet);
/// of a `file://` parts' prefix cleared (by `gc`, or its writer), `parts-folders-listed` (its
/// files removed, its folders listed, none removed yet).
/// Points of `verify` of an object-store version: `verify-copying` (the first
/// object copied into the temporary copy, the others not yet),
/// `verify-copied` (the copy whole, no check run yet) and `verify-checked`
/// (every check run, the copy not yet removed).
/// Unset in normal use.
pub const PAUSE_AT_ENV: &str = "TIMEF_TEST_PAUSE_AT";

/// Environment variable naming a file: a process paused at a point
/// ([`PAUSE_AT_ENV`]) goes on once that file exists (polled every 10 ms), and
/// passes every later point at once. Unset: the pause lasts until the process is killed.
pub const RESUME_ON_ENV: &str = "TIMEF_TEST_RESUME_ON";

/// Stops here when [`PAUSE_AT_ENV`] names `point`: for good, or until the file
/// [`RESUME_ON_ENV`] names exists.
pub(crate) fn pause_point(point: &str) {
    static AT: std::sync::OnceLock<(Option<String>, Option<PathBuf>)> = std::sync::OnceLock::new();
    let (at, resume_on) =
        AT.get_or_init(|| (std::env::var(PAUSE_AT_ENV).ok(), std::env::var_os(RESUME_ON_ENV).map(PathBuf::from)));
    if at.as_deref() != Some(point) {
        return;
    }
    match resume_on {
        Some(file) if file.exists() => {}
        Some(file) => {
            eprintln!("timef: paused at {point}");
            while !file.exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        None => {
            eprintln!("timef: paused at {point}");
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
    }
}

/// The manifest's file name; its presence marks a committed version.
pub const MANIFEST: &str = "manifest.json";
/// The claim object of a version being written to an object store (a name
/// pyarrow, polars and DuckDB skip: it starts with `_`; docs/format.md).
pub const CLAIM: &str = "_timef_claim.json";
/// The marker object a distributed write's coordinator puts first in its
/// parts' prefix `<dataset>/.tmp-<version>-<write id>/` on an object store
/// (JSON: write id, version, creation time, timef version): what tells `gc`
/// the prefix is a writer's (docs/format.md §1 "Distributed writes").
pub const PARTS_MARKER: &str = "_timef_parts.json";
/// Bytes an object-store file is buffered up to before it goes out as a
/// multipart upload instead of one PUT (10 MiB, `object_store`'s default); also
/// the part size of the multipart upload.
pub const DEFAULT_SINGLE_PUT_BYTES: usize = 10 << 20;
/// Parts of one file uploaded concurrently (each [`DEFAULT_SINGLE_PUT_BYTES`]):
/// with the part being filled, at most 3 parts of memory per open file.
pub const DEFAULT_UPLOAD_CONCURRENCY: usize = 2;
pub use crate::runtime::IO_THREADS;

/// How a file the manifest lists but the store does not hold is reported
/// ([`crate::Error::Corrupt`]'s reason, by `info`, `verify` and every read).
pub(crate) const LISTED_BUT_MISSING: &str = "listed in manifest.json but missing";

/// True when `e` says nothing is at the path read: a local `NotFound`, or a
/// component that is a file where a directory was expected (`NotADirectory`,
/// also as `file://`'s error), or a store's 404.
pub(crate) fn not_there(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => io_not_there(source),
        Error::ObjectStore { source, .. } => match &**source {
            object_store::Error::NotFound { .. } => true,
            other => {
                let mut cause = std::error::Error::source(other);
                while let Some(c) = cause {
                    if c.downcast_ref::<io::Error>().is_some_and(io_not_there) {
                        return true;
                    }
                    cause = c.source();
                }
                false
            }
        },
        _ => false,
    }
}

/// The error of a failed read (`io`) of `path` once it was opened (a
/// decoder's or a hash's read): what a [`Source`] of a listed file found
/// ([`Error::Corrupt`] when nothing was there, [`Error::Missing`] when the
/// version's place or the store's bucket was gone) as it found it, else
/// [`Error::Io`].
pub(crate) fn read_failed(path: &Path, io: io::Error) -> Error {
    match io.get_ref().and_then(|inner| inner.downcast_ref::<Error>()) {
        Some(Error::Missing { path, what }) => Error::Missing { path: path.clone(), what: what.clone() },
        Some(Error::Corrupt { path, reason }) => Error::Corrupt { path: path.clone(), reason: reason.clone() },
        _ => Error::io(path, io),
    }
}

/// [`not_there`] of an I/O error, or of the store's error it carries (a
/// ranged read of an object).
pub(crate) fn io_not_there(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
        || e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()).is_some_and(not_there)
}

/// The directory, inside a local staging directory, where parts write their
/// files under temporary names before renaming them into place; made by the
/// coordinator, removed by the commit or abort (docs/format.md §1 "Distributed writes").
pub const PART_SCRATCH: &str = ".parts";

/// Largest file a part of a distributed write may stage on an object store:
/// the commit copies each into the version with one server-side copy, and S3's
/// CopyObject copies at most 5 GiB (5 368 709 120 bytes) in one request.
pub const MAX_OBJECT_COPY_BYTES: u64 = 5 << 30;

/// Options of an object store, overriding the environment: the keys of
/// `object_store`'s builders (`aws_access_key_id`, `aws_endpoint`,
/// `aws_allow_http`, `google_service_account`, `azure_storage_account_name`,
/// `timeout`, ...), plus `max_retries` and `retry_timeout_s` (seconds). Values
/// may be secrets: they never appear in errors, progress or Debug output.
/// Defaults ([`store_options`]): `timeout` 20 s, `connect_timeout` 5 s,
/// `retry_timeout_s` 15, so a server that never answers fails a request in
/// about 20 s.
pub type StorageOptions = BTreeMap<String, String>;

/// A file opened for ranged reads: parquet's [`ChunkReader`](parquet::file::reader::ChunkReader)
/// over a local file or over ranged GETs of an object (footer, page index and
/// the column chunks asked for; never the whole object).
pub struct Source(SourceInner, ReadFailure);

/// The first failure to read a [`Source`]'s bytes (I/O, object store), kept
/// because a decoder's error only carries its text: with it, a failed read is
/// told from corrupt bytes (docs/format.md "Exit codes"). The source of a
/// file a manifest lists ([`Location::listed_file`]) carries that location: a
/// read of it that finds nothing there fails as its open would.
#[derive(Clone, Default)]
pub(crate) struct ReadFailure(Arc<Mutex<Option<io::Error>>>, Option<Arc<Location>>);

impl ReadFailure {
    /// The failure record of the listed file at `file` ([`Location::listed_file`]).
    pub(crate) fn listed(file: Location) -> ReadFailure {
        ReadFailure(Arc::default(), Some(Arc::new(file)))
    }

    /// A record of its own for another handle on the same file.
    fn fresh(&self) -> ReadFailure {
        ReadFailure(Arc::default(), self.1.clone())
    }

    /// `e` of a read, a listed file's "nothing there" as its open says it
    /// ([`Location::listed_file`]: the error inside it).
    fn relabel(&self, e: io::Error) -> io::Error {
        match &self.1 {
            Some(file) if io_not_there(&e) => {
                io::Error::new(io::ErrorKind::NotFound, file.listed_missing(Error::io(file.to_path_buf(), e)))
            }
            _ => e,
        }
    }

    fn record(&self, e: &(dyn std::error::Error + 'static)) {
        if let Ok(mut first) = self.0.lock() {
            first.get_or_insert_with(|| {
                let io = e.downcast_ref::<io::Error>();
                // a listed file gone, or the store's bucket gone, is kept as such (read_failed)
                match io.and_then(|io| io.get_ref()).and_then(|inner| inner.downcast_ref::<Error>()) {
                    Some(Error::Missing { path, what }) => io::Error::new(
                        io::ErrorKind::NotFound,
                        Error::Missing { path: path.clone(), what: what.clone() },
                    ),
                    Some(Error::Corrupt { path, reason }) => io::Error::new(
                        io::ErrorKind::NotFound,
                        Error::Corrupt { path: path.clone(), reason: reason.clone() },
                    ),
                    _ => io::Error::other(e.to_string()),
                }
            });
        }
    }

    /// The failure, if a read failed.
    pub(crate) fn take(&self) -> Option<io::Error> {
        self.0.lock().ok().and_then(|mut first| first.take())
    }
}

impl Source {
    /// The handle through which a failed read of this source is seen after
    /// the source moved into a decoder.
    pub(crate) fn read_failure(&self) -> ReadFailure {
        self.1.clone()
    }

    /// A second handle on the same file, with a failure record of its own. A
    /// local file's two handles share one file position, and parquet's reads
    /// of a file seek it: read through one at a time.
    ///
    /// # Errors
    /// The OS's, duplicating a local file's descriptor.
    pub(crate) fn try_clone(&self) -> io::Result<Source> {
        let inner = match &self.0 {
            SourceInner::File(f, len) => SourceInner::File(f.try_clone()?, *len),
            SourceInner::Object(o) => SourceInner::Object(o.clone()),
        };
        Ok(Source(inner, self.1.fresh()))
    }
}

/// A reader that records its first failure in a [`ReadFailure`].
struct Recording<R> {
    inner: R,
    failure: ReadFailure,
}

impl<R: Read> Read for Recording<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| self.failure.relabel(e)).inspect_err(|e| self.failure.record(e))
    }
}

enum SourceInner {
    File(File, u64),
    Object(object::ObjectReader),
}

impl parquet::file::reader::Length for Source {
    fn len(&self) -> u64 {
        match &self.0 {
            SourceInner::File(_, len) => *len,
            SourceInner::Object(o) => o.len(),
        }
    }
}

impl parquet::file::reader::ChunkReader for Source {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let failure = self.1.clone();
        match &self.0 {
            SourceInner::File(f, _) => Ok(Box::new(Recording { inner: f.get_read(start)?, failure })),
            SourceInner::Object(o) => Ok(Box::new(Recording { inner: o.read_from(start), failure })),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        use parquet::errors::ParquetError;
        let got = match &self.0 {
            SourceInner::File(f, _) => f.get_bytes(start, length),
            SourceInner::Object(o) => o.get_bytes(start, length),
        };
        let got = got.map_err(|e| match e {
            ParquetError::External(e) => match e.downcast::<io::Error>() {
                Ok(io) => ParquetError::External(Box::new(self.1.relabel(*io))),
                Err(e) => ParquetError::External(e),
            },
            e => e,
        });
        // a range beyond the end is the footer's fault (corrupt), not a failed read
        if let Err(ParquetError::External(e)) = &got {
            self.1.record(e.as_ref());
        }
        got
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static LIVE_GUARDS: AtomicUsize = AtomicUsize::new(0);

/// Asks every writer of this process to stop at its next write and abort, and
/// every `verify` holding a temporary copy to stop at its next object, block or
/// check and remove it (the CLI calls it on Ctrl-C). Returns false when nothing
/// of the kind is live (no staging, export file or verify copy), so the caller
/// may simply exit.
pub fn interrupt() -> bool {
    INTERRUPTED.store(true, Ordering::SeqCst);
    LIVE_GUARDS.load(Ordering::SeqCst) > 0
}

/// Withdraws [`interrupt`], for a process that goes on once what it asked to
/// stop has stopped (the Python binding, after a Ctrl-C raised
/// `KeyboardInterrupt`). A call of another thread that did not reach a check
/// meanwhile goes on as if never asked.
pub fn clear_interrupt() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}

/// True once [`interrupt`] was called: a write that failed after it failed
/// because it was asked to stop (the CLI exits with 130 then, whatever error
/// the abort surfaced as).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// An `Interrupted` I/O error naming `at` once [`interrupt`] was called.
pub(crate) fn check_interrupted(at: impl Into<PathBuf>) -> Result<()> {
    if interrupted() {
        return Err(Error::io(at, io::Error::new(io::ErrorKind::Interrupted, "interrupted (Ctrl-C)")));
    }
    Ok(())
}

/// Counts, while it exists, something this process must remove before it
/// exits: a staging, an export's temporary file, verify's temporary copy (see
/// [`interrupt`]).
#[derive(Debug)]
pub(crate) struct LiveGuard(());

impl LiveGuard {
    pub(crate) fn new() -> LiveGuard {
        LIVE_GUARDS.fetch_add(1, Ordering::SeqCst);
        LiveGuard(())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        LIVE_GUARDS.fetch_sub(1, Ordering::SeqCst);
    }
}
