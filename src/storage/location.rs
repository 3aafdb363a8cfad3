//! Where a version, a dataset or a root lives ([`Location`]: a local path or
//! an object-store URL) and the reads through it: files opened for ranged reads,
//! small files, read-ahead, listings.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    local, object, ReadFailure, Source, SourceInner, StorageOptions, LISTED_BUT_MISSING, MANIFEST,
    MAX_OBJECT_COPY_BYTES,
};
use crate::error::{Error, Result};

/// Where a version, a dataset or a root lives: a local path or an object-store URL.
///
/// Cloning is cheap (an object-store client is shared). `Display` gives the path
/// or the URL without credentials, query or fragment.
#[derive(Clone)]
pub struct Location(pub(super) Inner, Listed);

/// Whether a location is a file the manifest of an opened version lists
/// ([`Location::listed_file`]), and that version: a read that finds nothing
/// there finds a corrupt version, not a missing place, while the version is
/// there (docs/format.md "Exit codes").
#[derive(Clone)]
pub(super) enum Listed {
    No,
    Yes(Arc<Location>),
}

#[derive(Clone)]
pub(super) enum Inner {
    /// A local path, and the version directory (opened once) it is a file
    /// of, or is: opened relative to that handle without following a
    /// symbolic link below it.
    Local(PathBuf, Option<Arc<local::VersionDir>>),
    Object(object::ObjectLocation),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Inner::Local(p, _) => write!(f, "{}", p.display()),
            Inner::Object(o) => write!(f, "{o}"),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({self})")
    }
}

/// Where a write under `path` lands: made absolute, then component by
/// component, each existing one resolved (its links followed), each `..`
/// taken as the parent of what is resolved so far, and what does not exist
/// yet appended as named.
fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut real = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => real.push(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                real.pop();
            }
            Component::Normal(name) => {
                real.push(name);
                if let Ok(resolved) = real.canonicalize() {
                    real = resolved;
                }
            }
        }
    }
    real
}

/// True when `text` is a URL (`<scheme>://...`) rather than a local path.
pub fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-')
    })
}

/// True when `text` names a cloud object store (`s3://`, `gs://`, `az://`,
/// ...), the only places storage options configure; false for a local path,
/// `file://` and `memory://`, whose stores have no settings (the schemes
/// the object-store backend builds without options).
pub fn takes_storage_options(text: &str) -> bool {
    is_url(text)
        && text
            .split_once("://")
            .is_some_and(|(scheme, _)| !scheme.eq_ignore_ascii_case("file") && !scheme.eq_ignore_ascii_case("memory"))
}

impl Location {
    /// A local path.
    pub fn local(path: impl Into<PathBuf>) -> Location {
        Location(Inner::Local(path.into(), None), Listed::No)
    }

    /// The object `o` (not a listed file: [`Location::listed_file`]).
    pub(super) fn object(o: object::ObjectLocation) -> Location {
        Location(Inner::Object(o), Listed::No)
    }

    /// A local path, or a URL when `text` starts with `<scheme>://`. URLs take
    /// their credentials and endpoint from the environment (`AWS_*`, `GOOGLE_*`,
    /// `AZURE_*`), overridden by `options`.
    ///
    /// # Errors
    /// [`Error::InvalidUrl`] for a URL that does not parse, a scheme that is not
    /// supported (or whose cargo feature is off), or a malformed option value;
    /// [`Error::UnknownStorageOption`] for a key the store does not take.
    pub fn parse(text: &str, options: &StorageOptions) -> Result<Location> {
        if is_url(text) {
            Ok(Location::object(object::ObjectLocation::parse(text, options)?))
        } else {
            Ok(Location::local(text))
        }
    }

    /// [`Location::parse`] of a path argument (a path whose text is a URL is
    /// the URL), with options from the environment only.
    pub fn from_path(path: &Path) -> Result<Location> {
        match path.to_str() {
            Some(text) if is_url(text) => Location::parse(text, &StorageOptions::new()),
            _ => Ok(Location::local(path)),
        }
    }

