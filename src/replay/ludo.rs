//! Ludo replay: rolls, token moves and passes, bonus rolls and third sixes, timeouts, forfeits, results.

use super::attempt::{Attempted, judge_attempt, turn_clock};
use super::context::{Cx, Draw, Logged, Rules};
use super::finding::Code;
use super::rows::{DepartureRow, MoveRow};
use crate::games::ludo::{self as l, Expected, Game, LudoError, Seat, Variant};
use crate::lake::record::Ts;
use crate::log::{Body, EndReason, MoveAction, TimeoutOutcome};

/// The engine's settings of a logged Ludo variant.
pub fn engine_variant(v: &crate::log::LudoVariant) -> Variant {
    Variant {
        name: v.name.clone(),
        players: v.players,
        tokens: v.tokens,
        exit_on: v.exit_on.clone(),
        safe_squares: v.safe_squares,
        bonus_on_six: v.bonus_on_six,
        three_sixes: v.three_sixes,
        bonus_on_capture: v.bonus_on_capture,
        bonus_on_finish: v.bonus_on_finish,
        turn_s: v.turn_s,
        max_timeouts: v.max_timeouts,
    }
}

/// The logged form of an engine variant (for writers of logs: the simulator, test fixtures).
pub fn logged_variant(v: &Variant) -> crate::log::LudoVariant {
    crate::log::LudoVariant {
        name: v.name.clone(),
        players: v.players,
        tokens: v.tokens,
        exit_on: v.exit_on.clone(),
        safe_squares: v.safe_squares,
        bonus_on_six: v.bonus_on_six,
        three_sixes: v.three_sixes,
        bonus_on_capture: v.bonus_on_capture,
        bonus_on_finish: v.bonus_on_finish,
        turn_s: v.turn_s,
        max_timeouts: v.max_timeouts,
    }
}

pub struct LudoRules {
    game: Option<Game>,
    accounts: Vec<String>,
    limit_ms: i64,
    /// When the current action's clock started (previous event that handed over the action).
    turn_since: i64,
    /// When the turn last changed hands.
    turn_changed: i64,
    /// The automatic move the server owes after a timeout in the move phase: (player, token or pass).
    owed_auto: Option<(usize, Option<u8>)>,
    /// When the timeout that owes `owed_auto` was logged.
    owed_at: i64,
    /// The last roll's value, for the moves table.
    die: Option<u8>,
    ply: i64,
    /// Why the last player was eliminated (for the end reason when one player remains).
    last_elimination: Option<EndReason>,
}

fn code_of(e: &LudoError) -> Code {
    match e {
        LudoError::GameOver => Code::AfterEnd,
        LudoError::NotYourTurn { .. } | LudoError::PlayerOut(_) | LudoError::UnknownPlayer(_) => {
            Code::OutOfTurn
        }
        LudoError::ExpectedRoll(_) | LudoError::ExpectedMove(_) => Code::WrongPhase,
        LudoError::NoSuchToken { .. } => Code::NoSuchToken,
        LudoError::TokenFinished(_) => Code::TokenFinished,
        LudoError::NotAllowedOutOfYard { .. } => Code::NotOutOfYard,
        LudoError::WrongDistance { .. } => Code::WrongDistance,
        LudoError::PassWhileMovable { .. } => Code::PassWhileMovable,
        LudoError::InvalidDieValue(_) | LudoError::Variant(_) | LudoError::Seats(_) => {
            Code::WrongPhase
        }
    }
}

impl LudoRules {
    pub fn new(cx: &Cx<'_>) -> LudoRules {
        let start = cx.start;
        let accounts = cx.accounts();
        let game = match &start.variant {
            Some(crate::log::Variant::Ludo(v)) => {
                let variant = engine_variant(v);
                let seats: Vec<Seat> = start
                    .players
                    .iter()
                    .filter_map(|p| p.seat.as_str().parse::<Seat>().ok())
                    .collect();
                Game::new(variant, &seats).ok()
            }
            _ => None,
        };
        let turn_s = start.clock.turn_s.unwrap_or(15);
        LudoRules {
            game,
            accounts,
            limit_ms: i64::from(turn_s) * 1000,
            turn_since: cx.start_ts(),
            turn_changed: cx.start_ts(),
            owed_auto: None,
            owed_at: 0,
            die: None,
            ply: 0,
            last_elimination: None,
        }
    }

    fn index(&self, account: &str) -> Option<usize> {
        self.accounts.iter().position(|a| a == account)
    }

