//! Versions written before 2026-11-30 are TimeF v1 too (`docs/format.md`,
//! "Column types"): uuid16 ids with the Parquet `UUID` logical type and
//! `metadata` as a Parquet MAP. `tests/data/earlier/golden/1.0.0/` is the
//! golden version as committed then (the fixture of `tests/common`); the reader
//! must read exactly the fixture's entities from it and `verify` must accept
//! it, while the writer now writes the current column types, and a version
//! mixing both forms is a finding.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::schema::types::Type;
use timef::reader::Version;
use timef::verify::{verify, Check};

use common::*;

fn earlier() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/earlier/golden/1.0.0")
}

/// Every leaf and group of the file's schema as `(path, physical type, logical type)`.
fn schema_nodes(path: &Path) -> Vec<(String, Option<PhysicalType>, Option<LogicalType>)> {
    fn walk(prefix: &str, t: &Type, out: &mut Vec<(String, Option<PhysicalType>, Option<LogicalType>)>) {
        let info = t.get_basic_info();
        let name = if prefix.is_empty() { info.name().to_string() } else { format!("{prefix}.{}", info.name()) };
        let physical = t.is_primitive().then(|| t.get_physical_type());
        out.push((name.clone(), physical, info.logical_type_ref().cloned()));
        if t.is_group() {
            for f in t.get_fields() {
                walk(&name, f, out);
            }
        }
    }
    let meta = parquet_metadata(path);
    let mut out = Vec::new();
    for f in meta.file_metadata().schema().get_fields() {
        walk("", f, &mut out);
    }
    out
}

fn logical_of(nodes: &[(String, Option<PhysicalType>, Option<LogicalType>)], path: &str) -> Option<LogicalType> {
    nodes.iter().find(|(p, _, _)| p == path).unwrap_or_else(|| panic!("no node {path}")).2.clone()
}

#[test]
fn fixture_has_the_earlier_column_types_and_the_writer_the_current_ones() {
    let old = schema_nodes(&earlier().join("samples.parquet"));
    assert_eq!(logical_of(&old, "sample_id"), Some(LogicalType::Uuid));
    assert_eq!(logical_of(&old, "metadata"), Some(LogicalType::Map));
    assert!(old.iter().any(|(p, _, _)| p == "metadata.key_value.key"));

    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), golden_fixture().dataset(), small_options());
    for rel in listed_files(&dir) {
        for (path, physical, logical) in schema_nodes(&dir.join(&rel)) {
            assert_ne!(logical, Some(LogicalType::Uuid), "{rel}: {path}");
            assert_ne!(logical, Some(LogicalType::Map), "{rel}: {path}");
            if physical == Some(PhysicalType::FIXED_LEN_BYTE_ARRAY) {
                assert_eq!(logical, None, "{rel}: {path}");
            }
        }
    }
    let new = schema_nodes(&dir.join("samples.parquet"));
    assert_eq!(logical_of(&new, "sample_id"), None);
    assert_eq!(new.iter().find(|(p, _, _)| p == "sample_id").unwrap().1, Some(PhysicalType::FIXED_LEN_BYTE_ARRAY));
    assert_eq!(logical_of(&new, "metadata"), Some(LogicalType::List));
    let leaves: Vec<&str> = new
        .iter()
        .filter(|(p, ph, _)| p.starts_with("metadata.") && ph.is_some())
        .map(|(p, _, _)| p.as_str())
        .collect();
    assert_eq!(leaves, ["metadata.list.element.key", "metadata.list.element.value"]);
}

#[test]
fn reader_reads_the_earlier_column_types_exactly() {
    let f = golden_fixture();
    let v = Version::open(earlier()).unwrap();
    let mut samples = f.samples.clone();
    samples.sort_by(|a, b| a.sample_id.cmp(&b.sample_id));
    assert_eq!(v.samples().unwrap(), samples);
    assert_eq!(v.samples().unwrap()[0].metadata["age"], "63");
    for (meta, values) in &f.series {
        assert_eq!(&*v.read_series(&meta.time_series_id).unwrap(), values.as_slice(), "{}", meta.time_series_id);
    }
    let mut series: Vec<_> = f.series.iter().map(|(m, _)| m.clone()).collect();
    series.sort_by(|a, b| {
        (&a.spec_type, &a.channel, &a.time_series_id).cmp(&(&b.spec_type, &b.channel, &b.time_series_id))
    });
    assert_eq!(v.series().unwrap(), series);
    let mut annotations: Vec<_> =
        f.annotations.iter().flat_map(|(a, s)| s.iter().map(|s| (s.clone(), a.clone()))).collect();
    annotations.sort_by(|x, y| (&x.0, &x.1.annotation_id).cmp(&(&y.0, &y.1.annotation_id)));
    assert_eq!(v.annotations().unwrap(), annotations);
    assert_eq!(v.task_names(), ["diagnosis", "forecast", "heart-rate", "qa"]);
    for name in v.task_names() {
        let mut tasks: Vec<_> = f.tasks.iter().filter(|(n, _)| *n == name).map(|(_, t)| t.clone()).collect();
        tasks.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        assert_eq!(v.tasks(&name).unwrap(), tasks, "{name}");
    }
}

