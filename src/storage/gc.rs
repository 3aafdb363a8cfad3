//! `gc` and the stale counts of `ls`: what writers that died left, found by
//! markers at exact levels, cleared by one rule per role (docs/format.md §1
//! "Clearing a dead writer's claim").
//!
//! 1. **List** the place given (a root or a dataset) through a [`Tree`]: one
//!    listing of every object (object-store `gc`), listings with a delimiter
//!    (object-store `ls`, whose requests must not grow with the shards), or
//!    directory reads (local).
//! 2. **Classify** by markers at exact levels ([`classify`]; a marker is
//!    read, a file named like one is not enough: [`Location::marker_field`]): the place
//!    is refused when it is a version; a dataset when one of its children is
//!    a version (a TimeF manifest or a claim), with its children that have
//!    versions; else a root whose datasets are its children with a version or
//!    a writer's staging; else, when its own children are writers' staging, a
//!    dataset. In a dataset each child is one [`Role`]; everything else (a
//!    user's files and folders, beside, above or inside) has no role.
//! 3. **One rule per role** ([`collect`]): a local staging directory goes when
//!    no process holds its `flock` and it is old enough; a claim when it and
//!    everything its writer puts are old enough, with the objects of its
//!    version when that has no manifest; a marked parts' prefix when no live
//!    claim holds its write id and it is old enough. Nothing without a role is
//!    ever removed; what looks like a writer's but carries no marker is kept
//!    and reported ([`GcReport::odd`]).
//!
//! `gc`, its dry run and `ls` run the same code; a dry run only skips the removals.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::location::Inner;
use super::object::{self, ObjectLocation};
use super::{local, parse_staged, pause_point, Location, CLAIM, MANIFEST, PARTS_MARKER};
use crate::error::{Error, Result};

/// What [`gc`] removed (or, for [`gc_dry_run`] and [`stale_per_dataset`], would remove now).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct GcReport {
    /// Each dead writer's leftover removed, as a path or URL, sorted by
    /// dataset: a local staging directory, an object-store claim (with the
    /// objects of its version when that has no manifest; gc's fence then
    /// stays at the version's manifest key), a fence an earlier run left, a
    /// parts' prefix.
    pub removed_claims: Vec<String>,
    /// Every file or object removed with them (claims and parts' markers
    /// included), as paths or URLs, in the order removed.
    pub removed_files: Vec<String>,
    /// Leftovers of writers that may be alive, kept: a locked or young local
    /// staging directory, a claim whose writer wrote within the age given, a
    /// parts' prefix a kept claim holds or written within that age, gc's
    /// fence put within that age.
    pub kept_claims: Vec<String>,
    /// Entries of `removed_claims` per dataset name.
    pub per_dataset: BTreeMap<String, u64>,
    /// What could not be removed, with why: a local stale staging directory
    /// (a permission, an immutable file, a mount point inside), an object a
    /// delete failed on (its claim or parts' marker is then kept); the others
    /// are still removed.
    pub failed: Vec<(String, String)>,
    /// Kept because nothing marks them as a writer's, though they sit where a
    /// writer's would, with why: a dataset's child holding files but neither
    /// `manifest.json` nor a claim, a `.tmp-*` prefix without its parts' marker.
    pub odd: Vec<(String, String)>,
}

/// What `timef ls` shows of a root or a dataset: its datasets, their committed
/// versions' names (a `manifest.json` at the version's level; not read), and
/// what a [`gc_dry_run`] would clear.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    /// Every dataset found, in the order [`gc`] goes through them.
    pub datasets: Vec<DatasetSurvey>,
    /// What `gc` with the age given would remove now, and what looks odd,
    /// over all the datasets.
    pub report: GcReport,
}

/// One dataset of a [`Survey`]. Its figures are its own: a dataset inside
/// it, even of the same name, has its own entry.
#[derive(Debug, Clone)]
pub struct DatasetSurvey {
    /// Its name (the last segment of its location).
    pub name: String,
    /// Where it is.
    pub location: Location,
    /// The names of its children that hold TimeF's `manifest.json`, sorted.
    pub versions: Vec<String>,
    /// Object stores: the names of its children whose `manifest.json` is gc's
    /// fence that a later [`gc`] removes, sorted. A write of such a version
    /// is refused until then (docs/format.md §1, "Clearing a dead writer's
    /// claim"). A fence beside objects no claim marks stays; it is in `odd`.
    pub fenced: Vec<String>,
    /// How many of `report.removed_claims` are its own: leftovers of dead
    /// writers [`gc`] with the age given would clear now.
    pub stale: u64,
    /// Its entries of `report.odd`: those under its folder and not under a
    /// dataset inside it.
    pub odd: Vec<(String, String)>,
}

/// Clears what writers that died left under `place`, a root or a dataset
/// (docs/format.md §1 "Clearing a dead writer's claim"): local staging
/// directories no process holds the `flock` of that are at least
/// `older_than_s` old; object-store claims whose writer wrote nothing for
/// `older_than_s` seconds, with the objects of their version when it has no
/// manifest (gc's fence, put at the version's manifest key before any
/// delete, stays until a later run finds it `older_than_s` old); marked
/// parts' prefixes of distributed writes no live claim holds. A committed
/// version, and anything not marked as a writer's, is never touched.
///
/// On an object store choose `older_than_s` longer than any pause of a write:
/// there a live writer's claim differs from a dead one's only by age.
///
/// # Errors
/// [`Error::Validation`] (field `root`) when `place` is a version or a
/// writer's staging; I/O and store errors.
pub fn gc(place: &Location, older_than_s: u64) -> Result<GcReport> {
    Ok(collect(place, older_than_s, SystemTime::now(), Mode::Remove)?.report)
}

