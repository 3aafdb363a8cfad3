//! The `.tsf` (Monash) parser: from bytes with every encoding and
//! missing-value policy (chosen by the first byte), then, for a file that
//! parses, the whole connector over it and every series loader.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timef::connectors::tsf::{parse_tsf_bytes, read_tsf_with_report, TsfOptions};
use timef::connectors::{OnMissing, TextEncoding};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let on_missing = if mode & 1 == 0 { OnMissing::Error } else { OnMissing::DropCase };
    let encoding = match (mode >> 1) % 3 {
        0 => TextEncoding::Utf8,
        1 => TextEncoding::Latin1,
        _ => TextEncoding::Cp1252,
    };
    if parse_tsf_bytes(std::path::Path::new("fuzz.tsf"), body, on_missing, encoding).is_ok() {
        let path = timef_fuzz::scratch_file("fuzz.tsf", body);
        let mut opts = TsfOptions::new("fuzz", "v1");
        opts.on_missing = on_missing;
        opts.encoding = encoding;
        if let Ok((ds, _)) = read_tsf_with_report(&path, &opts) {
            timef_fuzz::drain(ds);
        }
    }
});
