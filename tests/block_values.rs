//! The values a window read holds (`BlockValues`: series used in the row
//! groups where they were decoded, or copied when they span row groups or sit
//! in a row group mostly of other series): every series `read_blocks(..).iter()` and
//! `get` hand out, and every window of `Windows` and `block_windows`, equals
//! its `read_series` slice, over layouts where series span 1, 2, 3 or many row
//! groups, row groups hold many series, selections leave series of a row group
//! unwanted, stacked channels lie far apart in index order, short series are
//! padded, reads take many blocks, and the pool is reused across epochs.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::*;
use timef::reader::Version;
use timef::scan::Selection;
use timef::windows::{Share, WindowOptions, WindowPlan};
use timef::*;

const CHANNELS: [&str; 3] = ["I", "II", "III"];
/// Values of each sample's series: around chunk and row-group edges, tiny and long.
const LENGTHS: [usize; 24] =
    [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 700, 3];

/// Value `k` of series number `seed`: unique over the dataset, exact in f32.
fn value(seed: usize, k: usize) -> f32 {
    (seed * 10_000 + k) as f32
}

/// Samples `s000..`, each with the channels I, II, III of one length; series
/// ids `{channel}/{sample}` so a sample's channels are far apart in index order.
fn dataset() -> TimeFDataset {
    let mut d = dataset_with_source("bv", "1");
    let mut even = Vec::new();
    for (i, &n) in LENGTHS.iter().enumerate() {
        let sid = format!("s{i:03}");
        let mut refs = Vec::new();
        for (c, ch) in CHANNELS.iter().enumerate() {
            let id = format!("{ch}/{sid}");
            let seed = i * 3 + c + 1;
            let v: Vec<f32> = (0..n).map(|k| value(seed, k)).collect();
            d.add_series(SeriesMeta::new(&id, "ecg", *ch, 100.0), Box::new(move || Ok(v.into()))).unwrap();
            refs.push(SeriesRef { time_series_id: id, view: "main".into() });
        }
        d.add_sample(Sample { sample_id: sid.clone(), source_id: "src".into(), series: refs, ..Default::default() })
            .unwrap();
        if i % 2 == 0 {
            even.push(sid);
        }
    }
    d.add_task("t", Task { split: Some("train".into()), ..Task::new("t-train", TaskType::Classification, even) })
        .unwrap();
    d
}

/// `(chunk_max_bytes, row_group_target_bytes, shard_target_bytes)`: series of 1..7
/// chunks a row group, row groups of many tiny series, one row group a shard.
const LAYOUTS: [(u64, u64, u64); 5] =
    [(16, 64, 1 << 20), (16, 16, 256), (64, 4096, 1 << 20), (1024, 4096, 16384), (4, 4, 64)];

/// The writer options of a layout: chunk, row group and shard sizes in bytes.
fn layout_options(chunk: u64, rg: u64, shard: u64) -> WriterOptions {
    WriterOptions::builder()
        .chunk_max_bytes(chunk)
        .row_group_target_bytes(rg)
        .shard_target_bytes(shard)
        .try_build()
        .unwrap()
}

fn versions() -> Vec<(tempfile::TempDir, Version)> {
    LAYOUTS
        .iter()
        .map(|&(chunk, rg, shard)| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = commit(tmp.path(), dataset(), layout_options(chunk, rg, shard));
            let v = Version::open(&dir).unwrap();
            (tmp, v)
        })
        .collect()
}

fn selections() -> Vec<Selection> {
    vec![
        Selection::all(),
        Selection::all().channels(["II"]),
        Selection::all().channels(["III", "I"]),
        Selection::all().samples(["s001", "s020", "s021", "s005", "s016"]),
        Selection::all().task("t", Some("train")),
    ]
}

struct Truth(BTreeMap<String, Vec<f32>>);

impl Truth {
    /// `read_series` of every series, itself checked against the values written.
    fn of(v: &Version) -> Truth {
        let truth: BTreeMap<String, Vec<f32>> = v
            .series()
            .unwrap()
            .into_iter()
            .map(|m| (m.time_series_id.clone(), v.read_series(&m.time_series_id).unwrap().to_vec()))
            .collect();
        for (id, got) in &truth {
            let (ch, sample) = id.split_once('/').unwrap();
            let i: usize = sample[1..].parse().unwrap();
            let seed = i * 3 + CHANNELS.iter().position(|c| *c == ch).unwrap() + 1;
            let want: Vec<f32> = (0..LENGTHS[i]).map(|k| value(seed, k)).collect();
            assert_eq!(got, &want, "read_series {id}");
        }
        assert_eq!(truth.len(), LENGTHS.len() * CHANNELS.len());
        Truth(truth)
    }
    fn get(&self, id: &str) -> &[f32] {
        &self.0[id]
    }
}