/// What [`gc`] would remove now, removing nothing: the same code, the same
/// report, the removals skipped.
///
/// # Errors
/// As [`gc`].
pub fn gc_dry_run(place: &Location, older_than_s: u64) -> Result<GcReport> {
    Ok(collect(place, older_than_s, SystemTime::now(), Mode::DryRun)?.report)
}

/// Per dataset name under `place` (a root or a dataset), how many leftovers
/// [`gc`] with `older_than_s` would clear: [`survey`]'s count.
///
/// # Errors
/// As [`gc`].
pub fn stale_per_dataset(place: &Location, older_than_s: u64) -> Result<BTreeMap<String, u64>> {
    Ok(survey(place, older_than_s)?.report.per_dataset)
}

/// The datasets and committed versions under `place` (a root or a dataset)
/// and what a [`gc_dry_run`] with `older_than_s` reports, read without listing
/// every object of an object store: each level is listed with a delimiter,
/// and only a version whose claim is `older_than_s` old, a version gc's fence
/// holds without a claim, or a parts' prefix, is listed whole. `timef ls`
/// prints it.
///
/// # Errors
/// As [`gc`].
pub fn survey(place: &Location, older_than_s: u64) -> Result<Survey> {
    collect(place, older_than_s, SystemTime::now(), Mode::Survey)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Remove,
    DryRun,
    /// A dry run over listings with a delimiter.
    Survey,
}

// ---------------------------------------------------------------- listing

/// What is directly under one place: its sub-directories (common prefixes)
/// and its files (objects) with their modification times.
#[derive(Debug, Default, Clone)]
struct Level {
    dirs: BTreeSet<String>,
    files: BTreeMap<String, SystemTime>,
}

/// The tree under the place given, read on demand; paths are relative to it
/// and `/`-separated (`""` is the place itself).
trait Tree {
    /// What is directly under `rel`; empty when it does not exist.
    fn level(&self, rel: &str) -> Result<Level>;
    /// Every file under `rel` with its time, relative to the place, sorted.
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>>;
}

/// A key or name an object store lists (each segment percent-encoded the way
/// `object_store` spells `#`, `%` and the like) as the text it stands for,
/// which [`ObjectLocation::join`] encodes again: once, not twice.
fn decoded(key: &str) -> String {
    key.split('/')
        .map(|part| percent_encoding::percent_decode_str(part).decode_utf8_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// Every object under an object-store place, listed once.
struct Listed(BTreeMap<String, SystemTime>);

impl Listed {
    fn under<'a>(&'a self, rel: &str) -> impl Iterator<Item = (&'a str, &'a String, &'a SystemTime)> + 'a {
        let prefix = if rel.is_empty() { String::new() } else { format!("{rel}/") };
        let n = prefix.len();
        self.0
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(move |(k, t)| (&k[n..], k, t))
    }
}

impl Tree for Listed {
    fn level(&self, rel: &str) -> Result<Level> {
        let mut level = Level::default();
        for (tail, _, t) in self.under(rel) {
            match tail.split_once('/') {
                Some((dir, _)) => drop(level.dirs.insert(dir.to_string())),
                None => drop(level.files.insert(tail.to_string(), *t)),
            }
        }
        Ok(level)
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        Ok(self.under(rel).map(|(_, k, t)| (k.clone(), *t)).collect())
    }
}

/// An object-store place listed level by level with a delimiter.
struct Delimited(ObjectLocation);

impl Tree for Delimited {
    fn level(&self, rel: &str) -> Result<Level> {
        let (dirs, files) = self.0.join(rel).list_level()?;
        Ok(Level {
            dirs: dirs.iter().map(|d| decoded(d)).collect(),
            files: files.into_iter().map(|(f, t)| (decoded(&f), t)).collect(),
        })
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        Ok(self.0.join(rel).list_times()?.into_iter().map(|(k, t)| (join(rel, &decoded(&k)), t)).collect())
    }
}

/// A tree whose levels are read once: classifying a root reads each
/// child's level to tell whether the root itself is a dataset, then again as a dataset.
struct Memo<'a> {
    tree: &'a dyn Tree,
    levels: std::cell::RefCell<BTreeMap<String, Level>>,
}

impl Tree for Memo<'_> {
    fn level(&self, rel: &str) -> Result<Level> {
        if let Some(level) = self.levels.borrow().get(rel) {
            return Ok(level.clone());
        }
        let level = self.tree.level(rel)?;
        self.levels.borrow_mut().insert(rel.to_string(), level.clone());
        Ok(level)
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        self.tree.files_under(rel)
    }
}

/// A local directory read level by level; a symbolic link is a file, never followed.
struct LocalTree(PathBuf);

impl Tree for LocalTree {
    fn level(&self, rel: &str) -> Result<Level> {
        let dir = self.0.join(rel);
        let mut level = Level::default();
        let entries = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            // gone since its parent was read (a writer committed, aborted), or a file
            Err(e) if !rel.is_empty() && matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                return Ok(level)
            }
            // the place itself: one rule for what does not exist (docs/format.md "Exit codes")
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(super::missing_dir(&self.0)),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(meta) = fs::symlink_metadata(entry.path()) else { continue };
            if meta.is_dir() {
                level.dirs.insert(name);
            } else {
                level.files.insert(name, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH));
            }
        }
        Ok(level)
    }
    fn files_under(&self, rel: &str) -> Result<Vec<(String, SystemTime)>> {
        let (files, _) = local::walk(&self.0.join(rel));
        Ok(files.into_iter().map(|(f, _)| (join(rel, &f), SystemTime::UNIX_EPOCH)).collect())
    }
}

