//! `timef verify`: a clean version has no finding; every corruption of every
//! file is found and named; inconsistencies that checksums cannot see
//! (a manifest edited consistently, files swapped in from another layout) are
//! found by the structural checks; the CLI's exit codes and line format.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use timef::verify::{verify, Check, VerifyReport};
use timef::{Task, TaskType, TimeFDataset, WriterOptions};

/// Samples of the test dataset: enough for several shards with small options.
const SAMPLES: usize = 10;

/// The ECG dataset plus a forecasting task derived from the diagnosis task, so
/// that target/context and from_task references exist.
fn dataset(version: &str, samples: usize) -> TimeFDataset {
    let mut d = common::ecg_dataset("ecg", version, samples);
    let forecast = Task {
        target_sample_id: Some("s001".into()),
        context_sample_ids: Some(vec!["s000".into()]),
        from_task: Some("t-diagnosis".into()),
        horizon: Some(100),
        ..Task::new("t-forecast", TaskType::Forecasting, vec!["s000".into(), "s001".into()])
    };
    d.add_task("forecast", forecast).unwrap();
    d
}

fn written(root: &Path, version: &str, options: WriterOptions) -> PathBuf {
    common::commit(root, dataset(version, SAMPLES), options)
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn write_manifest(dir: &Path, m: &Value) {
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(m).unwrap()).unwrap();
}

fn checks_on(r: &VerifyReport, file: &str) -> Vec<Check> {
    r.findings.iter().filter(|f| f.file == file).map(|f| f.check).collect()
}

#[test]
fn clean_version_has_no_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = written(tmp.path(), "v1", common::small_options());
    let m = manifest(&dir);
    assert!(m["counts"]["shards"].as_u64().unwrap() >= 3, "the test needs several shards");
    assert!(dir.join("tasks/task=forecast/part-0.parquet").exists());

    let r = verify(&dir).unwrap();
    assert!(r.is_ok(), "{}", r.render());
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(r.files_checked, m["files"].as_array().unwrap().len() + 1);
    assert_eq!(r.values_checked, m["counts"]["values"].as_u64().unwrap());
    let pages: usize = common::listed_files(&dir).iter().map(|f| common::file_pages(&dir.join(f)).len()).sum();
    assert_eq!(r.pages_checked, pages as u64);
    assert!(r.rows_checked > m["counts"]["chunks"].as_u64().unwrap());
    assert!(r.summary().starts_with("ok: "), "{}", r.summary());
    // the independent checker agrees
    common::assert_conforming(&dir);
}

/// A dataset whose ids are all canonical UUIDs (stored as uuid16), with units,
/// series ends, a subject and an annotation shared by two samples.
fn uuid_dataset() -> TimeFDataset {
    use timef::{new_id, Annotation, Sample, SeriesMeta, SeriesRef, Source};
    let mut d = TimeFDataset::new("uuids", "v1").unwrap();
    let source = new_id();
    d.add_source(Source { source_id: source.clone(), name: "test".into(), ..Default::default() }).unwrap();
    let shared = Annotation {
        annotation_id: new_id(),
        annotation_type: "label".into(),
        key: "site".into(),
        value_str: Some("a".into()),
        ..Default::default()
    };
    let mut samples = Vec::new();
    for i in 0..4u32 {
        let (series, sample) = (new_id(), new_id());
        let n = 700 + 50 * i as usize;
        let meta = SeriesMeta {
            units: Some("mV".into()),
            t_start_s: 10.0,
            t_end_s: Some(10.0 + n as f64 / 250.0),
            ..SeriesMeta::new(&series, "ecg", "I", 250.0)
        };
        let values = common::values(i, n);
        d.add_series(meta, Box::new(move || Ok(values.into()))).unwrap();
        let refs = vec![SeriesRef { time_series_id: series, view: "main".into() }];
        let subject = Some(new_id());
        d.add_sample(Sample {
            sample_id: sample.clone(),
            source_id: source.clone(),
            subject_id: subject,
            series: refs,
            ..Default::default()
        })
        .unwrap();
        d.add_annotation(shared.clone(), std::slice::from_ref(&sample)).unwrap();
        samples.push(sample);
    }
    d.add_task("all", Task::new(new_id(), TaskType::Regression, samples)).unwrap();
    d
}

