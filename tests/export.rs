//! Bulk reads (`timef::scan`) and `timef export` on the committed golden
//! version (five series, 26 chunks in 6 row groups of two shards): every
//! series equals `read_series`, selections take exactly the expected series,
//! bad options and corrupt shards give exact errors, never a panic, and an
//! object-store export equals the local one.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type, Int64Type};
use arrow_array::RecordBatch;
use common::*;
use timef::reader::Version;
use timef::scan::{scan, scan_schema, ScanOptions, Selection};
use timef::storage::Location;
use timef::Error;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0")
}

const SERIES: [&str; 5] = ["rec-a/I", "rec-b/I", "rec-a/II", "rec-b/II", "rec-b/resp"];

fn options(threads: usize, in_flight: usize) -> ScanOptions {
    ScanOptions::builder().threads(threads).row_groups_in_flight(in_flight).try_build().unwrap()
}

/// Every batch of a scan of `selection`.
fn batches(v: &Version, selection: &Selection, opts: &ScanOptions) -> Vec<RecordBatch> {
    scan(v, selection, opts).unwrap().collect::<timef::Result<Vec<_>>>().unwrap()
}

/// The chunk rows of `batches` as (id, chunk, value offset, values).
fn rows(batches: &[RecordBatch]) -> Vec<(String, i32, i64, Vec<f32>)> {
    let mut out = Vec::new();
    for b in batches {
        assert_eq!(b.schema(), scan_schema());
        let ids = b.column(0).as_string::<i32>();
        let chunk = b.column(1).as_primitive::<Int32Type>();
        let offset = b.column(2).as_primitive::<Int64Type>();
        let values = b.column(3).as_list::<i32>();
        for i in 0..b.num_rows() {
            let v = values.value(i);
            out.push((
                ids.value(i).to_string(),
                chunk.value(i),
                offset.value(i),
                v.as_primitive::<Float32Type>().values().to_vec(),
            ));
        }
    }
    out
}

/// Asserts that `rows` are every chunk of `ids`, in order, each equal to its
/// slice of `read_series`.
fn assert_rows_are_series(v: &Version, rows: &[(String, i32, i64, Vec<f32>)], ids: &[&str]) {
    let mut at = 0;
    for id in ids {
        let want = v.read_series(id).unwrap();
        let mut next = 0usize;
        let mut chunk = 0;
        while at < rows.len() && rows[at].0 == *id {
            let (_, c, off, values) = &rows[at];
            assert_eq!((*c, *off), (chunk, next as i64), "{id}");
            assert_eq!(&values[..], &want[next..next + values.len()], "{id} chunk {c}");
            next += values.len();
            chunk += 1;
            at += 1;
        }
        assert_eq!(next, want.len(), "{id}: every value");
    }
    assert_eq!(at, rows.len(), "no other rows");
}

fn series_ids(v: &Version, selection: &Selection) -> Vec<String> {
    scan(v, selection, &ScanOptions::default())
        .unwrap()
        .series_meta()
        .iter()
        .map(|m| m.time_series_id.clone())
        .collect()
}

#[test]
fn a_scan_of_every_series_equals_read_series_whatever_the_threads() {
    let v = Version::open(golden()).unwrap();
    let s = scan(&v, &Selection::all(), &ScanOptions::default()).unwrap();
    assert_eq!((s.series_meta().len(), s.chunks(), s.values(), s.row_groups()), (5, 26, 6000, 4));
    let one = batches(&v, &Selection::all(), &options(1, 1));
    let r = rows(&one);
    assert_eq!(r.len(), 26);
    assert_rows_are_series(&v, &r, &SERIES);
    // one batch per row group, the same batches on 1, 2 or 3 threads and any bound
    assert_eq!(one.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [7, 5, 8, 6]);
    for (threads, in_flight) in [(2, 1), (2, 2), (3, 6), (0, 4)] {
        assert_eq!(batches(&v, &Selection::all(), &options(threads, in_flight)), one, "{threads} threads");
    }
    // whole series
    let series: Vec<_> = scan(&v, &Selection::all(), &options(2, 2)).unwrap().series().map(|r| r.unwrap()).collect();
    assert_eq!(series.iter().map(|(m, _)| m.time_series_id.as_str()).collect::<Vec<_>>(), SERIES);
    for (meta, values) in &series {
        assert_eq!(values, &v.read_series(&meta.time_series_id).unwrap(), "{}", meta.time_series_id);
    }
    assert_eq!(series.iter().map(|(_, v)| v.len()).sum::<usize>(), 6000);
}

