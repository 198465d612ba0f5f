//! `vigie verify`: the randomness of every Ludo, Belote and Medieval game of a log file, or of one game of the lake.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::Ctx;

/// Arguments of `vigie verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A log file (.jsonl, .jsonl.gz, .jsonl.zst); omit with --lake.
    file: Option<PathBuf>,
    /// Only this game (or match) id; with --lake, the full verdict of this game.
    #[arg(long)]
    game: Option<String>,
    /// Read the game from this lake instead of a file (needs --game).
    #[arg(long)]
    lake: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

impl VerifyArgs {
    /// `vigie verify`: exit 0 all pass, 1 a check failed, 2 unusable input (also when some lines of
    /// the file could not be read: the verdicts then cover only the lines that could, and a game
    /// whose start or draws were among the others is not fully verified; and when a game never
    /// revealed its seed: pending, not verified).
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        use vigie::replay::verify::{verify_file, verify_in_lake};
        let Self {
            file,
            game,
            lake,
            json,
        } = self;
        let mut skipped = 0;
        let verdicts = match (&file, &lake, &game) {
            (Some(path), None, _) => match verify_file(path, game.as_deref()) {
                Ok(v) => {
                    for s in &v.skipped_lines {
                        eprintln!("skipped {s}");
                    }
                    skipped = v.skipped_lines.len();
                    v.verdicts
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            },
            (None, Some(dir), Some(id)) => {
                let lake = super::open_existing(dir)?;
                match verify_in_lake(&lake, id) {
                    Ok(v) => vec![v],
                    Err(e) => {
                        eprintln!("error: {e}");
                        return Ok(ExitCode::from(2));
                    }
                }
            }
            _ => {
                eprintln!("error: give a log FILE, or --lake DIR with --game ID");
                return Ok(ExitCode::from(2));
            }
        };
        let failed = verdicts.iter().any(|v| v.failed());
        if json {
            println!("{}", serde_json::to_string_pretty(&verdicts)?);
        } else {
            for v in &verdicts {
                print!("{}", v.to_text());
            }
            let bad = verdicts.iter().filter(|v| v.failed()).count();
            let pending = verdicts
                .iter()
                .filter(|v| !v.failed() && v.verdict == "pending")
                .count();
            println!(
                "verify: {} games, {} pass, {} fail, {} pending (seed not revealed: not verified){}",
                verdicts.len(),
                verdicts.len() - bad - pending,
                bad,
                pending,
                if skipped > 0 {
                    format!(", {skipped} lines unreadable (not verified)")
                } else {
                    String::new()
                }
            );
        }
        let pending = verdicts
            .iter()
            .any(|v| !v.failed() && v.verdict == "pending");
        Ok(if failed {
            ExitCode::from(1)
        } else if skipped > 0 || pending {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        })
    }
}
