//! PDN move notation: syntax (`32-28`, `28x19x10`, short `28x10`), parsing
//! against a position, and [`classify`], which tells why an attempt is illegal.
//!
//! # Classification precedence
//!
//! [`classify`] checks, in this order, and reports the first failure:
//!
//! 1. [`Illegal::Unparseable`]: the text is not PDN for this board (empty,
//!    stray character, mixed `-`/`x`, a `-` move with more than two squares,
//!    a leading zero, a square out of range).
//! 2. [`Illegal::NotOwnPiece`]: the start square is empty or holds a piece of
//!    the side not to move.
//! 3. Quiet form `a-b`:
//!    - the step is a quiet move of the piece (legal but for the capture
//!      obligation): [`Illegal::SkippedMandatoryCapture`] if the side to move
//!      has a capture, otherwise the move is legal;
//!    - a man stepping backwards onto an empty diagonal neighbour:
//!      [`Illegal::WrongDirection`];
//!    - anything else: [`Illegal::NoSuchPath`].
//! 4. Capture form `axb` (two squares: short form, or the full path of a
//!    single capture):
//!    - the legal moves (deduplicated) from `a` to `b`: exactly one is the
//!      answer, several give [`Illegal::Ambiguous`];
//!    - none, but some valid sequence of jumps of that piece (complete or
//!      not) goes from `a` to `b`: [`Illegal::NotMajority`];
//!    - otherwise [`Illegal::NoSuchPath`].
//! 5. Capture form with three or more squares (full path):
//!    - one of the legal paths: the move, with the path as written;
//!    - a valid sequence of jumps capturing fewer pieces than the maximum
//!      (stopping early or taking a smaller sequence): [`Illegal::NotMajority`];
//!    - otherwise [`Illegal::NoSuchPath`].

use super::moves::Move;
use super::position::Position;
use super::types::{Piece, Role, Square, Variant};

/// A syntax error in move text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    #[error("empty move text")]
    Empty,
    #[error("unexpected character {ch:?} at byte {at}")]
    BadChar { ch: char, at: usize },
    #[error("a move mixes the separators '-' and 'x'")]
    MixedSeparators,
    #[error("a square number is missing (separator at the start, at the end or doubled)")]
    MissingSquare,
    #[error("a move names at least two squares")]
    TooFewSquares,
    #[error("a quiet move ('-') names exactly two squares")]
    QuietWithStops,
    #[error("square number {text:?} has a leading zero")]
    LeadingZero { text: String },
    #[error("square {number} is not on this board (1-{max})")]
    OutOfRange { number: u64, max: u8 },
}

/// Move text split into its squares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notation {
    /// The squares as written, at least two.
    pub squares: Vec<Square>,
    /// Written with `x`.
    pub capture: bool,
}

/// Parses the syntax of move text for a board (no position needed).
pub fn parse_notation(variant: Variant, text: &str) -> Result<Notation, SyntaxError> {
    if text.is_empty() {
        return Err(SyntaxError::Empty);
    }
    let mut sep: Option<char> = None;
    for (at, ch) in text.char_indices() {
        match ch {
            '0'..='9' => {}
            '-' | 'x' => match sep {
                None => sep = Some(ch),
                Some(s) if s == ch => {}
                Some(_) => return Err(SyntaxError::MixedSeparators),
            },
            _ => return Err(SyntaxError::BadChar { ch, at }),
        }
    }
    let Some(sep) = sep else {
        return Err(SyntaxError::TooFewSquares);
    };
    let mut squares = Vec::new();
    for part in text.split(sep) {
        if part.is_empty() {
            return Err(SyntaxError::MissingSquare);
        }
        if part.len() > 1 && part.starts_with('0') {
            return Err(SyntaxError::LeadingZero {
                text: part.to_string(),
            });
        }
        let number = part
            .bytes()
            .try_fold(0u64, |acc, b| {
                acc.checked_mul(10)
                    .and_then(|v| v.checked_add(u64::from(b - b'0')))
            })
            .unwrap_or(u64::MAX);
        let sq = u32::try_from(number)
            .ok()
            .and_then(|n| variant.square(n))
            .ok_or(SyntaxError::OutOfRange {
                number,
                max: variant.squares(),
            })?;
        squares.push(sq);
    }
    if squares.len() < 2 {
        return Err(SyntaxError::TooFewSquares);
    }
    let capture = sep == 'x';
    if !capture && squares.len() > 2 {
        return Err(SyntaxError::QuietWithStops);
    }
    Ok(Notation { squares, capture })
}