#[test]
fn clean_uuid16_version_has_no_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::commit(tmp.path(), uuid_dataset(), common::small_options());
    let m = manifest(&dir);
    for space in ["sample_id", "time_series_id", "annotation_id", "task_id", "source_id", "subject_id"] {
        assert_eq!(m["id_encoding"][space], "uuid16", "{space}");
    }
    let r = verify(&dir).unwrap();
    assert!(r.is_ok() && r.skipped.is_empty(), "{}\n{:?}", r.render(), r.skipped);
    // every area, [ids] included
    common::assert_conforming(&dir);
}

/// What a corrupted byte must produce besides the checksum finding.
#[derive(Debug, Clone, Copy)]
enum Beyond {
    /// A finding of this check on the file.
    This(Check),
    /// Some structural finding (page header, CRC, decoding, ...) on the file.
    Structural,
    /// Nothing more: e.g. a flip inside footer statistics can leave a readable
    /// footer, which only the sha256 tells apart.
    Nothing,
}

/// Byte positions to corrupt in a Parquet file: its start (magic), inside a
/// data page's payload, inside a page header, inside the footer, its last
/// byte (magic).
fn parquet_positions(path: &Path) -> Vec<(&'static str, u64, Beyond)> {
    let pages = common::file_pages(path);
    // the largest data page: in a shard, the values
    let data = pages
        .iter()
        .filter(|p| matches!(p.page.header.kind, timef::thrift::PageKind::Data { .. }))
        .max_by_key(|p| p.page.header.compressed_page_size)
        .unwrap();
    let header = &pages[pages.len() / 2];
    let footer = common::footer_range(path);
    let len = std::fs::metadata(path).unwrap().len();
    let payload = data.page.body_offset() + data.page.header.compressed_page_size as u64 / 2;
    vec![
        ("start", 0, Beyond::This(Check::Footer)),
        ("data page", payload, Beyond::This(Check::PageCrc)),
        ("page header", header.page.offset + 1, Beyond::Structural),
        ("footer", (footer.start + footer.end) / 2, Beyond::Nothing),
        ("last byte", len - 1, Beyond::This(Check::Footer)),
    ]
}

#[test]
fn every_byte_flip_of_every_file_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = written(tmp.path(), "v1", common::small_options());
    let files = common::listed_files(&clean);
    for kind in ["time_series/shard-", "time_series_index", "samples", "annotations", "tasks/"] {
        assert!(files.iter().any(|f| f.starts_with(kind)), "no {kind} file");
    }
    let mut copies = 0;
    for rel in &files {
        for (what, pos, beyond) in parquet_positions(&clean.join(rel)) {
            copies += 1;
            let dir = tmp.path().join(format!("copy-{copies}/ecg/v1"));
            common::copy_dir(&clean, &dir);
            common::flip_byte(&dir.join(rel), pos, 0xff);
            let r = verify(&dir).unwrap();
            let checks = checks_on(&r, rel);
            assert!(checks.contains(&Check::Checksum), "{rel} {what} @{pos}: {}", r.render());
            let ok = match beyond {
                Beyond::This(check) => checks.contains(&check),
                Beyond::Structural => checks.iter().any(|c| !matches!(c, Check::Checksum | Check::Size)),
                Beyond::Nothing => true,
            };
            assert!(ok, "{rel} {what} @{pos}: expected {beyond:?}\n{}", r.render());
        }
    }
    // manifest.json (xor 1 keeps ASCII: digits stay digits, '{' becomes 'z',
    // the final '\n' a control byte). A flip that breaks the JSON is a manifest
    // finding on manifest.json (the directory still holds a version). One that
    // keeps it valid is a finding too: a changed sha256 digit is a checksum
    // finding on the file it describes, a changed count a counts finding on
    // manifest.json (tests/integrity.rs flips every byte).
    let text = std::fs::read_to_string(clean.join("manifest.json")).unwrap();
    let sha = text.find("\"sha256\": \"").unwrap() + 12;
    let first_file = &files[0];
    // the last digit of counts.samples (flipping a leading digit could make "00", not JSON)
    let count = text.find("\"samples\": ").unwrap() + 11;
    let count = count + text[count..].find(|c: char| !c.is_ascii_digit()).unwrap() - 1;
    let positions = [
        ("start", 0, None),
        ("a sha256", sha, Some((first_file.as_str(), Check::Checksum))),
        ("a count", count, Some(("manifest.json", Check::Counts))),
        ("last byte", text.len() - 1, None),
    ];
    for (what, pos, finding) in positions {
        copies += 1;
        let dir = tmp.path().join(format!("copy-{copies}/ecg/v1"));
        common::copy_dir(&clean, &dir);
        common::flip_byte(&dir.join("manifest.json"), pos as u64, 0x01);
        match (verify(&dir), finding) {
            (Ok(r), Some((file, check))) => {
                assert!(checks_on(&r, file).contains(&check), "manifest {what}: no {check} on {file}\n{}", r.render())
            }
            (Ok(r), None) => assert!(
                checks_on(&r, "manifest.json").contains(&Check::Manifest),
                "manifest {what}: no manifest finding\n{}",
                r.render()
            ),
            (Err(e), _) => panic!("manifest {what}: {e}"),
        }
    }
}

