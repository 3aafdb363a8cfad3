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
    order.into_iter().map(|(k, start)| (plan.blocks().stack_id(k).to_string(), start)).collect()
}

fn order(plan: &WindowPlan, epoch: u64, share: &Share) -> Vec<(String, i64)> {
    named(plan, plan.order_of(epoch, share).unwrap())
}

fn share(consumer: usize, consumers: usize) -> Share {
    Share { consumer, consumers, ..Share::all() }
}

/// Every window `share` reads, each row checked against the `read_series`
/// slice of its series, as `(id, start)` (the id of its stack: its series, or
/// its sample with stacked channels).
fn read_checked(v: &Version, plan: &Arc<WindowPlan>, epoch: u64, share: &Share, batch: usize) -> Vec<(String, i64)> {
    let o = plan.options().clone();
    let (context, p) = (o.context_length, o.prediction_length);
    let mut out = Vec::new();
    let mut it = plan.windows(epoch, share).unwrap();
    while let Some(b) = it.next_batch(batch) {
        let b = b.unwrap();
        assert!(b.len() <= batch);
        let mut row = 0;
        for i in 0..b.len() {
            let series = plan.blocks().stack_series(b.stack[i]);
            for &s in series {
                let meta = &plan.blocks().series()[s];
                let all = v.read_series(&meta.time_series_id).unwrap();
                let pad = b.padding[i] as usize;
                let from = b.start[i].max(0) as usize;
                let mut want = vec![0f32; pad];
                want.extend_from_slice(&all[from..from + o.window_length() - pad]);
                assert_eq!(&b.past_values[row * context..(row + 1) * context], &want[..context]);
                assert_eq!(&b.future_values[row * p..(row + 1) * p], &want[context..]);
                row += 1;
            }
            let meta = &plan.blocks().series()[series[0]];
            assert_eq!(b.start_s[i], meta.t_start_s + b.start[i] as f64 / meta.sampling_rate_hz);
            out.push((plan.blocks().stack_id(b.stack[i]).to_string(), b.start[i]));
        }
        assert_eq!((b.past_values.len(), b.future_values.len()), (row * context, row * p));
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
    assert_shuffled(&first, expected(&v, 60, 60));
    assert_eq!(order(&p, 0, &Share::all()), first, "the order needs no read");
    assert_eq!(order(&plan(&v, options(50, 10, true)), 0, &Share::all()), first, "same seed, same order");
    assert_ne!(order(&p, 1, &Share::all()), first, "another epoch");
    let other = plan(&v, WindowOptions { seed: 1, ..options(50, 10, true) });
    assert_ne!(order(&other, 0, &Share::all()), first, "another seed");
    // pinned: the first windows of seed 0, epoch 0 (a change of the algorithm shows here)
    let head: Vec<(String, i64)> = first[..3].to_vec();
    assert_eq!(head, pinned_head());
}

/// `got` holds every window of `index_order` once, in another order.
fn assert_shuffled(got: &[(String, i64)], index_order: Vec<(String, i64)>) {
    assert_ne!(got, index_order, "shuffled");
    let (mut got, mut want) = (got.to_vec(), index_order);
    got.sort();
    want.sort();
    assert_eq!(got, want, "every window once");
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

fn stacked(context: usize, prediction: usize, shuffle: bool) -> WindowOptions {
    WindowOptions { stack_channels: true, ..options(context, prediction, shuffle) }
}

/// Every stacked window `(sample, start)` in sample order, from the series lengths.
fn expected_stacked(v: &Version, length: usize, stride: usize) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for sample in v.samples().unwrap() {
        let n = v.read_series(&sample.series[0].time_series_id).unwrap().len();
        out.extend(
            (0..).map(|k| k * stride).take_while(|s| s + length <= n).map(|s| (sample.sample_id.clone(), s as i64)),
        );
    }
    out
}

#[test]
fn stacked_channels_give_each_sample_one_window_of_its_channels_each_row_its_read_series_slice() {
    let (_tmp, v) = version();
    let p = plan(&v, stacked(50, 10, false));
    assert_eq!(p.blocks().channels(), ["I", "II"]);
    assert_eq!(
        p.blocks().stack_series(3).iter().map(|&s| &p.blocks().series()[s].time_series_id).collect::<Vec<_>>(),
        ["s003/I", "s003/II"]
    );
    let want = expected_stacked(&v, 60, 60);
    assert_eq!(p.len(), 398, "the 796 windows of the 40 series, two channels a window");
    assert_eq!(want.len(), 398);
    assert_eq!(order(&p, 0, &Share::all()), want);
    assert_eq!(read_checked(&v, &p, 0, &Share::all(), 64), want);
    // a stacked block reads the row groups of both channels, far apart in index order
    assert!(p.blocks().row_groups() > p.blocks().len());
    // channels select; samples and tasks select the samples stacked
    let only_ii = Arc::new(WindowPlan::new(&v, &Selection::all().channels(["II"]), stacked(50, 10, false)).unwrap());
    assert_eq!(only_ii.blocks().channels(), ["II"]);
    assert_eq!(read_checked(&v, &only_ii, 0, &Share::all(), 64), want);
    let two = Selection::all().samples(["s004", "s001"]);
    let two = Arc::new(WindowPlan::new(&v, &two, stacked(50, 10, false)).unwrap());
    let want_two: Vec<_> = want.iter().filter(|(s, _)| s == "s001" || s == "s004").cloned().collect();
    assert_eq!(read_checked(&v, &two, 0, &Share::all(), 7), want_two);
    assert_eq!(want_two.len(), 6 + 11);
}

#[test]
fn stacked_channels_split_among_consumers_exactly_once_and_resume() {
    let (_tmp, v) = version();
    let p = plan(&v, stacked(50, 10, true));
    let global = order(&p, 1, &Share::all());
    assert_shuffled(&global, expected_stacked(&v, 60, 60));
    assert_ne!(order(&p, 2, &Share::all()), global, "another epoch");
    for (ranks, workers) in [(1, 1), (1, 2), (2, 1), (2, 2), (3, 2)] {
        let consumers = ranks * workers;
        let mut joined = Vec::new();
        for c in 0..consumers {
            let got = read_checked(&v, &p, 1, &share(c, consumers), 13);
            assert_eq!(got, order(&p, 1, &share(c, consumers)));
            joined.extend(got);
        }
        assert_eq!(joined, global, "{ranks} ranks x {workers} workers");
    }
    assert_eq!(read_checked(&v, &p, 1, &Share { taken: 57, ..Share::all() }, 10), global[57..]);
    let consumed = merge_consumed(p.len(), &[], 2, &[5, 9]).unwrap();
    let mut after = Vec::new();
    for c in 0..3 {
        after.extend(read_checked(&v, &p, 1, &Share { consumed: consumed.clone(), ..share(c, 3) }, 10));
    }
    let half = (p.len() / 2) as usize;
    let kept: Vec<_> = global[5..half].iter().chain(&global[half + 9..]).cloned().collect();
    assert_eq!(after, kept);
}

#[test]
fn stacked_channels_of_unequal_series_or_other_channels_are_refused_naming_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let build = |second: (&str, usize), order: [&str; 2]| {
        let mut d = dataset_with_source("st", "1");
        for (sid, ch_len) in [("a", [("I", 100), ("II", 100)]), ("b", [("I", 100), second])] {
            let mut refs = Vec::new();
            for (c, (ch, n)) in ch_len.iter().enumerate() {
                let id = format!("{sid}/{ch}");
                add_series(&mut d, &id, "ecg", ch, 500.0, c as u32, *n);
                refs.push(timef::dataset::SeriesRef { time_series_id: id, view: "main".into() });
            }
            if sid == "b" && order[0] == "II" {
                refs.reverse();
            }
            d.add_sample(timef::dataset::Sample {
                sample_id: sid.into(),
                source_id: "src".into(),
                series: refs,
                ..Default::default()
            })
            .unwrap();
        }
        d
    };
    let refused = |d, dir: &str| {
        let v = Version::open(commit(&tmp.path().join(dir), d, small_options())).unwrap();
        match WindowPlan::new(&v, &Selection::all(), stacked(10, 0, false)) {
            Err(Error::Validation { id, field, reason }) => (id, field, reason),
            other => panic!("{:?}", other.map(|p| p.len())),
        }
    };
    let (id, field, reason) = refused(build(("II", 90), ["I", "II"]), "len");
    assert_eq!((id.as_str(), field), ("b", "stack_channels"));
    assert_eq!(
        reason,
        "series b/I has 100 values at 500 Hz from 0 s, series b/II 90 values at 500 Hz from 0 s: stacked channels \
         need series of one length, sampling rate and start"
    );
    let (id, _, reason) = refused(build(("II", 100), ["II", "I"]), "order");
    assert_eq!(id, "b");
    assert!(reason.starts_with("its channels [II, I] are not the first sample's [I, II]"), "{reason}");
    // each series alone is fine
    let v = Version::open(tmp.path().join("len/st/1")).unwrap();
    assert_eq!(WindowPlan::new(&v, &Selection::all(), options(10, 0, false)).unwrap().len(), 10 + 10 + 10 + 9);
}

