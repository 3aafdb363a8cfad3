//! Distributed writes (plan -> parts -> commit): the committed version is
//! byte-identical to the single-machine write of the same GluonTS rows, for
//! any number of parts, partitioning of the rows and order parts finish;
//! tampered records are refused with the exact error; abort and gc leave
//! nothing; one of two coordinators wins.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Float32Builder, Float64Builder, ListBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray, TimestampSecondArray, UInt32Array};
use common::{cli, input, small_options};
use timef::connectors::arrow::{
    arrow_part_series, arrow_row_parts, arrow_series_ids, read_arrow, read_arrow_batches, ArrowMetaPass, ArrowOptions,
};
use timef::dataset::SeriesValues;
use timef::distributed::{write_part, DistributedWrite, PartRecord, PartTask};
use timef::error::PartProblem;
use timef::storage::{gc, gc_dry_run, GcReport, Location, StagingRef, StorageOptions};
use timef::{Error, TimeFWriter, WriterOptions};

/// Every file under `dir` with its bytes, by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn go(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                go(base, &p, out);
            } else {
                out.insert(p.strip_prefix(base).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.exists() {
        go(dir, dir, &mut out);
    }
    out
}

/// `n` GluonTS rows: item ids `item-007`, ..., lengths from 40 to ~3000 values
/// (so series span chunks, row groups and shards under [`small_options`]),
/// float32 targets, a `start` per row.
fn generated(n: usize) -> RecordBatch {
    let ids: Vec<String> = (0..n).map(|i| format!("item-{:03}", (i * 37) % n)).collect();
    let mut target = ListBuilder::new(Float32Builder::new());
    for i in 0..n {
        let len = 40 + (i * 7919) % 3000;
        let v = common::values(i as u32, len);
        target.values().append_slice(&v);
        target.append(true);
    }
    let starts: Vec<i64> = (0..n as i64).map(|i| 1_600_000_000 + 3600 * i).collect();
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("item_id", Arc::new(StringArray::from(ids))),
        ("start", Arc::new(TimestampSecondArray::from(starts))),
        ("target", Arc::new(target.finish())),
    ];
    RecordBatch::try_from_iter(cols).unwrap()
}

/// A multivariate batch: items with 2 or 3 channels (float64).
fn multivariate(n: usize) -> RecordBatch {
    let ids: Vec<String> = (0..n).map(|i| format!("mv-{i:02}")).collect();
    let mut target = ListBuilder::new(ListBuilder::new(Float64Builder::new()));
    for i in 0..n {
        for d in 0..(2 + i % 2) {
            let v = common::values((i * 3 + d) as u32, 100 + (i * 131 + d * 17) % 900);
            target.values().values().append_slice(&v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>());
            target.values().append(true);
        }
        target.append(true);
    }
    let cols: Vec<(&str, ArrayRef)> =
        vec![("item_id", Arc::new(StringArray::from(ids))), ("target", Arc::new(target.finish()))];
    RecordBatch::try_from_iter(cols).unwrap()
}

fn opts() -> ArrowOptions {
    ArrowOptions::new("dist", "v1")
}

fn label() -> &'static Path {
    Path::new("rows")
}

/// The single-machine write of `batches` under `root`.
fn single_machine(root: &Path, batches: &[RecordBatch], options: WriterOptions) -> PathBuf {
    let d = read_arrow_batches(batches.to_vec(), label(), &opts()).unwrap();
    TimeFWriter::new(root, options).write(d).unwrap().commit().unwrap()
}

/// The coordinator's plan over `batches` in `parts` parts.
fn plan(root: &Path, batches: &[RecordBatch], options: WriterOptions, parts: u32) -> DistributedWrite {
    plan_at(&Location::local(root), batches, options, parts).unwrap()
}

/// [`plan`] on any root (an object-store URL).
fn plan_at(
    root: &Location,
    batches: &[RecordBatch],
    options: WriterOptions,
    parts: u32,
) -> timef::Result<DistributedWrite> {
    let o = opts();
    let mut pass = ArrowMetaPass::new(label(), &o).unwrap();
    for b in batches {
        pass.batch(b).unwrap();
    }
    let (input, dropped) = pass.finish().unwrap();
    assert!(dropped.cases.is_empty());
    DistributedWrite::plan(root, input, options, parts)
}

/// How the rows reach the workers.
#[derive(Clone, Copy, Debug)]
enum Partitioning {
    /// One batch per part, rows in input order.
    Grouped,
    /// One row per batch, rows in reverse input order.
    ReversedSingleRows,
}

