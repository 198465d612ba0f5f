//! [`Position`]: pieces as bitboards plus side to move and variant; legal move
//! lists with full paths, make/unmake, material, and [`perft`].

use super::geometry::{Braz, Geo, Intl, bit_to_sq, sq_to_bit};
use super::movegen::{self, Black, Board, CMove, Side, Sink, Trail, White};
use super::moves::Move;
use super::types::{Color, Material, Piece, Role, SideMaterial, Square, Variant};

/// Calls `$f::<Geo, Side>($args)` for the position's board and side to move.
macro_rules! dispatch {
    ($pos:expr, $f:ident($($arg:expr),*)) => {
        match ($pos.variant, $pos.turn) {
            (Variant::International, Color::White) => $f::<Intl, White>($($arg),*),
            (Variant::International, Color::Black) => $f::<Intl, Black>($($arg),*),
            (Variant::Brazilian, Color::White) => $f::<Braz, White>($($arg),*),
            (Variant::Brazilian, Color::Black) => $f::<Braz, Black>($($arg),*),
        }
    };
}

/// A draughts position: pieces, side to move and board.
///
/// Bitboards use the ghost-square layout of the geometry module; the public
/// API speaks PDN square numbers only. Medieval flags ride along with the
/// pieces (they never change which moves are legal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    pub(crate) variant: Variant,
    pub(crate) white: u64,
    pub(crate) black: u64,
    pub(crate) kings: u64,
    pub(crate) medieval: u64,
    pub(crate) turn: Color,
}

/// What [`Position::make`] needs to restore the position in [`Position::unmake`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Undo {
    captured_kings: u64,
    captured_medieval: u64,
}

impl Position {
    /// The start position of a variant (White to move, no medieval piece).
    #[must_use]
    pub fn new(variant: Variant) -> Position {
        let per_side = match variant {
            Variant::International => 20,
            Variant::Brazilian => 12,
        };
        let total = variant.squares();
        let mut pos = Position::empty(variant, Color::White);
        for s in 1..=per_side {
            pos.black |= pos.bit(Square(s));
            pos.white |= pos.bit(Square(total + 1 - s));
        }
        pos
    }

    /// An empty board.
    #[must_use]
    pub fn empty(variant: Variant, turn: Color) -> Position {
        Position {
            variant,
            white: 0,
            black: 0,
            kings: 0,
            medieval: 0,
            turn,
        }
    }

    /// The board and rule set.
    #[must_use]
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The side to move.
    #[must_use]
    pub fn turn(&self) -> Color {
        self.turn
    }

    /// The bit of a square of this board.
    pub(crate) fn bit(&self, sq: Square) -> u64 {
        1u64 << match self.variant {
            Variant::International => sq_to_bit::<Intl>(sq.0),
            Variant::Brazilian => sq_to_bit::<Braz>(sq.0),
        }
    }

    /// The square of a bit of this board.
    pub(crate) fn square_of_bit(&self, bit: u32) -> Square {
        Square(match self.variant {
            Variant::International => bit_to_sq::<Intl>(bit),
            Variant::Brazilian => bit_to_sq::<Braz>(bit),
        })
    }