    /// A location on an `object_store` the caller built (e.g. a wrapping or
    /// in-memory store in tests); `label` is the URL prefix shown in messages
    /// (e.g. `memory://test`) and `prefix` the path inside the store. A cloud
    /// client (S3, GCS, Azure) needs a rustls provider before it is built:
    /// call [`install_tls_provider`](super::install_tls_provider) first (building it panics otherwise).
    pub fn from_object_store(
        store: std::sync::Arc<dyn object_store::ObjectStore>,
        label: &str,
        prefix: &str,
    ) -> Result<Location> {
        Ok(Location::object(object::ObjectLocation::from_store(store, label, prefix)?))
    }

    /// The local path, when this is one.
    pub fn as_local(&self) -> Option<&Path> {
        match &self.0 {
            Inner::Local(p, _) => Some(p),
            Inner::Object(_) => None,
        }
    }

    /// `self/rel` (`rel` is `/`-separated).
    pub fn join(&self, rel: &str) -> Location {
        match &self.0 {
            Inner::Local(p, _) => Location::local(p.join(rel)),
            Inner::Object(o) => Location::object(o.join(rel)),
        }
    }

    /// This location as a version to read files of with
    /// [`Location::version_file`]: a local directory is opened here, once, and
    /// every file of the version is then opened relative to that handle
    /// (docs/format.md "Paths inside a version"); an object-store prefix is
    /// returned as is.
    ///
    /// # Errors
    /// [`Error::Io`] when the local directory cannot be opened (`NotFound`,
    /// `NotADirectory` included).
    pub(crate) fn open_version(&self) -> Result<Location> {
        match &self.0 {
            Inner::Local(p, Some(dir)) if dir.path() == p => Ok(self.clone()),
            Inner::Local(p, _) => {
                Ok(Location(Inner::Local(p.clone(), Some(Arc::new(local::VersionDir::open(p)?))), Listed::No))
            }
            Inner::Object(_) => Ok(self.clone()),
        }
    }

    /// The local version directory's handle ([`Location::open_version`]).
    ///
    /// # Errors
    /// As [`Location::open_version`]; [`Error::InvalidUrl`] on an object store.
    pub(crate) fn local_version_dir(&self) -> Result<Arc<local::VersionDir>> {
        match self.open_version()?.0 {
            Inner::Local(_, Some(dir)) => Ok(dir),
            _ => Err(Error::InvalidUrl { url: self.to_string(), reason: "not a local directory".into() }),
        }
    }

    /// The file `rel` of the version at `self` (see [`Location::open_version`]),
    /// for reading: a local one is opened relative to the version's handle
    /// without following a symbolic link and must be a regular file; on an
    /// object store it is the object under the version prefix. `rel` must
    /// already satisfy [`version_path::path_problem`](super::version_path::path_problem).
    ///
    /// # Errors
    /// As [`Location::open_version`], when `self` was not opened by it.
    pub(crate) fn version_file(&self, rel: &str) -> Result<Location> {
        match &self.open_version()?.0 {
            Inner::Local(p, dir) => Ok(Location(Inner::Local(p.join(rel), dir.clone()), Listed::No)),
            Inner::Object(o) => Ok(Location::object(o.join(rel))),
        }
    }

    /// [`Location::version_file`] of a file the version's manifest lists:
    /// opening, fetching, streaming or reading it where nothing is fails with
    /// [`Error::Corrupt`] ("listed in manifest.json but missing"), on every
    /// backend alike, or [`Error::Missing`] when the version's place is gone
    /// ([`Location::listed_missing`]), where another location's read fails with
    /// the backend's [`Error::Io`] or [`Error::ObjectStore`] (docs/format.md
    /// "Exit codes").
    pub(crate) fn listed_file(&self, rel: &str) -> Result<Location> {
        let version = Arc::new(self.open_version()?);
        Ok(Location(version.version_file(rel)?.0, Listed::Yes(version)))
    }

    /// `e` of a read of this location, a listed file's "nothing there" as
    /// [`Location::listed_file`] says, unless the version's place itself is
    /// gone (its directory, its prefix's objects, the store's bucket: a
    /// store's 404 to a HEAD has no body to tell them apart, one listing
    /// does), which is [`Error::Missing`] as at open.
    pub(super) fn listed_missing(&self, e: Error) -> Error {
        let Listed::Yes(version) = &self.1 else { return e };
        if !super::not_there(&e) {
            return e;
        }
        match version.place_exists() {
            Ok(false) => version.missing(),
            Err(gone @ Error::Missing { .. }) => gone,
            _ => Error::Corrupt { path: self.to_path_buf(), reason: LISTED_BUT_MISSING.into() },
        }
    }

