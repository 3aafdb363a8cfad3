//! Columnar storage of a dataset's series and samples: ids end to end in one
//! string buffer with a hash index of row numbers, categoricals interned as
//! `u32`, numbers in flat vectors, optional columns allocated only once a value
//! is present. A corpus of millions of windows then costs tens of bytes a
//! series instead of a heap object per field (`docs/format.md` §1, "Memory").

use std::collections::{BTreeMap, HashMap};

// aHash, randomly keyed as std's SipHash is and faster on short ids: an
// ingest of a million one-row series ran ~10% faster with it (Cargo.toml, `ahash`)
use ahash::RandomState;

use super::{Sample, SeriesMeta, SeriesRef};

/// Strings stored end to end: row `i` is `text[ends[i - 1]..ends[i]]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct StrColumn {
    text: String,
    ends: Vec<u64>,
}

impl StrColumn {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len() as u64);
    }

    pub(crate) fn get(&self, row: usize) -> &str {
        let start = if row == 0 { 0 } else { self.ends[row - 1] as usize };
        &self.text[start..self.ends[row] as usize]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|r| self.get(r))
    }
}

/// The ids of a column of rows (series or samples): the strings end to end
/// with a hash index to their row numbers (`u32`: a dataset holds fewer than
/// 2^32 series or samples).
#[derive(Debug, Clone, Default)]
pub(crate) struct Ids {
    text: StrColumn,
    table: hashbrown::HashTable<u32>,
    hasher: RandomState,
    /// The table was dropped ([`Ids::release_index`]): lookups scan.
    released: bool,
}

impl Ids {
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }

    /// The id of row `row`.
    pub(crate) fn get(&self, row: usize) -> &str {
        self.text.get(row)
    }

    /// Every id in row order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.text.iter()
    }

    /// The row holding `id`.
    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        if self.released {
            return self.text.iter().position(|x| x == id).map(|r| r as u32);
        }
        let hash = self.hasher.hash_one(id);
        self.table.find(hash, |&r| self.text.get(r as usize) == id).copied()
    }

    /// Frees the table (the writer needs no lookup by id; at 10 million ids
    /// it is ~80 MiB). Later lookups scan, and later pushes rebuild it.
    pub(crate) fn release_index(&mut self) {
        self.table = hashbrown::HashTable::new();
        self.released = true;
    }

    /// Appends `id` (not present yet: the caller checks) as a new row and returns it.
    pub(crate) fn push(&mut self, id: &str) -> u32 {
        let row = self.text.len() as u32;
        self.text.push(id);
        if self.released {
            self.released = false;
            for r in 0..row {
                self.index(r);
            }
        }
        self.index(row);
        row
    }

    fn index(&mut self, row: u32) {
        let (text, hasher) = (&self.text, &self.hasher);
        let hash = hasher.hash_one(text.get(row as usize));
        self.table.insert_unique(hash, row, |&r| hasher.hash_one(text.get(r as usize)));
    }

    /// Every row sorted by id.
    pub(crate) fn by_id(&self) -> Vec<u32> {
        let mut rows: Vec<u32> = (0..self.len() as u32).collect();
        sort_rows(&mut rows, |a, b| self.get(a as usize).cmp(self.get(b as usize)));
        rows
    }
}

/// Distinct strings of low cardinality (spec types, channels, units, sources,
/// views) as `u32` codes in first-seen order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Interner {
    values: Vec<Box<str>>,
    codes: HashMap<Box<str>, u32, RandomState>,
}

