//! # timef
//!
//! Writer, reader and tools for **TimeF**, a Parquet-native, versioned on-disk
//! format for time-series datasets (FORMAT-BRIEF, `docs/format.md`).
#![warn(missing_docs)]

mod chunks;
pub mod connectors;
pub mod dataset;
pub mod error;
pub mod export;
pub mod footer;
pub mod info;

pub use dataset::{
    new_id, Annotation, DatasetInfo, Loader, LoaderError, Sample, SeriesMeta, SeriesRef, Source, Task, TaskType,
    TimeFDataset,
};
pub use error::{Error, Result};
/// The local backend's staging and commit under its former name (see [`storage`]).
pub use storage as commit;
pub mod dedup;
pub mod edit;
pub mod encoding;
mod float_order;
pub mod layout;
pub mod limits;
pub mod manifest;
pub mod names;
pub mod options;
mod pages;
mod parquet_read;
pub mod reader;
mod runtime;
pub mod scan;
pub mod stats;
pub mod storage;
pub mod tables;
mod text_column;
pub mod thrift;
pub mod verify;
pub mod windows;
pub mod writer;

/// The README's Rust example, compiled as a doctest so it cannot rot.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use writer::distributed;
pub use writer::{StagedVersion, TimeFWriter, WriteProgressEvent, WriterOptions};
