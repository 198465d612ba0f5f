//! Replay frames: the state of the table after every event of a game, computed server-side with the rules engines.
//!
//! [`frames`] returns one [`Frame`] per logged event, in order: the board
//! after the event (draughts position, Ludo tokens and die, Belote hands,
//! trick and scores), a one-line summary, and the engine's opinion of
//! rejected attempts. Accepted events the engine refuses (a server fault) are
//! marked with [`Frame::error`] and leave the state unchanged; replay goes on,
//! never panics.
//!
//! Timeouts: for Ludo and Belote the engines apply the server's automatic
//! action at the `timeout` event, so the following accepted `auto` move,
//! bid or card of that player is taken as already played (and checked). For
//! Brazilian draughts the automatic move is an ordinary logged move.

use std::str::FromStr;

use crate::games::belote::{self, Card, Suit};
use crate::games::draughts::{self as dr, Color, Piece, Variant};
use crate::games::ludo::{self, PlayerStatus, TokenPos};
use crate::log::syntax::EpochMs;
use crate::log::{Body, Event, GameStarted, Kind, Mode, MoveAction, Status};

use super::data::{GameView, think_text};

/// How a frame should look on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// An ordinary event.
    Normal,
    /// A rejected attempt.
    Rejected,
    /// A timeout or a departure.
    Warning,
    /// The end of the game (or of a deal).
    End,
    /// Replay could not apply the event.
    Error,
}

impl Tone {
    /// CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Tone::Normal => "normal",
            Tone::Rejected => "rejected",
            Tone::Warning => "warning",
            Tone::End => "end",
            Tone::Error => "error",
        }
    }
}

/// A draughts position to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct DraughtsBoard {
    /// Board.
    pub variant: Variant,
    /// Pieces by square number.
    pub pieces: Vec<(u8, Piece)>,
    /// Squares of the last accepted move's path.
    pub path: Vec<u8>,
    /// Squares captured by it.
    pub captured: Vec<u8>,
    /// Medieval duels of the last move: (victim square, won).
    pub duels: Vec<(u8, bool)>,
    /// The attacker's start square when it lost a duel (removed from the board).
    pub lost_attacker: Option<u8>,
    /// Squares named by a rejected attempt (drawn dashed).
    pub attempted: Vec<u8>,
    /// Side to move.
    pub turn: Color,
    /// Men and kings.
    pub material: dr::Material,
    /// Accounts: white, black.
    pub white: String,
    /// Black's account.
    pub black: String,
    /// Medieval selection still pending.
    pub selecting: bool,
}

/// Ludo tokens to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct LudoBoard {
    /// Seat and account of each player, in `players` order.
    pub seats: Vec<(ludo::Seat, String)>,
    /// Tokens of each player.
    pub tokens: Vec<Vec<TokenPos>>,
    /// Status of each player.
    pub status: Vec<PlayerStatus>,
    /// Last die value.
    pub die: Option<u8>,
    /// Whose turn it is.
    pub current: usize,
    /// The token that just moved: (player, token).
    pub moved: Option<(usize, u8)>,
    /// Tokens just sent home: (player, token).
    pub captured: Vec<(usize, u8)>,
}

/// A finished trick.
#[derive(Debug, Clone, PartialEq)]
pub struct TrickView {
    /// Cards, leader first.
    pub cards: Vec<(usize, Card)>,
    /// Winner.
    pub winner: usize,
    /// Points in it.
    pub points: u32,
    /// Trick number (1-16).
    pub number: u8,
}

/// The result of a deal as logged.
#[derive(Debug, Clone, PartialEq)]
pub struct DealResult {
    /// made, dedans, litige, capot or void.
    pub outcome: String,
    /// Points scored by each player.
    pub points: [i64; 2],
}

