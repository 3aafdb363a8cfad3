//! Copy-on-write edits (seed "Copy-on-write edits"; issues 4 and 25;
//! `docs/format.md` §7).
//!
//! A committed version never changes: [`edit_version`] reads the base as a
//! [`TimeFDataset`] (series values stay lazy and stream from the base's shards
//! one series at a time), applies an [`Edit`] to it in memory, and writes the
//! result through the normal atomic-commit writer with the base's writer
//! options and a `derived_from` block. The written version is therefore byte
//! for byte a fresh write of the resulting dataset (manifest aside). Ids are
//! never renumbered.
//!
//! One [`Edit`] may combine every operation: remove samples, series, channels,
//! annotations and tasks; add samples with their series, annotations, sources
//! and tasks (a dataset a connector read); set annotations, tasks and sources;
//! change the dataset's description, license and citation. The order they apply
//! in and the referential rules are in [`apply`]; every check runs before any
//! I/O and a refusal is one [`Error::Edit`] listing every blocker.

mod apply;
mod rows;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use apply::apply;
pub use rows::{annotation_rows, read_annotation_rows, read_source_rows, read_task_rows, source_rows, task_rows};

use crate::connectors::IdMode;
use crate::dataset::{Annotation, Source, Task, TimeFDataset};
use crate::error::{EditBlocker, Error, Result};
use crate::manifest::{DerivedFrom, Manifest};
use crate::options::WriterOptions;
use crate::reader::Version;
use crate::storage::{Location, MANIFEST};
use crate::writer::{CopyStats, TimeFWriter};

/// What to do with samples left without series and tasks that would lose a
/// required reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cascade {
    /// Refuse the edit, listing every blocking (sample or task, reference).
    #[default]
    Refuse,
    /// Remove the blocked samples and tasks and, transitively, the tasks derived from them.
    RemoveDependents,
}

/// An input file an operation read (recorded in the lineage by name and sha256).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// The file's name (its last path component: no local directory is recorded).
    pub name: String,
    /// Lowercase hex sha256 of the file's bytes.
    pub sha256: String,
}

impl InputFile {
    /// Reads `path` once to hash it.
    ///
    /// # Errors
    /// [`Error::Io`] naming `path`.
    pub fn hash(path: &Path) -> Result<InputFile> {
        let mut file = std::fs::File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        let mut h = Sha256::new();
        std::io::copy(&mut file, &mut h).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        Ok(InputFile { name: file_name(path), sha256: hex::encode(h.finalize()) })
    }

    /// The file `path` whose bytes, already read, are `bytes`.
    pub fn of(path: &Path, bytes: &[u8]) -> InputFile {
        InputFile { name: file_name(path), sha256: hex::encode(Sha256::digest(bytes)) }
    }
}

/// The last component of `path`, as the lineage names an input file.
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// One copy-on-write edit: every field empty (the default) changes nothing.
/// Ids to remove must exist in the base; see [`apply`] for the order and rules.
#[derive(Debug, Default)]
pub struct Edit {
    /// Samples to remove.
    pub remove_sample_ids: BTreeSet<String>,
    /// Series to remove: each is dropped from its samples' series lists.
    pub remove_series_ids: BTreeSet<String>,
    /// Channels (`SeriesMeta::channel`, of any spec type) whose series are all removed.
    pub remove_channels: BTreeSet<String>,
    /// Annotations to remove.
    pub remove_annotation_ids: BTreeSet<String>,
    /// Tasks to remove.
    pub remove_task_ids: BTreeSet<String>,
    /// Datasets whose sources, series, samples, annotations and tasks are added
    /// (their `info` is ignored); an id the base holds must come with identical content.
    pub add: Vec<TimeFDataset>,
    /// Annotations to set: each replaces the annotation of its id (fields and
    /// samples) or, new, is added. (annotation, the samples it is attached to)
    pub set_annotations: Vec<(Annotation, BTreeSet<String>)>,
    /// Tasks to set as (task name, task): each replaces the task of its id
    /// (under any name) or, new, is added.
    pub set_tasks: Vec<(String, Task)>,
    /// Sources to set: each replaces the source of its id or, new, is added.
    pub set_sources: Vec<Source>,
    /// The dataset's new description (`None`: unchanged).
    pub description: Option<String>,
    /// The dataset's new license (`None`: unchanged).
    pub license: Option<String>,
    /// The dataset's new citation (`None`: unchanged).
    pub citation: Option<String>,
    /// What to do with samples and tasks that would lose a required reference.
    pub cascade: Cascade,
    /// The files the operations were read from, as (operation, file): the
    /// operation is `remove_samples`, `add`, `set_annotations`, `set_tasks`
    /// or `set_sources`.
    pub inputs: Vec<(&'static str, InputFile)>,
}

impl Edit {
    /// An edit removing `sample_ids`.
    pub fn remove_samples<S: Into<String>>(sample_ids: impl IntoIterator<Item = S>, cascade: Cascade) -> Edit {
        Edit { remove_sample_ids: sample_ids.into_iter().map(Into::into).collect(), cascade, ..Default::default() }
    }