#[test]
fn selections_take_exactly_the_expected_series_in_index_order() {
    let v = Version::open(golden()).unwrap();
    let (s1, s2, s3) = (golden_sample(1), golden_sample(2), golden_sample(3));
    let cases: Vec<(Selection, Vec<&str>)> = vec![
        (Selection::all().samples([s2.clone()]), vec!["rec-a/II"]),
        (
            Selection::all().samples([s3.clone(), s1.clone()]),
            vec!["rec-a/I", "rec-b/I", "rec-a/II", "rec-b/II", "rec-b/resp"],
        ),
        (Selection::all().samples([s1.clone()]), vec!["rec-a/I", "rec-a/II"]),
        (Selection::all().channels(["I"]), vec!["rec-a/I", "rec-b/I"]),
        (Selection::all().channels(["chest", "II"]), vec!["rec-a/II", "rec-b/II", "rec-b/resp"]),
        (Selection::all().task("diagnosis", Some("test")), vec!["rec-a/II"]),
        (Selection::all().task("qa", None), vec!["rec-b/I", "rec-b/II", "rec-b/resp"]),
        // forecasting: sample_ids, context and target samples
        (Selection::all().task("forecast", None), vec!["rec-a/I", "rec-a/II"]),
        (Selection::all().task("diagnosis", Some("train")).channels(["II"]), vec!["rec-a/II", "rec-b/II"]),
        (Selection::all().task("diagnosis", Some("test")).samples([s3.clone()]), vec![]),
    ];
    for (selection, want) in cases {
        assert_eq!(series_ids(&v, &selection), want, "{selection:?}");
        assert_rows_are_series(&v, &rows(&batches(&v, &selection, &options(2, 2))), &want);
    }
}

#[test]
fn unknown_samples_channels_tasks_and_splits_are_refused_by_name() {
    let v = Version::open(golden()).unwrap();
    let err = |s: Selection| scan(&v, &s, &ScanOptions::default()).err().unwrap().to_string();
    assert_eq!(err(Selection::all().samples(["nope"])), "invalid sample_id of nope: no such sample in this version");
    assert_eq!(
        err(Selection::all().channels(["V9"])),
        "invalid channel of V9: no such channel in this version (channels: I, II, chest)"
    );
    // a channel named as `info` shows it, with its spec type (review 146)
    assert_eq!(
        err(Selection::all().channels(["ecg/II"])),
        "invalid channel of ecg/II: no such channel in this version (a channel is named without its spec type: \
         II; channels: I, II, chest)"
    );
    assert_eq!(err(Selection::all().task("sleep", None)), "invalid task_name of sleep: no such task in this version");
    assert_eq!(
        err(Selection::all().task("diagnosis", Some("val"))),
        "invalid split of val: no task of diagnosis has it (splits: test, train)"
    );
    assert_eq!(
        ScanOptions::builder().row_groups_in_flight(0).try_build().unwrap_err().to_string(),
        "invalid option row_groups_in_flight: must be at least 1"
    );
}

/// Reads an exported file back (Arrow IPC or Parquet) as batches.
fn read_export(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    if path.extension().is_some_and(|e| e == "parquet") {
        let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
        r.map(|b| b.unwrap()).collect()
    } else {
        arrow_ipc::reader::FileReader::try_new(file, None).unwrap().map(|b| b.unwrap()).collect()
    }
}