/// The batches holding the rows of `task`, routed through the plan's router.
fn rows_for(
    task: &PartTask,
    router: &HashMap<String, Vec<u32>>,
    batches: &[RecordBatch],
    how: Partitioning,
) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for b in batches {
        let parts = arrow_row_parts(b, label(), &opts(), router).unwrap();
        assert_eq!(arrow_series_ids(b, label(), &opts()).unwrap().len(), b.num_rows());
        let rows: Vec<u32> = (0..b.num_rows() as u32).filter(|&r| parts[r as usize].contains(&task.part)).collect();
        match how {
            Partitioning::Grouped => out.push(take(b, &rows)),
            Partitioning::ReversedSingleRows => out.extend(rows.iter().map(|&r| take(b, &[r]))),
        }
    }
    if let Partitioning::ReversedSingleRows = how {
        out.reverse();
    }
    out
}

fn take(b: &RecordBatch, rows: &[u32]) -> RecordBatch {
    arrow_select::take::take_record_batch(b, &UInt32Array::from(rows.to_vec())).unwrap()
}

/// Runs every part (as a worker would: task and record through JSON) in
/// `order`, and returns the records in that order.
fn run_parts(write: &DistributedWrite, batches: &[RecordBatch], how: Partitioning, order: &[usize]) -> Vec<PartRecord> {
    let router = write.plan_ref().router();
    let tasks = write.part_tasks();
    order
        .iter()
        .map(|&p| {
            let task = PartTask::from_json(&tasks[p].to_json()).unwrap();
            let series = arrow_part_series(&rows_for(&task, &router, batches, how), label(), &opts(), &task).unwrap();
            let record = write_part(&task, series, &StorageOptions::new()).unwrap();
            PartRecord::from_json(&record.to_json()).unwrap()
        })
        .collect()
}

/// The series of `task` with their values, as its worker is given them.
fn series_of(task: &PartTask, batches: &[RecordBatch]) -> Vec<(String, SeriesValues)> {
    let mut all = read_arrow_batches(batches.to_vec(), label(), &opts()).unwrap();
    task.series
        .iter()
        .map(|s| (s.meta.time_series_id.clone(), all.take_loader(&s.meta.time_series_id).unwrap()().unwrap()))
        .collect()
}

fn generated_input() -> Vec<RecordBatch> {
    let all = generated(90);
    // two input batches, as a connector or Ray block would hand them over
    vec![all.slice(0, 50), all.slice(50, 40), multivariate(12)]
}

#[test]
fn any_parts_any_partitioning_same_bytes_as_single_machine() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let reference = files(&single_machine(&dir.path().join("single"), &batches, small_options()));
    assert!(reference.keys().filter(|k| k.starts_with("time_series/shard-")).count() >= 8, "{:?}", reference.keys());
    for parts in [1u32, 2, 4] {
        for how in [Partitioning::Grouped, Partitioning::ReversedSingleRows] {
            let root = dir.path().join(format!("dist-{parts}-{how:?}"));
            let write = plan(&root, &batches, small_options(), parts);
            assert_eq!(write.plan_ref().parts.len(), parts as usize);
            // parts finish in reverse order
            let order: Vec<usize> = (0..parts as usize).rev().collect();
            let records = run_parts(&write, &batches, how, &order);
            let version = write.commit(&records).unwrap();
            assert_eq!(files(&version), reference, "{parts} parts, {how:?}");
            // nothing else is left beside the version
            let left: Vec<_> = std::fs::read_dir(root.join("dist")).unwrap().flatten().map(|e| e.file_name()).collect();
            assert_eq!(left, vec![std::ffi::OsString::from("v1")]);
        }
    }
}

#[test]
fn parquet_input_same_bytes_as_cli_ingest() {
    let file = input("dictionary_item_id.parquet");
    let dir = tempfile::tempdir().unwrap();
    let cli_root = dir.path().join("cli");
    let (code, _, err) = cli(&[
        "ingest",
        "arrow",
        "--root",
        cli_root.to_str().unwrap(),
        "--name",
        "dist",
        "--version",
        "v1",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let reference = files(&cli_root.join("dist/v1"));
    // the same dataset as the library's connector reads it
    assert_eq!(read_arrow(&file, &opts()).unwrap().series().count(), 3);
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&file).unwrap())
            .unwrap()
            .with_batch_size(1)
            .build()
            .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 3);
    for parts in [1u32, 2] {
        let root = dir.path().join(format!("dist-{parts}"));
        let write = plan(&root, &batches, WriterOptions::default(), parts);
        let records = run_parts(&write, &batches, Partitioning::ReversedSingleRows, &[0]);
        assert_eq!(files(&write.commit(&records).unwrap()), reference);
    }
}

#[test]
fn a_part_written_twice_gives_the_same_bytes() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let write = plan(dir.path(), &batches, small_options(), 2);
    let first = run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
    let bytes = files(&write.staging_dir());
    // a retry (other partitioning of its rows) and a speculative duplicate
    let again = run_parts(&write, &batches, Partitioning::ReversedSingleRows, &[1, 0]);
    assert_eq!(again[1], first[0]);
    assert_eq!(again[0], first[1]);
    assert_eq!(files(&write.staging_dir()), bytes);
    assert!(!bytes.keys().any(|k| k.starts_with(".parts/") && !k.ends_with(".parquet")));
    let version = write.commit(&again).unwrap();
    assert_eq!(files(&version), files(&single_machine(&dir.path().join("single"), &batches, small_options())));
}

