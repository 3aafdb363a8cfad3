//! Chunk, row-group, shard and page layout of written versions.
//!
//! The expected layout is computed here by [`Planner`], a plain re-implementation
//! of the rules of `src/layout.rs` and FORMAT-BRIEF §5 (chunk k covers values
//! `[k*C, (k+1)*C)`; before a chunk, cut a row group past its target that the
//! chunk would take past its cap; after a chunk, cut a row group past its target
//! whose key hash has its two low bits clear; close a shard after the row group
//! that takes it past its target), and compared with what the files hold: row
//! groups per shard and their rows read back through parquet, and the index
//! pointers. One literal expectation pins the cut rule itself.

mod common;

use std::path::Path;

use arrow_array::types::Int32Type;
use timef::layout::{key_hash, values_pages};
use timef::reader::Version;
use timef::{Sample, SeriesMeta, WriterOptions};

use common::*;

/// One chunk: (time_series_id, chunk_idx).
type Key = (String, i32);
/// Shards, each a list of row groups, each a list of chunks in row order.
type Layout = Vec<Vec<Vec<Key>>>;

/// Which rule closed a row group.
#[derive(Debug, Default)]
struct Cuts {
    by_hash: usize,
    by_cap: usize,
}

/// The cut rules, written out the straightforward way.
struct Planner {
    target: u64,
    cap: u64,
    shard_target: u64,
    chunk_values: usize,
    layout: Layout,
    shard: Vec<Vec<Key>>,
    shard_bytes: u64,
    group: Vec<Key>,
    group_bytes: u64,
    cuts: Cuts,
}

impl Planner {
    fn new(o: &WriterOptions) -> Self {
        Planner {
            target: o.row_group_target_bytes(),
            cap: o.row_group_max_bytes(),
            shard_target: o.shard_target_bytes(),
            chunk_values: o.chunk_max_values(),
            layout: Vec::new(),
            shard: Vec::new(),
            shard_bytes: 0,
            group: Vec::new(),
            group_bytes: 0,
            cuts: Cuts::default(),
        }
    }

    fn close_group(&mut self) {
        if self.group.is_empty() {
            return;
        }
        self.shard.push(std::mem::take(&mut self.group));
        self.shard_bytes += std::mem::take(&mut self.group_bytes);
        if self.shard_bytes > self.shard_target {
            self.layout.push(std::mem::take(&mut self.shard));
            self.shard_bytes = 0;
        }
    }

    /// A series of `n` values, in stream order.
    fn series(&mut self, id: &str, n: usize) {
        for (k, start) in (0..n).step_by(self.chunk_values).enumerate() {
            let bytes = 4 * (n - start).min(self.chunk_values) as u64;
            if self.group_bytes > self.target && self.group_bytes + bytes > self.cap {
                self.cuts.by_cap += 1;
                self.close_group();
            }
            self.group.push((id.to_string(), k as i32));
            self.group_bytes += bytes;
            if self.group_bytes > self.target && key_hash(id, k as u32) & 0b11 == 0 {
                self.cuts.by_hash += 1;
                self.close_group();
            }
        }
    }

    fn finish(mut self) -> (Layout, Cuts) {
        self.close_group();
        if !self.shard.is_empty() {
            self.layout.push(self.shard);
        }
        (self.layout, self.cuts)
    }
}

/// The expected layout of `series` given as (spec_type, channel, id, n_values) in any order.
fn plan(o: &WriterOptions, series: &[(&str, &str, String, usize)]) -> (Layout, Cuts) {
    let mut sorted: Vec<_> = series.iter().collect();
    sorted.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
    let mut p = Planner::new(o);
    for (_, _, id, n) in sorted {
        p.series(id, *n);
    }
    p.finish()
}

/// The series of [`common::ecg_dataset`] with `samples` samples.
fn ecg_series(samples: usize) -> Vec<(&'static str, &'static str, String, usize)> {
    (0..samples).flat_map(|i| ["I", "II"].map(|ch| ("ecg", ch, format!("s{i:03}/{ch}"), 300 + 97 * i))).collect()
}

