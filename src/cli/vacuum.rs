//! `vigie vacuum`: deletes the files that commits removed longer ago than the retention, and the logs' commits older than the log retention.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::Ctx;

/// Arguments of `vigie vacuum`.
#[derive(Debug, clap::Args)]
pub struct VacuumArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Keep removed files this many hours (Delta's default: 168).
    #[arg(long, default_value_t = 168)]
    retain: u64,
    /// Keep the logs' commits this many hours (Vigie's log and each table's Delta log, cleaned
    /// down to a checkpoint; Delta's `logRetentionDuration`): time travel reads versions that
    /// recent.
    #[arg(long, default_value_t = 168)]
    log_retain: u64,
}

impl VacuumArgs {
    /// Runs `vigie vacuum`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake,
            retain,
            log_retain,
        } = self;
        let lake = super::open_existing(&lake)?;
        let retain_ms = i64::try_from(retain.saturating_mul(3_600_000)).unwrap_or(i64::MAX);
        let mut w = lake.writer().context("starting a writer")?;
        let r = w.vacuum(retain_ms).context("vacuuming")?;
        let log_ms = i64::try_from(log_retain.saturating_mul(3_600_000)).unwrap_or(i64::MAX);
        let c = w.clean_logs(log_ms).context("cleaning the logs")?;
        println!(
            "vacuum: {} files ({} bytes) removed more than {retain} h ago deleted{}; {} log files older than {log_retain} h deleted ({} of Vigie's log, {} of the Delta logs){}",
            r.files,
            r.bytes,
            r.version
                .map(|v| format!(", commit {v}"))
                .unwrap_or_default(),
            c.vigie_files + c.delta_files,
            c.vigie_files,
            c.delta_files,
            c.oldest_vigie
                .map(|v| format!(", versions from {v} readable"))
                .unwrap_or_default()
        );
        Ok(ExitCode::SUCCESS)
    }
}
