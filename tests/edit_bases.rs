//! Edits of bases the reader reads but this writer did not write as they are
//! (a shard rewritten by pyarrow: PLAIN values, or no page CRCs), of bases on
//! another device or bucket, and the window loader's reservation: an edit
//! writes the base's values, or builds what it cannot copy, and is then a
//! fresh write's bytes (docs/format.md §7 "What an edit keys its reuse on").

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use timef::edit::{apply, base_options, Cascade, Edit};
use timef::reader::Version;
use timef::scan::Selection;
use timef::storage::{Location, StorageOptions};
use timef::windows::{Share, WindowOptions, WindowPlan};
use timef::writer::CopyStats;
use timef::{Annotation, SeriesMeta, TimeFDataset, TimeFWriter};

use common::*;

/// 10 samples `s000`.. of one series `x000`.. of 600 values each.
fn ten(root: &Path) -> PathBuf {
    let mut d = dataset_with_source("ds", "v1");
    for i in 0..10usize {
        let (sid, xid) = (format!("s{i:03}"), format!("x{i:03}"));
        add_series(&mut d, &xid, "eeg", "C3", 256.0, i as u32, 600);
        add_sample_of(&mut d, &sid, &[&xid]);
    }
    commit(root, d, small_options())
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

/// Rewrites every shard of `dir` with pyarrow, the `values` column encoded
/// `encoding`, with or without page CRCs; `None` (skipped) without a venv.
fn rewrite_shards(dir: &Path, encoding: &str, checksums: bool) -> Option<()> {
    let py = require_python("shards rewritten by pyarrow")?;
    let script = r#"
import os, sys, pyarrow.parquet as pq
src, encoding, checksums = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
f = pq.ParquetFile(src)
leaf = f.schema.column(len(f.schema) - 1).path
w = pq.ParquetWriter(src + ".new", f.schema_arrow, compression="zstd", use_dictionary=False,
                     column_encoding={leaf: encoding}, write_page_index=True,
                     write_page_checksum=checksums, data_page_version="1.0")
for g in range(f.num_row_groups):
    t = f.read_row_group(g)
    w.write_table(t, row_group_size=t.num_rows)
w.close()
os.replace(src + ".new", src)
"#;
    for rel in listed_files(dir).into_iter().filter(|r| r.starts_with("time_series/")) {
        let flag = if checksums { "1" } else { "0" };
        let out =
            std::process::Command::new(&py).arg("-c").arg(script).arg(dir.join(&rel)).args([encoding, flag]).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        reseal(dir, &rel);
    }
    Some(())
}

/// A base whose shards pyarrow rewrote (PLAIN values with CRCs; split values
/// without CRCs): the reader reads its values, so an edit removing one sample
/// decodes its pages (never copies them: another `created_by`) and writes a
/// fresh write's bytes, the base's values.
#[test]
fn an_edit_of_a_base_rewritten_by_pyarrow_writes_its_values() {
    for (encoding, checksums) in [("PLAIN", true), ("BYTE_STREAM_SPLIT", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = ten(&tmp.path().join("base"));
        let Some(()) = rewrite_shards(&dir, encoding, checksums) else { return };
        let base = Arc::new(Version::open(&dir).unwrap());
        for i in 0..10 {
            assert_eq!(base.read_series(&format!("x{i:03}")).unwrap().to_vec(), values(i, 600), "{encoding}");
        }
        let write = |under: &str, with_base: bool| {
            let mut d = base.to_dataset("ds", "v2").unwrap();
            apply(&mut d, &mut Edit::remove_samples(["s009"], Cascade::Refuse), &|ids| panic!("asked for {ids:?}"))
                .unwrap();
            let mut w = TimeFWriter::new(tmp.path().join(under), base_options(&base).unwrap());
            if with_base {
                w = w.with_base(Arc::clone(&base));
            }
            let staged = w.write(d).unwrap_or_else(|e| panic!("{encoding}: {e}"));
            (staged.copied(), staged.commit().unwrap())
        };
        let (stats, edited) = write("edited", true);
        let (_, fresh) = write("fresh", false);
        assert_eq!((stats.pages_copied, stats.shards_copied), (0, 0), "{encoding}: {stats:?}");
        assert!(stats.pages_decoded > 0, "{encoding}: {stats:?}");
        assert_same_files(&fresh, &edited);
        let v = Version::open(&edited).unwrap();
        for i in 0..9 {
            assert_eq!(v.read_series(&format!("x{i:03}")).unwrap().to_vec(), values(i, 600), "{encoding}");
        }
    }
}

/// A base on tmpfs (`/dev/shm`) edited into the temporary directory, as a
/// path and as a `file://` URL: where the hard link is refused (another
/// device) the shards are built from the base's pages, and the edit is a
/// fresh write's bytes either way.
#[test]
fn an_edit_onto_another_device_builds_what_it_cannot_link() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        skipped("an edit onto another device: no /dev/shm");
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let base_tmp = tempfile::tempdir_in(shm).unwrap();
    let out_tmp = tempfile::tempdir().unwrap();
    let other_device = base_tmp.path().metadata().unwrap().dev() != out_tmp.path().metadata().unwrap().dev();
    let base_dir = ten(&base_tmp.path().join("root"));
    let relabel = |d: &mut TimeFDataset| d.add_annotation(label("s003", "b"), &["s003".to_string()]).unwrap();
    let url = |p: &Path| Location::parse(&format!("file://{}", p.display()), &StorageOptions::new()).unwrap();
    let mut d = Arc::new(Version::open(&base_dir).unwrap()).to_dataset("ds", "v2").unwrap();
    relabel(&mut d);
    let fresh = commit(&out_tmp.path().join("fresh"), d, small_options());
    for (how, base, under) in [("path", Location::local(&base_dir), "path"), ("file://", url(&base_dir), "url")] {
        let target =
            if how == "path" { Location::local(out_tmp.path().join(under)) } else { url(&out_tmp.path().join(under)) };
        let base = Arc::new(Version::open_at(base).unwrap());
        let mut d = base.to_dataset("ds", "v2").unwrap();
        relabel(&mut d);
        let staged = TimeFWriter::at(target.clone(), small_options()).with_base(Arc::clone(&base)).write(d);
        let staged = staged.unwrap_or_else(|e| panic!("{how}: {e}"));
        let stats = staged.copied();
        let shards = if other_device {
            0
        } else {
            listed_files(&fresh).iter().filter(|f| f.starts_with("time_series/")).count() as u64
        };
        assert_eq!((stats.pages_encoded, stats.shards_copied), (0, shards), "{how}: {stats:?}");
        staged.commit().unwrap();
        assert_same_files(&fresh, &out_tmp.path().join(under).join("ds/v2"));
    }
}

/// One window of 2 000 000 values, asked for in batches of up to 4096: the
/// batch reserves room for at most 64 MiB of values up front (not 4096
/// windows' worth, 32 GB), and holds the one window.
#[test]
fn a_batch_of_few_long_windows_reserves_what_it_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let mut d = dataset_with_source("long", "v1");
    let v: Vec<f32> = (0..2_000_001).map(|i| (i % 1000) as f32).collect();
    let want = v[..2_000_000].to_vec();
    d.add_series(SeriesMeta::new("x", "eeg", "C3", 256.0), Box::new(move || Ok(v.into()))).unwrap();
    add_sample_of(&mut d, "s", &["x"]);
    let dir = commit(tmp.path(), d, timef::WriterOptions::default());
    let v = Version::open(&dir).unwrap();
    let plan = Arc::new(WindowPlan::new(&v, &Selection::all(), WindowOptions::new(2_000_000, 0)).unwrap());
    let mut it = plan.windows(0, &Share::all()).unwrap();
    let batch = it.next_batch(4096).unwrap().unwrap();
    assert_eq!((batch.len(), batch.past_values.len()), (1, 2_000_000));
    assert!(batch.past_values == want);
    assert!(batch.past_values.capacity() <= 16 << 20, "{}", batch.past_values.capacity());
    assert!(it.next_batch(4096).is_none());
}

