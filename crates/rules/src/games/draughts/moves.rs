//! The [`Move`] type: a full path of stops with its captures in sequence order,
//! and the FMJD identity of a move ([`MoveKey`]: start, end and captured set).

use std::fmt;

use super::types::{Role, Square};

/// A legal move (or one path of a legal capture).
///
/// `path` lists every square the piece stops on, from its start to its end;
/// `captures` lists the captured pieces' squares in the order they were jumped
/// (that order decides the Medieval duels). A quiet move has a path of two
/// squares and no capture.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    pub(crate) path: Vec<Square>,
    pub(crate) captures: Vec<Square>,
    pub(crate) role: Role,
    pub(crate) promotes: bool,
}

/// What makes two capture sequences "the same move" under the FMJD
/// convention: same start, same end, same set of captured pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MoveKey {
    pub from: Square,
    pub to: Square,
    /// Bit `n` is set when the piece on square `n` is captured.
    pub captured: u64,
}

impl Move {
    /// Start square.
    #[must_use]
    pub fn from(&self) -> Square {
        self.path[0]
    }

    /// End square.
    #[must_use]
    pub fn to(&self) -> Square {
        self.path[self.path.len() - 1]
    }

    /// Every square the piece stops on, start and end included.
    #[must_use]
    pub fn path(&self) -> &[Square] {
        &self.path
    }

    /// Captured squares in the order they are jumped.
    #[must_use]
    pub fn captures(&self) -> &[Square] {
        &self.captures
    }

    /// Whether the move captures.
    #[must_use]
    pub fn is_capture(&self) -> bool {
        !self.captures.is_empty()
    }

    /// Whether a man ends this move on the far row and becomes a king.
    #[must_use]
    pub fn promotes(&self) -> bool {
        self.promotes
    }

    /// The role of the moving piece before the move.
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// The FMJD identity of the move.
    #[must_use]
    pub fn key(&self) -> MoveKey {
        MoveKey {
            from: self.from(),
            to: self.to(),
            captured: self
                .captures
                .iter()
                .fold(0u64, |acc, s| acc | (1u64 << s.0)),
        }
    }

    /// Whether `other` is the same move under the FMJD convention (possibly by another path).
    #[must_use]
    pub fn same_move(&self, other: &Move) -> bool {
        self.key() == other.key()
    }

    /// Full PDN form: `32-28`, `28x19x10` (every stop of a capture).
    #[must_use]
    pub fn to_full_string(&self) -> String {
        let sep = if self.is_capture() { "x" } else { "-" };
        let parts: Vec<String> = self.path.iter().map(|s| s.0.to_string()).collect();
        parts.join(sep)
    }

    /// Short PDN form: `32-28`, `28x10` (start and end only).
    #[must_use]
    pub fn to_short_string(&self) -> String {
        let sep = if self.is_capture() { 'x' } else { '-' };
        format!("{}{}{}", self.from(), sep, self.to())
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_full_string())
    }
}
