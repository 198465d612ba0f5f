//! Belote replay: deals, bids, completed hands, plays, scoring of each deal, timeouts, match end.

use super::attempt::{Attempted, judge_attempt, turn_clock};
use super::context::{Cx, Draw, Logged, Rules};
use super::finding::Code;
use super::rows::{DepartureRow, MoveRow};
use crate::games::belote::{
    self as b, Announce, BeloteError, Bid, BidOutcome, Card, DealEnd, Match, MatchConfig, MatchEnd,
    PLAYERS,
};
use crate::lake::record::Ts;
use crate::log::{Body, EndReason, TimeoutOutcome};

/// What the server owes after a timeout: the automatic bid or card the engine already applied.
#[derive(Debug, Clone, Copy)]
enum Owed {
    Bid(usize),
    Card(usize, Card),
}

pub struct BeloteRules {
    m: Option<Match>,
    accounts: Vec<String>,
    limit_ms: i64,
    turn_since: i64,
    turn_changed: i64,
    owed: Option<Owed>,
    /// When the timeout that owes `owed` was logged.
    owed_at: i64,
    /// The engine's end of the current deal, to compare with `deal_ended`.
    deal_end: Option<DealEnd>,
    ply: i64,
}

fn code_of(e: &BeloteError) -> Code {
    match e {
        BeloteError::MatchOver => Code::AfterEnd,
        BeloteError::UnknownPlayer(_) | BeloteError::NotYourTurn { .. } => Code::OutOfTurn,
        BeloteError::WrongPhase { .. } => Code::WrongPhase,
        BeloteError::InvalidBid { .. } => Code::InvalidBid,
        BeloteError::CardNotInHand(_) => Code::CardNotInHand,
        BeloteError::DidNotFollowSuit { .. } => Code::DidNotFollowSuit,
        BeloteError::DidNotBeatTrump { .. } => Code::DidNotBeatTrump,
        BeloteError::DidNotTrump { .. } => Code::DidNotTrump,
        BeloteError::InvalidAnnounce { .. } => Code::InvalidAnnounce,
        _ => Code::WrongPhase,
    }
}

fn cards(list: &[String]) -> Option<Vec<Card>> {
    list.iter().map(|c| c.parse::<Card>().ok()).collect()
}

impl BeloteRules {
    pub fn new(cx: &Cx<'_>) -> BeloteRules {
        let start = cx.start;
        let target = match start.variant {
            Some(crate::log::Variant::Belote { target }) => target,
            _ => 501,
        };
        let config = MatchConfig {
            target,
            max_timeouts: start.clock.max_timeouts.unwrap_or(3),
        };
        BeloteRules {
            m: Match::new(config).ok(),
            accounts: cx.accounts(),
            limit_ms: i64::from(start.clock.move_s.unwrap_or(30)) * 1000,
            turn_since: cx.start_ts(),
            turn_changed: cx.start_ts(),
            owed: None,
            owed_at: 0,
            deal_end: None,
            ply: 0,
        }
    }

    fn index(&self, account: &str) -> Option<usize> {
        self.accounts.iter().position(|a| a == account)
    }

    /// The players' hands of an event, in player order.
    fn hands(&self, by_account: &[(String, Vec<String>)]) -> Option<[Vec<Card>; PLAYERS]> {
        let mut out: [Vec<Card>; PLAYERS] = [Vec::new(), Vec::new()];
        for (acc, list) in by_account {
            out[self.index(acc)?] = cards(list)?;
        }
        Some(out)
    }

    fn to_act(&self) -> Option<usize> {
        match self.m.as_ref()?.expected() {
            b::Expected::Bid { player, .. } | b::Expected::Play { player } => Some(player),
            _ => None,
        }
    }

    fn handover(&mut self, ts: i64, before: Option<usize>) {
        self.turn_since = ts;
        if self.to_act() != before {
            self.turn_changed = ts;
        }
    }

    fn balance(&self, p: usize) -> Option<f64> {
        let t = self.m.as_ref()?.totals();
        Some(f64::from(t[p]) - f64::from(t[1 - p]))
    }

