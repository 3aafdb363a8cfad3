//! `gc` and the stale counts of `ls`: what writers that died left, found by
//! markers at exact levels, cleared by one rule per role (docs/format.md §1
//! "Clearing a dead writer's claim").
//!
//! 1. **List** the place given (a root or a dataset) through a [`Tree`]: one
//!    listing of every object (object-store `gc`), listings with a delimiter
//!    (object-store `ls`, whose requests must not grow with the shards), or
//!    directory reads (local).
//! 2. **Classify** by markers at exact levels ([`classify()`]; a marker is
//!    read, a file named like one is not enough: [`Location::marker`]): the place
//!    is refused when it is a version; a dataset when one of its children is
//!    a version (a TimeF manifest or a claim), with its children that have
//!    versions; else a root whose datasets are its children with a version or
//!    a writer's staging; else, when its own children are writers' staging, a
//!    dataset. In a dataset each child is one [`Role`]; everything else (a
//!    user's files and folders, beside, above or inside) has no role.
//! 3. **One rule per role** ([`rules`]): a local staging directory goes when
//!    no process holds its `flock` and it is old enough; a claim when it and
//!    everything its writer puts are old enough, with the objects of its
//!    version when that has no manifest; a marked parts' prefix when no live
//!    claim holds its write id and it is old enough. Nothing without a role is
//!    ever removed; what looks like a writer's but carries no marker is kept
//!    and reported ([`GcReport::odd`]).
//!
//! `gc`, its dry run and `ls` run the same code; a dry run only skips the removals.

mod classify;
mod rules;
mod staging_dir;
mod tree;

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::location::Inner;
use super::{object, pause_point, Location};
use crate::error::{Error, Result};
use classify::{classify, Dataset, Role};
use rules::{local_rules, object_rules, Run};
use tree::{decoded, file_tree, within, Delimited, FileUrlTree, Listed, LocalTree, Tree, UnreadDirs};

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
/// [`Error::Validation`](crate::Error::Validation) (field `root`) when `place` is a version or a
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
    /// A dry run over one level at a time: listings with a delimiter on an
    /// object store, a `file://` place read as a local one.
    Survey,
}

/// Lists, classifies and applies the rules; removes only in [`Mode::Remove`].
fn collect(place: &Location, older_than_s: u64, now: SystemTime, mode: Mode) -> Result<Survey> {
    let run = Run { older_than_s, now, mode };
    let mut survey = Survey::default();
    match &place.0 {
        Inner::Local(root, _) => {
            let tree = LocalTree::open(root)?;
            for ds in classify(place, &tree, true)? {
                let before = (survey.report.removed_claims.len(), survey.report.odd.len());
                local_rules(run, &tree, &ds, &mut survey.report);
                survey.datasets.push(found(place, &ds, Vec::new(), before, &survey.report));
            }
        }
        Inner::Object(o) => {
            let (listed, delimited, levels);
            let tree: &dyn Tree = if let (Mode::Survey, Some(dir)) = (mode, o.file_path()) {
                // read as a local place is, a level at a time through handles:
                // object_store's listing follows links, fails the whole place
                // at a link loop, and reads names it must encode
                levels = FileUrlTree(LocalTree::open(&dir).map_err(|e| match e {
                    // named by the URL given, as the other readings name it
                    Error::Missing { what, .. } => Error::Missing { path: place.to_path_buf(), what },
                    other => other,
                })?);
                &levels
            } else if mode == Mode::Survey {
                delimited = Delimited(o.clone(), Default::default());
                &delimited
            } else {
                let (all, unlistable, unread) = match o.file_path() {
                    Some(dir) => {
                        let (all, unread) = file_tree(&dir, |rel| o.join(rel).to_string(), &mut survey.report)?;
                        (all, Vec::new(), unread)
                    }
                    None => {
                        let (all, unlistable) = o.list_times()?;
                        // the place's own level: nothing of it can be judged
                        if unlistable.iter().any(String::is_empty) {
                            return Err(object::cannot_list(o));
                        }
                        let all = all.into_iter().map(|(k, t)| (decoded(&k), t)).collect();
                        (all, unlistable.iter().map(|u| decoded(u)).collect(), UnreadDirs::default())
                    }
                };
                listed = Listed { files: all, unlistable, unread };
                pause_point("gc-objects-listed");
                &listed
            };
            for ds in classify(place, tree, false)? {
                let before = (survey.report.removed_claims.len(), survey.report.odd.len());
                // a rule reading a prefix with a level it could not list acts on
                // nothing there (`rules::whole`); such levels are reported as odd
                let fenced = object_rules(run, o, tree, &ds, &mut survey.report)?;
                report_unlistable(o, tree, &ds.rel, &mut survey.report);
                survey.datasets.push(found(place, &ds, fenced, before, &survey.report));
            }
            // the levels outside every dataset, reported for the place (a
            // folder this user may not read in a hidden one, say)
            report_unlistable(o, tree, "", &mut survey.report);
        }
    }
    to_innermost_dataset(&mut survey.datasets);
    Ok(survey)
}

