//! Fairness protocol v1 (`shared/spec/fairness.md`): seed commitments, HMAC
//! blocks and streams, Ludo dice, Belote shuffles, Medieval duels and automatic
//! selection. The randomness tests over many games are the report's (`vigie::report::stats`).
//!
//! Every derivation takes the seed as the 64-character hex string exactly as
//! logged: the HMAC key is its ASCII bytes. The derivations accept any string
//! (they are defined for any key); whether the seed is well formed is a
//! separate check, [`check_seed`]. This module depends on nothing else in the
//! crate: shuffles are returned as canonical deck indices (see [`shuffle`]).

mod dice;
mod duel;
mod seed;
mod select;
mod shuffle;
mod stream;

pub use dice::{Dice, die};
pub use duel::duel;
pub use seed::{SeedError, check_seed, commitment, verify_commitment};
pub use select::{MEDIEVAL_PIECES, SelectColor, SelectColorError, auto_select, auto_select_draws};
pub use shuffle::{DECK_SIZE, shuffle};
pub use stream::{Stream, block};
