//! The `timef` command line: a thin layer of argument parsing, progress and exit
//! codes over the library. Exit codes (docs/format.md "Exit codes"): 0 success,
//! 1 a check found problems, 2 bad usage or bad input (the input file, dataset
//! or options) and a corrupt version in every verb but `verify`, 3 any other
//! failure (I/O, object store, internal).
//!
//! Every root and version directory may be a URL (`s3://`, `gs://`, `az://`,
//! `file://`, `memory://`); credentials and endpoint come from the environment
//! (`AWS_*`, `GOOGLE_*`, `AZURE_*`), overridden by `--storage-option KEY=VALUE`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use timef::connectors::IdMode;
use timef::reader::Version;
use timef::storage::{Location, StorageOptions};
use timef::{Error, TimeFDataset, TimeFWriter, WriteProgressEvent, WriterOptions};

mod args;
use args::{CatFormat, Cli, Command, Common, EditArgs, ExportArgs, ExportFormatArg, Ingest};

/// `eprintln!` that never panics: a line stderr cannot take (`/dev/full`, a
/// closed pipe) is lost, and the exit code stays the verb's.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// A note or warning on standard error, on one line ([`one_line`]): it
/// names input files, ids and values, which must not break or forge lines.
macro_rules! noteln {
    ($($arg:tt)*) => {
        errln!("{}", one_line(&format!($($arg)*)))
    };
}

fn progress_bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} series ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(bar)
}

fn write(root: Location, dataset: TimeFDataset, quiet: bool) -> Result<PathBuf, Error> {
    let bar = progress_bar(quiet);
    let mut writer = TimeFWriter::at(root, WriterOptions::default());
    if let Some(bar) = bar.clone() {
        writer = writer.with_progress(Arc::new(move |e: &WriteProgressEvent| match e {
            WriteProgressEvent::Started { series, .. } => {
                bar.set_length(*series);
                bar.set_message("writing");
            }
            WriteProgressEvent::SeriesWritten { done, .. } => bar.set_position(*done),
            WriteProgressEvent::FileWritten { path, .. } => bar.set_message(path.clone()),
            _ => {}
        }));
    }
    let staged = writer.write(dataset)?;
    let dir = staged.commit()?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    committed_despite_ctrl_c(&dir);
    Ok(dir)
}

/// Says so when a Ctrl-C came too late to stop the write of `dir`: its
/// notice said the write would abort, yet the commit was done (the version is
/// whole, and the exit code 0).
fn committed_despite_ctrl_c(dir: &std::path::Path) {
    if timef::storage::interrupted() {
        errln!("timef: interrupted too late: {} was committed before the write could stop", dir.display());
    }
}

/// Checks the options every ingest shares, naming the flag at fault.
fn check_common(common: &Common, sampling_rate_hz: Option<f64>) -> Result<(), Error> {
    for (flag, value, field) in
        [("--name", &common.name, "dataset_name"), ("--version", &common.version, "dataset_version")]
    {
        timef::dataset::validate_name(value, field).map_err(|_| Error::InvalidOption {
            option: flag,
            reason: format!("{value:?} must be 1-128 characters of [A-Za-z0-9._-] not starting with '.'"),
        })?;
    }
    check_rate(sampling_rate_hz)
}

/// Checks `--sampling-rate-hz`.
fn check_rate(sampling_rate_hz: Option<f64>) -> Result<(), Error> {
    match sampling_rate_hz {
        Some(hz) if !(hz.is_finite() && hz > 0.0) => Err(Error::InvalidOption {
            option: "--sampling-rate-hz",
            reason: format!("must be finite and > 0, got {hz}"),
        }),
        _ => Ok(()),
    }
}

/// `--storage-option KEY=VALUE` pairs (a value is never echoed: it may be a secret).
fn storage_options(pairs: &[String]) -> Result<StorageOptions, Error> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(Error::InvalidOption { option: "--storage-option", reason: "expected KEY=VALUE".into() }),
        })
        .collect()
}

/// A root or version argument: a URL when its text is one, a local path otherwise.
fn location(path: &std::path::Path, options: &StorageOptions) -> Result<Location, Error> {
    match path.to_str() {
        Some(text) => Location::parse(text, options),
        None => Ok(Location::local(path)),
    }
}

