//! Versions from untrusted hands (docs/format.md "Paths inside a version"):
//! crafted by rewriting files of a real version, each verb refuses with the
//! exact error and exit code, and nothing outside the version is opened (the
//! error is raised by the path check, before any open; the sentinel outside,
//! a valid shard, would otherwise be read and printed).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{cli, commit, ecg_dataset, reseal, rewrite_shard_paths, small_options};
use timef::reader::Version;
use timef::Error;

/// A committed version `root/ecg/1` under a temporary directory, and the
/// sentinel `outside/stolen.parquet` beside `root` (a copy of a real shard, so
/// a reader that followed a path to it would read it without complaint).
struct Crafted {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    sentinel: PathBuf,
}

impl Crafted {
    fn new() -> Crafted {
        let tmp = tempfile::tempdir().unwrap();
        let dir = commit(&tmp.path().join("root"), ecg_dataset("ecg", "1", 3), small_options());
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let sentinel = outside.join("stolen.parquet");
        std::fs::copy(dir.join("time_series/shard-00000.parquet"), &sentinel).unwrap();
        Crafted { tmp, dir, sentinel }
    }

    fn dir(&self) -> &str {
        self.dir.to_str().unwrap()
    }

    fn out_root(&self) -> String {
        self.tmp.path().join("edited").to_str().unwrap().to_string()
    }
}

/// The position of `rel` in the manifest's `files`.
fn file_index(dir: &Path, rel: &str) -> usize {
    Version::open(dir).unwrap().manifest().files.iter().position(|f| f.path == rel).unwrap()
}

/// The index row of series `id`'s first chunk.
fn first_row(dir: &Path, id: &str) -> usize {
    Version::open(dir).unwrap().index().unwrap().iter().position(|e| e.meta.time_series_id == id).unwrap()
}

fn shard_path_refused(bad: impl Fn(&Crafted) -> String, problem: &str) {
    let c = Crafted::new();
    let bad = &bad(&c);
    let row = first_row(&c.dir, "s000/I");
    rewrite_shard_paths(&c.dir, |_, _| bad.to_string());
    let want = format!(
        "timef: error: corrupt version: {}: time_series_index.parquet row {row} (s000/I chunk 0): path {bad:?} {problem}\n",
        c.dir.display()
    );
    assert_eq!(cli(&["cat", c.dir(), "s000/I"]), (2, String::new(), want.clone()));
    // edit reads every series of the base: the first one refused ends it, nothing written
    let out = c.out_root();
    let (code, stdout, err) = cli(&["edit", c.dir(), "--out-root", &out, "--version", "2", "--remove-sample", "s002"]);
    // the read of the base fails as any read of it does (not as a loader of the user's)
    assert_eq!((code, stdout.as_str(), err.as_str()), (2, "", want.as_str()));
    assert!(!Path::new(&out).join("ecg/2").exists());
    // the library says the same
    match Version::open(&c.dir).unwrap().read_series("s000/I") {
        Err(Error::Corrupt { path, reason }) => {
            assert_eq!(path, c.dir);
            assert_eq!(reason, format!("time_series_index.parquet row {row} (s000/I chunk 0): path {bad:?} {problem}"));
        }
        other => panic!("{other:?}"),
    }
    // verify reports it (exit 1), and reads nothing outside either
    let (code, stdout, _) = cli(&["verify", c.dir()]);
    assert_eq!(code, 1);
    let line = format!("FAIL [pointer] time_series_index.parquet row {row}: s000/I chunk 0 points at {bad}, not a shard of this version");
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
}

#[test]
fn shard_path_with_dot_dot_is_refused_by_every_verb() {
    shard_path_refused(|_| "../../../outside/stolen.parquet".into(), "has a '..' component (leaves the version)");
}

#[test]
fn absolute_shard_path_is_refused_by_every_verb() {
    shard_path_refused(|c| c.sentinel.to_str().unwrap().to_string(), "is absolute");
}

#[test]
fn shard_path_not_in_the_manifest_is_refused_by_every_verb() {
    shard_path_refused(
        |c| {
            // present in the version's directory, but not one of its files
            std::fs::copy(&c.sentinel, c.dir.join("time_series/shard-99999.parquet")).unwrap();
            "time_series/shard-99999.parquet".into()
        },
        "is not listed in manifest.json",
    );
}

