//! The platform's rules and randomness, pure and self-contained: verify any game with nothing else.
//!
//! * [`games`]: the rules engines of international draughts (10x10), Brazilian draughts (8x8) with its
//!   Medieval mode, Ludo and two-player Belote, as `spec/rules.md` states them. No I/O; every engine
//!   answers what is legal, applies what was played and says why a move is refused.
//! * [`fairness`]: the randomness protocol of `spec/fairness.md`: seed commitments, HMAC-SHA256
//!   streams, and the derivation of every die, shuffle, duel and automatic selection.
//!
//! The crate depends on nothing but hashing (`sha2`, `hmac`) and `thiserror`, so that anyone can
//! use it to check a finished game.
//!
//! ```
//! use vigie_rules::fairness::{commitment, die};
//! use vigie_rules::games::draughts::{Position, Variant, perft};
//!
//! let seed = "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7";
//! assert_eq!(commitment(seed).len(), 64);
//! assert!((1..=6).contains(&die(seed, "g1", 0)));
//! assert_eq!(perft(&Position::new(Variant::Brazilian), 1), 7);
//! ```

pub mod fairness;
pub mod games;

/// The version of these rules engines, named by every re-judgement of history.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
