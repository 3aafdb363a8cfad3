//! `verify`'s statistics and totals: the manifest's counts, statistics,
//! derived schema and id encodings against what the other checks found.

#[allow(clippy::wildcard_imports)]
use super::*;

/// `a` and `b` agree up to the rounding of a differently ordered summation.
pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * (1.0 + a.abs().max(b.abs()))
}

/// A chunk's statistics as its index row stores them, as a [`Partial`] to merge.
pub(super) fn partial_of(n: i32, min: f32, max: f32, mean: f64, std: f64) -> Partial {
    let count = u64::try_from(n).unwrap_or(0);
    Partial::as_stored(&crate::stats::ChannelStats { count, min: f64::from(min), max: f64::from(max), mean, std })
}

impl Verifier<'_> {
    /// The manifest's counts, statistics, derived schema and id encodings
    /// against what the scans found, and per-file row counts against footers.
    pub(super) fn totals(
        &mut self,
        index: &IndexState,
        shards: &ShardState,
        samples: &SampleState,
        annotations: &AnnotationState,
        tasks: &TaskState,
    ) {
        let m = self.m;
        let c = &m.counts;
        let count = |report: &mut VerifyReport, field: &str, manifest: u64, found: u64, source: &str| {
            if manifest != found {
                let msg = format!("{manifest}, but {found} found in {source}");
                report.push(MANIFEST, format!("counts.{field}"), Check::Counts, msg);
            }
        };
        let report = &mut self.report;
        if samples.complete {
            count(report, "samples", c.samples, samples.ids.len() as u64, SAMPLES);
        }
        if index.complete {
            count(report, "time_series", c.time_series, index.series.len() as u64, INDEX);
            count(report, "chunks", c.chunks, index.chunks.len() as u64, INDEX);
            count(report, "values", c.values, index.values, INDEX);
        }
        if shards.complete {
            count(report, "values", c.values, shards.values, "the shards");
        }
        if annotations.complete {
            count(report, "annotations", c.annotations, annotations.unique, ANNOTATIONS);
        }
        let listed_shards = self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).count();
        count(report, "shards", c.shards, listed_shards as u64, "the files list");
        let listed_tasks: BTreeSet<String> = self
            .listed
            .iter()
            .filter_map(|r| match kind_of(r) {
                Some(Kind::Task(name)) => Some(name),
                _ => None,
            })
            .collect();
        let counted: BTreeSet<String> = c.tasks.keys().cloned().collect();
        if counted != listed_tasks {
            let msg = format!("task names {counted:?}, the files list has task files for {listed_tasks:?}");
            report.push(MANIFEST, "counts.tasks", Check::Counts, msg);
        } else if tasks.complete && c.tasks != tasks.counts {
            let msg = format!("{:?}, the task files hold {:?}", c.tasks, tasks.counts);
            report.push(MANIFEST, "counts.tasks", Check::Counts, msg);
        }
        for f in &self.files {
            let rows = f.meta.file_metadata().num_rows();
            if let Some(entry) = m.files.iter().find(|e| e.path == f.rel) {
                if i64::try_from(entry.rows).ok() != Some(rows) {
                    let msg = format!("manifest.json files[] rows {}, the footer says {rows}", entry.rows);
                    report.push(&f.rel, "footer", Check::Counts, msg);
                }
            }
        }
        if index.complete {
            let derived: BTreeSet<(&str, &str)> =
                index.channels.keys().map(|(s, c)| (s.as_str(), c.as_str())).collect();
            let stated: BTreeSet<(&str, &str)> = m
                .statistics
                .iter()
                .flat_map(|(s, chans)| chans.keys().map(move |c| (s.as_str(), c.as_str())))
                .collect();
            for (spec, channel) in derived.symmetric_difference(&stated) {
                let msg = format!("{spec}/{channel} is in only one of manifest.json statistics and {INDEX}");
                report.push(MANIFEST, format!("statistics.{spec}.{channel}"), Check::Statistics, msg);
            }
            for ((spec, channel), p) in &index.channels {
                let Some(s) = m.statistics.get(spec).and_then(|x| x.get(channel)) else { continue };
                let ok = s.count == p.n
                    && s.min == p.min
                    && s.max == p.max
                    && close(s.mean, p.mean)
                    && close(s.std, p.std());
                if !ok {
                    let msg = format!("{s:?}, the chunk statistics merge to {:?}", p.to_stats());
                    report.push(MANIFEST, format!("statistics.{spec}.{channel}"), Check::Statistics, msg);
                }
            }
            for meta in &index.series {
                self.derived.add_series(meta);
            }
        }
        let d = &self.derived;
        let s = &m.schema;
        for (complete, block, same) in [
            (index.complete, "time_series", d.time_series == s.time_series),
            (annotations.complete, "annotations", d.annotations == s.annotations),
            (tasks.complete, "tasks", d.tasks == s.tasks),
            (samples.complete, "sample_metadata", d.sample_metadata == s.sample_metadata),
        ] {
            if complete && !same {
                let msg = "differs from what the stored entities give (FORMAT-BRIEF §4)";
                self.report.push(MANIFEST, format!("schema.{block}"), Check::Manifest, msg);
            }
        }
        let all = index.complete && shards.complete && samples.complete && annotations.complete && tasks.complete;
        let Some(ids) = self.ids.filter(|_| all) else {
            self.report.skipped.push("id_encoding against the stored ids: a file is unusable".into());
            return;
        };
        for space in IdSpace::ALL {
            let seen = self.seen[space as usize];
            let at = format!("id_encoding.{}", space.name());
            match ids.get(space) {
                IdEncoding::String if seen.any && seen.all_canonical => self.report.push(
                    MANIFEST,
                    at,
                    Check::Ids,
                    "\"string\", but every id of the space is a canonical UUID, so the format requires \"uuid16\"",
                ),
                IdEncoding::Uuid16 if !seen.any => self.report.push(
                    MANIFEST,
                    at,
                    Check::Ids,
                    "\"uuid16\", but the space holds no id, so it must be \"string\"",
                ),
                _ => {}
            }
        }
    }
}
