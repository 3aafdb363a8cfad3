//! `verify`'s index checks: the index's rows (sort order, chunk numbering,
//! offsets, statistics fields) and every pointer against the shards' decoded rows
//! and values.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One index row, kept compact for the pointer and statistics checks.
#[derive(Debug, Clone)]
pub(super) struct ChunkRec {
    pub(super) series: u32,
    pub(super) chunk_idx: i32,
    pub(super) n_values: i32,
    pub(super) min: f32,
    pub(super) max: f32,
    pub(super) mean: f64,
    pub(super) std: f64,
    /// Row in the index file.
    pub(super) row: u64,
}

/// Where a series' next chunk must start.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Progress {
    pub(super) next_chunk: i32,
    pub(super) next_offset: i64,
    pub(super) last_n: i32,
}

/// What the index scan keeps.
#[derive(Debug, Default)]
pub(super) struct IndexState {
    pub(super) complete: bool,
    pub(super) series: Vec<SeriesMeta>,
    pub(super) series_no: HashMap<String, u32>,
    pub(super) progress: Vec<Progress>,
    pub(super) chunks: Vec<ChunkRec>,
    /// (shard number, row group, row) -> chunk number
    pub(super) by_target: HashMap<(u32, u32, u32), u32>,
    pub(super) channels: BTreeMap<(String, String), Partial>,
    pub(super) values: u64,
    pub(super) referenced: Vec<bool>,
}

/// What the shard scans found.
#[derive(Debug, Default)]
pub(super) struct ShardState {
    pub(super) complete: bool,
    pub(super) values: u64,
}

