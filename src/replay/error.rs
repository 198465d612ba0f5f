//! The replay stage's error, shared by the run and the recall of old games.

use std::path::{Path, PathBuf};

use crate::lake::LakeError;

/// Errors of the replay stage.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a replay worker failed")]
    Worker,
}

/// Maps an I/O error on `path` to a [`ReplayError`].
pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReplayError + '_ {
    move |source| ReplayError::Io {
        path: path.to_path_buf(),
        source,
    }
}
