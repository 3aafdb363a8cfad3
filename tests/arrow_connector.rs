//! The GluonTS-style Arrow connector: equal logical content to the pyarrow
//! reference writer (`ref_writer.py`) on `gen_bench.py` inputs, and the other
//! input shapes (IPC stream, Parquet, multivariate, float64, no item_id/start).

mod common;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, ListBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray, TimestampSecondArray};
use common::{assert_conforming, cli, py_script, py_tool};
use timef::connectors::arrow::{read_arrow, ArrowOptions};
use timef::reader::Version;

fn equal_to_reference(shape: &str, mib: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    let input = input.to_str().unwrap();
    if py_tool("gen_bench.py", &[input, "--total-mib", mib, "--shape", shape, "--seed", "3"]).is_none() {
        return;
    }
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("ref"));
    py_tool("ref_writer.py", &[input, "--root", theirs.to_str().unwrap(), "--name", "bench", "--version", "v1"])
        .unwrap();
    let (code, _, err) =
        cli(&["ingest", "arrow", "--root", ours.to_str().unwrap(), "--name", "bench", "--version", "v1", input]);
    assert_eq!(code, 0, "{err}");
    let ours = ours.join("bench/v1");
    assert_conforming(&ours);
    let out =
        py_script("compare_logical.py", &[theirs.join("bench/v1").to_str().unwrap(), ours.to_str().unwrap()]).unwrap();
    assert!(out.starts_with("equal: "), "{out}");
}

#[test]
fn equals_reference_writer_mixed() {
    equal_to_reference("mixed", "6");
}

#[test]
fn equals_reference_writer_many_small_series() {
    equal_to_reference("small", "1");
}

/// Writes `batch` as an Arrow IPC file at `path`.
fn write_ipc_file(path: &Path, batch: &RecordBatch) {
    let mut w = arrow_ipc::writer::FileWriter::try_new(File::create(path).unwrap(), &batch.schema()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

/// A two-row multivariate batch: float64 values, timestamps in seconds.
fn multivariate_batch() -> RecordBatch {
    let mut target = ListBuilder::new(ListBuilder::new(Float64Builder::new()));
    for dims in [vec![vec![1.5, 2.5, 3.5], vec![-1.0]], vec![vec![0.25], vec![4.0, 5.0], vec![6.0]]] {
        for d in dims {
            target.values().values().append_slice(&d);
            target.values().append(true);
        }
        target.append(true);
    }
    RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
        ("start", Arc::new(TimestampSecondArray::from(vec![1_600_000_000, 1_600_003_600])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
    ])
    .unwrap()
}

fn check_multivariate(path: &Path) {
    let d = read_arrow(path, &ArrowOptions::new("mv", "v1")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = common::commit(root.path(), d, timef::WriterOptions::default());
    assert_conforming(&dir);
    let v = Version::open(&dir).unwrap();
    assert_eq!(&v.read_series("a/0").unwrap()[..], &[1.5, 2.5, 3.5]);
    assert_eq!(&v.read_series("a/1").unwrap()[..], &[-1.0]);
    assert_eq!(&v.read_series("b/1").unwrap()[..], &[4.0, 5.0]);
    let series = v.series().unwrap();
    let b2 = series.iter().find(|m| m.time_series_id == "b/2").unwrap();
    assert_eq!((b2.channel.as_str(), b2.t_start_s, b2.sampling_rate_hz), ("2", 1_600_003_600.0, 1.0));
    let samples = v.samples().unwrap();
    let ids: Vec<Vec<&str>> =
        samples.iter().map(|s| s.series.iter().map(|r| r.time_series_id.as_str()).collect()).collect();
    assert_eq!(ids, vec![vec!["a/0", "a/1"], vec!["b/0", "b/1", "b/2"]]);
}

#[test]
fn ipc_stream_multivariate_float64() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mv.arrows");
    let batch = multivariate_batch();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(File::create(&path).unwrap(), &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    check_multivariate(&path);
}

#[test]
fn parquet_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mv.parquet");
    let batch = multivariate_batch();
    let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    check_multivariate(&path);
}

#[test]
fn without_item_id_rows_are_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.arrow");
    let mut target = ListBuilder::new(Float64Builder::new());
    for v in [[1.0, 2.0], [3.0, 4.0]] {
        target.values().append_slice(&v);
        target.append(true);
    }
    let batch = RecordBatch::try_from_iter([("target", Arc::new(target.finish()) as ArrayRef)]).unwrap();
    write_ipc_file(&path, &batch);
    let d = read_arrow(&path, &ArrowOptions::new("n", "v1")).unwrap();
    let ids: Vec<String> = d.series().map(|m| m.time_series_id).collect();
    assert_eq!(ids, vec!["0", "1"]);
}

#[test]
fn bad_inputs_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.arrow");
    std::fs::write(&path, b"not arrow at all").unwrap();
    let err = read_arrow(&path, &ArrowOptions::new("n", "v1")).unwrap_err();
    assert!(matches!(&err, timef::Error::InvalidInput { path: p, .. } if p == &path), "{err}");
    // a target that is not a list
    let batch = RecordBatch::try_from_iter([("target", Arc::new(StringArray::from(vec!["x"])) as ArrayRef)]).unwrap();
    write_ipc_file(&path, &batch);
    let err = read_arrow(&path, &ArrowOptions::new("n", "v1")).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{}: target has type Utf8, want a list of numbers or a list of lists of numbers", path.display())
    );
}