    fn settle(&mut self, seq: i64, cx: &mut Cx<'_>) {
        let Some((p, end)) = self.m.as_ref().and_then(Match::winner) else {
            return;
        };
        let reason = match end {
            MatchEnd::Target => EndReason::Target,
            MatchEnd::Timeouts => EndReason::Timeouts,
            MatchEnd::Left => EndReason::Left,
        };
        let acc = self.accounts[p].clone();
        cx.decide(acc.clone(), reason, Some(acc), seq);
    }

    /// One attempt (bid or play): verdict, findings, the moves row, and the engine step when accepted.
    #[allow(clippy::too_many_arguments)]
    fn attempt(
        &mut self,
        ev: &Logged,
        player: &str,
        text: &str,
        a: &crate::log::Attempt,
        what: &'static str,
        parsed: Result<Action, Code>,
        deal: i64,
        cx: &mut Cx<'_>,
    ) {
        let seq = ev.seq();
        let ts = ev.ts();
        let p = self.index(player);
        if a.accepted() {
            cx.stats(player).moves += 1;
        } else {
            cx.stats(player).rejected += 1;
        }
        let decided = cx.decision.is_some();
        // The engine has already applied the automatic action a timeout owes.
        let owed_since = self.owed.map(|_| self.owed_at);
        let (awaiting_auto, since_turn) = turn_clock(ts, a, decided, owed_since, self.turn_changed);
        let on_turn = p.is_some() && self.to_act() == p && !decided && !awaiting_auto;
        let owed = match (self.owed, p) {
            (Some(Owed::Bid(q)), Some(p)) | (Some(Owed::Card(q, _)), Some(p)) if q == p => {
                self.owed
            }
            _ => None,
        };
        let legal_count = match (&self.m, &parsed) {
            (Some(m), Ok(Action::Play(..))) if on_turn => Some(m.legal_cards().len() as i64),
            _ => None,
        };
        let verdict: Option<Result<(), Code>> = if owed.is_some() && a.accepted() {
            Some(Ok(()))
        } else if decided {
            Some(Err(Code::AfterEnd))
        } else if cx.desynced {
            None
        } else if awaiting_auto {
            Some(Err(Code::OutOfTurn))
        } else {
            match (&self.m, p, &parsed) {
                (_, None, _) => Some(Err(Code::OutOfTurn)),
                (None, _, _) => None,
                (Some(m), Some(p), Ok(action)) => Some(match action {
                    Action::Bid(bid) => m.classify_bid(p, *bid).map_err(|e| code_of(&e)),
                    Action::Play(card, ann) => {
                        m.classify_play(p, *card, *ann).map_err(|e| code_of(&e))
                    }
                }),
                // Unparseable text: turn order first, then the text itself.
                (Some(m), Some(p), Err(code)) => Some(match m.expected() {
                    b::Expected::Bid { player, .. } | b::Expected::Play { player }
                        if player == p =>
                    {
                        Err(*code)
                    }
                    b::Expected::Nothing => Err(Code::AfterEnd),
                    b::Expected::Bid { .. } | b::Expected::Play { .. } => Err(Code::OutOfTurn),
                    _ => Err(Code::WrongPhase),
                }),
            }
        };
        judge_attempt(
            cx,
            &Attempted {
                seq,
                player,
                text,
                attempt: a,
                on_turn,
                since_turn_ms: since_turn,
                limit_ms: Some(self.limit_ms),
                verdict,
                what,
            },
        );
        let balance = p.and_then(|p| self.balance(p));
        cx.moves.push(MoveRow {
            game: cx.game.to_string(),
            seq,
            ts: Ts(ts),
            kind: cx.kind_str(),
            mode: cx.mode_str(),
            ply: self.ply,
            player: player.to_string(),
            action: what.to_string(),
            text: text.to_string(),
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
            capture: None,
            captured: None,
            balance,
            die: None,
            deal: Some(deal),
        });
        if !a.accepted() {
            return;
        }
        self.ply += 1;
        if let Some(owed) = owed {
            self.owed = None;
            let matches = match (owed, &parsed) {
                (Owed::Bid(_), Ok(Action::Bid(Bid::Pass))) => true,
                (Owed::Card(_, card), Ok(Action::Play(c, None))) => *c == card,
                _ => false,
            };
            if !matches || !a.is_auto() {
                let expected = match owed {
                    Owed::Bid(_) => "pass".to_string(),
                    Owed::Card(_, c) => {
                        format!("{c} (the first legal card in deck order, no announce)")
                    }
                };
                cx.find(
                    seq,
                    Code::WrongAutoMove,
                    "after a timeout the server passes, or plays the first legal card",
                )
                .account(player)
                .expected(expected)
                .logged(format!(
                    "{text}{}",
                    if a.is_auto() { "" } else { " (not automatic)" }
                ));
            }
            self.handover(ts, p);
            self.settle(seq, cx);
            return;
        }
        let (Some(p), Some(Ok(()))) = (p, verdict) else {
            if matches!(verdict, Some(Err(_))) {
                cx.desynced = true;
            }
            return;
        };
        if a.is_auto() {
            cx.find(
                seq,
                Code::WrongAutoMove,
                "an automatic action without a timeout before it",
            )
            .account(player);
        }
        let Some(m) = self.m.as_mut() else { return };
        let result = match parsed {
            Ok(Action::Bid(bid)) => m.bid(p, bid).map(|o| {
                if let BidOutcome::Void(de) = o {
                    self.deal_end = Some(de);
                }
            }),
            Ok(Action::Play(card, ann)) => m.play(p, card, ann).map(|o| {
                if let Some(de) = o.deal_end {
                    self.deal_end = Some(de);
                }
            }),
            Err(_) => Ok(()),
        };
        if result.is_err() {
            cx.desynced = true;
        }
        self.handover(ts, Some(p));
        self.settle(seq, cx);
    }

