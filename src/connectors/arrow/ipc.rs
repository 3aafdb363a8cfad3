//! Arrow IPC input (file or stream), memory-mapped and decoded zero-copy one
//! record batch at a time: every block and message is checked against the
//! file's size and the limits below before arrow-ipc's decoders see it.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;

use crate::connectors::unreadable;
use crate::error::{Error, Result};
use crate::footer::contain;

/// Largest size in bytes a compressed IPC buffer may claim to decompress to
/// (1 GiB): the claim is read from the file and would be allocated at once.
pub const MAX_IPC_BUFFER_BYTES: i64 = 1 << 30;

/// Bytes all dictionary batches of one input may decode to together (256 MiB):
/// arrow-ipc keeps every dictionary (and each delta appended to it) for the
/// whole input, so they are held at once.
pub const MAX_IPC_DICTIONARY_BYTES: i64 = 256 << 20;

/// Why the IPC message `message` with body `body` cannot be decoded safely, or
/// `None`: every buffer lies inside the body, no compressed buffer claims to
/// decompress past [`MAX_IPC_BUFFER_BYTES`] or past what the process can
/// allocate, no array claims more rows than 8 per byte of its buffers (a
/// validity bit each) plus 64, and the dictionary batches so far (counted in
/// `dictionary_bytes`) decode to at most [`MAX_IPC_DICTIONARY_BYTES`]. Checked
/// before arrow-ipc sees the message, which slices and allocates from these
/// numbers unchecked.
fn ipc_message_problem(message: &arrow_ipc::Message, body: &[u8], dictionary_bytes: &mut i64) -> Option<String> {
    let batch = match message.header_type() {
        arrow_ipc::MessageHeader::Schema => return None,
        arrow_ipc::MessageHeader::RecordBatch => message.header_as_record_batch()?,
        arrow_ipc::MessageHeader::DictionaryBatch => match message.header_as_dictionary_batch()?.data() {
            Some(b) => b,
            None => return Some("dictionary batch without data".into()),
        },
        other => return Some(format!("unexpected message {other:?}")),
    };
    let body_len = body.len() as i64;
    // bytes the buffers hold once decompressed
    let mut decoded: i64 = 0;
    for buffer in batch.buffers().iter().flatten() {
        let (offset, len) = (buffer.offset(), buffer.length());
        if offset < 0 || len < 0 || offset.checked_add(len).is_none_or(|end| end > body_len) {
            return Some(format!("buffer {offset}..+{len} lies beyond the {body_len}-byte body"));
        }
        let mut bytes = len;
        if batch.compression().is_some() && len >= 8 {
            let at = offset as usize;
            let claimed = body[at..at + 8].try_into().map(i64::from_le_bytes).unwrap_or(-1);
            if claimed > MAX_IPC_BUFFER_BYTES {
                return Some(format!("a compressed buffer claims {claimed} bytes (at most {MAX_IPC_BUFFER_BYTES})"));
            }
            if let Some(why) = crate::footer::claim_problem(u64::try_from(claimed).unwrap_or(0)) {
                return Some(format!("a compressed buffer claims {claimed} bytes: {why}"));
            }
            bytes = bytes.max(claimed);
        }
        decoded = decoded.saturating_add(bytes);
    }
    if message.header_type() == arrow_ipc::MessageHeader::DictionaryBatch {
        *dictionary_bytes = dictionary_bytes.saturating_add(decoded);
        if *dictionary_bytes > MAX_IPC_DICTIONARY_BYTES {
            return Some(format!(
                "dictionary batches decode to more than {MAX_IPC_DICTIONARY_BYTES} bytes together ({} so far)",
                *dictionary_bytes
            ));
        }
    }
    let max_rows = decoded.saturating_mul(8).saturating_add(64);
    if !(0..=max_rows).contains(&batch.length()) {
        return Some(format!("record batch claims {} rows in {decoded} bytes of buffers", batch.length()));
    }
    for node in batch.nodes().iter().flatten() {
        if !(0..=max_rows).contains(&node.length()) || !(0..=node.length()).contains(&node.null_count()) {
            let (rows, nulls) = (node.length(), node.null_count());
            return Some(format!("array claims {rows} rows ({nulls} null) in {decoded} bytes of buffers"));
        }
    }
    None
}

