//! Draughts games (international 10x10, Brazilian 8x8 and its Medieval mode): move policies of varied strength, think times, draw offers, departures, timeouts with automatic moves, Medieval selections and duels, player attempts and the draughts server faults.

use super::SimError;
use super::plan::{FaultCode, GameKind, GameSpec, LoseBy};
use super::population::{Account, Behaviour, EngineUse, Lookalike, Population};
use super::record::{GameOutput, Outcome, Recorder, end_game, game_started};
use super::rng::Rng;
use super::timing::{Clockwork, Load};
use vigie_log::{
    Attempt, Body, Clock, DrawAnswer, DrawOffer, EndReason, Left, LeftReason, Move as LogMove,
    MoveAction, RejectReason, Selection, Status as LogStatus, Timeout, TimeoutOutcome,
};
use vigie_rules::fairness::{self, SelectColor};
use vigie_rules::games::draughts::search::{Engine, Limits};
use vigie_rules::games::draughts::{
    Color, DrawReason, Duel, Game, Illegal, Mode as DMode, Move, Piece, Position, Role, Square,
    Status, Variant, WinReason, classify, duel_victims,
};

/// Per-turn probability that an honest player drops (disconnection).
const P_DISCONNECT: f64 = 0.0003;
/// Per-turn probability that an honest player misses a turn (timeout).
const P_AFK_D10: f64 = 0.0002;
const P_AFK_D8: f64 = 0.002;
/// Per-turn probability that a player far behind (6 men or 2 kings) resigns.
const P_RESIGN: f64 = 0.012;
/// Probability of shuffling a king back in a balanced king ending.
const P_SHUFFLE: f64 = 0.5;
/// Per-turn probability of a flaky-network malformed attempt.
const P_MALFORMED: f64 = 0.0008;
/// Probability that a move is followed by a double-submit race (`not_your_turn` within 300 ms).
const P_RACE: f64 = 0.006;
/// Per-turn probability that a tampered client sends an illegal attempt.
const P_TAMPER: f64 = 0.18;
/// Probability that a tampered client sends an out-of-turn attempt after its move.
const P_TAMPER_OUT_OF_TURN: f64 = 0.06;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    Weak,
    Medium,
    Strong,
}

fn strength(acc: &Account) -> Strength {
    if acc.skill >= 0.68 {
        Strength::Strong
    } else if acc.skill >= 0.36 {
        Strength::Medium
    } else {
        Strength::Weak
    }
}

fn idx(c: Color) -> usize {
    match c {
        Color::White => 0,
        Color::Black => 1,
    }
}

fn color(i: usize) -> Color {
    if i == 0 { Color::White } else { Color::Black }
}

struct End {
    outcome: Outcome,
    reason: EndReason,
}

struct Sim<'a> {
    spec: &'a GameSpec,
    pop: &'a Population,
    rng: Rng,
    rec: Recorder,
    game: Game,
    variant: Variant,
    medieval: bool,
    clock: Clockwork,
    accs: [&'a Account; 2],
    ids: [String; 2],
    timeouts: [u32; 2],
    /// Timeouts still to come before the player acts again (AFK, faults).
    sit: [u32; 2],
    /// Times out until the game ends (sitters, scripted losers).
    sitting: [bool; 2],
    own_turns: [u32; 2],
    turn_start: i64,
    duels: u64,
    fault_ply: u32,
    fault_done: bool,
    timeout_rule_seat: Option<usize>,
    last_offer: [u32; 2],
    forced_draw_done: bool,
    /// Each side's last own move (from, to), for king shuffles in dead positions.
    last_move: [Option<(Square, Square)>; 2],
    /// Each seat's search engine (engine users, very strong players), made at its first use: never
    /// shared, so one player's deep searches do not lend the other their table.
    engine: [Option<Engine>; 2],
}

/// Nodes the engine of an engine-assisted account searches per move (about 10 ms).
const ENGINE_NODES: u64 = 20_000;
/// Critical positions for [`EngineUse::Critical`]: the best move this much better than the second.
const CRITICAL_GAP: i32 = 80;
/// Depth of a very strong honest player's look at each move: 3 to 5 by player.
const STRONG_DEPTH: u32 = 3;
/// The standard deviation of their judgement's error, hundredths of a man.
const STRONG_NOISE: f64 = 30.0;

