//! The object-store backend (`s3://`, `gs://`, `az://`, `file://`, `memory://`)
//! and its commit protocol (docs/format.md "Storage backends and the commit"):
//!
//! 1. Refuse a version whose `manifest.json` exists ([`Error::AlreadyExists`]).
//! 2. Create the claim `<version>/_timef_claim.json` with `PutMode::Create`
//!    (S3 `If-None-Match: *`): of two writers of one version only one wins; the
//!    other gets [`Error::AlreadyExists`] before it writes any byte. Then check
//!    again that no manifest exists (a writer that committed and released its
//!    claim just before).
//!    Create the claim a second time the same way: a store that accepts that
//!    ignores conditional writes, and the write stops ([`Error::UnsafeStore`])
//!    before any data file is written.
//! 3. Stream every data file to its final key (`Upload`: one PUT up to
//!    [`super::DEFAULT_SINGLE_PUT_BYTES`], multipart past it), keeping the size
//!    and ETag the store answered. Readers ignore a prefix without a manifest,
//!    so nothing is visible yet.
//! 4. Check the claim is still this writer's and every file still has the
//!    size and ETag it was written with, write `manifest.json` with
//!    `PutMode::Create`: the version is now visible, and never replaced.
//! 5. Delete the claim.
//!
//! Abort (an error, a drop, Ctrl-C through [`super::interrupt`]) aborts the
//! open multipart uploads, deletes every object this writer put and then the
//! claim, but only while the claim is still this writer's. A writer killed
//! outright leaves its claim and objects: [`super::gc`] clears them.
//!
//! A distributed write ([`super::Staging::create_for_parts`]) claims the version the
//! same way, with the write id as the claim's writer id; its workers upload
//! only under the parts' prefix `<dataset>/.tmp-<version>-<write id>/` beside
//! the version (`PartPrefix`, checking the claim before and after each
//! file), and the commit copies each part file onto its key under the version
//! while it holds the claim, so no worker ever writes a key of the version.
//! The coordinator puts the prefix's marker [`PARTS_MARKER`](super::PARTS_MARKER) first; the prefix
//! is deleted, marker last, after the commit or abort; what a dead write
//! leaves there, [`super::gc`] removes (docs/format.md §1 "Distributed writes").

use std::fmt;
use std::io::{self, Read};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};

use super::store_options;
use super::{Small, StorageOptions, MANIFEST};
use crate::error::{Error, Result};
use crate::runtime::{block_on, PerProcess};

mod client;
mod file_url;
mod read_ahead;
mod staging;
mod upload;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use client::cloud_store;
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub use client::install_tls_provider;
use client::redact;
pub(in crate::storage) use file_url::{
    file_left_besides, remove_empty_dir_nofollow, remove_file_nofollow, remove_prefix_folders,
};
use read_ahead::ReadAhead;
pub use read_ahead::ReadStats;
pub(crate) use staging::is_gc_fence;
pub(super) use staging::{
    claim_writer, fence_writer, is_writer_id, put_fence, take_over_claim, Fenced, GC_FENCE_FORMAT,
};
pub(crate) use staging::{PartPrefix, Staging};
pub(crate) use upload::Upload;

/// Bytes of the first ranged GET behind a sequential read (`ChunkReader::get_read`,
/// which parquet calls per page: mostly a page header and its page); each next
/// GET doubles, up to [`READ_BLOCK_MAX_BYTES`].
const READ_BLOCK_BYTES: u64 = 16 << 10;
/// Largest ranged GET behind a sequential read.
const READ_BLOCK_MAX_BYTES: u64 = 4 << 20;

/// Builds a store's client again in a forked child ([`runtime`]).
type Rebuild = Box<dyn Fn() -> object_store::Result<Arc<dyn ObjectStore>> + Send + Sync>;

