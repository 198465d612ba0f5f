//! Invented but legal games for the fake data source: played with the rules engines, randomness derived from seeds as `fairness.md` prescribes, with injected behaviours (illegal attempts, departures while losing, timeouts, slow or machine-regular play, early leaves, resignations) and a few server faults.

use crate::fairness;
use crate::games::belote::{self, Card, Rank, Suit};
use crate::games::draughts::{self as dr, Color, Variant};
use crate::games::ludo::{self, PlayerStatus};
use crate::log::syntax::EpochMs;
use crate::log::{self, Attempt, Body, Event, Kind, Mode, MoveAction, RejectReason, Seat, Status};

use crate::serve::audit::sha256_hex;
use crate::serve::board::square_cell;
use crate::serve::data::{
    Finding, FindingCategory, GamePlayer, GameSummary, GameView, LoggedEvent, Severity,
};

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1).max(1) as usize) as i64
    }

    /// `n` random bytes as hex.
    pub fn hex(&mut self, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes * 2);
        while s.len() < bytes * 2 {
            s.push_str(&format!("{:016x}", self.next_u64()));
        }
        s.truncate(bytes * 2);
        s
    }

    /// One element.
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        v.get(self.below(v.len()))
    }
}

/// A player of a planned game.
#[derive(Debug, Clone)]
pub struct Seated {
    /// Account.
    pub account: String,
    /// IP hash.
    pub ip: String,
    /// Device hash.
    pub device: String,
}

/// Behaviours injected into a game, by player position (0 = first listed).
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Makes illegal or out-of-turn attempts (about this many).
    pub attempts: Option<(usize, usize)>,
    /// Leaves when losing.
    pub leave_when_losing: Option<usize>,
    /// Lets the clock run out.
    pub timeouts: Option<usize>,
    /// Plays slowly when losing.
    pub slow_when_losing: Option<usize>,
    /// Machine-regular think times.
    pub bot: Option<usize>,
    /// Leaves early on purpose (chip dumping).
    pub dump: Option<usize>,
    /// Resigns after a few moves (win trading).
    pub resign: Option<usize>,
    /// Server fault: one accepted move above the clock limit.
    pub late_move: bool,
    /// Server fault: payouts inconsistent with the result.
    pub wrong_payout: bool,
}

/// A game to generate.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Game id.
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// Mode.
    pub mode: Mode,
    /// Ludo variant.
    pub ludo: Option<ludo::Variant>,
    /// Players in `players` order.
    pub players: Vec<Seated>,
    /// Start time.
    pub start: EpochMs,
    /// Stake per player.
    pub stake: i64,
    /// Behaviours.
    pub behaviour: Behaviour,
    /// RNG seed.
    pub seed: u64,
}

/// An event log under construction: seq, timestamps and the `prev` chain.
struct Log {
    game: String,
    seq: i64,
    ts: EpochMs,
    prev: Option<String>,
    events: Vec<LoggedEvent>,
    findings: Vec<Finding>,
}

impl Log {
    fn new(game: &str, start: EpochMs) -> Log {
        Log {
            game: game.to_owned(),
            seq: 0,
            ts: start,
            prev: None,
            events: Vec::new(),
            findings: Vec::new(),
        }
    }

    fn push(&mut self, dt: i64, body: Body) -> i64 {
        self.ts += dt.max(0);
        let e = Event {
            v: 1,
            game: self.game.clone(),
            seq: self.seq,
            ts: self.ts,
            prev: self.prev.clone(),
            body,
            extra: Vec::new(),
        };
        let raw = log::to_line(&e);
        self.prev = Some(sha256_hex(raw.as_bytes()));
        self.events.push(LoggedEvent { event: e, raw });
        self.seq += 1;
        self.seq - 1
    }

    #[allow(clippy::too_many_arguments)]
    fn finding(
        &mut self,
        seq: i64,
        code: &str,
        category: FindingCategory,
        severity: Severity,
        account: Option<&str>,
        expected: Option<String>,
        logged: Option<String>,
        message: String,
    ) {
        self.findings.push(Finding {
            seq,
            code: code.to_owned(),
            category,
            severity,
            account: account.map(str::to_owned),
            expected,
            logged,
            message,
        });
    }
}

fn accepted(think_ms: i64) -> Attempt {
    Attempt {
        status: Status::Accepted,
        reason: None,
        think_ms,
        auto: None,
    }
}

fn automatic(think_ms: i64) -> Attempt {
    Attempt {
        status: Status::Accepted,
        reason: None,
        think_ms,
        auto: Some(true),
    }
}

fn rejected(reason: RejectReason, think_ms: i64) -> Attempt {
    Attempt {
        status: Status::Rejected,
        reason: Some(reason),
        think_ms,
        auto: None,
    }
}

/// Think time of player `pos`.
fn think(rng: &mut Rng, b: &Behaviour, pos: usize, losing: bool, limit_ms: i64) -> i64 {
    if b.bot == Some(pos) {
        return 1150 + rng.range(0, 70);
    }
    if b.slow_when_losing == Some(pos) && losing {
        return (limit_ms as f64 * (0.78 + 0.2 * rng.unit())) as i64;
    }
    let base = 600.0 + (-(1.0 - rng.unit()).ln()) * 3200.0;
    (base as i64).min(limit_ms * 8 / 10)
}

fn net(rng: &mut Rng) -> i64 {
    rng.range(40, 380)
}

/// Payouts and rake for a winner (index) or a draw (`None`).
fn payouts(players: &[Seated], stake: i64, winner: Option<usize>) -> (Vec<(String, i64)>, i64) {
    let pot = stake * players.len() as i64;
    match winner {
        Some(w) => {
            let rake = pot / 20;
            (
                players
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (p.account.clone(), if i == w { pot - rake } else { 0 }))
                    .collect(),
                rake,
            )
        }
        None => (
            players.iter().map(|p| (p.account.clone(), stake)).collect(),
            0,
        ),
    }
}

