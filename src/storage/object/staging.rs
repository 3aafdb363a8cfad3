//! The writer's side of the object-store protocol (the parent module's claim,
//! commit and abort; the uploads are `upload.rs`'s): the claim of a version and
//! gc's take-over of a dead writer's, a distributed write's parts' prefix
//! ([`PartPrefix`]) and the version being written ([`Staging`]).

use std::collections::BTreeSet;
use std::fmt;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use sha2::{Digest, Sha256};

use super::super::{check_interrupted, LiveGuard, Small, WrittenFile, CLAIM, MANIFEST, PARTS_MARKER};
use super::upload::{Landed, Upload};
use super::ObjectLocation;
use crate::error::{Error, Result};
use crate::runtime::block_on;

impl ObjectLocation {
    /// Deletes every object under this parts' prefix, its marker
    /// [`PARTS_MARKER`] last: until the marker goes, `gc` finds what is left.
    /// A level that cannot be listed ([`ObjectLocation::list_all`]) keeps the
    /// marker, and is the error.
    fn delete_parts(&self) -> Result<()> {
        let (mut all, unlistable) = self.list_all()?;
        all.sort_by_key(|m| (m.location.filename() == Some(PARTS_MARKER), m.location.clone()));
        for m in all {
            if !unlistable.is_empty() && m.location.filename() == Some(PARTS_MARKER) {
                break;
            }
            self.at(m.location).delete()?;
        }
        if let Some(level) = unlistable.first() {
            return Err(super::cannot_list(&self.join(level)));
        }
        // file://: the prefix's folders go with it
        if let Some(path) = self.file_path() {
            if let (Some(parent), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) {
                super::remove_prefix_folders(parent, name);
            }
        }
        Ok(())
    }
}

/// The writer id a claim holds; `None` when it is gone or unreadable.
pub(in crate::storage) fn claim_writer(claim: &ObjectLocation) -> Result<Option<String>> {
    match claim.read_small(1 << 16)? {
        Small::Bytes(b) => Ok(serde_json::from_slice::<Claim>(&b).ok().map(|c| c.writer_id)),
        Small::Missing | Small::Refused(_) => Ok(None),
    }
}

/// `created_by` of the claim `gc` puts over a dead writer's before it
/// deletes that version's objects (docs/format.md §1 "Clearing a dead
/// writer's claim"): it ages like any claim, so another run leaves it to the
/// run that put it while that run works.
pub(super) const GC_CLAIM_BY: &str = "timef gc";

