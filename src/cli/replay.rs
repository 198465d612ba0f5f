//! `vigie replay`: replays new or changed games of the lake through the rules engines into findings, games, moves and departures.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use vigie::replay::{self, run::ReplayOptions};

use super::Ctx;

/// Arguments of `vigie replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Print the run report as JSON on stdout.
    #[arg(long)]
    report_json: bool,
}

impl ReplayArgs {
    /// Runs `vigie replay`.
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake: lake_dir,
            threads,
            report_json,
        } = self;
        let lake = super::open_existing(&lake_dir)?;
        let mut opts = ReplayOptions {
            progress: ctx.progress,
            ..Default::default()
        };
        if let Some(t) = threads {
            opts.threads = t.max(1);
        }
        let report = replay::run::run(&lake, &opts)
            .with_context(|| format!("replaying {}", lake_dir.display()))?;
        super::print_report(report_json, &report, &report.summary_line())?;
        Ok(ExitCode::SUCCESS)
    }
}
