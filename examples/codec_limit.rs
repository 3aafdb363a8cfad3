//! The codec's ceiling for the writer: zstd at the pinned level (3) on the
//! BYTE_STREAM_SPLIT float32 value bytes of a GluonTS-style Arrow IPC input
//! (`gen_bench.py` output), in pages of `layout::PAGE_MAX_BYTES` (1 MiB, the
//! largest values page), compressed on THREADS threads (default 2):
//!
//!   cargo run --release --example codec_limit -- INPUT.arrow [THREADS]
//!
//! Only the split and the compression are timed (the input is read and its
//! values gathered first). Prints `<value MiB> MiB in <s> s: <MiB/s> MiB/s
//! (<ratio>x)`, MiB of uncompressed value bytes.

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
    let mut values: Vec<f32> = Vec::new();
    for batch in reader {
        let batch = batch?;
        let target = batch.column_by_name("target").ok_or("no target column")?.as_list::<i32>();
        values.extend_from_slice(target.values().as_primitive::<Float32Type>().values());
    }
    let page_values = (timef::layout::PAGE_MAX_BYTES / timef::layout::VALUE_BYTES) as usize;
    let pages: Vec<&[f32]> = values.chunks(page_values).collect();
    let t = Instant::now();
    let stored: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let pages = &pages;
                s.spawn(move || -> Result<usize, std::io::Error> {
                    let mut zstd = zstd::bulk::Compressor::new(3)?;
                    let (mut split, mut out) = (Vec::new(), Vec::new());
                    let mut stored = 0;
                    for page in pages.iter().skip(k).step_by(threads) {
                        // BYTE_STREAM_SPLIT: byte j of every value, for j = 0..4
                        split.clear();
                        split.resize(page.len() * 4, 0u8);
                        for (i, x) in page.iter().enumerate() {
                            for (j, b) in x.to_le_bytes().into_iter().enumerate() {
                                split[j * page.len() + i] = b;
                            }
                        }
                        out.clear();
                        out.reserve(zstd::zstd_safe::compress_bound(split.len()));
                        stored += zstd.compress_to_buffer(&split, &mut out)?;
                    }
                    Ok(stored)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("worker").expect("zstd")).sum()
    });
    let s = t.elapsed().as_secs_f64();
    let mib = (values.len() * 4) as f64 / (1 << 20) as f64;
    println!("{mib:.1} MiB in {s:.3} s: {:.1} MiB/s ({:.2}x)", mib / s, (values.len() * 4) as f64 / stored as f64);
    Ok(())
}
