//! The Arrow connector on Arrow IPC file, Arrow IPC stream and Parquet inputs
//! (told apart by their magic bytes), then every series loader.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timef::connectors::arrow::{read_arrow_with_report, ArrowOptions};

fuzz_target!(|data: &[u8]| {
    let path = timef_fuzz::scratch_file("input.arrow", data);
    if let Ok((ds, _)) = read_arrow_with_report(&path, &ArrowOptions::new("fuzz", "v1")) {
        timef_fuzz::drain(ds);
    }
});
