//! The version's small tables (index, samples, annotations, tasks) and its
//! manifest, written by the commit of every write, single-machine or
//! distributed (FORMAT-BRIEF §3, §4; `docs/format.md` §1).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::shards::{IndexRow, ParquetFile};
use super::{decide_ids, WriteProgressEvent, WriterOptions};
use crate::dataset::{SeriesMeta, TimeFDataset};
use crate::encoding::{encode_chunk, Codec, FileSchema};
use crate::error::{Error, Result};
use crate::layout::shard_path;
use crate::layout::{self, key_hash};
use crate::manifest::{self, Manifest, Partial};
use crate::storage::Staging;
use crate::tables::{self, Columns, IdEncodings, IdSpace};

/// The shards of a write, ready for the commit.
pub(crate) struct SeriesOutput {
    /// Shard files in shard order.
    pub(crate) files: Vec<manifest::FileEntry>,
    /// Every index row in chunk order.
    pub(crate) index: Vec<IndexRow>,
    /// The series in write order (index rows name them by position).
    pub(crate) metas: Vec<SeriesMeta>,
}

/// The `created_by` string of every Parquet file this build writes.
pub(crate) fn created_by() -> String {
    format!(
        "timef {} (parquet-rs {})",
        env!("CARGO_PKG_VERSION"),
        parquet::file::properties::DEFAULT_CREATED_BY.rsplit(' ').next().unwrap_or("")
    )
}

