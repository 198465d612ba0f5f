//! A draughts search engine for international (10x10) and Brazilian (8x8) draughts: iterative
//! deepening alpha-beta with principal variation search, a Zobrist-keyed transposition table,
//! move ordering (hash move, killers, history), late move reductions, a quiescence search that
//! resolves pending captures, and the evaluation of [`evaluate`]. Deterministic for a node budget.
//!
//! Scores are in hundredths of a man, from the side to move's point of view. Medieval duels are
//! not modelled (the search plays the Brazilian rules without them).
//!
//! ```
//! use vigie_rules::games::draughts::{Position, Variant};
//! use vigie_rules::games::draughts::search::{Engine, Limits, Score};
//!
//! // White's man on 28 must take Black's last piece on 23, and wins.
//! let pos = Position::from_fen(Variant::International, "W:W28:B23").unwrap();
//! let mut engine = Engine::new(4);
//! let analysis = engine.analyse(&pos, &Limits::depth(6), 3);
//! assert_eq!(analysis.lines.len(), 1);
//! assert_eq!(analysis.lines[0].mv.to_full_string(), "28x19");
//! assert_eq!(analysis.lines[0].score, Score::Win(1));
//!
//! // From the start, the three best of nine moves, best first.
//! let start = Position::new(Variant::International);
//! let lines = engine.analyse(&start, &Limits::nodes(50_000), 3).lines;
//! assert_eq!(lines.len(), 3);
//! assert!(lines[0].score.to_cp() >= lines[1].score.to_cp());
//! ```

mod eval;
mod tt;

use std::time::Instant;

use super::geometry::{Braz, Geo, Intl, sq_to_bit};
use super::movegen::{self, Black, Board, CMove, Side, White, promo_row};
use super::moves::Move;
use super::position::Position;
use super::types::{Color, Variant};
use tt::{Bound, Table};

pub use eval::{KING, MAN};

/// Scores at or beyond this are wins (`MATE - plies`).
const MATE: i32 = 30_000;
const WIN_BOUND: i32 = MATE - 1_000;
const INF: i32 = 32_000;
/// Deepest ply the search ever reaches (extensions included).
const MAX_PLY: usize = 128;
/// Deepest iteration.
pub const MAX_DEPTH: u32 = 64;

/// What stops a search: a depth, a node budget, a deadline; the first reached ends it. The
/// result is that of the last completed iteration (depth 1 always completes).
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Deepest iteration (plies, before extensions).
    pub depth: Option<u32>,
    /// Nodes (positions visited, quiescence included). Deterministic.
    pub nodes: Option<u64>,
    /// Wall-clock deadline. Not deterministic: use `nodes` where results must be reproducible.
    pub deadline: Option<Instant>,
    /// Search every move to the full depth, without reductions or transposition-table cut-offs:
    /// slower, and the exact minimax value of the tree (the reference the pruned search is checked
    /// against).
    pub full_width: bool,
}

impl Limits {
    /// Search to a fixed depth.
    #[must_use]
    pub fn depth(depth: u32) -> Limits {
        Limits {
            depth: Some(depth),
            ..Limits::default()
        }
    }

    /// Search until a node budget is spent.
    #[must_use]
    pub fn nodes(nodes: u64) -> Limits {
        Limits {
            nodes: Some(nodes),
            ..Limits::default()
        }
    }
}

/// A score from the side to move's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// Hundredths of a man.
    Cp(i32),
    /// The side to move wins in this many plies (the opponent is left without a move).
    Win(u32),
    /// The side to move loses in this many plies.
    Loss(u32),
}

impl Score {
    fn from_internal(s: i32) -> Score {
        if s >= WIN_BOUND {
            Score::Win((MATE - s) as u32)
        } else if s <= -WIN_BOUND {
            Score::Loss((MATE + s) as u32)
        } else {
            Score::Cp(s)
        }
    }

    /// The score as hundredths of a man, wins and losses mapped to +-30,000 minus the plies.
    #[must_use]
    pub fn to_cp(self) -> i32 {
        match self {
            Score::Cp(c) => c,
            Score::Win(p) => MATE - p as i32,
            Score::Loss(p) => -(MATE - p as i32),
        }
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Score::Cp(c) => write!(f, "{c}"),
            Score::Win(p) => write!(f, "win in {p}"),
            Score::Loss(p) => write!(f, "loss in {p}"),
        }
    }
}

