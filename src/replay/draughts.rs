//! Draughts replay (international, Brazilian, Medieval): attempts, clock and timeout rules, duels, results.

use super::attempt::{Attempted, judge_attempt, turn_clock};
use super::context::{Cx, Draw, Logged, Rules};
use super::finding::Code;
use super::rows::{DepartureRow, MoveRow};
use crate::games::draughts::{
    self as d, Color, Duel, Game, Illegal, Piece, Position, Role, Square, Status, Variant,
};
use crate::lake::record::Ts;
use crate::log::{Body, EndReason, Kind, LeftReason, MoveAction, Seat, TimeoutOutcome};

/// Material value of a king, in men, for the balance facts.
pub const KING_VALUE: f64 = 3.0;

pub struct DraughtsRules {
    game: Game,
    variant: Variant,
    medieval: bool,
    accounts: [String; 2],
    limit_ms: i64,
    max_timeouts: u32,
    /// When the side to move's turn began.
    turn_since: i64,
    consecutive: [u32; 2],
    pending_auto: Option<Color>,
    /// When the timeout that owes `pending_auto` was logged.
    owed_at: i64,
    draw_offer: Option<Color>,
    duels: u64,
    ply: i64,
}

fn idx(c: Color) -> usize {
    match c {
        Color::White => 0,
        Color::Black => 1,
    }
}

fn seat_name(c: Color) -> &'static str {
    match c {
        Color::White => "white",
        Color::Black => "black",
    }
}

impl DraughtsRules {
    pub fn new(cx: &Cx<'_>) -> DraughtsRules {
        let start = cx.start;
        let variant = if start.kind == Kind::Draughts10 {
            Variant::International
        } else {
            Variant::Brazilian
        };
        let medieval = start.mode == crate::log::Mode::Medieval;
        let game = if medieval {
            Game::new_medieval()
        } else {
            Game::new(variant)
        };
        let mut accounts = [String::new(), String::new()];
        for p in &start.players {
            match p.seat {
                Seat::White => accounts[0] = p.account.clone(),
                Seat::Black => accounts[1] = p.account.clone(),
                _ => {}
            }
        }
        let limit_s = start
            .clock
            .move_s
            .unwrap_or(if variant == Variant::International {
                30
            } else {
                60
            });
        DraughtsRules {
            game,
            variant,
            medieval,
            accounts,
            limit_ms: i64::from(limit_s) * 1000,
            max_timeouts: start.clock.max_timeouts.unwrap_or(3),
            turn_since: 0,
            consecutive: [0, 0],
            pending_auto: None,
            owed_at: 0,
            draw_offer: None,
            duels: 0,
            ply: 0,
        }
    }

    fn color_of(&self, account: &str) -> Option<Color> {
        if self.accounts[0] == account {
            Some(Color::White)
        } else if self.accounts[1] == account {
            Some(Color::Black)
        } else {
            None
        }
    }

    fn account(&self, c: Color) -> String {
        self.accounts[idx(c)].clone()
    }

    fn balance(&self, c: Color) -> f64 {
        let m = self.game.material();
        let v = |s: d::SideMaterial| f64::from(s.men) + KING_VALUE * f64::from(s.kings);
        v(m.side(c)) - v(m.side(c.other()))
    }

    /// After a played (or forced) move: the next turn, and the end of the game if the rules end it.
    fn after_move(&mut self, ts: i64, seq: i64, cx: &mut Cx<'_>) {
        self.ply += 1;
        self.turn_since = ts;
        match self.game.status() {
            Status::Ongoing => {}
            Status::Win { winner, reason } => {
                let reason = match reason {
                    d::WinReason::NoPieces => EndReason::NoPieces,
                    d::WinReason::NoMoves => EndReason::NoMoves,
                };
                cx.decide(
                    seat_name(winner).to_string(),
                    reason,
                    Some(self.account(winner)),
                    seq,
                );
            }
            Status::Draw { reason } => {
                let end_reason = |r: d::DrawReason| match r {
                    d::DrawReason::DrawRule => EndReason::DrawRule,
                    d::DrawReason::Repetition => EndReason::Repetition,
                };
                cx.decide("draw".to_string(), end_reason(reason), None, seq);
                // The draw rule and a third repetition on the same ply: either reason is right.
                for other in self.game.draw_reasons() {
                    cx.also_ended_by(end_reason(other));
                }
            }
        }
    }

