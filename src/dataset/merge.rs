//! Merging one dataset into another: what an edit adds (`docs/format.md` §7,
//! "Adding"). An entity whose id the target already holds is taken when it is
//! identical and refused otherwise, naming the fields that differ; the
//! refusals are collected, not returned at the first, so an edit lists every one.

use std::collections::{BTreeMap, BTreeSet};

use super::{Annotation, Loader, Sample, SeriesMeta, SeriesRef, Source, Task, TaskType, TimeFDataset, ValuesSource};
use crate::error::{EditBlocker, Result};

/// What [`TimeFDataset::absorb`] found.
#[derive(Default)]
pub(crate) struct Absorbed {
    /// Ids the target holds with other content.
    pub(crate) conflicts: Vec<EditBlocker>,
    /// Series the target held before the edit's additions (their row) with
    /// equal metadata, with the added values' loader: identical only when the
    /// values are too (the caller compares, with [`values_differ`]).
    pub(crate) same_metadata: Vec<(u32, String, Loader)>,
    /// Ids added, by kind.
    pub(crate) samples: Vec<String>,
    pub(crate) series: Vec<String>,
    pub(crate) annotations: Vec<String>,
    pub(crate) tasks: Vec<String>,
    pub(crate) sources: Vec<String>,
}

/// The ids the edit's additions absorbed so far added, by kind: an id held
/// with other content that one of them added differs between two additions,
/// not from the base.
#[derive(Default)]
pub(crate) struct AddedBefore {
    sources: BTreeSet<String>,
    series: BTreeSet<String>,
    samples: BTreeSet<String>,
    annotations: BTreeSet<String>,
    tasks: BTreeSet<String>,
    /// Series refused as added twice (each refused once).
    twice: BTreeSet<String>,
}

/// Who holds the entity an added one is compared with.
#[derive(Clone, Copy)]
enum HeldBy {
    /// The target as it was before the additions (the base).
    Target,
    /// One of the edit's additions before this one.
    Addition,
}

impl AddedBefore {
    fn held_by(set: &BTreeSet<String>, id: &str) -> HeldBy {
        if set.contains(id) {
            HeldBy::Addition
        } else {
            HeldBy::Target
        }
    }
}

/// Most characters of a text a refusal shows; a longer one is cut, with `…`.
const TEXT_SHOWN: usize = 60;

/// A value as a refusal shows it, bounded: text quoted and escaped (so a
/// trailing space or a newline shows) and cut at [`TEXT_SHOWN`] characters,
/// numbers in their shortest form that reads back (with an exponent when
/// tiny or huge), an unset field `none`, a list by its length.
trait Shown {
    fn shown(&self) -> String;
    /// `self` and `other`, which differ, shown so that the difference shows.
    fn pair(&self, other: &Self) -> (String, String) {
        (self.shown(), other.shown())
    }
}
impl Shown for String {
    fn shown(&self) -> String {
        text(self, 0)
    }
    /// Two texts from a little before their first differing character when
    /// it lies past the cut (two citations that differ in their year).
    fn pair(&self, other: &Self) -> (String, String) {
        let first = self.chars().zip(other.chars()).take_while(|(a, b)| a == b).count();
        let from = if first < TEXT_SHOWN { 0 } else { first - TEXT_SHOWN / 3 };
        (text(self, from), text(other, from))
    }
}

/// `s` from its character `from` on (`…` before it when not its start), cut
/// at [`TEXT_SHOWN`] characters (`…` after it), quoted and escaped.
fn text(s: &str, from: usize) -> String {
    let rest = s.char_indices().nth(from).map_or("", |(i, _)| &s[i..]);
    let lead = if from > 0 { "…" } else { "" };
    match rest.char_indices().nth(TEXT_SHOWN) {
        Some((cut, _)) => format!("{lead}{:?}…", &rest[..cut]),
        None => format!("{lead}{rest:?}"),
    }
}
impl Shown for f64 {
    fn shown(&self) -> String {
        number(*self)
    }
}
impl Shown for i32 {
    fn shown(&self) -> String {
        self.to_string()
    }
}
impl Shown for TaskType {
    fn shown(&self) -> String {
        text(self.as_str(), 0)
    }
    fn pair(&self, other: &Self) -> (String, String) {
        self.as_str().to_string().pair(&other.as_str().to_string())
    }
}
impl Shown for SeriesRef {
    fn shown(&self) -> String {
        format!("{} as {}", text(&self.time_series_id, 0), text(&self.view, 0))
    }
    fn pair(&self, other: &Self) -> (String, String) {
        let part = |h: &String, a: &String| if h == a { (text(h, 0), text(a, 0)) } else { h.pair(a) };
        let (held_id, added_id) = part(&self.time_series_id, &other.time_series_id);
        let (held_view, added_view) = part(&self.view, &other.view);
        (format!("{held_id} as {held_view}"), format!("{added_id} as {added_view}"))
    }
}
impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        self.as_ref().map_or_else(|| "none".to_string(), T::shown)
    }
    fn pair(&self, other: &Self) -> (String, String) {
        match (self, other) {
            (Some(a), Some(b)) => a.pair(b),
            _ => (self.shown(), other.shown()),
        }
    }
}
impl<T: Shown> Shown for Vec<T> {
    fn shown(&self) -> String {
        entries(self.len())
    }
}

