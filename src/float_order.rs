//! Float statistics every reader can use (`docs/format.md` §3, "Float
//! statistics and column order").
//!
//! parquet-rs 60.1 marks FLOAT and DOUBLE leaves with the column order
//! `IEEE_754_TOTAL_ORDER`, which readers written before that order existed
//! (pyarrow 26 among them) do not know, so they ignore those columns' min/max
//! and cannot prune row groups or pages on them. The crate has no property to
//! choose another order, so the writer keeps the footer it writes (page indexes
//! and `FileMetaData`, a few KiB) and rewrites it here before it reaches
//! storage: float leaves get `TYPE_DEFINED_ORDER`, and their statistics follow
//! that order's writing rule (parquet.thrift, `ColumnOrder`): a zero minimum is
//! written as -0.0 and a zero maximum as +0.0 (marked inexact if that changed
//! it). Every rewrite keeps the length, so no offset in the file moves.
//! TimeF stores finite values only, so NaN rules never apply.

use crate::thrift::{Cursor, PageError, T_BINARY, T_FALSE, T_I64, T_LIST, T_STRUCT, T_TRUE};

/// parquet.thrift `ColumnOrder` union: the compact field header of its member
/// 1 (`TYPE_ORDER`) and 2 (`IEEE_754_TOTAL_ORDER`), each an empty struct and
/// the union's first field.
const TYPE_ORDER_HEADER: u8 = (1 << 4) | T_STRUCT;
const TOTAL_ORDER_HEADER: u8 = (2 << 4) | T_STRUCT;

/// One in-place rewrite: bytes at an offset of the footer.
type Patch = (usize, Vec<u8>);

