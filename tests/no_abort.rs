//! No input makes any verb abort or panic (exit 134 or 101): mutated Arrow IPC
//! and Parquet inputs, versions with mutated footers, column-chunk sizes and
//! index rows. Each is read (0), refused with one line (2), or, by `verify`,
//! reported (1); the library returns errors of the user-fixable kinds only
//! (`Error::is_user_error`: exit 2).

mod common;

use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float32Builder, ListBuilder};
use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, TimestampSecondArray};
use bytes::Bytes;
use common::{cli, commit, ecg_dataset, read_parquet, reseal, small_options};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter};
use timef::connectors::arrow::{read_arrow, ArrowOptions};
use timef::reader::Version;

/// A small valid GluonTS-style batch: two series of float32.
fn small_batch() -> RecordBatch {
    let mut target = ListBuilder::new(Float32Builder::new());
    for v in [vec![1.0, 2.0, 3.0], vec![4.5, -1.25]] {
        target.values().append_slice(&v);
        target.append(true);
    }
    RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
        ("start", Arc::new(TimestampSecondArray::from(vec![1_600_000_000, 1_600_003_600])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
    ])
    .unwrap()
}

fn ipc_bytes(stream: bool) -> Vec<u8> {
    let batch = small_batch();
    let mut out = Vec::new();
    if stream {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    } else {
        let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &batch.schema()).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    }
    out
}

fn parquet_bytes() -> Vec<u8> {
    let batch = small_batch();
    let mut out = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

/// Every single-byte mutation of `bytes` at each position: 0x00, 0xFF, and the
/// lowest and highest bit flipped (each only when it changes the byte).
fn mutations(bytes: &[u8]) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        let mut vs = vec![0x00, 0xFF, b ^ 0x01, b ^ 0x80];
        vs.sort_unstable();
        vs.dedup();
        out.extend(vs.into_iter().filter(|&v| v != b).map(|v| (i, v)));
    }
    out
}