    /// The piece on a square (`None` when empty or when the square is not on this board).
    #[must_use]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        if sq.0 == 0 || sq.0 > self.variant.squares() {
            return None;
        }
        let b = self.bit(sq);
        let color = if self.white & b != 0 {
            Color::White
        } else if self.black & b != 0 {
            Color::Black
        } else {
            return None;
        };
        let role = if self.kings & b != 0 {
            Role::King
        } else {
            Role::Man
        };
        Some(Piece {
            color,
            role,
            medieval: self.medieval & b != 0,
        })
    }

    /// Every piece with its square, ascending by square.
    #[must_use]
    pub fn pieces(&self) -> Vec<(Square, Piece)> {
        self.variant
            .all_squares()
            .filter_map(|s| self.piece_at(s).map(|p| (s, p)))
            .collect()
    }

    /// Places (or with `None` removes) a piece. Squares off this board are ignored.
    pub fn set_piece(&mut self, sq: Square, piece: Option<Piece>) {
        if sq.0 == 0 || sq.0 > self.variant.squares() {
            return;
        }
        let b = self.bit(sq);
        self.white &= !b;
        self.black &= !b;
        self.kings &= !b;
        self.medieval &= !b;
        if let Some(p) = piece {
            match p.color {
                Color::White => self.white |= b,
                Color::Black => self.black |= b,
            }
            if p.role == Role::King {
                self.kings |= b;
            }
            if p.medieval {
                self.medieval |= b;
            }
        }
    }

    /// Sets the side to move.
    pub fn set_turn(&mut self, turn: Color) {
        self.turn = turn;
    }

    pub(crate) fn side_bits(&self, color: Color) -> u64 {
        match color {
            Color::White => self.white,
            Color::Black => self.black,
        }
    }

    /// Men, kings and medieval pieces of both sides.
    #[must_use]
    pub fn material(&self) -> Material {
        let side = |bb: u64| SideMaterial {
            men: (bb & !self.kings).count_ones(),
            kings: (bb & self.kings).count_ones(),
            medieval: (bb & self.medieval).count_ones(),
        };
        Material {
            white: side(self.white),
            black: side(self.black),
        }
    }

    /// Whether `color` has at least one piece.
    #[must_use]
    pub fn has_pieces(&self, color: Color) -> bool {
        self.side_bits(color) != 0
    }

    pub(crate) fn board(&self) -> Board {
        let (us, them) = match self.turn {
            Color::White => (self.white, self.black),
            Color::Black => (self.black, self.white),
        };
        Board {
            us,
            them,
            kings: self.kings,
        }
    }

    /// Whether the side to move has a capture (and so must capture).
    #[must_use]
    pub fn has_capture(&self) -> bool {
        let b = self.board();
        match self.variant {
            Variant::International => movegen::has_capture::<Intl>(&b),
            Variant::Brazilian => movegen::has_capture::<Braz>(&b),
        }
    }

    /// The legal moves, deduplicated under the FMJD convention, sorted by
    /// path (start square, then each stop). For a capture reached along several
    /// paths, the representative is the smallest path.
    #[must_use]
    pub fn legal_moves(&self) -> Vec<Move> {
        let mut moves = self.legal_paths();
        let mut seen = std::collections::HashSet::new();
        moves.retain(|m| seen.insert(m.key()));
        moves
    }

    /// Every path of every legal move (before deduplication), sorted by path.
    /// A logged full path must be one of these.
    #[must_use]
    pub fn legal_paths(&self) -> Vec<Move> {
        let b = self.board();
        let mut moves = if self.has_capture() {
            let mut sink = PathSink {
                best: 0,
                paths: Vec::new(),
            };
            self.run_captures(&b, !0, &mut sink);
            sink.paths
                .into_iter()
                .map(|(stops, caps)| self.capture_move(&stops, &caps))
                .collect()
        } else {
            self.quiet_moves()
        };
        moves.sort_by(|a, b| a.path.cmp(&b.path));
        moves
    }

    /// Number of legal moves (deduplicated), without building them.
    #[must_use]
    pub fn legal_move_count(&self) -> usize {
        fn count<G: Geo, S: Side>(b: &Board) -> u64 {
            movegen::count_legal::<G, S>(b, &mut Vec::new())
        }
        let b = self.board();
        dispatch!(self, count(&b)) as usize
    }

    /// Every quiet move of the side to move, ignoring the capture obligation (what a client
    /// that skips a capture tries; the simulator uses it).
    pub fn quiet_moves(&self) -> Vec<Move> {
        fn quiet<G: Geo, S: Side>(b: &Board, out: &mut Vec<CMove>) {
            movegen::quiet_moves::<G, S>(b, out)
        }
        let b = self.board();
        let mut out = Vec::new();
        dispatch!(self, quiet(&b, &mut out));
        let mut moves: Vec<Move> = out
            .iter()
            .map(|m| {
                let from = 1u64 << m.from;
                let to = 1u64 << m.to;
                let king = self.kings & from != 0;
                Move {
                    path: vec![
                        self.square_of_bit(u32::from(m.from)),
                        self.square_of_bit(u32::from(m.to)),
                    ],
                    captures: Vec::new(),
                    role: if king { Role::King } else { Role::Man },
                    promotes: !king && to & self.promotion_row(self.turn) != 0,
                }
            })
            .collect();
        moves.sort_by(|a, b| a.path.cmp(&b.path));
        moves
    }

    /// Bits of the row where `color`'s men promote.
    pub(crate) fn promotion_row(&self, color: Color) -> u64 {
        match (self.variant, color) {
            (Variant::International, Color::White) => Intl::TOP_ROW,
            (Variant::International, Color::Black) => Intl::BOTTOM_ROW,
            (Variant::Brazilian, Color::White) => Braz::TOP_ROW,
            (Variant::Brazilian, Color::Black) => Braz::BOTTOM_ROW,
        }
    }

    pub(crate) fn run_captures<K: Sink>(&self, b: &Board, movers: u64, sink: &mut K) {
        match self.variant {
            Variant::International => movegen::captures::<Intl, K>(b, movers, sink),
            Variant::Brazilian => movegen::captures::<Braz, K>(b, movers, sink),
        }
    }

    /// Builds a capture [`Move`] from bit-index stops and captures.
    pub(crate) fn capture_move(&self, stops: &[u8], caps: &[u8]) -> Move {
        let from = 1u64 << stops[0];
        let to = 1u64 << stops[stops.len() - 1];
        let king = self.kings & from != 0;
        Move {
            path: stops
                .iter()
                .map(|&b| self.square_of_bit(u32::from(b)))
                .collect(),
            captures: caps
                .iter()
                .map(|&b| self.square_of_bit(u32::from(b)))
                .collect(),
            role: if king { Role::King } else { Role::Man },
            promotes: !king && to & self.promotion_row(self.turn) != 0,
        }
    }

    /// Every capture sequence of the piece on `from`, complete or not, with
    /// its stops and captures (used to tell a non-majority capture from garbage).
    pub(crate) fn capture_trails_from(&self, from: Square) -> Vec<Move> {
        let b = self.board();
        let mut sink = TrailSink { trails: Vec::new() };
        self.run_captures(&b, self.bit(from), &mut sink);
        sink.trails
            .into_iter()
            .map(|(stops, caps)| self.capture_move(&stops, &caps))
            .collect()
    }

    /// Plays a move that must be legal in this position (as returned by
    /// [`Position::legal_moves`], [`Position::legal_paths`] or the parsers), and
    /// returns what [`Position::unmake`] needs to take it back. Every capture
    /// succeeds here; Medieval duels are applied with `medieval::apply_duels`.
    pub fn make(&mut self, m: &Move) -> Undo {
        let from = self.bit(m.from());
        let to = self.bit(m.to());
        let captured = m.captures.iter().fold(0u64, |a, &s| a | self.bit(s));
        let undo = Undo {
            captured_kings: self.kings & captured,
            captured_medieval: self.medieval & captured,
        };
        let (us, them) = match self.turn {
            Color::White => (&mut self.white, &mut self.black),
            Color::Black => (&mut self.black, &mut self.white),
        };
        *us = (*us & !from) | to;
        *them &= !captured;
        self.kings &= !captured;
        self.medieval &= !captured;
        if self.kings & from != 0 {
            self.kings = (self.kings & !from) | to;
        } else if m.promotes {
            self.kings |= to;
        }
        if self.medieval & from != 0 {
            self.medieval = (self.medieval & !from) | to;
        }
        self.turn = self.turn.other();
        undo
    }

    /// Takes back `m`, which must be the last move made with [`Position::make`].
    pub fn unmake(&mut self, m: &Move, undo: Undo) {
        self.turn = self.turn.other();
        let from = self.bit(m.from());
        let to = self.bit(m.to());
        let captured = m.captures.iter().fold(0u64, |a, &s| a | self.bit(s));
        let (us, them) = match self.turn {
            Color::White => (&mut self.white, &mut self.black),
            Color::Black => (&mut self.black, &mut self.white),
        };
        *us = (*us & !to) | from;
        *them |= captured;
        if m.promotes {
            self.kings &= !to;
        } else if self.kings & to != 0 {
            self.kings = (self.kings & !to) | from;
        }
        if self.medieval & to != 0 {
            self.medieval = (self.medieval & !to) | from;
        }
        self.kings |= undo.captured_kings;
        self.medieval |= undo.captured_medieval;
    }

    /// A copy of the position after `m` (which must be legal here).
    #[must_use]
    pub fn after(&self, m: &Move) -> Position {
        let mut p = *self;
        let _ = p.make(m);
        p
    }

    /// Whether `m` is one of the legal paths of this position.
    #[must_use]
    pub fn is_legal(&self, m: &Move) -> bool {
        self.legal_paths().iter().any(|l| l == m)
    }
}