/// Replaces the dead writer's `claim` with gc's own (a new writer id): that
/// writer, were it alive, then fails its claim check, and the version stays
/// marked until gc deletes the claim, last. Only while the claim is still
/// the one gc judged dead: it is read again, must not be newer than when it
/// was `listed` (its last-modified time then), and must name `dead_writer`
/// (its writer id as read by gc; `None` for one unreadable), and it is
/// replaced with `If-Match` on the ETag just read where the store supports
/// it (object_store's local files do not: there the writer id read a moment
/// before is the check). `false`, with nothing put, when the claim is gone
/// or changed since gc listed it: another gc cleared it, and a new writer
/// may have claimed, or committed, the version since (docs/format.md §1
/// "Clearing a dead writer's claim"). Returns gc's writer id in the claim it
/// put, `None` when it put none.
///
/// # Errors
/// [`Error::ObjectStore`] when the claim cannot be read or put;
/// [`Error::Corrupt`] (`file://`) when it is no longer a regular file (or
/// larger than [`crate::limits::MAX_MANIFEST_BYTES`]).
pub(in crate::storage) fn take_over_claim(
    claim: &ObjectLocation,
    dead_writer: Option<&str>,
    listed: SystemTime,
) -> Result<Option<String>> {
    let (last_modified, version, bytes) = match claim.file_path() {
        // file://: read as markers are, opened without waiting (object_store's
        // local store opens a FIFO put there since the listing as any file,
        // and waits on it forever); no ETag to update on there
        Some(path) => match claim.read_small(crate::limits::MAX_MANIFEST_BYTES)? {
            Small::Missing => return Ok(None),
            Small::Refused(reason) => return Err(Error::Corrupt { path: claim.to_string().into(), reason }),
            Small::Bytes(bytes) => match std::fs::metadata(&path).and_then(|m| m.modified()) {
                Ok(t) => (t, UpdateVersion { e_tag: None, version: None }, Bytes::from(bytes)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::io(&path, e)),
            },
        },
        None => {
            let got = block_on(async {
                let r = claim.store().get(&claim.path).await?;
                let meta = r.meta.clone();
                r.bytes().await.map(|b| (meta, b))
            })?;
            match got {
                Ok((meta, bytes)) => {
                    (meta.last_modified.into(), UpdateVersion { e_tag: meta.e_tag, version: meta.version }, bytes)
                }
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(claim.err(e)),
            }
        }
    };
    // modified since listed (to the second: listings and GETs round differently)
    let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let modified = secs(last_modified) > secs(listed);
    let writer = serde_json::from_slice::<Claim>(&bytes).ok().map(|c| c.writer_id);
    if modified || writer.as_deref() != dead_writer {
        return Ok(None);
    }
    let c = Claim {
        writer_id: new_writer_id(),
        created_at_unix_s: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        created_by: GC_CLAIM_BY.to_string(),
    };
    let body = PutPayload::from(serde_json::to_vec(&c).unwrap_or_default());
    let put =
        |mode| block_on(claim.store().put_opts(&claim.path, body.clone(), PutOptions { mode, ..Default::default() }));
    let updated = match version.e_tag.is_some() || version.version.is_some() {
        true => Some(put(PutMode::Update(version))?),
        false => None,
    };
    let ours = Some(c.writer_id.clone());
    match updated {
        Some(Ok(_)) => Ok(ours),
        Some(Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. })) => Ok(None),
        Some(Err(object_store::Error::NotImplemented { .. } | object_store::Error::NotSupported { .. })) | None => {
            match put(PutMode::Overwrite)? {
                Ok(_) => Ok(ours),
                Err(e) => Err(claim.err(e)),
            }
        }
        Some(Err(e)) => Err(claim.err(e)),
    }
}

/// `format` of the fence `gc` creates at a dead writer's `manifest.json` key
/// once it holds the version's claim, before it deletes any object
/// (docs/format.md §1 "Clearing a dead writer's claim"): a manifest create of
/// that writer landing later (a slow or held request) then fails instead of
/// committing over deleted objects. Not TimeF's `format`: no reader takes it
/// for a version.
pub(in crate::storage) const GC_FENCE_FORMAT: &str = "timef-gc-fence";

/// The fence's content: gc's writer id and when it was put (no secret).
#[derive(serde::Serialize, serde::Deserialize)]
struct Fence {
    format: String,
    writer_id: String,
    created_at_unix_s: u64,
    created_by: String,
}

/// What [`put_fence`] found at a version's manifest key.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::storage) enum Fenced {
    /// The fence was created: no manifest can be created there any more.
    Now,
    /// A fence was there already (a gc run that stopped half way).
    Already,
    /// A manifest that is not a fence is there (its writer committed).
    Manifest,
}

/// Creates gc's fence at `manifest` (`PutMode::Create`) for gc's claim
/// `claim`, which holds `writer_id`. First the store must refuse a second
/// create of that claim, as a writer checks before any data: a store that
/// ignores `If-None-Match: *` would let the fence replace a manifest
/// committed a moment ago.
///
/// # Errors
/// [`Error::UnsafeStore`] for such a store (nothing is put);
/// [`Error::ObjectStore`] when a create or a read fails.
pub(in crate::storage) fn put_fence(
    manifest: &ObjectLocation,
    claim: &ObjectLocation,
    writer_id: &str,
) -> Result<Fenced> {
    if let Small::Bytes(held) = claim.read_small(1 << 16)? {
        let again = PutOptions { mode: PutMode::Create, ..Default::default() };
        match block_on(claim.store().put_opts(&claim.path, PutPayload::from(held), again))? {
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {}
            Ok(_) => {
                return Err(Error::UnsafeStore {
                    url: claim.backend.label.clone(),
                    lacks: format!(
                        "conditional writes: a second create of {claim} with If-None-Match: * was accepted, so \
                         gc's fence could replace a manifest committed a moment ago; gc holds the version's claim \
                         and stopped there: it put no fence and deleted nothing of that version"
                    ),
                })
            }
            Err(e) => return Err(claim.err(e)),
        }
    }
    let fence = Fence {
        format: GC_FENCE_FORMAT.to_string(),
        writer_id: writer_id.to_string(),
        created_at_unix_s: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        created_by: GC_CLAIM_BY.to_string(),
    };
    let body = PutPayload::from(serde_json::to_vec(&fence).unwrap_or_default());
    let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
    match block_on(manifest.store().put_opts(&manifest.path, body, opts))? {
        Ok(_) => Ok(Fenced::Now),
        Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
            Ok(if fence_writer(manifest)?.is_some() { Fenced::Already } else { Fenced::Manifest })
        }
        Err(e) => Err(manifest.err(e)),
    }
}