fn entries(n: usize) -> String {
    match n {
        1 => "1 entry".to_string(),
        n => format!("{n} entries"),
    }
}

/// `v` in its shortest form that reads back, with an exponent below 1e-4 or
/// from 1e15 on (Rust's `Display` would write every digit: 326 for 5e-324).
fn number<T: std::fmt::Display + std::fmt::LowerExp + Into<f64> + Copy>(v: T) -> String {
    let x: f64 = v.into();
    match x != 0.0 && x.is_finite() && (x.abs() < 1e-4 || x.abs() >= 1e15) {
        true => format!("{v:e}"),
        false => v.to_string(),
    }
}

/// The fields in which an added entity differs from the held one of the same
/// id, in the entity's field order, each as `field held (added other)`; a
/// list by its first differing entry or its length, a map by its first
/// differing key.
#[derive(Default)]
struct Differences(Vec<String>);

impl Differences {
    fn value<T: PartialEq + Shown>(&mut self, field: &'static str, held: &T, added: &T) -> &mut Self {
        if held != added {
            let (held, added) = held.pair(added);
            self.0.push(format!("{field} {held} (added {added})"));
        }
        self
    }

    fn list<T: PartialEq + Shown>(&mut self, field: &'static str, held: &[T], added: &[T]) -> &mut Self {
        match held.iter().zip(added).position(|(h, a)| h != a) {
            Some(i) => {
                let (h, a) = held[i].pair(&added[i]);
                self.0.push(format!("{field}[{i}] {h} (added {a})"))
            }
            None if held.len() != added.len() => {
                self.0.push(format!("{field} {} (added {})", entries(held.len()), entries(added.len())))
            }
            None => {}
        }
        self
    }

    fn optional_list<T: PartialEq + Shown>(
        &mut self,
        field: &'static str,
        held: &Option<Vec<T>>,
        added: &Option<Vec<T>>,
    ) -> &mut Self {
        match (held, added) {
            (Some(h), Some(a)) => self.list(field, h, a),
            _ => self.value(field, held, added),
        }
    }

    fn map(
        &mut self,
        field: &'static str,
        held: &BTreeMap<String, String>,
        added: &BTreeMap<String, String>,
    ) -> &mut Self {
        let keys: Vec<&String> = held.keys().chain(added.keys()).collect::<BTreeSet<_>>().into_iter().collect();
        if let Some(i) = keys.iter().position(|k| held.get(*k) != added.get(*k)) {
            let (h, a) = held.get(keys[i]).cloned().pair(&added.get(keys[i]).cloned());
            // the key as told from its nearest neighbour: two long keys that
            // differ past the cut would otherwise show as one (review 141)
            let common = |o: &&&String| keys[i].chars().zip(o.chars()).take_while(|(x, y)| x == y).count();
            let near = [i.checked_sub(1), Some(i + 1)].into_iter().flatten().filter_map(|j| keys.get(j));
            let key = match near.max_by_key(common) {
                Some(other) => keys[i].pair(other).0,
                None => keys[i].shown(),
            };
            self.0.push(format!("{field}[{key}] {h} (added {a})"));
        }
        self
    }