fn started(plan: &Plan, seats: &[Seat], commitment: Option<String>) -> Body {
    let clock = match plan.kind {
        Kind::Draughts10 => log::Clock {
            move_s: Some(30),
            ..log::Clock::default()
        },
        Kind::Draughts8 => log::Clock {
            move_s: Some(60),
            max_timeouts: Some(3),
            select_s: (plan.mode == Mode::Medieval).then_some(20),
            ..log::Clock::default()
        },
        Kind::Ludo => log::Clock {
            turn_s: plan.ludo.as_ref().map(|v| v.turn_s),
            max_timeouts: plan.ludo.as_ref().map(|v| v.max_timeouts),
            ..log::Clock::default()
        },
        Kind::Belote => log::Clock {
            move_s: Some(30),
            max_timeouts: Some(3),
            ..log::Clock::default()
        },
    };
    let variant = match plan.kind {
        Kind::Ludo => plan
            .ludo
            .as_ref()
            .map(|v| log::Variant::Ludo(crate::replay::ludo::logged_variant(v))),
        Kind::Belote => Some(log::Variant::Belote { target: 501 }),
        _ => None,
    };
    Body::GameStarted(log::GameStarted {
        kind: plan.kind,
        mode: plan.mode,
        variant,
        rated: true,
        players: plan
            .players
            .iter()
            .zip(seats)
            .map(|(p, s)| log::Player {
                account: p.account.clone(),
                seat: *s,
                ip: p.ip.clone(),
                device: p.device.clone(),
            })
            .collect(),
        stake: plan.stake,
        currency: "coin".to_owned(),
        clock,
        commitment,
    })
}

/// A finished generated game.
pub struct Generated {
    /// The game with its events and findings.
    pub view: GameView,
}

#[allow(clippy::too_many_arguments)]
fn finish(
    plan: &Plan,
    seats: &[Seat],
    mut log: Log,
    winner: Option<usize>,
    result: String,
    reason: log::EndReason,
    seed: Option<&str>,
    rng: &mut Rng,
) -> Generated {
    let (mut pays, rake) = payouts(&plan.players, plan.stake, winner);
    let mut wrong = false;
    if plan.behaviour.wrong_payout && winner.is_some() && pays.len() == 2 {
        // The server pays the loser a share of the pot.
        let share = (plan.stake / 4).max(1);
        for (i, p) in pays.iter_mut().enumerate() {
            if Some(i) == winner {
                p.1 -= share;
            } else {
                p.1 += share;
            }
        }
        wrong = true;
    }
    let end_seq = log.push(
        net(rng),
        Body::GameEnded(log::GameEnded {
            result: result.clone(),
            reason,
            payouts: pays.clone(),
            rake,
        }),
    );
    if wrong {
        let (right, _) = payouts(&plan.players, plan.stake, winner);
        log.finding(
            end_seq,
            "wrong_payout",
            FindingCategory::Integrity,
            Severity::Critical,
            winner.map(|w| plan.players[w].account.as_str()),
            Some(format!("{right:?}")),
            Some(format!("{pays:?}")),
            "Payouts differ from the result: the loser was paid part of the pot.".to_owned(),
        );
    }
    if let Some(seed) = seed {
        log.push(
            rng.range(5, 40),
            Body::SeedRevealed(log::SeedRevealed {
                seed: seed.to_owned(),
            }),
        );
    }
    let players = plan
        .players
        .iter()
        .zip(seats)
        .enumerate()
        .map(|(i, (p, s))| {
            let payout = pays.iter().find(|(a, _)| *a == p.account).map(|x| x.1);
            GamePlayer {
                account: p.account.clone(),
                seat: *s,
                ip: p.ip.clone(),
                device: p.device.clone(),
                outcome: Some(
                    match winner {
                        None => "draw",
                        Some(w) if w == i => "win",
                        Some(_) => "loss",
                    }
                    .to_owned(),
                ),
                payout,
                net: payout.map(|x| x - plan.stake),
            }
        })
        .collect();
    let seeded = seed.is_some();
    let mut findings = std::mem::take(&mut log.findings);
    findings.sort_by_key(|f| f.seq);
    let variant = match plan.kind {
        Kind::Ludo => plan.ludo.as_ref().map(|v| v.name.clone()),
        Kind::Belote => Some("target=501".to_owned()),
        _ => None,
    };
    let ended_at = log.events.get(end_seq as usize).map(|e| e.event.ts);
    Generated {
        view: GameView {
            summary: GameSummary {
                id: plan.id.clone(),
                kind: plan.kind,
                mode: plan.mode,
                variant,
                rated: true,
                stake: plan.stake,
                currency: "coin".to_owned(),
                players,
                started_at: plan.start,
                ended_at,
                result_logged: Some(result.clone()),
                reason_logged: Some(reason.as_str().to_owned()),
                result_replayed: Some(result),
                reason_replayed: Some(reason.as_str().to_owned()),
                fairness: if seeded { "pass" } else { "n/a" }.to_owned(),
                desynced: false,
            },
            events: log.events,
            findings,
        },
    }
}

// ----- draughts -----

fn cell_square(v: Variant, row: i32, col: i32) -> Option<u8> {
    let size = i32::from(v.size());
    if !(0..size).contains(&row) || !(0..size).contains(&col) || (row + col) % 2 == 0 {
        return None;
    }
    let n = row * (size / 2) + col / 2 + 1;
    u8::try_from(n).ok()
}

