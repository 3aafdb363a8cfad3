//! Shared harness of the integration tests: fixed datasets, writing and
//! committing them, and the independent conformance checker.
#![allow(dead_code)]

pub mod store;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use timef::*;

/// `../shared/tools/<tool>` beside the checkout (the independent checker
/// `timef_check.py`, the pyarrow peer `ref_writer.py`, `gen_bench.py`), if
/// present. A plain clone has no `../shared`: the check that needs it prints a
/// visible "skipped" line naming `what` and returns None. With
/// `TIMEF_REQUIRE_SHARED` set (`.ci/run` sets it when `../shared` is there, as
/// in CI) its absence fails the test instead of skipping.
pub fn shared_tool(tool: &str, what: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools").join(tool);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("TIMEF_REQUIRE_SHARED").is_none(),
        "TIMEF_REQUIRE_SHARED is set: ../shared/tools/{tool} must be beside the checkout"
    );
    skipped(&format!("{what}: ../shared not found (../shared/tools/{tool})"));
    None
}

/// Prints `skipped: <why>` on the test process's stderr directly, past the
/// test harness's output capture, so a skip shows in `cargo test`'s output
/// even when the test passes.
pub fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// The S3 server's endpoint, which must be on 127.0.0.1; None (with a visible
/// "skipped" line) outside CI when there is none; a failure under CI.
pub fn s3_endpoint(test: &str) -> Option<String> {
    match std::env::var("TIMEF_TEST_S3_ENDPOINT") {
        Ok(e) if !e.is_empty() => {
            assert!(e.starts_with("http://127.0.0.1:"), "tests only talk to 127.0.0.1, not {e}");
            Some(e)
        }
        _ => {
            assert!(std::env::var_os("CI").is_none(), "CI must start the S3 server (.ci/run): {test}");
            skipped(&format!("{test}: no S3 server (set TIMEF_TEST_S3_ENDPOINT or run .ci/run)"));
            None
        }
    }
}

