//! `verify` and `cat` on mutated versions: the first input byte picks one file
//! of the golden version, the rest replaces its bytes; then `verify` and
//! reading every table and series. Neither may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let files = timef_fuzz::golden_files();
    let (rel, _) = &files[usize::from(pick) % files.len()];
    let dir = timef_fuzz::mutated_version(rel, body);
    timef_fuzz::use_version(&dir);
});
