//! The version's small tables (index, samples, annotations, tasks) and its
//! manifest, written by the commit of every write, single-machine or
//! distributed (FORMAT-BRIEF §3, §4; `docs/format.md` §1).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use super::index_rows::{Field, IndexRows};
use super::shards::{ParquetFile, SeriesKeys};
use super::{decide_ids, WriteProgressEvent, WriterOptions};
use crate::dataset::TimeFDataset;
use crate::encoding::{encode_leaf_pages, Codec, FileSchema, LeafBuilder, LeafData};
use crate::error::Result;
use crate::layout::key_hash;
use crate::layout::shard_path;
use crate::manifest::{self, Manifest};
use crate::stats::Partial;
use crate::storage::Staging;
use crate::tables::{self, IdEncodings, IdSpace};

/// The shards of a write, ready for the commit.
pub(crate) struct SeriesOutput {
    /// Shard files in shard order.
    pub(crate) files: Vec<manifest::FileEntry>,
    /// Every index row in chunk order.
    pub(crate) index: IndexRows,
    /// The series in write order (index rows name them by position).
    pub(crate) keys: Arc<SeriesKeys>,
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
/// then stages the manifest. Channel statistics merge the chunks' statistics
/// as the index stores them ([`Partial::as_stored`]) in index order: the same
/// inputs in the same order, so the same bits, whoever computed them.
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
    let SeriesOutput { files: shard_files, index, keys } = series;
    let shards = shard_files.len();
    let mut files = shard_files;
    files.push(write_index(staging, &keys, &index, ids, codec, created_by)?);
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
    let mut values = 0u64;
    index.for_each(|r| {
        stats
            .entry((keys.spec_type(r.series), keys.channel(r.series)))
            .or_default()
            .merge(&Partial::as_stored(&r.stats));
        values += u64::from(r.n_values);
        Ok(())
    })?;
    let chunks = IndexCounts { chunks: index.len() as u64, values };
    let manifest = build_manifest(dataset, options, ids, files, shards, chunks, &stats, derived_from);
    staging.stage_manifest(manifest.to_bytes())?;
    Ok(manifest)
}

/// Writes a small table as one row group (none when empty): `hashes` are the
/// rows' key hashes in row order, `leaves` build each leaf column (schema
/// order) a range of rows at a time. Each leaf is cut into pages by its own
/// bytes at rows the key hashes select and encoded a page at a time
/// ([`encode_leaf_pages`]; `docs/format.md` §4, "Small tables"), leaves in
/// parallel.
fn write_table(
    staging: &mut Staging,
    rel: &str,
    schema: FileSchema,
    hashes: &[u64],
    leaves: Vec<LeafBuilder<'_>>,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let props = schema.properties(codec, created_by)?;
    let schema = Arc::new(schema);
    let mut file = ParquetFile::create(&mut *staging, rel, Arc::clone(&schema), &props)?;
    if !hashes.is_empty() {
        use rayon::prelude::*;
        let chunks = crate::runtime::compute_pool()?.install(|| {
            leaves
                .par_iter()
                .enumerate()
                .map(|(i, build)| encode_leaf_pages(rel, schema.descr.column(i), &props, hashes, build))
                .collect::<Result<Vec<_>>>()
        })?;
        file.append_row_group(chunks)?;
    }
    file.finish(&*staging)
}

fn opt(s: &Option<String>) -> Option<&str> {
    s.as_deref()
}

/// A leaf builder from a closure over a row range.
fn leaf<'a>(f: impl Fn(Range<usize>) -> Result<LeafData> + Sync + 'a) -> LeafBuilder<'a> {
    Box::new(f)
}

/// As [`leaf`], for a builder that cannot fail.
fn plain<'a>(f: impl Fn(Range<usize>) -> LeafData + Sync + 'a) -> LeafBuilder<'a> {
    Box::new(move |r| Ok(f(r)))
}

