//! Derives version N+1 from a base the way a curation engine does: the base as
//! a dataset (`Version::to_dataset`), changed in memory, written with
//! `TimeFWriter::with_base` so unchanged row groups are copied from the base
//! (issue 25; `scripts/bench_edit.sh` times it):
//!
//!   cargo run --release --example derive_version -- BASE OUT_ROOT VERSION \
//!       [--remove FILE] [--add EVERY] [--relabel EVERY]
//!
//! `--remove FILE`: remove the samples listed in FILE (one id a line);
//! `--add EVERY`: after every EVERY-th series of the base, a new series (its
//! spec type, channel and rate, 100 000 deterministic values) in a new sample;
//! `--relabel EVERY`: a `class` label annotation on every EVERY-th sample.
//! BASE and OUT_ROOT are local paths or URLs (s3://BUCKET/PREFIX, ...).
//! Prints what was copied and encoded.

use std::sync::Arc;

use timef::edit::{apply, base_options, Cascade, Edit};
use timef::reader::Version;
use timef::storage::Location;
use timef::{Annotation, Sample, SeriesRef, TimeFWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_dir, out_root, version, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: derive_version BASE OUT_ROOT VERSION [--remove FILE] [--add EVERY] [--relabel EVERY]".into()
        );
    };
    let (mut remove, mut add, mut relabel) = (None, None, None);
    for pair in rest.chunks(2) {
        match pair {
            [flag, value] if flag == "--remove" => remove = Some(std::fs::read_to_string(value)?),
            [flag, value] if flag == "--add" => add = Some(value.parse::<usize>()?),
            [flag, value] if flag == "--relabel" => relabel = Some(value.parse::<usize>()?),
            _ => return Err(format!("unknown arguments {pair:?}").into()),
        }
    }
    let base = Arc::new(Version::open(base_dir)?);
    let name = base.manifest().dataset.name.clone();
    let mut d = base.to_dataset(&name, version)?;
    if let Some(ids) = remove {
        let sample_ids = ids.lines().filter(|l| !l.is_empty());
        let mut edit = Edit::remove_samples(sample_ids, Cascade::RemoveDependents);
        apply(&mut d, &mut edit, &|ids| base.series_loaders(ids))?;
    }
    let samples: Vec<Sample> = d.samples().collect();
    if let Some(every) = add {
        let series: Vec<_> = d.series().collect();
        let source = samples.first().map(|s| s.source_id.clone()).ok_or("no sample")?;
        for (k, meta) in series.iter().enumerate().filter(|(k, _)| k % every.max(1) == every.max(1) - 1) {
            let mut new = meta.clone();
            new.time_series_id = format!("{}-added", meta.time_series_id);
            new.t_end_s = None;
            let values: Vec<f32> = (0..100_000).map(|i| ((i as f32 * 0.01 + k as f32).sin() * 500.0).round()).collect();
            let id = new.time_series_id.clone();
            d.add_series(new, Box::new(move || Ok(values.into())))?;
            d.add_sample(Sample {
                sample_id: id.clone(),
                source_id: source.clone(),
                series: vec![SeriesRef { time_series_id: id, view: "main".into() }],
                ..Default::default()
            })?;
        }
    }
    if let Some(every) = relabel {
        for s in samples.iter().step_by(every.max(1)) {
            let a = Annotation {
                annotation_id: format!("{}/class", s.sample_id),
                annotation_type: "label".into(),
                key: "class".into(),
                value_str: Some("reviewed".into()),
                ..Default::default()
            };
            d.add_annotation(a, std::slice::from_ref(&s.sample_id))?;
        }
    }
    let out = Location::from_path(std::path::Path::new(out_root))?;
    let staged = TimeFWriter::at(out, base_options(&base)?).with_base(Arc::clone(&base)).write(d)?;
    let c = staged.copied();
    let dir = staged.commit()?;
    println!(
        "{}: copied {} of {} values pages ({} shards whole), {} base pages decoded, {} bytes read from the base's shards",
        dir.display(),
        c.pages_copied,
        c.pages_copied + c.pages_encoded,
        c.shards_copied,
        c.pages_decoded,
        c.bytes_read
    );
    Ok(())
}