/// Plans and writes every part, tampers with the records, commits: the error.
fn commit_tampered(tamper: impl FnOnce(&mut Vec<PartRecord>)) -> (Error, PathBuf, String) {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let write = plan(dir.path(), &batches, small_options(), 2);
    let id = write.write_id().to_string();
    let mut records = run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
    tamper(&mut records);
    let err = write.commit(&records).unwrap_err();
    // nothing published, nothing staged
    assert_eq!(common::tree(dir.path()), Vec::<String>::new());
    (err, dir.keep(), id)
}

fn part_error(err: Error) -> (Option<u32>, Option<u32>, PartProblem) {
    match err {
        Error::Part { part, shard, problem, .. } => (part, shard, problem),
        other => panic!("expected Error::Part, got {other:?}"),
    }
}

#[test]
fn tampered_records_are_refused() {
    // wrong sha256
    let (err, _, id) = commit_tampered(|r| r[1].files[0].sha256 = "0".repeat(64));
    let msg = err.to_string();
    let (part, shard, problem) = part_error(err);
    assert_eq!((part, shard), (Some(1), Some(r_first_shard(1))));
    assert!(matches!(&problem, PartProblem::HashMismatch { expected, .. } if *expected == "0".repeat(64)));
    assert!(msg.starts_with(&format!("distributed write {id}, part 1, shard ")), "{msg}");
    // a shard missing (its file dropped from the record)
    let (err, _, _) = commit_tampered(|r| {
        r[0].files.pop();
    });
    let (part, shard, problem) = part_error(err);
    assert_eq!(problem, PartProblem::MissingShard);
    assert_eq!(part, None);
    assert!(shard.is_some());
    // a whole part missing
    let (err, _, _) = commit_tampered(|r| {
        r.pop();
    });
    assert_eq!(part_error(err).2, PartProblem::MissingShard);
    // a shard listed twice (the same record given twice)
    let (err, _, _) = commit_tampered(|r| r.push(r[0].clone()));
    let (part, shard, problem) = part_error(err);
    assert_eq!((part, shard, problem), (Some(0), Some(0), PartProblem::DuplicateShard));
    // index rows that do not match the plan
    let (err, _, _) = commit_tampered(|r| r[0].index[3].row_offset += 1);
    assert!(matches!(part_error(err), (Some(0), Some(0), PartProblem::IndexMismatch(_))));
    let (err, _, _) = commit_tampered(|r| {
        r[1].index.pop();
    });
    assert!(matches!(part_error(err), (Some(1), Some(_), PartProblem::IndexMismatch(_))));
    // a record of another write
    let (err, _, _) = commit_tampered(|r| r[0].write_id = "another".into());
    assert!(matches!(part_error(err), (Some(0), None, PartProblem::WrongWrite(_))));
}

/// A record whose chunk statistics are forged, one field at a time, is
/// refused naming the part, shard, chunk and field, with the record's and the
/// staged values (docs/format.md "Trust model"); nothing is published.
#[test]
fn forged_chunk_statistics_are_refused() {
    type Forge = fn(&mut timef::distributed::PartIndexRow);
    let forgeries: [(&str, Forge); 4] = [
        ("min", |r| r.min -= 1.0),
        ("max", |r| r.max += 0.5),
        ("mean", |r| r.mean = f64::from_bits(r.mean.to_bits() + 1)),
        ("std", |r| r.std *= 2.0),
    ];
    for (field, forge) in forgeries {
        let mut honest = None;
        let (err, _, id) = commit_tampered(|r| {
            honest = Some(r[1].index[2].clone());
            forge(&mut r[1].index[2]);
        });
        let honest = honest.unwrap();
        let msg = err.to_string();
        let (part, shard, problem) = part_error(err);
        let mut forged = honest.clone();
        forge(&mut forged);
        let (recorded, staged) = match field {
            "min" => (forged.min, honest.min),
            "max" => (forged.max, honest.max),
            "mean" => (forged.mean, honest.mean),
            _ => (forged.std, honest.std),
        };
        assert_ne!(recorded.to_bits(), staged.to_bits(), "{field}");
        assert_eq!((part, shard), (Some(1), Some(honest.shard)), "{field}");
        assert_eq!(
            problem,
            PartProblem::StatisticsMismatch {
                time_series_id: honest.time_series_id.clone(),
                chunk_idx: honest.chunk_idx,
                field,
                recorded: format!("{recorded:?}"),
                staged: format!("{staged:?}"),
            },
            "{field}"
        );
        let want = format!(
            "distributed write {id}, part 1, shard {}: {} chunk {}: {field} is {recorded:?} in the record, {staged:?} in the staged shard",
            honest.shard, honest.time_series_id, honest.chunk_idx
        );
        assert!(msg.starts_with(&format!("distributed write {id}, part 1, shard ")), "{msg}");
        assert_eq!(msg, want);
    }
}