/// One store and the URL prefix that names it (`s3://bucket`), without credentials.
struct Backend {
    /// The client this process uses (see [`crate::runtime::PerProcess`]).
    store: PerProcess<Arc<dyn ObjectStore>>,
    /// The client as first built, for a store that is not rebuilt.
    first: Arc<dyn ObjectStore>,
    /// How a child process builds its own client (from the parent's settings,
    /// the environment not read again); `None` for a store without connections
    /// (`memory://`) or one the caller built.
    rebuild: Option<Rebuild>,
    label: String,
    /// What makes two handles one store, so that a server-side copy between
    /// them is asked of the store that holds the source: the sha256 of the
    /// label and the client options (endpoint, region, ...; never shown, as
    /// it may cover a credential) for a store built from a URL, the client's
    /// address for one the caller built. Two spellings of one endpoint are
    /// two stores here (the shard is then built from the base's pages: slower, never wrong).
    identity: String,
    /// Bytes fetched ahead of reads through this handle, and its read counts.
    read_ahead: ReadAhead,
}

impl Backend {
    fn new(store: Arc<dyn ObjectStore>, rebuild: Option<Rebuild>, label: String, identity: String) -> Backend {
        Backend {
            store: PerProcess::with(Arc::clone(&store)),
            first: store,
            rebuild,
            label,
            identity,
            read_ahead: ReadAhead::default(),
        }
    }

    /// This process's client: the first one, or in a forked child one built
    /// again. The rebuild repeats, from the same settings, a build that already
    /// succeeded; should it fail all the same, its error is reported by the
    /// first request (through the parent's client, which fails or hangs).
    fn store(&self) -> &Arc<dyn ObjectStore> {
        let Some(rebuild) = &self.rebuild else { return &self.first };
        self.store
            .get_or_try_init(|| {
                rebuild().map_err(|e| Error::ObjectStore { url: self.label.clone(), source: Box::new(e) })
            })
            .unwrap_or(&self.first)
    }
}

/// A path on an object store.
#[derive(Clone)]
pub(crate) struct ObjectLocation {
    backend: Arc<Backend>,
    path: ObjPath,
}

impl fmt::Display for ObjectLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.as_ref().is_empty() {
            write!(f, "{}", self.backend.label)
        } else {
            write!(f, "{}/{}", self.backend.label, self.path)
        }
    }
}

/// The in-memory stores of this process by URL host, so that every location
/// naming one sees the same objects (`object_store` parses `memory:///prefix`
/// only, so URLs share the store of the empty host).
fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
    static STORES: OnceLock<Mutex<std::collections::BTreeMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let stores = STORES.get_or_init(Default::default);
    let mut stores = stores.lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(stores.entry(name.to_string()).or_insert_with(|| Arc::new(object_store::memory::InMemory::new()) as _))
}

/// Why a level of a listing is reported and not looked into ([`ObjectLocation::list_all`]).
pub(crate) const UNLISTABLE: &str = "holds a key the object-store client cannot name (an empty or a `.` or `..` \
     segment, as in `a//b`, or a control character), so what is under it cannot be listed; kept (rename or remove that key by hand)";

/// How long [`until_interrupted`] waits between two looks whether it was
/// asked to stop ([`super::interrupt`], Ctrl-C).
const INTERRUPT_LOOK: std::time::Duration = std::time::Duration::from_millis(100);

/// `fut`'s output, unless a Ctrl-C asks to stop first: a request to a
/// stalled or mute store then ends at once (`fut` is dropped, and its request
/// with it) with the interrupt naming `at`, not after the store's timeouts.
/// `fut` is polled in place between looks, never dropped but then. Only for
/// reads a stop may end: never for an abort's own requests (its deletes),
/// which run after the Ctrl-C.
async fn until_interrupted<F: std::future::Future>(fut: F, at: &str) -> Result<F::Output> {
    let mut fut = std::pin::pin!(fut);
    loop {
        match tokio::time::timeout(INTERRUPT_LOOK, fut.as_mut()).await {
            Ok(out) => return Ok(out),
            Err(_) => super::check_interrupted(at)?,
        }
    }
}

/// Objects listed, relative and `/`-separated, each with a figure (its size
/// or its time), and the levels that could not be listed ([`UNLISTABLE`]).
pub(crate) type Listing<T> = (Vec<(String, T)>, Vec<String>);

/// One level listed with a delimiter: its common prefixes' names, and its
/// objects' names with their times.
pub(super) type LevelListing = (Vec<String>, Vec<(String, SystemTime)>);

