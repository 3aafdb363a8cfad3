//! Training windows (`timef::windows`, docs/format.md §11) on a version of 40
//! series of 300 to 2186 values written in 1 KiB chunks and 4 KiB row groups
//! (series span row groups): every window equals its `read_series` slice, the
//! set of windows is exactly the expected one, the shuffle is a pure function
//! of the seed and epoch, consumers split it exactly once whatever their
//! number, and a resume (also with another number of consumers) continues it.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use timef::reader::Version;
use timef::scan::Selection;
use timef::windows::{merge_consumed, Share, SplitMix64, WindowOptions, WindowPlan};
use timef::Error;

const SAMPLES: usize = 20;

fn version() -> (tempfile::TempDir, Version) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), ecg_dataset("win", "1", SAMPLES), small_options());
    let v = Version::open(&dir).unwrap();
    (tmp, v)
}

fn plan(v: &Version, options: WindowOptions) -> Arc<WindowPlan> {
    Arc::new(WindowPlan::new(v, &Selection::all(), options).unwrap())
}

fn options(context: usize, prediction: usize, shuffle: bool) -> WindowOptions {
    WindowOptions { shuffle, shuffle_buffer_row_groups: 3, ..WindowOptions::new(context, prediction) }
}

/// Every window `(id, start)` of the version in index order, computed here from the series lengths.
fn expected(v: &Version, length: usize, stride: usize) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for meta in v.series().unwrap() {
        let n = v.read_series(&meta.time_series_id).unwrap().len();
        let mut s = 0;
        while s + length <= n {
            out.push((meta.time_series_id.clone(), s as i64));
            s += stride;
        }
    }
    out
}

fn named(plan: &WindowPlan, order: Vec<(usize, i64)>) -> Vec<(String, i64)> {
    order.into_iter().map(|(s, start)| (plan.blocks().series()[s].time_series_id.clone(), start)).collect()
}

fn order(plan: &WindowPlan, epoch: u64, share: &Share) -> Vec<(String, i64)> {
    named(plan, plan.order_of(epoch, share).unwrap())
}

fn share(consumer: usize, consumers: usize) -> Share {
    Share { consumer, consumers, ..Share::all() }
}

/// Every window `share` reads, checked against `read_series`, as `(id, start)`.
fn read_checked(v: &Version, plan: &Arc<WindowPlan>, epoch: u64, share: &Share, batch: usize) -> Vec<(String, i64)> {
    let o = plan.options().clone();
    let mut out = Vec::new();
    let mut it = plan.windows(epoch, share).unwrap();
    while let Some(b) = it.next_batch(batch) {
        let b = b.unwrap();
        assert!(b.len() <= batch);
        for i in 0..b.len() {
            let meta = &plan.blocks().series()[b.series[i]];
            let all = v.read_series(&meta.time_series_id).unwrap();
            let pad = b.padding[i] as usize;
            let from = b.start[i].max(0) as usize;
            let mut want = vec![0f32; pad];
            want.extend_from_slice(&all[from..from + o.window_length() - pad]);
            assert_eq!(&b.past_values[i * o.context_length..(i + 1) * o.context_length], &want[..o.context_length]);
            let p = o.prediction_length;
            assert_eq!(&b.future_values[i * p..(i + 1) * p], &want[o.context_length..]);
            assert_eq!(b.start_s[i], meta.t_start_s + b.start[i] as f64 / meta.sampling_rate_hz);
            out.push((meta.time_series_id.clone(), b.start[i]));
        }
    }
    out
}

#[test]
fn index_order_is_exactly_every_window_each_equal_to_its_read_series_slice() {
    let (_tmp, v) = version();
    let p = plan(&v, options(50, 10, false));
    let want = expected(&v, 60, 60);
    assert_eq!(p.len(), want.len() as u64);
    assert_eq!(p.len(), 796);
    assert_eq!(order(&p, 0, &Share::all()), want);
    assert_eq!(read_checked(&v, &p, 0, &Share::all(), 64), want);
    // overlapping windows at stride 7, read one at a time
    let p = plan(&v, WindowOptions { stride: Some(7), ..options(20, 5, false) });
    let want = expected(&v, 25, 7);
    assert_eq!(p.len(), 6860);
    assert_eq!(read_checked(&v, &p, 0, &Share::all(), 1000), want);
    assert!(p.blocks().row_groups() > p.blocks().len(), "series span row groups");
}

#[test]
fn the_shuffle_is_a_permutation_fixed_by_seed_and_epoch() {
    let (_tmp, v) = version();
    let p = plan(&v, options(50, 10, true));
    let first = read_checked(&v, &p, 0, &Share::all(), 50);
    let mut sorted = first.clone();
    sorted.sort();
    let mut want = expected(&v, 60, 60);
    want.sort();
    assert_eq!(sorted, want, "every window once");
    assert_ne!(first, expected(&v, 60, 60), "shuffled");
    assert_eq!(order(&p, 0, &Share::all()), first, "the order needs no read");
    assert_eq!(order(&plan(&v, options(50, 10, true)), 0, &Share::all()), first, "same seed, same order");
    assert_ne!(order(&p, 1, &Share::all()), first, "another epoch");
    let other = plan(&v, WindowOptions { seed: 1, ..options(50, 10, true) });
    assert_ne!(order(&other, 0, &Share::all()), first, "another seed");
    // pinned: the first windows of seed 0, epoch 0 (a change of the algorithm shows here)
    let head: Vec<(String, i64)> = first[..3].to_vec();
    assert_eq!(head, pinned_head());
}

