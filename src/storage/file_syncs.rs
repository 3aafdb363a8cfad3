//! The fsync of a local staging's files, behind the writer: a file's data is
//! synced a block at a time while it is written ([`SyncBehind`]), each
//! finished file is fsynced on a thread of its own while the next one is
//! written, and the publish waits for all of them (docs/format.md §1 "Commit
//! protocol", step 2).

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// The fsyncs of a staging's finished files, each on a thread of its own while
/// the write goes on: write-back of a file's last blocks overlaps the encoding
/// of the next file instead of stopping it (a 1% edit of a 1 GiB version spent
/// 0.6 s of 1.6 s waiting in fsync). At most [`MAX_PENDING_SYNCS`] run at
/// once; [`super::local::Staging::publish`] waits for all of them before the
/// rename, so what a commit publishes is as durable as when each file was
/// fsynced when closed (docs/format.md §1 "Commit protocol", step 2).
#[derive(Debug, Default)]
pub(crate) struct FileSyncs(Mutex<VecDeque<(PathBuf, JoinHandle<io::Result<()>>)>>);

/// Files whose fsync may run at once behind the writer (2): a third waits for
/// the oldest, so a writer never runs far ahead of the disk.
const MAX_PENDING_SYNCS: usize = 2;

impl FileSyncs {
    /// Starts the fsync of `file` (at `path`, for errors), after waiting for
    /// the oldest when [`MAX_PENDING_SYNCS`] are running; `behind`, the
    /// file's data sync still running, is waited for first and its failure
    /// reported as the fsync's. Without a thread (the spawn failed), fsyncs here.
    ///
    /// # Errors
    /// The fsync of this or an earlier file failing, naming that file.
    pub(crate) fn start(&self, path: PathBuf, file: File, behind: SyncBehind) -> Result<()> {
        self.start_on(path, file, behind, |fsync| std::thread::Builder::new().name("timef-fsync".into()).spawn(fsync))
    }

    /// [`FileSyncs::start`], its thread made by `spawn`.
    fn start_on(
        &self,
        path: PathBuf,
        file: File,
        behind: SyncBehind,
        spawn: impl FnOnce(Fsync) -> io::Result<JoinHandle<io::Result<()>>>,
    ) -> Result<()> {
        let mut pending = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while pending.len() >= MAX_PENDING_SYNCS {
            if let Some((p, h)) = pending.pop_front() {
                join_sync(&p, h)?;
            }
        }
        // the sync behind stays reachable from here: a spawn that fails drops
        // its closure, and an error the sync behind took from the shared open
        // file description would never reach this file's own fsync (Linux)
        let behind = Arc::new(Mutex::new(Some(behind)));
        let finish_behind = |behind: &Mutex<Option<SyncBehind>>| {
            behind.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take().map_or(Ok(()), SyncBehind::finish)
        };
        // the thread fsyncs a duplicate of the descriptor; without one, or
        // without a thread, this thread fsyncs
        let spawned = file.try_clone().ok().and_then(|dup| {
            let behind = Arc::clone(&behind);
            spawn(Box::new(move || finish_behind(&behind).and_then(|()| dup.sync_all()))).ok()
        });
        match spawned {
            Some(handle) => {
                pending.push_back((path, handle));
                Ok(())
            }
            None => finish_behind(&behind).and_then(|()| file.sync_all()).map_err(|e| Error::io(&path, e)),
        }
    }