    /// The last path segment.
    pub fn file_name(&self) -> Option<String> {
        match &self.0 {
            Inner::Local(p, _) => p.file_name().map(|s| s.to_string_lossy().into_owned()),
            Inner::Object(o) => o.file_name(),
        }
    }

    /// The location as errors and messages name it (a URL stays a URL).
    pub fn to_path_buf(&self) -> PathBuf {
        match &self.0 {
            Inner::Local(p, _) => p.clone(),
            Inner::Object(o) => PathBuf::from(o.to_string()),
        }
    }

    /// The bytes of a small file (at most `max_bytes`).
    pub(crate) fn read_small(&self, max_bytes: u64) -> Result<Small> {
        match &self.0 {
            Inner::Local(p, v) => local::read_small(p, v.as_deref(), max_bytes),
            Inner::Object(o) => o.read_small(max_bytes),
        }
    }

    /// The file for ranged reads (parquet's `ChunkReader`): a local file, or
    /// ranged GETs of the object.
    ///
    /// # Errors
    /// [`Error::Io`] / [`Error::ObjectStore`], `NotFound` included; a listed
    /// file's as [`Location::listed_file`] says.
    pub fn open(&self) -> Result<Source> {
        let inner = match &self.0 {
            Inner::Local(p, v) => local::open(p, v.as_deref()).and_then(|file| {
                let len = file.metadata().map_err(|e| Error::io(p, e))?.len();
                Ok(SourceInner::File(file, len))
            }),
            Inner::Object(o) => o.reader().map(SourceInner::Object),
        };
        let failure = match self.1 {
            Listed::Yes(_) => ReadFailure::listed(self.clone()),
            Listed::No => ReadFailure::default(),
        };
        Ok(Source(inner.map_err(|e| self.listed_missing(e))?, failure))
    }

    /// Fetches `ranges` of this file ahead of its reads (an object:
    /// coalesced, concurrent ranged GETs, after which reads of those bytes
    /// through the same store handle, the opened version's, need no request;
    /// docs/format.md §10 "Object stores"), held until the [`Prefetched`]
    /// returned is dropped. Nothing on a local path.
    ///
    /// # Errors
    /// [`Error::ObjectStore`] / [`Error::Missing`] of a failed GET.
    pub(crate) fn read_ahead(&self, ranges: Vec<std::ops::Range<u64>>) -> Result<Prefetched> {
        match &self.0 {
            Inner::Local(..) => Ok(Prefetched(None)),
            Inner::Object(o) => {
                let owner = o.read_ahead(ranges).map_err(|e| self.listed_missing(e))?;
                Ok(Prefetched(Some((o.clone(), owner))))
            }
        }
    }

    /// Requests and bytes of the reads through this location's store handle
    /// (every location of one opened version shares it); `None` on a local path.
    pub fn read_stats(&self) -> Option<object::ReadStats> {
        match &self.0 {
            Inner::Local(..) => None,
            Inner::Object(o) => Some(o.read_stats()),
        }
    }

    /// Every file under this location, relative and `/`-separated, sorted, with
    /// its size in bytes; plus the sub-directories (levels of an object store)
    /// that could not be listed, with why. Symbolic links are not followed.
    pub(crate) fn list_files(&self) -> Result<(Vec<(String, u64)>, Vec<(String, String)>)> {
        match &self.0 {
            Inner::Local(p, _) => Ok(local::walk(p)),
            Inner::Object(o) => {
                let (files, unlistable) = o.list_files()?;
                Ok((
                    files,
                    unlistable.into_iter().map(|level| (level, super::object::UNLISTABLE.to_string())).collect(),
                ))
            }
        }
    }

    /// The names of the directories (common prefixes) directly under this location, sorted.
    ///
    /// # Errors
    /// [`Error::Missing`] when nothing is at this location (no directory; no
    /// bucket; no object under the prefix); I/O and store errors.
    pub(crate) fn list_dirs(&self) -> Result<Vec<String>> {
        match &self.0 {
            Inner::Local(p, _) => local::list_dirs(p).map_err(|e| match e {
                Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => missing_dir(p),
                other => other,
            }),
            Inner::Object(o) => o.list_dirs(),
        }
    }