#[test]
fn cli_export_writes_every_selected_chunk_as_read_series_reads_it() {
    let v = Version::open(golden()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let g = golden();
    let g = g.to_str().unwrap();
    for (format, name) in [("arrow", "all.arrow"), ("parquet", "all.parquet")] {
        let out = tmp.path().join(name);
        let (code, stdout, stderr) = cli(&["export", g, "--out", out.to_str().unwrap(), "--format", format]);
        assert_eq!((code, stderr.as_str()), (0, ""));
        let bytes = std::fs::metadata(&out).unwrap().len();
        assert_eq!(stdout, format!("5 series, 26 chunks, 6000 values -> {} ({bytes} bytes)\n", out.display()));
        let back = read_export(&out);
        assert_eq!(back[0].schema(), scan_schema(), "{format}");
        assert_rows_are_series(&v, &rows(&back), &SERIES);
    }
    // selections through the flags
    let out = tmp.path().join("train-II.arrow");
    let (code, stdout, _) = cli(&[
        "export",
        g,
        "--out",
        out.to_str().unwrap(),
        "--task",
        "diagnosis",
        "--split",
        "train",
        "--channels",
        "II",
    ]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("2 series, 11 chunks, 2600 values -> "), "{stdout}");
    assert_rows_are_series(&v, &rows(&read_export(&out)), &["rec-a/II", "rec-b/II"]);
    let samples = format!("{},{}", golden_sample(2), golden_sample(1));
    assert_eq!(cli(&["export", g, "--count", "--samples", &samples]).1, "2 series, 4 chunks, 600 values\n",);
    assert_eq!(
        cli(&["export", g, "--count", "--channels", "I", "--channels", "chest"]).1,
        "3 series, 15 chunks, 3400 values\n"
    );
    // without --format, the file's name says which (review 127: `x.parquet`
    // got Arrow IPC), and --format says otherwise when given
    let magic = |p: &std::path::Path| std::fs::read(p).unwrap()[..4].to_vec();
    for (name, format, want) in [
        ("named.parquet", None, &b"PAR1"[..]),
        ("named.PARQUET", None, b"PAR1"),
        ("named.feather", None, b"ARRO"),
        ("ipc.parquet", Some("arrow"), b"ARRO"),
    ] {
        let out = tmp.path().join(name);
        let mut args = vec!["export", g, "--out", out.to_str().unwrap()];
        args.extend(format.map(|f| ["--format", f]).iter().flatten());
        assert_eq!(cli(&args).0, 0, "{name}");
        assert_eq!(magic(&out), want, "{name}");
    }
    // only the written files are there: no temporary file left beside them
    assert_eq!(
        tree(tmp.path()),
        [
            "all.arrow",
            "all.parquet",
            "ipc.parquet",
            "named.PARQUET",
            "named.feather",
            "named.parquet",
            "train-II.arrow"
        ]
    );
}

#[test]
fn bad_export_options_give_one_exact_error_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let g = golden();
    let g = g.to_str().unwrap();
    let existing = tmp.path().join("there.arrow");
    std::fs::write(&existing, b"keep me").unwrap();
    let out = tmp.path().join("x.arrow");
    let out = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["--out", out, "--split", "train"], "invalid option --split: needs --task".into()),
        (vec![], "invalid option --out: required (or --count to read without writing)".into()),
        (
            vec!["--out", out, "--count"],
            "invalid option --count: writes nothing: give --out or --count, not both".into(),
        ),
        (
            vec!["--out", existing.to_str().unwrap()],
            format!("invalid option --out: {} exists; export never replaces a file", existing.display()),
        ),
        (vec!["--out", out, "--samples", "nope"], "invalid sample_id of nope: no such sample in this version".into()),
        (
            vec!["--out", out, "--channels", "V9"],
            "invalid channel of V9: no such channel in this version (channels: I, II, chest)".into(),
        ),
        (vec!["--out", out, "--task", "sleep"], "invalid task_name of sleep: no such task in this version".into()),
        (
            vec!["--out", out, "--task", "diagnosis", "--split", "val"],
            "invalid split of val: no task of diagnosis has it (splits: test, train)".into(),
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["export", g];
        all.extend(&args);
        let (code, stdout, stderr) = cli(&all);
        assert_eq!((code, stdout.as_str(), stderr), (2, "", format!("timef: error: {want}\n")), "{args:?}");
    }
    // a folder that is missing: named so, as every verb names one (review 127:
    // it was the OS error on --out); a file in its place: the OS error on
    // --out, not on a temporary name
    let missing = tmp.path().join("missing/x.arrow");
    let in_a_file = existing.join("x.arrow");
    let missing_dir = format!("not found: {}: no such directory", tmp.path().join("missing").display());
    let not_dir = format!("I/O on {}: Not a directory (os error 20)", in_a_file.display());
    for (path, want) in [(&missing, missing_dir), (&in_a_file, not_dir)] {
        let (code, stdout, stderr) = cli(&["export", g, "--out", path.to_str().unwrap()]);
        assert_eq!((code, stdout.as_str(), stderr), (2, "", format!("timef: error: {want}\n")));
    }
    let (code, _, stderr) = cli(&["export", g, "--out", out, "--format", "xml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("invalid value 'xml' for '--format <FORMAT>'"), "{stderr}");
    let (code, _, stderr) = cli(&["export", tmp.path().to_str().unwrap(), "--count"]);
    assert_eq!(
        (code, stderr),
        (2, format!("timef: error: not a TimeF version: {}: no manifest.json\n", tmp.path().display()))
    );
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    assert_eq!(tree(tmp.path()), ["there.arrow"]);
}

/// A copy of the golden version in a fresh temporary directory.
fn golden_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v");
    copy_dir(&golden(), &dir);
    (tmp, dir)
}