/// Why a move attempt is not legal. See the module documentation for the
/// order in which the checks apply.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Illegal {
    #[error("unparseable move: {0}")]
    Unparseable(#[from] SyntaxError),
    #[error("square {square} does not hold a piece of the side to move")]
    NotOwnPiece { square: Square },
    #[error("a man cannot move backwards")]
    WrongDirection,
    #[error("a capture is available, and capture is mandatory")]
    SkippedMandatoryCapture,
    #[error("this capture takes {captured} piece(s) where {required} can be taken (majority rule)")]
    NotMajority { captured: usize, required: usize },
    #[error("no legal move follows this path")]
    NoSuchPath,
    #[error("the short form names {count} different moves: give every stop")]
    Ambiguous { count: usize },
    #[error("a capture of {captured} pieces must list every square it stops on")]
    MissingStops { captured: usize },
}

/// Parses move text against a position and returns the legal move it names
/// (with the path as written when a full path is given), or why it is illegal.
pub fn classify(pos: &Position, text: &str) -> Result<Move, Illegal> {
    let notation = parse_notation(pos.variant(), text)?;
    let from = notation.squares[0];
    let to = notation.squares[notation.squares.len() - 1];
    let piece = match pos.piece_at(from) {
        Some(p) if p.color == pos.turn() => p,
        _ => return Err(Illegal::NotOwnPiece { square: from }),
    };
    if !notation.capture {
        if let Some(m) = pos
            .quiet_moves()
            .into_iter()
            .find(|m| m.from() == from && m.to() == to)
        {
            return if pos.has_capture() {
                Err(Illegal::SkippedMandatoryCapture)
            } else {
                Ok(m)
            };
        }
        if piece.role == Role::Man && pos.piece_at(to).is_none() && is_backward_step(pos, from, to)
        {
            return Err(Illegal::WrongDirection);
        }
        return Err(Illegal::NoSuchPath);
    }
    if !pos.has_capture() {
        return Err(Illegal::NoSuchPath);
    }
    let paths = pos.legal_paths();
    let required = paths.first().map_or(0, |m| m.captures.len());
    if notation.squares.len() == 2 {
        let mut seen = std::collections::HashSet::new();
        let candidates: Vec<&Move> = paths
            .iter()
            .filter(|m| m.from() == from && m.to() == to && seen.insert(m.key()))
            .collect();
        match candidates.as_slice() {
            [m] => return Ok((*m).clone()),
            [] => {}
            many => return Err(Illegal::Ambiguous { count: many.len() }),
        }
    } else if let Some(m) = paths.iter().find(|m| m.path == notation.squares) {
        return Ok(m.clone());
    }
    let trails = pos.capture_trails_from(from);
    let valid = if notation.squares.len() == 2 {
        trails
            .iter()
            .filter(|t| t.to() == to)
            .map(|t| t.captures.len())
            .max()
    } else {
        trails
            .iter()
            .find(|t| t.path == notation.squares)
            .map(|t| t.captures.len())
    };
    match valid {
        Some(captured) => Err(Illegal::NotMajority { captured, required }),
        None => Err(Illegal::NoSuchPath),
    }
}

