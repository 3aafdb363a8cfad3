//! The `.ts` (UCR/UEA, sktime) parser: from bytes with every encoding and
//! missing-value policy (chosen by the first byte), then, for a file that
//! parses, the whole connector over it and every series loader.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timef::connectors::ucr::{parse_ts, read_ucr_with_report, UcrOptions};
use timef::connectors::{OnMissing, TextEncoding};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let on_missing = if mode & 1 == 0 { OnMissing::Error } else { OnMissing::DropCase };
    let encoding = match (mode >> 1) % 3 {
        0 => TextEncoding::Utf8,
        1 => TextEncoding::Latin1,
        _ => TextEncoding::Cp1252,
    };
    let label = std::path::Path::new("fuzz_TRAIN.ts");
    let parsed = match encoding.decode(body) {
        Ok(text) if encoding != TextEncoding::Utf8 => parse_ts(label, text.as_bytes(), on_missing),
        _ => parse_ts(label, body, on_missing),
    };
    if parsed.is_ok() {
        let path = timef_fuzz::scratch_file("fuzz_TRAIN.ts", body);
        let opts = UcrOptions::new("fuzz", "v1").with_on_missing(on_missing).with_encoding(encoding);
        if let Ok((ds, _)) = read_ucr_with_report(&[path], &opts) {
            timef_fuzz::drain(ds);
        }
    }
});