/// Reads every mutation of `bytes` with the Arrow connector in process; returns
/// (read, refused). Fails on a panic or an error that is not the input's fault.
/// Refusals that are a contained panic of the arrow or parquet crates (only
/// their calls are contained) are listed on stderr, so they stay visible.
fn mutate_input(name: &str, bytes: &[u8]) -> (usize, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(name);
    let opts = ArrowOptions::new("m", "v1");
    let (mut read, mut refused) = (0, 0);
    let (mut wrong, mut contained) = (Vec::new(), Vec::new());
    for (i, v) in mutations(bytes) {
        let mut m = bytes.to_vec();
        m[i] = v;
        std::fs::write(&path, &m).unwrap();
        match catch_unwind(AssertUnwindSafe(|| read_arrow(&path, &opts).map(|_| ()))) {
            Ok(Ok(())) => read += 1,
            Ok(Err(e)) if e.is_user_error() => {
                refused += 1;
                if e.to_string().contains("the decoder panicked") {
                    contained.push(format!("byte {i} = {v:#04x}: {e}"));
                }
            }
            Ok(Err(e)) => wrong.push(format!("byte {i} = {v:#04x}: {e}")),
            Err(_) => wrong.push(format!("byte {i} = {v:#04x}: panicked")),
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
    eprintln!("{name}: {} refusals were a contained panic of a dependency:", contained.len());
    for c in &contained {
        eprintln!("  {c}");
    }
    (read, refused)
}

#[test]
fn every_single_byte_mutation_of_an_ipc_file_is_read_or_refused() {
    let bytes = ipc_bytes(false);
    let (read, refused) = mutate_input("in.arrow", &bytes);
    assert_eq!(read + refused, mutations(&bytes).len());
    assert!(refused > 0, "no mutation refused");
    eprintln!("IPC file: {} bytes, {read} mutations read, {refused} refused", bytes.len());
}

#[test]
fn every_single_byte_mutation_of_an_ipc_stream_is_read_or_refused() {
    let bytes = ipc_bytes(true);
    let (read, refused) = mutate_input("in.arrows", &bytes);
    assert_eq!(read + refused, mutations(&bytes).len());
    assert!(refused > 0, "no mutation refused");
    eprintln!("IPC stream: {} bytes, {read} mutations read, {refused} refused", bytes.len());
}

#[test]
fn every_single_byte_mutation_of_a_parquet_input_is_read_or_refused() {
    let bytes = parquet_bytes();
    let (read, refused) = mutate_input("in.parquet", &bytes);
    assert_eq!(read + refused, mutations(&bytes).len());
    assert!(refused > 0, "no mutation refused");
    eprintln!("Parquet input: {} bytes, {read} mutations read, {refused} refused", bytes.len());
}

/// The CLI on a sample of the IPC mutations: exit 0 or 2, one line on error.
#[test]
fn cli_ingest_of_mutated_ipc_exits_0_or_2_with_one_line() {
    let bytes = ipc_bytes(false);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("in.arrow");
    for (k, (i, v)) in mutations(&bytes).into_iter().enumerate().filter(|(k, _)| k % 23 == 0) {
        let mut m = bytes.clone();
        m[i] = v;
        std::fs::write(&path, &m).unwrap();
        let root = tmp.path().join(format!("r{k}"));
        let (code, _, err) = cli(&[
            "--quiet",
            "ingest",
            "arrow",
            "--root",
            root.to_str().unwrap(),
            "--name",
            "m",
            "--version",
            "v1",
            path.to_str().unwrap(),
        ]);
        assert!(code == 0 || (code == 2 && err.lines().count() == 1), "byte {i} = {v:#04x}: exit {code}: {err}");
    }
}

/// Every read a verb makes of a version, in process: the index, every
/// series, samples, annotations, tasks, and (when `heavy`) verify and dedup
/// against itself. Returns the first error; panics escape.
fn read_everything(dir: &Path, heavy: bool) -> timef::Result<()> {
    if heavy {
        timef::verify::verify(dir)?;
        timef::dedup::measure(dir, dir)?;
    }
    let v = Arc::new(Version::open(dir)?);
    for s in v.series()? {
        v.read_series(&s.time_series_id)?;
    }
    v.samples()?;
    v.annotations()?;
    for name in v.task_names() {
        v.tasks(&name)?;
    }
    Ok(())
}

/// The byte range of `bytes`' footer (the Thrift metadata, its length and `PAR1`).
fn footer_range(bytes: &[u8]) -> std::ops::Range<usize> {
    let n = bytes.len();
    let len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    n - 8 - len..n
}

#[test]
fn every_third_byte_of_every_footer_of_a_version_mutated_is_read_or_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = commit(tmp.path(), ecg_dataset("ecg", "1", 2), small_options());
    let files: Vec<String> = Version::open(&dir).unwrap().manifest().files.iter().map(|f| f.path.clone()).collect();
    let (mut read, mut refused, mut wrong) = (0, 0, Vec::new());
    for rel in &files {
        let path = dir.join(rel);
        let original = std::fs::read(&path).unwrap();
        // every third byte of the footer (each field is several bytes long)
        for (k, i) in footer_range(&original).step_by(3).enumerate() {
            let mut m = original.clone();
            m[i] ^= 0xFF;
            std::fs::write(&path, &m).unwrap();
            match catch_unwind(AssertUnwindSafe(|| read_everything(&dir, k % 16 == 0))) {
                Ok(Ok(())) => read += 1,
                Ok(Err(e)) if e.is_user_error() => refused += 1,
                Ok(Err(e)) => wrong.push(format!("{rel} byte {i}: {e}")),
                Err(_) => wrong.push(format!("{rel} byte {i}: panicked")),
            }
        }
        std::fs::write(&path, &original).unwrap();
    }
    assert_eq!(wrong, Vec::<String>::new());
    assert!(refused > 0);
    eprintln!("version footers: {read} mutations read, {refused} refused");
}

/// Rewrites the footer of the Parquet file at `path` through `edit`, keeping its pages.
fn rewrite_footer(path: &Path, edit: impl FnOnce(ParquetMetaData) -> ParquetMetaData) {
    let bytes = std::fs::read(path).unwrap();
    let meta = ParquetMetaDataReader::new().parse_and_finish(&Bytes::from(bytes.clone())).unwrap();
    let mut out = bytes[..footer_range(&bytes).start].to_vec();
    ParquetMetaDataWriter::new(&mut out, &edit(meta)).finish().unwrap();
    std::fs::write(path, out).unwrap();
}

/// `meta` with the first row group's first column chunk (or the row group) changed by `f`.
fn edit_first_chunk(
    meta: ParquetMetaData,
    f: impl FnOnce(
        parquet::file::metadata::ColumnChunkMetaDataBuilder,
    ) -> parquet::file::metadata::ColumnChunkMetaDataBuilder,
) -> ParquetMetaData {
    let mut b = meta.into_builder();
    let mut groups = b.take_row_groups();
    let mut g = groups.remove(0).into_builder();
    let mut columns = g.take_columns();
    columns[0] = f(columns[0].clone().into_builder()).build().unwrap();
    g = g.set_column_metadata(columns);
    groups.insert(0, g.build().unwrap());
    b.set_row_groups(groups).build()
}

fn edit_rows(meta: ParquetMetaData, rows: i64) -> ParquetMetaData {
    let mut b = meta.into_builder();
    let groups =
        b.take_row_groups().into_iter().map(|g| g.into_builder().set_num_rows(rows).build().unwrap()).collect();
    b.set_row_groups(groups).build()
}

/// Crafted footers: `cat`, `info --samples`, `edit` and `dedup` refuse them
/// with exit 2 and one line naming the file; `verify` reports them (exit 1).
#[test]
fn crafted_footer_sizes_exit_2_in_every_verb_and_1_in_verify() {
    type Edit = Box<dyn Fn(ParquetMetaData) -> ParquetMetaData>;
    let cases: Vec<(&str, &str, Edit, String)> = vec![
        (
            "index: negative column-chunk length",
            "time_series_index.parquet",
            Box::new(|m| edit_first_chunk(m, |c| c.set_total_compressed_size(-5))),
            "parquet: Parquet error: row group 0 column chunk 0: negative offset, length or count".into(),
        ),
        (
            "shard: negative column-chunk length",
            "time_series/shard-00000.parquet",
            Box::new(|m| edit_first_chunk(m, |c| c.set_total_compressed_size(-5))),
            "parquet: Parquet error: row group 0 column chunk 0: negative offset, length or count".into(),
        ),
        (
            "shard: column chunk past the end",
            "time_series/shard-00000.parquet",
            Box::new(|m| edit_first_chunk(m, |c| c.set_data_page_offset(1 << 40))),
            "parquet: Parquet error: row group 0 column chunk 0: bytes".into(),
        ),
        (
            "shard: row group 1's values column chunk where row group 0's is",
            "time_series/shard-00000.parquet",
            Box::new(|m| {
                let values = |m: &ParquetMetaData, g: usize| m.row_group(g).column(4).clone();
                let (at, len) = (values(&m, 0).data_page_offset(), values(&m, 0).compressed_size());
                let mut b = m.into_builder();
                let mut groups = b.take_row_groups();
                let mut g = groups.remove(1).into_builder();
                let mut columns = g.take_columns();
                assert_eq!(columns[4].column_path().string(), "values.list.element");
                columns[4] = columns[4]
                    .clone()
                    .into_builder()
                    .set_data_page_offset(at)
                    .set_dictionary_page_offset(None)
                    .set_total_compressed_size(len)
                    .build()
                    .unwrap();
                g = g.set_column_metadata(columns);
                groups.insert(1, g.build().unwrap());
                b.set_row_groups(groups).build()
            }),
            "parquet: Parquet error: row group 1 column chunk 4 (bytes ".into(),
        ),
        (
            "index: 2^45 rows",
            "time_series_index.parquet",
            Box::new(|m| edit_rows(m, 1 << 45)),
            "the footer claims 35184372088832 rows, manifest.json lists ".into(),
        ),
        (
            "samples: 2^45 rows",
            "samples.parquet",
            Box::new(|m| edit_rows(m, 1 << 45)),
            "the footer claims 35184372088832 rows, manifest.json lists ".into(),
        ),
    ];
    for (what, rel, edit, reason) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = commit(&tmp.path().join("root"), ecg_dataset("ecg", "1", 2), small_options());
        let path = dir.join(rel);
        rewrite_footer(&path, edit);
        // resealed: a read checks a table's sha256 before its footer, and an
        // edit every listed file's size before it reads any
        reseal(&dir, rel);
        let d = dir.to_str().unwrap();
        let out = tmp.path().join("out");
        let prefix = format!("timef: error: corrupt version: {}: {reason}", path.display());
        let mut verbs = vec![
            vec!["cat", d, "s000/I"],
            vec!["edit", d, "--out-root", out.to_str().unwrap(), "--version", "2", "--remove-sample", "s001"],
        ];
        if rel == "samples.parquet" {
            verbs = vec![vec!["info", d, "--samples"], verbs.remove(1)];
        }
        if rel.starts_with("time_series/") && reason.starts_with("parquet") {
            verbs.push(vec!["dedup", d, d]);
        }
        for args in verbs {
            let (code, stdout, err) = cli(&args);
            assert_eq!((code, stdout.as_str()), (2, ""), "{what}: {args:?}: {err}");
            assert!(err.starts_with(&prefix) && err.lines().count() == 1, "{what}: {args:?}:\n{err}\nwant {prefix}");
        }
        let (code, stdout, err) = cli(&["verify", d]);
        assert_eq!(code, 1, "{what}: {stdout}{err}");
        assert!(stdout.lines().any(|l| l.starts_with("FAIL ") && l.contains(rel)), "{what}: {stdout}");
        if what.contains("where row group 0's is") {
            let overlap =
                format!("FAIL [footer] {rel} footer: {}", reason.trim_start_matches("parquet: Parquet error: "));
            assert!(
                stdout.lines().any(|l| l.starts_with(&overlap) && l.contains("overlaps row group 0 column chunk 4")),
                "{stdout}"
            );
        }
    }
}

