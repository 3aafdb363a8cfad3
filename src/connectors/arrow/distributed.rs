//! The GluonTS connector's side of a distributed write ([`crate::distributed`]):
//! the metadata pass over every row, the routing of rows to parts, and a
//! part's series from the rows it was sent. Each checks rows exactly as
//! [`super::read_arrow_batches`] does (same errors, ids and [`super::OnMissing`] rule).

use std::path::Path;

use arrow_array::{Array, RecordBatch};

use super::{ArrowOptions, Read};
use crate::connectors::typings::{self, Refused};
use crate::connectors::Dropped;
use crate::dataset::SeriesValues;
use crate::error::{Error, Result};

/// The metadata pass of a distributed write over GluonTS rows
/// ([`crate::distributed`]): every row is checked exactly as [`super::read_arrow_batches`]
/// checks it (same errors, same [`super::OnMissing`] rule, same ids), but no value is
/// kept, only each series' number of values. Feed every batch of the input in
/// order, then [`ArrowMetaPass::finish`].
pub struct ArrowMetaPass<'a> {
    read: Read<'a>,
}

impl<'a> ArrowMetaPass<'a> {
    /// A pass whose errors name `label` as the file.
    ///
    /// # Errors
    /// [`Error::Validation`] for a bad dataset name or version.
    pub fn new(label: &'a Path, opts: &'a ArrowOptions) -> Result<Self> {
        let mut read = Read::new(label, opts, true, None)?;
        read.pass.count_only = true;
        Ok(ArrowMetaPass { read })
    }

    /// Checks and counts the rows of the next batch.
    ///
    /// # Errors
    /// As [`super::read_arrow`].
    pub fn batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.read.batch(batch)
    }

    /// The plan input: the dataset's metadata (its loaders refuse to run: the
    /// values are the parts') and each series' number of values; plus the rows
    /// left out under [`super::OnMissing::DropCase`].
    ///
    /// # Errors
    /// As [`super::read_arrow`] (no rows, every row dropped).
    pub fn finish(self) -> Result<(crate::distributed::PlanInput, Dropped)> {
        let (dataset, dropped, n_values) = self.read.finish()?;
        Ok((crate::distributed::PlanInput::new(dataset, n_values), dropped))
    }
}

/// The series ids of each row of `batch`, as the connector names them
/// (`item_id`, or `"{item_id}/{dim}"` for multivariate targets); a row with a
/// null `item_id` or target gives none. Used to route rows to the parts of a
/// distributed write ([`crate::distributed::Plan::router`]).
///
/// # Errors
/// [`Error::InvalidInput`] when `batch` has no `item_id` column (ids would be
/// row numbers of the whole input, which a worker cannot know) or a refused typing.
pub fn arrow_series_ids(batch: &RecordBatch, label: &Path, opts: &ArrowOptions) -> Result<Vec<Vec<String>>> {
    let typing = |why: String| Error::input(label, None, why);
    let column = |name| typings::column(batch, name).map_err(typing);
    let ids = column("item_id")?.ok_or_else(|| typing("a distributed write needs an item_id column".into()))?;
    let ids = typings::item_ids(ids).map_err(|refused| match refused {
        Refused::Typing(why) => typing(why),
        Refused::Row(r, why) => typing(format!("row {r} of the batch: {why}")),
    })?;
    let target = column("target")?.ok_or_else(|| typing("no target column".into()))?;
    let element = typings::list_element(target.data_type())
        .ok_or_else(|| typing(format!("target has type {}", target.data_type())))?;
    let multivariate = typings::list_element(element).is_some();
    Ok((0..batch.num_rows())
        .map(|r| match (&ids[r], multivariate) {
            (None, _) => Vec::new(),
            (Some(item), false) => vec![opts.ids.id(item)],
            (Some(item), true) => {
                let dims = if target.is_null(r) {
                    0
                } else {
                    typings::list_value(target.as_ref(), r).map_or(0, |outer| outer.len())
                };
                (0..dims).map(|d| opts.ids.id(&format!("{item}/{d}"))).collect()
            }
        })
        .collect())
}

/// For each row of `batch`, the parts of a distributed write that need it
/// (`router` from [`crate::distributed::Plan::router`]); empty for a row whose
/// series are not in the plan (e.g. dropped under [`super::OnMissing::DropCase`]).
///
/// # Errors
/// As [`arrow_series_ids`].
pub fn arrow_row_parts(
    batch: &RecordBatch,
    label: &Path,
    opts: &ArrowOptions,
    router: &std::collections::HashMap<String, Vec<u32>>,
) -> Result<Vec<Vec<u32>>> {
    Ok(arrow_series_ids(batch, label, opts)?
        .into_iter()
        .map(|ids| {
            let mut parts: Vec<u32> = ids.iter().filter_map(|id| router.get(id)).flatten().copied().collect();
            parts.sort_unstable();
            parts.dedup();
            parts
        })
        .collect())
}

/// The series of a distributed write's part, built from the batches holding
/// its rows (in any order and partitioning; other rows may be present only
/// if they hold a series of the task): each row is checked and converted as
/// [`super::read_arrow_batches`] does, and the task's series are returned with their
/// values, for [`crate::distributed::write_part`].
///
/// # Errors
/// As [`super::read_arrow`]; [`Error::InvalidInput`] for batches without `item_id`;
/// [`Error::Part`] with [`crate::error::PartProblem::UnplannedSeries`] for a
/// row none of whose series is in the task.
pub fn arrow_part_series(
    batches: &[RecordBatch],
    label: &Path,
    opts: &ArrowOptions,
    task: &crate::distributed::PartTask,
) -> Result<Vec<(String, SeriesValues)>> {
    let mut read = Read::new(label, opts, true, None)?;
    for batch in batches {
        if batch.column_by_name("item_id").is_none() {
            return Err(Error::input(label, None, "a distributed write needs an item_id column"));
        }
        read.batch(batch)?;
    }
    let wanted: std::collections::HashSet<&str> = task.series.iter().map(|s| s.meta.time_series_id.as_str()).collect();
    let (mut dataset, _, _) = read.finish()?;
    let mut out = Vec::new();
    let samples: Vec<crate::dataset::Sample> = dataset.samples().collect();
    for sample in samples {
        let mine: Vec<&str> =
            sample.series.iter().map(|r| r.time_series_id.as_str()).filter(|id| wanted.contains(id)).collect();
        let Some(first) = sample.series.first() else { continue };
        if mine.is_empty() {
            return Err(Error::Part {
                write_id: task.write_id.clone(),
                part: Some(task.part),
                shard: None,
                problem: crate::error::PartProblem::UnplannedSeries(first.time_series_id.clone()),
            });
        }
        for id in mine {
            let loader = dataset
                .take_loader(id)
                .ok_or_else(|| Error::input(label, None, format!("internal: no values for {id}")))?;
            let values = loader().map_err(|source| Error::loading(id, source))?;
            out.push((id.to_string(), values));
        }
    }
    Ok(out)
}