fn write_index(
    staging: &mut Staging,
    keys: &SeriesKeys,
    index: &IndexRows,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let cols = &*keys.columns;
    let enc = ids.get(IdSpace::TimeSeries);
    // each leaf reads one field of its page's rows (index_rows.rs): its own,
    // or the series' position to look the series' metadata up
    let u32s = move |r: Range<usize>, f: Field| index.column::<u32>(r, f);
    let f64s = move |r: Range<usize>, f: Field| index.column::<f64>(r, f);
    let series = move |r: Range<usize>| Ok(u32s(r, Field::Series)?.into_iter().map(|s| keys.row(s)));
    let i32s = move |r: Range<usize>, f: Field| Ok(tables::i32s(u32s(r, f)?.into_iter().map(|x| x as i32).collect()));
    let leaves = vec![
        leaf(move |r| tables::ids(series(r)?.map(|x| cols.id(x)), enc)),
        leaf(move |r| i32s(r, Field::ChunkIdx)),
        leaf(move |r| Ok(tables::strs(series(r)?.map(|x| cols.spec_type(x))))),
        leaf(move |r| Ok(tables::strs(series(r)?.map(|x| cols.channel(x))))),
        leaf(move |r| Ok(tables::opt_strs(&series(r)?.map(|x| cols.units(x)).collect::<Vec<_>>()))),
        leaf(move |r| Ok(tables::f64s(series(r)?.map(|x| cols.sampling_rate_hz(x)).collect()))),
        leaf(move |r| Ok(tables::f64s(series(r)?.map(|x| cols.t_start_s(x)).collect()))),
        leaf(move |r| Ok(tables::opt_f64s(&series(r)?.map(|x| cols.t_end_s(x)).collect::<Vec<_>>()))),
        leaf(move |r| {
            let offsets = index.column::<u64>(r, Field::ValueOffset)?;
            Ok(tables::i64s(offsets.into_iter().map(|x| x as i64).collect()))
        }),
        leaf(move |r| i32s(r, Field::NValues)),
        leaf(move |r| {
            // a page's rows lie in a few shards, one after another
            let shards = u32s(r, Field::Shard)?;
            let mut paths = BTreeMap::new();
            for &s in &shards {
                paths.entry(s).or_insert_with(|| shard_path(s));
            }
            Ok(tables::strs(shards.iter().map(|s| paths[s].as_str())))
        }),
        leaf(move |r| i32s(r, Field::RowGroup)),
        leaf(move |r| i32s(r, Field::RowOffset)),
        leaf(move |r| Ok(tables::f32s(f64s(r, Field::Min)?.into_iter().map(|x| x as f32).collect()))),
        leaf(move |r| Ok(tables::f32s(f64s(r, Field::Max)?.into_iter().map(|x| x as f32).collect()))),
        leaf(move |r| Ok(tables::f64s(f64s(r, Field::Mean)?))),
        leaf(move |r| Ok(tables::f64s(f64s(r, Field::Std)?))),
    ];
    let mut hashes: Vec<u64> = Vec::with_capacity(index.len());
    index.for_each(|x| {
        hashes.push(key_hash(keys.id(x.series), x.chunk_idx));
        Ok(())
    })?;
    write_table(staging, "time_series_index.parquet", tables::index_schema(ids)?, &hashes, leaves, codec, created_by)
}