/// Every block set's `iter()` and `get` are exactly its series, each equal to `read_series`.
fn check_read_blocks(truth: &Truth, p: &WindowPlan, what: &str) {
    let b = p.blocks();
    let n = b.len();
    let mut sets: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    sets.extend((1..n).map(|i| vec![i - 1, i]));
    sets.extend((2..n).map(|i| vec![i - 2, i - 1, i]));
    sets.push((0..n).collect());
    sets.push((0..n).step_by(2).collect());
    sets.push((0..n).rev().step_by(3).collect());
    if n > 1 {
        sets.push(vec![n - 1, 0]);
    }
    for set in sets {
        for threads in [1, 3] {
            let values = b.read_blocks(&set, threads).unwrap();
            let want: BTreeSet<usize> =
                set.iter().flat_map(|&k| b.block_stacks(k).flat_map(|s| b.stack_series(s).iter().copied())).collect();
            let got: Vec<usize> = values.iter().map(|(s, _)| s).collect();
            assert_eq!(got, want.iter().copied().collect::<Vec<_>>(), "{what}: series of blocks {set:?}");
            for (s, vals) in values.iter() {
                let id = &b.series()[s].time_series_id;
                assert_eq!(vals, truth.get(id), "{what}: series {id} of blocks {set:?} (threads {threads})");
                assert_eq!(values.get(s), Some(vals));
                assert_eq!(vals.len() as u64, b.series_len(s));
            }
            for s in 0..b.series().len() {
                if !want.contains(&s) {
                    assert!(values.get(s).is_none(), "{what}: series {s} not of blocks {set:?}");
                }
            }
        }
    }
}

/// Checks each window of `batch` against `read_series`; returns `(stack, start)` of each.
fn check_batch(truth: &Truth, p: &WindowPlan, b: &windows::WindowBatch, what: &str) -> Vec<(usize, i64)> {
    let o = p.options();
    let (context, pred) = (o.context_length, o.prediction_length);
    let mut row = 0;
    let mut out = Vec::new();
    for i in 0..b.len() {
        for &s in p.blocks().stack_series(b.stack[i]) {
            let all = truth.get(&p.blocks().series()[s].time_series_id);
            let pad = b.padding[i] as usize;
            let from = b.start[i].max(0) as usize;
            let mut want = vec![0f32; pad];
            want.extend_from_slice(&all[from..from + o.window_length() - pad]);
            assert_eq!(&b.past_values[row * context..(row + 1) * context], &want[..context], "{what}");
            assert_eq!(&b.future_values[row * pred..(row + 1) * pred], &want[context..], "{what}");
            row += 1;
        }
        out.push((b.stack[i], b.start[i]));
    }
    assert_eq!((b.past_values.len(), b.future_values.len()), (row * context, row * pred), "{what}");
    out
}

fn check_windows(truth: &Truth, p: &Arc<WindowPlan>, what: &str) {
    // the same plan (one pool) over several epochs and shares: buffers reused
    for epoch in 0..3 {
        for consumers in [1, 2] {
            let mut all = Vec::new();
            for c in 0..consumers {
                let share = Share { consumer: c, consumers, ..Share::all() };
                let mut got = Vec::new();
                let mut it = p.windows(epoch, &share).unwrap();
                while let Some(b) = it.next_batch(5 + epoch as usize) {
                    got.extend(check_batch(truth, p, &b.unwrap(), what));
                }
                assert_eq!(got, p.order_of(epoch, &share).unwrap(), "{what}: epoch {epoch} share {c}/{consumers}");
                all.extend(got);
            }
            assert_eq!(all.len() as u64, p.len(), "{what}");
        }
    }
    let mut total = 0;
    for block in 0..p.blocks().len() {
        total += check_batch(truth, p, &p.block_windows(block).unwrap(), what).len();
    }
    assert_eq!(total as u64, p.len(), "{what}: block_windows");
}