    fn mv(&mut self, ev: &Logged, m: &crate::log::Move, text: &str, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        let ts = ev.ts();
        let a = &m.attempt;
        let player = m.player.as_str();
        let color = self.color_of(player);
        let pos = *self.game.position();
        let decided = cx.decision.is_some();
        let owed_since = self.pending_auto.map(|_| self.owed_at);
        let (awaiting_auto, since_turn) = turn_clock(ts, a, decided, owed_since, self.turn_since);
        let on_turn = color == Some(pos.turn()) && !decided && !awaiting_auto;
        let legal_count = self.game.legal_move_count() as i64;
        let verdict: Option<Result<d::Move, Code>> = if decided {
            Some(Err(Code::AfterEnd))
        } else if cx.desynced {
            None
        } else if color.is_none() || color != Some(pos.turn()) || awaiting_auto {
            Some(Err(Code::OutOfTurn))
        } else if !self.game.selection_done() {
            Some(Err(Code::WrongPhase))
        } else {
            Some(self.game.classify_full(text).map_err(illegal_code))
        };
        let limit = self.limit_ms;
        judge_attempt(
            cx,
            &Attempted {
                seq,
                player,
                text,
                attempt: a,
                on_turn,
                since_turn_ms: since_turn,
                limit_ms: Some(limit),
                verdict: verdict
                    .as_ref()
                    .map(|v| v.as_ref().map(|_| ()).map_err(|c| *c)),
                what: "move",
            },
        );
        let balance = color.map(|c| self.balance(c));
        let capture = verdict
            .as_ref()
            .and_then(|v| v.as_ref().ok())
            .map(d::Move::is_capture);
        let captured = verdict
            .as_ref()
            .and_then(|v| v.as_ref().ok())
            .map(|mv| mv.captures().len() as i64);
        cx.moves.push(MoveRow {
            game: cx.game.to_string(),
            seq,
            ts: Ts(ts),
            kind: cx.kind_str(),
            mode: cx.mode_str(),
            ply: self.ply,
            player: player.to_string(),
            action: "move".into(),
            text: text.to_string(),
            accepted: a.accepted(),
            server_reason: a.reason.map(|r| r.to_string()),
            legal: matches!(verdict, Some(Ok(_))),
            cause: match &verdict {
                Some(Err(c)) => Some(c.as_str().to_string()),
                _ => None,
            },
            auto: a.is_auto(),
            think_ms: a.think_ms,
            limit_ms: Some(limit),
            turn_ms: on_turn.then_some(ts - self.turn_since),
            on_turn,
            since_turn_ms: Some(since_turn),
            legal_count: (!decided).then_some(legal_count),
            forced: (!decided).then_some(legal_count == 1),
            capture,
            captured,
            balance,
            die: None,
            deal: None,
        });
        if !a.accepted() {
            if m.duels.is_some() {
                cx.find(
                    seq,
                    Code::DuelMisapplied,
                    "a rejected move carries duel outcomes",
                )
                .account(player);
            }
            return;
        }
        let Some(color) = color else { return };
        // Accepted: the server's rules for automatic moves.
        let auto_expected = self.pending_auto == Some(color);
        if auto_expected {
            self.pending_auto = None;
            let expected = d::auto_move(&pos);
            if !a.is_auto() {
                cx.find(seq, Code::WrongAutoMove, "after a timeout the server plays for the player, but this move is not automatic")
                    .account(player)
                    .expected(expected.map(|m| m.to_full_string()).unwrap_or_default())
                    .logged(text.to_string());
            } else if let (Some(Ok(played)), Some(exp)) = (&verdict, &expected)
                && !played.same_move(exp)
            {
                cx.find(
                    seq,
                    Code::WrongAutoMove,
                    "the automatic move is not the first legal move in ascending order",
                )
                .account(player)
                .expected(exp.to_full_string())
                .logged(text.to_string());
            }
        } else if a.is_auto() {
            cx.find(
                seq,
                Code::WrongAutoMove,
                "an automatic move without a timeout before it",
            )
            .account(player)
            .logged(text.to_string());
        }
        if !a.is_auto() {
            self.consecutive[idx(color)] = 0;
        }
        // An offer stands until the player it was made to moves (declining it by playing on):
        // the contract sets no other limit, and a player may offer a draw and then move, as the
        // international rules have it (the offer is made with a move).
        if self.draw_offer == Some(color.other()) {
            self.draw_offer = None;
        }
        // Every duel the server logged with an accepted move is a draw to check against its
        // derivation, numbered in the game's order, whether or not the capture fits the board
        // (a misapplied duel is an integrity finding of its own) and whether or not the replay
        // still follows the board.
        if self.medieval {
            for duel in m.duels.as_deref().unwrap_or_default() {
                cx.draws.push(Draw::Duel {
                    seq,
                    ts,
                    m: self.duels,
                    victim: duel.victim,
                    won: duel.won,
                    account: player.to_string(),
                });
                self.duels += 1;
            }
        }
        match verdict {
            Some(Ok(played)) => self.play(ev, &played, m.duels.as_deref(), color, cx),
            // A legal capture logged without its stops: flagged above as not the contract's
            // notation, and still the one move it names, so the board follows it.
            Some(Err(Code::MissingStops)) => match self.game.classify(text) {
                Ok(played) => self.play(ev, &played, m.duels.as_deref(), color, cx),
                Err(_) => self.force(ev, text, color, cx),
            },
            Some(Err(_)) => self.force(ev, text, color, cx),
            None => {}
        }
    }

