//! Round trip of the writer: [`common::golden_fixture`] is written with
//! [`common::small_options`] (so series span several chunks, row groups and
//! shards), then read back twice, column by column through arrow-rs and entity
//! by entity through [`timef::reader::Version`], and compared with the fixture
//! value for value. The manifest's counts, id encodings, derived schema and
//! statistics are compared with figures computed here from the fixture.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::Array;
use arrow_schema::DataType;
use sha2::Digest;
use timef::manifest::ChannelStats;
use timef::reader::Version;
use timef::{Annotation, SeriesMeta, Task};

use common::*;

const CHUNK_VALUES: usize = 256;

fn write_fixture(root: &Path, fixture: &Fixture) -> PathBuf {
    commit(root, fixture.dataset(), small_options())
}

/// The fixture's series in file order: (spec_type, channel, time_series_id).
fn series_in_file_order(f: &Fixture) -> Vec<&(SeriesMeta, Vec<f32>)> {
    let mut s: Vec<_> = f.series.iter().collect();
    s.sort_by(|(a, _), (b, _)| {
        (&a.spec_type, &a.channel, &a.time_series_id).cmp(&(&b.spec_type, &b.channel, &b.time_series_id))
    });
    s
}

/// One row per (sample, annotation), sorted by (sample_id, annotation_id).
fn annotation_rows(f: &Fixture) -> Vec<(String, Annotation)> {
    let mut rows: Vec<(String, Annotation)> =
        f.annotations.iter().flat_map(|(a, samples)| samples.iter().map(|s| (s.clone(), a.clone()))).collect();
    rows.sort_by(|x, y| (&x.0, &x.1.annotation_id).cmp(&(&y.0, &y.1.annotation_id)));
    rows
}

/// The tasks of `name`, sorted by id.
fn tasks_named(f: &Fixture, name: &str) -> Vec<Task> {
    let mut t: Vec<Task> = f.tasks.iter().filter(|(n, _)| n == name).map(|(_, t)| t.clone()).collect();
    t.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    t
}

/// Population statistics in f64, computed the plain way.
fn stats_of(values: &[f32]) -> ChannelStats {
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = values.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / n;
    ChannelStats {
        count: values.len() as u64,
        min: values.iter().copied().fold(f32::INFINITY, f32::min).into(),
        max: values.iter().copied().fold(f32::NEG_INFINITY, f32::max).into(),
        mean,
        std: var.sqrt(),
    }
}

fn assert_close(what: &str, got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-9 * (1.0 + want.abs()), "{what}: {got} != {want}");
}

fn assert_stats(what: &str, got: &ChannelStats, want: &ChannelStats) {
    assert_eq!((got.count, got.min, got.max), (want.count, want.min, want.max), "{what}");
    assert_close(&format!("{what} mean"), got.mean, want.mean);
    assert_close(&format!("{what} std"), got.std, want.std);
}