/// Reports as odd each level under `rel` that could not be listed, or
/// that this user may not read, once.
fn report_unlistable(o: &object::ObjectLocation, tree: &dyn Tree, rel: &str, report: &mut GcReport) {
    for level in tree.unlistable().iter().filter(|u| within(u, rel)) {
        report_once(o, level, object::UNLISTABLE, report);
    }
    for level in tree.closed().iter().filter(|c| within(c, rel)) {
        report_once(o, level, classify::UNREADABLE_DIR, report);
    }
}

/// Reports `level` as odd for `why`, unless it is already.
fn report_once(o: &object::ObjectLocation, level: &str, why: &str, report: &mut GcReport) {
    let path = o.join(level).to_string();
    if !report.odd.iter().any(|(p, _)| *p == path) {
        report.odd.push((path, why.to_string()));
    }
}

/// Moves each odd entry to the innermost dataset whose folder holds it: a
/// dataset's look at its children also reads the own folder of a child that
/// is a dataset itself (review 52).
fn to_innermost_dataset(datasets: &mut [DatasetSurvey]) {
    let folders: BTreeMap<String, usize> = datasets
        .iter()
        .enumerate()
        .map(|(j, d)| (format!("{}/", d.location.to_string().trim_end_matches('/')), j))
        .collect();
    // the longest folder the path is under: its prefixes ending at a `/`, longest first
    let innermost = |path: &str| path.match_indices('/').rev().find_map(|(k, _)| folders.get(&path[..=k]).copied());
    for i in 0..datasets.len() {
        let odd = std::mem::take(&mut datasets[i].odd);
        for (path, why) in odd {
            let to = innermost(&path).unwrap_or(i);
            datasets[to].odd.push((path, why));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::local;
    use std::fs;

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
        // a link to a folder beside the dataset would leave the root's kind unknown (it may
        // be a linked-in dataset or version): inside a folder of the dataset it is content
        fs::create_dir_all(root.join("project/notes")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("project/notes/linked")).unwrap();
        let report = gc(&Location::local(&root), 0).unwrap();
        let project = root.join("project");
        let removed = [project.join(format!(".new-v2-{random}")), project.join(&stale)];
        assert_eq!(report.removed_claims, removed.clone().map(|p| p.display().to_string()));
        let files = removed.map(|p| p.join("notes.txt").display().to_string());
        assert_eq!((report.removed_files, report.failed.len()), (files.to_vec(), 0));
        let left: Vec<String> = local::walk(&root).0.into_iter().map(|(f, _)| f).collect();
        let want = [
            "project/.new-ideas/notes.txt".to_string(),
            format!("project/.tmp-.v1-{random}/notes.txt"),
            "project/.tmp-cache/notes.txt".into(),
            format!("project/.tmp-v1-{}/notes.txt", &random[1..]),
            "project/notes/linked".into(),
        ];
        assert_eq!(left, want);
        assert!(elsewhere.join(&stale).join("notes.txt").exists());
    }
}