#[test]
fn consistent_manifest_edits_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = written(tmp.path(), "v1", common::small_options());
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit, Check, &str); 6] = [
        ("samples count", |m| m["counts"]["samples"] = 99.into(), Check::Counts, "manifest.json"),
        ("task count", |m| m["counts"]["tasks"]["forecast"] = 2.into(), Check::Counts, "manifest.json"),
        ("statistics", |m| m["statistics"]["ecg"]["I"]["mean"] = 1234.5.into(), Check::Statistics, "manifest.json"),
        (
            "schema",
            |m| m["schema"]["tasks"]["forecast"]["splits"] = serde_json::json!(["test"]),
            Check::Manifest,
            "manifest.json",
        ),
        ("id encoding", |m| m["id_encoding"]["sample_id"] = "uuid16".into(), Check::Schema, "samples.parquet"),
        (
            "unlisted file",
            |m| m["files"].as_array_mut().unwrap().retain(|f| f["path"] != "annotations.parquet"),
            Check::Listing,
            "annotations.parquet",
        ),
    ];
    for (i, (what, edit, check, file)) in edits.into_iter().enumerate() {
        let dir = tmp.path().join(format!("edit-{i}/ecg/v1"));
        common::copy_dir(&clean, &dir);
        let mut m = manifest(&dir);
        edit(&mut m);
        write_manifest(&dir, &m);
        let r = verify(&dir).unwrap();
        assert!(
            r.findings.iter().any(|f| f.check == check && f.file == file),
            "{what}: no {check} finding on {file}\n{}",
            r.render()
        );
    }
}