/// The writer id of gc's fence when `bytes` (a `manifest.json`) are one
/// ([`GC_FENCE_FORMAT`] with a writer id); `None` for anything else.
fn fence_id(bytes: &[u8]) -> Option<String> {
    serde_json::from_slice::<Fence>(bytes)
        .ok()
        .filter(|f| f.format == GC_FENCE_FORMAT && is_writer_id(&f.writer_id))
        .map(|f| f.writer_id)
}

/// True when `bytes` (a `manifest.json`) are gc's fence: a dead writer's
/// version gc cleared, where no version is (docs/format.md §1).
pub(crate) fn is_gc_fence(bytes: &[u8]) -> bool {
    fence_id(bytes).is_some()
}

/// The writer id of gc's fence at `manifest`; `None` when something else,
/// or nothing, is there.
///
/// # Errors
/// [`Error::ObjectStore`] when it cannot be read.
pub(in crate::storage) fn fence_writer(manifest: &ObjectLocation) -> Result<Option<String>> {
    Ok(match manifest.read_small(1 << 16)? {
        Small::Bytes(b) => fence_id(&b),
        Small::Missing | Small::Refused(_) => None,
    })
}

/// A claim's writer id: a UUID v4 in simple form (32 lowercase hex digits),
/// also the write id of a distributed write.
fn new_writer_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// True for a writer id [`new_writer_id`] makes; `gc` only touches parts'
/// prefixes named with one.
pub(in crate::storage) fn is_writer_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `.tmp-<version>-<writer id>`: the name of a distributed write's parts' prefix.
fn parts_name(version: &ObjectLocation, writer_id: &str) -> String {
    format!(".tmp-{}-{writer_id}", version.file_name().unwrap_or_default())
}

/// A worker's view of a distributed write's parts' prefix: uploads go there,
/// each only while the version's claim holds the write id.
#[derive(Clone)]
pub(crate) struct PartPrefix {
    location: ObjectLocation,
    claim: ObjectLocation,
    write_id: String,
}

impl PartPrefix {
    /// The prefix at `location` (`<dataset>/.tmp-<version>-<write_id>`).
    pub(crate) fn new(location: ObjectLocation, version: &str, write_id: &str) -> PartPrefix {
        let claim = location.parent().join(version).join(CLAIM);
        PartPrefix { location, claim, write_id: write_id.to_string() }
    }

    pub(crate) fn location(&self) -> &ObjectLocation {
        &self.location
    }

    /// Checks that the version's claim still holds this write's id.
    ///
    /// # Errors
    /// [`Error::Io`] (`NotFound`) when it does not: the write was committed,
    /// aborted or collected by gc (and maybe another write holds the version).
    pub(crate) fn check_claim(&self) -> Result<()> {
        if claim_writer(&self.claim)?.as_deref() == Some(self.write_id.as_str()) {
            return Ok(());
        }
        let why =
            "the version's claim does not hold this write's id (the write was committed, aborted or collected by gc)";
        Err(Error::io(self.claim.to_string(), io::Error::new(io::ErrorKind::NotFound, why)))
    }

