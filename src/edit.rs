//! Copy-on-write edits (seed "Copy-on-write edits"; issue 4).
//!
//! A committed version never changes: [`edit_version`] reads the base (series
//! values stay lazy and stream from the base's shards one series at a time),
//! removes samples, repairs every cross-reference, and writes a new version
//! through the normal atomic-commit writer with a `derived_from` block. Ids are
//! never renumbered, and the writer options are the base's, so unchanged content
//! lands in byte-identical pages.
//!
//! Semantics: a removed sample is stripped from every task's `sample_ids`;
//! annotations left on no sample and series referenced by no surviving sample
//! are dropped. A task that would lose a required reference (its last sample, a
//! forecasting `target_sample_id` or any `context_sample_ids`, or a `from_task`
//! edge to a removed task) makes the edit fail before any I/O with
//! [`Error::Edit`] listing every blocking (task, reference), unless
//! [`Cascade::RemoveDependents`] is set, which removes those tasks and then,
//! transitively, the tasks that derive from them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::dataset::{Task, TimeFDataset};
use crate::error::{Error, Result};
use crate::manifest::DerivedFrom;
use crate::reader::Version;
use crate::storage::{Location, MANIFEST};
use crate::writer::{TimeFWriter, WriterOptions};

/// What to do with tasks that would lose a required reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cascade {
    /// Refuse the edit, listing every blocking (task, reference).
    #[default]
    Refuse,
    /// Remove the blocked tasks and, transitively, the tasks derived from them.
    RemoveDependents,
}

/// A removal of samples from a version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveSamples {
    /// The samples to remove (every id must exist in the base).
    pub sample_ids: BTreeSet<String>,
    /// What to do with tasks that would lose a required reference.
    pub cascade: Cascade,
}

/// What an edit removes and changes, computed before any I/O.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EditPlan {
    /// Removed samples, sorted.
    pub samples: Vec<String>,
    /// Removed tasks as (task name, task id), sorted.
    pub tasks: Vec<(String, String)>,
    /// Surviving tasks whose `sample_ids` lose entries, as (task name, task id).
    pub stripped_tasks: Vec<(String, String)>,
    /// Annotations left on no sample, sorted.
    pub annotations: Vec<String>,
    /// Series referenced by no surviving sample, sorted.
    pub series: Vec<String>,
}

impl EditPlan {
    /// Removed entities by kind (the manifest's `derived_from.removed`).
    pub fn counts(&self) -> BTreeMap<String, u64> {
        BTreeMap::from([
            ("annotations".to_string(), self.annotations.len() as u64),
            ("samples".to_string(), self.samples.len() as u64),
            ("tasks".to_string(), self.tasks.len() as u64),
            ("time_series".to_string(), self.series.len() as u64),
        ])
    }
}

/// Why a task blocks the edit, one line per (task, reference).
fn blockers(name: &str, t: &Task, removed: &BTreeSet<String>, removed_tasks: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let id = &t.task_id;
    if let Some(s) = t.target_sample_id.as_ref().filter(|s| removed.contains(*s)) {
        out.push(format!("task {name}/{id}: target_sample_id {s} would be removed"));
    }
    for s in t.context_sample_ids.iter().flatten().filter(|s| removed.contains(*s)) {
        out.push(format!("task {name}/{id}: context_sample_ids entry {s} would be removed"));
    }
    if t.sample_ids.iter().all(|s| removed.contains(s)) {
        out.push(format!("task {name}/{id}: its last sample would be removed"));
    }
    if let Some(f) = t.from_task.as_ref().filter(|f| removed_tasks.contains(*f)) {
        out.push(format!("task {name}/{id}: from_task {f} would be removed"));
    }
    out
}