/// Makes the page header at byte `at` of the file at `path` claim `plain`
/// uncompressed bytes, keeping the header's length: its first four fields are
/// short-form i32 fields (type, uncompressed size, stored size, crc), and the
/// crc varint gives up the bytes the larger size needs (the crc is then wrong,
/// which only `verify` checks). With `bit_packed_levels`, the data page's
/// definition levels are also declared BIT_PACKED (id 4): a header TimeF's own
/// page decoder refuses and the parquet crate accepts. Returns the stored page size.
fn claim_uncompressed(path: &Path, at: usize, plain: i32, bit_packed_levels: bool) -> i32 {
    fn varint(b: &[u8]) -> (u64, usize) {
        let (mut v, mut n) = (0u64, 0);
        loop {
            v |= u64::from(b[n] & 0x7f) << (7 * n);
            n += 1;
            if b[n - 1] & 0x80 == 0 {
                return (v, n);
            }
        }
    }
    let zigzag = |v: i32| ((v << 1) ^ (v >> 31)) as u32 as u64;
    let mut bytes = std::fs::read(path).unwrap();
    let (before, len) = timef::thrift::PageHeader::decode(&bytes[at..]).unwrap();
    let mut fields = Vec::new();
    let mut p = at;
    for _ in 0..4 {
        assert_eq!(bytes[p], 0x15, "field header at {p}");
        let (_, n) = varint(&bytes[p + 1..]);
        fields.push(bytes[p + 1..p + 1 + n].to_vec());
        p += 1 + n;
    }
    let new_size = common::varint(zigzag(plain));
    let crc_len = fields[3].len() - (new_size.len() - fields[1].len());
    fields[1] = new_size;
    fields[3] = common::varint(1 << (7 * (crc_len - 1)));
    let patch: Vec<u8> = fields.iter().flat_map(|f| [vec![0x15], f.clone()].concat()).collect();
    assert_eq!(patch.len(), p - at, "the patched fields keep their length");
    bytes.splice(at..p, patch);
    if bit_packed_levels {
        // field 5, data_page_header: num_values, encoding, then definition_level_encoding
        assert_eq!(bytes[p], 0x1c, "data_page_header at {p}");
        let mut q = p + 1;
        for _ in 0..2 {
            assert_eq!(bytes[q], 0x15, "data page header field at {q}");
            q += 1 + varint(&bytes[q + 1..]).1;
        }
        assert_eq!(bytes[q..q + 2], [0x15, 6], "definition levels RLE (zigzag 3) at {q}");
        bytes[q + 1] = 8; // BIT_PACKED, zigzag 4
    }
    match timef::thrift::PageHeader::decode(&bytes[at..]) {
        Ok((after, after_len)) => {
            assert!(!bit_packed_levels, "TimeF's own decoder refuses BIT_PACKED levels");
            assert_eq!(
                (after.uncompressed_page_size, after.compressed_page_size, after_len),
                (plain, before.compressed_page_size, len)
            );
        }
        Err(e) => assert!(
            bit_packed_levels && format!("{e:?}").contains("definition_level_encoding: unsupported encoding id 4"),
            "{e:?}"
        ),
    }
    std::fs::write(path, bytes).unwrap();
    before.compressed_page_size
}