/// pyarrow's defaults: snappy Parquet and lz4-compressed Feather (IPC file).
#[test]
fn reads_the_codecs_pyarrow_writes_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let (parquet_path, feather_path) = (dir.path().join("g.parquet"), dir.path().join("g.arrow"));
    let script = format!(
        "import pyarrow as pa, pyarrow.parquet as pq, pyarrow.feather as f\n\
         t = pa.table({{'item_id': ['a', 'b'], 'target': [[1.5, 2.5], [3.0]]}})\n\
         pq.write_table(t, {:?})\n\
         f.write_feather(t, {:?})\n",
        parquet_path.to_str().unwrap(),
        feather_path.to_str().unwrap()
    );
    let Some(py) = common::require_python("codec inputs") else { return };
    let out = std::process::Command::new(py).args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for path in [parquet_path, feather_path] {
        let d = read_arrow(&path, &ArrowOptions::new("g", "v1")).unwrap();
        let root = tempfile::tempdir().unwrap();
        let v = Version::open(common::commit(root.path(), d, timef::WriterOptions::default())).unwrap();
        assert_eq!(&v.read_series("a").unwrap()[..], &[1.5, 2.5], "{}", path.display());
        assert_eq!(&v.read_series("b").unwrap()[..], &[3.0], "{}", path.display());
    }
}

#[test]
fn duplicate_item_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.arrow");
    let mut target = ListBuilder::new(Float64Builder::new());
    for v in [[1.0, 2.0], [3.0, 4.0]] {
        target.values().append_slice(&v);
        target.append(true);
    }
    let batch = RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["a", "a"])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
    ])
    .unwrap();
    write_ipc_file(&path, &batch);
    let err = read_arrow(&path, &ArrowOptions::new("n", "v1")).unwrap_err().to_string();
    assert_eq!(err, format!("{}: row 1: duplicate item_id a", path.display()));
}

