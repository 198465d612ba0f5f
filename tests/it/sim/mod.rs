//! The platform simulator: determinism, format, coverage of the sample preset, malformed lines, behaviours, and its labelled faults found by replay.

mod behaviours;
pub mod common;
mod coverage;
mod determinism;
mod format;
mod malformed;
pub mod replay_adapter;
mod truth;
