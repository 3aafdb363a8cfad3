//! Bytes of objects fetched ahead of their reads (docs/format.md §10, "Object
//! stores"): a reader that knows the ranges it reads next (the window loader's
//! next buffer of row groups) fetches them in few large ranged GETs, coalesced
//! and concurrent, while it decodes what it fetched before; reads that fall in
//! those bytes are then answered from memory, and the object's size (which a
//! read asks with a HEAD) is known from the fetch. Every fetch belongs to an
//! owner that drops it when done, so memory is what the owners hold.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::{GetOptions, GetRange, ObjectStore};

/// Ranges of one object at most this far apart are fetched as one GET (the
/// bytes between are fetched too): `object_store`'s own coalescing distance.
pub(crate) const COALESCE_BYTES: u64 = 1 << 20;
/// Ranged GETs of one fetch in flight at once.
pub(crate) const CONCURRENT_REQUESTS: usize = 8;

/// Owners of fetches, one per fetch of this process.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// Requests and bytes of the reads through one store handle (one opened
/// version), counted since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Requests sent for reads (ranged GETs and HEADs), read-ahead included.
    pub requests: u64,
    /// Bytes those requests returned.
    pub bytes: u64,
    /// Of them, the ranged GETs of read-ahead fetches.
    pub read_ahead_requests: u64,
    /// Bytes of the read-ahead fetches.
    pub read_ahead_bytes: u64,
    /// Reads answered from fetched bytes, without a request.
    pub read_ahead_hits: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    read_ahead_requests: AtomicU64,
    read_ahead_bytes: AtomicU64,
    read_ahead_hits: AtomicU64,
}

/// One fetched range of an object.
struct Piece {
    owner: u64,
    start: u64,
    bytes: Bytes,
}

/// The fetched bytes and object sizes of one store handle, and its counts.
#[derive(Default)]
pub(crate) struct ReadAhead {
    /// Object path -> its pieces.
    pieces: Mutex<BTreeMap<String, Vec<Piece>>>,
    /// Object path -> its size, as a fetch's response gave it.
    sizes: Mutex<BTreeMap<String, u64>>,
    counters: Counters,
}

/// `ranges` sorted and merged where at most [`COALESCE_BYTES`] apart.
pub(crate) fn coalesce(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE_BYTES) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

impl ReadAhead {
    /// Fetches `ranges` of the object at `path`: coalesced, up to
    /// [`CONCURRENT_REQUESTS`] GETs at once, kept until
    /// [`ReadAhead::release`] of the owner returned.
    pub(crate) async fn fetch(
        &self,
        store: &dyn ObjectStore,
        path: &object_store::path::Path,
        ranges: Vec<Range<u64>>,
    ) -> object_store::Result<u64> {
        let owner = NEXT_OWNER.fetch_add(1, Ordering::Relaxed);
        let gets = coalesce(ranges).into_iter().map(|r| async move {
            let options = GetOptions { range: Some(GetRange::Bounded(r.clone())), ..GetOptions::default() };
            let got = store.get_opts(path, options).await?;
            let size = got.meta.size;
            let bytes = got.bytes().await?;
            Ok::<_, object_store::Error>((r.start, size, bytes))
        });
        let fetched: Vec<(u64, u64, Bytes)> =
            futures::stream::iter(gets).buffered(CONCURRENT_REQUESTS).try_collect().await?;
        let key = path.to_string();
        let c = &self.counters;
        for (_, size, bytes) in &fetched {
            c.requests.fetch_add(1, Ordering::Relaxed);
            c.read_ahead_requests.fetch_add(1, Ordering::Relaxed);
            c.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            c.read_ahead_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.sizes.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), *size);
        }
        let mut pieces = self.pieces.lock().unwrap_or_else(|p| p.into_inner());
        let list = pieces.entry(key).or_default();
        list.extend(fetched.into_iter().map(|(start, _, bytes)| Piece { owner, start, bytes }));
        Ok(owner)
    }

    /// Fetches the last `bytes` of the object at `path` (all of it when
    /// smaller: a Parquet file's footer and page index), kept as [`ReadAhead::fetch`]'s.
    pub(crate) async fn fetch_tail(
        &self,
        store: &dyn ObjectStore,
        path: &object_store::path::Path,
        bytes: u64,
    ) -> object_store::Result<u64> {
        let owner = NEXT_OWNER.fetch_add(1, Ordering::Relaxed);
        let options = GetOptions { range: Some(GetRange::Suffix(bytes)), ..GetOptions::default() };
        let got = store.get_opts(path, options).await?;
        let (start, size) = (got.range.start, got.meta.size);
        let tail = got.bytes().await?;
        let c = &self.counters;
        for counter in [&c.requests, &c.read_ahead_requests] {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        for counter in [&c.bytes, &c.read_ahead_bytes] {
            counter.fetch_add(tail.len() as u64, Ordering::Relaxed);
        }
        let key = path.to_string();
        self.sizes.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), size);
        let mut pieces = self.pieces.lock().unwrap_or_else(|p| p.into_inner());
        pieces.entry(key).or_default().push(Piece { owner, start, bytes: tail });
        Ok(owner)
    }

    /// Drops what `owner` fetched.
    pub(crate) fn release(&self, owner: u64) {
        let mut pieces = self.pieces.lock().unwrap_or_else(|p| p.into_inner());
        pieces.retain(|_, list| {
            list.retain(|p| p.owner != owner);
            !list.is_empty()
        });
    }

    /// The bytes `range` of the object at `path`, if fetched.
    pub(crate) fn get(&self, path: &str, range: &Range<u64>) -> Option<Bytes> {
        let pieces = self.pieces.lock().unwrap_or_else(|p| p.into_inner());
        let piece = pieces
            .get(path)?
            .iter()
            .find(|p| p.start <= range.start && range.end <= p.start.saturating_add(p.bytes.len() as u64))?;
        self.counters.read_ahead_hits.fetch_add(1, Ordering::Relaxed);
        let from = (range.start - piece.start) as usize;
        Some(piece.bytes.slice(from..from + (range.end - range.start) as usize))
    }

    /// The size of the object at `path`, if a fetch gave it.
    pub(crate) fn size(&self, path: &str) -> Option<u64> {
        self.sizes.lock().unwrap_or_else(|p| p.into_inner()).get(path).copied()
    }

    /// Counts a request of a read (not fetched ahead) that returned `bytes`.
    pub(crate) fn count(&self, bytes: u64) {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(crate) fn stats(&self) -> ReadStats {
        let c = &self.counters;
        ReadStats {
            requests: c.requests.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            read_ahead_requests: c.read_ahead_requests.load(Ordering::Relaxed),
            read_ahead_bytes: c.read_ahead_bytes.load(Ordering::Relaxed),
            read_ahead_hits: c.read_ahead_hits.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_closer_than_the_coalescing_distance_are_one_request() {
        let mb = 1 << 20;
        let got = coalesce(vec![5 * mb..6 * mb, 0..10, 10..20, 20 + mb..30 + mb, 9 * mb..9 * mb, 3 * mb..4 * mb]);
        assert_eq!(got, vec![0..30 + mb, 3 * mb..6 * mb]);
    }
}
