//! Versions on object stores (docs/format.md "Storage backends and the commit").
//!
//! The `memory://` tests run everywhere. The S3 tests need the S3-compatible
//! server `.ci/run` starts on 127.0.0.1 (`moto_server`, endpoint in
//! `TIMEF_TEST_S3_ENDPOINT`): without it they print "skipped: ..." and pass,
//! except under CI (`CI` set), where they fail.

// a build without the `s3` feature leaves out the tests that need an S3 client
// of their own; the helpers only they use are then unused
#![cfg_attr(not(feature = "s3"), allow(dead_code, unused_imports))]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use futures::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use timef::reader::Version;
use timef::storage::{Location, StorageOptions, CLAIM, MANIFEST};
use timef::{Error, SeriesMeta, TimeFDataset, TimeFWriter, WriteProgressEvent, WriterOptions};

use common::*;

const KEY_ID: &str = "testing-key-id";
const SECRET: &str = "testing-secret-Zq9";

// ---------------------------------------------------------------- helpers

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn s3_options(endpoint: &str) -> StorageOptions {
    BTreeMap::from([
        ("aws_endpoint".to_string(), endpoint.to_string()),
        ("aws_allow_http".to_string(), "true".to_string()),
        ("aws_access_key_id".to_string(), KEY_ID.to_string()),
        ("aws_secret_access_key".to_string(), SECRET.to_string()),
        ("aws_region".to_string(), "us-east-1".to_string()),
    ])
}

/// The environment a `timef` child process needs for the server (and nothing else of AWS).
fn s3_env(cmd: &mut Command, endpoint: &str) {
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
        cmd.env_remove(k);
    }
    cmd.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1");
}

fn timef_s3(endpoint: &str, args: &[&str]) -> (i32, String, String) {
    timef_s3_trusting(endpoint, None, args)
}

/// [`timef_s3`] with `SSL_CERT_FILE` set to the trusted roots `roots` (none
/// but the system's with None).
fn timef_s3_trusting(endpoint: &str, roots: Option<&Path>, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
    s3_env(&mut cmd, endpoint);
    cmd.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
    if let Some(roots) = roots {
        cmd.env("SSL_CERT_FILE", roots);
    }
    let out = cmd.args(args).output().expect("run timef");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// A bucket of its own for each test (tests run in parallel), created with a
/// plain HTTP PUT (the server does not check signatures).
fn create_bucket(endpoint: &str, name: &str) {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the S3 server");
    write!(s, "PUT /{name} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "create bucket {name}: {reply}");
}

/// `timef args` with test credentials and `env` as the only endpoint
/// settings (none of the server's): its exit code and stderr.
fn timef_env(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
    cmd.args(args)
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ENDPOINT")
        .env_remove("AWS_ALLOW_HTTP")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .envs(env.iter().copied());
    let out = cmd.output().expect("run timef");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A plain HTTP request to the server (it does not check signatures): its
/// whole reply. Reaches keys `object_store` cannot name (`a//b`).
fn raw_http(endpoint: &str, method: &str, path: &str, body: &[u8]) -> String {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the S3 server");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply
}

fn bucket(endpoint: &str, tag: &str) -> String {
    let name = format!("timef-{tag}-{}", uuid::Uuid::new_v4().simple()).chars().take(60).collect::<String>();
    create_bucket(endpoint, &name);
    name
}

/// An `object_store` client of the test's own, to look at what the writer left.
#[cfg(feature = "s3")]
fn raw_store(endpoint: &str, bucket: &str) -> Arc<dyn ObjectStore> {
    raw_s3_store(bucket, &s3_options(endpoint))
}

/// Every object under `prefix`, relative, sorted.
fn objects(store: &Arc<dyn ObjectStore>, prefix: &str) -> Vec<String> {
    let prefix = ObjPath::from(prefix);
    let metas: Vec<_> = rt().block_on(store.list(Some(&prefix)).collect::<Vec<_>>());
    let mut out: Vec<String> = metas
        .into_iter()
        .map(|m| {
            let m = m.unwrap();
            m.location.prefix_match(&prefix).unwrap().map(|p| p.as_ref().to_string()).collect::<Vec<_>>().join("/")
        })
        .collect();
    out.sort();
    out
}

/// Downloads every object under `prefix` into `dir`.
fn download(store: &Arc<dyn ObjectStore>, prefix: &str, dir: &Path) {
    let rt = rt();
    for rel in objects(store, prefix) {
        let bytes = rt.block_on(async { store.get(&ObjPath::from(format!("{prefix}/{rel}"))).await?.bytes().await });
        let dst = dir.join(&rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::write(dst, bytes.unwrap()).unwrap();
    }
}

/// The files a version's manifest lists, plus the manifest.
fn listed_plus_manifest(v: &Version) -> Vec<String> {
    let mut want: Vec<String> = v.manifest().files.iter().map(|f| f.path.clone()).collect();
    want.push(MANIFEST.to_string());
    want.sort();
    want
}

/// A fresh in-memory store the test can look into, and the root `memory://TAG/root` on it.
fn memory(tag: &str) -> (Arc<dyn ObjectStore>, Location) {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let root = Location::from_object_store(Arc::clone(&store), &format!("memory://{tag}"), "root").unwrap();
    (store, root)
}

/// Deterministic noise (xorshift): incompressible float32 values.
fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / 1024.0
        })
        .collect()
}

/// `series` series of `n` noise values each, one sample per series.
fn noise_dataset(name: &str, version: &str, series: usize, n: usize) -> TimeFDataset {
    let mut d = dataset_with_source(name, version);
    for i in 0..series {
        let id = format!("x{i:04}");
        let v = noise(i as u64 + 1, n);
        d.add_series(SeriesMeta::new(&id, "eeg", "C3", 256.0), Box::new(move || Ok(v.into()))).unwrap();
        d.add_sample(timef::Sample {
            sample_id: format!("s{i:04}"),
            source_id: "src".into(),
            series: main_refs(&[&id]),
            ..Default::default()
        })
        .unwrap();
    }
    d
}

// ---------------------------------------------------------------- memory:// protocol

#[test]
fn memory_claim_is_held_while_writing_and_released_by_the_commit() {
    let (store, root) = memory("claim");
    let staged = TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 6)).unwrap();
    let during = objects(&store, "root/ecg/1");
    assert!(during.contains(&CLAIM.to_string()), "{during:?}");
    assert!(!during.contains(&MANIFEST.to_string()), "no manifest before the commit: {during:?}");
    assert!(matches!(Version::open_at(root.join("ecg/1")), Err(Error::NotAVersion { .. })));

    // a second writer of the same version loses the claim before writing anything
    match TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 2)) {
        Err(Error::AlreadyExists { path }) => assert_eq!(path, PathBuf::from("memory://claim/root/ecg/1")),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(objects(&store, "root/ecg/1"), during, "the loser wrote or removed something");

    let dir = staged.commit().unwrap();
    assert_eq!(dir, PathBuf::from("memory://claim/root/ecg/1"));
    let v = Version::open_at(root.join("ecg/1")).unwrap();
    assert_eq!(objects(&store, "root/ecg/1"), listed_plus_manifest(&v), "claim released, nothing else");
    assert!(timef::verify::verify_at(&root.join("ecg/1")).unwrap().is_ok());
    // committed: refused before any I/O
    match TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 2)) {
        Err(Error::AlreadyExists { .. }) => {}
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(timef::reader::list_versions_at(&root).unwrap(), vec![("ecg".to_string(), "1".to_string())]);
}

#[test]
fn memory_abort_and_errors_leave_nothing() {
    let (store, root) = memory("abort");
    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 6)).unwrap().abort();
    assert_eq!(objects(&store, "root"), Vec::<String>::new());

    // a loader failing after shards went out: everything this writer put is removed
    let mut d = noise_dataset("n", "1", 8, 3000);
    d.add_series(SeriesMeta::new("zz-last", "eeg", "C3", 256.0), Box::new(|| Err("disk on fire".into()))).unwrap();
    d.add_sample(timef::Sample {
        sample_id: "zz".into(),
        source_id: "src".into(),
        series: main_refs(&["zz-last"]),
        ..Default::default()
    })
    .unwrap();
    let shards_seen = Arc::new(AtomicU64::new(0));
    let (s2, seen) = (Arc::clone(&store), Arc::clone(&shards_seen));
    let writer = TimeFWriter::at(root.clone(), small_options()).with_progress(Arc::new(move |e| {
        if let WriteProgressEvent::SeriesWritten { done: 8, .. } = e {
            seen.store(objects(&s2, "root/n/1").len() as u64, Ordering::SeqCst);
        }
    }));
    assert!(matches!(writer.write(d), Err(Error::Loader { .. })));
    assert!(shards_seen.load(Ordering::SeqCst) > 1, "shards were uploaded before the failure");
    assert_eq!(objects(&store, "root"), Vec::<String>::new());
    // and the version can be written afterwards
    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("n", "1", 3)).unwrap().commit().unwrap();
}

