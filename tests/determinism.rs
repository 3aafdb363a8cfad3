//! Output is a pure function of (dataset, options, crate versions)
//! (FORMAT-BRIEF §5): the same bytes in every file, manifest included, whatever
//! the order entities were inserted in and whatever the number of threads.
//!
//! Sample metadata maps are `BTreeMap`s in the public API, so the insertion
//! order of their keys cannot reach the writer; what can vary is the order of
//! the `add_*` calls, which is what the property test shuffles.

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use timef::{Annotation, SeriesMeta, Task, TaskType};

use common::*;

/// [`golden_fixture`] grown by eight samples of two series each (one long
/// enough for several chunks), a label shared by every other sample, and a
/// task over them, so shuffles move many entities across several row groups.
fn fixture() -> Fixture {
    let mut f = golden_fixture();
    f.info.name = "shuffle".into();
    let shared = Annotation {
        annotation_id: uuid7(0xa100),
        annotation_type: "label".into(),
        key: "class".into(),
        value_str: Some("noisy".into()),
        ..Default::default()
    };
    let mut shared_on = Vec::new();
    let mut all = Vec::new();
    for i in 0..8u64 {
        let sample = golden_sample(0x100 + i);
        let ids = [format!("extra-{i}/x"), format!("extra-{i}/y")];
        for (c, id) in ids.iter().enumerate() {
            let meta = SeriesMeta::new(id, "acc", ["x", "y"][c], 50.0);
            f.series.push((meta, values(10 + 2 * i as u32 + c as u32, 100 + 150 * i as usize)));
        }
        f.samples.push(timef::Sample {
            sample_id: sample.clone(),
            source_id: "physionet".into(),
            series: main_refs(&[&ids[0], &ids[1]]),
            metadata: [("batch".to_string(), format!("{}", i % 3))].into(),
            ..Default::default()
        });
        if i % 2 == 1 {
            shared_on.push(sample.clone());
        }
        all.push(sample);
    }
    f.annotations.push((shared, shared_on));
    f.tasks.push((
        "activity".into(),
        Task { split: Some("train".into()), ..Task::new("act-1", TaskType::Classification, all) },
    ));
    f
}

/// `f` with its entities in the orders given by the permutations, and each
/// annotation attached one sample per call, in the order of `attachments`.
fn shuffled(f: &Fixture, series: &[usize], samples: &[usize], attachments: &[usize], tasks: &[usize]) -> Fixture {
    let singles: Vec<(Annotation, Vec<String>)> =
        f.annotations.iter().flat_map(|(a, on)| on.iter().map(move |s| (a.clone(), vec![s.clone()]))).collect();
    Fixture {
        info: f.info.clone(),
        sources: f.sources.clone(),
        series: pick(series, &f.series),
        samples: pick(samples, &f.samples),
        annotations: pick(attachments, &singles),
        tasks: pick(tasks, &f.tasks),
    }
}

/// `list` in the order of `order`.
fn pick<T: Clone>(order: &[usize], list: &[T]) -> Vec<T> {
    order.iter().map(|&i| list[i].clone()).collect()
}

fn permutation(n: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..n).collect::<Vec<_>>()).prop_shuffle()
}

#[test]
fn shuffled_insertion_order_gives_identical_bytes() {
    let f = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let reference = commit(&tmp.path().join("reference"), f.dataset(), small_options());
    assert!(file_bytes(&reference).keys().filter(|p| p.starts_with("time_series/")).count() > 1, "several shards");
    let attachments: usize = f.annotations.iter().map(|(_, on)| on.len()).sum();
    let orders = (
        permutation(f.series.len()),
        permutation(f.samples.len()),
        permutation(attachments),
        permutation(f.tasks.len()),
    );
    let mut runner = TestRunner::new(Config { cases: 8, failure_persistence: None, ..Config::default() });
    runner
        .run(&orders, |(series, samples, attachments, tasks)| {
            let case = tempfile::tempdir().unwrap();
            let dir =
                commit(case.path(), shuffled(&f, &series, &samples, &attachments, &tasks).dataset(), small_options());
            assert_same_files(&reference, &dir);
            Ok(())
        })
        .unwrap();
}

#[test]
fn thread_count_does_not_change_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = [1, 2]
        .map(|threads| {
            let root = tmp.path().join(format!("threads-{threads}"));
            // the write runs on a pool thread (inside `install`); a writer that blocks
            // that thread on work queued behind it deadlocks, so bound the wait
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let dir = pool.install(|| {
                    assert_eq!(rayon::current_num_threads(), threads);
                    commit(&root, golden_fixture().dataset(), small_options())
                });
                tx.send(dir).unwrap();
            });
            rx.recv_timeout(std::time::Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("write in a {threads}-thread pool did not finish ({e}): deadlock?"))
        })
        .to_vec();
    assert_same_files(&dirs[0], &dirs[1]);
}
