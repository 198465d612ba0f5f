//! The rules engines and the fairness protocol against the shared fixtures and the independent sample.

mod common;
mod fairness_vectors;
mod props;
mod sample_belote;
mod sample_ludo;
mod sample_medieval;
