//! Applying an [`Edit`] to a dataset in memory: the referential rules of
//! `docs/format.md` §7.

use std::collections::{BTreeMap, BTreeSet};

use super::{Cascade, Edit, EditPlan};
use crate::dataset::{Loader, Task, TimeFDataset};
use crate::error::{EditBlocker, Error, Result};

fn blocker(id: &str, field: &'static str, reason: String) -> EditBlocker {
    EditBlocker { id: id.to_string(), field, reason }
}

/// Why a task blocks the edit, one per (task, reference).
fn task_blockers(name: &str, t: &Task, removed: &BTreeSet<String>, gone: &BTreeSet<String>) -> Vec<EditBlocker> {
    let mut out = Vec::new();
    let id = &t.task_id;
    if let Some(s) = t.target_sample_id.as_ref().filter(|s| removed.contains(*s)) {
        out.push(blocker(id, "target_sample_id", format!("task {name}/{id}: target_sample_id {s} would be removed")));
    }
    // an entry the list holds twice is one blocker (review 145)
    let mut seen = BTreeSet::new();
    for s in t.context_sample_ids.iter().flatten().filter(|s| removed.contains(*s) && seen.insert(*s)) {
        out.push(blocker(
            id,
            "context_sample_ids",
            format!("task {name}/{id}: context_sample_ids entry {s} would be removed"),
        ));
    }
    if t.sample_ids.iter().all(|s| removed.contains(s)) {
        out.push(blocker(id, "sample_ids", format!("task {name}/{id}: its last sample would be removed")));
    }
    if let Some(f) = t.from_task.as_ref().filter(|f| gone.contains(*f)) {
        out.push(blocker(id, "from_task", format!("task {name}/{id}: from_task {f} would be removed")));
    }
    out
}

/// Each id of `ids` that `exists` rejects, as a blocker on `field`.
fn unknown<'a>(
    ids: impl IntoIterator<Item = &'a String>,
    field: &'static str,
    what: &str,
    exists: impl Fn(&str) -> bool,
) -> Vec<EditBlocker> {
    ids.into_iter().filter(|id| !exists(id)).map(|id| blocker(id, field, format!("unknown {what} {id}"))).collect()
}

/// What differs between the values of the series added again with the
/// base's metadata (`of_base`: row, id and the added values' loader, of every
/// addition in turn) and the base's, a blocker per series and addition,
/// sorted by id. The base's are asked of `base_values` in write order, the
/// order of the base's index, so that one scan reads them (a series read
/// alone decodes each page it lies on: thousands of short series added again
/// decoded the same page thousands of times).
fn changed_values(
    d: &TimeFDataset,
    mut of_base: Vec<(u32, String, Loader)>,
    base_values: &dyn Fn(&[String]) -> Vec<Loader>,
) -> Result<Vec<EditBlocker>> {
    let mut blockers = Vec::new();
    // each addition's series in write order, the additions of one series in their order
    let mut rows: Vec<u32> = of_base.iter().map(|(row, ..)| *row).collect();
    rows.sort_unstable();
    rows.dedup();
    d.series.sort_in_write_order(&mut rows);
    let rank: BTreeMap<u32, usize> = rows.iter().enumerate().map(|(i, row)| (*row, i)).collect();
    of_base.sort_by_key(|(row, ..)| rank.get(row).copied());
    // each base series asked once (the additions of one series are adjacent), so the scan
    // never has to go back for one; asked only when there is something to compare
    let mut ids: Vec<String> = of_base.iter().map(|(_, id, _)| id.clone()).collect();
    ids.dedup();
    let mut held_values = if ids.is_empty() { Vec::new() } else { base_values(&ids) }.into_iter();
    let mut held: Option<(String, crate::dataset::SeriesValues)> = None;
    for (_, id, loader) in of_base {
        let values = match held.take() {
            Some((of, values)) if of == id => values,
            _ => {
                // a reader that gives fewer loaders than asked must not skip a comparison
                let Some(base) = held_values.next() else {
                    return Err(Error::loading(id, "the base reader gave no loader for this series".into()));
                };
                // the base's read error as it is (a corrupt page is a corrupt version, not a loader's failure)
                base().map_err(|e| match e.downcast::<Error>() {
                    Ok(e) => *e,
                    Err(source) => Error::loading(id.clone(), source),
                })?
            }
        };
        let new = loader().map_err(|source| Error::loading(id.clone(), source))?;
        blockers.extend(crate::dataset::merge::values_differ(&id, &values, &new));
        held = Some((id, values));
    }
    blockers.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(blockers)
}