/// The first shard of part `p` of the 2-part plan of [`generated_input`].
fn r_first_shard(p: usize) -> u32 {
    let dir = tempfile::tempdir().unwrap();
    let write = plan(dir.path(), &generated_input(), small_options(), 2);
    write.plan_ref().parts[p][0]
}

#[test]
fn a_tampered_staged_file_is_refused() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let write = plan(dir.path(), &batches, small_options(), 2);
    let records = run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
    let shard = write.staging_dir().join(&records[0].files[0].path);
    let mut bytes = std::fs::read(&shard).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&shard, &bytes).unwrap();
    let (part, shard, problem) = part_error(write.commit(&records).unwrap_err());
    assert_eq!((part, shard), (Some(0), Some(0)));
    assert!(matches!(problem, PartProblem::HashMismatch { .. }));
}

#[test]
fn a_part_refuses_series_not_in_its_shards_and_reports_missing_ones() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let write = plan(dir.path(), &batches, small_options(), 2);
    let tasks = write.part_tasks();
    let all = read_arrow_batches(batches.clone(), label(), &opts()).unwrap();
    let mut values: BTreeMap<String, SeriesValues> = BTreeMap::new();
    let ids: Vec<String> = all.series().map(|m| m.time_series_id.clone()).collect();
    let mut all = all;
    for id in &ids {
        values.insert(id.clone(), all.take_loader(id).unwrap()().unwrap());
    }
    let in_task = |t: &PartTask, id: &str| t.series.iter().any(|s| s.meta.time_series_id == id);
    let outsider = ids.iter().find(|id| !in_task(&tasks[0], id)).unwrap().clone();
    let mut given: Vec<_> = tasks[0]
        .series
        .iter()
        .map(|s| (s.meta.time_series_id.clone(), values[&s.meta.time_series_id].clone()))
        .collect();
    given.push((outsider.clone(), values[&outsider].clone()));
    let err = write_part(&tasks[0], given.clone(), &StorageOptions::new()).unwrap_err();
    assert_eq!(part_error(err), (Some(0), None, PartProblem::UnplannedSeries(outsider)));
    given.pop();
    let missing = given.remove(2).0;
    let err = write_part(&tasks[0], given.clone(), &StorageOptions::new()).unwrap_err();
    assert_eq!(part_error(err), (Some(0), None, PartProblem::MissingSeries(missing.clone())));
    // the wrong number of values
    let short = values[&missing].slice(0, values[&missing].len() - 1);
    given.insert(2, (missing.clone(), short));
    match write_part(&tasks[0], given, &StorageOptions::new()).unwrap_err() {
        Error::Validation { id, field, .. } => assert_eq!((id.as_str(), field), (missing.as_str(), "values")),
        other => panic!("{other:?}"),
    }
    // none of the refusals wrote a shard
    let files = files(&write.staging_dir());
    assert!(files.keys().all(|k| !k.starts_with("time_series/")), "{:?}", files.keys());
}

#[test]
fn two_coordinators_one_wins() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let a = plan(dir.path(), &batches, small_options(), 2);
    let b = plan(dir.path(), &batches, small_options(), 3);
    assert_ne!(a.write_id(), b.write_id());
    let ra = run_parts(&a, &batches, Partitioning::Grouped, &[1, 0]);
    let rb = run_parts(&b, &batches, Partitioning::Grouped, &[0, 1, 2]);
    let version = b.commit(&rb).unwrap();
    match a.commit(&ra).unwrap_err() {
        Error::AlreadyExists { path } => assert_eq!(path, version),
        other => panic!("{other:?}"),
    }
    assert_eq!(files(&version), files(&single_machine(&dir.path().join("single"), &batches, small_options())));
    // and once committed, planning it again is refused before any I/O
    let o = opts();
    let mut pass = ArrowMetaPass::new(label(), &o).unwrap();
    pass.batch(&batches[0]).unwrap();
    let (input, _) = pass.finish().unwrap();
    match DistributedWrite::plan(&Location::local(dir.path()), input, small_options(), 2).unwrap_err() {
        Error::AlreadyExists { path } => assert_eq!(path, version),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path().join("dist")).unwrap().count(), 1);
}

#[test]
fn abort_leaves_nothing() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let write = plan(dir.path(), &batches, small_options(), 2);
    let tasks = write.part_tasks();
    run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
    assert!(files(&write.staging_dir()).keys().any(|k| k.starts_with("time_series/shard-")));
    write.abort();
    assert_eq!(common::tree(dir.path()), Vec::<String>::new());
    // a late worker cannot bring the staging back
    match write_part(&tasks[0], series_of(&tasks[0], &batches), &StorageOptions::new()).unwrap_err() {
        Error::Io { source, .. } => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    assert_eq!(common::tree(dir.path()), Vec::<String>::new());
}

