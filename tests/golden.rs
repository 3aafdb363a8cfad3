//! The committed golden version: [`common::golden_fixture`] written with
//! [`common::small_options`] must reproduce `golden/<name>/<version>/` byte for
//! byte, manifest included. Any change of the bytes the writer produces (page
//! layout, encodings, compression, manifest keys) fails here until `golden/` is
//! regenerated deliberately with `TIMEF_REGENERATE_GOLDEN=1` (`golden/README.md`).

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden")
}

#[test]
fn golden_version_is_reproduced_byte_for_byte() {
    let f = golden_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let written = commit(tmp.path(), f.dataset(), small_options());
    let golden = golden_root().join(&f.info.name).join(&f.info.version);
    if regenerate() {
        if golden.exists() {
            std::fs::remove_dir_all(&golden).unwrap();
        }
        for (rel, bytes) in file_bytes(&written) {
            let path = golden.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }
    assert!(golden.join("manifest.json").is_file(), "no golden version: run with TIMEF_REGENERATE_GOLDEN=1 once");
    assert_same_files(&golden, &written);
    // the fixture covers what the golden version is meant to pin
    let files: Vec<String> = file_bytes(&golden).into_keys().collect();
    assert_eq!(
        files,
        [
            "annotations.parquet",
            "manifest.json",
            "samples.parquet",
            "tasks/task=diagnosis/part-0.parquet",
            "tasks/task=forecast/part-0.parquet",
            "tasks/task=heart-rate/part-0.parquet",
            "tasks/task=qa/part-0.parquet",
            "time_series/shard-00000.parquet",
            "time_series/shard-00001.parquet",
            "time_series_index.parquet",
        ]
    );
    assert_conforming(&golden);
}

/// The checker run as is (pyarrow's Parquet `UUID` -> `arrow.uuid` mapping on)
/// finds the golden version conforming, uuid16 id spaces included: uuid16
/// columns carry no `UUID` logical type (`docs/format.md`, "Column types").
#[test]
fn plain_checker_finds_golden_conforming() {
    let f = golden_fixture();
    let golden = golden_root().join(&f.info.name).join(&f.info.version);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(golden.join("manifest.json")).unwrap()).unwrap();
    let uuid16: Vec<&str> = ["sample_id", "time_series_id", "annotation_id", "task_id", "source_id", "subject_id"]
        .into_iter()
        .filter(|s| manifest["id_encoding"][s] == "uuid16")
        .collect();
    assert_eq!(uuid16, ["sample_id", "annotation_id", "subject_id"]);
    let Some(out) = timef_check(&golden, Checker::Plain, &[]) else { return };
    assert_eq!(out, "conforming: 0 violation(s)");
}