    fn settle(&mut self, seq: i64, cx: &mut Cx<'_>) {
        let Some(g) = &self.game else { return };
        if let Some((p, why)) = g.winner() {
            let reason = match why {
                l::EndReason::Finished => EndReason::Finished,
                l::EndReason::LastPlayerStanding => {
                    self.last_elimination.unwrap_or(EndReason::Left)
                }
            };
            let account = self.accounts[p].clone();
            cx.decide(account.clone(), reason, Some(account), seq);
        }
    }

    /// Hands the action to `next` at `ts`.
    fn handover(&mut self, ts: i64, changed: bool) {
        self.turn_since = ts;
        if changed {
            self.turn_changed = ts;
        }
    }

    fn current(&self) -> Option<usize> {
        self.game.as_ref().map(Game::current)
    }

    fn roll(&mut self, ev: &Logged, r: &crate::log::Roll, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        cx.draws.push(Draw::Die {
            seq,
            ts: ev.ts(),
            n: r.n,
            value: r.value,
        });
        let Some(p) = self.index(&r.player) else {
            cx.find(
                seq,
                Code::AcceptedIllegal,
                "a roll by an account that is not in the game",
            )
            .logged(r.player.clone());
            return;
        };
        if cx.desynced {
            return;
        }
        let Some(g) = self.game.as_mut() else { return };
        if r.n != g.rolls() as i64 {
            cx.find(
                seq,
                Code::AcceptedIllegal,
                format!(
                    "roll number {} logged where the game is at roll {}",
                    r.n,
                    g.rolls()
                ),
            )
            .account(&r.player)
            .expected(g.rolls().to_string())
            .logged(r.n.to_string());
        }
        let before = g.current();
        match g.roll(p, r.value) {
            Ok(outcome) => {
                self.die = Some(r.value);
                let changed = matches!(outcome, l::RollOutcome::ThirdSix { .. });
                self.handover(ev.ts(), changed || before != p);
            }
            Err(e) => {
                let f = cx.find(
                    seq,
                    Code::AcceptedIllegal,
                    format!("the server rolled for {}: {e}", r.player),
                );
                f.account = Some(r.player.clone());
                cx.desynced = true;
            }
        }
    }

