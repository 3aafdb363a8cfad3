//! A `values` column chunk assembled from pages as stored: pages copied from
//! a base shard and pages just encoded, in page-plan order, with the column
//! chunk's metadata, column index and offset index built from the pages'
//! own figures, as the parquet crate's column writer builds them
//! (`docs/format.md` §7, "Cost follows the change").
//!
//! A copied page is never decompressed: its header gives its sizes and
//! number of levels, the base's column index its minimum, maximum, null and
//! NaN counts and level histograms. What the column writer derives from its
//! pages is derived here from the same figures in the same way: the chunk's
//! minimum and maximum fold the pages' in IEEE 754 total order, a NaN giving
//! way to any number (the crate's `update_min`/`update_max` over page
//! statistics), level histograms and
//! counts add up, and the column index's boundary order is ascending while no
//! page's minimum or maximum falls below the previous page's, else descending
//! while none rises, else unordered. So the bytes are those of a fresh write.

use bytes::Bytes;
use parquet::basic::{BoundaryOrder, Compression, Encoding, EncodingMask, PageType, Type as PhysicalType};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::{ColumnChunkMetaData, ColumnIndexBuilder, LevelHistogram, PageEncodingStats};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::schema::types::ColumnDescPtr;

use crate::encoding::{ChunkBytes, EncodedChunk};
use crate::thrift::{PageHeader, PageKind};

/// One `values` page as stored (header and body) with the figures its column
/// chunk's metadata needs.
#[derive(Clone)]
pub(crate) struct StoredPage {
    /// Header and body, as stored.
    pub(crate) bytes: Bytes,
    /// Header plus uncompressed body size.
    pub(crate) uncompressed_bytes: i64,
    /// Levels in the page (the header's `num_values`).
    pub(crate) num_values: i64,
    /// Rows (lists) in the page.
    pub(crate) rows: i64,
    /// The values' encoding.
    pub(crate) encoding: Encoding,
    pub(crate) min: f32,
    pub(crate) max: f32,
    pub(crate) null_count: i64,
    pub(crate) nan_count: Option<i64>,
    pub(crate) repetition_histogram: Option<Vec<i64>>,
    pub(crate) definition_histogram: Option<Vec<i64>>,
}

/// Why a page's figures could not be read.
pub(crate) type Problem = String;

impl StoredPage {
    /// Page `k` of a `values` column chunk: `bytes` its header and body as
    /// stored, `rows` its rows, the rest from `index`, the chunk's column
    /// index, but the minimum and maximum when `extremes` gives them. A
    /// stored column index's zero extremes are rewritten (a zero minimum is
    /// -0.0, [`crate::float_order`]), so a base page's come from its rows'
    /// index statistics, which are in total order as the column writer's are.
    pub(crate) fn new(
        bytes: Bytes,
        rows: i64,
        index: &ColumnIndexMetaData,
        k: usize,
        extremes: Option<(f32, f32)>,
    ) -> Result<StoredPage, Problem> {
        let (header, header_len) = PageHeader::decode(&bytes).map_err(|e| format!("page {k}: {e}"))?;
        let PageKind::Data { num_values, encoding, .. } = header.kind else {
            return Err(format!("page {k} is not a v1 data page"));
        };
        let ColumnIndexMetaData::FLOAT(floats) = index else {
            return Err("the column index is not float32".into());
        };
        let (min, max) = match (extremes, floats.min_value(k), floats.max_value(k)) {
            (Some(given), _, _) => given,
            (None, Some(&min), Some(&max)) => (min, max),
            _ => return Err(format!("page {k} has no minimum and maximum in the column index")),
        };
        Ok(StoredPage {
            uncompressed_bytes: header_len as i64 + i64::from(header.uncompressed_page_size),
            bytes,
            num_values: i64::from(num_values),
            rows,
            encoding,
            min,
            max,
            null_count: index.null_count(k).unwrap_or(0),
            nan_count: index.nan_count(k),
            repetition_histogram: index.repetition_level_histogram(k).map(<[i64]>::to_vec),
            definition_histogram: index.definition_level_histogram(k).map(<[i64]>::to_vec),
        })
    }
}

