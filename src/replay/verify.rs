//! `vigie verify`: the fairness verdict of every seeded game of a log file, or the full verdict of one game from the lake.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde::Serialize;

use super::finding::{Category, Code, Finding};
use super::game::{Context, DrawCounts, GameReplay, Logged, replay_game};
use super::merge::{EventsFile, replay_files};
use super::run::{ReplayError, read_game_index, seed_reuse};
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
        let Some(g) = r.game.as_ref() else {
            // Lines of a game without its start: nothing of it can be checked, which is a
            // failure to say, not a game to leave out.
            let start = r.findings.iter().find(|f| f.code == Code::MissingStart)?;
            return Some(Verdict {
                game: start.game.clone(),
                kind: "?".into(),
                mode: "?".into(),
                verdict: "fail".into(),
                commitment: None,
                seed: None,
                checked: r.draws,
                failures: vec![start.clone()],
            });
        };
        // As on the public page: lines missing, repeated or edited, or a duel misapplied, can
        // hide a draw.
        let hides = g.fairness != "n/a" && r.findings.iter().any(|f| HIDES_DRAWS.contains(&f.code));
        let failures: Vec<Finding> = r
            .findings
            .iter()
            .filter(|f| {
                categories.contains(&f.category) || (hides && HIDES_DRAWS.contains(&f.code))
            })
            .cloned()
            .collect();
        let verdict = if categories.len() > 1 {
            if failures.iter().any(|f| f.category != Category::Attempt) {
                "fail"
            } else {
                g.fairness.as_str()
            }
        } else if hides {
            "fail"
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
    let mut reader = source::open_at(path, 0, None, Arc::new(AtomicU64::new(0)))
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
                // Every game, also with `--game`: a seed reused by another game of the file is a
                // finding against both.
                games
                    .entry(event.game.clone())
                    .or_default()
                    .push(Logged { raw, event });
            }
            Err(e) => skipped.push(format!("line {number}: {e}")),
        }
    }
    if games.is_empty() {
        return Err(VerifyError::Empty(label));
    }
    if let Some(g) = only
        && !games.contains_key(g)
    {
        return Err(VerifyError::NoSuchGame(g.to_string()));
    }
    // A file is complete: what it does not hold will not come, so a game that ended without its
    // seed is `seed_missing` at once (the pipeline waits an hour for a reveal in a later file).
    let ctx = Context {
        horizon_ms: horizon.saturating_add(super::game::NEVER_ENDED_AFTER_MS + 1),
    };
    let mut replays: Vec<GameReplay> = games
        .into_iter()
        .map(|(g, lines)| replay_game(&g, lines, &ctx))
        .collect();
    seed_reuse(&mut replays, &Default::default(), &BTreeSet::new());
    let verdicts = replays
        .iter()
        .filter(|r| match only {
            Some(id) => {
                r.game.as_ref().is_some_and(|g| g.game == id)
                    || r.findings.iter().any(|f| f.game == id)
            }
            None => r.game.as_ref().is_none_or(|g| g.fairness != "n/a"),
        })
        .filter_map(|r| Verdict::of(r, &[Category::Fairness]))
        .collect();
    Ok(FileVerdicts {
        verdicts,
        skipped_lines: skipped,
    })
}

