//! The float32 values of a read-only mapping (the IPC input, or the spill of
//! converted values) handed to the writer one series at a time ([`MappedValues`]),
//! and the release of a mapping's pages behind the pass and the writer, so that
//! resident memory follows the series in flight, not the input size.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;

use crate::dataset::SeriesValues;

/// Bytes of a [`MappedValues`] the writer may map by reading series between
/// two releases of the whole mapping (16 MiB: a 1 GiB mixed write peaks at
/// ~185 MiB; with 64 MiB, at ~255 MiB, though an input far out of write order
/// then reads fewer released pages again).
const RELEASE_SWEEP_BYTES: usize = 16 << 20;

/// Bytes of a file mapping that reading one of its pages maps, when they are
/// in the page cache (Linux's `fault_around_bytes`, 64 KiB by default): a
/// series is counted as the aligned windows of this size it spans.
const FAULT_AROUND_BYTES: usize = 64 << 10;

/// Whole pages of a series (bytes) from which its pages are also released on
/// their own, as soon as the writer drops it (256 KiB).
const RELEASE_ON_DROP_BYTES: usize = 256 << 10;

/// Bytes of a mapping from which its pages are released at all (64 MiB): a
/// smaller mapping stays resident whole, within a write's memory bound, and
/// its pages fault in once, not again after each release (a 32 MiB write of
/// 4 KiB series spent ~4% of its CPU releasing and faulting pages back).
const RELEASE_FROM_MAPPING_BYTES: usize = 64 << 20;

/// The float32 values of a read-only mapping (the IPC input, or the spill of
/// converted values), handed to the writer one series at a time
/// ([`crate::dataset::ValuesStore`]). Resident memory follows the write, not
/// the input (`docs/format.md` §1 "Memory"): the whole mapping is released
/// each time the series the writer takes could have mapped another
/// [`RELEASE_SWEEP_BYTES`], and a series of [`RELEASE_ON_DROP_BYTES`] of whole
/// pages or more also when the writer drops it. A series is counted as the
/// [`FAULT_AROUND_BYTES`] windows it spans (a window the series before it
/// ended in once), which bounds an input in any order when the kernel maps a
/// fault's window; a kernel that maps a whole large folio on a fault (Linux 6
/// does for files cached by large reads or writes) maps more per scattered
/// series, up to the folio, so an input far out of write order may keep up to
/// all of it resident, as it did before. A series in flight whose pages a
/// release took faults them back in from the file (an input far out of order
/// faults more than before, for less memory). Why not one release a series:
/// each `madvise` interrupts the other cores to flush their TLBs, and one a
/// series cost an ingest of small series (4 KiB each) a sixth to a fifth of
/// its time.
pub(super) struct MappedValues {
    /// The mapping and a buffer over all of it; the spill's is set when the pass ends.
    mapped: std::sync::OnceLock<(Buffer, Arc<memmap2::Mmap>)>,
    /// Bytes the series taken so far could have mapped.
    taken: std::sync::atomic::AtomicUsize,
    /// The end (exclusive, in [`FAULT_AROUND_BYTES`] windows) of the series taken last.
    windows_end: std::sync::atomic::AtomicUsize,
}