/// Storage options for the test S3 server at `endpoint` (moto's test credentials).
pub fn s3_options(endpoint: &str) -> timef::storage::StorageOptions {
    [
        ("aws_endpoint", endpoint),
        ("aws_allow_http", "true"),
        ("aws_access_key_id", "testing"),
        ("aws_secret_access_key", "testing"),
        ("aws_region", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// An `object_store` S3 client of the test's own for `bucket` with `options`,
/// to look at (or change) what a writer left; built as a program that brings
/// its own client does (`timef::storage::install_tls_provider` first).
#[cfg(feature = "s3")]
pub fn raw_s3_store(
    bucket: &str,
    options: &timef::storage::StorageOptions,
) -> std::sync::Arc<dyn object_store::ObjectStore> {
    timef::storage::install_tls_provider();
    let mut b = object_store::aws::AmazonS3Builder::new().with_bucket_name(bucket);
    for (k, v) in options {
        b = b.with_config(k.parse().expect("an S3 option"), v);
    }
    std::sync::Arc::new(b.build().expect("an S3 client"))
}

/// Adds sample `sample_id` of source `src` listing the series `series` (main role).
pub fn add_sample_of(d: &mut TimeFDataset, sample_id: &str, series: &[&str]) {
    d.add_sample(Sample {
        sample_id: sample_id.into(),
        source_id: "src".into(),
        series: main_refs(series),
        ..Default::default()
    })
    .unwrap();
}

/// A real data file under `tests/data/real/` (public archive files, cited in its README).
pub fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/real").join(rel)
}

/// An input file under `tests/data/inputs/` (small GluonTS-style inputs, see its README).
pub fn input(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inputs").join(rel)
}

/// Writes a GluonTS-style Parquet file at `path`: one row per id of `ids`
/// (`item_id`), each with the `target` values 1, 2, 3.
pub fn gluonts_parquet(path: &Path, ids: &[&str]) {
    use std::sync::Arc;
    let mut target = arrow_array::builder::ListBuilder::new(arrow_array::builder::Float32Builder::new());
    for _ in ids {
        target.values().append_slice(&[1.0, 2.0, 3.0]);
        target.append(true);
    }
    let batch = arrow_array::RecordBatch::try_from_iter([
        ("item_id", Arc::new(arrow_array::StringArray::from(ids.to_vec())) as arrow_array::ArrayRef),
        ("target", Arc::new(target.finish()) as arrow_array::ArrayRef),
    ])
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Small options that make every layout rule fire on tiny data:
/// 1 KiB chunks (256 values), 4 KiB row groups, 16 KiB shards.
pub fn small_options() -> WriterOptions {
    WriterOptions::builder()
        .chunk_max_bytes(1024)
        .row_group_target_bytes(4096)
        .shard_target_bytes(16384)
        .try_build()
        .expect("valid options")
}

/// Deterministic values of series `seed` with `n` values (quantized sine plus a ramp).
pub fn values(seed: u32, n: usize) -> Vec<f32> {
    (0..n).map(|k| ((k as f32 * 0.05 + seed as f32).sin() * 100.0).round() / 100.0 + seed as f32).collect()
}

/// Adds a series with deterministic values.
pub fn add_series(d: &mut TimeFDataset, id: &str, spec: &str, channel: &str, rate: f64, seed: u32, n: usize) {
    let v = values(seed, n);
    d.add_series(SeriesMeta::new(id, spec, channel, rate), Box::new(move || Ok(v.into()))).expect("valid series");
}

/// A dataset with only source `src`.
pub fn dataset_with_source(name: &str, version: &str) -> TimeFDataset {
    let mut d = TimeFDataset::new(name, version).expect("valid names");
    d.add_source(Source { source_id: "src".into(), name: "test source".into(), ..Default::default() }).unwrap();
    d
}

/// A sample's series list: `ids`, each in view `main`.
pub fn main_refs(ids: &[&str]) -> Vec<SeriesRef> {
    ids.iter().map(|id| SeriesRef { time_series_id: id.to_string(), view: "main".into() }).collect()
}

/// A small dataset of `samples` ECG samples with two channels each,
/// one `class` label per sample and one classification task.
pub fn ecg_dataset(name: &str, version: &str, samples: usize) -> TimeFDataset {
    let mut d = dataset_with_source(name, version);
    for i in 0..samples {
        let sid = format!("s{i:03}");
        let mut refs = Vec::new();
        for (c, ch) in ["I", "II"].iter().enumerate() {
            let id = format!("{sid}/{ch}");
            add_series(&mut d, &id, "ecg", ch, 500.0, (i * 2 + c) as u32, 300 + 97 * i);
            refs.push(SeriesRef { time_series_id: id, view: "main".into() });
        }
        d.add_sample(Sample {
            sample_id: sid.clone(),
            source_id: "src".into(),
            series: refs,
            metadata: BTreeMap::from([("site".to_string(), format!("site-{}", i % 2))]),
            ..Default::default()
        })
        .unwrap();
        d.add_annotation(
            Annotation {
                annotation_id: format!("{sid}/class"),
                annotation_type: "label".into(),
                key: "class".into(),
                value_str: Some(if i % 2 == 0 { "normal" } else { "afib" }.into()),
                ..Default::default()
            },
            std::slice::from_ref(&sid),
        )
        .unwrap();
    }
    let all: Vec<String> = (0..samples).map(|i| format!("s{i:03}")).collect();
    d.add_task(
        "diagnosis",
        Task {
            split: Some("train".into()),
            target: Some("class".into()),
            ..Task::new("t-diagnosis", TaskType::Classification, all)
        },
    )
    .unwrap();
    d
}

/// Writes and commits `d` under `root` with `options`.
pub fn commit(root: &Path, d: TimeFDataset, options: WriterOptions) -> PathBuf {
    TimeFWriter::new(root, options).write(d).expect("write").commit().expect("commit")
}

/// Every entry (files and directories) under `dir`, relative, sorted.
pub fn tree(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .flatten()
        .map(|e| e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The Python with pyarrow that `.ci/run` provides (`.venv/`), if present.
pub fn python() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    p.exists().then_some(p)
}

/// [`python`] for a check that needs it: panics if there is no venv under CI
/// (`CI` set), so a missing install step cannot pass silently; on a bare dev
/// machine returns None and says that `what` is skipped.
pub fn require_python(what: &str) -> Option<PathBuf> {
    let py = python();
    if py.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must provide .venv with pyarrow");
        skipped(&format!("{what}: no .venv with pyarrow (run .ci/run once)"));
    }
    py
}

/// Runs the independent checker `../shared/tools/timef_check.py` on
/// `version_dir` with `extra` arguments; returns its last line (and the whole
/// output when it fails). None (with a visible "skipped" line) when there is
/// no venv or no `../shared` outside CI; under CI both must be there.
pub fn timef_check(version_dir: &Path, extra: &[&str]) -> Option<String> {
    let script = shared_tool("timef_check.py", "independent conformance check (timef_check.py)")?;
    run_check(&script, version_dir, extra)
}

/// Runs the project's own conformance check `tests/py/conformance.py` (pyarrow
/// alone) on `version_dir`; returns its last line (and the whole output when it fails).
pub fn own_check(version_dir: &Path) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/conformance.py");
    run_check(&script, version_dir, &[])
}

fn run_check(script: &Path, version_dir: &Path, extra: &[&str]) -> Option<String> {
    let py = require_python("conformance check")?;
    let out = Command::new(py).arg(script).arg(version_dir).args(extra).output().expect("run a conformance check");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = text.lines().last().unwrap_or("").to_string();
    Some(if out.status.success() { last } else { format!("{last}\n{text}{}", String::from_utf8_lossy(&out.stderr)) })
}

/// Asserts that `version_dir` is conforming: per the project's own check
/// (`tests/py/conformance.py`) and, where `../shared` is beside the checkout,
/// per the independent `timef_check.py`, every area including page CRCs.
pub fn assert_conforming(version_dir: &Path) {
    if let Some(last) = own_check(version_dir) {
        assert_eq!(last, "conforming: 0 violation(s)", "{}", version_dir.display());
    }
    if let Some(last) = timef_check(version_dir, &[]) {
        assert_eq!(last, "conforming: 0 violation(s)", "{}", version_dir.display());
    }
}

/// Runs the `timef` binary with `args`; returns (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_timef")).args(args).output().expect("run timef");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `cmd` (a `timef` run) started paused at `point`
/// (`TIMEF_TEST_PAUSE_AT`; with `resume_on`, `TIMEF_TEST_RESUME_ON`: it goes
/// on once that file exists); returns once it says it paused there, with its
/// stderr lines after that (stdout piped, unread).
pub fn start_paused(
    mut cmd: Command,
    point: &str,
    resume_on: Option<&Path>,
) -> (std::process::Child, impl Iterator<Item = String> + Send + 'static) {
    use std::io::{BufRead, BufReader};
    cmd.env(timef::storage::PAUSE_AT_ENV, point)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(file) = resume_on {
        cmd.env(timef::storage::RESUME_ON_ENV, file);
    }
    let mut child = cmd.spawn().expect("run timef");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines().map_while(Result::ok);
    let want = format!("timef: paused at {point}");
    let mut before = Vec::new();
    loop {
        match lines.next() {
            Some(line) if line == want => break,
            Some(line) => before.push(line),
            None => panic!("{point}: timef ended before pausing ({:?}): {before:?}", child.wait()),
        }
    }
    (child, lines)
}

/// Runs `cmd` (a `timef` write) paused at `point` until `resume_on` exists
/// ([`start_paused`]), sends it SIGINT there, waits until it says it aborts,
/// lets it go on and waits for it (30 s at most: a writer still running then
/// fails the test). Returns its exit code and the stderr lines after the
/// abort message.
pub fn ctrl_c_at(cmd: Command, point: &str, resume_on: &Path) -> (Option<i32>, Vec<String>) {
    let (mut child, mut lines) = start_paused(cmd, point, Some(resume_on));
    let mut wait_for = |want: &str| lines.by_ref().take_while(|l| l != want).collect::<Vec<String>>();
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill -INT");
    assert!(kill.success());
    let said = wait_for("timef: interrupted, stopping and removing what this run wrote (Ctrl-C again to exit now)");
    assert!(said.is_empty(), "{point}: {said:?}");
    std::fs::write(resume_on, b"").expect("the resume file");
    let start = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{point}: still writing 30 s after Ctrl-C and the resume");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (code, lines.collect())
}

/// Asserts that `stderr` (a write's lines after Ctrl-C) is the one error
/// line of an interrupted write.
pub fn assert_interrupted_error(point: &str, stderr: &[String]) {
    assert_eq!(stderr.len(), 1, "{point}: {stderr:?}");
    assert!(
        stderr[0].starts_with("timef: error: ") && stderr[0].ends_with("interrupted (Ctrl-C)"),
        "{point}: {stderr:?}"
    );
}

/// Runs a Python script file under `tests/py/` with the venv's Python; returns
/// stdout, panicking with stderr on failure. `None` when there is no venv outside CI.
pub fn py_script(script: &str, args: &[&str]) -> Option<String> {
    let py = require_python(script)?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py").join(script);
    let out = Command::new(py).arg(path).args(args).output().expect("run python");
    assert!(
        out.status.success(),
        "{script} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs one of the shared tools (`gen_bench.py`, `ref_writer.py`, ...) with the
/// venv's Python; None (with a visible "skipped" line) where there is no venv
/// or no `../shared` outside CI.
pub fn py_tool(tool: &str, args: &[&str]) -> Option<String> {
    let script = shared_tool(tool, &format!("{tool} run"))?;
    let py = require_python(tool)?;
    let out = Command::new(py).arg(script).args(args).output().expect("run python");
    assert!(out.status.success(), "{tool} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Copies the directory tree `src` to `dst` (which must not exist).
pub fn copy_dir(src: &Path, dst: &Path) {
    for e in walkdir::WalkDir::new(src) {
        let e = e.unwrap();
        let to = dst.join(e.path().strip_prefix(src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Replaces `rel` in the version at `dir` with `bytes` and makes the manifest's
/// size and sha256 agree, so that only the structural checks can object.
pub fn replace_file(dir: &Path, rel: &str, bytes: &[u8]) {
    use sha2::Digest;
    std::fs::write(dir.join(rel), bytes).unwrap();
    let path = dir.join("manifest.json");
    let mut m = timef::manifest::Manifest::parse(&std::fs::read(&path).unwrap()).unwrap();
    let entry = m.files.iter_mut().find(|f| f.path == rel).unwrap();
    entry.bytes = bytes.len() as u64;
    entry.sha256 = hex::encode(sha2::Sha256::digest(bytes));
    // canonical and, when the manifest has a seal, resealed: as a writer would have written it
    let m = if m.manifest_sha256.is_some() { m.sealed() } else { m };
    std::fs::write(path, m.to_bytes()).unwrap();
}

/// XORs the byte at `pos` of the file at `path` with `mask`.
pub fn flip_byte(path: &Path, pos: u64, mask: u8) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[pos as usize] ^= mask;
    std::fs::write(path, bytes).unwrap();
}

/// The relative paths of every file the manifest of the version at `dir` lists (all Parquet).
pub fn listed_files(dir: &Path) -> Vec<String> {
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}

/// One page of a Parquet file, found by walking its column chunks.
#[derive(Debug, Clone)]
pub struct FilePage {
    /// Row group.
    pub row_group: usize,
    /// Leaf column path, e.g. `values.list.element`.
    pub column: String,
    /// The page as stored.
    pub page: timef::thrift::StoredPage,
}

/// Every page of every column chunk of the Parquet file at `path`, walked
/// from the chunk ranges of its footer with `timef::thrift::chunk_pages`.
pub fn file_pages(path: &Path) -> Vec<FilePage> {
    let bytes = std::fs::read(path).unwrap();
    let file = std::fs::File::open(path).unwrap();
    let meta = parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&file).unwrap();
    let mut out = Vec::new();
    for (row_group, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            let (start, len) = col.byte_range();
            let chunk = &bytes[start as usize..(start + len) as usize];
            for page in timef::thrift::chunk_pages(chunk, start, len) {
                out.push(FilePage { row_group, column: col.column_path().string(), page: page.unwrap() });
            }
        }
    }
    out
}

/// The byte range of the Parquet footer (file metadata) of the file at `path`.
pub fn footer_range(path: &Path) -> std::ops::Range<u64> {
    let bytes = std::fs::read(path).unwrap();
    let n = bytes.len();
    assert_eq!(&bytes[n - 4..], b"PAR1");
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as u64;
    (n as u64 - 8 - footer_len)..(n as u64 - 8)
}

/// A dataset spelled out entity by entity, so that a test can build it (in
/// the order of these lists, or any other) and compare what it reads back
/// against the same lists.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub info: DatasetInfo,
    pub sources: Vec<Source>,
    pub series: Vec<(SeriesMeta, Vec<f32>)>,
    pub samples: Vec<Sample>,
    /// Each annotation with the samples it is attached to.
    pub annotations: Vec<(Annotation, Vec<String>)>,
    /// `(task name, task)`.
    pub tasks: Vec<(String, Task)>,
}

impl Fixture {
    /// The dataset, with entities inserted in list order.
    pub fn dataset(&self) -> TimeFDataset {
        let mut d = TimeFDataset::new(&self.info.name, &self.info.version).expect("valid names");
        d.info = self.info.clone();
        for s in &self.sources {
            d.add_source(s.clone()).expect("valid source");
        }
        for (meta, v) in &self.series {
            let v = v.clone();
            d.add_series(meta.clone(), Box::new(move || Ok(v.into()))).expect("valid series");
        }
        for s in &self.samples {
            d.add_sample(s.clone()).expect("valid sample");
        }
        for (a, samples) in &self.annotations {
            d.add_annotation(a.clone(), samples).expect("valid annotation");
        }
        for (name, t) in &self.tasks {
            d.add_task(name, t.clone()).expect("valid task");
        }
        d
    }

    /// The values of series `id`.
    pub fn values_of(&self, id: &str) -> &[f32] {
        &self.series.iter().find(|(m, _)| m.time_series_id == id).expect("known series").1
    }
}

/// A fixed UUIDv7-shaped canonical id (version nibble 7, RFC variant) ending in `tag`.
pub fn uuid7(tag: u64) -> String {
    format!("0190f5a2-7c3e-7d41-9b6a-{tag:012x}")
}

/// Sample ids of [`golden_fixture`] (canonical UUIDs: the `sample_id` space is uuid16).
pub fn golden_sample(n: u64) -> String {
    uuid7(0x5000 + n)
}

/// The fixed dataset of `golden/` (and of the round-trip and determinism tests):
/// three samples over five series (two ECG channels and one respiration
/// channel; units on some, wall-clock start and `t_end_s` on others), a sample
/// with a window and a subject, metadata maps (one empty), annotations of every
/// kind (one shared by two samples, one event with bounds and channel), and one
/// task of each kind (classification, regression, forecasting, qa) with one
/// deriving from another. Sample, annotation and subject ids are canonical UUIDs
/// (uuid16); series, task and source ids are plain strings.
/// With [`small_options`] its 6 000 values make several chunks, row groups and two shards.
pub fn golden_fixture() -> Fixture {
    let ecg = |id: &str, ch: &str, rate: f64, t0: f64, n: usize, seed: u32, with_end: bool| {
        let meta = SeriesMeta {
            units: Some("mV".into()),
            t_start_s: t0,
            t_end_s: with_end.then(|| t0 + n as f64 / rate),
            ..SeriesMeta::new(id, "ecg", ch, rate)
        };
        (meta, values(seed, n))
    };
    let resp = SeriesMeta { t_start_s: 1_700_000_000.0, ..SeriesMeta::new("rec-b/resp", "resp", "chest", 25.0) };
    let series = vec![
        ecg("rec-a/I", "I", 100.0, 0.0, 300, 1, true),
        ecg("rec-a/II", "II", 100.0, 0.0, 300, 2, true),
        ecg("rec-b/I", "I", 250.0, 1_700_000_000.0, 2300, 3, false),
        ecg("rec-b/II", "II", 250.0, 1_700_000_000.0, 2300, 4, false),
        (resp, values(5, 800)),
    ];
    let refs = |ids: &[(&str, &str)]| -> Vec<SeriesRef> {
        ids.iter().map(|(id, view)| SeriesRef { time_series_id: id.to_string(), view: view.to_string() }).collect()
    };
    let meta = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let (s1, s2, s3) = (golden_sample(1), golden_sample(2), golden_sample(3));
    let samples = vec![
        Sample {
            sample_id: s1.clone(),
            source_id: "physionet".into(),
            subject_id: Some(uuid7(0xc001)),
            series: refs(&[("rec-a/I", "main"), ("rec-a/II", "main")]),
            metadata: meta(&[("age", "63"), ("site", "a")]),
            ..Default::default()
        },
        Sample {
            sample_id: s2.clone(),
            source_id: "physionet".into(),
            t_start_s: Some(0.5),
            t_end_s: Some(1.5),
            series: refs(&[("rec-a/II", "main")]),
            metadata: meta(&[("site", "a")]),
            ..Default::default()
        },
        Sample {
            sample_id: s3.clone(),
            source_id: "physionet".into(),
            series: refs(&[("rec-b/I", "main"), ("rec-b/II", "main"), ("rec-b/resp", "aux")]),
            ..Default::default()
        },
    ];
    let label = |tag: u64, value: &str| Annotation {
        annotation_id: uuid7(tag),
        annotation_type: "label".into(),
        key: "class".into(),
        value_str: Some(value.into()),
        ..Default::default()
    };
    let annotations = vec![
        (label(0xa001, "normal"), vec![s1.clone(), s2.clone()]),
        (label(0xa002, "afib"), vec![s3.clone()]),
        (
            Annotation {
                annotation_id: uuid7(0xa003),
                annotation_type: "event".into(),
                key: "beat".into(),
                value_str: Some("N".into()),
                t_start_s: Some(0.25),
                t_end_s: Some(0.4),
                channel: Some("II".into()),
                ..Default::default()
            },
            vec![s1.clone()],
        ),
        (
            Annotation {
                annotation_id: uuid7(0xa004),
                annotation_type: "number".into(),
                key: "heart_rate".into(),
                value_num: Some(72.5),
                ..Default::default()
            },
            vec![s1.clone()],
        ),
        (
            Annotation {
                annotation_id: uuid7(0xa005),
                annotation_type: "text".into(),
                key: "note".into(),
                value_str: Some("baseline wander".into()),
                ..Default::default()
            },
            vec![s3.clone()],
        ),
    ];
    let tasks = vec![
        (
            "diagnosis".to_string(),
            Task {
                split: Some("train".into()),
                target: Some("class".into()),
                ..Task::new("diag-1", TaskType::Classification, vec![s1.clone(), s3.clone()])
            },
        ),
        (
            "diagnosis".to_string(),
            Task {
                split: Some("test".into()),
                target: Some("class".into()),
                ..Task::new("diag-2", TaskType::Classification, vec![s2.clone()])
            },
        ),
        (
            "heart-rate".to_string(),
            Task {
                split: Some("train".into()),
                target: Some("heart_rate".into()),
                ..Task::new("hr-1", TaskType::Regression, vec![s1.clone()])
            },
        ),
        (
            "forecast".to_string(),
            Task {
                target: Some("II".into()),
                target_sample_id: Some(s2.clone()),
                context_sample_ids: Some(vec![s1.clone()]),
                horizon: Some(50),
                ..Task::new("fc-1", TaskType::Forecasting, vec![s1.clone(), s2.clone()])
            },
        ),
        (
            "qa".to_string(),
            Task {
                split: Some("val".into()),
                prompt: Some("Is the rhythm regular?".into()),
                answer: Some("no".into()),
                from_task: Some("diag-1".into()),
                ..Task::new("qa-1", TaskType::Qa, vec![s3.clone()])
            },
        ),
    ];
    Fixture {
        info: DatasetInfo {
            name: "golden".into(),
            version: "1.0.0".into(),
            description: Some("Fixed dataset of the TimeF test suite".into()),
            license: Some("CC0-1.0".into()),
            citation: Some("timef tests".into()),
        },
        sources: vec![Source {
            source_id: "physionet".into(),
            name: "PhysioNet (synthetic stand-in)".into(),
            url: Some("https://physionet.org".into()),
            license: Some("ODC-By-1.0".into()),
            citation: None,
        }],
        series,
        samples,
        annotations,
        tasks,
    }
}

/// Every regular file under `dir` with its bytes, keyed by `/`-separated relative path.
pub fn file_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    tree(dir)
        .into_iter()
        .filter(|rel| dir.join(rel).is_file())
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).expect("read file");
            (rel.replace(std::path::MAIN_SEPARATOR, "/"), bytes)
        })
        .collect()
}

/// Asserts that two directories hold the same files with the same bytes,
/// naming the first file that differs.
pub fn assert_same_files(want: &Path, got: &Path) {
    let (a, b) = (file_bytes(want), file_bytes(got));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "file lists differ");
    for (rel, bytes) in &a {
        assert!(bytes == &b[rel], "{rel} differs between {} and {}", want.display(), got.display());
    }
}

/// True when `TIMEF_REGENERATE_GOLDEN=1`: tests rewrite their committed
/// expectations (`golden/`, `schemas/arrow/`) instead of comparing (`golden/README.md`).
pub fn regenerate() -> bool {
    std::env::var("TIMEF_REGENERATE_GOLDEN").is_ok_and(|v| v == "1")
}

/// A whole Parquet file read through arrow-rs into one batch.
pub fn read_parquet(path: &Path) -> arrow_array::RecordBatch {
    let file = std::fs::File::open(path).expect("open parquet file");
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet footer");
    let schema = builder.schema().clone();
    let batches: Vec<_> = builder.build().expect("reader").collect::<Result<_, _>>().expect("decode");
    arrow_select::concat::concat_batches(&schema, &batches).expect("concat")
}

/// A Parquet file's footer, with its column and offset indexes.
pub fn parquet_metadata(path: &Path) -> parquet::file::metadata::ParquetMetaData {
    let file = std::fs::File::open(path).expect("open parquet file");
    parquet::file::metadata::ParquetMetaDataReader::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required)
        .parse_and_finish(&file)
        .expect("parquet footer with page index")
}