/// True when `path` is strictly below `level`.
fn below(path: &ObjPath, level: &ObjPath) -> bool {
    path.prefix_match(level).is_some_and(|mut rest| rest.next().is_some())
}

/// The error of a listing that needs every object under `level`, which
/// cannot be listed ([`UNLISTABLE`]).
pub(crate) fn cannot_list(level: &ObjectLocation) -> Error {
    Error::io(level.to_string(), std::io::Error::other(format!("cannot list: {UNLISTABLE}")))
}

fn invalid(url: &str, reason: impl Into<String>) -> Error {
    Error::InvalidUrl { url: url.to_string(), reason: reason.into() }
}

/// Hosts whose `https://` URLs name the bucket or container as the first path
/// segment (as `object_store::ObjectStoreScheme::parse` reads them), besides
/// `s3*.amazonaws.com`.
const PATH_STYLE_HOSTS: [&str; 5] = [
    "dfs.core.windows.net",
    "blob.core.windows.net",
    "dfs.fabric.microsoft.com",
    "blob.fabric.microsoft.com",
    "r2.cloudflarestorage.com",
];

impl ObjectLocation {
    /// Parses `text` as an object-store URL and builds its client.
    pub(crate) fn parse(text: &str, options: &StorageOptions) -> Result<ObjectLocation> {
        let shown = redact(text);
        // the clients' own error texts repeat the URL, so one that carries a
        // secret is refused before any of them sees it (review 132: before the
        // URL parser, which named `file://u:p@/path` an invalid domain name)
        let refused = || {
            invalid(
                &shown,
                "user info, a query or a fragment is not accepted in a store URL: give credentials through the environment or storage options",
            )
        };
        if client::has_user_info(text) {
            return Err(refused());
        }
        let url = url::Url::parse(text).map_err(|e| invalid(&shown, e.to_string()))?;
        if !url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some() {
            return Err(refused());
        }
        let (scheme, path) =
            object_store::ObjectStoreScheme::parse(&url).map_err(|e| invalid(&shown, e.to_string()))?;
        let path = ObjPath::parse(path).map_err(|e| invalid(&shown, e.to_string()))?;
        let (retry, options) = store_options::split_retry(&shown, options)?;
        // the options' part of the store's identity (Backend::identity)
        let mut identity = Sha256::new();
        for (k, v) in &options {
            identity.update(format!("{}\0{k}\0{v}\0", k.len()));
        }
        use object_store::ObjectStoreScheme as S;
        let host = url.host_str().unwrap_or("");
        let (store, rebuild): (Arc<dyn ObjectStore>, Option<Rebuild>) = match scheme {
            // durable like the local backend: data, manifest and directories fsynced
            S::Local => {
                let local =
                    || Arc::new(object_store::local::LocalFileSystem::new().with_fsync(true)) as Arc<dyn ObjectStore>;
                (local(), Some(Box::new(move || Ok(local()))))
            }
            S::Memory => (memory_store(host), None),
            #[cfg(feature = "s3")]
            S::AmazonS3 => cloud_store!(
                object_store::aws::AmazonS3Builder,
                object_store::aws::AmazonS3ConfigKey,
                url,
                options,
                retry,
                [object_store::aws::AmazonS3ConfigKey::Endpoint, object_store::aws::AmazonS3ConfigKey::S3Endpoint]
            ),
            #[cfg(feature = "gcs")]
            S::GoogleCloudStorage => cloud_store!(
                object_store::gcp::GoogleCloudStorageBuilder,
                object_store::gcp::GoogleConfigKey,
                url,
                options,
                retry,
                []
            ),
            #[cfg(feature = "azure")]
            S::MicrosoftAzure => cloud_store!(
                object_store::azure::MicrosoftAzureBuilder,
                object_store::azure::AzureConfigKey,
                url,
                options,
                retry,
                [object_store::azure::AzureConfigKey::Endpoint]
            ),
            other => {
                return Err(invalid(
                    &shown,
                    format!("{other:?} is not supported by this build (cargo features s3, gcs, azure)"),
                ))
            }
        };
        let _ = retry;
        // a path-style URL (`https://s3.<region>.amazonaws.com/<bucket>/..`, R2,
        // Azure blob) names its bucket or container in the path: part of the
        // store, not of the path inside it. The hosts are those for which
        // `ObjectStoreScheme::parse` takes the first segment off the path (a
        // count of segments would not do: it decodes `%2F` into a separator).
        let bucket_in_path = url.scheme() == "https"
            && (PATH_STYLE_HOSTS.iter().any(|end| host.ends_with(end))
                || (host.ends_with("amazonaws.com") && host.starts_with("s3")));
        let bucket = bucket_in_path.then(|| url.path_segments().and_then(|mut s| s.next())).flatten();
        let label = match (scheme, bucket.filter(|b| !b.is_empty())) {
            (S::Local, _) => "file://".to_string(),
            (_, Some(bucket)) => format!("{}://{host}/{bucket}", url.scheme()),
            (_, None) => format!("{}://{host}", url.scheme()),
        };
        let identity = hex::encode(identity.chain_update(&label).finalize());
        Ok(ObjectLocation { backend: Arc::new(Backend::new(store, rebuild, label, identity)), path })
    }

