//! The index rows of a write, held in memory up to [`MEMORY_ROWS`] and past
//! that spilled to an unnamed temporary file of fixed-size records (created
//! then), read back a range at a time when `time_series_index.parquet` is
//! written: a write of millions of series holds a page of index rows, not
//! all of them (`docs/format.md` §1, "Memory").

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;

use crate::error::{Error, Result};
use crate::manifest::ChannelStats;

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

/// Bytes of one spilled row: seven integers and the statistics' five numbers, little-endian.
const RECORD_BYTES: usize = 4 * 6 + 8 + 8 * 5;

/// A fixed-width little-endian field of a spilled record.
trait LeField: Sized {
    const BYTES: usize;
    fn put(&self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

macro_rules! le_field {
    ($($t:ty),*) => {$(
        impl LeField for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
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
le_field!(u32, u64, f64);

/// What is done to each field of a record, in record order.
trait FieldVisitor {
    fn field<T: LeField>(&mut self, value: &mut T);
}

impl IndexRow {
    /// The record's field table: every field in record order. `encode` and
    /// `decode` both walk it, so they cannot disagree.
    fn fields(&mut self, v: &mut impl FieldVisitor) {
        v.field(&mut self.series);
        v.field(&mut self.chunk_idx);
        v.field(&mut self.value_offset);
        v.field(&mut self.n_values);
        v.field(&mut self.shard);
        v.field(&mut self.row_group);
        v.field(&mut self.row_offset);
        let s = &mut self.stats;
        v.field(&mut s.count);
        v.field(&mut s.min);
        v.field(&mut s.max);
        v.field(&mut s.mean);
        v.field(&mut s.std);
    }

    fn encode(&self, out: &mut [u8; RECORD_BYTES]) {
        struct Put<'a>(&'a mut [u8]);
        impl FieldVisitor for Put<'_> {
            fn field<T: LeField>(&mut self, value: &mut T) {
                let (head, rest) = std::mem::take(&mut self.0).split_at_mut(T::BYTES);
                value.put(head);
                self.0 = rest;
            }
        }
        let mut row = *self;
        row.fields(&mut Put(out));
    }

    fn decode(b: &[u8]) -> IndexRow {
        struct Get<'a>(&'a [u8]);
        impl FieldVisitor for Get<'_> {
            fn field<T: LeField>(&mut self, value: &mut T) {
                let (head, rest) = self.0.split_at(T::BYTES);
                *value = T::get(head);
                self.0 = rest;
            }
        }
        let mut row = IndexRow::default();
        row.fields(&mut Get(b));
        row
    }
}

/// Index rows a write holds in memory before it spills them all to a file
/// (2^17: 9 MiB of 72-byte rows). Each leaf of the index table reads its rows
/// a page at a time; rows in memory are borrowed, where spilled ones are read
/// and decoded again for every leaf (17 times), which cost a write of 8,000
/// small series a tenth of its time.
pub(crate) const MEMORY_ROWS: usize = 1 << 17;

/// Index rows being written, in chunk order: in memory, or spilled once they
/// pass [`MEMORY_ROWS`].
pub(crate) enum IndexSpill {
    Memory(Vec<IndexRow>),
    File { out: BufWriter<File>, rows: u64 },
}

fn temp_error(e: std::io::Error) -> Error {
    Error::io(std::env::temp_dir(), e)
}

fn write_record(out: &mut BufWriter<File>, row: &IndexRow) -> Result<()> {
    let mut record = [0u8; RECORD_BYTES];
    row.encode(&mut record);
    out.write_all(&record).map_err(temp_error)
}

impl IndexSpill {
    /// No rows yet (nothing on disk until [`MEMORY_ROWS`] pass).
    pub(crate) fn new() -> IndexSpill {
        IndexSpill::Memory(Vec::new())
    }

    /// Adds the next row.
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary directory, when the rows spill.
    pub(crate) fn push(&mut self, row: &IndexRow) -> Result<()> {
        match self {
            IndexSpill::Memory(rows) if rows.len() < MEMORY_ROWS => rows.push(*row),
            IndexSpill::Memory(rows) => {
                let mut out = BufWriter::with_capacity(1 << 20, tempfile::tempfile().map_err(temp_error)?);
                for r in rows.iter().chain([row]) {
                    write_record(&mut out, r)?;
                }
                *self = IndexSpill::File { out, rows: rows.len() as u64 + 1 };
            }
            IndexSpill::File { out, rows } => {
                write_record(out, row)?;
                *rows += 1;
            }
        }
        Ok(())
    }

