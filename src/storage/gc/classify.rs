//! How `gc` classifies what it lists: the datasets of the place by exact
//! levels, and each child of a dataset by its markers, one [`Role`] each
//! (docs/format.md §1 "Clearing a dead writer's claim": levels).

use std::collections::BTreeSet;
use std::time::SystemTime;

use super::tree::{join, Level, Memo, Tree};
use crate::error::{Error, Result};
use crate::storage::location::{Inner, Marker};
use crate::storage::object;
use crate::storage::{local, parse_staged, Location, CLAIM, MANIFEST, PARTS_MARKER};

/// The role of one child of a dataset, by its markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Role {
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
pub(super) struct Dataset {
    pub(super) name: String,
    pub(super) rel: String,
    pub(super) children: Vec<(String, Role)>,
    pub(super) odd: Vec<(String, &'static str)>,
    /// Local: a child holds a claim of a write through a `file://` URL
    /// (reported, and the place reported on as a dataset).
    url_claim: bool,
    /// A child holds a `manifest.json` that does not read as TimeF's
    /// (reported as [`OTHER_MANIFEST`]): perhaps a version whose manifest was
    /// damaged. Such a place is reported as a dataset with its odd children;
    /// it gives gc nothing to act on (no role).
    other_manifest: bool,
    /// A child holds a marker that cannot be read ([`Marker::Unreadable`],
    /// reported as [`UNREADABLE_MARKER`]), is a folder gc cannot name
    /// ([`UNNAMED`]), a link to one ([`LINKED`]) or a folder this user may not
    /// read ([`UNREADABLE_DIR`], [`UNREADABLE_STAGING`]): it may be a version, a live
    /// claim, a parts' prefix. The place is marked as one with a version is
    /// (its children's staging-named folders stay a user's), and the child
    /// has no role.
    unreadable: bool,
    /// Versions whose claim or manifest cannot be read: a live writer's,
    /// perhaps, so every parts' prefix of such a version is kept.
    pub(super) unread_claims: BTreeSet<String>,
}

/// Why a child without a marker is reported.
const UNMARKED_VERSION: &str =
    "holds files but neither a TimeF manifest.json nor a claim: not a version, and not marked as a writer's; kept (remove it by hand if nobody needs it)";
const OTHER_MANIFEST: &str =
    "holds a manifest.json that does not read as TimeF's (another tool's, or a damaged version's: `timef verify` tells): not cleared; kept";
const UNMARKED_CLAIM: &str =
    "is named like a claim but does not hold a writer id: not timef's claim; kept (remove it by hand if nobody needs it)";
const CLAIM_READ_LOCALLY: &str =
    "holds a claim of a write through a file:// URL: run gc or ls on the file:// URL of the root to clear it; kept";
const PARTS_READ_LOCALLY: &str =
    "holds the parts of a distributed write through a file:// URL: run gc or ls on the file:// URL of the root to clear it; kept";
const UNMARKED_PARTS: &str =
    "named like a parts' prefix but without its marker _timef_parts.json; kept (remove it by hand if nobody needs it)";
const KEPT_UNKNOWN: &str = "named like a writer's, where a marker gc cannot read leaves unknown whether it is \
     one; kept";
const UNNAMED: &str = "is a folder whose name is not UTF-8: gc cannot read what it holds, so nothing it may \
     mark is cleared; kept";
const LINKED: &str = "is a symbolic link to a folder, which gc never follows: what it leads to (a linked-in \
     version or dataset, perhaps) is not known, so nothing it may mark is cleared; kept";
pub(super) const UNREADABLE_DIR: &str = "is a folder this user may not read: what it holds (a version or a dataset, \
     perhaps) is not known, so nothing it may mark is cleared; kept";
const UNREADABLE_STAGING: &str = "is named like a writer's staging, in a folder this user may not read: what \
     it holds is not known, so it is not cleared; kept (gc run by its owner judges it)";
const UNREADABLE_MARKER: &str = "cannot be read (not a regular file, a loop of symbolic links, or not readable by \
     this user), so what it marks is not known: nothing it may mark is cleared; kept";

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

/// What the child `child` (at `at`) holds as a parts' prefix.
#[derive(Debug, PartialEq, Eq)]
enum PartsMark {
    /// Named `.tmp-<version>-<write id>`, its [`PARTS_MARKER`] holding that write id.
    Marked,
    /// No [`PARTS_MARKER`] in it.
    None,
    /// A [`PARTS_MARKER`] that does not hold its write id (a user's), or
    /// that cannot be read ([`Marker::Unreadable`]).
    Other(Marker),
}

fn parts_mark(place: &Location, tree: &dyn Tree, child: &str, at: &str) -> Result<PartsMark> {
    if !tree.level(at)?.files.contains_key(PARTS_MARKER) {
        return Ok(PartsMark::None);
    }
    let marker = tree.marker(place, &join(at, PARTS_MARKER), "write_id")?;
    Ok(match parts_name(child) {
        Some((_, id)) if marker.field() == Some(id) => PartsMark::Marked,
        _ => PartsMark::Other(marker),
    })
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
    // a folder gc cannot name, or a link it does not follow, may be a
    // version or a dataset: as a marker it cannot read
    // (review 123: a linked version's claim, unread, may be a live writer's,
    // as a closed folder's: every parts' prefix of its name stays)
    for (child, why) in level.unnamed.iter().map(|c| (c, UNNAMED)).chain(level.linked.iter().map(|c| (c, LINKED))) {
        ds.odd.push((child.clone(), why));
        ds.unreadable = true;
        ds.unread_claims.insert(child.clone());
    }
    // a folder this user may not read is reported where a readable one would
    // be looked at, and its markers are ones gc cannot read: a writer's staging
    // or parts' prefix by its name (whose parts' marker, unread, leaves the
    // place's kind unknown), or a folder a version may be (whose claim, unread,
    // may be a live writer's: every parts' prefix of its name stays); any other
    // `.` folder is a user's (`.Trash-1000`) and passed over, as a readable one is
    for child in &level.unreadable {
        if (local && is_staging_name(child)) || (!local && parts_name(child).is_some()) {
            ds.odd.push((child.clone(), UNREADABLE_STAGING));
        } else if !child.starts_with('.') {
            ds.odd.push((child.clone(), UNREADABLE_DIR));
            ds.unread_claims.insert(child.clone());
        } else {
            continue;
        }
        ds.unreadable = true;
    }
    for child in &level.dirs {
        let at = join(rel, child);
        if local && is_staging_name(child) {
            // a distributed write through a file:// URL names its parts' prefix
            // alike (a write id is 32 letters and digits): its marker tells. A
            // writer's staging never holds one: with another, it is a user's
            match parts_mark(place, tree, child, &at)? {
                PartsMark::Marked => {
                    ds.odd.push((child.clone(), PARTS_READ_LOCALLY));
                    ds.url_claim = true;
                }
                PartsMark::None => ds.children.push((child.clone(), Role::Staging)),
                PartsMark::Other(marker) => ds.odd_marker(child, PARTS_MARKER, &marker, UNMARKED_PARTS),
            }
            continue;
        }
        // a version's name never starts with `.` (docs/format.md §1)
        if child.starts_with('.') {
            if let Some((version, id)) = parts_name(child).filter(|_| !local) {
                match parts_mark(place, tree, child, &at)? {
                    PartsMark::Marked => {
                        let role = Role::Parts { version: version.to_string(), write_id: id.to_string() };
                        ds.children.push((child.clone(), role));
                    }
                    PartsMark::None => ds.odd.push((child.clone(), UNMARKED_PARTS)),
                    PartsMark::Other(marker) => ds.odd_marker(child, PARTS_MARKER, &marker, UNMARKED_PARTS),
                }
            }
            continue;
        }
        let inner = tree.level(&at)?;
        let marker = match inner.files.contains_key(MANIFEST) {
            true => tree.marker(place, &join(&at, MANIFEST), "format")?,
            false => Marker::NotOne,
        };
        // it may be a committed version, or a live writer's manifest in
        // flight: nothing in it, and no parts' prefix of it, is acted on
        if marker == Marker::Unreadable {
            ds.odd_marker(child, MANIFEST, &marker, OTHER_MANIFEST);
            ds.unread_claims.insert(child.clone());
            continue;
        }
        let format = marker.field();
        let manifest = format == Some(crate::names::FORMAT);
        // gc's fence (object stores): a manifest key a dead writer can no longer create
        let fence = match (&place.0, format, inner.files.get(MANIFEST)) {
            (Inner::Object(o), Some(object::GC_FENCE_FORMAT), Some(t)) if !local => {
                object::fence_writer(&o.join(&join(&at, MANIFEST)))?.map(|id| (*t, id))
            }
            _ => None,
        };
        let claim = match inner.files.get(CLAIM) {
            Some(t) => match tree.marker(place, &join(&at, CLAIM), "writer_id")? {
                Marker::Field(w) if object::is_writer_id(&w) => Some(*t),
                // a live writer's, perhaps: its version and parts are kept
                Marker::Unreadable => {
                    ds.odd_marker(child, CLAIM, &Marker::Unreadable, UNMARKED_CLAIM);
                    ds.unread_claims.insert(child.clone());
                    if manifest {
                        ds.children.push((child.clone(), Role::Version { manifest, claim: None, fence: None }));
                    }
                    continue;
                }
                _ => {
                    ds.odd.push((join(child, CLAIM), UNMARKED_CLAIM));
                    None
                }
            },
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
        } else if !inner.files.is_empty()
            || !inner.dirs.is_empty()
            || !inner.unnamed.is_empty()
            || !inner.linked.is_empty()
            || !inner.unreadable.is_empty()
        {
            ds.odd.push((child.clone(), UNMARKED_VERSION));
        }
    }
    Ok(ds)
}

impl Dataset {
    /// Reports the file `file` of the child `child` as odd: `why` when it is
    /// no such marker by its content, [`UNREADABLE_MARKER`] when it cannot be
    /// read (the place is then marked as one with a version).
    fn odd_marker(&mut self, child: &str, file: &str, marker: &Marker, why: &'static str) {
        match marker {
            Marker::Unreadable => {
                self.odd.push((join(child, file), UNREADABLE_MARKER));
                self.unreadable = true;
            }
            _ => self.odd.push((child.to_string(), why)),
        }
    }

