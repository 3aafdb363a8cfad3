//! Issue 25 §2: an edit stores the base's unchanged `values` pages as their
//! compressed bytes and compresses only the pages that changed, and its files
//! stay byte-identical to a fresh write of the same dataset (`docs/format.md` §7).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use proptest::prelude::*;
use timef::edit::{apply, Cascade, Edit};
use timef::reader::Version;
use timef::storage::Location;
use timef::writer::CopyStats;
use timef::{Annotation, SeriesMeta, TimeFDataset, TimeFWriter, WriterOptions};

use common::*;

/// `n` samples `s000`.., each with one series `x000`.. of `len(i)` values
/// (seeded by `i`), one label each.
fn dataset(name: &str, n: usize, len: impl Fn(usize) -> usize) -> TimeFDataset {
    dataset_seeded("v1", n, len, |i| i as u32, name, &|i| format!("x{i:03}"))
}

/// [`dataset`] at `version`, series `i` named `id(i)`, its values seeded by `seed(i)`.
fn dataset_seeded(
    version: &str,
    n: usize,
    len: impl Fn(usize) -> usize,
    seed: impl Fn(usize) -> u32,
    name: &str,
    id: &dyn Fn(usize) -> String,
) -> TimeFDataset {
    let mut d = dataset_with_source(name, version);
    for i in 0..n {
        let (sid, xid) = (format!("s{i:03}"), id(i));
        add_series(&mut d, &xid, "eeg", "C3", 256.0, seed(i), len(i));
        d.add_sample(timef::Sample {
            sample_id: sid.clone(),
            source_id: "src".into(),
            series: main_refs(&[&xid]),
            ..Default::default()
        })
        .unwrap();
        d.add_annotation(label(&sid, "a"), std::slice::from_ref(&sid)).unwrap();
    }
    d
}

fn label(sample: &str, value: &str) -> Annotation {
    Annotation {
        annotation_id: format!("{sample}/class-{value}"),
        annotation_type: "label".into(),
        key: "class".into(),
        value_str: Some(value.into()),
        ..Default::default()
    }
}

/// Every file of the version at `dir`, relative path and bytes, sorted by path.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    listed_files(dir).into_iter().map(|rel| (rel.clone(), std::fs::read(dir.join(&rel)).unwrap())).collect()
}

/// Writes `base_dir`'s dataset with `change` applied as version `v2` twice: under
/// `root/copied` with the base (pages copied) and under `root/fresh`
/// without it (every page compressed); returns both directories and what
/// the first copied.
fn edit_both(root: &Path, base_dir: &Path, change: &dyn Fn(&mut TimeFDataset)) -> (PathBuf, PathBuf, CopyStats) {
    let base = Arc::new(Version::open(base_dir).unwrap());
    let name = base.manifest().dataset.name.clone();
    let options = timef::edit::base_options(&base).unwrap();
    let write = |under: &str, with_base: bool| {
        let mut d = base.to_dataset(&name, "v2").unwrap();
        change(&mut d);
        let mut w = TimeFWriter::new(root.join(under), options);
        if with_base {
            w = w.with_base(Arc::clone(&base));
        }
        let staged = w.write(d).unwrap_or_else(|e| panic!("write {under}: {e}"));
        let stats = staged.copied();
        (staged.commit().unwrap(), stats)
    };
    let (copied, stats) = write("copied", true);
    let (fresh, fresh_stats) = write("fresh", false);
    assert_eq!(fresh_stats.pages_copied + fresh_stats.bytes_read, 0);
    assert_eq!(stats.pages_copied + stats.pages_encoded, fresh_stats.pages_encoded);
    (copied, fresh, stats)
}