/// Simulates one draughts game.
pub fn simulate(spec: &GameSpec, pop: &Population) -> Result<GameOutput, SimError> {
    let variant = if spec.kind == GameKind::Draughts10 {
        Variant::International
    } else {
        Variant::Brazilian
    };
    let medieval = spec.kind == GameKind::Medieval;
    let mut rng = Rng::new(spec.rng_seed);
    let clock = match variant {
        Variant::International => Clockwork {
            median_ms: 5000.0,
            sigma: 0.62,
            limit_ms: 30_000,
        },
        Variant::Brazilian => Clockwork {
            median_ms: 4800.0,
            sigma: 0.66,
            limit_ms: 60_000,
        },
    };
    let accs = [
        &pop.accounts[spec.players[0].account],
        &pop.accounts[spec.players[1].account],
    ];
    let fault_ply = rng.range(3, 36) as u32;
    let mut sim = Sim {
        spec,
        pop,
        rec: Recorder::new(&spec.id),
        game: if medieval {
            Game::new_medieval()
        } else {
            Game::new(variant)
        },
        variant,
        medieval,
        clock,
        ids: [accs[0].id.clone(), accs[1].id.clone()],
        accs,
        timeouts: [0; 2],
        sit: [0; 2],
        sitting: [false; 2],
        own_turns: [0; 2],
        turn_start: spec.start_ms,
        duels: 0,
        fault_ply,
        fault_done: false,
        timeout_rule_seat: None,
        last_offer: [0; 2],
        forced_draw_done: false,
        last_move: [None; 2],
        engine: [None, None],
        rng: Rng::new(rng.next_u64()),
    };
    sim.start()?;
    let end = loop {
        if let Some(end) = sim.status_end() {
            break end;
        }
        if let Some(end) = sim.turn()? {
            break end;
        }
    };
    let text = |o: Outcome| match o {
        Outcome::Draw => "draw".to_string(),
        Outcome::Winner(0) => "white".to_string(),
        Outcome::Winner(_) => "black".to_string(),
    };
    end_game(
        &mut sim.rec,
        spec,
        pop,
        &mut sim.rng,
        end.outcome,
        end.reason,
        &text,
    );
    let mut rng = sim.rng;
    Ok(sim.rec.finish(spec, &mut rng))
}