#[test]
fn files_of_another_layout_are_found_by_structure() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = written(tmp.path(), "v1", common::small_options());
    // same series, cut into other row groups and shards: the pointers differ
    let other = WriterOptions::builder()
        .chunk_max_bytes(1024)
        .row_group_target_bytes(2048)
        .shard_target_bytes(8192)
        .try_build()
        .unwrap();
    let b = written(tmp.path(), "v2", other);
    let a = tmp.path().join("index/ecg/v1");
    common::copy_dir(&clean, &a);
    common::replace_file(&a, "time_series_index.parquet", &std::fs::read(b.join("time_series_index.parquet")).unwrap());
    let r = verify(&a).unwrap();
    assert!(!r.findings.iter().any(|f| matches!(f.check, Check::Checksum | Check::Size)), "{}", r.render());
    assert!(checks_on(&r, "time_series_index.parquet").contains(&Check::Pointer), "{}", r.render());
    assert!(r.findings.iter().any(|f| f.check == Check::Pointer && f.file.starts_with("time_series/")));

    // samples of a smaller dataset: annotations, tasks and series lose their samples
    let c = common::commit(tmp.path(), dataset("v3", 4), common::small_options());
    let a = tmp.path().join("samples/ecg/v1");
    common::copy_dir(&clean, &a);
    common::replace_file(&a, "samples.parquet", &std::fs::read(c.join("samples.parquet")).unwrap());
    let r = verify(&a).unwrap();
    let integrity: Vec<&str> =
        r.findings.iter().filter(|f| f.check == Check::Integrity).map(|f| f.file.as_str()).collect();
    for file in ["annotations.parquet", "tasks/task=diagnosis/part-0.parquet", "time_series_index.parquet"] {
        assert!(integrity.contains(&file), "no integrity finding on {file}\n{}", r.render());
    }
    assert!(r.findings.iter().any(|f| f.check == Check::Counts && f.location == "counts.samples"));
}

#[test]
fn pages_are_decoded_not_only_checksummed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = written(tmp.path(), "v1", common::small_options());
    let rel = "time_series/shard-00000.parquet";
    let pages = common::file_pages(&dir.join(rel));
    let page = &pages.iter().find(|p| p.column == "values.list.element").unwrap().page;
    // TimeF headers start with field 1 (type, one byte) then field 2, the
    // uncompressed size: changing its low varint bit keeps the header's length
    // and the page's CRC, but zstd no longer inflates to the promised size
    let mut bytes = std::fs::read(dir.join(rel)).unwrap();
    assert_eq!(bytes[page.offset as usize + 2], 0x15, "field 2, i32");
    bytes[page.offset as usize + 3] ^= 0x02;
    common::replace_file(&dir, rel, &bytes);
    let r = verify(&dir).unwrap();
    assert_eq!(checks_on(&r, rel), [Check::Decode], "{}", r.render());
    assert_eq!(r.findings[0].location, "row group 0", "{}", r.render());
}

/// One sample over one series `s0/I` whose values come from `seed`.
fn one_series(version: &str, seed: u32) -> TimeFDataset {
    let mut d = TimeFDataset::new("one", version).unwrap();
    d.add_source(timef::Source { source_id: "src".into(), name: "test".into(), ..Default::default() }).unwrap();
    common::add_series(&mut d, "s0/I", "ecg", "I", 500.0, seed, 1000);
    let series = vec![timef::SeriesRef { time_series_id: "s0/I".into(), view: "main".into() }];
    d.add_sample(timef::Sample { sample_id: "s0".into(), source_id: "src".into(), series, ..Default::default() })
        .unwrap();
    d
}

#[test]
fn chunk_statistics_are_checked_against_the_values() {
    let tmp = tempfile::tempdir().unwrap();
    // the same chunks (ids, sizes, places) holding other values
    let a = common::commit(tmp.path(), one_series("v1", 1), common::small_options());
    let b = common::commit(tmp.path(), one_series("v2", 7), common::small_options());
    let rel = "time_series/shard-00000.parquet";
    common::replace_file(&a, rel, &std::fs::read(b.join(rel)).unwrap());
    let r = verify(&a).unwrap();
    let on_index: Vec<&timef::verify::Finding> =
        r.findings.iter().filter(|f| f.file == "time_series_index.parquet").collect();
    assert!(!on_index.is_empty(), "{}", r.render());
    assert!(on_index.iter().all(|f| f.check == Check::Statistics), "{}", r.render());
    for stat in ["min", "max", "mean", "std"] {
        assert!(
            on_index.iter().any(|f| f.message.contains(&format!(": {stat} "))),
            "no {stat} finding\n{}",
            r.render()
        );
    }
    assert!(!r.findings.iter().any(|f| f.check == Check::Pointer), "{}", r.render());
}