/// The two versions' files are equal byte for byte (the manifests too: both
/// were written with the same name, version and no lineage).
fn assert_same_bytes(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    assert_eq!(fa.iter().map(|f| &f.0).collect::<Vec<_>>(), fb.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((path, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{path} differs: {} vs {} bytes", x.len(), y.len());
    }
    assert_eq!(std::fs::read(a.join("manifest.json")).unwrap(), std::fs::read(b.join("manifest.json")).unwrap());
}

/// Removes samples `ids` from `d` (refusing a cascade); no series is added,
/// so no base values are read.
fn remove(d: &mut TimeFDataset, ids: &[&str]) {
    let mut edit = Edit::remove_samples(ids.iter().copied(), Cascade::Refuse);
    apply(d, &mut edit, &|ids| panic!("no added series to compare, asked for {ids:?}")).unwrap();
}

/// 40 series of 500..1100 values under `small_options` (256-value chunks,
/// 4 KiB row groups, 16 KiB shards): 19 row groups of one `values` page each.
fn base(root: &Path) -> PathBuf {
    commit(&root.join("base"), dataset("ds", 40, |i| 500 + (i * 37) % 600), small_options())
}

fn row_groups(dir: &Path) -> usize {
    let v = Version::open(dir).unwrap();
    let mut groups: Vec<(String, i32)> =
        v.index().unwrap().iter().map(|e| (e.shard_path.clone(), e.row_group)).collect();
    groups.dedup();
    groups.len()
}

#[test]
fn removing_one_sample_copies_every_page_but_the_one_that_held_it() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    assert_eq!(row_groups(&base_dir), 19);
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| {
        remove(d, &["s017"]);
    });
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        stats,
        CopyStats { pages_copied: 18, pages_encoded: 1, pages_decoded: 1, shards_copied: 2, bytes_read: 33971 }
    );
}

#[test]
fn removing_two_percent_and_one_series_copies_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| {
        remove(d, &["s003", "s031"]);
    });
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        stats,
        CopyStats { pages_copied: 14, pages_encoded: 4, pages_decoded: 7, shards_copied: 3, bytes_read: 38049 }
    );
}

#[test]
fn a_relabel_copies_every_page() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| {
        d.add_annotation(label("s010", "b"), &["s010".to_string()]).unwrap();
    });
    assert_same_bytes(&copied, &fresh);
    assert_eq!(stats.pages_encoded, 0);
    assert_eq!(stats.pages_copied, 19);
    // a copied page is never decompressed
    assert_eq!(stats.pages_decoded, 0);
    // every shard is a copy of the base's file: only footers, page indexes and
    // the key columns (checked against the index) are read
    let shards = Version::open(&base_dir).unwrap().manifest().counts.shards;
    assert_eq!((stats.shards_copied, shards), (7, 7));
    let shard_bytes: u64 = Version::open(&base_dir)
        .unwrap()
        .manifest()
        .files
        .iter()
        .filter(|f| f.path.starts_with("time_series/"))
        .map(|f| f.bytes)
        .sum();
    assert_eq!((stats.bytes_read, shard_bytes), (20071, 47653));
}

#[test]
fn an_added_series_is_encoded_until_the_cuts_meet_again() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| {
        let v = values(99, 900);
        d.add_series(SeriesMeta::new("x020-new", "eeg", "C3", 256.0), Box::new(move || Ok(v.into()))).unwrap();
        d.add_sample(timef::Sample {
            sample_id: "s020-new".into(),
            source_id: "src".into(),
            series: main_refs(&["x020-new"]),
            ..Default::default()
        })
        .unwrap();
    });
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        stats,
        CopyStats { pages_copied: 12, pages_encoded: 7, pages_decoded: 13, shards_copied: 4, bytes_read: 36554 }
    );
}

/// The base's series lengths; the same dataset with `x010`'s values seeded 99.
fn base_len(i: usize) -> usize {
    500 + (i * 37) % 600
}
fn x010_reseeded(version: &str) -> TimeFDataset {
    dataset_seeded(version, 40, base_len, |i| if i == 10 { 99 } else { i as u32 }, "ds", &|i| format!("x{i:03}"))
}

/// Files of `dir` but the manifest (whose lineage an edit adds), relative path and bytes.
fn files_sans_manifest(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir).into_iter().filter(|(p, _)| p != "manifest.json").collect()
}

