//! Writers killed with SIGKILL at every named point of a write
//! (`TIMEF_TEST_PAUSE_AT`, docs/format.md §1 "Crash tests"), then `ls` and
//! `gc`: what a dead writer left is counted and removed, nothing committed is
//! touched, and the version can be written again. A live writer's staging
//! survives `gc` run beside it, and so does one paused before it locks its
//! staging; `gc` skips a staging directory its writer commits while gc runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use common::*;

const POINTS: [&str; 7] = [
    "staging-made",
    "staging-created",
    "mid-shard",
    "shards-written",
    "manifest-staged",
    "before-rename",
    "after-rename",
];

/// Every entry of a complete BasicMotions version, relative, sorted.
const VERSION_ENTRIES: [&str; 9] = [
    "annotations.parquet",
    "manifest.json",
    "samples.parquet",
    "tasks",
    "tasks/task=train",
    "tasks/task=train/part-0.parquet",
    "time_series",
    "time_series/shard-00000.parquet",
    "time_series_index.parquet",
];

const SHARD: &str = "time_series/shard-00000.parquet";

/// A `timef` process stopped at a pause point; what it writes to stderr after
/// the pause is collected (a closed pipe would fail its later messages).
struct Paused {
    child: Child,
    stderr: std::thread::JoinHandle<String>,
}

impl Paused {
    /// `timef args`, paused at `point`; returns once it says it paused there.
    /// With `resume_on`, it goes on once that file exists.
    fn start(args: &[&str], point: &str, resume_on: Option<&Path>) -> Paused {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
        cmd.args(args);
        let (child, lines) = start_paused(cmd, point, resume_on);
        let stderr = std::thread::spawn(move || lines.collect::<Vec<_>>().join("\n"));
        Paused { child, stderr }
    }

    fn kill(mut self) {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
    }

    /// Lets a process paused with `resume_on` go on (creates the file) and
    /// waits for it: exit code, stdout, stderr.
    fn resume(mut self, resume_on: &Path) -> (i32, String, String) {
        std::fs::write(resume_on, b"").unwrap();
        let mut stdout = String::new();
        std::io::Read::read_to_string(&mut self.child.stdout.take().unwrap(), &mut stdout).unwrap();
        let code = self.child.wait().unwrap().code().unwrap_or(-1);
        (code, stdout, self.stderr.join().unwrap())
    }
}

/// `timef ingest ucr` of BasicMotions_TRAIN.ts as `BasicMotions/<version>`
/// under `root`, as arguments.
fn ingest_args(root: &Path, version: &str) -> Vec<String> {
    let train = real("ucr/BasicMotions_TRAIN.ts");
    ["--quiet", "ingest", "ucr", "--root", root.to_str().unwrap(), "--name", "BasicMotions", "--version", version]
        .iter()
        .map(ToString::to_string)
        .chain([train.to_str().unwrap().to_string()])
        .collect()
}

/// The ingest of `version` paused at `point` (see [`Paused::start`]).
fn paused_writer(root: &Path, version: &str, point: &str, resume_on: Option<&Path>) -> Paused {
    let args = ingest_args(root, version);
    Paused::start(&args.iter().map(String::as_str).collect::<Vec<_>>(), point, resume_on)
}