/// Review 100: two columns of one name (two `target`s, two `item_id`s)
/// were read as the first, the other's values dropped unseen. Each is
/// refused naming the column, in an IPC file, a Parquet file, and the
/// distributed write's routing, and nothing is written.
#[test]
fn two_columns_of_one_name_are_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let targets = || {
        let mut target = ListBuilder::new(Float64Builder::new());
        target.values().append_slice(&[1.0, 2.0]);
        target.append(true);
        Arc::new(target.finish()) as ArrayRef
    };
    let id = || Arc::new(StringArray::from(vec!["a"])) as ArrayRef;
    for (name, columns) in [
        ("target", vec![("item_id", id()), ("target", targets()), ("target", targets())]),
        ("item_id", vec![("item_id", id()), ("item_id", id()), ("target", targets())]),
    ] {
        let fields: Vec<arrow_schema::Field> =
            columns.iter().map(|(n, c)| arrow_schema::Field::new(*n, c.data_type().clone(), true)).collect();
        let batch = RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(fields)),
            columns.into_iter().map(|(_, c)| c).collect(),
        )
        .unwrap();
        let ipc = dir.path().join(format!("{name}.arrow"));
        write_ipc_file(&ipc, &batch);
        let parquet = dir.path().join(format!("{name}.parquet"));
        let mut w =
            parquet::arrow::ArrowWriter::try_new(File::create(&parquet).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        for path in [&ipc, &parquet] {
            let err = read_arrow(path, &ArrowOptions::new("n", "v1")).unwrap_err().to_string();
            assert_eq!(err, format!("{}: 2 columns are named {name}: keep one", path.display()));
            let root = dir.path().join("root");
            let (code, out, err) = cli(&[
                "ingest",
                "arrow",
                "--root",
                root.to_str().unwrap(),
                "--name",
                "n",
                "--version",
                "v1",
                path.to_str().unwrap(),
            ]);
            let want = format!("timef: error: {}: 2 columns are named {name}: keep one\n", path.display());
            assert_eq!((code, out.as_str(), err), (2, "", want));
            assert!(!root.exists(), "a refused ingest left {}", root.display());
        }
        let err = timef::connectors::arrow::arrow_series_ids(&batch, &ipc, &ArrowOptions::new("n", "v1"))
            .unwrap_err()
            .to_string();
        assert_eq!(err, format!("{}: 2 columns are named {name}: keep one", ipc.display()));
    }
}

