//! Recording one game: typed events in time order, then the canonical lines with `seq` and the `prev` chain, and the envelope-level faults (seq gap, broken chain, late commitment, missing seed).

use std::collections::BTreeMap;

use super::plan::{FaultCode, GameKind, GameSpec};
use super::population::Population;
use super::rng::Rng;
use vigie_log::{
    Body, EndReason, Event, EventType, GameEnded, GameStarted, RejectReason, SeedRevealed, to_line,
};
use vigie_rules::fairness;

/// A fault as labelled: the event it is about and the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultMark {
    /// Index of the event in the game's event list (before seq shifts).
    pub event: usize,
    pub code: FaultCode,
    /// A sentence for reviewers.
    pub detail: String,
}

/// A fault label with its final `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultLabel {
    pub seq: i64,
    pub code: FaultCode,
    pub event_type: EventType,
    pub detail: String,
}

/// Per-game facts for the report.
#[derive(Debug, Clone, Default)]
pub struct GameStats {
    /// End reason.
    pub end_reason: Option<EndReason>,
    /// Rejected attempts per reason.
    pub rejected: BTreeMap<&'static str, u64>,
    /// Events per type.
    pub types: BTreeMap<&'static str, u64>,
}

/// What a simulated game hands to the writer.
#[derive(Debug, Clone)]
pub struct GameOutput {
    pub index: u64,
    pub id: String,
    pub kind: GameKind,
    pub server: u32,
    pub start_ms: i64,
    /// Largest write time (the `ts` of the last line, or later).
    pub end_ms: i64,
    /// Every line of the game, each followed by `\n`, in `seq` order.
    pub text: String,
    /// (write time, start, end) of each line in `text` (end excludes the newline); write times never decrease.
    pub lines: Vec<(i64, u32, u32)>,
    pub faults: Vec<FaultLabel>,
    pub stats: GameStats,
}

/// The event list of a game being simulated.
#[derive(Debug)]
pub struct Recorder {
    game: String,
    events: Vec<(i64, Body)>,
    last_ts: i64,
    marks: Vec<FaultMark>,
    /// Index of the first random event (roll, deal, duel move, automatic selection).
    first_random: Option<usize>,
}

impl GameOutput {
    /// The lines without their newlines.
    pub fn line_texts(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .map(|&(_, a, b)| &self.text[a as usize..b as usize])
    }
}

impl Recorder {
    /// An empty recorder for game `game`.
    pub fn new(game: &str) -> Recorder {
        Recorder {
            game: game.to_string(),
            events: Vec::with_capacity(256),
            last_ts: i64::MIN,
            marks: Vec::new(),
            first_random: None,
        }
    }

    /// Appends an event at `ts` (never before the previous one) and returns its index.
    pub fn push(&mut self, ts: i64, body: Body) -> usize {
        let ts = ts.max(self.last_ts);
        self.last_ts = ts;
        self.events.push((ts, body));
        self.events.len() - 1
    }

    /// Appends a random event (see [`Recorder::push`]) and notes it for the commitment check.
    pub fn push_random(&mut self, ts: i64, body: Body) -> usize {
        let i = self.push(ts, body);
        if self.first_random.is_none() {
            self.first_random = Some(i);
        }
        i
    }

    /// Notes that an already pushed event is random.
    pub fn note_random(&mut self, i: usize) {
        if self.first_random.is_none_or(|f| i < f) {
            self.first_random = Some(i);
        }
    }

    /// `ts` of the last event.
    pub fn last_ts(&self) -> i64 {
        self.last_ts
    }

    /// Number of events so far.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The game id.
    pub fn game(&self) -> &str {
        &self.game
    }

    /// Labels event `event` with a fault.
    pub fn mark(&mut self, event: usize, code: FaultCode, detail: impl Into<String>) {
        self.marks.push(FaultMark {
            event,
            code,
            detail: detail.into(),
        });
    }

    /// Whether a fault has been marked.
    pub fn has_mark(&self) -> bool {
        !self.marks.is_empty()
    }

    /// Mutable access to a recorded body (used to falsify a result).
    pub fn body_mut(&mut self, i: usize) -> Option<&mut Body> {
        self.events.get_mut(i).map(|(_, b)| b)
    }