fn ingest(root: &Path, version: &str) {
    let args = ingest_args(root, version);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

/// The names in the dataset directory `BasicMotions/`, sorted.
fn dataset_entries(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root.join("BasicMotions"))
        .map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Staging directories (`.tmp-*`, and `.new-*` before their writer's lock) of `BasicMotions/`.
fn staging_dirs(root: &Path) -> Vec<PathBuf> {
    dataset_entries(root)
        .into_iter()
        .filter(|n| n.starts_with(".tmp-") || n.starts_with(".new-"))
        .map(|n| root.join("BasicMotions").join(n))
        .collect()
}

/// What a writer killed at `point` leaves in its staging directory: the name
/// prefix and every entry (relative, sorted).
fn left_at(point: &str) -> (&'static str, Vec<&'static str>) {
    match point {
        "staging-made" => (".new-", vec![]),
        "staging-created" => (".tmp-", vec![]),
        "mid-shard" | "shards-written" => (".tmp-", vec!["time_series", SHARD]),
        _ => (".tmp-", VERSION_ENTRIES.to_vec()),
    }
}

fn run(args: &[&str]) -> String {
    let (code, out, err) = cli(args);
    assert_eq!(code, 0, "timef {args:?}: {err}");
    out
}

#[test]
fn writers_killed_at_every_point_leave_exactly_their_staging_and_gc_clears_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let r = root.to_str().unwrap();
    // a committed version beside the killed writers must never change
    let committed = root.join("BasicMotions/base");
    ingest(root, "base");
    let committed_bytes = file_bytes(&committed);
    let mut versions = vec!["base".to_string()];
    for (i, point) in POINTS.iter().enumerate() {
        let version = format!("v{i}");
        paused_writer(root, &version, point, None).kill();
        let dir = root.join("BasicMotions").join(&version);
        let stale = staging_dirs(root);
        let ls = run(&["ls", r]);
        let mut left = None;
        if *point == "after-rename" {
            // renamed: committed and complete, nothing stale
            assert!(stale.is_empty(), "{point}: {stale:?}");
            assert_eq!(tree(&dir), VERSION_ENTRIES, "{point}");
            assert!(!ls.contains("stale"), "{point}: {ls}");
            assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0, "{point}: the renamed version verifies");
        } else {
            // exactly one staging directory beside the committed versions, holding exactly this
            assert_eq!(stale.len(), 1, "{point}: one staging directory left: {stale:?}");
            let name = stale[0].file_name().unwrap().to_string_lossy().into_owned();
            let mut want = vec![name.clone()];
            want.extend(versions.iter().cloned());
            assert_eq!(dataset_entries(root), want, "{point}");
            let (prefix, entries) = left_at(point);
            let random = name.strip_prefix(&format!("{prefix}{version}-")).unwrap_or_else(|| panic!("{point}: {name}"));
            assert_eq!(random.len(), 32, "{point}: {name}");
            assert_eq!(tree(&stale[0]), entries, "{point}");
            left = Some(file_bytes(&stale[0]));
            assert!(!dir.exists(), "{point}: the version is not visible");
            assert!(
                ls.contains("  (1 stale staging director(ies) of dead writers: `timef gc` removes them)"),
                "{point}: {ls}"
            );
            let dry = run(&["gc", r, "--older-than-s", "0", "--dry-run"]);
            assert!(dry.contains(&format!("would remove {}", stale[0].display())), "{point}: {dry}");
            assert_eq!(staging_dirs(root), stale, "{point}: a dry run removes nothing");
        }
        let gc = run(&["gc", r, "--older-than-s", "0"]);
        let cleared = if *point == "after-rename" { 0 } else { 1 };
        assert!(gc.contains(&format!("{cleared} leftover(s) cleared")), "{point}: {gc}");
        assert!(staging_dirs(root).is_empty(), "{point}: nothing stale after gc");
        assert!(!run(&["ls", r]).contains("stale"), "{point}");
        assert_eq!(file_bytes(&committed), committed_bytes, "{point}: the committed version is untouched");
        if *point != "after-rename" {
            ingest(root, &version);
        }
        versions.push(version.clone());
        assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0, "{point}: the version written again verifies");
        // the same data files as an undisturbed write (the manifest names the version)
        let written = file_bytes(&dir);
        let (mut again, mut base) = (written.clone(), committed_bytes.clone());
        again.remove("manifest.json");
        base.remove("manifest.json");
        assert!(again == base, "{point}: the data files differ from an undisturbed write's");
        // what the killed writer had staged: the final bytes of each file it
        // finished (its manifest included), the first bytes of the shard it was writing
        for (rel, bytes) in left.unwrap_or_default() {
            if *point == "mid-shard" {
                assert_eq!(rel, SHARD);
                let whole = &written[SHARD];
                assert!(
                    bytes.len() > 4 && bytes.len() < whole.len(),
                    "{point}: {} of {} bytes",
                    bytes.len(),
                    whole.len()
                );
                assert!(whole.starts_with(&bytes), "{point}: the unfinished shard is a prefix of the finished one");
            } else {
                assert!(written[&rel] == bytes, "{point}: {rel} differs from the one committed");
            }
        }
    }
}

