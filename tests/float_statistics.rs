//! pyarrow sees min/max of every float column chunk of every file and prunes
//! index row groups on `t_start_s` (docs/format.md §3, "Float statistics and
//! column order"): the golden version, a real file's version, and a version
//! with many shard row groups (`tests/py/float_statistics.py`).

mod common;

use std::path::Path;

use common::*;

#[test]
fn pyarrow_sees_min_max_of_every_float_column_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/golden/1.0.0");
    let root = tmp.path().join("root");
    ingest_ucr(&root, "BasicMotions", "1", &real("ucr/BasicMotions_TRAIN.ts"));
    let small = commit(tmp.path(), golden_fixture().dataset(), small_options());
    let dirs = [golden, root.join("BasicMotions/1"), small];
    let args: Vec<&str> = dirs.iter().map(|d| d.to_str().unwrap()).collect();
    let Some(out) = py_script("float_statistics.py", &args) else { return };
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for line in lines {
        assert!(line.ends_with("index row groups 1 -> 0"), "{line}");
    }
}