#[test]
fn a_with_base_write_runs_a_foreign_loader_of_a_series_the_base_holds() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let base = Arc::new(Version::open(&base_dir).unwrap());
    // the same ids and metadata as the base, every loader foreign, x010's values other
    let staged = TimeFWriter::new(root.path().join("copied"), small_options())
        .with_base(base)
        .write(x010_reseeded("v1"))
        .unwrap();
    let stats = staged.copied();
    let copied = staged.commit().unwrap();
    let fresh = commit(&root.path().join("fresh"), x010_reseeded("v1"), small_options());
    assert_same_bytes(&copied, &fresh);
    let got = Version::open(&copied).unwrap().read_series("x010").unwrap();
    assert_eq!(got.to_vec(), values(99, base_len(10)));
    // no series' values are the base's own: every loader runs, every page is compressed
    assert_eq!(
        stats,
        CopyStats { pages_copied: 0, pages_encoded: 19, pages_decoded: 0, shards_copied: 0, bytes_read: 0 }
    );
}

#[test]
fn an_edit_removing_and_re_adding_a_series_with_other_values_writes_the_new_values() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let mut added = dataset_with_source("ds", "v1");
    add_series(&mut added, "x010", "eeg", "C3", 256.0, 99, base_len(10));
    added
        .add_sample(timef::Sample {
            sample_id: "s010".into(),
            source_id: "src".into(),
            series: main_refs(&["x010"]),
            ..Default::default()
        })
        .unwrap();
    added.add_annotation(label("s010", "a"), &["s010".to_string()]).unwrap();
    let edit = Edit { add: vec![added], ..Edit::remove_samples(["s010"], Cascade::Refuse) };
    let (dir, _) = timef::edit::edit_version(&base_dir, &root.path().join("edited"), "v2", edit).unwrap();
    let fresh = commit(&root.path().join("fresh"), x010_reseeded("v2"), small_options());
    assert_eq!(files_sans_manifest(&dir), files_sans_manifest(&fresh));
    let got = Version::open(&dir).unwrap().read_series("x010").unwrap();
    assert_eq!(got.to_vec(), values(99, base_len(10)));
}

#[test]
fn other_options_than_the_bases_copy_nothing_and_read_no_shard() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let base = Arc::new(Version::open(&base_dir).unwrap());
    let d = base.to_dataset("ds", "v2").unwrap();
    let other = WriterOptions::builder().chunk_max_bytes(2048).row_group_target_bytes(4096).try_build().unwrap();
    let staged = TimeFWriter::new(root.path().join("other"), other).with_base(base).write(d).unwrap();
    let c = staged.copied();
    assert_eq!((c.pages_copied, c.bytes_read), (0, 0));
    assert!(c.pages_encoded > 0);
}

/// [`base`]'s dataset written on a new memory store named `url` under
/// `root`: the store, its root and the version.
fn memory_base(url: &str) -> (Arc<dyn ObjectStore>, Location, Arc<Version>) {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let mem = Location::from_object_store(Arc::clone(&store), url, "root").unwrap();
    TimeFWriter::at(mem.clone(), small_options())
        .write(dataset("ds", 40, |i| 500 + (i * 37) % 600))
        .unwrap()
        .commit()
        .unwrap();
    let base = Arc::new(Version::open_at(mem.join("ds/v1")).unwrap());
    (store, mem, base)
}

#[test]
fn an_edit_on_a_memory_store_writes_the_local_edits_bytes() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let (local, _, local_stats) = edit_both(root.path(), &base_dir, &|d| {
        remove(d, &["s017"]);
    });
    // the same base on memory://, written by the writer
    let (store, mem, base) = memory_base("memory://splice");
    let mut d = base.to_dataset("ds", "v2").unwrap();
    remove(&mut d, &["s017"]);
    let out = mem.join("edited");
    let staged = TimeFWriter::at(out, small_options()).with_base(base).write(d).unwrap();
    let stats = staged.copied();
    staged.commit().unwrap();
    assert_eq!(stats, local_stats, "the same copies and the same bytes read");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let prefix = ObjPath::from("root/edited/ds/v2");
    let listed: Vec<_> = rt.block_on(store.list(Some(&prefix)).collect::<Vec<_>>());
    let mut remote: Vec<(String, Vec<u8>)> = listed
        .into_iter()
        .map(|m| {
            let m = m.unwrap();
            let rel = m.location.as_ref().trim_start_matches("root/edited/ds/v2/").to_string();
            let bytes = rt.block_on(async { store.get(&m.location).await.unwrap().bytes().await.unwrap() });
            (rel, bytes.to_vec())
        })
        .collect();
    remote.sort();
    let mut want = files(&local);
    want.push(("manifest.json".into(), std::fs::read(local.join("manifest.json")).unwrap()));
    want.sort();
    assert_eq!(remote.len(), want.len());
    for ((p, a), (q, b)) in remote.iter().zip(&want) {
        assert_eq!(p, q);
        assert!(a == b, "{p} differs");
    }
}