#[test]
fn a_live_writers_staging_survives_gc_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let r = root.to_str().unwrap();
    let writer = paused_writer(root, "live", "mid-shard", None);
    let staging = staging_dirs(root);
    assert_eq!(staging.len(), 1);
    let ls = run(&["ls", r]);
    assert!(!ls.contains("stale"), "a live writer's staging is not stale: {ls}");
    let gc = run(&["gc", r, "--older-than-s", "0"]);
    assert!(gc.contains("0 leftover(s) cleared"), "{gc}");
    assert!(gc.contains(&format!("kept (its writer alive) {}", staging[0].display())), "{gc}");
    assert_eq!(staging_dirs(root), staging, "gc left the live writer's staging");
    assert!(staging[0].join("time_series").is_dir(), "with its files");
    writer.kill();
    assert!(run(&["ls", r]).contains("(1 stale staging director(ies)"));
    assert!(run(&["gc", r, "--older-than-s", "0"]).contains("1 leftover(s) cleared"));
    assert!(staging_dirs(root).is_empty());
}

/// A writer between making its staging directory and locking it: `gc` keeps
/// the directory while it is younger than the age given; removing it (age 0)
/// makes the writer start again under a new name; either way the write
/// commits and verifies.
#[test]
fn a_writer_paused_before_its_lock_survives_gc_and_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let r = root.to_str().unwrap();
    let resume = tmp.path().join("resume");
    let writer = paused_writer(&root, "v1", "staging-made", Some(&resume));
    let staging = staging_dirs(&root);
    assert_eq!(staging.len(), 1, "{staging:?}");
    let name = staging[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(".new-v1-"), "{name}");
    let gc = run(&["gc", r, "--older-than-s", "3600"]);
    assert_eq!(
        gc,
        format!(
            "kept (younger than 3600 s, or its writer alive) {}\n0 leftover(s) cleared, 0 file(s) removed\n",
            staging[0].display()
        )
    );
    assert_eq!(staging_dirs(&root), staging);
    let gc = run(&["gc", r, "--older-than-s", "0"]);
    assert_eq!(gc, format!("removed {}\n1 leftover(s) cleared, 0 file(s) removed\n", staging[0].display()));
    assert!(staging_dirs(&root).is_empty());
    let (code, _, err) = writer.resume(&resume);
    assert_eq!(code, 0, "the writer starts again and commits: {err}");
    assert_eq!(dataset_entries(&root), ["v1"]);
    let dir = root.join("BasicMotions/v1");
    assert_eq!(tree(&dir), VERSION_ENTRIES);
    assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0);
}

/// `gc` examining a staging directory whose writer commits meanwhile (the
/// rename onto the version between gc's listing and its open, or between its
/// open and its lock): the directory is skipped, gc succeeds, and the version
/// is untouched.
#[test]
fn gc_skips_a_staging_directory_its_writer_commits_meanwhile() {
    for point in ["gc-listed", "gc-opened"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let r = root.to_str().unwrap();
        let (resume_writer, resume_gc) = (tmp.path().join("resume-writer"), tmp.path().join("resume-gc"));
        let writer = paused_writer(&root, "v1", "before-rename", Some(&resume_writer));
        let staging = staging_dirs(&root);
        assert_eq!(staging.len(), 1, "{point}: {staging:?}");
        let gc = Paused::start(&["gc", r, "--older-than-s", "0"], point, Some(&resume_gc));
        let (code, _, err) = writer.resume(&resume_writer);
        assert_eq!(code, 0, "{point}: {err}");
        assert_eq!(dataset_entries(&root), ["v1"], "{point}: committed");
        let (code, out, err) = gc.resume(&resume_gc);
        assert_eq!((code, out.as_str()), (0, "0 leftover(s) cleared, 0 file(s) removed\n"), "{point}: {err}");
        let dir = root.join("BasicMotions/v1");
        assert_eq!(tree(&dir), VERSION_ENTRIES, "{point}");
        assert_eq!(cli(&["verify", dir.to_str().unwrap()]).0, 0, "{point}");
    }
}

