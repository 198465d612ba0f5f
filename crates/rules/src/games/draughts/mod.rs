//! Draughts rules engine: international (10x10) and Brazilian (8x8) draughts
//! with flying kings, mandatory majority capture and the Medieval mode.
//!
//! Pure and allocation-light: bitboards on a ghost-square layout
//! (`geometry`), generic move generation (`movegen`), a small
//! [`Position`] API modelled on shakmaty, PDN notation with attempt
//! classification ([`notation`]), FEN ([`fen`]), game state and end-of-game
//! rules ([`game`]) and Medieval duels ([`medieval`]).
//!
//! ```
//! use vigie_rules::games::draughts::{Position, Variant, perft};
//!
//! let pos = Position::from_fen(Variant::International, "W:W31-50:B1-20").unwrap();
//! assert_eq!(pos.legal_moves().len(), 9);
//! assert_eq!(perft(&pos, 4), 4265);
//! let m = pos.parse_move("32-28").unwrap();
//! assert_eq!(m.to_full_string(), "32-28");
//! ```

pub mod fen;
pub mod game;
pub(crate) mod geometry;
pub mod medieval;
pub(crate) mod movegen;
pub mod moves;
pub mod notation;
pub mod position;
pub mod search;
pub mod types;

pub use fen::FenError;
pub use game::{DrawReason, Game, GameError, Mode, Status, WinReason, auto_move};
pub use medieval::{
    Duel, DuelError, DuelOutcome, SelectError, apply_duels, check_duels, duel_victims,
};
pub use moves::{Move, MoveKey};
pub use notation::{Illegal, Notation, SyntaxError, classify, classify_full, parse_notation};
pub use position::{Position, Undo, perft, perft_slow};
pub use types::{Color, Material, Piece, Role, SideMaterial, Square, Variant, pdn_row_col};
