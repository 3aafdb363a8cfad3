//! One file streaming to an object store: a single PUT while it stays under
//! [`DEFAULT_SINGLE_PUT_BYTES`], past it a multipart upload of parts of that
//! size, at most [`DEFAULT_UPLOAD_CONCURRENCY`] in flight. A finished upload
//! reports the size and ETag the store answered ([`Landed`]), which the commit
//! checks again before it publishes (docs/format.md §1 "Storage backends and
//! the commit"). A failed one reports its own failure: the abort of the
//! multipart upload that follows is best effort, and its error (a
//! `NoSuchUpload` after a failed part, say) is never the one the caller sees.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload, PutResult};
use tokio::task::JoinHandle;

use super::super::{DEFAULT_SINGLE_PUT_BYTES, DEFAULT_UPLOAD_CONCURRENCY};
use super::ObjectLocation;
use crate::error::{Error, Result};
use crate::runtime::{block_on, spawn};

/// What the store holds once an upload finished: its size and the ETag it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landed {
    pub(crate) bytes: u64,
    /// `None` when the store answers no ETag (then only the size is compared).
    pub(crate) e_tag: Option<String>,
}

impl Landed {
    pub(crate) fn of(result: &PutResult, bytes: u64) -> Landed {
        Landed { bytes, e_tag: result.e_tag.clone() }
    }
}

/// A multipart upload in progress and its parts in flight, oldest first.
struct Multipart {
    upload: Box<dyn MultipartUpload>,
    in_flight: VecDeque<JoinHandle<object_store::Result<()>>>,
}

/// A file being uploaded; dropped before [`Upload::finish`], its multipart
/// upload (if any) is aborted.
pub(crate) struct Upload {
    loc: ObjectLocation,
    pending: Vec<u8>,
    multipart: Option<Multipart>,
    bytes: u64,
    /// Where the finished upload's [`Landed`] goes (a version's file, which
    /// the commit checks before it publishes).
    record: Option<Arc<OnceLock<Landed>>>,
    /// Checked right before the object comes to be (the single PUT, or the
    /// multipart completion): a version's file lands only while its writer
    /// holds the claim.
    before_landing: Option<LandingCheck>,
}

/// A check an upload passes right before its object comes to be.
pub(crate) type LandingCheck = Box<dyn Fn() -> Result<()> + Send + Sync>;

impl fmt::Display for Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.loc)
    }
}

impl Upload {
    pub(crate) fn new(loc: ObjectLocation) -> Upload {
        Upload { loc, pending: Vec::new(), multipart: None, bytes: 0, record: None, before_landing: None }
    }

    /// An upload whose [`Landed`] is put into `record` when it finishes, and
    /// whose object comes to be only once `check` passed, right before.
    pub(crate) fn recorded(loc: ObjectLocation, record: Arc<OnceLock<Landed>>, check: LandingCheck) -> Upload {
        let mut upload = Upload::new(loc);
        upload.record = Some(record);
        upload.before_landing = Some(check);
        upload
    }

    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.bytes += buf.len() as u64;
        while self.pending.len() >= DEFAULT_SINGLE_PUT_BYTES {
            let mut rest = Vec::with_capacity(DEFAULT_SINGLE_PUT_BYTES);
            rest.extend_from_slice(&self.pending[DEFAULT_SINGLE_PUT_BYTES..]);
            self.pending.truncate(DEFAULT_SINGLE_PUT_BYTES);
            let part = std::mem::replace(&mut self.pending, rest);
            self.send_part(part).map_err(io::Error::other)?;
        }
        Ok(buf.len())
    }

    /// Starts uploading `part`, once fewer than [`DEFAULT_UPLOAD_CONCURRENCY`]
    /// parts are in flight; the multipart upload starts with the first part.
    fn send_part(&mut self, part: Vec<u8>) -> Result<()> {
        if self.multipart.is_none() {
            let upload = block_on(self.loc.store().put_multipart(&self.loc.path))?.map_err(|e| self.loc.err(e))?;
            self.multipart = Some(Multipart { upload, in_flight: VecDeque::new() });
        }
        let Some(mp) = self.multipart.as_mut() else { return Ok(()) };
        while mp.in_flight.len() >= DEFAULT_UPLOAD_CONCURRENCY {
            if let Some(oldest) = mp.in_flight.pop_front() {
                part_done(&self.loc, oldest)?;
            }
        }
        let put = mp.upload.put_part(PutPayload::from(Bytes::from(part)));
        mp.in_flight.push_back(spawn(put)?);
        Ok(())
    }

    /// Where the file goes.
    pub(crate) fn location(&self) -> &ObjectLocation {
        &self.loc
    }

    /// Completes the file (the last PUT, or the last part and the multipart
    /// completion) and returns what the store holds.
    pub(crate) fn finish(mut self) -> Result<Landed> {
        let landed = match self.complete() {
            Ok(result) => Landed::of(&result, self.bytes),
            Err(e) => {
                if let Some(mp) = self.multipart.take() {
                    abort_quietly(mp);
                }
                return Err(e);
            }
        };
        if let Some(record) = &self.record {
            let _ = record.set(landed.clone());
        }
        Ok(landed)
    }

    fn complete(&mut self) -> Result<PutResult> {
        let last = std::mem::take(&mut self.pending);
        if self.multipart.is_none() {
            if let Some(check) = &self.before_landing {
                check()?;
            }
            let put = self.loc.store().put(&self.loc.path, PutPayload::from(Bytes::from(last)));
            return block_on(put)?.map_err(|e| self.loc.err(e));
        }
        if !last.is_empty() {
            self.send_part(last)?;
        }
        let Some(mp) = self.multipart.as_mut() else {
            return Err(Error::io(self.loc.to_string(), io::Error::other("no upload")));
        };
        while let Some(part) = mp.in_flight.pop_front() {
            part_done(&self.loc, part)?;
        }
        if let Some(check) = &self.before_landing {
            check()?;
        }
        let done = block_on(mp.upload.complete())?.map_err(|e| self.loc.err(e))?;
        self.multipart = None;
        Ok(done)
    }
}

/// Waits for a part's upload; its error, or a task that did not finish.
fn part_done(loc: &ObjectLocation, part: JoinHandle<object_store::Result<()>>) -> Result<()> {
    match block_on(part)? {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(loc.err(e)),
        Err(join) => {
            Err(Error::io(loc.to_string(), io::Error::other(format!("a part's upload did not finish: {join}"))))
        }
    }
}

/// Stops the parts in flight and aborts the multipart upload, best effort:
/// the error that caused the abort is what the caller sees; parts of an
/// uncompleted upload never become an object (docs/format.md).
fn abort_quietly(mut mp: Multipart) {
    for part in &mp.in_flight {
        part.abort();
    }
    let _ = block_on(mp.upload.abort());
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(mp) = self.multipart.take() {
            abort_quietly(mp);
        }
    }
}