/// Reviews 104 and 105: the way from the place to a dead writer's staging
/// changed between gc's listing and its removal. It was opened and removed
/// by its path: the dataset's folder swapped for a symbolic link, the
/// place's link retargeted, or another directory moved to the dataset's
/// name, made gc delete a directory of that name it never listed (outside
/// the root, or a user's); a FIFO at the staging's name kept gc waiting
/// forever; a directory put at the staging's name while gc emptied it went
/// in its place. It is reached now through the directories listed, each
/// checked to be the one listed, and removed through handles, its name last
/// and only if that still leads to it.
#[test]
fn gc_removes_only_the_staging_it_listed_whatever_is_swapped_in_meanwhile() {
    let name = format!(".tmp-v2-{}", "a".repeat(32));
    let cases = [
        ("gc-listed", "dataset link"),
        ("gc-opened", "dataset link"),
        ("gc-listed", "staging fifo"),
        ("gc-listed", "place link"),
        ("gc-listed", "another dataset"),
        ("gc-emptied", "another staging"),
    ];
    for (point, swap) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        ingest(&root, "v1");
        let (dataset, moved) = (root.join("BasicMotions"), root.join("moved"));
        std::fs::create_dir_all(dataset.join(&name).join("time_series")).unwrap();
        std::fs::write(dataset.join(&name).join("time_series/part"), b"dead").unwrap();
        // a folder of that name gc never listed: outside, or a user's
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("BasicMotions").join(&name)).unwrap();
        std::fs::write(outside.join("BasicMotions").join(&name).join("mine.txt"), b"mine").unwrap();
        let place = tmp.path().join("place");
        std::os::unix::fs::symlink(&root, &place).unwrap();
        let resume = tmp.path().join("resume");
        let gc = Paused::start(&["gc", place.to_str().unwrap(), "--older-than-s", "0"], point, Some(&resume));
        match swap {
            "dataset link" => {
                std::fs::rename(&dataset, &moved).unwrap();
                std::os::unix::fs::symlink(outside.join("BasicMotions"), &dataset).unwrap();
            }
            "staging fifo" => {
                std::fs::rename(dataset.join(&name), tmp.path().join("aside")).unwrap();
                assert!(Command::new("mkfifo").arg(dataset.join(&name)).status().unwrap().success());
            }
            "place link" => {
                std::fs::remove_file(&place).unwrap();
                std::os::unix::fs::symlink(&outside, &place).unwrap();
            }
            "another dataset" => {
                std::fs::rename(&dataset, &moved).unwrap();
                std::fs::rename(outside.join("BasicMotions"), &dataset).unwrap();
            }
            _ => {
                std::fs::rename(dataset.join(&name), tmp.path().join("aside")).unwrap();
                std::fs::create_dir(dataset.join(&name)).unwrap();
            }
        }
        let pid = gc.child.id().to_string();
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            let hung = finished.recv_timeout(std::time::Duration::from_secs(30)).is_err();
            if hung {
                let _ = Command::new("kill").args(["-9", &pid]).status();
            }
            hung
        });
        let (code, out, err) = gc.resume(&resume);
        let _ = done.send(());
        assert!(!watchdog.join().unwrap(), "{point} {swap}: gc still ran after 30 s");
        let shown = place.join("BasicMotions").join(&name).display().to_string();
        let (want_code, want_out, want_err) = match swap {
            // the place was opened once: its link retargeted leads gc nowhere else
            "dataset link" | "place link" if point == "gc-opened" || swap == "place link" => {
                (0, format!("removed {shown}\n1 leftover(s) cleared, 1 file(s) removed\n"), String::new())
            }
            // the files it emptied are reported, the leftover not (its name is another's)
            "another staging" => (
                3,
                "0 leftover(s) cleared, 1 file(s) removed\n".to_string(),
                format!(
                    "timef: error: could not remove {shown}: its name leads to another directory since gc locked \
                     it: that one emptied, wherever it went, and the name left"
                ),
            ),
            _ => (0, "0 leftover(s) cleared, 0 file(s) removed\n".to_string(), String::new()),
        };
        assert_eq!((code, out, err), (want_code, want_out, want_err), "{point} {swap}");
        // what gc never listed stays whole
        let mine = match swap {
            "another dataset" => dataset.join(&name).join("mine.txt"),
            _ => outside.join("BasicMotions").join(&name).join("mine.txt"),
        };
        assert_eq!(std::fs::read(mine).unwrap(), b"mine", "{point} {swap}");
        // the staging listed: removed where it was reached, emptied where its name was taken
        let staging = match swap {
            "dataset link" | "another dataset" => moved.join(&name),
            "staging fifo" | "another staging" => tmp.path().join("aside"),
            _ => dataset.join(&name),
        };
        let left = match (point, swap) {
            ("gc-opened", _) | (_, "place link") => None,
            (_, "another staging") => Some(vec![]),
            _ => Some(vec!["time_series".to_string(), "time_series/part".to_string()]),
        };
        assert_eq!(staging.exists().then(|| tree(&staging)), left, "{point} {swap}");
        if swap == "another staging" {
            assert_eq!(tree(&dataset.join(&name)), Vec::<String>::new(), "{point} {swap}: the new one stays");
        }
        let version = if moved.exists() { moved.join("v1") } else { dataset.join("v1") };
        assert_eq!(tree(&version), VERSION_ENTRIES, "{point} {swap}");
    }
}