/// One line of an analysis: a root move, its score and the principal variation from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub mv: Move,
    pub score: Score,
    /// The expected continuation, starting with `mv`.
    pub pv: Vec<Move>,
}

/// The result of [`Engine::analyse`]: the best lines, best first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// Empty when the side to move has no legal move (it has lost).
    pub lines: Vec<Line>,
    /// The last completed iteration.
    pub depth: u32,
    /// The deepest ply reached (extensions and quiescence included).
    pub seldepth: u32,
    pub nodes: u64,
}

/// The static evaluation of a position (hundredths of a man, for the side to move), without search.
#[must_use]
pub fn evaluate(pos: &Position) -> i32 {
    let s = eval::white_score_of(
        pos.variant == Variant::International,
        pos.white,
        pos.black,
        pos.kings,
    );
    if pos.turn == Color::White { s } else { -s }
}

/// A search engine with its transposition table; reuse it across the moves of a game.
pub struct Engine {
    table: Table,
    history: Box<[[[i32; 64]; 64]; 2]>,
}

impl Engine {
    /// An engine whose transposition table takes at most `hash_mib` MiB.
    #[must_use]
    pub fn new(hash_mib: usize) -> Engine {
        Engine {
            table: Table::new(hash_mib),
            history: Box::new([[[0; 64]; 64]; 2]),
        }
    }

    /// Forgets every stored position and statistic: the next search is as on a new engine.
    pub fn clear(&mut self) {
        self.table.clear();
        *self.history = [[[0; 64]; 64]; 2];
    }

    /// Searches `pos` within `limits` and returns its `multipv` best lines (at least one when a
    /// move exists). Medieval flags are ignored.
    pub fn analyse(&mut self, pos: &Position, limits: &Limits, multipv: usize) -> Analysis {
        self.analyse_moves(pos, limits, multipv, None)
    }

    /// As [`Engine::analyse`], with the root restricted to `only` (moves of `pos`; others are ignored),
    /// e.g. to score the move a player chose.
    pub fn analyse_moves(
        &mut self,
        pos: &Position,
        limits: &Limits,
        multipv: usize,
        only: Option<&[Move]>,
    ) -> Analysis {
        match (pos.variant, pos.turn) {
            (Variant::International, Color::White) => {
                self.run::<Intl, White>(pos, limits, multipv, only)
            }
            (Variant::International, Color::Black) => {
                self.run::<Intl, Black>(pos, limits, multipv, only)
            }
            (Variant::Brazilian, Color::White) => {
                self.run::<Braz, White>(pos, limits, multipv, only)
            }
            (Variant::Brazilian, Color::Black) => {
                self.run::<Braz, Black>(pos, limits, multipv, only)
            }
        }
    }