// ---------------------------------------------------------------- classify

/// The role of one child of a dataset, by its markers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Role {
    /// A version prefix or directory: TimeF's `manifest.json` and/or (object
    /// stores) a claim, with the claim's time, and gc's fence at the manifest
    /// key, with its time and writer id.
    Version { manifest: bool, claim: Option<SystemTime>, fence: Option<(SystemTime, String)> },
    /// Local: a writer's staging directory, `.tmp-<version>-<32 alnum>` or
    /// `.new-<version>-<32 alnum>` (its `flock` tells whether it is alive).
    Staging,
    /// Object store: a distributed write's parts' prefix
    /// `.tmp-<version>-<write id>/` holding its [`PARTS_MARKER`].
    Parts { version: String, write_id: String },
}

/// A dataset found: its name, its path relative to the place, its children
/// with a role (sorted by name), and its children that look like a writer's
/// but carry no marker.
#[derive(Debug, Default)]
struct Dataset {
    name: String,
    rel: String,
    children: Vec<(String, Role)>,
    odd: Vec<(String, &'static str)>,
    /// Local: a child holds a claim of a write through a `file://` URL
    /// (reported, and the place reported on as a dataset).
    url_claim: bool,
    /// A child holds a `manifest.json` that does not read as TimeF's
    /// (reported as [`OTHER_MANIFEST`]): perhaps a version whose manifest was
    /// damaged. Such a place is reported as a dataset with its odd children;
    /// it gives gc nothing to act on (no role).
    other_manifest: bool,
}

/// Why a child without a marker is reported.
const UNMARKED_VERSION: &str =
    "holds files but neither a TimeF manifest.json nor a claim: not a version, and not marked as a writer's; kept (remove it by hand if nobody needs it)";
const OTHER_MANIFEST: &str =
    "holds a manifest.json that does not read as TimeF's (another tool's, or a damaged version's: `timef verify` tells): not cleared; kept";
const UNMARKED_CLAIM: &str =
    "is named like a claim but does not hold a writer id: not timef's claim; kept (remove it by hand if nobody needs it)";
const THROUGH_LINK: &str = "is a symbolic link (or unreadable): gc never deletes through it; kept";
const STILL_THERE: &str =
    "still there once its writer's other objects were removed (not found under its listed name); \
     the leftover stays marked (remove it by hand if nobody needs it)";
const TAKEN_OVER: &str = "is no longer this run's (another gc run took it over): this run stopped clearing it";
const BESIDE_FENCE: &str =
    "holds gc's fence (manifest.json) and objects no claim marks: not a writer's; kept (remove them by hand if nobody needs them)";
const NOT_UTF8: &str =
    "has a name that is not UTF-8: gc does not name or remove it; kept (remove it by hand if nobody needs it)";
const CLAIM_READ_LOCALLY: &str =
    "holds a claim of a write through a file:// URL: run gc or ls on the file:// URL of the root to clear it; kept";
const PARTS_READ_LOCALLY: &str =
    "holds the parts of a distributed write through a file:// URL: run gc or ls on the file:// URL of the root to clear it; kept";
const UNMARKED_PARTS: &str =
    "named like a parts' prefix but without its marker _timef_parts.json; kept (remove it by hand if nobody needs it)";

/// True for the name of a local writer's staging directory, exactly
/// `.tmp-<version>-<random>` or `.new-<version>-<random>` with a valid
/// version name and [`local::STAGING_RANDOM_CHARS`] letters and digits.
fn is_staging_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(local::TMP_PREFIX).or_else(|| name.strip_prefix(local::NEW_PREFIX)) else {
        return false;
    };
    rest.rsplit_once('-').is_some_and(|(version, random)| {
        crate::names::validate_name(version, "version").is_ok()
            && random.len() == local::STAGING_RANDOM_CHARS
            && random.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// `(version, write id)` of a parts' prefix name `.tmp-<version>-<write id>`
/// with a valid version name and a write id as timef makes them.
fn parts_name(name: &str) -> Option<(&str, &str)> {
    parse_staged(name)
        .filter(|(version, id)| crate::names::validate_name(version, "version").is_ok() && object::is_writer_id(id))
}

/// True when the child `child` (at `at`) is a parts' prefix: named
/// `.tmp-<version>-<write id>` and holding its [`PARTS_MARKER`] with that write id.
fn parts_marked(place: &Location, tree: &dyn Tree, child: &str, at: &str) -> Result<bool> {
    let Some((_, id)) = parts_name(child) else { return Ok(false) };
    Ok(tree.level(at)?.files.contains_key(PARTS_MARKER)
        && place.marker_field(&join(at, PARTS_MARKER), "write_id")?.as_deref() == Some(id))
}

/// The place at `rel`, whose level is `level`, read as a dataset: its
/// children with a role, and the odd ones. A child is a version only with a
/// TimeF `manifest.json` (its `format` is `timef`) or (object stores) a claim
/// holding a writer id; a parts' prefix only with a marker holding its write id.
fn scan_dataset(
    place: &Location,
    tree: &dyn Tree,
    local: bool,
    name: &str,
    rel: &str,
    level: &Level,
) -> Result<Dataset> {
    let mut ds = Dataset { name: name.to_string(), rel: rel.to_string(), ..Dataset::default() };
    for child in &level.dirs {
        let at = join(rel, child);
        if local && is_staging_name(child) {
            // a distributed write through a file:// URL names its parts' prefix
            // alike (a write id is 32 letters and digits): its marker tells
            if parts_marked(place, tree, child, &at)? {
                ds.odd.push((child.clone(), PARTS_READ_LOCALLY));
                ds.url_claim = true;
            } else {
                ds.children.push((child.clone(), Role::Staging));
            }
            continue;
        }
        // a version's name never starts with `.` (docs/format.md §1)
        if child.starts_with('.') {
            if let Some((version, id)) = parts_name(child).filter(|_| !local) {
                if parts_marked(place, tree, child, &at)? {
                    let role = Role::Parts { version: version.to_string(), write_id: id.to_string() };
                    ds.children.push((child.clone(), role));
                } else {
                    ds.odd.push((child.clone(), UNMARKED_PARTS));
                }
            }
            continue;
        }
        let inner = tree.level(&at)?;
        let format = match inner.files.contains_key(MANIFEST) {
            true => place.marker_field(&join(&at, MANIFEST), "format")?,
            false => None,
        };
        let manifest = format.as_deref() == Some(crate::names::FORMAT);
        // gc's fence (object stores): a manifest key a dead writer can no longer create
        let fence = match (&place.0, format.as_deref(), inner.files.get(MANIFEST)) {
            (Inner::Object(o), Some(object::GC_FENCE_FORMAT), Some(t)) if !local => {
                object::fence_writer(&o.join(&join(&at, MANIFEST)))?.map(|id| (*t, id))
            }
            _ => None,
        };
        let claim = match inner.files.get(CLAIM) {
            Some(t)
                if place.marker_field(&join(&at, CLAIM), "writer_id")?.is_some_and(|w| object::is_writer_id(&w)) =>
            {
                Some(*t)
            }
            Some(_) => {
                ds.odd.push((join(child, CLAIM), UNMARKED_CLAIM));
                None
            }
            None => None,
        };
        if manifest || (!local && (claim.is_some() || fence.is_some())) {
            ds.children.push((child.clone(), Role::Version { manifest, claim: claim.filter(|_| !local), fence }));
        } else if claim.is_some() {
            // written through a file:// URL: its claim is read only there
            ds.odd.push((child.clone(), CLAIM_READ_LOCALLY));
            ds.url_claim = true;
        } else if inner.files.contains_key(MANIFEST) {
            // never "remove it by hand": it may be a committed version whose manifest was damaged
            ds.odd.push((child.clone(), OTHER_MANIFEST));
            ds.other_manifest = true;
        } else if !inner.files.is_empty() || !inner.dirs.is_empty() {
            ds.odd.push((child.clone(), UNMARKED_VERSION));
        }
    }
    Ok(ds)
}

impl Dataset {
    /// A child is a version (holds a TimeF `manifest.json` or a claim).
    fn has_version(&self) -> bool {
        self.children.iter().any(|(_, role)| matches!(role, Role::Version { .. }))
    }
    /// A child is a version or a writer's staging (or holds a `file://` claim).
    fn is_marked(&self) -> bool {
        !self.children.is_empty() || self.url_claim
    }
}

/// The datasets of the place (docs/format.md §1 "Clearing a dead writer's
/// claim": levels), by exact levels:
/// - one of its children is a version: the place is a dataset, and each of
///   its other children that has versions is a dataset too;
/// - else one of its children has versions, or the place has no writer's
///   staging of its own: a root, whose datasets are its children with a
///   version or a writer's staging (its own staging-named folders are a user's);
/// - else (its only marks are writers' staging: every write of it died) a
///   dataset, whose children's staging-named folders are a user's.
///
/// A place without marks whose children have no marks either, and of which
/// a child holds a `manifest.json` that does not read as TimeF's (a damaged
/// version, perhaps), is listed too, as a dataset with only odd children; so
/// is a root's child like it. It is reported and nothing in it is acted on.
///
/// # Errors
/// [`Error::Validation`] (field `root`) when the place is a version (holds
/// `manifest.json` or a claim) or a writer's staging; listing errors.
fn classify(place: &Location, tree: &dyn Tree, local: bool) -> Result<Vec<Dataset>> {
    let tree = &Memo { tree, levels: Default::default() };
    let top = tree.level("")?;
    // a mistyped prefix is missing, as a local path is, not an empty root
    // (a store's root, a bucket, may be empty)
    // (file://: a directory that exists is there, empty or not)
    let a_directory = match &place.0 {
        Inner::Object(o) => o.file_path().is_some_and(|d| d.is_dir()),
        Inner::Local(..) => false,
    };
    if !local && top.dirs.is_empty() && top.files.is_empty() && place.file_name().is_some() && !a_directory {
        return Err(Error::Missing { path: place.to_path_buf(), what: "no object under this prefix".into() });
    }
    // `.` or `..` given: the directory's own name
    let name = match place.as_local().and_then(|p| p.canonicalize().ok()) {
        Some(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
        None => place.file_name(),
    }
    .unwrap_or_default();
    let refuse = |what: &str| {
        Error::validation(place.to_string(), "root", format!("{what}; gc and ls take a root of datasets, or a dataset"))
    };
    if top.files.contains_key(MANIFEST) || (!local && top.files.contains_key(CLAIM)) {
        return Err(refuse("is a version (it holds manifest.json or a claim)"));
    }
    if (local && is_staging_name(&name)) || (!local && top.files.contains_key(PARTS_MARKER)) {
        return Err(refuse("is a writer's staging"));
    }
    let mut itself = scan_dataset(place, tree, local, &name, "", &top)?;
    let mut children = Vec::new();
    for child in top.dirs.iter().filter(|c| !c.starts_with('.')) {
        if itself.children.iter().any(|(n, _)| n == child) {
            continue;
        }
        let level = tree.level(child)?;
        children.push(scan_dataset(place, tree, local, child, child, &level)?);
    }
    let mut out = Vec::new();
    if itself.has_version() {
        children.retain(Dataset::has_version);
        // a child with versions is a dataset, not an odd one
        itself.odd.retain(|(n, _)| !children.iter().any(|c| c.name == *n));
        out.push(itself);
    } else if children.iter().any(Dataset::has_version) || !itself.is_marked() {
        children.retain(|c| c.is_marked() || c.other_manifest);
        // a dataset whose only versions are damaged is reported, not passed over; a place
        // with a marked child or one like that is a root, and another tool's folder in it is not a version
        if children.is_empty() && itself.other_manifest {
            out.push(itself);
        }
    } else {
        children.clear();
        out.push(itself);
    }
    out.extend(children);
    Ok(out)
}

// ---------------------------------------------------------------- rules

/// One run: the age a leftover must reach, the time now, what it does.
#[derive(Clone, Copy)]
struct Run {
    older_than_s: u64,
    now: SystemTime,
    mode: Mode,
}

impl Run {
    /// True when `t` is at least `older_than_s` seconds ago.
    fn old(&self, t: SystemTime) -> bool {
        self.now.duration_since(t).map_or(0, |d| d.as_secs()) >= self.older_than_s
    }

    fn removes(&self) -> bool {
        self.mode == Mode::Remove
    }
}

/// Records a dead writer's leftover `unit` of the dataset `ds`, and its `files`, as removed.
fn record(report: &mut GcReport, ds: &Dataset, unit: String, files: impl IntoIterator<Item = String>) {
    report.removed_files.extend(files);
    report.removed_claims.push(unit);
    *report.per_dataset.entry(ds.name.clone()).or_default() += 1;
}

/// Lists, classifies and applies the rules; removes only in [`Mode::Remove`].
fn collect(place: &Location, older_than_s: u64, now: SystemTime, mode: Mode) -> Result<Survey> {
    let run = Run { older_than_s, now, mode };
    let mut survey = Survey::default();
    match &place.0 {
        Inner::Local(root, _) => {
            let tree = LocalTree(root.clone());
            for ds in classify(place, &tree, true)? {
                let before = (survey.report.removed_claims.len(), survey.report.odd.len());
                local_rules(run, root, &tree, &ds, &mut survey.report)?;
                survey.datasets.push(found(place, &ds, Vec::new(), before, &survey.report));
            }
        }
        Inner::Object(o) => {
            let (listed, delimited);
            let tree: &dyn Tree = if mode == Mode::Survey {
                delimited = Delimited(o.clone());
                &delimited
            } else {
                let all = match o.file_path() {
                    Some(dir) => file_tree(&dir, |rel| o.join(rel).to_string(), &mut survey.report)?,
                    None => o.list_times()?.into_iter().map(|(k, t)| (decoded(&k), t)).collect(),
                };
                listed = Listed(all);
                pause_point("gc-objects-listed");
                &listed
            };
            for ds in classify(place, tree, false)? {
                let before = (survey.report.removed_claims.len(), survey.report.odd.len());
                let fenced = object_rules(run, o, tree, &ds, &mut survey.report)?;
                survey.datasets.push(found(place, &ds, fenced, before, &survey.report));
            }
        }
    }
    to_innermost_dataset(&mut survey.datasets);
    Ok(survey)
}

/// Moves each odd entry to the innermost dataset whose folder holds it: a
/// dataset's look at its children also reads the own folder of a child that
/// is a dataset itself (review 52).
fn to_innermost_dataset(datasets: &mut [DatasetSurvey]) {
    let folders: Vec<String> =
        datasets.iter().map(|d| format!("{}/", d.location.to_string().trim_end_matches('/'))).collect();
    let innermost =
        |path: &str| (0..folders.len()).filter(|&j| path.starts_with(&folders[j])).max_by_key(|&j| folders[j].len());
    for i in 0..datasets.len() {
        let odd = std::mem::take(&mut datasets[i].odd);
        for (path, why) in odd {
            let to = innermost(&path).unwrap_or(i);
            datasets[to].odd.push((path, why));
        }
    }
}

/// `file://`: every file below `dir`, keyed by its names joined with `/`,
/// with its modification time. Read from the directory itself, not through
/// object_store's listing: a name is never decoded into a path (a file named
/// `a%2F..%2Fb` is that one file, not `../b`), and what that listing hides is
/// found too (a killed upload's `<name>#<n>`, which readers of the version's
/// directory would read). A symbolic link is not followed, nor is a name that
/// is not UTF-8: each is reported as odd once, in name order (gc never
/// deletes through a link, out of the root). A directory gone meanwhile
/// (committed, aborted) is skipped.
///
/// # Errors
/// I/O errors reading it.
fn file_tree(
    dir: &Path,
    shown: impl Fn(&str) -> String,
    report: &mut GcReport,
) -> Result<BTreeMap<String, SystemTime>> {
    let mut files = BTreeMap::new();
    let mut odd: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut todo = vec![String::new()];
    while let Some(rel) = todo.pop() {
        let entries = match fs::read_dir(dir.join(&rel)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(dir.join(&rel), e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir.join(&rel), e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                odd.insert(join(&rel, &entry.file_name().to_string_lossy()), NOT_UTF8);
                continue;
            };
            let at = join(&rel, &name);
            let Ok(meta) = fs::symlink_metadata(dir.join(&at)) else { continue };
            if meta.file_type().is_symlink() {
                odd.insert(at, THROUGH_LINK);
            } else if meta.is_dir() {
                todo.push(at);
            } else {
                // no time read: taken as new, so never old enough to go
                files.insert(at, meta.modified().unwrap_or_else(|_| SystemTime::now()));
            }
        }
    }
    report.odd.extend(odd.into_iter().map(|(rel, why)| (shown(&rel), why.to_string())));
    Ok(files)
}

/// The entry of [`Survey::datasets`] of dataset `ds`, once its rules ran: `fenced` as they found
/// it, its leftovers and odd entries those the report gained past `before`
/// (its lengths of `removed_claims` and `odd` before the rules).
fn found(
    place: &Location,
    ds: &Dataset,
    fenced: Vec<String>,
    before: (usize, usize),
    report: &GcReport,
) -> DatasetSurvey {
    let versions = ds
        .children
        .iter()
        .filter(|(_, role)| matches!(role, Role::Version { manifest: true, .. }))
        .map(|(name, _)| name.clone())
        .collect();
    DatasetSurvey {
        name: ds.name.clone(),
        location: if ds.rel.is_empty() { place.clone() } else { place.join(&ds.rel) },
        versions,
        fenced,
        stale: report.removed_claims.len().saturating_sub(before.0) as u64,
        odd: report.odd.get(before.1..).unwrap_or_default().to_vec(),
    }
}

fn report_odd(shown: impl Fn(&str) -> String, ds: &Dataset, report: &mut GcReport) {
    for (child, why) in &ds.odd {
        report.odd.push((shown(&join(&ds.rel, child)), why.to_string()));
    }
}

/// Local roles: a staging directory goes when no process holds its `flock`,
/// its name still leads to the directory locked, and it is at least
/// `older_than_s` old (its modification time). A directory that vanishes
/// while examined (committed or aborted meanwhile) is skipped.
fn local_rules(run: Run, root: &Path, tree: &LocalTree, ds: &Dataset, report: &mut GcReport) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    report_odd(|rel| root.join(rel).display().to_string(), ds, report);
    for (child, role) in &ds.children {
        if *role != Role::Staging {
            continue;
        }
        let rel = join(&ds.rel, child);
        let dir = root.join(&rel);
        let shown = dir.display().to_string();
        pause_point("gc-listed");
        // gone since the listing (committed or aborted): not stale
        let Ok(owner) = File::open(&dir) else { continue };
        pause_point("gc-opened");
        // a live writer holds its staging directory's lock: never touched
        if rustix::fs::flock(&owner, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            report.kept_claims.push(shown);
            continue;
        }
        let Ok(meta) = owner.metadata() else { continue };
        // the lock is ours, but a writer that committed after the open and
        // then ended released it: the name must still lead to this directory
        let same = fs::symlink_metadata(&dir).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()));
        if !same {
            continue;
        }
        if !run.old(meta.modified().unwrap_or(run.now)) {
            report.kept_claims.push(shown);
            continue;
        }
        let files = tree.files_under(&rel)?;
        if run.removes() {
            match fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                // one directory that cannot go must not keep the others
                Err(e) => {
                    report.failed.push((shown, e.to_string()));
                    continue;
                }
            }
        }
        record(report, ds, shown, files.into_iter().map(|(f, _)| root.join(f).display().to_string()));
    }
    Ok(())
}

