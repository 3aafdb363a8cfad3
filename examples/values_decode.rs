//! Decoding speed of a version's values pages against zstd alone on the same
//! pages (issue 26 §5, "the bytes it decompresses at >= 80% of zstd's
//! single-thread decompression speed on those pages"):
//!
//!   cargo run --release --example values_decode -- VERSION_DIR
//!
//! Collects the stored body of every page of every `values` column chunk
//! (`timef::thrift::chunk_pages`), then times, best of 3: zstd alone
//! decompressing them all on one thread (one reused context, one reused
//! buffer), and a one-thread scan of the whole version (`timef::scan`, every
//! row group through the values page reader and its checks, and the key
//! columns). Prints both as MiB/s of decompressed page bytes, and their ratio.

use std::path::Path;
use std::time::Instant;

use parquet::file::reader::{FileReader, SerializedFileReader};
use timef::scan::{scan, ScanOptions, Selection};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: values_decode VERSION_DIR")?;
    let mut shards: Vec<_> = std::fs::read_dir(Path::new(&dir).join("time_series"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    shards.sort();
    let mut bodies: Vec<(Vec<u8>, usize)> = Vec::new();
    for shard in &shards {
        let bytes = bytes::Bytes::from(std::fs::read(shard)?);
        let reader = SerializedFileReader::new(bytes.clone())?;
        for rg in reader.metadata().row_groups() {
            for col in rg.columns().iter().filter(|c| c.column_path().string() == "values.list.element") {
                let (start, len) = col.byte_range();
                let chunk = &bytes[start as usize..(start + len) as usize];
                for page in timef::thrift::chunk_pages(chunk, start, len) {
                    let page = page?;
                    let at = page.body_offset() as usize;
                    let body = bytes[at..at + page.header.compressed_page_size as usize].to_vec();
                    bodies.push((body, page.header.uncompressed_page_size as usize));
                }
            }
        }
    }
    let plain_bytes: usize = bodies.iter().map(|(_, n)| n).sum();
    let mut zstd = zstd::bulk::Decompressor::new()?;
    let mut out = vec![0u8; bodies.iter().map(|(_, n)| *n).max().unwrap_or(0)];
    let best = |f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f().map(|()| t.elapsed().as_secs_f64())
            })
            .try_fold(f64::INFINITY, |best, s| s.map(|s| best.min(s)))
    };
    let zstd_s = best(&mut || {
        for (body, n) in &bodies {
            zstd.decompress_to_buffer(body, &mut out[..*n])?;
        }
        Ok(())
    })?;
    let version = timef::reader::Version::open(&dir)?;
    version.index()?;
    let options = ScanOptions::builder().threads(1).try_build()?;
    let mut values = 0usize;
    let scan_s = best(&mut || {
        values = 0;
        for batch in scan(&version, &Selection::all(), &options)? {
            values += batch?.num_rows();
        }
        Ok(())
    })?;
    let mib = plain_bytes as f64 / (1 << 20) as f64;
    println!(
        "{} pages, {mib:.0} MiB decompressed ({values} chunks): zstd alone {:.0} MiB/s, timef scan (1 thread) {:.0} MiB/s, ratio {:.2}",
        bodies.len(),
        mib / zstd_s,
        mib / scan_s,
        zstd_s / scan_s
    );
    Ok(())
}
