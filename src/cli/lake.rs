//! `vigie lake`: lake maintenance; `check` reads every table's Delta log against Vigie's log, `sync` rolls them forward.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;

use super::Ctx;

/// Arguments of `vigie lake`: its subcommand.
#[derive(Debug, clap::Args)]
pub struct LakeArgs {
    #[command(subcommand)]
    cmd: LakeCmd,
}

#[derive(Debug, Subcommand)]
enum LakeCmd {
    /// Replays every Delta version of every table and compares it with Vigie's log and the files
    /// on disk; exits 1 when anything is wrong.
    Check {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Finishes what a killed or failed writer left, as the next writing command would: its
    /// files no commit names are deleted, and every table's Delta log is rolled forward to the
    /// latest Vigie commit, so that Delta readers (DuckDB, polars, Spark) see what Vigie does.
    Sync {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

impl LakeArgs {
    /// Runs `vigie lake ...`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        match self.cmd {
            LakeCmd::Check { lake, json } => check(&lake, json),
            LakeCmd::Sync { lake, json } => sync(&lake, json),
        }
    }
}

/// `vigie lake sync`: a writer's recovery, and what it wrote to the Delta logs.
fn sync(lake: &Path, json: bool) -> Result<ExitCode> {
    let lake = super::open_existing(lake)?;
    let (_writer, report) = lake
        .recovering_writer()
        .context("rolling the Delta logs forward")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "lake sync: every Delta log follows the latest Vigie commit; {} Delta commits and {} checkpoints written, {} logs created, {} schemas evolved",
            report.commits,
            report.checkpoints,
            report.created.len(),
            report.evolved.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `vigie lake check`: exit 0 when every table is consistent, 1 otherwise.
fn check(lake: &Path, json: bool) -> Result<ExitCode> {
    let lake = super::open_existing(lake)?;
    let checks = lake.check_delta().context("checking the Delta logs")?;
    let problems: usize = checks.iter().map(|c| c.problems.len()).sum();
    if json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            println!(
                "{:<16} delta {:>6} vigie {:>6} files {:>7} behind {:>3} {}",
                c.table,
                c.delta_version
                    .map_or_else(|| "-".into(), |v| v.to_string()),
                c.vigie_version
                    .map_or_else(|| "-".into(), |v| v.to_string()),
                c.files,
                c.behind,
                if c.problems.is_empty() {
                    "ok"
                } else {
                    "PROBLEMS"
                }
            );
            for p in &c.problems {
                println!("  {p}");
            }
        }
        let behind = checks.iter().filter(|c| c.behind > 0).count();
        if behind > 0 {
            // A writer killed or failed between its commit and its Delta commits (or one at work
            // now): Delta readers see an older version until the next writer or `vigie lake sync`.
            println!(
                "lake check: {} tables, {problems} problems, {behind} behind Vigie's log (Delta readers see an older version: run `vigie lake sync`, unless a writer is at work)",
                checks.len()
            );
        } else {
            println!("lake check: {} tables, {problems} problems", checks.len());
        }
    }
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
