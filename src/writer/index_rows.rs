//! The index rows of a write, stored in blocks of [`BLOCK_ROWS`] rows, each
//! field of a block's rows side by side (column-major): held in memory up to
//! [`MEMORY_BLOCKS`] full blocks and past that spilled to an unnamed temporary
//! file (created then). When `time_series_index.parquet` is written, each of
//! its leaves reads one field a page at a time, 4 or 8 bytes a row, not whole
//! records: a write of millions of series holds a page of one field, not all
//! the rows (`docs/format.md` §1, "Memory").

use std::fs::File;
use std::io::Write;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::stats::ChannelStats;

/// One index row: a chunk, where it landed, and its statistics as the index
/// stores them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct IndexRow {
    /// Position of the chunk's series in write order.
    pub(crate) series: u32,
    pub(crate) chunk_idx: u32,
    pub(crate) value_offset: u64,
    pub(crate) n_values: u32,
    pub(crate) shard: u32,
    pub(crate) row_group: u32,
    pub(crate) row_offset: u32,
    pub(crate) stats: ChannelStats,
}

/// The number types of the fields of an index row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    U32,
    U64,
    F64,
}

impl Kind {
    const fn bytes(self) -> usize {
        match self {
            Kind::U32 => 4,
            Kind::U64 | Kind::F64 => 8,
        }
    }
}

/// A field of an index row, in record order ([`IndexRow::fields`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Series,
    ChunkIdx,
    ValueOffset,
    NValues,
    Shard,
    RowGroup,
    RowOffset,
    Count,
    Min,
    Max,
    Mean,
    Std,
}

impl Field {
    /// Every field in record order.
    const ALL: [Field; 12] = [
        Field::Series,
        Field::ChunkIdx,
        Field::ValueOffset,
        Field::NValues,
        Field::Shard,
        Field::RowGroup,
        Field::RowOffset,
        Field::Count,
        Field::Min,
        Field::Max,
        Field::Mean,
        Field::Std,
    ];

    const fn kind(self) -> Kind {
        match self {
            Field::Series | Field::ChunkIdx | Field::NValues | Field::Shard | Field::RowGroup | Field::RowOffset => {
                Kind::U32
            }
            Field::ValueOffset | Field::Count => Kind::U64,
            Field::Min | Field::Max | Field::Mean | Field::Std => Kind::F64,
        }
    }

    /// Where the field's values start in a block (bytes, [`BLOCK_OFFSETS`]).
    const fn block_offset(self) -> usize {
        BLOCK_OFFSETS[self as usize]
    }

    /// The bytes of this field of rows `rows` (row numbers within a block) in the block.
    fn in_block(self, rows: Range<usize>) -> Range<usize> {
        let width = self.kind().bytes();
        self.block_offset() + rows.start * width..self.block_offset() + rows.end * width
    }
}

/// Where each field's values start in a block (bytes), in record order: after
/// every field before it, [`BLOCK_ROWS`] values each. A table, so that storing
/// or reading a row looks each offset up.
const BLOCK_OFFSETS: [usize; Field::ALL.len()] = {
    let mut offsets = [0; Field::ALL.len()];
    let mut k = 1;
    while k < offsets.len() {
        offsets[k] = offsets[k - 1] + Field::ALL[k - 1].kind().bytes() * BLOCK_ROWS;
        k += 1;
    }
    offsets
};

/// Bytes of one row: seven integers and the statistics' five numbers, little-endian.
const RECORD_BYTES: usize = 4 * 6 + 8 + 8 * 5;

/// Rows a block holds (2^14): the unit the rows are kept and spilled in.
const BLOCK_ROWS: usize = 1 << 14;

/// Bytes of a block (1.1 MiB).
const BLOCK_BYTES: usize = BLOCK_ROWS * RECORD_BYTES;

/// Full blocks a write holds in memory before it spills them all to a file
/// (8: 2^17 rows, 9 MiB), besides the block being filled.
const MEMORY_BLOCKS: usize = 8;

