//! Ludo games (classic 4 players, duel and quick 2 players): dice from the fairness derivation, token policies, passes, bonus rolls and third sixes, timeouts with automatic actions, forfeits, departures, player attempts and the Ludo server faults.

use super::SimError;
use super::plan::{FaultCode, GameSpec, LoseBy, LudoPreset};
use super::population::{Account, Behaviour, Population};
use super::record::{GameOutput, Outcome, Recorder, end_game, game_started};
use super::rng::Rng;
use super::timing::{Clockwork, Load};
use vigie_log::{
    Attempt, Body, Clock, EndReason, Left, LeftReason, LudoVariant, Move as LogMove, MoveAction,
    RejectReason, Roll, Status as LogStatus, Timeout, TimeoutOutcome, Variant as LogVariant,
};
use vigie_rules::fairness::Dice;
use vigie_rules::games::ludo::{
    self, EndReason as LudoEnd, Expected, FINISHED, Game, LAST_TRACK, LudoError, PlayerStatus,
    Seat, TimeoutOutcome as LudoTimeout, TokenPos,
};

const P_DISCONNECT: f64 = 0.0002;
const P_AFK: f64 = 0.0015;
const P_RACE: f64 = 0.004;
const P_TAMPER: f64 = 0.12;
const P_TAMPER_OUT_OF_TURN: f64 = 0.03;

struct Sim<'a> {
    spec: &'a GameSpec,
    rng: Rng,
    rec: Recorder,
    game: Game,
    dice: Dice,
    clock: Clockwork,
    accs: Vec<&'a Account>,
    ids: Vec<String>,
    sit: Vec<u32>,
    sitting: Vec<bool>,
    own_turns: Vec<u32>,
    turn_start: i64,
    fault_roll: u64,
    fault_done: bool,
    last_removal: EndReason,
}

fn variant_of(preset: LudoPreset) -> ludo::Variant {
    match preset {
        LudoPreset::Classic => ludo::Variant::classic(),
        LudoPreset::Duel => ludo::Variant::duel(),
        LudoPreset::Quick => ludo::Variant::quick(),
    }
}

/// Simulates one Ludo game.
pub fn simulate(
    spec: &GameSpec,
    pop: &Population,
    preset: LudoPreset,
) -> Result<GameOutput, SimError> {
    let variant = variant_of(preset);
    let seats: Vec<Seat> = if variant.players == 2 {
        vec![Seat::Red, Seat::Yellow]
    } else {
        Seat::ALL.to_vec()
    };
    let err = |e: LudoError| SimError::Engine {
        game: spec.id.clone(),
        detail: e.to_string(),
    };
    let game = Game::new(variant.clone(), &seats).map_err(err)?;
    let mut rng = Rng::new(spec.rng_seed);
    let accs: Vec<&Account> = spec
        .players
        .iter()
        .map(|p| &pop.accounts[p.account])
        .collect();
    let n = accs.len();
    let seed = spec.seed.clone().unwrap_or_default();
    let mut sim = Sim {
        spec,
        rec: Recorder::new(&spec.id),
        game,
        dice: Dice::new(&seed, &spec.id),
        clock: Clockwork {
            median_ms: 2600.0,
            sigma: 0.55,
            limit_ms: i64::from(variant.turn_s) * 1000,
        },
        ids: accs.iter().map(|a| a.id.clone()).collect(),
        accs,
        sit: vec![0; n],
        sitting: vec![false; n],
        own_turns: vec![0; n],
        turn_start: spec.start_ms,
        fault_roll: rng.range(3, 60) as u64,
        fault_done: false,
        last_removal: EndReason::Left,
        rng: Rng::new(rng.next_u64()),
    };
    let log_variant = LogVariant::Ludo(LudoVariant {
        name: variant.name.clone(),
        players: variant.players,
        tokens: variant.tokens,
        exit_on: variant.exit_on.clone(),
        safe_squares: variant.safe_squares,
        bonus_on_six: variant.bonus_on_six,
        three_sixes: variant.three_sixes,
        bonus_on_capture: variant.bonus_on_capture,
        bonus_on_finish: variant.bonus_on_finish,
        turn_s: variant.turn_s,
        max_timeouts: variant.max_timeouts,
    });
    let clock = Clock {
        turn_s: Some(variant.turn_s),
        max_timeouts: Some(variant.max_timeouts),
        ..Clock::default()
    };
    let body = game_started(spec, pop, Some(log_variant), clock);
    sim.rec.push(spec.start_ms, body);
    sim.turn_start = spec.start_ms;
    let mut guard = 0u32;
    loop {
        guard += 1;
        if guard > 20_000 {
            return Err(SimError::Engine {
                game: spec.id.clone(),
                detail: "Ludo game does not end".into(),
            });
        }
        match sim.game.expected() {
            Expected::Nothing => break,
            Expected::Roll(p) => sim.roll_phase(p)?,
            Expected::Move { player, value } => sim.move_phase(player, value)?,
            Expected::Pass { player, .. } => sim.pass(player)?,
        }
    }
    let Some((winner, how)) = sim.game.winner() else {
        return Err(SimError::Engine {
            game: spec.id.clone(),
            detail: "Ludo game over without winner".into(),
        });
    };
    let reason = match how {
        LudoEnd::Finished => EndReason::Finished,
        LudoEnd::LastPlayerStanding => sim.last_removal,
    };
    let ids = sim.ids.clone();
    let text = move |o: Outcome| match o {
        Outcome::Winner(w) => ids.get(w).cloned().unwrap_or_default(),
        Outcome::Draw => "draw".to_string(),
    };
    end_game(
        &mut sim.rec,
        spec,
        pop,
        &mut sim.rng,
        Outcome::Winner(winner),
        reason,
        &text,
    );
    let mut rng = sim.rng;
    Ok(sim.rec.finish(spec, &mut rng))
}

