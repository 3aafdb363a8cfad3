//! Inputs as users bring them: every column typing of GluonTS-style Arrow/Parquet
//! files, exact timestamps, placed refusals, the shared missing-value policy, and
//! text encodings (`docs/format.md`, "Connector inputs").

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, ListBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use common::cli;
use timef::connectors::arrow::{read_arrow, ArrowOptions};
use timef::reader::Version;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/inputs").join(name)
}

fn ingest(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["ingest"];
    all.extend_from_slice(args);
    all.push("--quiet");
    cli(&all)
}

/// (series id, t_start_s, rate, values) of every series of a version.
fn series_of(dir: &Path) -> Vec<(String, f64, f64, Vec<f32>)> {
    let v = Version::open(dir).unwrap();
    v.series()
        .unwrap()
        .into_iter()
        .map(|m| {
            let values = v.read_series(&m.time_series_id).unwrap().to_vec();
            (m.time_series_id, m.t_start_s, m.sampling_rate_hz, values)
        })
        .collect()
}

#[test]
fn dictionary_item_ids_are_strings() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let file = data("dictionary_item_id.parquet");
    let (code, out, err) = ingest(&["arrow", "--root", r, "--name", "d", "--version", "1", file.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    let dir = PathBuf::from(out.trim());
    let got = series_of(&dir);
    let want = [("east", vec![4.5, 5.5, 6.5]), ("north", vec![1.5, 2.5]), ("south", vec![3.5])];
    assert_eq!(got.len(), 3);
    for ((id, t, hz, values), (want_id, want_values)) in got.iter().zip(want) {
        assert_eq!((id.as_str(), *t, *hz, values), (want_id, 1_577_836_800.0, 1.0, &want_values));
    }
    common::assert_conforming(&dir);
}

#[test]
fn int96_starts_are_exact() {
    let root = tempfile::tempdir().unwrap();
    let d = read_arrow(data("int96_start.parquet"), &ArrowOptions::new("i", "1")).unwrap();
    let dir = common::commit(root.path(), d, timef::WriterOptions::default());
    let starts: Vec<(String, f64)> = series_of(&dir).into_iter().map(|(id, t, _, _)| (id, t)).collect();
    assert_eq!(
        starts,
        vec![
            ("cet_1659".to_string(), -9_814_176_000.0),
            ("modern".to_string(), 1_577_836_800.0),
            ("open_end".to_string(), 253_402_214_400.0)
        ]
    );
    let (code, _, err) = cli(&["verify", dir.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
}

/// Review 101: a Parquet `start` of INT96 is decoded apart from the other
/// columns, so a second `start` (text, or INT96 too) was dropped unseen and
/// the INT96 one taken. Two `start`s are refused in either order.
#[test]
fn a_second_start_beside_an_int96_start_is_refused() {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int96, Int96Type};
    let tmp = tempfile::tempdir().unwrap();
    // 2020-01-01T00:00:00 as INT96: nanoseconds of the day, then the Julian day
    let mut day = Int96::new();
    day.set_data(0, 0, 2_458_850);
    for (name, text_first) in [("text_first.parquet", true), ("int96_first.parquet", false), ("both.parquet", false)] {
        let second = if name == "both.parquet" { "required int96 start;" } else { "required binary start (STRING);" };
        let (first, second) =
            if text_first { (second, "required int96 start;") } else { ("required int96 start;", second) };
        let schema = format!(
            "message m {{ required binary item_id (STRING); {first} {second} required group target (LIST) \
             {{ repeated group list {{ required double element; }} }} }}"
        );
        let schema = Arc::new(parquet::schema::parser::parse_message_type(&schema).unwrap());
        let path = tmp.path().join(name);
        let mut w = parquet::file::writer::SerializedFileWriter::new(
            std::fs::File::create(&path).unwrap(),
            schema.clone(),
            Default::default(),
        )
        .unwrap();
        let mut rg = w.next_row_group().unwrap();
        let int96 = [first.contains("int96"), second.contains("int96")];
        let mut leaf = 0;
        while let Some(mut c) = rg.next_column().unwrap() {
            match leaf {
                0 => c.typed::<ByteArrayType>().write_batch(&[ByteArray::from("a")], None, None),
                3 => c.typed::<DoubleType>().write_batch(&[1.0, 2.0], Some(&[1, 1]), Some(&[0, 1])),
                l if int96[l - 1] => c.typed::<Int96Type>().write_batch(&[day.clone()], None, None),
                _ => c.typed::<ByteArrayType>().write_batch(&[ByteArray::from("1999-01-01")], None, None),
            }
            .unwrap();
            c.close().unwrap();
            leaf += 1;
        }
        rg.close().unwrap();
        w.close().unwrap();
        let err = read_arrow(&path, &ArrowOptions::new("i", "1")).unwrap_err().to_string();
        assert_eq!(err, format!("{}: 2 columns are named start: keep one", path.display()), "{name}");
    }
}

#[test]
fn nan_in_target_names_file_row_item_channel() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let file = data("nan_in_target.parquet");
    let f = file.to_str().unwrap();
    let (code, out, err) = ingest(&["arrow", "--root", r, "--name", "n", "--version", "1", f]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "timef: error: {f}: row 1: item gap: channel 0: value 1 is NaN (missing); TimeF stores only finite \
             values (--on-missing drop-case leaves such rows out)\n"
        )
    );
    assert!(!root.path().join("n").exists(), "nothing may be left");
    // the same file under drop-case: one case dropped, counted on stderr
    let (code, out, err) =
        ingest(&["arrow", "--root", r, "--name", "n", "--version", "1", "--on-missing", "drop-case", f]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "timef: dropped 1 case with missing values (--on-missing drop-case): gap\n");
    let got = series_of(Path::new(out.trim()));
    assert_eq!(got, vec![("ok".to_string(), 0.0, 1.0, vec![1.0, 2.0, 3.0])]);
}

