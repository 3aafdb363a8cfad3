//! The pages of the shards' `values` column (a required list of required
//! float32, BYTE_STREAM_SPLIT, zstd), encoded here rather than through the
//! parquet crate's column writer: the hot loop of every write, one pass over
//! a page's values for its byte streams and its statistics, the levels as
//! runs, one zstd context a thread (`docs/format.md` §5, "Decision").
//!
//! The bytes are the column writer's (v1 data page: repetition levels,
//! definition levels, each RLE with its 4-byte length, then the values'
//! four byte streams; compressed whole as the crate's zstd codec does; the
//! header as [`crate::thrift::write_page_header`] writes it), and so are the
//! figures [`super::page_splice::splice`] builds the chunk's metadata and
//! page index from: minimum and maximum in IEEE 754 total order with NaN
//! skipped while any other value is present (the crate's `update_min` and
//! `update_max`), NaN count, level histograms. The tests below hold the two
//! encoders to the same bytes and the same figures, bit for bit.

use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::schema::types::ColumnDescPtr;

use super::page_splice::{Problem, StoredPage};
use crate::encoding::PagePlan;
use crate::error::{Error, Result};

/// How the `values` column is compressed: zstd at the file properties'
/// level, recorded as that codec in the column chunk's metadata.
pub(crate) struct ValuesCodec {
    codec: Compression,
    level: i32,
}

impl ValuesCodec {
    /// The codec of leaf `descr` in the file properties `props`; an error
    /// unless it is zstd (FORMAT-BRIEF §3).
    pub(crate) fn new(props: &WriterPropertiesPtr, descr: &ColumnDescPtr) -> Result<ValuesCodec> {
        let codec = props.compression(descr.path());
        let Compression::ZSTD(level) = codec else {
            return Err(Error::parquet(
                "time_series",
                parquet::errors::ParquetError::General(format!(
                    "the values column is compressed with {codec:?}, not ZSTD"
                )),
            ));
        };
        Ok(ValuesCodec { codec, level: level.compression_level() })
    }

    /// The codec the column chunk's metadata records.
    pub(crate) fn compression(&self) -> Compression {
        self.codec
    }
}