/// Distinct strings an [`Interner`] finds by comparing them in turn, not by
/// their hash (8): a corpus's few spec types, channels, sources and views,
/// met once a series or sample, cost a comparison or two instead of a hash.
const INTERN_SCAN_MAX: usize = 8;

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        let found = if self.values.len() <= INTERN_SCAN_MAX {
            self.values.iter().position(|v| **v == *s).map(|c| c as u32)
        } else {
            self.codes.get(s).copied()
        };
        if let Some(c) = found {
            return c;
        }
        let c = self.values.len() as u32;
        self.values.push(s.into());
        self.codes.insert(s.into(), c);
        c
    }

    pub(crate) fn get(&self, code: u32) -> &str {
        &self.values[code as usize]
    }

    /// Each code's rank in the sorted order of the strings.
    pub(crate) fn ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.values.len() as u32).collect();
        order.sort_by(|&a, &b| self.get(a).cmp(self.get(b)));
        let mut ranks = vec![0; order.len()];
        for (rank, code) in order.into_iter().enumerate() {
            ranks[code as usize] = rank as u32;
        }
        ranks
    }
}

/// A value of a [`Column`]: compared by bits, so `-0.0` and `0.0` differ.
pub(crate) trait Cell: Copy {
    /// The value that marks "absent" in an optional column.
    const ABSENT: Self;
    fn same(self, other: Self) -> bool;
}

impl Cell for u32 {
    const ABSENT: u32 = u32::MAX;
    fn same(self, other: u32) -> bool {
        self == other
    }
}

// the dataset refuses non-finite numbers, so NaN is free to mean "absent"
impl Cell for f64 {
    const ABSENT: f64 = f64::NAN;
    fn same(self, other: f64) -> bool {
        self.to_bits() == other.to_bits()
    }
}

/// A column that holds one value while every row has the same one (the
/// spec type, rate or source of a corpus of like windows), and a value a row
/// from the first row that differs on. Optional columns use it with
/// [`Cell::ABSENT`] for "no value": a column nobody sets allocates nothing.
#[derive(Debug, Clone)]
pub(crate) struct Column<T> {
    first: T,
    values: Vec<T>,
    len: usize,
}

impl<T: Cell> Default for Column<T> {
    fn default() -> Self {
        Column { first: T::ABSENT, values: Vec::new(), len: 0 }
    }
}

impl<T: Cell> Column<T> {
    pub(crate) fn push(&mut self, v: T) {
        if self.values.is_empty() {
            if self.len == 0 {
                self.first = v;
            }
            if v.same(self.first) {
                self.len += 1;
                return;
            }
            self.values = vec![self.first; self.len];
        }
        self.values.push(v);
        self.len += 1;
    }

    pub(crate) fn get(&self, row: usize) -> T {
        if self.values.is_empty() {
            self.first
        } else {
            self.values[row]
        }
    }

    pub(crate) fn push_opt(&mut self, v: Option<T>) {
        self.push(v.unwrap_or(T::ABSENT));
    }

    pub(crate) fn get_opt(&self, row: usize) -> Option<T> {
        Some(self.get(row)).filter(|v| !v.same(T::ABSENT))
    }
}

/// The metadata of every series, in insertion order (the order is never
/// observed: readers sort).
#[derive(Debug, Clone, Default)]
pub(crate) struct SeriesColumns {
    pub(crate) ids: Ids,
    /// spec types, channels and units
    cats: Interner,
    spec_type: Column<u32>,
    channel: Column<u32>,
    units: Column<u32>,
    sampling_rate_hz: Column<f64>,
    t_start_s: Column<f64>,
    t_end_s: Column<f64>,
}

