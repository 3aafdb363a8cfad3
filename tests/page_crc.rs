//! Issue 5, page CRCs: every page of every Parquet file carries a CRC-32 that
//! matches the page as stored, recomputed here from the file's bytes; a
//! flipped payload byte is rejected by the parquet crate's reader (its `crc`
//! feature) and by pyarrow with page checksum verification.

mod common;

use std::path::Path;
use std::process::Command;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use timef::thrift::PageKind;

const VALUES: &str = "values.list.element";

#[test]
fn every_page_carries_a_matching_crc() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = common::commit(tmp.path(), common::ecg_dataset("ecg", "v1", 10), common::small_options());
    let (mut pages, mut chunks, mut multi_page_chunks) = (0usize, 0usize, 0usize);
    for rel in common::listed_files(&dir) {
        let path = dir.join(&rel);
        let bytes = std::fs::read(&path).unwrap();
        let file_pages = common::file_pages(&path);
        let mut per_chunk = std::collections::BTreeMap::<(usize, &str), usize>::new();
        for p in &file_pages {
            let h = &p.page.header;
            let crc = h.crc.unwrap_or_else(|| panic!("{rel} {p:?}: no CRC"));
            // the bytes as stored: the compressed page for v1 data and dictionary pages
            assert!(matches!(h.kind, PageKind::Data { .. } | PageKind::Dictionary { .. }), "{rel} {p:?}");
            let start = p.page.body_offset() as usize;
            let stored = &bytes[start..start + h.compressed_page_size as usize];
            assert_eq!(crc as u32, crc32fast::hash(stored), "{rel} row group {} {}: CRC", p.row_group, p.column);
            *per_chunk.entry((p.row_group, p.column.as_str())).or_default() += 1;
        }
        pages += file_pages.len();
        chunks += per_chunk.len();
        multi_page_chunks += per_chunk.values().filter(|&&n| n > 1).count();
    }
    assert!(pages > chunks, "{pages} pages in {chunks} column chunks");
    assert!(multi_page_chunks > 0);
}

/// A shard of a fresh version whose first values page has one payload byte
/// flipped; returns its path.
fn corrupted_shard(root: &Path) -> std::path::PathBuf {
    let dir = common::commit(root, common::ecg_dataset("ecg", "v1", 10), common::small_options());
    let shard = dir.join("time_series/shard-00000.parquet");
    let pages = common::file_pages(&shard);
    let page = &pages.iter().find(|p| p.column == VALUES).unwrap().page;
    assert!(matches!(page.header.kind, PageKind::Data { .. }));
    common::flip_byte(&shard, page.body_offset() + page.header.compressed_page_size as u64 / 2, 0xff);
    shard
}

/// Reads the leaf column `leaf` of every row group of `path` with the parquet crate.
fn read_leaf(path: &Path, leaf: &str) -> parquet::errors::Result<usize> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())?;
    let schema = builder.parquet_schema();
    let i = (0..schema.num_columns()).find(|&i| schema.column(i).path().string() == leaf).unwrap();
    let mask = ProjectionMask::leaves(schema, [i]);
    let mut rows = 0;
    for batch in builder.with_projection(mask).build()? {
        rows += batch.map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?.num_rows();
    }
    Ok(rows)
}

#[test]
fn parquet_crate_rejects_a_flipped_data_page() {
    let tmp = tempfile::tempdir().unwrap();
    let shard = corrupted_shard(tmp.path());
    let err = read_leaf(&shard, VALUES).expect_err("the corrupt values page must not read");
    assert!(err.to_string().contains("CRC"), "{err}");
    // the other columns of the file still read: the error is the page's
    assert!(read_leaf(&shard, "time_series_id").unwrap() > 0);
}

#[test]
fn pyarrow_rejects_a_flipped_data_page() {
    let Some(py) = common::require_python("pyarrow page checksum check") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let shard = corrupted_shard(tmp.path());
    let read = |path: &Path| {
        Command::new(&py)
            .args([
                "-c",
                "import sys, pyarrow.parquet as pq; pq.read_table(sys.argv[1], page_checksum_verification=True)",
            ])
            .arg(path)
            .output()
            .unwrap()
    };
    let out = read(&shard);
    assert!(!out.status.success(), "pyarrow read a corrupt page");
    assert!(
        String::from_utf8_lossy(&out.stderr).to_lowercase().contains("crc"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // control: the next shard, untouched, reads with verification on
    let clean = shard.with_file_name("shard-00001.parquet");
    let out = read(&clean);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