/// Every typing of `tests/py/write_typings.py` ingests to the same bytes as the
/// plain one (string ids, millisecond timestamps, list<float32>, string freq).
#[test]
fn every_typing_gives_a_byte_identical_version() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tmp.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    let Some(listing) = common::py_script("write_typings.py", &[inputs.to_str().unwrap()]) else { return };
    let names: Vec<&str> = listing.lines().collect();
    assert!(names.len() >= 190, "{} files", names.len());
    let mut reference: [Option<PathBuf>; 2] = [None, None];
    for name in &names {
        let multi = name.starts_with("multi-");
        let mut opts = ArrowOptions::new("typed", "1");
        if name.starts_with("uni-freq-none") {
            opts.sampling_rate_hz = Some(1.0 / 3600.0);
        }
        let d = read_arrow(inputs.join(name), &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let root = tmp.path().join("out").join(name);
        let dir = common::commit(&root, d, timef::WriterOptions::default());
        match &reference[usize::from(multi)] {
            None => {
                // the first of each kind fixes the expected content
                let got = series_of(&dir);
                let want_ids: Vec<&str> =
                    if multi { vec!["100/0", "12/0", "7/0", "100/1", "12/1", "7/1"] } else { vec!["100", "12", "7"] };
                assert_eq!(got.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(), want_ids, "{name}");
                assert_eq!(got[0].1, -2_203_891_200.0, "{name}: 1900-03-01");
                assert_eq!(got[0].2, 1.0 / 3600.0, "{name}: freq H");
                let last = if multi { vec![4.0, 5.0, 6.0] } else { vec![1.0, 2.0, 3.0] };
                assert_eq!(got.last().unwrap().3, last, "{name}");
                common::assert_conforming(&dir);
                reference[usize::from(multi)] = Some(dir);
            }
            Some(want) => common::assert_same_files(want, &dir),
        }
    }
    assert!(reference.iter().all(Option::is_some));
}

