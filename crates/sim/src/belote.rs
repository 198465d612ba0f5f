//! Belote matches (two players, to 501): deals from the fairness shuffle, both bidding rounds and void deals, completed hands, card play with belote/rebelote, deal scores, timeouts with automatic actions, departures, player attempts and the Belote server faults.

use super::SimError;
use super::plan::{FaultCode, GameSpec, LoseBy};
use super::population::{Account, Behaviour, Population};
use super::record::{GameOutput, Outcome, Recorder, end_game, game_started};
use super::rng::Rng;
use super::timing::{Clockwork, Load};
use vigie_log::{
    Announce as LogAnnounce, Attempt, Bid as LogBid, Body, Clock, Deal, DealEnded, DealOutcome,
    EndReason, HandsCompleted, Left, LeftReason, Play, RejectReason, Status as LogStatus, Timeout,
    TimeoutOutcome, Variant as LogVariant,
};
use vigie_rules::fairness;
use vigie_rules::games::belote::{
    Announce, BeloteError, Bid, BidOutcome, Card, DealEnd, Expected, Match, MatchConfig, MatchEnd,
    PlayOutcome, Rank, Suit, TimeoutOutcome as BTimeout, canonical_deck, deck_from_indices,
};

const P_DISCONNECT: f64 = 0.0002;
const P_AFK: f64 = 0.0008;
const P_RACE: f64 = 0.004;
const P_TAMPER: f64 = 0.08;
const P_MALFORMED: f64 = 0.0004;

struct Sim<'a> {
    spec: &'a GameSpec,
    rng: Rng,
    rec: Recorder,
    m: Match,
    clock: Clockwork,
    accs: [&'a Account; 2],
    ids: [String; 2],
    sit: [u32; 2],
    sitting: [bool; 2],
    own_turns: [u32; 2],
    turn_start: i64,
    /// Trump kings and queens played by the belote holder in this deal.
    belote_played: u8,
    fault_deal: u32,
    fault_play: usize,
    plays_in_deal: usize,
    fault_done: bool,
    end: Option<(usize, EndReason)>,
}

