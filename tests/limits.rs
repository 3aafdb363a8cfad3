//! The format's limits, where the writer, the reader and `verify` must agree
//! (docs/format.md "Limits"): whatever the writer commits, the reader and
//! `verify` accept, and a `writer` block read from a manifest is held to the
//! rules of options a user gives. Crafted from one small real version; no huge
//! writes: the writer's shard, row-group and chunk limits are met by the
//! planner (series metadata and value counts only), which refuses before
//! anything is written.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use timef::edit::{edit_version, plan, Cascade, Edit};
use timef::manifest::{Manifest, MAX_MANIFEST_BYTES};
use timef::reader::Version;
use timef::storage::{Location, Staging};
use timef::verify::verify;

fn version(root: &Path) -> PathBuf {
    common::commit(root, common::ecg_dataset("ecg", "v1", 4), common::small_options())
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn remove_s000() -> Edit {
    Edit::remove_samples(["s000"], Cascade::Refuse)
}

#[test]
fn reader_and_verify_open_a_manifest_of_exactly_the_limit_and_refuse_one_byte_more() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    // a canonical, sealed manifest grown to exactly the limit through its description
    let mut m = Manifest::parse(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m.dataset.description = Some(String::new());
    let base = m.clone().sealed().to_bytes().len();
    m.dataset.description = Some("x".repeat(MAX_MANIFEST_BYTES as usize - base));
    let mut bytes = m.sealed().to_bytes();
    assert_eq!(bytes.len() as u64, MAX_MANIFEST_BYTES);
    std::fs::write(dir.join("manifest.json"), &bytes).unwrap();
    assert_eq!(Version::open(&dir).unwrap().manifest().dataset.version, "v1");
    let report = verify(&dir).unwrap();
    assert!(report.is_ok(), "{}", report.render());

    bytes.push(b' ');
    std::fs::write(dir.join("manifest.json"), &bytes).unwrap();
    let want = format!("not a TimeF version: {}: manifest.json is larger than 268435456 bytes", dir.display());
    assert_eq!(Version::open(&dir).unwrap_err().to_string(), want);
    assert_eq!(verify(&dir).unwrap_err().to_string(), want);
}

#[test]
fn the_commit_takes_a_manifest_of_exactly_the_limit_and_refuses_one_byte_more() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("ecg/v1");
    let mut staging = Staging::create(&Location::local(&target)).unwrap();
    let err = staging.stage_manifest(vec![b' '; MAX_MANIFEST_BYTES as usize + 1]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "invalid manifest.json of {}: 268435457 bytes, over the 268435456 bytes a reader accepts \
             (docs/format.md \"Limits\")",
            target.display()
        )
    );
    let written = staging.stage_manifest(vec![b' '; MAX_MANIFEST_BYTES as usize]).unwrap();
    assert_eq!((written.path.as_str(), written.bytes), ("manifest.json", MAX_MANIFEST_BYTES));
    drop(staging);
    assert!(!tmp.path().join("ecg").exists(), "an aborted first write leaves nothing");
}

