//! The codec's ceiling for the writer: zstd at the pinned level (3) on the
//! BYTE_STREAM_SPLIT float32 value bytes of a GluonTS-style Arrow IPC input
//! (`gen_bench.py` output), compressed on THREADS threads (default 2), in
//! one of two cuts of pages:
//!
//!   cargo run --release --example codec_limit -- INPUT.arrow [THREADS]
//!   cargo run --release --example codec_limit -- INPUT.arrow THREADS VERSION_DIR
//!
//! - Without VERSION_DIR, pages of `layout::PAGE_MAX_BYTES` (1 MiB, the
//!   largest values page): the ceiling issue 27 names. The values are taken
//!   in the writer's order: series sorted by `item_id` (the writer sorts by
//!   spec type, channel, then id, FORMAT-BRIEF §5; a `gen_bench.py` input has
//!   one spec type and one channel). In file order the kinds of signal
//!   alternate every series, which compresses less and more slowly than what
//!   the writer compresses.
//! - With VERSION_DIR, a version the writer made of INPUT (INPUT is then not
//!   read): the format's own `values` pages where its content-defined cuts
//!   put them (docs/format.md §4 "Values pages": at least 256 KiB, so many small
//!   series make pages near 256 KiB, long series pages near 1 MiB), each
//!   page's payload (levels and split value bytes, what the writer hands
//!   zstd) decompressed from the shards first and compressed again: the most
//!   a writer of this format reaches with zstd alone on its pages.
//!
//! Only the compression is timed: the values are read, ordered and split into
//! pages (or the version's pages read back) first. Prints `<value MiB> MiB in
//! <s> s: <MiB/s> MiB/s (<ratio>x)`, MiB of uncompressed value bytes (4 per
//! value), then, with VERSION_DIR, `<n> pages, mean <KiB> KiB`.

use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (input, threads, version) = match &args[..] {
        [_, input] => (input, 2, None),
        [_, input, threads] => (input, threads.parse()?, None),
        [_, input, threads, version] => (input, threads.parse()?, Some(version)),
        _ => return Err("usage: codec_limit INPUT.arrow [THREADS [VERSION_DIR]]".into()),
    };
    let (pages, values) = match version {
        None => split_pages(input)?,
        Some(dir) => format_pages(std::path::Path::new(dir))?,
    };
    let t = Instant::now();
    let stored: usize = std::thread::scope(|s| -> std::io::Result<usize> {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let pages = &pages;
                s.spawn(move || -> Result<usize, std::io::Error> {
                    let mut zstd = zstd::bulk::Compressor::new(3)?;
                    let mut out = Vec::new();
                    let mut stored = 0;
                    for page in pages.iter().skip(k).step_by(threads) {
                        out.clear();
                        out.reserve(zstd::zstd_safe::compress_bound(page.len()));
                        stored += zstd.compress_to_buffer(page, &mut out)?;
                    }
                    Ok(stored)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().map_err(|_| std::io::Error::other("a worker panicked"))?).sum()
    })?;
    let s = t.elapsed().as_secs_f64();
    let mib = (values * 4) as f64 / (1 << 20) as f64;
    println!("{mib:.1} MiB in {s:.3} s: {:.1} MiB/s ({:.2}x)", mib / s, (values * 4) as f64 / stored as f64);
    if version.is_some() {
        let bytes: usize = pages.iter().map(Vec::len).sum();
        println!("{} pages, mean {:.0} KiB", pages.len(), bytes as f64 / pages.len().max(1) as f64 / 1024.0);
    }
    Ok(())
}

/// Pages to compress, and the count of values they hold.
type Pages = (Vec<Vec<u8>>, usize);

/// INPUT's values in the writer's order, split into 1 MiB pages.
fn split_pages(input: &str) -> Result<Pages, Box<dyn std::error::Error>> {
    let reader = arrow_ipc::reader::FileReader::try_new(std::fs::File::open(input)?, None)?;
    let mut series: Vec<(String, Vec<f32>)> = Vec::new();
    for batch in reader {
        let batch = batch?;
        let ids = batch.column_by_name("item_id").ok_or("no item_id column")?.as_string::<i32>();
        let target = batch.column_by_name("target").ok_or("no target column")?.as_list::<i32>();
        for row in 0..batch.num_rows() {
            let values = target.value(row);
            series.push((ids.value(row).to_string(), values.as_primitive::<Float32Type>().values().to_vec()));
        }
    }
    series.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let values: Vec<f32> = series.into_iter().flat_map(|(_, v)| v).collect();
    let page_values = (timef::layout::PAGE_MAX_BYTES / timef::layout::VALUE_BYTES) as usize;
    // BYTE_STREAM_SPLIT: byte j of every value of a page, for j = 0..4
    let pages: Vec<Vec<u8>> = values
        .chunks(page_values)
        .map(|page| {
            let mut split = vec![0u8; page.len() * 4];
            for (i, x) in page.iter().enumerate() {
                for (j, b) in x.to_le_bytes().into_iter().enumerate() {
                    split[j * page.len() + i] = b;
                }
            }
            split
        })
        .collect();
    Ok((pages, values.len()))
}

/// The payload of every `values` page of the version at `dir` (its shards in
/// name order, row groups and pages in file order), decompressed: what the
/// writer handed zstd.
fn format_pages(dir: &std::path::Path) -> Result<Pages, Box<dyn std::error::Error>> {
    use parquet::column::page::Page;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut shards: Vec<_> =
        std::fs::read_dir(dir.join("time_series"))?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    shards.sort();
    let (mut pages, mut values) = (Vec::new(), 0);
    for shard in shards {
        let reader = SerializedFileReader::new(std::fs::File::open(&shard)?)?;
        let leaf = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.path().string() == "values.list.element")
            .ok_or_else(|| format!("{}: no values column", shard.display()))?;
        for rg in 0..reader.num_row_groups() {
            let mut column = reader.get_row_group(rg)?.get_column_page_reader(leaf)?;
            while let Some(page) = column.get_next_page()? {
                if let Page::DataPage { buf, num_values, .. } = page {
                    values += num_values as usize;
                    pages.push(buf.to_vec());
                }
            }
        }
    }
    Ok((pages, values))
}
