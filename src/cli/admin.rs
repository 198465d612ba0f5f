//! `vigie admin`: administration of the dashboard's staff accounts.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use super::Ctx;

#[derive(Debug, Subcommand)]
pub enum AdminCmd {
    /// Creates or replaces a staff account (argon2 hash in LAKE/_vigie/config/users.json).
    AddUser {
        /// Login name.
        name: String,
        /// reviewer, compliance, analyst or admin.
        #[arg(long)]
        role: String,
        /// The password (or read it from the VIGIE_PASSWORD environment variable).
        #[arg(long, env = "VIGIE_PASSWORD", hide_env_values = true)]
        password: String,
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
    },
}

impl AdminCmd {
    /// Runs `vigie admin ...`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        match self {
            AdminCmd::AddUser {
                name,
                role,
                password,
                lake,
            } => {
                super::pipeline::add_staff(&lake, &name, &role, &password)?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}