    fn play(
        &mut self,
        ev: &Logged,
        played: &d::Move,
        duels: Option<&[crate::log::Duel]>,
        color: Color,
        cx: &mut Cx<'_>,
    ) {
        let seq = ev.seq();
        let pos = *self.game.position();
        let player = self.account(color);
        let victims = d::duel_victims(&pos, played);
        let logged: Vec<Duel> = match duels {
            Some(list) => list
                .iter()
                .filter_map(|x| {
                    self.variant
                        .square(u32::from(x.victim))
                        .map(|victim| Duel { victim, won: x.won })
                })
                .collect(),
            None => Vec::new(),
        };
        if !self.medieval {
            if duels.is_some() {
                cx.find(
                    seq,
                    Code::DuelMisapplied,
                    "duels logged in a game that is not Medieval",
                )
                .account(&player);
            }
            if self.game.play(played).is_err() {
                cx.desynced = true;
            }
            self.after_move(ev.ts(), seq, cx);
            return;
        }
        if let Err(e) = d::check_duels(&pos, played, &logged) {
            cx.find(
                seq,
                Code::DuelMisapplied,
                format!("duel outcomes do not fit the capture: {e}"),
            )
            .account(&player)
            .expected(format!(
                "one duel per medieval victim in path order up to the first loss: {}",
                victims
                    .iter()
                    .map(|s| s.number().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .logged(format!("{logged:?}"));
            cx.desynced = true;
            return;
        }
        match self.game.play_with_duels(played, &logged) {
            Ok(_) => self.after_move(ev.ts(), seq, cx),
            Err(_) => cx.desynced = true,
        }
    }

    /// Follows the server after it accepted an illegal move: applies it to the board when the
    /// board allows (the piece moves, pieces jumped are taken), else stops judging the game.
    fn force(&mut self, ev: &Logged, text: &str, color: Color, cx: &mut Cx<'_>) {
        match force_apply(self.game.position(), text, color) {
            Some((next, irreversible)) => {
                // The draw rules' counters go on: the move counts as any other.
                self.game.force(next, irreversible);
                self.after_move(ev.ts(), ev.seq(), cx);
            }
            None => cx.desynced = true,
        }
    }
}

/// The attempt code of an engine classification.
pub fn illegal_code(i: Illegal) -> Code {
    match i {
        Illegal::Unparseable(_) => Code::Unparseable,
        Illegal::NotOwnPiece { .. } => Code::NotOwnPiece,
        Illegal::WrongDirection => Code::WrongDirection,
        Illegal::SkippedMandatoryCapture => Code::SkippedCapture,
        Illegal::NotMajority { .. } => Code::NotMajority,
        Illegal::NoSuchPath => Code::NoSuchPath,
        Illegal::Ambiguous { .. } => Code::AmbiguousMove,
        Illegal::MissingStops { .. } => Code::MissingStops,
    }
}

fn coords(variant: Variant, n: u8) -> Option<(i32, i32)> {
    let (row, col) = variant.row_col(n)?;
    Some((row as i32, col as i32))
}

fn square_at(variant: Variant, row: i32, col: i32) -> Option<Square> {
    let size = i32::from(variant.size());
    if !(0..size).contains(&row) || !(0..size).contains(&col) || (row + col) % 2 == 0 {
        return None;
    }
    let n = row * i32::from(variant.per_row()) + col / 2 + 1;
    variant.square(n as u32)
}

/// Applies move text as the server would have, without checking the rules: the piece of
/// `color` on the first square goes to the last, opponent pieces jumped on the way are taken.
/// Returns the position after, and whether the move was irreversible (a man moved or a piece was
/// taken).
pub fn force_apply(pos: &Position, text: &str, color: Color) -> Option<(Position, bool)> {
    let variant = pos.variant();
    let n = d::parse_notation(variant, text).ok()?;
    let from = n.squares[0];
    let piece = pos.piece_at(from).filter(|p| p.color == color)?;
    let to = *n.squares.last()?;
    if to != from && pos.piece_at(to).is_some() {
        return None;
    }
    let mut next = *pos;
    let mut taken = Vec::new();
    for pair in n.squares.windows(2) {
        let (r0, c0) = coords(variant, pair[0].number())?;
        let (r1, c1) = coords(variant, pair[1].number())?;
        let (dr, dc) = (r1 - r0, c1 - c0);
        if dr.abs() != dc.abs() || dr == 0 {
            return None;
        }
        let (sr, sc) = (dr.signum(), dc.signum());
        for k in 1..dr.abs() {
            let sq = square_at(variant, r0 + k * sr, c0 + k * sc)?;
            match pos.piece_at(sq) {
                Some(p) if p.color != color => taken.push(sq),
                Some(_) => return None,
                None => {}
            }
        }
    }
    next.set_piece(from, None);
    let taken_any = !taken.is_empty();
    for sq in taken {
        next.set_piece(sq, None);
    }
    let (row, _) = coords(variant, to.number())?;
    let far = if color == Color::White {
        0
    } else {
        i32::from(variant.size()) - 1
    };
    let role = if piece.role == Role::Man && row == far {
        Role::King
    } else {
        piece.role
    };
    next.set_piece(
        to,
        Some(Piece {
            color,
            role,
            medieval: piece.medieval,
        }),
    );
    next.set_turn(color.other());
    // A man moved or a piece was taken: the draw rules' count starts again.
    let irreversible = piece.role == Role::Man || taken_any;
    Some((next, irreversible))
}

impl Rules for DraughtsRules {
    fn event(&mut self, ev: &Logged, cx: &mut Cx<'_>) {
        let seq = ev.seq();
        let ts = ev.ts();
        if self.turn_since == 0 {
            self.turn_since = cx.start_ts();
        }
        match &ev.event.body {
            Body::Selection(s) => {
                let Some(color) = self.color_of(&s.player) else {
                    cx.find(
                        seq,
                        Code::AcceptedIllegal,
                        "a selection by an account that is not in the game",
                    )
                    .logged(s.player.clone());
                    return;
                };
                let squares: Vec<Square> = s
                    .squares
                    .iter()
                    .filter_map(|&n| self.variant.square(u32::from(n)))
                    .collect();
                if let Err(e) = self.game.select(color, &squares) {
                    cx.find(
                        seq,
                        Code::AcceptedIllegal,
                        format!("invalid medieval selection: {e}"),
                    )
                    .account(&s.player)
                    .logged(format!("{:?}", s.squares));
                }
                let chosen: Vec<u8> = s
                    .squares
                    .iter()
                    .copied()
                    .filter(|q| !s.auto.contains(q))
                    .collect();
                cx.draws.push(Draw::Selection {
                    seq,
                    ts,
                    color: seat_name(color),
                    account: s.player.clone(),
                    chosen,
                    auto: s.auto.clone(),
                });
                // The first move's clock starts once both have chosen.
                if self.game.selection_done() {
                    self.turn_since = ts;
                }
            }
            Body::Move(m) => {
                let account = m.player.clone();
                if m.attempt.accepted() {
                    cx.stats(&account).moves += 1;
                } else {
                    cx.stats(&account).rejected += 1;
                }
                match &m.action {
                    MoveAction::Draughts(text) => {
                        let text = text.clone();
                        self.mv(ev, m, &text, cx);
                    }
                    _ => {
                        cx.find(seq, Code::AcceptedIllegal, "a Ludo move in a draughts game")
                            .account(&account);
                    }
                }
            }
            Body::Timeout(t) => {
                cx.stats(&t.player).timeouts += 1;
                let Some(color) = self.color_of(&t.player) else {
                    return;
                };
                let pos = *self.game.position();
                let on_turn = pos.turn() == color && cx.decision.is_none();
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
                if !on_turn && cx.decision.is_none() {
                    cx.find(
                        seq,
                        Code::TimeoutRule,
                        "a timeout for a player who was not on move",
                    )
                    .account(&t.player);
                }
                self.consecutive[idx(color)] += 1;
                let n = self.consecutive[idx(color)];
                let expected = if self.variant == Variant::International || n >= self.max_timeouts {
                    TimeoutOutcome::Loss
                } else {
                    TimeoutOutcome::Auto
                };
                if t.outcome != expected && cx.decision.is_none() {
                    let why = if self.variant == Variant::International {
                        "in international draughts a timeout loses the game".to_string()
                    } else if expected == TimeoutOutcome::Loss {
                        format!("timeout {n} in a row must lose the game (Brazilian rules)")
                    } else {
                        format!(
                            "timeout {n} in a row: the server must play for the player (Brazilian rules)"
                        )
                    };
                    cx.find(seq, Code::TimeoutRule, why)
                        .account(&t.player)
                        .expected(expected.to_string())
                        .logged(t.outcome.to_string());
                }
                let decisive = matches!(t.outcome, TimeoutOutcome::Loss | TimeoutOutcome::Forfeit);
                if decisive {
                    let reason = if self.variant == Variant::International {
                        EndReason::Timeout
                    } else {
                        EndReason::Timeouts
                    };
                    cx.decide(
                        seat_name(color.other()).to_string(),
                        reason,
                        Some(self.account(color.other())),
                        seq,
                    );
                } else {
                    self.pending_auto = Some(color);
                    self.owed_at = ts;
                }
                let balance = self.balance(color);
                cx.departures.push(DepartureRow {
                    game: cx.game.to_string(),
                    seq,
                    ts: Ts(ts),
                    kind: cx.kind_str(),
                    mode: cx.mode_str(),
                    player: t.player.clone(),
                    event: "timeout".into(),
                    reason: t.outcome.to_string(),
                    ply: self.ply,
                    balance: Some(balance),
                    losing: Some(balance < 0.0),
                    on_turn,
                    elapsed_ms: Some(t.elapsed_ms),
                    limit_ms: Some(self.limit_ms),
                    consecutive: Some(i64::from(n)),
                    decisive,
                    beneficiary: decisive.then(|| self.account(color.other())),
                });
            }
            Body::DrawOffer(o) => {
                if let Some(c) = self.color_of(&o.player) {
                    self.draw_offer = Some(c);
                }
            }
            Body::DrawAnswer(a) => {
                let Some(c) = self.color_of(&a.player) else {
                    return;
                };
                if a.accept {
                    if self.draw_offer == Some(c.other()) {
                        cx.decide("draw".to_string(), EndReason::Agreement, None, seq);
                    } else if cx.decision.is_none() {
                        cx.find(
                            seq,
                            Code::AcceptedIllegal,
                            "a draw accepted without an offer from the opponent",
                        )
                        .account(&a.player);
                    }
                }
                self.draw_offer = None;
            }
            Body::Left(l) => {
                cx.stats(&l.player).left = true;
                let Some(color) = self.color_of(&l.player) else {
                    return;
                };
                let on_turn = self.game.position().turn() == color && cx.decision.is_none();
                let decisive = cx.decision.is_none();
                if decisive {
                    cx.decide(
                        seat_name(color.other()).to_string(),
                        EndReason::Left,
                        Some(self.account(color.other())),
                        seq,
                    );
                }
                let balance = self.balance(color);
                cx.departures.push(DepartureRow {
                    game: cx.game.to_string(),
                    seq,
                    ts: Ts(ts),
                    kind: cx.kind_str(),
                    mode: cx.mode_str(),
                    player: l.player.clone(),
                    event: "left".into(),
                    reason: left_reason(l.reason).into(),
                    ply: self.ply,
                    balance: Some(balance),
                    losing: Some(balance < 0.0),
                    on_turn,
                    elapsed_ms: on_turn.then_some(ts - self.turn_since),
                    limit_ms: Some(self.limit_ms),
                    consecutive: None,
                    decisive,
                    beneficiary: decisive.then(|| self.account(color.other())),
                });
            }
            other => {
                let ty = ev.event.event_type();
                let _ = other;
                cx.find(
                    seq,
                    Code::AcceptedIllegal,
                    format!("a {ty} event in a draughts game"),
                );
            }
        }
    }
}

pub(super) fn left_reason(r: LeftReason) -> &'static str {
    r.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_apply_moves_and_takes() {
        let pos = Position::from_fen(Variant::International, "W:W28:B23").unwrap();
        // Backwards quiet step: allowed by force, not by the rules.
        let (next, irreversible) = force_apply(&pos, "28-33", Color::White).unwrap();
        assert!(irreversible, "a man moved");
        assert!(
            next.piece_at(Variant::International.square(33).unwrap())
                .is_some()
        );
        assert_eq!(next.turn(), Color::Black);
        let (next, _) = force_apply(&pos, "28x19", Color::White).unwrap();
        assert!(
            next.piece_at(Variant::International.square(23).unwrap())
                .is_none()
        );
        assert!(force_apply(&pos, "23-28", Color::White).is_none());
        // A king's quiet move: the draw rules' count goes on.
        let kings = Position::from_fen(Variant::International, "W:WK28:BK3").unwrap();
        let (_, irreversible) = force_apply(&kings, "28-33", Color::White).unwrap();
        assert!(!irreversible, "a king's quiet move");
    }
}
