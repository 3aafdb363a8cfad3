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
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

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

/// `f` of each of `items`, in item order, computed on the current rayon pool
/// (rayon's global pool when called from no pool; the writer calls it from
/// its compute pool) by this thread and any idle one that steals an item.
/// While items are pending this thread takes up no other pool work: it runs
/// the items queued on its own deque ([`rayon::yield_local`]; they are pushed
/// last, so it pops them first) until every item has started, then blocks
/// until those running elsewhere are done. A `par_iter`'s join instead runs
/// any queued job while it waits: a write's last row groups, each encoding
/// its pages in parallel, would then nest inside one another, each done only
/// after the later ones it took up, and the shard could append none of them
/// before the last was encoded (`src/writer/mod.rs`, step 3). Two short
/// windows remain, which rayon gives no hook to close: between an item's end
/// on another thread and rayon counting its job done (the scope's own wait
/// may then run one queued job), and between a steal and the stolen item's
/// start (`yield_local` may then run an older job of this thread's deque).
/// Measured in writes of 32 MiB (review of this function): with 2 threads
/// neither was seen; with 4, a page of a later row group ran there 1-2
/// times in 3 of 9 writes, a whole row group never. A panic of `f` is raised
/// here once every item is done.
pub(crate) fn map_on_pool<I, R, F>(items: Vec<I>, f: F) -> Vec<R>
where
    I: Send,
    R: Send,
    F: Fn(I) -> R + Sync,
{
    use std::sync::{Condvar, Mutex, PoisonError};
    /// Counts an item done when dropped, also when `f` panicked.
    struct Done<'a>(&'a (Mutex<usize>, Condvar));
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            let (left, all_done) = self.0;
            let mut left = left.lock().unwrap_or_else(PoisonError::into_inner);
            *left -= 1;
            if *left == 0 {
                all_done.notify_all();
            }
        }
    }
    let n = items.len();
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let started = AtomicUsize::new(0);
    let waiting = (Mutex::new(n), Condvar::new());
    let run = |k: usize, item: I| {
        started.fetch_add(1, Ordering::AcqRel);
        let _done = Done(&waiting);
        let r = f(item);
        *slots[k].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    };
    rayon::scope(|s| {
        let mut items = items.into_iter().enumerate();
        let first = items.next();
        // queued on this thread's deque: an idle thread steals the oldest
        // (the next in order, unless older jobs lie under them), this one
        // pops the newest
        for (k, item) in items {
            let run = &run;
            s.spawn(move |_| run(k, item));
        }
        if let Some((k, item)) = first {
            run(k, item);
        }
        while started.load(Ordering::Acquire) < n {
            if rayon::yield_local() != Some(rayon::Yield::Executed) {
                break;
            }
        }
        let (left, all_done) = &waiting;
        let mut left = left.lock().unwrap_or_else(PoisonError::into_inner);
        while *left > 0 {
            left = all_done.wait(left).unwrap_or_else(PoisonError::into_inner);
        }
    });
    // every slot is filled here: had an item panicked, the scope raised it above
    slots.into_iter().filter_map(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Mutex};
    use std::time::Duration;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a test pool")
    }

    #[test]
    fn items_come_back_in_item_order_on_any_number_of_threads() {
        for threads in [1, 2, 4] {
            let squares = pool(threads).install(|| map_on_pool((0..100u64).collect(), |k| k * k));
            assert_eq!(squares, (0..100u64).map(|k| k * k).collect::<Vec<_>>(), "{threads} threads");
        }
        assert_eq!(pool(2).install(|| map_on_pool(Vec::<u8>::new(), |k| k)), Vec::<u8>::new());
    }

    #[test]
    fn a_panic_of_one_item_is_raised_after_every_item_ran() {
        let ran = AtomicUsize::new(0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool(2).install(|| {
                map_on_pool((0..16u32).collect(), |k| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    assert_ne!(k, 3, "item 3 fails");
                    k
                })
            })
        }));
        assert!(caught.is_err());
        assert_eq!(ran.load(Ordering::SeqCst), 16);
    }

    thread_local! {
        static MAPPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// The thread in `map_on_pool` waits for an item another thread runs
    /// while a job of someone else's is queued where it could steal it (the
    /// other thread's deque): it must not run that job, which a `par_iter`'s
    /// join does (the job then reports it ran inside the map).
    #[test]
    fn a_thread_waiting_for_its_items_takes_up_no_other_work() {
        let pool = pool(2);
        let (item_1_started, wait_for_item_1) = mpsc::channel::<()>();
        let (other_ran, wait_for_other) = mpsc::channel::<bool>();
        let other_ran = Mutex::new(other_ran);
        let (wait_for_item_1, wait_for_other) = (Mutex::new(wait_for_item_1), Mutex::new(wait_for_other));
        let nested = AtomicBool::new(false);
        pool.install(|| {
            MAPPING.with(|m| m.set(true));
            map_on_pool(vec![0, 1], |k| {
                if k == 0 {
                    // item 0 runs here: it ends once the other thread has item 1
                    wait_for_item_1
                        .lock()
                        .expect("lock")
                        .recv_timeout(Duration::from_secs(10))
                        .expect("item 1 started");
                    return;
                }
                let _ = item_1_started.send(());
                // another job, queued on this (the stealing) thread's deque
                let other_ran = other_ran.lock().expect("lock").clone();
                rayon::spawn(move || {
                    let _ = other_ran.send(MAPPING.with(|m| m.get()));
                });
                // give the waiting thread time to take it up, if it would
                if let Ok(inside_map) = wait_for_other.lock().expect("lock").recv_timeout(Duration::from_millis(300)) {
                    nested.store(inside_map, Ordering::SeqCst);
                }
            });
            MAPPING.with(|m| m.set(false));
        });
        assert!(!nested.load(Ordering::SeqCst), "the other job ran on the thread waiting in map_on_pool");
    }
}