/// Replays one game of the lake (with seed reuse against the rest of the lake).
pub fn replay_one(lake: &Lake, game: &str) -> Result<Option<GameReplay>, VerifyError> {
    let state = lake.state().map_err(ReplayError::from)?;
    let root = lake.root().to_path_buf();
    let events: Vec<_> = state.table_files("events").collect();
    let horizon = state.latest_event_ms();
    let files: Vec<EventsFile> = events
        .iter()
        .map(|f| EventsFile {
            path: crate::lake::resolve(&root, &f.path),
            partition: f.partition.clone().unwrap_or_default(),
        })
        .collect();
    let wanted: BTreeSet<String> = [game.to_string()].into();
    let mut replays: Vec<GameReplay> = Vec::new();
    replay_files(
        &files,
        Some(&wanted),
        &Context {
            horizon_ms: horizon,
        },
        1,
        false,
        // One game: the bloom filters leave few files to merge, and the lake may be read-only.
        None,
        &indicatif::ProgressBar::hidden(),
        &mut |(_, r, _)| {
            replays.push(r);
            Ok(())
        },
    )?;
    let (index, _) = read_game_index(&root, &state, false)?;
    seed_reuse(&mut replays, &index, &wanted);
    Ok(replays.into_iter().next().filter(|r| r.game.is_some()))
}

/// The full verdict (every finding) of one game from the lake.
pub fn verify_in_lake(lake: &Lake, game: &str) -> Result<Verdict, VerifyError> {
    let r = replay_one(lake, game)?.ok_or_else(|| VerifyError::NoSuchGame(game.to_string()))?;
    Verdict::of(
        &r,
        &[Category::Attempt, Category::Integrity, Category::Fairness],
    )
    .ok_or_else(|| VerifyError::NoSuchGame(game.to_string()))
}

/// One die as logged next to its derivation.
#[derive(Debug, Clone, Serialize)]
pub struct DieCheck {
    pub seq: i64,
    pub n: i64,
    pub logged: u8,
    pub derived: Option<u8>,
}

/// One Belote deal: the logged first hands and turned card, and the derived deck (top first).
#[derive(Debug, Clone, Serialize)]
pub struct DealCheck {
    pub seq: i64,
    pub deal: i64,
    /// Seat of the dealer (`p1`, `p2`).
    pub dealer: String,
    /// Hands as logged, by seat.
    pub hands: BTreeMap<String, Vec<String>>,
    pub turned: String,
    /// The 32 cards of the shuffle derived from the seed, top first.
    pub derived_deck: Vec<String>,
    /// Whether the logged hands (first six cards, completed hands) and turned card are those dealt from the derived deck.
    pub ok: bool,
    /// The completed hands (absent when both players passed twice).
    pub completion: Option<CompletionCheck>,
}

/// The 16-card hands of a deal once the taker is known.
#[derive(Debug, Clone, Serialize)]
pub struct CompletionCheck {
    pub seq: i64,
    /// Seat of the taker.
    pub taker: String,
    pub hands: BTreeMap<String, Vec<String>>,
    pub ok: bool,
}

/// One Medieval duel.
#[derive(Debug, Clone, Serialize)]
pub struct DuelCheck {
    pub seq: i64,
    pub m: u64,
    pub victim: u8,
    pub logged: bool,
    pub derived: Option<bool>,
}

/// One automatic selection of medieval men.
#[derive(Debug, Clone, Serialize)]
pub struct SelectionCheck {
    pub seq: i64,
    pub color: String,
    pub chosen: Vec<u8>,
    /// The side's men the selection draws from (ascending).
    pub eligible: Vec<u8>,
    pub logged: Vec<u8>,
    pub derived: Vec<u8>,
}

/// What the public verification page shows of a finished game: fairness only, no ip, device or account.
#[derive(Debug, Clone, Serialize)]
pub struct PublicVerification {
    pub game: String,
    pub kind: String,
    pub mode: String,
    pub variant: Option<String>,
    pub seats: Vec<String>,
    pub commitment: Option<String>,
    pub seed: Option<String>,
    /// SHA-256 of the seed (when revealed).
    pub seed_sha256: Option<String>,
    pub verdict: String,
    pub dice: Vec<DieCheck>,
    pub deals: Vec<DealCheck>,
    pub duels: Vec<DuelCheck>,
    pub selections: Vec<SelectionCheck>,
    /// Fairness failures, and the integrity findings that can hide a draw, with seq, code,
    /// expected and logged values (accounts replaced by seats).
    pub failures: Vec<PublicFailure>,
}

