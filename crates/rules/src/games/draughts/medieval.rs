//! Medieval mode (Brazilian board): selecting the 3 medieval men of each side,
//! and applying a capture with its duel outcomes.
//!
//! Legal moves, mandatory capture and majority are computed as if every capture
//! succeeded ([`Position::legal_moves`] does exactly that). Then each captured
//! medieval piece, in the order of the path, fights a duel; capturing an
//! ordinary piece always succeeds and uses no duel. The sequence stops at the
//! first lost duel: the pieces taken before stay taken, the attacker is
//! removed, the defender stays, and the turn passes.

use super::moves::Move;
use super::position::Position;
use super::types::{Color, Role, Square, Variant};

/// Number of medieval men each player picks.
pub const MEDIEVAL_PER_SIDE: usize = 3;

/// Why a selection of medieval men was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("the Medieval mode is played on the Brazilian board only")]
    NotBrazilian,
    #[error("medieval men are picked in the start position, before the first move")]
    NotStartPosition,
    #[error("{color} has already picked its medieval men")]
    AlreadySelected { color: Color },
    #[error("exactly 3 medieval men are picked, got {count}")]
    WrongCount { count: usize },
    #[error("square {square} is picked twice")]
    Duplicate { square: Square },
    #[error("square {square} does not hold a man of {color}")]
    NotOwnMan { square: Square, color: Color },
}

/// One duel: the square of the captured medieval piece and whether the attack won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Duel {
    pub victim: Square,
    pub won: bool,
}

/// Why a list of duel outcomes does not fit a move.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DuelError {
    #[error(
        "duel {index}: the victim is {found}, but the next medieval piece on the path is {expected}"
    )]
    WrongVictim {
        index: usize,
        expected: Square,
        found: Square,
    },
    #[error("duel {index} (victim {victim}) comes after a lost duel, which ends the sequence")]
    AfterLoss { index: usize, victim: Square },
    #[error("{found} duel(s) given but this capture has only {expected} medieval victim(s)")]
    TooMany { expected: usize, found: usize },
    #[error(
        "{found} duel(s) given but the capture needs {expected} (one per medieval victim up to the first loss)"
    )]
    TooFew { expected: usize, found: usize },
}

/// How a capture with duels ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DuelOutcome {
    /// Every capture succeeded: the move was played in full.
    Completed,
    /// The attacker lost the duel against `victim`; `taken` are the pieces
    /// captured before it (removed), and the attacker left the board.
    Lost { victim: Square, taken: Vec<Square> },
}

/// The captured squares of `m` that hold medieval pieces, in path order: the
/// duels the move may need (fewer are fought if one is lost).
#[must_use]
pub fn duel_victims(pos: &Position, m: &Move) -> Vec<Square> {
    m.captures()
        .iter()
        .copied()
        .filter(|&s| pos.piece_at(s).is_some_and(|p| p.medieval))
        .collect()
}

/// Checks that `duels` fits the move: one entry per medieval victim in path
/// order, up to and including the first lost duel and nothing after it.
pub fn check_duels(pos: &Position, m: &Move, duels: &[Duel]) -> Result<(), DuelError> {
    let victims = duel_victims(pos, m);
    let mut lost = false;
    for (index, duel) in duels.iter().enumerate() {
        if lost {
            return Err(DuelError::AfterLoss {
                index,
                victim: duel.victim,
            });
        }
        let Some(&expected) = victims.get(index) else {
            return Err(DuelError::TooMany {
                expected: victims.len(),
                found: duels.len(),
            });
        };
        if duel.victim != expected {
            return Err(DuelError::WrongVictim {
                index,
                expected,
                found: duel.victim,
            });
        }
        lost = !duel.won;
    }
    if !lost && duels.len() < victims.len() {
        return Err(DuelError::TooFew {
            expected: victims.len(),
            found: duels.len(),
        });
    }
    Ok(())
}

/// Applies a legal move of `pos` with its duel outcomes (checked with
/// [`check_duels`]) and returns the new position, the turn having passed.
pub fn apply_duels(
    pos: &Position,
    m: &Move,
    duels: &[Duel],
) -> Result<(Position, DuelOutcome), DuelError> {
    check_duels(pos, m, duels)?;
    let Some(loss) = duels.iter().find(|d| !d.won) else {
        return Ok((pos.after(m), DuelOutcome::Completed));
    };
    let mut next = *pos;
    let taken: Vec<Square> = m
        .captures()
        .iter()
        .copied()
        .take_while(|&s| s != loss.victim)
        .collect();
    for &s in &taken {
        next.set_piece(s, None);
    }
    next.set_piece(m.from(), None);
    next.set_turn(pos.turn().other());
    Ok((
        next,
        DuelOutcome::Lost {
            victim: loss.victim,
            taken,
        },
    ))
}

impl Position {
    /// Marks `color`'s chosen men as medieval. Valid only on the Brazilian
    /// board, in the start position (other medieval choices aside), once per
    /// side, with exactly 3 distinct squares holding that side's men.
    pub fn select_medieval(
        &self,
        color: Color,
        squares: &[Square],
    ) -> Result<Position, SelectError> {
        if self.variant != Variant::Brazilian {
            return Err(SelectError::NotBrazilian);
        }
        let start = Position::new(Variant::Brazilian);
        if self.white != start.white
            || self.black != start.black
            || self.kings != 0
            || self.turn != Color::White
        {
            return Err(SelectError::NotStartPosition);
        }
        if self.side_bits(color) & self.medieval != 0 {
            return Err(SelectError::AlreadySelected { color });
        }
        if squares.len() != MEDIEVAL_PER_SIDE {
            return Err(SelectError::WrongCount {
                count: squares.len(),
            });
        }
        let mut next = *self;
        for (i, &square) in squares.iter().enumerate() {
            if squares[..i].contains(&square) {
                return Err(SelectError::Duplicate { square });
            }
            match self.piece_at(square) {
                Some(p) if p.color == color && p.role == Role::Man => {
                    next.medieval |= self.bit(square);
                }
                _ => return Err(SelectError::NotOwnMan { square, color }),
            }
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn victims_in_path_order() {
        let Ok(p) = Position::from_fen(Variant::Brazilian, "W:W18:B15,M7,M6") else {
            panic!("fen");
        };
        let Ok(m) = p.parse_move("18x11x2x9") else {
            panic!("legal");
        };
        let numbers: Vec<u8> = duel_victims(&p, &m).iter().map(|s| s.number()).collect();
        assert_eq!(numbers, vec![7, 6]);
        assert_eq!(
            check_duels(
                &p,
                &m,
                &[Duel {
                    victim: Square(7),
                    won: false
                }]
            ),
            Ok(())
        );
    }

    #[test]
    fn selection_needs_the_start_position() {
        let start = Position::new(Variant::Brazilian);
        let sel = [Square(21), Square(22), Square(23)];
        let Ok(p) = start.select_medieval(Color::White, &sel) else {
            panic!("valid selection");
        };
        assert_eq!(p.material().white.medieval, 3);
        let moved = start.after(&start.legal_moves()[0]);
        assert_eq!(
            moved.select_medieval(Color::Black, &[Square(1), Square(2), Square(3)]),
            Err(SelectError::NotStartPosition)
        );
    }
}
