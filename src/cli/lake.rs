//! `vigie lake`: lake maintenance; `check` reads every table's Delta log against Vigie's log.

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
}

impl LakeArgs {
    /// Runs `vigie lake ...`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        match self.cmd {
            LakeCmd::Check { lake, json } => check(&lake, json),
        }
    }
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
        println!("lake check: {} tables, {problems} problems", checks.len());
    }
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
