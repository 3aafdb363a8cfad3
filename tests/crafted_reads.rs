//! Crafted versions on every read path (docs/format.md "Limits a reader
//! checks", §7 "Reading"): a file of a real version is rewritten and resealed
//! in the manifest (size and sha256), so only what the test crafted is wrong.
//! Every verb refuses with the exact error and exit 2 (`verify`: a finding,
//! exit 1), the library with `Error::Corrupt`; never a panic (101) or an abort
//! (134).

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, UInt32Array};
use arrow_buffer::OffsetBuffer;
use common::{cli, commit, ecg_dataset, parquet_metadata, read_parquet, reseal, small_options, varint};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use timef::reader::Version;
use timef::Error;

const INDEX: &str = "time_series_index.parquet";
const SHARD: &str = "time_series/shard-00000.parquet";

/// A committed 3-sample ECG version (small options: 2 chunks per series) under `tmp`.
fn version(tmp: &Path) -> PathBuf {
    commit(&tmp.join("root"), ecg_dataset("ecg", "1", 3), small_options())
}

/// Writes `batches` as the file `rel` of `dir`, one row group each, with
/// `props`, and reseals it in the manifest.
fn rewrite(dir: &Path, rel: &str, batches: &[RecordBatch], props: WriterProperties) {
    let path = dir.join(rel);
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(&path).unwrap(), batches[0].schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
        w.flush().unwrap();
    }
    w.close().unwrap();
    reseal(dir, rel);
}

/// The shard's rows cut at its row groups, after `edit` of the whole batch.
fn shard_row_groups(dir: &Path, edit: impl FnOnce(RecordBatch) -> RecordBatch) -> Vec<RecordBatch> {
    let path = dir.join(SHARD);
    let whole = edit(read_parquet(&path));
    let mut at = 0;
    parquet_metadata(&path)
        .row_groups()
        .iter()
        .map(|g| {
            let n = g.num_rows() as usize;
            at += n;
            whole.slice(at - n, n)
        })
        .collect()
}

fn zstd() -> parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
}

/// Runs every read verb on `dir`: each must exit 2 with one line on stderr
/// that starts with `prefix` and ends with `problem` and nothing on stdout;
/// `verify` exits 1 with a
/// FAIL line containing `finding`.
fn every_verb_refuses(tmp: &Path, dir: &Path, series: &str, (prefix, problem): (&str, &str), finding: &str) {
    let d = dir.to_str().unwrap();
    let out = tmp.join("edited");
    let export = tmp.join("export.arrow");
    let verbs: Vec<Vec<&str>> = vec![
        vec!["cat", d, series],
        vec!["edit", d, "--out-root", out.to_str().unwrap(), "--version", "2", "--remove-sample", "s002"],
        vec!["export", d, "--out", export.to_str().unwrap()],
        vec!["export", d, "--count"],
    ];
    for args in verbs {
        let (code, stdout, err) = cli(&args);
        assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{args:?}: {err}");
        assert!(
            err.starts_with(prefix) && err.trim_end().ends_with(problem),
            "{args:?}:\n{err}\nwant {prefix}...{problem}"
        );
    }
    assert!(!out.join("ecg/2").exists() && !export.exists());
    let (code, stdout, _) = cli(&["verify", d]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("FAIL ") && l.contains(finding)), "{stdout}\nwant {finding}");
}

