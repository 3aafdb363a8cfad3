//! The fsync of a local staging's files, behind the writer: each finished
//! file is fsynced on a thread of its own while the next one is written, and
//! the publish waits for all of them (docs/format.md §1 "Commit protocol",
//! step 2).

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
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
    /// the oldest when [`MAX_PENDING_SYNCS`] are running. Without a thread (the
    /// spawn failed), fsyncs here.
    ///
    /// # Errors
    /// The fsync of this or an earlier file failing, naming that file.
    pub(crate) fn start(&self, path: PathBuf, file: File) -> Result<()> {
        let mut pending = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while pending.len() >= MAX_PENDING_SYNCS {
            if let Some((p, h)) = pending.pop_front() {
                join_sync(&p, h)?;
            }
        }
        // the thread fsyncs a duplicate of the descriptor; without one, or
        // without a thread, this thread fsyncs
        let spawned = file
            .try_clone()
            .ok()
            .and_then(|dup| std::thread::Builder::new().name("timef-fsync".into()).spawn(move || dup.sync_all()).ok());
        match spawned {
            Some(handle) => {
                pending.push_back((path, handle));
                Ok(())
            }
            None => file.sync_all().map_err(|e| Error::io(&path, e)),
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

fn join_sync(path: &Path, handle: JoinHandle<io::Result<()>>) -> Result<()> {
    match handle.join() {
        Ok(r) => r.map_err(|e| Error::io(path, e)),
        Err(_) => Err(Error::io(path, io::Error::other("the fsync thread panicked"))),
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
        syncs.start(dir.path().join("a"), good).unwrap();
        syncs.start(PathBuf::from("bad/shard-00001.parquet"), unsyncable()).unwrap();
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
        syncs.start(PathBuf::from("bad/one"), unsyncable()).unwrap();
        syncs.start(dir.path().join("b"), File::create(dir.path().join("b")).unwrap()).unwrap();
        assert_eq!(syncs.0.lock().unwrap().len(), 2);
        // the third waits for the oldest, whose failure it reports
        let err = syncs.start(dir.path().join("c"), File::create(dir.path().join("c")).unwrap()).unwrap_err();
        assert_eq!(err.to_string(), "I/O on bad/one: Invalid argument (os error 22)");
        for n in ["d", "e", "f"] {
            syncs.start(dir.path().join(n), File::create(dir.path().join(n)).unwrap()).unwrap();
            assert!(syncs.0.lock().unwrap().len() <= MAX_PENDING_SYNCS);
        }
        syncs.wait_all().unwrap();
    }
}