fn ipc(path: &Path, batch: &RecordBatch) {
    let mut w = arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(path).unwrap(), &batch.schema()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

fn f64_targets(rows: &[&[f64]]) -> ArrayRef {
    let mut target = ListBuilder::new(Float64Builder::new());
    for r in rows {
        target.values().append_slice(r);
        target.append(true);
    }
    Arc::new(target.finish())
}

/// Each refused value is named by file, row, item and channel, numbers shortest.
#[test]
fn refusals_name_file_row_item_channel() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.arrow");
    let p = path.display().to_string();
    let ids = || Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef;
    let cases: Vec<(RecordBatch, String)> = vec![
        (
            RecordBatch::try_from_iter([("item_id", ids()), ("target", f64_targets(&[&[1.0], &[2.0, 1e300]]))])
                .unwrap(),
            format!("{p}: row 1: item b: channel 0: value 1 = 1e300 is outside the float32 range"),
        ),
        (
            RecordBatch::try_from_iter([("item_id", ids()), ("target", f64_targets(&[&[f64::INFINITY], &[2.0]]))])
                .unwrap(),
            format!("{p}: row 0: item a: channel 0: value 0 is inf, not finite"),
        ),
        (
            RecordBatch::try_from_iter([("item_id", ids()), ("target", f64_targets(&[&[1.0], &[]]))]).unwrap(),
            format!("{p}: row 1: item b: channel 0: has no values"),
        ),
        (
            RecordBatch::try_from_iter([
                ("item_id", ids()),
                (
                    "target",
                    Arc::new(arrow_array::ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>([
                        Some(vec![Some(1)]),
                        Some(vec![Some(16_777_217)]),
                    ])) as ArrayRef,
                ),
            ])
            .unwrap(),
            format!("{p}: row 1: item b: channel 0: value 0 = 16777217 is not exactly representable as float32"),
        ),
        (
            RecordBatch::try_from_iter([("item_id", ids()), ("target", f64_targets(&[&[1.0], &[2.0]]))])
                .unwrap()
                .slice(0, 0),
            format!("{p}: the table has no rows"),
        ),
        (
            RecordBatch::try_from_iter([
                ("item_id", ids()),
                ("target", f64_targets(&[&[1.0], &[2.0]])),
                ("freq", Arc::new(StringArray::from(vec!["H", "B"])) as ArrayRef),
            ])
            .unwrap(),
            format!(
                "{p}: row 1: item b: freq \"B\" is a business-calendar frequency with no fixed sampling rate; give \
                 --sampling-rate-hz"
            ),
        ),
    ];
    for (batch, want) in cases {
        ipc(&path, &batch);
        let err = read_arrow(&path, &ArrowOptions::new("t", "1")).unwrap_err().to_string();
        assert_eq!(err, want);
    }
    // a null inner list of a multivariate target is missing: refused, or its row dropped
    let mut target = ListBuilder::new(ListBuilder::new(Float64Builder::new()));
    target.values().values().append_slice(&[1.0, 2.0]);
    target.values().append(true);
    target.append(true);
    target.values().values().append_slice(&[3.0]);
    target.values().append(true);
    target.values().append(false);
    target.append(true);
    let batch =
        RecordBatch::try_from_iter([("item_id", ids()), ("target", Arc::new(target.finish()) as ArrayRef)]).unwrap();
    ipc(&path, &batch);
    let err = read_arrow(&path, &ArrowOptions::new("t", "1")).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{p}: row 1: item b: channel 1: is null (missing); TimeF stores only finite values (--on-missing \
             drop-case leaves such rows out)"
        )
    );
    let mut opts = ArrowOptions::new("t", "1");
    opts.on_missing = timef::connectors::OnMissing::DropCase;
    let (d, dropped) = timef::connectors::arrow::read_arrow_with_report(&path, &opts).unwrap();
    assert_eq!(dropped.cases, vec!["b".to_string()]);
    assert_eq!(d.series().map(|m| m.time_series_id).collect::<Vec<_>>(), vec!["a/0"]);
    // a freq and an option that disagree are both named
    let batch = RecordBatch::try_from_iter([
        ("item_id", ids()),
        ("target", f64_targets(&[&[1.0], &[2.0]])),
        ("freq", Arc::new(StringArray::from(vec!["15min", "15min"])) as ArrayRef),
    ])
    .unwrap();
    ipc(&path, &batch);
    let mut opts = ArrowOptions::new("t", "1");
    opts.sampling_rate_hz = Some(1.0);
    let err = read_arrow(&path, &opts).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("{p}: row 0: item a: freq \"15min\" is 0.0011111111111111111 Hz but --sampling-rate-hz is 1.0 Hz")
    );
    opts.sampling_rate_hz = Some(1.0 / 900.0);
    let d = read_arrow(&path, &opts).unwrap();
    assert!(d.series().all(|m| m.sampling_rate_hz == 1.0 / 900.0));
}