fn write_samples(
    staging: &mut Staging,
    d: &TimeFDataset,
    ids: IdEncodings,
    codec: Codec,
    created_by: &str,
) -> Result<manifest::FileEntry> {
    let (c, series) = (&d.samples, &*d.series);
    let order = c.ids.by_id();
    let s = order.as_slice();
    let (sample, source, subject) = (ids.get(IdSpace::Sample), ids.get(IdSpace::Source), ids.get(IdSpace::Subject));
    let series_enc = ids.get(IdSpace::TimeSeries);
    let rows = move |r: Range<usize>| s[r].iter().map(|&x| x as usize);
    let ref_lens = move |r: Range<usize>| rows(r).map(|x| c.refs_of(x).len()).collect::<Vec<_>>();
    let refs = move |r: Range<usize>| rows(r).flat_map(|x| c.refs_of(x));
    let empty = BTreeMap::new();
    let empty = &empty;
    let metadata = move |r: Range<usize>| rows(r).map(|x| c.metadata(x).unwrap_or(empty)).collect::<Vec<_>>();
    let leaves = vec![
        leaf(move |r| tables::ids(rows(r).map(|x| c.id(x)), sample)),
        leaf(move |r| tables::ids(rows(r).map(|x| c.source_id(x)), source)),
        leaf(move |r| tables::opt_ids(&rows(r).map(|x| c.subject_id(x)).collect::<Vec<_>>(), subject)),
        plain(move |r| tables::opt_f64s(&rows(r).map(|x| c.t_start_s(x)).collect::<Vec<_>>())),
        plain(move |r| tables::opt_f64s(&rows(r).map(|x| c.t_end_s(x)).collect::<Vec<_>>())),
        leaf(move |r| tables::series_ref_ids(&ref_lens(r.clone()), refs(r).map(|k| c.ref_id(k, series)), series_enc)),
        plain(move |r| tables::series_ref_views(&ref_lens(r.clone()), refs(r).map(|k| c.ref_view(k)))),
        plain(move |r| tables::key_value_leaf(&metadata(r), true)),
        plain(move |r| tables::key_value_leaf(&metadata(r), false)),
    ];
    let hashes: Vec<u64> = s.iter().map(|&x| key_hash(c.id(x as usize), 0)).collect();
    write_table(staging, "samples.parquet", tables::samples_schema(ids)?, &hashes, leaves, codec, created_by)
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
    let rows = rows.as_slice();
    let (sample, annotation) = (ids.get(IdSpace::Sample), ids.get(IdSpace::Annotation));
    let leaves = vec![
        leaf(move |r| tables::ids(rows[r].iter().map(|x| x.0), sample)),
        leaf(move |r| tables::ids(rows[r].iter().map(|x| x.1.annotation_id.as_str()), annotation)),
        plain(move |r| tables::strs(rows[r].iter().map(|x| x.1.annotation_type.as_str()))),
        plain(move |r| tables::strs(rows[r].iter().map(|x| x.1.key.as_str()))),
        plain(move |r| tables::opt_strs(&rows[r].iter().map(|x| opt(&x.1.value_str)).collect::<Vec<_>>())),
        plain(move |r| tables::opt_f64s(&rows[r].iter().map(|x| x.1.value_num).collect::<Vec<_>>())),
        plain(move |r| tables::opt_f64s(&rows[r].iter().map(|x| x.1.t_start_s).collect::<Vec<_>>())),
        plain(move |r| tables::opt_f64s(&rows[r].iter().map(|x| x.1.t_end_s).collect::<Vec<_>>())),
        plain(move |r| tables::opt_strs(&rows[r].iter().map(|x| opt(&x.1.channel)).collect::<Vec<_>>())),
    ];
    let hashes: Vec<u64> = rows.iter().map(|x| key_hash(x.0, 0) ^ key_hash(&x.1.annotation_id, 0)).collect();
    write_table(staging, "annotations.parquet", tables::annotations_schema(ids)?, &hashes, leaves, codec, created_by)
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
    let t = t.as_slice();
    let (sample, task) = (ids.get(IdSpace::Sample), ids.get(IdSpace::Task));
    let leaves = vec![
        leaf(move |r| tables::ids(t[r].iter().map(|x| x.task_id.as_str()), task)),
        plain(move |r| tables::strs(t[r].iter().map(|x| x.task_type.as_str()))),
        plain(move |r| tables::opt_strs(&t[r].iter().map(|x| opt(&x.split)).collect::<Vec<_>>())),
        leaf(move |r| {
            tables::id_lists(&t[r].iter().map(|x| Some(x.sample_ids.as_slice())).collect::<Vec<_>>(), false, sample)
        }),
        plain(move |r| tables::opt_strs(&t[r].iter().map(|x| opt(&x.target)).collect::<Vec<_>>())),
        leaf(move |r| tables::opt_ids(&t[r].iter().map(|x| opt(&x.target_sample_id)).collect::<Vec<_>>(), sample)),
        leaf(move |r| {
            tables::id_lists(&t[r].iter().map(|x| x.context_sample_ids.as_deref()).collect::<Vec<_>>(), true, sample)
        }),
        leaf(move |r| tables::opt_ids(&t[r].iter().map(|x| opt(&x.from_task)).collect::<Vec<_>>(), task)),
        plain(move |r| tables::opt_i32s(&t[r].iter().map(|x| x.horizon).collect::<Vec<_>>())),
        plain(move |r| tables::opt_strs(&t[r].iter().map(|x| opt(&x.prompt)).collect::<Vec<_>>())),
        plain(move |r| tables::opt_strs(&t[r].iter().map(|x| opt(&x.answer)).collect::<Vec<_>>())),
    ];
    let hashes: Vec<u64> = t.iter().map(|x| key_hash(&x.task_id, 0)).collect();
    let rel = format!("tasks/task={name}/part-0.parquet");
    write_table(staging, &rel, tables::tasks_schema(ids)?, &hashes, leaves, codec, created_by)
}

/// Totals of the index rows, for the manifest's counts.
struct IndexCounts {
    chunks: u64,
    values: u64,
}

#[allow(clippy::too_many_arguments)]
fn build_manifest(
    d: &TimeFDataset,
    o: &WriterOptions,
    ids: IdEncodings,
    files: Vec<manifest::FileEntry>,
    shards: usize,
    index: IndexCounts,
    stats: &BTreeMap<(&str, &str), Partial>,
    derived_from: Option<manifest::DerivedFrom>,
) -> Manifest {
    use manifest::*;
    let mut schema = SchemaBlock::default();
    // the block is sorted and counted, so any order of the series gives it
    let series = &*d.series;
    for row in 0..series.len() {
        let (spec_type, channel) = (series.spec_type(row), series.channel(row));
        schema.add_channel_series(spec_type, channel, series.units(row), series.sampling_rate_hz(row));
    }
    for (a, _) in d.annotations() {
        schema.add_annotation(a);
    }
    for (name, t) in d.tasks() {
        schema.add_task(name, t);
    }
    schema.sample_metadata =
        d.samples.metadata_maps().flat_map(|m| m.keys().cloned()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut statistics: BTreeMap<String, BTreeMap<String, ChannelStats>> = BTreeMap::new();
    for ((spec, ch), p) in stats {
        statistics.entry(spec.to_string()).or_default().insert(ch.to_string(), p.to_stats());
    }
    let counts = Counts {
        samples: d.sample_count() as u64,
        time_series: d.series_count() as u64,
        chunks: index.chunks,
        values: index.values,
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