#[test]
fn verify_accepts_the_earlier_column_types() {
    let r = verify(&earlier()).unwrap();
    assert!(r.findings.is_empty(), "{}", r.render());
    // written before the manifest had its seal: everything else is checked,
    // the canonical bytes included, and the report says it is unsealed
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(r.warnings, [timef::verify::UNSEALED]);
    let summary = "ok: 10 files, 127 pages, 66 rows, 6000 values verified; 1 warning(s)";
    assert_eq!(r.summary(), summary);
    let (code, stdout, _) = cli(&["verify", earlier().to_str().unwrap()]);
    assert_eq!((code, stdout), (0, format!("warning: {}\n{summary}\n", timef::verify::UNSEALED)));
}

#[test]
fn a_version_mixing_both_forms_is_a_schema_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let current = commit(tmp.path(), golden_fixture().dataset(), small_options());
    let mixed = tmp.path().join("mixed/golden/1.0.0");
    copy_dir(&earlier(), &mixed);
    replace_file(&mixed, "samples.parquet", &std::fs::read(current.join("samples.parquet")).unwrap());
    let r = verify(&mixed).unwrap();
    let found: Vec<(&str, Check)> = r.findings.iter().map(|f| (f.file.as_str(), f.check)).collect();
    assert_eq!(found, [("samples.parquet", Check::Schema)], "{}", r.render());
    let msg = &r.findings[0].message;
    assert!(msg.starts_with("has the current (uuid16 without UUID logical type, key/value list) column types, annotations.parquet the earlier (UUID logical type, MAP) ones"), "{msg}");
}

/// `samples.parquet` of the golden version with the metadata of its first
/// sample (`age`, `site`) replaced by `pairs`, written by arrow-rs.
fn samples_with_metadata(golden: &Path, pairs: &[(&str, &str)]) -> Vec<u8> {
    let batch = read_parquet(&golden.join("samples.parquet"));
    let i = batch.schema().index_of("metadata").unwrap();
    let entry =
        Fields::from(vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Utf8, false)]);
    let (keys, values): (Vec<&str>, Vec<&str>) = pairs.iter().copied().unzip();
    let mut all_keys = keys.clone();
    let mut all_values = values.clone();
    all_keys.push("site");
    all_values.push("a");
    let entries = StructArray::new(
        entry.clone(),
        vec![Arc::new(StringArray::from(all_keys)) as ArrayRef, Arc::new(StringArray::from(all_values))],
        None,
    );
    let field = Arc::new(Field::new("element", DataType::Struct(entry), false));
    let offsets = OffsetBuffer::from_lengths([pairs.len(), 1, 0]);
    let nulls = arrow_buffer::NullBuffer::from(vec![true, true, false]);
    let list = ListArray::new(Arc::clone(&field), offsets, Arc::new(entries), Some(nulls));
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[i] = Field::new("metadata", list.data_type().clone(), true);
    let mut columns = batch.columns().to_vec();
    columns[i] = Arc::new(list);
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    assert_eq!(batch.num_rows(), 3);
    let mut out = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

#[test]
fn metadata_keys_must_be_sorted_and_unique() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = commit(tmp.path(), golden_fixture().dataset(), small_options());
    let sample = golden_sample(1);
    // sorted and unique: read as written
    let dir = tmp.path().join("ok/golden/1.0.0");
    copy_dir(&golden, &dir);
    replace_file(&dir, "samples.parquet", &samples_with_metadata(&golden, &[("a", "1"), ("b", "2")]));
    let s = Version::open(&dir).unwrap().samples().unwrap();
    assert_eq!(
        s[0].metadata.iter().collect::<Vec<_>>(),
        [(&"a".to_string(), &"1".to_string()), (&"b".into(), &"2".into())]
    );
    assert!(s[2].metadata.is_empty());
    for (case, pairs) in [("unsorted", [("site", "a"), ("age", "63")]), ("duplicate", [("age", "63"), ("age", "64")])] {
        let dir = tmp.path().join(case).join("golden/1.0.0");
        copy_dir(&golden, &dir);
        replace_file(&dir, "samples.parquet", &samples_with_metadata(&golden, &pairs));
        let err = Version::open(&dir).unwrap().samples().unwrap_err().to_string();
        assert!(err.contains(&format!("sample {sample}: metadata keys are not sorted and unique")), "{case}: {err}");
        let r = verify(&dir).unwrap();
        assert!(r.render().contains("metadata keys are not sorted and unique"), "{case}: {}", r.render());
    }
}
