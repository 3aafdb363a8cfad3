//! Every real file in `tests/data/real/` (copies of `shared/data/real/`) ingests through the CLI into a
//! conforming version whose values equal, as float32, the decimal text in the
//! file, with exact labels and targets. The expected values come from a plain
//! text split in this test, independent of the connectors' parsers.

mod common;

use std::path::Path;

use common::{assert_conforming, cli, real};
use timef::reader::Version;

/// Data lines of a file after its `@data` tag (case-insensitive), without blank and comment lines.
fn data_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.trim_start_matches('\u{feff}');
    let mut lines = text.lines().map(str::trim);
    lines.by_ref().find(|l| l.to_ascii_lowercase().starts_with("@data"));
    lines.filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('%')).map(String::from).collect()
}

fn f32s(field: &str) -> Vec<f32> {
    field.split(',').map(|x| x.trim().parse::<f32>().unwrap()).collect()
}

/// Ingests `files` with `ingest ucr` and checks every case, dimension and label or target.
fn check_ucr(name: &str, files: &[&str], labelled: Labelled) {
    let root = tempfile::tempdir().unwrap();
    let paths: Vec<String> = files.iter().map(|f| real(&format!("ucr/{f}")).display().to_string()).collect();
    let mut args = vec!["ingest", "ucr", "--root", root.path().to_str().unwrap(), "--name", name, "--version", "v1"];
    args.extend(paths.iter().map(String::as_str));
    let (code, stdout, stderr) = cli(&args);
    assert_eq!(code, 0, "{stderr}");
    let dir = root.path().join(name).join("v1");
    assert_eq!(stdout.trim(), dir.display().to_string());
    assert_conforming(&dir);
    let v = Version::open(&dir).unwrap();
    let annotations = v.annotations().unwrap();
    let mut cases = 0;
    for f in files {
        let split = if f.contains("_TRAIN") { "train" } else { "test" };
        for (case, line) in data_lines(&real(&format!("ucr/{f}"))).iter().enumerate() {
            let mut fields: Vec<&str> = line.split(':').collect();
            let sample = format!("{name}-{split}-{case}");
            let label = fields.pop().unwrap().trim();
            let (_, a) = annotations.iter().find(|(s, _)| *s == sample).unwrap();
            match labelled {
                Labelled::Class => assert_eq!(a.value_str.as_deref(), Some(label), "{sample}"),
                Labelled::Target => assert_eq!(a.value_num, Some(label.parse::<f64>().unwrap()), "{sample}"),
            }
            for (dim, field) in fields.iter().enumerate() {
                let got = v.read_series(&format!("{sample}/{dim}")).unwrap();
                assert_eq!(&got[..], &f32s(field)[..], "{sample}/{dim}");
            }
            cases += 1;
        }
    }
    assert_eq!(v.manifest().counts.samples, cases);
}

#[derive(Clone, Copy, PartialEq)]
enum Labelled {
    Class,
    Target,
}

#[test]
fn arrowhead() {
    check_ucr("ArrowHead", &["ArrowHead_TRAIN.ts", "ArrowHead_TEST.ts"], Labelled::Class);
}

#[test]
fn basic_motions_multivariate() {
    check_ucr("BasicMotions", &["BasicMotions_TRAIN.ts", "BasicMotions_TEST.ts"], Labelled::Class);
}

#[test]
fn italy_power_demand() {
    check_ucr("ItalyPowerDemand", &["ItalyPowerDemand_TRAIN.ts"], Labelled::Class);
}

#[test]
fn covid_regression() {
    check_ucr("Covid3Month", &["Covid3Month_TRAIN.ts"], Labelled::Target);
}

#[test]
fn unit_test_chinatown() {
    check_ucr("UnitTest", &["UnitTest_TRAIN.ts"], Labelled::Class);
}