/// The coordinator of [`gc_reclaims_a_dead_coordinators_parts`], run as a
/// child process: plans, writes every part, notes the staging directory in
/// `<root>/staging.txt` and waits to be killed.
#[test]
#[ignore = "a child process of gc_reclaims_a_dead_coordinators_parts, which runs it with --ignored --exact"]
fn coordinator_child() {
    let root = std::env::var_os("TIMEF_TEST_COORDINATOR_ROOT")
        .expect("run by gc_reclaims_a_dead_coordinators_parts, which sets TIMEF_TEST_COORDINATOR_ROOT");
    let batches = generated_input();
    let write = plan(Path::new(&root), &batches, small_options(), 2);
    run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
    let note = Path::new(&root).join("staging.txt");
    std::fs::write(note.with_extension("tmp"), write.staging_dir().display().to_string()).unwrap();
    std::fs::rename(note.with_extension("tmp"), note).unwrap();
    std::thread::sleep(std::time::Duration::from_secs(600));
}

#[test]
fn gc_reclaims_a_dead_coordinators_parts() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "coordinator_child", "--test-threads=1"])
        .env("TIMEF_TEST_COORDINATOR_ROOT", dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let note = dir.path().join("staging.txt");
    let started = std::time::Instant::now();
    while !note.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the coordinator exited early: {status}");
        }
        assert!(started.elapsed().as_secs() < 300, "the coordinator did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let staging = PathBuf::from(std::fs::read_to_string(&note).unwrap());
    assert!(staging.join("time_series/shard-00000.parquet").is_file());
    // alive: kept, even at age 0
    let report = gc(&Location::local(dir.path()), 0).unwrap();
    assert_eq!(report.kept_claims, vec![staging.display().to_string()]);
    assert!(report.removed_claims.is_empty());
    assert!(staging.is_dir());
    // killed before commit: no visible version, gc reclaims every part
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!dir.path().join("dist/v1").exists());
    let report = gc(&Location::local(dir.path()), 0).unwrap();
    assert_eq!(report.removed_claims, vec![staging.display().to_string()]);
    assert!(report.removed_files.len() >= 8, "{report:?}");
    assert!(!staging.exists());
}

/// `n` univariate float32 rows with pseudo-random lengths in 40..600 (every
/// 5th 2400), as the Python tests generate them.
fn random_rows(n: usize, seed: u64) -> RecordBatch {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let ids: Vec<String> = (0..n).map(|i| format!("item-{seed}-{i:04}")).collect();
    let mut target = ListBuilder::new(Float32Builder::new());
    for i in 0..n {
        let len = if i % 5 == 0 { 2400 } else { 40 + next() % 560 };
        target.values().append_slice(&common::values(i as u32, len));
        target.append(true);
    }
    let cols: Vec<(&str, ArrayRef)> =
        vec![("item_id", Arc::new(StringArray::from(ids))), ("target", Arc::new(target.finish()))];
    RecordBatch::try_from_iter(cols).unwrap()
}

#[test]
fn random_inputs_and_tight_options_same_bytes() {
    let options = WriterOptions::builder()
        .chunk_max_bytes(1024)
        .row_group_target_bytes(2048)
        .shard_target_bytes(4096)
        .try_build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (n, seed) in [(20, 3), (40, 1), (20, 4), (33, 7)] {
        let batches = vec![random_rows(n, seed)];
        let reference = files(&single_machine(&dir.path().join(format!("single-{seed}")), &batches, options));
        for parts in [2u32, 3] {
            let root = dir.path().join(format!("dist-{seed}-{parts}"));
            let write = plan(&root, &batches, options, parts);
            let order: Vec<usize> = (0..write.plan_ref().parts.len()).rev().collect();
            let records = run_parts(&write, &batches, Partitioning::ReversedSingleRows, &order);
            assert_eq!(files(&write.commit(&records).unwrap()), reference, "seed {seed}, {parts} parts");
        }
    }
}

