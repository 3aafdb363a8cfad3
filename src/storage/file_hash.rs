//! The sha256 of a file being written ([`super::StagedFile`]), in write
//! order. A file past [`HASH_THREAD_AFTER_BYTES`] is hashed on a thread of
//! its own, so the thread that writes the version's files only writes: the
//! hash of every shard byte was a third of the CPU of an edit, all of it on
//! that thread (`docs/format.md` §7, "Cost follows the change").

use std::io;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

/// Bytes of a file hashed where they are written before its hash moves to a
/// thread of its own (4 MiB): the small tables and the manifest never start one.
pub(crate) const HASH_THREAD_AFTER_BYTES: u64 = 4 << 20;

/// Bytes a written slice is gathered into before it goes to the hashing
/// thread (1 MiB); blocks handed over whole go as they are.
const HASH_BLOCK_BYTES: usize = 1 << 20;

/// Blocks on their way to the hashing thread at most (4): the memory a file's
/// hash holds is bounded by these blocks and the ones it hands back.
const HASH_BLOCKS_IN_FLIGHT: usize = 4;

/// The sha256 of the bytes given so far, in the order given.
pub(crate) struct FileHash {
    state: State,
    /// Bytes given so far.
    bytes: u64,
    /// A hashing thread was asked for (it is not asked again when none started).
    asked: bool,
}

enum State {
    Here(Sha256),
    Thread {
        /// Written slices gathered, not yet sent.
        pending: Vec<u8>,
        blocks: Option<SyncSender<Vec<u8>>>,
        /// Blocks hashed, emptied, for reuse.
        emptied: Receiver<Vec<u8>>,
        done: Option<JoinHandle<Sha256>>,
    },
}

impl FileHash {
    pub(crate) fn new() -> FileHash {
        FileHash { state: State::Here(Sha256::new()), bytes: 0, asked: false }
    }

    /// Adds `buf`.
    pub(crate) fn update(&mut self, buf: &[u8]) {
        self.bytes += buf.len() as u64;
        match &mut self.state {
            State::Here(h) => {
                h.update(buf);
                self.start_thread();
            }
            State::Thread { pending, .. } => {
                pending.extend_from_slice(buf);
                if pending.len() >= HASH_BLOCK_BYTES {
                    self.send_pending();
                }
            }
        }
    }

    /// Adds `block`, taken as it is; returns an empty buffer to reuse (one
    /// the hashing thread is done with, when there is one).
    pub(crate) fn update_owned(&mut self, mut block: Vec<u8>) -> Vec<u8> {
        if matches!(self.state, State::Here(_)) {
            self.update(&block);
            block.clear();
            return block;
        }
        self.bytes += block.len() as u64;
        self.send_pending();
        self.send(block);
        match &self.state {
            State::Thread { emptied, .. } => emptied.try_recv().unwrap_or_default(),
            State::Here(_) => Vec::new(),
        }
    }

    /// The sha256 of every byte given.
    ///
    /// # Errors
    /// When the hashing thread is gone (it panicked).
    pub(crate) fn finish(mut self) -> io::Result<[u8; 32]> {
        self.send_pending();
        let hasher = match &mut self.state {
            State::Here(h) => std::mem::take(h),
            State::Thread { blocks, done, .. } => {
                // its channel closed, the thread hashes what is left and ends
                drop(blocks.take());
                let done = done.take().map(JoinHandle::join);
                done.and_then(Result::ok).ok_or_else(|| io::Error::other("the file's hashing thread ended early"))?
            }
        };
        Ok(hasher.finalize().into())
    }