/// Object-store roles. A claim is live while it, an object under its
/// version, or an object under its writer's parts' prefix is younger than
/// `older_than_s`, or it is gc's own. A dead claim's version without a
/// manifest gets gc's claim first (so a writer still alive fails its commit
/// instead of committing over deleted objects), then loses every object, the
/// claim last (so a run that stops half way leaves it marked). A marked parts' prefix
/// goes whole (its marker last) when no live claim holds its write id and
/// its newest object is `older_than_s` old. Returns the versions gc's fence
/// holds that a run clears in time (alone, or beside a claim), in name order.
fn object_rules(
    run: Run,
    place: &ObjectLocation,
    tree: &dyn Tree,
    ds: &Dataset,
    report: &mut GcReport,
) -> Result<Vec<String>> {
    let shown = |rel: &str| place.join(rel).to_string();
    report_odd(shown, ds, report);
    let newest =
        |rel: &str| -> Result<Option<SystemTime>> { Ok(tree.files_under(rel)?.into_iter().map(|(_, t)| t).max()) };
    // every object, the marker (claim or parts' marker) last; a delete that
    // fails is reported and keeps the marker, so what is left is still found.
    // An object gone since the listing (another gc, a user) is not this run's
    // removal: stores answer its delete as done, so it is looked up first.
    // `file://`: the file itself goes, as object_store cannot name every file
    // a directory holds (it reads `a#b` back as the key of the file `a%23b`).
    let dir = place.file_path();
    let delete = |rel: &str| -> std::result::Result<bool, String> {
        match &dir {
            Some(dir) => object::remove_file_nofollow(dir, rel).map_err(|e| e.to_string()),
            None => {
                let at = place.join(rel);
                at.size()
                    .and_then(|size| size.map(|_| at.delete()).transpose())
                    .map(|d| d.is_some())
                    .map_err(|e| e.to_string())
            }
        }
    };
    // what is still under `prefix` besides its marker `last` and gc's fence
    // at its manifest key (`None`: nothing)
    let left = |prefix: &str, last: &str| -> std::result::Result<Option<String>, String> {
        let fence = join(prefix, MANIFEST);
        match &dir {
            Some(dir) => {
                let marker = last.rsplit('/').next().unwrap_or_default();
                let fenced = object::fence_writer(&place.join(&fence)).map_err(|e| e.to_string())?.is_some();
                let kept: &[&str] = if fenced { &[marker, MANIFEST] } else { &[marker] };
                Ok(object::file_left_besides(&dir.join(prefix), kept).map(|rel| join(prefix, &rel)))
            }
            None => {
                let keys = place.join(prefix).list_times().map_err(|e| e.to_string())?;
                for key in keys.into_iter().map(|(k, _)| join(prefix, &decoded(&k))) {
                    let fenced =
                        || object::fence_writer(&place.join(&key)).map(|w| w.is_some()).map_err(|e| e.to_string());
                    if key != last && !(key == fence && fenced()?) {
                        return Ok(Some(key));
                    }
                }
                Ok(None)
            }
        }
    };
    // every object, then the marker last (`rels` ends with it), only once
    // nothing else is left under `prefix`: an object not deleted under its
    // listed name keeps its leftover marked, and is reported. With `held`
    // (gc's claim and its writer id), each delete goes only while that claim is
    // still this run's: a run whose claim another took over stops there.
    // What was deleted before a stop is reported as removed.
    let remove =
        |prefix: Option<&str>, held: Option<(&str, &str)>, rels: Vec<String>, unit: String, report: &mut GcReport| {
            let mut done = Vec::new();
            if run.removes() {
                let last = rels.last().cloned().unwrap_or_default();
                let mut stop = None;
                for rel in rels {
                    if let Some((claim, id)) = held {
                        match object::claim_writer(&place.join(claim)) {
                            Ok(Some(w)) if w == id => {}
                            Ok(_) => {
                                stop = Some((shown(claim), TAKEN_OVER.to_string()));
                                break;
                            }
                            Err(e) => {
                                stop = Some((shown(claim), e.to_string()));
                                break;
                            }
                        }
                    }
                    if let Some(prefix) = prefix.filter(|_| rel == last) {
                        match left(prefix, &last) {
                            Ok(None) => {}
                            Ok(Some(what)) => {
                                stop = Some((shown(&what), STILL_THERE.to_string()));
                                break;
                            }
                            Err(e) => {
                                stop = Some((shown(&rel), e));
                                break;
                            }
                        }
                    }
                    match delete(&rel) {
                        Ok(true) => done.push(shown(&rel)),
                        Ok(false) => {}
                        Err(e) => {
                            stop = Some((shown(&rel), e));
                            break;
                        }
                    }
                }
                if let Some(failed) = stop {
                    report.failed.push(failed);
                    report.removed_files.extend(done);
                    return;
                }
                if done.is_empty() {
                    return;
                }
            } else {
                done.extend(rels.iter().map(|rel| shown(rel)));
            }
            record(report, ds, unit, done);
        };
    // (version, write id) of every live claim: its parts' prefix stays
    let mut live: BTreeSet<(String, String)> = BTreeSet::new();
    // versions gc's fence holds and a run clears in time (not one beside a user's objects)
    let mut fenced = Vec::new();
    for (child, role) in &ds.children {
        let Role::Version { manifest, claim, fence } = role else { continue };
        let version = join(&ds.rel, child);
        let fence_key = join(&version, MANIFEST);
        let Some(created) = claim else {
            // a past run's fence alone: it goes once N old (a create of its dead
            // writer still in flight then has failed or never lands)
            if let Some((put, fence_id)) = fence {
                if tree.files_under(&version)?.iter().any(|(f, _)| *f != fence_key) {
                    report.odd.push((shown(&version), BESIDE_FENCE.to_string()));
                    continue;
                }
                fenced.push(child.clone());
                if !run.old(*put) {
                    report.kept_claims.push(shown(&fence_key));
                } else if !run.removes() {
                    remove(None, None, vec![fence_key.clone()], shown(&fence_key), report);
                } else {
                    // read again right before the delete: since the listing another
                    // run may have removed this fence and a writer claimed or
                    // committed the version (review 40); only the same fence goes
                    let now = object::fence_writer(&place.join(&fence_key));
                    let claimed = place.join(&join(&version, CLAIM)).size();
                    match (now, claimed) {
                        (Ok(Some(id)), Ok(None)) if id == *fence_id => {
                            remove(None, None, vec![fence_key.clone()], shown(&fence_key), report);
                        }
                        (Ok(_), Ok(_)) => {}
                        (Err(e), _) | (_, Err(e)) => report.failed.push((shown(&fence_key), e.to_string())),
                    }
                }
            }
            continue;
        };
        if fence.is_some() {
            fenced.push(child.clone());
        }
        let claim = join(&version, CLAIM);
        let writer = object::claim_writer(&place.join(&claim))?;
        // listed only once the claim itself is old enough; gc's own claim
        // ages alike: the run that put it may still be deleting
        let mut under = None;
        let alive = !run.old(*created) || {
            let files = under.insert(tree.files_under(&version)?);
            let parts = writer.as_ref().map(|w| join(&ds.rel, &format!(".tmp-{child}-{w}")));
            let newest_part = parts.as_deref().map(newest).transpose()?.flatten();
            let last = files.iter().map(|(_, t)| *t).chain([*created]).chain(newest_part).max().unwrap_or(*created);
            !run.old(last)
        };
        if alive {
            report.kept_claims.push(shown(&claim));
            live.extend(writer.map(|w| (child.clone(), w)));
            continue;
        }
        let (mut rels, mut ours) = (Vec::new(), None);
        if !manifest {
            let under = match under {
                Some(under) => under,
                None => tree.files_under(&version)?,
            };
            // a manifest.json neither TimeF's nor gc's fence is a user's: kept,
            // with everything beside it (only the claim goes), in a dry run too
            let users_manifest = fence.is_none() && under.iter().any(|(f, _)| *f == fence_key);
            rels.extend(under.into_iter().map(|(f, _)| f).filter(|f| *f != claim && *f != fence_key));
            if users_manifest {
                rels.clear();
            }
            // gc's claim goes over the dead one (gc's own too: another run may
            // be clearing it): the dead writer, were it alive, now fails its
            // claim check, and another gc's take-over of the same claim fails.
            // A claim changed since the listing (another gc cleared it, a new
            // writer may hold or have committed the version) is not this run's
            if run.removes() {
                pause_point("gc-claim-judged");
                match object::take_over_claim(&place.join(&claim), writer.as_deref(), *created) {
                    Ok(Some(id)) => ours = Some(id),
                    Ok(None) => continue,
                    Err(e) => {
                        report.failed.push((shown(&claim), e.to_string()));
                        continue;
                    }
                }
                // the fence at the manifest key before any delete: a create of
                // the manifest by the dead writer, were it alive (a slow or
                // held request past its claim check), now fails. A manifest
                // there (its writer was slow, not dead, and committed): only
                // gc's claim goes, never a committed version's object
                let fenced = match users_manifest {
                    true => Ok(object::Fenced::Manifest),
                    false => object::put_fence(
                        &place.join(&fence_key),
                        &place.join(&claim),
                        ours.as_deref().unwrap_or_default(),
                    ),
                };
                match fenced {
                    Ok(object::Fenced::Now | object::Fenced::Already) => pause_point("gc-claim-taken"),
                    Ok(object::Fenced::Manifest) => rels.clear(),
                    Err(e) => {
                        report.failed.push((shown(&claim), e.to_string()));
                        continue;
                    }
                }
            }
        }
        // beside a manifest (listed, or found since) only the claim goes
        let cleared = (!manifest && !rels.is_empty()).then_some(version.as_str());
        rels.push(claim.clone());
        let held = ours.as_deref().map(|id| (claim.as_str(), id));
        remove(cleared, held, rels, shown(&claim), report);
    }
    for (child, role) in &ds.children {
        let Role::Parts { version, write_id } = role else { continue };
        let prefix = join(&ds.rel, child);
        let mut files = tree.files_under(&prefix)?;
        let last = files.iter().map(|(_, t)| *t).max();
        if live.contains(&(version.clone(), write_id.clone())) || last.is_some_and(|t| !run.old(t)) {
            report.kept_claims.push(shown(&prefix));
            continue;
        }
        // the marker last: until it goes, what is left is still found
        files.sort_by_key(|(f, _)| (f.rsplit('/').next() == Some(PARTS_MARKER), f.clone()));
        remove(Some(&prefix), None, files.into_iter().map(|(f, _)| f).collect(), shown(&prefix), report);
    }
    Ok(fenced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gc_removes_only_what_is_named_like_a_writers_staging_and_never_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, elsewhere) = (tmp.path().join("root"), tmp.path().join("elsewhere"));
        let random = "a".repeat(local::STAGING_RANDOM_CHARS);
        let stale = format!(".tmp-v1-{random}");
        for dir in [
            root.join("project/.tmp-cache"),
            root.join("project/.new-ideas"),
            root.join(format!("project/.tmp-v1-{}", &random[1..])),
            root.join(format!("project/.tmp-.v1-{random}")),
            root.join("project").join(&stale),
            root.join("project").join(format!(".new-v2-{random}")),
            elsewhere.join(&stale),
        ] {
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("notes.txt"), b"important").unwrap();
        }
        std::os::unix::fs::symlink(&elsewhere, root.join("linked")).unwrap();
        let report = gc(&Location::local(&root), 0).unwrap();
        let project = root.join("project");
        let removed = [project.join(format!(".new-v2-{random}")), project.join(&stale)];
        assert_eq!(report.removed_claims, removed.clone().map(|p| p.display().to_string()));
        let files = removed.map(|p| p.join("notes.txt").display().to_string());
        assert_eq!((report.removed_files, report.failed.len()), (files.to_vec(), 0));
        let left: Vec<String> = local::walk(&root).0.into_iter().map(|(f, _)| f).collect();
        let want = [
            "linked".to_string(),
            "project/.new-ideas/notes.txt".into(),
            format!("project/.tmp-.v1-{random}/notes.txt"),
            "project/.tmp-cache/notes.txt".into(),
            format!("project/.tmp-v1-{}/notes.txt", &random[1..]),
        ];
        assert_eq!(left, want);
        assert!(elsewhere.join(&stale).join("notes.txt").exists());
    }

    #[test]
    fn a_listing_answers_levels_and_files_under_a_prefix_at_exact_levels() {
        let t = SystemTime::UNIX_EPOCH;
        let listed = Listed(
            ["a/1/manifest.json", "a/1/time_series/s.parquet", "a/10/x", "a/notes.txt", "ab/y"]
                .into_iter()
                .map(|k| (k.to_string(), t))
                .collect(),
        );
        let top = listed.level("").unwrap();
        assert_eq!(top.dirs.into_iter().collect::<Vec<_>>(), ["a", "ab"]);
        let a = listed.level("a").unwrap();
        assert_eq!(a.dirs.into_iter().collect::<Vec<_>>(), ["1", "10"]);
        assert_eq!(a.files.into_keys().collect::<Vec<_>>(), ["notes.txt"]);
        let under: Vec<String> = listed.files_under("a/1").unwrap().into_iter().map(|(f, _)| f).collect();
        assert_eq!(under, ["a/1/manifest.json", "a/1/time_series/s.parquet"]);
    }
}