impl SeriesColumns {
    /// Columns holding `metas` in order (duplicates are the caller's to refuse).
    pub(crate) fn from_metas<'a>(metas: impl Iterator<Item = &'a SeriesMeta>) -> SeriesColumns {
        let mut c = SeriesColumns::default();
        for m in metas {
            c.push(m);
        }
        c
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Appends `meta` as a new row and returns it.
    pub(crate) fn push(&mut self, meta: &SeriesMeta) -> u32 {
        let row = self.ids.push(&meta.time_series_id);
        let spec = self.cats.intern(&meta.spec_type);
        self.spec_type.push(spec);
        let channel = self.cats.intern(&meta.channel);
        self.channel.push(channel);
        let units = meta.units.as_deref().map(|u| self.cats.intern(u));
        self.units.push_opt(units);
        self.sampling_rate_hz.push(meta.sampling_rate_hz);
        self.t_start_s.push(meta.t_start_s);
        self.t_end_s.push_opt(meta.t_end_s);
        row
    }

    pub(crate) fn id(&self, row: usize) -> &str {
        self.ids.get(row)
    }
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.ids.iter()
    }
    pub(crate) fn spec_type(&self, row: usize) -> &str {
        self.cats.get(self.spec_type.get(row))
    }
    pub(crate) fn channel(&self, row: usize) -> &str {
        self.cats.get(self.channel.get(row))
    }
    pub(crate) fn units(&self, row: usize) -> Option<&str> {
        self.units.get_opt(row).map(|u| self.cats.get(u))
    }
    pub(crate) fn sampling_rate_hz(&self, row: usize) -> f64 {
        self.sampling_rate_hz.get(row)
    }
    pub(crate) fn t_start_s(&self, row: usize) -> f64 {
        self.t_start_s.get(row)
    }
    pub(crate) fn t_end_s(&self, row: usize) -> Option<f64> {
        self.t_end_s.get_opt(row)
    }

    /// Row `row` as an owned [`SeriesMeta`].
    pub(crate) fn meta(&self, row: usize) -> SeriesMeta {
        SeriesMeta {
            time_series_id: self.id(row).to_string(),
            spec_type: self.spec_type(row).to_string(),
            channel: self.channel(row).to_string(),
            units: self.units(row).map(str::to_string),
            sampling_rate_hz: self.sampling_rate_hz(row),
            t_start_s: self.t_start_s(row),
            t_end_s: self.t_end_s(row),
        }
    }

    /// True when row `row` holds exactly `meta`.
    pub(crate) fn equals(&self, row: usize, meta: &SeriesMeta) -> bool {
        self.id(row) == meta.time_series_id
            && self.spec_type(row) == meta.spec_type
            && self.channel(row) == meta.channel
            && self.units(row) == meta.units.as_deref()
            && self.sampling_rate_hz(row) == meta.sampling_rate_hz
            && self.t_start_s(row) == meta.t_start_s
            && self.t_end_s(row) == meta.t_end_s
    }

    /// Every row in write order: `(spec_type, channel, time_series_id)`
    /// (FORMAT-BRIEF §5).
    pub(crate) fn write_order(&self) -> Vec<u32> {
        let mut rows: Vec<u32> = (0..self.len() as u32).collect();
        self.sort_in_write_order(&mut rows);
        rows
    }

    /// Sorts `rows` (rows of these columns) into write order, the order of a
    /// version's index.
    pub(crate) fn sort_in_write_order(&self, rows: &mut [u32]) {
        let ranks = self.cats.ranks();
        let key =
            |r: u32| (ranks[self.spec_type.get(r as usize) as usize], ranks[self.channel.get(r as usize) as usize]);
        sort_rows(rows, |a, b| key(a).cmp(&key(b)).then_with(|| self.id(a as usize).cmp(self.id(b as usize))));
    }

    /// The rows `keep` marks, in order, as new columns; and each old row's new
    /// row (`u32::MAX` when dropped).
    pub(crate) fn retain(&self, keep: &[bool]) -> (SeriesColumns, Vec<u32>) {
        let mut out = SeriesColumns::default();
        let mut remap = vec![u32::MAX; self.len()];
        for row in (0..self.len()).filter(|&r| keep[r]) {
            remap[row] = out.push(&self.meta(row));
        }
        (out, remap)
    }
}

/// Sorts row numbers by `cmp` (ids are unique, so an unstable sort is
/// deterministic), on the process's pool ([`crate::runtime::compute_pool`];
/// on this thread if it cannot be built).
fn sort_rows(rows: &mut [u32], cmp: impl Fn(u32, u32) -> std::cmp::Ordering + Sync) {
    use rayon::slice::ParallelSliceMut;
    match crate::runtime::compute_pool() {
        Ok(pool) => pool.install(|| rows.par_sort_unstable_by(|&a, &b| cmp(a, b))),
        Err(_) => rows.sort_unstable_by(|&a, &b| cmp(a, b)),
    }
}

