//! [`Game`]: a position with the history the end-of-game rules need (draw
//! counter, repetitions, Medieval selection) and the game's [`Status`].
//!
//! End of game, checked after every move in this order:
//! 1. a player left without pieces by their own lost duel loses at once;
//! 2. the side to move has no piece: it loses ([`WinReason::NoPieces`]);
//! 3. the side to move has no legal move: it loses ([`WinReason::NoMoves`]);
//! 4. draw rule: 50 (international) or 40 (Brazilian) consecutive plies
//!    without a capture and without a man move ([`DrawReason::DrawRule`]);
//! 5. Brazilian only: the position (pieces, kings, medieval flags, side to
//!    move) occurs for the third time ([`DrawReason::Repetition`]).
//!
//! A capture cut short by a lost duel counts as a capture for both draw rules.

use super::medieval::{self, Duel, DuelError, DuelOutcome, SelectError};
use super::moves::Move;
use super::notation::{Illegal, classify, classify_full};
use super::position::Position;
use super::types::{Color, Material, Role, Square, Variant};

/// Standard rules, or the Medieval mode (Brazilian board).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Standard,
    Medieval,
}

/// Why a game was won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WinReason {
    /// The loser has no piece left.
    NoPieces,
    /// The loser, to move, has no legal move.
    NoMoves,
}

/// Why a game was drawn by rule (agreement is not the engine's business).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DrawReason {
    /// Too many plies without capture and without man move.
    DrawRule,
    /// Third occurrence of the same position (Brazilian).
    Repetition,
}

/// Where a game stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Ongoing,
    Win { winner: Color, reason: WinReason },
    Draw { reason: DrawReason },
}

