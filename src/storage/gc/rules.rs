//! The rule of each role (docs/format.md §1 "Clearing a dead writer's claim"):
//! a local staging directory, an object-store claim with its version, gc's
//! fence, a parts' prefix. Nothing without a role is acted on.

use std::collections::BTreeSet;
use std::time::SystemTime;

use super::classify::{Dataset, Role};
use super::staging_dir::StagingDir;
use super::tree::{decoded, join, within, LocalTree, Tree};
use super::{GcReport, Mode};
use crate::error::Result;
use crate::storage::object::{self, ObjectLocation};
use crate::storage::{pause_point, CLAIM, MANIFEST, PARTS_MARKER};

/// Why a leftover is kept or stopped.
const STILL_THERE: &str =
    "still there once its writer's other objects were removed (not found under its listed name); \
     the leftover stays marked (remove it by hand if nobody needs it)";
const TAKEN_OVER: &str = "is no longer this run's (another gc run took it over): this run stopped clearing it";
const BESIDE_FENCE: &str =
    "holds gc's fence (manifest.json) and objects no claim marks: not a writer's; kept (remove them by hand if nobody needs them)";

/// One run: the age a leftover must reach, the time now, what it does.
#[derive(Clone, Copy)]
pub(super) struct Run {
    pub(super) older_than_s: u64,
    pub(super) now: SystemTime,
    pub(super) mode: Mode,
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

/// Reports the children of `ds` that look like a writer's but carry no marker, as `shown` names them.
fn report_odd(shown: impl Fn(&str) -> String, ds: &Dataset, report: &mut GcReport) {
    for (child, why) in &ds.odd {
        // once (gc's walk of a `file://` place reported its links and
        // names that are not UTF-8 as it found them)
        let path = shown(&join(&ds.rel, child));
        if !report.odd.iter().any(|(p, _)| *p == path) {
            report.odd.push((path, why.to_string()));
        }
    }
}

/// How gc reports a parts' prefix it cleared whose folders did not all go.
const PRUNE_LEFT: &str = "cleared (its files removed), but a folder in it stays: not empty, named in bytes that are \
     not UTF-8, or not this user's to remove; kept (remove it by hand if nobody needs it)";

/// Local roles: a staging directory goes when no process holds its `flock`,
/// its name still leads to the directory locked, and it is at least
/// `older_than_s` old (its modification time). It is reached again from the
/// place through the directories listed, and removed through handles
/// ([`StagingDir`]): one that vanished while examined (committed or aborted
/// meanwhile), or is no longer reached so, is skipped.
pub(super) fn local_rules(run: Run, tree: &LocalTree, ds: &Dataset, report: &mut GcReport) {
    let root = tree.root();
    report_odd(|rel| root.join(rel).display().to_string(), ds, report);
    for (child, role) in &ds.children {
        if *role != Role::Staging {
            continue;
        }
        let rel = join(&ds.rel, child);
        let shown = root.join(&rel).display().to_string();
        pause_point("gc-listed");
        let staging = match StagingDir::open(tree, &rel) {
            Ok(Some(staging)) => staging,
            // gone since the listing (committed or aborted), or replaced: not this leftover
            Ok(None) => continue,
            Err(e) => {
                unexamined(run, report, shown, e.to_string());
                continue;
            }
        };
        pause_point("gc-opened");
        // a live writer holds its staging directory's lock: never touched
        if !staging.lock() {
            report.kept_claims.push(shown);
            continue;
        }
        // the lock is ours, but a writer that committed after the open and
        // then ended released it: the name must still lead to this directory
        let Some(modified) = staging.still_named() else { continue };
        if !run.old(modified) {
            report.kept_claims.push(shown);
            continue;
        }
        // one directory that cannot go must not keep the others
        let (files, failed) = if run.removes() { staging.remove() } else { staging.files() };
        let files = files.into_iter().map(|f| root.join(f).display().to_string());
        match failed {
            None => record(report, ds, shown, files),
            Some(e) => {
                // what goes before the failure is reported (a dry run's walk
                // stops where the removal would), the leftover not: what is
                // left stays marked by its name
                report.removed_files.extend(files);
                unexamined(run, report, shown, e.to_string());
            }
        }
    }
}

/// A staging directory `shown` that could not be examined or removed (`why`):
/// a failure of `gc` and of its dry run, a directory `ls` names as odd (it
/// lists; its exit says nothing of what it found).
fn unexamined(run: Run, report: &mut GcReport, shown: String, why: String) {
    match run.mode {
        Mode::Survey => {
            report.odd.push((shown, format!("{UNEXAMINED}: {why}; kept (`timef gc` cannot clear it either)")))
        }
        Mode::Remove | Mode::DryRun => report.failed.push((shown, why)),
    }
}

/// How `ls` names a staging directory it could not examine.
const UNEXAMINED: &str = "is a staging directory that could not be examined";

/// Every file under `rel` ([`Tree::files_under`]); `None` when a level under
/// it could not be listed ([`crate::storage::object::UNLISTABLE`]): what is
/// there is not all known, so nothing under `rel` is acted on (the level is
/// reported as odd). Every rule reads a prefix through it, so `gc`, which
/// listed everything first, and `ls`, which lists a prefix as a rule reads
/// it, judge alike.
fn whole(tree: &dyn Tree, rel: &str) -> Result<Option<Vec<(String, SystemTime)>>> {
    let files = tree.files_under(rel)?;
    Ok((!unlisted(tree, rel)).then_some(files))
}

/// True when a level that could not be listed is `rel`, under it, or above
/// it: what is under `rel` is not all known (above it, what was listed there
/// may even be another prefix's objects whose names decode alike, `d%73` for
/// `ds`, while its own are hidden).
fn unlisted(tree: &dyn Tree, rel: &str) -> bool {
    tree.unlistable().iter().chain(&tree.closed()).any(|u| within(u, rel) || within(rel, u))
}

/// True when a level that could not be listed, or that this user may not
/// read, is `rel` or above it: what `rel` itself directly holds is not known.
fn hidden(tree: &dyn Tree, rel: &str) -> bool {
    tree.unlistable().iter().chain(&tree.closed()).any(|u| within(rel, u))
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
pub(super) fn object_rules(
    run: Run,
    place: &ObjectLocation,
    tree: &dyn Tree,
    ds: &Dataset,
    report: &mut GcReport,
) -> Result<Vec<String>> {
    let shown = |rel: &str| place.join(rel).to_string();
    report_odd(shown, ds, report);
    // the newest object under `rel` (`Some(None)`: nothing there); `None` when a
    // level under it could not be listed
    let newest = |rel: &str| -> Result<Option<Option<SystemTime>>> {
        Ok(whole(tree, rel)?.map(|files| files.into_iter().map(|(_, t)| t).max()))
    };
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
                let (keys, unlistable) = place.join(prefix).list_times().map_err(|e| e.to_string())?;
                // what cannot be listed may hold anything: something is left
                if let Some(level) = unlistable.first() {
                    return Ok(Some(join(prefix, &decoded(level))));
                }
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
    // file://: a prefix is a directory, which object_store's local store
    // makes and never removes: once a prefix's files are gone, its
    // directories that are empty go too, deepest first, reached without
    // following a link (`rmdir` takes only an empty one: gc's fence keeps its
    // version's, anything put there meanwhile keeps its own)
    let prune = |prefix: &str, rels: &[String]| {
        let Some(dir) = &dir else { return };
        let mut dirs = BTreeSet::from([prefix.to_string()]);
        for rel in rels {
            let mut at = rel.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                if !within(parent, prefix) || parent == prefix {
                    break;
                }
                dirs.insert(parent.to_string());
                at = parent;
            }
        }
        let mut dirs: Vec<String> = dirs.into_iter().collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
        for d in dirs {
            let _ = object::remove_empty_dir_nofollow(dir, &d);
        }
    };
    // every object, then the marker last (`rels` ends with it), only once
    // nothing else is left under `prefix`: an object not deleted under its
    // listed name keeps its leftover marked, and is reported. With `held`
    // (gc's claim and its writer id), each delete goes only while that claim is
    // still this run's: a run whose claim another took over stops there.
    // What was deleted before a stop is reported as removed. True when every
    // one went (a run that removes, not stopped).
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
                    return false;
                }
                if !done.is_empty() {
                    record(report, ds, unit, done);
                }
                true
            } else {
                record(report, ds, unit, rels.iter().map(|rel| shown(rel)));
                false
            }
        };
    // (version, write id) of every live claim: its parts' prefix stays
    let mut live: BTreeSet<(String, String)> = BTreeSet::new();
    // versions whose claim's writer is not known (its claim or manifest could
    // not be read, when classified or since): every parts' prefix of theirs stays
    let mut unknown_writer: BTreeSet<String> = ds.unread_claims.clone();
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
                let Some(files) = whole(tree, &version)? else { continue };
                if files.iter().any(|(f, _)| *f != fence_key) {
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
                            if remove(None, None, vec![fence_key.clone()], shown(&fence_key), report) {
                                prune(&version, &[]);
                            }
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
        // a claim classifying read as a writer's, that does not read as one
        // now (changed since, or beyond what a claim holds): its writer may live
        if writer.is_none() {
            unknown_writer.insert(child.clone());
        }
        // listed only once the claim itself is old enough; gc's own claim
        // ages alike: the run that put it may still be deleting
        let mut under = None;
        // a level under the version or its writer's parts that could not be
        // listed may hide anything: the claim is judged alive, and kept
        let alive = !run.old(*created) || {
            let parts = writer.as_ref().map(|w| join(&ds.rel, &format!(".tmp-{child}-{w}")));
            let (newest_part, files) = match (parts.as_deref().map(newest).transpose()?, whole(tree, &version)?) {
                // no writer id (no parts' prefix), or the newest part's time
                (None, Some(files)) => (None, files),
                (Some(Some(newest_part)), Some(files)) => (newest_part, files),
                _ => {
                    live.extend(writer.clone().map(|w| (child.clone(), w)));
                    continue;
                }
            };
            let files = under.insert(files);
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
                None => match whole(tree, &version)? {
                    Some(files) => files,
                    None => {
                        live.extend(writer.map(|w| (child.clone(), w)));
                        continue;
                    }
                },
            };
            // a manifest.json neither TimeF's nor gc's fence is a user's: kept,
            // with everything beside it (only the claim goes), in a dry run too;
            // so is anything else at its name on `file://` (a folder, empty or
            // not, a link never read through), where gc's fence cannot go
            // either; on an object store a key and a prefix of one name are two
            // things, and the fence goes there
            let at_manifest = dir.as_ref().is_some_and(|dir| {
                std::fs::symlink_metadata(dir.join(&fence_key)).is_ok_and(|m| !m.file_type().is_file())
            });
            let users_manifest = fence.is_none() && (at_manifest || under.iter().any(|(f, _)| *f == fence_key));
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
        let all = rels.clone();
        if remove(cleared, held, rels, shown(&claim), report) {
            if let Some(version) = cleared {
                prune(version, &all);
            }
        }
    }
    for (child, role) in &ds.children {
        let Role::Parts { version, write_id } = role else { continue };
        let prefix = join(&ds.rel, child);
        // its version's level unlisted, or one above it (classifying read
        // them), may hide the claim that holds it, as a claim that cannot be
        // read may be it: kept. A level below the version cannot: the claim
        // is in the version's own level, and a claim whose version holds
        // one is judged alive above
        if hidden(tree, &join(&ds.rel, version)) || unknown_writer.contains(version) {
            continue;
        }
        let Some(mut files) = whole(tree, &prefix)? else { continue };
        let last = files.iter().map(|(_, t)| *t).max();
        if live.contains(&(version.clone(), write_id.clone())) || last.is_some_and(|t| !run.old(t)) {
            report.kept_claims.push(shown(&prefix));
            continue;
        }
        // the marker last: until it goes, what is left is still found
        files.sort_by_key(|(f, _)| (f.rsplit('/').next() == Some(PARTS_MARKER), f.clone()));
        // file://: its folders go too, once its files did (its name holds
        // the write id: each is its writer's; review 124: an empty one stayed,
        // without the marker, "removed")
        let emptied = remove(Some(&prefix), None, files.into_iter().map(|(f, _)| f).collect(), shown(&prefix), report);
        if let Some(dir) = dir.as_ref().filter(|_| emptied) {
            // its marker is gone: a later run does not find what stays
            if !object::remove_prefix_folders(dir, &prefix) {
                report.odd.push((shown(&prefix), PRUNE_LEFT.to_string()));
            }
        }
    }
    Ok(fenced)
}