    fn run<G: Geo, S: Side>(
        &mut self,
        pos: &Position,
        limits: &Limits,
        multipv: usize,
        only: Option<&[Move]>,
    ) -> Analysis {
        self.table.age = self.table.age.wrapping_add(1);
        for side in self.history.iter_mut() {
            for row in side.iter_mut() {
                for h in row.iter_mut() {
                    *h /= 8;
                }
            }
        }
        let board = pos.board();
        let key = tt::key_of(pos.white, pos.black, pos.kings, S::WHITE);
        // Root moves: the legal moves (FMJD-deduplicated), each with its compact form.
        let mut compact = Vec::new();
        movegen::legal::<G, S>(&board, &mut compact);
        let mut root: Vec<RootMove> = Vec::new();
        for m in pos.legal_moves() {
            if let Some(only) = only
                && !only.iter().any(|o| o.key() == m.key())
            {
                continue;
            }
            let c = compact_of::<G>(&m);
            if compact.contains(&c) {
                root.push(RootMove { mv: c, full: m });
            }
        }
        let mut out = Analysis {
            lines: Vec::new(),
            depth: 0,
            seldepth: 0,
            nodes: 0,
        };
        if root.is_empty() {
            return out;
        }
        let multipv = multipv.clamp(1, root.len());
        let mut s = Searcher {
            table: &mut self.table,
            history: &mut self.history,
            killers: [[None; 2]; MAX_PLY],
            pv: vec![[CMOVE_NONE; MAX_PLY]; MAX_PLY],
            pv_len: [0; MAX_PLY],
            keys: [0; MAX_PLY + 1],
            reversible: [false; MAX_PLY + 1],
            bufs: (0..MAX_PLY).map(|_| Vec::with_capacity(32)).collect(),
            order: (0..MAX_PLY).map(|_| Vec::with_capacity(32)).collect(),
            nodes: 0,
            // Depth 1 always completes; the limits apply from depth 2 on.
            node_limit: u64::MAX,
            deadline: None,
            stopped: false,
            seldepth: 0,
            full_width: limits.full_width,
        };
        let started = Instant::now();
        s.keys[0] = key;
        let max_depth = limits.depth.unwrap_or(MAX_DEPTH).clamp(1, MAX_DEPTH);
        let mut done: Vec<Found> = Vec::new();
        for depth in 1..=max_depth {
            if depth == 2 {
                s.node_limit = limits.nodes.unwrap_or(u64::MAX);
                s.deadline = limits.deadline;
            }
            let mut lines: Vec<Found> = Vec::new();
            for k in 0..multipv {
                let found = match done.get(k).map(|f| f.score) {
                    // Aspiration window around the previous iteration's score.
                    Some(p) if depth >= 4 && p.abs() < WIN_BOUND => {
                        let mut w = 40;
                        loop {
                            let r = s.root::<G, S>(
                                &board,
                                key,
                                depth as i32,
                                p - w,
                                p + w,
                                &root,
                                &lines,
                            );
                            match r {
                                Some(f) if f.score > p - w && f.score < p + w => break Some(f),
                                _ if s.stopped => break None,
                                _ if w > 1_000 => {
                                    break s.root::<G, S>(
                                        &board,
                                        key,
                                        depth as i32,
                                        -INF,
                                        INF,
                                        &root,
                                        &lines,
                                    );
                                }
                                _ => w *= 4,
                            }
                        }
                    }
                    _ => s.root::<G, S>(&board, key, depth as i32, -INF, INF, &root, &lines),
                };
                if s.stopped {
                    break;
                }
                let Some(f) = found else { break };
                lines.push(f);
            }
            if s.stopped {
                break;
            }
            // Each line's score comes from its own search: order them by score (the first line
            // found stays first among equals).
            lines.sort_by_key(|l| std::cmp::Reverse(l.score));
            done = lines;
            out.depth = depth;
            // Best lines first in the next iteration.
            for (rank, line) in done.iter().enumerate() {
                if let Some(j) = root.iter().position(|r| r.mv == line.mv) {
                    root.swap(rank, j);
                }
            }
            if done
                .first()
                .is_some_and(|l| l.score.abs() >= WIN_BOUND && depth as i32 > MATE - l.score.abs())
            {
                break; // a forced result shorter than the depth searched: deeper changes nothing
            }
            if let Some(deadline) = limits.deadline {
                // The next iteration takes several times this one: do not start what cannot end.
                let now = Instant::now();
                if now >= deadline
                    || (now - started) * 2 > deadline.saturating_duration_since(started)
                {
                    break;
                }
            }
            if limits.nodes.is_some_and(|n| s.nodes.saturating_mul(2) > n) {
                break;
            }
        }
        out.nodes = s.nodes;
        out.seldepth = s.seldepth as u32;
        out.lines = done
            .into_iter()
            .filter_map(|f| {
                let r = root.iter().find(|r| r.mv == f.mv)?;
                Some(Line {
                    mv: r.full.clone(),
                    score: Score::from_internal(f.score),
                    pv: to_moves::<G>(pos, &r.full, &f.pv[1..]),
                })
            })
            .collect();
        out
    }
}

/// The compact form of a full move.
fn compact_of<G: Geo>(m: &Move) -> CMove {
    CMove {
        from: sq_to_bit::<G>(m.from().number()) as u8,
        to: sq_to_bit::<G>(m.to().number()) as u8,
        captured: m
            .captures()
            .iter()
            .fold(0u64, |a, s| a | 1u64 << sq_to_bit::<G>(s.number())),
    }
}