fn attempt_code(e: &dr::Illegal) -> &'static str {
    match e {
        dr::Illegal::Unparseable(_) => "unparseable",
        dr::Illegal::NotOwnPiece { .. } => "not_own_piece",
        dr::Illegal::WrongDirection => "wrong_direction",
        dr::Illegal::SkippedMandatoryCapture => "skipped_capture",
        dr::Illegal::NotMajority { .. } => "not_majority",
        dr::Illegal::NoSuchPath => "no_such_path",
        dr::Illegal::Ambiguous { .. } => "ambiguous_move",
    }
}

/// An illegal move text for the side to move, with the engine's cause.
fn illegal_draughts(rng: &mut Rng, g: &dr::Game) -> Option<(String, dr::Illegal)> {
    let pos = g.position();
    let v = pos.variant();
    let mut cands: Vec<(String, dr::Illegal)> = Vec::new();
    for (sq, piece) in pos.pieces() {
        let Some((r, c)) = square_cell(v, sq.number()) else {
            continue;
        };
        for (dr_, dc) in [(-1, -1), (-1, 1), (1, -1), (1, 1)] {
            let Some(t) = cell_square(v, r as i32 + dr_, c as i32 + dc) else {
                continue;
            };
            let text = format!("{}-{t}", sq.number());
            if let Err(e) = g.classify(&text) {
                let weight = match (&e, piece.color == pos.turn()) {
                    (dr::Illegal::SkippedMandatoryCapture, _) => 6,
                    (dr::Illegal::WrongDirection, _) => 3,
                    (dr::Illegal::NotOwnPiece { .. }, false) => 1,
                    _ => 0,
                };
                for _ in 0..weight {
                    cands.push((text.clone(), e.clone()));
                }
            }
        }
    }
    if rng.chance(0.15) {
        let text = format!("{}-{}x", rng.range(1, 60), rng.range(1, 60));
        if let Err(e) = g.classify(&text) {
            cands.push((text, e));
        }
    }
    rng.pick(&cands).cloned()
}

fn material_balance(g: &dr::Game, color: Color) -> i64 {
    let m = g.material();
    let score = |s: dr::SideMaterial| i64::from(s.men) + 3 * i64::from(s.kings);
    let (me, them) = match color {
        Color::White => (m.white, m.black),
        Color::Black => (m.black, m.white),
    };
    score(me) - score(them)
}

