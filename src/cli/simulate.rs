//! `vigie simulate`: simulated server logs with known cheaters and server faults, and their ground truth.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::Ctx;

/// Arguments of `vigie simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seed of the accounts (default: --seed). Give an earlier run's seed, and a --start after its
    /// window, to simulate the next days of the same platform: the same accounts and behaviours,
    /// new games.
    #[arg(long)]
    population_seed: Option<u64>,
    #[arg(long, default_value_t = 3)]
    days: u32,
    #[arg(long, default_value_t = 2000)]
    games_per_day: u32,
    #[arg(long, default_value_t = 1000)]
    accounts: u32,
    /// Malformed lines to splice into the files (labelled).
    #[arg(long, default_value_t = 0)]
    malformed: u32,
    /// First simulated day (YYYY-MM-DD).
    #[arg(long)]
    start: Option<String>,
    /// Game servers (one file per server per day).
    #[arg(long)]
    servers: Option<u32>,
    /// Fraction of randomly matched games with one server fault.
    #[arg(long)]
    fault_rate: Option<f64>,
    /// Accounts per individual behaviour, as a fraction of all accounts.
    #[arg(long)]
    behaviour_rate: Option<f64>,
    /// The small preset that exercises every event type (used for data/sample).
    #[arg(long)]
    sample: bool,
    /// A biased platform RNG, to check the audit report: this share of Ludo rolls is logged and
    /// played as a six whatever the derivation gives (0.01: six at 17.5 % instead of 16.7 %).
    #[arg(long, default_value_t = 0.0)]
    six_bias: f64,
    /// How subtle the cheaters are, from 0 (blatant, the default) to 1: tampered clients that try
    /// an illegal move on 1-4 % of their turns, rage-quitters, sitters and stallers acting in a fifth
    /// of their losing games, bots with human-looking pauses, chip dumpers who resign after several
    /// moves at ordinary stakes, win traders who do not alternate, rings that rarely meet.
    #[arg(long, default_value_t = 0.0)]
    subtlety: f64,
    /// Share of the honest accounts that look like cheaters: quick and steady players, bad
    /// connections, households behind one ip, friends who play each other often (labelled).
    #[arg(long, default_value_t = 0.0)]
    lookalikes: f64,
    /// Engine-assisted accounts: they play a program's draughts move on all, half, a third, a
    /// fifth or a tenth of their moves, in half of their games, or only in critical positions
    /// (in turn; labelled with their use).
    #[arg(long, default_value_t = 0)]
    engine_users: u32,
    /// Very strong honest draughts players, who search a few plies and rarely err (labelled
    /// `very_strong` look-alikes).
    #[arg(long, default_value_t = 0)]
    strong_players: u32,
}

impl SimulateArgs {
    /// Runs `vigie simulate`.
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            out,
            seed,
            population_seed,
            days,
            games_per_day,
            accounts,
            malformed,
            start,
            servers,
            fault_rate,
            behaviour_rate,
            sample,
            six_bias,
            subtlety,
            lookalikes,
            engine_users,
            strong_players,
        } = self;
        let mut opts = if sample {
            vigie::sim::SimOptions::sample()
        } else {
            vigie::sim::SimOptions::default()
        };
        if !sample {
            opts.seed = seed;
            opts.population_seed = population_seed;
            opts.days = days;
            opts.games_per_day = games_per_day;
            opts.accounts = accounts;
        }
        opts.malformed = malformed;
        if let Some(s) = start {
            opts.start = s;
        }
        if let Some(v) = servers {
            opts.servers = v;
        }
        if let Some(v) = fault_rate {
            opts.fault_rate = v;
        }
        if let Some(v) = behaviour_rate {
            opts.behaviour_rate = v;
        }
        opts.six_bias = six_bias;
        opts.subtlety = subtlety;
        opts.lookalikes = lookalikes;
        opts.engine_users = engine_users;
        opts.strong_players = strong_players;
        super::pipeline::run_simulate(&out, &opts, ctx.progress)?;
        Ok(ExitCode::SUCCESS)
    }
}