/// Review 100: `export --out` inside a committed version wrote a file into
/// it (`verify` then failed: a file not in the manifest). It is refused as a
/// write's root inside a version is, directly in the version or deeper, and
/// the version keeps its files; the library's `export` refuses alike.
#[test]
fn an_export_into_a_committed_version_is_refused_and_leaves_it_whole() {
    let (_tmp, dir) = golden_copy();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let before = tree(&dir);
    let g = dir.to_str().unwrap();
    let version = dir.canonicalize().unwrap();
    for out in [dir.join("x.arrow"), dir.join("sub/x.arrow"), dir.join("time_series/x.parquet")] {
        let (code, stdout, stderr) = cli(&["export", g, "--out", out.to_str().unwrap()]);
        let want = format!(
            "timef: error: invalid out of {}: is inside the committed version {}, which never changes: choose a \
             file outside it\n",
            out.display(),
            version.display()
        );
        assert_eq!((code, stdout.as_str(), stderr), (2, "", want), "{}", out.display());
        let v = Version::open(dir.clone()).unwrap();
        let scan = timef::scan::scan(&v, &Selection::all(), &options(1, 1)).unwrap();
        let err = timef::export::export(scan, &out, timef::export::ExportFormat::ArrowIpc).unwrap_err();
        assert!(matches!(&err, timef::Error::Validation { field: "out", .. }), "{err:?}");
    }
    assert_eq!(tree(&dir), before);
}

/// A copy of the golden version whose shard 1 is cut in half (its footer is
/// gone), and the path of that shard.
fn golden_with_shard_1_cut_short() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (tmp, dir) = golden_copy();
    let shard1 = dir.join("time_series/shard-00001.parquet");
    let bytes = std::fs::read(&shard1).unwrap();
    replace_file(&dir, "time_series/shard-00001.parquet", &bytes[..bytes.len() / 2]);
    (tmp, dir, shard1)
}

