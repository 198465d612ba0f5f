//! The integration tests of `vigie-rules`: the draughts engine against perft counts and rule positions, every engine and the fairness protocol against the contract fixtures and the independent sample log, and properties.
//!
//! They read the fixtures committed in the repository (`tests/fixtures/`, copies of the contracts) and build
//! nothing of the pipeline: no polars, no DataFusion.

mod common {
    use std::path::{Path, PathBuf};

    /// The repository's `tests/` directory: contract fixtures are under `fixtures/`.
    pub fn shared() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests")
    }
}
mod draughts;
mod engines;