/// A `create bucket` request to the S3 server at `endpoint`.
fn create_bucket(endpoint: &str, name: &str) {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the S3 server");
    write!(s, "PUT /{name} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "create bucket {name}: {reply}");
}

/// Two buckets of one endpoint named by path-style URLs
/// (`https://s3.<region>.amazonaws.com/<bucket>/..`, the bucket in the path):
/// two stores, so an edit of a base in bucket A into bucket B copies no shard
/// server-side (B does not hold A's keys) but builds them, and verifies; the
/// same bucket still copies its shards whole. Locations name their bucket.
#[test]
fn path_style_urls_of_two_buckets_are_two_stores() {
    let Some(endpoint) = s3_endpoint("path_style_urls_of_two_buckets_are_two_stores") else { return };
    let options = s3_options(&endpoint);
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let (a, b) = (format!("ps-a-{}", &tag[..12]), format!("ps-b-{}", &tag[..12]));
    create_bucket(&endpoint, &a);
    create_bucket(&endpoint, &b);
    let at = |bucket: &str, prefix: &str| {
        Location::parse(&format!("https://s3.us-east-1.amazonaws.com/{bucket}/{prefix}"), &options).unwrap()
    };
    assert_eq!(at(&a, "root").to_string(), format!("https://s3.us-east-1.amazonaws.com/{a}/root"));
    // an encoded slash is a separator of the path inside the bucket, not a segment more
    assert_eq!(at(&a, "p%2Fq").to_string(), format!("https://s3.us-east-1.amazonaws.com/{a}/p/q"));
    let local = tempfile::tempdir().unwrap();
    let base_dir = ten(&local.path().join("base"));
    let d = Arc::new(Version::open(&base_dir).unwrap()).to_dataset("ds", "v1").unwrap();
    // the base under an encoded slash: its label must still name bucket A
    TimeFWriter::at(at(&a, "p%2Fq"), small_options()).write(d).unwrap().commit().unwrap();
    let base = Arc::new(Version::open_at(at(&a, "p%2Fq").join("ds/v1")).unwrap());
    let relabel = |d: &mut TimeFDataset| d.add_annotation(label("s003", "b"), &["s003".to_string()]).unwrap();
    let shards = listed_files(&base_dir).iter().filter(|f| f.starts_with("time_series/")).count() as u64;
    for (bucket, prefix, copied) in [(&b, "edited", 0), (&b, "e%2Ff", 0), (&a, "edited", shards)] {
        let mut d = base.to_dataset("ds", "v2").unwrap();
        relabel(&mut d);
        let target = at(bucket, prefix);
        let staged = TimeFWriter::at(target.clone(), small_options()).with_base(Arc::clone(&base)).write(d).unwrap();
        let stats: CopyStats = staged.copied();
        assert_eq!((stats.pages_encoded, stats.shards_copied), (0, copied), "into {bucket}: {stats:?}");
        staged.commit().unwrap();
        let report = timef::verify::verify_at(&target.join("ds/v2")).unwrap();
        assert!(report.is_ok(), "into {bucket}: {}", report.summary());
    }
}

/// A table on an object store is fetched once, whole, in one GET, and held
/// while it is hashed (its sha256 checked against the manifest) and decoded:
/// here an index of 7 000 chunks; every later read of it is answered from
/// those bytes.
#[test]
fn a_table_on_an_object_store_is_fetched_once() {
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let root = Location::from_object_store(store, "memory://one-fetch", "root").unwrap();
    let mut d = dataset_with_source("big", "v1");
    add_series(&mut d, "x", "eeg", "C3", 256.0, 7, 7_000);
    add_sample_of(&mut d, "s", &["x"]);
    let options = timef::WriterOptions::builder().chunk_max_bytes(4).try_build().unwrap();
    TimeFWriter::at(root.clone(), options).write(d).unwrap().commit().unwrap();
    let loc = root.join("big/v1");
    let v = Version::open_at(loc.clone()).unwrap();
    let size = v.manifest().files.iter().find(|f| f.path == "time_series_index.parquet").unwrap().bytes;
    let before = loc.read_stats().unwrap();
    assert_eq!(v.index().unwrap().len(), 7_000);
    let after = loc.read_stats().unwrap();
    let fetched = (
        after.requests - before.requests,
        after.bytes - before.bytes,
        after.read_ahead_requests - before.read_ahead_requests,
        after.read_ahead_bytes - before.read_ahead_bytes,
    );
    assert_eq!(fetched, (1, size, 1, size));
}

/// `dedup`: a shard an edit copied whole is shared whole (footer and page
/// indexes too); a shard it rebuilt shares its pages only. The files equal to
/// the base's are found here by comparing their bytes.
#[test]
fn dedup_shares_a_shard_copied_whole_with_its_footer_and_a_rebuilt_one_by_its_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let base_dir = ten(&root);
    let base = Arc::new(Version::open(&base_dir).unwrap());
    let shards = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let listed = listed_files(dir).into_iter().filter(|f| f.starts_with("time_series/"));
        listed.map(|f| (f.clone(), std::fs::read(dir.join(&f)).unwrap())).collect()
    };
    let base_shards = shards(&base_dir);
    assert!(base_shards.len() >= 2, "{} shards", base_shards.len());
    let write = |version: &str, edit: &dyn Fn(&mut TimeFDataset)| {
        let mut d = base.to_dataset("ds", version).unwrap();
        edit(&mut d);
        let staged = TimeFWriter::at(Location::local(&root), small_options()).with_base(Arc::clone(&base)).write(d);
        staged.unwrap().commit().unwrap();
        root.join("ds").join(version)
    };
    // a relabel: every shard is the base's
    let relabel = write("relabel", &|d| d.add_annotation(label("s003", "b"), &["s003".to_string()]).unwrap());
    let files = shards(&relabel);
    let bytes: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    let r = timef::dedup::measure(&base_dir, &relabel).unwrap();
    let n = files.len() as u64;
    assert_eq!((r.new_files, r.shared_files, r.new_shard_bytes, r.shared_pages), (n, n, bytes, r.new_pages));
    assert_eq!(r.shared_page_bytes + r.shared_footer_bytes, bytes);
    assert!(r.shared_footer_bytes > 0);
    assert_eq!(r.shared_ratio(), 1.0);
    // the last sample removed: the shards before it are the base's, the last is rebuilt
    let removed = write("removed", &|d| {
        apply(d, &mut Edit::remove_samples(["s009"], Cascade::Refuse), &|ids| panic!("asked for {ids:?}")).unwrap();
    });
    let files = shards(&removed);
    let equal: Vec<&(String, Vec<u8>)> = files.iter().filter(|f| base_shards.contains(f)).collect();
    assert!(!equal.is_empty() && equal.len() < files.len(), "{} of {} equal", equal.len(), files.len());
    let r = timef::dedup::measure(&base_dir, &removed).unwrap();
    assert_eq!((r.new_files, r.shared_files), (files.len() as u64, equal.len() as u64));
    let equal_bytes: u64 = equal.iter().map(|(_, b)| b.len() as u64).sum();
    assert!(r.shared_footer_bytes > 0 && r.shared_footer_bytes < equal_bytes / 2, "{r:?}");
    assert!(r.shared_ratio() < 1.0 && r.shared_page_bytes + r.shared_footer_bytes >= equal_bytes, "{r:?}");
}