#[test]
fn symlinked_shard_is_never_followed() {
    let c = Crafted::new();
    let shard = c.dir.join("time_series/shard-00000.parquet");
    std::fs::remove_file(&shard).unwrap();
    std::os::unix::fs::symlink(&c.sentinel, &shard).unwrap();
    let link = "a symbolic link (a version's files are never followed: docs/format.md \"Paths inside a version\")";
    let want = format!("timef: error: corrupt version: {}: {link}\n", shard.display());
    assert_eq!(cli(&["cat", c.dir(), "s000/I"]), (2, String::new(), want.clone()));
    let out = c.out_root();
    let (code, _, err) = cli(&["edit", c.dir(), "--out-root", &out, "--version", "2", "--remove-sample", "s002"]);
    assert_eq!((code, err.as_str()), (2, want.as_str()));
    let (code, _, err) = cli(&["dedup", c.dir(), c.dir()]);
    assert_eq!((code, err.as_str()), (2, want.as_str()));
    let (code, stdout, _) = cli(&["verify", c.dir()]);
    assert_eq!(code, 1);
    let i = file_index(&c.dir, "time_series/shard-00000.parquet");
    let line = format!("FAIL [listing] time_series/shard-00000.parquet manifest files[{i}]: {link}");
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
}

#[test]
fn symlinked_directory_of_a_version_is_never_followed() {
    let c = Crafted::new();
    // time_series/ replaced by a link to a directory outside holding the same shard names
    let outside = c.tmp.path().join("outside/time_series");
    std::fs::rename(c.dir.join("time_series"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, c.dir.join("time_series")).unwrap();
    let shard = c.dir.join("time_series/shard-00000.parquet");
    let link = "a symbolic link (a version's files are never followed: docs/format.md \"Paths inside a version\")";
    let want = format!("timef: error: corrupt version: {}: directory time_series is {link}\n", shard.display());
    assert_eq!(cli(&["cat", c.dir(), "s000/I"]), (2, String::new(), want));
    let (code, stdout, _) = cli(&["verify", c.dir()]);
    assert_eq!(code, 1);
    let i = file_index(&c.dir, "time_series/shard-00000.parquet");
    for line in [
        format!("FAIL [listing] time_series/shard-00000.parquet manifest files[{i}]: directory time_series is {link}"),
        format!("FAIL [listing] time_series file: {link}"),
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line}\n{stdout}");
    }
}

#[test]
fn symlinked_index_and_samples_are_never_followed() {
    let c = Crafted::new();
    let link = "a symbolic link (a version's files are never followed: docs/format.md \"Paths inside a version\")";
    for rel in ["time_series_index.parquet", "samples.parquet"] {
        let copy = c.tmp.path().join("outside").join(rel);
        std::fs::rename(c.dir.join(rel), &copy).unwrap();
        std::os::unix::fs::symlink(&copy, c.dir.join(rel)).unwrap();
    }
    let index =
        format!("timef: error: corrupt version: {}: {link}\n", c.dir.join("time_series_index.parquet").display());
    let samples = format!("timef: error: corrupt version: {}: {link}\n", c.dir.join("samples.parquet").display());
    assert_eq!(cli(&["cat", c.dir(), "s000/I"]), (2, String::new(), index.clone()));
    // info checks every listed file, in the manifest's order (samples.parquet is listed
    // before the index), before it reads the index; a reader refuses the samples file too
    let (code, _, err) = cli(&["info", c.dir(), "--samples"]);
    assert_eq!((code, err), (2, samples.clone()));
    let refused = Version::open(&c.dir).unwrap().samples().unwrap_err();
    assert_eq!(format!("timef: error: {refused}\n"), samples);
    let out = c.out_root();
    // an edit checks the base's files as info does, before it reads any
    let (code, _, err) = cli(&["edit", c.dir(), "--out-root", &out, "--version", "2", "--remove-sample", "s002"]);
    assert_eq!((code, err), (2, samples));
    let (code, stdout, _) = cli(&["verify", c.dir()]);
    assert_eq!(code, 1);
    for rel in ["time_series_index.parquet", "samples.parquet"] {
        let i = file_index(&c.dir, rel);
        let line = format!("FAIL [listing] {rel} manifest files[{i}]: {link}");
        assert!(stdout.lines().any(|l| l == line), "{line}\n{stdout}");
    }
}