    /// True when the edit names no operation: no id to remove, no dataset to
    /// add that holds anything, no row to set, no dataset field to change.
    /// Written, it would be a copy of its base; the CLI and Python refuse it
    /// as a likely mistake.
    pub fn is_empty(&self) -> bool {
        self.remove_sample_ids.is_empty()
            && self.remove_series_ids.is_empty()
            && self.remove_channels.is_empty()
            && self.remove_annotation_ids.is_empty()
            && self.remove_task_ids.is_empty()
            && self.add.iter().all(TimeFDataset::is_empty)
            && self.set_annotations.is_empty()
            && self.set_tasks.is_empty()
            && self.set_sources.is_empty()
            && self.dataset_fields().is_empty()
    }

    /// The dataset fields the edit sets, of `description`, `license` and
    /// `citation` in that order (the lineage's `set_dataset` step, and what a
    /// dry run says it sets).
    pub fn dataset_fields(&self) -> Vec<&'static str> {
        [("description", &self.description), ("license", &self.license), ("citation", &self.citation)]
            .into_iter()
            .filter_map(|(field, value)| value.as_ref().map(|_| field))
            .collect()
    }

    /// The `derived_from.operation` object: `cascade` and one step per
    /// operation present, in the order they apply, each with its counts and
    /// the sha256 of its id list (`docs/format.md` §7, "Lineage").
    fn lineage(&self, plan: &EditPlan) -> serde_json::Value {
        use serde_json::{json, Value};
        let mut steps = Vec::new();
        let mut step = |op: &str, ids: BTreeSet<&String>, extra: Option<Value>| {
            if ids.is_empty() && extra.is_none() {
                return;
            }
            let mut s = json!({"op": op, "count": ids.len(), "ids_sha256": ids_sha256(ids.into_iter())});
            let files: Vec<Value> = self
                .inputs
                .iter()
                .filter(|(o, _)| *o == op)
                .map(|(_, f)| json!({"file": f.name, "sha256": f.sha256}))
                .collect();
            if !files.is_empty() {
                s["inputs"] = Value::Array(files);
            }
            if let (Some(Value::Object(extra)), Some(o)) = (extra, s.as_object_mut()) {
                o.extend(extra);
            }
            steps.push(s);
        };
        step("remove_tasks", self.remove_task_ids.iter().collect(), None);
        step("remove_annotations", self.remove_annotation_ids.iter().collect(), None);
        step("remove_channels", self.remove_channels.iter().collect(), None);
        step("remove_series", self.remove_series_ids.iter().collect(), None);
        step("remove_samples", self.remove_sample_ids.iter().collect(), None);
        let a = &plan.added;
        if !plan.added_samples.is_empty() || *a != Added::default() || self.inputs.iter().any(|(o, _)| *o == "add") {
            let counts = json!({
                "samples": plan.added_samples.len(),
                "time_series": a.series.len(),
                "annotations": a.annotations.len(),
                "tasks": a.tasks.len(),
                "sources": a.sources.len(),
            });
            step("add", plan.added_samples.iter().collect(), Some(counts));
        }
        step("set_annotations", self.set_annotations.iter().map(|(a, _)| &a.annotation_id).collect(), None);
        step("set_tasks", self.set_tasks.iter().map(|(_, t)| &t.task_id).collect(), None);
        step("set_sources", self.set_sources.iter().map(|s| &s.source_id).collect(), None);
        let fields = self.dataset_fields();
        if !fields.is_empty() {
            steps.push(json!({"op": "set_dataset", "fields": fields}));
        }
        json!({"cascade": self.cascade == Cascade::RemoveDependents, "steps": steps})
    }
}