fn all_options() -> Vec<WindowOptions> {
    let base = |c: usize, f: usize| WindowOptions { threads: 2, ..WindowOptions::new(c, f) };
    vec![
        WindowOptions { stride: Some(1), shuffle_buffer_row_groups: 1, ..base(3, 2) },
        WindowOptions { pad: true, shuffle_buffer_row_groups: 2, ..base(6, 4) },
        WindowOptions { pad: true, stride: Some(3), shuffle: false, shuffle_buffer_row_groups: 5, ..base(20, 13) },
        WindowOptions { stack_channels: true, pad: true, stride: Some(2), shuffle_buffer_row_groups: 3, ..base(4, 3) },
        WindowOptions { stack_channels: true, pad: true, shuffle_buffer_row_groups: 1, ..base(40, 30) },
    ]
}

#[test]
fn block_values_and_windows_equal_read_series_over_layouts_selections_and_epochs() {
    for (l, (_tmp, v)) in versions().iter().enumerate() {
        let truth = Truth::of(v);
        for (s, selection) in selections().iter().enumerate() {
            for (o, options) in all_options().into_iter().enumerate() {
                let what = format!("layout {:?} selection {s} options {o}", LAYOUTS[l]);
                let p = Arc::new(WindowPlan::new(v, selection, options).unwrap());
                if o == 0 {
                    check_read_blocks(&truth, &p, &what);
                }
                if o == 3 {
                    check_read_blocks(&truth, &p, &what);
                }
                check_windows(&truth, &p, &what);
            }
        }
    }
}

/// The layouts hold what the review means to cover: series over 3+ row
/// groups, row groups of many series, a series continued at the start of a
/// row group that then holds others, and versions of many shards.
#[test]
fn the_layouts_cover_spanning_series_and_row_groups_of_many_series() {
    use arrow_array::Array;
    for (l, (_tmp, v)) in versions().iter().enumerate() {
        let p = WindowPlan::new(v, &Selection::all(), WindowOptions::new(1, 0)).unwrap();
        let b = p.blocks();
        let mut spans: BTreeMap<String, usize> = BTreeMap::new();
        let (mut most, mut continued_then_others) = (0, 0);
        for i in 0..b.row_groups() {
            let mut ids: Vec<(String, i32)> = Vec::new();
            for batch in b.read_row_group(i).unwrap() {
                let id = batch.column_by_name("time_series_id").unwrap();
                let id = id.as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
                let c = batch.column_by_name("chunk_idx").unwrap();
                let c = c.as_any().downcast_ref::<arrow_array::Int32Array>().unwrap();
                ids.extend((0..id.len()).map(|r| (id.value(r).to_string(), c.value(r))));
            }
            let series: BTreeSet<&String> = ids.iter().map(|(s, _)| s).collect();
            for s in &series {
                *spans.entry(s.to_string()).or_default() += 1;
            }
            most = most.max(series.len());
            if ids.first().is_some_and(|(_, c)| *c > 0) && series.len() > 1 {
                continued_then_others += 1;
            }
        }
        let shards = tree(v.dir()).iter().filter(|f| f.ends_with(".parquet") && f.contains("shard")).count();
        eprintln!(
            "layout {:?}: {} row groups, {} blocks, most series a row group {most}, longest span {} row groups, \
             {continued_then_others} row groups continue a series then hold others, {shards} shard files",
            LAYOUTS[l],
            b.row_groups(),
            b.len(),
            spans.values().max().unwrap()
        );
    }
}

/// On an object store (buffers' row groups fetched ahead, decoded from memory) too.
#[test]
fn on_an_object_store_too() {
    for (l, &(chunk, rg, shard)) in LAYOUTS.iter().enumerate().take(2) {
        let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let root = timef::storage::Location::from_object_store(store, "memory://bv", "root").unwrap();
        timef::writer::TimeFWriter::at(root.clone(), layout_options(chunk, rg, shard))
            .write(dataset())
            .unwrap()
            .commit()
            .unwrap();
        let v = Version::open_at(root.join("bv/1")).unwrap();
        let truth = Truth::of(&v);
        for (o, options) in all_options().into_iter().enumerate() {
            let p = Arc::new(WindowPlan::new(&v, &Selection::all().channels(["I", "III"]), options).unwrap());
            check_windows(&truth, &p, &format!("store layout {l} options {o}"));
        }
    }
}