    /// The refusal of added `what` `id`, on its id field `id_field` (the id
    /// exists with other content; a field of its own would read as another
    /// blocker's, e.g. a sample's `series` as one left without series).
    fn blocker(&self, what: &str, id: &str, id_field: &'static str, held_by: HeldBy) -> EditBlocker {
        let how = match held_by {
            HeldBy::Target => "exists with other content",
            HeldBy::Addition => "differs between the edit's additions",
        };
        EditBlocker {
            id: id.to_string(),
            field: id_field,
            reason: format!("added {what} {id} {how}: {}", self.0.join(", ")),
        }
    }
}

fn source_conflict(held: &Source, added: &Source, held_by: HeldBy) -> EditBlocker {
    Differences::default()
        .value("name", &held.name, &added.name)
        .value("url", &held.url, &added.url)
        .value("license", &held.license, &added.license)
        .value("citation", &held.citation, &added.citation)
        .blocker("source", &added.source_id, "source_id", held_by)
}

fn series_conflict(held: &SeriesMeta, added: &SeriesMeta) -> EditBlocker {
    Differences::default()
        .value("spec_type", &held.spec_type, &added.spec_type)
        .value("channel", &held.channel, &added.channel)
        .value("units", &held.units, &added.units)
        .value("sampling_rate_hz", &held.sampling_rate_hz, &added.sampling_rate_hz)
        .value("t_start_s", &held.t_start_s, &added.t_start_s)
        .value("t_end_s", &held.t_end_s, &added.t_end_s)
        .blocker("series", &added.time_series_id, "time_series_id", HeldBy::Target)
}

fn sample_conflict(held: &Sample, added: &Sample, held_by: HeldBy) -> EditBlocker {
    Differences::default()
        .value("source_id", &held.source_id, &added.source_id)
        .value("subject_id", &held.subject_id, &added.subject_id)
        .value("t_start_s", &held.t_start_s, &added.t_start_s)
        .value("t_end_s", &held.t_end_s, &added.t_end_s)
        .list("series", &held.series, &added.series)
        .map("metadata", &held.metadata, &added.metadata)
        .blocker("sample", &added.sample_id, "sample_id", held_by)
}

fn annotation_conflict(held: &Annotation, added: &Annotation, held_by: HeldBy) -> EditBlocker {
    Differences::default()
        .value("annotation_type", &held.annotation_type, &added.annotation_type)
        .value("key", &held.key, &added.key)
        .value("value_str", &held.value_str, &added.value_str)
        .value("value_num", &held.value_num, &added.value_num)
        .value("t_start_s", &held.t_start_s, &added.t_start_s)
        .value("t_end_s", &held.t_end_s, &added.t_end_s)
        .value("channel", &held.channel, &added.channel)
        .blocker("annotation", &added.annotation_id, "annotation_id", held_by)
}

/// `held` is task `added.task_id` as the target holds it, under task name `held_name`.
fn task_conflict(held_name: &str, held: &Task, name: &str, added: &Task, held_by: HeldBy) -> EditBlocker {
    Differences::default()
        .value("task_name", &held_name.to_string(), &name.to_string())
        .value("task_type", &held.task_type, &added.task_type)
        .value("split", &held.split, &added.split)
        .list("sample_ids", &held.sample_ids, &added.sample_ids)
        .value("target", &held.target, &added.target)
        .value("target_sample_id", &held.target_sample_id, &added.target_sample_id)
        .optional_list("context_sample_ids", &held.context_sample_ids, &added.context_sample_ids)
        .value("from_task", &held.from_task, &added.from_task)
        .value("horizon", &held.horizon, &added.horizon)
        .value("prompt", &held.prompt, &added.prompt)
        .value("answer", &held.answer, &added.answer)
        .blocker("task", &added.task_id, "task_id", held_by)
}

/// The refusal of added series `id` whose metadata the target holds but
/// whose values differ from `held`'s, bit for bit; `None` when they do not.
pub(crate) fn values_differ(id: &str, held: &[f32], added: &[f32]) -> Option<EditBlocker> {
    let first = held.iter().zip(added).position(|(h, a)| h.to_bits() != a.to_bits());
    let what = match first {
        Some(i) => format!("values[{i}] {} (added {})", number(held[i]), number(added[i])),
        None if held.len() != added.len() => format!("values {} (added {})", entries(held.len()), entries(added.len())),
        None => return None,
    };
    Some(EditBlocker {
        id: id.to_string(),
        field: "values",
        reason: format!("added series {id} exists with other values: {what}"),
    })
}