/// From review 6: a shard whose bytes differ from the base's while its
/// manifest still claims the base's sha256 (one byte of the footer's
/// `created_by` changed, so it still parses; `verify` refuses it) is not
/// counted as equal to the base's: dedup hashes a file before sharing it whole.
#[test]
fn dedup_does_not_share_whole_a_file_whose_bytes_differ_from_its_manifests_claim() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let base = ten(&root);
    let copy = root.join("ds").join("copy");
    copy_dir(&base, &copy);
    let shard = listed_files(&copy).into_iter().find(|f| f.starts_with("time_series/")).unwrap();
    let path = copy.join(&shard);
    let bytes = std::fs::read(&path).unwrap();
    let footer = footer_range(&path);
    let f = &bytes[footer.start as usize..footer.end as usize];
    let at = f.windows(5).position(|w| w == b"timef").expect("created_by in the footer") as u64;
    flip_byte(&path, footer.start + at, 0x20); // 't' -> 'T'
    assert_ne!(cli(&["verify", copy.to_str().unwrap()]).0, 0);
    let r = timef::dedup::measure(&base, &copy).unwrap();
    let shards = listed_files(&copy).iter().filter(|f| f.starts_with("time_series/")).count() as u64;
    assert_eq!((r.new_files, r.shared_files, r.shared_pages), (shards, shards - 1, r.new_pages), "{r:?}");
    assert!(r.shared_ratio() < 1.0, "{r:?}");
}

