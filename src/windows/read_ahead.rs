//! The window loader's read-ahead on object stores (docs/format.md §10,
//! "Object stores"): while one buffer's row groups are decoded, the next
//! buffer's are fetched, the column chunks a decode reads (`time_series_id`,
//! `chunk_idx`, `values`) of each, coalesced per shard into few concurrent
//! ranged GETs ([`crate::storage::Location::read_ahead`]); the decode then
//! reads them from memory. Memory: the compressed bytes of at most two
//! buffers. Nothing is fetched ahead on a local path.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use crate::error::{Error, Result};
use crate::parquet_read::open_parquet;
use crate::scan::RowGroups;
use crate::storage::{Location, Prefetched};

/// The root columns a row group's decode reads (`chunks::decode`'s projection).
const DECODED_COLUMNS: [&str; 3] = ["time_series_id", "chunk_idx", "values"];

/// Per shard (by path): its location and the byte ranges to fetch of it.
type ShardRanges = BTreeMap<PathBuf, (Location, Vec<Range<u64>>)>;

/// Shards whose row groups one fetch requests at once.
const MAX_CONCURRENT_SHARD_FETCHES: usize = 4;

/// Bytes fetched from the end of a shard before its footer is read: its
/// footer and page index, which the decode reads again, in one GET.
const TAIL_BYTES: u64 = 256 << 10;

/// A shard's footer, and its last bytes until a decode read them.
struct Footer {
    meta: Arc<ParquetMetaData>,
    tail: Option<Prefetched>,
}

/// The footers of a selection's shards, read once, for the byte ranges of
/// their row groups.
#[derive(Default)]
pub(super) struct Footers(Mutex<BTreeMap<PathBuf, Footer>>);

impl Footers {
    fn get(&self, shard: &Location) -> Result<Arc<ParquetMetaData>> {
        let key = shard.to_path_buf();
        if let Some(footer) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(Arc::clone(&footer.meta));
        }
        // a failed GET of the tail is the read's failure (the store's client
        // retried it): reading the footer again would wait as long once more
        let tail = Some(shard.read_ahead_tail(TAIL_BYTES)?);
        let (_, meta) = open_parquet(shard, PageIndexPolicy::Skip)?;
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key, Footer { meta: Arc::clone(&meta), tail });
        Ok(meta)
    }

    /// Frees the tails of the shards of `units` once their decode read them.
    pub(super) fn decoded(&self, rows: &RowGroups, units: &[usize]) {
        let mut footers = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for &u in units {
            if let Some(footer) = footers.get_mut(&rows.origin(u).0.to_path_buf()) {
                footer.tail = None;
            }
        }
    }

    /// Per shard, the byte ranges the decode of `units` (row groups of
    /// `rows`) reads; none for local shards. A row group the footer lacks is
    /// left to the decode, which reports it.
    fn ranges(&self, rows: &RowGroups, units: &[usize]) -> Result<ShardRanges> {
        let mut out = ShardRanges::new();
        for &u in units {
            let (shard, row_group) = rows.origin(u);
            if shard.as_local().is_some() {
                continue;
            }
            let meta = self.get(shard)?;
            let Some(group) = meta.row_groups().get(row_group) else { continue };
            let entry = out.entry(shard.to_path_buf()).or_insert_with(|| (shard.clone(), Vec::new()));
            for column in group.columns() {
                if column.column_path().parts().first().is_some_and(|root| DECODED_COLUMNS.contains(&root.as_str())) {
                    let (start, length) = column.byte_range();
                    entry.1.push(start..start.saturating_add(length));
                }
            }
        }
        Ok(out)
    }
}

/// The bytes of some row groups being fetched (on a thread of its own) or
/// fetched; dropped, it waits for the fetch and frees its bytes.
pub(super) struct Fetch {
    running: Option<JoinHandle<(Vec<Prefetched>, Option<Error>)>>,
    held: Vec<Prefetched>,
    /// The first failure of a footer read or GET.
    failed: Option<Error>,
}

impl Fetch {
    /// Starts fetching the bytes the decode of `units` reads. A footer read
    /// or GET that failed (after the store's client retried it) fails the
    /// fetch ([`Fetch::wait`]): the decode reading those bytes again would
    /// wait as long again, request after request (a server gone mute took
    /// 60-100 s to fail, review 24). What it misses otherwise (a thread that
    /// could not start) the decode reads itself.
    pub(super) fn start(footers: &Footers, rows: &RowGroups, units: &[usize]) -> Fetch {
        let ranges = match footers.ranges(rows, units) {
            Ok(ranges) => ranges,
            Err(e) => return Fetch { running: None, held: Vec::new(), failed: Some(e) },
        };
        // the shards' fetches side by side, a few at a time: one after another, each
        // request's latency adds up (a buffer's row groups are spread over shards)
        let work = move || {
            let shards: Vec<_> = ranges.into_values().collect();
            let (mut held, mut failed) = (Vec::new(), None);
            for group in shards.chunks(MAX_CONCURRENT_SHARD_FETCHES) {
                std::thread::scope(|scope| {
                    let fetch = move |(shard, r): &(Location, Vec<Range<u64>>)| shard.read_ahead(r.clone());
                    // a thread that cannot start leaves its shard to the decode
                    let running: Vec<_> = group
                        .iter()
                        .filter_map(|item| std::thread::Builder::new().spawn_scoped(scope, move || fetch(item)).ok())
                        .collect();
                    for got in running.into_iter().filter_map(|h| h.join().ok()) {
                        match got {
                            Ok(bytes) => held.push(bytes),
                            Err(e) => failed = failed.take().or(Some(e)),
                        }
                    }
                });
                if failed.is_some() {
                    break;
                }
            }
            (held, failed)
        };
        let running = match units.is_empty() {
            true => None,
            false => std::thread::Builder::new().name("timef-read-ahead".into()).spawn(work).ok(),
        };
        Fetch { running, held: Vec::new(), failed: None }
    }

    /// Waits until the fetch ended.
    ///
    /// # Errors
    /// The first failure of the fetch's footer reads and GETs.
    pub(super) fn wait(&mut self) -> Result<()> {
        if let Some(running) = self.running.take() {
            (self.held, self.failed) = running.join().unwrap_or_default();
        }
        self.failed.take().map_or(Ok(()), Err)
    }
}

impl Drop for Fetch {
    fn drop(&mut self) {
        let _ = self.wait();
    }
}