fn refused(blockers: Vec<EditBlocker>) -> Result<()> {
    if blockers.is_empty() {
        Ok(())
    } else {
        Err(Error::Edit { blockers })
    }
}

/// Applies `edit` to `dataset` (the base read as a dataset) in memory and
/// returns what it did. `base_values` gives a loader of the base's values
/// for each series id it is given (series added whose id and metadata the
/// base holds, to compare their values), in the order given: the base's
/// index order, for one scan. `edit.add` is consumed.
///
/// Order: every id to remove is checked to exist; series of removed channels
/// join the removed series; a sample left with no series is refused (or, with
/// [`Cascade::RemoveDependents`], removed); the task rules run over the removed
/// samples (a task losing its last sample, its `target_sample_id`, a
/// `context_sample_ids` entry, or its `from_task` is refused, or removed with
/// the tasks derived from it, transitively); tasks and annotations to remove or
/// replace go; removed samples leave every task and annotation (an annotation
/// left on no sample goes) and series no sample references go; then the
/// additions merge (an id held with other content is refused), then annotations,
/// tasks and sources are set and the dataset fields changed. The caller then
/// checks the whole with [`TimeFDataset::validate_references`].
///
/// # Errors
/// [`Error::Edit`] listing every blocker of the first check that fails;
/// [`Error::Validation`] for an entity to set that breaks a rule;
/// [`Error::Loader`] or the base's read error when comparing series values.
pub fn apply(
    dataset: &mut TimeFDataset,
    edit: &mut Edit,
    base_values: &dyn Fn(&[String]) -> Vec<Loader>,
) -> Result<EditPlan> {
    let d = dataset;
    let channels: BTreeSet<&str> = (0..d.series.len()).map(|r| d.series.channel(r)).collect();
    let task_ids: BTreeSet<&str> = d.tasks().map(|(_, t)| t.task_id.as_str()).collect();
    let mut blockers = unknown(&edit.remove_sample_ids, "remove_sample_ids", "sample id", |s| d.contains_sample(s));
    blockers.extend(unknown(&edit.remove_series_ids, "remove_series_ids", "series id", |s| d.contains_series(s)));
    for c in edit.remove_channels.iter().filter(|c| !channels.contains(c.as_str())) {
        let hint = crate::dataset::unknown_channel_hint(c, channels.iter().copied());
        blockers.push(blocker(c, "remove_channels", format!("unknown channel {c}{hint}")));
    }
    blockers.extend(unknown(&edit.remove_annotation_ids, "remove_annotation_ids", "annotation id", |a| {
        d.annotations.contains_key(a)
    }));
    blockers.extend(unknown(&edit.remove_task_ids, "remove_task_ids", "task id", |t| task_ids.contains(t)));
    refused(blockers)?;

    let mut dropped: BTreeSet<String> = edit.remove_series_ids.clone();
    if !edit.remove_channels.is_empty() {
        dropped.extend(
            (0..d.series.len())
                .filter(|&r| edit.remove_channels.contains(d.series.channel(r)))
                .map(|r| d.series.id(r).to_string()),
        );
    }
    let mut removed = edit.remove_sample_ids.clone();
    let mut blockers = Vec::new();
    if !dropped.is_empty() {
        for s in d.samples() {
            if !removed.contains(&s.sample_id) && s.series.iter().all(|r| dropped.contains(&r.time_series_id)) {
                if edit.cascade == Cascade::RemoveDependents {
                    removed.insert(s.sample_id);
                } else {
                    let reason = format!("sample {}: its last series would be removed", s.sample_id);
                    blockers.push(blocker(&s.sample_id, "series", reason));
                }
            }
        }
    }
    // a task set by the edit replaces the base's: the base's cannot block
    let replaced: BTreeSet<&str> =
        edit.set_tasks.iter().map(|(_, t)| t.task_id.as_str()).filter(|t| task_ids.contains(t)).collect();
    let mut gone: BTreeSet<String> = edit.remove_task_ids.clone();
    let mut plan = EditPlan::default();
    plan.tasks =
        d.tasks().filter(|(_, t)| gone.contains(&t.task_id)).map(|(n, t)| (n.to_string(), t.task_id.clone())).collect();
    // a fixpoint: removing a task can block the tasks derived from it
    loop {
        let mut found = Vec::new();
        for (name, t) in d.tasks() {
            if gone.contains(&t.task_id) || replaced.contains(t.task_id.as_str()) {
                continue;
            }
            let b = task_blockers(name, t, &removed, &gone);
            if !b.is_empty() {
                found.push((name.to_string(), t.task_id.clone(), b));
            }
        }
        if found.is_empty() {
            break;
        }
        if edit.cascade == Cascade::Refuse {
            blockers.extend(found.into_iter().flat_map(|(_, _, b)| b));
            break;
        }
        for (name, id, _) in found {
            gone.insert(id.clone());
            plan.tasks.push((name, id));
        }
    }
    refused(blockers)?;
    plan.tasks.sort();
    let replaced: BTreeSet<String> = replaced.into_iter().map(String::from).collect();

    for (name, tasks) in d.tasks.iter_mut() {
        tasks.retain(|id, _| !gone.contains(id) && !replaced.contains(id));
        for t in tasks.values_mut() {
            let before = t.sample_ids.len();
            t.sample_ids.retain(|s| !removed.contains(s));
            if t.sample_ids.len() != before {
                plan.stripped_tasks.push((name.clone(), t.task_id.clone()));
            }
        }
    }
    d.tasks.retain(|_, tasks| !tasks.is_empty());
    plan.series = d.retain(|id| !removed.contains(id), |id| !dropped.contains(id));
    let remove_annotations = &edit.remove_annotation_ids;
    d.annotations.retain(|id, (_, samples)| {
        samples.retain(|s| !removed.contains(s));
        let keep = !samples.is_empty() && !remove_annotations.contains(id);
        if !keep {
            plan.annotations.push(id.clone());
        }
        keep
    });
    plan.samples = removed.into_iter().collect();

    let (mut conflicts, mut same, mut before) = (Vec::new(), Vec::new(), crate::dataset::merge::AddedBefore::default());
    for added in std::mem::take(&mut edit.add) {
        let a = d.absorb(added, &mut before)?;
        conflicts.extend(a.conflicts);
        same.extend(a.same_metadata);
        plan.added_samples.extend(a.samples);
        plan.added.series.extend(a.series);
        plan.added.annotations.extend(a.annotations);
        plan.added.tasks.extend(a.tasks);
        plan.added.sources.extend(a.sources);
    }
    // a base task the edit sets left the base before the additions: one an
    // addition brings again is not new (review 147: counted as added)
    plan.added.tasks.retain(|id| !replaced.contains(id));
    // after every addition's metadata: values differ only where the metadata are the same
    conflicts.extend(changed_values(d, same, base_values)?);
    refused(conflicts)?;
    for ids in [
        &mut plan.added_samples,
        &mut plan.added.series,
        &mut plan.added.annotations,
        &mut plan.added.tasks,
        &mut plan.added.sources,
    ] {
        ids.sort();
    }

    for (a, _) in &edit.set_annotations {
        d.annotations.remove(&a.annotation_id);
    }
    for (a, samples) in &edit.set_annotations {
        d.add_annotation(a.clone(), &samples.iter().cloned().collect::<Vec<_>>())?;
    }
    // a set task replaces one an addition brought too, as a set annotation or
    // source does (the base's were replaced above; review 144: it was refused
    // as "added twice with different content")
    let set_ids: BTreeSet<&str> = edit.set_tasks.iter().map(|(_, t)| t.task_id.as_str()).collect();
    for tasks in d.tasks.values_mut() {
        tasks.retain(|id, _| !set_ids.contains(id.as_str()));
    }
    d.tasks.retain(|_, tasks| !tasks.is_empty());
    for (name, t) in &edit.set_tasks {
        d.add_task(name, t.clone())?;
    }
    for s in &edit.set_sources {
        d.sources.remove(&s.source_id);
    }
    for s in &edit.set_sources {
        d.add_source(s.clone())?;
    }
    for (field, value) in [
        (&mut d.info.description, &edit.description),
        (&mut d.info.license, &edit.license),
        (&mut d.info.citation, &edit.citation),
    ] {
        if let Some(v) = value {
            *field = Some(v.clone());
        }
    }
    Ok(plan)
}