/// The `writer` block edited in one place: verify's finding on it (location,
/// message) and the error of an edit (and its dry run) taking the block as options.
#[test]
fn a_writer_block_is_held_to_the_rules_of_user_options_at_and_past_each_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let base = version(tmp.path());
    let original = manifest(&base);
    let w = &original["writer"];
    let chunk = w["chunk_max_bytes"].as_u64().unwrap();
    let shard_target = w["shard_target_bytes"].as_u64().unwrap();
    // the largest row-group target whose cap stays at 2^31 - 1 values
    let rg_target_max = ((1u64 << 31) - 1) * 4 - 4 * chunk;
    let with_rg_target = |t: u64| {
        json!({
            "row_group_target_bytes": t,
            "row_group_max_bytes": t + 4 * chunk,
            "shard_max_bytes": shard_target + t + 4 * chunk,
        })
    };
    let cases: Vec<(Value, Option<(&str, &str)>)> = vec![
        (json!({"compression_level": 1}), None),
        (json!({"compression_level": 22}), None),
        (json!({"compression_level": 0}), Some(("compression_level", "0 is outside 1..=22"))),
        (json!({"compression_level": 23}), Some(("compression_level", "23 is outside 1..=22"))),
        (json!({"shard_target_bytes": 0}), Some(("shard_target_bytes", "must be > 0"))),
        (json!({"row_group_target_bytes": 0}), Some(("row_group_target_bytes", "must be > 0"))),
        (json!({"chunk_max_bytes": 1026}), Some(("chunk_max_bytes", "1026 is not a positive multiple of 4"))),
        (with_rg_target(rg_target_max), None),
        (with_rg_target(rg_target_max + 4), Some(("row_group_target_bytes", "row groups could reach 2^31 values"))),
        (
            json!({"row_group_max_bytes": 4096 + 4 * 1024 + 1}),
            Some(("row_group_max_bytes", "8193, but the other options give 8192")),
        ),
        (json!({"shard_max_bytes": 1}), Some(("shard_max_bytes", "1, but the other options give 24576"))),
        // fields no option sets: only the writer's own values are accepted
        (json!({"compression": "gzip"}), Some(("compression", r#""gzip", but the other options give "zstd""#))),
        (
            json!({"content_defined_chunking": {"method": "none", "min_chunk_size": 0, "max_chunk_size": 1}}),
            Some(("content_defined_chunking.method", r#""none", but the other options give "row-key-v1""#)),
        ),
        (
            json!({"content_defined_chunking": {"method": "row-key-v1", "min_chunk_size": 0, "max_chunk_size": 1048576}}),
            Some(("content_defined_chunking.min_chunk_size", "0, but the other options give 262144")),
        ),
        (
            json!({"content_defined_chunking": {"method": "row-key-v1", "min_chunk_size": 262144, "max_chunk_size": 1}}),
            Some(("content_defined_chunking.max_chunk_size", "1, but the other options give 1048576")),
        ),
    ];
    for (i, (change, want)) in cases.into_iter().enumerate() {
        let mut m = original.clone();
        for (k, v) in change.as_object().unwrap() {
            m["writer"][k] = v.clone();
        }
        std::fs::write(base.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
        let report = verify(&base).unwrap();
        let on_writer: Vec<(String, String)> = report
            .findings
            .iter()
            .filter(|f| f.file == "manifest.json" && f.location.starts_with("writer"))
            .map(|f| (f.location.clone(), f.message.clone()))
            .collect();
        let out = tmp.path().join(format!("out{i}"));
        match want {
            None => {
                assert_eq!(on_writer, [], "{change}");
                assert!(plan(&base, &out, "v2", remove_s000()).is_ok(), "{change}");
            }
            Some((option, reason)) => {
                assert_eq!(on_writer, [(format!("writer.{option}"), reason.to_string())], "{change}");
                let err = format!(
                    "corrupt version: {}: writer block: invalid option {option}: {reason}",
                    base.join("manifest.json").display()
                );
                assert_eq!(plan(&base, &out, "v2", remove_s000()).unwrap_err().to_string(), err, "{change}");
                assert_eq!(edit_version(&base, &out, "v2", remove_s000()).unwrap_err().to_string(), err);
                assert!(!out.exists(), "a refused edit writes nothing");
            }
        }
    }
}

/// What an edit commits under options taken from its base at a bound, `verify` accepts.
#[test]
fn an_edit_with_options_at_a_bound_commits_what_verify_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    let base = common::commit(
        tmp.path(),
        common::ecg_dataset("ecg", "v1", 4),
        timef::WriterOptions::builder().chunk_max_bytes(1024).compression_level(22).try_build().unwrap(),
    );
    let (edited, _) = edit_version(&base, &tmp.path().join("out"), "v2", remove_s000()).unwrap();
    assert_eq!(manifest(&edited)["writer"]["compression_level"], 22);
    let report = verify(&edited).unwrap();
    assert!(report.is_ok(), "{}", report.render());
}

/// A dataset of `series` series (one sample each) whose loaders refuse to
/// run, and `n_values` values claimed for each: the planner's input.
fn counted(series: usize, n_values: u64) -> timef::distributed::PlanInput {
    let mut d = common::dataset_with_source("many", "v1");
    let mut n = std::collections::BTreeMap::new();
    for i in 0..series {
        let id = format!("x{i:06}");
        let meta = timef::SeriesMeta::new(&id, "eeg", "C3", 1.0);
        d.add_series(meta, Box::new(|| Err("the plan reads no values".into()))).unwrap();
        let sample = timef::Sample {
            sample_id: format!("s{i:06}"),
            source_id: "src".into(),
            series: common::main_refs(&[&id]),
            ..Default::default()
        };
        d.add_sample(sample).unwrap();
        n.insert(id, n_values);
    }
    timef::distributed::PlanInput::new(d, n)
}

/// Options cutting every one-value series into its own row group and shard.
fn one_chunk_per_shard() -> timef::WriterOptions {
    timef::WriterOptions::builder()
        .shard_target_bytes(1)
        .row_group_target_bytes(1)
        .chunk_max_bytes(4)
        .try_build()
        .unwrap()
}

/// Shards close at content-defined cuts (docs/format.md §4), about one per
/// 2.7 one-value series here: 250 000 series fit, 300 000 do not.
#[test]
fn the_writer_refuses_a_plan_past_100000_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Location::local(tmp.path());
    let plan = |series| timef::distributed::DistributedWrite::plan(&root, counted(series, 1), one_chunk_per_shard(), 1);
    let write = plan(250_000).unwrap();
    let shards = write.plan_ref().layout.shards.len();
    assert!((90_000..=100_000).contains(&shards), "{shards}");
    write.abort();
    let err = plan(300_000).unwrap_err().to_string();
    assert_eq!(
        err,
        "invalid option shard_target_bytes: the data needs more than 100000 shards, the most a version holds \
         (five-digit shard names); raise shard_target_bytes"
    );
    assert_eq!(common::tree(tmp.path()), Vec::<String>::new());
}

#[test]
fn the_writer_refuses_a_series_of_more_than_2_pow_31_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Location::local(tmp.path());
    let err = timef::distributed::DistributedWrite::plan(&root, counted(1, (1 << 31) + 1), one_chunk_per_shard(), 1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "invalid values of x000000: 2147483649 chunks, over the 2147483648 a series has at most (int32 chunk_idx); \
         raise chunk_max_bytes"
    );
    assert_eq!(common::tree(tmp.path()), Vec::<String>::new());
}
