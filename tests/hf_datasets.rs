//! Every file of a version loads in the readers ML users have: Hugging Face
//! `datasets` (`load_dataset("parquet", ...)`, non-streaming and streaming),
//! pyarrow, polars, DuckDB and pandas, with the values and ids `timef` reads.
//!
//! Versions: ItalyPowerDemand (UCR) ingested by the CLI with string ids and
//! with uuid16 ids (`--ids uuid`), the hierarchical Monash file with uuid16 ids
//! (sample metadata, forecasting tasks, no annotations), and the committed
//! golden version (mixed id encodings, every task kind). For each, this test
//! writes what the Rust reader reads, file by file and row by row, to
//! `expected.json`; `tests/py/hf_readers.py` loads every file with each reader
//! and compares. Its report goes to the test's stderr unbuffered, so CI logs
//! show what was checked.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use timef::reader::Version;

use common::*;

fn opt_list(v: &Option<Vec<String>>) -> Value {
    v.as_ref().map_or(Value::Null, |l| json!(l))
}

/// Every file of the version at `dir` as the Rust reader reads it: relative
/// path -> rows in file order, each row an object with the file's columns in
/// file order (ids as canonical strings, float32 values widened exactly).
fn expected_rows(dir: &Path) -> Value {
    let v = Version::open(dir).expect("open version");
    let mut files = serde_json::Map::new();
    let samples: Vec<Value> = v
        .samples()
        .unwrap()
        .iter()
        .map(|s| {
            let metadata = (!s.metadata.is_empty()).then(|| json!(s.metadata.iter().collect::<Vec<_>>()));
            json!({
                "sample_id": s.sample_id, "source_id": s.source_id, "subject_id": s.subject_id,
                "t_start_s": s.t_start_s, "t_end_s": s.t_end_s,
                "series": s.series.iter().map(|r| json!({"time_series_id": r.time_series_id, "view": r.view})).collect::<Vec<_>>(),
                "metadata": metadata,
            })
        })
        .collect();
    files.insert("samples.parquet".into(), json!(samples));
    let annotations: Vec<Value> = v
        .annotations()
        .unwrap()
        .iter()
        .map(|(sample, a)| {
            json!({
                "sample_id": sample, "annotation_id": a.annotation_id, "annotation_type": a.annotation_type,
                "key": a.key, "value_str": a.value_str, "value_num": a.value_num,
                "t_start_s": a.t_start_s, "t_end_s": a.t_end_s, "channel": a.channel,
            })
        })
        .collect();
    files.insert("annotations.parquet".into(), json!(annotations));
    for name in v.task_names() {
        let tasks: Vec<Value> = v
            .tasks(&name)
            .unwrap()
            .iter()
            .map(|t| {
                json!({
                    "task_id": t.task_id, "task_type": t.task_type.as_str(), "split": t.split,
                    "sample_ids": t.sample_ids, "target": t.target, "target_sample_id": t.target_sample_id,
                    "context_sample_ids": opt_list(&t.context_sample_ids), "from_task": t.from_task,
                    "horizon": t.horizon, "prompt": t.prompt, "answer": t.answer,
                })
            })
            .collect();
        files.insert(format!("tasks/task={name}/part-0.parquet"), json!(tasks));
    }
    let index = v.index().unwrap();
    let rows: Vec<Value> = index
        .iter()
        .map(|e| {
            let m = &e.meta;
            json!({
                "time_series_id": m.time_series_id, "chunk_idx": e.chunk_idx, "spec_type": m.spec_type,
                "channel": m.channel, "units": m.units, "sampling_rate_hz": m.sampling_rate_hz,
                "t_start_s": m.t_start_s, "t_end_s": m.t_end_s, "value_offset": e.value_offset,
                "n_values": e.n_values, "shard_path": e.shard_path, "row_group": e.row_group,
                "row_offset": e.row_offset, "min": e.min, "max": e.max, "mean": e.mean, "std": e.std,
            })
        })
        .collect();
    files.insert("time_series_index.parquet".into(), json!(rows));
    // shard rows: the index is in shard order, and its pointers say where each chunk is
    let mut shards: std::collections::BTreeMap<&str, Vec<(i32, i32, Value)>> = Default::default();
    for e in index {
        let all = v.read_series(&e.meta.time_series_id).unwrap();
        let start = usize::try_from(e.value_offset).unwrap();
        let chunk = &all[start..start + usize::try_from(e.n_values).unwrap()];
        let row = json!({
            "time_series_id": e.meta.time_series_id, "chunk_idx": e.chunk_idx, "spec_type": e.meta.spec_type,
            "channel": e.meta.channel, "values": chunk,
        });
        shards.entry(&e.shard_path).or_default().push((e.row_group, e.row_offset, row));
    }
    for (path, mut rows) in shards {
        rows.sort_by_key(|(g, o, _)| (*g, *o));
        files.insert(path.to_string(), json!(rows.into_iter().map(|(_, _, r)| r).collect::<Vec<_>>()));
    }
    let mut keys: Vec<String> = files.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, listed_files(dir), "expected rows for exactly the listed files");
    json!({ "id_encoding": v.manifest().id_encoding, "files": files })
}

/// Ingests `file` with the CLI; returns the version directory.
fn ingest(root: &Path, format: &str, file: &Path, name: &str, ids: &str) -> PathBuf {
    let root_s = root.to_str().unwrap();
    let args = ["ingest", format, "--root", root_s, "--name", name, "--version", ids, "--ids", ids];
    let mut args: Vec<&str> = args.to_vec();
    args.push(file.to_str().unwrap());
    let (code, _, stderr) = cli(&args);
    assert_eq!(code, 0, "{stderr}");
    root.join(name).join(ids)
}

#[test]
fn every_file_loads_in_datasets_pyarrow_polars_duckdb_and_pandas() {
    let tmp = tempfile::tempdir().unwrap();
    let ucr = real("ucr/ItalyPowerDemand_TRAIN.ts");
    let tsf = real("tsf/UnitTest_Tsf_Loader_hierarchical.tsf");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let versions = [
        ingest(tmp.path(), "ucr", &ucr, "ItalyPowerDemand", "string"),
        ingest(tmp.path(), "ucr", &ucr, "ItalyPowerDemand", "uuid"),
        ingest(tmp.path(), "tsf", &tsf, "monash", "uuid"),
        golden,
    ];
    let enc = |dir: &Path| Version::open(dir).unwrap().manifest().id_encoding.clone();
    assert!(enc(&versions[0]).values().all(|e| e == "string"));
    assert_eq!(enc(&versions[1])["sample_id"], "uuid16");
    assert_eq!(enc(&versions[1])["time_series_id"], "uuid16");
    for (i, dir) in versions.iter().enumerate() {
        assert_conforming(dir);
        let expected = tmp.path().join(format!("expected-{i}.json"));
        std::fs::write(&expected, serde_json::to_vec(&expected_rows(dir)).unwrap()).unwrap();
        let Some(report) = py_script("hf_readers.py", &[dir.to_str().unwrap(), expected.to_str().unwrap()]) else {
            return;
        };
        // straight to stderr, past the test harness's capture: CI shows what was compared
        let _ = std::io::stderr().write_all(report.as_bytes());
        let files = listed_files(dir).len();
        let last = report.lines().last().unwrap_or_default();
        assert_eq!(last, format!("all equal: {files} files x 6 readers"), "{report}");
    }
}