/// A thread's working state for [`encode`]: made once a thread, not
/// once a row group (a zstd context's tables and buffers are about a MiB,
/// faulted in anew by each fresh one). A context's output depends only on
/// the level and the input, never on what it compressed before.
struct Scratch {
    level: i32,
    zstd: zstd::bulk::Compressor<'static>,
    /// A page before compression.
    page: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// The `values` pages of one row group: `rows` are its chunks' values in
/// row order, `pages` the rows of each page. Returns the pages (each its
/// header and body) in page order, and what `before_page` returned for
/// each. A chunk without values is an error (a fresh write never makes one,
/// `layout::chunk_count`). `before_page` is called with the rows of each
/// page (indexes into `rows`) right before the page is encoded, on the same
/// thread, so what it reads of them the encoder reads again from cache.
///
/// With `parallel`, pages are encoded in parallel on the current rayon pool
/// (the writer's compute pool), so the last row group of a write does not
/// leave a core idle while one thread encodes it; this thread takes up no
/// later row group while it waits for its pages ([`crate::runtime::map_on_pool`]
/// says how, and the two short windows it leaves). Otherwise on this thread
/// (while row groups keep every thread busy, stealing a row group's pages
/// would only delay the row group the shard appends next). A page's bytes
/// depend only on its rows and the level (a zstd context's output never
/// depends on what it compressed before): the same on any thread.
pub(crate) fn encode<T: Send>(
    codec: &ValuesCodec,
    rows: &[&[f32]],
    pages: &PagePlan,
    parallel: bool,
    before_page: &(dyn Fn(std::ops::Range<usize>) -> T + Sync),
) -> Result<(Vec<StoredPage>, Vec<T>), Problem> {
    let mut spans = Vec::with_capacity(pages.len());
    let mut start = 0;
    for &n in pages {
        if rows.get(start..start + n).is_none() {
            return Err("a page plan past its rows".into());
        }
        spans.push(start..start + n);
        start += n;
    }
    let one = |span: std::ops::Range<usize>| {
        let took = before_page(span.clone());
        with_scratch(codec.level, |s| encode_page(s, &rows[span])).map(|page| (page, took))
    };
    let encoded = match parallel {
        // every page's result, so a failure is the first page's in page order, as on one thread
        true => crate::runtime::map_on_pool(spans, one).into_iter().collect::<Result<Vec<_>, Problem>>()?,
        false => spans.into_iter().map(one).collect::<Result<Vec<_>, Problem>>()?,
    };
    Ok(encoded.into_iter().unzip())
}

/// Runs `f` with this thread's [`Scratch`] for zstd level `level`, made when
/// the thread has none (or one of another level).
fn with_scratch<R>(level: i32, f: impl FnOnce(&mut Scratch) -> Result<R, Problem>) -> Result<R, Problem> {
    let mut scratch = match SCRATCH.with(|s| s.borrow_mut().take()) {
        Some(s) if s.level == level => s,
        _ => Scratch {
            level,
            zstd: zstd::bulk::Compressor::new(level).map_err(|e| format!("zstd level {level}: {e}"))?,
            page: Vec::new(),
        },
    };
    let result = f(&mut scratch);
    // a thread outlives the write (rayon's workers, the process): it keeps
    // the buffer of an ordinary page, never that of an outsized one
    if scratch.page.capacity() > KEPT_BUFFER_BYTES {
        scratch.page = Vec::new();
    }
    SCRATCH.with(|s| *s.borrow_mut() = Some(scratch));
    result
}

/// The largest page buffer a thread keeps from one page to the next: twice
/// the page size the cuts aim at ([`crate::layout::PAGE_MAX_BYTES`]), so a
/// page of one chunk larger than that is encoded in a buffer of its own.
const KEPT_BUFFER_BYTES: usize = 2 * crate::layout::PAGE_MAX_BYTES as usize;

/// Room before a page's compressed body for its header: a v1 data page
/// header is at most 51 bytes (8 i32 fields of at most 6 bytes each in the
/// compact protocol, the sub-header's field header and two stops).
const HEADER_ROOM_BYTES: usize = 64;

/// A page's figures besides its bytes.
struct Figures {
    num_values: u32,
    rows: usize,
    min: f32,
    max: f32,
    nans: i64,
    repetition: [i64; 2],
}

/// One page of `rows`: its uncompressed bytes and figures ([`raw_page`]),
/// compressed whole, after its header.
fn encode_page(s: &mut Scratch, rows: &[&[f32]]) -> Result<StoredPage, Problem> {
    let f = raw_page(&mut s.page, rows)?;
    // The body is compressed straight into the page's own buffer, after room
    // for its header, not into a thread's buffer and then copied: the copy
    // (glibc's memcpy) first-touched each fresh page of the buffer by a read
    // and then a write, a copy-on-write fault of the zero page with a TLB
    // shootdown each, about 5% of a 32 MiB write on a 2-core VM.
    let bound = HEADER_ROOM_BYTES + zstd::zstd_safe::compress_bound(s.page.len());
    let mut out = std::io::Cursor::new(Vec::with_capacity(bound));
    out.set_position(HEADER_ROOM_BYTES as u64);
    s.zstd.compress_to_buffer(&s.page[..], &mut out).map_err(|e| format!("zstd: {e}"))?;
    let mut stored = out.into_inner();
    let header = crate::thrift::data_page_header(
        s.page.len(),
        &stored[HEADER_ROOM_BYTES..],
        f.num_values,
        Encoding::BYTE_STREAM_SPLIT,
        (Encoding::RLE, Encoding::RLE),
    )
    .map_err(|e| e.to_string())?;
    let start = HEADER_ROOM_BYTES
        .checked_sub(header.len())
        .ok_or_else(|| format!("a page header of {} bytes, past the room of {HEADER_ROOM_BYTES}", header.len()))?;
    stored[start..HEADER_ROOM_BYTES].copy_from_slice(&header);
    // shrinking gives back the bound's unused tail (glibc's realloc to a
    // smaller size shrinks in place: the bytes are not moved)
    stored.shrink_to_fit();
    Ok(StoredPage {
        bytes: Bytes::from(stored).slice(start..),
        uncompressed_bytes: (header.len() + s.page.len()) as i64,
        num_values: i64::from(f.num_values),
        rows: f.rows as i64,
        encoding: Encoding::BYTE_STREAM_SPLIT,
        min: f.min,
        max: f.max,
        null_count: 0,
        nan_count: Some(f.nans),
        repetition_histogram: Some(f.repetition.to_vec()),
        definition_histogram: Some(vec![0, i64::from(f.num_values)]),
    })
}

/// Writes the uncompressed page of `rows` into `page`: repetition levels (0
/// at each row's first value, else 1), definition levels (all 1), then the
/// four byte streams of the values; returns its figures.
fn raw_page(page: &mut Vec<u8>, rows: &[&[f32]]) -> Result<Figures, Problem> {
    let n: usize = rows.iter().map(|r| r.len()).sum();
    let num_values = u32::try_from(n).map_err(|_| format!("a page of {n} values"))?;
    if rows.iter().any(|r| r.is_empty()) {
        return Err("a chunk without values".into());
    }
    page.clear();
    let mut rep = Levels::new(page);
    for row in rows {
        rep.put_run(0, 1);
        rep.put_run(1, row.len() - 1);
    }
    rep.finish();
    let mut def = Levels::new(page);
    def.put_run(1, n);
    def.finish();
    let repetition = [rows.len() as i64, (n - rows.len()) as i64];
    let at = page.len();
    page.resize(at + 4 * n, 0);
    let (b0, rest) = page[at..].split_at_mut(n);
    let (b1, rest) = rest.split_at_mut(n);
    let (b2, b3) = rest.split_at_mut(n);
    let mut extremes = Extremes::default();
    let mut i = 0;
    for row in rows {
        let end = i + row.len();
        extremes.split(row, &mut b0[i..end], &mut b1[i..end], &mut b2[i..end], &mut b3[i..end]);
        i = end;
    }
    let (min, max) = match extremes.nans == n as i64 {
        false => (from_key(extremes.min), from_key(extremes.max)),
        // only NaN: the crate's fold compares NaNs among themselves in total order
        true => {
            let all = || rows.iter().flat_map(|r| r.iter().copied());
            let min = all().min_by(f32::total_cmp).unwrap_or(f32::NAN);
            (min, all().max_by(f32::total_cmp).unwrap_or(f32::NAN))
        }
    };
    Ok(Figures { num_values, rows: rows.len(), min, max, nans: extremes.nans, repetition })
}

/// Values in a bit-packed group of the RLE/bit-packing hybrid.
const GROUP: usize = 8;
/// Groups in one bit-packed run at most, less one (the crate's encoder closes
/// a run when it would reach 64 groups).
const MAX_GROUPS: usize = 1 << 6;

/// The levels (0 or 1, bit width 1) of a v1 data page in the RLE/bit-packing
/// hybrid with their 4-byte length (Parquet "Encodings", RLE), decided run by
/// run as the parquet crate's `RleEncoder` decides them, so the bytes are
/// its bytes: a value repeated 8 times ends the bit-packed run before it and
/// becomes an RLE run, groups of 8 are bit-packed, a run stops at 63 groups,
/// and the last partial group is padded with zeros.
struct Levels<'a> {
    out: &'a mut Vec<u8>,
    /// Where the length goes.
    at: usize,
    pending: Vec<u8>,
    current: u8,
    repeat: usize,
}