/// Whether `to` is the diagonal neighbour of `from` behind the side to move.
fn is_backward_step(pos: &Position, from: Square, to: Square) -> bool {
    // Our backward steps are the forward steps of a lone man of the other side.
    let other = pos.turn().other();
    let mut probe = Position::empty(pos.variant(), other);
    probe.set_piece(
        from,
        Some(Piece {
            color: other,
            role: Role::Man,
            medieval: false,
        }),
    );
    probe.quiet_moves().iter().any(|m| m.to() == to)
}

/// [`classify`] for text that must give every stop of a capture, as the platform's logs do
/// (`28x19x10`, never the short `28x10`): a legal capture of two or more pieces written with only
/// its two ends, or a short form that names several moves, is [`Illegal::MissingStops`].
///
/// ```
/// use vigie_rules::games::draughts::{Illegal, Position, Variant, classify, classify_full};
///
/// // White man on 33 takes the black men on 28 and 18, stopping on 22 and ending on 13.
/// let pos = Position::from_fen(Variant::International, "W:W33:B28,18").unwrap();
/// assert!(classify(&pos, "33x13").is_ok());
/// assert!(classify_full(&pos, "33x22x13").is_ok());
/// assert_eq!(classify_full(&pos, "33x13"), Err(Illegal::MissingStops { captured: 2 }));
/// ```
pub fn classify_full(pos: &Position, text: &str) -> Result<Move, Illegal> {
    let written = parse_notation(pos.variant(), text)?.squares.len();
    match classify(pos, text) {
        Ok(m) if m.captures.len() + 1 > written => Err(Illegal::MissingStops {
            captured: m.captures.len(),
        }),
        Err(Illegal::Ambiguous { .. }) => {
            let from = pos.legal_paths();
            let captured = from.first().map_or(0, |m| m.captures.len());
            Err(Illegal::MissingStops { captured })
        }
        other => other,
    }
}

impl Position {
    /// Parses move text against this position; same as [`classify`].
    pub fn parse_move(&self, text: &str) -> Result<Move, Illegal> {
        classify(self, text)
    }

    /// The shortest unambiguous PDN text of a legal move: the short form when
    /// it names one move here, the full path otherwise.
    #[must_use]
    pub fn to_pdn(&self, m: &Move) -> String {
        let short = m.to_short_string();
        match classify(self, &short) {
            Ok(found) if found.same_move(m) => short,
            _ => m.to_full_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax() {
        let v = Variant::International;
        assert_eq!(parse_notation(v, "32-28").map(|n| n.squares.len()), Ok(2));
        assert!(parse_notation(v, "28x19x10").is_ok_and(|n| n.capture && n.squares.len() == 3));
        assert_eq!(parse_notation(v, ""), Err(SyntaxError::Empty));
        assert_eq!(
            parse_notation(v, "28-19x10"),
            Err(SyntaxError::MixedSeparators)
        );
        assert_eq!(parse_notation(v, "28"), Err(SyntaxError::TooFewSquares));
        assert_eq!(parse_notation(v, "28-"), Err(SyntaxError::MissingSquare));
        assert_eq!(
            parse_notation(v, "32-28-23"),
            Err(SyntaxError::QuietWithStops)
        );
        assert!(matches!(
            parse_notation(v, "51-46"),
            Err(SyntaxError::OutOfRange {
                number: 51,
                max: 50
            })
        ));
        assert!(matches!(
            parse_notation(v, "0-5"),
            Err(SyntaxError::OutOfRange { number: 0, .. })
        ));
        assert!(matches!(
            parse_notation(v, "05-10"),
            Err(SyntaxError::LeadingZero { .. })
        ));
        assert!(matches!(
            parse_notation(v, " 32-28"),
            Err(SyntaxError::BadChar { ch: ' ', at: 0 })
        ));
        assert!(matches!(
            parse_notation(v, "99999999999999999999999-1"),
            Err(SyntaxError::OutOfRange {
                number: u64::MAX,
                ..
            })
        ));
        assert!(matches!(
            parse_notation(Variant::Brazilian, "33-29"),
            Err(SyntaxError::OutOfRange { max: 32, .. })
        ));
    }
}