/// `verify --json` of `dir` lists shard 0's row group 0 as not decoded.
fn assert_row_group_0_not_decoded(dir: &Path) {
    let (code, stdout, _) = cli(&["verify", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let skipped = format!("{SHARD}: row group 0 not decoded: its pages have findings");
    assert!(report["skipped"].as_array().unwrap().iter().any(|s| s == &skipped[..]), "{stdout}");
}

/// The index with row `row` repeated (the panic of `RowSelection` on rows
/// sorted but not de-duplicated, exit 101 before): every read path refuses the
/// version as corrupt, naming the repeated row, before any shard is read.
#[test]
fn a_repeated_index_row_is_a_corrupt_version_on_every_read_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let v = Version::open(&dir).unwrap();
    let row = v.index().unwrap().iter().position(|e| e.meta.time_series_id == "s000/I").unwrap();
    let n = v.index().unwrap()[row].n_values;
    let batch = read_parquet(&dir.join(INDEX));
    let mut rows: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // over the series' chunk 1: the rows stay the count the manifest lists
    rows[row + 1] = row as u32;
    let repeated = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(rows)).unwrap();
    rewrite(&dir, INDEX, &[repeated], WriterProperties::builder().build());

    let reason = format!("row {}: s000/I chunk 0 at value 0 with {n} values, expected chunk 1 at value {n}", row + 1);
    let path = dir.join(INDEX);
    let want = format!("timef: error: corrupt version: {}: {reason}\n", path.display());
    // the series on the repeated row, and one that is not
    for series in ["s000/I", "s002/II"] {
        every_verb_refuses(tmp.path(), &dir, series, (&want, &reason), &format!("row {}", row + 1));
    }
    let d = dir.to_str().unwrap();
    for args in [vec!["info", d], vec!["info", d, "--json"], vec!["dedup", d, d]] {
        assert_eq!(cli(&args), (2, String::new(), want.clone()), "{args:?}");
    }
    let v = Version::open(&dir).unwrap();
    let sample = v.samples().unwrap().into_iter().next().unwrap();
    for got in [v.read_series("s000/I"), v.read_series("s001/I"), v.read_sample_series(&sample, "s000/I")] {
        match got {
            Err(Error::Corrupt { path: p, reason: r }) => assert_eq!((p, r), (path.clone(), reason.clone())),
            other => panic!("{other:?}"),
        }
    }
}

/// A values page that is dictionary-encoded (the format never writes one; a
/// dictionary run expands a few bytes to any count) is refused before it is
/// decoded, on every read path; `verify` reports it and does not decode it.
#[test]
fn a_dictionary_encoded_values_page_is_refused_before_it_is_decoded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let groups = shard_row_groups(&dir, |b| b);
    rewrite(&dir, SHARD, &groups, zstd().set_dictionary_enabled(true).build());
    let problem = "a dictionary page in a values column chunk (the format never writes one)";
    let path = dir.join(SHARD);
    // every series of the shard lies on a refused page: cat's read of s000/I meets it first
    let (code, stdout, err) = cli(&["cat", dir.to_str().unwrap(), "s000/I"]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
    let prefix = format!("timef: error: corrupt version: {}: ", path.display());
    assert!(err.starts_with(&prefix) && err.trim_end().ends_with(problem), "{err}\nwant {prefix}...{problem}");
    every_verb_refuses(tmp.path(), &dir, "s000/I", (&prefix, problem), problem);
    assert_row_group_0_not_decoded(&dir);
}