/// Number of leaf nodes of the legal move tree `depth` plies deep (FMJD
/// deduplicated moves, bulk-counted at the last ply).
#[must_use]
pub fn perft(pos: &Position, depth: u32) -> u64 {
    let mut bufs: Vec<Vec<CMove>> = (0..=depth).map(|_| Vec::with_capacity(64)).collect();
    let b = pos.board();
    dispatch!(pos, run_perft(&b, depth, &mut bufs))
}

fn run_perft<G: Geo, S: Side>(b: &Board, depth: u32, bufs: &mut [Vec<CMove>]) -> u64 {
    movegen::perft::<G, S>(b, depth, bufs)
}

/// Perft through the public API (`legal_moves`, `make`, `unmake`): slow, used
/// to cross-check the fast path.
#[must_use]
pub fn perft_slow(pos: &mut Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let moves = pos.legal_moves();
    if depth == 1 {
        return moves.len() as u64;
    }
    let mut total = 0;
    for m in &moves {
        let undo = pos.make(m);
        total += perft_slow(pos, depth - 1);
        pos.unmake(m, undo);
    }
    total
}

/// Collects the maximal complete sequences with their paths.
struct PathSink {
    best: u32,
    paths: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Sink for PathSink {
    const PATHS: bool = true;
    const PARTIALS: bool = false;

    fn complete(&mut self, _from: u32, _to: u32, _captured: u64, n: u32, trail: &Trail) {
        if n < self.best {
            return;
        }
        if n > self.best {
            self.best = n;
            self.paths.clear();
        }
        let n = n as usize;
        self.paths
            .push((trail.stops[..=n].to_vec(), trail.caps[..n].to_vec()));
    }
}

/// Collects every landing of every sequence (complete or not).
struct TrailSink {
    trails: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Sink for TrailSink {
    const PATHS: bool = true;
    const PARTIALS: bool = true;

    fn complete(&mut self, _from: u32, _to: u32, _captured: u64, _n: u32, _trail: &Trail) {}

    fn partial(&mut self, _from: u32, _to: u32, _captured: u64, n: u32, trail: &Trail) {
        let n = n as usize;
        self.trails
            .push((trail.stops[..=n].to_vec(), trail.caps[..n].to_vec()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intl(fen: &str) -> Position {
        match Position::from_fen(Variant::International, fen) {
            Ok(p) => p,
            Err(e) => panic!("{fen}: {e}"),
        }
    }

    #[test]
    fn make_unmake_capture_of_king_with_promotion() {
        // 12x1 takes the king on 7 and promotes on 1.
        let mut p = intl("W:W12:BK7,30");
        let before = p;
        let moves = p.legal_moves();
        assert_eq!(moves.len(), 1);
        let m = &moves[0];
        assert!(m.promotes() && m.role() == Role::Man);
        let undo = p.make(m);
        assert_eq!(p.to_fen(), "B:WK1:B30");
        p.unmake(m, undo);
        assert_eq!(p, before);
    }

    #[test]
    fn king_returning_to_its_square() {
        // A king may end its capture on the square it started from.
        let mut p = intl("W:WK28:B12,13,22,23");
        let before = p;
        let paths = p.legal_paths();
        assert!(
            paths
                .iter()
                .any(|m| m.from() == m.to() && m.captures().len() == 4)
        );
        for m in paths {
            let undo = p.make(&m);
            p.unmake(&m, undo);
            assert_eq!(p, before, "{m}");
        }
    }

    #[test]
    fn pieces_and_material() {
        let p = Position::new(Variant::Brazilian);
        assert_eq!(p.pieces().len(), 24);
        let m = p.material();
        assert_eq!((m.white.men, m.black.men, m.white.kings), (12, 12, 0));
        assert_eq!(p.piece_at(Square(33)), None);
        assert_eq!(p.legal_move_count(), 7);
        assert!(!p.has_capture());
    }
}
