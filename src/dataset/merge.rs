//! Merging one dataset into another: what an edit adds (`docs/format.md` §7,
//! "Adding"). An entity whose id the target already holds is taken when it is
//! identical and refused otherwise; the refusals are collected, not returned at
//! the first, so an edit lists every one.

use std::collections::BTreeSet;

use super::{Loader, TimeFDataset, ValuesSource};
use crate::error::{EditBlocker, Result};

/// What [`TimeFDataset::absorb`] found.
#[derive(Default)]
pub(crate) struct Absorbed {
    /// Ids the target holds with other content.
    pub(crate) conflicts: Vec<EditBlocker>,
    /// Series the target holds with equal metadata, with the added values'
    /// loader: identical only when the values are too (the caller compares).
    pub(crate) same_metadata: Vec<(String, Loader)>,
    /// Ids added, by kind.
    pub(crate) samples: Vec<String>,
    pub(crate) series: Vec<String>,
    pub(crate) annotations: Vec<String>,
    pub(crate) tasks: Vec<String>,
    pub(crate) sources: Vec<String>,
}

fn conflict(out: &mut Absorbed, id: &str, field: &'static str, what: &str) {
    out.conflicts.push(EditBlocker {
        id: id.to_string(),
        field,
        reason: format!("added {what} {id} exists with other content"),
    });
}

impl TimeFDataset {
    /// Adds every entity of `other` (its `info` aside) to `self`; see the module doc.
    ///
    /// # Errors
    /// [`crate::Error::Validation`] only for limits (2^31 rows); differing
    /// content is reported in [`Absorbed::conflicts`].
    pub(crate) fn absorb(&mut self, mut other: TimeFDataset) -> Result<Absorbed> {
        let mut out = Absorbed::default();
        for (id, source) in std::mem::take(&mut other.sources) {
            match self.sources.get(&id) {
                Some(s) if *s == source => {}
                Some(_) => conflict(&mut out, &id, "source_id", "source"),
                None => {
                    out.sources.push(id.clone());
                    self.sources.insert(id, source);
                }
            }
        }
        let first_store = self.stores.len() as u32;
        self.stores.append(&mut other.stores);
        for row in other.series.ids.by_id() {
            let row = row as usize;
            let meta = other.series.meta(row);
            let values = match std::mem::replace(&mut other.values[row], ValuesSource::Taken) {
                ValuesSource::Stored { store, offset, len } => {
                    ValuesSource::Stored { store: store + first_store, offset, len }
                }
                v => v,
            };
            match self.series.ids.find(&meta.time_series_id) {
                Some(r) if self.series.equals(r as usize, &meta) => {
                    let loader: Loader = values
                        .into_loader(&self.stores)
                        .unwrap_or_else(|| Box::new(|| Err("the loader already ran".into())));
                    out.same_metadata.push((meta.time_series_id, loader));
                }
                Some(_) => conflict(&mut out, &meta.time_series_id, "time_series_id", "series"),
                None => {
                    out.series.push(meta.time_series_id.clone());
                    self.insert_series(meta, values)?;
                }
            }
        }
        for row in other.samples.ids.by_id() {
            let sample = other.samples.sample(row as usize, &other.series);
            match self.sample(&sample.sample_id) {
                Some(s) if s == sample => {}
                Some(_) => conflict(&mut out, &sample.sample_id, "sample_id", "sample"),
                None => {
                    out.samples.push(sample.sample_id.clone());
                    self.add_sample(sample)?;
                }
            }
        }
        for (id, (a, samples)) in std::mem::take(&mut other.annotations) {
            match self.annotations.get_mut(&id) {
                Some((existing, _)) if *existing != a => conflict(&mut out, &id, "annotation_id", "annotation"),
                Some((_, attached)) => attached.extend(samples),
                None => {
                    out.annotations.push(id.clone());
                    self.annotations.insert(id, (a, samples));
                }
            }
        }
        let held: BTreeSet<String> = self.tasks.values().flat_map(|t| t.keys().cloned()).collect();
        for (name, tasks) in std::mem::take(&mut other.tasks) {
            for (id, task) in tasks {
                if !held.contains(&id) {
                    out.tasks.push(id.clone());
                    self.tasks.entry(name.clone()).or_default().insert(id, task);
                } else if self.tasks.get(&name).and_then(|t| t.get(&id)) != Some(&task) {
                    conflict(&mut out, &id, "task_id", "task");
                }
            }
        }
        out.tasks.sort();
        Ok(out)
    }
}