/// Review 106: the markers of a place were read by its path while its
/// directories were listed through its handle: the place's link retargeted
/// while gc classified made it judge the root it listed by another's
/// markers, and delete the root's own staging-named folder (a user's) as a
/// dataset's staging. Markers are read through the directories listed now.
#[test]
fn gc_judges_the_place_it_opened_by_its_own_markers() {
    let tmp = tempfile::tempdir().unwrap();
    // a root (its dataset has a version) holding a user's folder named like staging
    let root = tmp.path().join("root");
    ingest(&root, "v1");
    let users = root.join(format!(".tmp-v1-{}", "d".repeat(32)));
    std::fs::create_dir_all(&users).unwrap();
    std::fs::write(users.join("user.txt"), b"mine").unwrap();
    // another place whose dataset's manifest is another tool's
    let other = tmp.path().join("other");
    std::fs::create_dir_all(other.join("BasicMotions/v1")).unwrap();
    std::fs::write(other.join("BasicMotions/v1/manifest.json"), br#"{"format": "other"}"#).unwrap();
    let place = tmp.path().join("place");
    std::os::unix::fs::symlink(&root, &place).unwrap();
    let resume = tmp.path().join("resume");
    let gc = Paused::start(&["gc", place.to_str().unwrap(), "--older-than-s", "0"], "gc-place-opened", Some(&resume));
    std::fs::remove_file(&place).unwrap();
    std::os::unix::fs::symlink(&other, &place).unwrap();
    let (code, out, err) = gc.resume(&resume);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "0 leftover(s) cleared, 0 file(s) removed\n", ""));
    assert_eq!(std::fs::read(users.join("user.txt")).unwrap(), b"mine");
}

/// Review 106: a mount inside a dead writer's staging (here a bind mount of
/// a folder outside the root) was walked into: its files went, then the
/// mount point failed the removal, and the files removed before went
/// unreported. The removal stops at a mount point now: what is beneath it
/// stays, the failure is reported (the dry run says it cannot examine it),
/// and so is every file removed before it. Run in a mount namespace of its
/// own (`unshare`), so no mount outlives it; skipped visibly where this
/// user may not make one.
#[test]
fn gc_never_removes_across_a_mount_inside_a_staging() {
    let tmp = tempfile::tempdir().unwrap();
    // a path not all ASCII (review 108: mountinfo was read as text and matched no mount)
    let root = tmp.path().join("données");
    ingest(&root, "v1");
    let staging = root.join(format!("BasicMotions/.tmp-v2-{}", "a".repeat(32)));
    std::fs::create_dir_all(staging.join("mnt")).unwrap();
    std::fs::write(staging.join("a"), b"dead").unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), b"mine").unwrap();
    let timef = env!("CARGO_BIN_EXE_timef");
    let run = |args: &str| {
        let script = format!(
            "mount --bind {} {} || exit 99; {} {} 2>&1",
            outside.display(),
            staging.join("mnt").display(),
            args.replace("timef ", &format!("{timef} ")),
            root.display()
        );
        let out =
            Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", &script]).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = run("timef gc --dry-run --older-than-s 0");
    // unshare itself exits 1 when the namespace is refused; the script 99 when the mount is
    if code == Some(99) || (code == Some(1) && out.contains("unshare")) {
        skipped(&format!("gc across a mount: this user may not bind-mount in a namespace of its own: {out}"));
        return;
    }
    let shown = staging.display();
    let stop = format!("{shown}: BasicMotions/.tmp-v2-{}/mnt: a mount point: gc does not cross it", "a".repeat(32));
    let want =
        format!("0 leftover(s) would be cleared, 1 file(s) would be removed\ntimef: error: could not examine {stop}\n");
    assert_eq!((code, out), (Some(3), want));
    // review 107: without openat2 (a kernel before 5.6, or a filter
    // answering ENOSYS, here strace's) a bind mount of the same file
    // system was walked into: the staging's mounts are looked up first
    let strace = Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success());
    if strace {
        // and (review 108) refused as a filter written before it refuses it
        for errno in ["ENOSYS", "EPERM"] {
            let (code, out) =
                run(&format!("strace -f -o /dev/null -e inject=openat2:error={errno} timef gc --older-than-s 0"));
            let held =
                format!("{shown}: BasicMotions/.tmp-v2-{}: holds a mount point: gc does not cross it", "a".repeat(32));
            let want = format!("0 leftover(s) cleared, 0 file(s) removed\ntimef: error: could not remove {held}\n");
            assert_eq!((code, out), (Some(3), want), "openat2 answering {errno}");
        }
    } else {
        skipped("gc across a mount without openat2: no strace here to make openat2 fail");
    }
    let (code, out) = run("timef gc --older-than-s 0");
    let want = format!("0 leftover(s) cleared, 1 file(s) removed\ntimef: error: could not remove {stop}\n");
    assert_eq!((code, out), (Some(3), want));
    assert_eq!(std::fs::read(outside.join("precious.txt")).unwrap(), b"mine");
    assert_eq!(tree(&staging), ["mnt"]);
}