    pub(crate) fn from_store(store: Arc<dyn ObjectStore>, label: &str, prefix: &str) -> Result<ObjectLocation> {
        let path = ObjPath::parse(prefix).map_err(|e| invalid(label, e.to_string()))?;
        let identity = format!("{label}@{:p}", Arc::as_ptr(&store));
        Ok(ObjectLocation { backend: Arc::new(Backend::new(store, None, label.to_string(), identity)), path })
    }

    pub(crate) fn join(&self, rel: &str) -> ObjectLocation {
        let path = rel.split('/').filter(|p| !p.is_empty()).fold(self.path.clone(), |p, part| p.join(part));
        ObjectLocation { backend: Arc::clone(&self.backend), path }
    }

    /// The local path of a `file://` location; None on any other store. Each
    /// part of the key is one directory or file name, as object_store's local
    /// store names the files it writes (its URL round trip leaves a part as
    /// it is); never read as a URL, where a `#` would end the path and a `%41`
    /// would be decoded.
    pub(super) fn file_path(&self) -> Option<std::path::PathBuf> {
        if self.backend.label != "file://" {
            return None;
        }
        Some(self.path.parts().fold(std::path::PathBuf::from("/"), |p, part| p.join(part.as_ref())))
    }

    pub(crate) fn file_name(&self) -> Option<String> {
        self.path.filename().map(str::to_string)
    }

    /// The location one segment up (itself at the store's root).
    fn parent(&self) -> ObjectLocation {
        let parts: Vec<_> = self.path.parts().collect();
        let path = ObjPath::from_iter(parts[..parts.len().saturating_sub(1)].iter().cloned());
        ObjectLocation { backend: Arc::clone(&self.backend), path }
    }

    /// The object at `path` of this location's store.
    /// Every prefix above this one, nearest first, the store's root last.
    pub(crate) fn ancestors(&self) -> Vec<ObjectLocation> {
        let parts: Vec<_> = self.path.parts().collect();
        (0..parts.len()).rev().map(|k| self.at(parts[..k].iter().cloned().collect())).collect()
    }

    fn at(&self, path: ObjPath) -> ObjectLocation {
        ObjectLocation { backend: Arc::clone(&self.backend), path }
    }

    fn store(&self) -> &Arc<dyn ObjectStore> {
        self.backend.store()
    }

    /// The error of a request on this location (the URL names it, never a
    /// credential): [`Error::Missing`] when the store answered that the bucket
    /// or container does not exist, else [`Error::ObjectStore`].
    fn err(&self, source: object_store::Error) -> Error {
        let kind = match crate::error::xml_error(&source.to_string()) {
            Some((code, _)) if code == "NoSuchBucket" => Some("no such bucket"),
            Some((code, _)) if code == "ContainerNotFound" => Some("no such container"),
            _ => None,
        };
        match kind {
            Some(what) => Error::Missing { path: self.backend.label.clone().into(), what: what.into() },
            None => Error::ObjectStore { url: self.to_string(), source: Box::new(source) },
        }
    }