    /// The rows written, for reading back.
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary directory.
    pub(crate) fn finish(self) -> Result<IndexRows> {
        match self {
            IndexSpill::Memory(rows) => Ok(IndexRows::Memory(rows)),
            IndexSpill::File { out, rows } => {
                let file = out.into_inner().map_err(|e| temp_error(e.into_error()))?;
                Ok(IndexRows::File { file, rows })
            }
        }
    }
}

/// The rows of an [`IndexSpill`], read back by row range.
pub(crate) enum IndexRows {
    Memory(Vec<IndexRow>),
    File { file: File, rows: u64 },
}

/// Rows read at a time by [`IndexRows::for_each`].
const READ_ROWS: usize = 1 << 14;

impl IndexRows {
    pub(crate) fn len(&self) -> usize {
        match self {
            IndexRows::Memory(rows) => rows.len(),
            IndexRows::File { rows, .. } => *rows as usize,
        }
    }

    /// Rows `range` (within `0..len()`): borrowed when they are in memory.
    ///
    /// # Errors
    /// [`Error::Io`] naming the temporary directory; a range past the rows is
    /// an [`Error::SelfCheck`] of the index (a writer defect, not the disk's).
    pub(crate) fn read(&self, range: Range<usize>) -> Result<Cow<'_, [IndexRow]>> {
        use std::os::unix::fs::FileExt;
        if range.start > range.end || range.end > self.len() {
            return Err(Error::SelfCheck {
                path: "time_series_index.parquet".into(),
                column: "*".into(),
                reason: format!("index rows {range:?} asked of {} written", self.len()),
            });
        }
        match self {
            IndexRows::Memory(rows) => Ok(Cow::Borrowed(&rows[range])),
            IndexRows::File { file, .. } => {
                let mut bytes = vec![0u8; range.len() * RECORD_BYTES];
                file.read_exact_at(&mut bytes, (range.start * RECORD_BYTES) as u64).map_err(temp_error)?;
                Ok(Cow::Owned(bytes.chunks_exact(RECORD_BYTES).map(IndexRow::decode).collect()))
            }
        }
    }

    /// Calls `f` with every row in order.
    ///
    /// # Errors
    /// As [`IndexRows::read`], or `f`'s error.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&IndexRow) -> Result<()>) -> Result<()> {
        let mut at = 0;
        while at < self.len() {
            let end = (at + READ_ROWS).min(self.len());
            for row in self.read(at..end)?.iter() {
                f(row)?;
            }
            at = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_table_is_one_record() {
        struct Count(usize);
        impl FieldVisitor for Count {
            fn field<T: LeField>(&mut self, _: &mut T) {
                self.0 += T::BYTES;
            }
        }
        let mut count = Count(0);
        IndexRow::default().fields(&mut count);
        assert_eq!(count.0, RECORD_BYTES);
        assert_eq!(RECORD_BYTES, 72);
        let row = IndexRow {
            series: 1,
            chunk_idx: 2,
            value_offset: 3,
            stats: ChannelStats { std: -2.0, ..ChannelStats::default() },
            ..IndexRow::default()
        };
        let mut bytes = [0u8; RECORD_BYTES];
        row.encode(&mut bytes);
        assert_eq!(&bytes[..16], &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[64..], (-2.0f64).to_le_bytes());
        assert!(bytes[16..64].iter().all(|&b| b == 0));
    }

    #[test]
    fn rows_read_back_exactly_by_range_in_memory_and_spilled() {
        let row = |i: u32| IndexRow {
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
                std: -1.5,
            },
        };
        // all in memory; exactly the bound; one past it, spilled with the rows before it
        for (n, spilled) in
            [(40_000, false), (MEMORY_ROWS, false), (MEMORY_ROWS + 1, true), (MEMORY_ROWS + 40_000, true)]
        {
            let mut spill = IndexSpill::new();
            for i in 0..n as u32 {
                spill.push(&row(i)).unwrap();
            }
            let rows = spill.finish().unwrap();
            assert_eq!(matches!(rows, IndexRows::File { .. }), spilled, "{n} rows");
            assert_eq!(rows.len(), n);
            assert_eq!(*rows.read(16_383..16_386).unwrap(), (16_383..16_386).map(row).collect::<Vec<_>>()[..]);
            assert_eq!(*rows.read(n - 2..n).unwrap(), [row(n as u32 - 2), row(n as u32 - 1)]);
            assert_eq!(*rows.read(5..5).unwrap(), []);
            let past = rows.read(n - 1..n + 1).unwrap_err().to_string();
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
                rows.read(reversed).unwrap_err().to_string(),
                format!("self-check of time_series_index.parquet: column *: index rows 3..2 asked of {n} written")
            );
            let back = rows.read(0..1).unwrap();
            assert!(back[0].stats.min.is_sign_negative());
            let mut seen = 0u32;
            rows.for_each(|r| {
                assert_eq!(*r, row(seen));
                seen += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(seen as usize, n);
        }
    }
}
