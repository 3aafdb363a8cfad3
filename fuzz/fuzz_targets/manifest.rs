//! The manifest parser and what trusts it: the golden version with its
//! `manifest.json` replaced by the input, then `verify` and reading every
//! table and series (`cat`, `info`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = timef_fuzz::mutated_version("manifest.json", data);
    timef_fuzz::use_version(&dir);
});