    /// True when the store holds something at this location: an object under
    /// the prefix, or (the store's root) the bucket itself.
    ///
    /// # Errors
    /// [`Error::Missing`] when the bucket or container does not exist; store errors.
    pub(crate) fn exists(&self) -> Result<bool> {
        let prefix = (!self.path.as_ref().is_empty()).then_some(&self.path);
        let listed = block_on(self.store().list_with_delimiter(prefix))?.map_err(|e| self.err(e))?;
        Ok(prefix.is_none() || !listed.objects.is_empty() || !listed.common_prefixes.is_empty())
    }

    pub(crate) fn size(&self) -> Result<Option<u64>> {
        match block_on(self.store().head(&self.path))? {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(e)),
        }
    }

    pub(crate) fn read_small(&self, max_bytes: u64) -> Result<Small> {
        // file://: read as a local root's markers are (object_store's local
        // store opens a FIFO as any file, and waits on it forever)
        if let Some(path) = self.file_path() {
            return super::local::read_small(&path, None, max_bytes);
        }
        let got = block_on(async {
            let r = self.store().get(&self.path).await?;
            if r.meta.size > max_bytes {
                return Ok(None);
            }
            r.bytes().await.map(Some)
        })?;
        match got {
            Ok(Some(b)) => Ok(Small::Bytes(b.to_vec())),
            Ok(None) => Ok(Small::Refused(format!("larger than {max_bytes} bytes"))),
            Err(object_store::Error::NotFound { .. }) => Ok(Small::Missing),
            Err(e) => Err(self.err(e)),
        }
    }

    /// `file://`: refuses ([`Error::Corrupt`]) a key whose file is not a
    /// regular file (object_store's local store opens a FIFO as any file, and
    /// the read then waits forever; a socket or device fails it) or is a loop
    /// of symbolic links. Other stores, and a missing file, pass: the store
    /// says so as it would.
    fn refuse_special_file(&self) -> Result<()> {
        let Some(path) = self.file_path() else { return Ok(()) };
        let reason = match std::fs::metadata(path) {
            Ok(m) if !m.is_file() && !m.is_dir() => "not a regular file",
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => "a loop of symbolic links",
            _ => return Ok(()),
        };
        Err(Error::Corrupt { path: self.to_string().into(), reason: reason.into() })
    }

    pub(crate) fn stream(&self, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<u64> {
        self.refuse_special_file()?;
        let at = self.to_string();
        block_on(async {
            let got = until_interrupted(self.store().get(&self.path), &at).await?;
            let mut s = got.map_err(|e| self.err(e))?.into_stream();
            let mut total = 0u64;
            while let Some(block) = until_interrupted(s.next(), &at).await? {
                let block = block.map_err(|e| self.err(e))?;
                f(&block)?;
                total += block.len() as u64;
            }
            Ok(total)
        })?
    }

    pub(crate) fn reader(&self) -> Result<ObjectReader> {
        let read_ahead = &self.backend.read_ahead;
        if let Some(len) = read_ahead.size(self.path.as_ref()) {
            return Ok(ObjectReader { loc: self.clone(), len });
        }
        self.refuse_special_file()?;
        read_ahead.count(0);
        let len = match block_on(self.store().head(&self.path))? {
            Ok(meta) => meta.size,
            Err(e) => return Err(self.err(e)),
        };
        Ok(ObjectReader { loc: self.clone(), len })
    }

    /// Fetches `ranges` of this object ahead of its reads ([`read_ahead`]:
    /// coalesced, concurrent GETs): reads of those bytes through this store
    /// handle are answered from memory until [`ObjectLocation::release_read_ahead`]
    /// of the owner returned.
    pub(crate) fn read_ahead(&self, ranges: Vec<Range<u64>>) -> Result<u64> {
        let fetched = block_on(self.backend.read_ahead.fetch(self.store().as_ref(), &self.path, ranges))?;
        fetched.map_err(|e| self.err(e))
    }

    /// Fetches the last `bytes` of this object ahead of its reads, as [`ObjectLocation::read_ahead`].
    pub(crate) fn read_ahead_tail(&self, bytes: u64) -> Result<u64> {
        let fetched = block_on(self.backend.read_ahead.fetch_tail(self.store().as_ref(), &self.path, bytes))?;
        fetched.map_err(|e| self.err(e))
    }

    /// Drops the bytes `owner` fetched ahead.
    pub(crate) fn release_read_ahead(&self, owner: u64) {
        self.backend.read_ahead.release(owner);
    }

    /// Requests and bytes of the reads through this store handle so far.
    pub(crate) fn read_stats(&self) -> ReadStats {
        self.backend.read_ahead.stats()
    }

    /// Every object under this prefix as (relative path, size), sorted, and
    /// the levels that could not be listed ([`ObjectLocation::list_all`]).
    pub(crate) fn list_files(&self) -> Result<Listing<u64>> {
        let (metas, unlistable) = self.list_all_below()?;
        let mut out: Vec<(String, u64)> =
            metas.into_iter().filter_map(|m| Some((self.relative(&m.location)?, m.size))).collect();
        out.sort();
        Ok((out, unlistable))
    }

    /// [`ObjectLocation::list_all`], failing ([`cannot_list`]) when this
    /// prefix's own level cannot be listed: then nothing under it is known.
    fn list_all_below(&self) -> Result<(Vec<object_store::ObjectMeta>, Vec<String>)> {
        let (metas, unlistable) = self.list_all()?;
        match unlistable.iter().any(String::is_empty) {
            true => Err(cannot_list(self)),
            false => Ok((metas, unlistable)),
        }
    }

    /// `path` relative to this prefix, `/`-separated; `None` when not under it.
    fn relative(&self, path: &ObjPath) -> Option<String> {
        let rel: Vec<String> = path.prefix_match(&self.path)?.map(|p| p.as_ref().to_string()).collect();
        Some(rel.join("/"))
    }

    /// Every object under this prefix. A key under it that the client cannot
    /// name (an empty or a `.`/`..` segment, as in `logs//run.txt`: S3 takes
    /// such keys, `object_store` refuses the page of a listing that holds one)
    /// makes the listing go level by level instead, and each level below this
    /// prefix that holds such a key is returned apart (relative to it, sorted):
    /// nothing under it is known (`""` when it is this prefix's own level).
    fn list_all(&self) -> Result<(Vec<object_store::ObjectMeta>, Vec<String>)> {
        let prefix = (!self.path.as_ref().is_empty()).then_some(&self.path);
        let all = block_on(self.store().list(prefix).collect::<Vec<_>>())?;
        match all.into_iter().collect::<std::result::Result<Vec<_>, _>>() {
            Ok(all) => return Ok((all, Vec::new())),
            Err(object_store::Error::InvalidPath { .. }) => {}
            Err(e) => return Err(self.err(e)),
        }
        let (mut objects, mut unlistable) = (Vec::new(), Vec::new());
        let mut levels = vec![self.path.clone()];
        while let Some(level) = levels.pop() {
            match self.delimited(&level)? {
                Some(listed) => {
                    objects.extend(listed.objects);
                    levels.extend(listed.common_prefixes);
                }
                None => unlistable.extend(self.relative(&level)),
            }
        }
        unlistable.sort();
        Ok((objects, unlistable))
    }

    /// What is directly under `level` (this prefix or one below it), listed
    /// with a delimiter; `None` when the level holds a key the client cannot
    /// name, or a common prefix it names as this level or above it (a key
    /// `/x` at a bucket's root is listed under `/`, which it reads as the
    /// root): what is under it is unknown.
    fn delimited(&self, level: &ObjPath) -> Result<Option<object_store::ListResult>> {
        let at = (!level.as_ref().is_empty()).then_some(level);
        match block_on(self.store().list_with_delimiter(at))? {
            Ok(listed) if listed.common_prefixes.iter().any(|p| !below(p, level)) => Ok(None),
            Ok(listed) => Ok(Some(listed)),
            Err(object_store::Error::InvalidPath { .. }) => Ok(None),
            Err(e) => Err(self.err(e)),
        }
    }

    pub(crate) fn list_dirs(&self) -> Result<Vec<String>> {
        let prefix = (!self.path.as_ref().is_empty()).then_some(&self.path);
        let listed = block_on(self.store().list_with_delimiter(prefix))?.map_err(|e| self.err(e))?;
        if prefix.is_some() && listed.objects.is_empty() && listed.common_prefixes.is_empty() {
            return Err(Error::Missing { path: self.to_string().into(), what: "no object under this prefix".into() });
        }
        let mut out: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .filter(|n| !n.starts_with('.') && !n.starts_with('_'))
            .collect();
        out.sort();
        Ok(out)
    }

    pub(crate) fn ensure_absent(&self) -> Result<()> {
        match self.join(MANIFEST).size()? {
            Some(_) => Err(Error::AlreadyExists { path: self.to_string().into() }),
            None => Ok(()),
        }
    }

    pub(super) fn delete(&self) -> Result<()> {
        match block_on(self.store().delete(&self.path))? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Every object under this prefix as (relative path, modification time),
    /// sorted, and the levels that could not be listed ([`ObjectLocation::list_all`];
    /// `""`: this prefix's own).
    pub(super) fn list_times(&self) -> Result<Listing<SystemTime>> {
        let (metas, unlistable) = self.list_all()?;
        let mut out: Vec<(String, SystemTime)> =
            metas.into_iter().filter_map(|m| Some((self.relative(&m.location)?, m.last_modified.into()))).collect();
        out.sort();
        Ok((out, unlistable))
    }

    /// What is directly under this prefix, listed with a delimiter: the names
    /// of its common prefixes, and its objects' names with their times;
    /// `None` when the level holds a key the client cannot name
    /// ([`ObjectLocation::list_all`]).
    pub(super) fn list_level(&self) -> Result<Option<LevelListing>> {
        let Some(listed) = self.delimited(&self.path)? else { return Ok(None) };
        let dirs = listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).collect();
        let files = listed
            .objects
            .iter()
            .filter_map(|m| Some((m.location.filename()?.to_string(), m.last_modified.into())))
            .collect();
        Ok(Some((dirs, files)))
    }
}