/// Column `name` of `batch`.
pub fn column<'a>(batch: &'a arrow_array::RecordBatch, name: &str) -> &'a arrow_array::ArrayRef {
    batch.column_by_name(name).unwrap_or_else(|| panic!("column {name} missing"))
}

/// The values of a UTF-8 column or of an id column (uuid16 `FixedSizeBinary(16)`
/// read back as canonical strings); `None` for nulls. Panics on any other type.
pub fn strings(col: &dyn arrow_array::Array) -> Vec<Option<String>> {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    match col.data_type() {
        DataType::FixedSizeBinary(16) => col
            .as_fixed_size_binary()
            .iter()
            .map(|b| b.map(|b| uuid::Uuid::from_slice(b).expect("16 bytes").hyphenated().to_string()))
            .collect(),
        DataType::Utf8 => col.as_string::<i32>().iter().map(|s| s.map(str::to_string)).collect(),
        // categoricals: the files' ARROW:schema declares them dictionary<int32, utf8>
        DataType::Dictionary(_, v) if **v == DataType::Utf8 => {
            strings(arrow_cast::cast(col, &DataType::Utf8).expect("cast").as_ref())
        }
        other => panic!("a string or id column of type {other}"),
    }
}

/// [`strings`] of a column without nulls.
pub fn required_strings(col: &dyn arrow_array::Array) -> Vec<String> {
    strings(col).into_iter().map(|s| s.expect("no null in a required column")).collect()
}