#[test]
fn memory_gc_clears_a_dead_writers_claim_and_files_only() {
    let (store, root) = memory("gc");
    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 3)).unwrap().commit().unwrap();
    // what a killed writer leaves: a claim and some files, no manifest
    let rt = rt();
    // a claim is timef's by its content: a writer id
    let claim = br#"{"writer_id":"0123456789abcdef0123456789abcdef","created_at_unix_s":0,"created_by":"t"}"#;
    for (key, bytes) in [
        ("root/ecg/2/_timef_claim.json", &claim[..]),
        ("root/ecg/2/time_series/shard-00000.parquet", &[1u8, 2, 3][..]),
        ("root/ecg/1/_timef_claim.json", &claim[..]),
    ] {
        rt.block_on(store.put(&ObjPath::from(key), bytes.to_vec().into())).unwrap();
    }
    match TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "2", 3)) {
        Err(Error::AlreadyExists { .. }) => {}
        other => panic!("a stale claim keeps the version taken: {other:?}"),
    }
    // a young claim is kept
    let kept = timef::storage::gc(&root, 3600).unwrap();
    assert_eq!(kept.removed_claims.len(), 0);
    assert_eq!(kept.kept_claims.len(), 2);
    // a dry run reports the same, per dataset, and removes nothing
    let before = objects(&store, "root");
    let dry = timef::storage::gc_dry_run(&root, 0).unwrap();
    assert_eq!(objects(&store, "root"), before);
    assert_eq!(dry.per_dataset, [("ecg".to_string(), 2)].into_iter().collect());
    let r = timef::storage::gc(&root, 0).unwrap();
    assert_eq!(
        r.removed_claims,
        vec!["memory://gc/root/ecg/1/_timef_claim.json", "memory://gc/root/ecg/2/_timef_claim.json"]
    );
    assert_eq!(dry, r);
    assert_eq!(
        r.removed_files,
        [
            "memory://gc/root/ecg/1/_timef_claim.json",
            "memory://gc/root/ecg/2/time_series/shard-00000.parquet",
            "memory://gc/root/ecg/2/_timef_claim.json"
        ],
        "the claims, and the uncommitted version's file before its claim"
    );
    assert_eq!(objects(&store, "root/ecg/2"), ["manifest.json"], "gc's fence");
    let next = timef::storage::gc(&root, 0).unwrap();
    assert_eq!(next.removed_files, ["memory://gc/root/ecg/2/manifest.json"], "the fence, next run");
    assert_eq!(objects(&store, "root/ecg/2"), Vec::<String>::new());
    let v1 = Version::open_at(root.join("ecg/1")).unwrap();
    assert_eq!(objects(&store, "root/ecg/1"), listed_plus_manifest(&v1), "the committed version is untouched");
    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "2", 3)).unwrap().commit().unwrap();
}

/// Objects under a version prefix that no writer claims (a cleared writer's
/// leftovers, or put by hand) make the prefix unusable, like a local non-empty
/// directory; a committed version with a stray claim beside it still verifies.
#[test]
fn memory_foreign_objects_refuse_the_write_and_a_stray_claim_verifies() {
    let (store, root) = memory("foreign");
    let rt = rt();
    rt.block_on(store.put(&ObjPath::from("root/ecg/1/time_series/shard-00009.parquet"), vec![7u8].into())).unwrap();
    match TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 3)) {
        Err(Error::NotAVersion { path, .. }) => assert_eq!(path, PathBuf::from("memory://foreign/root/ecg/1")),
        other => panic!("expected NotAVersion, got {other:?}"),
    }
    assert_eq!(objects(&store, "root/ecg/1"), ["time_series/shard-00009.parquet"], "the claim was released");

    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "2", 3)).unwrap().commit().unwrap();
    rt.block_on(store.put(&ObjPath::from("root/ecg/2/_timef_claim.json"), vec![1u8].into())).unwrap();
    let report = timef::verify::verify_at(&root.join("ecg/2")).unwrap();
    assert!(report.is_ok(), "{}", report.render());
}

#[test]
fn memory_files_equal_the_local_writers_bytes() {
    let (store, root) = memory("bytes");
    let tmp = tempfile::tempdir().unwrap();
    let local = commit(tmp.path(), ecg_dataset("ecg", "1", 9), small_options());
    TimeFWriter::at(root, small_options()).write(ecg_dataset("ecg", "1", 9)).unwrap().commit().unwrap();
    let copy = tmp.path().join("copy/ecg/1");
    download(&store, "root/ecg/1", &copy);
    assert_eq!(file_bytes(&copy), file_bytes(&local));
}

/// Counts of a [`store::Passing`]: the bytes its GETs return, its list
/// requests (`list` and `list_with_delimiter`), and the entries they return
/// (objects and common prefixes).
#[derive(Debug, Default)]
struct Counts {
    bytes: AtomicU64,
    lists: AtomicU64,
    listed: AtomicU64,
}

type Counting = store::Passing<Counts>;

impl store::Watch for Counts {
    fn got(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::SeqCst);
    }
    fn listing(&self) {
        self.lists.fetch_add(1, Ordering::SeqCst);
    }
    fn listed(&self, m: object_store::ObjectMeta) -> object_store::ObjectMeta {
        self.listed.fetch_add(1, Ordering::SeqCst);
        m
    }
    fn listed_prefix(&self) {
        self.listed.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn read_series_fetches_only_the_byte_ranges_it_needs() {
    let counting = Arc::new(Counting::default());
    let root = Location::from_object_store(counting.clone(), "memory://counting", "root").unwrap();
    let options = WriterOptions::builder().row_group_target_bytes(64 << 10).try_build().unwrap();
    TimeFWriter::at(root.clone(), options).write(noise_dataset("n", "1", 40, 20_000)).unwrap().commit().unwrap();
    let v = Version::open_at(root.join("n/1")).unwrap();
    let shard = v.manifest().files.iter().find(|f| f.path.starts_with("time_series/")).unwrap().bytes;
    v.index().unwrap();
    let before = counting.watch.bytes.load(Ordering::SeqCst);
    let values = v.read_series("x0017").unwrap();
    let fetched = counting.watch.bytes.load(Ordering::SeqCst) - before;
    assert_eq!(&values[..], &noise(18, 20_000)[..]);
    assert!(shard > 2_000_000, "a shard of {shard} bytes");
    assert!(fetched < shard / 8, "read_series fetched {fetched} of a {shard}-byte shard");
}

/// What `timef ls` lists on an object store for a root whose dataset `a` has
/// `series` series (of 2,000 values, a few shards each) and whose dataset `b`
/// has a committed version and a dead writer's claim beside a partial shard:
/// the committed versions, per dataset the claims `gc` would clear (and what
/// `gc --dry-run`, which lists every object, counts), the list requests made
/// and the entries they returned (and `gc --dry-run`'s entries), and the
/// number of shards of `a/1`.
struct LsListing {
    versions: Vec<(String, String)>,
    stale: BTreeMap<String, u64>,
    gc: BTreeMap<String, u64>,
    gc_listed: u64,
    lists: u64,
    listed: u64,
    shards: usize,
}

fn ls_listing(series: usize) -> LsListing {
    let counting = Arc::new(Counting::default());
    let root = Location::from_object_store(counting.clone(), "memory://ls", "root").unwrap();
    let options = WriterOptions::builder()
        .chunk_max_bytes(1024)
        .row_group_target_bytes(4096)
        .shard_target_bytes(1)
        .try_build()
        .unwrap();
    TimeFWriter::at(root.clone(), options).write(noise_dataset("a", "1", series, 2_000)).unwrap().commit().unwrap();
    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("b", "1", 2)).unwrap().commit().unwrap();
    let rt = rt();
    let claim = br#"{"writer_id":"0123456789abcdef0123456789abcdef","created_at_unix_s":0,"created_by":"t"}"#;
    rt.block_on(counting.put(&ObjPath::from("root/b/2/_timef_claim.json"), claim.to_vec().into())).unwrap();
    rt.block_on(counting.put(&ObjPath::from("root/b/2/time_series/shard-00000.parquet"), vec![2u8].into())).unwrap();
    let shards = rt.block_on(counting.list(Some(&ObjPath::from("root/a/1/time_series"))).collect::<Vec<_>>()).len();
    let (lists, listed) = (counting.watch.lists.load(Ordering::SeqCst), counting.watch.listed.load(Ordering::SeqCst));
    // what `timef ls` reads: the survey, then each committed version's manifest
    let survey = timef::storage::survey(&root, 0).unwrap();
    let versions = survey
        .datasets
        .iter()
        .flat_map(|d| {
            let open = |v: &&String| Version::open_at(d.location.join(v)).is_ok();
            d.versions.iter().filter(open).map(|v| (d.name.clone(), v.clone()))
        })
        .collect();
    let stale = survey.report.per_dataset;
    let lists = counting.watch.lists.load(Ordering::SeqCst) - lists;
    let listed = counting.watch.listed.load(Ordering::SeqCst) - listed;
    let before = counting.watch.listed.load(Ordering::SeqCst);
    let gc = timef::storage::gc_dry_run(&root, 0).unwrap().per_dataset;
    let gc_listed = counting.watch.listed.load(Ordering::SeqCst) - before;
    LsListing { versions, stale, gc, gc_listed, lists, listed, shards }
}

