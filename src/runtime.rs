//! What timef keeps per process: the tokio runtime that runs the object-store
//! requests, each store's client with its connection pool, and the rayon pool
//! the writer encodes on (docs/format.md §1 "Forked and spawned workers").
//!
//! A child made by `fork` (Python's `multiprocessing` default on Linux, so
//! PyTorch's DataLoader workers) inherits a copy of the parent's memory but
//! none of its threads: the parent's runtime has no worker thread and no I/O
//! driver there, its pooled connections are registered with that driver, and
//! its thread pools have no thread, so a request or a job through any of them
//! waits forever. A [`PerProcess`] value is
//! therefore built again in a process whose id differs from its builder's; the
//! parent's copy is leaked in the child, never used and never dropped (dropping
//! it would wait for threads, or take locks, that only exist in the parent).
//! The cells are lock-free, so a lock some parent thread held at the fork
//! cannot hang the child.

use std::future::Future;
use std::io;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::error::{Error, Result};

/// Threads of the internal runtime that runs object-store requests.
pub const IO_THREADS: usize = 2;

/// A value built at most once per process (see the module doc).
pub(crate) struct PerProcess<T> {
    /// `(process id, value)`, leaked from a `Box`; null before the first build.
    cell: AtomicPtr<(u32, T)>,
}

impl<T> PerProcess<T> {
    pub(crate) const fn new() -> PerProcess<T> {
        PerProcess { cell: AtomicPtr::new(ptr::null_mut()) }
    }

    /// A cell holding `value`, built by this process.
    pub(crate) fn with(value: T) -> PerProcess<T> {
        PerProcess { cell: AtomicPtr::new(Box::into_raw(Box::new((std::process::id(), value)))) }
    }

    /// This process's value, built with `build` when the cell is empty or
    /// holds another process's value. Of two threads building at once, one
    /// value is kept and the other dropped.
    pub(crate) fn get_or_try_init(&self, build: impl FnOnce() -> Result<T>) -> Result<&T> {
        let pid = std::process::id();
        let seen = self.cell.load(Ordering::Acquire);
        // SAFETY: a non-null pointer in the cell came from `Box::into_raw` and
        // is only freed by `Drop` (which has `&mut self`) or by the loser of the
        // exchange below, which never published it
        if let Some((owner, value)) = unsafe { seen.as_ref() } {
            if *owner == pid {
                return Ok(value);
            }
        }
        let fresh = Box::into_raw(Box::new((pid, build()?)));
        match self.cell.compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // the replaced value (null, or the parent's) is leaked on purpose
            Ok(_) => Ok(unsafe { &(*fresh).1 }),
            Err(now) => {
                // SAFETY: `fresh` was never published
                drop(unsafe { Box::from_raw(fresh) });
                match unsafe { now.as_ref() } {
                    Some((owner, value)) if *owner == pid => Ok(value),
                    // a third process id cannot appear within one process
                    _ => Err(Error::io("<object-store runtime>", io::Error::other("per-process value lost a race"))),
                }
            }
        }
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let p = *self.cell.get_mut();
        // SAFETY: as in `get_or_try_init`; `&mut self` means no reference is out
        if let Some((owner, _)) = unsafe { p.as_ref() } {
            if *owner == std::process::id() {
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// The runtime that runs every object-store request of this process, built on
/// first use (and again in a forked child).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: PerProcess<tokio::runtime::Runtime> = PerProcess::new();
    RT.get_or_try_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .thread_name("timef-io")
            .enable_all()
            .build()
            .map_err(|e| Error::io("<object-store runtime>", e))
    })
}

/// Runs `fut` to completion on this process's runtime.
pub(crate) fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(fut))
}

/// The rayon pool the writer encodes on (row groups, a file's column chunks,
/// the dataset's id sorts), one per process like the I/O runtime: rayon's
/// global pool has no thread in a forked child, so work spawned on it there
/// would never run. As many threads as rayon's default.
pub(crate) fn compute_pool() -> Result<&'static rayon::ThreadPool> {
    static POOL: PerProcess<rayon::ThreadPool> = PerProcess::new();
    POOL.get_or_try_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("timef-encode-{i}"))
            .build()
            .map_err(|e| Error::io("<encoding thread pool>", io::Error::other(e.to_string())))
    })
}

/// Starts `fut` on this process's runtime (an upload's part).
pub(crate) fn spawn<F>(fut: F) -> Result<tokio::task::JoinHandle<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Ok(runtime()?.spawn(fut))
}