/// A fairness finding as the public sees it: no account, accounts in the text replaced by seats.
#[derive(Debug, Clone, Serialize)]
pub struct PublicFailure {
    pub seq: i64,
    pub code: String,
    pub message: String,
    pub expected: Option<String>,
    pub logged: Option<String>,
}

/// Why a game cannot be shown publicly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotPublic {
    /// No such game.
    Unknown,
    /// The game is still running (or its seed not revealed): nothing is shown.
    NotFinished,
}

/// The server integrity findings that can hide a draw from a verification of the logged ones (a
/// line missing, logged twice with other content, a chain broken by an edit, a duel misapplied or
/// left out, a game without its start): a game with one fails its public verification.
const HIDES_DRAWS: [Code; 5] = [
    Code::SeqGap,
    Code::SeqDuplicate,
    Code::ChainBroken,
    Code::DuelMisapplied,
    Code::MissingStart,
];

/// The public verification of one game of the lake.
pub fn public_verification(
    lake: &Lake,
    game: &str,
) -> Result<Result<PublicVerification, NotPublic>, VerifyError> {
    let Some(r) = replay_one(lake, game)? else {
        return Ok(Err(NotPublic::Unknown));
    };
    let Some(g) = &r.game else {
        return Ok(Err(NotPublic::Unknown));
    };
    if !g.finished || (g.fairness != "n/a" && g.seed.is_none() && g.fairness != "fail") {
        return Ok(Err(NotPublic::NotFinished));
    }
    Ok(Ok(public_of(&r)))
}

