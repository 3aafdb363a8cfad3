//! The codec's ceiling for the writer: zstd at the pinned level (3) on the
//! BYTE_STREAM_SPLIT float32 value bytes of a GluonTS-style Arrow IPC input
//! (`gen_bench.py` output), in pages of `layout::PAGE_MAX_BYTES` (1 MiB, the
//! largest values page), compressed on THREADS threads (default 2):
//!
//!   cargo run --release --example codec_limit -- INPUT.arrow [THREADS]
//!
//! The values are taken in the writer's order: series sorted by
//! `item_id` (the writer sorts by spec type, channel, then id, FORMAT-BRIEF
//! §5; a `gen_bench.py` input has one spec type and one channel). In file
//! order the kinds of signal alternate every series, which compresses less
//! and more slowly than what the writer compresses. Only the compression is
//! timed: the input is read, its values ordered and split into pages first.
//! Prints `<value MiB> MiB in <s> s: <MiB/s> MiB/s (<ratio>x)`, MiB of
//! uncompressed value bytes.

use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (input, threads) = match &args[..] {
        [_, input] => (input, 2),
        [_, input, threads] => (input, threads.parse()?),
        _ => return Err("usage: codec_limit INPUT.arrow [THREADS]".into()),
    };
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
    let mib = (values.len() * 4) as f64 / (1 << 20) as f64;
    println!("{mib:.1} MiB in {s:.3} s: {:.1} MiB/s ({:.2}x)", mib / s, (values.len() * 4) as f64 / stored as f64);
    Ok(())
}