    /// A child is a version (holds a TimeF `manifest.json` or a claim).
    fn has_version(&self) -> bool {
        self.children.iter().any(|(_, role)| matches!(role, Role::Version { .. }))
    }

    /// A child is a version, or may be one (holds a marker that cannot be read).
    fn may_have_version(&self) -> bool {
        self.unreadable || self.has_version()
    }

    /// Acts on nothing here: each child with a role is reported as
    /// [`KEPT_UNKNOWN`] instead (a marker that cannot be read leaves the
    /// place's kind, so theirs, unknown).
    fn keep_all(&mut self) {
        for (child, _) in self.children.drain(..) {
            self.odd.push((child, KEPT_UNKNOWN));
        }
    }
    /// A child is a version or a writer's staging (or holds a `file://` claim,
    /// or a marker that cannot be read).
    fn is_marked(&self) -> bool {
        !self.children.is_empty() || self.url_claim || self.unreadable
    }
}

/// The datasets of the place (docs/format.md §1 "Clearing a dead writer's
/// claim": levels), by exact levels:
/// - one of its children is a version: the place is a dataset, and each of
///   its other children that has versions is a dataset too;
/// - else one of its children has versions, or the place has no writer's
///   staging of its own: a root, whose datasets are its children with a
///   version or a writer's staging (its own staging-named folders are a user's);
/// - else, when a marker that cannot be read leaves the place's kind unknown
///   (one of its own children's, or one of a child's while the place's only
///   marks are writers' staging), both: nothing of its own is acted on, and
///   its children with versions are datasets (those that may have one are
///   reported, not acted on);
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
pub(super) fn classify(place: &Location, tree: &dyn Tree, local: bool) -> Result<Vec<Dataset>> {
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
    let with_role: BTreeSet<&str> = itself.children.iter().map(|(n, _)| n.as_str()).collect();
    for child in top.dirs.iter().filter(|c| !c.starts_with('.')) {
        if with_role.contains(child.as_str()) {
            continue;
        }
        let level = tree.level(child)?;
        children.push(scan_dataset(place, tree, local, child, child, &level)?);
    }
    // a child whose only version may be one (its marker cannot be read) is a
    // dataset if it is one and a user's folder if not: reported, not acted on
    let datasets_of_a_dataset = |children: &mut Vec<Dataset>| {
        children.retain_mut(|c| match (c.has_version(), c.unreadable) {
            (true, _) => true,
            (false, true) => {
                c.keep_all();
                true
            }
            (false, false) => false,
        })
    };
    // a child that is a dataset is not one of the place's odd children
    let not_odd = |itself: &mut Dataset, children: &[Dataset]| {
        let datasets: BTreeSet<&str> = children.iter().map(|c| c.name.as_str()).collect();
        itself.odd.retain(|(n, _)| !datasets.contains(n.as_str()));
    };
    let mut out = Vec::new();
    if itself.has_version() {
        datasets_of_a_dataset(&mut children);
        not_odd(&mut itself, &children);
        out.push(itself);
    } else if itself.unreadable
        || (itself.is_marked()
            && !children.iter().any(Dataset::has_version)
            && children.iter().any(Dataset::may_have_version))
    {
        // a child of the place, or of one of its children, may be a version
        // or not (its marker cannot be read), and no other tells the place's
        // kind: a dataset (whose children's staging-named folders are a
        // user's) or a root (whose own are). Only what both readings clear
        // is cleared, none of its own leftovers
        itself.keep_all();
        datasets_of_a_dataset(&mut children);
        not_odd(&mut itself, &children);
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