#[test]
fn ls_on_an_object_store_lists_with_a_delimiter_never_every_shard() {
    let (few, many) = (ls_listing(2), ls_listing(40));
    assert_eq!((few.shards, many.shards), (3, 50), "shards of a/1");
    let versions = [("a".to_string(), "1".to_string()), ("b".to_string(), "1".to_string())];
    let stale = BTreeMap::from([("b".to_string(), 1u64)]);
    for l in [&few, &many] {
        assert_eq!(l.versions[..], versions);
        assert_eq!(l.stale, stale);
        assert_eq!(l.gc, stale, "what gc --dry-run counts");
    }
    // the root, 2 datasets and 3 versions listed with a delimiter once each
    // (what marks each level), plus the dead writer's version listed whole
    // and its writer's (empty) parts' prefix
    assert_eq!((few.lists, many.lists), (8, 8), "list requests");
    // root: a/ b/; a: 1/; b: 1/ 2/; a/1: 4 files and time_series/; b/1: 4
    // files, time_series/ and tasks/; b/2: its claim and time_series/; and
    // b/2's 2 objects
    assert_eq!((few.listed, many.listed), (20, 20), "entries listed");
    // listing every object (what ls did before, through gc --dry-run) grows with them
    assert!(many.gc_listed >= few.gc_listed + 47, "{} and {} objects", few.gc_listed, many.gc_listed);
}

// ---------------------------------------------------------------- S3 (moto on 127.0.0.1)

#[cfg(feature = "s3")]
#[test]
fn s3_real_files_verify_conform_and_equal_the_local_bytes() {
    let Some(ep) = s3_endpoint("s3_real_files") else { return };
    let b = bucket(&ep, "real");
    let tmp = tempfile::tempdir().unwrap();
    let ucr = [real("ucr/BasicMotions_TRAIN.ts"), real("ucr/BasicMotions_TEST.ts")];
    let ucr: Vec<&str> = ucr.iter().map(|p| p.to_str().unwrap()).collect();
    let tsf = real("tsf/UnitTest_Tsf_Loader.tsf");
    let root_url = format!("s3://{b}/data");
    let local_root = tmp.path().join("local");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("BasicMotions", [&["ingest", "ucr"][..], &ucr[..]].concat()),
        ("tsf", vec!["ingest", "tsf", tsf.to_str().unwrap()]),
    ];
    let store = raw_store(&ep, &b);
    for (name, args) in cases {
        for root in [root_url.as_str(), local_root.to_str().unwrap()] {
            let mut a = args.clone();
            a.extend(["--root", root, "--name", name, "--version", "v1", "--quiet"]);
            let (code, out, err) = timef_s3(&ep, &a);
            assert_eq!(code, 0, "{a:?}: {err}");
            assert_eq!(out.trim(), format!("{root}/{name}/v1"));
        }
        let url = format!("{root_url}/{name}/v1");
        let (code, out, err) = timef_s3(&ep, &["verify", &url]);
        assert_eq!(code, 0, "verify {url}: {out}{err}");
        assert!(out.starts_with("ok: "), "{out}");
        let copy = tmp.path().join("copy").join(name).join("v1");
        download(&store, &format!("data/{name}/v1"), &copy);
        assert_conforming(&copy);
        assert_eq!(file_bytes(&copy), file_bytes(&local_root.join(name).join("v1")), "{name}");
        // values read from the store equal the local version's
        let (s3v, lv) = (
            Version::open_at(Location::parse(&url, &s3_options(&ep)).unwrap()).unwrap(),
            Version::open(local_root.join(name).join("v1")).unwrap(),
        );
        for m in lv.series().unwrap() {
            assert_eq!(s3v.read_series(&m.time_series_id).unwrap(), lv.read_series(&m.time_series_id).unwrap());
        }
    }
    // info, cat, ls and edit at the URL, as the README shows
    let url = format!("{root_url}/BasicMotions/v1");
    let (code, out, err) = timef_s3(&ep, &["info", &url, "--samples"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("BasicMotions / v1  ({url})")), "{out}");
    let sample = out.lines().skip_while(|l| !l.starts_with("samples (")).nth(1).unwrap().trim().to_string();
    let (sample_id, series) = sample.split_once(": ").unwrap();
    let series_id = series.split(' ').next().unwrap();
    let (code, cat_s3, err) = timef_s3(&ep, &["cat", &url, series_id]);
    assert_eq!(code, 0, "{err}");
    let (_, cat_local, _) = timef_s3(&ep, &["cat", local_root.join("BasicMotions/v1").to_str().unwrap(), series_id]);
    assert_eq!(cat_s3, cat_local);
    let (code, out, _) = timef_s3(&ep, &["ls", &root_url]);
    assert_eq!((code, out.as_str()), (0, "BasicMotions\n  v1\ntsf\n  v1\n"));
    let (code, out, err) = timef_s3(
        &ep,
        &["edit", &url, "--out-root", &root_url, "--version", "v2", "--remove-sample", sample_id, "--cascade"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with(&format!("{root_url}/BasicMotions/v2\n")), "{out}");
    let (code, out, err) = timef_s3(&ep, &["verify", &format!("{root_url}/BasicMotions/v2")]);
    assert_eq!(code, 0, "{out}{err}");
    // base on S3, new version on local disk
    let out_local = tmp.path().join("edited");
    let (code, _, err) = timef_s3(
        &ep,
        &[
            "edit",
            &url,
            "--out-root",
            out_local.to_str().unwrap(),
            "--version",
            "v2",
            "--remove-sample",
            sample_id,
            "--cascade",
        ],
    );
    assert_eq!(code, 0, "{err}");
    download(&store, "data/BasicMotions/v2", &tmp.path().join("copy2/BasicMotions/v2"));
    assert_eq!(file_bytes(&tmp.path().join("copy2/BasicMotions/v2")), file_bytes(&out_local.join("BasicMotions/v2")));
    let (code, out, _) = timef_s3(&ep, &["dedup", &url, &format!("{root_url}/BasicMotions/v2")]);
    assert_eq!(code, 0);
    assert!(out.contains("pages shared"), "{out}");
}