/// Writes `batches` (one schema) as an Arrow IPC file at `path`.
fn write_ipc_batches(path: &Path, batches: &[RecordBatch]) {
    let mut w = arrow_ipc::writer::FileWriter::try_new(File::create(path).unwrap(), &batches[0].schema()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

/// A batch of `item_id`s with float64 targets (`None`: a NaN value, missing).
fn id_batch(rows: &[(&str, Option<f64>)]) -> RecordBatch {
    let mut target = ListBuilder::new(Float64Builder::new());
    for (_, v) in rows {
        target.values().append_slice(&[1.0, v.unwrap_or(f64::NAN)]);
        target.append(true);
    }
    ids_and_targets(rows.iter().map(|(id, _)| *id).collect(), Arc::new(target.finish()))
}

/// A batch of `item_id` and `target` columns.
fn ids_and_targets(ids: Vec<&str>, target: ArrayRef) -> RecordBatch {
    RecordBatch::try_from_iter([("item_id", Arc::new(StringArray::from(ids)) as ArrayRef), ("target", target)]).unwrap()
}

/// Rows are added to the dataset as they are checked: a second row with an
/// id seen before is refused whether the two rows are equal, in different
/// batches, or the first was left out under drop-case.
#[test]
fn an_item_id_seen_before_is_refused_in_any_batch_and_after_a_dropped_row() {
    use timef::connectors::OnMissing;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.arrow");
    let refused = |batches: &[RecordBatch], opts: &ArrowOptions| {
        write_ipc_batches(&path, batches);
        read_arrow(&path, opts).unwrap_err().to_string()
    };
    let opts = ArrowOptions::new("n", "v1");
    let p = path.display();
    assert_eq!(
        refused(&[id_batch(&[("a", Some(2.0)), ("a", Some(2.0))])], &opts),
        format!("{p}: row 1: duplicate item_id a")
    );
    assert_eq!(
        refused(
            &[id_batch(&[("a", Some(2.0)), ("b", Some(3.0))]), id_batch(&[("c", Some(1.0)), ("b", Some(3.0))])],
            &opts
        ),
        format!("{p}: row 3: duplicate item_id b")
    );
    let mut drop = ArrowOptions::new("n", "v1");
    drop.on_missing = OnMissing::DropCase;
    assert_eq!(
        refused(&[id_batch(&[("a", None), ("b", Some(1.0))]), id_batch(&[("a", Some(2.0))])], &drop),
        format!("{p}: row 2: duplicate item_id a")
    );
    // and a dropped row after a kept one with its id
    assert_eq!(
        refused(&[id_batch(&[("a", Some(2.0)), ("a", None)])], &drop),
        format!("{p}: row 1: duplicate item_id a")
    );
}

/// An IPC input of 80 MB, several times the 16 MiB the writer may map between
/// two releases of the whole mapping (`docs/format.md` §1 "Memory"): its
/// pages are released after the pass and again during the write, under
/// series in flight too, and every value still reads back exactly.
#[test]
fn values_of_an_input_past_the_release_sweep_read_back_exactly() {
    use arrow_array::builder::Float32Builder;
    use timef::scan::{scan, ScanOptions, Selection};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.arrow");
    let (rows, len) = (100_000usize, 200usize);
    let value = |i: usize, k: usize| ((i * len + k) % 1_000_003) as f32 + 0.25;
    let batches: Vec<RecordBatch> = (0..4)
        .map(|b| {
            let mut target = ListBuilder::new(Float32Builder::new());
            let ids: Vec<String> = (b * rows / 4..(b + 1) * rows / 4).map(|i| format!("s{i:06}")).collect();
            for i in b * rows / 4..(b + 1) * rows / 4 {
                target.values().append_slice(&(0..len).map(|k| value(i, k)).collect::<Vec<_>>());
                target.append(true);
            }
            RecordBatch::try_from_iter([
                ("item_id", Arc::new(StringArray::from(ids)) as ArrayRef),
                ("target", Arc::new(target.finish()) as ArrayRef),
            ])
            .unwrap()
        })
        .collect();
    write_ipc_batches(&path, &batches);
    assert!(std::fs::metadata(&path).unwrap().len() > 64 << 20);
    let d = read_arrow(&path, &ArrowOptions::new("big", "v1")).unwrap();
    assert_eq!((d.sample_count(), d.series_count()), (rows, rows));
    let root = tempfile::tempdir().unwrap();
    let v = Version::open(common::commit(root.path(), d, timef::WriterOptions::default())).unwrap();
    let opts = ScanOptions::builder().threads(2).try_build().unwrap();
    let mut seen = 0;
    for r in scan(&v, &Selection::all(), &opts).unwrap().series() {
        let (meta, values) = r.unwrap();
        let i: usize = meta.time_series_id[1..].parse().unwrap();
        assert_eq!(i, seen, "series in id order");
        assert!(values.iter().enumerate().all(|(k, x)| x.to_bits() == value(i, k).to_bits()), "series {i}");
        seen += 1;
    }
    assert_eq!(seen, rows);
}

/// A multivariate row with a missing value in any channel is refused naming
/// the channel, or under drop-case left out whole (none of its channels kept),
/// as a row with a null channel is.
#[test]
fn a_multivariate_row_missing_a_value_in_a_later_channel_is_left_out_whole() {
    use timef::connectors::arrow::read_arrow_with_report;
    use timef::connectors::OnMissing;
    let mut target = ListBuilder::new(ListBuilder::new(Float64Builder::new()));
    // a: NaN in channel 1; b: clean; c: channel 2 null
    for (dims, null) in [
        (vec![vec![1.0, 2.0], vec![3.0, f64::NAN]], None),
        (vec![vec![4.0], vec![5.0, 6.0]], None),
        (vec![vec![7.0], vec![8.0], vec![]], Some(2)),
    ] {
        for (d, v) in dims.iter().enumerate() {
            target.values().values().append_slice(v);
            target.values().append(null != Some(d));
        }
        target.append(true);
    }
    let batch = RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mv.arrow");
    write_ipc_file(&path, &batch);
    let err = read_arrow(&path, &ArrowOptions::new("mv", "v1")).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: row 0: item a: channel 1: value 1 is NaN (missing); TimeF stores only finite values \
             (--on-missing drop-case leaves such rows out)",
            path.display()
        )
    );
    let mut drop = ArrowOptions::new("mv", "v1");
    drop.on_missing = OnMissing::DropCase;
    let (d, dropped) = read_arrow_with_report(&path, &drop).unwrap();
    assert_eq!(dropped.cases, ["a", "c"]);
    assert_eq!(d.samples().map(|s| s.sample_id).collect::<Vec<_>>(), ["b"]);
    let series: Vec<String> = d.series().map(|m| m.time_series_id).collect();
    assert_eq!(series, ["b/0", "b/1"]);
}