/// A page header claiming 2^31 - 1 uncompressed bytes (a tiny file would make
/// the decoder reserve 2 GiB): refused, exit 2, before it is decoded, both
/// where the page is found through the offset index (`cat`) and where the
/// column chunk is walked header by header (`info --samples`), and whatever
/// else of the header TimeF's own decoder would refuse.
#[test]
fn a_page_claiming_2_gib_uncompressed_is_refused_before_it_is_decoded() {
    let cases = [
        ("time_series/shard-00000.parquet", "values", false),
        ("time_series/shard-00000.parquet", "values", true),
        ("samples.parquet", "sample_id", false),
    ];
    for (rel, column, bit_packed_levels) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = commit(&tmp.path().join("root"), ecg_dataset("ecg", "1", 2), small_options());
        let path = dir.join(rel);
        let meta = ParquetMetaDataReader::new().parse_and_finish(&Bytes::from(std::fs::read(&path).unwrap())).unwrap();
        let rg = meta.row_group(0);
        let c = (0..rg.num_columns()).find(|&c| rg.column(c).column_path().parts()[0] == column).unwrap();
        let at = rg.column(c).byte_range().0;
        let stored = claim_uncompressed(&path, at as usize, i32::MAX, bit_packed_levels);
        if !rel.starts_with("time_series/") {
            // resealed: a read checks a table's sha256 before its pages
            reseal(&dir, rel);
        }
        let cap = (stored as u64 * timef::footer::MAX_PAGE_EXPANSION).min(timef::footer::MAX_PAGE_BYTES);
        let d = dir.to_str().unwrap();
        let args = if column == "values" { vec!["cat", d, "s000/I"] } else { vec!["info", d, "--samples"] };
        let (code, stdout, err) = cli(&args);
        let problem = format!("a page of {stored} bytes claims to decompress to 2147483647 (at most {cap})");
        assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{rel}: {err}");
        let prefix = format!("timef: error: corrupt version: {}: ", path.display());
        assert!(
            err.starts_with(&prefix) && err.trim_end().ends_with(&problem),
            "{rel}:\n{err}\nwant {prefix}...{problem}"
        );
    }
}

