//! Small value types shared by the whole engine: colours, variants, squares, pieces.

use std::fmt;

/// A side. White moves first and its men move towards square 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    White,
    Black,
}

impl Color {
    /// The other side.
    #[must_use]
    pub fn other(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }

    /// `'W'` or `'B'`, as in FEN.
    #[must_use]
    pub fn fen_char(self) -> char {
        match self {
            Color::White => 'W',
            Color::Black => 'B',
        }
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Color::White => "white",
            Color::Black => "black",
        })
    }
}

/// Row and column of PDN square `square` on a board of `per_row` dark squares a row: row 0 is
/// square 1's (Black's back row, at the top as White sees the board), columns count every square
/// of a row from the left, 0-based. For constant tables; [`Variant::row_col`] checks the square.
#[must_use]
pub const fn pdn_row_col(per_row: u32, square: u32) -> (u32, u32) {
    let s = square - 1;
    let (row, k) = (s / per_row, s % per_row);
    (
        row,
        if row.is_multiple_of(2) {
            2 * k + 1
        } else {
            2 * k
        },
    )
}

/// The board and rule set. Both use flying kings, mandatory capture and the
/// majority rule; they differ by board size and draw rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// International draughts, 10x10, squares 1-50.
    International,
    /// Brazilian draughts, 8x8, squares 1-32 (the only board with a Medieval mode).
    Brazilian,
}

impl Variant {
    /// Number of playable (dark) squares: 50 or 32.
    #[must_use]
    pub fn squares(self) -> u8 {
        match self {
            Variant::International => 50,
            Variant::Brazilian => 32,
        }
    }

    /// Board side length: 10 or 8.
    #[must_use]
    pub fn size(self) -> u8 {
        match self {
            Variant::International => 10,
            Variant::Brazilian => 8,
        }
    }

    /// Dark squares per row: 5 or 4.
    #[must_use]
    pub fn per_row(self) -> u8 {
        self.size() / 2
    }

    /// Row and column of PDN square `n` on this board ([`pdn_row_col`]), `None` off the board.
    ///
    /// ```
    /// use vigie_rules::games::draughts::Variant;
    /// assert_eq!(Variant::International.row_col(1), Some((0, 1)));
    /// assert_eq!(Variant::International.row_col(50), Some((9, 8)));
    /// assert_eq!(Variant::Brazilian.row_col(33), None);
    /// ```
    #[must_use]
    pub fn row_col(self, n: u8) -> Option<(u32, u32)> {
        (1..=self.squares())
            .contains(&n)
            .then(|| pdn_row_col(u32::from(self.per_row()), u32::from(n)))
    }

    /// Consecutive plies without a capture and without a man move that draw the
    /// game: 50 (international) or 40 (Brazilian).
    #[must_use]
    pub fn draw_plies(self) -> u32 {
        match self {
            Variant::International => 50,
            Variant::Brazilian => 40,
        }
    }

    /// Whether a third occurrence of a position draws (Brazilian only).
    #[must_use]
    pub fn repetition_draws(self) -> bool {
        matches!(self, Variant::Brazilian)
    }

    /// The square numbered `n` on this board, if it exists.
    #[must_use]
    pub fn square(self, n: u32) -> Option<Square> {
        (1..=u32::from(self.squares()))
            .contains(&n)
            .then_some(Square(n as u8))
    }

    /// Every square of the board, ascending.
    pub fn all_squares(self) -> impl Iterator<Item = Square> {
        (1..=self.squares()).map(Square)
    }
}

/// A playable square, by its PDN number (1-based). The valid range depends on
/// the board: use [`Variant::square`] to build one from untrusted input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(pub(crate) u8);

impl Square {
    /// The PDN number of the square.
    #[must_use]
    pub fn number(self) -> u8 {
        self.0
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Man or king.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Man,
    King,
}

/// A piece on a square.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    pub color: Color,
    pub role: Role,
    /// Medieval mode: this piece fights a duel when captured.
    pub medieval: bool,
}

/// Men and kings of one side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SideMaterial {
    pub men: u32,
    pub kings: u32,
    /// How many of those pieces (men or kings) are medieval.
    pub medieval: u32,
}

impl SideMaterial {
    /// Men plus kings.
    #[must_use]
    pub fn pieces(self) -> u32 {
        self.men + self.kings
    }
}

/// Material of both sides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Material {
    pub white: SideMaterial,
    pub black: SideMaterial,
}

impl Material {
    /// The material of one side.
    #[must_use]
    pub fn side(&self, color: Color) -> SideMaterial {
        match color {
            Color::White => self.white,
            Color::Black => self.black,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdn_cells() {
        assert_eq!(Variant::International.row_col(1), Some((0, 1)));
        assert_eq!(Variant::International.row_col(6), Some((1, 0)));
        assert_eq!(Variant::International.row_col(50), Some((9, 8)));
        assert_eq!(Variant::Brazilian.row_col(1), Some((0, 1)));
        assert_eq!(Variant::Brazilian.row_col(32), Some((7, 6)));
        assert_eq!(Variant::Brazilian.row_col(33), None);
        assert_eq!(Variant::Brazilian.row_col(0), None);
    }
}