/// `BasicMotions`' training recordings (240 series of 100 values, one shard
/// of one row group) as version `bm/v1` under `root`; the edit's output root.
fn basic_motions(root: &Path) -> (PathBuf, PathBuf) {
    (ingest_ucr(root, "bm", "v1", &real("ucr/BasicMotions_TRAIN.ts")), root.join("out"))
}

/// `timef edit BASE --out-root OUT --version v2 ARGS...` must exit 2 with
/// `corrupt version: <shard 0>: row group 0: <problem>`, and write nothing.
fn edit_refuses(base: &Path, out: &Path, args: &[&str], problem: &str) {
    let mut all = vec!["edit", base.to_str().unwrap(), "--out-root", out.to_str().unwrap(), "--version", "v2"];
    all.extend(args);
    let (code, stdout, err) = cli(&all);
    let shard = base.join("time_series/shard-00000.parquet");
    let want = format!("timef: error: corrupt version: {}: row group 0: {problem}\n", shard.display());
    assert_eq!((code, stdout.as_str(), err.as_str()), (2, "", want.as_str()), "{args:?}");
    assert!(!out.join("bm/v2").exists(), "{args:?}");
}

/// An index that moved 10 values of the first series' chunk to the second's
/// (both in one page; every total as before), sealed again: the reader
/// refuses the base, and an edit that decodes that page (a sample removed
/// from it) refuses it with the same words, as the page's repetition levels
/// give its rows. It once split the page's values by the index's counts and
/// committed a version that `verify` passed, values moved between series.
#[test]
fn an_edit_decoding_a_page_refuses_an_index_whose_counts_moved_between_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, out) = basic_motions(tmp.path());
    rewrite_index_i32(&base, "n_values", |n| {
        n[0] -= 10;
        n[1] += 10;
    });
    let problem = "bm-train-0/0 chunk 0: the index says 90 values, the shard holds 100";
    let (code, _, err) = cli(&["cat", base.to_str().unwrap(), "bm-train-0/0"]);
    assert_eq!(code, 2);
    assert!(err.trim_end().ends_with(problem), "{err}");
    edit_refuses(&base, &out, &["--remove-sample", "bm-train-10"], problem);
}