/// A kept row with an empty `item_id` is refused at its row, before the rows
/// after it; under drop-case a dropped one is just left out.
#[test]
fn an_empty_item_id_is_refused_at_its_row() {
    use timef::connectors::OnMissing;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.arrow");
    write_ipc_batches(&path, &[id_batch(&[("a", Some(1.0)), ("", Some(2.0)), ("b", None)])]);
    let err = read_arrow(&path, &ArrowOptions::new("n", "v1")).unwrap_err().to_string();
    assert_eq!(err, format!("{}: row 1: item_id is empty", path.display()));
    write_ipc_batches(&path, &[id_batch(&[("a", Some(1.0)), ("", None)])]);
    let mut drop = ArrowOptions::new("n", "v1");
    drop.on_missing = OnMissing::DropCase;
    let d = read_arrow(&path, &drop).unwrap();
    assert_eq!(d.samples().map(|s| s.sample_id).collect::<Vec<_>>(), ["a"]);
}

/// The writer trusts the connector's check of a mapped input's values and
/// does not scan them again as they load; a value that turned non-finite in
/// the file after the check (the input rewritten in place during the write)
/// is still refused, when its row group is encoded, with the error the load
/// would have given, and nothing is left behind.
#[test]
fn a_mapped_value_that_turned_non_finite_after_the_check_is_refused() {
    use arrow_array::builder::Float32Builder;
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.arrow");
    const MARK: f32 = 12345.5;
    let mut target = ListBuilder::new(Float32Builder::new());
    for id in 0..3 {
        let mut v: Vec<f32> = (0..1000).map(|k| (id * 1000 + k) as f32 * 0.5).collect();
        if id == 1 {
            v[700] = MARK;
        }
        target.values().append_slice(&v);
        target.append(true);
    }
    let batch = RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
    ])
    .unwrap();
    write_ipc_file(&path, &batch);
    let d = read_arrow(&path, &ArrowOptions::new("t", "v1")).unwrap();
    // the checked value, rewritten in place as NaN (the mapping sees the file's pages)
    let bytes = std::fs::read(&path).unwrap();
    let at = bytes.windows(4).position(|w| w == MARK.to_le_bytes()).unwrap();
    assert_eq!(bytes.windows(4).filter(|w| *w == MARK.to_le_bytes()).count(), 1);
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start(at as u64)).unwrap();
    f.write_all(&f32::NAN.to_le_bytes()).unwrap();
    f.sync_all().unwrap();
    let root = tempfile::tempdir().unwrap();
    let e = timef::TimeFWriter::new(root.path(), timef::WriterOptions::default()).write(d).unwrap_err();
    match e {
        timef::Error::Validation { id, field, reason } => {
            assert_eq!((id.as_str(), field, reason.as_str()), ("b", "values", "value 700 is NaN, not finite"))
        }
        other => panic!("expected Error::Validation, got {other:?}"),
    }
    assert!(common::tree(root.path()).is_empty(), "nothing may remain: {:?}", common::tree(root.path()));
}

