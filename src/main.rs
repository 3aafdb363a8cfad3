//! The `timef` command line: a thin layer of argument parsing, progress and exit
//! codes over the library. Exit codes: 0 success, 1 a check found problems,
//! 2 bad usage or bad input (the input file, dataset or options), 3 any other
//! failure (I/O, internal).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use timef::connectors::{arrow::ArrowOptions, tsf::TsfOptions, IdMode};
use timef::{Error, TimeFDataset, TimeFWriter, WriteProgressEvent, WriterOptions};

#[derive(Parser)]
#[command(name = "timef", version, about = "Write, inspect and verify TimeF time-series dataset versions")]
struct Cli {
    /// No progress bar.
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Turn files of a public format into a committed version.
    #[command(subcommand)]
    Ingest(Ingest),
}

#[derive(Subcommand)]
enum Ingest {
    /// GluonTS-style Arrow IPC (file or stream) or Parquet: item_id, start, target.
    Arrow {
        #[command(flatten)]
        common: Common,
        /// Sampling rate of every series in Hz.
        #[arg(long)]
        sampling_rate_hz: Option<f64>,
        /// The input file.
        file: PathBuf,
    },
    /// Monash forecasting archive .tsf.
    Tsf {
        #[command(flatten)]
        common: Common,
        /// The input file.
        file: PathBuf,
    },
}

#[derive(Args)]
struct Common {
    /// Root directory; the version goes to ROOT/NAME/VERSION.
    #[arg(long)]
    root: PathBuf,
    /// Dataset name.
    #[arg(long)]
    name: String,
    /// Dataset version.
    #[arg(long)]
    version: String,
    /// Spec type of every series (default: unknown).
    #[arg(long)]
    spec_type: Option<String>,
    /// How ids are spelled.
    #[arg(long, value_enum, default_value_t = Ids::String)]
    ids: Ids,
}

#[derive(Clone, Copy, ValueEnum)]
enum Ids {
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

fn write(root: PathBuf, dataset: TimeFDataset, quiet: bool) -> Result<PathBuf, Error> {
    let bar = progress_bar(quiet);
    let mut writer = TimeFWriter::new(root, WriterOptions::default());
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
    Ok(dir)
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Ingest(ingest) => {
            let (root, dataset) = match ingest {
                Ingest::Arrow { common, sampling_rate_hz, file } => {
                    let opts = ArrowOptions {
                        name: common.name,
                        version: common.version,
                        spec_type: common.spec_type,
                        sampling_rate_hz,
                        ids: common.ids.into(),
                    };
                    (common.root, timef::connectors::arrow::read_arrow(&file, &opts)?)
                }
                Ingest::Tsf { common, file } => {
                    let opts = TsfOptions {
                        name: common.name,
                        version: common.version,
                        spec_type: common.spec_type,
                        ids: common.ids.into(),
                    };
                    (common.root, timef::connectors::tsf::read_tsf(&file, &opts)?)
                }
            };
            let dir = write(root, dataset, cli.quiet)?;
            println!("{}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("timef: error: {e}");
            ExitCode::from(if e.is_user_error() { 2 } else { 3 })
        }
    }
}