/// The layout stored in `dir`: shard files in name order, their row groups
/// from the footer, the rows' keys read back through arrow.
fn stored_layout(dir: &Path) -> Layout {
    let mut shards: Vec<String> = file_bytes(dir).into_keys().filter(|p| p.starts_with("time_series/")).collect();
    shards.sort();
    let want: Vec<String> = (0..shards.len()).map(|n| format!("time_series/shard-{n:05}.parquet")).collect();
    assert_eq!(shards, want, "shards are numbered densely from 0");
    shards
        .iter()
        .map(|rel| {
            let path = dir.join(rel);
            let batch = read_parquet(&path);
            let ids = required_strings(column(&batch, "time_series_id"));
            let chunks = primitives::<Int32Type>(column(&batch, "chunk_idx"));
            let mut keys = ids.into_iter().zip(chunks.into_iter().map(Option::unwrap));
            parquet_metadata(&path)
                .row_groups()
                .iter()
                .map(|rg| keys.by_ref().take(rg.num_rows() as usize).collect())
                .collect()
        })
        .collect()
}

/// Asserts that every index row points at its chunk's position in `layout`.
fn assert_index_matches(dir: &Path, layout: &Layout) {
    let mut want = Vec::new();
    for (s, shard) in layout.iter().enumerate() {
        for (g, group) in shard.iter().enumerate() {
            for (r, key) in group.iter().enumerate() {
                want.push((key.clone(), format!("time_series/shard-{s:05}.parquet"), g as i32, r as i32));
            }
        }
    }
    let v = Version::open(dir).unwrap();
    let got: Vec<_> = v
        .index()
        .unwrap()
        .iter()
        .map(|e| ((e.meta.time_series_id.clone(), e.chunk_idx), e.shard_path.clone(), e.row_group, e.row_offset))
        .collect();
    assert_eq!(got, want);
}

/// Value bytes of each row group of each shard, from the footers.
fn row_group_bytes(dir: &Path, shards: usize) -> Vec<Vec<u64>> {
    (0..shards)
        .map(|s| {
            let m = parquet_metadata(&dir.join(format!("time_series/shard-{s:05}.parquet")));
            // leaf 4 is values.list.element; every list is non-empty, so values == leaf values
            m.row_groups().iter().map(|rg| 4 * rg.column(4).num_values() as u64).collect()
        })
        .collect()
}

/// The structural invariants of FORMAT-BRIEF §5 on the stored files.
fn assert_invariants(dir: &Path, o: &WriterOptions, layout: &Layout) {
    let bytes = row_group_bytes(dir, layout.len());
    let groups: Vec<u64> = bytes.iter().flatten().copied().collect();
    assert!(bytes.iter().all(|s| !s.is_empty()), "an empty shard: {bytes:?}");
    assert!(layout.iter().flatten().all(|g| !g.is_empty()), "an empty row group");
    assert!(groups.iter().all(|&b| b > 0 && b <= o.row_group_max_bytes()), "a row group over its cap: {bytes:?}");
    // every row group but the very last is past the target: a shard only closes
    // after a row group, so this holds for the non-last row groups of each shard too
    assert!(groups[..groups.len() - 1].iter().all(|&b| b > o.row_group_target_bytes()), "{bytes:?}");
    let shard_totals: Vec<u64> = bytes.iter().map(|s| s.iter().sum()).collect();
    assert!(shard_totals.iter().all(|&t| t <= o.shard_max_bytes()), "a shard over its cap: {shard_totals:?}");
    assert!(shard_totals[..shard_totals.len() - 1].iter().all(|&t| t > o.shard_target_bytes()), "{shard_totals:?}");
    // a row group never spans shards: each shard's rows are exactly its row groups'
    for (s, shard) in layout.iter().enumerate() {
        let rows = parquet_metadata(&dir.join(format!("time_series/shard-{s:05}.parquet"))).file_metadata().num_rows();
        assert_eq!(rows as usize, shard.iter().map(Vec::len).sum::<usize>());
    }
}