#[test]
fn ctrl_c_at_every_point_before_the_rename_aborts_the_write_and_exits_130() {
    // the writer stops at its next write to a file or at the commit, its
    // staging goes, nothing is committed and it exits 130 (mid-shard it once
    // spun for ever: `write_all` and the parquet writer's `io::copy` retry an
    // `Interrupted` write; at staging-made it exited at once, leaving its
    // `.new-*` directory; from manifest-staged on it committed); after the
    // rename the version is committed and stays so
    let tmp = tempfile::tempdir().unwrap();
    for (i, point) in POINTS.iter().enumerate() {
        let root = tmp.path().join(format!("r{i}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
        cmd.args(ingest_args(&root, "v1"));
        let (code, stderr) = ctrl_c_at(cmd, point, &tmp.path().join(format!("resume{i}")));
        assert!(staging_dirs(&root).is_empty(), "{point}: no staging left");
        if *point == "after-rename" {
            // too late to stop: said so (its notice had said it would abort)
            let committed = root.join("BasicMotions/v1");
            let said = format!(
                "timef: interrupted too late: {} was committed before the write could stop",
                committed.display()
            );
            assert_eq!((code, stderr), (Some(0), vec![said]), "{point}");
            assert_eq!(dataset_entries(&root), ["v1"], "{point}");
            assert_eq!(tree(&root.join("BasicMotions/v1")), VERSION_ENTRIES, "{point}");
        } else {
            assert_eq!(code, Some(130), "{point}: {stderr:?}");
            assert_interrupted_error(point, &stderr);
            assert_eq!(dataset_entries(&root), Vec::<String>::new(), "{point}: nothing committed");
        }
    }
}

/// A `file://` write (the object-store protocol on a local directory) that
/// Ctrl-C aborts removes what it put and the directories its puts made:
/// object_store's local store makes a key's directories and never removes
/// them, so the version's folder (and the dataset's, on its first write) stayed,
/// empty. A root that existed before stays; one the write made goes; so do
/// a user's empty folders in the version's place, which a write may take
/// (review 122: they went too).
#[test]
fn ctrl_c_of_a_file_url_write_leaves_no_directory_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let users = ["BasicMotions", "BasicMotions/v1", "BasicMotions/v1/time_series"];
    for (i, point) in ["staging-created", "mid-shard", "shards-written", "manifest-staged"].iter().enumerate() {
        for (case, made) in [("none", &[][..]), ("root", &[""][..]), ("users", &users[..])] {
            let root = tmp.path().join(format!("r{i}-{case}"));
            for dir in made {
                std::fs::create_dir_all(root.join(dir)).unwrap();
            }
            let url = format!("file://{}", root.display());
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
            cmd.args(ingest_args(Path::new(&url), "v1"));
            let (code, stderr) = ctrl_c_at(cmd, point, &tmp.path().join(format!("resume{i}-{case}")));
            assert_eq!(code, Some(130), "{point} {case}: {stderr:?}");
            assert_interrupted_error(point, &stderr);
            assert_eq!(root.exists(), case != "none", "{point} {case}");
            let want: Vec<String> = made.iter().filter(|d| !d.is_empty()).map(ToString::to_string).collect();
            assert_eq!(tree(&root), want, "{point} {case}");
        }
    }
}

/// A verify of a `file://` (object-store) version copies it into `TMPDIR`
/// first: a Ctrl-C while it copies or checks stops it, removes the copy (the
/// version's size) and exits 130. Before, the first Ctrl-C exited at once and
/// left the whole `timef-verify-*` copy behind. One after the checks (review
/// 122: while the copy was removed) printed the report and exited 0 after
/// its notice; it stops the verify too.
#[test]
fn ctrl_c_of_a_verify_that_copies_the_version_removes_its_copy_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    ingest(&root, "v1");
    let url = format!("file://{}", root.join("BasicMotions/v1").display());
    for point in ["verify-copying", "verify-copied", "verify-checked"] {
        let temp = tmp.path().join(format!("tmp-{point}"));
        std::fs::create_dir(&temp).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
        cmd.args(["verify", &url]).env("TMPDIR", &temp).stdout(std::process::Stdio::null());
        let (code, stderr) = ctrl_c_at(cmd, point, &tmp.path().join(format!("resume-{point}")));
        assert_eq!(
            (code, stderr),
            (Some(130), vec![format!("timef: error: I/O on {url}: interrupted (Ctrl-C)")]),
            "{point}"
        );
        assert_eq!(tree(&temp), Vec::<String>::new(), "{point}: the copy is removed");
    }
    // the version itself is untouched, and a verify left alone passes
    let (code, out, _) = cli(&["verify", &url]);
    assert_eq!((code, out.lines().last()), (0, Some("ok: 6 files, 64 pages, 561 rows, 24000 values verified")));
}