/// `--on-missing` works the same in the three connectors: error by default
/// (exit 2, nothing written), drop-case counts on stderr and writes the rest.
#[test]
fn missing_value_policy_in_every_connector() {
    let tmp = tempfile::tempdir().unwrap();
    let tsf = tmp.path().join("m.tsf");
    std::fs::write(
        &tsf,
        "@relation m\n@attribute series_name string\n@frequency daily\n@missing true\n@data\nA:1,2,3\nB:4,?,6\nC:NaN,8\nD:9\n",
    )
    .unwrap();
    let ts = tmp.path().join("M_TRAIN.ts");
    std::fs::write(&ts, "@problemName M\n@univariate true\n@classLabel false\n@data\n1,2,3\n4,?,6\n7,8\n").unwrap();
    let arrow = data("nan_in_target.parquet");
    let r = tmp.path().join("out");
    let r = r.to_str().unwrap();
    for (kind, file, error, dropped, kept) in [
        (
            "tsf",
            tsf.to_str().unwrap(),
            format!("{}:7: series B: value 1 (0-based) is missing (\"?\")", tsf.display()),
            "dropped 2 cases with missing values (--on-missing drop-case): B, C",
            vec!["m-A", "m-D"],
        ),
        (
            "ucr",
            ts.to_str().unwrap(),
            format!("{}:6: case 1, dimension 0", ts.display()),
            &*format!("dropped 1 case with missing values (--on-missing drop-case): {}: case 1", ts.display()),
            vec!["m-train-0/0", "m-train-2/0"],
        ),
        (
            "arrow",
            arrow.to_str().unwrap(),
            format!("{}: row 1: item gap: channel 0: value 1 is NaN (missing)", arrow.display()),
            "dropped 1 case with missing values (--on-missing drop-case): gap",
            vec!["ok"],
        ),
    ] {
        let (code, out, err) = ingest(&[kind, "--root", r, "--name", "m", "--version", kind, file]);
        assert_eq!((code, out.as_str()), (2, ""), "{kind}: {err}");
        assert!(err.starts_with(&format!("timef: error: {error}")), "{kind}: {err}");
        assert!(!Path::new(r).join("m").join(kind).exists(), "{kind}: nothing may be left");
        let (code, out, err) =
            ingest(&[kind, "--root", r, "--name", "m", "--version", kind, "--on-missing", "drop-case", file]);
        assert_eq!(code, 0, "{kind}: {err}");
        assert_eq!(err, format!("timef: {dropped}\n"), "{kind}");
        let ids: Vec<String> = series_of(Path::new(out.trim())).into_iter().map(|s| s.0).collect();
        assert_eq!(ids, kept, "{kind}");
    }
}

