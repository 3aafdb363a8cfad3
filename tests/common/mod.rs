//! Shared harness of the integration tests: fixed datasets, writing and
//! committing them, and the independent conformance checker.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use timef::*;

/// `../shared` beside the checkout (FORMAT-BRIEF, tools, real data).
pub fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// A real data file under `../shared/data/real/`.
pub fn real(rel: &str) -> PathBuf {
    shared().join("data/real").join(rel)
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

/// A small dataset of `samples` ECG samples with two channels each,
/// one `class` label per sample and one classification task.
pub fn ecg_dataset(name: &str, version: &str, samples: usize) -> TimeFDataset {
    let mut d = TimeFDataset::new(name, version).expect("valid names");
    d.add_source(Source { source_id: "src".into(), name: "test source".into(), ..Default::default() }).unwrap();
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
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let p = e.path();
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
                if p.is_dir() {
                    walk(base, &p, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
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
        eprintln!("skipping {what}: no .venv (run .ci/run once)");
    }
    py
}

/// How to run the independent checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checker {
    /// `timef_check.py` as is.
    Plain,
    /// Through `tests/py/timef_check_uuid_off.py`: the same checker with pyarrow's
    /// Parquet UUID -> `arrow.uuid` mapping off (see that file for why).
    UuidOff,
}

/// Runs `timef_check.py` on `version_dir` with `extra` arguments; returns its
/// last line (and the whole output when it fails). Panics if there is no venv
/// under CI (`CI` set), so a missing install step cannot pass silently; skips
/// (returns None) on a bare dev machine.
pub fn timef_check(version_dir: &Path, how: Checker, extra: &[&str]) -> Option<String> {
    let py = require_python("timef_check")?;
    let script = match how {
        Checker::Plain => shared().join("tools/timef_check.py"),
        Checker::UuidOff => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/timef_check_uuid_off.py"),
    };
    let out = Command::new(py).arg(script).arg(version_dir).args(extra).output().expect("run timef_check.py");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = text.lines().last().unwrap_or("").to_string();
    Some(if out.status.success() { last } else { format!("{last}\n{text}") })
}

/// Asserts that `timef_check.py` reports `version_dir` conforming, every area
/// including page CRCs. Run with [`Checker::UuidOff`], so uuid16 id spaces are
/// judged (the plain run's only difference is tested on the golden version).
pub fn assert_conforming(version_dir: &Path) {
    if let Some(last) = timef_check(version_dir, Checker::UuidOff, &[]) {
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

/// Runs one of the shared tools (`gen_bench.py`, `ref_writer.py`, ...) with the venv's Python.
pub fn py_tool(tool: &str, args: &[&str]) -> Option<String> {
    let py = python()?;
    let out = Command::new(py).arg(shared().join("tools").join(tool)).args(args).output().expect("run python");
    assert!(out.status.success(), "{tool} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Copies the directory tree `src` to `dst` (which must not exist).
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
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
