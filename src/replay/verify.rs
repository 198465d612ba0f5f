//! `vigie verify`: the fairness verdict of every seeded game of a log file, or the full verdict of one game from the lake.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde::Serialize;

use super::finding::{Category, Finding};
use super::game::{Context, DrawCounts, GameReplay, Logged, replay_game};
use super::run::{ReplayError, read_game_index, replay_files, seed_reuse};
use crate::ingest::source::{self, Item};
use crate::lake::Lake;

/// The verdict on one game.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub game: String,
    pub kind: String,
    pub mode: String,
    /// pass, fail, pending (seed not revealed) or n/a.
    pub verdict: String,
    pub commitment: Option<String>,
    pub seed: Option<String>,
    pub checked: DrawCounts,
    pub failures: Vec<Finding>,
}

impl Verdict {
    fn of(r: &GameReplay, categories: &[Category]) -> Option<Verdict> {
        let g = r.game.as_ref()?;
        let failures: Vec<Finding> = r
            .findings
            .iter()
            .filter(|f| categories.contains(&f.category))
            .cloned()
            .collect();
        let verdict = if categories.len() > 1 {
            if failures.iter().any(|f| f.category != Category::Attempt) {
                "fail"
            } else {
                g.fairness.as_str()
            }
        } else {
            g.fairness.as_str()
        };
        Some(Verdict {
            game: g.game.clone(),
            kind: g.kind.clone(),
            mode: g.mode.clone(),
            verdict: verdict.to_string(),
            commitment: g.commitment.clone(),
            seed: g.seed.clone(),
            checked: r.draws,
            failures,
        })
    }

    /// Whether any check failed.
    pub fn failed(&self) -> bool {
        self.verdict == "fail"
            || self
                .failures
                .iter()
                .any(|f| f.category != Category::Attempt)
    }

    /// The verdict as text lines for people.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{}  {} {}  {}  dice {}  deals {}  duels {}  automatic selections {}\n",
            self.game,
            self.kind,
            self.mode,
            self.verdict.to_uppercase(),
            self.checked.dice,
            self.checked.deals,
            self.checked.duels,
            self.checked.selections
        );
        for f in &self.failures {
            out.push_str(&format!(
                "  seq {:>4}  {:<20} {}{}{}\n",
                f.seq,
                f.code.as_str(),
                f.message,
                f.expected
                    .as_ref()
                    .map(|e| format!("; expected {e}"))
                    .unwrap_or_default(),
                f.logged
                    .as_ref()
                    .map(|l| format!("; logged {l}"))
                    .unwrap_or_default(),
            ));
        }
        out
    }
}

/// Errors that make the input unusable.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} holds no valid log line")]
    Empty(String),
    #[error("no game {0} in the input")]
    NoSuchGame(String),
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// The result of verifying a file: verdicts, and lines that could not be read as events.
#[derive(Debug, Clone, Serialize)]
pub struct FileVerdicts {
    pub verdicts: Vec<Verdict>,
    pub skipped_lines: Vec<String>,
}

/// Verifies every Ludo, Belote and Medieval game of a log file (or one game, of any kind).
pub fn verify_file(path: &Path, only: Option<&str>) -> Result<FileVerdicts, VerifyError> {
    let label = path.display().to_string();
    let read_err = |source| VerifyError::Read {
        path: label.clone(),
        source,
    };
    let mut reader = source::open_at(path, 0, Arc::new(AtomicU64::new(0)))
        .map_err(read_err)?
        .final_content(true);
    let mut games: BTreeMap<String, Vec<Logged>> = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut horizon = 0;
    let mut number = 0u64;
    while let Some(item) = reader.next_item() {
        number += 1;
        let Item::Line { bytes, .. } = item else {
            skipped.push(format!("line {number}: longer than the line limit"));
            continue;
        };
        match crate::log::parse_line(bytes) {
            Ok(event) => {
                let raw = String::from_utf8_lossy(bytes).into_owned();
                horizon = horizon.max(event.ts);
                if only.is_none_or(|g| g == event.game) {
                    games
                        .entry(event.game.clone())
                        .or_default()
                        .push(Logged { raw, event });
                }
            }
            Err(e) => skipped.push(format!("line {number}: {e}")),
        }
    }
    if games.is_empty() {
        return Err(match only {
            Some(g) if number > skipped.len() as u64 => VerifyError::NoSuchGame(g.to_string()),
            _ => VerifyError::Empty(label),
        });
    }
    let ctx = Context {
        horizon_ms: horizon,
    };
    let mut replays: Vec<GameReplay> = games
        .into_iter()
        .map(|(g, lines)| replay_game(&g, lines, &ctx))
        .collect();
    seed_reuse(&mut replays, &BTreeMap::new(), &BTreeSet::new());
    let verdicts = replays
        .iter()
        .filter(|r| only.is_some() || r.game.as_ref().is_some_and(|g| g.fairness != "n/a"))
        .filter_map(|r| Verdict::of(r, &[Category::Fairness]))
        .collect();
    Ok(FileVerdicts {
        verdicts,
        skipped_lines: skipped,
    })
}

/// The full verdict (every finding) of one game from the lake.
pub fn verify_in_lake(lake: &Lake, game: &str) -> Result<Verdict, VerifyError> {
    let state = lake.state().map_err(ReplayError::from)?;
    let root = lake.root().to_path_buf();
    let events: Vec<_> = state.table_files("events").collect();
    let horizon = events.iter().filter_map(|f| f.max_ts).max().unwrap_or(0);
    let files: Vec<(std::path::PathBuf, bool)> = events
        .iter()
        .map(|f| {
            let p = root.join(&f.path);
            (
                if p.exists() {
                    p
                } else {
                    crate::lake::pending_path(&p)
                },
                false,
            )
        })
        .collect();
    let wanted: BTreeSet<String> = [game.to_string()].into();
    let (mut replays, _, _) = replay_files(
        &files,
        Some(&wanted),
        &Context {
            horizon_ms: horizon,
        },
        1,
        &indicatif::ProgressBar::hidden(),
    )?;
    let index = read_game_index(&root, &state)?;
    seed_reuse(&mut replays, &index, &wanted);
    let r = replays
        .first()
        .ok_or_else(|| VerifyError::NoSuchGame(game.to_string()))?;
    Verdict::of(
        r,
        &[Category::Attempt, Category::Integrity, Category::Fairness],
    )
    .ok_or_else(|| VerifyError::NoSuchGame(game.to_string()))
}