/// Review 119: a Ctrl-C while stderr is a pipe that is full and unread still
/// aborts the write: its staging goes, with no one reading. The notice is left
/// out then (the handler wrote it into the full pipe, and waited there with
/// the abort); the error line waits for a reader, as any output does.
#[test]
fn ctrl_c_aborts_the_write_while_stderr_is_a_full_pipe_nobody_reads() {
    use rustix::fs::{fcntl_setfl, OFlags};
    use std::io::{BufRead, BufReader, Read};
    let tmp = tempfile::tempdir().unwrap();
    let (root, resume) = (tmp.path().join("r"), tmp.path().join("resume"));
    let (reader, writer) = std::io::pipe().unwrap();
    let filler = writer.try_clone().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_timef"));
    cmd.args(ingest_args(&root, "v1"))
        .env(timef::storage::PAUSE_AT_ENV, "mid-shard")
        .env(timef::storage::RESUME_ON_ENV, &resume)
        .stdout(std::process::Stdio::null())
        .stderr(writer);
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut reader = BufReader::new(reader);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "timef: paused at mid-shard\n");
    // fill the pipe, then leave it blocking as the writer found it
    fcntl_setfl(&filler, OFlags::NONBLOCK).unwrap();
    let mut filled = 0;
    loop {
        match rustix::io::write(&filler, &[b'x'; 4096]) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::AGAIN) => break,
            Err(e) => panic!("{e}"),
        }
    }
    fcntl_setfl(&filler, OFlags::empty()).unwrap();
    drop(filler);
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    std::fs::write(&resume, b"").unwrap();
    let start = std::time::Instant::now();
    while !(staging_dirs(&root).is_empty()) {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the staging is still there 30 s after Ctrl-C: {:?}", staging_dirs(&root));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(rest[..filled].iter().all(|&b| b == b'x'));
    let said = String::from_utf8(rest[filled..].to_vec()).unwrap();
    assert_interrupted_error("mid-shard", &said.lines().map(str::to_string).collect::<Vec<_>>());
    assert_eq!(dataset_entries(&root), Vec::<String>::new());
}