#[test]
fn missing_and_extra_files_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = written(tmp.path(), "v1", common::small_options());
    std::fs::remove_file(dir.join("time_series/shard-00001.parquet")).unwrap();
    std::fs::write(dir.join("notes.txt"), b"hello").unwrap();
    let r = verify(&dir).unwrap();
    assert!(checks_on(&r, "time_series/shard-00001.parquet").contains(&Check::Listing), "{}", r.render());
    assert!(checks_on(&r, "notes.txt").contains(&Check::Listing), "{}", r.render());
    // the missing shard's rows cannot be checked: said once, not per pointer
    assert!(!r.findings.iter().any(|f| f.check == Check::Pointer), "{}", r.render());
}

fn timef(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_timef")).args(args).output().expect("run timef")
}

#[test]
fn cli_exit_codes_and_one_line_per_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = written(tmp.path(), "v1", common::small_options());
    let dir_s = dir.to_str().unwrap();

    let out = timef(&["verify", dir_s]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1);
    assert!(stdout.starts_with("ok: "), "{stdout}");

    // two corrupt files: one line per finding, in the library's order, then the summary
    let shard = common::file_pages(&dir.join("time_series/shard-00000.parquet"));
    let page = &shard.iter().find(|p| p.column == "values.list.element").unwrap().page;
    common::flip_byte(&dir.join("time_series/shard-00000.parquet"), page.body_offset() + 3, 0xff);
    common::flip_byte(&dir.join("samples.parquet"), 0, 0xff);
    let report = verify(&dir).unwrap();
    let out = timef(&["verify", dir_s]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), report.findings.len() + 1, "{stdout}");
    let fails = &lines[..lines.len() - 1];
    for (line, f) in fails.iter().zip(&report.findings) {
        assert!(line.starts_with("FAIL ["), "{line}");
        assert_eq!(*line, format!("FAIL [{}] {} {}: {}", f.check, f.file, f.location, f.message));
    }
    assert!(fails.iter().any(|l| l.starts_with(
        "FAIL [page-crc] time_series/shard-00000.parquet row group 0, column values.list.element, page 0: "
    )));
    assert!(fails.iter().any(|l| l.starts_with("FAIL [footer] samples.parquet byte 0: ")));
    assert!(lines.last().unwrap().starts_with("FAILED: "), "{stdout}");

    let out = timef(&["verify", dir_s, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["findings"].as_array().unwrap().len(), report.findings.len());
    assert_eq!(json["findings"][0]["check"], report.findings[0].check.name());

    // not a version (a place that exists without a manifest), or missing: exit 2
    let empty = tmp.path().join("ecg/empty");
    std::fs::create_dir_all(&empty).unwrap();
    let nowhere = tmp.path().join("nowhere");
    for (path, said) in [
        (empty.as_path(), format!("timef: error: not a TimeF version: {}: ", empty.display())),
        (nowhere.as_path(), format!("timef: error: not found: {}: no such directory\n", nowhere.display())),
    ] {
        let out = timef(&["verify", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with(&said), "{stderr}\nwant {said}");
    }
}

/// Files a version does not list, whose names are not UTF-8, are each found
/// as a file on disk not listed (review 119: the listing looked each up by
/// its name shown with U+FFFD, and reported "directory: cannot list: No such
/// file or directory", once for two such names).
#[test]
fn unlisted_files_whose_names_are_not_utf8_are_each_found() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = written(tmp.path(), "v1", common::small_options());
    for name in [&b"bad\xff"[..], &b"bad\xfe"[..], &b"time_series/x\xff.parquet"[..]] {
        std::fs::write(dir.join(std::ffi::OsStr::from_bytes(name)), b"mine").unwrap();
    }
    let report = verify(&dir).unwrap();
    let fails: Vec<String> = report.render().lines().filter(|l| l.starts_with("FAIL [")).map(str::to_string).collect();
    let unlisted = |shown: &str| format!("FAIL [listing] {shown} file: on disk but not listed in manifest.json");
    assert_eq!(fails, [unlisted("bad\u{fffd}"), unlisted("bad\u{fffd}"), unlisted("time_series/x\u{fffd}.parquet")]);
}
