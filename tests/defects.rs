//! Inputs that once broke `timef` (`tests/data/defects/`, see its README): each
//! ingests through the CLI to the exact result the README states.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_conforming, cli};
use timef::reader::Version;

fn defect(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/defects").join(file)
}

fn ingest_ucr(root: &Path, file: &str) -> Version {
    let root_arg = root.to_str().unwrap();
    let input = defect(file);
    let (code, out, err) = cli(&[
        "--quiet",
        "ingest",
        "ucr",
        "--root",
        root_arg,
        "--name",
        "d",
        "--version",
        "v1",
        input.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    Version::open(root.join("d/v1")).unwrap()
}

/// Epoch-second stamps at 100 Hz, whose f64 spacing is off by ~2e-7 s, give exactly 100 Hz.
#[test]
fn epoch_stamps_at_100_hz_ingest_at_exactly_100_hz() {
    let tmp = tempfile::tempdir().unwrap();
    let v = ingest_ucr(tmp.path(), "epoch100hz_TRAIN.ts");
    let series = v.series().unwrap();
    assert_eq!(series.len(), 1);
    assert_eq!((series[0].sampling_rate_hz, series[0].t_start_s), (100.0, 1_700_000_000.0));
    assert_conforming(v.dir());
}

/// `[-0.0, 0.0, 1]` and `[0.0, -0.0, 1]` get the same statistics: min -0.0
/// (IEEE 754 total order), max 1, in the index and the manifest.
#[test]
fn signed_zeros_give_statistics_independent_of_order() {
    let tmp = tempfile::tempdir().unwrap();
    let v = ingest_ucr(tmp.path(), "zeros_TRAIN.ts");
    let index = v.index().unwrap();
    let extremes: Vec<(String, u32, u32)> =
        index.iter().map(|e| (e.meta.time_series_id.clone(), e.min.to_bits(), e.max.to_bits())).collect();
    let want = |id: &str| (id.to_string(), (-0.0f32).to_bits(), 1.0f32.to_bits());
    assert_eq!(extremes, [want("d-train-0/0"), want("d-train-1/0")]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(v.dir().join("manifest.json")).unwrap()).unwrap();
    let stats = &manifest["statistics"]["unknown"]["0"];
    assert_eq!((stats["min"].to_string(), stats["max"].to_string()), ("-0.0".to_string(), "1.0".to_string()));
}

/// `timef ingest arrow FILE`: exit code, stdout, stderr; and that no version was written.
fn ingest_arrow(file: &str) -> (i32, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let input = defect(file);
    let root = tmp.path().join("root");
    let out = cli(&[
        "--quiet",
        "ingest",
        "arrow",
        "--root",
        root.to_str().unwrap(),
        "--name",
        "d",
        "--version",
        "v1",
        input.to_str().unwrap(),
    ]);
    assert!(!root.join("d/v1").exists());
    out
}

/// An IPC file whose record-batch block is empty: refused with one line
/// (arrow-ipc would slice past it and panic).
#[test]
fn ipc_zero_block_is_refused_with_one_line() {
    let want = format!(
        "timef: error: {}: not a readable Arrow IPC file or stream: block 224..+0+0 lies outside the file's data\n",
        defect("ipc_zero_block.arrow").display()
    );
    assert_eq!(ingest_arrow("ipc_zero_block.arrow"), (2, String::new(), want));
}

/// A Parquet input whose row group claims 2^45 rows: refused with one line,
/// nothing allocated from the claim.
#[test]
fn parquet_input_claiming_2_pow_45_rows_is_refused_with_one_line() {
    let want = format!(
        "timef: error: {}: not a readable Parquet file: the footer claims 35184372088832 rows, the pages hold 2\n",
        defect("gluon_hugerows.parquet").display()
    );
    assert_eq!(ingest_arrow("gluon_hugerows.parquet"), (2, String::new(), want));
}