/// The values check runs a window of rows ahead of the pass, on the pool
/// (about 2^22 values a window: rows 0-20, 21-41, 42-49 here): over an input
/// of three windows the first refused row is the one named, whatever the
/// later windows hold, and under drop-case exactly the rows holding a NaN are
/// left out (rows on each side of a window's edge too) while the kept rows
/// beside them read back exactly.
#[test]
fn the_values_check_ahead_refuses_and_drops_in_row_order_across_windows() {
    use arrow_array::builder::Float32Builder;
    use timef::connectors::arrow::read_arrow_with_report;
    use timef::connectors::OnMissing;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.arrow");
    let (rows, len) = (50usize, 200_000usize);
    let value = |i: usize, k: usize| (i * len + k) as f32 * 0.25;
    // (row, value index, bad value)
    let input = |bad: &[(usize, usize, f32)]| {
        let mut target = ListBuilder::new(Float32Builder::new());
        for i in 0..rows {
            let mut v: Vec<f32> = (0..len).map(|k| value(i, k)).collect();
            for &(_, k, x) in bad.iter().filter(|b| b.0 == i) {
                v[k] = x;
            }
            target.values().append_slice(&v);
            target.append(true);
        }
        let ids: Vec<String> = (0..rows).map(|i| format!("r{i:02}")).collect();
        let batch = RecordBatch::try_from_iter([
            ("item_id", Arc::new(StringArray::from(ids)) as ArrayRef),
            ("target", Arc::new(target.finish()) as ArrayRef),
        ])
        .unwrap();
        write_ipc_file(&path, &batch);
    };
    let p = path.display();
    let opts = ArrowOptions::new("w", "v1");
    input(&[(23, 7, f32::NAN), (45, 0, f32::INFINITY)]);
    assert_eq!(
        read_arrow(&path, &opts).unwrap_err().to_string(),
        format!(
            "{p}: row 23: item r23: channel 0: value 7 is NaN (missing); TimeF stores only finite values (--on-missing \
             drop-case leaves such rows out)"
        )
    );
    let mut drop = ArrowOptions::new("w", "v1");
    drop.on_missing = OnMissing::DropCase;
    // an infinite value is refused under drop-case too, after the dropped rows before it
    assert_eq!(
        read_arrow(&path, &drop).unwrap_err().to_string(),
        format!("{p}: row 45: item r45: channel 0: value 0 is inf, not finite")
    );
    let nan_rows = [0, 20, 21, 41, 42, 49];
    input(&nan_rows.map(|i| (i, if i % 2 == 0 { 199_999 } else { 3 }, f32::NAN)));
    let (d, dropped) = read_arrow_with_report(&path, &drop).unwrap();
    assert_eq!(dropped.cases, ["r00", "r20", "r21", "r41", "r42", "r49"]);
    assert_eq!(d.series_count(), rows - nan_rows.len());
    let root = tempfile::tempdir().unwrap();
    let v = Version::open(common::commit(root.path(), d, timef::WriterOptions::default())).unwrap();
    for i in [1, 19, 22, 40, 43, 48] {
        let got = v.read_series(&format!("r{i:02}")).unwrap();
        assert!(got.iter().enumerate().all(|(k, x)| x.to_bits() == value(i, k).to_bits()), "row {i}");
        assert_eq!(got.len(), len);
    }
    for i in nan_rows {
        assert!(v.read_series(&format!("r{i:02}")).is_err(), "row {i}");
    }
}