#[test]
fn manifest_files_entry_with_dot_dot_is_refused_by_every_verb() {
    let c = Crafted::new();
    let path = c.dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let bad = "time_series/../../../../outside/stolen.parquet";
    m["files"][3]["path"] = bad.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let want = format!(
        "timef: error: corrupt version: {}: files[3]: path {bad:?} has a '..' component (leaves the version)\n",
        path.display()
    );
    let out = c.out_root();
    for args in [
        vec!["cat", c.dir(), "s000/I"],
        vec!["info", c.dir()],
        vec!["info", c.dir(), "--json"],
        vec!["dedup", c.dir(), c.dir()],
        vec!["edit", c.dir(), "--out-root", &out, "--version", "2", "--remove-sample", "s002"],
    ] {
        assert_eq!(cli(&args), (2, String::new(), want.clone()), "{args:?}");
    }
    let (code, stdout, _) = cli(&["verify", c.dir()]);
    assert_eq!(code, 1);
    let line = format!(
        "FAIL [listing] {bad} manifest files[3]: path has a '..' component (leaves the version): not a file inside the version (docs/format.md \"Paths inside a version\")"
    );
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
}

/// A task name from the manifest becomes a folder name (`tasks/task=<name>/`):
/// `..` there is a corrupt version for every verb, before any task file is opened.
#[test]
fn manifest_task_name_with_dot_dot_is_a_corrupt_version() {
    let c = Crafted::new();
    let path = c.dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["counts"]["tasks"] = serde_json::json!({"..": 1});
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let want = format!(
        "timef: error: corrupt version: {}: counts.tasks: task name \"..\" must be 1-128 characters of [A-Za-z0-9._-] not starting with '.'\n",
        path.display()
    );
    let out = c.out_root();
    for args in [
        vec!["cat", c.dir(), "s000/I"],
        vec!["info", c.dir()],
        vec!["edit", c.dir(), "--out-root", &out, "--version", "2", "--remove-sample", "s002"],
    ] {
        assert_eq!(cli(&args), (2, String::new(), want.clone()), "{args:?}");
    }
}

/// The same rules on an object store: the version prefix is the boundary.
#[test]
fn object_store_version_refuses_paths_leaving_its_prefix() {
    use object_store::{memory::InMemory, ObjectStore, ObjectStoreExt, PutPayload};
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let root = timef::storage::Location::from_object_store(Arc::clone(&store), "memory://untrusted", "root").unwrap();
    let dir = timef::TimeFWriter::at(root.clone(), small_options())
        .write(ecg_dataset("ecg", "1", 3))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(dir, PathBuf::from("memory://untrusted/root/ecg/1"));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let get = |p: &str| rt.block_on(async { store.get(&p.into()).await.unwrap().bytes().await.unwrap() });
    let put = |p: &str, b: Vec<u8>| rt.block_on(store.put(&p.into(), PutPayload::from(b))).unwrap();
    // the crafted files, made locally and put back
    let local = tempfile::tempdir().unwrap();
    for rel in ["manifest.json", "time_series_index.parquet"] {
        std::fs::write(local.path().join(rel), get(&format!("root/ecg/1/{rel}"))).unwrap();
    }
    let row = 0;
    rewrite_shard_paths(local.path(), |_, _| "../2/time_series/shard-00000.parquet".into());
    for rel in ["manifest.json", "time_series_index.parquet"] {
        put(&format!("root/ecg/1/{rel}"), std::fs::read(local.path().join(rel)).unwrap());
    }
    let v = Version::open_at(root.join("ecg/1")).unwrap();
    let first = v.index().unwrap().iter().position(|e| e.meta.time_series_id == "s000/I").unwrap();
    assert_eq!(first, row);
    match v.read_series("s000/I") {
        Err(Error::Corrupt { path, reason }) => {
            assert_eq!(path, PathBuf::from("memory://untrusted/root/ecg/1"));
            assert_eq!(
                reason,
                "time_series_index.parquet row 0 (s000/I chunk 0): path \"../2/time_series/shard-00000.parquet\" has a '..' component (leaves the version)"
            );
        }
        other => panic!("{other:?}"),
    }
    // a manifest entry leaving the prefix: the version is refused at open
    let mut m: serde_json::Value = serde_json::from_slice(&get("root/ecg/1/manifest.json")).unwrap();
    m["files"][0]["path"] = "../../other/annotations.parquet".into();
    put("root/ecg/1/manifest.json", serde_json::to_vec(&m).unwrap());
    match Version::open_at(root.join("ecg/1")) {
        Err(Error::Corrupt { path, reason }) => {
            assert_eq!(path, PathBuf::from("memory://untrusted/root/ecg/1/manifest.json"));
            assert_eq!(
                reason,
                "files[0]: path \"../../other/annotations.parquet\" has a '..' component (leaves the version)"
            );
        }
        other => panic!("{other:?}"),
    }
    let report = timef::verify::verify_at(&root.join("ecg/1")).unwrap();
    assert!(report
        .findings
        .iter()
        .any(|f| f.file == "../../other/annotations.parquet" && f.location == "manifest files[0]"));
}

