//! What the replay of one game shares with the rules of each kind: the logged lines, the context, the state a replay builds (findings, rows, draws, stats) and the [`Rules`] each kind implements.

use std::collections::BTreeMap;

use super::finding::{Code, Finding};
use super::rows::{DepartureRow, FindingRow, GameRow, MoveRow, PlayerRow};
use crate::log::{EndReason, Event, GameStarted, Kind};

/// A game is "never ended" after this long without an event (by the lake's latest timestamp).
pub const NEVER_ENDED_AFTER_MS: i64 = 60 * 60 * 1000;

/// One logged line of a game: the raw text (for the hash chain) and the parsed event.
#[derive(Debug, Clone)]
pub struct Logged {
    pub raw: String,
    pub event: Event,
}

impl Logged {
    /// Parses a raw line (as stored in the lake). Lines in the lake were validated at ingest.
    pub fn parse(raw: String) -> Result<Logged, crate::log::Reject> {
        let event = crate::log::parse_line(raw.as_bytes())?;
        Ok(Logged { raw, event })
    }

    pub fn seq(&self) -> i64 {
        self.event.seq
    }

    pub fn ts(&self) -> i64 {
        self.event.ts
    }
}

/// What replay needs besides the game's own lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// The latest timestamp in the lake: "now" for deciding that a game was abandoned (deterministic).
    pub horizon_ms: i64,
}

/// The replay of one game: every row it contributes to the derived tables.
#[derive(Debug, Clone, Default)]
pub struct GameReplay {
    pub game: Option<GameRow>,
    pub players: Vec<PlayerRow>,
    pub moves: Vec<MoveRow>,
    pub departures: Vec<DepartureRow>,
    pub findings: Vec<Finding>,
    /// UTC date (`YYYY-MM-DD`) the game started: the partition of all its rows.
    pub date: String,
    /// Logged times (epoch ms) by seq of the game's first line, of its seed reveal and of the
    /// events its findings are about: what [`GameReplay::ts_of`] reads.
    pub times: BTreeMap<i64, i64>,
    /// Random draws checked (or to check once the seed is revealed).
    pub draws: DrawCounts,
    /// The random outcomes as logged, in seq order (for public verification).
    pub draw_list: Vec<Draw>,
}

/// How many random outcomes of each kind a game logged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DrawCounts {
    pub dice: u64,
    pub deals: u64,
    pub duels: u64,
    pub selections: u64,
}

impl GameReplay {
    /// The logged time of event `seq` for a finding about it: the event's own time, or (a finding
    /// added after the replay about an event whose time was not kept) the time of the latest kept
    /// event before it, or of the game's first line. `None` only for a game without lines.
    pub fn ts_of(&self, seq: i64) -> Option<i64> {
        self.times
            .range(..=seq)
            .next_back()
            .or_else(|| self.times.first_key_value())
            .map(|(_, &ts)| ts)
    }

    /// Findings as table rows, each with the time of the event it is about.
    pub fn finding_rows(&self) -> Vec<FindingRow> {
        let (kind, mode) = match &self.game {
            Some(g) => (Some(g.kind.clone()), Some(g.mode.clone())),
            None => (None, None),
        };
        self.findings
            .iter()
            .map(|f| FindingRow {
                game: f.game.clone(),
                seq: f.seq,
                ts: self.ts_of(f.seq).map(crate::lake::record::Ts),
                kind: kind.clone(),
                mode: mode.clone(),
                account: f.account.clone(),
                code: f.code.as_str().to_string(),
                category: f.category.as_str().to_string(),
                severity: f.severity.as_str().to_string(),
                expected: f.expected.clone(),
                logged: f.logged.clone(),
                message: f.message.clone(),
                facts: f.facts.clone(),
            })
            .collect()
    }
}

/// How the game was decided, as replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `white`, `black`, `draw`, or the winning account.
    pub result: String,
    pub reason: EndReason,
    /// The winning account (none on a draw).
    pub winner: Option<String>,
    /// The event that decided it.
    pub seq: i64,
    /// Another end reason that applied at the same moment (a draught game's draw rule and its
    /// third repetition on one ply): the contract sets no order between them, so a server may log
    /// either.
    pub also: Option<EndReason>,
}

/// A random outcome as logged, checked against its derivation once the seed is known.
#[derive(Debug, Clone, PartialEq)]
pub enum Draw {
    Die {
        seq: i64,
        ts: i64,
        n: i64,
        value: u8,
    },
    Deal {
        seq: i64,
        ts: i64,
        deal: i64,
        dealer: String,
        hands: Vec<(String, Vec<String>)>,
        turned: String,
    },
    Completion {
        seq: i64,
        deal: i64,
        taker: String,
        hands: Vec<(String, Vec<String>)>,
    },
    Duel {
        seq: i64,
        ts: i64,
        m: u64,
        victim: u8,
        won: bool,
        account: String,
    },
    Selection {
        seq: i64,
        ts: i64,
        color: &'static str,
        account: String,
        chosen: Vec<u8>,
        auto: Vec<u8>,
    },
}