/// A draughts game (either board, Medieval included).
pub fn draughts(plan: &Plan) -> Generated {
    let mut rng = Rng::new(plan.seed);
    let b = &plan.behaviour;
    let medieval = plan.mode == Mode::Medieval;
    let variant = if plan.kind == Kind::Draughts10 {
        Variant::International
    } else {
        Variant::Brazilian
    };
    let limit_ms: i64 = if variant == Variant::International {
        30_000
    } else {
        60_000
    };
    let seats = [Seat::White, Seat::Black];
    let seed = medieval.then(|| rng.hex(32));
    let mut log = Log::new(&plan.id, plan.start);
    log.push(
        0,
        started(plan, &seats, seed.as_deref().map(fairness::commitment)),
    );
    let mut g = if medieval {
        dr::Game::new_medieval()
    } else {
        dr::Game::new(variant)
    };
    if let Some(seed) = &seed {
        for (pos, color) in [(0usize, Color::White), (1, Color::Black)] {
            let men: Vec<u8> = g
                .position()
                .pieces()
                .iter()
                .filter(|(_, p)| p.color == color)
                .map(|(s, _)| s.number())
                .collect();
            let chosen_n = if rng.chance(0.4) { rng.below(3) } else { 3 };
            let mut pool = men.clone();
            let mut chosen = Vec::new();
            for _ in 0..chosen_n {
                let i = rng.below(pool.len());
                chosen.push(pool.remove(i));
            }
            let sel_color = if color == Color::White {
                fairness::SelectColor::White
            } else {
                fairness::SelectColor::Black
            };
            let auto = fairness::auto_select(seed, &plan.id, sel_color, &chosen, &men);
            let mut all = chosen.clone();
            all.extend(&auto);
            let squares: Vec<dr::Square> = all
                .iter()
                .filter_map(|&n| variant.square(u32::from(n)))
                .collect();
            let _ = g.select(color, &squares);
            log.push(
                if auto.is_empty() {
                    rng.range(3000, 15000)
                } else {
                    20_000
                },
                Body::Selection(log::Selection {
                    player: plan.players[pos].account.clone(),
                    squares: all,
                    auto,
                }),
            );
        }
    }
    let mut duel_n: u64 = 0;
    let mut ply = 0usize;
    let max_plies = 50 + rng.below(60);
    let mut attempts_left = b.attempts.map_or(0, |(_, n)| n);
    let mut timeouts_row = [0u32; 2];
    let mut late_done = false;
    let dump_at = 6 + rng.below(8);
    let resign_at = 10 + rng.below(14);
    let end: (Option<usize>, String, log::EndReason) = loop {
        match g.status() {
            dr::Status::Win { winner, reason } => {
                let w = if winner == Color::White { 0 } else { 1 };
                break (
                    Some(w),
                    winner.to_string(),
                    match reason {
                        dr::WinReason::NoPieces => log::EndReason::NoPieces,
                        dr::WinReason::NoMoves => log::EndReason::NoMoves,
                    },
                );
            }
            dr::Status::Draw { reason } => {
                break (
                    None,
                    "draw".to_owned(),
                    match reason {
                        dr::DrawReason::DrawRule => log::EndReason::DrawRule,
                        dr::DrawReason::Repetition => log::EndReason::Repetition,
                    },
                );
            }
            dr::Status::Ongoing => {}
        }
        let turn = g.position().turn();
        let pos = if turn == Color::White { 0 } else { 1 };
        let other = 1 - pos;
        let acc = plan.players[pos].account.clone();
        let balance = material_balance(&g, turn);
        let losing = balance < 0;
        // Departures.
        let leave =
            (b.leave_when_losing == Some(pos) && ply >= 14 && balance <= -2 && rng.chance(0.6))
                || (b.dump == Some(pos) && ply >= dump_at)
                || (b.resign == Some(pos) && ply >= resign_at);
        if leave {
            let reason = if b.resign == Some(pos) {
                log::LeftReason::Resigned
            } else if rng.chance(0.7) {
                log::LeftReason::PageClosed
            } else {
                log::LeftReason::Disconnected
            };
            log.push(
                rng.range(800, 9000),
                Body::Left(log::Left {
                    player: acc.clone(),
                    reason,
                }),
            );
            break (Some(other), turn.other().to_string(), log::EndReason::Left);
        }
        if ply >= max_plies {
            if balance.abs() <= 1 {
                let offer = plan.players[pos].account.clone();
                log.push(
                    rng.range(1000, 5000),
                    Body::DrawOffer(log::DrawOffer { player: offer }),
                );
                log.push(
                    rng.range(1000, 6000),
                    Body::DrawAnswer(log::DrawAnswer {
                        player: plan.players[other].account.clone(),
                        accept: true,
                    }),
                );
                break (None, "draw".to_owned(), log::EndReason::Agreement);
            }
            let loser = if balance < 0 { pos } else { other };
            log.push(
                rng.range(2000, 9000),
                Body::Left(log::Left {
                    player: plan.players[loser].account.clone(),
                    reason: log::LeftReason::Resigned,
                }),
            );
            let w = 1 - loser;
            let wc = if w == 0 { Color::White } else { Color::Black };
            break (Some(w), wc.to_string(), log::EndReason::Left);
        }
        // Illegal attempts.
        if let Some((who, _)) = b.attempts
            && attempts_left > 0
            && rng.chance(0.3)
        {
            if who == pos {
                if let Some((text, cause)) = illegal_draughts(&mut rng, &g) {
                    attempts_left -= 1;
                    let reason = if matches!(cause, dr::Illegal::Unparseable(_)) {
                        RejectReason::Malformed
                    } else {
                        RejectReason::Illegal
                    };
                    let t = rng.range(300, 2500);
                    let seq = log.push(
                        t + 60,
                        Body::Move(log::Move {
                            player: acc.clone(),
                            action: MoveAction::Draughts(text.clone()),
                            attempt: rejected(reason, t),
                            duels: None,
                        }),
                    );
                    let expected = g.legal_moves().first().map(|m| m.to_full_string());
                    log.finding(
                        seq,
                        attempt_code(&cause),
                        FindingCategory::Attempt,
                        Severity::Low,
                        Some(&acc),
                        expected,
                        Some(text.clone()),
                        format!("{acc} tried {text}: {cause}."),
                    );
                }
            } else if let Some(m) = g.legal_moves().first() {
                // Out of turn: the opponent sends a move while it is not their turn.
                attempts_left -= 1;
                let opp = plan.players[who].account.clone();
                let text = m.to_short_string();
                let since = rng.range(120, 900);
                let seq = log.push(
                    since,
                    Body::Move(log::Move {
                        player: opp.clone(),
                        action: MoveAction::Draughts(text.clone()),
                        attempt: rejected(RejectReason::NotYourTurn, since),
                        duels: None,
                    }),
                );
                log.finding(
                    seq,
                    "out_of_turn",
                    FindingCategory::Attempt,
                    Severity::Low,
                    Some(&opp),
                    Some(format!("{acc} to move")),
                    Some(text),
                    format!("{opp} sent a move {since} ms after the turn passed to {acc}."),
                );
            }
        }
        // Timeouts.
        if b.timeouts == Some(pos)
            && rng.chance(if variant == Variant::International {
                0.06
            } else {
                0.22
            })
        {
            let elapsed = limit_ms + rng.range(5, 400);
            if variant == Variant::International {
                log.push(
                    elapsed,
                    Body::Timeout(log::Timeout {
                        player: acc.clone(),
                        elapsed_ms: elapsed,
                        outcome: log::TimeoutOutcome::Loss,
                    }),
                );
                break (
                    Some(other),
                    turn.other().to_string(),
                    log::EndReason::Timeout,
                );
            }
            timeouts_row[pos] += 1;
            if timeouts_row[pos] >= 3 {
                log.push(
                    elapsed,
                    Body::Timeout(log::Timeout {
                        player: acc.clone(),
                        elapsed_ms: elapsed,
                        outcome: log::TimeoutOutcome::Loss,
                    }),
                );
                break (
                    Some(other),
                    turn.other().to_string(),
                    log::EndReason::Timeouts,
                );
            }
            log.push(
                elapsed,
                Body::Timeout(log::Timeout {
                    player: acc.clone(),
                    elapsed_ms: elapsed,
                    outcome: log::TimeoutOutcome::Auto,
                }),
            );
            let Some(m) = g.auto_move() else { continue };
            let duels = duels_for(&g, &m, seed.as_deref(), &plan.id, &mut duel_n);
            let _ = g.play_with_duels(&m, &duels);
            log.push(
                rng.range(20, 80),
                Body::Move(log::Move {
                    player: acc.clone(),
                    action: MoveAction::Draughts(m.to_full_string()),
                    attempt: automatic(limit_ms),
                    duels: log_duels(&duels, medieval, &m),
                }),
            );
            ply += 1;
            continue;
        }
        timeouts_row[pos] = 0;
        let moves = g.legal_moves();
        let Some(m) = rng.pick(&moves).cloned() else {
            continue;
        };
        let mut t = think(&mut rng, b, pos, losing, limit_ms);
        if b.late_move && !late_done && ply >= 12 && ply % 2 == 1 {
            late_done = true;
            t = limit_ms + rng.range(1500, 6000);
            log.finding(
                log.seq,
                "late_move",
                FindingCategory::Integrity,
                Severity::High,
                Some(&acc),
                Some(format!("think_ms <= {limit_ms}")),
                Some(t.to_string()),
                format!(
                    "The server accepted {acc}'s move {} ms after the clock limit.",
                    t - limit_ms
                ),
            );
        }
        let duels = duels_for(&g, &m, seed.as_deref(), &plan.id, &mut duel_n);
        let duel_time = 1500 * duels.len() as i64;
        let _ = g.play_with_duels(&m, &duels);
        log.push(
            t + rng.range(30, 250) + duel_time,
            Body::Move(log::Move {
                player: acc,
                action: MoveAction::Draughts(m.to_full_string()),
                attempt: accepted(t),
                duels: log_duels(&duels, medieval, &m),
            }),
        );
        ply += 1;
    };
    let (winner, result, reason) = end;
    finish(
        plan,
        &seats,
        log,
        winner,
        result,
        reason,
        seed.as_deref(),
        &mut rng,
    )
}

