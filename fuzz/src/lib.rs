//! Helpers shared by the fuzz targets: a scratch directory per process, the
//! golden version as the base of mutated versions, and "use everything" passes
//! over a connector's dataset and over a version (the work `cat`, `info` and
//! `verify` do). Every error is fine; a panic, abort or runaway allocation is a
//! finding.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use timef::reader::Version;
use timef::TimeFDataset;

/// A directory that lives as long as the fuzzing process.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::Builder::new().prefix("timef-fuzz-").tempdir().expect("scratch directory")).path()
}

/// Writes `bytes` to `name` in the scratch directory and returns its path.
pub fn scratch_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch().join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    path
}

/// Calls every series loader of `ds` and touches the values.
pub fn drain(mut ds: TimeFDataset) {
    let ids: Vec<String> = ds.series().map(|m| m.time_series_id.clone()).collect();
    for id in ids {
        if let Some(load) = ds.take_loader(&id) {
            if let Ok(values) = load() {
                std::hint::black_box(values.iter().fold(0f32, |a, v| a + v));
            }
        }
    }
}

/// The golden version shipped with the repository (a small committed version):
/// its files as (path relative to the version, bytes), sorted by path.
pub fn golden_files() -> &'static [(String, Vec<u8>)] {
    static FILES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../golden/golden/1.0.0");
        let mut files = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("golden version") {
                let path = entry.expect("golden entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(&root).expect("inside").to_string_lossy().into_owned();
                    files.push((rel, std::fs::read(&path).expect("golden file")));
                }
            }
        }
        files.sort();
        files
    })
}

/// A copy of the golden version at `<scratch>/golden/1.0.0` (dataset and version
/// names must match the directories), with `rel` replaced by `bytes`; the other
/// files are restored to their golden bytes on every call.
pub fn mutated_version(rel: &str, bytes: &[u8]) -> PathBuf {
    let dir = scratch().join("golden/1.0.0");
    for (path, original) in golden_files() {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).expect("version directories");
        }
        let content: &[u8] = if path == rel { bytes } else { original };
        std::fs::write(&target, content).expect("write version file");
    }
    dir
}

/// Does what `verify`, `info` and `cat` do on the version at `dir`: verifies it,
/// opens it, and reads its index, samples, annotations, tasks and every series.
pub fn use_version(dir: &Path) {
    let _ = std::hint::black_box(timef::verify::verify(dir));
    let Ok(v) = Version::open(dir) else { return };
    let _ = v.index();
    let _ = v.samples();
    let _ = v.annotations();
    for name in v.task_names() {
        let _ = v.tasks(&name);
    }
    if let Ok(series) = v.series() {
        for m in series {
            if let Ok(values) = v.read_series(&m.time_series_id) {
                std::hint::black_box(values.iter().fold(0f32, |a, v| a + v));
            }
        }
    }
}