    /// Completes `upload`, a file of this prefix, then checks the claim again:
    /// a write that ended (committed, aborted, collected) while the file was
    /// uploading has deleted its prefix, marker included, so the file is
    /// deleted here rather than left where nothing marks it as a writer's.
    ///
    /// # Errors
    /// As [`Upload::finish`] and [`PartPrefix::check_claim`].
    pub(crate) fn finish(&self, upload: Box<Upload>) -> Result<()> {
        let at = upload.location().clone();
        upload.finish()?;
        self.check_claim().inspect_err(|_| {
            let _ = at.delete();
        })
    }
}

/// The content of a parts' prefix's marker [`PARTS_MARKER`]: whose write it
/// is and since when (no secret).
#[derive(serde::Serialize)]
struct PartsMarker {
    write_id: String,
    version: String,
    created_at_unix_s: u64,
    created_by: String,
}

/// The claim's content: who holds it and since when (no secret).
#[derive(serde::Serialize, serde::Deserialize)]
struct Claim {
    writer_id: String,
    created_at_unix_s: u64,
    created_by: String,
}

/// A version being written on an object store: the claim is held; data files go
/// to their final keys; [`Staging::publish`] writes the manifest. A distributed
/// write's staging also owns its parts' prefix.
pub(crate) struct Staging {
    target: ObjectLocation,
    writer_id: String,
    /// Every object this writer put under the version, and what the store
    /// answered once it was complete (unset until then).
    written: Vec<(ObjectLocation, Arc<OnceLock<Landed>>)>,
    /// Parts of a distributed write upload under [`Staging::parts_location`].
    for_parts: bool,
    manifest: Option<Vec<u8>>,
    published: bool,
    /// `file://` only: the version's directory and those above it that the
    /// claim's put made (none existed before), deepest first; an abort
    /// removes them again when empty, as the local backend does its own.
    made_dirs: Vec<std::path::PathBuf>,
    /// `file://` only: the directories under the version that were not there
    /// when a put of this writer started (its put made them); an abort
    /// removes them when empty, a user's empty folder that was there stays.
    made_below: BTreeSet<std::path::PathBuf>,
    _live: LiveGuard,
}

impl fmt::Debug for Staging {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStaging").field("target", &self.target.to_string()).finish_non_exhaustive()
    }
}

/// Whether the claim of the version at `target` is writer `writer_id`'s.
fn holds_claim(target: &ObjectLocation, writer_id: &str) -> Result<bool> {
    Ok(claim_writer(&target.join(CLAIM))?.is_some_and(|w| w == writer_id))
}

/// The error of a writer whose claim is gone or another writer's.
fn claim_lost(target: &ObjectLocation) -> Error {
    Error::io(
        target.join(CLAIM).to_string(),
        io::Error::other("the claim is no longer this writer's (cleared by gc?); nothing was committed"),
    )
}

impl Staging {
    pub(crate) fn create(target: &ObjectLocation) -> Result<Staging> {
        Staging::claim(target, false)
    }

    pub(crate) fn create_for_parts(target: &ObjectLocation) -> Result<Staging> {
        Staging::claim(target, true)
    }