fn check_tsf(file: &str, uuid: bool) {
    let root = tempfile::tempdir().unwrap();
    let path = real(&format!("tsf/{file}"));
    let ids = if uuid { "uuid" } else { "string" };
    let (code, _, stderr) = cli(&[
        "ingest",
        "tsf",
        "--root",
        root.path().to_str().unwrap(),
        "--name",
        "tsf",
        "--version",
        "v1",
        "--ids",
        ids,
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let dir = root.path().join("tsf/v1");
    assert_conforming(&dir);
    let v = Version::open(&dir).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let attributes: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("@attribute ")).collect();
    let n_attr = attributes.len();
    let name_field = attributes.iter().position(|a| a.starts_with("series_name ")).unwrap();
    let horizon: usize = text.lines().find_map(|l| l.strip_prefix("@horizon ")).unwrap().trim().parse().unwrap();
    let lines = data_lines(&path);
    let tasks = v.tasks("forecast").unwrap();
    for line in &lines {
        let fields: Vec<&str> = line.splitn(n_attr + 1, ':').collect();
        let readable = format!("tsf-{}", fields[name_field]);
        let id = if uuid { timef::connectors::IdMode::Uuid.id(&readable) } else { readable.clone() };
        let values = f32s(fields[n_attr]);
        assert_eq!(&v.read_series(&id).unwrap()[..], &values[..], "{readable}");
        if values.len() > horizon {
            // the context and target windows cut the one stored series at len - horizon
            let samples = v.samples().unwrap();
            let target_id = if uuid {
                timef::connectors::IdMode::Uuid.id(&format!("{readable}/target"))
            } else {
                format!("{readable}/target")
            };
            let target = samples.iter().find(|s| s.sample_id == target_id).unwrap();
            assert_eq!(&v.read_sample_series(target, &id).unwrap()[..], &values[values.len() - horizon..]);
            assert!(tasks.iter().any(
                |t| t.target_sample_id.as_deref() == Some(target_id.as_str()) && t.horizon == Some(horizon as i32)
            ));
        }
    }
    assert_eq!(v.manifest().counts.time_series, lines.len() as u64);
}

#[test]
fn tsf_forecasting() {
    check_tsf("UnitTest_Tsf_Loader.tsf", false);
}

#[test]
fn tsf_hierarchical_uuid_ids() {
    check_tsf("UnitTest_Tsf_Loader_hierarchical.tsf", true);
}

#[test]
fn every_real_file_is_covered() {
    let mut covered = vec![
        "ucr/ArrowHead_TEST.ts",
        "ucr/ArrowHead_TRAIN.ts",
        "ucr/BasicMotions_TEST.ts",
        "ucr/BasicMotions_TRAIN.ts",
        "ucr/Covid3Month_TRAIN.ts",
        "ucr/ItalyPowerDemand_TRAIN.ts",
        "ucr/UnitTest_TRAIN.ts",
        "tsf/UnitTest_Tsf_Loader.tsf",
        "tsf/UnitTest_Tsf_Loader_hierarchical.tsf",
    ];
    covered.sort();
    let mut found: Vec<String> = ["ucr", "tsf"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(real(d))
                .unwrap()
                .map(move |e| format!("{d}/{}", e.unwrap().file_name().to_string_lossy()))
        })
        .collect();
    found.sort();
    assert_eq!(found, covered);
}

/// The repository's copies equal `../shared/data/real/` where it is beside the
/// checkout (so the copies cannot drift from the project's data).
#[test]
fn repository_copies_equal_the_shared_files() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real");
    if !shared.is_dir() {
        assert!(
            std::env::var_os("TIMEF_REQUIRE_SHARED").is_none(),
            "TIMEF_REQUIRE_SHARED is set: ../shared must be beside the checkout"
        );
        common::skipped("copies vs ../shared/data/real: ../shared not found");
        return;
    }
    let mut compared = 0;
    for d in ["ucr", "tsf"] {
        for e in std::fs::read_dir(shared.join(d)).unwrap() {
            let e = e.unwrap();
            let ours = real(&format!("{d}/{}", e.file_name().to_string_lossy()));
            assert_eq!(std::fs::read(&ours).unwrap(), std::fs::read(e.path()).unwrap(), "{}", ours.display());
            compared += 1;
        }
    }
    assert_eq!(compared, 9);
}
