//! The command line's arguments (clap): the verbs and their options, and how
//! they become the library's options.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use timef::connectors::{arrow::ArrowOptions, tsf::TsfOptions, ucr::UcrOptions, IdMode, OnMissing, TextEncoding};

#[derive(Parser)]
#[command(
    name = "timef",
    version,
    about = "Write, inspect and verify TimeF time-series dataset versions",
    after_help = "Exit codes: 0 success; 1 verify found problems; 2 bad usage, bad input, a place that does \
                  not exist (directory, bucket, container, prefix), or a corrupt version (every verb but \
                  verify); 3 I/O, object-store or internal failure; 130 interrupted."
)]
pub(super) struct Cli {
    /// No progress bar, and no note of what an edit copied (warnings and dropped cases stay).
    #[arg(long, global = true)]
    pub(super) quiet: bool,
    /// An object-store option overriding the environment (repeatable), e.g.
    /// `aws_endpoint=http://127.0.0.1:9000`, `aws_allow_http=true`, `max_retries=2`. It applies
    /// to every cloud URL of the command (s3://, gs://, az://; a key none of them takes is an
    /// error); local paths and file:// have no settings and do not use it.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", global = true)]
    pub(super) storage_option: Vec<String>,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Turn files of a public format into a committed version.
    #[command(subcommand)]
    Ingest(Ingest),
    /// Summary of a version: counts, channels, rates, tasks, files, sizes, statistics. The index
    /// is read and every listed file checked present with its size (one listing; `verify` checks
    /// the bytes): a damaged version exits 2.
    Info {
        /// The version directory or URL (ROOT/NAME/VERSION).
        version_dir: PathBuf,
        /// Print the manifest-derived summary as JSON.
        #[arg(long)]
        json: bool,
        /// Also list every sample with its series ids (the ids `cat` and `edit` take).
        #[arg(long)]
        samples: bool,
    },
    /// Datasets and committed versions under ROOT (a root of datasets, or one dataset), and per
    /// dataset how many stale staging directories (local) or idle claims and parts' prefixes
    /// (object stores) dead writers left for `timef gc`, and what looks odd there.
    Ls {
        /// The root or dataset directory or URL.
        root: PathBuf,
    },
    /// Clear what writers that died left under ROOT (a root of datasets, or one dataset):
    /// object-store claims (and the objects of their uncommitted versions) and parts'
    /// prefixes, local staging directories. Nothing not marked as a writer's is touched.
    Gc {
        /// The root or dataset directory or URL.
        root: PathBuf,
        /// Only claims and staging directories at least this old, in seconds
        /// (longer than any write takes: a live writer's claim looks the same).
        #[arg(long)]
        older_than_s: u64,
        /// Report what would be removed, removing nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write a new version from a base: samples, series, channels, annotations or tasks
    /// removed, recordings added, annotations, tasks, sources or the description set
    /// (copy-on-write; the base is untouched).
    Edit(EditArgs),
    /// Share of a new version's shard bytes in pages byte-identical to the
    /// base's (a shard file equal to a base shard counts whole, footer included).
    Dedup {
        /// The base version directory or URL.
        base_dir: PathBuf,
        /// The new (edited) version directory or URL.
        new_dir: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print one series' values (reads only the rows it needs).
    Cat {
        /// The version directory or URL.
        version_dir: PathBuf,
        /// The series id.
        series_id: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = CatFormat::Csv)]
        format: CatFormat,
    },
    /// Write the values of selected series to one Arrow IPC or Parquet file, in index order:
    /// one row per chunk (time_series_id, chunk_idx, value_offset, values).
    ///
    /// Without a filter every series; filters intersect. Row groups are decoded in
    /// parallel with bounded memory; the file appears whole or not at all.
    Export(ExportArgs),
    /// Check a version end to end; one line per finding, exit 1 if there is any.
    ///
    /// Checks the listing, sizes and sha256, every page and its CRC, decoding,
    /// index pointers, statistics, references, sort orders and counts.
    Verify {
        /// The version directory or URL.
        version_dir: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub(super) struct EditArgs {
    /// The base version directory or URL.
    pub(super) base_dir: PathBuf,
    /// Root under which the new version is written (ROOT/NAME/NEW).
    #[arg(long)]
    pub(super) out_root: PathBuf,
    /// The new version's name.
    #[arg(long)]
    pub(super) version: String,
    /// A sample id to remove (repeatable).
    #[arg(long = "remove-sample", value_name = "ID")]
    pub(super) remove_sample: Vec<String>,
    /// A UTF-8 file with one sample id to remove per line (a leading byte order mark, blank lines
    /// and #-comments ignored).
    #[arg(long, value_name = "FILE")]
    pub(super) remove_samples_from: Option<PathBuf>,
    /// A series id to remove from its samples (repeatable).
    #[arg(long = "remove-series", value_name = "ID")]
    pub(super) remove_series: Vec<String>,
    /// A channel whose series are all removed (repeatable).
    #[arg(long = "remove-channel", value_name = "CHANNEL")]
    pub(super) remove_channel: Vec<String>,
    /// An annotation id to remove (repeatable).
    #[arg(long = "remove-annotation", value_name = "ID")]
    pub(super) remove_annotation: Vec<String>,
    /// A task id to remove (repeatable).
    #[arg(long = "remove-task", value_name = "ID")]
    pub(super) remove_task: Vec<String>,
    /// Add the series, samples, annotations and tasks of a GluonTS-style Arrow IPC or Parquet file.
    #[arg(long, value_name = "FILE")]
    pub(super) add_arrow: Option<PathBuf>,
    /// Add the cases of a UCR/UEA .ts file (e.g. X_TEST.ts; repeatable: one file per flag, so the base
    /// directory may follow it).
    #[arg(long, value_name = "FILE")]
    pub(super) add_ucr: Vec<PathBuf>,
    /// Add the series of a Monash .tsf file.
    #[arg(long, value_name = "FILE")]
    pub(super) add_tsf: Option<PathBuf>,
    /// With --add-*: the connector options of `timef ingest` (ids spelled as the base was ingested).
    #[command(flatten)]
    pub(super) connector: Connector,
    /// With --add-arrow/--add-ucr: sampling rate of every added series in Hz.
    #[arg(long)]
    pub(super) sampling_rate_hz: Option<f64>,
    #[command(flatten)]
    pub(super) text: Text,
    /// Annotation rows to set (.jsonl, .parquet or .csv: annotation_id, sample_id, annotation_type,
    /// key, value_str, value_num, t_start_s, t_end_s, channel); each annotation id is replaced or added.
    #[arg(long, value_name = "FILE")]
    pub(super) set_annotations: Option<PathBuf>,
    /// Task rows to set (.jsonl or .parquet: task_name, task_id, task_type, split, sample_ids, ...);
    /// each task id is replaced or added (a re-split).
    #[arg(long, value_name = "FILE")]
    pub(super) set_tasks: Option<PathBuf>,
    /// Source rows to set (.jsonl, .parquet or .csv: source_id, name, url, license, citation).
    #[arg(long, value_name = "FILE")]
    pub(super) set_sources: Option<PathBuf>,
    /// The dataset's new description.
    #[arg(long)]
    pub(super) description: Option<String>,
    /// The dataset's new license.
    #[arg(long)]
    pub(super) license: Option<String>,
    /// The dataset's new citation.
    #[arg(long)]
    pub(super) citation: Option<String>,
    /// Also remove samples left without series and tasks that would lose a required reference, transitively.
    #[arg(long)]
    pub(super) cascade: bool,
    /// Print what would be removed, added and set; write nothing.
    #[arg(long)]
    pub(super) dry_run: bool,
}

#[derive(Args)]
pub(super) struct ExportArgs {
    /// The version directory or URL.
    pub(super) version_dir: PathBuf,
    /// The file to write (never replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,
    /// Output format [default: parquet for a FILE named *.parquet, else arrow].
    #[arg(long, value_enum)]
    pub(super) format: Option<ExportFormatArg>,
    /// Only the series of these samples (comma-separated, or repeat the flag).
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub(super) samples: Vec<String>,
    /// Only the series of these channels (comma-separated, or repeat the flag).
    #[arg(long, value_name = "CHANNEL,...", value_delimiter = ',')]
    pub(super) channels: Vec<String>,
    /// Only the series of the samples the tasks of this task name reference.
    #[arg(long, value_name = "NAME")]
    pub(super) task: Option<String>,
    /// With --task: only its tasks of this split (e.g. train).
    #[arg(long, value_name = "SPLIT")]
    pub(super) split: Option<String>,
    /// Decoding threads (0: one per core).
    #[arg(long, default_value_t = timef::scan::DEFAULT_THREADS)]
    pub(super) threads: usize,
    /// Read and check every selected chunk, write nothing; print the counts (a read benchmark).
    #[arg(long)]
    pub(super) count: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum ExportFormatArg {
    /// Arrow IPC file (Feather v2), uncompressed.
    Arrow,
    /// Parquet, zstd.
    Parquet,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum CatFormat {
    /// `index,value` lines with a header.
    Csv,
    /// One JSON object with the series id, rate, start and values.
    Json,
}

#[derive(Subcommand)]
pub(super) enum Ingest {
    /// UCR/UEA time-series classification or regression archive .ts files (e.g. X_TRAIN.ts X_TEST.ts).
    Ucr {
        #[command(flatten)]
        common: Common,
        /// Sampling rate of every series in Hz (default 1, or the spacing of `@timeStamps`, which it must then match).
        #[arg(long)]
        sampling_rate_hz: Option<f64>,
        #[command(flatten)]
        text: Text,
        /// The input files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// GluonTS-style Arrow IPC (file or stream) or Parquet: item_id, start, target.
    Arrow {
        #[command(flatten)]
        common: Common,
        /// Sampling rate of every series in Hz (default: each row's `freq`, else 1; must match `freq`).
        #[arg(long)]
        sampling_rate_hz: Option<f64>,
        /// The input file.
        file: PathBuf,
    },
    /// Monash forecasting archive .tsf.
    Tsf {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        text: Text,
        /// The input file.
        file: PathBuf,
    },
}

#[derive(Args)]
pub(super) struct Common {
    /// Root directory or URL (s3://BUCKET/PREFIX, ...); the version goes to ROOT/NAME/VERSION.
    #[arg(long)]
    pub(super) root: PathBuf,
    /// Dataset name.
    #[arg(long)]
    pub(super) name: String,
    /// Dataset version.
    #[arg(long)]
    pub(super) version: String,
    #[command(flatten)]
    pub(super) connector: Connector,
}

/// The options of the connectors' readers: `timef ingest`'s, and `timef edit`'s for `--add-*`.
#[derive(Args, Clone)]
pub(super) struct Connector {
    /// Spec type of every series (default: unknown).
    #[arg(long)]
    pub(super) spec_type: Option<String>,
    /// How ids are spelled.
    #[arg(long, value_enum, default_value_t = Ids::String)]
    pub(super) ids: Ids,
    #[command(flatten)]
    missing: Missing,
}

impl Connector {
    /// The options of reading `.ts` files into dataset `name` at `version`.
    pub(super) fn ucr(&self, name: &str, version: &str, sampling_rate_hz: Option<f64>, text: Text) -> UcrOptions {
        let mut o = UcrOptions::new(name, version)
            .with_ids(self.ids.into())
            .with_on_missing(self.missing.into())
            .with_encoding(text.into());
        (o.spec_type, o.sampling_rate_hz) = (self.spec_type.clone(), sampling_rate_hz);
        o
    }
    /// The options of reading an Arrow or Parquet file into dataset `name` at `version`.
    pub(super) fn arrow(&self, name: &str, version: &str, sampling_rate_hz: Option<f64>) -> ArrowOptions {
        ArrowOptions {
            name: name.to_string(),
            version: version.to_string(),
            spec_type: self.spec_type.clone(),
            sampling_rate_hz,
            ids: self.ids.into(),
            on_missing: self.missing.into(),
        }
    }
    /// The options of reading a `.tsf` file into dataset `name` at `version`.
    pub(super) fn tsf(&self, name: &str, version: &str, text: Text) -> TsfOptions {
        TsfOptions {
            name: name.to_string(),
            version: version.to_string(),
            spec_type: self.spec_type.clone(),
            ids: self.ids.into(),
            on_missing: self.missing.into(),
            encoding: text.into(),
        }
    }
}

#[derive(Args, Clone, Copy)]
struct Missing {
    /// What to do with a case (row, series line, .ts case) holding a missing value (NaN, null, `?`).
    #[arg(long, value_enum, default_value_t = MissingArg::Error)]
    on_missing: MissingArg,
}

#[derive(Clone, Copy, ValueEnum)]
enum MissingArg {
    /// Fail, naming the file, line or row, case and channel.
    Error,
    /// Leave the whole case out; stderr says how many and which.
    DropCase,
}

impl From<Missing> for OnMissing {
    fn from(m: Missing) -> Self {
        match m.on_missing {
            MissingArg::Error => OnMissing::Error,
            MissingArg::DropCase => OnMissing::DropCase,
        }
    }
}

#[derive(Args, Clone, Copy)]
pub(super) struct Text {
    /// Text encoding of the input.
    #[arg(long, value_enum, default_value_t = EncodingArg::Utf8)]
    encoding: EncodingArg,
}

#[derive(Clone, Copy, ValueEnum)]
enum EncodingArg {
    /// UTF-8.
    #[value(name = "utf-8")]
    Utf8,
    /// ISO-8859-1 (every byte is the code point of the same number).
    #[value(name = "latin-1")]
    Latin1,
    /// windows-1252 (WHATWG).
    Cp1252,
}

impl From<Text> for TextEncoding {
    fn from(t: Text) -> Self {
        match t.encoding {
            EncodingArg::Utf8 => TextEncoding::Utf8,
            EncodingArg::Latin1 => TextEncoding::Latin1,
            EncodingArg::Cp1252 => TextEncoding::Cp1252,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum Ids {
    /// Readable ids from names (stored as strings).
    String,
    /// UUIDv5 of the readable ids (stored as uuid16).
    Uuid,
}

impl From<Ids> for IdMode {
    fn from(i: Ids) -> Self {
        match i {
            Ids::String => IdMode::String,
            Ids::Uuid => IdMode::Uuid,
        }
    }
}