/// Applies `op` to `dataset` in memory and returns what it removed.
///
/// # Errors
/// [`Error::Edit`] listing unknown sample ids, or (with [`Cascade::Refuse`])
/// every blocking (task, reference).
pub fn apply(dataset: &mut TimeFDataset, op: &RemoveSamples) -> Result<EditPlan> {
    let unknown: Vec<String> = op
        .sample_ids
        .iter()
        .filter(|s| !dataset.contains_sample(s))
        .map(|s| format!("unknown sample id {s}"))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::Edit { blockers: unknown });
    }
    let removed = &op.sample_ids;
    let mut removed_tasks: BTreeSet<String> = BTreeSet::new();
    let mut plan = EditPlan { samples: removed.iter().cloned().collect(), ..Default::default() };
    // a fixpoint: removing a task can block the tasks derived from it
    loop {
        let mut found = Vec::new();
        for (name, t) in dataset.tasks() {
            if removed_tasks.contains(&t.task_id) {
                continue;
            }
            let b = blockers(name, t, removed, &removed_tasks);
            if !b.is_empty() {
                found.push((name.to_string(), t.task_id.clone(), b));
            }
        }
        if found.is_empty() {
            break;
        }
        if op.cascade == Cascade::Refuse {
            return Err(Error::Edit { blockers: found.into_iter().flat_map(|(_, _, b)| b).collect() });
        }
        for (name, id, _) in found {
            removed_tasks.insert(id.clone());
            plan.tasks.push((name, id));
        }
    }
    plan.tasks.sort();
    for (name, tasks) in dataset.tasks.iter_mut() {
        tasks.retain(|id, _| !removed_tasks.contains(id));
        for t in tasks.values_mut() {
            let before = t.sample_ids.len();
            t.sample_ids.retain(|s| !removed.contains(s));
            if t.sample_ids.len() != before {
                plan.stripped_tasks.push((name.clone(), t.task_id.clone()));
            }
        }
    }
    dataset.tasks.retain(|_, tasks| !tasks.is_empty());
    plan.series = dataset.retain_samples(|id| !removed.contains(id));
    dataset.annotations.retain(|id, (_, samples)| {
        samples.retain(|s| !removed.contains(s));
        if samples.is_empty() {
            plan.annotations.push(id.clone());
        }
        !samples.is_empty()
    });
    Ok(plan)
}

/// The writer options a version was written with (its manifest's `writer` block),
/// so an edit cuts chunks, row groups and pages by the same rules; validated as
/// options a user gives ([`crate::manifest::WriterBlock::options`]).
///
/// # Errors
/// [`Error::Corrupt`] naming the base's `manifest.json` when the block breaks a rule.
pub fn base_options(base: &Version) -> Result<WriterOptions> {
    base.manifest().writer.options().map_err(|e| Error::Corrupt {
        path: base.location().join(MANIFEST).to_path_buf(),
        reason: format!("writer block: {e}"),
    })
}

/// Plans the edit that [`edit_version`] with the same arguments would write,
/// without writing anything (`--dry-run`): the same checks, the target included.
/// Paths whose text is a URL are URLs (see [`plan_at`]).
pub fn plan(base_dir: &Path, out_root: &Path, new_version: &str, op: &RemoveSamples) -> Result<EditPlan> {
    plan_at(&Location::from_path(base_dir)?, &Location::from_path(out_root)?, new_version, op)
}

/// [`plan`] with the base and the output root as [`Location`]s (each local or on any store).
pub fn plan_at(base_dir: &Location, out_root: &Location, new_version: &str, op: &RemoveSamples) -> Result<EditPlan> {
    let base = Arc::new(Version::open_at(base_dir.clone())?);
    let name = base.manifest().dataset.name.clone();
    base_options(&base)?;
    let mut d = base.to_dataset(&name, new_version)?;
    out_root.join(&name).join(new_version).ensure_absent()?;
    let plan = apply(&mut d, op)?;
    d.validate_references()?;
    Ok(plan)
}

/// Writes `<out_root>/<base name>/<new_version>/`: the version at `base_dir`
/// with `op` applied, committed atomically, with a `derived_from` block.
///
/// # Errors
/// [`Error::NotAVersion`] for the base; [`Error::Edit`] before any I/O when the
/// edit is refused; [`Error::AlreadyExists`]; writer errors. Paths whose text
/// is a URL are URLs (see [`edit_version_at`]).
pub fn edit_version(
    base_dir: &Path,
    out_root: &Path,
    new_version: &str,
    op: &RemoveSamples,
) -> Result<(PathBuf, EditPlan)> {
    edit_version_at(&Location::from_path(base_dir)?, &Location::from_path(out_root)?, new_version, op)
}

/// [`edit_version`] with the base and the output root as [`Location`]s: the
/// base may be read from one store and the new version written to another.
pub fn edit_version_at(
    base_dir: &Location,
    out_root: &Location,
    new_version: &str,
    op: &RemoveSamples,
) -> Result<(PathBuf, EditPlan)> {
    let base = Arc::new(Version::open_at(base_dir.clone())?);
    let name = base.manifest().dataset.name.clone();
    let mut d = base.to_dataset(&name, new_version)?;
    let plan = apply(&mut d, op)?;
    let derived_from = DerivedFrom {
        dataset_version: base.manifest().dataset.version.clone(),
        manifest_sha256: base.manifest_sha256().to_string(),
        operation: serde_json::json!({
            "remove_samples": op.sample_ids.iter().collect::<Vec<_>>(),
            "cascade": op.cascade == Cascade::RemoveDependents,
        }),
        removed: plan.counts(),
    };
    let writer = TimeFWriter::at(out_root.clone(), base_options(&base)?)
        .with_derived_from(derived_from)
        .with_base(Arc::clone(&base));
    let dir = writer.write(d)?.commit()?;
    Ok((dir, plan))
}