#[test]
fn a_corrupt_shard_is_a_typed_error_never_a_panic_and_leaves_no_file() {
    let (tmp, dir, shard1) = golden_with_shard_1_cut_short();
    let v = Version::open(&dir).unwrap();
    let got: Vec<_> = scan(&v, &Selection::all(), &options(2, 4)).unwrap().collect();
    // the three row groups of shard 0 come first, then the error, then nothing
    assert_eq!(got.len(), 4);
    assert!(got[..3].iter().all(Result::is_ok));
    match &got[3] {
        Err(Error::Corrupt { path, reason }) => {
            assert_eq!(path, &shard1);
            assert!(reason.starts_with("parquet: "), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // a selection that does not touch the broken shard reads
    assert_eq!(rows(&batches(&v, &Selection::all().channels(["I"]), &options(2, 2))).len(), 11);

    // shard 0 holding shard 1's bytes: its footer's values counts are not the
    // index's, refused before any page is decoded
    let bytes = std::fs::read(golden().join("time_series/shard-00001.parquet")).unwrap();
    replace_file(&dir, "time_series/shard-00000.parquet", &bytes);
    let v = Version::open(&dir).unwrap();
    let shard0 = dir.join("time_series/shard-00000.parquet");
    let first_error = |s: Selection| scan(&v, &s, &options(1, 1)).unwrap().find_map(Result::err).unwrap().to_string();
    assert_eq!(
        first_error(Selection::all().samples([golden_sample(1)])),
        format!(
            "corrupt version: {}: row group 0 values column chunk holds 1308 values by the footer, the index puts 1580 in it",
            shard0.display()
        )
    );
    let err = first_error(Selection::all());
    assert_eq!(err, format!("corrupt version: {}: row offset beyond row group 0 of 6 rows", shard0.display()));
    let out = tmp.path().join("out.arrow");
    let (code, stdout, stderr) = cli(&["export", dir.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert_eq!(stderr, format!("timef: error: {err}\n"));
    assert_eq!(tree(tmp.path()).iter().filter(|e| !e.starts_with("v")).count(), 0, "no output, no temporary file");
}

#[test]
fn an_index_pointing_outside_the_manifest_is_refused_before_any_shard_is_read() {
    let (_tmp, dir) = golden_copy();
    let v = Version::open(&dir).unwrap();
    // the manifest no longer lists shard 1: the index's pointers to it are refused by path
    let path = dir.join("manifest.json");
    let mut m = timef::manifest::Manifest::parse(&std::fs::read(&path).unwrap()).unwrap();
    m.files.retain(|f| f.path != "time_series/shard-00001.parquet");
    let m = if m.manifest_sha256.is_some() { m.sealed() } else { m };
    std::fs::write(&path, m.to_bytes()).unwrap();
    drop(v);
    let v = Version::open(&dir).unwrap();
    let err = scan(&v, &Selection::all(), &ScanOptions::default()).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "corrupt version: {}: time_series_index.parquet row 20 (rec-b/II chunk 7): path \"time_series/shard-00001.parquet\" is not listed in manifest.json",
            dir.display()
        )
    );
}

#[test]
fn an_object_store_scan_and_export_equal_the_local_ones() {
    let v = Version::open(golden()).unwrap();
    let local = batches(&v, &Selection::all(), &options(2, 2));
    // memory://: the version's files put into an in-memory store
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for e in walkdir::WalkDir::new(golden()).into_iter().map(|e| e.unwrap()).filter(|e| e.file_type().is_file()) {
        let rel = e.path().strip_prefix(golden()).unwrap().to_str().unwrap().to_string();
        let key = object_store::path::Path::from(format!("root/g/1/{rel}"));
        let bytes = std::fs::read(e.path()).unwrap();
        rt.block_on(object_store::ObjectStoreExt::put(&store, &key, bytes.into())).unwrap();
    }
    let loc = Location::from_object_store(store, "memory://scan", "root").unwrap().join("g/1");
    let remote = Version::open_at(loc).unwrap();
    assert_eq!(batches(&remote, &Selection::all(), &options(2, 2)), local);
    assert_eq!(
        batches(&remote, &Selection::all().channels(["II"]), &options(1, 1)),
        batches(&v, &Selection::all().channels(["II"]), &options(1, 1))
    );
    // file:// through the CLI: byte-identical files
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("local.arrow"), tmp.path().join("url.arrow"));
    let url = format!("file://{}", golden().display());
    assert_eq!(cli(&["export", golden().to_str().unwrap(), "--out", a.to_str().unwrap()]).0, 0);
    let (code, _, stderr) = cli(&["export", &url, "--out", b.to_str().unwrap()]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn a_series_whose_chunks_disagree_on_their_channel_is_refused_not_cut_short() {
    use arrow_array::{Array, ArrayRef, StringArray};
    let (_tmp, dir) = golden_copy();
    // relabel rec-a/I's chunk 1 as channel II: a channel filter must not take chunk 0 alone
    let path = dir.join("time_series_index.parquet");
    let file = std::fs::File::open(&path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let batch = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    let schema = batch.schema();
    let column = |name: &str| schema.index_of(name).unwrap();
    let as_utf8 = |i: usize| {
        let a = arrow_cast::cast(batch.column(i), &arrow_schema::DataType::Utf8).unwrap();
        a.as_any().downcast_ref::<StringArray>().unwrap().clone()
    };
    let (ids, channels) = (as_utf8(column("time_series_id")), as_utf8(column("channel")));
    let chunks = batch.column(column("chunk_idx")).as_any().downcast_ref::<arrow_array::Int32Array>().unwrap().clone();
    let row = (0..batch.num_rows()).find(|&r| ids.value(r) == "rec-a/I" && chunks.value(r) == 1).unwrap();
    let relabelled: StringArray =
        (0..channels.len()).map(|r| Some(if r == row { "II" } else { channels.value(r) })).collect();
    let relabelled: ArrayRef = arrow_cast::cast(&relabelled, batch.column(column("channel")).data_type()).unwrap();
    let mut columns = batch.columns().to_vec();
    columns[column("channel")] = relabelled;
    let crafted = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
    w.write(&crafted).unwrap();
    w.close().unwrap();
    // resealed: a read holds a table to its manifest entry before decoding it
    common::reseal(&dir, "time_series_index.parquet");
    let v = Version::open(&dir).unwrap();
    for selection in [Selection::all(), Selection::all().channels(["I"]), Selection::all().channels(["II"])] {
        let err = scan(&v, &selection, &ScanOptions::default()).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "corrupt version: {}: row {row}: rec-a/I chunk 1 disagrees with its chunk 0's metadata",
                dir.join("time_series_index.parquet").display()
            )
        );
    }
}

#[test]
fn loaders_of_a_version_as_dataset_answer_in_any_order() {
    // in index order they share one scan; skipped, repeated-order or reversed
    // requests fall back to reading alone: every answer equals read_series
    let v = Arc::new(Version::open(golden()).unwrap());
    let ids: Vec<String> = v.series().unwrap().into_iter().map(|m| m.time_series_id).collect();
    assert_eq!(ids.len(), 5);
    let orders: [Vec<usize>; 3] = [vec![0, 1, 2, 3, 4], vec![1, 3, 4], vec![4, 2, 0, 3, 1]];
    for order in orders {
        let mut d = v.to_dataset("g", "2").unwrap();
        for i in order {
            let values = d.take_loader(&ids[i]).unwrap()().unwrap();
            assert_eq!(values, v.read_series(&ids[i]).unwrap(), "series {}", ids[i]);
        }
    }
}

#[test]
fn an_edit_reads_only_what_it_keeps_and_a_bad_page_fails_only_its_own_series() {
    let (_tmp, dir, _) = golden_with_shard_1_cut_short();
    let good = Version::open(golden()).unwrap();
    let v = Arc::new(Version::open(&dir).unwrap());
    let on_shard_1: std::collections::BTreeSet<String> = v
        .index()
        .unwrap()
        .iter()
        .filter(|e| e.shard_path == "time_series/shard-00001.parquet")
        .map(|e| e.meta.time_series_id.clone())
        .collect();
    let ids: Vec<String> = v.series().unwrap().into_iter().map(|m| m.time_series_id).collect();
    let (bad, kept): (Vec<&String>, Vec<&String>) = ids.iter().partition(|id| on_shard_1.contains(*id));
    assert!(!bad.is_empty() && !kept.is_empty(), "{bad:?} {kept:?}");
    // the series on the cut shard removed (their loaders dropped): the others load
    let mut d = v.to_dataset("g", "2").unwrap();
    for id in &bad {
        drop(d.take_loader(id).unwrap());
    }
    for id in &kept {
        assert_eq!(d.take_loader(id).unwrap()().unwrap(), good.read_series(id).unwrap(), "series {id}");
    }
    // everything kept: a series on the cut shard fails naming that shard, the others still load
    let mut d = v.to_dataset("g", "3").unwrap();
    for id in &ids {
        let got = d.take_loader(id).unwrap()();
        if on_shard_1.contains(id) {
            let err = got.unwrap_err().to_string();
            assert!(err.contains("shard-00001.parquet"), "{id}: {err}");
        } else {
            assert_eq!(got.unwrap(), good.read_series(id).unwrap(), "series {id}");
        }
    }
}