    /// Serializes the game: `seq`, `ts`, `prev` chain and envelope faults.
    pub fn finish(mut self, spec: &GameSpec, rng: &mut Rng) -> GameOutput {
        let mut stats = GameStats::default();
        let n = self.events.len();
        let ended = self
            .events
            .iter()
            .rposition(|(_, b)| matches!(b, Body::GameEnded(_)));
        if let Some(Body::GameEnded(g)) = ended.and_then(|i| self.events.get(i)).map(|(_, b)| b) {
            stats.end_reason = Some(g.reason);
        }
        let mut gap_at = None;
        let mut break_at = None;
        match spec.fault {
            Some(FaultCode::SeqGap) if n > 3 => {
                let at = rng.range(2, n as i64 - 1) as usize;
                gap_at = Some(at);
                self.marks.push(FaultMark {
                    event: at,
                    code: FaultCode::SeqGap,
                    detail: format!("seq {} is skipped", at),
                });
            }
            Some(FaultCode::ChainBroken) if n > 3 => {
                let at = rng.range(2, n as i64 - 1) as usize;
                break_at = Some(at);
                self.marks.push(FaultMark {
                    event: at,
                    code: FaultCode::ChainBroken,
                    detail: "prev is not the SHA-256 of the previous line".into(),
                });
            }
            Some(FaultCode::LateCommitment) => {
                if let Some(r) = self.first_random {
                    let late = self.events[r].0 + rng.range(1, 900);
                    self.events[0].0 = late;
                    self.marks.push(FaultMark {
                        event: 0,
                        code: FaultCode::LateCommitment,
                        detail: format!(
                            "game_started is logged after the first random event (seq {r})"
                        ),
                    });
                }
            }
            Some(FaultCode::SeedMissing) => {
                if let Some(i) = self
                    .events
                    .iter()
                    .rposition(|(_, b)| matches!(b, Body::SeedRevealed(_)))
                {
                    self.events.remove(i);
                    if let Some(e) = ended {
                        self.marks.push(FaultMark {
                            event: e,
                            code: FaultCode::SeedMissing,
                            detail: "the seed is never revealed".into(),
                        });
                    }
                }
            }
            Some(FaultCode::CommitmentMismatch) | Some(FaultCode::SeedReused) => {
                if let Some(i) = self
                    .events
                    .iter()
                    .rposition(|(_, b)| matches!(b, Body::SeedRevealed(_)))
                {
                    let detail = match (&spec.fault, &spec.reused_with) {
                        (Some(FaultCode::SeedReused), Some(other)) => {
                            format!("the seed is also used by {other}")
                        }
                        _ => "SHA-256(seed) differs from the commitment".to_string(),
                    };
                    self.marks.push(FaultMark {
                        event: i,
                        code: spec.fault.unwrap_or(FaultCode::SeedReused),
                        detail,
                    });
                }
            }
            _ => {}
        }
        let mut lines = Vec::with_capacity(self.events.len());
        let mut text = String::with_capacity(self.events.len() * 200);
        let mut prev_hash: Option<String> = None;
        let mut wt = i64::MIN;
        let mut seqs = Vec::with_capacity(self.events.len());
        let mut types = Vec::with_capacity(self.events.len());
        let mut event = Event {
            v: 1,
            game: std::mem::take(&mut self.game),
            seq: 0,
            ts: 0,
            prev: None,
            body: Body::DrawOffer(vigie_log::DrawOffer {
                player: String::new(),
            }),
            extra: Vec::new(),
        };
        for (i, (ts, body)) in self.events.into_iter().enumerate() {
            let seq = i as i64 + i64::from(gap_at.is_some_and(|g| i >= g));
            let prev = if i == 0 {
                None
            } else if break_at == Some(i) {
                Some(fairness::commitment(&format!(
                    "{}:{}:broken",
                    event.game,
                    rng.next_u64()
                )))
            } else {
                prev_hash.take()
            };
            let ty = body.event_type();
            *stats.types.entry(ty.as_str()).or_insert(0) += 1;
            if let Some(a) = attempt_reason(&body) {
                *stats.rejected.entry(a.as_str()).or_insert(0) += 1;
            }
            event.seq = seq;
            event.ts = ts;
            event.prev = prev;
            event.body = body;
            let line = to_line(&event);
            prev_hash = Some(fairness::commitment(&line));
            wt = wt.max(ts);
            let start = text.len() as u32;
            text.push_str(&line);
            lines.push((wt, start, text.len() as u32));
            text.push('\n');
            seqs.push(seq);
            types.push(ty);
        }
        let faults = self
            .marks
            .into_iter()
            .filter_map(|m| {
                let seq = *seqs.get(m.event)?;
                let event_type = *types.get(m.event)?;
                Some(FaultLabel {
                    seq,
                    code: m.code,
                    event_type,
                    detail: m.detail,
                })
            })
            .collect();
        GameOutput {
            index: spec.index,
            id: spec.id.clone(),
            kind: spec.kind,
            server: spec.server,
            start_ms: spec.start_ms,
            end_ms: wt,
            text,
            lines,
            faults,
            stats,
        }
    }
}