/// A fixed-width little-endian field of a row.
pub(crate) trait LeField: Sized {
    const KIND: Kind;
    fn put(&self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

macro_rules! le_field {
    ($($t:ty => $kind:ident),*) => {$(
        impl LeField for $t {
            const KIND: Kind = Kind::$kind;
            fn put(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut x = [0u8; std::mem::size_of::<$t>()];
                x.copy_from_slice(b);
                <$t>::from_le_bytes(x)
            }
        }
    )*};
}
le_field!(u32 => U32, u64 => U64, f64 => F64);

/// What is done to each field of a row.
trait FieldVisitor {
    fn field<T: LeField>(&mut self, field: Field, value: &mut T);
}

/// Row `row` of a block.
struct InBlock<B> {
    block: B,
    row: usize,
}

/// Stores each field of a row in its column of a block.
impl FieldVisitor for InBlock<&mut [u8]> {
    fn field<T: LeField>(&mut self, field: Field, value: &mut T) {
        value.put(&mut self.block[field.in_block(self.row..self.row + 1)]);
    }
}

/// Reads each field of a row from its column of a block.
impl FieldVisitor for InBlock<&[u8]> {
    fn field<T: LeField>(&mut self, field: Field, value: &mut T) {
        *value = T::get(&self.block[field.in_block(self.row..self.row + 1)]);
    }
}

impl IndexRow {
    /// The row's field table: every field, named, with its value (a test
    /// checks it visits [`Field::ALL`] in order, each as its kind). `put` and
    /// `get` both walk it, so they cannot disagree.
    fn fields(&mut self, v: &mut impl FieldVisitor) {
        v.field(Field::Series, &mut self.series);
        v.field(Field::ChunkIdx, &mut self.chunk_idx);
        v.field(Field::ValueOffset, &mut self.value_offset);
        v.field(Field::NValues, &mut self.n_values);
        v.field(Field::Shard, &mut self.shard);
        v.field(Field::RowGroup, &mut self.row_group);
        v.field(Field::RowOffset, &mut self.row_offset);
        let s = &mut self.stats;
        v.field(Field::Count, &mut s.count);
        v.field(Field::Min, &mut s.min);
        v.field(Field::Max, &mut s.max);
        v.field(Field::Mean, &mut s.mean);
        v.field(Field::Std, &mut s.std);
    }

    /// Stores the row as row `row` of `block`.
    fn put(&self, block: &mut [u8], row: usize) {
        let mut copy = *self;
        copy.fields(&mut InBlock { block, row });
    }

    /// Row `row` of `block`.
    fn get(block: &[u8], row: usize) -> IndexRow {
        let mut out = IndexRow::default();
        out.fields(&mut InBlock { block, row });
        out
    }
}

/// Where the full blocks of an [`IndexSpill`] are.
enum Blocks {
    Memory(Vec<Vec<u8>>),
    /// Blocks one after another, `n` of them.
    File {
        file: File,
        n: usize,
    },
}

impl Blocks {
    fn len(&self) -> usize {
        match self {
            Blocks::Memory(blocks) => blocks.len(),
            Blocks::File { n, .. } => *n,
        }
    }
}

/// Index rows being written, in chunk order.
pub(crate) struct IndexSpill {
    full: Blocks,
    /// The block being filled ([`BLOCK_BYTES`] once a row is in it).
    open: Vec<u8>,
    rows: usize,
}

fn temp_error(e: std::io::Error) -> Error {
    Error::io(std::env::temp_dir(), e)
}

impl IndexSpill {
    /// No rows yet (nothing on disk until [`MEMORY_BLOCKS`] pass).
    pub(crate) fn new() -> IndexSpill {
        IndexSpill { full: Blocks::Memory(Vec::new()), open: Vec::new(), rows: 0 }
    }

    /// Adds the next row.
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary directory, when the rows spill.
    pub(crate) fn push(&mut self, row: &IndexRow) -> Result<()> {
        if self.open.is_empty() {
            self.open = vec![0; BLOCK_BYTES];
        }
        row.put(&mut self.open, self.rows % BLOCK_ROWS);
        self.rows += 1;
        if self.rows.is_multiple_of(BLOCK_ROWS) {
            let block = std::mem::take(&mut self.open);
            match &mut self.full {
                Blocks::Memory(blocks) if blocks.len() < MEMORY_BLOCKS => blocks.push(block),
                Blocks::Memory(blocks) => {
                    let mut file = tempfile::tempfile().map_err(temp_error)?;
                    for b in blocks.iter().chain([&block]) {
                        file.write_all(b).map_err(temp_error)?;
                    }
                    self.full = Blocks::File { file, n: blocks.len() + 1 };
                }
                Blocks::File { file, n } => {
                    file.write_all(&block).map_err(temp_error)?;
                    *n += 1;
                }
            }
        }
        Ok(())
    }

    /// The rows written, for reading back.
    pub(crate) fn finish(self) -> IndexRows {
        IndexRows { full: self.full, last: self.open, rows: self.rows }
    }
}

/// The rows of an [`IndexSpill`], read back by field and row range.
pub(crate) struct IndexRows {
    full: Blocks,
    /// The last block when it is not full (empty when no row is in it).
    last: Vec<u8>,
    rows: usize,
}

impl IndexRows {
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// True when the full blocks are in the temporary file.
    #[cfg(test)]
    fn spilled(&self) -> bool {
        matches!(self.full, Blocks::File { .. })
    }

    /// Bytes `within` of block `b`: borrowed from memory, or read into `buf`.
    fn block_bytes<'a>(&'a self, b: usize, within: Range<usize>, buf: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        use std::os::unix::fs::FileExt;
        match &self.full {
            _ if b >= self.full.len() => Ok(&self.last[within]),
            Blocks::Memory(blocks) => Ok(&blocks[b][within]),
            Blocks::File { file, .. } => {
                buf.resize(within.len(), 0);
                file.read_exact_at(buf, (b * BLOCK_BYTES + within.start) as u64).map_err(temp_error)?;
                Ok(buf)
            }
        }
    }

    /// Field `field` of rows `range` (within `0..len()`), as `T`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary directory; a range past the rows,
    /// or a `T` that is not the field's type, is an [`Error::SelfCheck`] of
    /// the index (a writer defect, not the disk's).
    pub(crate) fn column<T: LeField>(&self, range: Range<usize>, field: Field) -> Result<Vec<T>> {
        let defect =
            |reason: String| Error::SelfCheck { path: "time_series_index.parquet".into(), column: "*".into(), reason };
        if range.start > range.end || range.end > self.rows {
            return Err(defect(format!("index rows {range:?} asked of {} written", self.rows)));
        }
        if T::KIND != field.kind() {
            return Err(defect(format!("index field {field:?} ({:?}) read as {:?}", field.kind(), T::KIND)));
        }
        let width = T::KIND.bytes();
        let (mut out, mut buf) = (Vec::with_capacity(range.len()), Vec::new());
        let mut at = range.start;
        while at < range.end {
            let (b, row) = (at / BLOCK_ROWS, at % BLOCK_ROWS);
            let n = (BLOCK_ROWS - row).min(range.end - at);
            out.extend(self.block_bytes(b, field.in_block(row..row + n), &mut buf)?.chunks_exact(width).map(T::get));
            at += n;
        }
        Ok(out)
    }

    /// Calls `f` with every row in order.
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary directory, or `f`'s error.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&IndexRow) -> Result<()>) -> Result<()> {
        let mut buf = Vec::new();
        for b in 0..self.rows.div_ceil(BLOCK_ROWS) {
            let block = self.block_bytes(b, 0..BLOCK_BYTES, &mut buf)?;
            for row in 0..(self.rows - b * BLOCK_ROWS).min(BLOCK_ROWS) {
                f(&IndexRow::get(block, row))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field `f` of `r` as bits, named field by field (not through the field table).
    fn bits(r: &IndexRow, f: Field) -> u64 {
        match f {
            Field::Series => r.series.into(),
            Field::ChunkIdx => r.chunk_idx.into(),
            Field::ValueOffset => r.value_offset,
            Field::NValues => r.n_values.into(),
            Field::Shard => r.shard.into(),
            Field::RowGroup => r.row_group.into(),
            Field::RowOffset => r.row_offset.into(),
            Field::Count => r.stats.count,
            Field::Min => r.stats.min.to_bits(),
            Field::Max => r.stats.max.to_bits(),
            Field::Mean => r.stats.mean.to_bits(),
            Field::Std => r.stats.std.to_bits(),
        }
    }

    /// Field `f` of rows `range` read back, as bits.
    fn column_bits(rows: &IndexRows, range: Range<usize>, f: Field) -> Vec<u64> {
        match f.kind() {
            Kind::U32 => rows.column::<u32>(range, f).unwrap().into_iter().map(u64::from).collect(),
            Kind::U64 => rows.column::<u64>(range, f).unwrap(),
            Kind::F64 => rows.column::<f64>(range, f).unwrap().into_iter().map(f64::to_bits).collect(),
        }
    }

    fn row(i: u32) -> IndexRow {
        IndexRow {
            series: i,
            chunk_idx: i % 3,
            value_offset: u64::from(i) << 33,
            n_values: i * 7 + 1,
            shard: i / 10,
            row_group: i % 10,
            row_offset: i * 2,
            stats: ChannelStats {
                count: u64::from(i) + 1,
                min: -0.0,
                max: f64::from(i) * 0.1,
                mean: 1e-300,
                std: -1.5 - f64::from(i),
            },
        }
    }

    #[test]
    fn the_field_table_visits_every_field_in_record_order() {
        struct Kinds(Vec<(Field, Kind)>);
        impl FieldVisitor for Kinds {
            fn field<T: LeField>(&mut self, field: Field, _: &mut T) {
                self.0.push((field, T::KIND));
            }
        }
        let mut kinds = Kinds(Vec::new());
        IndexRow::default().fields(&mut kinds);
        assert_eq!(kinds.0, Field::ALL.map(|f| (f, f.kind())));
        assert_eq!(kinds.0.iter().map(|(_, k)| k.bytes()).sum::<usize>(), RECORD_BYTES);
        assert_eq!(RECORD_BYTES, 72);
        assert_eq!(Field::ALL.map(|f| f.block_offset() / BLOCK_ROWS), [0, 4, 8, 16, 20, 24, 28, 32, 40, 48, 56, 64]);
        // row 2 of a block: each field's bytes at its column's offset plus 2 widths
        let mut block = vec![0u8; BLOCK_BYTES];
        row(5).put(&mut block, 2);
        let at = |f: Field| f.block_offset() + 2 * f.kind().bytes();
        let mut rest = block.clone();
        for f in Field::ALL {
            let field = at(f)..at(f) + f.kind().bytes();
            assert_eq!(block[field.clone()], bits(&row(5), f).to_le_bytes()[..f.kind().bytes()], "{f:?}");
            rest[field].fill(0);
        }
        assert!(rest.iter().all(|&b| b == 0), "bytes outside row 2's fields");
        assert_eq!(block[at(Field::ValueOffset)..at(Field::ValueOffset) + 8], (5u64 << 33).to_le_bytes());
        assert_eq!(block[at(Field::Std)..at(Field::Std) + 8], (-6.5f64).to_le_bytes());
        assert_eq!(IndexRow::get(&block, 2), row(5));
        assert_eq!(IndexRow::get(&block, 3), IndexRow::default());
    }

    #[test]
    fn every_field_reads_back_exactly_by_range_in_memory_and_spilled() {
        let b = BLOCK_ROWS;
        let memory = MEMORY_BLOCKS * b;
        // within the first block; full blocks in memory, a part block;
        // exactly the full blocks memory holds, with none or a part block
        // after them; one full block more (spilled, all of them), with a part block
        for (n, spilled) in [
            (40, false),
            (2 * b + 40, false),
            (memory, false),
            (memory + b - 1, false),
            (memory + b, true),
            (memory + 2 * b + 7, true),
        ] {
            let mut spill = IndexSpill::new();
            for i in 0..n as u32 {
                spill.push(&row(i)).unwrap();
            }
            let rows = spill.finish();
            assert_eq!(rows.spilled(), spilled, "{n} rows");
            assert_eq!(rows.len(), n);
            let ranges = [0..n, 5..5, n - 2..n, 0..1, n / 2..n / 2 + 3, b.min(n) - 1..(b + 1).min(n)];
            for f in Field::ALL {
                for r in ranges.iter().cloned().chain((b < n).then(|| b - 2..n.min(3 * b + 2))) {
                    let want: Vec<u64> = r.clone().map(|i| bits(&row(i as u32), f)).collect();
                    assert_eq!(column_bits(&rows, r.clone(), f), want, "{n} rows, {f:?} of {r:?}");
                }
            }
            let past = rows.column::<u32>(n - 1..n + 1, Field::Series).unwrap_err().to_string();
            assert_eq!(
                past,
                format!(
                    "self-check of time_series_index.parquet: column *: index rows {}..{} asked of {n} written",
                    n - 1,
                    n + 1
                )
            );
            #[allow(clippy::reversed_empty_ranges)]
            let reversed = 3..2;
            assert_eq!(
                rows.column::<u32>(reversed, Field::Series).unwrap_err().to_string(),
                format!("self-check of time_series_index.parquet: column *: index rows 3..2 asked of {n} written")
            );
            assert_eq!(
                rows.column::<f64>(0..1, Field::Count).unwrap_err().to_string(),
                "self-check of time_series_index.parquet: column *: index field Count (U64) read as F64"
            );
            assert!(rows.column::<f64>(0..1, Field::Min).unwrap()[0].is_sign_negative());
            let mut seen = 0u32;
            rows.for_each(|r| {
                assert_eq!(*r, row(seen));
                seen += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(seen as usize, n);
        }
        assert_eq!(IndexSpill::new().finish().len(), 0);
        IndexSpill::new().finish().for_each(|_| panic!("no rows")).unwrap();
    }
}
