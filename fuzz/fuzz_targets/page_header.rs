//! The thrift page-header decoder: one header from the start of the input,
//! then a walk over the input as one column chunk's pages (with CRCs). The
//! first byte picks where the chunk claims to start in its file (0, 4, far out,
//! next to `u64::MAX`) and whether it claims more bytes than there are, as a
//! crafted footer may.
#![no_main]

use libfuzzer_sys::fuzz_target;
use timef::thrift::{chunk_pages, PageHeader};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let _ = std::hint::black_box(PageHeader::decode(body));
    let start = [0, 4, 1 << 62, u64::MAX - 16][usize::from(pick & 3)];
    let len = body.len() as u64 + if pick & 4 == 0 { 0 } else { 1000 };
    for page in chunk_pages(body, start, len) {
        if page.is_err() {
            break;
        }
    }
});