#[cfg(feature = "s3")]
#[test]
fn s3_ctrl_c_before_the_manifest_aborts_the_write_deletes_all_it_put_and_exits_130() {
    // from the claim to the manifest's create, a Ctrl-C'd writer stops at its
    // next write or at the commit and deletes its objects and its claim
    let Some(ep) = s3_endpoint("s3_ctrl_c") else { return };
    let b = bucket(&ep, "ctrlc");
    let store = raw_store(&ep, &b);
    let tmp = tempfile::tempdir().unwrap();
    let train = real("ucr/BasicMotions_TRAIN.ts");
    for point in ["staging-created", "mid-shard", "shards-written", "manifest-staged"] {
        let root = format!("s3://{b}/{point}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
        s3_env(&mut cmd, &ep);
        cmd.args(["--quiet", "ingest", "ucr", "--root", &root, "--name", "BasicMotions", "--version", "v1"])
            .arg(&train);
        let (code, stderr) = ctrl_c_at(cmd, point, &tmp.path().join(point));
        assert_eq!(code, Some(130), "{point}: {stderr:?}");
        assert_interrupted_error(point, &stderr);
        assert_eq!(objects(&store, point), Vec::<String>::new(), "{point}: every object it put is deleted");
    }
}

#[cfg(feature = "s3")]
#[test]
fn s3_ctrl_c_of_a_verify_removes_its_temporary_copy_and_exits_130() {
    // verify downloads the version into TMPDIR, then checks the copy; a Ctrl-C
    // in either phase stops it (a GET under way is dropped) and the copy goes
    let Some(ep) = s3_endpoint("s3_ctrl_c_verify") else { return };
    let b = bucket(&ep, "ctrlcverify");
    let tmp = tempfile::tempdir().unwrap();
    let root = format!("s3://{b}/data");
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let (code, _, err) = timef_s3(
        &ep,
        &[
            "--quiet",
            "ingest",
            "ucr",
            "--root",
            &root,
            "--name",
            "BasicMotions",
            "--version",
            "v1",
            train.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let url = format!("{root}/BasicMotions/v1");
    for point in ["verify-copying", "verify-copied", "verify-checked"] {
        let temp = tmp.path().join(format!("tmp-{point}"));
        std::fs::create_dir(&temp).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
        s3_env(&mut cmd, &ep);
        cmd.args(["verify", &url]).env("TMPDIR", &temp).stdout(std::process::Stdio::null());
        let (code, stderr) = ctrl_c_at(cmd, point, &tmp.path().join(point));
        assert_eq!(
            (code, stderr),
            (Some(130), vec![format!("timef: error: I/O on {url}: interrupted (Ctrl-C)")]),
            "{point}"
        );
        assert_eq!(std::fs::read_dir(&temp).unwrap().count(), 0, "{point}: the copy is removed");
    }
    let (code, out, err) = timef_s3(&ep, &["verify", &url]);
    assert_eq!(
        (code, out.lines().last()),
        (0, Some("ok: 6 files, 64 pages, 561 rows, 24000 values verified")),
        "{err}"
    );
}

#[cfg(feature = "s3")]
#[test]
fn s3_a_writer_whose_claim_was_cleared_writes_no_file_over_a_committed_version() {
    // A claims the version and pauses (before its first file, or with a shard
    // half encoded); its claim goes (as a gc run against a live writer would
    // clear it); B writes the version and commits; A goes on and stops before
    // any file of its own comes to be (its next file's start, or its shard's
    // PUT), so B's committed files stay B's
    let Some(ep) = s3_endpoint("s3_claim_cleared") else { return };
    let b = bucket(&ep, "cleared");
    let store = raw_store(&ep, &b);
    let tmp = tempfile::tempdir().unwrap();
    for point in ["staging-created", "mid-shard"] {
        let resume_on = tmp.path().join(point);
        let root = format!("s3://{b}/{point}");
        let ingest = |file: &str| -> Vec<String> {
            ["--quiet", "ingest", "ucr", "--root", &root, "--name", "BasicMotions", "--version", "1"]
                .iter()
                .map(ToString::to_string)
                .chain([real(file).to_string_lossy().into_owned()])
                .collect()
        };
        let mut a = Command::new(env!("CARGO_BIN_EXE_timef"));
        s3_env(&mut a, &ep);
        a.args(ingest("ucr/BasicMotions_TRAIN.ts"));
        let (mut a, a_err) = start_paused(a, point, Some(&resume_on));
        let prefix = format!("{point}/BasicMotions/1");
        rt().block_on(store.delete(&ObjPath::from(format!("{prefix}/{CLAIM}")))).unwrap();
        let b_args = ingest("ucr/BasicMotions_TEST.ts");
        let (code, out, err) = timef_s3(&ep, &b_args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "{point}: {err}");
        assert_eq!(out.trim(), format!("{root}/BasicMotions/1"));
        let committed = objects(&store, &prefix);
        std::fs::write(&resume_on, b"").unwrap();
        let rest: Vec<String> = a_err.collect();
        assert_eq!(a.wait().unwrap().code(), Some(3), "{point}: {rest:?}");
        assert_eq!(
            rest,
            [format!(
                "timef: error: I/O on {root}/BasicMotions/1/{CLAIM}: the claim is no longer this writer's \
                 (cleared by gc?); nothing was committed"
            )],
            "{point}"
        );
        let v =
            Version::open_at(Location::parse(&format!("{root}/BasicMotions/1"), &s3_options(&ep)).unwrap()).unwrap();
        assert_eq!(objects(&store, &prefix), committed, "{point}");
        assert_eq!(committed, listed_plus_manifest(&v), "{point}");
        assert!(timef::verify::verify_at(v.location()).unwrap().is_ok(), "{point}: B's version is whole");
    }
}

#[cfg(feature = "s3")]
#[test]
fn s3_two_writers_of_one_version_exactly_one_commits() {
    let Some(ep) = s3_endpoint("s3_race") else { return };
    let b = bucket(&ep, "race");
    let store = raw_store(&ep, &b);
    for round in 0..20 {
        let root = Location::parse(&format!("s3://{b}/r{round}"), &s3_options(&ep)).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let threads: Vec<_> = ["A", "B"]
            .into_iter()
            .map(|who| {
                let (root, barrier) = (root.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    // different data, so a loser's file over the winner's would show
                    let mut d = ecg_dataset("race", "1", if who == "A" { 4 } else { 5 });
                    d.info.description = Some(format!("writer {who}"));
                    barrier.wait();
                    let r = TimeFWriter::at(root, small_options()).write(d).and_then(|s| s.commit());
                    (who, r)
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let version = PathBuf::from(format!("s3://{b}/r{round}/race/1"));
        let winners: Vec<&str> = results.iter().filter(|r| r.1.is_ok()).map(|r| r.0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        for (who, r) in &results {
            match r {
                Ok(path) => assert_eq!(path, &version),
                Err(Error::AlreadyExists { path }) => assert_eq!(path, &version, "{who}"),
                // moto checks If-None-Match, then stores the object, on a
                // threaded server: two creates at the same instant may both
                // land, the later replacing the earlier, and the claim check
                // before each file (or the commit) stops the other writer (S3
                // itself never takes both); the one commit below is checked
                // whole either way
                Err(Error::Io { path, source })
                    if path == &PathBuf::from(format!("{}/_timef_claim.json", version.display()))
                        && source.to_string()
                            == "the claim is no longer this writer's (cleared by gc?); nothing was committed" => {}
                Err(other) => panic!("round {round}: writer {who}: {other:?}"),
            }
        }
        let v = Version::open_at(root.join("race/1")).unwrap();
        assert_eq!(v.manifest().dataset.description, Some(format!("writer {}", winners[0])));
        assert_eq!(objects(&store, &format!("r{round}/race/1")), listed_plus_manifest(&v), "round {round}");
        assert!(timef::verify::verify_at(&root.join("race/1")).unwrap().is_ok(), "round {round}");
    }
}

#[cfg(feature = "s3")]
#[test]
fn s3_a_shard_past_the_single_put_capacity_goes_out_as_multipart() {
    let Some(ep) = s3_endpoint("s3_multipart") else { return };
    let b = bucket(&ep, "multipart");
    let root = Location::parse(&format!("s3://{b}/m"), &s3_options(&ep)).unwrap();
    // 4 x 1M incompressible values: one shard of ~16 MB, past the 10 MiB single PUT
    TimeFWriter::at(root.clone(), WriterOptions::default())
        .write(noise_dataset("big", "1", 4, 1 << 20))
        .unwrap()
        .commit()
        .unwrap();
    let v = Version::open_at(root.join("big/1")).unwrap();
    let shard = v.manifest().files.iter().find(|f| f.path == "time_series/shard-00000.parquet").unwrap();
    assert!(shard.bytes > timef::storage::DEFAULT_SINGLE_PUT_BYTES as u64, "{}", shard.bytes);
    let store = raw_store(&ep, &b);
    let meta = rt().block_on(store.head(&ObjPath::from("m/big/1/time_series/shard-00000.parquet"))).unwrap();
    // S3 gives a multipart object the ETag "<md5 of part md5s>-<parts>"
    let etag = meta.e_tag.unwrap_or_default();
    assert!(etag.trim_matches('"').rsplit_once('-').is_some_and(|(_, n)| n == "2"), "ETag {etag}");
    assert!(timef::verify::verify_at(&root.join("big/1")).unwrap().is_ok());
    assert_eq!(v.read_series("x0002").unwrap()[..], noise(3, 1 << 20)[..]);
}

#[test]
fn s3_errors_name_the_url_never_a_secret() {
    let Some(ep) = s3_endpoint("s3_errors") else { return };
    let input = real("ucr/UnitTest_TRAIN.ts");
    let input = input.to_str().unwrap();
    // a missing bucket: exit 2 (docs/format.md "Exit codes"), the bucket named, no secret
    let args = ["ingest", "ucr", input, "--root", "s3://no-such-bucket-timef/x", "--name", "u", "--version", "1"];
    let (code, _, err) = timef_s3(&ep, &args);
    assert_eq!((code, err.as_str()), (2, "timef: error: not found: s3://no-such-bucket-timef: no such bucket\n"));
    // an unsupported scheme and an unknown option: exit 2
    let (code, _, err) = timef_s3(&ep, &["info", "ftp://host/x/1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = timef_s3(&ep, &["info", "s3://b/x/1", "--storage-option", "aws_nonsense=hunter2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("aws_nonsense") && !err.contains("hunter2"), "{err}");
    // the Debug form of a location carries no option value
    let loc = Location::parse("s3://b/x", &s3_options(&ep)).unwrap();
    assert_eq!(format!("{loc:?}"), "Location(s3://b/x)");
}

/// A second S3 server of the test's own, on a free port of 127.0.0.1.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Moto {
    fn start() -> Moto {
        Moto::serve(&[], "http")
    }
    /// Over HTTPS, with the certificate and key `tests/py/tls_cert.py` wrote in `dir`.
    fn start_tls(dir: &Path) -> Moto {
        let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
        Moto::serve(&["-c", cert.to_str().unwrap(), "-k", key.to_str().unwrap()], "https")
    }
    fn serve(args: &[&str], scheme: &str) -> Moto {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/moto_server");
        let child = Command::new(bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto { child, endpoint: format!("{scheme}://127.0.0.1:{port}") }
    }
    fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap().success();
        assert!(ok, "kill {sig}");
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.signal_quiet("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    fn signal_quiet(&self, sig: &str) -> std::io::Result<std::process::ExitStatus> {
        Command::new("kill").args([sig, &self.child.id().to_string()]).status()
    }
}

/// HTTPS through the build's TLS (rustls on ring, `Cargo.toml` feature `tls`):
/// a server whose certificate chains to a trusted root (`SSL_CERT_FILE`) takes
/// a write, a verify and a read; without that root the same read is refused as
/// an unknown issuer, so the certificate is checked, not only the handshake made.
#[test]
fn s3_over_https_trusts_the_roots_it_is_given_and_no_other() {
    if s3_endpoint("s3_over_https").is_none() {
        return;
    }
    let tls = tempfile::tempdir().unwrap();
    let Some(_) = py_script("tls_cert.py", &[tls.path().to_str().unwrap()]) else { return };
    let ca = tls.path().join("ca.pem");
    let moto = Moto::start_tls(tls.path());
    let port = moto.endpoint.rsplit(':').next().unwrap().to_string();
    // the bucket, over HTTPS with the same root
    let make_bucket = "import http.client, ssl, sys\n\
        c = http.client.HTTPSConnection('127.0.0.1', int(sys.argv[1]), context=ssl.create_default_context(cafile=sys.argv[2]))\n\
        c.request('PUT', '/timef-tls')\n\
        assert c.getresponse().status == 200";
    let py = require_python("s3_over_https").unwrap();
    let made = Command::new(py).args(["-c", make_bucket, &port, ca.to_str().unwrap()]).status().unwrap();
    assert!(made.success(), "create the bucket over HTTPS");
    let timef = |args: &[&str], roots: Option<&Path>| timef_s3_trusting(&moto.endpoint, roots, args);
    let input = real("ucr/UnitTest_TRAIN.ts");
    let args =
        ["ingest", "ucr", input.to_str().unwrap(), "--root", "s3://timef-tls/r", "--name", "u", "--version", "1"];
    assert_eq!(timef(&args, Some(&ca)), (0, "s3://timef-tls/r/u/1\n".to_string(), String::new()));
    let (code, out, err) = timef(&["verify", "s3://timef-tls/r/u/1"], Some(&ca));
    assert_eq!((code, out.as_str()), (0, "ok: 6 files, 64 pages, 81 rows, 480 values verified\n"), "{err}");
    let (code, out, err) = timef(&["info", "s3://timef-tls/r/u/1"], Some(&ca));
    assert!(code == 0 && out.starts_with("u / 1  (s3://timef-tls/r/u/1)\n"), "{code} {out} {err}");
    // no trusted root for the server: refused, and said why (no retries: it is not transient)
    let (code, out, err) = timef(&["info", "s3://timef-tls/r/u/1", "--storage-option", "max_retries=0"], None);
    assert_eq!((code, out.as_str()), (3, ""), "{err}");
    assert!(err.ends_with("invalid peer certificate: UnknownIssuer\n"), "{err}");
}

#[cfg(feature = "s3")]
#[test]
fn s3_server_stopped_mid_upload_leaves_no_version_and_gc_recovers() {
    if s3_endpoint("s3_server_stopped").is_none() {
        return;
    }
    let moto = Moto::start();
    let ep = moto.endpoint.clone();
    let b = bucket(&ep, "stopped");
    let mut opts = s3_options(&ep);
    opts.insert("timeout".into(), "2s".into());
    opts.insert("max_retries".into(), "1".into());
    opts.insert("retry_timeout_s".into(), "3".into());
    let root = Location::parse(&format!("s3://{b}/f"), &opts).unwrap();
    let pid = moto.child.id().to_string();
    let writer = TimeFWriter::at(root.clone(), small_options()).with_progress(Arc::new(move |e| {
        if let WriteProgressEvent::SeriesWritten { done: 20, .. } = e {
            // the server stops answering in the middle of the shards' uploads
            Command::new("kill").args(["-STOP", &pid]).status().unwrap();
        }
    }));
    let err = writer.write(noise_dataset("n", "1", 40, 3000)).unwrap_err();
    assert!(matches!(err, Error::ObjectStore { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("s3://{b}/f/n/1/")), "{err}");
    moto.signal("-CONT");
    // no visible version; the dead write's claim keeps the version taken until gc
    assert!(matches!(Version::open_at(root.join("n/1")), Err(Error::NotAVersion { .. })));
    assert_eq!(timef::reader::list_versions_at(&root).unwrap(), vec![]);
    let store = raw_store(&ep, &b);
    let left = objects(&store, "f/n/1");
    assert!(left.contains(&CLAIM.to_string()), "the abort could not reach the server: {left:?}");
    assert!(matches!(
        TimeFWriter::at(root.clone(), small_options()).write(noise_dataset("n", "1", 4, 300)),
        Err(Error::AlreadyExists { .. })
    ));
    let (code, out, err) = timef_s3(&ep, &["gc", &format!("s3://{b}/f"), "--older-than-s", "0"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 leftover(s) cleared"), "{out}");
    assert_eq!(objects(&store, "f/n/1"), ["manifest.json"], "gc's fence");
    let (code, out, err) = timef_s3(&ep, &["gc", &format!("s3://{b}/f"), "--older-than-s", "0"]);
    let want = format!("removed s3://{b}/f/n/1/manifest.json\n1 leftover(s) cleared, 1 file(s) removed\n");
    assert_eq!((code, out), (0, want), "{err}");
    assert_eq!(objects(&store, "f/n/1"), Vec::<String>::new());
    TimeFWriter::at(root.clone(), small_options()).write(noise_dataset("n", "1", 40, 3000)).unwrap().commit().unwrap();
    assert!(timef::verify::verify_at(&root.join("n/1")).unwrap().is_ok());
}

#[cfg(feature = "s3")]
#[test]
fn s3_writer_killed_mid_upload_leaves_no_version_and_gc_recovers() {
    let Some(ep) = s3_endpoint("s3_writer_killed") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("bench.arrow");
    // None, with a visible "skipped" line, without ../shared or a venv
    let Some(_) = py_tool("gen_bench.py", &[input.to_str().unwrap(), "--total-mib", "64"]) else { return };
    let b = bucket(&ep, "killed");
    let root = format!("s3://{b}/k");
    let args =
        ["ingest", "arrow", input.to_str().unwrap(), "--root", &root, "--name", "bench", "--version", "1", "--quiet"];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
    s3_env(&mut cmd, &ep);
    let mut child = cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let store = raw_store(&ep, &b);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !objects(&store, "k/bench/1").contains(&CLAIM.to_string()) {
        assert!(Instant::now() < deadline, "the writer never claimed the version");
        assert!(child.try_wait().unwrap().is_none(), "the writer ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: no clean-up runs
    child.wait().unwrap();
    let opts = s3_options(&ep);
    let rootl = Location::parse(&root, &opts).unwrap();
    assert!(matches!(Version::open_at(rootl.join("bench/1")), Err(Error::NotAVersion { .. })));
    let (code, out, _) = timef_s3(&ep, &["ls", &root]);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, _, err) = timef_s3(&ep, &args);
    assert_eq!(code, 2, "the dead writer's claim keeps the version: {err}");
    assert!(err.contains("timef gc"), "{err}");
    let (code, out, err) = timef_s3(&ep, &["gc", &root, "--older-than-s", "0"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 leftover(s) cleared"), "{out}");
    let (code, _, err) = timef_s3(&ep, &args);
    assert_eq!(code, 2, "gc's fence keeps the version until a later run: {err}");
    assert!(err.contains("fenced by gc"), "{err}");
    let (code, out, err) = timef_s3(&ep, &["gc", &root, "--older-than-s", "0"]);
    let want = format!("removed {root}/bench/1/manifest.json\n1 leftover(s) cleared, 1 file(s) removed\n");
    assert_eq!((code, out), (0, want), "{err}");
    let (code, _, err) = timef_s3(&ep, &args);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = timef_s3(&ep, &["verify", &format!("{root}/bench/1")]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A break-it review (95): one object whose key the client cannot name (an
/// empty or a `..` segment, which S3 takes) made `gc ROOT` and `ls ROOT` fail
/// whole, and `info` and `verify` of a version holding one. Such a key's
/// level is reported as odd and kept; a dataset that holds one is left as it
/// is (it may hide a writer's objects), the others are cleared as before.
#[cfg(feature = "s3")]
#[test]
fn a_key_the_client_cannot_name_is_reported_and_keeps_only_its_dataset_from_gc() {
    let Some(ep) = s3_endpoint("s3_unnameable_key") else { return };
    let b = bucket(&ep, "unnameable");
    let opts = s3_options(&ep);
    let root = Location::parse(&format!("s3://{b}/r"), &opts).unwrap();
    TimeFWriter::at(root.clone(), small_options()).write(noise_dataset("a", "1", 4, 300)).unwrap().commit().unwrap();
    TimeFWriter::at(root.clone(), small_options()).write(noise_dataset("c", "1", 4, 300)).unwrap().commit().unwrap();
    let claim = br#"{"writer_id":"0123456789abcdef0123456789abcdef","created_at_unix_s":0,"created_by":"t"}"#;
    for (key, body) in [
        ("r/a/2/_timef_claim.json", &claim[..]),
        ("r/c/2/_timef_claim.json", &claim[..]),
        ("r/c/1/extra//x", b"user"),
        // found by `ls` only as its rules read the dead claim's version: it reports what gc does
        ("r/d/2/_timef_claim.json", &claim[..]),
        ("r/d/2/time_series/sub//x", b"user"),
        ("r/logs//run1.txt", b"user"),
        ("r/notes/../x", b"user"),
    ] {
        let reply = raw_http(&ep, "PUT", &format!("/{b}/{key}"), body);
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{key}: {reply}");
    }
    let odd = |level: &str| {
        format!(
            "kept (odd) s3://{b}/r/{level}: holds a key the object-store client cannot name (an empty or a `.` or \
             `..` segment, as in `a//b`, or a control character), so what is under it cannot be listed; kept (rename or remove that key by \
             hand)\n"
        )
    };
    TimeFWriter::at(root.clone(), small_options()).write(noise_dataset("d", "1", 4, 300)).unwrap().commit().unwrap();
    // ls judges each leftover as gc does; it does not look inside committed
    // versions, so it does not see the level under c/1
    let survey = timef::storage::survey(&root, 0).unwrap();
    let mut dry = timef::storage::gc_dry_run(&root, 0).unwrap();
    dry.odd.retain(|(path, _)| !path.ends_with("/r/c/1/extra"));
    assert_eq!(survey.report, dry, "ls and gc --dry-run judge alike");
    let stale: Vec<(String, u64)> = survey.datasets.iter().map(|d| (d.name.clone(), d.stale)).collect();
    assert_eq!(stale, [("a".to_string(), 1), ("c".into(), 1), ("d".into(), 0)]);
    let (code, out, err) = timef_s3(&ep, &["gc", &format!("s3://{b}/r"), "--older-than-s", "0"]);
    let want = format!(
        "removed s3://{b}/r/a/2/_timef_claim.json\nremoved s3://{b}/r/c/2/_timef_claim.json\n{}{}{}{}2 leftover(s) \
         cleared, 2 file(s) removed\n",
        odd("c/1/extra"),
        odd("d/2/time_series/sub"),
        odd("logs"),
        odd("notes")
    );
    assert_eq!((code, out, err), (0, want, String::new()));
    // the dead claim whose version holds such a level is kept; the user's keys stay
    let store = raw_store(&ep, &b);
    assert_eq!(objects(&store, "r/a/2"), ["manifest.json"], "gc's fence");
    assert_eq!(objects(&store, "r/c/2"), ["manifest.json"], "gc's fence");
    let listed = raw_http(&ep, "GET", &format!("/{b}?list-type=2&prefix=r/"), b"");
    for key in
        ["r/c/1/extra//x", "r/d/2/_timef_claim.json", "r/d/2/time_series/sub//x", "r/logs//run1.txt", "r/notes/../x"]
    {
        assert!(listed.contains(&format!("<Key>{key}</Key>")), "{key}: {listed}");
    }
    let (code, out, err) = timef_s3(&ep, &["ls", &format!("s3://{b}/r")]);
    let fence = "  (2: fenced by gc after it cleared a dead writer's claim; a write of it is refused until a later \
                 `timef gc ROOT --older-than-s N` run finds the fence N seconds old)\n";
    let odd_ls = |level: &str| odd(level).replacen("kept (odd) ", "(odd: ", 1).replacen(": holds", " holds", 1);
    let want = format!(
        "a\n  1\n{fence}c\n  1\n{fence}d\n  1\n{}{}",
        odd_ls("logs").replace('\n', ")\n"),
        odd_ls("notes").replace('\n', ")\n")
    );
    assert_eq!((code, out, err), (0, want, String::new()));
    // a place whose own level holds such a key cannot be looked at (exit 3), by ls or gc
    let reply = raw_http(&ep, "PUT", &format!("/{b}/r/a//x"), b"user");
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    let unlistable = format!(
        "timef: error: I/O on s3://{b}/r/a: cannot list: holds a key the object-store client cannot name (an empty \
         or a `.` or `..` segment, as in `a//b`, or a control character), so what is under it cannot be listed; kept (rename or remove that \
         key by hand)\n"
    );
    for verb in [&["ls"][..], &["gc", "--dry-run", "--older-than-s", "0"], &["gc", "--older-than-s", "0"]] {
        let place = format!("s3://{b}/r/a");
        let (code, out, err) = timef_s3(&ep, &[verb, &[place.as_str()]].concat());
        assert_eq!((code, out.as_str(), err.as_str()), (3, "", unlistable.as_str()), "{verb:?}");
    }
    // the version holding such a key: its files are all there, the key is a finding of verify
    let (code, out, err) = timef_s3(&ep, &["info", &format!("s3://{b}/r/c/1")]);
    assert!(code == 0 && out.starts_with(&format!("c / 1  (s3://{b}/r/c/1)\n")), "{code} {out} {err}");
    let (code, out, err) = timef_s3(&ep, &["verify", &format!("s3://{b}/r/c/1")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("FAIL [listing] extra"), "{out}");
}

/// Review 97: a live writer's parts' prefix whose claim sits in a version
/// level that cannot be listed (so gc cannot see the claim) is kept, and a
/// dead claim whose writer's parts' prefix cannot be listed at its own level
/// is kept by gc and by ls alike (ls failed whole there).
#[cfg(feature = "s3")]
#[test]
fn a_claim_or_parts_behind_a_level_that_cannot_be_listed_are_kept_by_gc_and_ls_alike() {
    let Some(ep) = s3_endpoint("s3_unnameable_parts") else { return };
    let b = bucket(&ep, "unnameable-parts");
    let root = Location::parse(&format!("s3://{b}/r"), &s3_options(&ep)).unwrap();
    for name in ["e", "f"] {
        TimeFWriter::at(root.clone(), small_options())
            .write(noise_dataset(name, "1", 4, 300))
            .unwrap()
            .commit()
            .unwrap();
    }
    let writer = "0123456789abcdef0123456789abcdef";
    let claim = format!(r#"{{"writer_id":"{writer}","created_at_unix_s":0,"created_by":"t"}}"#);
    let parts = format!(r#"{{"write_id":"{writer}"}}"#);
    for (key, body) in [
        // e: the claim of version 2 is behind `e/2//x`, its writer's parts beside
        (format!("r/e/.tmp-2-{writer}/_timef_parts.json"), parts.as_str()),
        (format!("r/e/.tmp-2-{writer}/time_series/part-0.parquet"), "part"),
        ("r/e/2/_timef_claim.json".to_string(), claim.as_str()),
        ("r/e/2//x".to_string(), "user"),
        // f: a dead claim, its writer's parts' prefix unlistable at its own level
        ("r/f/2/_timef_claim.json".to_string(), claim.as_str()),
        ("r/f/2/time_series/s.parquet".to_string(), "shard"),
        (format!("r/f/.tmp-2-{writer}//x"), "user"),
    ] {
        let reply = raw_http(&ep, "PUT", &format!("/{b}/{key}"), body.as_bytes());
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{key}: {reply}");
    }
    let survey = timef::storage::survey(&root, 0).unwrap();
    let dry = timef::storage::gc_dry_run(&root, 0).unwrap();
    assert_eq!((survey.report.removed_claims.len(), dry.removed_claims.len()), (0, 0), "{survey:?}\n{dry:?}");
    let report = timef::storage::gc(&root, 0).unwrap();
    assert_eq!((report.removed_claims.len(), report.removed_files.len()), (0, 0), "{report:?}");
    let listed = raw_http(&ep, "GET", &format!("/{b}?list-type=2&prefix=r/"), b"");
    for key in [
        format!("r/e/.tmp-2-{writer}/_timef_parts.json"),
        format!("r/e/.tmp-2-{writer}/time_series/part-0.parquet"),
        "r/e/2/_timef_claim.json".into(),
        "r/f/2/_timef_claim.json".into(),
        "r/f/2/time_series/s.parquet".into(),
    ] {
        assert!(listed.contains(&format!("<Key>{key}</Key>")), "{key}: {listed}");
    }
}

/// Review 98: a dataset level that cannot be listed hides its writers'
/// objects, while a sibling prefix whose name decodes alike (`d%73` for `ds`)
/// lists old copies of their names: gc acts on nothing under a level with an
/// unlisted level above it, so a live writer's fresh parts stay.
#[cfg(feature = "s3")]
#[test]
fn nothing_is_acted_on_under_a_level_that_cannot_be_listed() {
    let Some(ep) = s3_endpoint("s3_unnameable_above") else { return };
    let b = bucket(&ep, "unnameable-above");
    let root = Location::parse(&format!("s3://{b}/r"), &s3_options(&ep)).unwrap();
    let writer = "0123456789abcdef0123456789abcdef";
    let parts = format!(r#"{{"write_id":"{writer}"}}"#);
    let put = |key: &str, body: &str| {
        let reply = raw_http(&ep, "PUT", &format!("/{b}/{key}"), body.as_bytes());
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{key}: {reply}");
    };
    // old copies of the writer's names under `d%73`
    put(&format!("r/d%2573/.tmp-2-{writer}/_timef_parts.json"), &parts);
    put(&format!("r/d%2573/.tmp-2-{writer}/time_series/part-0.parquet"), "old");
    std::thread::sleep(Duration::from_secs(3));
    // the live writer, just now, behind a level that cannot be listed
    let claim = format!(r#"{{"writer_id":"{writer}","created_at_unix_s":0,"created_by":"t"}}"#);
    put("r/ds/2/_timef_claim.json", &claim);
    put(&format!("r/ds/.tmp-2-{writer}/_timef_parts.json"), &parts);
    put(&format!("r/ds/.tmp-2-{writer}/time_series/part-0.parquet"), "fresh");
    put("r/ds//junk", "user");
    let report = timef::storage::gc(&root, 2).unwrap();
    assert_eq!((report.removed_claims.len(), report.removed_files.len()), (0, 0), "{report:?}");
    let listed = raw_http(&ep, "GET", &format!("/{b}?list-type=2&prefix=r/"), b"");
    for key in
        [format!("r/ds/.tmp-2-{writer}/_timef_parts.json"), format!("r/ds/.tmp-2-{writer}/time_series/part-0.parquet")]
    {
        assert!(listed.contains(&format!("<Key>{key}</Key>")), "{key}: {listed}");
    }
}

/// A URL that carries user info, a query or a fragment (where credentials hide)
/// is refused before any client sees it, and the secret appears nowhere.
#[test]
fn urls_with_credentials_are_refused_without_showing_them() {
    for url in [
        "s3://AKIA:hunter2@bucket/x",
        "s3://bucket/x?token=hunter2",
        "file:///tmp/x#hunter2",
        "https://AKIA:hunter2@foo.amazonaws.com/x",
    ] {
        let err = Location::parse(url, &StorageOptions::new()).unwrap_err();
        assert!(matches!(err, Error::InvalidUrl { .. }), "{url}: {err:?}");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("AKIA"), "{url}: {shown}");
        let (code, out, stderr) = common::cli(&["ls", url]);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(!format!("{out}{stderr}").contains("hunter2"), "{url}: {stderr}");
    }
    // user info before an empty host (`file://u:p@/path`): the URL parser's
    // own reason was "invalid international domain name" (review 132), and
    // the scheme was cut from the URL shown
    let err = Location::parse("file://AKIA:hunter2@/tmp/x", &StorageOptions::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid URL file:///tmp/x: user info, a query or a fragment is not accepted in a store URL: give \
         credentials through the environment or storage options"
    );
    // export writes a local file: a URL is refused, not read as a relative path
    // (`s3://b/x` was written to `./s3:/b/x` when such a folder existed)
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let (code, _, stderr) = common::cli(&["export", golden.to_str().unwrap(), "--out", "s3://AKIA:hunter2@b/x.arrow"]);
    assert_eq!((code, stderr.as_str()), (2, "timef: error: invalid option --out: takes a local file, not a URL\n"));
}

/// A version on S3 rewritten so that its index points out of its prefix (at
/// a copy of its shard under another version's prefix, the sentinel) and its
/// manifest lists a path leaving it: `cat` refuses (exit 2) before any GET of
/// the sentinel (its bytes never show), `verify` reports (exit 1).
#[cfg(feature = "s3")]
#[test]
fn s3_crafted_paths_never_leave_the_version_prefix() {
    let Some(ep) = s3_endpoint("s3_crafted_paths") else { return };
    let b = bucket(&ep, "crafted");
    let root_url = format!("s3://{b}/data");
    let ucr = real("ucr/BasicMotions_TRAIN.ts");
    let args =
        ["--quiet", "ingest", "ucr", "--root", &root_url, "--name", "bm", "--version", "v1", ucr.to_str().unwrap()];
    let (code, _, err) = timef_s3(&ep, &args);
    assert_eq!(code, 0, "{err}");
    let store = raw_store(&ep, &b);
    let rt = rt();
    let shard = "time_series/shard-00000.parquet";
    let bytes = rt.block_on(async { store.get(&ObjPath::from(format!("data/bm/v1/{shard}"))).await?.bytes().await });
    rt.block_on(store.put(&ObjPath::from(format!("data/bm/other/{shard}")), bytes.unwrap().into())).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    download(&store, "data/bm/v1", tmp.path());
    let bad = format!("../other/{shard}");
    rewrite_shard_paths(tmp.path(), |_, _| bad.clone());
    for rel in ["time_series_index.parquet", MANIFEST] {
        let body = std::fs::read(tmp.path().join(rel)).unwrap();
        rt.block_on(store.put(&ObjPath::from(format!("data/bm/v1/{rel}")), body.into())).unwrap();
    }
    let version = format!("{root_url}/bm/v1");
    let want = format!(
        "timef: error: corrupt version: {version}: time_series_index.parquet row 0 (bm-train-0/0 chunk 0): \
         path {bad:?} has a '..' component (leaves the version)\n"
    );
    assert_eq!(timef_s3(&ep, &["cat", &version, "bm-train-0/0"]), (2, String::new(), want));
    let (code, stdout, _) = timef_s3(&ep, &["verify", &version]);
    assert_eq!(code, 1);
    assert!(
        stdout.lines().any(|l| l.starts_with("FAIL [pointer] time_series_index.parquet") && l.contains(&bad)),
        "{stdout}"
    );
    // a manifest entry leaving the prefix: every verb refuses the version at open
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(tmp.path().join(MANIFEST)).unwrap()).unwrap();
    m["files"][0]["path"] = format!("../other/{shard}").into();
    rt.block_on(store.put(&ObjPath::from(format!("data/bm/v1/{MANIFEST}")), serde_json::to_vec(&m).unwrap().into()))
        .unwrap();
    let want = format!(
        "timef: error: corrupt version: {version}/manifest.json: files[0]: path {bad:?} has a '..' component (leaves \
         the version)\n"
    );
    for args in [vec!["cat", &version, "bm-train-0/0"], vec!["info", &version]] {
        assert_eq!(timef_s3(&ep, &args), (2, String::new(), want.clone()), "{args:?}");
    }
}

/// Objects a local copy cannot hold (an object `time_series` beside the
/// objects `time_series/...`; a segment too long for a file name) are
/// findings of `verify` on an object store, each named; everything else is
/// still checked.
#[test]
fn memory_verify_reports_objects_no_file_system_can_hold() {
    let (store, root) = memory("conflict");
    let rt = rt();
    TimeFWriter::at(root.clone(), small_options()).write(ecg_dataset("ecg", "1", 3)).unwrap().commit().unwrap();
    let long = "x".repeat(300);
    for key in ["root/ecg/1/time_series".to_string(), format!("root/ecg/1/{long}")] {
        rt.block_on(store.put(&ObjPath::from(key.as_str()), vec![7u8].into())).unwrap();
    }
    let report = timef::verify::verify_at(&root.join("ecg/1")).unwrap();
    let fails: Vec<String> = report.render().lines().filter(|l| l.starts_with("FAIL [")).map(str::to_string).collect();
    let holds = "an object under the version that no file system can hold beside the others";
    assert_eq!(fails.len(), 2, "{fails:?}");
    assert!(fails[0].starts_with(&format!("FAIL [listing] time_series object: {holds} (")), "{fails:?}");
    assert!(fails[1].starts_with(&format!("FAIL [listing] {long} object: {holds} (")), "{fails:?}");
    assert!(fails.iter().all(|l| l.ends_with("): not checked")), "{fails:?}");
}

/// Issue 25 §2 on S3: an edit that changes no shard (a source added) places
/// every shard with the store's server-side copy: it reads only footers and
/// page indexes, its bytes equal the local edit's, and it verifies.
#[cfg(feature = "s3")]
#[test]
fn s3_an_edit_changing_no_shard_copies_every_shard_server_side() {
    let Some(ep) = s3_endpoint("s3_shard_copy") else { return };
    let b = bucket(&ep, "copy");
    let tmp = tempfile::tempdir().unwrap();
    let dataset = || {
        let mut d = dataset_with_source("ds", "v1");
        for i in 0..24u32 {
            let (sid, xid) = (format!("s{i:02}"), format!("x{i:02}"));
            add_series(&mut d, &xid, "eeg", "C3", 256.0, i, 500 + (i as usize * 37) % 600);
            let sample = timef::Sample {
                sample_id: sid,
                source_id: "src".into(),
                series: main_refs(&[&xid]),
                ..Default::default()
            };
            d.add_sample(sample).unwrap();
        }
        d
    };
    let edit = |root: Location| {
        TimeFWriter::at(root.clone(), small_options()).write(dataset()).unwrap().commit().unwrap();
        let base = Arc::new(Version::open_at(root.join("ds/v1")).unwrap());
        let mut d = base.to_dataset("ds", "v2").unwrap();
        let source = timef::Source { source_id: "other".into(), name: "another source".into(), ..Default::default() };
        d.add_source(source).unwrap();
        let shards = base.manifest().counts.shards;
        let staged = TimeFWriter::at(root, small_options()).with_base(base).write(d).unwrap();
        let copied = staged.copied();
        staged.commit().unwrap();
        assert_eq!((copied.shards_copied, copied.pages_encoded, copied.pages_decoded), (shards, 0, 0));
        copied
    };
    let s3 = Location::parse(&format!("s3://{b}/data"), &s3_options(&ep)).unwrap();
    let remote = edit(s3.clone());
    let local_root = tmp.path().join("local");
    let local = edit(Location::from_path(&local_root).unwrap());
    assert_eq!(remote, local);
    let report = timef::verify::verify_at(&s3.join("ds/v2")).unwrap();
    assert!(report.is_ok(), "{}", report.summary());
    let copy = tmp.path().join("copy");
    download(&raw_store(&ep, &b), "data/ds/v2", &copy);
    assert_eq!(file_bytes(&copy), file_bytes(&local_root.join("ds/v2")));
}

/// An endpoint the S3 client cannot make a request of (not a URL, no host,
/// another scheme), given as an option or in `AWS_ENDPOINT_URL`, is refused
/// as an invalid URL (exit 2) before any request, never a panic (exit 101);
/// the value is not shown.
#[cfg(feature = "s3")]
#[test]
fn an_endpoint_that_is_not_an_http_url_is_refused_not_a_panic() {
    let reason =
        "the endpoint (option aws_endpoint, or its environment variable) is not an http:// or https:// URL with a host";
    for endpoint in [
        "notaurl",
        "http://[::1",
        "ftp://127.0.0.1:9",
        "http://",
        "unix:/tmp/s3.sock",
        "http://127.0.0.1:9\r",
        " http://127.0.0.1:9",
        "http://127.0.0.1:9/a b",
        // review 99: the URL parser reads these as http://host, the client cannot request them
        "http:///127.0.0.1:9",
        "https:///x",
        "http://127.0.0.1:9\\x",
    ] {
        let opts: StorageOptions = [("aws_endpoint".to_string(), endpoint.to_string())].into_iter().collect();
        match Location::parse("s3://bucket/root", &opts) {
            Err(Error::InvalidUrl { url, reason: why }) => {
                assert_eq!((url.as_str(), why.as_str()), ("s3://bucket/root", reason))
            }
            other => panic!("{endpoint}: {other:?}"),
        }
        for args in [vec!["ls", "s3://bucket/root"], vec!["info", "s3://bucket/root/bm/v1"]] {
            let (code, stderr) = timef_env(&args, &[("AWS_ENDPOINT_URL", endpoint)]);
            assert_eq!(code, Some(2), "{endpoint} {args:?}: {stderr}");
            assert_eq!(stderr, format!("timef: error: invalid URL {}: {reason}\n", args[1]), "{endpoint}");
        }
    }
}

/// A break-it review (95) found secrets in error texts: an endpoint's user
/// info, repeated by every request error of the client, and an option value
/// the client's builder could not parse, quoted in its error. An endpoint with
/// user info, a query or a fragment is refused before any request (as a store
/// URL with them is), and a value the builder refuses is named by its key;
/// neither value appears, whether given as an option or in the environment.
#[cfg(feature = "s3")]
#[test]
fn an_endpoint_credential_or_a_refused_option_value_never_appears_in_an_error() {
    const SECRET: &str = "Sup3rS3cr3t";
    const CANNOT: &str = "holds a URL the client cannot request (not spelled `http://host` or `https://host`, a bad \
                          port, white space or a control character)";
    let url = "s3://bucket/root";
    let with_url = |key: &str| {
        format!(
            "{key} holds a URL with user info, a query or a fragment, which the store's error texts would show: give \
             credentials through their own options or environment variables"
        )
    };
    let parse = |what: &str| format!("Generic Config error: failed to parse <the value of {what}>");
    let sse = |what: &str| {
        format!(
            "Generic S3 error: Invalid encryption type: <the value of {what}>. Valid values are \"AES256\", \
             \"sse:kms\", \"sse:kms:dsse\" and \"sse-c\"."
        )
    };
    // (option, environment variable, value, the refusal's reason for the option, for the variable)
    let cases = [
        (
            "aws_endpoint",
            "AWS_ENDPOINT_URL",
            format!("http://u:{SECRET}@127.0.0.1:9"),
            with_url("aws_endpoint"),
            with_url("AWS_ENDPOINT_URL"),
        ),
        (
            "aws_endpoint",
            "AWS_ENDPOINT_URL",
            format!("http://{SECRET}@127.0.0.1:9"),
            with_url("aws_endpoint"),
            with_url("AWS_ENDPOINT_URL"),
        ),
        (
            "aws_endpoint",
            "AWS_ENDPOINT",
            format!("http://127.0.0.1:9/?token={SECRET}"),
            with_url("aws_endpoint"),
            with_url("AWS_ENDPOINT"),
        ),
        // review 96: any URL the client requests (the metadata service's here) is held to the same
        (
            "aws_metadata_endpoint",
            "AWS_METADATA_ENDPOINT",
            format!("http://u:{SECRET}@127.0.0.1:9/?tok={SECRET}"),
            with_url("aws_metadata_endpoint"),
            with_url("AWS_METADATA_ENDPOINT"),
        ),
        // the environment's timeout is the option's default's to override: a variable read is taken instead
        (
            "timeout",
            "AWS_SKIP_SIGNATURE",
            SECRET.into(),
            parse("timeout") + " as Duration",
            parse("AWS_SKIP_SIGNATURE") + " as boolean",
        ),
        (
            "aws_allow_http",
            "AWS_ALLOW_HTTP",
            SECRET.into(),
            parse("aws_allow_http") + " as boolean",
            parse("AWS_ALLOW_HTTP") + " as boolean",
        ),
        (
            "aws_server_side_encryption",
            "AWS_SERVER_SIDE_ENCRYPTION",
            SECRET.into(),
            sse("aws_server_side_encryption"),
            sse("AWS_SERVER_SIDE_ENCRYPTION"),
        ),
        // review 97: a URL the client cannot request is refused, not a panic of the client
        (
            "aws_metadata_endpoint",
            "AWS_METADATA_ENDPOINT",
            "http://127.0.0.1:99999".into(),
            "aws_metadata_endpoint holds a URL the client cannot request (not spelled `http://host` or `https://host`, a bad port, white space or a control character)"
                .into(),
            "AWS_METADATA_ENDPOINT holds a URL the client cannot request (not spelled `http://host` or `https://host`, a bad port, white space or a control character)"
                .into(),
        ),
        // review 98: what the URL parser reads as http, spelled otherwise, is refused too (it panicked the client)
        (
            "aws_metadata_endpoint",
            "AWS_METADATA_ENDPOINT",
            "http:///127.0.0.1:1/".into(),
            format!("aws_metadata_endpoint {CANNOT}"),
            format!("AWS_METADATA_ENDPOINT {CANNOT}"),
        ),
        // review 97: a value that is a word of the message names its key there only
        (
            "aws_allow_http",
            "AWS_ALLOW_HTTP",
            "boolean".into(),
            parse("aws_allow_http") + " as boolean",
            parse("AWS_ALLOW_HTTP") + " as boolean",
        ),
        // a secret that happens to parse as a URL of another scheme is no endpoint: not refused as one
        (
            "aws_server_side_encryption",
            "AWS_SERVER_SIDE_ENCRYPTION",
            "k:ey#Sec".into(),
            sse("aws_server_side_encryption"),
            sse("AWS_SERVER_SIDE_ENCRYPTION"),
        ),
        // review 96: a short value the client does not quote
        (
            "aws_server_side_encryption",
            "AWS_SERVER_SIDE_ENCRYPTION",
            "pw1".into(),
            sse("aws_server_side_encryption"),
            sse("AWS_SERVER_SIDE_ENCRYPTION"),
        ),
    ];
    for (option, variable, value, by_option, by_variable) in &cases {
        let opts: StorageOptions = [(option.to_string(), value.clone())].into_iter().collect();
        match Location::parse(url, &opts) {
            Err(Error::InvalidUrl { url: shown, reason }) => {
                assert_eq!((shown.as_str(), reason.as_str()), (url, by_option.as_str()), "{option}")
            }
            other => panic!("{option}: {other:?}"),
        }
        let (code, stderr) = timef_env(&["ls", url], &[(variable, value)]);
        assert_eq!(code, Some(2), "{variable}: {stderr}");
        assert_eq!(stderr, format!("timef: error: invalid URL {url}: {by_variable}\n"), "{variable}");
        assert!(!stderr.contains(value.as_str()) || value == "boolean");
    }
    // review 97: what the client does not read is not looked at (an unprefixed
    // variable), and a proxy's URL may carry its credentials: both go to the request,
    // which fails here (nothing listens), without showing them
    for (variable, value) in [
        ("ENDPOINT_URL", format!("https://api.example.com/v1?tenant={SECRET}")),
        ("AWS_PROXY_URL", format!("http://u:{SECRET}@127.0.0.1:9")),
    ] {
        let args = ["ls", url, "--storage-option", "max_retries=0"];
        let (code, stderr) = timef_env(
            &args,
            &[(variable, &value), ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"), ("AWS_ALLOW_HTTP", "true")],
        );
        assert_eq!(code, Some(3), "{variable}: {stderr}");
        assert!(
            stderr.starts_with(&format!("timef: error: object store {url}: ")) && !stderr.contains(SECRET),
            "{stderr}"
        );
    }
}

/// verify copies a store's version into a temporary folder: one it cannot make
/// is named by the temporary directory, with the OS error, not tempfile's
/// random name (review 82).
#[test]
fn verify_of_a_store_version_without_a_temporary_directory_names_tmpdir() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let url = format!("file://{}", golden.display());
    let out = Command::new(env!("CARGO_BIN_EXE_timef"))
        .args(["verify", &url])
        .env("TMPDIR", "/nonexistent-timef-tmp")
        .output()
        .expect("run timef");
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned()),
        (Some(2), "timef: error: I/O on /nonexistent-timef-tmp: No such file or directory (os error 2)\n".to_string())
    );
}