#[test]
fn a_task_whose_staging_is_not_its_writes_is_refused() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let committed = single_machine(&dir.path().join("done"), &batches, small_options());
    let before = files(&committed);
    let root = dir.path().join("live");
    let a = plan(&root, &batches, small_options(), 2);
    let b = plan(&root, &batches, small_options(), 2);
    let task = a.part_tasks()[0].clone();
    let series = series_of(&task, &batches);
    let refused = |staging: StagingRef| {
        let mut crafted = task.clone();
        crafted.staging = staging;
        write_part(&crafted, series.clone(), &StorageOptions::new()).unwrap_err()
    };
    let wrong = |at: &str| {
        let why = format!("{at} is not this write's staging .tmp-<version>-{}", a.write_id());
        (Some(0), None, PartProblem::WrongStaging(why))
    };
    // a committed version's directory, as a path and as a file:// URL
    let err = refused(StagingRef::Local { dir: committed.clone() });
    let msg = err.to_string();
    assert_eq!(part_error(err), wrong(&committed.display().to_string()));
    assert_eq!(
        msg,
        format!(
            "distributed write {}, part 0: {} is not this write's staging .tmp-<version>-{}",
            a.write_id(),
            committed.display(),
            a.write_id()
        )
    );
    let url = format!("file://{}", committed.display());
    assert_eq!(part_error(refused(StagingRef::Object { url: url.clone() })), wrong(&url));
    // another live write's staging
    let other = b.staging_dir();
    assert_eq!(part_error(refused(StagingRef::Local { dir: other.clone() })), wrong(&other.display().to_string()));
    // a name like this write's staging, reached through `..`
    let climbing = committed.join("..").join(a.staging_dir().file_name().unwrap());
    assert_eq!(
        part_error(refused(StagingRef::Local { dir: climbing.clone() })),
        wrong(&climbing.display().to_string())
    );
    // nothing was written anywhere
    assert_eq!(files(&committed), before);
    assert!(files(&other).keys().all(|k| !k.starts_with("time_series/")), "{:?}", files(&other).keys());
    assert!(files(&a.staging_dir()).keys().all(|k| !k.starts_with("time_series/")));
    // the task as planned is accepted
    assert_eq!(write_part(&task, series.clone(), &StorageOptions::new()).unwrap().part, 0);
    // once its coordinator is gone, a directory of the right name that no
    // process holds (a stale copy) is the end of the write, not a place to write
    let staging = a.staging_dir();
    a.abort();
    std::fs::create_dir_all(staging.join(".parts")).unwrap();
    match write_part(&task, series, &StorageOptions::new()).unwrap_err() {
        Error::Io { path, source } => {
            assert_eq!((path, source.kind()), (staging.clone(), std::io::ErrorKind::NotFound));
            assert_eq!(
                source.to_string(),
                "no coordinator holds this staging directory (it died; gc removes the staging)"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(common::tree(&staging), vec![".parts".to_string()]);
}

/// An empty directory and its `file://` root.
fn file_root(dir: &Path) -> Location {
    std::fs::create_dir_all(dir).unwrap();
    Location::parse(&format!("file://{}", dir.display()), &StorageOptions::new()).unwrap()
}

#[test]
fn object_store_parts_stage_beside_the_version_and_commit_the_single_machine_bytes() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let single = single_machine(&dir.path().join("single"), &batches, small_options());
    let reference = files(&single);
    // the version's directories, and no other (file://: the parts' prefix's
    // directories go with its objects; they stayed, empty, and `ls` reported
    // each as "named like a parts' prefix but without its marker")
    let layout: Vec<String> =
        std::iter::once("v1".to_string()).chain(common::tree(&single).into_iter().map(|e| format!("v1/{e}"))).collect();
    for parts in [1u32, 2, 4] {
        let root_dir = dir.path().join(format!("obj-{parts}"));
        let root = file_root(&root_dir);
        let write = plan_at(&root, &batches, small_options(), parts).unwrap();
        let id = write.write_id().to_string();
        assert_eq!((id.len(), id.bytes().all(|b| b.is_ascii_hexdigit())), (32, true), "{id}");
        let prefix = format!(".tmp-v1-{id}");
        assert_eq!(write.staging_dir(), PathBuf::from(format!("file://{}/dist/{prefix}", root_dir.display())));
        let order: Vec<usize> = (0..parts as usize).rev().collect();
        let records = run_parts(&write, &batches, Partitioning::ReversedSingleRows, &order);
        // the workers wrote only under the parts' prefix; the version holds its claim alone
        let staged: Vec<String> = files(&root_dir.join("dist")).into_keys().collect();
        let shards: Vec<&String> =
            staged.iter().filter(|k| k.starts_with(&format!("{prefix}/time_series/shard-"))).collect();
        assert_eq!(shards.len(), reference.keys().filter(|k| k.starts_with("time_series/shard-")).count());
        // and the parts' marker, put first by the coordinator
        assert_eq!(staged.len(), shards.len() + 2, "{staged:?}");
        assert!(staged.contains(&"v1/_timef_claim.json".to_string()), "{staged:?}");
        assert!(staged.contains(&format!("{prefix}/_timef_parts.json")), "{staged:?}");
        let version = write.commit(&records).unwrap();
        assert_eq!(version, PathBuf::from(format!("file://{}/dist/v1", root_dir.display())));
        assert_eq!(files(&root_dir.join("dist/v1")), reference, "{parts} parts");
        // no claim, no parts' prefix left
        assert_eq!(common::tree(&root_dir.join("dist")), layout, "{parts} parts");
    }
    // a shard target whose shards an object store could not copy in one request is refused up front
    let huge = WriterOptions::builder().shard_target_bytes(5 << 30).try_build().unwrap();
    let root_dir = dir.path().join("huge");
    match plan_at(&file_root(&root_dir), &batches, huge, 2).unwrap_err() {
        Error::InvalidOption { option, reason } => {
            assert_eq!(option, "shard_target_bytes");
            assert!(reason.ends_with("at most 5368709120 bytes (S3 CopyObject)"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(files(&root_dir).is_empty());
}

#[test]
fn object_store_a_stale_worker_of_an_aborted_write_never_touches_the_next_one() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let reference = files(&single_machine(&dir.path().join("single"), &batches, small_options()));
    let root_dir = dir.path().join("obj");
    let root = file_root(&root_dir);
    let a = plan_at(&root, &batches, small_options(), 2).unwrap();
    let a_tasks = a.part_tasks();
    let a_prefix = root_dir.join(format!("dist/.tmp-v1-{}", a.write_id()));
    a.abort();
    // nothing, not even the directories its claim and marker made
    assert_eq!(common::tree(&root_dir), Vec::<String>::new());
    let b = plan_at(&root, &batches, small_options(), 2).unwrap();
    let records = run_parts(&b, &batches, Partitioning::Grouped, &[1, 0]);
    // a worker of A that starts now is refused: the claim holds B's id
    match write_part(&a_tasks[0], series_of(&a_tasks[0], &batches), &StorageOptions::new()).unwrap_err() {
        Error::Io { path, source } => {
            let claim = format!("file://{}/dist/v1/_timef_claim.json", root_dir.display());
            assert_eq!((path, source.kind()), (PathBuf::from(claim), std::io::ErrorKind::NotFound));
        }
        other => panic!("{other:?}"),
    }
    assert!(files(&a_prefix).is_empty());
    // one that passed its check before the abort and was killed right after its
    // upload (a live one deletes its file when its check after the upload
    // fails): the file lands under A's prefix, never under the version
    std::fs::create_dir_all(a_prefix.join("time_series")).unwrap();
    std::fs::write(a_prefix.join("time_series/shard-00000.parquet"), b"late bytes of write A").unwrap();
    b.commit(&records).unwrap();
    assert_eq!(files(&root_dir.join("dist/v1")), reference);
    // A's marker went with its abort: nothing marks the late file as a
    // writer's, so gc keeps it and reports it
    let a_url = format!("file://{}", a_prefix.display());
    let dry = gc_dry_run(&root, 0).unwrap();
    assert_eq!((dry.removed_claims.clone(), dry.removed_files.clone()), (vec![], vec![]));
    assert_eq!(dry.odd.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(), [a_url]);
    assert_eq!(gc(&root, 0).unwrap(), dry);
    assert!(a_prefix.join("time_series/shard-00000.parquet").exists());
    let left = files(&root_dir.join("dist"));
    assert_eq!(left.len(), reference.len() + 1, "{:?}", left.keys());
    assert_eq!(files(&root_dir.join("dist/v1")), reference);
}

#[test]
fn object_store_abort_while_a_worker_uploads_blocks_nothing() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let root_dir = dir.path().join("obj");
    let root = file_root(&root_dir);
    let a = plan_at(&root, &batches, small_options(), 2).unwrap();
    let tasks = a.part_tasks();
    let a_prefix = root_dir.join(format!("dist/.tmp-v1-{}", a.write_id()));
    write_part(&tasks[0], series_of(&tasks[0], &batches), &StorageOptions::new()).unwrap();
    assert!(files(&a_prefix).keys().any(|k| k.starts_with("time_series/shard-")));
    a.abort();
    assert_eq!(common::tree(&root_dir), Vec::<String>::new());
    // the other worker's upload completes after the abort, and it is killed
    // before its check after the upload would delete it
    std::fs::create_dir_all(a_prefix.join("time_series")).unwrap();
    std::fs::write(a_prefix.join("time_series/shard-00007.parquet"), b"uploaded after the abort").unwrap();
    // a worker that starts after it: refused, nothing added
    match write_part(&tasks[1], series_of(&tasks[1], &batches), &StorageOptions::new()).unwrap_err() {
        Error::Io { source, .. } => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    assert_eq!(files(&root_dir).len(), 1);
    // the late object is not in the way of the version: it plans again
    plan_at(&root, &batches, small_options(), 2).unwrap().abort();
    // unmarked (the abort removed A's marker last): gc keeps it; `dist` holds
    // no version and no marked prefix, so it is not even a dataset to report on
    let report = gc(&root, 0).unwrap();
    assert_eq!(report, GcReport::default());
    assert_eq!(files(&root_dir).len(), 1);
}

/// Sets the modification time of `path` to `age_s` seconds ago.
fn age(path: &Path, age_s: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_s);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

#[test]
fn object_store_gc_keeps_a_live_distributed_write_however_old_its_claim() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let reference = files(&single_machine(&dir.path().join("single"), &batches, small_options()));
    let root_dir = dir.path().join("obj");
    let root = file_root(&root_dir);
    let write = plan_at(&root, &batches, small_options(), 2).unwrap();
    let tasks = write.part_tasks();
    let first = write_part(&tasks[0], series_of(&tasks[0], &batches), &StorageOptions::new()).unwrap();
    // its claim is two hours old, its parts are being uploaded now
    let claim = root_dir.join("dist/v1/_timef_claim.json");
    age(&claim, 7200);
    // what a dead write of the same version left two hours ago
    let dead = root_dir.join(format!("dist/.tmp-v1-{}", "0123456789abcdef".repeat(2)));
    std::fs::create_dir_all(dead.join("time_series")).unwrap();
    std::fs::write(dead.join("time_series/shard-00000.parquet"), b"dead").unwrap();
    // a marker is a writer's by its content: it names the prefix's write id
    let marker = format!(r#"{{"write_id":"{}"}}"#, "0123456789abcdef".repeat(2));
    std::fs::write(dead.join("_timef_parts.json"), marker).unwrap();
    age(&dead.join("time_series/shard-00000.parquet"), 7200);
    age(&dead.join("_timef_parts.json"), 7200);
    let report = gc(&root, 3600).unwrap();
    assert_eq!(report.removed_claims, vec![format!("file://{}", dead.display())]);
    // the marker last
    let removed = ["time_series/shard-00000.parquet", "_timef_parts.json"];
    assert_eq!(report.removed_files, removed.map(|f| format!("file://{}/{f}", dead.display())));
    assert_eq!(
        report.kept_claims,
        vec![format!("file://{}", claim.display()), write.staging_dir().display().to_string()]
    );
    // and the write goes on to commit
    let second = write_part(&tasks[1], series_of(&tasks[1], &batches), &StorageOptions::new()).unwrap();
    write.commit(&[first, second]).unwrap();
    assert_eq!(files(&root_dir.join("dist/v1")), reference);
    assert_eq!(files(&root_dir.join("dist")).len(), reference.len());
}

#[test]
fn a_duplicate_part_racing_the_commit_leaves_no_scratch_in_the_version() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let reference = files(&single_machine(&dir.path().join("single"), &batches, small_options()));
    let mut mid_write = 0;
    for round in 0..6 {
        let root = dir.path().join(format!("race-{round}"));
        let write = plan(&root, &batches, small_options(), 2);
        let records = run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
        let task = write.part_tasks()[1].clone();
        let series = series_of(&task, &batches);
        let staging = write.staging_dir();
        // a speculative copy of part 1 runs again and again until the write is
        // over: refused at its start, or stopped mid-write by the commit
        let (version, stopped_at) = std::thread::scope(|s| {
            let duplicate = s.spawn(|| loop {
                match write_part(&task, series.clone(), &StorageOptions::new()) {
                    Ok(record) => assert_eq!(record, records[1]),
                    Err(Error::Io { path, source }) if source.kind() == std::io::ErrorKind::NotFound => return path,
                    Err(other) => panic!("{other:?}"),
                }
            });
            (write.commit(&records).unwrap(), duplicate.join().unwrap())
        });
        mid_write += usize::from(stopped_at != staging);
        assert_eq!(files(&version), reference, "round {round}");
        assert!(common::tree(&version).iter().all(|p| !p.starts_with(".parts")), "round {round}");
        let left: Vec<_> = std::fs::read_dir(root.join("dist")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("v1")], "round {round}");
    }
    println!("{mid_write} of 6 rounds stopped the duplicate part mid-write");
}

/// A local-path `gc` of a root a distributed write writes through a
/// `file://` URL: the parts' prefix is named like a local writer's staging
/// (`.tmp-<version>-<32 letters and digits>`) but holds the parts' marker,
/// so it is reported (cleared only through the URL), never removed, like the
/// write's claim; the write then commits.
#[test]
fn a_local_path_gc_keeps_the_parts_of_a_write_through_a_file_url() {
    let batches = generated_input();
    let dir = tempfile::tempdir().unwrap();
    let root_dir = dir.path().join("obj");
    let write = plan_at(&file_root(&root_dir), &batches, small_options(), 2).unwrap();
    let records = run_parts(&write, &batches, Partitioning::Grouped, &[0, 1]);
    let before = files(&root_dir);
    let report = timef::storage::gc(&Location::local(&root_dir), 0).unwrap();
    let prefix = root_dir.join(format!("dist/.tmp-v1-{}", write.write_id()));
    let odd: Vec<(String, String)> = vec![
        (
            prefix.display().to_string(),
            "holds the parts of a distributed write through a file:// URL: run gc or ls on the file:// URL of the \
             root to clear it; kept"
                .to_string(),
        ),
        (
            root_dir.join("dist/v1").display().to_string(),
            "holds a claim of a write through a file:// URL: run gc or ls on the file:// URL of the root to clear \
             it; kept"
                .to_string(),
        ),
    ];
    assert_eq!((report.removed_claims, report.removed_files, report.odd), (vec![], vec![], odd));
    assert_eq!(files(&root_dir), before);
    write.commit(&records).unwrap();
}
