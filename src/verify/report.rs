//! The one report every check family of `verify` writes to: findings by
//! file and location, counts, and what was skipped.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What a [`Finding`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Check {
    /// `manifest.json` itself: names, the `files` list, `id_encoding`, writer
    /// options, and its `schema` block against the stored entities.
    Manifest,
    /// A listed file is missing or not a file, a file on disk is unlisted, a
    /// required file is not listed, or a path is not one of the format's.
    Listing,
    /// A file's size differs from the manifest's.
    Size,
    /// A file's sha256 differs from the manifest's.
    Checksum,
    /// A Parquet file's magic or footer is unreadable.
    Footer,
    /// Columns, types, nesting or logical types differ from the format (in
    /// either form of its column types), or the files of a version mix the
    /// two forms (`docs/format.md`, "Column types").
    Schema,
    /// A pinned encoding or the zstd codec did not take.
    Encoding,
    /// Column statistics, column index or offset index are missing, or the
    /// offset index disagrees with the pages.
    PageIndex,
    /// A page header does not decode, pages do not tile their column chunk,
    /// or their value counts disagree with the footer.
    PageHeader,
    /// A page carries no CRC-32, or one that does not match its bytes.
    PageCrc,
    /// The parquet reader could not decode a row group's values.
    Decode,
    /// Rows out of the format's sort order, or duplicate keys.
    Order,
    /// An index row does not land on its `(time_series_id, chunk_idx)`, or a
    /// shard row has no index row.
    Pointer,
    /// Chunk numbering, value offsets, or chunk, row-group or shard sizes
    /// break the layout rules (FORMAT-BRIEF §5).
    Chunking,
    /// `n_values` or chunk statistics disagree with the stored values, or the
    /// manifest's statistics with the chunks.
    Statistics,
    /// Stored values break a rule: non-finite, empty chunk, length against
    /// `t_end_s`, sampling rate, window bounds.
    Values,
    /// A reference does not resolve (samples → series and sources,
    /// annotations → samples, tasks → samples and tasks), a task id repeats,
    /// or a task lacks a required field.
    Integrity,
    /// Rows of one annotation attached to several samples differ.
    SharedAnnotation,
    /// `id_encoding` disagrees with the ids stored (FORMAT-BRIEF §2).
    Ids,
    /// The manifest's counts or per-file row counts disagree with the files.
    Counts,
}

impl Check {
    /// The check's name as printed and serialized (`page-crc`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Check::Manifest => "manifest",
            Check::Listing => "listing",
            Check::Size => "size",
            Check::Checksum => "checksum",
            Check::Footer => "footer",
            Check::Schema => "schema",
            Check::Encoding => "encoding",
            Check::PageIndex => "page-index",
            Check::PageHeader => "page-header",
            Check::PageCrc => "page-crc",
            Check::Decode => "decode",
            Check::Order => "order",
            Check::Pointer => "pointer",
            Check::Chunking => "chunking",
            Check::Statistics => "statistics",
            Check::Values => "values",
            Check::Integrity => "integrity",
            Check::SharedAnnotation => "shared-annotation",
            Check::Ids => "ids",
            Check::Counts => "counts",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file at fault, relative to the version directory (`/`-separated).
    pub file: String,
    /// Where in the file, e.g. `row group 2, column values.list.element, page 3`.
    pub location: String,
    /// Which check failed.
    pub check: Check,
    /// What was found (one line).
    pub message: String,
}

impl fmt::Display for Finding {
    /// `FAIL [check] file location: message`, the CLI's line format.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FAIL [{}] {} {}: {}", self.check, self.file, self.location, self.message)
    }
}

/// The warning of a version whose `manifest.json` has no seal
/// (`manifest_sha256`): a change of its hand-written fields cannot be found
/// (`docs/format.md` §6, "Integrity").
pub const UNSEALED: &str = "manifest.json is unsealed (no manifest_sha256): a change of its description, license, \
     citation, sources, created_by or writer options cannot be found; written before the seal existed, by a writer \
     that does not seal, or its seal was removed";

/// Everything [`verify`] found, with what it covered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// Every finding, in the order the checks ran.
    pub findings: Vec<Finding>,
    /// Files examined, `manifest.json` included.
    pub files_checked: usize,
    /// Pages whose header and CRC were checked.
    pub pages_checked: u64,
    /// Rows decoded by the parquet reader.
    pub rows_checked: u64,
    /// Series values decoded and checked against the index.
    pub values_checked: u64,
    /// Checks that could not run because a file they need is unusable (its
    /// findings say why), one line each.
    pub skipped: Vec<String>,
    /// What a reader of the report must know that is not a finding, one line
    /// each: a manifest without its seal (`docs/format.md` §6, "Integrity").
    pub warnings: Vec<String>,
}

impl VerifyReport {
    /// True when nothing was found.
    pub fn is_ok(&self) -> bool {
        self.findings.is_empty()
    }

    /// One line: the verdict and what was covered.
    pub fn summary(&self) -> String {
        let covered = format!(
            "{} files, {} pages, {} rows, {} values",
            self.files_checked, self.pages_checked, self.rows_checked, self.values_checked
        );
        let mut skipped = match self.skipped.len() {
            0 => String::new(),
            n => format!("; {n} check(s) skipped"),
        };
        if !self.warnings.is_empty() {
            skipped.push_str(&format!("; {} warning(s)", self.warnings.len()));
        }
        if self.is_ok() {
            format!("ok: {covered} verified{skipped}")
        } else {
            format!("FAILED: {} finding(s) in {covered}{skipped}", self.findings.len())
        }
    }

    /// The CLI's text: one line per finding, one `warning: ` line per warning,
    /// then [`VerifyReport::summary`] (skipped checks are counted there and
    /// listed in the JSON form).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&f.to_string());
            out.push('\n');
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    pub(super) fn push(&mut self, file: &str, location: impl Into<String>, check: Check, message: impl Into<String>) {
        // one finding, one line: messages of nested errors may span lines
        let message = message.into().replace(['\n', '\r'], " ");
        self.findings.push(Finding { file: file.to_string(), location: location.into(), check, message });
    }
}