/// The message at the start of `bytes` (a continuation marker and length, or
/// the legacy bare length, then the flatbuffer): the message and the bytes its
/// metadata takes, checked to lie inside `bytes`. `Ok(None)` at an end-of-stream marker.
fn ipc_message(bytes: &[u8]) -> std::result::Result<Option<(arrow_ipc::Message<'_>, usize)>, String> {
    let word = |at: usize| bytes.get(at..at + 4).map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    let (prefix, len) = match word(0) {
        Some(-1) => (8, word(4)),
        other => (4, other),
    };
    let len = len.ok_or("truncated message prefix")?;
    if len == 0 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| format!("negative message length {len}"))?;
    let end = prefix + len;
    let flatbuffer =
        bytes.get(prefix..end).ok_or_else(|| format!("message of {len} bytes beyond the end of the file"))?;
    let message = arrow_ipc::root_as_message(flatbuffer).map_err(|e| format!("bad message: {e}"))?;
    Ok(Some((message, end)))
}

/// The file mapped read-only, for zero-copy decoding.
pub(super) fn map_ipc(path: &Path) -> Result<Arc<memmap2::Mmap>> {
    let file = File::open(path).map_err(|e| unreadable(path, e))?;
    // SAFETY: the mapping is read-only; like every mmap-based reader, a file
    // truncated by another process while it is read is outside the contract
    // (docs/format.md "Limits a reader checks").
    Ok(Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?))
}

/// Why an IPC input stops: its bytes, or what the caller did with a batch.
enum IpcStop {
    Bad(String),
    Batch(Error),
}

impl From<String> for IpcStop {
    fn from(why: String) -> IpcStop {
        IpcStop::Bad(why)
    }
}

impl From<&str> for IpcStop {
    fn from(why: &str) -> IpcStop {
        IpcStop::Bad(why.to_string())
    }
}

/// Runs an arrow-ipc decoder call, its panics on crafted bytes contained.
fn ipc_call<T>(
    f: impl FnOnce() -> std::result::Result<T, arrow_schema::ArrowError>,
) -> std::result::Result<T, IpcStop> {
    contain(f).map_err(IpcStop::Bad)?.map_err(|e| IpcStop::Bad(e.to_string()))
}

/// Decodes the record batches of the mapped IPC file or stream `map` one at a
/// time, zero-copy, with arrow-ipc's decoders, after checking every block and
/// message against the file's size ([`ipc_message_problem`]), and hands each
/// to `each` before the next is decoded: memory holds one decoded batch (a
/// compressed input's batches are decompressed one by one).
pub(super) fn decode_ipc(
    path: &Path,
    map: &Arc<memmap2::Mmap>,
    each: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let bad = |e: String| Error::input(path, None, format!("not a readable Arrow IPC file or stream: {e}"));
    let ptr = std::ptr::NonNull::new(map.as_ptr() as *mut u8).ok_or_else(|| Error::input(path, None, "empty file"))?;
    // SAFETY: the buffer covers exactly the mapping, which `map` keeps alive.
    let buffer = unsafe {
        Buffer::from_custom_allocation(ptr, map.len(), Arc::clone(map) as Arc<dyn arrow_buffer::alloc::Allocation>)
    };
    let result = if buffer.len() >= 16 && &buffer[..6] == b"ARROW1" {
        decode_ipc_file(&buffer, each)
    } else {
        decode_ipc_stream(&buffer, each)
    };
    match result {
        Ok(()) => Ok(()),
        Err(IpcStop::Bad(why)) => Err(bad(starts_as_text(&buffer).unwrap_or(why))),
        Err(IpcStop::Batch(e)) => Err(e),
    }
}