    /// Waits for every fsync started.
    ///
    /// # Errors
    /// The first that failed, naming its file (all are waited for).
    pub(crate) fn wait_all(&self) -> Result<()> {
        let pending: Vec<_> = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..).collect();
        let mut first = Ok(());
        for (p, h) in pending {
            let r = join_sync(&p, h);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// A file's fsync, run on a thread of its own.
type Fsync = Box<dyn FnOnce() -> io::Result<()> + Send>;

fn join_sync(path: &Path, handle: JoinHandle<io::Result<()>>) -> Result<()> {
    join(handle).map_err(|e| Error::io(path, e))
}

fn join(handle: JoinHandle<io::Result<()>>) -> io::Result<()> {
    handle.join().unwrap_or_else(|_| Err(io::Error::other("the fsync thread panicked")))
}

/// Bytes of a local file written between two syncs of its data behind the
/// writer (4 MiB): the fsync that closes a file then waits for its last
/// block or two, not for the whole file. A virtual disk flushes its cache at
/// each sync, ~2 ms a MiB on the 2-core VMs measured: for the 15 MiB shard of
/// a small 32 MiB write the closing fsync took 35-36 ms syncing nothing
/// before, 14-16 ms with a sync every 4 MiB (and the write ~9% less time,
/// scripts/bench_ab.sh).
pub(crate) const SYNC_BEHIND_BYTES: u64 = 4 << 20;

/// The data of a local file synced behind its writer, a block at a time:
/// every [`SYNC_BEHIND_BYTES`] written, an `fdatasync` of what is written
/// so far starts on a thread of its own, unless the previous one still runs
/// (then the next block's start tries again), and the synced pages are
/// dropped from the page cache (`POSIX_FADV_DONTNEED`; the write does not
/// read them again). Only the closing fsync ([`FileSyncs::start`]) makes the
/// file durable; a sync here that fails fails the write.
#[derive(Debug, Default)]
pub(crate) struct SyncBehind {
    running: Option<JoinHandle<io::Result<()>>>,
    /// Bytes whose sync was started.
    pub(super) started_to: u64,
}

impl SyncBehind {
    /// Tells that `written` bytes of `file` are written: starts the sync of
    /// them when a block more is written since the last start and none runs.
    /// Without a duplicate descriptor or a thread, starts nothing (the
    /// closing fsync syncs everything).
    ///
    /// # Errors
    /// The previous sync of this file failed.
    pub(crate) fn written(&mut self, file: &File, written: u64) -> io::Result<()> {
        if written < self.started_to + SYNC_BEHIND_BYTES || self.running.as_ref().is_some_and(|h| !h.is_finished()) {
            return Ok(());
        }
        if let Some(handle) = self.running.take() {
            join(handle)?;
        }
        let from = self.started_to;
        let Ok(dup) = file.try_clone() else { return Ok(()) };
        let sync = move || {
            dup.sync_data()?;
            // only a hint: a failure changes nothing
            let _ = rustix::fs::fadvise(
                &dup,
                from,
                std::num::NonZeroU64::new(written - from),
                rustix::fs::Advice::DontNeed,
            );
            Ok(())
        };
        if let Ok(handle) = std::thread::Builder::new().name("timef-sync-behind".into()).spawn(sync) {
            self.running = Some(handle);
            self.started_to = written;
        }
        Ok(())
    }

    /// Waits for the sync still running.
    ///
    /// # Errors
    /// It failed.
    pub(crate) fn finish(self) -> io::Result<()> {
        self.running.map_or(Ok(()), join)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A descriptor whose fsync fails (EINVAL: a pipe), as a `File`.
    pub(crate) fn unsyncable() -> File {
        let (reader, _writer) = std::io::pipe().unwrap();
        File::from(std::os::fd::OwnedFd::from(reader))
    }

    #[test]
    fn a_failed_fsync_is_reported_by_wait_all_naming_its_file_after_waiting_for_all() {
        let dir = tempfile::tempdir().unwrap();
        let syncs = FileSyncs::default();
        let good = File::create(dir.path().join("a")).unwrap();
        syncs.start(dir.path().join("a"), good, SyncBehind::default()).unwrap();
        syncs.start(PathBuf::from("bad/shard-00001.parquet"), unsyncable(), SyncBehind::default()).unwrap();
        let err = syncs.wait_all().unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/shard-00001.parquet: Invalid argument (os error 22)");
        assert!(syncs.0.lock().unwrap().is_empty());
        // nothing left to wait for
        syncs.wait_all().unwrap();
    }

    #[test]
    fn at_most_two_fsyncs_run_behind_the_writer_and_a_third_reports_an_earlier_failure() {
        let dir = tempfile::tempdir().unwrap();
        let syncs = FileSyncs::default();
        syncs.start(PathBuf::from("bad/one"), unsyncable(), SyncBehind::default()).unwrap();
        syncs.start(dir.path().join("b"), File::create(dir.path().join("b")).unwrap(), SyncBehind::default()).unwrap();
        assert_eq!(syncs.0.lock().unwrap().len(), 2);
        // the third waits for the oldest, whose failure it reports
        let err = syncs
            .start(dir.path().join("c"), File::create(dir.path().join("c")).unwrap(), SyncBehind::default())
            .unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/one: Invalid argument (os error 22)");
        for n in ["d", "e", "f"] {
            syncs.start(dir.path().join(n), File::create(dir.path().join(n)).unwrap(), SyncBehind::default()).unwrap();
            assert!(syncs.0.lock().unwrap().len() <= MAX_PENDING_SYNCS);
        }
        syncs.wait_all().unwrap();
    }

    #[test]
    fn a_file_is_synced_behind_once_a_block_more_is_written_and_a_failed_sync_fails_the_next_step() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("a")).unwrap();
        let mut behind = SyncBehind::default();
        behind.written(&file, SYNC_BEHIND_BYTES - 1).unwrap();
        assert!(behind.running.is_none());
        behind.written(&file, SYNC_BEHIND_BYTES).unwrap();
        assert_eq!(behind.started_to, SYNC_BEHIND_BYTES);
        // less than a block more since the last start: nothing new
        behind.written(&file, 2 * SYNC_BEHIND_BYTES - 1).unwrap();
        assert_eq!(behind.started_to, SYNC_BEHIND_BYTES);
        behind.finish().unwrap();

        // a sync behind that fails is reported by the next block's start
        let mut behind = SyncBehind::default();
        let bad = unsyncable();
        behind.written(&bad, SYNC_BEHIND_BYTES).unwrap();
        while !behind.running.as_ref().unwrap().is_finished() {
            std::thread::yield_now();
        }
        let err = behind.written(&bad, 2 * SYNC_BEHIND_BYTES).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        // ... or by the closing fsync, naming the file, even when the file's own fsync would succeed
        let mut behind = SyncBehind::default();
        behind.written(&bad, SYNC_BEHIND_BYTES).unwrap();
        let syncs = FileSyncs::default();
        let good = File::create(dir.path().join("b")).unwrap();
        syncs.start(PathBuf::from("bad/shard-00002.parquet"), good, behind).unwrap();
        let err = syncs.wait_all().unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/shard-00002.parquet: Invalid argument (os error 22)");
    }

    #[test]
    fn a_failed_sync_behind_is_reported_when_the_closing_fsync_gets_no_thread() {
        let dir = tempfile::tempdir().unwrap();
        let mut behind = SyncBehind::default();
        behind.written(&unsyncable(), SYNC_BEHIND_BYTES).unwrap();
        let syncs = FileSyncs::default();
        let good = File::create(dir.path().join("b")).unwrap();
        let no_thread = |_: Fsync| Err(io::Error::from(io::ErrorKind::WouldBlock));
        let err = syncs.start_on(PathBuf::from("bad/shard-00003.parquet"), good, behind, no_thread).unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/shard-00003.parquet: Invalid argument (os error 22)");
        assert!(syncs.0.lock().unwrap().is_empty());
    }
}
