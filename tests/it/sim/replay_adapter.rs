//! The simulator's tests judge attempts with Vigie's own replay (`vigie::replay`).

use vigie::log::RejectReason;
use vigie::replay::{Context, GameReplay, Logged, replay_game};

use crate::sim::common::GameLog;

/// One rejected attempt as the replay classified it.
pub struct AttemptInfo {
    pub game: String,
    pub seq: i64,
    pub account: String,
    pub reason: RejectReason,
    /// Cause code (`not_own_piece`, ..., `out_of_turn`, `after_end`), or `legal`.
    pub class: String,
    pub think_ms: i64,
}

/// A game replayed, with its rejected attempts.
pub struct Replayed {
    pub replay: GameReplay,
    pub attempts: Vec<AttemptInfo>,
}

/// The latest timestamp of a run's games: the horizon a replay of the whole run has.
pub fn horizon(games: &std::collections::BTreeMap<String, GameLog>) -> i64 {
    games
        .values()
        .flat_map(|g| g.lines.iter().map(|(_, e)| e.ts))
        .max()
        .unwrap_or(0)
}

/// Replays one simulated game, as a replay that has seen the run's lines up to `horizon_ms`.
pub fn replay(g: &GameLog, horizon_ms: i64) -> Replayed {
    let lines: Vec<Logged> = g
        .lines
        .iter()
        .map(|(raw, event)| Logged {
            raw: raw.clone(),
            event: event.clone(),
        })
        .collect();
    let r = replay_game(&g.id, lines, &Context { horizon_ms });
    let attempts = r
        .moves
        .iter()
        .filter(|m| !m.accepted)
        .map(|m| AttemptInfo {
            game: m.game.clone(),
            seq: m.seq,
            account: m.player.clone(),
            reason: m
                .server_reason
                .as_deref()
                .and_then(RejectReason::parse)
                .unwrap_or(RejectReason::Illegal),
            class: m.cause.clone().unwrap_or_else(|| "legal".into()),
            think_ms: m.think_ms,
        })
        .collect();
    Replayed {
        replay: r,
        attempts,
    }
}
