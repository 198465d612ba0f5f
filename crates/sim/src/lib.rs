//! Platform simulator: a fleet of game servers writing their move logs (draughts, Ludo, Belote), with player behaviours, injected server faults and malformed lines, plus the ground truth in `labels.json`.
//!
//! [`simulate`] plans games day by day ([`plan`]), simulates each one through
//! the rules engines ([`draughts`], [`ludo`], [`belote`]) on worker threads,
//! and merges their lines by time into one file per server per day
//! ([`output`]). Everything random comes from the seed: the same options
//! give the same bytes, whatever the number of threads.
//!
//! ```no_run
//! use vigie_sim::{SimError, SimOptions, simulate};
//!
//! fn main() -> Result<(), SimError> {
//!     let report = simulate(&SimOptions::sample(), std::path::Path::new("data/sample"), &|_| {})?;
//!     println!("{} games, {} events", report.games, report.events);
//!     Ok(())
//! }
//! ```

pub mod belote;
pub mod draughts;
pub mod labels;
pub mod ludo;
pub mod output;
pub mod plan;
pub mod population;
pub mod record;
pub mod rng;
pub mod timing;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use serde::Serialize;

use labels::{ArrangedGame, FaultEntry, Labels, Summary};
use output::Output;
use plan::{Arranged, DAY_MS, GameKind, GameSpec, Planner, stream};
use population::{Behaviour, BehaviourCounts, Population, Style};
use record::GameOutput;
use rng::Rng;

/// What to simulate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimOptions {
    /// Seed of every random choice (default 1).
    pub seed: u64,
    /// Seed of the accounts only (default: `seed`). The seed of an earlier run continues its
    /// population (the same accounts, behaviours, ips and devices) in a later window, with games,
    /// game ids and platform seeds of this run's own `seed`: the platform's next days.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub population_seed: Option<u64>,
    /// First day of the window, `YYYY-MM-DD` (default `2026-11-20`).
    pub start: String,
    /// Days simulated (default 3).
    pub days: u32,
    /// Games started per day, all servers together (default 2000).
    pub games_per_day: u32,
    /// Accounts (default 1000).
    pub accounts: u32,
    /// Game servers, one log file each per day (default 4).
    pub servers: u32,
    /// Malformed lines spread into the files (default 0).
    pub malformed: u32,
    /// Fraction of randomly matched games that get one injected server fault (default 0.01).
    pub fault_rate: f64,
    /// Accounts per individual behaviour as a fraction of all accounts (at least 2 each when > 0; default 0.005).
    pub behaviour_rate: f64,
    /// Gzip level of the past days' files, 0-9 (default 1).
    pub gzip_level: u32,
    /// Opens the run with scripted games that reach every event type and outcome (the sample preset).
    pub coverage: bool,
    /// A biased platform RNG: the share of Ludo rolls that the server logs and plays as a six
    /// whatever the derivation gives (each such roll is labelled `wrong_die`). 0 (the default) is
    /// fair; 0.01 makes six come up 17.5 % of the time instead of 16.7 % (1/6 + 5/6 × 0.01).
    pub six_bias: f64,
    /// How subtle the cheaters are: 0 (the default) blatant, 1 subtle ([`population::Style`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub subtlety: f64,
    /// Share of the honest accounts that look like cheaters (default 0; [`population::Lookalike`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub lookalikes: f64,
    /// Engine-assisted accounts (default 0; their uses cycle through [`population::EngineUse::PATTERNS`]).
    #[serde(skip_serializing_if = "is_zero_count")]
    pub engine_users: u32,
    /// Very strong honest draughts players (default 0; [`population::Lookalike::VeryStrong`]).
    #[serde(skip_serializing_if = "is_zero_count")]
    pub strong_players: u32,
    /// Worker threads (0: one per core). Never changes the output.
    #[serde(skip)]
    pub threads: u32,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 1,
            population_seed: None,
            start: "2026-11-20".to_string(),
            days: 3,
            games_per_day: 2000,
            accounts: 1000,
            servers: 4,
            malformed: 0,
            fault_rate: 0.01,
            behaviour_rate: 0.005,
            gzip_level: 1,
            coverage: false,
            six_bias: 0.0,
            subtlety: 0.0,
            lookalikes: 0.0,
            engine_users: 0,
            strong_players: 0,
            threads: 0,
        }
    }
}

impl SimOptions {
    /// The sample preset: a day of tens of games on two servers that exercises
    /// every event type of every game and mode, with a few behaviours and faults.
    pub fn sample() -> SimOptions {
        SimOptions {
            seed: 20_261_128,
            population_seed: None,
            start: "2026-11-20".to_string(),
            days: 2,
            games_per_day: 40,
            accounts: 48,
            servers: 2,
            malformed: 0,
            fault_rate: 0.05,
            behaviour_rate: 0.04,
            gzip_level: 6,
            coverage: true,
            six_bias: 0.0,
            subtlety: 0.0,
            lookalikes: 0.0,
            engine_users: 0,
            strong_players: 0,
            threads: 0,
        }
    }