/// Row groups of several `values` pages: 48 series of 20 000..80 000 values,
/// 64 KiB chunks, 2 MiB row groups, 8 MiB shards.
#[test]
fn removing_one_sample_copies_the_pages_around_it() {
    let root = tempfile::tempdir().unwrap();
    let options = WriterOptions::builder()
        .chunk_max_bytes(64 << 10)
        .row_group_target_bytes(2 << 20)
        .shard_target_bytes(8 << 20)
        .try_build()
        .unwrap();
    let base_dir = commit(&root.path().join("base"), dataset("ds", 48, |i| 20_000 + (i * 7919) % 60_000), options);
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| {
        remove(d, &["s021"]);
    });
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        stats,
        CopyStats { pages_copied: 21, pages_encoded: 6, pages_decoded: 8, shards_copied: 0, bytes_read: 223552 }
    );
    // the removal moves the row groups' cuts, so base row groups go in part to
    // two row groups of the write: each part is read, not the whole twice.
    // Read so, it was 313 675 bytes, 1.47 times the base's shards; now it is
    // the shards' bytes, the footers, the rows' key columns (checked against
    // the index) and the pages holding rows on both sides of a cut once more
    let shard_bytes: usize =
        files(&base_dir).iter().filter(|(rel, _)| rel.starts_with("time_series/")).map(|(_, b)| b.len()).sum();
    assert_eq!(shard_bytes, 213_060);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random small datasets and random removals: the edit with its base is
    /// byte-identical to the fresh write.
    #[test]
    fn random_removals_are_byte_identical_to_a_fresh_write(
        lens in prop::collection::vec(1usize..1400, 2..14),
        removed in prop::collection::vec(any::<bool>(), 14),
        relabel in any::<bool>(),
    ) {
        let root = tempfile::tempdir().unwrap();
        let n = lens.len();
        let base_dir = commit(&root.path().join("base"), dataset("ds", n, |i| lens[i]), small_options());
        let gone: Vec<String> = (0..n).filter(|&i| removed[i]).map(|i| format!("s{i:03}")).take(n - 1).collect();
        let (copied, fresh, _) = edit_both(root.path(), &base_dir, &|d| {
            let ids: Vec<&str> = gone.iter().map(String::as_str).collect();
            remove(d, &ids);
            if relabel {
                let kept = (0..n).map(|i| format!("s{i:03}")).find(|s| !gone.contains(s)).unwrap();
                d.add_annotation(label(&kept, "b"), std::slice::from_ref(&kept)).unwrap();
            }
        });
        assert_same_bytes(&copied, &fresh);
    }
}

/// Issue 25 §2: a relabel changes no shard, so every shard of the edit is a
/// copy of the base's file (local: a hard link; memory://: the store's
/// copy), nothing of them is read but footers and page indexes, the bytes
/// are a fresh write's, and the result verifies.
#[test]
fn a_relabel_copies_every_shard_file_on_local_and_memory_stores() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let relabel = |d: &mut TimeFDataset| d.add_annotation(label("s010", "b"), &["s010".to_string()]).unwrap();
    let (copied, fresh, local_stats) = edit_both(root.path(), &base_dir, &relabel);
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        local_stats,
        CopyStats { pages_copied: 19, pages_encoded: 0, pages_decoded: 0, shards_copied: 7, bytes_read: 20071 }
    );
    let report = timef::verify::verify(&copied).unwrap();
    assert!(report.is_ok(), "{}", report.summary());
    // local: the shard is the base's file, linked
    let shard = "time_series/shard-00000.parquet";
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (std::fs::metadata(copied.join(shard)).unwrap(), std::fs::metadata(base_dir.join(shard)).unwrap());
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));

    let (_, mem, base) = memory_base("memory://splice-relabel");
    let mut d = base.to_dataset("ds", "v2").unwrap();
    relabel(&mut d);
    let staged = TimeFWriter::at(mem.join("edited"), small_options()).with_base(base).write(d).unwrap();
    assert_eq!(staged.copied(), local_stats);
    staged.commit().unwrap();
    let report = timef::verify::verify_at(&mem.join("edited/ds/v2")).unwrap();
    assert!(report.is_ok(), "{}", report.summary());
}

