//! CLI commands for people and checks: draughts move lists, perft and engine analysis, and recomputing
//! randomness by hand.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};

use vigie::fairness;
use vigie::games::belote::deck_from_indices;
use vigie::games::draughts::search::{Analysis, Engine, Limits};
use vigie::games::draughts::{Position, Variant, perft};

use super::Ctx;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VariantArg {
    International,
    Brazilian,
}

impl From<VariantArg> for Variant {
    fn from(v: VariantArg) -> Variant {
        match v {
            VariantArg::International => Variant::International,
            VariantArg::Brazilian => Variant::Brazilian,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Draughts {
    /// Lists the legal moves of a position, one full path per line (or JSON).
    Moves {
        #[arg(long, value_enum)]
        variant: VariantArg,
        /// Position in FEN, e.g. `W:W31-50:B1-20`.
        #[arg(long)]
        fen: String,
        /// An array of {"from", "to", "path", "captures"}.
        #[arg(long)]
        json: bool,
    },
    /// Counts the leaf positions at a depth; prints the count, then the time and leaves per second.
    Perft {
        #[arg(long, value_enum)]
        variant: VariantArg,
        #[arg(long)]
        fen: String,
        /// Plies to search (at most 30: the count doubles or more with every ply, and the search recurses once per ply).
        #[arg(long, value_parser = clap::value_parser!(u32).range(0..=MAX_PERFT_DEPTH as i64))]
        depth: u32,
    },
    /// Searches a position with the engine and prints its best moves with scores (hundredths of a
    /// man, for the side to move) and principal variations. Deterministic for a node budget.
    ///
    /// `--fen -` reads one FEN per line from stdin and answers each with one JSON line, keeping the
    /// engine's table between positions (for playing games).
    Analyse(AnalyseArgs),
}

/// `vigie draughts analyse`.
#[derive(Debug, clap::Args)]
pub struct AnalyseArgs {
    #[arg(long, value_enum)]
    variant: VariantArg,
    /// Position in FEN, or `-` for one per line on stdin.
    #[arg(long)]
    fen: String,
    /// Plies to search (the last completed iteration is reported).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=vigie::games::draughts::search::MAX_DEPTH as i64))]
    depth: Option<u32>,
    /// Nodes to search (deterministic). The default when no limit is given: 1,000,000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    nodes: Option<u64>,
    /// Milliseconds to search (not deterministic).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    movetime: Option<u64>,
    /// Number of best moves to report.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    multipv: u16,
    /// Transposition table size in MiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=4096))]
    hash: u16,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Node budget of `vigie draughts analyse` when no limit is given.
pub const DEFAULT_ANALYSE_NODES: u64 = 1_000_000;

#[derive(serde::Serialize)]
struct LineOut {
    #[serde(rename = "move")]
    mv: String,
    from: u8,
    to: u8,
    captures: Vec<u8>,
    /// Hundredths of a man for the side to move; wins and losses as +-(30,000 - plies).
    score: i32,
    score_text: String,
    pv: Vec<String>,
}

#[derive(serde::Serialize)]
struct AnalysisOut {
    fen: String,
    depth: u32,
    seldepth: u32,
    nodes: u64,
    ms: u64,
    lines: Vec<LineOut>,
}

impl AnalyseArgs {
    fn limits(&self) -> Limits {
        Limits {
            depth: self.depth,
            nodes: self
                .nodes
                .or((self.depth.is_none() && self.movetime.is_none())
                    .then_some(DEFAULT_ANALYSE_NODES)),
            deadline: self
                .movetime
                .map(|ms| Instant::now() + Duration::from_millis(ms)),
            full_width: false,
        }
    }

    fn analyse(&self, engine: &mut Engine, pos: &Position) -> AnalysisOut {
        let t0 = Instant::now();
        let a: Analysis = engine.analyse(pos, &self.limits(), usize::from(self.multipv));
        AnalysisOut {
            fen: pos.to_fen(),
            depth: a.depth,
            seldepth: a.seldepth,
            nodes: a.nodes,
            ms: t0.elapsed().as_millis() as u64,
            lines: a
                .lines
                .iter()
                .map(|l| LineOut {
                    mv: l.mv.to_full_string(),
                    from: l.mv.from().number(),
                    to: l.mv.to().number(),
                    captures: l.mv.captures().iter().map(|s| s.number()).collect(),
                    score: l.score.to_cp(),
                    score_text: l.score.to_string(),
                    pv: l.pv.iter().map(|m| m.to_full_string()).collect(),
                })
                .collect(),
        }
    }

    fn run(&self) -> Result<()> {
        let variant: Variant = self.variant.into();
        let mut engine = Engine::new(usize::from(self.hash));
        if self.fen != "-" {
            let pos = Position::from_fen(variant, &self.fen)
                .with_context(|| format!("parsing FEN {:?}", self.fen))?;
            let out = self.analyse(&mut engine, &pos);
            if self.json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                println!(
                    "depth {}, seldepth {}, {} nodes, {} ms",
                    out.depth, out.seldepth, out.nodes, out.ms
                );
                if out.lines.is_empty() {
                    println!("no legal move: the side to move has lost");
                }
                for (i, l) in out.lines.iter().enumerate() {
                    println!("{}. {} {}  {}", i + 1, l.mv, l.score_text, l.pv.join(" "));
                }
            }
            return Ok(());
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for line in std::io::stdin().lock().lines() {
            let line = line.context("reading stdin")?;
            let fen = line.trim();
            if fen.is_empty() {
                continue;
            }
            let reply = match Position::from_fen(variant, fen) {
                Ok(pos) => serde_json::to_string(&self.analyse(&mut engine, &pos))?,
                Err(e) => {
                    serde_json::to_string(&serde_json::json!({"fen": fen, "error": e.to_string()}))?
                }
            };
            writeln!(out, "{reply}").context("writing stdout")?;
            out.flush().context("writing stdout")?;
        }
        Ok(())
    }
}

/// Deepest perft the CLI runs.
pub const MAX_PERFT_DEPTH: u32 = 30;

/// Most dice or duels the CLI prints in one run.
pub const MAX_COUNT: u64 = 100_000_000;

impl Draughts {
    /// Runs `vigie draughts ...`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        draughts(self)?;
        Ok(ExitCode::SUCCESS)
    }
}

pub fn draughts(cmd: Draughts) -> Result<()> {
    match cmd {
        Draughts::Moves { variant, fen, json } => {
            let pos = Position::from_fen(variant.into(), &fen)
                .with_context(|| format!("parsing FEN {fen:?}"))?;
            let moves = pos.legal_moves();
            if json {
                #[derive(serde::Serialize)]
                struct Out {
                    from: u8,
                    to: u8,
                    path: Vec<u8>,
                    captures: Vec<u8>,
                }
                let list: Vec<Out> = moves
                    .iter()
                    .map(|m| Out {
                        from: m.from().number(),
                        to: m.to().number(),
                        path: m.path().iter().map(|s| s.number()).collect(),
                        captures: m.captures().iter().map(|s| s.number()).collect(),
                    })
                    .collect();
                println!("{}", serde_json::to_string(&list)?);
            } else {
                for m in &moves {
                    println!("{}", m.to_full_string());
                }
            }
        }
        Draughts::Perft {
            variant,
            fen,
            depth,
        } => {
            let pos = Position::from_fen(variant.into(), &fen)
                .with_context(|| format!("parsing FEN {fen:?}"))?;
            let t0 = Instant::now();
            let n = perft(&pos, depth);
            let secs = t0.elapsed().as_secs_f64();
            println!("{n}");
            println!("{:.3} s, {:.0} leaves/s", secs, n as f64 / secs.max(1e-9));
        }
        Draughts::Analyse(args) => args.run()?,
    }
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum Fairness {
    /// Prints the commitment of a seed: SHA-256 of its 64 hex characters.
    Commit {
        #[arg(long)]
        seed: String,
    },
    /// Prints the first N dice of a game, space-separated.
    Dice {
        #[arg(long)]
        seed: String,
        #[arg(long)]
        game: String,
        /// How many (at most 100,000,000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
        count: u64,
    },
    /// Prints the 32 cards of a Belote deal, top first, space-separated.
    Shuffle {
        #[arg(long)]
        seed: String,
        /// The match id.
        #[arg(long)]
        game: String,
        #[arg(long)]
        deal: u32,
    },
    /// Prints `won` or `lost` for Medieval duels 0..N-1 of a game.
    Duels {
        #[arg(long)]
        seed: String,
        #[arg(long)]
        game: String,
        /// How many (at most 100,000,000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
        count: u64,
    },
}

/// Writes `count` space-separated words to stdout as they are made (constant memory);
/// a reader that stops early (`| head`) ends the output quietly.
fn print_words(count: u64, word: impl Fn(u64) -> String) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = (|| -> std::io::Result<()> {
        for n in 0..count {
            if n > 0 {
                out.write_all(b" ")?;
            }
            out.write_all(word(n).as_bytes())?;
        }
        out.write_all(b"\n")?;
        out.flush()
    })();
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn checked_seed(seed: &str) -> Result<&str> {
    if let Err(e) = fairness::check_seed(seed) {
        bail!("invalid seed: {e}");
    }
    Ok(seed)
}

impl Fairness {
    /// Runs `vigie fairness ...`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        fairness(self)?;
        Ok(ExitCode::SUCCESS)
    }
}

pub fn fairness(cmd: Fairness) -> Result<()> {
    match cmd {
        Fairness::Commit { seed } => println!("{}", fairness::commitment(checked_seed(&seed)?)),
        Fairness::Dice { seed, game, count } => {
            let seed = checked_seed(&seed)?;
            print_words(count, |n| fairness::die(seed, &game, n).to_string())?;
        }
        Fairness::Shuffle { seed, game, deal } => {
            let seed = checked_seed(&seed)?;
            let deck =
                deck_from_indices(&fairness::shuffle(seed, &game, deal)).context("shuffle")?;
            println!(
                "{}",
                deck.iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        Fairness::Duels { seed, game, count } => {
            let seed = checked_seed(&seed)?;
            print_words(count, |m| {
                if fairness::duel(seed, &game, m) {
                    "won"
                } else {
                    "lost"
                }
                .to_owned()
            })?;
        }
    }
    Ok(())
}