    /// Moves the hash to a thread of its own once the file is past
    /// [`HASH_THREAD_AFTER_BYTES`]; it stays here when no thread can start
    /// (asked once a file).
    fn start_thread(&mut self) {
        let State::Here(h) = &mut self.state else { return };
        if self.asked || self.bytes < HASH_THREAD_AFTER_BYTES {
            return;
        }
        self.asked = true;
        let hasher = h.clone();
        let (blocks, to_hash) = mpsc::sync_channel::<Vec<u8>>(HASH_BLOCKS_IN_FLIGHT);
        let (give_back, emptied) = mpsc::channel::<Vec<u8>>();
        let thread = std::thread::Builder::new().name("timef-sha256".into()).spawn(move || {
            let mut hasher = hasher;
            for mut block in to_hash {
                hasher.update(&block);
                block.clear();
                // a writer gone (an aborted file) wants no buffer back
                let _ = give_back.send(block);
            }
            hasher
        });
        if let Ok(done) = thread {
            let pending = Vec::with_capacity(HASH_BLOCK_BYTES);
            self.state = State::Thread { pending, blocks: Some(blocks), emptied, done: Some(done) };
        }
    }

    /// Sends the gathered slices, if any, and takes an emptied buffer for the next.
    fn send_pending(&mut self) {
        let State::Thread { pending, emptied, .. } = &mut self.state else { return };
        if pending.is_empty() {
            return;
        }
        let next = emptied.try_recv().unwrap_or_else(|_| Vec::with_capacity(HASH_BLOCK_BYTES));
        let block = std::mem::replace(pending, next);
        self.send(block);
    }

    fn send(&mut self, block: Vec<u8>) {
        let State::Thread { blocks: Some(blocks), done, .. } = &mut self.state else { return };
        if blocks.send(block).is_err() {
            // the thread is gone (it panicked): `finish` reports it
            done.take().map(JoinHandle::join);
        }
    }
}

impl Drop for FileHash {
    /// A file dropped unfinished (an aborted write) ends its hashing thread
    /// before it goes: the thread hashes what it was sent, then stops.
    fn drop(&mut self) {
        if let State::Thread { blocks, done, .. } = &mut self.state {
            drop(blocks.take());
            if let Some(done) = done.take() {
                let _ = done.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    /// Bytes that differ at every offset (a block sent out of order changes the hash).
    fn bytes(n: usize, seed: u32) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn a_small_file_is_hashed_here_and_its_hash_is_its_sha256() {
        let data = bytes(1000, 1);
        let mut h = FileHash::new();
        h.update(&data[..10]);
        h.update(&data[10..]);
        assert!(matches!(h.state, State::Here(_)));
        assert_eq!(h.finish().expect("hash"), sha256(&data));
        assert_eq!(FileHash::new().finish().expect("hash"), sha256(b""));
    }

    #[test]
    fn a_large_file_is_hashed_on_a_thread_in_write_order_whatever_the_mix_of_writes() {
        // slices and owned blocks of every size around the thresholds, interleaved
        let data = bytes(13 << 20, 2);
        let sizes = [1usize, HASH_BLOCK_BYTES - 1, 8192, HASH_THREAD_AFTER_BYTES as usize, 3, HASH_BLOCK_BYTES + 7];
        let mut h = FileHash::new();
        let (mut at, mut k) = (0, 0);
        while at < data.len() {
            let n = sizes[k % sizes.len()].min(data.len() - at);
            if k % 3 == 2 {
                assert!(h.update_owned(data[at..at + n].to_vec()).is_empty());
            } else {
                h.update(&data[at..at + n]);
            }
            at += n;
            k += 1;
        }
        assert!(matches!(h.state, State::Thread { .. }));
        assert_eq!(h.bytes, data.len() as u64);
        assert_eq!(h.finish().expect("hash"), sha256(&data));
    }

    #[test]
    fn a_file_dropped_unfinished_with_blocks_in_flight_ends_its_thread() {
        let mut h = FileHash::new();
        let block = bytes(HASH_BLOCK_BYTES, 3);
        for _ in 0..(HASH_THREAD_AFTER_BYTES as usize / HASH_BLOCK_BYTES + 2 * HASH_BLOCKS_IN_FLIGHT) {
            h.update(&block);
        }
        assert!(matches!(h.state, State::Thread { .. }));
        // joins the thread: had its channel stayed open, this would wait for ever
        drop(h);
    }
}