/// Index rows pointing nowhere: every verb exits 2 with one line.
#[test]
fn crafted_index_rows_exit_2_with_one_line() {
    for (column, value) in [("row_group", -1), ("row_group", i32::MAX), ("row_offset", -5), ("row_offset", i32::MAX)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = commit(&tmp.path().join("root"), ecg_dataset("ecg", "1", 2), small_options());
        let path = dir.join("time_series_index.parquet");
        let batch = read_parquet(&path);
        let i = batch.schema().index_of(column).unwrap();
        let mut columns = batch.columns().to_vec();
        columns[i] = Arc::new(Int32Array::from(vec![value; batch.num_rows()]));
        let batch = RecordBatch::try_new(batch.schema(), columns).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let (code, stdout, err) = cli(&["cat", dir.to_str().unwrap(), "s000/I"]);
        assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{column} = {value}: {err}");
        assert!(err.starts_with("timef: error: corrupt version: "), "{column} = {value}: {err}");
    }
}

/// The size checks do not refuse a valid compressed IPC file whose body is far
/// smaller than its arrays (one series of 2^20 zeros, zstd).
#[test]
fn a_highly_compressed_ipc_file_is_read() {
    let mut target = ListBuilder::new(Float32Builder::new());
    target.values().append_slice(&vec![0.0; 1 << 20]);
    target.append(true);
    let batch = RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["z"])) as ArrayRef),
        ("start", Arc::new(TimestampSecondArray::from(vec![1_600_000_000])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
    ])
    .unwrap();
    let options = arrow_ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("zeros.arrow");
    let mut w =
        arrow_ipc::writer::FileWriter::try_new_with_options(File::create(&path).unwrap(), &batch.schema(), options)
            .unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 16 << 10);
    let d = read_arrow(&path, &ArrowOptions::new("z", "v1")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = commit(root.path(), d, timef::WriterOptions::default());
    let values = Version::open(&dir).unwrap().read_series("z").unwrap();
    assert_eq!((values.len(), values.iter().all(|&x| x == 0.0)), (1 << 20, true));
}