impl Sim<'_> {
    fn err(&self, e: impl std::fmt::Display) -> SimError {
        SimError::Engine {
            game: self.spec.id.clone(),
            detail: e.to_string(),
        }
    }

    fn at(&self, delay: i64) -> i64 {
        (self.turn_start + delay).max(self.rec.last_ts())
    }

    fn losing(&self, p: usize) -> bool {
        let tokens = i32::from(self.game.variant().tokens);
        self.game
            .progress_balance(p)
            .is_some_and(|b| b < -14 * tokens)
    }

    fn attempt(&mut self, p: usize, token: i64, ts: i64, reason: RejectReason, think: i64) {
        let body = Body::Move(LogMove {
            player: self.ids[p].clone(),
            action: MoveAction::Token(token),
            attempt: Attempt {
                status: LogStatus::Rejected,
                reason: Some(reason),
                think_ms: think.max(0),
                auto: None,
            },
            duels: None,
        });
        self.rec.push(ts, body);
    }

    fn accepted(&mut self, p: usize, action: MoveAction, ts: i64, think: i64, auto: bool) -> usize {
        let body = Body::Move(LogMove {
            player: self.ids[p].clone(),
            action,
            attempt: Attempt {
                status: LogStatus::Accepted,
                reason: None,
                think_ms: think,
                auto: auto.then_some(true),
            },
            duels: None,
        });
        self.rec.push(ts, body)
    }

    fn roll(&mut self, p: usize, ts: i64) -> Result<(), SimError> {
        let n = self.game.rolls();
        let derived = self.dice.next().unwrap_or(1);
        let mut value = derived;
        let wrong = self.spec.fault == Some(FaultCode::WrongDie)
            && !self.fault_done
            && n >= self.fault_roll;
        if wrong {
            value = (derived + self.rng.range(0, 4) as u8) % 6 + 1;
            self.fault_done = true;
        }
        let biased = !wrong
            && self.spec.six_bias > 0.0
            && derived != 6
            && self.rng.chance(self.spec.six_bias);
        if biased {
            value = 6;
        }
        let i = self.rec.push_random(
            ts,
            Body::Roll(Roll {
                player: self.ids[p].clone(),
                n: n as i64,
                value,
            }),
        );
        if wrong || biased {
            self.rec.mark(
                i,
                FaultCode::WrongDie,
                format!("roll {n} logged {value}, derivation gives {derived}"),
            );
        }
        self.game.roll(p, value).map_err(|e| self.err(e))?;
        self.turn_start = ts;
        Ok(())
    }

    fn leave(&mut self, p: usize, reason: LeftReason) -> Result<(), SimError> {
        let delay = (self.rng.lognormal(1500.0, 0.7) as i64).clamp(200, self.clock.honest_max());
        let ts = self.at(delay);
        self.rec.push(
            ts,
            Body::Left(Left {
                player: self.ids[p].clone(),
                reason,
            }),
        );
        self.game.leave(p).map_err(|e| self.err(e))?;
        self.last_removal = EndReason::Left;
        self.turn_start = ts;
        Ok(())
    }

    /// Departures, sitting and AFK at the start of an action; `true` when handled.
    fn interrupt(&mut self, p: usize, roll_phase: bool) -> Result<bool, SimError> {
        let acc = self.accs[p];
        if roll_phase {
            self.own_turns[p] += 1;
            if let Some((seat, how, after)) = self.spec.scenario.loser
                && seat == p
                && self.own_turns[p] > after
            {
                match how {
                    LoseBy::Leave(reason) => {
                        self.leave(p, reason)?;
                        return Ok(true);
                    }
                    LoseBy::Timeouts => self.sitting[p] = true,
                }
            }
            let losing = self.losing(p);
            let acts = acc.acts_in(self.spec.rng_seed);
            if acc.behaviour == Behaviour::RageQuit && losing && acts && self.rng.chance(0.3) {
                let reason = if self.rng.chance(0.7) {
                    LeftReason::PageClosed
                } else {
                    LeftReason::Disconnected
                };
                self.leave(p, reason)?;
                return Ok(true);
            }
            if acc.behaviour == Behaviour::Sitter && losing && acts && self.rng.chance(0.4) {
                self.sitting[p] = true;
            }
            if self.rng.chance(P_DISCONNECT)
                || (acc.disconnect_rate > 0.0 && self.rng.chance(acc.disconnect_rate))
            {
                self.leave(p, LeftReason::Disconnected)?;
                return Ok(true);
            }
            if !self.sitting[p] && self.rng.chance(P_AFK) {
                self.sit[p] = 1;
            }
        }
        if self.sitting[p] || self.sit[p] > 0 {
            self.timeout(p)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn roll_phase(&mut self, p: usize) -> Result<(), SimError> {
        if self.interrupt(p, true)? {
            return Ok(());
        }
        let delay = self.clock.click(&mut self.rng, self.accs[p]);
        let ts = self.at(delay);
        self.roll(p, ts)
    }

    fn timeout(&mut self, p: usize) -> Result<(), SimError> {
        let elapsed = self.clock.timeout_elapsed(&mut self.rng);
        let ts = self.at(elapsed);
        let elapsed = ts - self.turn_start;
        if self.sit[p] > 0 {
            self.sit[p] -= 1;
        }
        let out = self.game.timeout(p).map_err(|e| self.err(e))?;
        let player = self.ids[p].clone();
        match out {
            LudoTimeout::AutoRoll => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Auto,
                    }),
                );
                let t = ts + self.rng.range(2, 30);
                self.roll(p, t)?;
            }
            LudoTimeout::AutoMove(m) => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Auto,
                    }),
                );
                let t = ts + self.rng.range(2, 30);
                let limit = self.clock.limit_ms;
                self.accepted(p, MoveAction::Token(i64::from(m.token)), t, limit, true);
                self.turn_start = t;
            }
            LudoTimeout::AutoPass(_) => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Auto,
                    }),
                );
                let t = ts + self.rng.range(2, 30);
                self.accepted(p, MoveAction::Pass, t, 0, false);
                self.turn_start = t;
            }
            LudoTimeout::Forfeit { winner, .. } => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Forfeit,
                    }),
                );
                self.last_removal = EndReason::Timeouts;
                if winner.is_some() && (self.spec.scenario.late_attempt || self.rng.chance(0.1)) {
                    let delta = self.rng.range(20, 400);
                    self.attempt(p, 0, ts + delta, RejectReason::GameOver, elapsed + delta);
                }
                self.turn_start = ts;
            }
        }
        Ok(())
    }

    fn pass(&mut self, p: usize) -> Result<(), SimError> {
        let delay = self.rng.range(2, 40);
        let ts = self.at(delay);
        self.accepted(p, MoveAction::Pass, ts, 0, false);
        self.game.pass(p).map_err(|e| self.err(e))?;
        self.turn_start = ts;
        Ok(())
    }

    fn move_phase(&mut self, p: usize, value: u8) -> Result<(), SimError> {
        if self.interrupt(p, false)? {
            return Ok(());
        }
        let legal = self.game.legal_tokens(value);
        if legal.is_empty() {
            return Err(self.err("move expected without a movable token"));
        }
        // Another player's tampered client acting out of turn, well after the turn began.
        for q in 0..self.accs.len() {
            if q != p
                && self.game.status(q) == Some(PlayerStatus::Playing)
                && self.accs[q].behaviour == Behaviour::TamperedClient
                && self
                    .rng
                    .chance(self.accs[q].tamper_chance(P_TAMPER_OUT_OF_TURN))
            {
                let delta = self.rng.range(1500, 4000);
                let ts = self.at(delta);
                let token = self.rng.range(0, i64::from(self.game.variant().tokens) - 1);
                self.attempt(
                    q,
                    token,
                    ts,
                    RejectReason::NotYourTurn,
                    ts - self.turn_start,
                );
            }
        }
        if self.accs[p].behaviour == Behaviour::TamperedClient
            && self.rng.chance(self.accs[p].tamper_chance(P_TAMPER))
        {
            self.tampered_attempt(p, value);
        }
        let fault_turn =
            self.spec.fault.is_some() && !self.fault_done && self.game.rolls() > self.fault_roll;
        let mut excluded = None;
        let mut late = false;
        if fault_turn {
            match self.spec.fault {
                Some(FaultCode::RejectedLegal) if legal.len() >= 2 => {
                    let t = legal[self.rng.index(legal.len())];
                    let delay = self.rng.range(300, 2500);
                    let ts = self.at(delay);
                    let i = self.rec.len();
                    self.attempt(
                        p,
                        i64::from(t),
                        ts,
                        RejectReason::Illegal,
                        ts - self.turn_start,
                    );
                    self.rec.mark(
                        i,
                        FaultCode::RejectedLegal,
                        format!("legal token {t} rejected as illegal"),
                    );
                    excluded = Some(t);
                    self.fault_done = true;
                }
                Some(FaultCode::LateMove) => {
                    late = true;
                    self.fault_done = true;
                }
                _ => {}
            }
        }
        let choices: Vec<u8> = legal
            .iter()
            .copied()
            .filter(|t| Some(*t) != excluded)
            .collect();
        let token = self.choose(p, value, &choices);
        let load = if legal.len() == 1 {
            Load::Forced
        } else {
            Load::Choice(legal.len() * 2)
        };
        let losing = self.losing(p);
        let stalling = losing && self.accs[p].acts_in(self.spec.rng_seed);
        let mut think = self
            .clock
            .think(&mut self.rng, self.accs[p], load, stalling);
        let floor = self.rec.last_ts() - self.turn_start + self.rng.range(40, 250);
        think = think.max(floor);
        if late {
            think = self.clock.limit_ms + self.rng.range(1, 4000);
        } else {
            think = think.min(self.clock.limit_ms - 1);
        }
        let ts = self.turn_start + think;
        let i = self.accepted(p, MoveAction::Token(i64::from(token)), ts, think, false);
        if late {
            self.rec.mark(
                i,
                FaultCode::LateMove,
                format!(
                    "accepted with think_ms {think} over the {} ms limit",
                    self.clock.limit_ms
                ),
            );
        }
        let out = self.game.move_token(p, token).map_err(|e| self.err(e))?;
        self.turn_start = ts;
        if out.next.is_some_and(|n| n != p) && self.rng.chance(P_RACE) {
            let delta = self.rng.range(3, 300);
            self.attempt(
                p,
                i64::from(token),
                ts + delta,
                RejectReason::NotYourTurn,
                delta,
            );
        }
        Ok(())
    }

    fn tampered_attempt(&mut self, p: usize, value: u8) {
        let tokens = self.game.variant().tokens;
        let Some(positions) = self.game.tokens(p).map(<[TokenPos]>::to_vec) else {
            return;
        };
        let mut kinds = [0u8, 1, 2, 3];
        self.rng.shuffle(&mut kinds);
        for k in kinds {
            let candidate: Option<u8> = match k {
                0 => Some(tokens + self.rng.range(0, 3) as u8),
                1 => (0..tokens).find(|&t| matches!(positions[usize::from(t)], TokenPos::At(q) if q < FINISHED && q + value > FINISHED)),
                2 => (0..tokens).find(|&t| positions[usize::from(t)] == TokenPos::Yard && !self.game.variant().exits_on(value)),
                _ => (0..tokens).find(|&t| positions[usize::from(t)] == TokenPos::At(FINISHED)),
            };
            let Some(t) = candidate else { continue };
            let ok = matches!(
                (k, self.game.classify_move(p, t)),
                (0, Err(LudoError::NoSuchToken { .. }))
                    | (1, Err(LudoError::WrongDistance { .. }))
                    | (2, Err(LudoError::NotAllowedOutOfYard { .. }))
                    | (3, Err(LudoError::TokenFinished(_)))
            );
            if ok {
                let delay = self.rng.range(250, 2500);
                let ts = self.at(delay);
                self.attempt(
                    p,
                    i64::from(t),
                    ts,
                    RejectReason::Illegal,
                    ts - self.turn_start,
                );
                return;
            }
        }
    }

    fn choose(&mut self, p: usize, value: u8, legal: &[u8]) -> u8 {
        if legal.len() == 1 {
            return legal[0];
        }
        let skill = self.accs[p].skill;
        if skill < 0.3 && self.rng.chance(0.5) {
            return legal[self.rng.index(legal.len())];
        }
        let Some(seat) = self.game.seat(p) else {
            return legal[0];
        };
        let Some(mine) = self.game.tokens(p).map(<[TokenPos]>::to_vec) else {
            return legal[0];
        };
        let mut best = (f64::NEG_INFINITY, legal[0]);
        for &t in legal {
            let from = mine[usize::from(t)];
            let to = match from {
                TokenPos::Yard => 0,
                TokenPos::At(q) => q + value,
                TokenPos::Removed => continue,
            };
            let mut score = f64::from(to) * 0.3;
            if to == FINISHED {
                score += 60.0;
            }
            if from == TokenPos::Yard {
                score += 35.0;
            }
            if to > LAST_TRACK && to < FINISHED {
                score += 12.0;
            }
            if to <= LAST_TRACK {
                let square = seat.square(to);
                if self.game.variant().is_safe(square) {
                    score += 8.0;
                } else {
                    for q in 0..self.game.players() {
                        if q == p || self.game.status(q) != Some(PlayerStatus::Playing) {
                            continue;
                        }
                        let Some(qs) = self.game.seat(q) else {
                            continue;
                        };
                        let hits = self.game.tokens(q).map_or(0, |ts| {
                            ts.iter().filter(|tp| matches!(tp, TokenPos::At(x) if *x <= LAST_TRACK && qs.square(*x) == square)).count()
                        });
                        score += 50.0 * hits as f64;
                    }
                }
            }
            score += (1.0 - skill) * 25.0 * self.rng.normal();
            if score > best.0 {
                best = (score, t);
            }
        }
        best.1
    }
}
