//! Latency of `Version::read_series` (random access through the index and the
//! page index), measured inside the process so process start is not counted:
//!
//!   cargo run --release --example read_latency -- VERSION_DIR IDS_FILE
//!
//! IDS_FILE holds one series id per line (`scripts/bench_read_peers.py
//! pick-ids` draws them). The index is read once before the clock starts;
//! each id is then read once, in file order. Prints p50, p99 and mean in ms.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, ids_file] = &args[..] else {
        return Err("usage: read_latency VERSION_DIR IDS_FILE".into());
    };
    let ids: Vec<String> =
        std::fs::read_to_string(ids_file)?.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
    let v = timef::reader::Version::open(dir)?;
    v.index()?;
    let mut ms = Vec::with_capacity(ids.len());
    for id in &ids {
        let t = Instant::now();
        let values = v.read_series(id)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        if values.is_empty() {
            return Err(format!("{id}: no values").into());
        }
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    println!("p50 {:.3} ms  p99 {:.3} ms  mean {mean:.3} ms  ({} series)", at(0.5), at(0.99), ms.len());
    Ok(())
}