    fn deal_ended(&mut self, ev: &Logged, d: &crate::log::DealEnded, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        if cx.desynced {
            return;
        }
        let Some(de) = self.deal_end.take() else {
            cx.find(
                seq,
                Code::WrongScore,
                "deal_ended logged while the deal is not over",
            )
            .logged(d.outcome.to_string());
            return;
        };
        let fmt = |v: [u32; PLAYERS]| {
            self.accounts
                .iter()
                .zip(v)
                .map(|(a, p)| format!("{a}: {p}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let logged_of = |list: &[(String, i64)]| {
            let mut v = [i64::MIN; PLAYERS];
            for (acc, pts) in list {
                if let Some(i) = self.index(acc) {
                    v[i] = *pts;
                }
            }
            v
        };
        let points = logged_of(&d.points);
        let totals = logged_of(&d.totals);
        let exp_points = [i64::from(de.points[0]), i64::from(de.points[1])];
        let exp_totals = [i64::from(de.totals[0]), i64::from(de.totals[1])];
        // Points held over from a litige go to this deal's winner: into its total either way, and
        // into `points` or not (the contract's "scored by this deal" says neither), so both are
        // right as long as the totals are.
        let points_ok = points == exp_points
            || (de.released > 0
                && de.deal_winner.is_some_and(|w| {
                    let mut v = exp_points;
                    v[w] -= i64::from(de.released);
                    v == points
                }));
        if de.outcome.as_str() != d.outcome.as_str() || !points_ok || totals != exp_totals {
            let show = |v: [i64; PLAYERS]| {
                self.accounts
                    .iter()
                    .zip(v)
                    .map(|(a, p)| format!("{a}: {p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            cx.find(
                seq,
                Code::WrongScore,
                format!("deal {} scores differently when replayed", de.deal),
            )
            .expected(format!(
                "{}; points {}; totals {}",
                de.outcome,
                fmt(de.points),
                fmt(de.totals)
            ))
            .logged(format!(
                "{}; points {}; totals {}",
                d.outcome,
                show(points),
                show(totals)
            ));
        }
        self.turn_since = ev.ts();
        self.turn_changed = ev.ts();
    }
}

/// A parsed bid or play.
#[derive(Debug, Clone, Copy)]
enum Action {
    Bid(Bid),
    Play(Card, Option<Announce>),
}

impl Rules for BeloteRules {
    fn event(&mut self, ev: &Logged, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        match &ev.event.body {
            Body::Deal(d) => {
                cx.draws.push(Draw::Deal {
                    seq,
                    ts: ev.ts(),
                    deal: d.deal,
                    dealer: d.dealer.clone(),
                    hands: d.hands.clone(),
                    turned: d.turned.clone(),
                });
                if cx.desynced {
                    return;
                }
                let Some(m) = self.m.as_mut() else { return };
                let expected_deal = i64::from(m.deal_number());
                let dealer = self
                    .accounts
                    .get(b::dealer_of(m.deal_number()))
                    .cloned()
                    .unwrap_or_default();
                if d.deal != expected_deal || d.dealer != dealer {
                    cx.find(
                        seq,
                        Code::WrongHands,
                        "deal out of order: deal numbers count from 0 and the dealer alternates",
                    )
                    .expected(format!("deal {expected_deal} dealt by {dealer}"))
                    .logged(format!("deal {} dealt by {}", d.deal, d.dealer));
                }
                let hands = self.hands(&d.hands);
                let turned = d.turned.parse::<Card>().ok();
                let (Some(hands), Some(turned)) = (hands, turned) else {
                    cx.find(
                        seq,
                        Code::WrongHands,
                        "the dealt hands do not name the two players' cards",
                    );
                    cx.desynced = true;
                    return;
                };
                let Some(m) = self.m.as_mut() else { return };
                if let Err(e) = m.deal_visible(hands, turned) {
                    cx.find(seq, Code::WrongHands, format!("impossible deal: {e}"));
                    cx.desynced = true;
                }
                let first = self.to_act();
                self.handover(ev.ts(), first.map(|p| 1 - p));
            }
            Body::Bid(bd) => {
                let parsed = bd
                    .bid
                    .parse::<Bid>()
                    .map(Action::Bid)
                    .map_err(|_| Code::InvalidBid);
                // The automatic bid after a timeout was applied when the timeout was replayed.
                let owed_here =
                    matches!(self.owed, Some(Owed::Bid(q)) if Some(q) == self.index(&bd.player));
                let round_ok = owed_here
                    || match self.m.as_ref().map(Match::expected) {
                        Some(b::Expected::Bid { round, .. }) => round == bd.round,
                        _ => true,
                    };
                if !round_ok && bd.attempt.accepted() && !cx.desynced {
                    cx.find(
                        seq,
                        Code::AcceptedIllegal,
                        "a bid logged in the wrong bidding round",
                    )
                    .account(&bd.player);
                }
                self.attempt(
                    ev,
                    &bd.player,
                    &bd.bid,
                    &bd.attempt,
                    "bid",
                    parsed,
                    bd.deal,
                    cx,
                );
            }
            Body::HandsCompleted(h) => {
                cx.draws.push(Draw::Completion {
                    seq,
                    deal: h.deal,
                    taker: h.taker.clone(),
                    hands: h.hands.clone(),
                });
                if cx.desynced {
                    return;
                }
                let trump_ok = self
                    .m
                    .as_ref()
                    .and_then(Match::trump)
                    .map(|s| s.to_string())
                    == Some(h.trump.clone());
                let taker_ok = self
                    .m
                    .as_ref()
                    .and_then(Match::taker)
                    .map(|p| self.accounts[p].clone())
                    == Some(h.taker.clone());
                if !trump_ok || !taker_ok {
                    cx.find(
                        seq,
                        Code::WrongHands,
                        "trump or taker differ from the bidding",
                    )
                    .logged(format!("trump {}, taker {}", h.trump, h.taker));
                }
                let Some(hands) = self.hands(&h.hands) else {
                    cx.find(
                        seq,
                        Code::WrongHands,
                        "the completed hands do not name the two players' cards",
                    );
                    cx.desynced = true;
                    return;
                };
                let Some(m) = self.m.as_mut() else { return };
                if let Err(e) = m.complete_hands(hands) {
                    cx.find(
                        seq,
                        Code::WrongHands,
                        format!("impossible completed hands: {e}"),
                    );
                    cx.desynced = true;
                }
                let before = self.to_act().map(|p| 1 - p);
                self.handover(ev.ts(), before);
            }
            Body::Play(pl) => {
                let parsed = pl
                    .card
                    .parse::<Card>()
                    .map(|c| {
                        Action::Play(
                            c,
                            pl.announce.map(|a| match a {
                                crate::log::Announce::Belote => Announce::Belote,
                                crate::log::Announce::Rebelote => Announce::Rebelote,
                            }),
                        )
                    })
                    .map_err(|_| Code::Unparseable);
                self.attempt(
                    ev,
                    &pl.player,
                    &pl.card,
                    &pl.attempt,
                    "card",
                    parsed,
                    pl.deal,
                    cx,
                );
            }
            Body::DealEnded(d) => self.deal_ended(ev, d, cx),
            Body::Timeout(t) => {
                cx.stats(&t.player).timeouts += 1;
                let p = self.index(&t.player);
                let on_turn = p.is_some() && self.to_act() == p && cx.decision.is_none();
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
                let balance = p.and_then(|p| self.balance(p));
                let mut decisive = false;
                let mut consecutive = None;
                if let (Some(p), false, None) = (p, cx.desynced, &cx.decision)
                    && let Some(m) = self.m.as_mut()
                {
                    match m.timeout(p) {
                        Ok(outcome) => {
                            consecutive = m.timeouts(p).map(i64::from);
                            let expected = match outcome {
                                b::TimeoutOutcome::Lost { .. } => TimeoutOutcome::Loss,
                                _ => TimeoutOutcome::Auto,
                            };
                            if t.outcome != expected {
                                cx.find(seq, Code::TimeoutRule, "three consecutive timeouts lose the match; before that the server acts for the player")
                                        .account(&t.player)
                                        .expected(expected.to_string())
                                        .logged(t.outcome.to_string());
                            }
                            match outcome {
                                b::TimeoutOutcome::AutoBid(o) => {
                                    self.owed = Some(Owed::Bid(p));
                                    self.owed_at = ev.ts();
                                    if let BidOutcome::Void(de) = o {
                                        self.deal_end = Some(de);
                                    }
                                }
                                b::TimeoutOutcome::AutoPlay(o) => {
                                    self.owed = Some(Owed::Card(p, o.card));
                                    self.owed_at = ev.ts();
                                    if let Some(de) = o.deal_end {
                                        self.deal_end = Some(de);
                                    }
                                }
                                b::TimeoutOutcome::Lost { .. } => {
                                    decisive = true;
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
                    losing: balance.map(|v| v < 0.0),
                    on_turn,
                    elapsed_ms: Some(t.elapsed_ms),
                    limit_ms: Some(self.limit_ms),
                    consecutive,
                    decisive,
                    beneficiary: if decisive {
                        cx.decision.as_ref().and_then(|d| d.winner.clone())
                    } else {
                        None
                    },
                });
            }
            Body::Left(lv) => {
                cx.stats(&lv.player).left = true;
                let p = self.index(&lv.player);
                let on_turn = p.is_some() && self.to_act() == p && cx.decision.is_none();
                let balance = p.and_then(|p| self.balance(p));
                let undecided = cx.decision.is_none();
                if let (Some(p), true) = (p, undecided) {
                    if let Some(m) = self.m.as_mut() {
                        let _ = m.leave(p);
                    }
                    let winner = self.accounts[1 - p].clone();
                    cx.decide(winner.clone(), EndReason::Left, Some(winner), seq);
                }
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
                    losing: balance.map(|v| v < 0.0),
                    on_turn,
                    elapsed_ms: on_turn.then_some(ev.ts() - self.turn_since),
                    limit_ms: Some(self.limit_ms),
                    consecutive: None,
                    decisive: undecided,
                    beneficiary: if undecided {
                        cx.decision.as_ref().and_then(|d| d.winner.clone())
                    } else {
                        None
                    },
                });
            }
            _ => {
                let ty = ev.event.event_type();
                cx.find(
                    seq,
                    Code::AcceptedIllegal,
                    format!("a {ty} event in a Belote match"),
                );
            }
        }
    }
}