#[test]
fn samples_annotations_and_tasks_read_back_through_arrow() {
    let f = golden_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_fixture(tmp.path(), &f);

    let b = read_parquet(&dir.join("samples.parquet"));
    let mut samples = f.samples.clone();
    samples.sort_by(|a, b| a.sample_id.cmp(&b.sample_id));
    // sample and subject ids are canonical UUIDs, so stored as 16 bytes; the rest as strings
    assert_eq!(column(&b, "sample_id").data_type(), &DataType::FixedSizeBinary(16));
    assert_eq!(column(&b, "subject_id").data_type(), &DataType::FixedSizeBinary(16));
    assert_eq!(column(&b, "source_id").data_type(), &DataType::Utf8);
    let first = column(&b, "sample_id").as_fixed_size_binary().value(0).to_vec();
    assert_eq!(first, uuid::Uuid::parse_str(&samples[0].sample_id).unwrap().as_bytes().to_vec());
    assert_eq!(
        required_strings(column(&b, "sample_id")),
        samples.iter().map(|s| s.sample_id.clone()).collect::<Vec<_>>()
    );
    assert_eq!(strings(column(&b, "source_id")), samples.iter().map(|s| Some(s.source_id.clone())).collect::<Vec<_>>());
    assert_eq!(strings(column(&b, "subject_id")), samples.iter().map(|s| s.subject_id.clone()).collect::<Vec<_>>());
    assert_eq!(primitives::<Float64Type>(column(&b, "t_start_s")), vec![None, Some(0.5), None]);
    assert_eq!(primitives::<Float64Type>(column(&b, "t_end_s")), vec![None, Some(1.5), None]);
    let series = column(&b, "series").as_list::<i32>();
    let entries = series.values().as_struct();
    let (ids, views) = (
        required_strings(entries.column_by_name("time_series_id").unwrap()),
        required_strings(entries.column_by_name("view").unwrap()),
    );
    for (i, s) in samples.iter().enumerate() {
        let r = series.value_offsets()[i] as usize..series.value_offsets()[i + 1] as usize;
        let got: Vec<(String, String)> = r.map(|j| (ids[j].clone(), views[j].clone())).collect();
        let want: Vec<(String, String)> = s.series.iter().map(|r| (r.time_series_id.clone(), r.view.clone())).collect();
        assert_eq!(got, want, "series of {}", s.sample_id);
    }
    // a list of {key, value} structs in key order (docs/format.md, "Column types")
    let metadata = column(&b, "metadata").as_list::<i32>();
    let pairs = metadata.values().as_struct();
    let keys = required_strings(pairs.column_by_name("key").unwrap().as_ref());
    let values = required_strings(pairs.column_by_name("value").unwrap().as_ref());
    for (i, s) in samples.iter().enumerate() {
        // an empty map is stored as null
        assert_eq!(metadata.is_valid(i), !s.metadata.is_empty(), "metadata null of {}", s.sample_id);
        let r = metadata.value_offsets()[i] as usize..metadata.value_offsets()[i + 1] as usize;
        let got_keys: Vec<&String> = r.clone().map(|j| &keys[j]).collect();
        assert_eq!(got_keys, s.metadata.keys().collect::<Vec<_>>(), "metadata key order of {}", s.sample_id);
        let got: BTreeMap<String, String> = r.map(|j| (keys[j].clone(), values[j].clone())).collect();
        assert_eq!(got, s.metadata, "metadata of {}", s.sample_id);
    }

    let b = read_parquet(&dir.join("annotations.parquet"));
    let rows = annotation_rows(&f);
    assert_eq!(b.num_rows(), 6, "the shared annotation has one row per sample");
    assert_eq!(required_strings(column(&b, "sample_id")), rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
    let a: Vec<&Annotation> = rows.iter().map(|r| &r.1).collect();
    assert_eq!(
        required_strings(column(&b, "annotation_id")),
        a.iter().map(|a| a.annotation_id.clone()).collect::<Vec<_>>()
    );
    assert_eq!(
        required_strings(column(&b, "annotation_type")),
        a.iter().map(|a| a.annotation_type.clone()).collect::<Vec<_>>()
    );
    assert_eq!(required_strings(column(&b, "key")), a.iter().map(|a| a.key.clone()).collect::<Vec<_>>());
    assert_eq!(strings(column(&b, "value_str")), a.iter().map(|a| a.value_str.clone()).collect::<Vec<_>>());
    assert_eq!(primitives::<Float64Type>(column(&b, "value_num")), a.iter().map(|a| a.value_num).collect::<Vec<_>>());
    assert_eq!(primitives::<Float64Type>(column(&b, "t_start_s")), a.iter().map(|a| a.t_start_s).collect::<Vec<_>>());
    assert_eq!(primitives::<Float64Type>(column(&b, "t_end_s")), a.iter().map(|a| a.t_end_s).collect::<Vec<_>>());
    assert_eq!(strings(column(&b, "channel")), a.iter().map(|a| a.channel.clone()).collect::<Vec<_>>());

    let names: Vec<String> =
        f.tasks.iter().map(|(n, _)| n.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    assert_eq!(names, ["diagnosis", "forecast", "heart-rate", "qa"]);
    for name in &names {
        let b = read_parquet(&dir.join(format!("tasks/task={name}/part-0.parquet")));
        let t = tasks_named(&f, name);
        assert!(b.column_by_name("task_name").is_none(), "the task name lives in the path only");
        assert_eq!(required_strings(column(&b, "task_id")), t.iter().map(|t| t.task_id.clone()).collect::<Vec<_>>());
        assert_eq!(
            required_strings(column(&b, "task_type")),
            t.iter().map(|t| t.task_type.to_string()).collect::<Vec<_>>()
        );
        assert_eq!(strings(column(&b, "split")), t.iter().map(|t| t.split.clone()).collect::<Vec<_>>());
        assert_eq!(
            string_lists(column(&b, "sample_ids")),
            t.iter().map(|t| Some(t.sample_ids.clone())).collect::<Vec<_>>()
        );
        assert_eq!(strings(column(&b, "target")), t.iter().map(|t| t.target.clone()).collect::<Vec<_>>());
        assert_eq!(
            strings(column(&b, "target_sample_id")),
            t.iter().map(|t| t.target_sample_id.clone()).collect::<Vec<_>>()
        );
        assert_eq!(
            string_lists(column(&b, "context_sample_ids")),
            t.iter().map(|t| t.context_sample_ids.clone()).collect::<Vec<_>>()
        );
        assert_eq!(strings(column(&b, "from_task")), t.iter().map(|t| t.from_task.clone()).collect::<Vec<_>>());
        assert_eq!(primitives::<Int32Type>(column(&b, "horizon")), t.iter().map(|t| t.horizon).collect::<Vec<_>>());
        assert_eq!(strings(column(&b, "prompt")), t.iter().map(|t| t.prompt.clone()).collect::<Vec<_>>());
        assert_eq!(strings(column(&b, "answer")), t.iter().map(|t| t.answer.clone()).collect::<Vec<_>>());
    }
    // spot checks of the literal fixture, so an edit of it cannot hollow the comparisons out
    let fc = &tasks_named(&f, "forecast")[0];
    assert_eq!((fc.horizon, fc.target_sample_id.clone()), (Some(50), Some(golden_sample(2))));
    assert_eq!(tasks_named(&f, "qa")[0].from_task.as_deref(), Some("diag-1"));
}

#[test]
fn index_and_shards_read_back_through_arrow() {
    let f = golden_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_fixture(tmp.path(), &f);

    let b = read_parquet(&dir.join("time_series_index.parquet"));
    let mut want = Vec::new();
    for (meta, values) in series_in_file_order(&f) {
        for (k, chunk) in values.chunks(CHUNK_VALUES).enumerate() {
            want.push((meta, k, chunk));
        }
    }
    assert_eq!(want.len(), 2 + 2 + 9 + 9 + 4);
    assert_eq!(b.num_rows(), want.len());
    let col_f32 = |name| primitives::<Float32Type>(column(&b, name));
    let col_f64 = |name| primitives::<Float64Type>(column(&b, name));
    let ids = required_strings(column(&b, "time_series_id"));
    let (spec, channel, units) = (
        required_strings(column(&b, "spec_type")),
        required_strings(column(&b, "channel")),
        strings(column(&b, "units")),
    );
    let (chunk_idx, n_values) =
        (primitives::<Int32Type>(column(&b, "chunk_idx")), primitives::<Int32Type>(column(&b, "n_values")));
    let value_offset = primitives::<Int64Type>(column(&b, "value_offset"));
    let (rate, t0, t1) = (col_f64("sampling_rate_hz"), col_f64("t_start_s"), col_f64("t_end_s"));
    let (min, max, mean, std) = (col_f32("min"), col_f32("max"), col_f64("mean"), col_f64("std"));
    for (i, (meta, k, chunk)) in want.iter().enumerate() {
        let at = format!("index row {i} ({} #{k})", meta.time_series_id);
        assert_eq!(
            (&ids[i], &spec[i], &channel[i], &units[i]),
            (&meta.time_series_id, &meta.spec_type, &meta.channel, &meta.units),
            "{at}"
        );
        assert_eq!((rate[i], t0[i], t1[i]), (Some(meta.sampling_rate_hz), Some(meta.t_start_s), meta.t_end_s), "{at}");
        assert_eq!((chunk_idx[i], value_offset[i]), (Some(*k as i32), Some((k * CHUNK_VALUES) as i64)), "{at}");
        assert_eq!(n_values[i], Some(chunk.len() as i32), "{at}");
        let s = stats_of(chunk);
        assert_eq!((min[i], max[i]), (Some(s.min as f32), Some(s.max as f32)), "{at}");
        assert_close(&format!("{at} mean"), mean[i].unwrap(), s.mean);
        assert_close(&format!("{at} std"), std[i].unwrap(), s.std);
    }

    // every pointer lands on its chunk, and the chunk holds exactly the fixture's values
    let shard_paths = required_strings(column(&b, "shard_path"));
    let (rgs, offsets) =
        (primitives::<Int32Type>(column(&b, "row_group")), primitives::<Int32Type>(column(&b, "row_offset")));
    let mut shards = BTreeMap::new();
    for (i, (meta, k, chunk)) in want.iter().enumerate() {
        let path = dir.join(&shard_paths[i]);
        let (batch, starts) = shards.entry(shard_paths[i].clone()).or_insert_with(|| {
            let starts: Vec<usize> = parquet_metadata(&path)
                .row_groups()
                .iter()
                .scan(0, |acc, rg| {
                    let start = *acc;
                    *acc += rg.num_rows() as usize;
                    Some(start)
                })
                .collect();
            (read_parquet(&path), starts)
        });
        let row = starts[rgs[i].unwrap() as usize] + offsets[i].unwrap() as usize;
        assert_eq!(required_strings(column(batch, "time_series_id"))[row], meta.time_series_id);
        assert_eq!(primitives::<Int32Type>(column(batch, "chunk_idx"))[row], Some(*k as i32));
        assert_eq!(required_strings(column(batch, "spec_type"))[row], meta.spec_type);
        assert_eq!(required_strings(column(batch, "channel"))[row], meta.channel);
        let stored = column(batch, "values").as_list::<i32>().value(row);
        let stored: Vec<u32> = stored.as_primitive::<Float32Type>().values().iter().map(|v| v.to_bits()).collect();
        assert_eq!(
            stored,
            chunk.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "values of {} #{k}",
            meta.time_series_id
        );
    }
    // shard rows are in (spec_type, channel, time_series_id, chunk_idx) order: the
    // index order checked above, so concatenating the shards gives the index's keys
    let mut shard_keys = Vec::new();
    for (batch, _) in shards.values() {
        let ids = required_strings(column(batch, "time_series_id"));
        shard_keys.extend(ids.into_iter().zip(primitives::<Int32Type>(column(batch, "chunk_idx"))));
    }
    assert_eq!(shard_keys, ids.into_iter().zip(chunk_idx).collect::<Vec<_>>());
}

#[test]
fn version_reader_returns_the_dataset() {
    let f = golden_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_fixture(tmp.path(), &f);
    let v = Version::open(&dir).unwrap();

    let mut samples = f.samples.clone();
    samples.sort_by(|a, b| a.sample_id.cmp(&b.sample_id));
    assert_eq!(v.samples().unwrap(), samples);
    assert_eq!(v.annotations().unwrap(), annotation_rows(&f));
    assert_eq!(v.task_names(), ["diagnosis", "forecast", "heart-rate", "qa"]);
    for name in v.task_names() {
        assert_eq!(v.tasks(&name).unwrap(), tasks_named(&f, &name), "tasks of {name}");
    }
    let metas: Vec<SeriesMeta> = series_in_file_order(&f).into_iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(v.series().unwrap(), metas);
    for (meta, values) in &f.series {
        assert_eq!(&*v.read_series(&meta.time_series_id).unwrap(), values.as_slice(), "{}", meta.time_series_id);
    }
    // the windowed sample: 0.5 s to 1.5 s of a 100 Hz series starting at 0 s
    let windowed = samples.iter().find(|s| s.t_start_s.is_some()).unwrap();
    assert_eq!(&*v.read_sample_series(windowed, "rec-a/II").unwrap(), &f.values_of("rec-a/II")[50..150]);
}

#[test]
fn manifest_counts_encodings_schema_and_statistics() {
    let f = golden_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_fixture(tmp.path(), &f);
    let m = Version::open(&dir).unwrap().manifest().clone();

    assert_eq!((m.format.as_str(), m.format_version), ("timef", 1));
    assert_eq!(m.dataset.name, f.info.name);
    assert_eq!(m.dataset.version, f.info.version);
    assert_eq!(
        (&m.dataset.description, &m.dataset.license, &m.dataset.citation),
        (&f.info.description, &f.info.license, &f.info.citation)
    );
    assert_eq!(m.created_by.crate_version, format!("timef {}", env!("CARGO_PKG_VERSION")));
    assert_eq!(m.created_by.parquet, "parquet-rs version 60.1.0");

    let c = &m.counts;
    let shard_files: Vec<&str> =
        m.files.iter().map(|e| e.path.as_str()).filter(|p| p.starts_with("time_series/")).collect();
    assert_eq!(shard_files, ["time_series/shard-00000.parquet", "time_series/shard-00001.parquet"]);
    assert_eq!((c.samples, c.time_series, c.chunks, c.values, c.annotations, c.shards), (3, 5, 26, 6000, 5, 2));
    assert_eq!(
        c.tasks,
        BTreeMap::from([("diagnosis".into(), 2), ("forecast".into(), 1), ("heart-rate".into(), 1), ("qa".into(), 1)])
    );
    let enc = |s: &str| m.id_encoding[s].as_str();
    assert_eq!(
        ["sample_id", "time_series_id", "annotation_id", "task_id", "source_id", "subject_id"].map(enc),
        ["uuid16", "string", "uuid16", "string", "string", "uuid16"]
    );
    assert_eq!(m.id_encoding.len(), 6);

    // statistics per spec type and channel, from all values of the channel's series
    let mut by_channel: BTreeMap<(String, String), Vec<f32>> = BTreeMap::new();
    for (meta, values) in &f.series {
        by_channel.entry((meta.spec_type.clone(), meta.channel.clone())).or_default().extend(values);
    }
    let got: Vec<(String, String)> =
        m.statistics.iter().flat_map(|(s, chs)| chs.keys().map(move |c| (s.clone(), c.clone()))).collect();
    assert_eq!(got, by_channel.keys().cloned().collect::<Vec<_>>());
    for ((spec, ch), values) in &by_channel {
        assert_stats(&format!("{spec}/{ch}"), &m.statistics[spec][ch], &stats_of(values));
    }

    let ts = &m.schema.time_series;
    assert_eq!(
        (ts["ecg"]["I"].sampling_rates_hz.clone(), ts["ecg"]["I"].units.clone(), ts["ecg"]["I"].series),
        (vec![100.0, 250.0], vec!["mV".to_string()], 2)
    );
    assert_eq!(
        (ts["resp"]["chest"].sampling_rates_hz.clone(), ts["resp"]["chest"].units.len(), ts["resp"]["chest"].series),
        (vec![25.0], 0, 1)
    );
    let a = |k: &str| {
        let e = &m.schema.annotations[k];
        (e.annotation_types.join(","), e.value_kinds.join(","), e.count)
    };
    assert_eq!(m.schema.annotations.len(), 4);
    assert_eq!(a("class"), ("label".into(), "str".into(), 2));
    assert_eq!(a("beat"), ("event".into(), "str".into(), 1));
    assert_eq!(a("heart_rate"), ("number".into(), "num".into(), 1));
    assert_eq!(a("note"), ("text".into(), "str".into(), 1));
    let t = |k: &str| {
        let e = &m.schema.tasks[k];
        (e.task_types.join(","), e.splits.join(","), e.count)
    };
    assert_eq!(t("diagnosis"), ("classification".into(), "test,train".into(), 2));
    assert_eq!(t("forecast"), ("forecasting".into(), "".into(), 1));
    assert_eq!(t("heart-rate"), ("regression".into(), "train".into(), 1));
    assert_eq!(t("qa"), ("qa".into(), "val".into(), 1));
    assert_eq!(m.schema.sample_metadata, ["age", "site"]);

    let w = &m.writer;
    assert_eq!(
        (w.shard_target_bytes, w.shard_max_bytes, w.row_group_target_bytes, w.row_group_max_bytes, w.chunk_max_bytes),
        (16384, 24576, 4096, 8192, 1024)
    );
    assert_eq!((w.compression.as_str(), w.compression_level), ("zstd", 3));
    let cdc = &w.content_defined_chunking;
    assert_eq!((cdc.method.as_str(), cdc.min_chunk_size, cdc.max_chunk_size), ("row-key-v1", 262144, 1048576));
    assert_eq!(m.sources.len(), 1);
    assert_eq!(
        (m.sources[0].source_id.as_str(), m.sources[0].url.as_deref()),
        ("physionet", Some("https://physionet.org"))
    );
    assert!(m.derived_from.is_none());

    // every artifact but the manifest is listed, sorted, with its true size, rows and hash
    let on_disk: Vec<String> = file_bytes(&dir).into_keys().filter(|p| p != "manifest.json").collect();
    assert_eq!(m.files.iter().map(|e| e.path.clone()).collect::<Vec<_>>(), on_disk);
    for e in &m.files {
        let bytes = std::fs::read(dir.join(&e.path)).unwrap();
        assert_eq!(e.bytes, bytes.len() as u64, "{}", e.path);
        assert_eq!(e.sha256, hex::encode(sha2::Sha256::digest(&bytes)), "{}", e.path);
        assert_eq!(e.rows, parquet_metadata(&dir.join(&e.path)).file_metadata().num_rows() as u64, "{}", e.path);
    }
    assert_conforming(&dir);
}

#[test]
fn id_encoding_is_uuid16_only_when_every_value_is_canonical() {
    let tmp = tempfile::tempdir().unwrap();
    // series ids canonical everywhere; one sample id uppercase, so the sample space is string
    let mut f = golden_fixture();
    f.info.version = "ids".into();
    let canonical: BTreeMap<String, String> =
        f.series.iter().enumerate().map(|(i, (m, _))| (m.time_series_id.clone(), uuid7(0x7000 + i as u64))).collect();
    for (m, _) in &mut f.series {
        m.time_series_id = canonical[&m.time_series_id].clone();
    }
    for s in &mut f.samples {
        for r in &mut s.series {
            r.time_series_id = canonical[&r.time_series_id].clone();
        }
    }
    let upper = golden_sample(3).to_uppercase();
    let rename = |id: &mut String| {
        if *id == golden_sample(3) {
            *id = upper.clone();
        }
    };
    f.samples.iter_mut().for_each(|s| rename(&mut s.sample_id));
    f.annotations.iter_mut().for_each(|(_, samples)| samples.iter_mut().for_each(rename));
    f.tasks.iter_mut().for_each(|(_, t)| t.sample_ids.iter_mut().for_each(rename));
    let dir = write_fixture(tmp.path(), &f);

    let m = Version::open(&dir).unwrap().manifest().clone();
    assert_eq!((m.id_encoding["time_series_id"].as_str(), m.id_encoding["sample_id"].as_str()), ("uuid16", "string"));
    let shard = read_parquet(&dir.join("time_series/shard-00000.parquet"));
    assert_eq!(column(&shard, "time_series_id").data_type(), &DataType::FixedSizeBinary(16));
    let index = read_parquet(&dir.join("time_series_index.parquet"));
    assert_eq!(column(&index, "time_series_id").data_type(), &DataType::FixedSizeBinary(16));
    let samples = read_parquet(&dir.join("samples.parquet"));
    let entries = column(&samples, "series").as_list::<i32>().values().as_struct().clone();
    assert_eq!(entries.column_by_name("time_series_id").unwrap().data_type(), &DataType::FixedSizeBinary(16));
    // the non-canonical id is kept verbatim, and sorts by its string (uppercase first)
    assert_eq!(column(&samples, "sample_id").data_type(), &DataType::Utf8);
    assert_eq!(required_strings(column(&samples, "sample_id")), [upper.clone(), golden_sample(1), golden_sample(2)]);
    let tasks = read_parquet(&dir.join("tasks/task=diagnosis/part-0.parquet"));
    assert_eq!(string_lists(column(&tasks, "sample_ids"))[0], Some(vec![golden_sample(1), upper]));
    assert_conforming(&dir);
}