/// Why an input that starts as text is no Arrow input, naming the connectors
/// of the text formats (review 146: a `.ts` file gave "message of 1701336099
/// bytes beyond the end of the file"). Text in any 8-bit encoding (UTF-8,
/// after its byte order mark, Latin-1, cp1252: review 148) holds no control
/// byte but whitespace in its first 32, where an IPC stream's message length
/// holds a zero byte (as do most binary formats' headers: review 149); UTF-16
/// is known by its byte order mark (not UTF-32's, `ff fe 00 00`).
fn starts_as_text(bytes: &[u8]) -> Option<String> {
    const READ_BY: &str = "not as Arrow or Parquet: a UCR/UEA .ts file is read by `timef ingest ucr`, a Monash .tsf \
                           file by `timef ingest tsf`";
    let utf16 = (bytes.starts_with(b"\xff\xfe") && !bytes[2..].starts_with(b"\0\0")) || bytes.starts_with(b"\xfe\xff");
    if utf16 {
        return Some(format!("it starts as UTF-16 text (a byte order mark), {READ_BY}"));
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let head = &body[..body.len().min(32)];
    let texty = |b: &u8| (*b >= 0x20 && *b != 0x7f) || matches!(b, b'\t' | b'\n' | b'\r' | 0x0c);
    (head.len() >= 8 && head.iter().all(texty)).then(|| {
        // UTF-8 up to a character the cut at 32 bytes split, else as Latin-1 would read
        let shown: String = match std::str::from_utf8(head) {
            Ok(s) => s.chars().take(24).collect(),
            Err(e) if e.error_len().is_none() => {
                String::from_utf8_lossy(&head[..e.valid_up_to()]).chars().take(24).collect()
            }
            Err(_) => String::from_utf8_lossy(head).chars().take(24).collect(),
        };
        format!("it starts as text ({shown:?}…), {READ_BY}")
    })
}

/// The record batches of an IPC file (`ARROW1` magic, footer with blocks).
fn decode_ipc_file(
    buffer: &Buffer,
    each: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> std::result::Result<(), IpcStop> {
    use arrow_ipc::reader::{read_footer_length, FileDecoder};
    let trailer = buffer.len() - 10;
    let tail: [u8; 10] = buffer[trailer..].try_into().map_err(|_| "truncated IPC file")?;
    let footer_len = ipc_call(|| read_footer_length(tail))?;
    let footer_start =
        trailer.checked_sub(footer_len).filter(|&s| s >= 8).ok_or("footer beyond the start of the file")?;
    let footer = arrow_ipc::root_as_footer(&buffer[footer_start..trailer]).map_err(|e| format!("bad footer: {e}"))?;
    let schema = footer.schema().ok_or("footer without schema")?;
    let schema = Arc::new(ipc_call(|| arrow_ipc::convert::try_fb_to_schema(schema))?);
    let mut decoder = FileDecoder::new(schema, footer.version());
    let mut dictionary_bytes = 0i64;
    let block_data = |block: &arrow_ipc::Block, dictionary_bytes: &mut i64| -> std::result::Result<Buffer, IpcStop> {
        let (offset, meta_len, body_len) = (block.offset(), i64::from(block.metaDataLength()), block.bodyLength());
        let end = offset.checked_add(meta_len).and_then(|e| e.checked_add(body_len));
        if offset < 8 || meta_len < 8 || body_len < 0 || end.is_none_or(|end| end > footer_start as i64) {
            return Err(format!("block {offset}..+{meta_len}+{body_len} lies outside the file's data").into());
        }
        let (start, meta_len) = (offset as usize, meta_len as usize);
        let bytes = &buffer[start..start + meta_len + body_len as usize];
        let (message, _) = ipc_message(&bytes[..meta_len])?.ok_or("a block holds an end-of-stream marker")?;
        if let Some(problem) = ipc_message_problem(&message, &bytes[meta_len..], dictionary_bytes) {
            return Err(problem.into());
        }
        Ok(buffer.slice_with_length(start, bytes.len()))
    };
    for block in footer.dictionaries().iter().flatten() {
        let data = block_data(block, &mut dictionary_bytes)?;
        ipc_call(|| decoder.read_dictionary(block, &data))?;
    }
    for block in footer.recordBatches().iter().flatten() {
        let data = block_data(block, &mut dictionary_bytes)?;
        if let Some(batch) = ipc_call(|| decoder.read_record_batch(block, &data))? {
            each(batch).map_err(IpcStop::Batch)?;
        }
    }
    Ok(())
}

/// The record batches of an IPC stream; each message's framing is checked
/// to lie inside the file before the decoder sees it (it would otherwise
/// wait, allocating, for a body the file does not hold).
fn decode_ipc_stream(
    buffer: &Buffer,
    each: &mut dyn FnMut(RecordBatch) -> Result<()>,
) -> std::result::Result<(), IpcStop> {
    let (mut at, mut dictionary_bytes) = (0, 0i64);
    while at < buffer.len() {
        let Some((message, meta_end)) = ipc_message(&buffer[at..])? else { break };
        let body_len = usize::try_from(message.bodyLength()).map_err(|_| "negative body length")?;
        let body = buffer[at + meta_end..]
            .get(..body_len)
            .ok_or_else(|| format!("message body of {body_len} bytes beyond the end of the file"))?;
        if let Some(problem) = ipc_message_problem(&message, body, &mut dictionary_bytes) {
            return Err(problem.into());
        }
        at += meta_end + body_len;
    }
    let mut decoder = arrow_ipc::reader::StreamDecoder::new();
    let mut rest = buffer.clone();
    while !rest.is_empty() {
        match ipc_call(|| decoder.decode(&mut rest))? {
            Some(batch) => each(batch).map_err(IpcStop::Batch)?,
            None if rest.is_empty() => break,
            None => continue,
        }
    }
    ipc_call(|| decoder.finish())?;
    Ok(())
}