#[test]
fn ecg_layout_follows_the_cut_rules() {
    let o = small_options();
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), ecg_dataset("layout", "1", 12), o);
    let (want, cuts) = plan(&o, &ecg_series(12));
    // the dataset exercises both row-group rules and shard rotation
    assert!(cuts.by_hash > 0 && cuts.by_cap > 0, "{cuts:?}");
    assert!(want.len() >= 3 && want[..want.len() - 1].iter().all(|s| s.len() >= 2), "{want:?}");
    let got = stored_layout(&dir);
    assert_eq!(got, want);
    assert_index_matches(&dir, &want);
    assert_invariants(&dir, &o, &want);
    assert_conforming(&dir);
}

#[test]
fn literal_layout_pins_the_cut_rule() {
    // rows (chunks) per row group, per shard, of ecg_dataset("layout", "1", 12)
    // with small_options: a change of the chunking, the key hash or the cut rules
    // shows up here even if the planner above were changed in step with it
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), ecg_dataset("layout", "1", 12), small_options());
    let rows: Vec<Vec<usize>> = (0..Version::open(&dir).unwrap().manifest().counts.shards as usize)
        .map(|s| {
            let m = parquet_metadata(&dir.join(format!("time_series/shard-{s:05}.parquet")));
            m.row_groups().iter().map(|rg| rg.num_rows() as usize).collect()
        })
        .collect();
    assert_eq!(rows, LITERAL_ROWS);
}

const LITERAL_ROWS: &[&[usize]] = &[&[6, 6, 8], &[6, 5, 8], &[5, 6, 5, 6], &[8, 8, 6], &[7]];

#[test]
fn a_series_bigger_than_a_shard_spans_shards() {
    let o = small_options();
    // 10 000 values = 40 000 bytes: more than the shard target (16 384) and its cap (24 576)
    let n = 10_000;
    let mut d = dataset_with_source("big", "1");
    let v = values(7, n);
    d.add_series(SeriesMeta::new("huge", "ecg", "I", 500.0), Box::new(move || Ok(v.into()))).unwrap();
    add_series(&mut d, "tiny", "acc", "x", 50.0, 8, 10);
    d.add_sample(Sample {
        sample_id: "s".into(),
        source_id: "src".into(),
        series: main_refs(&["huge", "tiny"]),
        ..Default::default()
    })
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, o);

    let (want, _) = plan(&o, &[("ecg", "I", "huge".into(), n), ("acc", "x", "tiny".into(), 10)]);
    assert!(want.len() >= 2, "{want:?}");
    // spec type "acc" sorts first, so the tiny series opens the first shard
    assert_eq!(want[0][0][0], ("tiny".to_string(), 0));
    let got = stored_layout(&dir);
    assert_eq!(got, want);
    assert_index_matches(&dir, &want);
    assert_invariants(&dir, &o, &want);
    let version = Version::open(&dir).unwrap();
    assert_eq!(version.manifest().counts.chunks, 40 + 1);
    assert_eq!(&*version.read_series("huge").unwrap(), values(7, n).as_slice());
    assert_conforming(&dir);
}