fn attempt_reason(body: &Body) -> Option<RejectReason> {
    let a = match body {
        Body::Move(m) => &m.attempt,
        Body::Bid(b) => &b.attempt,
        Body::Play(p) => &p.attempt,
        _ => return None,
    };
    a.reason
}

/// The `game_started` body of a game.
pub fn game_started(
    spec: &GameSpec,
    pop: &Population,
    variant: Option<vigie_log::Variant>,
    clock: vigie_log::Clock,
) -> Body {
    let seats = spec.kind.log_kind().seats();
    let players = spec
        .players
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let seat = match (spec.kind.players(), spec.kind.log_kind()) {
                (2, vigie_log::Kind::Ludo) => {
                    [vigie_log::Seat::Red, vigie_log::Seat::Yellow][i.min(1)]
                }
                _ => seats[i.min(seats.len() - 1)],
            };
            vigie_log::Player {
                account: pop.accounts[p.account].id.clone(),
                seat,
                ip: p.ip.clone(),
                device: p.device.clone(),
            }
        })
        .collect();
    Body::GameStarted(GameStarted {
        kind: spec.kind.log_kind(),
        mode: spec.kind.mode(),
        variant,
        rated: spec.rated,
        players,
        stake: spec.stake,
        currency: "coin".into(),
        clock,
        commitment: spec.commitment.clone(),
    })
}

/// The rake: 5 % of the pot, rounded down (stakes are multiples of 10, so it is exact).
pub fn rake_of(pot: i64) -> i64 {
    pot * 5 / 100
}

/// Who won: a player index, or a draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Winner(usize),
    Draw,
}

/// Payouts (in player order) and rake for an outcome.
pub fn payouts(stake: i64, players: usize, outcome: Outcome) -> (Vec<i64>, i64) {
    let pot = stake * players as i64;
    match outcome {
        Outcome::Draw => (vec![stake; players], 0),
        Outcome::Winner(w) => {
            let rake = rake_of(pot);
            let mut p = vec![0; players];
            if let Some(slot) = p.get_mut(w) {
                *slot = pot - rake;
            }
            (p, rake)
        }
    }
}

