//! The path rules of a version (docs/format.md "Paths inside a version"): every
//! path taken from inside a version (the index's `shard_path`, the manifest's
//! `files`, task folder names) names a file of that version, and nothing else,
//! before anything is opened.

/// Why `rel` cannot name a file inside a version, or `None` when it can: a
/// relative, `/`-separated path without an empty, `.` or `..` component, a
/// backslash, a NUL or a `:` (a drive or a URL scheme).
pub fn path_problem(rel: &str) -> Option<&'static str> {
    if rel.is_empty() {
        return Some("is empty");
    }
    if rel.starts_with('/') {
        return Some("is absolute");
    }
    if rel.contains('\0') {
        return Some("holds a NUL byte");
    }
    if rel.contains('\\') {
        return Some("holds a backslash");
    }
    if rel.contains(':') {
        return Some("holds a ':' (a drive or URL scheme)");
    }
    for part in rel.split('/') {
        match part {
            "" => return Some("has an empty component"),
            "." => return Some("has a '.' component"),
            ".." => return Some("has a '..' component (leaves the version)"),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::path_problem;

    #[test]
    fn only_plain_relative_paths_pass() {
        let cases = [
            ("time_series/shard-00000.parquet", None),
            ("tasks/task=a.b-c/part-0.parquet", None),
            ("", Some("is empty")),
            ("/etc/passwd", Some("is absolute")),
            ("../../outside/stolen.parquet", Some("has a '..' component (leaves the version)")),
            ("time_series/../../x", Some("has a '..' component (leaves the version)")),
            ("./samples.parquet", Some("has a '.' component")),
            ("time_series//shard-00000.parquet", Some("has an empty component")),
            ("time_series/", Some("has an empty component")),
            ("a\\..\\b", Some("holds a backslash")),
            ("a\0b", Some("holds a NUL byte")),
            ("C:x", Some("holds a ':' (a drive or URL scheme)")),
        ];
        for (rel, want) in cases {
            assert_eq!(path_problem(rel), want, "{rel:?}");
        }
    }
}