/// `print!`/`println!` to stdout that return a failed write as an error of
/// [`STDOUT`] (a reader that stopped reading ends the command quietly, see `main`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*).map_err(|source| Error::Io { path: STDOUT.into(), source })?
    }};
}
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*).map_err(|source| Error::Io { path: STDOUT.into(), source })?
    }};
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    let opts = storage_options(&cli.storage_option)?;
    let loc = |p: &std::path::Path| location(p, &opts);
    match cli.command {
        Command::Ingest(ingest) => {
            keep_freed_memory();
            match &ingest {
                Ingest::Ucr { common, sampling_rate_hz, .. } | Ingest::Arrow { common, sampling_rate_hz, .. } => {
                    check_common(common, *sampling_rate_hz)?
                }
                Ingest::Tsf { common, .. } => check_common(common, None)?,
            }
            let (root, (dataset, dropped)) = match ingest {
                Ingest::Ucr { common: Common { root, name, version, connector }, sampling_rate_hz, text, files } => {
                    let opts = connector.ucr(&name, &version, sampling_rate_hz, text);
                    (root, timef::connectors::ucr::read_ucr_with_report(&files, &opts)?)
                }
                Ingest::Arrow { common: Common { root, name, version, connector }, sampling_rate_hz, file } => {
                    let opts = connector.arrow(&name, &version, sampling_rate_hz);
                    (root, timef::connectors::arrow::read_arrow_with_report(&file, &opts)?)
                }
                Ingest::Tsf { common: Common { root, name, version, connector }, text, file } => {
                    let opts = connector.tsf(&name, &version, text);
                    (root, timef::connectors::tsf::read_tsf_with_report(&file, &opts)?)
                }
            };
            if let Some(summary) = dropped.summary() {
                noteln!("timef: {summary}");
            }
            for w in &dropped.warnings {
                noteln!("timef: warning: {w}");
            }
            let dir = write(loc(&root)?, dataset, cli.quiet)?;
            outln!("{}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Info { version_dir, json, samples } => {
            let v = Version::open_at(loc(&version_dir)?)?;
            // the index is read and checked, and every listed file is there with its size:
            // a version that breaks its rules is refused, not summarised
            v.check_files()?;
            v.index()?;
            if json {
                let mut doc = timef::info::summary(&v)?;
                if samples {
                    doc["samples"] = timef::info::samples_json(&v)?;
                }
                outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
            } else {
                // everything read before anything is printed: an error leaves no partial summary
                let samples = if samples { timef::info::render_samples(&v)? } else { String::new() };
                out!("{}{samples}", timef::info::render(&v)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Edit(a) => {
            keep_freed_memory();
            edit(a, &opts, cli.quiet)
        }
        Command::Dedup { base_dir, new_dir, json } => {
            let r = timef::dedup::measure_at(&loc(&base_dir)?, &loc(&new_dir)?)?;
            if json {
                outln!("{}", serde_json::json!({"report": r, "shared_ratio": r.shared_ratio()}));
            } else {
                outln!(
                    "{} of {} pages shared; {} of {} shard files equal to the base's; {} of {} shard bytes shared ({:.4})",
                    r.shared_pages,
                    r.new_pages,
                    r.shared_files,
                    r.new_files,
                    r.shared_page_bytes + r.shared_footer_bytes,
                    r.new_shard_bytes,
                    r.shared_ratio()
                );
                if r.new_pages < FEW_PAGES {
                    errln!(
                        "timef: note: the new version has only {} pages; a values page holds at least 256 KiB of \
                         values (docs/format.md §4), so a small version shares few pages after any edit, and the \
                         share says little below ~{FEW_PAGES} pages",
                        r.new_pages
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Ls { root } => {
            let root = loc(&root)?;
            // local staging is stale once its owner's flock is gone; an object-store
            // claim only by age (docs/format.md §1, "Clearing a dead writer's claim")
            let age_s = if root.as_local().is_some() { 0 } else { LS_CLAIM_IDLE_S };
            let survey = timef::storage::survey(&root, age_s)?;
            for ds in &survey.datasets {
                // a TimeF manifest that does not open (damaged, a later format_version) is named, not hidden
                let (mut versions, mut unopened) = (Vec::new(), Vec::new());
                // v2 before v10 (review 146)
                let mut names: Vec<&String> = ds.versions.iter().collect();
                names.sort_by(|a, b| natural_order(a, b));
                for v in names {
                    match Version::open_at(ds.location.join(v)) {
                        Ok(_) => versions.push(v),
                        Err(e) => unopened.push((v, e)),
                    }
                }
                if versions.is_empty()
                    && unopened.is_empty()
                    && ds.odd.is_empty()
                    && ds.stale == 0
                    && ds.fenced.is_empty()
                {
                    continue;
                }
                outln!("{}", ds.name);
                for version in versions {
                    outln!("  {version}");
                }
                for (version, e) in unopened {
                    outln!(
                        "  (odd: {version} holds a TimeF manifest.json but does not open: {e}; `timef verify` tells)"
                    );
                }
                match ds.stale {
                    0 => {}
                    n if age_s == 0 => {
                        outln!("  ({n} stale staging director(ies) of dead writers: `timef gc` removes them)")
                    }
                    n => outln!(
                        "  ({n} leftover(s) of dead writers (claims, parts' prefixes, gc's fences) idle for {age_s} s \
                         or more: `timef gc` clears them)"
                    ),
                }
                for version in &ds.fenced {
                    outln!(
                        "  ({version}: fenced by gc after it cleared a dead writer's claim; a write of it is \
                         refused until a later `timef gc ROOT --older-than-s N` run finds the fence N seconds old)"
                    );
                }
                for (path, why) in &ds.odd {
                    outln!("  (odd: {path} {why})");
                }
            }
            // what is odd outside every dataset (a folder whose listing fails)
            let in_datasets: std::collections::BTreeSet<_> = survey.datasets.iter().flat_map(|d| &d.odd).collect();
            for (path, why) in survey.report.odd.iter().filter(|o| !in_datasets.contains(o)) {
                outln!("(odd: {path} {why})");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Gc { root, older_than_s, dry_run } => {
            let root = loc(&root)?;
            let r = if dry_run {
                timef::storage::gc_dry_run(&root, older_than_s)?
            } else {
                timef::storage::gc(&root, older_than_s)?
            };
            let (removed, cleared, files) = if dry_run {
                ("would remove", "would be cleared", "would be removed")
            } else {
                ("removed", "cleared", "removed")
            };
            for c in &r.removed_claims {
                outln!("{removed} {c}");
            }
            let why = if older_than_s == 0 {
                "its writer alive".to_string()
            } else {
                format!("younger than {older_than_s} s, or its writer alive")
            };
            for c in &r.kept_claims {
                outln!("kept ({why}) {c}");
            }
            for (path, why) in &r.odd {
                outln!("kept (odd) {path}: {why}");
            }
            outln!("{} leftover(s) {cleared}, {} file(s) {files}", r.removed_claims.len(), r.removed_files.len());
            let failed = if dry_run { "could not examine" } else { "could not remove" };
            for (dir, why) in &r.failed {
                errln!("timef: error: {failed} {dir}: {why}");
            }
            Ok(if r.failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(3) })
        }
        Command::Cat { version_dir, series_id, format } => {
            let v = Version::open_at(loc(&version_dir)?)?;
            let values = v.read_series(&series_id)?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            use std::io::Write;
            let res = match format {
                CatFormat::Csv => {
                    let mut r = writeln!(out, "index,value");
                    for (i, x) in values.iter().enumerate() {
                        r = r.and_then(|_| writeln!(out, "{i},{x}"));
                    }
                    r
                }
                CatFormat::Json => {
                    let meta = v.series()?.into_iter().find(|m| m.time_series_id == series_id);
                    let doc = serde_json::json!({
                        "time_series_id": series_id,
                        "sampling_rate_hz": meta.as_ref().map(|m| m.sampling_rate_hz),
                        "t_start_s": meta.as_ref().map(|m| m.t_start_s),
                        // float32 values print in their shortest float32 form, as in the csv
                        "values": &values[..],
                    });
                    writeln!(out, "{doc}")
                }
            };
            res.and_then(|_| out.flush()).map_err(|e| Error::io(STDOUT, e))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(a) => export(a, &opts),
        Command::Verify { version_dir, json } => {
            let report = timef::verify::verify_at(&loc(&version_dir)?)?;
            // a Ctrl-C its last look missed (the process did not exit: its
            // copy was live then) stops it as any other: no report, exit 130
            if timef::storage::interrupted() {
                let stop = std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted (Ctrl-C)");
                return Err(Error::io(&version_dir, stop));
            }
            if json {
                outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            } else {
                out!("{}", report.render());
            }
            Ok(if report.is_ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn export(a: ExportArgs, opts: &StorageOptions) -> Result<ExitCode, Error> {
    use timef::scan::{ScanOptions, Selection};
    let invalid = |option, reason: &str| Error::InvalidOption { option, reason: reason.into() };
    if a.split.is_some() && a.task.is_none() {
        return Err(invalid("--split", "needs --task"));
    }
    match (&a.out, a.count) {
        (None, false) => return Err(invalid("--out", "required (or --count to read without writing)")),
        (Some(_), true) => return Err(invalid("--count", "writes nothing: give --out or --count, not both")),
        (Some(out), false) if out.symlink_metadata().is_ok() => {
            return Err(Error::InvalidOption {
                option: "--out",
                reason: format!("{} exists; export never replaces a file", out.display()),
            })
        }
        _ => {}
    }
    let mut selection = Selection::all();
    if !a.samples.is_empty() {
        selection = selection.samples(a.samples);
    }
    if !a.channels.is_empty() {
        selection = selection.channels(a.channels);
    }
    if let Some(task) = a.task {
        selection = selection.task(task, a.split.as_deref());
    }
    // a URL was read as a relative local path (`s3://b/x` as `s3:/b/x`); it is
    // not repeated, as it may carry a secret
    if a.out.as_ref().is_some_and(|out| timef::storage::is_url(&out.to_string_lossy())) {
        return Err(Error::InvalidOption { option: "--out", reason: "takes a local file, not a URL".into() });
    }
    let options = ScanOptions::builder().threads(a.threads).try_build()?;
    keep_freed_memory();
    let v = Version::open_at(location(&a.version_dir, opts)?)?;
    let scan = timef::scan::scan(&v, &selection, &options)?;
    let (series, chunks, values) = (scan.series_meta().len(), scan.chunks(), scan.values());
    match a.out {
        None => {
            for batch in scan {
                batch?;
            }
            outln!("{series} series, {chunks} chunks, {values} values");
        }
        Some(out) => {
            // the file's name says which, unless --format does (review 127:
            // `--out x.parquet` wrote Arrow IPC)
            let parquet_named = out.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
            let format = match a.format {
                Some(ExportFormatArg::Arrow) => timef::export::ExportFormat::ArrowIpc,
                Some(ExportFormatArg::Parquet) => timef::export::ExportFormat::Parquet,
                None if parquet_named => timef::export::ExportFormat::Parquet,
                None => timef::export::ExportFormat::ArrowIpc,
            };
            let s = timef::export::export(scan, &out, format)?;
            outln!("{series} series, {chunks} chunks, {values} values -> {} ({} bytes)", out.display(), s.bytes);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// glibc gives memory freed above 128 KiB back to the kernel at once and maps
/// large blocks afresh, so each row group a scan decodes faults its pages in
/// again: measured, 40% of `export --count`'s time on the 256 MiB benchmark
/// version (system time 0.5 s of 0.7 s). A scan frees and allocates the same
/// sizes row group after row group, so `export` keeps up to 256 MiB of freed
/// memory for reuse and serves blocks below 32 MiB from the heap (peak RSS
/// unchanged there: 76 MiB). `ingest` too: the writer's encoders allocate and
/// free page and row-group buffers (MiBs) page after page, two in three of its
/// page faults (mixed 256 MiB: ~48,000 -> ~18,000 faults, CPU -8%, peak RSS
/// unchanged). `edit` too: it reads each base row group's `values` column
/// chunk (MiBs) into a fresh buffer (1% removal from 1 GiB: system time
/// 0.36-0.49 s -> 0.21-0.32 s). Process-wide, hence here and not in the library.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    use std::ffi::c_int;
    extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    const M_TRIM_THRESHOLD: c_int = -1;
    const M_MMAP_THRESHOLD: c_int = -3;
    // SAFETY: glibc's mallopt takes the arena lock and only sets two allocator
    // parameters; a failure leaves the defaults
    unsafe {
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}

/// The warning when none of the series added (read with the connector's
/// defaults: no `--spec-type` and no `--sampling-rate-hz` given) has a spec
/// type and a rate of the base's: a `.ts` split read as `unknown` at 1 Hz
/// beside the base's `imu` at 10 Hz is likely a forgotten option (review 138),
/// not a new kind of recording. Given once the edit is done or planned.
/// With `file_rates` (a `.tsf` file gives its own frequency, no option
/// overrides it) spec types alone are compared.
fn other_kinds(base: &timef::manifest::Manifest, added: &TimeFDataset, file_rates: bool) -> Option<String> {
    let kinds = |spec: &str, hz: f64| match file_rates {
        true => spec.to_string(),
        false => format!("{spec} at {hz} Hz"),
    };
    let options = if file_rates { "--spec-type" } else { "--spec-type and --sampling-rate-hz" };
    let held: std::collections::BTreeSet<String> = base
        .schema
        .time_series
        .iter()
        .flat_map(|(spec, channels)| {
            channels.values().flat_map(move |c| c.sampling_rates_hz.iter().map(move |&hz| kinds(spec, hz)))
        })
        .collect();
    let new: std::collections::BTreeSet<String> =
        added.series().map(|m| kinds(&m.spec_type, m.sampling_rate_hz)).collect();
    let list = |set: &std::collections::BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
    (!held.is_empty() && !new.is_empty() && held.is_disjoint(&new)).then(|| {
        format!(
            "the added series are {}, the base's {}: give {options} to read them as the base's",
            list(&new),
            list(&held)
        )
    })
}

/// Refuses a row or id file of `option` that holds none (`rows`): an edit
/// it was meant to drive would silently do something else, or nothing.
fn empty_file(option: &'static str, file: &std::path::Path, rows: usize) -> Result<(), Error> {
    match rows {
        0 => Err(Error::InvalidOption { option, reason: format!("{}: holds no rows", file.display()) }),
        _ => Ok(()),
    }
}

fn edit(a: EditArgs, opts: &StorageOptions, quiet: bool) -> Result<ExitCode, Error> {
    use timef::edit::{Cascade, Edit, InputFile};
    let mut e = Edit {
        remove_sample_ids: a.remove_sample.into_iter().collect(),
        remove_series_ids: a.remove_series.into_iter().collect(),
        remove_channels: a.remove_channel.into_iter().collect(),
        remove_annotation_ids: a.remove_annotation.into_iter().collect(),
        remove_task_ids: a.remove_task.into_iter().collect(),
        description: a.description,
        license: a.license,
        citation: a.citation,
        cascade: if a.cascade { Cascade::RemoveDependents } else { Cascade::Refuse },
        ..Default::default()
    };
    // the connector's options act on what is added: given without it, they would be ignored
    check_rate(a.sampling_rate_hz)?;
    let with = |given: bool, option: &'static str, adds: bool, which: &str| match given && !adds {
        true => Err(Error::InvalidOption { option, reason: format!("applies only with {which}") }),
        false => Ok(()),
    };
    let adds = a.add_arrow.is_some() || !a.add_ucr.is_empty();
    with(
        a.sampling_rate_hz.is_some(),
        "--sampling-rate-hz",
        adds,
        "--add-arrow or --add-ucr (a .tsf file gives its own frequency)",
    )?;
    with(
        a.connector.spec_type.is_some(),
        "--spec-type",
        adds || a.add_tsf.is_some(),
        "--add-arrow, --add-ucr or --add-tsf",
    )?;
    // where each id of --remove-samples-from is, for its refusal (review 146)
    let mut listed_at: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    if let Some(file) = &a.remove_samples_from {
        let bytes = std::fs::read(file).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::Missing { path: file.clone(), what: "no such file".into() },
            _ => Error::InvalidOption { option: "--remove-samples-from", reason: format!("{}: {e}", file.display()) },
        })?;
        let text = String::from_utf8(bytes).map_err(|e| Error::InvalidOption {
            option: "--remove-samples-from",
            reason: format!("{}: not UTF-8 (at byte {})", file.display(), e.utf8_error().valid_up_to()),
        })?;
        e.inputs.push(("remove_samples", InputFile::of(file, text.as_bytes())));
        // a byte order mark (Windows editors write one) is not part of the first id
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let mut ids = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let id = line.trim();
            if !id.is_empty() && !id.starts_with('#') {
                listed_at.entry(id.to_string()).or_insert_with(|| format!("{}:{}", file.display(), n + 1));
                ids.push(id.to_string());
            }
        }
        empty_file("--remove-samples-from", file, ids.len())?;
        e.remove_sample_ids.extend(ids);
    }
    let (base, out_root) = (location(&a.base_dir, opts)?, location(&a.out_root, opts)?);
    let mut kinds_warning = None;
    if a.add_arrow.is_some() || !a.add_ucr.is_empty() || a.add_tsf.is_some() {
        // the additions are read under the base's name, as an ingest of the same files names them
        let v = std::sync::Arc::new(Version::open_at(base.clone())?);
        let name = v.manifest().dataset.name.clone();
        let (c, version) = (&a.connector, a.version.as_str());
        let source_id = IdMode::from(c.ids).id(&name);
        // from the manifest, which lists the sources: the base's samples and series need not be read
        let base_source = v.manifest().sources.iter().find(|s| s.source_id == source_id).map(|s| s.source());
        let mut added = Vec::new();
        if !a.add_ucr.is_empty() {
            let mut o = c.ucr(&name, version, a.sampling_rate_hz, a.text);
            // splits of the base's problem: its source is named by the base's `@problemName`
            // (the TEST file's may differ by a suffix, as aeon ships them)
            o.problem_name = base_source.as_ref().map(|s| s.name.clone());
            added.push((a.add_ucr.clone(), false, timef::connectors::ucr::read_ucr_with_report(&a.add_ucr, &o)?));
        }
        if let Some(file) = &a.add_tsf {
            let o = c.tsf(&name, version, a.text);
            added.push((vec![file.clone()], true, timef::connectors::tsf::read_tsf_with_report(file, &o)?));
        }
        if let Some(file) = &a.add_arrow {
            let o = c.arrow(&name, version, a.sampling_rate_hz);
            added.push((vec![file.clone()], false, timef::connectors::arrow::read_arrow_with_report(file, &o)?));
        }
        // read under the base's name, the additions are of one source, described as the base
        // describes it or, when the base has no such source, as the first addition read does:
        // UCR's first, its problem's name is what a later split is checked against (a
        // connector's own name for it would clash, §7 "The CLI's additions")
        let shown = |files: &[PathBuf]| files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
        let mut record = base_source.map(|s| (s, "the base's source".to_string()));
        for (files, file_rates, (mut dataset, dropped)) in added {
            match &record {
                Some((held, whose)) => {
                    if let Some(own) =
                        dataset.set_source(held.clone())?.filter(|own| own.name != held.name && own.name != name)
                    {
                        noteln!(
                            "timef: warning: {} names its source {:?}; what it adds is {whose} {} ({:?})",
                            shown(&files),
                            own.name,
                            held.source_id,
                            held.name
                        );
                    }
                }
                None => {
                    let own = dataset.sources().find(|s| s.source_id == source_id).cloned();
                    record = own.map(|s| (s, format!("the source of {}", shown(&files))));
                }
            }
            if c.spec_type.is_none() && a.sampling_rate_hz.is_none() {
                kinds_warning = kinds_warning.or(other_kinds(v.manifest(), &dataset, file_rates));
            }
            if let Some(summary) = dropped.summary() {
                noteln!("timef: {summary}");
            }
            for w in &dropped.warnings {
                noteln!("timef: warning: {w}");
            }
            for f in &files {
                e.inputs.push(("add", InputFile::hash(f)?));
            }
            e.add.push(dataset);
        }
    }
    if let Some(file) = &a.set_annotations {
        e.set_annotations = timef::edit::read_annotation_rows(file)?;
        empty_file("--set-annotations", file, e.set_annotations.len())?;
        e.inputs.push(("set_annotations", InputFile::hash(file)?));
    }
    if let Some(file) = &a.set_tasks {
        e.set_tasks = timef::edit::read_task_rows(file)?;
        empty_file("--set-tasks", file, e.set_tasks.len())?;
        e.inputs.push(("set_tasks", InputFile::hash(file)?));
    }
    if let Some(file) = &a.set_sources {
        e.set_sources = timef::edit::read_source_rows(file)?;
        empty_file("--set-sources", file, e.set_sources.len())?;
        e.inputs.push(("set_sources", InputFile::hash(file)?));
    }
    if e.is_empty() {
        return Err(Error::InvalidOption {
            option: "of timef edit",
            reason: "no operation given: name at least one (--remove-*, --add-*, --set-*, --description, --license, --citation; see timef edit --help)".into(),
        });
    }
    let set: Vec<String> = e
        .set_annotations
        .iter()
        .map(|(x, _)| format!("set annotation {}", x.annotation_id))
        .chain(e.set_tasks.iter().map(|(n, t)| format!("set task {n}/{}", t.task_id)))
        .chain(e.set_sources.iter().map(|s| format!("set source {}", s.source_id)))
        .chain(e.dataset_fields().into_iter().map(|field| format!("set dataset {field}")))
        .collect();
    // files added whose every entity the base holds as it is still get the count line, all zeros
    let adding = !e.add.is_empty();
    let print = |plan: &timef::edit::EditPlan| -> Result<(), Error> {
        for s in &plan.samples {
            outln!("remove sample {s}");
        }
        for (n, t) in &plan.tasks {
            outln!("remove task {n}/{t}");
        }
        for (n, t) in &plan.stripped_tasks {
            outln!("strip samples from task {n}/{t}");
        }
        for x in &plan.annotations {
            outln!("remove annotation {x}");
        }
        for x in &plan.series {
            outln!("remove series {x}");
        }
        for x in &plan.added_samples {
            outln!("add sample {x}");
        }
        let ad = &plan.added;
        if adding || !(plan.added_samples.is_empty() && *ad == timef::edit::Added::default()) {
            outln!(
                "add {} sample(s), {} series, {} annotation(s), {} task(s), {} source(s)",
                plan.added_samples.len(),
                ad.series.len(),
                ad.annotations.len(),
                ad.tasks.len(),
                ad.sources.len()
            );
        }
        for x in &set {
            outln!("{x}");
        }
        Ok(())
    };
    // an unknown id read from --remove-samples-from is refused at its line
    // and an unknown readable id of a space the base stores as UUIDs is shown its UUID (review 146)
    let placed = |err: Error| match err {
        Error::Edit { mut blockers } => {
            let uuids = Version::open_at(base.clone()).map(|v| v.manifest().id_encoding.clone()).unwrap_or_default();
            for b in &mut blockers {
                if let Some(at) = listed_at.get(&b.id).filter(|_| b.field == "remove_sample_ids") {
                    b.reason = format!("{} ({at})", b.reason);
                }
                let (space, what) = match b.field {
                    "remove_sample_ids" => ("sample_id", "sample"),
                    "remove_series_ids" => ("time_series_id", "series"),
                    "remove_annotation_ids" => ("annotation_id", "annotation"),
                    "remove_task_ids" => ("task_id", "task"),
                    _ => continue,
                };
                if uuids.get(space).is_some_and(|e| e == "uuid16") && uuid::Uuid::parse_str(&b.id).is_err() {
                    b.reason = format!(
                        "{} (this version's {what} ids are UUIDs; a connector with --ids uuid names {} {})",
                        b.reason,
                        b.id,
                        IdMode::Uuid.id(&b.id)
                    );
                }
            }
            Error::Edit { blockers }
        }
        other => other,
    };
    if a.dry_run {
        print(&timef::edit::plan_at(&base, &out_root, &a.version, e).map_err(placed)?)?;
        if let Some(w) = &kinds_warning {
            noteln!("timef: warning: {w}");
        }
    } else {
        let (dir, plan, c) = timef::edit::edit_version_counted_at(&base, &out_root, &a.version, e).map_err(placed)?;
        committed_despite_ctrl_c(&dir);
        print(&plan)?;
        if let Some(w) = &kinds_warning {
            noteln!("timef: warning: {w}");
        }
        // on stderr, as the connectors' notes: stdout stays the plan and the version
        if !quiet {
            errln!(
                "timef: copied {} of {} values pages, {} bytes read from the base's shards",
                c.pages_copied,
                c.pages_copied + c.pages_encoded,
                c.bytes_read
            );
        }
        outln!("{}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Exit code 2 for what the user can fix: bad input, options or dataset, and
/// paths they named that do not exist or have the wrong kind.
fn exit_code(e: &Error) -> u8 {
    let bad_path = matches!(e, Error::Io { source, .. } if matches!(
        source.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory | std::io::ErrorKind::IsADirectory
    ));
    // an error after Ctrl-C is the abort it asked for, whatever it surfaced as
    let interrupted = timef::storage::interrupted()
        || matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::Interrupted);
    if interrupted {
        130
    } else if e.is_user_error() || bad_path {
        2
    } else {
        3
    }
}

/// Ctrl-C asks a running write to stop and abort (removing what it wrote, on
/// any backend), and a verify of an object-store version to stop and remove
/// its temporary copy; without either, or on a second Ctrl-C, the process
/// exits at once with 130. The action runs in the signal handler itself, so it makes only
/// async-signal-safe calls (atomics, `write(2)`, `_exit(2)`) and needs no thread,
/// pipe or file: it is in place however few files the process may open (tokio's
/// signal driver panicked when it could not make its pipe). If the handler
/// cannot be installed, Ctrl-C keeps its default (the process ends at once).
fn on_ctrl_c() {
    static ASKED: AtomicBool = AtomicBool::new(false);
    const NOTICE: &[u8] = b"timef: interrupted, stopping and removing what this run wrote (Ctrl-C again to exit now)\n";
    let action = || {
        if ASKED.swap(true, Ordering::SeqCst) || !timef::storage::interrupt() {
            // SAFETY: _exit(2) is async-signal-safe and ends the process at once
            unsafe { libc::_exit(130) }
        }
        // only when stderr takes it now: a full pipe nobody reads (or a
        // stopped terminal) would block the handler, so the abort, in write(2)
        let mut stderr = libc::pollfd { fd: libc::STDERR_FILENO, events: libc::POLLOUT, revents: 0 };
        // SAFETY: poll(2) with a zero timeout on one pollfd of this frame and
        // write(2) of a static buffer to fd 2 are async-signal-safe; the notice
        // is shorter than PIPE_BUF, so a pipe with room takes it whole, and a
        // failed write changes nothing of the abort
        unsafe {
            if libc::poll(&mut stderr, 1, 0) == 1 && stderr.revents & libc::POLLOUT != 0 {
                let _ = libc::write(libc::STDERR_FILENO, NOTICE.as_ptr().cast(), NOTICE.len());
            }
        }
    };
    // SAFETY: the action only makes async-signal-safe calls (see above)
    let _ = unsafe { signal_hook_registry::register(libc::SIGINT, action) };
}

/// Age in seconds from which `timef ls` counts an object-store claim as stale
/// (a live writer's claim differs from a dead one's only by age there).
const LS_CLAIM_IDLE_S: u64 = 3600;

/// `text` (an error, whose ids, names and paths are as given) escaped onto
/// one line: control characters, Unicode's line and paragraph separators and
/// the bidirectional overrides as Rust escapes them, so no id breaks,
/// rewrites or reorders the line it is on, or a list of a line each.
fn one_line(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    text.chars().map(|c| if hidden(c) { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// `a` against `b` as people order names: runs of digits by their number
/// (`v2` before `v10`), the rest by its text, and ties as plain text (so
/// `v01` and `v1` keep an order).
fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    // a number by its digits' count once leading zeros go, then its digits
    fn key(s: &str) -> Vec<(u8, usize, &str)> {
        let (mut out, mut rest) = (Vec::new(), s);
        while let Some(c) = rest.chars().next() {
            let digit = c.is_ascii_digit();
            let end = rest.find(|p: char| p.is_ascii_digit() != digit).unwrap_or(rest.len());
            let (run, tail) = rest.split_at(end);
            let number = run.trim_start_matches('0');
            out.push(if digit { (0, number.len(), number) } else { (1, 0, run) });
            rest = tail;
        }
        out
    }
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

/// The name standard output goes by in errors.
const STDOUT: &str = "<stdout>";

/// Below this many pages in the new version `dedup` adds a note that its share says little.
const FEW_PAGES: u64 = 32;

fn main() -> ExitCode {
    let cli = Cli::parse();
    on_ctrl_c();
    match run(cli) {
        Ok(code) => code,
        // a reader that stopped reading (`timef cat ... | head`): done, quietly, as Unix tools are
        Err(Error::Io { path, source })
            if path.as_os_str() == STDOUT && source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let cascades = |e: &Error, of: fn(&timef::error::EditBlocker) -> bool| matches!(e, Error::Edit { blockers } if blockers.iter().any(of));
            let (tasks, samples) =
                (cascades(&e, |b| b.reason.starts_with("task ")), cascades(&e, |b| b.field == "series"));
            let hint = match &e {
                _ if tasks && samples => {
                    " (--cascade removes those samples and tasks, and the tasks that would lose them or derive from them, too)"
                }
                _ if tasks => " (--cascade removes those tasks, and the tasks derived from them, too)",
                _ if samples => " (--cascade removes those samples, and the tasks that would lose them, too)",
                Error::AlreadyExists { path } if timef::storage::is_url(&path.to_string_lossy()) => {
                    " (committed, claimed by another writer, or fenced by gc; a claim whose writer died stays \
                     until `timef gc ROOT --older-than-s N` clears it, and gc's fence until a later run finds it N \
                     seconds old)"
                }
                _ => "",
            };
            match &e {
                // the message shows a few; a user fixing a file of ids needs every one, a line each
                Error::Edit { blockers } if blockers.len() > timef::error::BLOCKERS_SHOWN => {
                    errln!("timef: error: edit refused: {} blockers, a line each{hint}:", blockers.len());
                    for b in blockers {
                        errln!("  {}", one_line(&b.reason));
                    }
                }
                Error::Edit { blockers } => {
                    let reasons: Vec<String> = blockers.iter().map(|b| one_line(&b.reason)).collect();
                    errln!("timef: error: edit refused: {}{hint}", reasons.join("; "));
                }
                _ => {
                    // one line, whatever a dependency's message holds
                    let text: Vec<String> = e.to_string().lines().map(|l| l.trim().to_string()).collect();
                    errln!("timef: error: {}{hint}", one_line(&text.join(" ")));
                }
            }
            ExitCode::from(exit_code(&e))
        }
    }
}
