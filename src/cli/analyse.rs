//! `vigie analyse`: engine analysis of the selected draughts games into `move_analysis`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::Ctx;

/// Arguments of `vigie analyse`.
#[derive(Debug, clap::Args)]
pub struct AnalyseArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Nodes the engine searches per position (deterministic).
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1_000..=100_000_000))]
    nodes: u64,
    /// Depth of the shallow search that tells positions whose best move needs a deep search.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=12))]
    shallow_depth: u32,
    /// Share of the other eligible games analysed, besides every game of a flagged account or of
    /// an account with an unusual win rate (1: every eligible game).
    #[arg(long, default_value_t = 0.05)]
    sample: f64,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Analyse at most this many games (the rest on the next run).
    #[arg(long)]
    max_games: Option<usize>,
    /// Print the run report as JSON on stdout.
    #[arg(long)]
    report_json: bool,
}

impl AnalyseArgs {
    /// Runs `vigie analyse`.
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        if !(0.0..=1.0).contains(&self.sample) {
            anyhow::bail!("--sample must be in [0, 1], got {}", self.sample);
        }
        let lake = super::open_existing(&self.lake)?;
        let opts = vigie::analysis::AnalyseOptions {
            nodes: self.nodes,
            shallow_depth: self.shallow_depth,
            sample: self.sample,
            threads: self.threads,
            max_games: self.max_games,
            ..Default::default()
        };
        let report = analyse(&lake, &opts, ctx.progress)?;
        super::print_report(self.report_json, &report, &report.summary_line())?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The flagged accounts' games first, then the rest of the selection, with a progress bar.
pub(super) fn analyse(
    lake: &vigie::lake::Lake,
    opts: &vigie::analysis::AnalyseOptions,
    progress: bool,
) -> Result<vigie::analysis::AnalyseReport> {
    let focus = vigie::detect::flagged_accounts(lake).context("reading the flagged accounts")?;
    let bar = if progress {
        indicatif::ProgressBar::new(0)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let report = vigie::analysis::run(lake, opts, &focus, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .context("analysing games")?;
    bar.finish_and_clear();
    Ok(report)
}