/// Two stores under one label (`memory://same`, two `InMemory` stores: as one
/// bucket name on two endpoints): a shard is copied server-side only within
/// one store, so the edit onto the other store builds every shard from the
/// base's pages (read through the base's store) and writes a fresh write's
/// bytes, where a copy would have been asked of a store without the key.
#[test]
fn an_edit_onto_another_store_under_the_same_label_builds_its_shards() {
    let (_, _, base) = memory_base("memory://same");
    let other: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let target = Location::from_object_store(other, "memory://same", "root").unwrap();
    let relabel = |d: &mut TimeFDataset| d.add_annotation(label("s010", "b"), &["s010".to_string()]).unwrap();
    let mut d = base.to_dataset("ds", "v2").unwrap();
    relabel(&mut d);
    let staged = TimeFWriter::at(target.join("edited"), small_options()).with_base(Arc::clone(&base)).write(d).unwrap();
    let stats = staged.copied();
    assert_eq!((stats.pages_copied, stats.pages_encoded, stats.pages_decoded, stats.shards_copied), (19, 0, 0, 0));
    staged.commit().unwrap();
    let report = timef::verify::verify_at(&target.join("edited/ds/v2")).unwrap();
    assert!(report.is_ok(), "{}", report.summary());
    // the same store under the same label still copies every shard whole
    let (_, mem, base) = memory_base("memory://same-store");
    let mut d = base.to_dataset("ds", "v2").unwrap();
    relabel(&mut d);
    let staged = TimeFWriter::at(mem.join("edited"), small_options()).with_base(base).write(d).unwrap();
    assert_eq!(staged.copied().shards_copied, 7);
}

/// A base shard whose size is not the one its manifest lists (here: its
/// footer appended again, so it still reads) is refused when it would be
/// copied, naming the file; nothing is committed.
#[test]
fn a_base_shard_of_another_size_than_listed_is_refused_naming_it() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let shard = base_dir.join("time_series/shard-00003.parquet");
    let mut bytes = std::fs::read(&shard).unwrap();
    let n = bytes.len();
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let tail = bytes[n - 8 - footer_len..].to_vec();
    bytes.extend_from_slice(&tail);
    std::fs::write(&shard, &bytes).unwrap();
    let base = Arc::new(Version::open(&base_dir).unwrap());
    let mut d = base.to_dataset("ds", "v2").unwrap();
    d.add_annotation(label("s010", "b"), &["s010".to_string()]).unwrap();
    let options = timef::edit::base_options(&base).unwrap();
    let err = TimeFWriter::new(root.path().join("out"), options).with_base(base).write(d).unwrap_err();
    match err {
        timef::Error::Corrupt { path, reason } => {
            assert_eq!(path, shard);
            assert_eq!(reason, format!("{} bytes, the base's manifest says {n}", bytes.len()));
        }
        other => panic!("{other:?}"),
    }
    assert!(!root.path().join("out/ds/v2").exists());
}