#[test]
fn on_an_object_store_the_next_buffers_row_groups_are_fetched_ahead_and_decoded_from_memory() {
    let (_tmp, local) = version();
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let root = timef::storage::Location::from_object_store(store, "memory://ahead", "root").unwrap();
    timef::writer::TimeFWriter::at(root.clone(), small_options())
        .write(ecg_dataset("win", "1", SAMPLES))
        .unwrap()
        .commit()
        .unwrap();
    let v = Version::open_at(root.join("win/1")).unwrap();
    let p = plan(&v, WindowOptions { threads: 1, ..options(50, 10, true) });
    assert!(plan(&local, options(50, 10, true)).blocks().read_stats().is_none(), "nothing counted on a local path");
    // every window equals the local version's read_series slice; every request of the epoch
    // is a read-ahead GET (the shards' tails with their footers, then the buffers' row groups)
    let want = order(&p, 0, &Share::all());
    let planned = p.blocks().read_stats().unwrap();
    assert_eq!(read_checked(&local, &p, 0, &Share::all(), 64), want);
    let first = p.blocks().read_stats().unwrap();
    assert_eq!(first.requests - planned.requests, first.read_ahead_requests - planned.read_ahead_requests);
    assert!(first.read_ahead_requests > 0 && first.read_ahead_hits > p.blocks().row_groups() as u64, "{first:?}");
    // the next epoch's requests are the buffers' row groups alone, at least one per buffer,
    // and every page comes from them
    let buffers = p.blocks().len().div_ceil(3) as u64;
    read_checked(&local, &p, 1, &Share::all(), 64);
    let second = p.blocks().read_stats().unwrap();
    let requests = second.requests - first.requests;
    assert_eq!(requests, second.read_ahead_requests - first.read_ahead_requests);
    assert!(requests >= buffers, "{requests} requests for {buffers} buffers");
    assert!(second.read_ahead_hits - first.read_ahead_hits >= p.blocks().row_groups() as u64);
    // a consumer of half the epoch fetches only the blocks of its windows
    let half = second;
    read_checked(&local, &p, 1, &share(1, 2), 64);
    let third = p.blocks().read_stats().unwrap();
    assert!(third.read_ahead_bytes - half.read_ahead_bytes < half.read_ahead_bytes - first.read_ahead_bytes);
}
