//! Ingest: server log files (plain, gzip, zstd) into the lake's `events` and `quarantine` tables, exactly once.
//!
//! A source file is recognised by its fingerprint (the SHA-256 of its first
//! line) and checked by hashes of its first and last 64 KiB before its
//! checkpoint, so a renamed, copied or compressed file is not ingested twice
//! and a grown one is read from where the last run stopped; a shorter copy
//! (an earlier state of a file read further) is compared byte for byte with
//! the file that source was read from, when it is still there. Every complete
//! line ends up either in `events` or in `quarantine`; a partial last line
//! waits for the next run. One run is one lake commit.

pub mod batch;
pub mod sink;
pub mod source;

use std::path::PathBuf;

pub use batch::{IngestOptions, IngestReport, ingest_files, ingest_paths};

/// Errors of the ingest layer.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Lake(#[from] crate::lake::LakeError),
    #[error("cannot read input {path}: {source}")]
    Input {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} changed while it was being read; run again")]
    SourceChanged(PathBuf),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("the Parquet writer thread failed")]
    WriterPanicked,
}
