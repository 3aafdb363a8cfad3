//! The `timef` command line: exit codes, one-line errors on bad input with
//! nothing left on disk, and the info / ls / cat tour on real data.

mod common;

use std::path::Path;

use common::{cli, real, tree};

const BAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bad");

#[test]
fn every_bad_input_fails_with_one_line_naming_file_and_line_and_leaves_nothing() {
    let mut files: Vec<_> = std::fs::read_dir(BAD).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 30, "the bad-input corpus shrank: {}", files.len());
    for file in files {
        let kind = match file.extension().and_then(|e| e.to_str()) {
            Some("ts") => "ucr",
            Some("tsf") => "tsf",
            _ => continue,
        };
        let root = tempfile::tempdir().unwrap();
        let (code, stdout, stderr) = cli(&[
            "ingest",
            kind,
            "--root",
            root.path().to_str().unwrap(),
            "--name",
            "bad",
            "--version",
            "v1",
            file.to_str().unwrap(),
        ]);
        let name = file.display();
        assert_eq!(code, 2, "{name}: {stderr}");
        assert_eq!(stdout, "", "{name}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        let line = stderr.trim_end();
        let prefix = format!("timef: error: {}:", file.display());
        assert!(line.starts_with(&prefix), "{name}: {line}");
        let line_no: String = line[prefix.len()..].chars().take_while(|c| c.is_ascii_digit()).collect();
        assert!(line_no.parse::<usize>().is_ok_and(|n| n >= 1), "{name}: no line number in {line}");
        assert_eq!(tree(root.path()), Vec::<String>::new(), "{name} left files behind");
    }
}