/// The rows of a list column of strings or ids; `None` for null lists.
pub fn string_lists(col: &dyn arrow_array::Array) -> Vec<Option<Vec<String>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    let list = col.as_list::<i32>();
    let items = required_strings(list.values().as_ref());
    let offsets = list.value_offsets();
    (0..list.len())
        .map(|i| list.is_valid(i).then(|| items[offsets[i] as usize..offsets[i + 1] as usize].to_vec()))
        .collect()
}

/// The values of a primitive column; `None` for nulls.
pub fn primitives<T: arrow_array::ArrowPrimitiveType>(col: &dyn arrow_array::Array) -> Vec<Option<T::Native>> {
    use arrow_array::cast::AsArray;
    col.as_primitive::<T>().iter().collect()
}

/// Sets size and sha256 of `rel` in the manifest to the file's (so only what
/// the test crafted is wrong).
pub fn reseal(dir: &Path, rel: &str) {
    use sha2::Digest;
    let bytes = std::fs::read(dir.join(rel)).unwrap();
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["path"] == rel {
            f["bytes"] = bytes.len().into();
            f["sha256"] = hex::encode(sha2::Sha256::digest(&bytes)).into();
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

/// Rewrites the index's column `name` (`f(old) -> new`, of the same type) and reseals it.
pub fn rewrite_index_column(dir: &Path, name: &str, f: impl FnOnce(&arrow_array::ArrayRef) -> arrow_array::ArrayRef) {
    let path = dir.join("time_series_index.parquet");
    let batch = read_parquet(&path);
    let i = batch.schema().index_of(name).unwrap();
    let mut columns: Vec<arrow_array::ArrayRef> = batch.columns().to_vec();
    columns[i] = f(&columns[i]);
    let batch = arrow_array::RecordBatch::try_new(batch.schema(), columns).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    reseal(dir, "time_series_index.parquet");
}

/// Rewrites the index's `shard_path` column (`f(row, old) -> new`) and reseals it.
pub fn rewrite_shard_paths(dir: &Path, f: impl Fn(usize, &str) -> String) {
    use arrow_array::Array;
    rewrite_index_column(dir, "shard_path", |column| {
        let old = arrow_cast::cast(column, &arrow_schema::DataType::Utf8).unwrap();
        let old = old.as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
        let new: arrow_array::StringArray = (0..old.len()).map(|r| Some(f(r, old.value(r)))).collect();
        arrow_cast::cast(&new, column.data_type()).unwrap()
    });
}

/// Rewrites the index's int32 column `name` (`f(&mut values)`) and reseals it.
pub fn rewrite_index_i32(dir: &Path, name: &str, f: impl FnOnce(&mut Vec<i32>)) {
    rewrite_index_column(dir, name, |column| {
        let mut v: Vec<i32> = primitives::<arrow_array::types::Int32Type>(column).into_iter().flatten().collect();
        f(&mut v);
        std::sync::Arc::new(arrow_array::Int32Array::from(v))
    });
}

/// `timef --quiet ingest ucr --root ROOT --name NAME --version VERSION FILE`
/// through the CLI; panics with its stderr unless it exits 0. Returns the version directory.
pub fn ingest_ucr(root: &Path, name: &str, version: &str, file: &Path) -> PathBuf {
    let args = ["--quiet", "ingest", "ucr", "--root", root.to_str().unwrap(), "--name", name, "--version", version];
    let mut args: Vec<&str> = args.to_vec();
    args.push(file.to_str().unwrap());
    let (code, _, err) = cli(&args);
    assert_eq!(code, 0, "{err}");
    root.join(name).join(version)
}

/// `v` as a ULEB128 varint (Thrift compact protocol), for crafting page headers.
pub fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}
