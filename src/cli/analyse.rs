//! `vigie analyse`: engine analysis of the selected draughts games into `move_analysis`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use arrow::array::{Array, AsArray};

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

/// The accounts with a flag in the lake.
fn flagged(lake: &vigie::lake::Lake) -> Result<BTreeSet<String>> {
    let snapshot = lake.snapshot()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let batches = rt.block_on(async {
        let ctx = vigie::lake::sql::session(
            &snapshot,
            &vigie::catalog::tables(),
            vigie::lake::sql::Limits::default(),
        )
        .await?;
        ctx.sql("SELECT DISTINCT account FROM flags")
            .await?
            .collect()
            .await
    })?;
    let mut out = BTreeSet::new();
    for b in &batches {
        let c = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Utf8)?;
        let c = c.as_string::<i32>();
        out.extend(
            (0..c.len())
                .filter(|&i| !c.is_null(i))
                .map(|i| c.value(i).to_string()),
        );
    }
    Ok(out)
}

impl AnalyseArgs {
    /// Runs `vigie analyse`.
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        if !(0.0..=1.0).contains(&self.sample) {
            anyhow::bail!("--sample must be in [0, 1], got {}", self.sample);
        }
        let lake = super::open_existing(&self.lake)?;
        let focus = flagged(&lake).context("reading the flagged accounts")?;
        let opts = vigie::analysis::AnalyseOptions {
            nodes: self.nodes,
            shallow_depth: self.shallow_depth,
            sample: self.sample,
            threads: self.threads,
            max_games: self.max_games,
            ..Default::default()
        };
        let bar = if ctx.progress {
            indicatif::ProgressBar::new(0)
        } else {
            indicatif::ProgressBar::hidden()
        };
        let report = vigie::analysis::run(&lake, &opts, &focus, &|done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
        .context("analysing games")?;
        bar.finish_and_clear();
        super::print_report(self.report_json, &report, &report.summary_line())?;
        Ok(ExitCode::SUCCESS)
    }
}
