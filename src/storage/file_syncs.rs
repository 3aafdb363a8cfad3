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
/// 0.6 s of 1.6 s waiting in fsync). What may run at once is bounded by the
/// bytes they write back ([`MAX_PENDING_SYNC_BYTES`]) and their number
/// ([`MAX_PENDING_SYNCS`]); [`super::local::Staging::publish`] waits for all
/// of them before the rename, so what a commit publishes is as durable as when
/// each file was fsynced when closed (docs/format.md §1 "Commit protocol",
/// step 2).
#[derive(Debug, Default)]
pub(crate) struct FileSyncs(Mutex<VecDeque<PendingSync>>);

/// A finished file's fsync running on its thread.
#[derive(Debug)]
struct PendingSync {
    path: PathBuf,
    handle: JoinHandle<io::Result<()>>,
    /// Bytes of the file no finished sync behind had written back when it closed.
    unsynced: u64,
}

/// Bytes the running fsyncs may still write back (16 MiB, four blocks of
/// [`SYNC_BEHIND_BYTES`]; each file counts what no finished sync behind wrote
/// back when it closed): a file that would pass it waits for the oldest fsyncs
/// first, so a writer never runs more than that ahead of the disk. A shard
/// closes with a block or two not written back (its last sync behind may still
/// run), so a few shards' fsyncs run at once, and the small tables' after them
/// do without waiting (a file count of 2 made the samples table of a small
/// 32 MiB write wait 5-12 ms for the shard's fsync).
const MAX_PENDING_SYNC_BYTES: u64 = 4 * SYNC_BEHIND_BYTES;

/// Finished files whose fsync may run at once (8), each on a thread of its own.
const MAX_PENDING_SYNCS: usize = 8;

impl FileSyncs {
    /// Starts the fsync of `file` (at `path`, for errors; `bytes` long),
    /// after waiting for the oldest running ones while, with this file's
    /// bytes no finished sync behind wrote back, they would pass
    /// [`MAX_PENDING_SYNC_BYTES`], or [`MAX_PENDING_SYNCS`] run. `behind`, the
    /// file's data sync still running, is waited for first and its failure
    /// reported as the fsync's. Without a thread (the spawn failed), fsyncs here.
    ///
    /// # Errors
    /// The fsync of this or an earlier file failing, naming that file.
    pub(crate) fn start(&self, path: PathBuf, file: File, bytes: u64, behind: SyncBehind) -> Result<()> {
        self.start_on(path, file, bytes, behind, |fsync| {
            std::thread::Builder::new().name("timef-fsync".into()).spawn(fsync)
        })
    }