    fn mv(&mut self, ev: &Logged, m: &crate::log::Move, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        let ts = ev.ts();
        let a = &m.attempt;
        let player = m.player.as_str();
        let p = self.index(player);
        let decided = cx.decision.is_some();
        let (text, token) = match &m.action {
            MoveAction::Token(t) => (t.to_string(), Some(*t)),
            MoveAction::Pass => ("pass".to_string(), None),
            MoveAction::Draughts(t) => {
                cx.find(seq, Code::AcceptedIllegal, "a draughts move in a Ludo game")
                    .account(player)
                    .logged(t.clone());
                return;
            }
        };
        if a.accepted() {
            cx.stats(player).moves += 1;
        } else {
            cx.stats(player).rejected += 1;
        }
        // The engine has already applied the automatic move a timeout owes.
        let owed_since = self.owed_auto.map(|_| self.owed_at);
        let (awaiting_auto, since_turn) = turn_clock(ts, a, decided, owed_since, self.turn_changed);
        let on_turn = p.is_some() && self.current() == p && !decided && !awaiting_auto;
        let (legal_count, balance) = match (&self.game, p, self.die) {
            (Some(g), Some(p), Some(v)) => (
                Some(g.legal_tokens_for(p, v).len() as i64),
                g.progress_balance(p).map(f64::from),
            ),
            (Some(g), Some(p), None) => (None, g.progress_balance(p).map(f64::from)),
            _ => (None, None),
        };
        // The server's automatic move after a timeout was applied when the timeout was replayed.
        let owed = self.owed_auto.filter(|(q, _)| Some(*q) == p);
        // A player who left or forfeited while the others play on: the game is over for them.
        let gone = match (&self.game, p) {
            (Some(g), Some(p)) => g.status(p).is_some_and(|s| s != l::PlayerStatus::Playing),
            _ => false,
        };
        let verdict: Option<Result<(), Code>> = if owed.is_some() && a.accepted() {
            Some(Ok(()))
        } else if decided || gone {
            Some(Err(Code::AfterEnd))
        } else if cx.desynced {
            None
        } else if awaiting_auto {
            Some(Err(Code::OutOfTurn))
        } else {
            match (&self.game, p) {
                (_, None) => Some(Err(Code::OutOfTurn)),
                (None, _) => None,
                (Some(g), Some(p)) => Some(match token {
                    // Indexes that fit no token (negative, huge) are classified as token 255: turn and phase first.
                    Some(t) => g
                        .classify_move(p, u8::try_from(t).unwrap_or(u8::MAX))
                        .map(|_| ())
                        .map_err(|e| code_of(&e)),
                    None => g.classify_pass(p).map_err(|e| code_of(&e)),
                }),
            }
        };
        judge_attempt(
            cx,
            &Attempted {
                seq,
                player,
                text: &text,
                attempt: a,
                on_turn,
                since_turn_ms: since_turn,
                limit_ms: Some(self.limit_ms),
                verdict,
                what: if token.is_some() { "token" } else { "pass" },
            },
        );
        let mut capture = None;
        let mut captured = None;
        if a.accepted() {
            if let Some((q, expected)) = owed {
                self.owed_auto = None;
                if !a.is_auto() || expected.map(i64::from) != token {
                    cx.find(
                        seq,
                        Code::WrongAutoMove,
                        "after a timeout the server moves the lowest-numbered movable token",
                    )
                    .account(player)
                    .expected(
                        expected
                            .map(|t| t.to_string())
                            .unwrap_or_else(|| "pass".into()),
                    )
                    .logged(format!(
                        "{text}{}",
                        if a.is_auto() { "" } else { " (not automatic)" }
                    ));
                }
                let _ = q;
                self.ply += 1;
                self.after_action(ts, seq, cx);
            } else if matches!(verdict, Some(Ok(()))) {
                // A pass is the server's own record whenever nothing can move (rules.md), so a pass
                // marked automatic, after a roll the server made for a timed-out player say, is no
                // evidence of anything; only an automatic token move needs a timeout before it.
                if a.is_auto() && token.is_some() {
                    cx.find(
                        seq,
                        Code::WrongAutoMove,
                        "an automatic move without a timeout before it",
                    )
                    .account(player);
                }
                if let (Some(g), Some(p)) = (self.game.as_mut(), p) {
                    let before = g.current();
                    let res = match token {
                        Some(t) => g.move_token(p, t as u8).map(|o| {
                            capture = Some(!o.captures.is_empty());
                            captured = Some(o.captures.len() as i64);
                        }),
                        None => g.pass(p).map(|_| ()),
                    };
                    if res.is_err() {
                        cx.desynced = true;
                    }
                    let changed = self.current() != Some(before);
                    self.ply += 1;
                    self.handover(ts, changed);
                    self.settle(seq, cx);
                }
            } else if matches!(verdict, Some(Err(_))) {
                // The server accepted what the rules refuse: its state and ours part ways.
                cx.desynced = true;
            }
        }
        cx.moves.push(MoveRow {
            game: cx.game.to_string(),
            seq,
            ts: Ts(ts),
            kind: cx.kind_str(),
            mode: cx.mode_str(),
            ply: self.ply - i64::from(a.accepted()),
            player: player.to_string(),
            action: if token.is_some() {
                "move".into()
            } else {
                "pass".into()
            },
            text,
            accepted: a.accepted(),
            server_reason: a.reason.map(|r| r.to_string()),
            legal: matches!(verdict, Some(Ok(()))),
            cause: match verdict {
                Some(Err(c)) => Some(c.as_str().to_string()),
                _ => None,
            },
            auto: a.is_auto(),
            think_ms: a.think_ms,
            limit_ms: Some(self.limit_ms),
            turn_ms: on_turn.then_some(ts - self.turn_since),
            on_turn,
            since_turn_ms: Some(since_turn),
            legal_count,
            forced: legal_count.map(|n| n == 1),
            capture,
            captured,
            balance,
            die: self.die.map(i64::from),
            deal: None,
        });
    }

    fn after_action(&mut self, ts: i64, seq: i64, cx: &mut Cx<'_>) {
        self.handover(ts, true);
        self.settle(seq, cx);
    }