/// The column chunk of `pages` (in order) of leaf `descr`, compressed with
/// `codec`; its bytes are the pages' own buffers, end to end, not a copy.
pub(crate) fn splice(
    descr: ColumnDescPtr,
    codec: Compression,
    pages: Vec<StoredPage>,
) -> Result<EncodedChunk, Problem> {
    let mut bytes = ChunkBytes::default();
    let mut offset = 0i64;
    let mut locations = Vec::with_capacity(pages.len());
    let mut index = ColumnIndexBuilder::new(PhysicalType::FLOAT);
    let (mut ascending, mut descending) = (true, true);
    let (mut uncompressed, mut num_values, mut rows, mut nulls) = (0i64, 0i64, 0i64, 0u64);
    let mut nans: Option<u64> = None;
    let mut extremes: Option<(f32, f32)> = None;
    let mut last: Option<(f32, f32)> = None;
    let (mut repetition, mut definition): (Option<Vec<i64>>, Option<Vec<i64>>) = (None, None);
    let mut encodings = vec![Encoding::RLE];
    let mut encoding_stats: Vec<PageEncodingStats> = Vec::new();
    let greater = |a: f32, b: f32| a.total_cmp(&b).is_gt();
    for p in &pages {
        locations.push(PageLocation {
            offset,
            compressed_page_size: i32::try_from(p.bytes.len()).map_err(|_| "a page past 2 GiB".to_string())?,
            first_row_index: rows,
        });
        offset += p.bytes.len() as i64;
        bytes.push(p.bytes.clone());
        uncompressed += p.uncompressed_bytes;
        num_values += p.num_values;
        rows += p.rows;
        nulls += p.null_count as u64;
        if let Some(n) = p.nan_count {
            *nans.get_or_insert(0) += n as u64;
        }
        if !encodings.contains(&p.encoding) {
            encodings.push(p.encoding);
        }
        match encoding_stats.last_mut() {
            Some(s) if s.encoding == p.encoding => s.count += 1,
            _ => encoding_stats.push(PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: p.encoding,
                count: 1,
            }),
        }
        // the crate's `update_min`/`update_max`: a NaN gives way to a number and never displaces one
        let takes = |new: f32, old: f32, wins: bool| match (old.is_nan(), new.is_nan()) {
            (true, false) => true,
            (false, true) => false,
            _ => wins,
        };
        extremes = Some(match extremes {
            None => (p.min, p.max),
            Some((min, max)) => (
                if takes(p.min, min, greater(min, p.min)) { p.min } else { min },
                if takes(p.max, max, greater(p.max, max)) { p.max } else { max },
            ),
        });
        if let Some((last_min, last_max)) = last {
            ascending &= !(greater(last_min, p.min) || greater(last_max, p.max));
            descending &= !(greater(p.min, last_min) || greater(p.max, last_max));
        }
        last = Some((p.min, p.max));
        index.append(false, p.min.to_le_bytes().to_vec(), p.max.to_le_bytes().to_vec(), p.null_count, p.nan_count);
        let histogram = |h: &Option<Vec<i64>>| h.clone().map(LevelHistogram::from);
        index.append_histograms(&histogram(&p.repetition_histogram), &histogram(&p.definition_histogram));
        for (sum, page) in [(&mut repetition, &p.repetition_histogram), (&mut definition, &p.definition_histogram)] {
            if let Some(page) = page {
                let sum = sum.get_or_insert_with(|| vec![0; page.len()]);
                sum.iter_mut().zip(page).for_each(|(s, v)| *s += v);
            }
        }
    }
    index.set_boundary_order(match (ascending, descending) {
        (true, _) => BoundaryOrder::ASCENDING,
        (false, true) => BoundaryOrder::DESCENDING,
        (false, false) => BoundaryOrder::UNORDERED,
    });
    let column_index = index.build().map_err(|e| e.to_string())?;
    let (min, max) = extremes.map_or((None, None), |(min, max)| (Some(min), Some(max)));
    let statistics: Statistics = ValueStatistics::<f32>::new(min, max, None, Some(nulls), false)
        .with_nan_count(nans)
        .with_backwards_compatible_min_max(descr.sort_order().is_signed())
        .into();
    let total = offset;
    let metadata = ColumnChunkMetaData::builder(descr)
        .set_compression(codec)
        .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
        .set_page_encoding_stats(encoding_stats)
        .set_total_compressed_size(total)
        .set_total_uncompressed_size(uncompressed)
        .set_num_values(num_values)
        .set_data_page_offset(0)
        .set_dictionary_page_offset(None)
        .set_statistics(statistics)
        .set_unencoded_byte_array_data_bytes(None)
        .set_repetition_level_histogram(repetition.map(LevelHistogram::from))
        .set_definition_level_histogram(definition.map(LevelHistogram::from))
        .build()
        .map_err(|e| e.to_string())?;
    let close = ColumnCloseResult {
        bytes_written: total as u64,
        rows_written: rows as u64,
        metadata,
        bloom_filter: None,
        column_index: Some(column_index),
        offset_index: Some(OffsetIndexMetaData { page_locations: locations, unencoded_byte_array_data_bytes: None }),
    };
    Ok(EncodedChunk { bytes, close })
}
