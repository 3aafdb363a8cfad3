//! `verify`'s reference checks: samples, annotations and tasks against the
//! series and samples they name.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What the samples scan keeps.
#[derive(Debug, Default)]
pub(super) struct SampleState {
    pub(super) complete: bool,
    pub(super) ids: HashSet<String>,
}

/// What the annotations scan keeps.
#[derive(Debug, Default)]
pub(super) struct AnnotationState {
    pub(super) complete: bool,
    pub(super) unique: u64,
}

/// What the task scans keep.
#[derive(Debug, Default)]
pub(super) struct TaskState {
    pub(super) complete: bool,
    pub(super) counts: BTreeMap<String, u64>,
}

impl Verifier<'_> {
    pub(super) fn samples(&mut self, st: &mut IndexState) -> SampleState {
        let mut out = SampleState::default();
        let Some(i) = Self::usable(&self.files, &mut self.report, SAMPLES, "sample checks") else {
            return out;
        };
        let sources: HashSet<&str> = self.m.sources.iter().map(|s| s.source_id.as_str()).collect();
        let f = &self.files[i];
        let seen = &mut self.seen;
        let mut prev: Option<String> = None;
        let mut metadata_keys = BTreeSet::new();
        if !st.complete {
            self.report.skipped.push("sample -> series references: the index is unusable".into());
        }
        out.complete = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
            for (k, s) in reader::sample_rows(&f.path, batch)?.into_iter().enumerate() {
                let at = format!("row {}", pos.global + k as u64);
                let id = &s.sample_id;
                if let Some(p) = prev.as_ref().filter(|p| *p >= id) {
                    report.push(SAMPLES, &at, Check::Order, format!("sample_id {id} does not sort after {p}"));
                }
                saw(seen, IdSpace::Sample, id);
                saw(seen, IdSpace::Source, &s.source_id);
                if let Some(subject) = &s.subject_id {
                    saw(seen, IdSpace::Subject, subject);
                }
                if !sources.contains(s.source_id.as_str()) {
                    let msg = format!("sample {id}: source {} is not in manifest.json sources", s.source_id);
                    report.push(SAMPLES, &at, Check::Integrity, msg);
                }
                if s.series.is_empty() {
                    report.push(SAMPLES, &at, Check::Integrity, format!("sample {id} has no series"));
                }
                for r in &s.series {
                    saw(seen, IdSpace::TimeSeries, &r.time_series_id);
                    if !st.complete {
                        continue;
                    }
                    match st.series_no.get(&r.time_series_id) {
                        Some(&n) => st.referenced[n as usize] = true,
                        None => {
                            let msg =
                                format!("sample {id} references series {}, which is not in {INDEX}", r.time_series_id);
                            report.push(SAMPLES, &at, Check::Integrity, msg);
                        }
                    }
                }
                if let (Some(a), Some(b)) = (s.t_start_s, s.t_end_s) {
                    if !(a.is_finite() && b.is_finite() && a <= b) {
                        report.push(
                            SAMPLES,
                            &at,
                            Check::Values,
                            format!("sample {id}: window [{a}, {b}] is not ordered"),
                        );
                    }
                }
                metadata_keys.extend(s.metadata.into_keys());
                out.ids.insert(s.sample_id.clone());
                prev = Some(s.sample_id);
            }
            Ok(())
        });
        self.derived.sample_metadata = metadata_keys.into_iter().collect();
        if out.complete && st.complete {
            for (meta, _) in st.series.iter().zip(&st.referenced).filter(|(_, r)| !**r) {
                let at = format!("series {}", meta.time_series_id);
                self.report.push(INDEX, at, Check::Integrity, format!("referenced by no sample of {SAMPLES}"));
            }
        }
        out
    }

    pub(super) fn annotations(&mut self, samples: &SampleState) -> AnnotationState {
        let mut out = AnnotationState::default();
        let Some(i) = Self::usable(&self.files, &mut self.report, ANNOTATIONS, "annotation checks") else {
            return out;
        };
        if !samples.complete {
            self.report.skipped.push("annotation -> sample references: samples.parquet is unusable".into());
        }
        let f = &self.files[i];
        let (seen, derived) = (&mut self.seen, &mut self.derived);
        let mut fingerprints: HashMap<String, [u8; 32]> = HashMap::new();
        let mut prev: Option<(String, String)> = None;
        out.complete = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
            for (k, (sample, a)) in reader::annotation_rows(&f.path, batch)?.into_iter().enumerate() {
                let at = format!("row {}", pos.global + k as u64);
                let key = (sample, a.annotation_id.clone());
                if let Some(p) = prev.as_ref().filter(|p| **p >= key) {
                    report.push(
                        ANNOTATIONS,
                        &at,
                        Check::Order,
                        format!("{key:?} does not sort after {p:?} (sample_id, annotation_id)"),
                    );
                }
                saw(seen, IdSpace::Sample, &key.0);
                saw(seen, IdSpace::Annotation, &key.1);
                if samples.complete && !samples.ids.contains(&key.0) {
                    let msg = format!("annotation {} is on sample {}, which is not in {SAMPLES}", key.1, key.0);
                    report.push(ANNOTATIONS, &at, Check::Integrity, msg);
                }
                // the fields of the annotation, not the sample it is attached to
                let fingerprint: [u8; 32] = Sha256::digest(format!("{a:?}")).into();
                match fingerprints.get(&a.annotation_id) {
                    Some(seen_before) if *seen_before != fingerprint => {
                        let msg = format!("annotation {} differs from its row for another sample", a.annotation_id);
                        report.push(ANNOTATIONS, &at, Check::SharedAnnotation, msg);
                    }
                    Some(_) => {}
                    None => {
                        fingerprints.insert(a.annotation_id.clone(), fingerprint);
                        derived.add_annotation(&a);
                        out.unique += 1;
                    }
                }
                prev = Some(key);
            }
            Ok(())
        });
        out
    }

    pub(super) fn tasks(&mut self, samples: &SampleState) -> TaskState {
        let mut out = TaskState { complete: true, counts: BTreeMap::new() };
        let mut all_ids: HashSet<String> = HashSet::new();
        // (file, row, task id, from_task), resolved once every task id is known
        let mut from: Vec<(String, u64, String, String)> = Vec::new();
        let listed_tasks: Vec<String> =
            self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Task(_)))).cloned().collect();
        for rel in listed_tasks {
            let Some(Kind::Task(name)) = kind_of(&rel) else { continue };
            let Some(i) = Self::usable(&self.files, &mut self.report, &rel, "task checks") else {
                out.complete = false;
                continue;
            };
            let f = &self.files[i];
            let (seen, derived) = (&mut self.seen, &mut self.derived);
            let count = out.counts.entry(name.clone()).or_default();
            let mut prev: Option<String> = None;
            let done = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
                for (k, t) in reader::task_rows(&f.path, batch)?.into_iter().enumerate() {
                    let row = pos.global + k as u64;
                    let at = format!("row {row}");
                    let id = &t.task_id;
                    if let Some(p) = prev.as_ref().filter(|p| *p >= id) {
                        report.push(&f.rel, &at, Check::Order, format!("task_id {id} does not sort after {p}"));
                    }
                    if !all_ids.insert(id.clone()) && prev.as_ref() != Some(id) {
                        report.push(
                            &f.rel,
                            &at,
                            Check::Integrity,
                            format!("task_id {id} is used by an earlier task row too"),
                        );
                    }
                    saw(seen, IdSpace::Task, id);
                    for s in t.referenced_samples() {
                        saw(seen, IdSpace::Sample, s);
                        if samples.complete && !samples.ids.contains(s) {
                            report.push(
                                &f.rel,
                                &at,
                                Check::Integrity,
                                format!("task {id} references sample {s}, which is not in {SAMPLES}"),
                            );
                        }
                    }
                    if t.sample_ids.is_empty() {
                        report.push(&f.rel, &at, Check::Integrity, format!("task {id} has no sample_ids"));
                    }
                    if t.task_type == TaskType::Forecasting
                        && (t.target_sample_id.is_none() || t.context_sample_ids.as_ref().is_none_or(|c| c.is_empty()))
                    {
                        let msg = format!("forecasting task {id} lacks target_sample_id or context_sample_ids");
                        report.push(&f.rel, &at, Check::Integrity, msg);
                    }
                    if let Some(parent) = &t.from_task {
                        saw(seen, IdSpace::Task, parent);
                        from.push((f.rel.clone(), row, id.clone(), parent.clone()));
                    }
                    derived.add_task(&name, &t);
                    *count += 1;
                    prev = Some(t.task_id);
                }
                Ok(())
            });
            out.complete &= done;
        }
        if !samples.complete {
            self.report.skipped.push("task -> sample references: samples.parquet is unusable".into());
        }
        if out.complete {
            for (rel, row, id, parent) in from.iter().filter(|(.., parent)| !all_ids.contains(parent)) {
                let msg = format!("task {id}: from_task {parent} names no task of this version");
                self.report.push(rel, format!("row {row}"), Check::Integrity, msg);
            }
        } else {
            self.report.skipped.push("from_task references and task counts: a task file is unusable".into());
        }
        out
    }
}
