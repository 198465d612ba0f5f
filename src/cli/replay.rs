//! `vigie replay`: replays new or changed games of the lake through the rules engines into findings, games, moves and departures (with `--rejudge`, the games of a period again).

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
    /// Judge again, with the current rules engines, every game that started from `--from` to
    /// `--to`: their derived rows are replaced in one commit, detection re-runs with their
    /// players' features recomputed, and decisions on flags that changed are reopened in the
    /// audit log.
    #[arg(long, requires = "from")]
    rejudge: bool,
    /// First day of the period to re-judge (YYYY-MM-DD, UTC).
    #[arg(long, value_parser = day, requires = "rejudge")]
    from: Option<String>,
    /// Last day of the period (default: the `--from` day).
    #[arg(long, value_parser = day, requires = "rejudge")]
    to: Option<String>,
    /// Directory of detection rule files, with `--rejudge` (default: the rules built into the
    /// binary).
    #[arg(long, value_name = "DIR", requires = "rejudge")]
    rules: Option<PathBuf>,
}

/// A `YYYY-MM-DD` day.
fn day(s: &str) -> Result<String, String> {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(|d| d.format("%Y-%m-%d").to_string())
        .map_err(|e| format!("{s:?} is not a YYYY-MM-DD day: {e}"))
}

impl ReplayArgs {
    /// Runs `vigie replay`.
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake: lake_dir,
            threads,
            report_json,
            rejudge,
            from,
            to,
            rules,
        } = self;
        let lake = super::open_existing(&lake_dir)?;
        let mut opts = ReplayOptions {
            progress: ctx.progress,
            ..Default::default()
        };
        if let Some(t) = threads {
            opts.threads = t.max(1);
        }
        if let (true, Some(from)) = (rejudge, from) {
            let to = to.unwrap_or_else(|| from.clone());
            if to < from {
                anyhow::bail!("--to {to} is before --from {from}");
            }
            let period = replay::run::Period { from, to };
            let report = vigie::rejudge::run(
                &lake,
                &opts,
                &period,
                &vigie::detect::rules::RuleSource::from_arg(rules),
                vigie::lake::now_ms(),
            )
            .with_context(|| format!("re-judging {}", lake_dir.display()))?;
            super::print_report(report_json, &report, &report.summary_line())?;
            return Ok(ExitCode::SUCCESS);
        }
        let report = replay::run::run(&lake, &opts)
            .with_context(|| format!("replaying {}", lake_dir.display()))?;
        super::print_report(report_json, &report, &report.summary_line())?;
        Ok(ExitCode::SUCCESS)
    }
}