/// Simulates one Belote match.
pub fn simulate(spec: &GameSpec, pop: &Population) -> Result<GameOutput, SimError> {
    let mut rng = Rng::new(spec.rng_seed);
    let config = MatchConfig::default();
    let m = Match::new(config).map_err(|e| SimError::Engine {
        game: spec.id.clone(),
        detail: e.to_string(),
    })?;
    let accs = [
        &pop.accounts[spec.players[0].account],
        &pop.accounts[spec.players[1].account],
    ];
    let mut sim = Sim {
        spec,
        rec: Recorder::new(&spec.id),
        m,
        clock: Clockwork {
            median_ms: 3600.0,
            sigma: 0.6,
            limit_ms: 30_000,
        },
        ids: [accs[0].id.clone(), accs[1].id.clone()],
        accs,
        sit: [0; 2],
        sitting: [false; 2],
        own_turns: [0; 2],
        turn_start: spec.start_ms,
        belote_played: 0,
        fault_deal: rng.range(0, 2) as u32,
        fault_play: rng.range(2, 28) as usize,
        plays_in_deal: 0,
        fault_done: false,
        end: None,
        rng: Rng::new(rng.next_u64()),
    };
    let clock = Clock {
        move_s: Some(30),
        max_timeouts: Some(config.max_timeouts),
        ..Clock::default()
    };
    let body = game_started(
        spec,
        pop,
        Some(LogVariant::Belote {
            target: config.target,
        }),
        clock,
    );
    sim.rec.push(spec.start_ms, body);
    let mut guard = 0u32;
    while sim.end.is_none() {
        guard += 1;
        if guard > 50_000 {
            return Err(sim.err("Belote match does not end"));
        }
        match sim.m.expected() {
            Expected::Nothing => {
                return Err(sim.err("match over without a recorded end"));
            }
            Expected::Deal { deal, .. } => sim.deal(deal)?,
            Expected::Bid { player, round } => sim.bid(player, round)?,
            Expected::CompleteHands { .. } => return Err(sim.err("hands left incomplete")),
            Expected::Play { player } => sim.play(player)?,
        }
    }
    let Some((winner, reason)) = sim.end else {
        return Err(sim.err("no end"));
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

fn cards(h: &[Card]) -> Vec<String> {
    h.iter().map(Card::to_string).collect()
}

fn is_kq(c: Card) -> bool {
    matches!(c.rank, Rank::King | Rank::Queen)
}

impl Sim<'_> {
    fn err(&self, e: impl std::fmt::Display) -> SimError {
        SimError::Engine {
            game: self.spec.id.clone(),
            detail: e.to_string(),
        }
    }

    fn berr(&self) -> impl Fn(BeloteError) -> SimError + '_ {
        move |e| self.err(e)
    }

    fn at(&self, delay: i64) -> i64 {
        (self.turn_start + delay).max(self.rec.last_ts())
    }

    fn losing(&self, p: usize) -> bool {
        let t = self.m.totals();
        let (mine, theirs) = (i64::from(t[p]), i64::from(t[1 - p]));
        theirs - mine >= 200 && theirs >= 300
    }

    fn deal(&mut self, d: u32) -> Result<(), SimError> {
        let seed = self.spec.seed.clone().unwrap_or_default();
        let indices = fairness::shuffle(&seed, &self.spec.id, d);
        let mut deck = deck_from_indices(&indices).map_err(|e| self.err(e))?;
        let wrong = self.spec.fault == Some(FaultCode::WrongDeal)
            && !self.fault_done
            && d >= self.fault_deal;
        let mut swapped = None;
        if wrong {
            let i = self.rng.range(0, 12) as usize;
            let j = self.rng.range(13, 31) as usize;
            deck.swap(i, j);
            swapped = Some((i, j));
            self.fault_done = true;
        }
        let delay = if d == 0 {
            self.rng.range(1000, 2200)
        } else {
            self.rng.range(800, 2500)
        };
        let ts = self.rec.last_ts() + delay;
        let start = self.m.deal(&deck).map_err(self.berr())?;
        let body = Body::Deal(Deal {
            deal: i64::from(d),
            dealer: self.ids[start.dealer].clone(),
            hands: vec![
                (self.ids[0].clone(), cards(&start.hands[0])),
                (self.ids[1].clone(), cards(&start.hands[1])),
            ],
            turned: start.turned.to_string(),
        });
        let i = self.rec.push_random(ts, body);
        if let Some((a, b)) = swapped {
            self.rec.mark(
                i,
                FaultCode::WrongDeal,
                format!("cards at deck positions {a} and {b} are swapped"),
            );
        }
        self.turn_start = ts;
        self.belote_played = 0;
        self.plays_in_deal = 0;
        Ok(())
    }

    /// Departures, sitting and AFK before an action; `true` when handled.
    fn interrupt(&mut self, p: usize) -> Result<bool, SimError> {
        self.own_turns[p] += 1;
        let acc = self.accs[p];
        if let Some((seat, how, after)) = self.spec.scenario.loser
            && seat == p
            && self.own_turns[p] > after
        {
            match how {
                LoseBy::Leave(reason) => {
                    self.leave(p, reason);
                    return Ok(true);
                }
                LoseBy::Timeouts => self.sitting[p] = true,
            }
        }
        let losing = self.losing(p);
        let acts = acc.acts_in(self.spec.rng_seed);
        if acc.behaviour == Behaviour::RageQuit && losing && acts && self.rng.chance(0.15) {
            let reason = if self.rng.chance(0.7) {
                LeftReason::PageClosed
            } else {
                LeftReason::Disconnected
            };
            self.leave(p, reason);
            return Ok(true);
        }
        if acc.behaviour == Behaviour::Sitter && losing && acts && self.rng.chance(0.2) {
            self.sitting[p] = true;
        }
        if self.rng.chance(P_DISCONNECT)
            || (acc.disconnect_rate > 0.0 && self.rng.chance(acc.disconnect_rate))
        {
            self.leave(p, LeftReason::Disconnected);
            return Ok(true);
        }
        if losing && self.rng.chance(0.004) {
            self.leave(p, LeftReason::Resigned);
            return Ok(true);
        }
        if !self.sitting[p] && self.rng.chance(P_AFK) {
            self.sit[p] = 1;
        }
        if self.sitting[p] || self.sit[p] > 0 {
            self.timeout(p)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn leave(&mut self, p: usize, reason: LeftReason) {
        let delay = (self.rng.lognormal(2000.0, 0.7) as i64).clamp(200, self.clock.honest_max());
        let ts = self.at(delay);
        self.rec.push(
            ts,
            Body::Left(Left {
                player: self.ids[p].clone(),
                reason,
            }),
        );
        let _ = self.m.leave(p);
        self.end = Some((1 - p, EndReason::Left));
    }

    fn timeout(&mut self, p: usize) -> Result<(), SimError> {
        let elapsed = self.clock.timeout_elapsed(&mut self.rng);
        let ts = self.at(elapsed);
        let elapsed = ts - self.turn_start;
        if self.sit[p] > 0 {
            self.sit[p] -= 1;
        }
        let deal = i64::from(self.m.deal_number());
        let round = match self.m.expected() {
            Expected::Bid { round, .. } => round,
            _ => 1,
        };
        let trump = self.m.trump();
        let holder = self.m.belote_holder() == Some(p);
        let out = self.m.timeout(p).map_err(self.berr())?;
        let player = self.ids[p].clone();
        let limit = self.clock.limit_ms;
        match out {
            BTimeout::Lost { winner } => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Loss,
                    }),
                );
                if self.spec.scenario.late_attempt || self.rng.chance(0.1) {
                    let delta = self.rng.range(20, 400);
                    let card = self
                        .m
                        .hand(p)
                        .first()
                        .map_or_else(|| "7S".to_string(), Card::to_string);
                    self.play_attempt(p, card, ts + delta, RejectReason::GameOver, elapsed + delta);
                }
                self.end = Some((winner, EndReason::Timeouts));
            }
            BTimeout::AutoBid(outcome) => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Auto,
                    }),
                );
                let t = ts + self.rng.range(3, 40);
                self.rec.push(
                    t,
                    Body::Bid(LogBid {
                        player: self.ids[p].clone(),
                        deal,
                        round,
                        bid: "pass".into(),
                        attempt: Attempt {
                            status: LogStatus::Accepted,
                            reason: None,
                            think_ms: limit,
                            auto: Some(true),
                        },
                    }),
                );
                self.turn_start = t;
                self.after_bid(outcome)?;
            }
            BTimeout::AutoPlay(outcome) => {
                self.rec.push(
                    ts,
                    Body::Timeout(Timeout {
                        player,
                        elapsed_ms: elapsed,
                        outcome: TimeoutOutcome::Auto,
                    }),
                );
                let t = ts + self.rng.range(3, 40);
                if holder && Some(outcome.card.suit) == trump && is_kq(outcome.card) {
                    self.belote_played += 1;
                }
                self.rec.push(
                    t,
                    Body::Play(Play {
                        player: self.ids[p].clone(),
                        deal,
                        card: outcome.card.to_string(),
                        announce: None,
                        attempt: Attempt {
                            status: LogStatus::Accepted,
                            reason: None,
                            think_ms: limit,
                            auto: Some(true),
                        },
                    }),
                );
                self.turn_start = t;
                self.plays_in_deal += 1;
                self.after_play(outcome);
            }
        }
        Ok(())
    }

    fn hand_strength(hand: &[Card], extra: Option<Card>, trump: Suit) -> i32 {
        let mut s = 0i32;
        for c in hand.iter().copied().chain(extra) {
            if c.suit == trump {
                s += c.rank.trump_points() as i32 + 6;
            } else if c.rank == Rank::Ace {
                s += 7;
            } else if c.rank == Rank::Ten {
                s += 3;
            }
        }
        s
    }

    fn bid(&mut self, p: usize, round: u8) -> Result<(), SimError> {
        if self.interrupt(p)? {
            return Ok(());
        }
        let Some(turned) = self.m.turned() else {
            return Err(self.err("no turned card while bidding"));
        };
        let hand = self.m.hand(p).to_vec();
        let skill = self.accs[p].skill;
        let bar = 40.0 + 6.0 * self.rng.normal() + (0.5 - skill) * 8.0;
        let bid = if round == 1 {
            let s = Self::hand_strength(&hand, Some(turned), turned.suit);
            if f64::from(s) >= bar {
                Bid::Take
            } else {
                Bid::Pass
            }
        } else {
            let best = Suit::ALL
                .iter()
                .copied()
                .filter(|s| *s != turned.suit)
                .map(|s| (Self::hand_strength(&hand, None, s), s))
                .max_by_key(|(v, s)| (*v, std::cmp::Reverse(s.index())));
            match best {
                Some((v, s)) if f64::from(v) >= bar - 2.0 => Bid::Name(s),
                _ => Bid::Pass,
            }
        };
        let load = if bid == Bid::Pass {
            Load::Choice(2)
        } else {
            Load::Choice(4)
        };
        let losing = self.losing(p) && self.accs[p].acts_in(self.spec.rng_seed);
        let think = self.clock.think(&mut self.rng, self.accs[p], load, losing);
        let think = think
            .max(self.rec.last_ts() - self.turn_start + 40)
            .min(self.clock.limit_ms - 1);
        let ts = self.turn_start + think;
        let deal = i64::from(self.m.deal_number());
        self.rec.push(
            ts,
            Body::Bid(LogBid {
                player: self.ids[p].clone(),
                deal,
                round,
                bid: bid.to_string(),
                attempt: Attempt {
                    status: LogStatus::Accepted,
                    reason: None,
                    think_ms: think,
                    auto: None,
                },
            }),
        );
        self.turn_start = ts;
        let outcome = self.m.bid(p, bid).map_err(self.berr())?;
        self.after_bid(outcome)
    }

    fn after_bid(&mut self, outcome: BidOutcome) -> Result<(), SimError> {
        match outcome {
            BidOutcome::Next { .. } => {}
            BidOutcome::Taken {
                taker,
                trump,
                hands,
            } => {
                let Some(h) = hands else {
                    return Err(self.err("completed hands missing"));
                };
                let ts = self.rec.last_ts() + self.rng.range(350, 1200);
                self.rec.push(
                    ts,
                    Body::HandsCompleted(HandsCompleted {
                        deal: i64::from(self.m.deal_number()),
                        trump: trump.letter().to_string(),
                        taker: self.ids[taker].clone(),
                        hands: vec![
                            (self.ids[0].clone(), cards(&h[0])),
                            (self.ids[1].clone(), cards(&h[1])),
                        ],
                    }),
                );
                self.turn_start = ts;
            }
            BidOutcome::Void(end) => self.deal_ended(&end),
        }
        Ok(())
    }

    fn deal_ended(&mut self, end: &DealEnd) {
        let ts = self.rec.last_ts() + self.rng.range(320, 1450);
        let outcome = match end.outcome {
            vigie_rules::games::belote::Outcome::Made => DealOutcome::Made,
            vigie_rules::games::belote::Outcome::Dedans => DealOutcome::Dedans,
            vigie_rules::games::belote::Outcome::Litige => DealOutcome::Litige,
            vigie_rules::games::belote::Outcome::Capot => DealOutcome::Capot,
            vigie_rules::games::belote::Outcome::Void => DealOutcome::Void,
        };
        self.rec.push(
            ts,
            Body::DealEnded(DealEnded {
                deal: i64::from(end.deal),
                points: vec![
                    (self.ids[0].clone(), i64::from(end.points[0])),
                    (self.ids[1].clone(), i64::from(end.points[1])),
                ],
                totals: vec![
                    (self.ids[0].clone(), i64::from(end.totals[0])),
                    (self.ids[1].clone(), i64::from(end.totals[1])),
                ],
                outcome,
            }),
        );
        self.turn_start = ts;
        if let Some(w) = end.match_winner {
            self.end = Some((w, EndReason::Target));
        }
    }

    fn after_play(&mut self, outcome: PlayOutcome) {
        if let Some(end) = outcome.deal_end {
            self.deal_ended(&end);
        }
        if let Some((w, MatchEnd::Target)) = self.m.winner()
            && self.end.is_none()
        {
            self.end = Some((w, EndReason::Target));
        }
    }

    fn play_attempt(&mut self, p: usize, card: String, ts: i64, reason: RejectReason, think: i64) {
        let deal = i64::from(self.m.deal_number());
        self.rec.push(
            ts,
            Body::Play(Play {
                player: self.ids[p].clone(),
                deal,
                card,
                announce: None,
                attempt: Attempt {
                    status: LogStatus::Rejected,
                    reason: Some(reason),
                    think_ms: think.max(0),
                    auto: None,
                },
            }),
        );
    }

    fn play(&mut self, p: usize) -> Result<(), SimError> {
        if self.interrupt(p)? {
            return Ok(());
        }
        let legal = self.m.legal_cards();
        if legal.is_empty() {
            return Err(self.err("no legal card"));
        }
        let Some(trump) = self.m.trump() else {
            return Err(self.err("no trump while playing"));
        };
        let o = 1 - p;
        if self.accs[p].behaviour == Behaviour::TamperedClient
            && self.rng.chance(self.accs[p].tamper_chance(P_TAMPER))
        {
            self.tampered_attempt(p, trump);
        }
        if self.accs[o].behaviour == Behaviour::TamperedClient
            && self.rng.chance(self.accs[o].tamper_chance(P_TAMPER / 3.0))
        {
            // The opponent's client plays out of turn, well after the turn began.
            let delta = self.rng.range(1500, 4500);
            let ts = self.at(delta);
            let card = self
                .m
                .played_cards()
                .first()
                .map_or(Card::new(Rank::Ace, Suit::Hearts), |x| x.1)
                .to_string();
            self.play_attempt(o, card, ts, RejectReason::NotYourTurn, ts - self.turn_start);
        }
        if self.rng.chance(P_MALFORMED) {
            let junk = self
                .rng
                .pick(&["", "10H", "A", "AHH", "ah"])
                .copied()
                .unwrap_or("");
            let delay = self.rng.range(200, 2000);
            let ts = self.at(delay);
            self.play_attempt(
                p,
                junk.to_string(),
                ts,
                RejectReason::Malformed,
                ts - self.turn_start,
            );
        }
        let fault_turn = self.spec.fault.is_some()
            && !self.fault_done
            && self.m.deal_number() >= self.fault_deal
            && self.plays_in_deal >= self.fault_play;
        let mut excluded = None;
        let mut late = false;
        if fault_turn {
            match self.spec.fault {
                Some(FaultCode::RejectedLegal) if legal.len() >= 2 => {
                    let c = legal[self.rng.index(legal.len())];
                    let delay = self.rng.range(300, 3000);
                    let ts = self.at(delay);
                    let i = self.rec.len();
                    self.play_attempt(
                        p,
                        c.to_string(),
                        ts,
                        RejectReason::Illegal,
                        ts - self.turn_start,
                    );
                    self.rec.mark(
                        i,
                        FaultCode::RejectedLegal,
                        format!("legal card {c} rejected as illegal"),
                    );
                    excluded = Some(c);
                    self.fault_done = true;
                }
                Some(FaultCode::LateMove) => {
                    late = true;
                    self.fault_done = true;
                }
                _ => {}
            }
        }
        let choices: Vec<Card> = legal
            .iter()
            .copied()
            .filter(|c| Some(*c) != excluded)
            .collect();
        let card = self.choose(p, &choices, trump);
        let mut announce = None;
        if self.m.belote_holder() == Some(p) && card.suit == trump && is_kq(card) {
            if self.rng.chance(0.97) {
                announce = Some(if self.belote_played == 0 {
                    Announce::Belote
                } else {
                    Announce::Rebelote
                });
            }
            self.belote_played += 1;
        }
        let load = if legal.len() == 1 {
            Load::Forced
        } else {
            Load::Choice(legal.len())
        };
        let losing = self.losing(p) && self.accs[p].acts_in(self.spec.rng_seed);
        let mut think = self.clock.think(&mut self.rng, self.accs[p], load, losing);
        let floor = self.rec.last_ts() - self.turn_start + self.rng.range(40, 250);
        think = think.max(floor);
        if late {
            think = self.clock.limit_ms + self.rng.range(1, 5000);
        } else {
            think = think.min(self.clock.limit_ms - 1);
        }
        let ts = self.turn_start + think;
        let deal = i64::from(self.m.deal_number());
        let i = self.rec.push(
            ts,
            Body::Play(Play {
                player: self.ids[p].clone(),
                deal,
                card: card.to_string(),
                announce: announce.map(|a| match a {
                    Announce::Belote => LogAnnounce::Belote,
                    Announce::Rebelote => LogAnnounce::Rebelote,
                }),
                attempt: Attempt {
                    status: LogStatus::Accepted,
                    reason: None,
                    think_ms: think,
                    auto: None,
                },
            }),
        );
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
        self.turn_start = ts;
        self.plays_in_deal += 1;
        let outcome = self.m.play(p, card, announce).map_err(self.berr())?;
        let next_other = outcome.next == Some(o);
        self.after_play(outcome);
        if next_other && self.end.is_none() && self.rng.chance(P_RACE) {
            let delta = self.rng.range(3, 300);
            self.play_attempt(
                p,
                card.to_string(),
                ts + delta,
                RejectReason::NotYourTurn,
                delta,
            );
        }
        Ok(())
    }

    fn tampered_attempt(&mut self, p: usize, trump: Suit) {
        let hand = self.m.hand(p).to_vec();
        let led = self.m.current_trick().first().map(|x| x.1);
        let mut kinds = [0u8, 1, 2, 3];
        self.rng.shuffle(&mut kinds);
        for k in kinds {
            let candidate: Option<Card> = match (k, led) {
                (0, Some(l)) => hand
                    .iter()
                    .copied()
                    .find(|c| c.suit != l.suit)
                    .filter(|_| hand.iter().any(|c| c.suit == l.suit)),
                (1, Some(l)) => hand
                    .iter()
                    .copied()
                    .find(|c| c.suit != trump && c.suit != l.suit),
                (2, Some(l)) if l.suit == trump => hand
                    .iter()
                    .copied()
                    .find(|c| c.suit == trump && !c.beats(l, l.suit, trump)),
                (3, _) => canonical_deck()
                    .iter()
                    .copied()
                    .filter(|c| !hand.contains(c))
                    .nth(self.rng.index(8)),
                _ => None,
            };
            let Some(card) = candidate else { continue };
            let ok = matches!(
                (k, self.m.classify_play(p, card, None)),
                (0, Err(BeloteError::DidNotFollowSuit { .. }))
                    | (1, Err(BeloteError::DidNotTrump { .. }))
                    | (2, Err(BeloteError::DidNotBeatTrump { .. }))
                    | (3, Err(BeloteError::CardNotInHand(_)))
            );
            if ok {
                let delay = self.rng.range(250, 2500);
                let ts = self.at(delay);
                self.play_attempt(
                    p,
                    card.to_string(),
                    ts,
                    RejectReason::Illegal,
                    ts - self.turn_start,
                );
                return;
            }
        }
    }

    fn choose(&mut self, p: usize, legal: &[Card], trump: Suit) -> Card {
        if legal.len() == 1 {
            return legal[0];
        }
        let skill = self.accs[p].skill;
        if skill < 0.3 && self.rng.chance(0.5) {
            return legal[self.rng.index(legal.len())];
        }
        let trick = self.m.current_trick().to_vec();
        let strength = |c: &Card| {
            if c.suit == trump {
                10 + i32::from(c.rank.trump_order())
            } else {
                i32::from(c.rank.plain_order())
            }
        };
        match trick.first() {
            None => {
                let taker = self.m.taker() == Some(p);
                let trumps: Vec<Card> = legal.iter().copied().filter(|c| c.suit == trump).collect();
                let holds_master = trumps
                    .iter()
                    .any(|c| matches!(c.rank, Rank::Jack | Rank::Nine));
                if taker
                    && holds_master
                    && self.rng.chance(0.8)
                    && let Some(c) = trumps.iter().copied().max_by_key(|c| c.rank.trump_order())
                {
                    return c;
                }
                if let Some(a) = legal
                    .iter()
                    .copied()
                    .find(|c| c.suit != trump && c.rank == Rank::Ace)
                {
                    return a;
                }
                legal
                    .iter()
                    .copied()
                    .filter(|c| c.suit != trump)
                    .min_by_key(|c| (c.points(trump), c.rank.plain_order()))
                    .or_else(|| legal.iter().copied().min_by_key(strength))
                    .unwrap_or(legal[0])
            }
            Some(&(_, lead)) => {
                let winners: Vec<Card> = legal
                    .iter()
                    .copied()
                    .filter(|c| c.beats(lead, lead.suit, trump))
                    .collect();
                let at_stake = lead.points(trump);
                if let Some(w) = winners.iter().copied().min_by_key(strength)
                    && (at_stake >= 4 || w.points(trump) >= 10 || w.suit != trump)
                {
                    return w;
                }
                legal
                    .iter()
                    .copied()
                    .min_by_key(|c| (c.points(trump), strength(c)))
                    .unwrap_or(legal[0])
            }
        }
    }
}