impl TimeFDataset {
    /// Adds every entity of `other` (its `info` aside) to `self`; see the
    /// module doc. `before` holds what the edit's earlier additions added,
    /// and takes what this one adds: an id held with other content that one
    /// of them added is refused as differing between additions, and a series
    /// any of them added as given twice (its values are compared with the
    /// base's only), once however many additions carry it.
    ///
    /// # Errors
    /// [`crate::Error::Validation`] only for limits (2^31 rows); differing
    /// content is reported in [`Absorbed::conflicts`].
    pub(crate) fn absorb(&mut self, mut other: TimeFDataset, before: &mut AddedBefore) -> Result<Absorbed> {
        let mut out = Absorbed::default();
        for (id, source) in std::mem::take(&mut other.sources) {
            match self.sources.get(&id) {
                Some(s) if *s == source => {}
                Some(s) => out.conflicts.push(source_conflict(s, &source, AddedBefore::held_by(&before.sources, &id))),
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
            let id = &meta.time_series_id;
            match self.series.ids.find(id) {
                Some(_) if before.series.contains(id) => {
                    if before.twice.insert(id.clone()) {
                        let reason = format!(
                            "added series {id} is added by more than one of the edit's additions: give it once"
                        );
                        out.conflicts.push(EditBlocker { id: id.clone(), field: "time_series_id", reason });
                    }
                }
                Some(r) if self.series.equals(r as usize, &meta) => {
                    let loader: Loader = values
                        .into_loader(&self.stores)
                        .unwrap_or_else(|| Box::new(|| Err("the loader already ran".into())));
                    out.same_metadata.push((r, meta.time_series_id, loader));
                }
                Some(r) => out.conflicts.push(series_conflict(&self.series.meta(r as usize), &meta)),
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
                Some(s) => {
                    let held_by = AddedBefore::held_by(&before.samples, &sample.sample_id);
                    out.conflicts.push(sample_conflict(&s, &sample, held_by))
                }
                None => {
                    out.samples.push(sample.sample_id.clone());
                    self.add_sample(sample)?;
                }
            }
        }
        for (id, (a, samples)) in std::mem::take(&mut other.annotations) {
            match self.annotations.get_mut(&id) {
                Some((existing, _)) if *existing != a => out.conflicts.push(annotation_conflict(
                    existing,
                    &a,
                    AddedBefore::held_by(&before.annotations, &id),
                )),
                Some((_, attached)) => attached.extend(samples),
                None => {
                    out.annotations.push(id.clone());
                    self.annotations.insert(id, (a, samples));
                }
            }
        }
        // task ids are unique across task names: the held task of an id, under its name
        let held: BTreeMap<String, String> = self
            .tasks
            .iter()
            .flat_map(|(name, tasks)| tasks.keys().map(move |id| (id.clone(), name.clone())))
            .collect();
        for (name, tasks) in std::mem::take(&mut other.tasks) {
            for (id, task) in tasks {
                match held.get(&id).and_then(|n| Some((n, self.tasks.get(n)?.get(&id)?))) {
                    Some((held_name, t)) if *held_name == name && *t == task => {}
                    Some((held_name, t)) => {
                        let held_by = AddedBefore::held_by(&before.tasks, &id);
                        out.conflicts.push(task_conflict(held_name, t, &name, &task, held_by))
                    }
                    None => {
                        out.tasks.push(id.clone());
                        self.tasks.entry(name.clone()).or_default().insert(id, task);
                    }
                }
            }
        }
        out.tasks.sort();
        for (set, ids) in [
            (&mut before.sources, &out.sources),
            (&mut before.series, &out.series),
            (&mut before.samples, &out.samples),
            (&mut before.annotations, &out.annotations),
            (&mut before.tasks, &out.tasks),
        ] {
            set.extend(ids.iter().cloned());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_shown_bounded_and_as_they_read_back() {
        assert_eq!(number(250.0f64), "250");
        assert_eq!(number(0.1f64), "0.1");
        assert_eq!(number(5e-324f64), "5e-324");
        assert_eq!(number(-1e300f64), "-1e300");
        assert_eq!(number(0.0f64), "0");
        assert_eq!(number(f64::NAN), "NaN");
        // an f32 as f32 (1.003448, not the f64 1.0034480094909668)
        assert_eq!(number(1.003448f32), "1.003448");
        assert_eq!(number(-0.0f32), "-0");
        let long = format!("a\"b\n{}", "x".repeat(100));
        assert_eq!(long.shown(), format!("{:?}…", format!("a\"b\n{}", "x".repeat(56))));
        assert_eq!("é".repeat(60).shown(), format!("\"{}\"", "é".repeat(60)));
        assert_eq!("é".repeat(61).shown(), format!("\"{}\"…", "é".repeat(60)));
        assert_eq!(None::<String>.shown(), "none");
        // two texts that differ past the cut: from 20 characters before the difference (at 73)
        let (cite, other) = (format!("{}2023", "x".repeat(70)), format!("{}2024", "x".repeat(70)));
        let from = format!("…\"{}", "x".repeat(17));
        assert_eq!(Some(cite).pair(&Some(other)), (format!("{from}2023\""), format!("{from}2024\"")));
        assert_eq!("ab".to_string().pair(&"ac".to_string()), (r#""ab""#.to_string(), r#""ac""#.to_string()));
        let (long, longer) = ("y".repeat(61), "y".repeat(100));
        assert_eq!(long.pair(&longer), (format!("…\"{}\"", "y".repeat(20)), format!("…\"{}\"", "y".repeat(59))));
        let kind = TaskType::Other("q".repeat(100));
        assert_eq!(kind.shown(), format!("\"{}\"…", "q".repeat(60)));
        let view = SeriesRef { time_series_id: "s".into(), view: "v".repeat(61) };
        assert_eq!(view.shown(), format!("\"s\" as \"{}\"…", "v".repeat(60)));
        // a task type and a series' view or id that differ past the cut, as other text
        let (q0, q1) =
            (TaskType::Other(format!("{}0", "q".repeat(70))), TaskType::Other(format!("{}1", "q".repeat(70))));
        let q = "q".repeat(20);
        assert_eq!(q0.pair(&q1), (format!("…\"{q}0\""), format!("…\"{q}1\"")));
        let other = SeriesRef { time_series_id: "s".into(), view: format!("{}w", "v".repeat(60)) };
        let v = "v".repeat(20);
        assert_eq!(view.pair(&other), (format!("\"s\" as …\"{v}v\""), format!("\"s\" as …\"{v}w\"")));
        let mut d = Differences::default();
        d.list("sample_ids", &["a".to_string()], &[]).list(
            "context",
            &["a".to_string(), "b".to_string()],
            &["a".to_string(), "c".to_string()],
        );
        let held = BTreeMap::from([("k".to_string(), "1".to_string())]);
        d.map("metadata", &held, &BTreeMap::new()).value("horizon", &Some(1), &None);
        assert_eq!(
            d.0,
            [
                "sample_ids 1 entry (added 0 entries)",
                r#"context[1] "b" (added "c")"#,
                r#"metadata["k"] "1" (added none)"#,
                "horizon 1 (added none)"
            ]
        );
        // two long keys that differ past the cut: each told from the other (review 141 #5)
        let key = |end: &str| format!("{}{end}", "k".repeat(70));
        let held = BTreeMap::from([(key("a"), "v".to_string()), ("z".to_string(), "1".to_string())]);
        let added = BTreeMap::from([(key("b"), "v".to_string()), ("z".to_string(), "1".to_string())]);
        let k = "k".repeat(20);
        let mut d = Differences::default();
        d.map("metadata", &held, &added);
        assert_eq!(d.0, [format!(r#"metadata[…"{k}a"] "v" (added none)"#)]);
        // a short key as it is, whatever its neighbours
        let held = BTreeMap::from([(key("a"), "v".to_string()), ("m".to_string(), "1".to_string())]);
        let mut d = Differences::default();
        d.map("metadata", &held, &BTreeMap::from([(key("a"), "v".to_string())]));
        assert_eq!(d.0, [r#"metadata["m"] "1" (added none)"#]);
        assert_eq!(values_differ("s", &[1.0, 2.0], &[1.0, 2.0]), None);
        let why = |h: &[f32], a: &[f32]| values_differ("s", h, a).map(|b| (b.field, b.reason));
        assert_eq!(
            why(&[1.0], &[1.0, 2.0]),
            Some(("values", "added series s exists with other values: values 1 entry (added 2 entries)".to_string()))
        );
        assert_eq!(
            why(&[0.0, 1e-30], &[0.0, 2.0]),
            Some(("values", "added series s exists with other values: values[1] 1e-30 (added 2)".to_string()))
        );
    }
}