/// A sample's reference to a series: the series' row when it was known when
/// the sample was added, else this bit plus the row of its id in `pending`.
const PENDING: u32 = 1 << 31;

/// Every sample, in insertion order.
#[derive(Debug, Clone, Default)]
pub(crate) struct SampleColumns {
    pub(crate) ids: Ids,
    /// source ids, subject ids and views
    cats: Interner,
    source: Column<u32>,
    subject: Column<u32>,
    t_start_s: Column<f64>,
    t_end_s: Column<f64>,
    /// Each sample's number of references (in `refs` one after the other).
    ref_counts: Column<u32>,
    /// End of each sample's references in `refs`, kept only once the counts
    /// differ (until then sample `i`'s are at `i * count`).
    ref_ends: Vec<u64>,
    refs: Vec<u32>,
    ref_views: Column<u32>,
    /// Ids of series referenced before they were added.
    pending: StrColumn,
    /// Non-empty metadata maps by row.
    metadata: BTreeMap<u32, BTreeMap<String, String>>,
}

impl SampleColumns {
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// References stored by id (to series not added when their sample was).
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Appends `sample`, naming its series by row where `series` knows them.
    pub(crate) fn push(&mut self, sample: &Sample, series: &SeriesColumns) {
        let row = self.ids.push(&sample.sample_id);
        let source = self.cats.intern(&sample.source_id);
        self.source.push(source);
        let subject = sample.subject_id.as_deref().map(|s| self.cats.intern(s));
        self.subject.push_opt(subject);
        self.t_start_s.push_opt(sample.t_start_s);
        self.t_end_s.push_opt(sample.t_end_s);
        let uniform = self.ref_ends.is_empty();
        self.ref_counts.push(sample.series.len() as u32);
        if uniform && !self.ref_counts.values.is_empty() {
            // counts differ from here on: the ends of the samples before
            self.ref_ends = (1..=row as u64).map(|r| r * u64::from(self.ref_counts.first)).collect();
        }
        for r in &sample.series {
            let target = match series.ids.find(&r.time_series_id) {
                Some(row) if row < PENDING => row,
                _ => {
                    self.pending.push(&r.time_series_id);
                    PENDING | (self.pending.len() as u32 - 1)
                }
            };
            self.refs.push(target);
            let view = self.cats.intern(&r.view);
            self.ref_views.push(view);
        }
        if !self.ref_counts.values.is_empty() {
            self.ref_ends.push(self.refs.len() as u64);
        }
        if !sample.metadata.is_empty() {
            self.metadata.insert(row, sample.metadata.clone());
        }
    }