fn duels_for(
    g: &dr::Game,
    m: &dr::Move,
    seed: Option<&str>,
    game: &str,
    n: &mut u64,
) -> Vec<dr::Duel> {
    let Some(seed) = seed else { return Vec::new() };
    let mut out = Vec::new();
    for victim in dr::duel_victims(g.position(), m) {
        let won = fairness::duel(seed, game, *n);
        *n += 1;
        out.push(dr::Duel { victim, won });
        if !won {
            break;
        }
    }
    out
}

fn log_duels(duels: &[dr::Duel], medieval: bool, m: &dr::Move) -> Option<Vec<log::Duel>> {
    if !medieval || !m.is_capture() || duels.is_empty() {
        return None;
    }
    Some(
        duels
            .iter()
            .map(|d| log::Duel {
                victim: d.victim.number(),
                won: d.won,
            })
            .collect(),
    )
}

// ----- Ludo -----

fn ludo_code(e: &ludo::LudoError) -> &'static str {
    match e {
        ludo::LudoError::NoSuchToken { .. } => "no_such_token",
        ludo::LudoError::TokenFinished(_) => "token_finished",
        ludo::LudoError::WrongDistance { .. } => "wrong_distance",
        ludo::LudoError::NotAllowedOutOfYard { .. } => "not_out_of_yard",
        ludo::LudoError::PassWhileMovable { .. } => "pass_while_movable",
        ludo::LudoError::NotYourTurn { .. } => "out_of_turn",
        ludo::LudoError::GameOver => "after_end",
        _ => "wrong_phase",
    }
}

