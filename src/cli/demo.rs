//! `vigie demo`: the main job, a week of simulated traffic through the whole pipeline, then the dashboard.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::Ctx;

/// Arguments of `vigie demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Where generated data (the simulated logs) go.
    #[arg(long, default_value = "data/generated")]
    data: PathBuf,
    /// Dashboard address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: std::net::SocketAddr,
    /// Days of traffic.
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// Games per day.
    #[arg(long, default_value_t = 1500)]
    games_per_day: u32,
    /// Games the engine analysis judges at most (the flagged accounts' rated draughts games first).
    #[arg(long, default_value_t = 150)]
    analyse_games: usize,
    /// Stop after the pipeline instead of serving the dashboard.
    #[arg(long)]
    no_serve: bool,
}

impl DemoArgs {
    /// Runs `vigie demo`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake,
            data,
            addr,
            days,
            games_per_day,
            analyse_games,
            no_serve,
        } = self;
        let size = super::pipeline::DemoSize {
            days,
            games_per_day,
            analyse_games,
        };
        super::pipeline::demo(&lake, &data, addr, &size, !no_serve)?;
        Ok(ExitCode::SUCCESS)
    }
}