/// The full moves of a principal variation: `first` from `pos`, then `rest` (stops early when a
/// move does not match, which a table collision could cause).
fn to_moves<G: Geo>(pos: &Position, first: &Move, rest: &[CMove]) -> Vec<Move> {
    let mut p = pos.after(first);
    let mut out = vec![first.clone()];
    for c in rest {
        let Some(m) = p
            .legal_moves()
            .into_iter()
            .find(|m| compact_of::<G>(m) == *c)
        else {
            break;
        };
        let _ = p.make(&m);
        out.push(m);
    }
    out
}

struct RootMove {
    mv: CMove,
    full: Move,
}

/// A root move's score and line in one iteration.
struct Found {
    mv: CMove,
    score: i32,
    pv: Vec<CMove>,
}

const CMOVE_NONE: CMove = CMove {
    from: 0,
    to: 0,
    captured: 0,
};

struct Searcher<'a> {
    table: &'a mut Table,
    history: &'a mut [[[i32; 64]; 64]; 2],
    killers: [[Option<CMove>; 2]; MAX_PLY],
    pv: Vec<[CMove; MAX_PLY]>,
    pv_len: [usize; MAX_PLY],
    /// Keys of the positions on the current path, by ply.
    keys: [u64; MAX_PLY + 1],
    /// Whether the move into the position at this ply was a quiet king move (repetitions can only
    /// span such moves).
    reversible: [bool; MAX_PLY + 1],
    bufs: Vec<Vec<CMove>>,
    /// Ordering scores of `bufs`' moves, by ply.
    order: Vec<Vec<i32>>,
    nodes: u64,
    node_limit: u64,
    deadline: Option<Instant>,
    stopped: bool,
    seldepth: usize,
    full_width: bool,
}

/// Whether `m` crowns a man (a king's move never does).
#[inline(always)]
fn promotes<G: Geo, S: Side>(b: &Board, m: &CMove) -> bool {
    b.kings & (1u64 << m.from) == 0 && (1u64 << m.to) & promo_row::<G, S>() != 0
}

/// Absolute bitboards of a side-relative board.
#[inline(always)]
fn absolute<S: Side>(b: &Board) -> (u64, u64) {
    if S::WHITE {
        (b.us, b.them)
    } else {
        (b.them, b.us)
    }
}

#[inline(always)]
fn mate_to_table(score: i32, ply: usize) -> i32 {
    if score >= WIN_BOUND {
        score + ply as i32
    } else if score <= -WIN_BOUND {
        score - ply as i32
    } else {
        score
    }
}

#[inline(always)]
fn mate_from_table(score: i32, ply: usize) -> i32 {
    if score >= WIN_BOUND {
        score - ply as i32
    } else if score <= -WIN_BOUND {
        score + ply as i32
    } else {
        score
    }
}