/// A Ludo game.
pub fn ludo_game(plan: &Plan) -> Generated {
    let mut rng = Rng::new(plan.seed);
    let b = &plan.behaviour;
    let variant = plan.ludo.clone().unwrap_or_else(ludo::Variant::duel);
    let seats: Vec<Seat> = if variant.players == 2 {
        vec![Seat::Red, Seat::Yellow]
    } else {
        vec![Seat::Red, Seat::Green, Seat::Yellow, Seat::Blue]
    };
    let lseats: Vec<ludo::Seat> = seats
        .iter()
        .filter_map(|s| s.as_str().parse().ok())
        .collect();
    let limit_ms = i64::from(variant.turn_s) * 1000;
    let seed = rng.hex(32);
    let mut log = Log::new(&plan.id, plan.start);
    log.push(0, started(plan, &seats, Some(fairness::commitment(&seed))));
    let Ok(mut g) = ludo::Game::new(variant.clone(), &lseats) else {
        return finish(
            plan,
            &seats,
            log,
            None,
            "draw".to_owned(),
            log::EndReason::Finished,
            Some(&seed),
            &mut rng,
        );
    };
    let mut attempts_left = b.attempts.map_or(0, |(_, n)| n);
    let mut timeouts_row = vec![0u32; plan.players.len()];
    let mut guard = 0;
    let mut reasons: Vec<log::EndReason> = Vec::new();
    while !g.is_over() && guard < 3000 {
        guard += 1;
        // Long games: the player furthest behind gives up.
        if log.seq > 320 && rng.chance(0.05) {
            let playing: Vec<usize> = (0..g.players())
                .filter(|&p| g.status(p) == Some(PlayerStatus::Playing))
                .collect();
            if let Some(&p) = playing.iter().min_by_key(|&&p| g.progress(p).unwrap_or(0)) {
                let _ = g.leave(p);
                log.push(
                    rng.range(500, 4000),
                    Body::Left(log::Left {
                        player: plan.players[p].account.clone(),
                        reason: log::LeftReason::Disconnected,
                    }),
                );
                reasons.push(log::EndReason::Left);
                continue;
            }
        }
        match g.expected() {
            ludo::Expected::Nothing => break,
            ludo::Expected::Roll(p) => {
                let acc = plan.players[p].account.clone();
                let behind = g.progress_balance(p).unwrap_or(0);
                if b.leave_when_losing == Some(p) && behind < -25 && rng.chance(0.08) {
                    let _ = g.leave(p);
                    log.push(
                        rng.range(500, 4000),
                        Body::Left(log::Left {
                            player: acc,
                            reason: log::LeftReason::PageClosed,
                        }),
                    );
                    reasons.push(log::EndReason::Left);
                    continue;
                }
                if b.timeouts == Some(p)
                    && timeouts_row[p] + 1 < variant.max_timeouts
                    && rng.chance(0.06)
                {
                    timeouts_row[p] += 1;
                    let elapsed = limit_ms + rng.range(5, 300);
                    match g.timeout(p) {
                        Ok(ludo::TimeoutOutcome::AutoRoll) => {
                            log.push(
                                elapsed,
                                Body::Timeout(log::Timeout {
                                    player: acc.clone(),
                                    elapsed_ms: elapsed,
                                    outcome: log::TimeoutOutcome::Auto,
                                }),
                            );
                        }
                        _ => continue,
                    }
                } else {
                    timeouts_row[p] = 0;
                }
                let n = g.rolls();
                let value = fairness::die(&seed, &plan.id, n);
                let _ = g.roll(p, value);
                log.push(
                    rng.range(300, 2500),
                    Body::Roll(log::Roll {
                        player: acc,
                        n: n as i64,
                        value,
                    }),
                );
            }
            ludo::Expected::Pass { player: p, .. } => {
                let _ = g.pass(p);
                log.push(
                    rng.range(50, 300),
                    Body::Move(log::Move {
                        player: plan.players[p].account.clone(),
                        action: MoveAction::Pass,
                        attempt: accepted(0),
                        duels: None,
                    }),
                );
            }
            ludo::Expected::Move { player: p, value } => {
                let acc = plan.players[p].account.clone();
                if b.attempts.is_some_and(|(who, _)| who == p)
                    && attempts_left > 0
                    && rng.chance(0.35)
                {
                    let legal = g.legal_tokens(value);
                    let tokens = variant.tokens;
                    let try_token: Option<(MoveAction, ludo::LudoError)> = (0..tokens)
                        .filter(|t| !legal.contains(t))
                        .find_map(|t| {
                            g.classify_move(p, t)
                                .err()
                                .map(|e| (MoveAction::Token(i64::from(t)), e))
                        })
                        .or_else(|| {
                            if rng.chance(0.5) {
                                g.classify_pass(p).err().map(|e| (MoveAction::Pass, e))
                            } else {
                                Some((
                                    MoveAction::Token(i64::from(tokens) + 1),
                                    ludo::LudoError::NoSuchToken {
                                        token: tokens + 1,
                                        tokens,
                                    },
                                ))
                            }
                        });
                    if let Some((action, err)) = try_token {
                        attempts_left -= 1;
                        let t = rng.range(200, 1500);
                        let text = match &action {
                            MoveAction::Token(t) => format!("token {t}"),
                            _ => "pass".to_owned(),
                        };
                        let seq = log.push(
                            t,
                            Body::Move(log::Move {
                                player: acc.clone(),
                                action,
                                attempt: rejected(RejectReason::Illegal, t),
                                duels: None,
                            }),
                        );
                        log.finding(
                            seq,
                            ludo_code(&err),
                            FindingCategory::Attempt,
                            Severity::Low,
                            Some(&acc),
                            Some(format!("one of tokens {legal:?} with {value}")),
                            Some(text),
                            format!("{acc} tried an illegal move: {err}."),
                        );
                    }
                }
                if b.timeouts == Some(p)
                    && timeouts_row[p] + 1 < variant.max_timeouts
                    && rng.chance(0.08)
                {
                    timeouts_row[p] += 1;
                    let elapsed = limit_ms + rng.range(5, 300);
                    if let Ok(ludo::TimeoutOutcome::AutoMove(mo)) = g.timeout(p) {
                        log.push(
                            elapsed,
                            Body::Timeout(log::Timeout {
                                player: acc.clone(),
                                elapsed_ms: elapsed,
                                outcome: log::TimeoutOutcome::Auto,
                            }),
                        );
                        log.push(
                            rng.range(10, 60),
                            Body::Move(log::Move {
                                player: acc,
                                action: MoveAction::Token(i64::from(mo.token)),
                                attempt: automatic(limit_ms),
                                duels: None,
                            }),
                        );
                        continue;
                    }
                    continue;
                }
                timeouts_row[p] = 0;
                let legal = g.legal_tokens(value);
                let Some(&token) = rng.pick(&legal) else {
                    continue;
                };
                let behind = g.progress_balance(p).unwrap_or(0) < 0;
                let t = think(&mut rng, b, p, behind, limit_ms);
                let _ = g.move_token(p, token);
                log.push(
                    t,
                    Body::Move(log::Move {
                        player: acc,
                        action: MoveAction::Token(i64::from(token)),
                        attempt: accepted(t),
                        duels: None,
                    }),
                );
            }
        }
    }
    let (winner, reason) = match g.winner() {
        Some((w, ludo::EndReason::Finished)) => (Some(w), log::EndReason::Finished),
        Some((w, ludo::EndReason::LastPlayerStanding)) => (
            Some(w),
            reasons.last().copied().unwrap_or(log::EndReason::Left),
        ),
        None => (None, log::EndReason::Finished),
    };
    let result = winner.map_or_else(|| "draw".to_owned(), |w| plan.players[w].account.clone());
    finish(
        plan,
        &seats,
        log,
        winner,
        result,
        reason,
        Some(&seed),
        &mut rng,
    )
}

// ----- Belote -----

fn belote_code(e: &belote::BeloteError) -> &'static str {
    match e {
        belote::BeloteError::DidNotFollowSuit { .. } => "did_not_follow_suit",
        belote::BeloteError::DidNotTrump { .. } => "did_not_trump",
        belote::BeloteError::DidNotBeatTrump { .. } => "did_not_beat_trump",
        belote::BeloteError::CardNotInHand(_) => "card_not_in_hand",
        belote::BeloteError::InvalidBid { .. } => "invalid_bid",
        belote::BeloteError::InvalidAnnounce { .. } => "invalid_announce",
        belote::BeloteError::NotYourTurn { .. } => "out_of_turn",
        belote::BeloteError::MatchOver => "after_end",
        _ => "wrong_phase",
    }
}