#[test]
fn cp1252_ts_ingests_with_its_encoding() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().to_str().unwrap();
    let file = data("UnitTest_cp1252_TRAIN.ts");
    let f = file.to_str().unwrap();
    let (code, _, err) = ingest(&["ucr", "--root", r, "--name", "u", "--version", "1", f]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "timef: error: {f}:1: line is not valid UTF-8 (byte 56 of the line is invalid); the file must be UTF-8, \
             or name its encoding with --encoding latin-1 or --encoding cp1252\n"
        )
    );
    let (code, out, err) = ingest(&["ucr", "--root", r, "--name", "u", "--version", "1", "--encoding", "cp1252", f]);
    assert_eq!(code, 0, "{err}");
    let v = Version::open(out.trim()).unwrap();
    let (_, _, err) = cli(&["info", "--json", out.trim()]);
    assert_eq!(err, "");
    let (_, json, _) = cli(&["info", "--json", out.trim()]);
    assert!(json.contains("ChinaTown \u{2013} it\u{2019}s caf\u{e9}-sized"), "{json}");
    let first = v.read_series("u-train-0/0").unwrap();
    assert_eq!(&first[..3], &[573.0, 375.0, 301.0]);
    // latin-1 is ISO-8859-1: 0x92 is the C1 control U+0092, not a quote
    let text = timef::connectors::TextEncoding::Latin1.decode(b"it\x92s caf\xe9").unwrap();
    assert_eq!(text, "it\u{92}s caf\u{e9}");
    let text = timef::connectors::TextEncoding::Cp1252.decode(b"it\x92s caf\xe9").unwrap();
    assert_eq!(text, "it\u{2019}s caf\u{e9}");
}

#[test]
fn cp1252_tsf_ingests_with_its_encoding() {
    let tmp = tempfile::tempdir().unwrap();
    let tsf = tmp.path().join("e.tsf");
    std::fs::write(
        &tsf,
        b"# caf\xe9 sales\n@relation e\n@attribute series_name string\n@frequency daily\n@data\nA:1,2\n",
    )
    .unwrap();
    let r = tmp.path().join("out");
    let (r, f) = (r.to_str().unwrap(), tsf.to_str().unwrap());
    let (code, _, err) = ingest(&["tsf", "--root", r, "--name", "e", "--version", "1", f]);
    assert_eq!(code, 2);
    assert!(err.ends_with("--encoding latin-1 or --encoding cp1252)\n"), "{err}");
    let (code, out, err) = ingest(&["tsf", "--root", r, "--name", "e", "--version", "1", "--encoding", "latin-1", f]);
    assert_eq!(code, 0, "{err}");
    let (_, json, _) = cli(&["info", "--json", out.trim()]);
    assert!(json.contains("caf\u{e9} sales"), "{json}");
}

mod typings_property {
    use super::*;
    use arrow_schema::{DataType, Field, TimeUnit};
    use proptest::prelude::*;

    fn list_of(kind: u8, leaf: DataType, len: i32) -> DataType {
        let field = Arc::new(Field::new("item", leaf, true));
        match kind {
            0 => DataType::List(field),
            1 => DataType::LargeList(field),
            _ => DataType::FixedSizeList(field, len),
        }
    }

    /// (item_id, start, target) columns of the plain typing for rows of `len` values.
    fn plain(ids: &[u16], days: &[i16], values: &[Vec<u8>]) -> [ArrayRef; 3] {
        let id: ArrayRef = Arc::new(StringArray::from(ids.iter().map(|i| i.to_string()).collect::<Vec<_>>()));
        let ms: Vec<i64> = days.iter().map(|&d| i64::from(d) * 86_400_000).collect();
        let start: ArrayRef = Arc::new(arrow_array::TimestampMillisecondArray::from(ms));
        let mut t = ListBuilder::new(arrow_array::builder::Float32Builder::new());
        for v in values {
            t.values().append_slice(&v.iter().map(|&x| f32::from(x)).collect::<Vec<_>>());
            t.append(true);
        }
        [id, start, Arc::new(t.finish())]
    }