/// Dictionaries stay in memory for the whole input: a small compressed IPC
/// stream whose dictionary (of an otherwise unused column) decodes to more
/// than 256 MiB is refused before it is decoded, in both IPC forms.
#[test]
fn ipc_dictionaries_past_256_mib_are_refused_before_they_are_decoded() {
    use arrow_array::types::Int32Type;
    use arrow_array::DictionaryArray;
    let words: Vec<String> = (0..3).map(|i| format!("{i}").repeat(100 << 20)).collect();
    let junk: DictionaryArray<Int32Type> = words.iter().map(String::as_str).take(1).collect();
    let junk = DictionaryArray::<Int32Type>::try_new(
        junk.keys().clone(),
        Arc::new(StringArray::from(words.iter().map(String::as_str).collect::<Vec<_>>())),
    )
    .unwrap();
    let mut target = ListBuilder::new(Float32Builder::new());
    target.values().append_slice(&[1.0, 2.0]);
    target.append(true);
    let batch = RecordBatch::try_from_iter([
        ("item_id", Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
        ("start", Arc::new(TimestampSecondArray::from(vec![1_600_000_000])) as ArrayRef),
        ("target", Arc::new(target.finish()) as ArrayRef),
        ("junk", Arc::new(junk) as ArrayRef),
    ])
    .unwrap();
    let options = arrow_ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for stream in [true, false] {
        let path = tmp.path().join(if stream { "dict.arrows" } else { "dict.arrow" });
        let file = File::create(&path).unwrap();
        if stream {
            let mut w =
                arrow_ipc::writer::StreamWriter::try_new_with_options(file, &batch.schema(), options.clone()).unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
        } else {
            let mut w =
                arrow_ipc::writer::FileWriter::try_new_with_options(file, &batch.schema(), options.clone()).unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
        }
        assert!(std::fs::metadata(&path).unwrap().len() < 1 << 20);
        let err = read_arrow(&path, &ArrowOptions::new("d", "v1")).unwrap_err().to_string();
        let want = format!(
            "{}: not a readable Arrow IPC file or stream: dictionary batches decode to more than \
             268435456 bytes together (314572824 so far)",
            path.display()
        );
        assert_eq!(err, want);
    }
}