/// Writes the index, samples, annotations and task files next to the shards,
/// then stages the manifest. Channel statistics merge the chunk partials in
/// index order: the same order, so the same bits, whoever computed them.
pub(crate) fn finish_version(
    staging: &mut Staging,
    dataset: &TimeFDataset,
    options: &WriterOptions,
    series: SeriesOutput,
    derived_from: Option<manifest::DerivedFrom>,
    emit: &dyn Fn(WriteProgressEvent) -> Result<()>,
) -> Result<Manifest> {
    let ids = decide_ids(dataset);
    let codec = Codec { zstd_level: options.compression_level() };
    let created_by = created_by();
    let created_by = created_by.as_str();
    let SeriesOutput { files: shard_files, index, metas } = series;
    let shards = shard_files.len();
    let mut files = shard_files;
    files.push(write_index(staging, &metas, &index, ids, codec, created_by)?);
    files.push(write_samples(staging, dataset, ids, codec, created_by)?);
    files.push(write_annotations(staging, dataset, ids, codec, created_by)?);
    for (name, tasks) in &dataset.tasks {
        files.push(write_tasks(staging, name, tasks, ids, codec, created_by)?);
    }
    for f in &files[shards..] {
        emit(WriteProgressEvent::FileWritten { path: f.path.clone(), bytes: f.bytes })?;
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let mut stats: BTreeMap<(&str, &str), Partial> = BTreeMap::new();
    for r in &index {
        let m = &metas[r.series as usize];
        stats.entry((m.spec_type.as_str(), m.channel.as_str())).or_default().merge(&r.partial);
    }
    let manifest = build_manifest(dataset, options, ids, files, shards, &index, &stats, derived_from);
    staging.stage_manifest(manifest.to_bytes())?;
    Ok(manifest)
}

/// Writes a small table as one row group (none when empty) with content-defined
/// pages shared by all columns.
fn write_table(
    staging: &mut Staging,
    rel: &str,
    schema: FileSchema,
    cols: Columns,
    row_keys: impl Iterator<Item = (u64, u64)>,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let props = schema.properties(codec, created_by)?;
    let pages = layout::table_pages(row_keys);
    let schema = Arc::new(schema);
    let mut file = ParquetFile::create(&mut *staging, rel, Arc::clone(&schema), &props)?;
    if !pages.is_empty() {
        use rayon::prelude::*;
        let chunks = cols
            .leaves
            .par_iter()
            .enumerate()
            .map(|(i, leaf)| {
                encode_chunk(schema.descr.column(i), &props, leaf, &pages).map_err(|e| Error::parquet(rel, e))
            })
            .collect::<Result<Vec<_>>>()?;
        file.append_row_group(chunks)?;
    }
    file.finish(&*staging)
}

fn opt(s: &Option<String>) -> Option<&str> {
    s.as_deref()
}

fn write_index(
    staging: &mut Staging,
    metas: &[SeriesMeta],
    index: &[IndexRow],
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let m = |r: &IndexRow| &metas[r.series as usize];
    let shard_paths: Vec<String> = index.iter().map(|r| shard_path(r.shard)).collect();
    let mut c = Columns::default();
    c.ids(index.iter().map(|r| m(r).time_series_id.as_str()), ids.get(IdSpace::TimeSeries))?;
    c.i32s(index.iter().map(|r| r.chunk_idx as i32).collect());
    c.strs(index.iter().map(|r| m(r).spec_type.as_str()));
    c.strs(index.iter().map(|r| m(r).channel.as_str()));
    c.opt_strs(&index.iter().map(|r| opt(&m(r).units)).collect::<Vec<_>>());
    c.f64s(index.iter().map(|r| m(r).sampling_rate_hz).collect());
    c.f64s(index.iter().map(|r| m(r).t_start_s).collect());
    c.opt_f64s(&index.iter().map(|r| m(r).t_end_s).collect::<Vec<_>>());
    c.i64s(index.iter().map(|r| r.value_offset as i64).collect());
    c.i32s(index.iter().map(|r| r.n_values as i32).collect());
    c.strs(shard_paths.iter().map(String::as_str));
    c.i32s(index.iter().map(|r| r.row_group as i32).collect());
    c.i32s(index.iter().map(|r| r.row_offset as i32).collect());
    c.f32s(index.iter().map(|r| r.partial.min as f32).collect());
    c.f32s(index.iter().map(|r| r.partial.max as f32).collect());
    c.f64s(index.iter().map(|r| r.partial.mean).collect());
    c.f64s(index.iter().map(|r| r.partial.std()).collect());
    let keys =
        index.iter().map(|r| (96 + m(r).time_series_id.len() as u64, key_hash(&m(r).time_series_id, r.chunk_idx)));
    write_table(staging, "time_series_index.parquet", tables::index_schema(ids)?, c, keys, codec, created_by)
}

fn write_samples(
    staging: &mut Staging,
    d: &TimeFDataset,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let s: Vec<_> = d.samples.values().collect();
    let mut c = Columns::default();
    c.ids(s.iter().map(|x| x.sample_id.as_str()), ids.get(IdSpace::Sample))?;
    c.ids(s.iter().map(|x| x.source_id.as_str()), ids.get(IdSpace::Source))?;
    c.opt_ids(&s.iter().map(|x| opt(&x.subject_id)).collect::<Vec<_>>(), ids.get(IdSpace::Subject))?;
    c.opt_f64s(&s.iter().map(|x| x.t_start_s).collect::<Vec<_>>());
    c.opt_f64s(&s.iter().map(|x| x.t_end_s).collect::<Vec<_>>());
    c.series_refs(&s.iter().map(|x| x.series.as_slice()).collect::<Vec<_>>(), ids.get(IdSpace::TimeSeries))?;
    c.key_value_lists(&s.iter().map(|x| &x.metadata).collect::<Vec<_>>());
    let keys = s.iter().map(|x| (64 + 48 * x.series.len() as u64, key_hash(&x.sample_id, 0)));
    write_table(staging, "samples.parquet", tables::samples_schema(ids)?, c, keys, codec, created_by)
}

fn write_annotations(
    staging: &mut Staging,
    d: &TimeFDataset,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    // one row per (sample, annotation), sorted by (sample_id, annotation_id)
    let mut rows: Vec<(&str, &crate::dataset::Annotation)> =
        d.annotations.values().flat_map(|(a, samples)| samples.iter().map(move |s| (s.as_str(), a))).collect();
    rows.sort_by(|x, y| (x.0, &x.1.annotation_id).cmp(&(y.0, &y.1.annotation_id)));
    let mut c = Columns::default();
    c.ids(rows.iter().map(|r| r.0), ids.get(IdSpace::Sample))?;
    c.ids(rows.iter().map(|r| r.1.annotation_id.as_str()), ids.get(IdSpace::Annotation))?;
    c.strs(rows.iter().map(|r| r.1.annotation_type.as_str()));
    c.strs(rows.iter().map(|r| r.1.key.as_str()));
    c.opt_strs(&rows.iter().map(|r| opt(&r.1.value_str)).collect::<Vec<_>>());
    c.opt_f64s(&rows.iter().map(|r| r.1.value_num).collect::<Vec<_>>());
    c.opt_f64s(&rows.iter().map(|r| r.1.t_start_s).collect::<Vec<_>>());
    c.opt_f64s(&rows.iter().map(|r| r.1.t_end_s).collect::<Vec<_>>());
    c.opt_strs(&rows.iter().map(|r| opt(&r.1.channel)).collect::<Vec<_>>());
    let keys = rows.iter().map(|r| {
        (64 + r.1.value_str.as_ref().map_or(0, |s| s.len() as u64), key_hash(r.0, 0) ^ key_hash(&r.1.annotation_id, 0))
    });
    write_table(staging, "annotations.parquet", tables::annotations_schema(ids)?, c, keys, codec, created_by)
}

fn write_tasks(
    staging: &mut Staging,
    name: &str,
    tasks: &BTreeMap<String, crate::dataset::Task>,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let t: Vec<_> = tasks.values().collect();
    let sample = ids.get(IdSpace::Sample);
    let mut c = Columns::default();
    c.ids(t.iter().map(|x| x.task_id.as_str()), ids.get(IdSpace::Task))?;
    c.strs(t.iter().map(|x| x.task_type.as_str()));
    c.opt_strs(&t.iter().map(|x| opt(&x.split)).collect::<Vec<_>>());
    c.id_lists(&t.iter().map(|x| Some(x.sample_ids.as_slice())).collect::<Vec<_>>(), false, sample)?;
    c.opt_strs(&t.iter().map(|x| opt(&x.target)).collect::<Vec<_>>());
    c.opt_ids(&t.iter().map(|x| opt(&x.target_sample_id)).collect::<Vec<_>>(), sample)?;
    c.id_lists(&t.iter().map(|x| x.context_sample_ids.as_deref()).collect::<Vec<_>>(), true, sample)?;
    c.opt_ids(&t.iter().map(|x| opt(&x.from_task)).collect::<Vec<_>>(), ids.get(IdSpace::Task))?;
    c.opt_i32s(&t.iter().map(|x| x.horizon).collect::<Vec<_>>());
    c.opt_strs(&t.iter().map(|x| opt(&x.prompt)).collect::<Vec<_>>());
    c.opt_strs(&t.iter().map(|x| opt(&x.answer)).collect::<Vec<_>>());
    let keys = t.iter().map(|x| (64 + 40 * x.sample_ids.len() as u64, key_hash(&x.task_id, 0)));
    let rel = format!("tasks/task={name}/part-0.parquet");
    write_table(staging, &rel, tables::tasks_schema(ids)?, c, keys, codec, created_by)
}

#[allow(clippy::too_many_arguments)]
fn build_manifest(
    d: &TimeFDataset,
    o: &WriterOptions,
    ids: IdEncodings,
    files: Vec<manifest::FileEntry>,
    shards: usize,
    index: &[IndexRow],
    stats: &BTreeMap<(&str, &str), Partial>,
    derived_from: Option<manifest::DerivedFrom>,
) -> Manifest {
    use manifest::*;
    let mut schema = SchemaBlock::default();
    for m in d.series() {
        schema.add_series(m);
    }
    for (a, _) in d.annotations() {
        schema.add_annotation(a);
    }
    for (name, t) in d.tasks() {
        schema.add_task(name, t);
    }
    schema.sample_metadata =
        d.samples().flat_map(|s| s.metadata.keys().cloned()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut statistics: BTreeMap<String, BTreeMap<String, ChannelStats>> = BTreeMap::new();
    for ((spec, ch), p) in stats {
        statistics.entry(spec.to_string()).or_default().insert(ch.to_string(), p.to_stats());
    }
    let counts = Counts {
        samples: d.samples.len() as u64,
        time_series: d.series.len() as u64,
        chunks: index.len() as u64,
        values: index.iter().map(|r| u64::from(r.n_values)).sum(),
        annotations: d.annotations.len() as u64,
        tasks: d.tasks.iter().map(|(n, t)| (n.clone(), t.len() as u64)).collect(),
        shards: shards as u64,
    };
    Manifest {
        format: FORMAT.to_string(),
        format_version: FORMAT_VERSION,
        dataset: DatasetBlock {
            name: d.info.name.clone(),
            version: d.info.version.clone(),
            description: d.info.description.clone(),
            license: d.info.license.clone(),
            citation: d.info.citation.clone(),
        },
        created_by: CreatedBy {
            crate_version: format!("timef {}", env!("CARGO_PKG_VERSION")),
            parquet: parquet::file::properties::DEFAULT_CREATED_BY.to_string(),
        },
        schema,
        counts,
        id_encoding: IdSpace::ALL.iter().map(|s| (s.name().to_string(), ids.get(*s).as_str().to_string())).collect(),
        files,
        writer: WriterBlock::from_options(o),
        sources: d
            .sources()
            .map(|s| SourceEntry {
                source_id: s.source_id.clone(),
                name: s.name.clone(),
                url: s.url.clone(),
                license: s.license.clone(),
                citation: s.citation.clone(),
            })
            .collect(),
        statistics,
        derived_from,
        manifest_sha256: None,
    }
    .sealed()
}