/// Why a game action was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    #[error("the game is over")]
    GameOver,
    #[error("both players must pick their medieval men before the first move")]
    SelectionPending,
    #[error("this game is not in Medieval mode")]
    NotMedieval,
    #[error("invalid medieval selection: {0}")]
    Selection(#[from] SelectError),
    #[error("move {text} is not legal in this position")]
    NotLegal { text: String },
    #[error("duel outcomes do not fit the move: {0}")]
    Duel(#[from] DuelError),
}

/// A game in progress: position, counters and status.
#[derive(Clone, Debug)]
pub struct Game {
    position: Position,
    mode: Mode,
    ply: u32,
    quiet_plies: u32,
    /// Positions since the last irreversible move (capture or man move), current included.
    history: Vec<Position>,
    selected: [bool; 2],
    status: Status,
}

impl Game {
    /// A standard game from the start position.
    #[must_use]
    pub fn new(variant: Variant) -> Game {
        Game::from_position(Position::new(variant), Mode::Standard)
    }

    /// A Medieval game (Brazilian board): both players select their medieval
    /// men with [`Game::select`] before the first move.
    #[must_use]
    pub fn new_medieval() -> Game {
        let mut g = Game::from_position(Position::new(Variant::Brazilian), Mode::Medieval);
        g.selected = [false; 2];
        g
    }

    /// A game from any position. In Standard mode medieval flags are dropped;
    /// in Medieval mode the flags of the position are taken as the selection
    /// (the Medieval mode needs the Brazilian board: on the international board
    /// the game is Standard).
    #[must_use]
    pub fn from_position(mut position: Position, mode: Mode) -> Game {
        let mode = if position.variant() == Variant::Brazilian {
            mode
        } else {
            Mode::Standard
        };
        if mode == Mode::Standard {
            position.medieval = 0;
        }
        let mut g = Game {
            position,
            mode,
            ply: 0,
            quiet_plies: 0,
            history: vec![position],
            selected: [true; 2],
            status: Status::Ongoing,
        };
        g.status = g.compute_status(false);
        g
    }

    /// The current position.
    #[must_use]
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// Standard or Medieval.
    #[must_use]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The board and rule set.
    #[must_use]
    pub fn variant(&self) -> Variant {
        self.position.variant()
    }

    /// Where the game stands.
    #[must_use]
    pub fn status(&self) -> Status {
        self.status
    }

    /// Plies played so far.
    #[must_use]
    pub fn ply(&self) -> u32 {
        self.ply
    }

    /// Consecutive plies without a capture and without a man move.
    #[must_use]
    pub fn quiet_plies(&self) -> u32 {
        self.quiet_plies
    }

    /// How many times the current position has occurred (since it last became
    /// reachable, i.e. since the last capture or man move), this time included.
    #[must_use]
    pub fn repetitions(&self) -> usize {
        self.history.iter().filter(|p| **p == self.position).count()
    }

    /// Men and kings of each side.
    #[must_use]
    pub fn material(&self) -> Material {
        self.position.material()
    }

    /// The legal moves (deduplicated).
    #[must_use]
    pub fn legal_moves(&self) -> Vec<Move> {
        self.position.legal_moves()
    }

    /// The number of legal moves.
    #[must_use]
    pub fn legal_move_count(&self) -> usize {
        self.position.legal_move_count()
    }

    /// Whether the side to move has exactly one legal move.
    #[must_use]
    pub fn is_forced(&self) -> bool {
        self.legal_move_count() == 1
    }

    /// Whether both medieval selections are done (always true in Standard mode).
    #[must_use]
    pub fn selection_done(&self) -> bool {
        self.selected.iter().all(|&s| s)
    }

    /// Classifies move text against the current position.
    pub fn classify(&self, text: &str) -> Result<Move, Illegal> {
        classify(&self.position, text)
    }

    /// Classifies move text that must give every stop of a capture: see [`classify_full`].
    pub fn classify_full(&self, text: &str) -> Result<Move, Illegal> {
        classify_full(&self.position, text)
    }

    /// Every draw rule that holds in the current position, in the order [`Game::status`] applies
    /// them (the draw rule, then a third repetition); both may hold on the same ply. Whether the
    /// game is won instead is [`Game::status`]'s business.
    #[must_use]
    pub fn draw_reasons(&self) -> Vec<DrawReason> {
        let variant = self.position.variant();
        let mut out = Vec::new();
        if self.quiet_plies >= variant.draw_plies() {
            out.push(DrawReason::DrawRule);
        }
        if variant.repetition_draws() && self.repetitions() >= 3 {
            out.push(DrawReason::Repetition);
        }
        out
    }

    /// The server's timeout move: see [`auto_move`].
    #[must_use]
    pub fn auto_move(&self) -> Option<Move> {
        auto_move(&self.position)
    }

    /// Medieval mode: `color` picks its 3 medieval men, before the first move.
    pub fn select(&mut self, color: Color, squares: &[Square]) -> Result<(), GameError> {
        if self.mode != Mode::Medieval {
            return Err(GameError::NotMedieval);
        }
        if self.ply > 0 {
            return Err(SelectError::NotStartPosition.into());
        }
        if self.selected[color as usize] {
            return Err(SelectError::AlreadySelected { color }.into());
        }
        self.position = self.position.select_medieval(color, squares)?;
        self.selected[color as usize] = true;
        self.history = vec![self.position];
        Ok(())
    }

    /// Plays a legal move in which every capture succeeds (in Medieval mode:
    /// a move without medieval victims; use [`Game::play_with_duels`] otherwise).
    pub fn play(&mut self, m: &Move) -> Result<(), GameError> {
        self.play_with_duels(m, &[]).map(|_| ())
    }

    /// Plays a legal move with its duel outcomes (empty when no medieval piece
    /// is captured). The move must be one of the legal paths of the position.
    pub fn play_with_duels(&mut self, m: &Move, duels: &[Duel]) -> Result<DuelOutcome, GameError> {
        if self.status != Status::Ongoing {
            return Err(GameError::GameOver);
        }
        if !self.selection_done() {
            return Err(GameError::SelectionPending);
        }
        if !self.position.is_legal(m) {
            return Err(GameError::NotLegal {
                text: m.to_full_string(),
            });
        }
        let (next, outcome) = medieval::apply_duels(&self.position, m, duels)?;
        self.advance(next, m.is_capture() || m.role() == Role::Man);
        Ok(outcome)
    }

    /// Follows a transition the rules do not allow (a server that accepted an illegal move, as
    /// a replay must): the position becomes `next`, which is counted as one ply like any move,
    /// `irreversible` when a man moved or a piece was taken. The draw rules' counters and the
    /// repetitions go on from where they were (a new game from `next` would start them again).
    /// In Medieval mode a selection still pending counts as done.
    ///
    /// ```
    /// use vigie_rules::games::draughts::{Color, Game, Position, Variant};
    ///
    /// let mut g = Game::new(Variant::Brazilian);
    /// let mut next = *g.position();
    /// next.set_turn(Color::Black);
    /// g.force(next, false);
    /// assert_eq!((g.ply(), g.quiet_plies()), (1, 1));
    /// ```
    pub fn force(&mut self, next: Position, irreversible: bool) {
        self.selected = [true; 2];
        self.advance(next, irreversible);
    }

    /// The position after a move, one ply on: the draw rules' counters and the status follow.
    /// The side that moved is the one not to move next (a forced move may be out of turn).
    fn advance(&mut self, next: Position, irreversible: bool) {
        let mover = next.turn().other();
        self.position = next;
        self.ply += 1;
        if irreversible {
            self.quiet_plies = 0;
            self.history.clear();
        } else {
            self.quiet_plies += 1;
        }
        self.history.push(next);
        self.status = self.compute_status(!next.has_pieces(mover));
    }

    fn compute_status(&self, mover_wiped_out: bool) -> Status {
        let pos = &self.position;
        let to_move = pos.turn();
        if mover_wiped_out {
            return Status::Win {
                winner: to_move,
                reason: WinReason::NoPieces,
            };
        }
        if !pos.has_pieces(to_move) {
            return Status::Win {
                winner: to_move.other(),
                reason: WinReason::NoPieces,
            };
        }
        if pos.legal_move_count() == 0 {
            return Status::Win {
                winner: to_move.other(),
                reason: WinReason::NoMoves,
            };
        }
        match self.draw_reasons().first() {
            Some(&reason) => Status::Draw { reason },
            None => Status::Ongoing,
        }
    }
}

/// Brazilian timeout move: the first legal path in ascending order of start
/// square, then of each square it stops on (`None` without legal move).
#[must_use]
pub fn auto_move(pos: &Position) -> Option<Move> {
    pos.legal_paths().into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_status_and_counters() {
        let g = Game::new(Variant::International);
        assert_eq!(g.status(), Status::Ongoing);
        assert_eq!((g.ply(), g.quiet_plies(), g.repetitions()), (0, 0, 1));
        assert_eq!(g.mode(), Mode::Standard);
        let m = Game::new_medieval();
        assert!(!m.selection_done());
        // Medieval needs the Brazilian board.
        let g = Game::from_position(Position::new(Variant::International), Mode::Medieval);
        assert_eq!(g.mode(), Mode::Standard);
    }

    #[test]
    fn a_forced_move_keeps_the_draw_counters() {
        // Two kings: the same squares with either side to move.
        let a = Position::from_fen(Variant::Brazilian, "W:WK29:BK4").unwrap();
        let mut b = a;
        b.set_turn(Color::Black);
        let mut g = Game::from_position(a, Mode::Standard);
        for next in [b, a, b, a] {
            g.force(next, false);
        }
        // As after four moves: a third occurrence of the first position draws.
        assert_eq!((g.ply(), g.quiet_plies(), g.repetitions()), (4, 4, 3));
        assert_eq!(g.draw_reasons(), vec![DrawReason::Repetition]);
        assert_eq!(
            g.status(),
            Status::Draw {
                reason: DrawReason::Repetition
            }
        );
        // A man moved or a piece taken starts them again.
        let mut g = Game::from_position(a, Mode::Standard);
        g.force(b, false);
        g.force(a, true);
        assert_eq!((g.ply(), g.quiet_plies(), g.repetitions()), (2, 0, 1));
    }

    #[test]
    fn a_forced_move_out_of_turn_that_takes_the_last_piece_wins_for_its_side() {
        // White to move; black (out of turn) takes white's last piece: black wins.
        let before = Position::from_fen(Variant::Brazilian, "W:WK29:BK4").unwrap();
        let mut after = Position::empty(Variant::Brazilian, Color::White);
        after.set_piece(
            Variant::Brazilian.square(4).unwrap(),
            before.piece_at(Variant::Brazilian.square(4).unwrap()),
        );
        let mut g = Game::from_position(before, Mode::Standard);
        g.force(after, true);
        assert_eq!(
            g.status(),
            Status::Win {
                winner: Color::Black,
                reason: WinReason::NoPieces
            }
        );
    }
}