/// A Belote table to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct BeloteTable {
    /// Accounts of p1 and p2.
    pub accounts: [String; 2],
    /// Hands.
    pub hands: [Vec<Card>; 2],
    /// Deal number.
    pub deal: Option<i64>,
    /// Dealer.
    pub dealer: Option<usize>,
    /// Turned card.
    pub turned: Option<Card>,
    /// Trump.
    pub trump: Option<Suit>,
    /// Taker.
    pub taker: Option<usize>,
    /// Bids of this deal: (player, bid).
    pub bids: Vec<(usize, String)>,
    /// Cards of the trick in progress.
    pub trick: Vec<(usize, Card)>,
    /// The last completed trick.
    pub last_trick: Option<TrickView>,
    /// Tricks won this deal.
    pub tricks_won: [u8; 2],
    /// Card points won this deal.
    pub card_points: [u32; 2],
    /// Match totals (as logged by the last `deal_ended`).
    pub totals: [i64; 2],
    /// The deal's result once logged.
    pub result: Option<DealResult>,
    /// Player to act.
    pub to_act: Option<usize>,
}

/// The board of a frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Board {
    /// Draughts, both boards.
    Draughts(DraughtsBoard),
    /// Ludo.
    Ludo(LudoBoard),
    /// Belote.
    Belote(BeloteTable),
    /// Nothing to draw (no `game_started`).
    Empty,
}

/// The table after one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Position in the event list.
    pub index: usize,
    /// Seq of the event.
    pub seq: i64,
    /// Its timestamp.
    pub ts: EpochMs,
    /// Acting account.
    pub actor: Option<String>,
    /// One line for the timeline.
    pub summary: String,
    /// Timeline look.
    pub tone: Tone,
    /// For rejected attempts: why our engine finds it illegal (or legal).
    pub verdict: Option<String>,
    /// Replay could not apply this accepted event.
    pub error: Option<String>,
    /// The board after the event.
    pub board: Board,
}

enum State {
    Draughts(Box<DState>),
    Ludo(Box<LState>),
    Belote(Box<BState>),
    None,
}

struct DState {
    game: dr::Game,
    accounts: [String; 2],
    path: Vec<u8>,
    captured: Vec<u8>,
    duels: Vec<(u8, bool)>,
    lost_attacker: Option<u8>,
    attempted: Vec<u8>,
}

struct LState {
    game: ludo::Game,
    accounts: Vec<String>,
    die: Option<u8>,
    pending_auto: Option<usize>,
    moved: Option<(usize, u8)>,
    captured: Vec<(usize, u8)>,
}

/// Tricks, card points, trump, taker and turned card of a deal the engine has closed.
type Closed = ([u8; 2], [u32; 2], Option<Suit>, Option<usize>, Option<Card>);

struct BState {
    m: belote::Match,
    accounts: [String; 2],
    pending_auto: Option<usize>,
    deal: Option<i64>,
    dealer: Option<usize>,
    bids: Vec<(usize, String)>,
    last_trick: Option<TrickView>,
    totals: [i64; 2],
    result: Option<DealResult>,
    /// Snapshot kept when the engine closes a deal (hands empty, trick done).
    closed: Option<Closed>,
}

fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "white",
        Color::Black => "black",
    }
}

fn seat_of(started: &GameStarted, account: &str) -> Option<usize> {
    started.players.iter().position(|p| p.account == account)
}

