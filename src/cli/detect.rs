//! `vigie detect`: account and pair features, then the detection rules into flags (and `--bench-scope`, its timing of scoped runs).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use vigie::detect::rules::RuleSource;
use vigie::lake::Lake;

use super::Ctx;

/// Arguments of `vigie detect`.
#[derive(Debug, clap::Args)]
pub struct DetectArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Directory of rule files (default: the rules built into the binary).
    #[arg(long, value_name = "DIR")]
    rules: Option<PathBuf>,
    /// Print the run report as JSON on stdout.
    #[arg(long)]
    report_json: bool,
    /// Benchmark a streaming pass: recompute the features of this many accounts (the next
    /// ones each run) and run every rule, `--repeat` times, then print the times.
    #[arg(long, value_name = "ACCOUNTS")]
    bench_scope: Option<usize>,
    /// Runs of `--bench-scope`.
    #[arg(long, default_value_t = 10)]
    repeat: usize,
}

impl DetectArgs {
    /// Runs `vigie detect`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake,
            rules,
            report_json,
            bench_scope,
            repeat,
        } = self;
        let lake = super::open_existing(&lake)?;
        let rules = RuleSource::from_arg(rules);
        if let Some(n) = bench_scope {
            return bench_detect(&lake, &rules, n, repeat.max(1));
        }
        let report =
            vigie::detect::run(&lake, &rules, &Default::default()).context("running detection")?;
        super::print_report(report_json, &report, &report.summary_line())?;
        Ok(ExitCode::SUCCESS)
    }
}

/// `vigie detect --bench-scope N`: times scoped detection runs as the streaming job makes them.
fn bench_detect(lake: &Lake, rules: &RuleSource, n: usize, repeat: usize) -> Result<ExitCode> {
    vigie::detect::run(lake, rules, &Default::default()).context("running detection")?;
    let accounts = vigie::features::feature_accounts(lake).context("reading accounts")?;
    if accounts.is_empty() || n == 0 {
        anyhow::bail!("no account to scope (is the lake replayed?)");
    }
    let mut times = Vec::new();
    for k in 0..repeat {
        let scope: std::collections::BTreeSet<String> = (0..n)
            .map(|i| accounts[(k * n + i) % accounts.len()].clone())
            .collect();
        let r = vigie::detect::run_scoped(lake, rules, &Default::default(), Some(&scope), true)
            .context("running detection")?;
        tracing::info!(
            run = k,
            ms = r.elapsed_ms,
            flags = r.flags,
            "scoped detection"
        );
        times.push(r.elapsed_ms);
    }
    times.sort_unstable();
    println!(
        "detect bench: {repeat} runs scoped to {n} of {} accounts: median {} ms, min {} ms, max {} ms",
        accounts.len(),
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
    Ok(ExitCode::SUCCESS)
}
