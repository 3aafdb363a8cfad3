//! How much of an edited version's shard bytes a deduplicating store already
//! holds from the base (issue 4, "Dedup after an edit").
//!
//! Every page of every shard (dictionary and data pages, each with its header)
//! is located through the footer and the offset index, hashed with sha256, and
//! the new version's pages whose bytes also occur as a page of the base count
//! as shared. A shard file equal to a base shard file (an edit that copied it
//! whole: the same size and sha256 in the two manifests, and its bytes as
//! read hash to that sha256) is shared whole, its footer and page indexes
//! too, as a store deduplicating files or blocks would hold it once; its
//! pages are then counted without hashing each again. The figure is
//! `(shared page bytes + the other bytes of the files shared whole) / all
//! shard bytes of the new version` (the footers and indexes of other files
//! count in the denominator only).

use std::collections::HashSet;
use std::path::Path;

use parquet::file::metadata::PageIndexPolicy;
use parquet::file::reader::{ChunkReader, Length};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::footer::{contain, read_metadata, version_parquet_error};
use crate::reader::Version;
use crate::storage::Location;

/// The dedup figure of a new version against its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct DedupReport {
    /// Bytes of all shard files of the new version.
    pub new_shard_bytes: u64,
    /// Shard files of the new version.
    pub new_files: u64,
    /// Pages in the new version's shards.
    pub new_pages: u64,
    /// Those pages whose bytes equal a page of the base.
    pub shared_pages: u64,
    /// Bytes (headers included) of the shared pages.
    pub shared_page_bytes: u64,
    /// Shard files equal to a shard file of the base (size and sha256 in the
    /// manifests, and the file's bytes hashed again here): their pages are
    /// among the shared ones.
    pub shared_files: u64,
    /// Bytes of those files outside their pages: magic, footer, page indexes.
    pub shared_footer_bytes: u64,
}

impl DedupReport {
    /// `(shared_page_bytes + shared_footer_bytes) / new_shard_bytes` (0 for
    /// an empty version).
    pub fn shared_ratio(&self) -> f64 {
        if self.new_shard_bytes == 0 {
            0.0
        } else {
            (self.shared_page_bytes + self.shared_footer_bytes) as f64 / self.new_shard_bytes as f64
        }
    }
}

/// Calls `f(page bytes)` for every page of the Parquet file at `loc`, read
/// one column chunk at a time (one ranged read each; never a mapping, which a
/// file truncated meanwhile would turn into a crash); returns the file's size.
/// The footer's sizes and every page location are checked against the file
/// and the column chunk before anything is read.
fn for_each_page(loc: &Location, mut f: impl FnMut(&[u8])) -> Result<u64> {
    let path = &loc.to_path_buf();
    let source = loc.open()?;
    let failure = source.read_failure();
    let meta = contain(|| read_metadata(&source, PageIndexPolicy::Required, PageIndexPolicy::Skip))
        .map_err(|panic| Error::Corrupt { path: path.clone(), reason: panic })?
        .map_err(|e| version_parquet_error(path, e))?;
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let pages = meta.page_index_for_row_group(g);
        for (c, chunk) in rg.columns().iter().enumerate() {
            let locations = pages
                .offset_index(c)
                .ok_or_else(|| Error::Corrupt {
                    path: path.into(),
                    reason: format!("row group {g} column {c}: no offset index"),
                })?
                .page_locations();
            // read_metadata checked: the chunk lies in the file, its pages in the chunk, in order
            let (start, len) = chunk.byte_range();
            let bytes =
                source.get_bytes(start, usize::try_from(len).unwrap_or(usize::MAX)).map_err(|e| {
                    match failure.take() {
                        Some(io) => crate::storage::read_failed(path, io),
                        None => version_parquet_error(path, e),
                    }
                })?;
            let slice = |offset: i64, len: i64| {
                let from = u64::try_from(offset).ok().and_then(|o| o.checked_sub(start));
                let range = from.zip(u64::try_from(len).ok()).and_then(|(s, l)| Some(s as usize..(s + l) as usize));
                range.and_then(|r| bytes.get(r)).ok_or_else(|| Error::Corrupt {
                    path: path.into(),
                    reason: format!("row group {g} column {c}: page at {offset}..+{len} lies outside its column chunk"),
                })
            };
            if let (Some(dict), Some(first)) = (chunk.dictionary_page_offset(), locations.first()) {
                f(slice(dict, first.offset.saturating_sub(dict))?);
            }
            for page in locations {
                f(slice(page.offset, i64::from(page.compressed_page_size))?);
            }
        }
    }
    Ok(source.len())
}

/// The lowercase hex sha256 of the file at `loc`, streamed.
fn sha256_of(loc: &Location) -> Result<String> {
    let mut hasher = Sha256::new();
    loc.stream(&mut |b| {
        hasher.update(b);
        Ok(())
    })?;
    Ok(hex::encode(hasher.finalize()))
}

/// The shard files of `v`, each checked by the path rules (docs/format.md
/// "Paths inside a version") before any is opened, with their `(bytes,
/// sha256)` as the manifest records them.
fn shards(v: &Version) -> Result<Vec<(Location, (u64, String))>> {
    let listed = v.manifest().files.iter().enumerate().filter(|(_, f)| f.path.starts_with("time_series/"));
    listed
        .map(|(i, f)| Ok((v.file(&f.path, || format!("manifest.json files[{i}]"))?, (f.bytes, f.sha256.clone()))))
        .collect()
}

/// Measures the new version at `new_dir` against the base at `base_dir` (paths
/// whose text is a URL are URLs; see [`measure_at`]).
pub fn measure(base_dir: &Path, new_dir: &Path) -> Result<DedupReport> {
    measure_at(&Location::from_path(base_dir)?, &Location::from_path(new_dir)?)
}

/// [`measure`] of versions at [`Location`]s (each local or on any store).
pub fn measure_at(base_dir: &Location, new_dir: &Location) -> Result<DedupReport> {
    let (base, new) = (Version::open_at(base_dir.clone())?, Version::open_at(new_dir.clone())?);
    // both indexes read and checked: a version that breaks its rules is refused, not measured
    base.index()?;
    new.index()?;
    let mut known: HashSet<[u8; 32]> = HashSet::new();
    let mut files = HashSet::new();
    for (path, recorded) in shards(&base)? {
        for_each_page(&path, |page| {
            known.insert(Sha256::digest(page).into());
        })?;
        files.insert(recorded);
    }
    let mut r = DedupReport::default();
    for (path, recorded) in shards(&new)? {
        // a file the manifests say is the base's counts whole only if its bytes
        // are those (a copy with a changed footer keeps its manifest's claim);
        // then every page of it is a base page, shared without a hash of its own
        let whole = files.contains(&recorded) && sha256_of(&path)? == recorded.1;
        let mut page_bytes = 0;
        let size = for_each_page(&path, |page| {
            r.new_pages += 1;
            page_bytes += page.len() as u64;
            if whole || known.contains(&<[u8; 32]>::from(Sha256::digest(page))) {
                r.shared_pages += 1;
                r.shared_page_bytes += page.len() as u64;
            }
        })?;
        r.new_shard_bytes += size;
        r.new_files += 1;
        // the file read is the one hashed (a file that changed in between is not shared whole)
        if whole && size == recorded.0 {
            r.shared_files += 1;
            r.shared_footer_bytes += size.saturating_sub(page_bytes);
        }
    }
    Ok(r)
}