impl Verifier<'_> {
    /// The index in `files` of `rel` when its logical checks can run: its
    /// footer was read and its schema is the format's. Otherwise records in
    /// `skipped` that `what` cannot run (after decoding every page of a file
    /// whose only fault is its schema).
    pub(super) fn usable(files: &[PqFile], report: &mut VerifyReport, rel: &str, what: &str) -> Option<usize> {
        let Some(i) = files.iter().position(|f| f.rel == rel) else {
            report.skipped.push(format!("{what}: {rel} is missing or its footer is unreadable"));
            return None;
        };
        if files[i].schema_ok {
            return Some(i);
        }
        scan(report, &files[i], TABLE_BATCH_ROWS, |_, _, _| Ok(()));
        report.skipped.push(format!("{what}: {rel} does not have the format's schema"));
        None
    }

    pub(super) fn index(&mut self) -> IndexState {
        let mut st = IndexState::default();
        let Some(i) = Self::usable(&self.files, &mut self.report, INDEX, "index checks") else {
            return st;
        };
        // shard path -> (shard number, rows per row group), for pointer ranges
        let shards: HashMap<&str, (u32, Vec<i64>)> = self
            .files
            .iter()
            .filter_map(|f| match f.kind {
                Kind::Shard(n) => {
                    Some((f.rel.as_str(), (n, f.meta.row_groups().iter().map(|g| g.num_rows()).collect())))
                }
                _ => None,
            })
            .collect();
        let listed = &self.listed;
        let f = &self.files[i];
        let (seen, chunk_values) = (&mut self.seen, self.chunk_values);
        let mut prev: Option<(String, String, String, i32)> = None;
        let complete = scan(&mut self.report, f, TABLE_BATCH_ROWS, |report, pos, batch| {
            for (k, e) in reader::index_rows(&f.path, batch)?.into_iter().enumerate() {
                let row = pos.global + k as u64;
                let at = format!("row {row}");
                let id = e.meta.time_series_id.clone();
                let key = (e.meta.spec_type.clone(), e.meta.channel.clone(), id.clone(), e.chunk_idx);
                if let Some(p) = prev.as_ref().filter(|p| **p >= key) {
                    let msg = format!("{key:?} does not sort after the previous row's {p:?} (spec_type, channel, time_series_id, chunk_idx)");
                    report.push(INDEX, &at, Check::Order, msg);
                }
                prev = Some(key);
                saw(seen, IdSpace::TimeSeries, &id);
                let s = match st.series_no.get(&id) {
                    Some(&s) => {
                        if st.series[s as usize] != e.meta {
                            let msg = format!("series-level columns of {id} differ from its first chunk's row");
                            report.push(INDEX, &at, Check::Chunking, msg);
                        }
                        s
                    }
                    None => {
                        let m = &e.meta;
                        if !(m.sampling_rate_hz.is_finite() && m.sampling_rate_hz > 0.0) {
                            let msg =
                                format!("sampling_rate_hz of {id} must be finite and > 0, got {}", m.sampling_rate_hz);
                            report.push(INDEX, &at, Check::Values, msg);
                        }
                        if !m.t_start_s.is_finite() || m.t_end_s.is_some_and(|t| !t.is_finite()) {
                            report.push(
                                INDEX,
                                &at,
                                Check::Values,
                                format!("t_start_s or t_end_s of {id} is not finite"),
                            );
                        }
                        let s = st.series.len() as u32;
                        st.series_no.insert(id.clone(), s);
                        st.series.push(e.meta.clone());
                        st.progress.push(Progress::default());
                        s
                    }
                };
                let p = &mut st.progress[s as usize];
                if e.chunk_idx != p.next_chunk || e.value_offset != p.next_offset {
                    let msg = format!(
                        "{id} chunk {} at value_offset {}, expected chunk {} at {}",
                        e.chunk_idx, e.value_offset, p.next_chunk, p.next_offset
                    );
                    report.push(INDEX, &at, Check::Chunking, msg);
                }
                if let Some(cv) =
                    chunk_values.filter(|&cv| p.next_chunk > 0 && u64::try_from(p.last_n).ok() != Some(cv))
                {
                    let msg = format!(
                        "the chunk before chunk {} of {id} holds {} values; every chunk but a series' last holds {cv}",
                        e.chunk_idx, p.last_n
                    );
                    report.push(INDEX, &at, Check::Chunking, msg);
                }
                if e.n_values <= 0 {
                    report.push(
                        INDEX,
                        &at,
                        Check::Values,
                        format!("{id} chunk {}: n_values {}", e.chunk_idx, e.n_values),
                    );
                } else if let Some(cv) = chunk_values.filter(|&cv| e.n_values as u64 > cv) {
                    let msg = format!(
                        "{id} chunk {}: {} values, over chunk_max_bytes ({cv} values)",
                        e.chunk_idx, e.n_values
                    );
                    report.push(INDEX, &at, Check::Chunking, msg);
                }
                *p = Progress {
                    next_chunk: e.chunk_idx.saturating_add(1),
                    next_offset: e.value_offset.saturating_add(i64::from(e.n_values)),
                    last_n: e.n_values,
                };
                let chunk_no = st.chunks.len() as u32;
                match shards.get(e.shard_path.as_str()) {
                    Some((n, groups)) => {
                        let in_range = usize::try_from(e.row_group)
                            .ok()
                            .and_then(|g| groups.get(g))
                            .is_some_and(|&rows| e.row_offset >= 0 && i64::from(e.row_offset) < rows);
                        if !in_range {
                            let msg = format!(
                                "{id} chunk {} points at {} row group {} row {}, which does not exist",
                                e.chunk_idx, e.shard_path, e.row_group, e.row_offset
                            );
                            report.push(INDEX, &at, Check::Pointer, msg);
                        } else if st.by_target.insert((*n, e.row_group as u32, e.row_offset as u32), chunk_no).is_some()
                        {
                            let msg = format!(
                                "{id} chunk {} points at {} row group {} row {}, as an earlier index row does",
                                e.chunk_idx, e.shard_path, e.row_group, e.row_offset
                            );
                            report.push(INDEX, &at, Check::Pointer, msg);
                        }
                    }
                    // a listed shard whose footer is unreadable has its own finding
                    None if listed.contains(&e.shard_path)
                        && matches!(kind_of(&e.shard_path), Some(Kind::Shard(_))) => {}
                    None => {
                        let msg = format!(
                            "{id} chunk {} points at {}, not a shard of this version",
                            e.chunk_idx, e.shard_path
                        );
                        report.push(INDEX, &at, Check::Pointer, msg);
                    }
                }
                if e.n_values > 0 {
                    st.channels
                        .entry((e.meta.spec_type.clone(), e.meta.channel.clone()))
                        .or_default()
                        .merge(&partial_of(e.n_values, e.min, e.max, e.mean, e.std));
                    st.values += e.n_values as u64;
                }
                st.chunks.push(ChunkRec {
                    series: s,
                    chunk_idx: e.chunk_idx,
                    n_values: e.n_values,
                    min: e.min,
                    max: e.max,
                    mean: e.mean,
                    std: e.std,
                    row,
                });
            }
            Ok(())
        });
        st.complete = complete;
        st.referenced = vec![false; st.series.len()];
        if complete {
            for (meta, p) in st.series.iter().zip(&st.progress) {
                if let Some(end) = meta.t_end_s {
                    let expected = ((end - meta.t_start_s) * meta.sampling_rate_hz).round_ties_even();
                    if expected != p.next_offset as f64 {
                        let msg = format!(
                            "{} values, but round((t_end_s - t_start_s) * sampling_rate_hz) = {expected}",
                            p.next_offset
                        );
                        self.report.push(INDEX, format!("series {}", meta.time_series_id), Check::Values, msg);
                    }
                }
            }
        }
        st
    }

    /// A row group whose values column chunk holds, by its footer, other
    /// than the level entries the index puts in it (values, plus one per empty
    /// chunk) is a finding and is not decoded: its pages, each within the
    /// budget, could together claim any count (docs/format.md §7 "Reading").
    fn values_chunks_held_to_the_index(&mut self, st: &IndexState) {
        let mut entries: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for (&(n, rg, _), &c) in &st.by_target {
            let n_values = st.chunks[c as usize].n_values;
            *entries.entry((n, rg)).or_default() += u64::from(n_values.unsigned_abs().max(1));
        }
        for f in &mut self.files {
            let Kind::Shard(n) = f.kind else { continue };
            for (rg, group) in f.meta.row_groups().iter().enumerate() {
                let Some(values) = group.columns().iter().find(|c| c.column_path().string() == VALUES_LEAF) else {
                    continue;
                };
                let want = entries.get(&(n, rg as u32)).copied().unwrap_or(0);
                if u64::try_from(values.num_values()).ok() != Some(want) {
                    let msg = format!(
                        "values column chunk holds {} values by the footer, the index puts {want} in it",
                        values.num_values()
                    );
                    self.report.push(&f.rel, format!("row group {rg}"), Check::Pointer, msg);
                    f.bad_row_groups.insert(rg);
                }
            }
        }
    }

    pub(super) fn shards(&mut self, st: &mut IndexState) -> ShardState {
        let batch_rows = self.chunk_values.map_or(1, |cv| (SHARD_BATCH_VALUES / cv.max(1) as usize).max(1));
        // a listed shard whose footer is unreadable has its own finding; its
        // values are unknown, so totals over the shards cannot be compared
        let listed = self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).count();
        let readable = self.files.iter().filter(|f| matches!(f.kind, Kind::Shard(_))).count();
        let mut out = ShardState { complete: listed == readable, values: 0 };
        let mut prev: Option<(String, String, String, i32)> = None;
        if !st.complete {
            self.report.skipped.push("shard rows without an index row: the index is unusable".into());
        } else {
            self.values_chunks_held_to_the_index(st);
        }
        for f in &self.files {
            let Kind::Shard(n) = f.kind else { continue };
            if !f.schema_ok {
                scan(&mut self.report, f, batch_rows, |_, _, _| Ok(()));
                self.report
                    .skipped
                    .push(format!("pointer and statistics checks of {}: its schema is not the format's", f.rel));
                out.complete = false;
                continue;
            }
            let seen = &mut self.seen;
            let done = scan(&mut self.report, f, batch_rows, |report, pos, batch| {
                let p = f.path.as_path();
                let strs = |name: &str| {
                    parquet_read::req(p, parquet_read::strings(p, parquet_read::col(p, batch, name)?)?, name)
                };
                let (ids, spec, chan) = (strs("time_series_id")?, strs("spec_type")?, strs("channel")?);
                let idx = parquet_read::i32s(p, batch, "chunk_idx")?;
                let (ranges, values) = parquet_read::lists(p, batch, "values")?;
                let values = values
                    .as_primitive_opt::<Float32Type>()
                    .ok_or_else(|| Error::Corrupt { path: p.into(), reason: "values are not float32".into() })?;
                for k in 0..batch.num_rows() {
                    let row = pos.row_in_rg + k;
                    let at = format!("row group {}, row {row}", pos.rg);
                    let (id, chunk_idx) = (&ids[k], idx[k].unwrap_or(-1));
                    let key = (spec[k].clone(), chan[k].clone(), id.clone(), chunk_idx);
                    if let Some(prev) = prev.as_ref().filter(|prev| **prev >= key) {
                        let msg = format!("{key:?} does not sort after the previous row's {prev:?} (spec_type, channel, time_series_id, chunk_idx)");
                        report.push(&f.rel, &at, Check::Order, msg);
                    }
                    prev = Some(key);
                    saw(seen, IdSpace::TimeSeries, id);
                    let vals = ranges[k].clone().map_or(&[][..], |r| &values.values()[r]);
                    report.values_checked += vals.len() as u64;
                    out.values += vals.len() as u64;
                    let partial = Partial::of(vals);
                    if vals.is_empty() {
                        report.push(&f.rel, &at, Check::Values, format!("{id} chunk {chunk_idx} holds no values"));
                    } else if !partial.mean.is_finite() {
                        let i = vals.iter().position(|v| !v.is_finite()).unwrap_or(0);
                        let msg = format!("{id} chunk {chunk_idx}: value {i} is {}, not finite", vals[i]);
                        report.push(&f.rel, &at, Check::Values, msg);
                    }
                    let Some(&c) = st.by_target.get(&(n, pos.rg as u32, row as u32)) else {
                        if st.complete {
                            let msg = format!("{id} chunk {chunk_idx} is not pointed at by any row of {INDEX}");
                            report.push(&f.rel, &at, Check::Pointer, msg);
                        }
                        continue;
                    };
                    let ch = &st.chunks[c as usize];
                    let meta = &st.series[ch.series as usize];
                    let index_at = format!("row {}", ch.row);
                    if meta.time_series_id != *id || ch.chunk_idx != chunk_idx {
                        let msg = format!(
                            "{} chunk {} points at {} {at}, which holds {id} chunk {chunk_idx}",
                            meta.time_series_id, ch.chunk_idx, f.rel
                        );
                        report.push(INDEX, index_at, Check::Pointer, msg);
                        continue;
                    }
                    if meta.spec_type != spec[k] || meta.channel != chan[k] {
                        let msg = format!(
                            "{id}: spec_type/channel {}/{} in the index, {}/{} in {} {at}",
                            meta.spec_type, meta.channel, spec[k], chan[k], f.rel
                        );
                        report.push(INDEX, &index_at, Check::Pointer, msg);
                    }
                    if usize::try_from(ch.n_values).ok() != Some(vals.len()) {
                        let msg =
                            format!("{id} chunk {chunk_idx}: n_values {}, the chunk holds {}", ch.n_values, vals.len());
                        report.push(INDEX, &index_at, Check::Statistics, msg);
                    } else if !vals.is_empty() && partial.mean.is_finite() {
                        let stored = partial_of(ch.n_values, ch.min, ch.max, ch.mean, ch.std);
                        for (stat, s, v, ok) in [
                            ("min", stored.min, partial.min, stored.min == partial.min),
                            ("max", stored.max, partial.max, stored.max == partial.max),
                            ("mean", stored.mean, partial.mean, close(stored.mean, partial.mean)),
                            ("std", ch.std, partial.std(), close(ch.std, partial.std())),
                        ] {
                            if !ok {
                                let msg = format!("{id} chunk {chunk_idx}: {stat} {s}, the values give {v}");
                                report.push(INDEX, &index_at, Check::Statistics, msg);
                            }
                        }
                    }
                }
                Ok(())
            });
            out.complete &= done;
        }
        out
    }
}