    /// The error for a version at this location without `manifest.json`
    /// (docs/format.md "Exit codes"): [`Error::Missing`] when nothing is
    /// there (no directory; no bucket or container; no object under the
    /// prefix), [`Error::NotAVersion`] for a place that exists.
    pub(crate) fn no_manifest(&self) -> Error {
        match self.place_exists() {
            Ok(true) => Error::NotAVersion { path: self.to_path_buf(), reason: "no manifest.json".into() },
            Ok(false) => self.missing(),
            Err(e) => e,
        }
    }

    /// Whether anything is at this place: a local directory or file (not
    /// followed), an object under the prefix (the bucket: [`Error::Missing`]
    /// when it is not there).
    fn place_exists(&self) -> Result<bool> {
        match &self.0 {
            // an opened version: its handle says, not its path (which a
            // rename or another working directory leads elsewhere)
            Inner::Local(p, Some(dir)) if dir.path() == p => Ok(!dir.removed()),
            Inner::Local(p, _) => match p.symlink_metadata() {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(Error::io(p, e)),
            },
            Inner::Object(o) => o.exists(),
        }
    }

    /// The [`Error::Missing`] of this place when nothing is there.
    fn missing(&self) -> Error {
        match &self.0 {
            // its path may lead to another directory by now
            Inner::Local(p, Some(dir)) if dir.path() == p && dir.removed() => {
                Error::Missing { path: p.clone(), what: "the directory was removed since it was opened".into() }
            }
            Inner::Local(p, _) => missing_dir(p),
            Inner::Object(_) => Error::Missing { path: self.to_path_buf(), what: "no object under this prefix".into() },
        }
    }