fn pinned_head() -> Vec<(String, i64)> {
    PINNED.iter().map(|(id, s)| (id.to_string(), *s)).collect()
}

const PINNED: [(&str, i64); 3] = [("s009/I", 240), ("s017/II", 1080), ("s017/II", 960)];

#[test]
fn consumers_split_the_one_order_exactly_once_whatever_their_number() {
    let (_tmp, v) = version();
    let p = plan(&v, options(50, 10, true));
    let global = order(&p, 3, &Share::all());
    for (ranks, workers) in [(1, 1), (1, 2), (2, 1), (2, 2), (3, 2)] {
        let consumers = ranks * workers;
        let mut joined = Vec::new();
        for rank in 0..ranks {
            for worker in 0..workers {
                let s = share(rank * workers + worker, consumers);
                let got = read_checked(&v, &p, 3, &s, 17);
                assert_eq!(got, order(&p, 3, &s));
                assert!(got.len().abs_diff(global.len() / consumers) <= 1, "even shares");
                joined.extend(got);
            }
        }
        assert_eq!(joined, global, "{ranks} ranks x {workers} workers");
    }
}

#[test]
fn a_resume_continues_the_epoch_also_with_another_number_of_consumers() {
    let (_tmp, v) = version();
    let p = plan(&v, options(50, 10, true));
    let global = order(&p, 2, &Share::all());
    // one consumer stopped after 100 windows resumes at the 101st
    let rest = read_checked(&v, &p, 2, &Share { taken: 100, ..Share::all() }, 33);
    assert_eq!(rest, global[100..]);
    // four consumers took 3, 0, 7 and all of theirs; three consumers take the rest
    let shares: Vec<Vec<(String, i64)>> = (0..4).map(|c| order(&p, 2, &share(c, 4))).collect();
    let taken = [3u64, 0, 7, shares[3].len() as u64];
    let consumed = merge_consumed(p.len(), &[], 4, &taken).unwrap();
    let quarter = p.len() / 4;
    assert_eq!(consumed, vec![(0, 3), (2 * quarter, 2 * quarter + 7), (3 * quarter, p.len())]);
    let mut seen: Vec<(String, i64)> = Vec::new();
    for (c, t) in taken.iter().enumerate() {
        seen.extend_from_slice(&shares[c][..*t as usize]);
    }
    let mut after = Vec::new();
    for c in 0..3 {
        let s = Share { consumed: consumed.clone(), ..share(c, 3) };
        after.extend(read_checked(&v, &p, 2, &s, 25));
    }
    let kept: Vec<(String, i64)> = global
        .iter()
        .enumerate()
        .filter(|(i, _)| !consumed.iter().any(|&(a, b)| (a..b).contains(&(*i as u64))))
        .map(|(_, w)| w.clone())
        .collect();
    assert_eq!(after, kept, "the rest, in the global order");
    seen.extend(after);
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!((seen.len(), unique.len()), (global.len(), global.len()), "every window exactly once");
    // a second resume merges onto the first
    let again = merge_consumed(p.len(), &consumed, 3, &[1, 0, 0]).unwrap();
    assert_eq!(again, vec![(0, 4), (2 * quarter, 2 * quarter + 7), (3 * quarter, p.len())]);
}

#[test]
fn short_series_are_padded_at_the_front_when_asked() {
    let (_tmp, v) = version();
    // series s000 (300 values) is shorter than 280 + 40 = 320
    let p = plan(&v, WindowOptions { pad: true, ..options(280, 40, false) });
    let got = read_checked(&v, &p, 0, &Share::all(), 8);
    let padded: Vec<_> = got.iter().filter(|(_, start)| *start < 0).cloned().collect();
    assert_eq!(padded, [("s000/I".to_string(), -20), ("s000/II".to_string(), -20)]);
    let unpadded = plan(&v, options(280, 40, false));
    assert_eq!(p.len(), unpadded.len() + 2);
}

#[test]
fn bad_options_and_shares_are_refused_by_name() {
    let (_tmp, v) = version();
    let refused = |o: WindowOptions| match WindowPlan::new(&v, &Selection::all(), o) {
        Err(Error::InvalidOption { option, .. }) => option,
        other => panic!("{:?}", other.map(|p| p.len())),
    };
    assert_eq!(refused(WindowOptions::new(0, 4)), "context_length");
    assert_eq!(refused(WindowOptions { stride: Some(0), ..WindowOptions::new(4, 0) }), "stride");
    assert_eq!(
        refused(WindowOptions { shuffle_buffer_row_groups: 0, ..WindowOptions::new(4, 0) }),
        "shuffle_buffer_row_groups"
    );
    let p = plan(&v, options(4, 0, true));
    assert!(matches!(p.windows(0, &share(2, 2)), Err(Error::InvalidOption { option: "consumer", .. })));
    assert!(matches!(merge_consumed(10, &[], 2, &[1]), Err(Error::InvalidOption { option: "taken", .. })));
    assert!(matches!(
        WindowPlan::new(&v, &Selection::all().channels(["V9"]), WindowOptions::new(4, 0)),
        Err(Error::Validation { field: "channel", .. })
    ));
}

#[test]
fn fisher_yates_over_splitmix64_is_pinned() {
    let mut items: Vec<u32> = (0..10).collect();
    SplitMix64::for_shuffle(0, 0, 0).shuffle(&mut items);
    assert_eq!(items, [2, 8, 6, 7, 3, 9, 4, 5, 0, 1]);
}