    fn claim(target: &ObjectLocation, for_parts: bool) -> Result<Staging> {
        target.ensure_absent()?;
        // live before the claim is put: a Ctrl-C from here on aborts the write
        // (which deletes the claim), not the process
        let live = LiveGuard::new();
        let writer_id = new_writer_id();
        let claim = Claim {
            writer_id: writer_id.clone(),
            created_at_unix_s: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            created_by: format!("timef {}", env!("CARGO_PKG_VERSION")),
        };
        let bytes = Bytes::from(serde_json::to_vec(&claim).unwrap_or_default());
        let made_dirs: Vec<std::path::PathBuf> = target.file_path().map_or_else(Vec::new, |dir| {
            dir.ancestors().take_while(|d| d.parent().is_some() && !d.exists()).map(Into::into).collect()
        });
        let claim_loc = target.join(CLAIM);
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match block_on(claim_loc.store().put_opts(&claim_loc.path, PutPayload::from(bytes.clone()), opts))? {
            Ok(_) => {}
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                return Err(Error::AlreadyExists { path: target.to_string().into() })
            }
            Err(e) => return Err(claim_loc.err(e)),
        }
        // a store that ignores `If-None-Match: *` takes a second create of the
        // claim too; then the claim above proves nothing, and two writers could
        // overwrite each other's files: stop before any data is written
        let again = PutOptions { mode: PutMode::Create, ..Default::default() };
        let probe = block_on(claim_loc.store().put_opts(&claim_loc.path, PutPayload::from(bytes), again));
        let refused = match probe {
            Ok(Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. })) => None,
            Ok(Ok(_)) => Some(Error::UnsafeStore {
                url: target.backend.label.clone(),
                lacks: format!(
                    "conditional writes: a second create of {claim_loc} with If-None-Match: * was accepted, \
                     so two writers of one version could overwrite each other's files (a proxy that drops \
                     the header, or a server without the feature); no data file was written"
                ),
            }),
            Ok(Err(e)) => Some(claim_loc.err(e)),
            Err(e) => Some(e),
        };
        if let Some(e) = refused {
            // the claim is deleted only while it is ours (it may have replaced another writer's)
            if claim_writer(&claim_loc).ok().flatten().as_deref() == Some(writer_id.as_str()) {
                let _ = claim_loc.delete();
            }
            return Err(e);
        }
        let staging = Staging {
            target: target.clone(),
            writer_id,
            written: Vec::new(),
            for_parts,
            manifest: None,
            published: false,
            made_dirs,
            made_below: BTreeSet::new(),
            _live: live,
        };
        // a writer may have committed and released its claim just before ours
        staging.target.ensure_absent()?;
        // objects under the prefix that are not ours (left by a writer whose
        // claim was cleared, or put there by hand) would be read by every glob
        // over the version: refuse, like the local backend's non-empty directory
        let (objects, unlistable) = staging.target.list_all()?;
        let foreign = !unlistable.is_empty() || objects.into_iter().any(|m| m.location.filename() != Some(CLAIM));
        // file://: that listing hides a killed upload's `<name>#<n>`, which
        // readers of the version's directory would read
        let hidden = staging.target.file_path().is_some_and(|dir| super::file_left_besides(&dir, &[CLAIM]).is_some());
        if foreign || hidden {
            return Err(Error::NotAVersion {
                path: staging.target.to_string().into(),
                reason: "holds objects but no committed version (no manifest.json); nothing marks them as a writer's, so gc keeps them: remove them by hand or choose another version".into(),
            });
        }
        if for_parts {
            // first in the parts' prefix: what marks it as this write's for gc
            // (docs/format.md §1 "Distributed writes")
            let marker = staging.parts_location().join(PARTS_MARKER);
            let bytes = serde_json::to_vec(&PartsMarker {
                write_id: staging.writer_id.clone(),
                version: target.file_name().unwrap_or_default(),
                created_at_unix_s: claim.created_at_unix_s,
                created_by: claim.created_by.clone(),
            })
            .unwrap_or_default();
            block_on(marker.store().put(&marker.path, PutPayload::from(bytes)))?.map_err(|e| marker.err(e))?;
        }
        Ok(staging)
    }

    pub(crate) fn location(&self) -> &ObjectLocation {
        &self.target
    }

    pub(crate) fn writer_id(&self) -> &str {
        &self.writer_id
    }

    /// `<dataset>/.tmp-<version>-<writer id>`: where a distributed write's parts upload.
    pub(crate) fn parts_location(&self) -> ObjectLocation {
        self.target.parent().join(&parts_name(&self.target, &self.writer_id))
    }

    /// Starts the upload of `rel`, while the claim is this writer's, and the
    /// upload checks it again right before its object comes to be: a writer
    /// whose claim was replaced (two creates that both landed on a store whose
    /// conditional create is not atomic) or cleared stops before it writes a
    /// key another writer may have committed (docs/format.md §1).
    ///
    /// # Errors
    /// An I/O error naming the claim when it is no longer this writer's.
    pub(crate) fn create_file(&mut self, rel: &str) -> Result<Upload> {
        if !self.holds_claim()? {
            return Err(claim_lost(&self.target));
        }
        let loc = self.target.join(rel);
        self.note_new_dirs(&loc);
        let record = Arc::new(OnceLock::new());
        self.written.push((loc.clone(), Arc::clone(&record)));
        let (target, writer_id) = (self.target.clone(), self.writer_id.clone());
        let check = move || match holds_claim(&target, &writer_id)? {
            true => Ok(()),
            false => Err(claim_lost(&target)),
        };
        Ok(Upload::recorded(loc, record, Box::new(check)))
    }

    /// `file://`: records the directories between the version and `key` that
    /// are not there yet, before its put makes them ([`Staging::made_below`]).
    fn note_new_dirs(&mut self, key: &ObjectLocation) {
        let (Some(top), Some(path)) = (self.target.file_path(), key.file_path()) else { return };
        let below = path.ancestors().skip(1).take_while(|d| *d != top && d.starts_with(&top));
        self.made_below.extend(below.filter(|d| !d.exists()).map(Into::into));
    }

    /// Copies the part file `rel` from the parts' prefix onto its key under the
    /// version, while the claim is this writer's; returns the copy.
    pub(crate) fn copy_part_file(&mut self, rel: &str) -> Result<ObjectLocation> {
        if !self.holds_claim()? {
            return Err(claim_lost(&self.target));
        }
        let from = self.parts_location().join(rel);
        self.copy_recorded(&from, rel)?;
        Ok(self.target.join(rel))
    }

    /// The store's server-side copy of `from` onto `rel` of the version,
    /// recorded with its size and ETag as an upload's; returns its size.
    fn copy_recorded(&mut self, from: &ObjectLocation, rel: &str) -> Result<u64> {
        let to = self.target.join(rel);
        self.note_new_dirs(&to);
        let record = Arc::new(OnceLock::new());
        self.written.push((to.clone(), Arc::clone(&record)));
        block_on(self.target.store().copy(&from.path, &to.path))?.map_err(|e| from.err(e))?;
        // a copy answers no ETag: what the store holds right after it is what this writer put
        let meta = block_on(self.target.store().head(&to.path))?.map_err(|e| to.err(e))?;
        let _ = record.set(Landed { bytes: meta.size, e_tag: meta.e_tag });
        Ok(meta.size)
    }

    /// Copies `from` (a finished file of another version, on this store)
    /// onto `rel` of the version with the store's server-side copy, while the
    /// claim is this writer's, and records it as an upload's size and ETag
    /// are (what the commit checks); returns its size. `None` when `from` is
    /// on another store, or on `file://` when the copy (a hard link) is
    /// refused, e.g. across devices (then nothing is left of it: the writer
    /// builds the file from the base's pages).
    pub(crate) fn copy_file(&mut self, rel: &str, from: &ObjectLocation) -> Result<Option<u64>> {
        if from.backend.identity != self.target.backend.identity {
            return Ok(None);
        }
        if !self.holds_claim()? {
            return Err(claim_lost(&self.target));
        }
        match self.copy_recorded(from, rel) {
            Err(_) if from.file_path().is_some() => {
                let to = self.target.join(rel);
                self.written.retain(|(written, _)| written.path != to.path);
                Ok(None)
            }
            copied => copied.map(Some),
        }
    }

    pub(crate) fn stage_manifest(&mut self, bytes: Vec<u8>) -> WrittenFile {
        let written = WrittenFile {
            path: MANIFEST.to_string(),
            bytes: bytes.len() as u64,
            sha256: hex::encode(Sha256::digest(&bytes)),
        };
        self.manifest = Some(bytes);
        written
    }

    /// Checks that every file this writer put still has the size and ETag
    /// the store answered for it: another writer (one whose claim was
    /// cleared, or one on a store that ignored the claim's condition) may have
    /// put other bytes at the same key.
    fn check_files(&self) -> Result<()> {
        for (loc, landed) in &self.written {
            let changed = |found: String| {
                Error::io(
                    loc.to_string(),
                    io::Error::other(format!(
                        "changed since this writer put it ({found}); another writer wrote the version; nothing was committed"
                    )),
                )
            };
            let Some(landed) = landed.get() else {
                return Err(changed("its upload never finished".into()));
            };
            let meta = match block_on(loc.store().head(&loc.path))? {
                Ok(meta) => meta,
                Err(object_store::Error::NotFound { .. }) => return Err(changed("it is gone".into())),
                Err(e) => return Err(loc.err(e)),
            };
            let tag_differs = matches!((&landed.e_tag, &meta.e_tag), (Some(a), Some(b)) if a != b);
            if meta.size != landed.bytes || tag_differs {
                return Err(changed(format!(
                    "written: {} bytes, ETag {}; found: {} bytes, ETag {}",
                    landed.bytes,
                    landed.e_tag.as_deref().unwrap_or("-"),
                    meta.size,
                    meta.e_tag.as_deref().unwrap_or("-")
                )));
            }
        }
        Ok(())
    }

    /// True while the claim is this writer's.
    fn holds_claim(&self) -> Result<bool> {
        holds_claim(&self.target, &self.writer_id)
    }

    pub(crate) fn publish(mut self) -> Result<std::path::PathBuf> {
        let Some(bytes) = self.manifest.take() else {
            return Err(Error::io(self.target.to_string(), io::Error::other("no manifest was staged")));
        };
        if !self.holds_claim()? {
            return Err(claim_lost(&self.target));
        }
        self.check_files()?;
        // the last moment a Ctrl-C can stop the commit
        check_interrupted(self.target.to_string())?;
        crate::storage::pause_point("manifest-put");
        let manifest = self.target.join(MANIFEST);
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match block_on(manifest.store().put_opts(&manifest.path, PutPayload::from(bytes.clone()), opts))? {
            Ok(_) => {}
            Err(e) => {
                // a retried or timed-out create may have landed: if the manifest
                // there is ours, the version is committed (and must not be aborted)
                if matches!(manifest.read_small(bytes.len() as u64 + 1), Ok(Small::Bytes(ref b)) if *b == bytes) {
                    self.published = true;
                    let _ = self.target.join(CLAIM).delete();
                    return Ok(self.target.to_string().into());
                }
                // gc's fence: gc cleared this writer's claim and deletes its
                // objects; nothing was committed
                if fence_writer(&manifest).ok().flatten().is_some() {
                    return Err(claim_lost(&self.target));
                }
                // whatever the manifest there is, its files must stay
                if manifest.size().ok().flatten().is_some() {
                    self.published = true;
                }
                return Err(match e {
                    object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. } => {
                        Error::AlreadyExists { path: self.target.to_string().into() }
                    }
                    e => manifest.err(e),
                });
            }
        }
        self.published = true;
        // committed; a claim left by a failed delete is cleared by gc
        let _ = self.target.join(CLAIM).delete();
        Ok(self.target.to_string().into())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            // only while the claim is ours and no manifest is there: otherwise
            // these keys may be another writer's, or a committed version's, files
            let committed = !matches!(self.target.join(MANIFEST).size(), Ok(None));
            if !committed && self.holds_claim().unwrap_or(false) {
                let mut all_deleted = true;
                for (loc, _) in &self.written {
                    all_deleted &= loc.delete().is_ok();
                }
                // a claim over files that could not be deleted is what lets gc find them
                if all_deleted {
                    let _ = self.target.join(CLAIM).delete();
                    // deepest first; one not empty (or gone) stays as it is
                    let mut below: Vec<&std::path::PathBuf> = self.made_below.iter().collect();
                    below.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
                    for dir in below {
                        let _ = std::fs::remove_dir(dir);
                    }
                }
            }
        }
        // committed or not, the parts' prefix is this write's alone (its name
        // holds the writer id); what a failed delete leaves there, marker
        // last, gc removes once no live claim holds the id
        if self.for_parts {
            let _ = self.parts_location().delete_parts();
        }
        if !self.published {
            // file://: what the claim made, once empty again (the first that
            // is not ends it: those above hold it)
            for dir in &self.made_dirs {
                if std::fs::remove_dir(dir).is_err() {
                    break;
                }
            }
        }
    }
}