/// A text file given to `ingest arrow` is named as text, with the connectors
/// of the text formats (review 146: "message of 1701336099 bytes beyond the
/// end of the file").
#[test]
fn a_text_file_read_as_arrow_names_the_text_connectors() {
    let root = tempfile::tempdir().unwrap();
    let ts = real("ucr/BasicMotions_TRAIN.ts");
    let r = root.path().to_str().unwrap();
    let (code, out, err) =
        cli(&["ingest", "arrow", "--root", r, "--name", "a", "--version", "v1", ts.to_str().unwrap()]);
    let want = format!(
        "timef: error: {}: not a readable Arrow IPC file or stream: it starts as text (\"#The data was generated \"…), \
         not as Arrow or Parquet: a UCR/UEA .ts file is read by `timef ingest ucr`, a Monash .tsf file by `timef \
         ingest tsf`\n",
        ts.display()
    );
    assert_eq!((code, out.as_str(), err), (2, "", want));
    assert_eq!(tree(root.path()), Vec::<String>::new());
    // after a byte order mark, and not ASCII (review 147: the old message)
    let odd = root.path().join("x.arrow");
    std::fs::write(&odd, "\u{feff}#Données générées\n@problemName x\n").unwrap();
    let (code, _, err) =
        cli(&["ingest", "arrow", "--root", r, "--name", "a", "--version", "v1", odd.to_str().unwrap()]);
    assert_eq!(code, 2);
    let prefix =
        format!("timef: error: {}: not a readable Arrow IPC file or stream: it starts as text (", odd.display());
    assert!(err.starts_with(&format!("{prefix}\"#Données générées\\n@probl\"…)")), "{err}");
    // Latin-1 and UTF-16 too (review 148)
    std::fs::write(&odd, b"#Cl\xe9ment's data\n@problemName x\n").unwrap();
    let (code, _, err) =
        cli(&["ingest", "arrow", "--root", r, "--name", "a", "--version", "v1", odd.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.starts_with(&format!("{prefix}\"#Cl\u{fffd}ment's data\\n@probl")), "{err}");
    std::fs::write(&odd, b"\xff\xfe#\0T\0h\0e\0 \0d\0a\0t\0a\0").unwrap();
    let (code, _, err) =
        cli(&["ingest", "arrow", "--root", r, "--name", "a", "--version", "v1", odd.to_str().unwrap()]);
    let utf16 = format!(
        "timef: error: {}: not a readable Arrow IPC file or stream: it starts as UTF-16 text (a byte order mark), not \
         as Arrow or Parquet: a UCR/UEA .ts file is read by `timef ingest ucr`, a Monash .tsf file by `timef ingest \
         tsf`\n",
        odd.display()
    );
    assert_eq!((code, err), (2, utf16));
    // a binary file with a readable start, and UTF-32's mark, are not called text (review 149)
    for bytes in [&b"SQLite format 3\0\x10\0\x01\x01\0@  \0\0\0\x01"[..], b"\xff\xfe\0\0#\0\0\0T\0\0\0h\0\0\0"] {
        std::fs::write(&odd, bytes).unwrap();
        let (code, _, err) =
            cli(&["ingest", "arrow", "--root", r, "--name", "a", "--version", "v1", odd.to_str().unwrap()]);
        assert_eq!(code, 2);
        assert!(err.starts_with(&format!("timef: error: {}: not a readable Arrow IPC file or stream: ", odd.display())));
        assert!(!err.contains("text"), "{err}");
    }
    // a character the 32-byte cut splits is not shown as U+FFFD (review 149)
    std::fs::write(&odd, "数据".repeat(11)).unwrap();
    let (_, _, err) = cli(&["ingest", "arrow", "--root", r, "--name", "a", "--version", "v1", odd.to_str().unwrap()]);
    assert!(err.contains(&format!("it starts as text (\"{}\"…)", "数据".repeat(5))), "{err}");
}

fn ingest_basic_motions(root: &Path) -> std::path::PathBuf {
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let (code, stdout, stderr) = cli(&[
        "--quiet",
        "ingest",
        "ucr",
        "--root",
        root.to_str().unwrap(),
        "--name",
        "BasicMotions",
        "--version",
        "v1",
        "--spec-type",
        "imu",
        "--sampling-rate-hz",
        "10",
        train.to_str().unwrap(),
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let dir = root.join("BasicMotions/v1");
    assert_eq!(stdout, format!("{}\n", dir.display()));
    dir
}

#[test]
fn info_ls_cat_on_real_data() {
    let root = tempfile::tempdir().unwrap();
    let dir = ingest_basic_motions(root.path());
    let (code, out, _) = cli(&["info", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("samples 40  series 240  chunks 240  values 24000  annotations 40  shards 1"), "{out}");
    assert!(out.contains("imu/0: 40 series @ 10 Hz"), "{out}");
    assert!(out.contains("train: 1 (classification) splits [train]"), "{out}");
    let (code, json, _) = cli(&["info", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["counts"]["samples"], 40);
    assert_eq!(v["counts"]["tasks"]["train"], 1);
    // the ids that cat and edit take
    let (code, out, _) = cli(&["info", dir.to_str().unwrap(), "--samples"]);
    assert_eq!(code, 0);
    let listed: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("samples (")).skip(1).collect();
    assert_eq!(listed.len(), 40);
    let series: String = (0..6).map(|d| format!(" BasicMotions-train-0/{d}")).collect();
    assert_eq!(listed[0], format!("  BasicMotions-train-0:{series}"));

    // a staging directory and an uncommitted directory are not versions; a
    // staging directory no writer holds is counted as stale
    std::fs::create_dir_all(root.path().join(format!("BasicMotions/.tmp-v2-{}", "a".repeat(32)))).unwrap();
    std::fs::create_dir_all(root.path().join("BasicMotions/v3")).unwrap();
    let (code, out, _) = cli(&["ls", root.path().to_str().unwrap()]);
    let stale = "  (1 stale staging director(ies) of dead writers: `timef gc` removes them)\n";
    assert_eq!((code, out.as_str()), (0, format!("BasicMotions\n  v1\n{stale}").as_str()));

    // the first case's first channel, as in the file's first data line
    let text = std::fs::read_to_string(real("ucr/BasicMotions_TRAIN.ts")).unwrap();
    let first = text.lines().skip_while(|l| !l.starts_with("@data")).nth(1).unwrap();
    let want: Vec<f32> = first.split(':').next().unwrap().split(',').map(|x| x.parse().unwrap()).collect();
    let (code, csv, _) = cli(&["cat", dir.to_str().unwrap(), "BasicMotions-train-0/0"]);
    assert_eq!(code, 0);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("index,value"));
    let got: Vec<f32> = lines.map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect();
    assert_eq!(got, want);
    let (code, json, _) = cli(&["cat", dir.to_str().unwrap(), "BasicMotions-train-0/0", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["sampling_rate_hz"], 10.0);
    let values: Vec<f32> = v["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
    assert_eq!(values, want);
}

/// `info` prints every line of a description, and refuses a version whose
/// listed files are not all there with their sizes (review 62: it printed the
/// summary of a truncated shard and of a missing table with exit 0).
#[test]
fn info_prints_the_whole_description_and_refuses_a_missing_or_resized_file() {
    let root = tempfile::tempdir().unwrap();
    let dir = ingest_basic_motions(root.path());
    let (d, r) = (dir.to_str().unwrap(), root.path().to_str().unwrap());
    let (code, out, err) = cli(&[
        "--quiet",
        "edit",
        d,
        "--out-root",
        r,
        "--version",
        "v2",
        "--description",
        "Smart-watch IMU.\nFour activities.",
        "--license",
        "CC-BY-4.0",
    ]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let v2 = root.path().join("BasicMotions/v2");
    let (code, out, _) = cli(&["info", v2.to_str().unwrap()]);
    assert_eq!(code, 0);
    // what a curation sets is shown (review 138: license, citation and sources were not)
    let head: Vec<&str> = out.lines().skip(1).take(4).collect();
    assert_eq!(
        head,
        [
            "description: Smart-watch IMU.",
            "  Four activities.",
            "license: CC-BY-4.0",
            "source BasicMotions: BasicMotions"
        ]
    );
    let (code, out, _) = cli(&["info", v2.to_str().unwrap(), "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((code, &doc["sources"][0]["source_id"]), (0, &serde_json::json!("BasicMotions")));

    let shard = dir.join("time_series/shard-00000.parquet");
    let bytes = std::fs::metadata(&shard).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&shard).unwrap();
    f.set_len(bytes - 1).unwrap();
    let want = format!(
        "timef: error: corrupt version: {}: {} bytes, manifest.json says {bytes}\n",
        shard.display(),
        bytes - 1
    );
    for args in [vec!["info", d], vec!["info", d, "--json"]] {
        assert_eq!(cli(&args), (2, String::new(), want.clone()), "{args:?}");
    }
    f.set_len(bytes).unwrap();
    assert_eq!(cli(&["info", d]).0, 0);
    let samples = dir.join("samples.parquet");
    let samples_bytes = std::fs::read(&samples).unwrap();
    std::fs::remove_file(&samples).unwrap();
    let want = format!("timef: error: corrupt version: {}: listed in manifest.json but missing\n", samples.display());
    assert_eq!(cli(&["info", d]), (2, String::new(), want));
    // a link in a listed file's place is named as one (review 72: "21 bytes, manifest.json says ...")
    std::os::unix::fs::symlink(root.path().join("BasicMotions/v2/samples.parquet"), &samples).unwrap();
    let want = format!(
        "timef: error: corrupt version: {}: a symbolic link (a version's files are never followed: docs/format.md \
         \"Paths inside a version\")\n",
        samples.display()
    );
    assert_eq!(cli(&["info", d]), (2, String::new(), want));
    // the files are checked before the index is read: a missing index is missing, not an I/O error
    std::fs::remove_file(&samples).unwrap();
    std::fs::write(&samples, samples_bytes).unwrap();
    assert_eq!(cli(&["info", d]).0, 0);
    let index = dir.join("time_series_index.parquet");
    std::fs::remove_file(&index).unwrap();
    let want = format!("timef: error: corrupt version: {}: listed in manifest.json but missing\n", index.display());
    assert_eq!(cli(&["info", d]), (2, String::new(), want));
}

/// `ingest ucr` of BasicMotions_TRAIN.ts as `BasicMotions/<version>` under `root`.
fn ingest_train(root: &Path, version: &str) -> (i32, String, String) {
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let root = root.to_str().unwrap();
    cli(&["ingest", "ucr", "--root", root, "--name", "BasicMotions", "--version", version, train.to_str().unwrap()])
}

#[test]
fn usage_and_user_errors_exit_2() {
    let root = tempfile::tempdir().unwrap();
    let dir = ingest_basic_motions(root.path());
    let before = tree(root.path());
    // the same version again: refused before any I/O
    let (code, _, err) = ingest_train(root.path(), "v1");
    assert_eq!(code, 2);
    assert_eq!(err, format!("timef: error: version already exists: {}\n", dir.display()));
    assert_eq!(tree(root.path()), before);
    // an unknown series, a directory that is not a version, a missing argument
    let (code, _, err) = cli(&["cat", dir.to_str().unwrap(), "nope"]);
    assert_eq!(
        (code, err.as_str()),
        (2, "timef: error: invalid time_series_id of nope: no such series in this version\n")
    );
    let (code, _, err) = cli(&["info", root.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.starts_with("timef: error: not a TimeF version: "), "{err}");
    let (code, _, _) = cli(&["ingest", "ucr", "--root", "x"]);
    assert_eq!(code, 2);
    // a bad version name is a validation error before any I/O
    let (code, _, err) = ingest_train(root.path(), ".hidden");
    assert_eq!(code, 2, "{err}");
    assert_eq!(tree(root.path()), before);
}

#[test]
fn bad_options_and_paths_name_the_flag_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("new-root");
    let r = root.to_str().unwrap();
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let t = train.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["ingest", "ucr", "--root", r, "--name", "my data", "--version", "v1", t],
            "timef: error: invalid option --name: \"my data\" must be 1-128 characters of [A-Za-z0-9._-] not starting with '.'\n",
        ),
        (
            &["ingest", "ucr", "--root", r, "--name", "m", "--version", "v1", "--sampling-rate-hz", "0", t],
            "timef: error: invalid option --sampling-rate-hz: must be finite and > 0, got 0\n",
        ),
        (
            &["ingest", "ucr", "--root", r, "--name", "m", "--version", "v1", "--sampling-rate-hz", "nan", t],
            "timef: error: invalid option --sampling-rate-hz: must be finite and > 0, got NaN\n",
        ),
        (
            &["ingest", "tsf", "--root", r, "--name", "m", "--version", "v1", "/nonexistent/x.tsf"],
            "timef: error: not found: /nonexistent/x.tsf: no such input file\n",
        ),
        // a series ending past the largest float (review 127: its windows started at inf)
        (
            &["ingest", "ucr", "--root", r, "--name", "m", "--version", "v1", "--sampling-rate-hz", "1e-320", t],
            "timef: error: invalid sampling_rate_hz of m-train-0/0: 100 values at 1e-320 Hz from t_start_s 0 end at \
             no finite time\n",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = cli(args);
        assert_eq!((code, out.as_str(), err.as_str()), (2, "", want), "{args:?}");
        assert!(!root.exists(), "{args:?} created the root");
    }
    // a loader failure after staging began: the root it created is gone again
    let bad = tmp.path().join("nulls.arrows");
    {
        use std::sync::Arc;
        let mut target = arrow_array::builder::ListBuilder::new(arrow_array::builder::Float32Builder::new());
        target.values().append_option(Some(1.0));
        target.values().append_null();
        target.append(true);
        let batch =
            arrow_array::RecordBatch::try_from_iter([("target", Arc::new(target.finish()) as arrow_array::ArrayRef)])
                .unwrap();
        let mut w =
            arrow_ipc::writer::StreamWriter::try_new(std::fs::File::create(&bad).unwrap(), &batch.schema()).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
    }
    let (code, _, err) =
        cli(&["ingest", "arrow", "--root", r, "--name", "m", "--version", "v1", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "timef: error: {}: row 0: item 0: channel 0: value 1 is null (missing); TimeF stores only finite values \
             (--on-missing drop-case leaves such rows out)\n",
            bad.display()
        )
    );
    assert!(!root.exists(), "a failed ingest left {:?}", tree(tmp.path()));
    // a removal list that is not there is missing, as an input file (review 146: "invalid option")
    let (code, _, err) = cli(&["edit", t, "--out-root", r, "--version", "v2", "--remove-samples-from", "/nonexistent"]);
    assert_eq!((code, err.as_str()), (2, "timef: error: not found: /nonexistent: no such file\n"));
    // an unreadable one names its option
    let (code, _, err) = cli(&["edit", t, "--out-root", r, "--version", "v2", "--remove-samples-from", "/"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("timef: error: invalid option --remove-samples-from: /: "), "{err}");
}

/// Damaged versions give one clear line and exit 2, never a panic or a hang.
#[test]
fn damaged_versions_fail_cleanly() {
    let root = tempfile::tempdir().unwrap();
    let dir = ingest_basic_motions(root.path());
    // a shard rewritten without its `values` column
    let shard = dir.join("time_series/shard-00000.parquet");
    let batch = common::read_parquet(&shard);
    let keep: Vec<usize> = (0..batch.num_columns()).filter(|&i| batch.schema().field(i).name() != "values").collect();
    let batch = batch.project(&keep).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&shard).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let (code, out, err) = cli(&["cat", dir.to_str().unwrap(), "BasicMotions-train-0/0"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(err, format!("timef: error: corrupt version: {}: shard has no values column\n", shard.display()));
    // a manifest that is a link to a device: refused at once (never followed) instead of read forever
    let manifest = dir.join("manifest.json");
    std::fs::remove_file(&manifest).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &manifest).unwrap();
    for args in [vec!["info", dir.to_str().unwrap()], vec!["verify", dir.to_str().unwrap()]] {
        let (code, _, err) = cli(&args);
        assert_eq!(code, 2, "{args:?}");
        assert_eq!(
            err,
            format!(
                "timef: error: not a TimeF version: {}: manifest.json is a symbolic link (a version's files are never \
                 followed: docs/format.md \"Paths inside a version\")\n",
                dir.display()
            )
        );
    }
}

/// `timef cat ... | head -1`: a reader that closes the pipe early ends `cat`
/// quietly with exit 0 (the series is far larger than a pipe's buffer).
#[test]
fn cat_into_a_closed_pipe_exits_0_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let mut d = common::dataset_with_source("long", "v1");
    common::add_series(&mut d, "rec/0", "ecg", "I", 500.0, 1, 200_000);
    d.add_sample(timef::Sample {
        sample_id: "rec".into(),
        source_id: "src".into(),
        series: common::main_refs(&["rec/0"]),
        ..Default::default()
    })
    .unwrap();
    let dir = common::commit(tmp.path(), d, timef::WriterOptions::default());
    let mut child = Command::new(env!("CARGO_BIN_EXE_timef"))
        .args(["cat", dir.to_str().unwrap(), "rec/0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert_eq!(first, "index,value\n");
    let out = child.wait_with_output().unwrap();
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stderr).as_ref()), (Some(0), ""));
}

/// A file the write cannot complete (here past the file-size limit; a full
/// disk alike) is named by its path where it was being written, not by its
/// path inside a version the message does not name (a break-it review, 95:
/// "I/O on time_series/shard-00000.parquet"); nothing is left.
#[test]
fn a_write_that_fails_on_a_file_names_the_file_where_it_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    let input = real("ucr/BasicMotions_TRAIN.ts");
    // 40 blocks: the small tables fit, the shard (~90 kB) does not
    let script = format!(
        "ulimit -f 40; trap '' XFSZ; exec {} ingest ucr --root {} --name bm --version v1 {}",
        env!("CARGO_BIN_EXE_timef"),
        root.display(),
        input.display()
    );
    let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let staging = format!("timef: error: I/O on {}/bm/.tmp-v1-", root.display());
    let (head, tail) = stderr.split_at(staging.len().min(stderr.len()));
    assert_eq!(head, staging, "{stderr}");
    assert_eq!(tail.split_once('/').map(|(random, _)| random.len()), Some(32), "{stderr}");
    assert!(tail.ends_with("/time_series/shard-00000.parquet: File too large (os error 27)\n"), "{stderr}");
    assert_eq!(tree(&root), Vec::<String>::new());
}

/// The CLI's Ctrl-C handler takes no file: under an open-file limit of 6 to
/// 16 (`ulimit -n`), `ls` of a root lists it exactly and no run prints a panic.
/// The handler before it, tokio's signal driver on a thread of its own, made
/// an epoll instance and a pipe: at such limits that thread panicked ("failed
/// to create UnixStream"), and the files it held failed `ls` with EMFILE.
#[test]
fn under_few_open_files_ls_lists_the_root_and_nothing_panics() {
    let root = tempfile::tempdir().unwrap();
    ingest_basic_motions(root.path());
    for limit in 6..=16 {
        let out = std::process::Command::new("sh")
            .args(["-c", "ulimit -n \"$1\" && shift && exec \"$@\"", "sh", &limit.to_string()])
            .arg(env!("CARGO_BIN_EXE_timef"))
            .arg("ls")
            .arg(root.path())
            .output()
            .unwrap();
        let got = (out.status.code(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(got, (Some(0), "BasicMotions\n  v1\n".into(), "".into()), "ulimit -n {limit}");
    }
}

/// A line stderr cannot take is lost, not a panic: with stderr on `/dev/full`
/// the exit code stays the verb's (a missing root: 2; it was 101, the panic
/// of `eprintln!`, for every error, warning and note the CLI prints).
#[test]
fn stderr_that_takes_nothing_leaves_the_exit_code_as_it_is() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return common::skipped("stderr on /dev/full: this system has no /dev/full");
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_timef"))
        .arg("ls")
        .arg(tmp.path().join("missing"))
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(2), &b""[..]));
}

/// What a new user met (review 127): connector options an edit adds nothing
/// with are refused, not ignored; an export into a folder that is not there
/// names it missing, as every verb does (docs/format.md "Exit codes"); tasks
/// are not read from CSV; a Parquet row file counts its rows from 0, as
/// every refusal does (§8 "Refusals"; it counted from 1).
#[test]
fn edit_and_export_refusals_name_what_is_wrong() {
    use std::sync::Arc;
    let root = tempfile::tempdir().unwrap();
    let dir = ingest_basic_motions(root.path());
    let (d, r) = (dir.to_str().unwrap(), root.path().to_str().unwrap());
    let csv = root.path().join("t.csv");
    std::fs::write(&csv, "task_name,task_id,task_type,sample_ids\nval,x,classification,BasicMotions-train-0\n")
        .unwrap();
    // row 0 leaves t_start_s out (null), row 1 gives it as text
    let rows = root.path().join("a.parquet");
    let text = |v: [Option<&str>; 2]| Arc::new(arrow_array::StringArray::from(v.to_vec())) as arrow_array::ArrayRef;
    let batch = arrow_array::RecordBatch::try_from_iter([
        ("annotation_id", text([Some("a0"), Some("a1")])),
        ("sample_id", text([Some("BasicMotions-train-0"); 2])),
        ("annotation_type", text([Some("label"); 2])),
        ("key", text([Some("k"); 2])),
        ("t_start_s", text([None, Some("x")])),
    ])
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&rows).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let before = tree(root.path());
    let only = "timef: error: invalid option";
    let cases: [(&[&str], String); 5] = [
        (&["--sampling-rate-hz", "0"], format!("{only} --sampling-rate-hz: must be finite and > 0, got 0\n")),
        (
            &["--sampling-rate-hz", "10"],
            format!(
                "{only} --sampling-rate-hz: applies only with --add-arrow or --add-ucr (a .tsf file gives its own \
                 frequency)\n"
            ),
        ),
        (
            &["--spec-type", "imu"],
            format!("{only} --spec-type: applies only with --add-arrow, --add-ucr or --add-tsf\n"),
        ),
        (
            &["--set-tasks", csv.to_str().unwrap()],
            format!(
                "timef: error: {}: tasks are not read from CSV (a task's sample_ids is a list): give a .jsonl or \
                 .parquet file\n",
                csv.display()
            ),
        ),
        (
            &["--set-annotations", rows.to_str().unwrap()],
            format!("timef: error: {}: row 1: invalid type: string \"x\", expected f64\n", rows.display()),
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["edit", d, "--out-root", r, "--version", "v2", "--remove-sample", "BasicMotions-train-3"];
        args.extend(extra);
        assert_eq!(cli(&args), (2, String::new(), want), "{extra:?}");
    }
    let out = root.path().join("nodir/x.arrow");
    let (code, _, err) = cli(&["export", d, "--out", out.to_str().unwrap()]);
    let want = format!("timef: error: not found: {}: no such directory\n", root.path().join("nodir").display());
    assert_eq!((code, err), (2, want));
    assert_eq!(tree(root.path()), before);
    // added ids spelled otherwise than the base's (it added a second source
    // and turned a uuid16 base's id columns to string)
    let test = real("ucr/BasicMotions_TEST.ts");
    let (t, uuid_root) = (test.to_str().unwrap(), root.path().join("uuid"));
    let u = uuid_root.to_str().unwrap();
    let train = real("ucr/BasicMotions_TRAIN.ts");
    let ingest =
        ["--quiet", "ingest", "ucr", "--root", u, "--name", "BasicMotions", "--version", "v1", "--ids", "uuid"];
    assert_eq!(cli(&[&ingest[..], &[train.to_str().unwrap()]].concat()).0, 0);
    let uuid_base = uuid_root.join("BasicMotions/v1");
    let ub = uuid_base.to_str().unwrap();
    // the source spelled otherwise than the base's: a second one (review
    // 130); the edit's rule (timef::edit), so the same for Python's edit_version
    let uuid_source = "81bb92bd-080f-548b-b15b-3706d76ff22b";
    let twice = |added: &str, held: &str| {
        format!(
            "source {added} is source {held} spelled otherwise (a name and its UUID, as a connector's ids \"string\" \
             and \"uuid\" spell it): read the additions with the base's ids option (CLI --ids, Python ids=) or give \
             the source as {held}, or the version gets a second source for the same data"
        )
    };
    for (base, ids, want) in
        [(ub, "string", twice("BasicMotions", uuid_source)), (d, "uuid", twice(uuid_source, "BasicMotions"))]
    {
        let args = ["edit", base, "--out-root", r, "--version", "v2", "--add-ucr", t, "--ids", ids];
        assert_eq!(cli(&args), (2, String::new(), format!("timef: error: edit refused: {want}\n")), "{ids}");
    }
    let args = ["--quiet", "edit", ub, "--out-root", u, "--version", "v2", "--add-ucr", t, "--ids", "uuid"];
    assert_eq!(cli(&args).0, 0);
    assert!(uuid_root.join("BasicMotions/v2/manifest.json").exists());
    // a base of the user's own UUIDs (read as given, --ids string) takes more
    // of them as given (review 129: the first check went by --ids alone)
    let own = |ids: [&str; 2], file: &str| {
        let path = root.path().join(file);
        common::gluonts_parquet(&path, &ids);
        path
    };
    let first = own(["0b8e4a52-5d1f-4c3e-9a7b-1c2d3e4f5a60", "0b8e4a52-5d1f-4c3e-9a7b-1c2d3e4f5a61"], "own.parquet");
    let more = own(["0b8e4a52-5d1f-4c3e-9a7b-1c2d3e4f5a62", "0b8e4a52-5d1f-4c3e-9a7b-1c2d3e4f5a63"], "more.parquet");
    let o = root.path().join("own");
    let os = o.to_str().unwrap();
    let args = ["--quiet", "ingest", "arrow", "--root", os, "--name", "m", "--version", "v1", first.to_str().unwrap()];
    assert_eq!(cli(&args).0, 0);
    let ob = o.join("m/v1");
    // the version `file` added to it makes: its sample ids' encoding and sources
    let add = |file: &std::path::Path, version: &str| {
        let args = ["--quiet", "edit", ob.to_str().unwrap(), "--out-root", os, "--version", version, "--add-arrow"];
        let (code, _, err) = cli(&[&args[..], &[file.to_str().unwrap()]].concat());
        assert_eq!((code, err.as_str()), (0, ""));
        let m = timef::reader::Version::open(o.join("m").join(version)).unwrap().manifest().clone();
        (m.id_encoding["sample_id"].clone(), m.sources.len())
    };
    assert_eq!(add(&more, "v2"), ("uuid16".to_string(), 1));
    // readable ids onto it are taken as given: those spaces turn to string
    // (review 134: refusing them refused ordinary curation)
    assert_eq!(add(&own(["meter-1", "meter-2"], "plain.parquet"), "v3"), ("string".to_string(), 1));
    // --add-ucr takes one file per flag, so the base may follow it (it took
    // the base as a second file: "required arguments were not provided")
    let args = ["--quiet", "edit", "--out-root", r, "--version", "v2", "--add-ucr", test.to_str().unwrap(), d];
    let (code, out, err) = cli(&[&args[..], &["--spec-type", "imu", "--sampling-rate-hz", "10"]].concat());
    assert_eq!((code, err.as_str()), (0, ""));
    let last = format!(
        "add 40 sample(s), 240 series, 40 annotation(s), 1 task(s), 0 source(s)\n{}\n",
        root.path().join("BasicMotions/v2").display()
    );
    assert!(out.ends_with(&last), "{out}");
}

/// `ls` lists versions as people order them: v2 before v10 (review 146).
#[test]
fn ls_lists_versions_in_natural_order() {
    let tmp = tempfile::tempdir().unwrap();
    for version in ["v10", "v2", "v1", "v02", "release-b", "release-a"] {
        assert_eq!(ingest_train(tmp.path(), version).0, 0);
    }
    let (code, out, err) = cli(&["ls", tmp.path().to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "BasicMotions\n  release-a\n  release-b\n  v1\n  v02\n  v2\n  v10\n");
}