impl Searcher<'_> {
    #[inline]
    fn tick(&mut self) {
        self.nodes += 1;
        if self.nodes >= self.node_limit {
            self.stopped = true;
        }
        if self.nodes & 1023 == 0
            && let Some(d) = self.deadline
            && Instant::now() >= d
        {
            self.stopped = true;
        }
    }

    /// A node at `ply` is entered: its line starts empty, the deepest ply is kept.
    #[inline]
    fn enter(&mut self, ply: usize) {
        self.pv_len[ply] = ply;
        self.seldepth = self.seldepth.max(ply);
    }

    /// The line at `ply` becomes `m` followed by the child's line.
    #[inline]
    fn update_pv(&mut self, ply: usize, m: CMove) {
        let child_len = self.pv_len[ply + 1];
        let (upper, lower) = self.pv.split_at_mut(ply + 1);
        let row = &mut upper[ply];
        row[ply] = m;
        row[ply + 1..child_len].copy_from_slice(&lower[0][ply + 1..child_len]);
        self.pv_len[ply] = child_len.max(ply + 1);
    }

    /// Whether the position at `ply` repeats one earlier on the path (a draw by repetition is the
    /// only way out of endless king manoeuvres).
    fn repeats(&self, ply: usize) -> bool {
        let key = self.keys[ply];
        let mut p = ply;
        while p >= 2 && self.reversible[p] && self.reversible[p - 1] {
            p -= 2;
            if self.keys[p] == key {
                return true;
            }
        }
        false
    }

    /// Searches the root moves not in `exclude`; the best one with its score and line.
    #[allow(clippy::too_many_arguments)]
    fn root<G: Geo, S: Side>(
        &mut self,
        b: &Board,
        key: u64,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        root: &[RootMove],
        exclude: &[Found],
    ) -> Option<Found> {
        let mut best: Option<Found> = None;
        let single = root.len() - exclude.len() == 1;
        for r in root {
            let m = r.mv;
            if exclude.iter().any(|e| e.mv == m) {
                continue;
            }
            let from_king = b.kings & (1u64 << m.from) != 0;
            let promotes = promotes::<G, S>(b, &m);
            let child = movegen::make::<G, S>(b, &m);
            let ck = tt::key_after(key, S::WHITE, b.kings, &m, promotes);
            self.keys[1] = ck;
            self.reversible[1] = m.captured == 0 && from_king;
            let d = depth - 1 + i32::from(single);
            let score = if best.is_none() {
                -self.search::<G, S::Opp>(&child, ck, d, -beta, -alpha, 1, true)
            } else {
                let sc = -self.search::<G, S::Opp>(&child, ck, d, -alpha - 1, -alpha, 1, false);
                if sc > alpha && sc < beta && !self.stopped {
                    -self.search::<G, S::Opp>(&child, ck, d, -beta, -alpha, 1, true)
                } else {
                    sc
                }
            };
            if self.stopped {
                return None;
            }
            if best.as_ref().is_none_or(|f| score > f.score) {
                let mut pv = vec![m];
                pv.extend_from_slice(&self.pv[1][1..self.pv_len[1]]);
                best = Some(Found { mv: m, score, pv });
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }

    #[allow(clippy::too_many_arguments)]
    fn search<G: Geo, S: Side>(
        &mut self,
        b: &Board,
        key: u64,
        mut depth: i32,
        mut alpha: i32,
        beta: i32,
        ply: usize,
        pv_node: bool,
    ) -> i32 {
        self.enter(ply);
        if self.repeats(ply) {
            return 0;
        }
        if ply >= MAX_PLY - 2 {
            let (w, bl) = absolute::<S>(b);
            return eval::relative::<G>(w, bl, b.kings, S::WHITE);
        }
        let capture = movegen::has_capture::<G>(b);
        if depth <= 0 {
            // A pending capture of the opponent makes the static score meaningless: look one
            // quiet ply further (once per path: the children are searched at depth -1).
            let threat = depth == 0
                && !capture
                && movegen::has_capture::<G>(&Board {
                    us: b.them,
                    them: b.us,
                    kings: b.kings,
                });
            if !threat {
                return self.quiesce::<G, S>(b, key, alpha, beta, ply, capture);
            }
            depth = 0;
        }
        self.tick();
        if self.stopped {
            return 0;
        }
        let alpha0 = alpha;
        let mut tt_move = None;
        if let Some(e) = self.table.probe(key) {
            tt_move = e.best();
            if !pv_node && !self.full_width && i32::from(e.depth) >= depth.max(0) {
                let sc = mate_from_table(i32::from(e.score), ply);
                match e.bound {
                    Bound::Exact => return sc,
                    Bound::Lower if sc >= beta => return sc,
                    Bound::Upper if sc <= alpha => return sc,
                    _ => {}
                }
            }
        }
        let mut moves = std::mem::take(&mut self.bufs[ply]);
        movegen::legal::<G, S>(b, &mut moves);
        if moves.is_empty() {
            self.bufs[ply] = moves;
            return -MATE + ply as i32;
        }
        // Order: hash move, then captures of kings / promotions, killers, history.
        let side = usize::from(!S::WHITE);
        let mut scores = std::mem::take(&mut self.order[ply]);
        scores.clear();
        let n = moves.len();
        for m in moves.iter() {
            scores.push(if Some(*m) == tt_move {
                1 << 30
            } else if m.captured != 0 {
                (1 << 28) + 16 * (m.captured & b.kings).count_ones() as i32
            } else {
                if promotes::<G, S>(b, m) {
                    1 << 27
                } else if self.killers[ply][0] == Some(*m) {
                    (1 << 26) + 1
                } else if self.killers[ply][1] == Some(*m) {
                    1 << 26
                } else {
                    self.history[side][m.from as usize][m.to as usize]
                }
            });
        }
        let ext = i32::from(n == 1);
        let mut best = -INF;
        let mut best_move = None;
        for i in 0..n {
            // Selection sort step: the best remaining move to slot i.
            let mut j = i;
            for k in i + 1..n {
                if scores[k] > scores[j] {
                    j = k;
                }
            }
            scores.swap(i, j);
            moves.swap(i, j);
            let m = moves[i];
            let from_king = b.kings & (1u64 << m.from) != 0;
            let promotes = promotes::<G, S>(b, &m);
            let quiet = m.captured == 0 && !promotes;
            let child = movegen::make::<G, S>(b, &m);
            let ck = tt::key_after(key, S::WHITE, b.kings, &m, promotes);
            self.keys[ply + 1] = ck;
            self.reversible[ply + 1] = m.captured == 0 && from_king;
            let new_depth = depth - 1 + ext;
            let score = if i == 0 {
                -self.search::<G, S::Opp>(&child, ck, new_depth, -beta, -alpha, ply + 1, pv_node)
            } else {
                let is_killer = self.killers[ply].contains(&Some(m));
                let r = if depth >= 3 && i >= 3 && quiet && !is_killer && !self.full_width {
                    1 + i32::from(depth >= 6 && i >= 8)
                } else {
                    0
                };
                let mut sc = -self.search::<G, S::Opp>(
                    &child,
                    ck,
                    new_depth - r,
                    -alpha - 1,
                    -alpha,
                    ply + 1,
                    false,
                );
                if sc > alpha && r > 0 && !self.stopped {
                    sc = -self.search::<G, S::Opp>(
                        &child,
                        ck,
                        new_depth,
                        -alpha - 1,
                        -alpha,
                        ply + 1,
                        false,
                    );
                }
                if sc > alpha && sc < beta && pv_node && !self.stopped {
                    sc = -self.search::<G, S::Opp>(
                        &child,
                        ck,
                        new_depth,
                        -beta,
                        -alpha,
                        ply + 1,
                        true,
                    );
                }
                sc
            };
            if self.stopped {
                self.bufs[ply] = moves;
                self.order[ply] = scores;
                return 0;
            }
            if score > best {
                best = score;
                best_move = Some(m);
                if score > alpha {
                    alpha = score;
                    self.update_pv(ply, m);
                    if score >= beta {
                        if quiet {
                            if self.killers[ply][0] != Some(m) {
                                self.killers[ply][1] = self.killers[ply][0];
                                self.killers[ply][0] = Some(m);
                            }
                            let h = &mut self.history[side][m.from as usize][m.to as usize];
                            *h = (*h + depth * depth).min(1 << 20);
                        }
                        break;
                    }
                }
            }
        }
        self.bufs[ply] = moves;
        self.order[ply] = scores;
        let bound = if best >= beta {
            Bound::Lower
        } else if best > alpha0 {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.table
            .store(key, depth, mate_to_table(best, ply), bound, best_move);
        best
    }

    /// Resolves captures: while the side to move must capture, every capture is searched (no
    /// standing pat: capturing is compulsory); a quiet position is scored statically.
    fn quiesce<G: Geo, S: Side>(
        &mut self,
        b: &Board,
        key: u64,
        mut alpha: i32,
        beta: i32,
        ply: usize,
        capture: bool,
    ) -> i32 {
        self.enter(ply);
        self.tick();
        if self.stopped {
            return 0;
        }
        if !capture || ply >= MAX_PLY - 2 {
            let (w, bl) = absolute::<S>(b);
            return eval::relative::<G>(w, bl, b.kings, S::WHITE);
        }
        let mut moves = std::mem::take(&mut self.bufs[ply]);
        movegen::legal::<G, S>(b, &mut moves);
        let mut best = -INF;
        for i in 0..moves.len() {
            let m = moves[i];
            let promotes = promotes::<G, S>(b, &m);
            let child = movegen::make::<G, S>(b, &m);
            let ck = tt::key_after(key, S::WHITE, b.kings, &m, promotes);
            self.keys[ply + 1] = ck;
            self.reversible[ply + 1] = false;
            let child_capture = movegen::has_capture::<G>(&child);
            let score =
                -self.quiesce::<G, S::Opp>(&child, ck, -beta, -alpha, ply + 1, child_capture);
            if self.stopped {
                self.bufs[ply] = moves;
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    self.update_pv(ply, m);
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        self.bufs[ply] = moves;
        best
    }
}

#[cfg(test)]
mod tests;
