//! Write throughput of the whole writer (load, chunk, statistics, encode,
//! commit) on synthetic sensor-like series, in uncompressed value bytes per
//! second. `scripts/bench_vs_ref.sh` compares the CLI against the pyarrow
//! reference writer on `gen_bench.py` input.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use timef::{Sample, SeriesMeta, SeriesRef, Source, TimeFDataset, TimeFWriter, WriterOptions};

/// `series` series of `n` quantized random-walk values each (realistic compression).
fn dataset(version: &str, series: usize, n: usize) -> TimeFDataset {
    let mut d = TimeFDataset::new("bench", version).unwrap();
    d.add_source(Source { source_id: "s".into(), name: "bench".into(), ..Default::default() }).unwrap();
    for i in 0..series {
        let id = format!("series-{i:05}");
        let mut x = 0f32;
        let mut state = i as u64 * 0x9E37_79B9_7F4A_7C15 + 1;
        let values: Vec<f32> = (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                x += ((state % 2001) as f32 - 1000.0) / 1000.0;
                (x * 256.0).round() / 256.0
            })
            .collect();
        d.add_series(SeriesMeta::new(&id, "sensor", "0", 100.0), Box::new(move || Ok(values.into()))).unwrap();
        d.add_sample(Sample {
            sample_id: id.clone(),
            source_id: "s".into(),
            series: vec![SeriesRef { time_series_id: id, view: "main".into() }],
            ..Default::default()
        })
        .unwrap();
    }
    d
}

fn write(c: &mut Criterion) {
    let mut g = c.benchmark_group("write");
    g.sample_size(10);
    for (series, n) in [(64usize, 65_536usize), (4096, 1024)] {
        g.throughput(Throughput::Bytes((series * n * 4) as u64));
        g.bench_with_input(BenchmarkId::new("series_x_values", format!("{series}x{n}")), &(series, n), |b, &(s, n)| {
            b.iter_batched(
                || (tempfile::tempdir().unwrap(), dataset("v1", s, n)),
                |(root, d)| {
                    let dir =
                        TimeFWriter::new(root.path(), WriterOptions::default()).write(d).unwrap().commit().unwrap();
                    black_box(dir);
                    root
                },
                criterion::BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn layout(c: &mut Criterion) {
    c.bench_function("key_hash", |b| b.iter(|| timef::layout::key_hash(black_box("series-00042/0"), black_box(7))));
    let values: Vec<f32> = (0..262_144).map(|i| (i as f32 * 0.001).sin()).collect();
    c.bench_function("chunk_statistics_1mib", |b| b.iter(|| timef::manifest::Partial::of(black_box(&values))));
    // the cost of page checksums: one CRC-32 over every page's stored bytes
    let page = vec![0x5au8; 1 << 20];
    let mut g = c.benchmark_group("page_crc");
    g.throughput(Throughput::Bytes(page.len() as u64));
    g.bench_function("crc32_1mib", |b| b.iter(|| crc32fast::hash(black_box(&page))));
    g.finish();
}

criterion_group!(benches, write, layout);
criterion_main!(benches);