    /// The style of the population: how subtle its cheaters are, how many honest look-alikes.
    pub fn style(&self) -> Style {
        Style {
            subtlety: self.subtlety,
            lookalikes: self.lookalikes,
            engine_users: self.engine_users as usize,
            strong_players: self.strong_players as usize,
        }
    }

    /// Epoch milliseconds of the window's start.
    pub fn window_start(&self) -> Result<i64, SimError> {
        vigie_log::syntax::parse_ts(&format!("{}T00:00:00.000Z", self.start)).map_err(|why| {
            SimError::Options(format!(
                "start {:?} is not a YYYY-MM-DD date: {why}",
                self.start
            ))
        })
    }

    /// Checks the options.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Options(m));
        self.window_start()?;
        if !(1..=3650).contains(&self.days) {
            return bad(format!("days must be 1-3650, got {}", self.days));
        }
        if !(1..=10_000_000).contains(&self.games_per_day) {
            return bad(format!(
                "games per day must be 1-10000000, got {}",
                self.games_per_day
            ));
        }
        if !(1..=99).contains(&self.servers) {
            return bad(format!("servers must be 1-99, got {}", self.servers));
        }
        if !(0.0..=1.0).contains(&self.fault_rate) {
            return bad(format!(
                "fault rate must be in [0, 1], got {}",
                self.fault_rate
            ));
        }
        if !(0.0..=0.1).contains(&self.behaviour_rate) {
            return bad(format!(
                "behaviour rate must be in [0, 0.1], got {}",
                self.behaviour_rate
            ));
        }
        if !(0.0..=1.0).contains(&self.six_bias) {
            return bad(format!("six bias must be in [0, 1], got {}", self.six_bias));
        }
        if !(0.0..=1.0).contains(&self.subtlety) {
            return bad(format!("subtlety must be in [0, 1], got {}", self.subtlety));
        }
        if !(0.0..=0.5).contains(&self.lookalikes) {
            return bad(format!(
                "look-alike share must be in [0, 0.5], got {}",
                self.lookalikes
            ));
        }
        if self.gzip_level > 9 {
            return bad(format!("gzip level must be 0-9, got {}", self.gzip_level));
        }
        if self.accounts > 5_000_000 {
            return bad(format!("at most 5000000 accounts, got {}", self.accounts));
        }
        let need = BehaviourCounts::for_population(self.accounts as usize, self.behaviour_rate)
            .accounts_needed()
            + self.engine_users as usize
            + self.strong_players as usize;
        if (self.accounts as usize) < need {
            return bad(format!(
                "{} accounts are too few for the behaviours: at least {need}",
                self.accounts
            ));
        }
        if self.malformed > 10_000_000 {
            return bad(format!(
                "at most 10000000 malformed lines, got {}",
                self.malformed
            ));
        }
        Ok(())
    }
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct SimReport {
    /// Games written.
    pub games: u64,
    /// Games simulated but dropped because they would end after the window.
    pub dropped_games: u64,
    /// Event lines written.
    pub events: u64,
    /// Malformed lines written.
    pub malformed: u64,
    /// Injected faults labelled.
    pub faults: u64,
    /// Log files written, relative to the output directory, sorted.
    pub files: Vec<PathBuf>,
    /// `labels.json`.
    pub labels: PathBuf,
    /// Games per kind (`draughts10`, `medieval`, `ludo_quick`, ...).
    pub by_kind: BTreeMap<String, u64>,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("invalid options: {0}")]
    Options(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing labels: {0}")]
    Json(#[from] serde_json::Error),
    #[error("game {game}: the rules engine refused the simulation: {detail}")]
    Engine { game: String, detail: String },
    #[error("internal error: {0}")]
    Internal(String),
}

/// Simulates one planned game.
pub fn simulate_game(spec: &GameSpec, pop: &Population) -> Result<GameOutput, SimError> {
    match spec.kind {
        GameKind::Draughts10 | GameKind::Draughts8 | GameKind::Medieval => {
            draughts::simulate(spec, pop)
        }
        GameKind::Ludo(preset) => ludo::simulate(spec, pop, preset),
        GameKind::Belote => belote::simulate(spec, pop),
    }
}

/// Plays honest games (no behaviours, no server faults) of the planned mix in start order,
/// each through the real rules engines and fairness derivations, and hands every game whose
/// kind `keep` accepts to `each` until it returns false. No file is written: this is the
/// source of the randomness calibration (`vigie report calibrate`), where what matters is
/// that games stop on their own outcomes exactly as simulated games do.
pub fn honest_games(
    seed: u64,
    keep: impl Fn(GameKind) -> bool,
    mut each: impl FnMut(&GameSpec, GameOutput) -> bool,
) -> Result<(), SimError> {
    let opts = SimOptions {
        seed,
        days: 3650,
        games_per_day: 20_000,
        accounts: 2_000,
        fault_rate: 0.0,
        behaviour_rate: 0.0,
        ..SimOptions::default()
    };
    opts.validate()?;
    let counts = BehaviourCounts::for_population(opts.accounts as usize, 0.0);
    let mut prng = Rng::derive(opts.seed, stream::POPULATION, 0);
    let pop = Population::generate(&mut prng, opts.accounts as usize, counts, Style::default());
    for spec in Planner::new(&opts, &pop, opts.window_start()?) {
        if !keep(spec.kind) {
            continue;
        }
        let game = simulate_game(&spec, &pop)?;
        if !each(&spec, game) {
            break;
        }
    }
    Ok(())
}

/// Capacity of each channel between the planner, the workers and the writer.
const CHANNEL: usize = 64;

struct Tally {
    summary: Summary,
    faults: Vec<FaultEntry>,
    arranged: Vec<ArrangedGame>,
    group_games: Vec<u64>,
}

impl Tally {
    fn add(&mut self, spec_info: &SpecInfo, out: &GameOutput) {
        let s = &mut self.summary;
        s.games += 1;
        *s.games_by_kind
            .entry(out.kind.name().to_string())
            .or_insert(0) += 1;
        if let Some(r) = out.stats.end_reason {
            *s.end_reasons
                .entry(out.kind.name().to_string())
                .or_default()
                .entry(r.as_str().to_string())
                .or_insert(0) += 1;
        }
        for (t, n) in &out.stats.types {
            *s.event_types.entry((*t).to_string()).or_insert(0) += n;
        }
        for (r, n) in &out.stats.rejected {
            *s.rejected_attempts.entry((*r).to_string()).or_insert(0) += n;
        }
        if !out.faults.is_empty() {
            s.faulty_games += 1;
        }
        for f in &out.faults {
            *s.faults_by_code
                .entry(f.code.as_str().to_string())
                .or_insert(0) += 1;
            self.faults.push(FaultEntry {
                game: out.id.clone(),
                seq: f.seq,
                code: f.code,
                event: f.event_type.as_str().to_string(),
                kind: out.kind.name().to_string(),
                server: format!("srv-{:02}", out.server + 1),
                detail: f.detail.clone(),
            });
        }
        if spec_info.arranged != Arranged::Random {
            *s.arranged_games
                .entry(spec_info.arranged.as_str().to_string())
                .or_insert(0) += 1;
            if let Some(c) = spec_info.group.and_then(|g| self.group_games.get_mut(g)) {
                *c += 1;
            }
            self.arranged.push(ArrangedGame {
                game: out.id.clone(),
                arranged: spec_info.arranged,
                accounts: spec_info.accounts.clone(),
                loser: spec_info.loser.clone(),
            });
        }
    }
}

/// What the writer needs to know of a spec besides the game output.
struct SpecInfo {
    arranged: Arranged,
    accounts: Vec<String>,
    loser: Option<String>,
    group: Option<usize>,
}

fn spec_info(spec: &GameSpec, pop: &Population) -> SpecInfo {
    let accounts: Vec<String> = spec
        .players
        .iter()
        .map(|p| pop.accounts[p.account].id.clone())
        .collect();
    let loser = spec
        .scenario
        .loser
        .and_then(|(seat, _, _)| accounts.get(seat).cloned());
    let group = match spec.scenario.arranged {
        Arranged::ChipDumping
        | Arranged::WinTrading
        | Arranged::SharedDevice
        | Arranged::HonestGroup => spec
            .players
            .first()
            .and_then(|p| pop.accounts[p.account].group),
        _ => None,
    };
    SpecInfo {
        arranged: spec.scenario.arranged,
        accounts,
        loser,
        group,
    }
}

type WorkerResult = Result<(SpecInfo, GameOutput), SimError>;

/// Runs the simulation into `out` (created if needed). `progress` receives the
/// number of event lines written so far, now and then and at the end.
pub fn simulate(
    opts: &SimOptions,
    out: &Path,
    progress: &dyn Fn(u64),
) -> Result<SimReport, SimError> {
    opts.validate()?;
    let window_start = opts.window_start()?;
    let window_end = window_start + i64::from(opts.days) * DAY_MS;
    std::fs::create_dir_all(out).map_err(|source| SimError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let counts = BehaviourCounts::for_population(opts.accounts as usize, opts.behaviour_rate);
    let mut prng = Rng::derive(
        opts.population_seed.unwrap_or(opts.seed),
        stream::POPULATION,
        0,
    );
    let pop = Population::generate(&mut prng, opts.accounts as usize, counts, opts.style());
    let mut output = Output::new(
        out,
        window_start,
        opts.days,
        opts.servers,
        opts.gzip_level,
        opts.malformed,
        Rng::derive(opts.seed, stream::MALFORMED, 0),
    )?;
    let workers = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n as usize,
    }
    .clamp(1, 64);
    let mut tally = Tally {
        summary: Summary::default(),
        faults: Vec::new(),
        arranged: Vec::new(),
        group_games: vec![0; pop.groups.len()],
    };
    let pop_ref = &pop;
    std::thread::scope(|scope| -> Result<(), SimError> {
        let mut spec_txs: Vec<SyncSender<GameSpec>> = Vec::with_capacity(workers);
        let mut result_rxs: Vec<Receiver<WorkerResult>> = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (spec_tx, spec_rx) = sync_channel::<GameSpec>(CHANNEL);
            let (res_tx, res_rx) = sync_channel::<WorkerResult>(CHANNEL);
            spec_txs.push(spec_tx);
            result_rxs.push(res_rx);
            scope.spawn(move || {
                for spec in spec_rx {
                    let info = spec_info(&spec, pop_ref);
                    let r = simulate_game(&spec, pop_ref).map(|o| (info, o));
                    let failed = r.is_err();
                    if res_tx.send(r).is_err() || failed {
                        break;
                    }
                }
            });
        }
        scope.spawn(move || {
            let planner = Planner::new(opts, pop_ref, window_start);
            for (i, spec) in planner.enumerate() {
                if spec_txs[i % spec_txs.len()].send(spec).is_err() {
                    break;
                }
            }
        });
        let mut last_progress = 0u64;
        for i in 0usize.. {
            let Ok(result) = result_rxs[i % workers].recv() else {
                break;
            };
            let (info, game) = result?;
            output.flush_until(game.start_ms)?;
            if game.end_ms >= window_end {
                tally.summary.dropped_games += 1;
                continue;
            }
            tally.add(&info, &game);
            output.push_game(game);
            if output.events >= last_progress + 20_000 {
                last_progress = output.events;
                progress(output.events);
            }
        }
        Ok(())
    })?;
    output.finish()?;
    progress(output.events);

    let (accounts, groups) = labels::population_labels(&pop, &tally.group_games);
    let mut summary = tally.summary;
    summary.events = output.events;
    summary.malformed_lines = output.malformed_labels.len() as u64;
    summary.files = output.files.len() as u64;
    summary.accounts = pop.accounts.len() as u64;
    for b in Behaviour::ALL {
        summary
            .behaviours
            .insert(b.as_str().to_string(), pop.count(b) as u64);
    }
    for l in population::Lookalike::ALL
        .into_iter()
        .chain([population::Lookalike::VeryStrong])
    {
        let n = pop
            .accounts
            .iter()
            .filter(|a| a.lookalike == Some(l))
            .count() as u64;
        if n > 0 {
            summary.lookalikes.insert(l.as_str().to_string(), n);
        }
    }
    let last_day = vigie_log::syntax::date_of(window_end - 1);
    let faults_count = tally.faults.len() as u64;
    let by_kind = summary.games_by_kind.clone();
    let labels = Labels {
        schema: labels::SCHEMA,
        seed: opts.seed,
        options: opts,
        window: (opts.start.clone(), last_day),
        summary,
        accounts,
        groups,
        faults: tally.faults,
        arranged: tally.arranged,
        malformed: std::mem::take(&mut output.malformed_labels),
        files: output.files.clone(),
    };
    let labels_path = out.join("labels.json");
    let io = |source| SimError::Io {
        path: labels_path.clone(),
        source,
    };
    let f = std::fs::File::create(&labels_path).map_err(io)?;
    let mut w = std::io::BufWriter::new(f);
    serde_json::to_writer_pretty(&mut w, &labels)?;
    w.write_all(b"\n").map_err(io)?;
    w.flush().map_err(io)?;
    let readme_path = out.join("README");
    std::fs::write(&readme_path, labels::readme(&labels)).map_err(|source| SimError::Io {
        path: readme_path.clone(),
        source,
    })?;
    Ok(SimReport {
        games: labels.summary.games,
        dropped_games: labels.summary.dropped_games,
        events: labels.summary.events,
        malformed: labels.summary.malformed_lines,
        faults: faults_count,
        files: labels
            .files
            .iter()
            .map(|f| PathBuf::from(&f.path))
            .collect(),
        labels: labels_path,
        by_kind,
    })
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_count(x: &u32) -> bool {
    *x == 0
}