    /// Streams the file once through `f`, block by block; returns its size.
    /// An error of `f` stops the read (an object's GET is dropped) and is
    /// returned as it is; so does a Ctrl-C ([`super::interrupt`]) while it
    /// waits for an object store's next block.
    pub(crate) fn stream(&self, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<u64> {
        // only the read's own failure is this file's: `f`'s is returned as it is
        let mut failed_in_f = false;
        let mut g = |block: &[u8]| f(block).inspect_err(|_| failed_in_f = true);
        let streamed = match &self.0 {
            Inner::Local(p, v) => local::stream(p, v.as_deref(), &mut g),
            Inner::Object(o) => o.stream(&mut g),
        };
        streamed.map_err(|e| if failed_in_f { e } else { self.listed_missing(e) })
    }

    /// The largest file a part of a distributed write may stage here (see
    /// [`MAX_OBJECT_COPY_BYTES`]); `None` on a local path (parts are renamed,
    /// never copied).
    pub fn max_part_file_bytes(&self) -> Option<u64> {
        match &self.0 {
            Inner::Local(..) => None,
            Inner::Object(_) => Some(MAX_OBJECT_COPY_BYTES),
        }
    }

    /// Checks that a version can be committed here: [`Error::AlreadyExists`] when
    /// it holds a committed version, [`Error::NotAVersion`] when something else is
    /// in the way. Only looks; writes nothing.
    /// Also refuses ([`Error::Validation`], field `root`) a place inside a
    /// committed version (a root given inside one): a version never changes,
    /// and its readers would read what is written into it.
    pub fn ensure_absent(&self) -> Result<()> {
        self.ensure_outside_versions("root", "a root")?;
        match &self.0 {
            Inner::Local(p, _) => local::ensure_absent(p),
            Inner::Object(o) => o.ensure_absent(),
        }
    }

    /// What the marker file at `rel` (a manifest, claim or parts' marker)
    /// holds in the string field `key` of its JSON object: a file is a marker
    /// by its content, not by its name alone ([`Marker`]).
    pub(super) fn marker(&self, rel: &str, key: &str) -> Result<Marker> {
        Ok(Marker::of(self.join(rel).read_small(crate::limits::MAX_MANIFEST_BYTES)?, key))
    }

    /// Refuses ([`Error::Validation`] naming `field`, and `what` to choose
    /// instead) a place one of whose ancestors holds TimeF's `manifest.json`
    /// (docs/format.md §1): a new version's root, an exported file. An ancestor the caller may not read (a local I/O
    /// error, a store's denial) is passed over: only a readable TimeF manifest
    /// refuses. Any other failure of a store (a timeout, a network error) is
    /// returned at once: the next ancestor's read would wait as long.
    pub(crate) fn ensure_outside_versions(&self, field: &'static str, what: &str) -> Result<()> {
        let ancestors: Vec<Location> = match &self.0 {
            Inner::Local(p, _) => resolved(p).ancestors().skip(1).map(Location::local).collect(),
            // file://: the directories themselves, their links resolved
            Inner::Object(o) => match o.file_path() {
                Some(dir) => resolved(&dir).ancestors().skip(1).map(Location::local).collect(),
                None => o.ancestors().into_iter().map(Location::object).collect(),
            },
        };
        for version in ancestors {
            let format = match version.marker(MANIFEST, "format") {
                Ok(Marker::Field(format)) => Some(format),
                Ok(_) => None,
                Err(Error::ObjectStore { source, .. })
                    if matches!(
                        *source,
                        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
                    ) =>
                {
                    None
                }
                Err(e @ Error::ObjectStore { .. }) => return Err(e),
                Err(_) => None,
            };
            if format.as_deref() == Some(crate::names::FORMAT) {
                return Err(Error::validation(
                    self.to_string(),
                    field,
                    format!("is inside the committed version {version}, which never changes: choose {what} outside it"),
                ));
            }
        }
        Ok(())
    }
}

impl Location {
    /// Fetches the last `bytes` of this file (a Parquet file's footer and
    /// page index) ahead of its reads, as [`Location::read_ahead`].
    ///
    /// # Errors
    /// [`Error::ObjectStore`] / [`Error::Missing`] of a failed GET.
    pub(crate) fn read_ahead_tail(&self, bytes: u64) -> Result<Prefetched> {
        match &self.0 {
            Inner::Local(..) => Ok(Prefetched(None)),
            Inner::Object(o) => {
                let owner = o.read_ahead_tail(bytes).map_err(|e| self.listed_missing(e))?;
                Ok(Prefetched(Some((o.clone(), owner))))
            }
        }
    }
}

/// Bytes fetched ahead by [`Location::read_ahead`]; dropped, they are freed.
pub(crate) struct Prefetched(Option<(object::ObjectLocation, u64)>);

impl Drop for Prefetched {
    fn drop(&mut self) {
        if let Some((o, owner)) = &self.0 {
            o.release_read_ahead(*owner);
        }
    }
}

/// The [`Error::Missing`] of a local directory that is not there.
pub(crate) fn missing_dir(p: &Path) -> Error {
    Error::Missing { path: p.to_path_buf(), what: "no such directory".into() }
}

/// What a marker file holds ([`Location::marker`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Marker {
    /// The string field asked for.
    Field(String),
    /// No such file, or a file that is no such marker by its content (not
    /// JSON, no such string field): a user's, if anything.
    NotOne,
    /// A file there that cannot be read (not a regular file, a loop of
    /// symbolic links, not readable by this user, too large): what it marks,
    /// if anything, is not known (`gc` acts on nothing it may mark).
    Unreadable,
}

impl Marker {
    /// What a marker file read as `small` holds in its string field `key`.
    pub(super) fn of(small: Small, key: &str) -> Marker {
        match small {
            Small::Bytes(b) => serde_json::from_slice::<serde_json::Value>(&b)
                .ok()
                .and_then(|v| v.get(key).and_then(|f| f.as_str()).map(str::to_string))
                .map_or(Marker::NotOne, Marker::Field),
            Small::Missing => Marker::NotOne,
            Small::Refused(_) => Marker::Unreadable,
        }
    }

    /// The field, when the file holds it.
    pub(super) fn field(&self) -> Option<&str> {
        match self {
            Marker::Field(f) => Some(f),
            _ => None,
        }
    }
}

/// What [`Location::read_small`] found.
pub(crate) enum Small {
    Bytes(Vec<u8>),
    Missing,
    /// Not a regular file, or larger than allowed (the reason).
    Refused(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cloud_urls_take_storage_options() {
        for cloud in ["s3://b/root", "S3://b/root", "gs://b", "az://c/p", "abfs://c@a.dfs.core.windows.net/p"] {
            assert!(takes_storage_options(cloud), "{cloud}");
        }
        for none in ["/data/root", "relative/s3:/x", "file:///data/root", "FILE:///x", "memory:///t", "Memory://h/p"] {
            assert!(!takes_storage_options(none), "{none}");
        }
    }
}