/// The pass reads an IPC batch's rows while the pool checks the values of the
/// next batch's first rows, so it reads one batch behind the decoding (a
/// Parquet batch is read as soon as it is decoded). Over an IPC file and a
/// Parquet file of three batches (rows 0-1, 2-3, 4-5) whose third is corrupt,
/// a refused row of the second batch is still named before the corruption,
/// the corruption is named when every row before it passes, and rows whose
/// values were checked ahead (each IPC batch's first) are refused, dropped and
/// kept exactly as the rows after them.
#[test]
fn refusals_come_in_file_order_while_the_next_batch_is_checked_ahead() {
    use timef::connectors::arrow::read_arrow_with_report;
    use timef::connectors::OnMissing;
    let dir = tempfile::tempdir().unwrap();
    // Parquet batches hold about 2^20 values: rows of 2^19 make a batch of each row group
    let len = 1 << 19;
    let value = |row: usize, k: usize| (row * 8 + k % 8) as f32;
    // rows (id, index of a NaN value) in batches of two
    let batches = |rows: [(&str, Option<usize>); 6]| -> Vec<RecordBatch> {
        rows.chunks(2)
            .enumerate()
            .map(|(b, rows)| {
                let mut target = ListBuilder::new(arrow_array::builder::Float32Builder::new());
                for (i, (_, nan)) in rows.iter().enumerate() {
                    let mut v: Vec<f32> = (0..len).map(|k| value(b * 2 + i, k)).collect();
                    if let Some(k) = nan {
                        v[*k] = f32::NAN;
                    }
                    target.values().append_slice(&v);
                    target.append(true);
                }
                ids_and_targets(rows.iter().map(|(id, _)| *id).collect(), Arc::new(target.finish()))
            })
            .collect()
    };
    // the file's bytes and the byte range of its third batch's metadata or pages
    let ipc = |batches: &[RecordBatch]| -> (Vec<u8>, std::ops::Range<usize>) {
        let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &batches[0].schema()).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        let bytes = w.into_inner().unwrap();
        let trailer = bytes.len() - 10;
        let footer_len = i32::from_le_bytes(bytes[trailer..trailer + 4].try_into().unwrap()) as usize;
        let footer = arrow_ipc::root_as_footer(&bytes[trailer - footer_len..trailer]).unwrap();
        let third = footer.recordBatches().unwrap().get(2);
        let at = third.offset() as usize + 8; // after the continuation marker and length
        (bytes.clone(), at..third.offset() as usize + third.metaDataLength() as usize)
    };
    let parquet = |batches: &[RecordBatch]| -> (Vec<u8>, std::ops::Range<usize>) {
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), batches[0].schema(), Some(props)).unwrap();
        for b in batches {
            w.write(b).unwrap();
            w.flush().unwrap(); // one row group a batch
        }
        let bytes = w.into_inner().unwrap();
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
            .unwrap();
        let target = meta.row_group(2).column(1);
        let at = target.data_page_offset() as usize;
        (bytes, at..at + target.compressed_size() as usize)
    };
    let opts = ArrowOptions::new("n", "v1");
    let mut drop = ArrowOptions::new("n", "v1");
    drop.on_missing = OnMissing::DropCase;
    type Encode<'a> = &'a dyn Fn(&[RecordBatch]) -> (Vec<u8>, std::ops::Range<usize>);
    for (name, encode, unreadable) in [
        ("in.arrow", &ipc as Encode, "not a readable Arrow IPC file or stream: "),
        ("in.parquet", &parquet as Encode, "not a readable Parquet file: "),
    ] {
        let path = dir.path().join(name);
        let p = path.display();
        // writes `rows`, their third batch overwritten with 0xFF when `corrupt`
        let input = |rows, corrupt: bool| {
            let (mut bytes, third) = encode(&batches(rows));
            if corrupt {
                bytes[third].fill(0xFF);
            }
            std::fs::write(&path, bytes).unwrap();
        };
        let nan = |row: usize, item: &str, k: usize| {
            format!(
                "{p}: row {row}: item {item}: channel 0: value {k} is NaN (missing); TimeF stores only finite \
                 values (--on-missing drop-case leaves such rows out)"
            )
        };
        let clean = [("a", None), ("b", None), ("c", None), ("d", None), ("e", None), ("f", None)];
        // a row of the second batch, read after the third was decoded
        let mut rows = clean;
        rows[3].1 = Some(5);
        input(rows, true);
        assert_eq!(read_arrow(&path, &opts).unwrap_err().to_string(), nan(3, "d", 5), "{name}");
        // the second batch's first row, checked ahead
        let mut rows = clean;
        rows[2].1 = Some(len - 1);
        input(rows, true);
        assert_eq!(read_arrow(&path, &opts).unwrap_err().to_string(), nan(2, "c", len - 1), "{name}");
        // every row before the corruption passes: the corruption is named
        input(clean, true);
        let err = read_arrow(&path, &opts).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{p}: {unreadable}")), "{name}: {err}");
        // whole: the first rows of the second and third batches dropped, the rest kept
        let mut rows = clean;
        (rows[2].1, rows[4].1) = (Some(0), Some(len - 1));
        input(rows, false);
        assert_eq!(read_arrow(&path, &opts).unwrap_err().to_string(), nan(2, "c", 0), "{name}");
        let (d, dropped) = read_arrow_with_report(&path, &drop).unwrap();
        assert_eq!(dropped.cases, ["c", "e"], "{name}");
        let root = tempfile::tempdir().unwrap();
        let v = Version::open(common::commit(root.path(), d, timef::WriterOptions::default())).unwrap();
        let ids: Vec<String> = v.series().unwrap().into_iter().map(|m| m.time_series_id).collect();
        assert_eq!(ids, ["a", "b", "d", "f"], "{name}");
        for (row, id) in [(0, "a"), (1, "b"), (3, "d"), (5, "f")] {
            let got = v.read_series(id).unwrap();
            assert!(got.len() == len && got.iter().enumerate().all(|(k, x)| *x == value(row, k)), "{name} {id}");
        }
    }
}