    pub(crate) fn id(&self, row: usize) -> &str {
        self.ids.get(row)
    }
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.ids.iter()
    }
    pub(crate) fn source_id(&self, row: usize) -> &str {
        self.cats.get(self.source.get(row))
    }
    pub(crate) fn subject_id(&self, row: usize) -> Option<&str> {
        self.subject.get_opt(row).map(|s| self.cats.get(s))
    }
    pub(crate) fn t_start_s(&self, row: usize) -> Option<f64> {
        self.t_start_s.get_opt(row)
    }
    pub(crate) fn t_end_s(&self, row: usize) -> Option<f64> {
        self.t_end_s.get_opt(row)
    }
    pub(crate) fn metadata(&self, row: usize) -> Option<&BTreeMap<String, String>> {
        self.metadata.get(&(row as u32))
    }
    /// Every non-empty metadata map.
    pub(crate) fn metadata_maps(&self) -> impl Iterator<Item = &BTreeMap<String, String>> + '_ {
        self.metadata.values()
    }

    /// Positions of sample `row`'s references in [`SampleColumns::ref_id`] / [`SampleColumns::ref_view`].
    pub(crate) fn refs_of(&self, row: usize) -> std::ops::Range<usize> {
        if self.ref_ends.is_empty() {
            let n = self.ref_counts.first as usize;
            return row * n..(row + 1) * n;
        }
        let start = if row == 0 { 0 } else { self.ref_ends[row - 1] as usize };
        start..self.ref_ends[row] as usize
    }

    /// The series id of reference `k`.
    pub(crate) fn ref_id<'a>(&'a self, k: usize, series: &'a SeriesColumns) -> &'a str {
        match self.refs[k] {
            r if r & PENDING != 0 => self.pending.get((r & !PENDING) as usize),
            r => series.id(r as usize),
        }
    }

    /// The series row of reference `k`, `None` for a series the dataset does not hold.
    pub(crate) fn ref_row(&self, k: usize, series: &SeriesColumns) -> Option<u32> {
        match self.refs[k] {
            r if r & PENDING != 0 => series.ids.find(self.pending.get((r & !PENDING) as usize)),
            r => Some(r),
        }
    }

    pub(crate) fn ref_view(&self, k: usize) -> &str {
        self.cats.get(self.ref_views.get(k))
    }

    /// Row `row` as an owned [`Sample`].
    pub(crate) fn sample(&self, row: usize, series: &SeriesColumns) -> Sample {
        Sample {
            sample_id: self.id(row).to_string(),
            source_id: self.source_id(row).to_string(),
            subject_id: self.subject_id(row).map(str::to_string),
            t_start_s: self.t_start_s(row),
            t_end_s: self.t_end_s(row),
            series: self
                .refs_of(row)
                .map(|k| SeriesRef {
                    time_series_id: self.ref_id(k, series).to_string(),
                    view: self.ref_view(k).to_string(),
                })
                .collect(),
            metadata: self.metadata(row).cloned().unwrap_or_default(),
        }
    }

    /// The samples `keep` marks, in order, referencing `series` (the series
    /// columns they are then stored against), each without its references to
    /// the series `keep_series` rejects (by id).
    pub(crate) fn retain(
        &self,
        keep: &[bool],
        old: &SeriesColumns,
        series: &SeriesColumns,
        keep_series: impl Fn(&str) -> bool,
    ) -> SampleColumns {
        let mut out = SampleColumns::default();
        for row in (0..self.len()).filter(|&r| keep[r]) {
            let mut sample = self.sample(row, old);
            sample.series.retain(|r| keep_series(&r.time_series_id));
            out.push(&sample, series);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes are the first-seen order whether a string is found by comparing
    /// (the first [`INTERN_SCAN_MAX`] + 1) or by its hash (the rest).
    #[test]
    fn an_interner_gives_first_seen_codes_by_scan_and_by_hash_alike() {
        let mut i = Interner::default();
        let names: Vec<String> = (0..20).map(|k| format!("s{}", 19 - k)).collect();
        for round in 0..2 {
            for (k, n) in names.iter().enumerate() {
                assert_eq!(i.intern(n), k as u32, "round {round}, {n}");
            }
        }
        assert_eq!((0..20).map(|c| i.get(c)).collect::<Vec<_>>(), names);
        assert_eq!(i.intern(""), 20);
        assert_eq!(i.ranks()[..3], [12, 11, 10]);
    }

    #[test]
    fn a_column_holds_one_value_until_a_row_differs() {
        let mut c: Column<f64> = Column::default();
        c.push_opt(None);
        c.push_opt(None);
        assert!(c.values.is_empty());
        c.push_opt(Some(2.5));
        c.push_opt(None);
        assert_eq!(c.values.len(), 4);
        assert_eq!((0..4).map(|r| c.get_opt(r)).collect::<Vec<_>>(), [None, None, Some(2.5), None]);
        let mut z: Column<f64> = Column::default();
        for v in [0.0, 0.0, -0.0] {
            z.push(v);
        }
        assert_eq!(z.values.len(), 3, "-0.0 is not 0.0");
        assert!(z.get(2).is_sign_negative() && !z.get(1).is_sign_negative());
        let mut u: Column<u32> = Column::default();
        for _ in 0..1000 {
            u.push(7);
        }
        assert!(u.values.is_empty());
        assert_eq!(u.get(999), 7);
    }

    #[test]
    fn reference_ends_are_kept_only_once_samples_differ_in_their_count() {
        let series = SeriesColumns::default();
        let mut samples = SampleColumns::default();
        let r = |id: &str| SeriesRef { time_series_id: id.into(), view: "main".into() };
        let sample = |id: &str, refs: Vec<SeriesRef>| Sample {
            sample_id: id.into(),
            source_id: "src".into(),
            series: refs,
            ..Default::default()
        };
        samples.push(&sample("a", vec![r("1"), r("2")]), &series);
        samples.push(&sample("b", vec![r("3"), r("4")]), &series);
        assert!(samples.ref_ends.is_empty());
        assert_eq!((samples.refs_of(0), samples.refs_of(1)), (0..2, 2..4));
        samples.push(&sample("c", vec![r("5")]), &series);
        samples.push(&sample("d", vec![r("6"), r("7"), r("8")]), &series);
        assert_eq!(samples.ref_ends, [2, 4, 5, 8]);
        let got: Vec<Vec<String>> =
            (0..4).map(|s| samples.sample(s, &series).series.into_iter().map(|x| x.time_series_id).collect()).collect();
        assert_eq!(got, [vec!["1", "2"], vec!["3", "4"], vec!["5"], vec!["6", "7", "8"]]);
    }

    #[test]
    fn ids_are_found_by_their_row_and_write_order_sorts_by_spec_channel_id() {
        let mut s = SeriesColumns::default();
        for (id, spec, ch) in [("b", "ecg", "II"), ("a", "ecg", "II"), ("c", "acc", "x"), ("d", "ecg", "I")] {
            s.push(&SeriesMeta::new(id, spec, ch, 100.0));
        }
        assert_eq!([s.ids.find("a"), s.ids.find("d"), s.ids.find("zz")], [Some(1), Some(3), None]);
        s.ids.release_index();
        assert_eq!([s.ids.find("a"), s.ids.find("d"), s.ids.find("zz")], [Some(1), Some(3), None]);
        s.push(&SeriesMeta::new("e", "ecg", "I", 100.0));
        assert_eq!([s.ids.find("a"), s.ids.find("e")], [Some(1), Some(4)]);
        let order: Vec<&str> = s.write_order().into_iter().map(|r| s.id(r as usize)).collect();
        assert_eq!(order, ["c", "d", "e", "a", "b"]);
        let by_id: Vec<&str> = s.ids.by_id().into_iter().map(|r| s.id(r as usize)).collect();
        assert_eq!(by_id, ["a", "b", "c", "d", "e"]);
        assert!(s.equals(2, &SeriesMeta::new("c", "acc", "x", 100.0)));
        assert!(!s.equals(2, &SeriesMeta::new("c", "acc", "x", 50.0)));
    }

    #[test]
    fn a_reference_to_a_series_added_later_is_resolved_by_id() {
        let mut series = SeriesColumns::default();
        let mut samples = SampleColumns::default();
        let r = |id: &str| SeriesRef { time_series_id: id.into(), view: "main".into() };
        samples.push(
            &Sample {
                sample_id: "s".into(),
                source_id: "src".into(),
                series: vec![r("x"), r("y")],
                ..Default::default()
            },
            &series,
        );
        series.push(&SeriesMeta::new("y", "ecg", "I", 1.0));
        let refs = samples.refs_of(0);
        assert_eq!(refs, 0..2);
        assert_eq!([samples.ref_row(0, &series), samples.ref_row(1, &series)], [None, Some(0)]);
        assert_eq!(samples.sample(0, &series).series, [r("x"), r("y")]);
    }
}