#[test]
fn values_pages_are_row_aligned_content_defined_cuts() {
    // chunks of 32 KiB so that row groups of 2 MiB hold many pages of 256 KiB to 1 MiB
    let o = WriterOptions::builder()
        .chunk_max_bytes(32 << 10)
        .row_group_target_bytes(2 << 20)
        .shard_target_bytes(8 << 20)
        .try_build()
        .unwrap();
    let mut d = dataset_with_source("pages", "1");
    let series = [("a", 600_000), ("b", 450_000)];
    for (i, (id, n)) in series.iter().enumerate() {
        add_series(&mut d, id, "ecg", "I", 500.0, i as u32, *n);
    }
    d.add_sample(Sample {
        sample_id: "s".into(),
        source_id: "src".into(),
        series: main_refs(&series.map(|(id, _)| id)),
        ..Default::default()
    })
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, o);

    let layout = stored_layout(&dir);
    let (want, _) = plan(&o, &series.map(|(id, n)| ("ecg", "I", id.to_string(), n)));
    assert_eq!(layout, want);
    let lengths = |id: &str| series.iter().find(|s| s.0 == id).unwrap().1;
    let mut multi_page_groups = 0;
    for (s, shard) in layout.iter().enumerate() {
        let m = parquet_metadata(&dir.join(format!("time_series/shard-{s:05}.parquet")));
        for (g, group) in shard.iter().enumerate() {
            let index = m.page_index_for_row_group(g);
            let page_rows = |leaf: usize| -> Vec<usize> {
                let starts: Vec<usize> =
                    index.page_locations(leaf).unwrap().iter().map(|p| p.first_row_index as usize).collect();
                starts.windows(2).map(|w| w[1] - w[0]).chain([group.len() - starts.last().unwrap()]).collect()
            };
            let rows = group.iter().map(|(id, k)| {
                let n = (lengths(id) - *k as usize * o.chunk_max_values()).min(o.chunk_max_values());
                (4 * n as u64, key_hash(id, *k as u32))
            });
            assert_eq!(page_rows(4), values_pages(rows), "values pages of shard {s} row group {g}");
            for leaf in 0..4 {
                assert_eq!(page_rows(leaf), [group.len()], "leaf {leaf} of shard {s} row group {g} is one page");
            }
            multi_page_groups += usize::from(page_rows(4).len() > 1);
        }
    }
    assert!(multi_page_groups > 0, "no row group had more than one values page");
    assert_conforming(&dir);
}

/// The small-table page rule of `docs/format.md` §4, written out: a page is cut
/// after a row once it holds at least 256 KiB of the leaf's bytes and the row's
/// key hash has bits 16-19 clear, or once it holds 1 MiB.
fn table_pages(rows: impl Iterator<Item = (u64, u64)>) -> Vec<usize> {
    let (mut pages, mut n, mut bytes) = (Vec::new(), 0, 0);
    for (b, hash) in rows {
        n += 1;
        bytes += b;
        if (bytes >= 256 << 10 && hash & (0b1111 << 16) == 0) || bytes >= 1 << 20 {
            pages.push(n);
            (n, bytes) = (0, 0);
        }
    }
    if n > 0 {
        pages.push(n);
    }
    pages
}

#[test]
fn small_table_pages_are_cut_per_column_by_its_own_bytes_at_key_hash_rows() {
    // 60 000 samples of one single-value series: ids of 13 characters (17 plain
    // bytes a row) fill several 256 KiB pages; narrow columns fill fewer
    let n = 60_000;
    let mut d = dataset_with_source("pages", "1");
    let ids: Vec<String> = (0..n).map(|i| format!("sample-{i:06}")).collect();
    for (i, id) in ids.iter().enumerate() {
        add_series(&mut d, id, "ecg", "I", 500.0, i as u32, 1);
        d.add_sample(Sample {
            sample_id: id.clone(),
            source_id: "src".into(),
            series: main_refs(&[id]),
            ..Default::default()
        })
        .unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, WriterOptions::default());
    let page_rows = |file: &str, leaf: usize| -> Vec<usize> {
        let m = parquet_metadata(&dir.join(file));
        let starts: Vec<usize> = m
            .page_index_for_row_group(0)
            .page_locations(leaf)
            .unwrap()
            .iter()
            .map(|p| p.first_row_index as usize)
            .collect();
        starts.windows(2).map(|w| w[1] - w[0]).chain([n - starts.last().unwrap()]).collect()
    };
    let hashes: Vec<u64> = ids.iter().map(|id| key_hash(id, 0)).collect();
    let by = |row_bytes: u64| table_pages(hashes.iter().map(|h| (row_bytes, *h)));
    // samples.parquet: sample_id (4 + 13), source_id (4 + 3), subject_id, t_start_s and
    // t_end_s (null: 1), series ids (4 + 13), views (a dictionary: 1), metadata keys/values (null)
    let samples = [by(17), by(7), by(1), by(1), by(1), by(17), by(1), by(1), by(1)];
    for (leaf, want) in samples.iter().enumerate() {
        assert_eq!(page_rows("samples.parquet", leaf), *want, "samples.parquet leaf {leaf}");
    }
    assert_eq!(samples[0].len(), 4, "sample_id pages: {:?}", samples[0]);
    assert_eq!(samples[1].len(), 2, "source_id pages: {:?}", samples[1]);
    assert_eq!(samples[2], [n], "60 000 nulls are one page");
    // time_series_index.parquet, one row per series in the same order: id, chunk_idx,
    // spec_type, channel, units (dictionaries: 1), rate, t_start, t_end (null), value_offset,
    // n_values, shard_path (a dictionary), row_group, row_offset, min, max, mean, std
    let index = [17, 4, 1, 1, 1, 8, 8, 1, 8, 4, 1, 4, 4, 4, 4, 8, 8];
    for (leaf, bytes) in index.iter().enumerate() {
        assert_eq!(page_rows("time_series_index.parquet", leaf), by(*bytes), "index leaf {leaf}");
    }
    assert_conforming(&dir);
}

