//! `schemas/`: the JSON Schema of `manifest.json` and the Arrow schema of each
//! file kind.
//!
//! (a) Every manifest written here, the golden one included, validates against
//! `schemas/manifest.schema.json`, and manifests broken in one place do not.
//! (b) `schemas/arrow/<kind>.json` is regenerated from `timef::tables` (the
//! Arrow schema each file stores in its `ARROW:schema` key, which is what Arrow
//! readers see, as a small JSON rendering) for the
//! all-uuid16 and all-string id encodings and compared byte for byte; the
//! written files' own schemas are checked against `timef::tables` too.
//! `TIMEF_REGENERATE_GOLDEN=1` rewrites the Arrow-schema files (`golden/README.md`).

mod common;

use std::path::{Path, PathBuf};

use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::parquet_to_arrow_schema;
use serde_json::{json, Map, Value};
use timef::encoding::{FileSchema, IdEncoding};
use timef::manifest::DerivedFrom;
use timef::tables::{self, IdEncodings, IdSpace};
use timef::{Result, TimeFWriter, WriterOptions};

use common::*;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn manifest_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo("schemas/manifest.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft202012::meta::validate(&schema).expect("a valid draft 2020-12 schema");
    jsonschema::draft202012::new(&schema).unwrap()
}

fn errors(v: &jsonschema::Validator, manifest: &Value) -> Vec<String> {
    v.iter_errors(manifest).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The five file kinds: (schemas/arrow name, file path pattern, schema builder).
type Kind = (&'static str, &'static str, fn(IdEncodings) -> Result<FileSchema>);
const KINDS: [Kind; 5] = [
    ("shard", "time_series/shard-NNNNN.parquet", tables::shard_schema),
    ("index", "time_series_index.parquet", tables::index_schema),
    ("samples", "samples.parquet", tables::samples_schema),
    ("annotations", "annotations.parquet", tables::annotations_schema),
    ("tasks", "tasks/task=<task_name>/part-0.parquet", tables::tasks_schema),
];

fn arrow_schema(kind: &Kind, ids: IdEncodings) -> Schema {
    (kind.2)(ids).unwrap().arrow_schema().unwrap()
}

/// A field as JSON: name, type, nullability, metadata if any, children of nested types.
fn field_json(f: &Field) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(f.name()));
    let children: Vec<&Field> = match f.data_type() {
        DataType::List(c) => {
            o.insert("type".into(), json!("List"));
            vec![c]
        }
        DataType::Struct(fields) => {
            o.insert("type".into(), json!("Struct"));
            fields.iter().map(|f| f.as_ref()).collect()
        }
        DataType::Map(entries, sorted) => {
            o.insert("type".into(), json!("Map"));
            o.insert("keys_sorted".into(), json!(sorted));
            vec![entries]
        }
        other => {
            o.insert("type".into(), json!(other.to_string()));
            vec![]
        }
    };
    o.insert("nullable".into(), json!(f.is_nullable()));
    if !f.metadata().is_empty() {
        let sorted: std::collections::BTreeMap<_, _> = f.metadata().iter().collect();
        o.insert("metadata".into(), json!(sorted));
    }
    if !children.is_empty() {
        o.insert("children".into(), Value::Array(children.into_iter().map(field_json).collect()));
    }
    Value::Object(o)
}

fn schema_json(s: &Schema) -> Value {
    Value::Array(s.fields().iter().map(|f| field_json(f)).collect())
}

fn all(enc: IdEncoding) -> IdEncodings {
    IdEncodings([enc; 6])
}

/// The id encodings a manifest records.
fn encodings_of(manifest: &timef::manifest::Manifest) -> IdEncodings {
    IdEncodings(IdSpace::ALL.map(|s| match manifest.id_encoding[s.name()].as_str() {
        "uuid16" => IdEncoding::Uuid16,
        "string" => IdEncoding::String,
        other => panic!("id encoding {other}"),
    }))
}

/// A handful of versions covering what a manifest may hold: the golden fixture
/// (mixed id encodings, every task kind), an ECG dataset with default options,
/// a dataset without annotations or tasks, and an edited version with `derived_from`.
fn written_versions(root: &Path) -> Vec<PathBuf> {
    let golden = commit(root, golden_fixture().dataset(), small_options());
    let ecg = commit(root, ecg_dataset("ecg", "1", 3), WriterOptions::default());
    let mut bare = dataset_with_source("bare", "1");
    add_series(&mut bare, "x", "acc", "x", 10.0, 0, 5);
    bare.add_sample(timef::Sample {
        sample_id: timef::new_id(),
        source_id: "src".into(),
        series: main_refs(&["x"]),
        ..Default::default()
    })
    .unwrap();
    let bare = commit(root, bare, small_options());
    let base = timef::reader::Version::open(&ecg).unwrap();
    let derived_from = DerivedFrom {
        dataset_version: "1".into(),
        manifest_sha256: base.manifest_sha256().to_string(),
        operation: json!({"remove_samples": ["s002"], "cascade": false}),
        removed: [("samples".to_string(), 1)].into(),
    };
    let edited = TimeFWriter::new(root, small_options())
        .with_derived_from(derived_from)
        .write(ecg_dataset("ecg", "2", 2))
        .unwrap()
        .commit()
        .unwrap();
    vec![golden, ecg, bare, edited]
}

