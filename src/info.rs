//! The summary `timef info` prints: counts, channels with rates and statistics,
//! tasks, files and sizes, from the manifest (`timef info` first checks the
//! files with [`Version::check_files`]; `timef verify` checks the bytes).

use serde_json::{json, Value};

use crate::error::Result;
use crate::reader::Version;

/// The summary as JSON: dataset, counts, id encodings, channels, tasks, files and
/// total bytes, statistics.
pub fn summary(v: &Version) -> Result<Value> {
    let m = v.manifest();
    let total: u64 = m.files.iter().map(|f| f.bytes).sum();
    Ok(json!({
        "dir": v.dir().display().to_string(),
        "dataset": m.dataset,
        "counts": m.counts,
        "id_encoding": m.id_encoding,
        "time_series": m.schema.time_series,
        "tasks": m.schema.tasks,
        "annotations": m.schema.annotations,
        "statistics": m.statistics,
        "files": m.files.iter().map(|f| json!({"path": f.path, "bytes": f.bytes, "rows": f.rows})).collect::<Vec<_>>(),
        "total_bytes": total,
        "sources": m.sources,
        "derived_from": m.derived_from,
    }))
}

/// A number for people: up to six significant digits, scientific notation
/// outside 1e-3..1e6 (sampling rates run from 1/31556952 Hz to MHz).
fn num(x: f64) -> String {
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        let decimals = (5 - x.abs().log10().floor() as i32).max(0) as usize;
        let s = format!("{x:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{x:.5e}")
    }
}

/// The summary as text for a terminal.
pub fn render(v: &Version) -> Result<String> {
    use std::fmt::Write;
    let m = v.manifest();
    let c = &m.counts;
    let mut s = String::new();
    let _ = writeln!(s, "{} / {}  ({})", m.dataset.name, m.dataset.version, v.dir().display());
    if let Some(d) = &m.dataset.description {
        // every line, the later ones indented under the first
        let _ = writeln!(s, "description: {}", d.lines().collect::<Vec<_>>().join("\n  "));
    }
    // what a curation sets is seen here, not only in manifest.json (review 138)
    for (field, value) in [("license", &m.dataset.license), ("citation", &m.dataset.citation)] {
        if let Some(value) = value {
            let _ = writeln!(s, "{field}: {}", value.lines().collect::<Vec<_>>().join("\n  "));
        }
    }
    for src in &m.sources {
        let extra: Vec<String> = [("url", &src.url), ("license", &src.license), ("citation", &src.citation)]
            .into_iter()
            .filter_map(|(field, value)| value.as_ref().map(|v| format!("{field} {}", v.replace('\n', " "))))
            .collect();
        let extra = if extra.is_empty() { String::new() } else { format!("  ({})", extra.join("; ")) };
        let _ = writeln!(s, "source {}: {}{extra}", src.source_id, src.name);
    }
    let _ = writeln!(
        s,
        "samples {}  series {}  chunks {}  values {}  annotations {}  shards {}",
        c.samples, c.time_series, c.chunks, c.values, c.annotations, c.shards
    );
    let ids: Vec<String> = m.id_encoding.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(s, "ids: {}", ids.join(" "));
    let _ = writeln!(s, "channels:");
    for (spec, chans) in &m.schema.time_series {
        for (ch, cs) in chans {
            let rates: Vec<String> = cs.sampling_rates_hz.iter().map(|&r| num(r)).collect();
            let st = m.statistics.get(spec).and_then(|x| x.get(ch));
            let stats = st
                .map(|t| {
                    format!(
                        "n={} min={} max={} mean={} std={}",
                        t.count,
                        num(t.min),
                        num(t.max),
                        num(t.mean),
                        num(t.std)
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(s, "  {spec}/{ch}: {} series @ {} Hz  {stats}", cs.series, rates.join(","));
        }
    }
    if !m.schema.tasks.is_empty() {
        let _ = writeln!(s, "tasks:");
        for (name, t) in &m.schema.tasks {
            let _ = writeln!(s, "  {name}: {} ({}) splits [{}]", t.count, t.task_types.join(","), t.splits.join(","));
        }
    }
    let total: u64 = m.files.iter().map(|f| f.bytes).sum();
    let _ = writeln!(s, "files: {} besides manifest.json ({} bytes)", m.files.len(), total);
    for f in &m.files {
        let _ = writeln!(s, "  {:>12}  {:>8} rows  {}", f.bytes, f.rows, f.path);
    }
    if let Some(d) = &m.derived_from {
        let _ = writeln!(s, "derived from version {} ({})", d.dataset_version, d.operation);
    }
    Ok(s)
}

/// Every sample with its window and series (id and view), as JSON.
pub fn samples_json(v: &Version) -> Result<Value> {
    Ok(Value::Array(
        v.samples()?
            .iter()
            .map(|s| {
                json!({
                    "sample_id": s.sample_id,
                    "t_start_s": s.t_start_s,
                    "t_end_s": s.t_end_s,
                    "series": s.series.iter().map(|r| json!({"time_series_id": r.time_series_id, "view": r.view})).collect::<Vec<_>>(),
                })
            })
            .collect(),
    ))
}

/// Every sample and its series ids, one sample per line, for a terminal.
pub fn render_samples(v: &Version) -> Result<String> {
    use std::fmt::Write;
    let mut s = String::from("samples (sample_id: time_series_id ...):\n");
    for sample in v.samples()? {
        let series: Vec<&str> = sample.series.iter().map(|r| r.time_series_id.as_str()).collect();
        let _ = writeln!(s, "  {}: {}", sample.sample_id, series.join(" "));
    }
    Ok(s)
}
