//! `timef verify` finds every single-byte change of `manifest.json` (all
//! offsets) of the golden version and of a real file's version, naming
//! `manifest.json` and a field (docs/format.md §6, "Integrity"), and a sample
//! of single-byte changes of every other file.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use timef::verify::verify;

/// A copy of the version `src` at `<tmp>/<name>/<version>` (verify checks the
/// names against the directories).
fn copy_version(src: &Path, tmp: &Path) -> PathBuf {
    let canon = src.canonicalize().unwrap();
    let version = canon.file_name().unwrap();
    let name = canon.parent().unwrap().file_name().unwrap();
    let dst = tmp.join(name).join(version);
    copy_dir(&canon, &dst);
    dst
}

/// Every offset of manifest.json changed once (xor 1) and every space and
/// newline also made a tab; returns (changes tried, changes verify missed).
fn manifest_changes_missed(version: &Path) -> (usize, Vec<String>) {
    let path = version.join("manifest.json");
    let original = std::fs::read(&path).unwrap();
    assert!(verify(version).unwrap().is_ok(), "the clean copy verifies");
    let (mut tried, mut missed) = (0, Vec::new());
    for pos in 0..original.len() {
        let mut changes = vec![original[pos] ^ 0x01];
        if matches!(original[pos], b' ' | b'\n') {
            changes.push(b'\t');
        }
        for byte in changes {
            let mut bytes = original.clone();
            bytes[pos] = byte;
            std::fs::write(&path, &bytes).unwrap();
            tried += 1;
            let r = verify(version).unwrap();
            let named = r.findings.iter().any(|f| f.file == "manifest.json" && !f.location.is_empty());
            if !named {
                missed.push(format!("byte {pos}: {:?} -> {:?}: {}", original[pos] as char, byte as char, r.render()));
            }
        }
    }
    std::fs::write(&path, &original).unwrap();
    (tried, missed)
}

#[test]
fn every_byte_of_the_golden_manifest_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let dir = copy_version(&golden, tmp.path());
    let (tried, missed) = manifest_changes_missed(&dir);
    println!("golden manifest.json: {} of {tried} single-byte changes found", tried - missed.len());
    assert!(tried > 5000, "{tried}");
    assert!(missed.is_empty(), "{} missed, first: {}", missed.len(), missed[0]);
}

#[test]
fn every_byte_of_a_real_versions_manifest_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    ingest_ucr(&root, "BasicMotions", "1", &real("ucr/BasicMotions_TRAIN.ts"));
    let (tried, missed) = manifest_changes_missed(&root.join("BasicMotions/1"));
    println!("BasicMotions manifest.json: {} of {tried} single-byte changes found", tried - missed.len());
    assert!(missed.is_empty(), "{} missed, first: {}", missed.len(), missed[0]);
}

/// Every 37th byte of every other file of the golden version, changed (xor 1):
/// each is a finding on that file.
#[test]
fn a_sample_of_bytes_of_every_other_file_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let dir = copy_version(&golden, tmp.path());
    let mut tried = 0;
    for (rel, original) in file_bytes(&dir).into_iter().filter(|(rel, _)| rel != "manifest.json") {
        let path = dir.join(&rel);
        for pos in (0..original.len()).step_by(37).chain([original.len() - 1]) {
            let mut bytes = original.clone();
            bytes[pos] ^= 0x01;
            std::fs::write(&path, &bytes).unwrap();
            tried += 1;
            let r = verify(&dir).unwrap();
            assert!(r.findings.iter().any(|f| f.file == rel), "{rel} byte {pos}: not found\n{}", r.render());
        }
        std::fs::write(&path, &original).unwrap();
    }
    assert!(tried > 1000, "{tried}");
}

/// The CLI: exit 1, one line naming manifest.json and the field, for a
/// misspelled key, a changed free-text digit, a space made a tab, and bytes
/// that are no longer JSON.
#[test]
fn cli_names_manifest_json_and_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let dir = copy_version(&golden, tmp.path());
    let path = dir.join("manifest.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let cases: [(&str, &str, &str); 5] = [
        ("\"citation\": \"timef", "\"citatioN\": \"timef", "FAIL [manifest] manifest.json dataset.citation: "),
        ("\"description\": \"Fixed", "\"description\": \"Fixes", "FAIL [checksum] manifest.json manifest_sha256: "),
        ("\"compression_level\": 3", "\"compression_level\": 4", "FAIL [checksum] manifest.json manifest_sha256: "),
        ("  \"format\": \"timef\"", "\t\"format\": \"timef\"", "FAIL [manifest] manifest.json format: "),
        ("\"counts\": {", "\"counts\": [", "FAIL [manifest] manifest.json counts"),
    ];
    for (from, to, line) in cases {
        assert!(original.contains(from), "{from}");
        std::fs::write(&path, original.replacen(from, to, 1)).unwrap();
        let (code, out, err) = cli(&["verify", dir.to_str().unwrap()]);
        assert_eq!(code, 1, "{to}: {out}{err}");
        assert!(out.lines().any(|l| l.starts_with(line)), "{to}: want {line:?}\n{out}");
    }
    std::fs::write(&path, &original).unwrap();
    assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0);
}

/// The seal removed whole (the key and its comma: not a single-byte change)
/// leaves a canonical manifest like one written before the seal existed:
/// `verify` passes it (every other check as for the sealed copy) but says in
/// its report that it is unsealed.
#[test]
fn a_stripped_seal_is_reported_as_unsealed() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let dir = copy_version(&golden, tmp.path());
    let path = dir.join("manifest.json");
    let sealed = verify(&dir).unwrap().summary();
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find(",\n  \"manifest_sha256\": \"").unwrap();
    let stripped = format!("{}\n}}\n", &text[..at]);
    assert_eq!(text.len() - stripped.len(), ",\n  \"manifest_sha256\": \"\"".len() + 64);
    std::fs::write(&path, &stripped).unwrap();
    let r = verify(&dir).unwrap();
    assert!(r.findings.is_empty(), "{}", r.render());
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(r.warnings, [timef::verify::UNSEALED]);
    let (code, stdout, _) = cli(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    let warning = "warning: manifest.json is unsealed (no manifest_sha256): a change of its description, license, \
                   citation, sources, created_by or writer options cannot be found; written before the seal existed, \
                   by a writer that does not seal, or its seal was removed";
    assert_eq!(stdout, format!("{warning}\n{sealed}; 1 warning(s)\n"));
}