/// Lowercase hex sha256 of `ids` sorted, each followed by `\n` (the lineage's
/// `ids_sha256`; `sha256sum` of the sorted list file gives the same).
pub fn ids_sha256<'a>(ids: impl Iterator<Item = &'a String>) -> String {
    let sorted: BTreeSet<&String> = ids.collect();
    let mut h = Sha256::new();
    for id in sorted {
        h.update(id.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// Ids an edit added, by kind (sorted).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Added {
    /// Series added.
    pub series: Vec<String>,
    /// Annotations added (new ids).
    pub annotations: Vec<String>,
    /// Tasks added (new ids).
    pub tasks: Vec<String>,
    /// Sources added (new ids).
    pub sources: Vec<String>,
}

/// What an edit removes, adds and changes, computed before any I/O.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EditPlan {
    /// Removed samples (asked for, or left without series under cascade), sorted.
    pub samples: Vec<String>,
    /// Removed tasks as (task name, task id), sorted.
    pub tasks: Vec<(String, String)>,
    /// Surviving tasks whose `sample_ids` lose entries, as (task name, task id).
    pub stripped_tasks: Vec<(String, String)>,
    /// Annotations removed (asked for, or left on no sample), sorted.
    pub annotations: Vec<String>,
    /// Series removed (asked for, of a removed channel, or referenced by no surviving sample), sorted.
    pub series: Vec<String>,
    /// Samples added, sorted.
    pub added_samples: Vec<String>,
    /// The other entities added.
    pub added: Added,
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

/// The base opened, checked, read as a dataset named for the new version, and
/// `edit` applied: the dataset the edit writes and its plan.
fn prepare(
    base_dir: &Location,
    out_root: &Location,
    new_version: &str,
    edit: &mut Edit,
) -> Result<(Arc<Version>, TimeFDataset, EditPlan)> {
    let base = Arc::new(Version::open_at(base_dir.clone())?);
    let name = base.manifest().dataset.name.clone();
    base_options(&base)?;
    // a base missing a file is refused before anything is written, a dry run
    // too (the edit would find it only when it copies the file)
    base.check_files()?;
    let mut d = base.to_dataset(&name, new_version)?;
    out_root.join(&name).join(new_version).ensure_absent()?;
    let plan = apply(&mut d, edit, &|ids| base.series_loaders(ids))?;
    d.validate_references()?;
    refuse_sources_spelled_twice(base.manifest(), &d)?;
    Ok((base, d, plan))
}

/// Refuses the edited dataset `d` when a source it adds (or sets) is another
/// source of it spelled otherwise: a name and its UUIDv5, as a connector's ids
/// "string" and "uuid" spell it (docs/format.md §2 "Connector ids"), the other
/// one held by `base` or added too. The version would get a second source for
/// the same data (docs/format.md §7 "Sources of what an edit adds").
///
/// # Errors
/// [`Error::Edit`], a blocker per new source spelled so (field `source_id`).
fn refuse_sources_spelled_twice(base: &Manifest, d: &TimeFDataset) -> Result<()> {
    let held: BTreeSet<&str> = base.sources.iter().map(|s| s.source_id.as_str()).collect();
    // each source by its id's UUIDv5 spelling: one hash per source, not per pair
    let by_uuid: BTreeMap<String, &str> = d.sources.keys().map(|id| (IdMode::Uuid.id(id), id.as_str())).collect();
    let mut blockers = Vec::new();
    for added in d.sources.keys().filter(|s| !held.contains(s.as_str())) {
        let spelled_as = IdMode::Uuid.id(added);
        let other = match (d.sources.contains_key(&spelled_as), by_uuid.get(added.as_str())) {
            (true, _) => spelled_as.as_str(),
            (false, Some(name)) => name,
            (false, None) => continue,
        };
        // a pair of new sources is one blocker, named by the first of them
        if other < added.as_str() && !held.contains(other) {
            continue;
        }
        let reason = format!(
            "source {added} is source {other} spelled otherwise (a name and its UUID, as a connector's ids \"string\" \
             and \"uuid\" spell it): read the additions with the base's ids option (CLI --ids, Python ids=) or give \
             the source as {other}, or the version gets a second source for the same data"
        );
        blockers.push(EditBlocker { id: added.clone(), field: "source_id", reason });
    }
    match blockers.is_empty() {
        true => Ok(()),
        false => Err(Error::Edit { blockers }),
    }
}

/// Plans the edit that [`edit_version`] with the same arguments would write,
/// without writing anything (`--dry-run`): the same checks, the target included.
/// Paths whose text is a URL are URLs (see [`plan_at`]).
pub fn plan(base_dir: &Path, out_root: &Path, new_version: &str, edit: Edit) -> Result<EditPlan> {
    plan_at(&Location::from_path(base_dir)?, &Location::from_path(out_root)?, new_version, edit)
}

/// [`plan`] with the base and the output root as [`Location`]s (each local or on any store).
pub fn plan_at(base_dir: &Location, out_root: &Location, new_version: &str, mut edit: Edit) -> Result<EditPlan> {
    prepare(base_dir, out_root, new_version, &mut edit).map(|(_, _, plan)| plan)
}

/// Writes `<out_root>/<base name>/<new_version>/`: the version at `base_dir`
/// with `edit` applied, committed atomically, with a `derived_from` block.
///
/// # Errors
/// [`Error::NotAVersion`] for the base; [`Error::Edit`] or [`Error::Validation`]
/// before any write when the edit is refused; [`Error::AlreadyExists`]; writer
/// errors. Paths whose text is a URL are URLs (see [`edit_version_at`]).
pub fn edit_version(base_dir: &Path, out_root: &Path, new_version: &str, edit: Edit) -> Result<(PathBuf, EditPlan)> {
    edit_version_at(&Location::from_path(base_dir)?, &Location::from_path(out_root)?, new_version, edit)
}

/// [`edit_version`] with the base and the output root as [`Location`]s: the
/// base may be read from one store and the new version written to another.
pub fn edit_version_at(
    base_dir: &Location,
    out_root: &Location,
    new_version: &str,
    edit: Edit,
) -> Result<(PathBuf, EditPlan)> {
    edit_version_counted_at(base_dir, out_root, new_version, edit).map(|(dir, plan, _)| (dir, plan))
}

/// [`edit_version_at`], also returning what the write copied from the base,
/// compressed and read from the base's shards (`timef edit` prints it).
pub fn edit_version_counted_at(
    base_dir: &Location,
    out_root: &Location,
    new_version: &str,
    mut edit: Edit,
) -> Result<(PathBuf, EditPlan, CopyStats)> {
    let (base, d, plan) = prepare(base_dir, out_root, new_version, &mut edit)?;
    let derived_from = DerivedFrom {
        dataset_version: base.manifest().dataset.version.clone(),
        manifest_sha256: base.manifest_sha256().to_string(),
        operation: edit.lineage(&plan),
        removed: plan.counts(),
    };
    let writer = TimeFWriter::at(out_root.clone(), base_options(&base)?)
        .with_derived_from(derived_from)
        .with_base(Arc::clone(&base));
    let staged = writer.write(d)?;
    let copied = staged.copied();
    Ok((staged.commit()?, plan, copied))
}