/// A values column chunk holding more values than the index puts in its row
/// group (here a chunk of 2^20 zeros, a 4 MiB page stored in a few hundred
/// bytes) is refused by its footer's count before any page is decoded (a
/// page past the index alone is refused by its header: `footer`'s unit tests).
#[test]
fn a_values_page_past_what_the_index_says_is_refused_before_it_is_decoded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let v = Version::open(&dir).unwrap();
    let first = &v
        .index()
        .unwrap()
        .iter()
        .find(|e| e.shard_path == SHARD && e.row_group == 0 && e.row_offset == 0)
        .unwrap()
        .clone();
    let entries: i64 = v
        .index()
        .unwrap()
        .iter()
        .filter(|e| e.shard_path == SHARD && e.row_group == 0)
        .map(|e| i64::from(e.n_values))
        .sum();
    let groups = shard_row_groups(&dir, |b| {
        // row 0's values become 2^20 zeros
        let i = b.schema().index_of("values").unwrap();
        let list = b.column(i).as_list::<i32>();
        let items = list.values().as_primitive::<Float32Type>();
        let mut values: Vec<f32> = vec![0.0; 1 << 20];
        let mut lengths = vec![1usize << 20];
        for r in 1..list.len() {
            let (s, e) = (list.value_offsets()[r] as usize, list.value_offsets()[r + 1] as usize);
            values.extend_from_slice(&items.values()[s..e]);
            lengths.push(e - s);
        }
        let field = match b.schema().field(i).data_type() {
            arrow_schema::DataType::List(f) => Arc::clone(f),
            other => panic!("{other}"),
        };
        let list = ListArray::new(
            field,
            OffsetBuffer::from_lengths(lengths),
            Arc::new(arrow_array::Float32Array::from(values)) as ArrayRef,
            None,
        );
        let mut columns = b.columns().to_vec();
        columns[i] = Arc::new(list);
        RecordBatch::try_new(b.schema(), columns).unwrap()
    });
    rewrite(&dir, SHARD, &groups, zstd().set_dictionary_enabled(false).build());
    assert!(std::fs::metadata(dir.join(SHARD)).unwrap().len() < 64 << 10);
    // the footer's count of the values column chunk is held to the index first
    let held = entries - i64::from(first.n_values) + (1 << 20);
    let problem =
        format!("row group 0 values column chunk holds {held} values by the footer, the index puts {entries} in it");
    let path = dir.join(SHARD);
    let id = first.meta.time_series_id.as_str();
    let (code, stdout, err) = cli(&["cat", dir.to_str().unwrap(), id]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
    let prefix = format!("timef: error: corrupt version: {}: ", path.display());
    assert!(err.starts_with(&prefix) && err.trim_end().ends_with(&problem), "{err}\nwant {prefix}...{problem}");
    match Version::open(&dir).unwrap().read_series(id) {
        Err(Error::Corrupt { path: p, reason }) => {
            assert_eq!(p, path);
            assert!(reason.ends_with(&problem), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let (code, stdout, err) = cli(&["export", dir.to_str().unwrap(), "--count"]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
    assert!(err.trim_end().ends_with(&problem), "{err}");
}

/// A values page header whose `num_values` is negative (which cancelled a
/// huge page in `verify`'s sum before) is refused by the reader and is a
/// finding of `verify`, whose row group is then not decoded.
#[test]
fn a_negative_values_count_is_refused_and_a_verify_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let path = dir.join(SHARD);
    let meta = parquet_metadata(&path);
    let rg = meta.row_group(0);
    let c = (0..rg.num_columns()).find(|&c| rg.column(c).column_path().string() == "values.list.element").unwrap();
    let at = rg.column(c).byte_range().0 as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    let (header, _) = timef::thrift::PageHeader::decode(&bytes[at..]).unwrap();
    let timef::thrift::PageKind::Data { num_values, .. } = header.kind else { panic!("{header:?}") };
    // type, both sizes and the crc are short-form i32 fields; then the data page header's num_values
    let mut p = at;
    for _ in 0..4 {
        assert_eq!(bytes[p], 0x15);
        p += 1;
        while bytes[p] & 0x80 != 0 {
            p += 1;
        }
        p += 1;
    }
    assert_eq!(bytes[p..p + 2], [0x1c, 0x15], "data_page_header, num_values at {p}");
    let (old, new) = (varint(2 * num_values as u64), varint(2 * num_values as u64 - 1));
    assert_eq!(bytes[p + 2..p + 2 + old.len()], old[..]);
    assert_eq!(old.len(), new.len(), "zigzag(-n) is as long as zigzag(n) here");
    bytes.splice(p + 2..p + 2 + old.len(), new);
    std::fs::write(&path, &bytes).unwrap();
    reseal(&dir, SHARD);
    let problem = format!("a values page claims -{num_values} values");
    let (code, stdout, err) = cli(&["cat", dir.to_str().unwrap(), "s000/I"]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
    assert!(err.trim_end().ends_with(&problem), "{err}\nwant ...{problem}");
    let (code, stdout, _) = cli(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    let line = format!("FAIL [page-header] {SHARD} row group 0, column values.list.element, page 0: {problem}");
    assert!(stdout.lines().any(|l| l == line), "{stdout}\nwant {line}");
    assert_row_group_0_not_decoded(&dir);
}

/// The index with its first series' rows moved to the end (each series'
/// chunks still consecutive, so no set of seen ids could catch it): refused
/// by its sort order, naming the row, on every read path.
#[test]
fn an_index_out_of_series_order_is_a_corrupt_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let v = Version::open(&dir).unwrap();
    let index = v.index().unwrap();
    let first = &index[0].meta.time_series_id;
    let k = index.iter().take_while(|e| &e.meta.time_series_id == first).count();
    let (n, last) = (index.len(), index[index.len() - 1].meta.time_series_id.clone());
    let batch = read_parquet(&dir.join(INDEX));
    let rows: Vec<u32> = (k..n).chain(0..k).map(|r| r as u32).collect();
    let moved = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(rows)).unwrap();
    rewrite(&dir, INDEX, &[moved], WriterProperties::builder().build());
    let reason = format!(
        "row {}: {first} does not sort after the previous series {last} (spec_type, channel, time_series_id): \
         a series' chunks are consecutive rows, in series order",
        n - k
    );
    let path = dir.join(INDEX);
    let want = format!("timef: error: corrupt version: {}: {reason}\n", path.display());
    every_verb_refuses(tmp.path(), &dir, first, (&want, &reason), &format!("row {}", n - k));
    match Version::open(&dir).unwrap().read_series(&last) {
        Err(Error::Corrupt { path: p, reason: r }) => assert_eq!((p, r), (path, reason)),
        other => panic!("{other:?}"),
    }
}

/// Row group 0 of the shard with every row's values replaced by `per_row`
/// values (one page each), written so; returns the level entries the index
/// puts in row group 0 and the rows of row group 0.
fn rows_of_row_group_0_refilled(dir: &Path, per_row: impl Fn(u64) -> u64) -> (u64, usize) {
    let v = Version::open(dir).unwrap();
    let entries: u64 = v
        .index()
        .unwrap()
        .iter()
        .filter(|e| e.shard_path == SHARD && e.row_group == 0)
        .map(|e| u64::from(e.n_values.unsigned_abs().max(1)))
        .sum();
    let rows = parquet_metadata(&dir.join(SHARD)).row_group(0).num_rows() as usize;
    let mut groups = shard_row_groups(dir, |b| b);
    let b = &groups[0];
    let i = b.schema().index_of("values").unwrap();
    let field = match b.schema().field(i).data_type() {
        arrow_schema::DataType::List(f) => Arc::clone(f),
        other => panic!("{other}"),
    };
    let lengths: Vec<usize> = (0..rows).map(|_| per_row(entries) as usize).collect();
    let total: usize = lengths.iter().sum();
    let list = ListArray::new(
        field,
        OffsetBuffer::from_lengths(lengths),
        Arc::new(arrow_array::Float32Array::from(vec![1.0f32; total])) as ArrayRef,
        None,
    );
    let mut columns = b.columns().to_vec();
    columns[i] = Arc::new(list);
    groups[0] = RecordBatch::try_new(b.schema(), columns).unwrap();
    // one record a page, so each page claims what its row holds
    let props = zstd().set_dictionary_enabled(false).set_write_batch_size(1).set_data_page_row_count_limit(1);
    rewrite(dir, SHARD, &groups, props.build());
    (entries, rows)
}

/// Many small values pages, each within what the index puts in their row
/// group but together past it (a few KB decoding to any size), with the
/// footer's `num_values` of the values column chunk patched to the index's
/// count: refused by the running total of the pages' claims before they are
/// decoded; `verify` reports the pages' sum against the footer and does not
/// decode the row group.
#[test]
fn many_small_values_pages_past_the_index_together_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let (entries, rows) = rows_of_row_group_0_refilled(&dir, |entries| entries - 1);
    assert!(rows >= 2 && entries > 2, "{rows} rows, {entries} entries");
    let held = rows as u64 * (entries - 1);
    // the footer's num_values of row group 0's values column chunk (field 5, after the codec) := entries
    let path = dir.join(SHARD);
    let mut bytes = std::fs::read(&path).unwrap();
    let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    let footer = bytes.len() - 8 - footer_len..bytes.len() - 8;
    let (old, new) = ([&[0x16u8][..], &varint(2 * held)].concat(), [&[0x16u8][..], &varint(2 * entries)].concat());
    assert_eq!(old.len(), new.len());
    let at: Vec<usize> =
        (footer.start..footer.end - old.len()).filter(|&p| bytes[p..p + old.len()] == old[..]).collect();
    assert_eq!(at.len(), 1, "num_values {held} in the footer at {at:?}");
    bytes.splice(at[0]..at[0] + old.len(), new);
    std::fs::write(&path, &bytes).unwrap();
    reseal(&dir, SHARD);
    assert_eq!(parquet_metadata(&path).row_group(0).column(4).num_values() as u64, entries);

    let problem = format!(
        "the values pages claim {} values so far, the index puts {entries} in their row group",
        2 * (entries - 1)
    );
    let prefix = format!("timef: error: corrupt version: {}: ", path.display());
    for args in [
        vec!["export", dir.to_str().unwrap(), "--count"],
        vec!["export", dir.to_str().unwrap(), "--out", tmp.path().join("x.arrow").to_str().unwrap()],
    ] {
        let (code, stdout, err) = cli(&args);
        assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
        assert!(err.starts_with(&prefix) && err.trim_end().ends_with(&problem), "{err}\nwant {prefix}...{problem}");
    }
    let (code, stdout, _) = cli(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    let line = format!(
        "FAIL [page-header] {SHARD} row group 0, column values.list.element: data pages hold {held} values, the footer says {entries}"
    );
    assert!(stdout.lines().any(|l| l == line), "{stdout}\nwant {line}");
    assert_row_group_0_not_decoded(&dir);
}

/// The same pages with the footer's true count: refused by the footer's
/// `num_values` against the index before any page is read, on every read
/// path; a pointer finding of `verify`, which does not decode the row group.
#[test]
fn a_values_column_chunk_holding_other_than_the_index_says_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let (entries, rows) = rows_of_row_group_0_refilled(&dir, |entries| entries - 1);
    let held = rows as u64 * (entries - 1);
    let path = dir.join(SHARD);
    let problem =
        format!("row group 0 values column chunk holds {held} values by the footer, the index puts {entries} in it");
    let prefix = format!("timef: error: corrupt version: {}: ", path.display());
    let v = Version::open(&dir).unwrap();
    let id = v
        .index()
        .unwrap()
        .iter()
        .find(|e| e.shard_path == SHARD && e.row_group == 0)
        .unwrap()
        .meta
        .time_series_id
        .clone();
    let (code, stdout, err) = cli(&["cat", dir.to_str().unwrap(), &id]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
    assert!(err.starts_with(&prefix) && err.trim_end().ends_with(&problem), "{err}\nwant {prefix}...{problem}");
    match v.read_series(&id) {
        Err(Error::Corrupt { path: p, reason }) => assert_eq!((p, reason), (path.clone(), problem.clone())),
        other => panic!("{other:?}"),
    }
    let (code, stdout, err) = cli(&["export", dir.to_str().unwrap(), "--count"]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{err}");
    assert!(err.trim_end().ends_with(&problem), "{err}");
    let (code, stdout, _) = cli(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1);
    let line = format!(
        "FAIL [pointer] {SHARD} row group 0: values column chunk holds {held} values by the footer, the index puts {entries} in it"
    );
    assert!(stdout.lines().any(|l| l == line), "{stdout}\nwant {line}");
    assert_row_group_0_not_decoded(&dir);
}

/// The index rewritten with every row twice (a footer claiming rows the
/// manifest does not list, as a crafted 15 KB index claiming 10^8 rows
/// does): refused before it is decoded, on every read path, naming both
/// counts; a counts finding of `verify`, which does not decode it.
#[test]
fn an_index_footer_claiming_other_rows_than_the_manifest_is_refused_before_decoding() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = version(tmp.path());
    let batch = read_parquet(&dir.join(INDEX));
    let n = batch.num_rows();
    let twice = arrow_select::concat::concat_batches(&batch.schema(), [&batch, &batch]).unwrap();
    rewrite(&dir, INDEX, &[twice], WriterProperties::builder().build());
    let path = dir.join(INDEX);
    let reason = format!("the footer claims {} rows, manifest.json lists {n}", 2 * n);
    let want = format!("timef: error: corrupt version: {}: {reason}\n", path.display());
    every_verb_refuses(
        tmp.path(),
        &dir,
        "s000/I",
        (&want, &reason),
        &format!("manifest.json files[] rows {n}, the footer says {}", 2 * n),
    );
    let d = dir.to_str().unwrap();
    for args in [vec!["info", d], vec!["dedup", d, d]] {
        assert_eq!(cli(&args), (2, String::new(), want.clone()), "{args:?}");
    }
    match Version::open(&dir).unwrap().read_series("s000/I") {
        Err(Error::Corrupt { path: p, reason: r }) => assert_eq!((p, r), (path.clone(), reason.clone())),
        other => panic!("{other:?}"),
    }
    let (_, stdout, _) = cli(&["verify", d, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let skipped = format!("{INDEX}: row group 0 not decoded: its pages have findings");
    assert!(report["skipped"].as_array().unwrap().iter().any(|s| s == &skipped[..]), "{stdout}");
}