/// Builds the public view of a replayed, finished game.
pub fn public_of(r: &GameReplay) -> PublicVerification {
    use crate::games::belote;
    let g = r.game.as_ref().cloned();
    let (game, kind, mode, variant, commitment, seed, fairness) = match &g {
        Some(g) => (
            g.game.clone(),
            g.kind.clone(),
            g.mode.clone(),
            g.variant.clone(),
            g.commitment.clone(),
            g.seed.clone(),
            g.fairness.clone(),
        ),
        None => Default::default(),
    };
    let accounts: Vec<String> = g.as_ref().map(|g| g.players.clone()).unwrap_or_default();
    let seat_of: BTreeMap<String, String> = r
        .players
        .iter()
        .map(|p| (p.account.clone(), p.seat.clone()))
        .collect();
    let seat = |a: &str| seat_of.get(a).cloned().unwrap_or_else(|| "?".into());
    let by_seat = |hands: &[(String, Vec<String>)]| -> BTreeMap<String, Vec<String>> {
        hands.iter().map(|(a, c)| (seat(a), c.clone())).collect()
    };
    let seats: Vec<String> = accounts.iter().map(|a| seat(a)).collect();
    let mut by_length: Vec<(&String, &String)> = seat_of.iter().collect();
    by_length.sort_by_key(|(a, _)| std::cmp::Reverse(a.len()));
    let anonymise = |text: &str| -> String {
        by_length
            .iter()
            .fold(text.to_string(), |t, (account, seat)| {
                t.replace(account.as_str(), seat)
            })
    };
    let valid_seed = seed
        .as_deref()
        .filter(|s| crate::fairness::check_seed(s).is_ok());
    let mut out = PublicVerification {
        seed_sha256: seed.as_deref().map(crate::fairness::commitment),
        game: game.clone(),
        kind,
        mode,
        variant,
        seats,
        commitment,
        seed: seed.clone(),
        // A game drawing at random whose log lost, repeated or broke lines, or applied a duel
        // other than as drawn, cannot be said to pass: some draw may be missing.
        verdict: if fairness != "n/a" && r.findings.iter().any(|f| HIDES_DRAWS.contains(&f.code)) {
            "fail".to_owned()
        } else {
            fairness
        },
        dice: Vec::new(),
        deals: Vec::new(),
        duels: Vec::new(),
        selections: Vec::new(),
        failures: r
            .findings
            .iter()
            .filter(|f| f.category == Category::Fairness || HIDES_DRAWS.contains(&f.code))
            .map(|f| PublicFailure {
                seq: f.seq,
                code: f.code.as_str().to_string(),
                message: anonymise(&f.message),
                expected: f.expected.as_deref().map(&anonymise),
                logged: f.logged.as_deref().map(&anonymise),
            })
            .collect(),
    };
    for d in &r.draw_list {
        match d {
            super::game::Draw::Die { seq, n, value, .. } => out.dice.push(DieCheck {
                seq: *seq,
                n: *n,
                logged: *value,
                derived: valid_seed
                    .zip(u64::try_from(*n).ok())
                    .map(|(s, n)| crate::fairness::die(s, &game, n)),
            }),
            super::game::Draw::Deal {
                seq,
                deal,
                dealer,
                hands,
                turned,
                ..
            } => {
                let deck = valid_seed.and_then(|s| super::fairness::deck_for(s, &game, *deal));
                let ok = deck.as_ref().is_some_and(|(cards, dealer)| {
                    let dealt = belote::initial_deal(cards, *dealer);
                    dealt.turned.to_string() == *turned
                        && hands.len() == accounts.len()
                        && hands.iter().all(|(acc, logged)| {
                            accounts.iter().position(|a| a == acc).is_some_and(|p| {
                                super::fairness::same_cards(logged, &dealt.hands[p % 2])
                            })
                        })
                });
                out.deals.push(DealCheck {
                    seq: *seq,
                    deal: *deal,
                    dealer: seat(dealer),
                    hands: by_seat(hands),
                    turned: turned.clone(),
                    derived_deck: deck
                        .map(|(d, _)| d.iter().map(|c| c.to_string()).collect())
                        .unwrap_or_default(),
                    ok,
                    completion: None,
                });
            }
            super::game::Draw::Completion {
                seq,
                deal,
                taker,
                hands,
            } => {
                let Some(check) = out.deals.iter_mut().rev().find(|d| d.deal == *deal) else {
                    continue;
                };
                let deck = valid_seed.and_then(|s| super::fairness::deck_for(s, &game, *deal));
                let ok = match (deck, accounts.iter().position(|a| a == taker)) {
                    (Some((cards, dealer)), Some(t)) => {
                        let full = belote::completed_hands(&cards, dealer, t);
                        hands.len() == accounts.len()
                            && hands.iter().all(|(acc, logged)| {
                                accounts.iter().position(|a| a == acc).is_some_and(|p| {
                                    super::fairness::same_cards(logged, &full[p % 2])
                                })
                            })
                    }
                    _ => false,
                };
                check.ok &= ok;
                check.completion = Some(CompletionCheck {
                    seq: *seq,
                    taker: seat(taker),
                    hands: by_seat(hands),
                    ok,
                });
            }
            super::game::Draw::Duel {
                seq,
                m,
                victim,
                won,
                ..
            } => out.duels.push(DuelCheck {
                seq: *seq,
                m: *m,
                victim: *victim,
                logged: *won,
                derived: valid_seed.map(|s| crate::fairness::duel(s, &game, *m)),
            }),
            super::game::Draw::Selection {
                seq,
                color,
                chosen,
                auto,
                ..
            } if !auto.is_empty() => {
                let eligible = super::fairness::medieval_eligible(color);
                let derived = match (valid_seed, color.parse::<crate::fairness::SelectColor>()) {
                    (Some(s), Ok(c)) => {
                        crate::fairness::auto_select(s, &game, c, chosen, &eligible)
                    }
                    _ => Vec::new(),
                };
                out.selections.push(SelectionCheck {
                    seq: *seq,
                    color: color.to_string(),
                    chosen: chosen.clone(),
                    eligible,
                    logged: auto.clone(),
                    derived,
                });
            }
            _ => {}
        }
    }
    out
}