    /// [`FileSyncs::start`], its thread made by `spawn`.
    fn start_on(
        &self,
        path: PathBuf,
        file: File,
        bytes: u64,
        behind: SyncBehind,
        spawn: impl FnOnce(Fsync) -> io::Result<JoinHandle<io::Result<()>>>,
    ) -> Result<()> {
        let unsynced = bytes.saturating_sub(behind.synced_to());
        let mut pending = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while pending.len() >= MAX_PENDING_SYNCS
            || (!pending.is_empty()
                && pending.iter().map(|p| p.unsynced).sum::<u64>() + unsynced > MAX_PENDING_SYNC_BYTES)
        {
            if let Some(PendingSync { path, handle, .. }) = pending.pop_front() {
                join_sync(&path, handle)?;
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
                pending.push_back(PendingSync { path, handle, unsynced });
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
        for PendingSync { path, handle, .. } in pending {
            let r = join_sync(&path, handle);
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
    /// Bytes whose sync finished before the running one started.
    finished_to: u64,
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
            // never `Interrupted`: `write_all` retries that, and would write
            // the bytes just written (not counted yet) a second time
            join(handle).map_err(|e| if e.kind() == io::ErrorKind::Interrupted { io::Error::other(e) } else { e })?;
            self.finished_to = self.started_to;
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

    /// Bytes written back by a sync that finished: those of the sync started
    /// last unless it still runs (a finished one that failed fails the file's
    /// closing fsync).
    fn synced_to(&self) -> u64 {
        match &self.running {
            Some(running) if !running.is_finished() => self.finished_to,
            _ => self.started_to,
        }
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
        syncs.start(dir.path().join("a"), good, 0, SyncBehind::default()).unwrap();
        syncs.start(PathBuf::from("bad/shard-00001.parquet"), unsyncable(), 0, SyncBehind::default()).unwrap();
        let err = syncs.wait_all().unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/shard-00001.parquet: Invalid argument (os error 22)");
        assert!(syncs.0.lock().unwrap().is_empty());
        // nothing left to wait for
        syncs.wait_all().unwrap();
    }

    #[test]
    fn fsyncs_run_behind_the_writer_within_their_bytes_and_count_and_a_file_past_them_reports_an_earlier_failure() {
        let dir = tempfile::tempdir().unwrap();
        let syncs = FileSyncs::default();
        let file = |n: &str| (dir.path().join(n), File::create(dir.path().join(n)).unwrap());
        let running = |syncs: &FileSyncs| {
            let pending = syncs.0.lock().unwrap();
            pending
                .iter()
                .map(|p| (p.path.file_name().unwrap().to_str().unwrap().to_string(), p.unsynced))
                .collect::<Vec<_>>()
        };
        let named = |names: &[(&str, u64)]| names.iter().map(|&(n, b)| (n.to_string(), b)).collect::<Vec<_>>();
        let (max, quarter) = (MAX_PENDING_SYNC_BYTES, MAX_PENDING_SYNC_BYTES / 4);
        syncs.start(PathBuf::from("bad/one"), unsyncable(), 2 * quarter, SyncBehind::default()).unwrap();
        let (b, fb) = file("b");
        syncs.start(b, fb, 2 * quarter, SyncBehind::default()).unwrap();
        // a file whose sync behind finished on all of it adds nothing
        let (c, fc) = file("c");
        let synced = SyncBehind { running: None, started_to: 4 * max, finished_to: 0 };
        syncs.start(c, fc, 4 * max, synced).unwrap();
        assert_eq!(running(&syncs), named(&[("one", 2 * quarter), ("b", 2 * quarter), ("c", 0)]));
        // one byte more waits for the oldest, whose failure it reports
        let (d, fd) = file("d");
        let err = syncs.start(d, fd, 1, SyncBehind::default()).unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/one: Invalid argument (os error 22)");
        assert_eq!(running(&syncs), named(&[("b", 2 * quarter), ("c", 0)]));
        syncs.wait_all().unwrap();
        // a file past the bound waits for as many of the oldest as it takes
        for n in ["e", "f", "g"] {
            let (p, f) = file(n);
            syncs.start(p, f, quarter, SyncBehind::default()).unwrap();
        }
        let (h, fh) = file("h");
        syncs.start(h, fh, 3 * quarter, SyncBehind::default()).unwrap();
        assert_eq!(running(&syncs), named(&[("g", quarter), ("h", 3 * quarter)]));
        // a file past it alone waits for every running one, then runs
        let (i, fi) = file("i");
        syncs.start(i, fi, 2 * max, SyncBehind::default()).unwrap();
        assert_eq!(running(&syncs), named(&[("i", 2 * max)]));
        syncs.wait_all().unwrap();
        // the bytes of a sync behind still running count: only a finished one wrote them back
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let still = std::thread::spawn(move || blocked.recv().map_err(io::Error::other));
        let (j, fj) = file("j");
        let behind = SyncBehind { running: Some(still), started_to: max, finished_to: quarter };
        syncs.start(j, fj, max + 1, behind).unwrap();
        assert_eq!(running(&syncs), named(&[("j", max + 1 - quarter)]));
        release.send(()).unwrap();
        syncs.wait_all().unwrap();
        // small files run at once up to the count
        let names = ["k", "l", "m", "n", "o", "p", "q", "r", "s"];
        for n in names {
            let (p, f) = file(n);
            syncs.start(p, f, 100, SyncBehind::default()).unwrap();
        }
        let last: Vec<_> = names[1..].iter().map(|&n| (n, 100)).collect();
        assert_eq!(running(&syncs), named(&last));
        syncs.wait_all().unwrap();
        assert!(running(&syncs).is_empty());
    }

    #[test]
    fn a_file_is_synced_behind_once_a_block_more_is_written_and_a_failed_sync_fails_the_next_step() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("a")).unwrap();
        let mut behind = SyncBehind::default();
        behind.written(&file, SYNC_BEHIND_BYTES - 1).unwrap();
        assert!(behind.running.is_none());
        behind.written(&file, SYNC_BEHIND_BYTES).unwrap();
        assert_eq!((behind.started_to, behind.finished_to), (SYNC_BEHIND_BYTES, 0));
        // less than a block more since the last start: nothing new
        behind.written(&file, 2 * SYNC_BEHIND_BYTES - 1).unwrap();
        assert_eq!(behind.started_to, SYNC_BEHIND_BYTES);
        while !behind.running.as_ref().unwrap().is_finished() {
            std::thread::yield_now();
        }
        assert_eq!(behind.synced_to(), SYNC_BEHIND_BYTES);
        // the next start takes the finished sync's bytes as written back
        behind.written(&file, 2 * SYNC_BEHIND_BYTES).unwrap();
        assert_eq!((behind.started_to, behind.finished_to), (2 * SYNC_BEHIND_BYTES, SYNC_BEHIND_BYTES));
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
        // ... never as `Interrupted`, which a `write_all` would retry
        let interrupted = std::thread::spawn(|| Err(io::Error::from(io::ErrorKind::Interrupted)));
        let mut behind = SyncBehind { running: Some(interrupted), started_to: SYNC_BEHIND_BYTES, finished_to: 0 };
        while !behind.running.as_ref().unwrap().is_finished() {
            std::thread::yield_now();
        }
        let err = behind.written(&file, 2 * SYNC_BEHIND_BYTES).unwrap_err();
        assert_eq!((err.kind(), behind.finished_to), (io::ErrorKind::Other, 0));
        // ... or by the closing fsync, naming the file, even when the file's own fsync would succeed
        let mut behind = SyncBehind::default();
        behind.written(&bad, SYNC_BEHIND_BYTES).unwrap();
        let syncs = FileSyncs::default();
        let good = File::create(dir.path().join("b")).unwrap();
        syncs.start(PathBuf::from("bad/shard-00002.parquet"), good, SYNC_BEHIND_BYTES, behind).unwrap();
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
        let err = syncs
            .start_on(PathBuf::from("bad/shard-00003.parquet"), good, SYNC_BEHIND_BYTES, behind, no_thread)
            .unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/shard-00003.parquet: Invalid argument (os error 22)");
        assert!(syncs.0.lock().unwrap().is_empty());
    }
}