/// Ends a game: `game_ended` (with the `wrong_result` / `wrong_payout`
/// faults applied when planned) then `seed_revealed` for seeded games.
/// `result_text(outcome)` renders the result field.
pub fn end_game(
    rec: &mut Recorder,
    spec: &GameSpec,
    pop: &Population,
    rng: &mut Rng,
    outcome: Outcome,
    reason: EndReason,
    result_text: &dyn Fn(Outcome) -> String,
) {
    let n = spec.players.len();
    let mut logged = outcome;
    if spec.fault == Some(FaultCode::WrongResult) {
        logged = match outcome {
            Outcome::Draw => Outcome::Winner(rng.index(n)),
            Outcome::Winner(w) => {
                if spec.kind.is_draughts() && rng.chance(0.3) {
                    Outcome::Draw
                } else {
                    Outcome::Winner((w + 1 + rng.index(n - 1)) % n)
                }
            }
        };
    }
    let (mut pay, rake) = payouts(spec.stake, n, logged);
    let mut wrong_payout = false;
    if spec.fault == Some(FaultCode::WrongPayout) && spec.stake > 0 {
        let shift = (spec.stake / 2).max(1);
        match logged {
            Outcome::Draw => {
                pay[0] += shift;
                pay[1] -= shift;
            }
            Outcome::Winner(w) => {
                let loser = (w + 1 + rng.index(n - 1)) % n;
                pay[w] -= shift;
                pay[loser] += shift;
            }
        }
        wrong_payout = true;
    }
    let accounts: Vec<String> = spec
        .players
        .iter()
        .map(|p| pop.accounts[p.account].id.clone())
        .collect();
    let body = Body::GameEnded(GameEnded {
        result: result_text(logged),
        reason,
        payouts: accounts.iter().cloned().zip(pay).collect(),
        rake,
    });
    let ts = rec.last_ts() + rng.range(4, 60);
    let i = rec.push(ts, body);
    if logged != outcome {
        rec.mark(
            i,
            FaultCode::WrongResult,
            format!(
                "logged {} where the game gave {}",
                result_text(logged),
                result_text(outcome)
            ),
        );
    }
    if wrong_payout {
        rec.mark(
            i,
            FaultCode::WrongPayout,
            "payouts do not follow the result (the sum is still pot minus rake)",
        );
    }
    if let Some(seed) = &spec.seed {
        let ts = rec.last_ts() + rng.range(1, 30);
        rec.push(ts, Body::SeedRevealed(SeedRevealed { seed: seed.clone() }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigie_log::DrawOffer;

    /// (seq, prev) of a line (seq 0 here is not a game_started: read it as plain JSON).
    fn env(line: &str) -> (i64, Option<String>) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        (
            v["seq"].as_i64().unwrap_or(-1),
            v["prev"].as_str().map(str::to_string),
        )
    }
    use crate::plan::{Arranged, GameSpec, PlayerSpec, Scenario};

    fn spec(fault: Option<FaultCode>) -> GameSpec {
        GameSpec {
            index: 0,
            id: "d10-test-000001".into(),
            kind: GameKind::Draughts10,
            server: 0,
            start_ms: 1_000_000,
            players: vec![
                PlayerSpec {
                    account: 0,
                    ip: "ip-1".into(),
                    device: "dv-1".into(),
                },
                PlayerSpec {
                    account: 1,
                    ip: "ip-2".into(),
                    device: "dv-2".into(),
                },
            ],
            stake: 10,
            rated: true,
            seed: None,
            commitment: None,
            fault,
            reused_with: None,
            scenario: Scenario {
                arranged: Arranged::Random,
                ..Scenario::random()
            },
            rng_seed: 1,
            six_bias: 0.0,
        }
    }

    fn recorded(fault: Option<FaultCode>) -> GameOutput {
        let mut rec = Recorder::new("d10-test-000001");
        for i in 0..8 {
            rec.push(
                1_000_000 + i * 10,
                Body::DrawOffer(DrawOffer {
                    player: "acc-1".into(),
                }),
            );
        }
        rec.finish(&spec(fault), &mut Rng::new(3))
    }

    #[test]
    fn lines_chain_and_count_up() {
        let out = recorded(None);
        let lines: Vec<&str> = out.line_texts().collect();
        assert_eq!(lines.len(), 8);
        for (i, l) in lines.iter().enumerate() {
            let (seq, prev) = env(l);
            assert_eq!(seq, i as i64);
            assert_eq!(prev, (i > 0).then(|| fairness::commitment(lines[i - 1])));
        }
        assert!(out.faults.is_empty());
        assert_eq!(out.text.lines().count(), 8);
    }

    #[test]
    fn envelope_faults_are_labelled_where_they_are() {
        let out = recorded(Some(FaultCode::SeqGap));
        let [f] = out.faults.as_slice() else {
            panic!("{:?}", out.faults)
        };
        let lines: Vec<&str> = out.line_texts().collect();
        let seqs: Vec<i64> = lines.iter().map(|l| env(l).0).collect();
        let k = seqs.iter().position(|&s| s == f.seq).unwrap_or(0);
        assert!(k > 0 && seqs[k] == seqs[k - 1] + 2);
        let out = recorded(Some(FaultCode::ChainBroken));
        let [f] = out.faults.as_slice() else { panic!() };
        let lines: Vec<&str> = out.line_texts().collect();
        let k = f.seq as usize;
        assert_ne!(env(lines[k]).1, Some(fairness::commitment(lines[k - 1])));
        assert_eq!(env(lines[k + 1]).1, Some(fairness::commitment(lines[k])));
    }

    #[test]
    fn payouts_follow_the_rules() {
        assert_eq!(payouts(10, 2, Outcome::Winner(1)), (vec![0, 19], 1));
        assert_eq!(payouts(50, 4, Outcome::Winner(0)), (vec![190, 0, 0, 0], 10));
        assert_eq!(payouts(20, 2, Outcome::Draw), (vec![20, 20], 0));
        assert_eq!(payouts(0, 2, Outcome::Winner(0)), (vec![0, 0], 0));
    }
}