/// A base shard whose `values` pages were altered without a change of size
/// is copied whole under the base's recorded sha256 (hashing it again would
/// read every byte the copy saves), so `verify` of the edit names it, as it
/// names it in the base. Its key columns are decoded before it is placed
/// (checked against the index): a byte changed there is refused.
#[test]
fn a_base_shard_altered_in_place_is_found_by_verify_of_the_edit() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let rel = "time_series/shard-00003.parquet";
    let original = std::fs::read(base_dir.join(rel)).unwrap();
    let meta = parquet_metadata(&base_dir.join(rel));
    let (ids, values) = (meta.row_group(0).column(0), meta.row_group(0).column(4));
    // the last byte of the ids' column chunk: a page body, under its CRC
    let ids_end = (ids.data_page_offset() + ids.compressed_size() - 1) as usize;
    let mut bytes = original.clone();
    bytes[ids_end] ^= 0x01;
    std::fs::write(base_dir.join(rel), &bytes).unwrap();
    let base = Arc::new(Version::open(&base_dir).unwrap());
    let mut d = base.to_dataset("ds", "v2").unwrap();
    d.add_annotation(label("s010", "b"), &["s010".to_string()]).unwrap();
    let options = timef::edit::base_options(&base).unwrap();
    match TimeFWriter::new(root.path().join("out"), options).with_base(base).write(d) {
        Err(timef::Error::Corrupt { path, reason }) => {
            assert_eq!(
                (path, reason.as_str()),
                (base_dir.join(rel), "arrow: Parquet argument error: Parquet error: Page CRC checksum mismatch")
            );
        }
        other => panic!("{:?}", other.map(|s| s.copied())),
    }
    let mut bytes = original;
    bytes[values.data_page_offset() as usize + 100] ^= 0x01;
    std::fs::write(base_dir.join(rel), &bytes).unwrap();
    let base = Arc::new(Version::open(&base_dir).unwrap());
    let mut d = base.to_dataset("ds", "v2").unwrap();
    d.add_annotation(label("s010", "b"), &["s010".to_string()]).unwrap();
    let options = timef::edit::base_options(&base).unwrap();
    let staged = TimeFWriter::new(root.path().join("out"), options).with_base(base).write(d).unwrap();
    assert_eq!(staged.copied().shards_copied, 7);
    let edited = staged.commit().unwrap();
    let report = timef::verify::verify(&edited).unwrap();
    assert!(!report.is_ok());
    assert!(
        report.findings.iter().any(|f| f.file == rel && f.check == timef::verify::Check::Checksum),
        "{}",
        report.summary()
    );
}

/// [`base`]'s dataset with series `i` named `id(i)`.
fn base_ids(root: &Path, id: &dyn Fn(usize) -> String) -> PathBuf {
    commit(
        &root.join("base"),
        dataset_seeded("v1", 40, |i| 500 + (i * 37) % 600, |i| i as u32, "ds", id),
        small_options(),
    )
}

/// The logical type of the `time_series_id` column of `rel` under `dir`.
fn id_type(dir: &Path, rel: &str) -> Option<parquet::basic::LogicalType> {
    parquet_metadata(&dir.join(rel)).file_metadata().schema_descr().column(0).logical_type_ref().cloned()
}

/// The id encoding of the series ids is decided by the whole dataset (uuid16
/// iff every id is a canonical UUID, docs/format.md §6): removing the one
/// series that is not a UUID makes the write uuid16, so no base shard (all
/// `string`) is copied whole; its `values` pages still are.
#[test]
fn removing_the_only_non_uuid_series_copies_no_shard_of_the_other_id_encoding() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base_ids(root.path(), &|i| if i == 39 { "zzz-not-a-uuid".into() } else { uuid7(i as u64) });
    let shard = "time_series/shard-00000.parquet";
    assert_eq!(id_type(&base_dir, shard), Some(parquet::basic::LogicalType::String));
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| remove(d, &["s039"]));
    assert_eq!(id_type(&copied, shard), None, "uuid16: FIXED_LEN_BYTE_ARRAY(16), no logical type");
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        stats,
        CopyStats { pages_copied: 19, pages_encoded: 0, pages_decoded: 0, shards_copied: 0, bytes_read: 47402 }
    );
    let report = timef::verify::verify(&copied).unwrap();
    assert!(report.is_ok(), "{}", report.summary());
}

/// The reverse: a series whose id is not a UUID added to a uuid16 base.
#[test]
fn adding_a_non_uuid_series_copies_no_shard_of_the_other_id_encoding() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = base_ids(root.path(), &|i| uuid7(i as u64));
    let shard = "time_series/shard-00000.parquet";
    assert_eq!(id_type(&base_dir, shard), None);
    let (copied, fresh, stats) = edit_both(root.path(), &base_dir, &|d| {
        add_series(d, "zzz-not-a-uuid", "eeg", "C3", 256.0, 99, 700);
        d.add_sample(timef::Sample {
            sample_id: "s999".into(),
            source_id: "src".into(),
            series: main_refs(&["zzz-not-a-uuid"]),
            ..Default::default()
        })
        .unwrap();
    });
    assert_eq!(id_type(&copied, shard), Some(parquet::basic::LogicalType::String));
    assert_same_bytes(&copied, &fresh);
    assert_eq!(
        stats,
        CopyStats { pages_copied: 19, pages_encoded: 2, pages_decoded: 1, shards_copied: 0, bytes_read: 46050 }
    );
    let report = timef::verify::verify(&copied).unwrap();
    assert!(report.is_ok(), "{}", report.summary());
}

