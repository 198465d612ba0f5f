//! The `vigie` binary's subcommands: one module per command, each a clap `Args` struct with a `run`.

use std::path::Path;

use anyhow::{Context, Result};

pub mod admin;
pub mod analyse;
pub mod calibrate;
pub mod demo;
pub mod detect;
pub mod docs;
pub mod engines;
pub mod eval;
pub mod ingest;
pub mod lake;
pub mod pipeline;
pub mod replay;
pub mod report;
pub mod serve;
pub mod simulate;
pub mod sql;
pub mod stream;
pub mod vacuum;
pub mod verify;

/// What every command gets besides its own arguments: the global flags.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Show progress bars (no `--quiet`).
    pub progress: bool,
}

/// Opens the lake in `dir`, which must exist.
pub fn open_existing(dir: &Path) -> Result<vigie::lake::Lake> {
    vigie::catalog::open_existing(dir).with_context(|| format!("opening lake {}", dir.display()))
}

/// Opens the lake in `dir`, creating it when missing.
pub fn open(dir: &Path) -> Result<vigie::lake::Lake> {
    vigie::catalog::open(dir).with_context(|| format!("opening lake {}", dir.display()))
}

/// Prints a run's summary line (stdout), or its JSON report (stdout) with the summary on stderr.
pub fn print_report<T: serde::Serialize>(json: bool, report: &T, summary: &str) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    Ok(())
}