fn cards_text(c: &[Card]) -> Vec<String> {
    c.iter().map(ToString::to_string).collect()
}

/// A Belote match.
pub fn belote_match(plan: &Plan) -> Generated {
    let mut rng = Rng::new(plan.seed);
    let b = &plan.behaviour;
    let seats = [Seat::P1, Seat::P2];
    let limit_ms = 30_000;
    let seed = rng.hex(32);
    let acc = |p: usize| plan.players[p].account.clone();
    let mut log = Log::new(&plan.id, plan.start);
    log.push(0, started(plan, &seats, Some(fairness::commitment(&seed))));
    let Ok(mut m) = belote::Match::new(belote::MatchConfig::default()) else {
        return finish(
            plan,
            &seats,
            log,
            None,
            "draw".to_owned(),
            log::EndReason::Target,
            Some(&seed),
            &mut rng,
        );
    };
    let mut attempts_left = b.attempts.map_or(0, |(_, n)| n);
    let mut timeouts_row = [0u32; 2];
    let mut deal_no: i64 = -1;
    let mut belote_played = [0u8; 2];
    let mut end_reason = log::EndReason::Target;
    let mut guard = 0;
    let record_deal_end = |log: &mut Log, rng: &mut Rng, end: &belote::DealEnd| {
        let pair = |v: [u32; 2]| -> Vec<(String, i64)> {
            vec![(acc(0), i64::from(v[0])), (acc(1), i64::from(v[1]))]
        };
        log.push(
            rng.range(200, 900),
            Body::DealEnded(log::DealEnded {
                deal: i64::from(end.deal),
                points: pair(end.points),
                totals: pair(end.totals),
                outcome: log::DealOutcome::parse(end.outcome.as_str())
                    .unwrap_or(log::DealOutcome::Made),
            }),
        );
    };
    while !m.is_over() && guard < 2000 {
        guard += 1;
        match m.expected() {
            belote::Expected::Nothing => break,
            belote::Expected::Deal { deal, .. } => {
                // Departure of a player far behind, between deals.
                let t = m.totals();
                if let Some(p) = b.leave_when_losing
                    && i64::from(t[p]) + 120 < i64::from(t[1 - p])
                    && rng.chance(0.7)
                {
                    let _ = m.leave(p);
                    log.push(
                        rng.range(1000, 8000),
                        Body::Left(log::Left {
                            player: acc(p),
                            reason: log::LeftReason::PageClosed,
                        }),
                    );
                    end_reason = log::EndReason::Left;
                    break;
                }
                if b.dump.is_some_and(|p| deal >= 1 && p < 2) {
                    let p = b.dump.unwrap_or(0);
                    let _ = m.leave(p);
                    log.push(
                        rng.range(1000, 8000),
                        Body::Left(log::Left {
                            player: acc(p),
                            reason: log::LeftReason::PageClosed,
                        }),
                    );
                    end_reason = log::EndReason::Left;
                    break;
                }
                let idx = fairness::shuffle(&seed, &plan.id, deal);
                let Ok(deck) = belote::deck_from_indices(&idx) else {
                    break;
                };
                let Ok(start) = m.deal(&deck) else { break };
                deal_no = i64::from(start.deal);
                belote_played = [0, 0];
                log.push(
                    rng.range(800, 2500),
                    Body::Deal(log::Deal {
                        deal: deal_no,
                        dealer: acc(start.dealer),
                        hands: vec![
                            (acc(0), cards_text(&start.hands[0])),
                            (acc(1), cards_text(&start.hands[1])),
                        ],
                        turned: start.turned.to_string(),
                    }),
                );
            }
            belote::Expected::Bid { player: p, round } => {
                if b.attempts.is_some_and(|(w, _)| w == p)
                    && attempts_left > 0
                    && round == 1
                    && rng.chance(0.5)
                {
                    let turned = m.turned().map_or(Suit::Spades, |c| c.suit);
                    let other = Suit::ALL
                        .iter()
                        .copied()
                        .find(|s| *s != turned)
                        .unwrap_or(Suit::Hearts);
                    let bid = belote::Bid::Name(other);
                    if let Err(err) = m.classify_bid(p, bid) {
                        attempts_left -= 1;
                        let t = rng.range(300, 2000);
                        let seq = log.push(
                            t,
                            Body::Bid(log::Bid {
                                player: acc(p),
                                deal: deal_no,
                                round,
                                bid: bid.to_string(),
                                attempt: rejected(RejectReason::Illegal, t),
                            }),
                        );
                        log.finding(
                            seq,
                            belote_code(&err),
                            FindingCategory::Attempt,
                            Severity::Low,
                            Some(&acc(p)),
                            Some("take or pass".to_owned()),
                            Some(bid.to_string()),
                            format!("{} named a suit in round 1: {err}.", acc(p)),
                        );
                    }
                }
                if b.timeouts == Some(p) && timeouts_row[p] < 2 && rng.chance(0.2) {
                    timeouts_row[p] += 1;
                    let elapsed = limit_ms + rng.range(5, 300);
                    if let Ok(belote::TimeoutOutcome::AutoBid(out)) = m.timeout(p) {
                        log.push(
                            elapsed,
                            Body::Timeout(log::Timeout {
                                player: acc(p),
                                elapsed_ms: elapsed,
                                outcome: log::TimeoutOutcome::Auto,
                            }),
                        );
                        log.push(
                            rng.range(10, 60),
                            Body::Bid(log::Bid {
                                player: acc(p),
                                deal: deal_no,
                                round,
                                bid: "pass".to_owned(),
                                attempt: automatic(limit_ms),
                            }),
                        );
                        if let belote::BidOutcome::Void(end) = out {
                            record_deal_end(&mut log, &mut rng, &end);
                        }
                    }
                    continue;
                }
                timeouts_row[p] = 0;
                let bid = if round == 1 {
                    if rng.chance(0.42) {
                        belote::Bid::Take
                    } else {
                        belote::Bid::Pass
                    }
                } else if rng.chance(0.45) {
                    let turned = m.turned().map_or(Suit::Spades, |c| c.suit);
                    let others: Vec<Suit> =
                        Suit::ALL.iter().copied().filter(|s| *s != turned).collect();
                    rng.pick(&others)
                        .map_or(belote::Bid::Pass, |s| belote::Bid::Name(*s))
                } else {
                    belote::Bid::Pass
                };
                let t = think(&mut rng, b, p, false, limit_ms);
                let out = m.bid(p, bid);
                log.push(
                    t,
                    Body::Bid(log::Bid {
                        player: acc(p),
                        deal: deal_no,
                        round,
                        bid: bid.to_string(),
                        attempt: accepted(t),
                    }),
                );
                match out {
                    Ok(belote::BidOutcome::Taken {
                        taker,
                        trump,
                        hands: Some(hands),
                    }) => {
                        log.push(
                            rng.range(300, 1200),
                            Body::HandsCompleted(log::HandsCompleted {
                                deal: deal_no,
                                trump: trump.letter().to_string(),
                                taker: acc(taker),
                                hands: vec![
                                    (acc(0), cards_text(&hands[0])),
                                    (acc(1), cards_text(&hands[1])),
                                ],
                            }),
                        );
                    }
                    Ok(belote::BidOutcome::Void(end)) => record_deal_end(&mut log, &mut rng, &end),
                    _ => {}
                }
            }
            belote::Expected::CompleteHands { .. } => break,
            belote::Expected::Play { player: p } => {
                let legal = m.legal_cards();
                let hand = m.hand(p).to_vec();
                let trump = m.trump();
                if b.attempts.is_some_and(|(w, _)| w == p)
                    && attempts_left > 0
                    && rng.chance(0.12)
                    && let Some(bad) = hand.iter().find(|c| !legal.contains(c)).copied()
                    && let Err(err) = m.classify_play(p, bad, None)
                {
                    attempts_left -= 1;
                    let t = rng.range(300, 2000);
                    let seq = log.push(
                        t,
                        Body::Play(log::Play {
                            player: acc(p),
                            deal: deal_no,
                            card: bad.to_string(),
                            announce: None,
                            attempt: rejected(RejectReason::Illegal, t),
                        }),
                    );
                    log.finding(
                        seq,
                        belote_code(&err),
                        FindingCategory::Attempt,
                        Severity::Low,
                        Some(&acc(p)),
                        Some(format!("one of {}", cards_text(&legal).join(" "))),
                        Some(bad.to_string()),
                        format!("{} played {bad}: {err}.", acc(p)),
                    );
                }
                if b.timeouts == Some(p) && timeouts_row[p] < 2 && rng.chance(0.08) {
                    timeouts_row[p] += 1;
                    let elapsed = limit_ms + rng.range(5, 300);
                    if let Ok(belote::TimeoutOutcome::AutoPlay(po)) = m.timeout(p) {
                        log.push(
                            elapsed,
                            Body::Timeout(log::Timeout {
                                player: acc(p),
                                elapsed_ms: elapsed,
                                outcome: log::TimeoutOutcome::Auto,
                            }),
                        );
                        log.push(
                            rng.range(10, 60),
                            Body::Play(log::Play {
                                player: acc(p),
                                deal: deal_no,
                                card: po.card.to_string(),
                                announce: None,
                                attempt: automatic(limit_ms),
                            }),
                        );
                        if let Some(end) = &po.deal_end {
                            record_deal_end(&mut log, &mut rng, end);
                        }
                    }
                    continue;
                }
                timeouts_row[p] = 0;
                let Some(&card) = rng.pick(&legal) else { break };
                let announce = match trump {
                    Some(t)
                        if m.belote_holder() == Some(p)
                            && card.suit == t
                            && matches!(card.rank, Rank::King | Rank::Queen) =>
                    {
                        belote_played[p] += 1;
                        Some(if belote_played[p] == 1 {
                            belote::Announce::Belote
                        } else {
                            belote::Announce::Rebelote
                        })
                    }
                    _ => None,
                };
                let behind = {
                    let t = m.totals();
                    t[p] < t[1 - p]
                };
                let t = think(&mut rng, b, p, behind, limit_ms);
                let Ok(po) = m.play(p, card, announce) else {
                    break;
                };
                log.push(
                    t,
                    Body::Play(log::Play {
                        player: acc(p),
                        deal: deal_no,
                        card: card.to_string(),
                        announce: announce.and_then(|a| log::Announce::parse(a.as_str())),
                        attempt: accepted(t),
                    }),
                );
                if let Some(end) = &po.deal_end {
                    record_deal_end(&mut log, &mut rng, end);
                }
            }
        }
    }
    let winner = m.winner().map(|(w, _)| w);
    let result = winner.map_or_else(|| "draw".to_owned(), acc);
    finish(
        plan,
        &seats,
        log,
        winner,
        result,
        end_reason,
        Some(&seed),
        &mut rng,
    )
}

/// Generates the game of a plan.
pub fn generate(plan: &Plan) -> Generated {
    match plan.kind {
        Kind::Draughts10 | Kind::Draughts8 => draughts(plan),
        Kind::Ludo => ludo_game(plan),
        Kind::Belote => belote_match(plan),
    }
}
