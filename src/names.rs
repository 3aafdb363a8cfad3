//! The names the format fixes, below every other module: the rule for a
//! path component (a dataset, version or task name) and the manifest's
//! `format` value that marks a directory as a version (FORMAT-BRIEF §1, §4).
//! Storage (gc's classification), the dataset and the manifest all use them.

use crate::error::{Error, Result};

/// The manifest's `format` value.
pub const FORMAT: &str = "timef";

/// Checks a path component (`dataset_name`, `dataset_version`, `task_name`):
/// 1-128 chars of `[A-Za-z0-9._-]`, not starting with `.` (FORMAT-BRIEF §1).
///
/// # Errors
/// [`Error::Validation`] naming `value` and `field`.
pub fn validate_name(value: &str, field: &'static str) -> Result<()> {
    let ok = (1..=128).contains(&value.len())
        && !value.starts_with('.')
        && value.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::validation(value, field, "must be 1-128 characters of [A-Za-z0-9._-] not starting with '.'"))
    }
}