impl MappedValues {
    pub(super) fn new() -> MappedValues {
        MappedValues {
            mapped: std::sync::OnceLock::new(),
            taken: std::sync::atomic::AtomicUsize::new(0),
            windows_end: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Sets the mapping (once).
    pub(super) fn set(&self, map: Arc<memmap2::Mmap>) -> std::io::Result<()> {
        let ptr =
            std::ptr::NonNull::new(map.as_ptr() as *mut u8).ok_or_else(|| std::io::Error::other("empty mapping"))?;
        // SAFETY: the buffer covers exactly the mapping, which `map` keeps alive.
        let buffer = unsafe {
            Buffer::from_custom_allocation(ptr, map.len(), Arc::clone(&map) as Arc<dyn arrow_buffer::alloc::Allocation>)
        };
        self.mapped.set((buffer, map)).map_err(|_| std::io::Error::other("mapping set twice"))
    }

    /// The value offset of `v` when it is an aligned slice of `map`.
    pub(super) fn offset_of(v: &SeriesValues, map: &memmap2::Mmap) -> Option<u64> {
        let byte = (v.as_ptr() as usize).checked_sub(map.as_ptr() as usize)?;
        (is_in(v, map) && byte % std::mem::size_of::<f32>() == 0).then_some((byte / 4) as u64)
    }
}

impl crate::dataset::ValuesStore for MappedValues {
    fn values(&self, offset: u64, len: u64) -> std::result::Result<SeriesValues, crate::dataset::LoaderError> {
        let (buffer, map) = self.mapped.get().ok_or("the values' mapping is not set")?;
        let (offset, len) = (usize::try_from(offset)?, usize::try_from(len)?);
        if offset.checked_add(len).is_none_or(|end| end > buffer.len() / 4) {
            return Err(format!("values {offset}+{len} outside a mapping of {} bytes", buffer.len()).into());
        }
        let values = SeriesValues::new(buffer.clone(), offset, len);
        // reading a page maps the cached pages of its fault-around window too;
        // a window the series taken just before ended in is counted once
        // (consecutive tiny series share one)
        let (first, end) = (offset * 4 / FAULT_AROUND_BYTES, ((offset + len) * 4).div_ceil(FAULT_AROUND_BYTES));
        let shared = usize::from(self.windows_end.swap(end, std::sync::atomic::Ordering::Relaxed) == first + 1);
        let mapped = (end - first).saturating_sub(shared) * FAULT_AROUND_BYTES;
        // one taker each time the count passes a multiple of the sweep
        let before = self.taken.fetch_add(mapped, std::sync::atomic::Ordering::Relaxed);
        if (before + mapped) / RELEASE_SWEEP_BYTES > before / RELEASE_SWEEP_BYTES {
            advise_dont_need(map, whole_pages_of(map, 0..map.len()));
        }
        if releases_pages(map) && whole_pages(map, &values).len() >= RELEASE_ON_DROP_BYTES {
            return Ok(release_on_drop(values, map));
        }
        Ok(values)
    }

    /// True: the connector stores only values `typings::to_f32` accepted
    /// (the IPC input's slices and the spill of converted values alike).
    fn checked_finite(&self) -> bool {
        true
    }
}

/// True when `v` lies inside the mapping `map` (a zero-copy slice of it).
pub(super) fn is_in(v: &SeriesValues, map: &memmap2::Mmap) -> bool {
    let (base, p) = (map.as_ptr() as usize, v.as_ptr() as usize);
    p >= base && p + std::mem::size_of_val(&v[..]) <= base + map.len()
}

/// The page size the mappings are released by (bytes; the smallest Linux page).
const PAGE_BYTES: usize = 4096;

/// The whole pages inside `bytes` (a byte range of `map`, as offsets), as a
/// byte range of the mapping (empty when the range does not cover a page).
pub(super) fn whole_pages_of(map: &memmap2::Mmap, bytes: std::ops::Range<usize>) -> std::ops::Range<usize> {
    bytes.start.div_ceil(PAGE_BYTES) * PAGE_BYTES..(bytes.end / PAGE_BYTES * PAGE_BYTES).min(map.len())
}

/// The whole pages inside `values` (a slice of `map`).
fn whole_pages(map: &memmap2::Mmap, values: &[f32]) -> std::ops::Range<usize> {
    let start = (values.as_ptr() as usize).saturating_sub(map.as_ptr() as usize);
    whole_pages_of(map, start..start + std::mem::size_of_val(values))
}

/// True when `map` is large enough for its pages to be released at all
/// ([`RELEASE_FROM_MAPPING_BYTES`]).
fn releases_pages(map: &memmap2::Mmap) -> bool {
    map.len() >= RELEASE_FROM_MAPPING_BYTES
}

/// Tells the kernel the pages of `pages` (a page-aligned byte range of `map`)
/// are not needed now; they fault back in from the file when read again. A
/// mapping smaller than [`RELEASE_FROM_MAPPING_BYTES`] keeps its pages.
pub(super) fn advise_dont_need(map: &memmap2::Mmap, pages: std::ops::Range<usize>) {
    if !pages.is_empty() && releases_pages(map) {
        // SAFETY: the mapping is read-only and file-backed; MADV_DONTNEED only
        // drops resident pages, which fault back in from the file when read again.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, pages.start, pages.len()) };
    }
}

/// Releases the whole pages inside `values` (a slice of `map`); neighbours keep theirs.
fn release_pages(map: &memmap2::Mmap, values: &[f32]) {
    advise_dont_need(map, whole_pages(map, values));
}

/// The byte range of `map` that the buffers of `batch` lying in it span
/// (empty when none does), and whether every buffer with bytes lies in it.
fn mapped_span(map: &memmap2::Mmap, batch: &RecordBatch) -> (std::ops::Range<usize>, bool) {
    fn span(data: &arrow_data::ArrayData, map: &memmap2::Mmap, lo: &mut usize, hi: &mut usize, all: &mut bool) {
        let base = map.as_ptr() as usize;
        let bufs = data.buffers().iter().chain(data.nulls().map(|n| n.buffer()));
        for b in bufs.filter(|b| !b.is_empty()) {
            let p = b.as_ptr() as usize;
            if p >= base && p + b.len() <= base + map.len() {
                *lo = (*lo).min(p - base);
                *hi = (*hi).max(p - base + b.len());
            } else {
                *all = false;
            }
        }
        for child in data.child_data() {
            span(child, map, lo, hi, all);
        }
    }
    let (mut lo, mut hi, mut all) = (usize::MAX, 0, true);
    for column in batch.columns() {
        span(&column.to_data(), map, &mut lo, &mut hi, &mut all);
    }
    (lo.min(hi)..hi, all)
}

/// True when every buffer of `batch` is a zero-copy slice of `map` (not
/// decompressed or otherwise copied by the decoder).
pub(super) fn is_zero_copy(map: &memmap2::Mmap, batch: &RecordBatch) -> bool {
    mapped_span(map, batch).1
}

/// Releases the whole pages spanned by the buffers of `batch` that lie in
/// `map` (a batch's body is one stretch of the file): ids, offsets and values
/// of millions of small rows would otherwise stay resident after the pass.
pub(super) fn release_batch(map: &memmap2::Mmap, batch: &RecordBatch) {
    advise_dont_need(map, whole_pages_of(map, mapped_span(map, batch).0));
}

/// Keeps a zero-copy slice of the mapping alive and, when the writer drops it
/// (its last chunk encoded), tells the kernel its pages are no longer needed,
/// so resident memory follows the series in flight, not the file size.
struct ReleaseOnDrop {
    values: SeriesValues,
    map: Arc<memmap2::Mmap>,
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        release_pages(&self.map, &self.values);
    }
}

fn release_on_drop(values: SeriesValues, map: &Arc<memmap2::Mmap>) -> SeriesValues {
    let len = values.len();
    let ptr = values.as_ptr() as *mut u8;
    let owner = Arc::new(ReleaseOnDrop { values, map: Arc::clone(map) });
    match std::ptr::NonNull::new(ptr) {
        // SAFETY: ptr/len describe memory kept alive by `owner`.
        Some(ptr) => SeriesValues::new(
            unsafe { Buffer::from_custom_allocation(ptr, len * std::mem::size_of::<f32>(), owner) },
            0,
            len,
        ),
        None => owner.values.clone(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use arrow_array::builder::{Float32Builder, ListBuilder};
    use arrow_array::{ArrayRef, RecordBatch, StringArray};

    use super::*;
    use crate::dataset::ValuesStore;

    /// Resident bytes of this process's mapping that starts at `addr` (`/proc/self/smaps`).
    fn resident_bytes(addr: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            if line.split('-').next().and_then(|a| usize::from_str_radix(a, 16).ok()) == Some(addr) {
                let rss = lines.find_map(|l| l.strip_prefix("Rss:")).unwrap();
                return rss.trim().trim_end_matches("kB").trim().parse::<usize>().unwrap() * 1024;
            }
        }
        panic!("no mapping at {addr:#x}");
    }

    /// Series taken in an order unrelated to their place in the mapping (a
    /// write in id order of an input that is not) keep resident memory within
    /// the sweep, not the input: 128 MiB of 4 KiB series, each read whole
    /// (the old release, one a dropped series and a lag by offset, peaked at
    /// 112 MiB here). The file is written 4 KiB at a time, so its cached pages
    /// are small folios and a fault maps its fault-around window (the case the
    /// count models; a file cached in large folios maps more, see `MappedValues`).
    #[test]
    fn series_taken_out_of_input_order_keep_resident_memory_bounded() {
        use std::io::Write;
        const SERIES_VALUES: usize = 1024;
        const SERIES: usize = 32 * 1024;
        let mut file = tempfile::tempfile().unwrap();
        let mut block = Vec::with_capacity(SERIES_VALUES * 4);
        for s in 0..SERIES {
            block.clear();
            (0..SERIES_VALUES).for_each(|k| block.extend_from_slice(&((s * SERIES_VALUES + k) as f32).to_le_bytes()));
            file.write_all(&block).unwrap();
        }
        let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap());
        let addr = map.as_ptr() as usize;
        let store = MappedValues::new();
        store.set(Arc::clone(&map)).unwrap();
        let (mut peak, mut sum) = (0, 0f64);
        for k in 0..SERIES {
            // a stride coprime with the count visits every series once, scattered
            let s = k * 7919 % SERIES;
            let values = store.values((s * SERIES_VALUES) as u64, SERIES_VALUES as u64).unwrap();
            assert_eq!(
                (values[0], values[SERIES_VALUES - 1]),
                ((s * SERIES_VALUES) as f32, ((s + 1) * SERIES_VALUES - 1) as f32)
            );
            sum += values.iter().map(|&v| f64::from(v)).sum::<f64>();
            // sampled off the sweep's own period (256 takes of one window each here)
            if k % 97 == 96 {
                peak = peak.max(resident_bytes(addr));
            }
        }
        let n = (SERIES * SERIES_VALUES) as f64;
        assert_eq!(sum, n * (n - 1.0) / 2.0);
        assert!(
            (1 << 20..=RELEASE_SWEEP_BYTES).contains(&peak),
            "peak resident {peak} bytes of a {} byte mapping",
            map.len()
        );
    }

    /// A mapping below [`RELEASE_FROM_MAPPING_BYTES`] keeps every page once
    /// read: neither a release of all of it nor the writer's taking of its
    /// series (a sweep's worth, and series past [`RELEASE_ON_DROP_BYTES`],
    /// dropped) gives one back; the 128 MiB mapping above is released.
    #[test]
    fn a_mapping_below_the_release_floor_keeps_its_pages() {
        use std::io::Write;
        const SERIES_VALUES: usize = 128 << 10;
        let bytes = RELEASE_FROM_MAPPING_BYTES / 2;
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![1u8; bytes]).unwrap();
        let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap());
        let addr = map.as_ptr() as usize;
        let touched: u64 = map.iter().step_by(PAGE_BYTES).map(|&b| u64::from(b)).sum();
        assert_eq!((touched, resident_bytes(addr)), ((bytes / PAGE_BYTES) as u64, bytes));
        advise_dont_need(&map, whole_pages_of(&map, 0..map.len()));
        assert_eq!(resident_bytes(addr), bytes);
        let store = MappedValues::new();
        store.set(Arc::clone(&map)).unwrap();
        for s in 0..bytes / 4 / SERIES_VALUES {
            let values = store.values((s * SERIES_VALUES) as u64, SERIES_VALUES as u64).unwrap();
            assert_eq!(values.len(), SERIES_VALUES);
            drop(values);
            assert_eq!(resident_bytes(addr), bytes, "series {s}");
        }
    }

    /// The batches of an IPC file of two batches (zstd-compressed or not),
    /// as the connector decodes them from the file's mapping.
    fn decoded(compressed: bool) -> (Arc<memmap2::Mmap>, Vec<RecordBatch>) {
        let batch = |first: usize| {
            let mut target = ListBuilder::new(Float32Builder::new());
            for row in first..first + 3 {
                target.values().append_slice(&vec![row as f32; 4096]);
                target.append(true);
            }
            let ids: Vec<String> = (first..first + 3).map(|r| format!("item-{r}")).collect();
            RecordBatch::try_from_iter([
                ("item_id", Arc::new(StringArray::from(ids)) as ArrayRef),
                ("target", Arc::new(target.finish()) as ArrayRef),
            ])
            .unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.arrow");
        let options = arrow_ipc::writer::IpcWriteOptions::default()
            .try_with_compression(compressed.then_some(arrow_ipc::CompressionType::ZSTD))
            .unwrap();
        let schema = batch(0).schema();
        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(
            std::fs::File::create(&path).unwrap(),
            &schema,
            options,
        )
        .unwrap();
        for first in [0, 3] {
            w.write(&batch(first)).unwrap();
        }
        w.finish().unwrap();
        let map = super::super::ipc::map_ipc(&path).unwrap();
        let mut batches = Vec::new();
        super::super::ipc::decode_ipc(&path, &map, &mut |b| {
            batches.push(b);
            Ok(())
        })
        .unwrap();
        (map, batches)
    }

    #[test]
    fn a_batch_is_zero_copy_unless_the_decoder_decompressed_it() {
        let (map, batches) = decoded(false);
        assert_eq!(batches.len(), 2);
        for b in &batches {
            assert!(is_zero_copy(&map, b));
            // the body: ids, offsets and 3 x 4096 values, inside the file
            let span = mapped_span(&map, b).0;
            assert!(span.len() >= 3 * 4096 * 4 && span.end <= map.len(), "{span:?}");
        }
        let (map, batches) = decoded(true);
        assert_eq!(batches.len(), 2);
        for b in &batches {
            // (a buffer that zstd does not shrink is stored as it is, and stays a slice)
            assert!(!is_zero_copy(&map, b));
        }
    }

    /// `Read::hold` holds only a batch that takes no memory of its own: a
    /// zero-copy IPC batch, or a batch handed over in memory. A decompressed
    /// IPC batch, or a decoded batch of an input that is not IPC (Parquet), is
    /// read at once. Every row is read either way.
    #[test]
    fn only_a_batch_that_takes_no_memory_of_its_own_is_held() {
        use super::super::{ArrowOptions, Read};
        let opts = ArrowOptions::new("n", "v1");
        let held = |in_memory: bool, map: Option<Arc<memmap2::Mmap>>, batches: &[RecordBatch]| {
            let mut read = Read::new(std::path::Path::new("in.arrow"), &opts, in_memory, map).unwrap();
            let held: Vec<bool> = batches
                .iter()
                .map(|b| {
                    read.hold(b.clone()).unwrap();
                    read.held.is_some()
                })
                .collect();
            let (d, _, _) = read.finish().unwrap();
            assert_eq!(d.series_count(), 6);
            held
        };
        let (map, batches) = decoded(false);
        assert_eq!(held(false, Some(map), &batches), [true, true]);
        let (map, compressed) = decoded(true);
        assert_eq!(held(false, Some(map), &compressed), [false, false]);
        // batches of an input that is not IPC (Parquet), and batches in memory
        assert_eq!(held(false, None, &batches), [false, false]);
        assert_eq!(held(true, None, &batches), [true, true]);
    }
}