impl<'a> Levels<'a> {
    fn new(out: &'a mut Vec<u8>) -> Levels<'a> {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        Levels { out, at, pending: Vec::with_capacity(MAX_GROUPS * GROUP), current: 0, repeat: 0 }
    }

    /// `count` levels `value`: one at a time until the run is an RLE run,
    /// then all at once.
    fn put_run(&mut self, value: u8, mut count: usize) {
        while count > 0 && !(self.repeat >= GROUP && self.current == value) {
            self.put(value);
            count -= 1;
        }
        self.repeat += count;
    }

    fn put(&mut self, value: u8) {
        if self.current == value {
            self.repeat += 1;
            if self.repeat > GROUP {
                return;
            }
        } else {
            if self.repeat >= GROUP {
                self.rle_run();
            }
            self.repeat = 1;
            self.current = value;
        }
        self.pending.push(value);
        if self.pending.len() % GROUP == 0 {
            self.commit_group();
        }
    }

    fn commit_group(&mut self) {
        if self.repeat >= GROUP {
            // the group's values are the start of an RLE run
            self.pending.truncate(self.pending.len() - GROUP);
            if !self.pending.is_empty() {
                self.bit_packed_run();
            }
            return;
        }
        if self.pending.len() / GROUP + 1 >= MAX_GROUPS {
            self.bit_packed_run();
        }
        self.repeat = 0;
    }

    fn rle_run(&mut self) {
        let mut v = (self.repeat as u64) << 1;
        while v >= 0x80 {
            self.out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
        self.out.push(self.current);
        self.pending.clear();
        self.repeat = 0;
    }

    fn bit_packed_run(&mut self) {
        self.out.push((((self.pending.len() / GROUP) << 1) | 1) as u8);
        for group in self.pending.chunks(GROUP) {
            self.out.push(group.iter().enumerate().fold(0u8, |b, (i, &v)| b | (v << i)));
        }
        self.pending.clear();
    }

    /// Ends the levels: the last run, then the length before them.
    fn finish(mut self) {
        if !self.pending.is_empty() || self.repeat > 0 {
            let tail = self.pending.len() % GROUP;
            let all_repeat = self.pending.len() == tail && (self.repeat == tail || tail == 0);
            if self.repeat > 0 && all_repeat {
                self.rle_run();
            } else {
                if tail > 0 {
                    self.pending.resize(self.pending.len() + GROUP - tail, 0);
                }
                if !self.pending.is_empty() {
                    self.bit_packed_run();
                }
            }
        }
        let len = (self.out.len() - self.at - 4) as u32;
        self.out[self.at..self.at + 4].copy_from_slice(&len.to_le_bytes());
    }
}

/// The running extremes of a page, over its values' total-order keys with NaN
/// left out, and its NaN count.
struct Extremes {
    min: i32,
    max: i32,
    nans: i64,
}

impl Default for Extremes {
    fn default() -> Self {
        Extremes { min: i32::MAX, max: i32::MIN, nans: 0 }
    }
}

impl Extremes {
    /// Splits `values` into its four byte streams and takes in its extremes;
    /// on x86-64 with AVX2 the same loop compiled for it (integer and byte
    /// operations only: the same bytes and extremes on every CPU; the tests
    /// below hold the pages to the parquet crate's own encoder).
    fn split(&mut self, values: &[f32], b0: &mut [u8], b1: &mut [u8], b2: &mut [u8], b3: &mut [u8]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2, checked just above
            return unsafe { self.split_avx2(values, b0, b1, b2, b3) };
        }
        self.split_lanes(values, b0, b1, b2, b3)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn split_avx2(&mut self, values: &[f32], b0: &mut [u8], b1: &mut [u8], b2: &mut [u8], b3: &mut [u8]) {
        self.split_lanes(values, b0, b1, b2, b3)
    }

    #[inline(always)]
    fn split_lanes(&mut self, values: &[f32], b0: &mut [u8], b1: &mut [u8], b2: &mut [u8], b3: &mut [u8]) {
        let (mut min, mut max, mut nans) = (self.min, self.max, 0u32);
        for ((((&v, o0), o1), o2), o3) in values.iter().zip(b0).zip(b1).zip(b2).zip(b3) {
            let bits = v.to_bits();
            *o0 = bits as u8;
            *o1 = (bits >> 8) as u8;
            *o2 = (bits >> 16) as u8;
            *o3 = (bits >> 24) as u8;
            // a NaN's key is past both infinities: it can win neither fold
            let nan = v.is_nan();
            let k = key(v);
            min = min.min(if nan { i32::MAX } else { k });
            max = max.max(if nan { i32::MIN } else { k });
            nans += u32::from(nan);
        }
        (self.min, self.max, self.nans) = (min, max, self.nans + i64::from(nans));
    }
}

/// The key `f32::total_cmp` orders by.
#[inline]
fn key(v: f32) -> i32 {
    let bits = v.to_bits() as i32;
    bits ^ (((bits >> 31) as u32) >> 1) as i32
}

/// The float of total-order key `k` (the mapping is its own inverse).
fn from_key(k: i32) -> f32 {
    f32::from_bits((k ^ (((k >> 31) as u32) >> 1) as i32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{Codec, EncodedChunk, IdEncoding, LeafBuilder, LeafData, Values};
    use crate::tables::{shard_schema, IdEncodings};

    /// The chunk of `rows` in pages `plan` by both encoders: the parquet
    /// crate's column writer (zstd as its codec) and [`encode`] spliced.
    fn both(rows: &[Vec<f32>], plan: &[usize]) -> (EncodedChunk, EncodedChunk) {
        let schema = shard_schema(IdEncodings([IdEncoding::String; 6])).expect("schema");
        let props = schema.properties(Codec { zstd_level: 3 }, "timef test").expect("props");
        let descr = schema.descr.column(4);
        let build: LeafBuilder<'_> = Box::new(|range: std::ops::Range<usize>| {
            let page = &rows[range];
            let (mut def, mut rep) = (Vec::new(), Vec::new());
            for r in page {
                def.extend(std::iter::repeat_n(1, r.len()));
                rep.push(0);
                rep.extend(std::iter::repeat_n(1, r.len() - 1));
            }
            let values = Values::F32(page.concat());
            Ok(LeafData { values, def: Some(def), rep: Some(rep) })
        });
        let reference = crate::encoding::encode_pages("t", descr.clone(), &props, plan, &build).expect("reference");
        let codec = ValuesCodec::new(&props, &descr).expect("codec");
        let slices: Vec<&[f32]> = rows.iter().map(|r| &r[..]).collect();
        let pages = encode(&codec, &slices, plan, plan.len() > 1, &|_| ()).expect("pages").0;
        let ours = super::super::page_splice::splice(descr, codec.compression(), pages).expect("splice");
        (reference, ours)
    }

    fn assert_same(rows: &[Vec<f32>], plan: &[usize]) {
        let (reference, ours) = both(rows, plan);
        assert_eq!(joined(&ours), joined(&reference), "page bytes of {plan:?}");
        assert_eq!(format!("{:?}", ours.close.metadata), format!("{:?}", reference.close.metadata));
        assert_eq!(format!("{:?}", ours.close.column_index), format!("{:?}", reference.close.column_index));
        assert_eq!(format!("{:?}", ours.close.offset_index), format!("{:?}", reference.close.offset_index));
        assert_eq!(ours.close.rows_written, reference.close.rows_written);
        assert_eq!(ours.close.bytes_written, reference.close.bytes_written);
        // Debug prints every NaN as "NaN": the extremes compared bit for bit
        assert_eq!(extreme_bits(&ours), extreme_bits(&reference), "extremes' bits of {plan:?}");
    }

    /// A chunk's bytes end to end, as the file writer reads them.
    fn joined(c: &EncodedChunk) -> Vec<u8> {
        use parquet::file::reader::{ChunkReader, Length};
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut c.bytes.get_read(0).expect("read"), &mut bytes).expect("read");
        assert_eq!(bytes.len() as u64, c.bytes.len());
        bytes
    }

    /// The chunk statistics' and column index's minimum and maximum as bits.
    fn extreme_bits(c: &EncodedChunk) -> (Option<Vec<u8>>, Option<Vec<u8>>, Vec<(u32, u32)>) {
        use parquet::file::page_index::column_index::ColumnIndexMetaData;
        let stats = c.close.metadata.statistics().expect("statistics");
        let Some(ColumnIndexMetaData::FLOAT(index)) = &c.close.column_index else { panic!("a float column index") };
        let pages = index
            .min_values()
            .iter()
            .zip(index.max_values())
            .map(|(min, max)| (min.to_bits(), max.to_bits()))
            .collect();
        (stats.min_bytes_opt().map(<[u8]>::to_vec), stats.max_bytes_opt().map(<[u8]>::to_vec), pages)
    }

    /// Deterministic values: a walk with steps of many sizes.
    fn walk(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        let mut v = 0.0f32;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                v += (x % 2001) as f32 / 1000.0 - 1.0;
                v
            })
            .collect()
    }

    #[test]
    fn pages_are_the_column_writers_bytes_and_figures() {
        // one long row a page, many short rows a page, rows of one value
        let long: Vec<Vec<f32>> = (0..3).map(|k| walk(70_000 + k * 13, k as u32)).collect();
        assert_same(&long, &[1, 1, 1]);
        let short: Vec<Vec<f32>> = (0..400).map(|k| walk(1 + k % 37, k as u32)).collect();
        assert_same(&short, &[1, 7, 8, 9, 16, 17, 342]);
        let ones: Vec<Vec<f32>> = (0..20).map(|k| vec![k as f32]).collect();
        assert_same(&ones, &[20]);
        assert_same(&ones, &[3, 5, 12]);
        // levels that never repeat 8 times: bit-packed runs past 63 groups
        let alternating: Vec<Vec<f32>> = (0..700).map(|k| walk(1 + k % 2, k as u32)).collect();
        assert_same(&alternating, &[700]);
        // repeats of exactly 7, 8 and 9 levels, and a partial last group
        let edges: Vec<Vec<f32>> = [8, 9, 10, 1, 1, 7, 3, 8, 2].iter().map(|&n| walk(n, n as u32)).collect();
        assert_same(&edges, &[9]);
        assert_same(&edges, &[1, 1, 1, 1, 1, 1, 1, 1, 1]);
        // row lengths and page plans drawn from a seed
        for seed in 1..40u32 {
            let lens = walk(300, seed);
            let rows: Vec<Vec<f32>> =
                lens.iter().enumerate().map(|(k, v)| walk(1 + (v.to_bits() % 23) as usize, k as u32)).collect();
            let mut plan = Vec::new();
            let mut left = rows.len();
            for (k, v) in walk(300, seed + 99).iter().enumerate() {
                let n = (1 + (v.to_bits() as usize + k) % 70).min(left);
                if n == 0 {
                    break;
                }
                plan.push(n);
                left -= n;
            }
            assert_same(&rows, &plan);
        }
    }

    #[test]
    fn extremes_follow_total_order_and_skip_nan() {
        let nan = f32::NAN;
        let neg_nan = f32::from_bits(0xffc0_0000);
        let rows = vec![
            // zeros of both signs: -0.0 is the lesser
            vec![0.0, -0.0, 0.0],
            vec![-0.0],
            // NaN first, between and last; infinities
            vec![nan, 1.5, neg_nan, -2.5, nan],
            vec![f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE / 2.0],
            // pages of NaN only, of both signs
            vec![nan, neg_nan],
            vec![nan],
            vec![neg_nan, neg_nan],
        ];
        assert_same(&rows, &[1, 1, 1, 1, 1, 1, 1]);
        assert_same(&rows, &[2, 2, 3]);
        assert_same(&rows, &[7]);
    }

    /// A page plan of `rows` rows, pages of 1 to `most` rows drawn from `st`.
    fn random_plan(st: &mut u32, rows: usize, most: usize) -> Vec<usize> {
        let mut plan = Vec::new();
        let mut left = rows;
        while left > 0 {
            let n = (1 + bits(st) as usize % most).min(left);
            plan.push(n);
            left -= n;
        }
        plan
    }

    /// xorshift32 bits.
    fn bits(state: &mut u32) -> u32 {
        *state ^= *state << 13;
        *state ^= *state >> 17;
        *state ^= *state << 5;
        *state
    }

    #[test]
    fn level_runs_at_group_and_run_edges_are_the_crates() {
        // rows of one value only: repetition levels all 0, 1..=1100 of them
        for n in [1, 2, 7, 8, 9, 15, 16, 17, 503, 504, 505, 511, 512, 513, 520, 1100] {
            let rows: Vec<Vec<f32>> = (0..n).map(|k| vec![k as f32]).collect();
            assert_same(&rows, &[n]);
        }
        // rows of two values: levels alternate, bit-packed runs of exactly 62, 63, 64 groups
        for n in [248, 250, 252, 254, 256, 258, 500, 504, 508, 1000, 1008] {
            let rows: Vec<Vec<f32>> = (0..n / 2).map(|k| vec![k as f32, -(k as f32)]).collect();
            assert_same(&rows, &[n / 2]);
        }
        // random row lengths near the group size, random page plans
        let mut st = 0x9e37_79b9u32;
        let choices = [1usize, 1, 1, 2, 3, 6, 7, 8, 9, 10, 15, 16, 17, 63, 64, 65, 504, 505];
        for _ in 0..300 {
            let nrows = 1 + bits(&mut st) as usize % 400;
            let rows: Vec<Vec<f32>> = (0..nrows)
                .map(|_| {
                    let len = choices[bits(&mut st) as usize % choices.len()];
                    (0..len).map(|_| f32::from_bits(bits(&mut st))).collect()
                })
                .collect();
            assert_same(&rows, &random_plan(&mut st, nrows, 200));
        }
    }

    #[test]
    fn any_bits_nan_payloads_and_nan_only_pages_give_the_crates_figures() {
        let mut st = 12345u32;
        let nan = |sign: u32, payload: u32| f32::from_bits(sign << 31 | 0x7f80_0000 | (payload & 0x7f_ffff).max(1));
        for round in 0..200 {
            let nrows = 1 + round % 40;
            let rows: Vec<Vec<f32>> = (0..nrows)
                .map(|r| {
                    let len = 1 + bits(&mut st) as usize % 30;
                    (0..len)
                        .map(|_| match (r + round) % 4 {
                            // only NaN of random signs and payloads
                            0 => nan(bits(&mut st) & 1, bits(&mut st)),
                            // any bits at all
                            1 => f32::from_bits(bits(&mut st)),
                            // zeros, subnormals, infinities
                            2 => [0.0, -0.0, f32::from_bits(1), -f32::from_bits(1), f32::INFINITY, f32::NEG_INFINITY]
                                [bits(&mut st) as usize % 6],
                            _ => f32::from_bits(bits(&mut st) & 0x807f_ffff),
                        })
                        .collect()
                })
                .collect();
            assert_same(&rows, &random_plan(&mut st, nrows, 5));
            assert_same(&rows, &vec![1; nrows]);
        }
        // a chunk whose first and last pages are NaN only, a number between
        let rows = vec![vec![nan(1, 5), nan(0, 9)], vec![3.0], vec![nan(0, 0x7f_ffff)], vec![-0.0], vec![nan(1, 1)]];
        assert_same(&rows, &[1, 1, 1, 1, 1]);
        let rows = vec![vec![nan(0, 3)], vec![nan(1, 3)], vec![nan(0, 1)]];
        assert_same(&rows, &[1, 1, 1]);
    }

    #[test]
    fn rows_past_a_mib_are_the_crates_pages() {
        let long: Vec<Vec<f32>> = vec![walk(300_000, 1), walk(1, 2), walk(262_145, 3), walk(8, 4)];
        assert_same(&long, &[1, 3]);
        assert_same(&long, &[4]);
        assert_same(&long, &[2, 1, 1]);
    }

    #[test]
    fn a_thread_keeps_no_outsized_buffer_after_a_write() {
        // one pool thread: every page is encoded on the thread the checks read
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a pool");
        pool.install(|| {
            let codec = ValuesCodec { codec: Compression::ZSTD(Default::default()), level: 1 };
            // one 64 MiB chunk, one page
            let row: Vec<f32> = walk(16 << 20, 7);
            encode(&codec, &[&row[..]], &[1], false, &|_| ()).expect("pages");
            let kept = SCRATCH.with(|s| s.borrow().as_ref().map(|s| s.page.capacity()));
            assert_eq!(kept, Some(0));
            // an ordinary page's buffer is kept for the next
            let short = walk(1000, 8);
            encode(&codec, &[&short[..]], &[1], false, &|_| ()).expect("pages");
            let kept = SCRATCH.with(|s| s.borrow().as_ref().map(|s| s.page.capacity()));
            assert!(kept.is_some_and(|k| k >= 4000), "{kept:?}");
        });
    }

    #[test]
    fn pages_encoded_in_parallel_are_the_pages_encoded_on_one_thread_in_page_order() {
        let codec = ValuesCodec { codec: Compression::ZSTD(Default::default()), level: 3 };
        let rows: Vec<Vec<f32>> = (0..64).map(|k| walk(500 + 97 * k, k as u32)).collect();
        let slices: Vec<&[f32]> = rows.iter().map(|r| &r[..]).collect();
        let plan: Vec<usize> = vec![1, 7, 3, 20, 1, 1, 31];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        // each page's first row and its thread; a page takes a while, so the
        // other pool thread takes pages too when they are spread
        let first = |page: std::ops::Range<usize>| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            (page.start, std::thread::current().id())
        };
        let (one, one_took) = pool.install(|| encode(&codec, &slices, &plan, false, &first)).expect("pages");
        let (many, many_took) = pool.install(|| encode(&codec, &slices, &plan, true, &first)).expect("pages");
        let starts = |took: &[(usize, std::thread::ThreadId)]| took.iter().map(|t| t.0).collect::<Vec<_>>();
        assert_eq!(starts(&one_took), [0, 1, 8, 11, 31, 32, 33]);
        assert_eq!(starts(&many_took), starts(&one_took));
        let threads = |took: &[(usize, std::thread::ThreadId)]| {
            took.iter().map(|t| t.1).collect::<std::collections::HashSet<_>>().len()
        };
        assert_eq!((threads(&one_took), threads(&many_took)), (1, 2));
        assert_eq!(one.len(), plan.len());
        for (a, b) in one.iter().zip(&many) {
            assert_eq!(a.bytes, b.bytes);
            let figures = |p: &StoredPage| (p.rows, p.num_values, p.min.to_bits(), p.max.to_bits(), p.nan_count);
            assert_eq!(figures(a), figures(b));
        }
        assert_eq!(one.iter().map(|p| p.rows).collect::<Vec<_>>(), [1, 7, 3, 20, 1, 1, 31]);
    }

    #[test]
    fn a_chunk_without_values_is_refused_also_when_pages_are_encoded_in_parallel() {
        let codec = ValuesCodec { codec: Compression::ZSTD(Default::default()), level: 3 };
        let long = walk(300_000, 3);
        let rows: [&[f32]; 6] = [&long, &[], &long, &long, &long, &long];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("a pool");
        let e = pool.install(|| encode(&codec, &rows, &[1, 2, 1, 2], true, &|p| p.start)).err();
        assert_eq!(e.as_deref(), Some("a chunk without values"));
    }

    #[test]
    fn a_chunk_without_values_is_refused() {
        let codec = ValuesCodec { codec: Compression::ZSTD(Default::default()), level: 3 };
        let rows: [&[f32]; 2] = [&[1.0], &[]];
        let e = encode(&codec, &rows, &[2], false, &|_| ()).err();
        assert_eq!(e.as_deref(), Some("a chunk without values"));
    }
}