impl Sim<'_> {
    fn err(&self, detail: impl std::fmt::Display) -> SimError {
        SimError::Engine {
            game: self.spec.id.clone(),
            detail: detail.to_string(),
        }
    }

    fn start(&mut self) -> Result<(), SimError> {
        let clock = match self.variant {
            Variant::International => Clock {
                move_s: Some(30),
                ..Clock::default()
            },
            Variant::Brazilian => Clock {
                move_s: Some(60),
                max_timeouts: Some(3),
                select_s: if self.medieval { Some(20) } else { None },
                turn_s: None,
            },
        };
        let body = game_started(self.spec, self.pop, None, clock);
        self.rec.push(self.spec.start_ms, body);
        self.turn_start = self.spec.start_ms;
        if self.medieval {
            self.selections()?;
        }
        Ok(())
    }

    fn selections(&mut self) -> Result<(), SimError> {
        let start = self.spec.start_ms;
        let seed = self.spec.seed.clone().unwrap_or_default();
        let mut picks = Vec::new();
        for s in 0..2 {
            let eligible: Vec<u8> = if s == 0 {
                (21..=32).collect()
            } else {
                (1..=12).collect()
            };
            let full = !self.spec.scenario.auto_select && self.rng.chance(0.88);
            let count = if full {
                3
            } else if self.spec.scenario.auto_select {
                if s == 0 { 1 } else { 0 }
            } else {
                self.rng.range(0, 2) as usize
            };
            let mut pool = eligible.clone();
            self.rng.shuffle(&mut pool);
            let chosen: Vec<u8> = pool[..count].to_vec();
            let col = if s == 0 {
                SelectColor::White
            } else {
                SelectColor::Black
            };
            let auto = fairness::auto_select(&seed, &self.spec.id, col, &chosen, &eligible);
            let mut squares: Vec<u8> = chosen.iter().chain(auto.iter()).copied().collect();
            squares.sort_unstable();
            let ts = if count == 3 {
                start + (self.rng.lognormal(6000.0, 0.5) as i64).clamp(1500, 19_500)
            } else {
                start + 20_000 + self.rng.range(5, 150)
            };
            picks.push((ts, s, squares, auto));
        }
        picks.sort_by_key(|p| (p.0, p.1));
        for (ts, s, squares, auto) in picks {
            let random = !auto.is_empty();
            let body = Body::Selection(Selection {
                player: self.ids[s].clone(),
                squares: squares.clone(),
                auto,
            });
            let i = self.rec.push(ts, body);
            if random {
                self.rec.note_random(i);
            }
            let sq: Vec<Square> = squares
                .iter()
                .filter_map(|&n| self.variant.square(u32::from(n)))
                .collect();
            self.game.select(color(s), &sq).map_err(|e| self.err(e))?;
        }
        self.turn_start = self.rec.last_ts();
        Ok(())
    }

    fn status_end(&self) -> Option<End> {
        match self.game.status() {
            Status::Ongoing => None,
            Status::Win { winner, reason } => Some(End {
                outcome: Outcome::Winner(idx(winner)),
                reason: match reason {
                    WinReason::NoPieces => EndReason::NoPieces,
                    WinReason::NoMoves => EndReason::NoMoves,
                },
            }),
            Status::Draw { reason } => Some(End {
                outcome: Outcome::Draw,
                reason: match reason {
                    DrawReason::DrawRule => EndReason::DrawRule,
                    DrawReason::Repetition => EndReason::Repetition,
                },
            }),
        }
    }

    /// Material balance (men 1, kings 3) from `s`'s side.
    fn balance(&self, s: usize) -> i32 {
        let m = self.game.material();
        let score = |x: vigie_rules::games::draughts::SideMaterial| (x.men + 3 * x.kings) as i32;
        let (w, b) = (score(m.white), score(m.black));
        if s == 0 { w - b } else { b - w }
    }

    fn losing(&self, s: usize) -> bool {
        let margin = if self.variant == Variant::International {
            -3
        } else {
            -2
        };
        self.balance(s) <= margin
    }

    /// A time at `delay` after the turn start, never before the last event.
    fn at(&self, delay: i64) -> i64 {
        (self.turn_start + delay).max(self.rec.last_ts())
    }

    fn attempt(&mut self, s: usize, text: String, ts: i64, reason: RejectReason, think: i64) {
        let body = Body::Move(LogMove {
            player: self.ids[s].clone(),
            action: MoveAction::Draughts(text),
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

    fn turn(&mut self) -> Result<Option<End>, SimError> {
        let side = self.game.position().turn();
        let s = idx(side);
        self.own_turns[s] += 1;
        let ply = self.game.ply();
        let acc = self.accs[s];
        let losing = self.losing(s);
        let bal = self.balance(s);

        if let Some((seat, how, after)) = self.spec.scenario.loser
            && seat == s
            && self.own_turns[s] > after
        {
            match how {
                LoseBy::Leave(reason) => return Ok(Some(self.leave(s, reason))),
                LoseBy::Timeouts => self.sitting[s] = true,
            }
        }
        if self.sitting[s] || self.sit[s] > 0 {
            return self.timeout(s);
        }
        let acts = acc.acts_in(self.spec.rng_seed);
        if acc.behaviour == Behaviour::RageQuit && losing && acts && self.rng.chance(0.4) {
            let reason = if self.rng.chance(0.7) {
                LeftReason::PageClosed
            } else {
                LeftReason::Disconnected
            };
            return Ok(Some(self.leave(s, reason)));
        }
        if acc.behaviour == Behaviour::Sitter && losing && acts && self.rng.chance(0.5) {
            self.sitting[s] = true;
            return self.timeout(s);
        }
        if bal <= -6 && self.rng.chance(P_RESIGN) {
            return Ok(Some(self.leave(s, LeftReason::Resigned)));
        }
        if self.rng.chance(P_DISCONNECT)
            || (acc.disconnect_rate > 0.0 && self.rng.chance(acc.disconnect_rate))
        {
            let reason = if self.rng.chance(0.5) {
                LeftReason::PageClosed
            } else {
                LeftReason::Disconnected
            };
            return Ok(Some(self.leave(s, reason)));
        }
        let afk = if self.variant == Variant::International {
            P_AFK_D10
        } else {
            P_AFK_D8
        };
        if self.rng.chance(afk) {
            self.sit[s] = 1;
            return self.timeout(s);
        }
        let fault_turn = !self.fault_done && ply >= self.fault_ply && self.spec.fault.is_some();
        if fault_turn
            && self.spec.fault == Some(FaultCode::TimeoutRule)
            && self.variant == Variant::Brazilian
        {
            self.fault_done = true;
            self.timeout_rule_seat = Some(s);
            self.sit[s] = 3u32.saturating_sub(self.timeouts[s]).max(1);
            return self.timeout(s);
        }
        if let Some(end) = self.maybe_draw_offer(s, bal) {
            return Ok(Some(end));
        }
        let moves = self.game.legal_moves();
        if moves.is_empty() {
            return Err(self.err("no legal move in an ongoing game"));
        }
        if acc.behaviour == Behaviour::TamperedClient
            && self.rng.chance(acc.tamper_chance(P_TAMPER))
        {
            self.tampered_attempt(s);
        }
        if self.rng.chance(P_MALFORMED) {
            let text = self
                .rng
                .pick(&["", "3", "32-", "-28", "32--28", "x19"])
                .copied()
                .unwrap_or("");
            let delay = self.rng.range(200, 2500);
            let ts = self.at(delay);
            self.attempt(
                s,
                text.to_string(),
                ts,
                RejectReason::Malformed,
                ts - self.turn_start,
            );
        }
        let mut excluded: Option<Move> = None;
        let mut late = false;
        if fault_turn {
            match self.spec.fault {
                Some(FaultCode::RejectedLegal) if moves.len() >= 2 => {
                    let m = moves[self.rng.index(moves.len())].clone();
                    let delay = self.rng.range(400, 4000);
                    let ts = self.at(delay);
                    let i = self.rec.len();
                    self.attempt(
                        s,
                        m.to_full_string(),
                        ts,
                        RejectReason::Illegal,
                        ts - self.turn_start,
                    );
                    self.rec.mark(
                        i,
                        FaultCode::RejectedLegal,
                        format!("legal move {} rejected as illegal", m.to_full_string()),
                    );
                    excluded = Some(m);
                    self.fault_done = true;
                }
                Some(FaultCode::AcceptedIllegal) => {
                    if let Some((text, from, to)) = self.illegal_but_applicable() {
                        self.fault_done = true;
                        return self.accept_illegal(s, text, from, to);
                    }
                }
                Some(FaultCode::LateMove) => {
                    late = true;
                    self.fault_done = true;
                }
                _ => {}
            }
        }
        let choices: Vec<Move> = match &excluded {
            Some(x) => moves.iter().filter(|m| *m != x).cloned().collect(),
            None => moves.clone(),
        };
        let m = self.choose(&choices, s);
        let load = if moves.len() == 1 {
            Load::Forced
        } else {
            Load::Choice(moves.len())
        };
        let stalling = losing && acc.acts_in(self.spec.rng_seed);
        let mut think = self.clock.think(&mut self.rng, acc, load, stalling);
        let floor = self.rec.last_ts() - self.turn_start + self.rng.range(40, 300);
        think = think.max(floor);
        if late {
            think = self.clock.limit_ms + self.rng.range(1, 6000);
        } else {
            think = think
                .min(self.clock.limit_ms - 1)
                .max(floor.min(self.clock.limit_ms - 1));
        }
        let ts = self.turn_start + think;
        let i = self.play_move(s, &m, think, ts, false)?;
        self.last_move[s] = Some((m.from(), m.to()));
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
        self.timeouts[s] = 0;
        self.after_move(s, &m);
        Ok(None)
    }

    /// Plays `m` for `s` (own move when `!auto`), logging it at `ts` plus the
    /// duels' time; returns the event index.
    fn play_move(
        &mut self,
        s: usize,
        m: &Move,
        think: i64,
        ts: i64,
        auto: bool,
    ) -> Result<usize, SimError> {
        let mut duels = Vec::new();
        let mut flipped = false;
        if self.medieval {
            let victims = duel_victims(self.game.position(), m);
            let seed = self.spec.seed.clone().unwrap_or_default();
            let flip = !self.fault_done
                && self.spec.fault == Some(FaultCode::WrongDuel)
                && self.game.ply() >= self.fault_ply
                && !victims.is_empty();
            for (k, v) in victims.iter().enumerate() {
                let mut won = fairness::duel(&seed, &self.spec.id, self.duels);
                self.duels += 1;
                if flip && k == 0 {
                    won = !won;
                    flipped = true;
                }
                duels.push(Duel { victim: *v, won });
                if !won {
                    break;
                }
            }
            if flipped {
                self.fault_done = true;
            }
        }
        let duel_time: i64 = (0..duels.len()).map(|_| self.rng.range(900, 1800)).sum();
        let body = Body::Move(LogMove {
            player: self.ids[s].clone(),
            action: MoveAction::Draughts(m.to_full_string()),
            attempt: Attempt {
                status: LogStatus::Accepted,
                reason: None,
                think_ms: think,
                auto: auto.then_some(true),
            },
            duels: if duels.is_empty() {
                None
            } else {
                Some(
                    duels
                        .iter()
                        .map(|d| vigie_log::Duel {
                            victim: d.victim.number(),
                            won: d.won,
                        })
                        .collect(),
                )
            },
        });
        let i = self.rec.push(ts + duel_time, body);
        if !duels.is_empty() {
            self.rec.note_random(i);
        }
        if flipped {
            self.rec.mark(
                i,
                FaultCode::WrongDuel,
                "the first duel's outcome is the opposite of its derivation",
            );
        }
        self.game
            .play_with_duels(m, &duels)
            .map_err(|e| self.err(e))?;
        self.turn_start = self.rec.last_ts();
        Ok(i)
    }

    fn after_move(&mut self, s: usize, m: &Move) {
        if self.game.status() != Status::Ongoing {
            return;
        }
        let acc = self.accs[s];
        let t = self.rec.last_ts();
        if self.rng.chance(P_RACE) {
            let delta = self.rng.range(3, 300);
            self.attempt(
                s,
                m.to_full_string(),
                t + delta,
                RejectReason::NotYourTurn,
                delta,
            );
        } else if acc.behaviour == Behaviour::TamperedClient
            && self.rng.chance(acc.tamper_chance(P_TAMPER_OUT_OF_TURN))
        {
            // Well away from the turn change, while the opponent thinks.
            let delta = self.rng.range(1500, 5000);
            let mut probe = *self.game.position();
            probe.set_turn(color(s));
            let text = probe
                .legal_moves()
                .first()
                .map_or_else(|| m.to_full_string(), Move::to_full_string);
            self.attempt(s, text, t + delta, RejectReason::NotYourTurn, delta);
        }
    }

    fn leave(&mut self, s: usize, reason: LeftReason) -> End {
        let delay = (self.rng.lognormal(2500.0, 0.7) as i64).clamp(300, self.clock.honest_max());
        let ts = self.at(delay);
        self.rec.push(
            ts,
            Body::Left(Left {
                player: self.ids[s].clone(),
                reason,
            }),
        );
        End {
            outcome: Outcome::Winner(1 - s),
            reason: EndReason::Left,
        }
    }

    fn timeout(&mut self, s: usize) -> Result<Option<End>, SimError> {
        let elapsed = self.clock.timeout_elapsed(&mut self.rng);
        let ts = self.at(elapsed);
        let elapsed = ts - self.turn_start;
        if self.sit[s] > 0 {
            self.sit[s] -= 1;
        }
        let loss = match self.variant {
            Variant::International => true,
            Variant::Brazilian => {
                self.timeouts[s] += 1;
                self.timeouts[s] >= 3 && self.timeout_rule_seat != Some(s)
            }
        };
        let outcome = if loss {
            TimeoutOutcome::Loss
        } else {
            TimeoutOutcome::Auto
        };
        let i = self.rec.push(
            ts,
            Body::Timeout(Timeout {
                player: self.ids[s].clone(),
                elapsed_ms: elapsed,
                outcome,
            }),
        );
        if loss {
            if self.spec.scenario.late_attempt || self.rng.chance(0.15) {
                let text = self
                    .game
                    .legal_moves()
                    .first()
                    .map_or_else(|| "32-28".to_string(), Move::to_full_string);
                let delta = self.rng.range(20, 400);
                self.attempt(s, text, ts + delta, RejectReason::GameOver, elapsed + delta);
            }
            let reason = if self.variant == Variant::International {
                EndReason::Timeout
            } else {
                EndReason::Timeouts
            };
            return Ok(Some(End {
                outcome: Outcome::Winner(1 - s),
                reason,
            }));
        }
        if self.timeouts[s] >= 3 && self.timeout_rule_seat == Some(s) {
            self.rec.mark(
                i,
                FaultCode::TimeoutRule,
                "third consecutive timeout logged auto; the game goes on",
            );
            self.timeout_rule_seat = None;
            self.timeouts[s] = 0;
            self.sit[s] = 0;
        }
        let Some(m) = self.game.auto_move() else {
            return Err(self.err("no automatic move in an ongoing game"));
        };
        let ts = self.rec.last_ts() + self.rng.range(3, 40);
        let limit = self.clock.limit_ms;
        self.play_move(s, &m, limit, ts, true)?;
        Ok(None)
    }

    fn maybe_draw_offer(&mut self, s: usize, bal: i32) -> Option<End> {
        let ply = self.game.ply();
        let forced = !self.forced_draw_done && self.spec.scenario.draw_at.is_some_and(|p| ply >= p);
        if !forced {
            if ply < 30 || bal.abs() > 1 || self.last_offer[s] + 14 > ply {
                return None;
            }
            let m = self.game.material();
            let pieces = m.white.pieces() + m.black.pieces();
            let few = match self.variant {
                Variant::International => pieces <= 12,
                Variant::Brazilian => pieces <= 8,
            };
            if !(few || self.game.quiet_plies() >= 12) || !self.rng.chance(0.05) {
                return None;
            }
        }
        self.forced_draw_done |= forced;
        self.last_offer[s] = ply;
        let o = 1 - s;
        let delay = self.rng.range(800, 4000);
        let ts = self.at(delay);
        self.rec.push(
            ts,
            Body::DrawOffer(DrawOffer {
                player: self.ids[s].clone(),
            }),
        );
        let their = -bal;
        let accept = forced
            || (their <= 0 && self.rng.chance(0.55))
            || (their <= 1 && self.game.quiet_plies() >= 20 && self.rng.chance(0.5));
        let answer = (self.rng.lognormal(3000.0, 0.5) as i64).clamp(600, 9000);
        self.rec.push(
            ts + answer,
            Body::DrawAnswer(DrawAnswer {
                player: self.ids[o].clone(),
                accept,
            }),
        );
        accept.then_some(End {
            outcome: Outcome::Draw,
            reason: EndReason::Agreement,
        })
    }

    // ----- policies -----

    fn eval(pos: &Position, side: Color) -> i32 {
        let m = pos.material();
        let v = |x: vigie_rules::games::draughts::SideMaterial| {
            (100 * x.men + 300 * x.kings + 15 * x.medieval) as i32
        };
        let (w, b) = (v(m.white), v(m.black));
        if side == Color::White { w - b } else { b - w }
    }

    /// A chance drawn from a hash of the game, the account and `salt`, so that the game's own
    /// draws are not disturbed.
    fn hashed_chance(&self, s: usize, salt: u64, p: f64) -> bool {
        let mut h = self.spec.rng_seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for b in self.ids[s].bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng::new(h).chance(p)
    }

    /// The move the engine picks among `moves` (the legal moves, or all but a fault's excluded one)
    /// within `nodes`, with the scores of the best two.
    fn engine_pick(
        &mut self,
        s: usize,
        moves: &[Move],
        nodes: u64,
        multipv: usize,
    ) -> Option<(Move, Vec<i32>)> {
        let pos = *self.game.position();
        let engine = self.engine[s].get_or_insert_with(|| Engine::new(2));
        let a = engine.analyse_moves(&pos, &Limits::nodes(nodes), multipv, Some(moves));
        let best = a.lines.first()?;
        let m = moves.iter().find(|m| m.key() == best.mv.key())?.clone();
        Some((m, a.lines.iter().map(|l| l.score.to_cp()).collect()))
    }

    /// Engine-assisted accounts' and very strong players' moves; `None` for everyone else, and
    /// for their own moves.
    fn assisted_choice(&mut self, moves: &[Move], s: usize) -> Option<Move> {
        if self.medieval {
            return None; // the search does not model duels
        }
        let acc = self.accs[s];
        if acc.lookalike == Some(Lookalike::VeryStrong) {
            // A strong player: a shallow search of every move, judged with a small error, each
            // move looked at afresh (no table carried from earlier moves).
            let pos = *self.game.position();
            let engine = self.engine[s].get_or_insert_with(|| Engine::new(1));
            engine.clear();
            // Each player sees 3 to 5 plies (a hash of the account, not a draw of the game).
            let depth = STRONG_DEPTH + (acc.id.bytes().map(u32::from).sum::<u32>() % 3);
            let a = engine.analyse_moves(&pos, &Limits::depth(depth), moves.len(), Some(moves));
            let mut best: Option<(f64, &Move)> = None;
            for l in &a.lines {
                let v = f64::from(l.score.to_cp()) + STRONG_NOISE * self.rng.normal();
                if best.is_none_or(|(b, _)| v > b) {
                    best = Some((v, &l.mv));
                }
            }
            let (_, m) = best?;
            return moves.iter().find(|x| x.key() == m.key()).cloned();
        }
        let ply = u64::from(self.game.ply());
        match acc.engine? {
            EngineUse::Moves(share) => {
                if self.hashed_chance(s, ply + 1, share) {
                    return self.engine_pick(s, moves, ENGINE_NODES, 1).map(|(m, _)| m);
                }
                None
            }
            EngineUse::Games(share) => {
                if self.hashed_chance(s, 0, share) {
                    return self.engine_pick(s, moves, ENGINE_NODES, 1).map(|(m, _)| m);
                }
                None
            }
            EngineUse::Critical => {
                let (m, scores) = self.engine_pick(s, moves, ENGINE_NODES, 2)?;
                match scores.as_slice() {
                    [best, second, ..] if best - second >= CRITICAL_GAP => Some(m),
                    _ => None,
                }
            }
        }
    }

    fn choose(&mut self, moves: &[Move], s: usize) -> Move {
        if moves.len() == 1 {
            return moves[0].clone();
        }
        if let Some(m) = self.assisted_choice(moves, s) {
            return m;
        }
        let pos = *self.game.position();
        let side = pos.turn();
        let st = strength(self.accs[s]);
        let noise = match st {
            Strength::Weak => 400.0,
            Strength::Medium => 60.0,
            Strength::Strong => 12.0,
        };
        // In a dead, balanced king ending people shuffle a king back and forth.
        if let Some((from, to)) = self.last_move[s]
            && self.balance(s).abs() <= 1
            && !pos.has_capture()
        {
            let back = moves
                .iter()
                .find(|m| m.role() == Role::King && m.from() == to && m.to() == from);
            if let Some(b) = back
                && Self::threat(&pos.after(b)) == 0
                && self.rng.chance(P_SHUFFLE)
            {
                return b.clone();
            }
        }
        if st == Strength::Weak && self.rng.chance(0.5) {
            if let Some(p) = moves.iter().find(|m| m.promotes()) {
                return p.clone();
            }
            return moves[self.rng.index(moves.len())].clone();
        }
        let mut best = (f64::NEG_INFINITY, 0usize);
        for (k, m) in moves.iter().enumerate() {
            let p1 = pos.after(m);
            let score = match st {
                Strength::Strong => {
                    let replies = p1.legal_paths();
                    if replies.is_empty() {
                        100_000
                    } else {
                        replies
                            .iter()
                            .map(|r| {
                                let p2 = p1.after(r);
                                Self::eval(&p2, side) + Self::threat(&p2) * 90
                            })
                            .min()
                            .unwrap_or(0)
                    }
                }
                _ => Self::eval(&p1, side) - Self::threat(&p1) * 90,
            };
            let score = f64::from(score) + noise * self.rng.normal();
            if score > best.0 {
                best = (score, k);
            }
        }
        moves[best.1].clone()
    }

    /// Pieces the side to move can take at once (0 without capture).
    fn threat(pos: &Position) -> i32 {
        if !pos.has_capture() {
            return 0;
        }
        pos.legal_paths()
            .first()
            .map_or(0, |m| m.captures().len() as i32)
    }

    // ----- attempts and faults -----

    /// A text for each kind of illegal attempt, checked with the engine's classifier.
    fn tampered_attempt(&mut self, s: usize) {
        let pos = *self.game.position();
        let mut kinds = [0u8, 1, 2, 3, 4, 5];
        self.rng.shuffle(&mut kinds);
        for k in kinds {
            let found: Option<(String, RejectReason)> = match k {
                0 => {
                    let mut theirs = pos;
                    theirs.set_turn(pos.turn().other());
                    let ms = theirs.legal_moves();
                    self.rng
                        .pick(&ms)
                        .map(|m| (m.to_full_string(), RejectReason::Illegal))
                        .filter(|(t, _)| {
                            matches!(classify(&pos, t), Err(Illegal::NotOwnPiece { .. }))
                        })
                }
                1 => {
                    let steps = backward_steps(&pos);
                    self.rng
                        .pick(&steps)
                        .map(|(a, b)| (format!("{a}-{b}"), RejectReason::Illegal))
                        .filter(|(t, _)| matches!(classify(&pos, t), Err(Illegal::WrongDirection)))
                }
                2 if pos.has_capture() => {
                    let q = pos.quiet_moves();
                    self.rng
                        .pick(&q)
                        .map(|m| (m.to_full_string(), RejectReason::Illegal))
                        .filter(|(t, _)| {
                            matches!(classify(&pos, t), Err(Illegal::SkippedMandatoryCapture))
                        })
                }
                3 => {
                    let paths = pos.legal_paths();
                    paths
                        .iter()
                        .find(|m| m.captures().len() >= 2)
                        .map(|m| {
                            let stops: Vec<String> = m.path()[..2]
                                .iter()
                                .map(|q| q.number().to_string())
                                .collect();
                            (stops.join("x"), RejectReason::Illegal)
                        })
                        .filter(|(t, _)| {
                            matches!(classify(&pos, t), Err(Illegal::NotMajority { .. }))
                        })
                }
                4 => {
                    let own: Vec<Square> = pos
                        .pieces()
                        .into_iter()
                        .filter(|(_, p)| p.color == pos.turn())
                        .map(|(q, _)| q)
                        .collect();
                    let mut out = None;
                    for _ in 0..12 {
                        let (Some(from), Some(to)) =
                            (
                                self.rng.pick(&own).copied(),
                                self.variant.square(
                                    self.rng.range(1, i64::from(self.variant.squares())) as u32,
                                ),
                            )
                        else {
                            break;
                        };
                        let t = format!("{}-{}", from.number(), to.number());
                        if matches!(classify(&pos, &t), Err(Illegal::NoSuchPath)) {
                            out = Some((t, RejectReason::Illegal));
                            break;
                        }
                    }
                    out
                }
                5 => {
                    let junk = [
                        "e3-f4",
                        "32_28",
                        "move 32 28",
                        "99-98",
                        "32-28-23",
                        "0-5",
                        "05-10",
                        "32–28",
                    ];
                    self.rng
                        .pick(&junk)
                        .map(|t| (t.to_string(), RejectReason::Malformed))
                        .filter(|(t, _)| matches!(classify(&pos, t), Err(Illegal::Unparseable(_))))
                }
                _ => None,
            };
            if let Some((text, reason)) = found {
                let delay = self.rng.range(250, 3000);
                let ts = self.at(delay);
                self.attempt(s, text, ts, reason, ts - self.turn_start);
                return;
            }
        }
    }

    /// An illegal move the board can still apply: a quiet man move while a
    /// capture is mandatory, or a man stepping backwards (never a promotion).
    fn illegal_but_applicable(&mut self) -> Option<(String, Square, Square)> {
        let pos = *self.game.position();
        if pos.has_capture() {
            let q: Vec<Move> = pos
                .quiet_moves()
                .into_iter()
                .filter(|m| m.role() == Role::Man && !m.promotes())
                .collect();
            if let Some(m) = self.rng.pick(&q) {
                let t = m.to_full_string();
                if matches!(classify(&pos, &t), Err(Illegal::SkippedMandatoryCapture)) {
                    return Some((t, m.from(), m.to()));
                }
            }
        }
        let steps = backward_steps(&pos);
        let (a, b) = *self.rng.pick(&steps)?;
        let t = format!("{a}-{b}");
        if matches!(classify(&pos, &t), Err(Illegal::WrongDirection)) {
            return Some((
                t,
                self.variant.square(u32::from(a))?,
                self.variant.square(u32::from(b))?,
            ));
        }
        None
    }

    fn accept_illegal(
        &mut self,
        s: usize,
        text: String,
        from: Square,
        to: Square,
    ) -> Result<Option<End>, SimError> {
        let acc = self.accs[s];
        let think = self.clock.think(&mut self.rng, acc, Load::Choice(6), false);
        let think = think.max(self.rec.last_ts() - self.turn_start + 50);
        let ts = self.turn_start + think;
        let body = Body::Move(LogMove {
            player: self.ids[s].clone(),
            action: MoveAction::Draughts(text.clone()),
            attempt: Attempt {
                status: LogStatus::Accepted,
                reason: None,
                think_ms: think,
                auto: None,
            },
            duels: None,
        });
        let i = self.rec.push(ts, body);
        self.rec.mark(
            i,
            FaultCode::AcceptedIllegal,
            format!("illegal move {text} accepted"),
        );
        let mut next = *self.game.position();
        let piece: Option<Piece> = next.piece_at(from);
        next.set_piece(from, None);
        next.set_piece(to, piece);
        next.set_turn(next.turn().other());
        let mode = if self.medieval {
            DMode::Medieval
        } else {
            DMode::Standard
        };
        self.game = Game::from_position(next, mode);
        self.timeouts[s] = 0;
        self.turn_start = self.rec.last_ts();
        Ok(None)
    }
}

/// Every backward step of a man of the side to move onto an empty square.
fn backward_steps(pos: &Position) -> Vec<(u8, u8)> {
    let us = pos.turn();
    let mut out = Vec::new();
    for (sq, p) in pos.pieces() {
        if p.color != us || p.role != Role::Man {
            continue;
        }
        let mut probe = Position::empty(pos.variant(), us.other());
        probe.set_piece(
            sq,
            Some(Piece {
                color: us.other(),
                role: Role::Man,
                medieval: false,
            }),
        );
        for m in probe.quiet_moves() {
            if pos.piece_at(m.to()).is_none() {
                out.push((sq.number(), m.to().number()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_steps_are_wrong_direction() {
        let pos = Position::new(Variant::Brazilian);
        let after = pos.after(&pos.legal_moves()[0]);
        let after = after.after(&after.legal_moves()[0]);
        for (a, b) in backward_steps(&after) {
            assert!(matches!(
                classify(&after, &format!("{a}-{b}")),
                Err(Illegal::WrongDirection)
            ));
        }
        assert!(!backward_steps(&after).is_empty());
    }
}