/// Rewrites the float leaves of the Parquet footer `tail` (the file's last
/// bytes from offset `tail_offset`, page indexes included, ending in the
/// `FileMetaData`, its length and `PAR1`) as the module describes.
/// `float_leaves[i]` says whether leaf column `i` is FLOAT or DOUBLE.
///
/// # Errors
/// A message when the footer is not as parquet-rs writes it (then nothing is
/// changed).
pub(crate) fn type_defined_float_order(tail: &mut [u8], tail_offset: u64, float_leaves: &[bool]) -> Result<(), String> {
    let n = tail.len();
    if n < 12 || &tail[n - 4..] != b"PAR1" {
        return Err("the footer does not end in PAR1".into());
    }
    let meta_len = u32::from_le_bytes([tail[n - 8], tail[n - 7], tail[n - 6], tail[n - 5]]) as usize;
    let meta_start = (n - 8).checked_sub(meta_len).ok_or("the footer length exceeds the bytes kept")?;
    let mut patches = Vec::new();
    let mut column_indexes = Vec::new();
    let mut c = Cursor { buf: &tail[..n - 8], pos: meta_start };
    file_metadata(&mut c, float_leaves, &mut patches, &mut column_indexes).map_err(|e| e.to_string())?;
    for offset in column_indexes {
        let start = offset
            .checked_sub(tail_offset)
            .and_then(|p| usize::try_from(p).ok())
            .filter(|&p| p < meta_start)
            .ok_or_else(|| format!("column index at byte {offset} is not in the footer kept"))?;
        let mut c = Cursor { buf: &tail[..meta_start], pos: start };
        column_index(&mut c, &mut patches).map_err(|e| e.to_string())?;
    }
    for (at, bytes) in patches {
        tail[at..at + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(())
}

/// Reads a list header: (element count, element type).
fn list(c: &mut Cursor) -> Result<(u64, u8), PageError> {
    let h = c.byte()?;
    let n = if h >> 4 == 15 { c.varint()? } else { u64::from(h >> 4) };
    Ok((n, h & 0x0f))
}

fn i64(c: &mut Cursor) -> Result<i64, PageError> {
    let raw = c.varint()?;
    Ok((raw >> 1) as i64 ^ -((raw & 1) as i64))
}

/// `FileMetaData`: row groups (4) and column orders (7).
fn file_metadata(
    c: &mut Cursor,
    float_leaves: &[bool],
    patches: &mut Vec<Patch>,
    column_indexes: &mut Vec<u64>,
) -> Result<(), PageError> {
    let mut last = 0;
    while let Some((id, ty)) = c.field(&mut last)? {
        match (id, ty) {
            (4, T_LIST) => {
                let (groups, elem) = list(c)?;
                for _ in 0..groups {
                    c.expect(id, elem, T_STRUCT)?;
                    row_group(c, float_leaves, patches, column_indexes)?;
                }
            }
            (7, T_LIST) => {
                let (orders, elem) = list(c)?;
                for leaf in 0..orders {
                    c.expect(id, elem, T_STRUCT)?;
                    let at = c.pos;
                    let mut inner = 0;
                    while let Some((_, t)) = c.field(&mut inner)? {
                        c.skip(t, 1, false)?;
                    }
                    let float = float_leaves.get(leaf as usize).copied().unwrap_or(false);
                    if float && c.buf.get(at) == Some(&TOTAL_ORDER_HEADER) {
                        patches.push((at, vec![TYPE_ORDER_HEADER]));
                    }
                }
            }
            _ => c.skip(ty, 0, false)?,
        }
    }
    Ok(())
}

/// `RowGroup`: its column chunks (1).
fn row_group(
    c: &mut Cursor,
    float_leaves: &[bool],
    patches: &mut Vec<Patch>,
    column_indexes: &mut Vec<u64>,
) -> Result<(), PageError> {
    let mut last = 0;
    while let Some((id, ty)) = c.field(&mut last)? {
        if (id, ty) != (1, T_LIST) {
            c.skip(ty, 1, false)?;
            continue;
        }
        let (columns, elem) = list(c)?;
        for leaf in 0..columns {
            c.expect(id, elem, T_STRUCT)?;
            let float = float_leaves.get(leaf as usize).copied().unwrap_or(false);
            column_chunk(c, float, patches, column_indexes)?;
        }
    }
    Ok(())
}

/// `ColumnChunk`: `meta_data` (3) and `column_index_offset` (6).
fn column_chunk(
    c: &mut Cursor,
    float: bool,
    patches: &mut Vec<Patch>,
    column_indexes: &mut Vec<u64>,
) -> Result<(), PageError> {
    let mut last = 0;
    while let Some((id, ty)) = c.field(&mut last)? {
        match (id, ty) {
            (3, T_STRUCT) if float => {
                let mut inner = 0;
                while let Some((id, ty)) = c.field(&mut inner)? {
                    match (id, ty) {
                        (12, T_STRUCT) => statistics(c, patches)?,
                        _ => c.skip(ty, 2, false)?,
                    }
                }
            }
            (6, T_I64) if float => {
                let offset = i64(c)?;
                column_indexes.push(u64::try_from(offset).map_err(|_| c.malformed("negative column index offset"))?);
            }
            _ => c.skip(ty, 1, false)?,
        }
    }
    Ok(())
}

/// The rewrite of one min or max value, when it is a zero of the wrong sign.
fn zero_fix(c: &Cursor, len: usize, min: bool) -> Option<Patch> {
    let bytes = c.buf.get(c.pos..c.pos + len)?;
    let fixed = match len {
        4 if f32::from_le_bytes(bytes.try_into().ok()?) == 0.0 => {
            (if min { -0.0f32 } else { 0.0f32 }).to_le_bytes().to_vec()
        }
        8 if f64::from_le_bytes(bytes.try_into().ok()?) == 0.0 => {
            (if min { -0.0f64 } else { 0.0f64 }).to_le_bytes().to_vec()
        }
        _ => return None,
    };
    (fixed != bytes).then_some((c.pos, fixed))
}

/// A binary value: its rewrite if it is a zero of the wrong sign, then skipped.
fn binary_value(c: &mut Cursor, min: bool) -> Result<Option<Patch>, PageError> {
    let len = c.varint()?;
    let fix = usize::try_from(len).ok().and_then(|len| zero_fix(c, len, min));
    c.skip_bytes(len)?;
    Ok(fix)
}

/// `Statistics`: `max` (1), `min` (2), `max_value` (5), `min_value` (6), and
/// the exactness flags (7, 8) of the latter two.
fn statistics(c: &mut Cursor, patches: &mut Vec<Patch>) -> Result<(), PageError> {
    let (mut max_changed, mut min_changed) = (false, false);
    let mut last = 0;
    loop {
        let at = c.pos;
        let Some((id, ty)) = c.field(&mut last)? else { break };
        match (id, ty) {
            (1 | 2 | 5 | 6, T_BINARY) => {
                if let Some(p) = binary_value(c, id % 2 == 0)? {
                    if id == 5 {
                        max_changed = true;
                    }
                    if id == 6 {
                        min_changed = true;
                    }
                    patches.push(p);
                }
            }
            (7, T_TRUE) if max_changed => patches.push((at, vec![(c.buf[at] & 0xf0) | T_FALSE])),
            (8, T_TRUE) if min_changed => patches.push((at, vec![(c.buf[at] & 0xf0) | T_FALSE])),
            _ => c.skip(ty, 3, false)?,
        }
    }
    Ok(())
}

/// `ColumnIndex`: `min_values` (2) and `max_values` (3) of every page.
fn column_index(c: &mut Cursor, patches: &mut Vec<Patch>) -> Result<(), PageError> {
    let mut last = 0;
    while let Some((id, ty)) = c.field(&mut last)? {
        match (id, ty) {
            (2 | 3, T_LIST) => {
                let (pages, elem) = list(c)?;
                for _ in 0..pages {
                    c.expect(id, elem, T_BINARY)?;
                    if let Some(p) = binary_value(c, id == 2)? {
                        patches.push(p);
                    }
                }
            }
            _ => c.skip(ty, 1, false)?,
        }
    }
    Ok(())
}
