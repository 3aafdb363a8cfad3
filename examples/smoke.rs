use std::collections::BTreeMap;
use timef::*;
fn main() -> Result<()> {
    let root = std::env::args().nth(1).unwrap();
    let mut d = TimeFDataset::new("smoke", "v1")?;
    d.add_source(Source { source_id: "src".into(), name: "Smoke".into(), ..Default::default() })?;
    for i in 0..5 {
        for ch in ["I", "II"] {
            let id = format!("s{i}/{ch}");
            let n = 1000 + i * 700;
            d.add_series(
                SeriesMeta::new(&id, "ecg", ch, 500.0),
                Box::new(move || Ok((0..n).map(|k| (k as f32 * 0.01).sin()).collect())),
            )?;
        }
        d.add_sample(Sample {
            sample_id: format!("s{i}"),
            source_id: "src".into(),
            series: ["I", "II"]
                .iter()
                .map(|c| SeriesRef { time_series_id: format!("s{i}/{c}"), view: "main".into() })
                .collect(),
            metadata: BTreeMap::from([("site".to_string(), "a".to_string())]),
            ..Default::default()
        })?;
        d.add_annotation(
            Annotation {
                annotation_id: format!("a{i}"),
                annotation_type: "label".into(),
                key: "class".into(),
                value_str: Some("x".into()),
                ..Default::default()
            },
            &[format!("s{i}")],
        )?;
    }
    d.add_task(
        "cls",
        Task {
            split: Some("train".into()),
            target: Some("class".into()),
            ..Task::new("t1", TaskType::Classification, vec!["s0".into(), "s1".into()])
        },
    )?;
    let o = WriterOptions::builder()
        .chunk_max_bytes(1024)
        .row_group_target_bytes(4096)
        .shard_target_bytes(16384)
        .try_build()?;
    let staged = TimeFWriter::new(root, o).write(d)?;
    println!("{}", staged.commit()?.display());
    Ok(())
}
