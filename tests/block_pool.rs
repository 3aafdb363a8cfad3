//! `read_blocks` of a plan read block after block, as `timef.ray.read` does
//! (python/src/windows.rs `read_block`, which gives the values back), reuses
//! the plan's decode buffers: no row group is decoded into fresh, growing
//! memory once the pool holds buffers.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use common::*;
use timef::reader::Version;
use timef::scan::Selection;
use timef::windows::{WindowOptions, WindowPlan};
use timef::*;

/// Bytes asked of the allocator (allocations, and reallocations' growth).
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size.saturating_sub(layout.size()) as u64, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn read_blocks_block_after_block_reuses_the_decode_buffers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = dataset_with_source("pool", "1");
    for i in 0..96u32 {
        add_series(&mut d, &format!("s{i:03}"), "ecg", "I", 100.0, i, 100_000 + 3_001 * i as usize);
        add_sample_of(&mut d, &format!("p{i:03}"), &[&format!("s{i:03}")]);
    }
    let o = WriterOptions::builder().chunk_max_bytes(256 << 10).row_group_target_bytes(2 << 20).try_build().unwrap();
    let v = Version::open(commit(tmp.path(), d, o)).unwrap();
    let plan =
        WindowPlan::new(&v, &Selection::all(), WindowOptions { threads: 1, ..WindowOptions::new(64, 0) }).unwrap();
    let blocks = plan.blocks();
    let pass = || {
        let (at, t) = (ALLOCATED.load(Ordering::Relaxed), Instant::now());
        let mut values = 0u64;
        for b in 0..blocks.len() {
            // timef.ray.read's read_block: iter() over the series, then given back
            let read = blocks.read_blocks(&[b], 1).unwrap();
            values += read.iter().map(|(_, v)| v.len() as u64).sum::<u64>();
            blocks.give_back(read);
        }
        (ALLOCATED.load(Ordering::Relaxed) - at, values * 4, t.elapsed())
    };
    pass();
    let (allocated, handed_out, took) = pass();
    eprintln!(
        "{} blocks, {} row groups: {:.1} MiB handed out, {:.1} MiB allocated, {took:?}",
        blocks.len(),
        blocks.row_groups(),
        handed_out as f64 / 1048576.0,
        allocated as f64 / 1048576.0
    );
    assert!(
        allocated < handed_out + handed_out / 4,
        "a pass of read_blocks allocated {allocated} bytes to hand out {handed_out}: the decode buffers are not reused"
    );
}
