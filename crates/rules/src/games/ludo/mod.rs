//! Ludo (rules.md "Ludo"): variants, seats and the turn state machine used by
//! the log replayer and the simulator.
//!
//! Players are numbered by their place in the `players` list of
//! `game_started` (0 = first listed, who plays first).

mod error;
mod game;
mod player;
#[cfg(test)]
mod tests;
mod variant;

pub use error::{LudoError, SeatsError, VariantError};
pub use game::{
    Capture, EndReason, Expected, Game, LeaveOutcome, MoveOutcome, PassOutcome, Player,
    PlayerStatus, RollOutcome, TimeoutOutcome, TokenPos,
};
pub use variant::{
    FINISHED, HOME_START, LAST_TRACK, MAX_TOKENS, SAFE_SQUARES, Seat, TRACK_LEN, Variant,
};