#[test]
fn an_index_of_more_chunks_than_memory_holds_is_spilled_and_reads_back_exactly() {
    // the writer holds 8 full blocks of 2^14 index rows in memory besides the
    // block being filled, and spills past them (src/writer/index_rows.rs):
    // 150 000 tiny series and 3 of 4 chunks each spill, with a part block
    // after the last full one, across several shards and row groups
    let (n, long, chunk_values) = (150_000, 3, 256);
    let rows = n + 4 * long;
    assert!(rows > 9 << 14 && rows % (1 << 14) != 0);
    let o = WriterOptions::builder()
        .chunk_max_bytes(4 * chunk_values as u64)
        .row_group_target_bytes(64 << 10)
        .shard_target_bytes(256 << 10)
        .try_build()
        .unwrap();
    let mut d = dataset_with_source("many", "1");
    let mut series = Vec::new();
    for i in 0..n + long {
        // tiny series sort first (spec type "acc" before "ecg")
        let (id, spec, ch, len) =
            if i < n { (format!("t{i:06}"), "acc", "x", 2) } else { (format!("u{i}"), "ecg", "I", 4 * chunk_values) };
        add_series(&mut d, &id, spec, ch, 50.0, i as u32, len);
        let sample =
            Sample { sample_id: id.clone(), source_id: "src".into(), series: main_refs(&[&id]), ..Default::default() };
        d.add_sample(sample).unwrap();
        series.push((spec, ch, id, len));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), d, o);
    let (want, _) = plan(&o, &series);
    assert!(want.len() >= 3 && want.iter().all(|s| s.len() >= 2), "{} shards", want.len());
    assert_eq!(stored_layout(&dir), want);
    // every row's series, chunk, shard, row group and row offset
    assert_index_matches(&dir, &want);
    // and every row's values and statistics
    let version = Version::open(&dir).unwrap();
    let index = version.index().unwrap();
    assert_eq!(index.len(), rows);
    for (r, e) in index.iter().enumerate() {
        let (seed, chunk) = if r < n { (r, 0) } else { (n + (r - n) / 4, (r - n) % 4) };
        let all = values(seed as u32, series[seed].3);
        let v = &all[chunk * chunk_values..(chunk * chunk_values + chunk_values).min(all.len())];
        let (min, max) =
            (v.iter().copied().fold(f32::INFINITY, f32::min), v.iter().copied().fold(f32::NEG_INFINITY, f32::max));
        let at = (e.chunk_idx as usize, e.value_offset as usize, e.n_values as usize, e.min, e.max);
        assert_eq!(at, (chunk, chunk * chunk_values, v.len(), min, max), "row {r}");
        let wide: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        if let [a, b] = wide[..] {
            assert_eq!((e.mean, e.std), ((a + b) / 2.0, (b - a).abs() / 2.0), "row {r}");
        } else {
            let mean = wide.iter().sum::<f64>() / wide.len() as f64;
            let std = (wide.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / wide.len() as f64).sqrt();
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1.0);
            assert!(close(e.mean, mean) && close(e.std, std), "row {r}: {e:?}, want mean {mean} std {std}");
        }
    }
}