impl State {
    fn start(started: &GameStarted) -> Result<State, String> {
        let acc = |i: usize| {
            started
                .players
                .get(i)
                .map(|p| p.account.clone())
                .unwrap_or_default()
        };
        match started.kind {
            Kind::Draughts10 | Kind::Draughts8 => {
                let game = match (started.kind, started.mode) {
                    (Kind::Draughts8, Mode::Medieval) => dr::Game::new_medieval(),
                    (Kind::Draughts8, _) => dr::Game::new(Variant::Brazilian),
                    _ => dr::Game::new(Variant::International),
                };
                let white = started
                    .players
                    .iter()
                    .find(|p| p.seat == crate::log::Seat::White)
                    .map_or_else(|| acc(0), |p| p.account.clone());
                let black = started
                    .players
                    .iter()
                    .find(|p| p.seat == crate::log::Seat::Black)
                    .map_or_else(|| acc(1), |p| p.account.clone());
                Ok(State::Draughts(Box::new(DState {
                    game,
                    accounts: [white, black],
                    path: vec![],
                    captured: vec![],
                    duels: vec![],
                    lost_attacker: None,
                    attempted: vec![],
                })))
            }
            Kind::Ludo => {
                let variant = match &started.variant {
                    Some(crate::log::Variant::Ludo(v)) => crate::replay::ludo::engine_variant(v),
                    _ => return Err("Ludo game without a variant".to_owned()),
                };
                let seats: Vec<ludo::Seat> = started
                    .players
                    .iter()
                    .map(|p| ludo::Seat::from_str(p.seat.as_str()).map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?;
                let game = ludo::Game::new(variant, &seats).map_err(|e| e.to_string())?;
                Ok(State::Ludo(Box::new(LState {
                    game,
                    accounts: started.players.iter().map(|p| p.account.clone()).collect(),
                    die: None,
                    pending_auto: None,
                    moved: None,
                    captured: vec![],
                })))
            }
            Kind::Belote => {
                let target = match &started.variant {
                    Some(crate::log::Variant::Belote { target }) => *target,
                    _ => 501,
                };
                let m = belote::Match::new(belote::MatchConfig {
                    target,
                    max_timeouts: started.clock.max_timeouts.unwrap_or(3),
                })
                .map_err(|e| e.to_string())?;
                Ok(State::Belote(Box::new(BState {
                    m,
                    accounts: [acc(0), acc(1)],
                    pending_auto: None,
                    deal: None,
                    dealer: None,
                    bids: vec![],
                    last_trick: None,
                    totals: [0, 0],
                    result: None,
                    closed: None,
                })))
            }
        }
    }

    fn board(&self) -> Board {
        match self {
            State::Draughts(s) => {
                let pos = s.game.position();
                Board::Draughts(DraughtsBoard {
                    variant: pos.variant(),
                    pieces: pos
                        .pieces()
                        .into_iter()
                        .map(|(sq, p)| (sq.number(), p))
                        .collect(),
                    path: s.path.clone(),
                    captured: s.captured.clone(),
                    duels: s.duels.clone(),
                    lost_attacker: s.lost_attacker,
                    attempted: s.attempted.clone(),
                    turn: pos.turn(),
                    material: pos.material(),
                    white: s.accounts[0].clone(),
                    black: s.accounts[1].clone(),
                    selecting: !s.game.selection_done(),
                })
            }
            State::Ludo(s) => {
                let n = s.game.players();
                Board::Ludo(LudoBoard {
                    seats: (0..n)
                        .map(|p| {
                            (
                                s.game.seat(p).unwrap_or(ludo::Seat::Red),
                                s.accounts.get(p).cloned().unwrap_or_default(),
                            )
                        })
                        .collect(),
                    tokens: (0..n)
                        .map(|p| {
                            s.game
                                .tokens(p)
                                .map(<[TokenPos]>::to_vec)
                                .unwrap_or_default()
                        })
                        .collect(),
                    status: (0..n)
                        .map(|p| s.game.status(p).unwrap_or(PlayerStatus::Playing))
                        .collect(),
                    die: s.die,
                    current: s.game.current(),
                    moved: s.moved,
                    captured: s.captured.clone(),
                })
            }
            State::Belote(s) => {
                let m = &s.m;
                let (tricks_won, card_points, trump, taker, turned) = match s.closed {
                    Some(c) => c,
                    None => (
                        m.tricks_won(),
                        m.card_points(),
                        m.trump(),
                        m.taker(),
                        m.turned(),
                    ),
                };
                let to_act = match m.expected() {
                    belote::Expected::Bid { player, .. } | belote::Expected::Play { player } => {
                        Some(player)
                    }
                    _ => None,
                };
                Board::Belote(BeloteTable {
                    accounts: s.accounts.clone(),
                    hands: [m.hand(0).to_vec(), m.hand(1).to_vec()],
                    deal: s.deal,
                    dealer: s.dealer,
                    turned,
                    trump,
                    taker,
                    bids: s.bids.clone(),
                    trick: m.current_trick().to_vec(),
                    last_trick: s.last_trick.clone(),
                    tricks_won,
                    card_points,
                    totals: s.totals,
                    result: s.result.clone(),
                    to_act,
                })
            }
            State::None => Board::Empty,
        }
    }
}

/// Outcome of applying one event.
struct Applied {
    summary: String,
    tone: Tone,
    verdict: Option<String>,
    error: Option<String>,
}

impl Applied {
    fn ok(summary: String) -> Applied {
        Applied {
            summary,
            tone: Tone::Normal,
            verdict: None,
            error: None,
        }
    }
}

fn attempt_summary(who: &str, what: &str, e: &Event) -> (String, Tone) {
    match e.attempt() {
        Some(a) if !a.accepted() => (
            format!(
                "{who} {what} · {} — rejected ({})",
                think_text(a.think_ms),
                a.reason.map_or("no reason", |r| r.as_str())
            ),
            Tone::Rejected,
        ),
        Some(a) if a.is_auto() => (format!("{who} {what} (automatic)"), Tone::Normal),
        Some(a) => (
            format!("{who} {what} · {}", think_text(a.think_ms)),
            Tone::Normal,
        ),
        None => (format!("{who} {what}"), Tone::Normal),
    }
}

fn apply_draughts(s: &mut DState, e: &Event) -> Applied {
    s.attempted.clear();
    match &e.body {
        Body::Selection(b) => {
            let color = if s.accounts[0] == b.player {
                Color::White
            } else {
                Color::Black
            };
            let variant = s.game.variant();
            let squares: Option<Vec<dr::Square>> = b
                .squares
                .iter()
                .map(|&n| variant.square(u32::from(n)))
                .collect();
            let auto = if b.auto.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} picked by the server)",
                    b.auto
                        .iter()
                        .map(u8::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let mut out = Applied::ok(format!(
                "{} ({}) picks medieval men {}{auto}",
                b.player,
                color_name(color),
                b.squares
                    .iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            match squares {
                Some(sq) => {
                    if let Err(err) = s.game.select(color, &sq) {
                        out.error = Some(err.to_string());
                        out.tone = Tone::Error;
                    }
                }
                None => {
                    out.error = Some("a square is off the board".to_owned());
                    out.tone = Tone::Error;
                }
            }
            out
        }
        Body::Move(b) => {
            let MoveAction::Draughts(text) = &b.action else {
                return Applied {
                    error: Some("a Ludo move in a draughts game".to_owned()),
                    tone: Tone::Error,
                    ..Applied::ok(format!("{} moves", b.player))
                };
            };
            let mover = if s.accounts[0] == b.player {
                Color::White
            } else {
                Color::Black
            };
            let who = format!("{} ({})", b.player, color_name(mover));
            let (summary, tone) = attempt_summary(&who, text, e);
            let mut out = Applied {
                summary,
                tone,
                verdict: None,
                error: None,
            };
            if !b.attempt.accepted() {
                s.path.clear();
                s.captured.clear();
                s.duels.clear();
                s.lost_attacker = None;
                if let Ok(n) = dr::parse_notation(s.game.variant(), text) {
                    s.attempted = n.squares.iter().map(|q| q.number()).collect();
                }
                out.verdict = Some(if s.game.position().turn() != mover {
                    "not this player's turn".to_owned()
                } else if s.game.status() != dr::Status::Ongoing {
                    "the game was already decided".to_owned()
                } else {
                    match s.game.classify_full(text) {
                        Ok(_) => {
                            "legal in this position (the server rejected a legal move)".to_owned()
                        }
                        Err(err) => err.to_string(),
                    }
                });
                return out;
            }
            let m = match s.game.classify(text) {
                Ok(m) => m,
                Err(err) => {
                    out.error = Some(format!("replay: {text} is not legal here: {err}"));
                    out.tone = Tone::Error;
                    return out;
                }
            };
            let duels: Vec<dr::Duel> = b
                .duels
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter_map(|d| {
                    s.game
                        .variant()
                        .square(u32::from(d.victim))
                        .map(|victim| dr::Duel { victim, won: d.won })
                })
                .collect();
            let from = m.from().number();
            match s.game.play_with_duels(&m, &duels) {
                Ok(outcome) => {
                    s.path = m.path().iter().map(|q| q.number()).collect();
                    s.duels = duels.iter().map(|d| (d.victim.number(), d.won)).collect();
                    match outcome {
                        dr::DuelOutcome::Completed => {
                            s.captured = m.captures().iter().map(|q| q.number()).collect();
                            s.lost_attacker = None;
                        }
                        dr::DuelOutcome::Lost { victim, taken } => {
                            s.captured = taken.iter().map(|q| q.number()).collect();
                            s.lost_attacker = Some(from);
                            out.summary.push_str(&format!(
                                " — duel lost against {victim}, attacker removed"
                            ));
                            out.tone = Tone::Warning;
                        }
                    }
                    if !s.duels.is_empty() && s.lost_attacker.is_none() {
                        out.summary.push_str(" — duels won");
                    }
                }
                Err(err) => {
                    out.error = Some(format!("replay: {err}"));
                    out.tone = Tone::Error;
                }
            }
            out
        }
        _ => {
            s.path.clear();
            s.captured.clear();
            s.duels.clear();
            s.lost_attacker = None;
            generic(e)
        }
    }
}

fn player_index(accounts: &[String], who: &str) -> Option<usize> {
    accounts.iter().position(|a| a == who)
}

fn apply_ludo(s: &mut LState, e: &Event) -> Applied {
    s.moved = None;
    s.captured.clear();
    let who = e.player().unwrap_or("");
    let Some(p) = player_index(&s.accounts, who) else {
        return generic(e);
    };
    match &e.body {
        Body::Roll(b) => {
            s.die = Some(b.value);
            let mut out = Applied::ok(format!("{who} rolls {}", b.value));
            match s.game.roll(p, b.value) {
                Ok(ludo::RollOutcome::ThirdSix { .. }) => {
                    out.summary.push_str(" — third six, turn passes");
                }
                Ok(ludo::RollOutcome::Pass) => out.summary.push_str(" — nothing can move"),
                Ok(_) => {}
                Err(err) => {
                    out.error = Some(format!("replay: {err}"));
                    out.tone = Tone::Error;
                }
            }
            out
        }
        Body::Move(b) => {
            let what = match b.action {
                MoveAction::Token(t) => format!("moves token {t}"),
                MoveAction::Pass => "passes".to_owned(),
                MoveAction::Draughts(ref t) => format!("sends {t}"),
            };
            let (summary, tone) = attempt_summary(who, &what, e);
            let mut out = Applied {
                summary,
                tone,
                verdict: None,
                error: None,
            };
            if !b.attempt.accepted() {
                let verdict = match b.action {
                    MoveAction::Token(t) => match u8::try_from(t) {
                        Ok(t) => s.game.classify_move(p, t).err().map(|e| e.to_string()),
                        Err(_) => Some(format!("no token {t}")),
                    },
                    MoveAction::Pass => s.game.classify_pass(p).err().map(|e| e.to_string()),
                    MoveAction::Draughts(_) => Some("not a Ludo move".to_owned()),
                };
                out.verdict = Some(verdict.unwrap_or_else(|| {
                    "legal in this position (the server rejected a legal move)".to_owned()
                }));
                return out;
            }
            if s.pending_auto == Some(p) && b.attempt.is_auto() {
                // Already applied by the engine at the timeout.
                s.pending_auto = None;
                return out;
            }
            s.pending_auto = None;
            let res = match b.action {
                MoveAction::Token(t) => match u8::try_from(t) {
                    Ok(t) => s.game.move_token(p, t).map(|mo| {
                        s.moved = Some((p, mo.token));
                        s.captured = mo.captures.iter().map(|c| (c.player, c.token)).collect();
                        if !mo.captures.is_empty() {
                            out.summary.push_str(" — captures");
                        }
                        if mo.finished {
                            out.summary.push_str(" — token home");
                        }
                    }),
                    Err(_) => Err(ludo::LudoError::NoSuchToken {
                        token: u8::MAX,
                        tokens: 0,
                    }),
                },
                MoveAction::Pass => s.game.pass(p).map(|_| ()),
                MoveAction::Draughts(_) => Err(ludo::LudoError::GameOver),
            };
            if let Err(err) = res {
                out.error = Some(format!("replay: {err}"));
                out.tone = Tone::Error;
            }
            out
        }
        Body::Timeout(b) => {
            let mut out = Applied {
                tone: Tone::Warning,
                ..Applied::ok(format!(
                    "{who} times out after {:.1} s ({})",
                    b.elapsed_ms as f64 / 1000.0,
                    b.outcome
                ))
            };
            match s.game.timeout(p) {
                Ok(ludo::TimeoutOutcome::AutoMove(mo)) => {
                    s.pending_auto = Some(p);
                    s.moved = Some((p, mo.token));
                    s.captured = mo.captures.iter().map(|c| (c.player, c.token)).collect();
                    out.summary
                        .push_str(&format!(" — server moves token {}", mo.token));
                }
                Ok(ludo::TimeoutOutcome::AutoPass(_)) => {
                    s.pending_auto = Some(p);
                    out.summary.push_str(" — server passes");
                }
                Ok(ludo::TimeoutOutcome::AutoRoll) => out.summary.push_str(" — server rolls"),
                Ok(ludo::TimeoutOutcome::Forfeit { .. }) => out.summary.push_str(" — forfeits"),
                Err(err) => {
                    out.error = Some(format!("replay: {err}"));
                    out.tone = Tone::Error;
                }
            }
            out
        }
        Body::Left(b) => {
            let mut out = Applied {
                tone: Tone::Warning,
                ..Applied::ok(format!("{who} leaves ({})", b.reason))
            };
            if let Err(err) = s.game.leave(p) {
                out.error = Some(format!("replay: {err}"));
                out.tone = Tone::Error;
            }
            out
        }
        _ => generic(e),
    }
}

fn cards(v: &[String]) -> Result<Vec<Card>, String> {
    v.iter()
        .map(|c| Card::from_str(c).map_err(|e| e.to_string()))
        .collect()
}

fn by_player(
    accounts: &[String; 2],
    hands: &[(String, Vec<String>)],
) -> Result<[Vec<Card>; 2], String> {
    let mut out: [Vec<Card>; 2] = [vec![], vec![]];
    for (acc, h) in hands {
        let i = player_index(accounts, acc).ok_or_else(|| format!("unknown account {acc}"))?;
        out[i] = cards(h)?;
    }
    Ok(out)
}

fn note_trick(s: &mut BState, out: &belote::PlayOutcome) {
    if let Some(t) = out.trick {
        s.last_trick = Some(TrickView {
            cards: t.cards.to_vec(),
            winner: t.winner,
            points: t.points,
            number: t.number,
        });
    }
    if let Some(end) = &out.deal_end {
        s.closed = Some((end.tricks, end.card_points, end.trump, end.taker, None));
    }
}

fn apply_belote(s: &mut BState, e: &Event) -> Applied {
    let who = e.player().unwrap_or("");
    let p = player_index(&s.accounts, who);
    let fail = |out: &mut Applied, err: String| {
        out.error = Some(format!("replay: {err}"));
        out.tone = Tone::Error;
    };
    match (&e.body, p) {
        (Body::Deal(b), _) => {
            let mut out = Applied::ok(format!(
                "deal {} by {}: {} turned",
                b.deal, b.dealer, b.turned
            ));
            s.deal = Some(b.deal);
            s.dealer = player_index(&s.accounts, &b.dealer);
            s.bids.clear();
            s.last_trick = None;
            s.result = None;
            s.closed = None;
            let res = by_player(&s.accounts, &b.hands).and_then(|hands| {
                let turned = Card::from_str(&b.turned).map_err(|e| e.to_string())?;
                s.m.deal_visible(hands, turned).map_err(|e| e.to_string())
            });
            if let Err(err) = res {
                fail(&mut out, err);
            }
            out
        }
        (Body::Bid(b), Some(p)) => {
            let (summary, tone) =
                attempt_summary(who, &format!("bids {} (round {})", b.bid, b.round), e);
            let mut out = Applied {
                summary,
                tone,
                verdict: None,
                error: None,
            };
            let bid = belote::Bid::from_str(&b.bid);
            if !b.attempt.accepted() {
                out.verdict = Some(match bid {
                    Ok(bid) => s.m.classify_bid(p, bid).err().map_or_else(
                        || "legal in this position (the server rejected a legal bid)".to_owned(),
                        |e| e.to_string(),
                    ),
                    Err(err) => err.to_string(),
                });
                return out;
            }
            s.bids.push((p, b.bid.clone()));
            if s.pending_auto == Some(p) && b.attempt.is_auto() {
                s.pending_auto = None;
                return out;
            }
            s.pending_auto = None;
            match bid
                .map_err(|e| e.to_string())
                .and_then(|bid| s.m.bid(p, bid).map_err(|e| e.to_string()))
            {
                Ok(belote::BidOutcome::Void(_)) => out.summary.push_str(" — deal void"),
                Ok(belote::BidOutcome::Taken { trump, .. }) => {
                    out.summary
                        .push_str(&format!(" — takes, trump {}", suit_symbol(trump)));
                }
                Ok(_) => {}
                Err(err) => fail(&mut out, err),
            }
            out
        }
        (Body::HandsCompleted(b), _) => {
            let mut out = Applied::ok(format!(
                "hands completed: {} takes, trump {}",
                b.taker,
                Suit::from_str(&b.trump)
                    .map_or_else(|_| b.trump.clone(), |s| suit_symbol(s).to_owned())
            ));
            if let Err(err) = by_player(&s.accounts, &b.hands)
                .and_then(|h| s.m.complete_hands(h).map_err(|e| e.to_string()))
            {
                fail(&mut out, err);
            }
            out
        }
        (Body::Play(b), Some(p)) => {
            let announce = b.announce.map(|a| format!(" ({a})")).unwrap_or_default();
            let (summary, tone) = attempt_summary(who, &format!("plays {}{announce}", b.card), e);
            let mut out = Applied {
                summary,
                tone,
                verdict: None,
                error: None,
            };
            let card = Card::from_str(&b.card);
            let ann = b
                .announce
                .and_then(|a| belote::Announce::from_str(a.as_str()).ok());
            if !b.attempt.accepted() {
                out.verdict = Some(match card {
                    Ok(c) => s.m.classify_play(p, c, ann).err().map_or_else(
                        || "legal in this position (the server rejected a legal card)".to_owned(),
                        |e| e.to_string(),
                    ),
                    Err(err) => err.to_string(),
                });
                return out;
            }
            if s.pending_auto == Some(p) && b.attempt.is_auto() {
                s.pending_auto = None;
                return out;
            }
            s.pending_auto = None;
            match card
                .map_err(|e| e.to_string())
                .and_then(|c| s.m.play(p, c, ann).map_err(|e| e.to_string()))
            {
                Ok(po) => {
                    if let Some(t) = po.trick {
                        out.summary.push_str(&format!(
                            " — trick {} to {}",
                            t.number,
                            s.accounts.get(t.winner).map_or("?", String::as_str)
                        ));
                    }
                    note_trick(s, &po);
                }
                Err(err) => fail(&mut out, err),
            }
            out
        }
        (Body::DealEnded(b), _) => {
            let pts = |v: &[(String, i64)]| -> [i64; 2] {
                let mut o = [0, 0];
                for (acc, x) in v {
                    if let Some(i) = player_index(&s.accounts, acc) {
                        o[i] = *x;
                    }
                }
                o
            };
            s.totals = pts(&b.totals);
            let points = pts(&b.points);
            s.result = Some(DealResult {
                outcome: b.outcome.as_str().to_owned(),
                points,
            });
            Applied {
                tone: Tone::End,
                ..Applied::ok(format!(
                    "deal {} {}: {} – {} (totals {} – {})",
                    b.deal, b.outcome, points[0], points[1], s.totals[0], s.totals[1]
                ))
            }
        }
        (Body::Timeout(b), Some(p)) => {
            let mut out = Applied {
                tone: Tone::Warning,
                ..Applied::ok(format!(
                    "{who} times out after {:.1} s ({})",
                    b.elapsed_ms as f64 / 1000.0,
                    b.outcome
                ))
            };
            match s.m.timeout(p) {
                Ok(belote::TimeoutOutcome::AutoBid(_)) => {
                    s.pending_auto = Some(p);
                    s.bids.push((p, "pass".to_owned()));
                    out.summary.push_str(" — server passes");
                }
                Ok(belote::TimeoutOutcome::AutoPlay(po)) => {
                    s.pending_auto = Some(p);
                    out.summary
                        .push_str(&format!(" — server plays {}", po.card));
                    note_trick(s, &po);
                }
                Ok(belote::TimeoutOutcome::Lost { .. }) => out.summary.push_str(" — match lost"),
                Err(err) => fail(&mut out, err.to_string()),
            }
            out
        }
        (Body::Left(b), Some(p)) => {
            let mut out = Applied {
                tone: Tone::Warning,
                ..Applied::ok(format!("{who} leaves ({})", b.reason))
            };
            if let Err(err) = s.m.leave(p) {
                fail(&mut out, err.to_string());
            }
            out
        }
        _ => generic(e),
    }
}

/// The suit as a symbol.
pub fn suit_symbol(s: Suit) -> &'static str {
    match s {
        Suit::Spades => "♠",
        Suit::Hearts => "♥",
        Suit::Diamonds => "♦",
        Suit::Clubs => "♣",
    }
}

fn generic(e: &Event) -> Applied {
    match &e.body {
        Body::GameStarted(b) => Applied::ok(format!(
            "{} {} game starts: {}",
            b.kind,
            b.mode,
            b.players
                .iter()
                .map(|p| format!("{} ({})", p.account, p.seat))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Body::Timeout(b) => Applied {
            tone: Tone::Warning,
            ..Applied::ok(format!(
                "{} times out after {:.1} s ({})",
                b.player,
                b.elapsed_ms as f64 / 1000.0,
                b.outcome
            ))
        },
        Body::Left(b) => Applied {
            tone: Tone::Warning,
            ..Applied::ok(format!("{} leaves ({})", b.player, b.reason))
        },
        Body::DrawOffer(b) => Applied::ok(format!("{} offers a draw", b.player)),
        Body::DrawAnswer(b) => Applied::ok(format!(
            "{} {} the draw",
            b.player,
            if b.accept { "accepts" } else { "declines" }
        )),
        Body::GameEnded(b) => Applied {
            tone: Tone::End,
            ..Applied::ok(format!(
                "game ends: {} ({}); payouts {}; rake {}",
                b.result,
                b.reason,
                b.payouts
                    .iter()
                    .map(|(a, v)| format!("{a} {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                b.rake
            ))
        },
        Body::SeedRevealed(b) => Applied::ok(format!(
            "seed revealed: {}…",
            b.seed.get(..16).unwrap_or(&b.seed)
        )),
        other => Applied::ok(other.event_type().as_str().replace('_', " ")),
    }
}

/// One frame per event of the game, in order.
pub fn frames(view: &GameView) -> Vec<Frame> {
    let mut state = State::None;
    let mut start_error: Option<String> = None;
    let mut out = Vec::with_capacity(view.events.len());
    for (index, le) in view.events.iter().enumerate() {
        let e = &le.event;
        let applied = match (&e.body, &mut state) {
            (Body::GameStarted(b), State::None) => {
                match State::start(b) {
                    Ok(s) => state = s,
                    Err(err) => start_error = Some(err),
                }
                let mut a = generic(e);
                if let Some(err) = &start_error {
                    a.error = Some(err.clone());
                    a.tone = Tone::Error;
                }
                a
            }
            (_, State::Draughts(s)) => apply_draughts(s, e),
            (_, State::Ludo(s)) => apply_ludo(s, e),
            (_, State::Belote(s)) => apply_belote(s, e),
            (_, State::None) => Applied {
                error: Some(
                    start_error
                        .clone()
                        .unwrap_or_else(|| "no game_started before this event".to_owned()),
                ),
                tone: Tone::Error,
                ..generic(e)
            },
        };
        out.push(Frame {
            index,
            seq: e.seq,
            ts: e.ts,
            actor: e.player().map(str::to_owned),
            summary: applied.summary,
            tone: if applied.error.is_some() {
                Tone::Error
            } else {
                applied.tone
            },
            verdict: applied.verdict,
            error: applied.error,
            board: state.board(),
        });
    }
    out
}

/// Whether an event is a rejected attempt.
pub fn is_rejected(e: &Event) -> bool {
    e.attempt().is_some_and(|a| a.status == Status::Rejected)
}

/// The seat (0-based position in `players`) of an account in a game.
pub fn seat_index(started: &GameStarted, account: &str) -> Option<usize> {
    seat_of(started, account)
}
