//! CLI commands for people and checks: draughts move lists and perft, and recomputing randomness by hand.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};

use vigie::fairness;
use vigie::games::belote::deck_from_indices;
use vigie::games::draughts::{Position, Variant, perft};

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
        #[arg(long)]
        depth: u32,
    },
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
        #[arg(long)]
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
        #[arg(long)]
        count: u64,
    },
}

fn checked_seed(seed: &str) -> Result<&str> {
    if let Err(e) = fairness::check_seed(seed) {
        bail!("invalid seed: {e}");
    }
    Ok(seed)
}

pub fn fairness(cmd: Fairness) -> Result<()> {
    match cmd {
        Fairness::Commit { seed } => println!("{}", fairness::commitment(checked_seed(&seed)?)),
        Fairness::Dice { seed, game, count } => {
            let seed = checked_seed(&seed)?;
            let faces: Vec<String> = (0..count)
                .map(|n| fairness::die(seed, &game, n).to_string())
                .collect();
            println!("{}", faces.join(" "));
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
            let out: Vec<&str> = (0..count)
                .map(|m| {
                    if fairness::duel(seed, &game, m) {
                        "won"
                    } else {
                        "lost"
                    }
                })
                .collect();
            println!("{}", out.join(" "));
        }
    }
    Ok(())
}
