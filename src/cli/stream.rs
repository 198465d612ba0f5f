//! `vigie stream`: follows a log directory live, commits micro-batches exactly once, replays and detects continuously.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::Ctx;

/// Arguments of `vigie stream`.
#[derive(Debug, clap::Args)]
pub struct StreamArgs {
    /// The directory the game servers write.
    #[arg(long)]
    follow: PathBuf,
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Seconds between two looks at the directory (and so between commits).
    #[arg(long, default_value_t = 1.0)]
    commit_interval: f64,
    /// Least seconds between the starts of two detection runs.
    #[arg(long, default_value_t = 1.0)]
    detect_interval: f64,
    /// Detection rules directory.
    #[arg(long, default_value = "queries/detect")]
    rules: PathBuf,
    /// Catch up with the directory, then exit.
    #[arg(long)]
    once: bool,
    /// Hours the hourly vacuum keeps the files that commits removed (time travel needs them).
    #[arg(long, default_value_t = 168)]
    vacuum_retain: u64,
    /// Print the run report as JSON on stdout.
    #[arg(long)]
    report_json: bool,
}

impl StreamArgs {
    /// Runs `vigie stream` until SIGTERM or Ctrl-C (or, with `--once`, until caught up).
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            follow,
            lake,
            commit_interval,
            detect_interval,
            rules,
            once,
            vacuum_retain,
            report_json,
        } = self;
        let lake = super::open(&lake)?;
        let mut opts = vigie::stream::StreamOptions::new(follow, rules);
        opts.commit_interval = std::time::Duration::from_secs_f64(commit_interval.max(0.01));
        opts.detect_interval = std::time::Duration::from_secs_f64(detect_interval.max(0.0));
        opts.once = once;
        opts.vacuum_retain = std::time::Duration::from_secs(vacuum_retain.saturating_mul(3600));
        let report = super::pipeline::stream(&lake, &opts)?;
        if report_json {
            println!("{}", serde_json::to_string(&report)?);
        }
        eprintln!("{}", report.summary_line());
        Ok(ExitCode::SUCCESS)
    }
}