/// The checks of a base row group's footer entry against the index, which
/// an edit makes before taking any of its chunks, even for a shard it copies
/// whole (a description changed): rows where their pointers say, in order,
/// and the level entries of the values column chunk the index's counts make.
/// Once, such a base was copied into an edit that `verify` then refused.
#[test]
fn an_edit_refuses_an_index_that_does_not_point_at_its_row_groups_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, out) = basic_motions(tmp.path());
    let pristine = tmp.path().join("pristine");
    copy_dir(&base, &pristine);
    rewrite_index_i32(&base, "row_offset", |r| r.swap(0, 1));
    // the reader finds the pointer on another series' row
    let (code, _, err) = cli(&["cat", base.to_str().unwrap(), "bm-train-0/0"]);
    assert_eq!(code, 2);
    assert!(err.trim_end().ends_with("pointer of bm-train-0/0 chunk 0 lands on \"bm-train-1/0\" chunk 0"), "{err}");
    let problem = "the index puts bm-train-0/0 chunk 0 at row 1, its row 0 in the index's order";
    edit_refuses(&base, &out, &["--description", "x"], problem);
    edit_refuses(&base, &out, &["--remove-sample", "bm-train-10"], problem);

    std::fs::remove_dir_all(&base).unwrap();
    copy_dir(&pristine, &base);
    rewrite_index_i32(&base, "n_values", |n| n[0] = 1_000_000);
    let problem = "values column chunk holds 24000 values by the footer, the index puts 1023900 in it";
    edit_refuses(&base, &out, &["--description", "x"], problem);
    edit_refuses(&base, &out, &["--remove-sample", "bm-train-10"], problem);
}

/// A shard whose first row names another series than the index says (its
/// `time_series_id` rewritten by pyarrow, sealed again): the reader refuses
/// the pointer, and so does an edit that takes rows of that row group, as it
/// checks the rows' key columns before using their values.
#[test]
fn an_edit_refuses_a_shard_row_that_is_not_the_chunk_the_index_says() {
    let Some(py) = require_python("a shard's ids rewritten by pyarrow") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (base, out) = basic_motions(tmp.path());
    let script = r#"
import sys, pyarrow as pa, pyarrow.parquet as pq
path = sys.argv[1]
t = pq.read_table(path)
ids = t.column("time_series_id").to_pylist()
ids[0] = ids[1]
t = t.set_column(0, t.schema.field(0), pa.array(ids).cast(t.schema.field(0).type))
pq.write_table(t, path, compression="zstd", use_dictionary=False, write_page_index=True,
               column_encoding={"values.list.element": "BYTE_STREAM_SPLIT"}, data_page_version="1.0")
"#;
    let rel = "time_series/shard-00000.parquet";
    let done = std::process::Command::new(&py).arg("-c").arg(script).arg(base.join(rel)).output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    reseal(&base, rel);
    let problem = "pointer of bm-train-0/0 chunk 0 lands on \"bm-train-1/0\" chunk 0";
    let (code, _, err) = cli(&["cat", base.to_str().unwrap(), "bm-train-0/0"]);
    assert_eq!(code, 2);
    assert!(err.trim_end().ends_with(problem), "{err}");
    edit_refuses(&base, &out, &["--remove-sample", "bm-train-10"], problem);
}