impl Draw {
    /// The timestamp of a draw that consumed randomness (for the commitment's timeliness).
    pub fn random_ts(&self) -> Option<(i64, i64)> {
        match self {
            Draw::Die { seq, ts, .. } | Draw::Deal { seq, ts, .. } | Draw::Duel { seq, ts, .. } => {
                Some((*ts, *seq))
            }
            Draw::Selection { seq, ts, auto, .. } if !auto.is_empty() => Some((*ts, *seq)),
            _ => None,
        }
    }
}

/// Per-player counters kept by the driver.
#[derive(Debug, Clone, Default)]
pub struct PlayerStats {
    pub moves: i64,
    pub rejected: i64,
    pub timeouts: i64,
    pub left: bool,
}

/// The state shared between the driver and a kind's replayer.
pub struct Cx<'a> {
    pub game: &'a str,
    pub start: &'a GameStarted,
    pub findings: Vec<Finding>,
    pub moves: Vec<MoveRow>,
    pub departures: Vec<DepartureRow>,
    pub draws: Vec<Draw>,
    pub decision: Option<Decision>,
    /// Replay lost track of the position (after a server fault it could not follow).
    pub desynced: bool,
    pub stats: BTreeMap<String, PlayerStats>,
    /// Whether `game_ended` has been seen.
    pub ended: bool,
    /// Timestamp of `game_started`.
    pub start_ts: i64,
}

impl Cx<'_> {
    /// Adds a finding about event `seq`.
    pub fn find(&mut self, seq: i64, code: Code, message: impl Into<String>) -> &mut Finding {
        self.findings
            .push(Finding::new(self.game, seq, code, message));
        let last = self.findings.len() - 1;
        &mut self.findings[last]
    }

    /// The accounts in `players` order.
    pub fn accounts(&self) -> Vec<String> {
        self.start
            .players
            .iter()
            .map(|p| p.account.clone())
            .collect()
    }

    /// Index of an account in `players`.
    pub fn index_of(&self, account: &str) -> Option<usize> {
        self.start.players.iter().position(|p| p.account == account)
    }

    pub fn start_ts(&self) -> i64 {
        self.start_ts
    }

    pub fn kind(&self) -> Kind {
        self.start.kind
    }

    pub fn kind_str(&self) -> String {
        self.start.kind.as_str().to_string()
    }

    pub fn mode_str(&self) -> String {
        self.start.mode.as_str().to_string()
    }

    /// Records a decision (the first one stands).
    pub fn decide(&mut self, result: String, reason: EndReason, winner: Option<String>, seq: i64) {
        if self.decision.is_none() {
            self.decision = Some(Decision {
                result,
                reason,
                winner,
                seq,
                also: None,
            });
        }
    }

    /// Records that `reason` also ended the game at the moment of its decision.
    pub fn also_ended_by(&mut self, reason: EndReason) {
        if let Some(d) = self.decision.as_mut()
            && d.reason != reason
        {
            d.also = Some(reason);
        }
    }

    pub fn stats(&mut self, account: &str) -> &mut PlayerStats {
        self.stats.entry(account.to_string()).or_default()
    }
}

/// What a kind's replayer does with the events the driver does not handle itself.
pub trait Rules {
    /// Handles one event of the game (anything but game_started, game_ended and seed_revealed).
    fn event(&mut self, ev: &Logged, cx: &mut Cx<'_>);
    /// Called at `game_ended` before the driver compares results: lets the replayer settle
    /// a decision implied by the end (e.g. a Belote match decided at its last deal).
    fn at_end(&mut self, _ev: &Logged, _cx: &mut Cx<'_>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_about_a_seq_without_a_kept_time_takes_the_time_before_it() {
        let r = GameReplay {
            times: BTreeMap::from([(0, 1_000), (7, 5_000), (9, 6_000)]),
            ..GameReplay::default()
        };
        assert_eq!(r.ts_of(7), Some(5_000));
        assert_eq!(r.ts_of(8), Some(5_000));
        assert_eq!(r.ts_of(20), Some(6_000));
        // Before the first kept seq (a game whose first line is not seq 0): the first line's.
        let late = GameReplay {
            times: BTreeMap::from([(3, 2_000)]),
            ..GameReplay::default()
        };
        assert_eq!(late.ts_of(0), Some(2_000));
        assert_eq!(GameReplay::default().ts_of(0), None);
    }
}