    fn timeout(&mut self, ev: &Logged, t: &crate::log::Timeout, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        cx.stats(&t.player).timeouts += 1;
        let Some(p) = self.index(&t.player) else {
            return;
        };
        if t.elapsed_ms < self.limit_ms {
            cx.find(
                seq,
                Code::EarlyTimeout,
                format!(
                    "timeout declared after {} ms, the limit is {} ms",
                    t.elapsed_ms, self.limit_ms
                ),
            )
            .account(&t.player)
            .expected(format!(">= {}", self.limit_ms))
            .logged(t.elapsed_ms.to_string());
        }
        let balance = self
            .game
            .as_ref()
            .and_then(|g| g.progress_balance(p))
            .map(f64::from);
        let on_turn = self.current() == Some(p) && cx.decision.is_none();
        let mut decisive = false;
        let mut consecutive = None;
        if !cx.desynced
            && cx.decision.is_none()
            && let Some(g) = self.game.as_mut()
        {
            match g.timeout(p) {
                Ok(outcome) => {
                    consecutive = g.timeouts(p).map(i64::from);
                    let expected = match &outcome {
                        l::TimeoutOutcome::Forfeit { .. } => TimeoutOutcome::Forfeit,
                        _ => TimeoutOutcome::Auto,
                    };
                    if t.outcome != expected {
                        cx.find(
                            seq,
                            Code::TimeoutRule,
                            format!(
                                "after {} consecutive timeouts the outcome is {expected}",
                                consecutive.unwrap_or(0)
                            ),
                        )
                        .account(&t.player)
                        .expected(expected.to_string())
                        .logged(t.outcome.to_string());
                    }
                    match outcome {
                        l::TimeoutOutcome::AutoRoll => {}
                        l::TimeoutOutcome::AutoMove(o) => {
                            self.owed_auto = Some((p, Some(o.token)));
                            self.owed_at = ev.ts();
                        }
                        l::TimeoutOutcome::AutoPass(_) => {
                            self.owed_auto = Some((p, None));
                            self.owed_at = ev.ts();
                        }
                        l::TimeoutOutcome::Forfeit { .. } => {
                            decisive = true;
                            self.last_elimination = Some(EndReason::Timeouts);
                            self.handover(ev.ts(), true);
                            self.settle(seq, cx);
                        }
                    }
                }
                Err(e) => {
                    cx.find(
                        seq,
                        Code::TimeoutRule,
                        format!("a timeout the rules do not allow: {e}"),
                    )
                    .account(&t.player);
                }
            }
        }
        let beneficiary = if decisive {
            cx.decision.as_ref().and_then(|d| d.winner.clone())
        } else {
            None
        };
        cx.departures.push(DepartureRow {
            game: cx.game.to_string(),
            seq,
            ts: Ts(ev.ts()),
            kind: cx.kind_str(),
            mode: cx.mode_str(),
            player: t.player.clone(),
            event: "timeout".into(),
            reason: t.outcome.to_string(),
            ply: self.ply,
            balance,
            losing: balance.map(|b| b < 0.0),
            on_turn,
            elapsed_ms: Some(t.elapsed_ms),
            limit_ms: Some(self.limit_ms),
            consecutive,
            decisive,
            beneficiary,
        });
    }

    fn left(&mut self, ev: &Logged, lv: &crate::log::Left, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        cx.stats(&lv.player).left = true;
        let Some(p) = self.index(&lv.player) else {
            return;
        };
        let balance = self
            .game
            .as_ref()
            .and_then(|g| g.progress_balance(p))
            .map(f64::from);
        let on_turn = self.current() == Some(p) && cx.decision.is_none();
        let undecided = cx.decision.is_none();
        if undecided
            && !cx.desynced
            && let Some(g) = self.game.as_mut()
            && g.leave(p).is_ok()
        {
            self.last_elimination = Some(EndReason::Left);
            if self.owed_auto.is_some_and(|(q, _)| q == p) {
                self.owed_auto = None;
            }
            self.handover(ev.ts(), on_turn);
            self.settle(seq, cx);
        }
        let decisive = undecided && cx.decision.is_some();
        cx.departures.push(DepartureRow {
            game: cx.game.to_string(),
            seq,
            ts: Ts(ev.ts()),
            kind: cx.kind_str(),
            mode: cx.mode_str(),
            player: lv.player.clone(),
            event: "left".into(),
            reason: lv.reason.to_string(),
            ply: self.ply,
            balance,
            losing: balance.map(|b| b < 0.0),
            on_turn,
            elapsed_ms: on_turn.then_some(ev.ts() - self.turn_since),
            limit_ms: Some(self.limit_ms),
            consecutive: None,
            decisive,
            beneficiary: if decisive {
                cx.decision.as_ref().and_then(|d| d.winner.clone())
            } else {
                None
            },
        });
    }
}

impl Rules for LudoRules {
    fn event(&mut self, ev: &Logged, cx: &mut Cx<'_>) {
        if self.game.is_none() && !cx.desynced {
            cx.find(
                0,
                Code::AcceptedIllegal,
                "the game's Ludo variant cannot be played (invalid settings or seats)",
            );
            cx.desynced = true;
        }
        match &ev.event.body {
            Body::Roll(r) => self.roll(ev, r, cx),
            Body::Move(m) => self.mv(ev, m, cx),
            Body::Timeout(t) => self.timeout(ev, t, cx),
            Body::Left(lv) => self.left(ev, lv, cx),
            _ => {
                let ty = ev.event.event_type();
                cx.find(
                    ev.seq(),
                    Code::AcceptedIllegal,
                    format!("a {ty} event in a Ludo game"),
                );
            }
        }
        let _ = Expected::Nothing;
    }
}