/// Ranged reads of one object (parquet's `ChunkReader` through [`super::Source`]).
#[derive(Clone)]
pub(crate) struct ObjectReader {
    loc: ObjectLocation,
    len: u64,
}

impl ObjectReader {
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    fn range(&self, range: Range<u64>) -> io::Result<Bytes> {
        let read_ahead = &self.loc.backend.read_ahead;
        if let Some(bytes) = read_ahead.get(self.loc.path.as_ref(), &range) {
            return Ok(bytes);
        }
        let got = block_on(self.loc.store().get_range(&self.loc.path, range)).map_err(io::Error::other)?;
        let bytes = got.map_err(|e| io::Error::other(self.loc.err(e)))?;
        read_ahead.count(bytes.len() as u64);
        Ok(bytes)
    }

    pub(crate) fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        // some stores refuse an empty range; nothing needs fetching
        if length == 0 {
            return Ok(Bytes::new());
        }
        let end = start.saturating_add(length as u64);
        if end > self.len {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "range {start}..{end} beyond the object's {} bytes",
                self.len
            )));
        }
        self.range(start..end).map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }

    pub(crate) fn read_from(&self, start: u64) -> RangeRead {
        RangeRead { loc: self.loc.clone(), len: self.len, pos: start, block: Bytes::new(), next: READ_BLOCK_BYTES }
    }
}

/// A sequential reader over an object from an offset, one ranged GET per block.
pub(crate) struct RangeRead {
    loc: ObjectLocation,
    len: u64,
    pos: u64,
    block: Bytes,
    next: u64,
}

impl Read for RangeRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.block.is_empty() {
            if self.pos >= self.len {
                return Ok(0);
            }
            let end = (self.pos + self.next).min(self.len);
            self.next = (self.next * 2).min(READ_BLOCK_MAX_BYTES);
            let reader = ObjectReader { loc: self.loc.clone(), len: self.len };
            self.block = reader.range(self.pos..end)?;
            self.pos = end;
        }
        let n = buf.len().min(self.block.len());
        buf[..n].copy_from_slice(&self.block.split_to(n));
        Ok(n)
    }
}
