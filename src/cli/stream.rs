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
    /// Least seconds between the starts of two detection runs (0: as soon as a replay lands).
    #[arg(long, default_value_t = 0.0)]
    detect_interval: f64,
    /// Directory of detection rule files (default: the rules built into the binary).
    #[arg(long, value_name = "DIR")]
    rules: Option<PathBuf>,
    /// Catch up with the directory, then exit.
    #[arg(long)]
    once: bool,
    /// Hours the vacuum (at least hourly) keeps the files that commits removed (time travel needs them).
    #[arg(long, default_value_t = 168)]
    vacuum_retain: u64,
    /// Minutes the vacuum keeps the removed files of the tables every detection pass rewrites whole
    /// (account_features, pair_features, flags; vacuumed every fifth of it): their versions can
    /// be read back that far (a reader holding a version, such as a pg connection, keeps its
    /// files). At a pass a second they are about 5 MB a pass on a month of 20,000 accounts.
    #[arg(long, default_value_t = 5)]
    vacuum_retain_rewrites: u64,
    /// Hours the logs keep their commits (Vigie's and each table's Delta log; cleaned after each
    /// vacuum down to a checkpoint): time travel reads versions that recent.
    #[arg(long, default_value_t = 168)]
    vacuum_log_retain: u64,
    /// Share of one core the engine analysis of draughts games takes at most in the background
    /// while following (flagged accounts' games first, then a sample; as `vigie analyse`; it waits
    /// while a pass runs); 0 turns it off. Not with `--once`.
    #[arg(long, default_value_t = 0.25)]
    analyse_share: f64,
    /// Nodes the engine searches per position in the background analysis.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1_000..=100_000_000))]
    analyse_nodes: u64,
    /// Share of the other eligible games the background analysis takes.
    #[arg(long, default_value_t = 0.05)]
    analyse_sample: f64,
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
            vacuum_retain_rewrites,
            vacuum_log_retain,
            analyse_share,
            analyse_nodes,
            analyse_sample,
            report_json,
        } = self;
        if !(0.0..=1.0).contains(&analyse_share) || !(0.0..=1.0).contains(&analyse_sample) {
            anyhow::bail!(
                "--analyse-share and --analyse-sample must be in [0, 1], got {analyse_share} and {analyse_sample}"
            );
        }
        let lake = super::open(&lake)?;
        let mut opts = vigie::stream::StreamOptions::new(
            follow,
            vigie::detect::rules::RuleSource::from_arg(rules),
        );
        opts.commit_interval = seconds("commit-interval", commit_interval, 0.01)?;
        opts.detect_interval = seconds("detect-interval", detect_interval, 0.0)?;
        opts.once = once;
        (opts.vacuum_retain, opts.rewrites_retain) =
            retention(vacuum_retain, vacuum_retain_rewrites);
        opts.log_retain = hours(vacuum_log_retain);
        opts.analysis = (analyse_share > 0.0).then(|| {
            vigie::stream::StreamAnalysis::new(analyse_share, analyse_nodes, analyse_sample)
        });
        let report = super::pipeline::stream(&lake, &opts)?;
        if report_json {
            println!("{}", serde_json::to_string(&report)?);
        }
        eprintln!("{}", report.summary_line());
        Ok(ExitCode::SUCCESS)
    }
}

/// The option `--NAME SECONDS` as a duration of at least `least` seconds (a value below, and
/// NaN, count as `least`); an error, never a panic, for one no duration holds (`inf`, `1e30`).
pub(super) fn seconds(name: &str, value: f64, least: f64) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(value.max(least))
        .map_err(|_| anyhow::anyhow!("--{name} {value}: not a number of seconds a duration holds"))
}

/// `--vacuum-retain HOURS` and `--vacuum-retain-rewrites MINUTES` (of `stream`, and of `serve`
/// beside its push endpoint) as durations.
pub(super) fn retention(hours: u64, minutes: u64) -> (std::time::Duration, std::time::Duration) {
    (
        self::hours(hours),
        std::time::Duration::from_secs(minutes.saturating_mul(60)),
    )
}

/// An option in hours as a duration.
pub(super) fn hours(hours: u64) -> std::time::Duration {
    std::time::Duration::from_secs(hours.saturating_mul(3600))
}