/// A page of the index whose bytes were changed (its CRC no longer matches),
/// resealed so the decoder meets it (a read checks a table's sha256 first):
/// the decoding error is a corrupt version, exit 2 like every other kind of
/// corruption (not 3), one line naming the file; `verify` reports it (exit 1).
#[test]
fn a_decoding_error_of_a_version_file_is_a_corrupt_version_exit_2() {
    let c = Crafted::new();
    let path = c.dir.join("time_series_index.parquet");
    let meta = common::parquet_metadata(&path);
    let chunk = meta.row_group(0).column(0);
    let last = (chunk.data_page_offset() + chunk.compressed_size() - 1) as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[last] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    reseal(&c.dir, "time_series_index.parquet");
    for args in [vec!["cat", c.dir(), "s000/I"], vec!["info", c.dir(), "--samples"]] {
        // info reads and checks the index too, so it meets the page
        let (code, stdout, err) = cli(&args);
        assert_eq!((code, stdout.as_str(), err.lines().count()), (2, "", 1), "{args:?}: {err}");
        let want = format!(
            "timef: error: corrupt version: {}: arrow: Parquet argument error: Parquet error: Page CRC checksum \
             mismatch\n",
            path.display()
        );
        assert_eq!(err, want);
    }
    let (code, stdout, _) = cli(&["verify", c.dir()]);
    assert_eq!(code, 1);
    assert!(stdout.lines().any(|l| l.starts_with("FAIL [") && l.contains("time_series_index.parquet")), "{stdout}");
}

/// `timef --help` documents the exit codes.
#[test]
fn help_documents_the_exit_codes() {
    let (code, stdout, _) = cli(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains(
            "Exit codes: 0 success; 1 verify found problems; 2 bad usage, bad input, a place that does not exist \
             (directory, bucket, container, prefix), or a corrupt version (every verb but verify); 3 I/O, \
             object-store or internal failure; 130 interrupted."
        ),
        "{stdout}"
    );
}

/// The version directory replaced while a reader holds the version open: the
/// directory is renamed away and a link to a directory outside (holding a
/// garbage shard at the same path) put in its place. The reader opened the
/// version directory once and keeps reading the version it was given; the
/// garbage outside is never read.
#[test]
fn a_version_directory_swapped_for_a_link_after_open_is_not_followed() {
    let c = Crafted::new();
    let v = Version::open(&c.dir).unwrap();
    let ids = ["s000/I", "s001/I"];
    let before: Vec<Vec<f32>> = ids.iter().map(|id| v.read_series(id).unwrap().to_vec()).collect();
    let outside = c.tmp.path().join("outside-version");
    std::fs::create_dir_all(outside.join("time_series")).unwrap();
    for rel in ["manifest.json", "time_series_index.parquet", "samples.parquet"] {
        std::fs::copy(c.dir.join(rel), outside.join(rel)).unwrap();
    }
    std::fs::write(outside.join("time_series/shard-00000.parquet"), b"OUTSIDE, never to be read").unwrap();
    std::fs::rename(&c.dir, c.tmp.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, &c.dir).unwrap();
    let after: Vec<Vec<f32>> = ids.iter().map(|id| v.read_series(id).unwrap().to_vec()).collect();
    assert_eq!(after, before);
    // a version opened now follows the link the user names: it is that version
    let err = Version::open(&c.dir).unwrap().read_series("s000/I").unwrap_err().to_string();
    let shard = c.dir.join("time_series/shard-00000.parquet");
    assert!(err.starts_with(&format!("corrupt version: {}: ", shard.display())), "{err}");
}