#[test]
fn written_manifests_validate_against_the_schema() {
    let v = manifest_validator();
    let golden = read_json(&repo("golden/golden/1.0.0/manifest.json"));
    assert_eq!(errors(&v, &golden), Vec::<String>::new(), "golden manifest");
    let tmp = tempfile::tempdir().unwrap();
    let versions = written_versions(tmp.path());
    for dir in &versions {
        let m = read_json(&dir.join("manifest.json"));
        assert_eq!(errors(&v, &m), Vec::<String>::new(), "{}", dir.display());
    }
    let edited = read_json(&versions[3].join("manifest.json"));
    assert_eq!(edited["derived_from"]["removed"]["samples"], 1, "the derived_from block was written");
    assert!(read_json(&versions[2].join("manifest.json"))["schema"]["tasks"].as_object().unwrap().is_empty());
}

#[test]
fn manifests_broken_in_one_place_are_rejected() {
    let v = manifest_validator();
    let golden = read_json(&repo("golden/golden/1.0.0/manifest.json"));
    type Break = (&'static str, fn(&mut Value));
    let breaks: Vec<Break> = vec![
        ("extra top-level key", |m| m["extra"] = json!(1)),
        ("missing counts", |m| {
            m.as_object_mut().unwrap().remove("counts");
        }),
        ("format_version 2", |m| m["format_version"] = json!(2)),
        ("format name", |m| m["format"] = json!("timef2")),
        ("uppercase sha256", |m| {
            let s = m["files"][0]["sha256"].as_str().unwrap().to_uppercase();
            m["files"][0]["sha256"] = json!(s);
        }),
        ("short sha256", |m| m["files"][0]["sha256"] = json!("abc123")),
        ("unknown id encoding", |m| m["id_encoding"]["sample_id"] = json!("uuid")),
        ("missing id space", |m| {
            m["id_encoding"].as_object_mut().unwrap().remove("subject_id");
        }),
        ("extra id space", |m| m["id_encoding"]["user_id"] = json!("string")),
        ("extra key in a file entry", |m| m["files"][0]["mtime"] = json!(0)),
        ("absolute file path", |m| m["files"][0]["path"] = json!("/tmp/samples.parquet")),
        ("escaping file path", |m| m["files"][0]["path"] = json!("../samples.parquet")),
        ("negative count", |m| m["counts"]["samples"] = json!(-1)),
        ("fractional count", |m| m["counts"]["chunks"] = json!(2.5)),
        ("dataset name with a slash", |m| m["dataset"]["name"] = json!("a/b")),
        ("hidden dataset version", |m| m["dataset"]["version"] = json!(".v1")),
        ("missing description key", |m| {
            m["dataset"].as_object_mut().unwrap().remove("description");
        }),
        ("compression level 0", |m| m["writer"]["compression_level"] = json!(0)),
        ("other codec", |m| m["writer"]["compression"] = json!("snappy")),
        ("extra writer option", |m| m["writer"]["page_size"] = json!(1)),
        ("negative std", |m| m["statistics"]["ecg"]["I"]["std"] = json!(-0.5)),
        ("extra statistic", |m| m["statistics"]["ecg"]["I"]["median"] = json!(1.0)),
        ("unknown value kind", |m| m["schema"]["annotations"]["class"]["value_kinds"] = json!(["bool"])),
        ("task name with a space", |m| m["counts"]["tasks"]["a b"] = json!(1)),
        ("source without name", |m| {
            m["sources"][0].as_object_mut().unwrap().remove("name");
        }),
        ("bad derived_from hash", |m| {
            m["derived_from"] =
                json!({"dataset_version": "1", "manifest_sha256": "x", "operation": {"op": 1}, "removed": {}})
        }),
    ];
    for (what, edit) in breaks {
        let mut m = golden.clone();
        edit(&mut m);
        assert!(!v.is_valid(&m), "accepted a manifest with {what}");
    }
}

#[test]
fn arrow_schemas_match_the_committed_json() {
    for kind in &KINDS {
        let doc = json!({
            "file": kind.1,
            "id_encoding": {
                "uuid16": schema_json(&arrow_schema(kind, all(IdEncoding::Uuid16))),
                "string": schema_json(&arrow_schema(kind, all(IdEncoding::String))),
            }
        });
        let text = serde_json::to_string_pretty(&doc).unwrap() + "\n";
        let path = repo(&format!("schemas/arrow/{}.json", kind.0));
        if regenerate() {
            std::fs::write(&path, &text).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(committed == text, "{} differs from the schema the code builds:\n{text}", path.display());
    }
    // the id encodings differ exactly in the id columns
    let shard = |enc| arrow_schema(&KINDS[0], all(enc));
    assert_eq!(shard(IdEncoding::Uuid16).field(0).data_type(), &DataType::FixedSizeBinary(16));
    assert_eq!(shard(IdEncoding::String).field(0).data_type(), &DataType::Utf8);
    assert_eq!(shard(IdEncoding::Uuid16).fields()[1..], shard(IdEncoding::String).fields()[1..]);
}

#[test]
fn written_files_have_the_schemas_of_their_kind() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in written_versions(tmp.path()) {
        let m = timef::reader::Version::open(&dir).unwrap().manifest().clone();
        let ids = encodings_of(&m);
        for f in &m.files {
            let kind = match f.path.as_str() {
                p if p.starts_with("time_series/") => &KINDS[0],
                "time_series_index.parquet" => &KINDS[1],
                "samples.parquet" => &KINDS[2],
                "annotations.parquet" => &KINDS[3],
                _ => &KINDS[4],
            };
            let meta = parquet_metadata(&dir.join(&f.path));
            let fm = meta.file_metadata();
            let stored = parquet_to_arrow_schema(fm.schema_descr(), fm.key_value_metadata()).unwrap();
            assert_eq!(stored, arrow_schema(kind, ids), "{} of {}", f.path, dir.display());
        }
    }
}