    fn commit_bytes(dir: &Path, name: &str, cols: [ArrayRef; 3]) -> std::collections::BTreeMap<String, Vec<u8>> {
        let batch = RecordBatch::try_from_iter([
            ("item_id", cols[0].clone()),
            ("start", cols[1].clone()),
            ("target", cols[2].clone()),
        ])
        .unwrap();
        let path = dir.join(format!("{name}.arrow"));
        ipc(&path, &batch);
        let d = read_arrow(&path, &ArrowOptions::new("p", "1")).unwrap();
        let out = common::commit(&dir.join(name), d, timef::WriterOptions::default());
        common::file_bytes(&out)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// Any typing of the same logical data (built with arrow's cast kernels)
        /// writes the same bytes as the plain typing.
        #[test]
        fn any_typing_writes_the_same_bytes(
            ids in proptest::collection::btree_set(0u16..1000, 1..6),
            len in 1i32..5,
            id_kind in 0usize..7,
            start_kind in 0usize..8,
            leaf_kind in 0usize..11,
            list_kind in 0u8..3,
            seed in any::<u64>(),
        ) {
            let ids: Vec<u16> = ids.into_iter().collect();
            let days: Vec<i16> = ids.iter().enumerate().map(|(k, _)| ((seed >> (k * 4)) as i16 % 2000) - 1000).collect();
            let values: Vec<Vec<u8>> = (0..ids.len())
                .map(|r| (0..len).map(|k| ((seed >> ((r + k as usize) % 56)) as u8) % 100).collect())
                .collect();
            let base = plain(&ids, &days, &values);
            let id_type = [
                DataType::Utf8,
                DataType::LargeUtf8,
                DataType::Utf8View,
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::LargeUtf8)),
                DataType::UInt16,
                DataType::Int64,
            ][id_kind].clone();
            let start_type = [
                DataType::Timestamp(TimeUnit::Millisecond, None),
                DataType::Timestamp(TimeUnit::Second, None),
                DataType::Timestamp(TimeUnit::Microsecond, Some("+01:00".into())),
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                DataType::Date32,
                DataType::Date64,
                DataType::Timestamp(TimeUnit::Second, Some("America/New_York".into())),
                DataType::Timestamp(TimeUnit::Nanosecond, None),
            ][start_kind].clone();
            let leaf = [
                DataType::Float32, DataType::Float64, DataType::Float16, DataType::Int8, DataType::Int16,
                DataType::Int32, DataType::Int64, DataType::UInt8, DataType::UInt16, DataType::UInt32, DataType::UInt64,
            ][leaf_kind].clone();
            let cast = |a: &ArrayRef, t: &DataType| arrow_cast::cast(a, t).unwrap();
            // a zone only labels the instant: cast the unit, then set the zone
            // (arrow's cast from a naive timestamp to a zone reads it as local time)
            let start = match &start_type {
                DataType::Timestamp(unit, Some(tz)) => {
                    let naive = cast(&base[1], &DataType::Timestamp(*unit, None));
                    let data = naive.to_data().into_builder().data_type(DataType::Timestamp(*unit, Some(tz.clone())));
                    arrow_array::make_array(data.build().unwrap())
                }
                t => cast(&base[1], t),
            };
            let typed = [cast(&base[0], &id_type), start, cast(&base[2], &list_of(list_kind, leaf, len))];
            let tmp = tempfile::tempdir().unwrap();
            let want = commit_bytes(tmp.path(), "plain", base);
            let got = commit_bytes(tmp.path(), "typed", typed);
            prop_assert!(want == got, "typing ({id_kind}, {start_kind}, {leaf_kind}, {list_kind}) wrote other bytes");
        }
    }
}