/// The compact-protocol varint of the i32 `v` (zigzag), as a page header's CRC is stored.
fn zigzag(v: i32) -> Vec<u8> {
    varint(u64::from(((v << 1) ^ (v >> 31)) as u32))
}

/// Rewrites the first value of the float64 column `column` of the Parquet
/// file at `path` whose lowest bit can be flipped with the page recompressed
/// to the same size and its CRC recomputed: one value off by one ulp, the
/// file's size kept (only its sha256 changes). Returns its row.
fn flip_lowest_bit(path: &Path, column: &str, level: i32) -> Option<usize> {
    let mut bytes = std::fs::read(path).unwrap();
    let meta = parquet_metadata(path);
    let descr = meta.file_metadata().schema_descr();
    let leaf = (0..descr.num_columns()).find(|&c| descr.column(c).path().string() == column).unwrap();
    let max_def = descr.column(leaf).max_def_level();
    for p in file_pages(path).into_iter().filter(|p| p.column == column) {
        let page = &p.page;
        let body = page.body_offset() as usize..page.body_offset() as usize + page.header.compressed_page_size as usize;
        let raw = zstd::bulk::decompress(&bytes[body.clone()], page.header.uncompressed_page_size as usize).unwrap();
        let from = if max_def > 0 { 4 + u32::from_le_bytes(raw[0..4].try_into().unwrap()) as usize } else { 0 };
        for i in 1..(raw.len() - from) / 8 {
            // byte 0 of value i, plain (8 bytes each) or byte-stream-split
            for at in [from + i, from + 8 * i] {
                let mut t = raw.clone();
                t[at] ^= 1;
                let c = zstd::bulk::compress(&t, level).unwrap();
                let (old, new) = (zigzag(page.header.crc.unwrap()), zigzag(crc32fast::hash(&c) as i32));
                if c.len() != body.len() || old.len() != new.len() {
                    continue;
                }
                let h = page.offset as usize..page.body_offset() as usize;
                let pos = bytes[h.clone()].windows(old.len()).position(|w| w == &old[..]).unwrap() + h.start;
                bytes[pos..pos + new.len()].copy_from_slice(&new);
                bytes[body].copy_from_slice(&c);
                std::fs::write(path, &bytes).unwrap();
                return Some(i);
            }
        }
    }
    None
}

/// A base whose index says a chunk's mean one ulp off (the index's bytes
/// changed at the same size, its page's CRC recomputed): an edit takes the
/// chunks' statistics from the base's index as stored, so the index is held
/// to the manifest's sha256 before it is decoded; the edit and a plain read
/// are refused naming it, and nothing is committed.
#[test]
fn an_index_altered_at_the_same_size_is_refused_by_an_edit_and_a_read() {
    use sha2::Digest;
    let root = tempfile::tempdir().unwrap();
    let base_dir = base(root.path());
    let rel = "time_series_index.parquet";
    let level = timef::edit::base_options(&Version::open(&base_dir).unwrap()).unwrap().compression_level();
    let listed = Version::open(&base_dir).unwrap().manifest().files.iter().find(|f| f.path == rel).cloned().unwrap();
    assert!(flip_lowest_bit(&base_dir.join(rel), "mean", level).is_some());
    let bytes = std::fs::read(base_dir.join(rel)).unwrap();
    assert_eq!(bytes.len() as u64, listed.bytes);
    let reason = format!("sha256 {}, manifest.json says {}", hex::encode(sha2::Sha256::digest(&bytes)), listed.sha256);
    let expect = |err: timef::Error| match err {
        timef::Error::Corrupt { path, reason: r } => assert_eq!((path, r), (base_dir.join(rel), reason.clone())),
        other => panic!("{other:?}"),
    };
    expect(Version::open(&base_dir).unwrap().index().unwrap_err());
    let edit = Edit::remove_samples(["s017"], Cascade::Refuse);
    expect(timef::edit::edit_version(&base_dir, &root.path().join("out"), "v2", edit).unwrap_err());
    assert!(!root.path().join("out/ds/v2").exists());
}
