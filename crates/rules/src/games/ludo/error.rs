//! Typed errors of the Ludo engine: invalid settings and rejected actions.

use super::player::Player;

/// Variant settings the engine cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    /// `players` is neither 2 nor 4.
    #[error("{0} players: a Ludo game has 2 or 4")]
    Players(u8),
    /// `tokens` is 0 or above 16.
    #[error("{0} tokens per player: expected 1 to 16")]
    Tokens(u8),
    /// `exit_on` lists no value.
    #[error("exit_on is empty: no token could ever leave the yard")]
    EmptyExitOn,
    /// `exit_on` lists a value that is not a die face.
    #[error("exit_on lists {0}, not a die value 1-6")]
    ExitValue(u8),
    /// `max_timeouts` is 0.
    #[error("max_timeouts is 0")]
    MaxTimeouts,
    /// A seat name other than red, green, yellow, blue.
    #[error("unknown seat {0:?}")]
    UnknownSeat(String),
}

/// Seats that do not fit the variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatsError {
    /// Not as many seats as the variant has players.
    #[error("{got} players listed, the variant has {expected}")]
    Count {
        /// The variant's `players`.
        expected: u8,
        /// Seats given.
        got: usize,
    },
    /// A seat listed twice.
    #[error("seat {0} listed twice")]
    Duplicate(super::Seat),
    /// A two-player game not on red and yellow.
    #[error("two-player games use red and yellow, not {0}")]
    TwoPlayerSeat(super::Seat),
}

/// Why an action is rejected (the attempt classifier's causes) or a game
/// cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LudoError {
    /// Invalid variant settings.
    #[error("invalid variant: {0}")]
    Variant(#[from] VariantError),
    /// Seats that do not fit the variant.
    #[error("invalid seats: {0}")]
    Seats(#[from] SeatsError),
    /// The game is over: nothing more is accepted.
    #[error("the game is over")]
    GameOver,
    /// No such player in this game.
    #[error("no player {0} in this game")]
    UnknownPlayer(Player),
    /// The player has forfeited or left.
    #[error("player {0} is no longer in the game")]
    PlayerOut(Player),
    /// Another player is expected to act.
    #[error("player {player} acted, player {expected} is expected")]
    NotYourTurn {
        /// Who acted.
        player: Player,
        /// Who is expected.
        expected: Player,
    },
    /// A move or pass while the player must first roll.
    #[error("player {0} must roll first")]
    ExpectedRoll(Player),
    /// A roll while the player must move (or pass) with the last roll.
    #[error("player {0} must move with the last roll before rolling again")]
    ExpectedMove(Player),
    /// A roll value outside 1-6.
    #[error("die value {0} is not 1-6")]
    InvalidDieValue(u8),
    /// The token index is out of range (`token >= tokens`).
    #[error("no token {token}: the player has {tokens}")]
    NoSuchToken {
        /// The index tried.
        token: u8,
        /// Tokens per player.
        tokens: u8,
    },
    /// The token has already finished (p = 56): it can no longer move.
    #[error("token {0} has already finished")]
    TokenFinished(u8),
    /// The token is in the yard and the die value is not in `exit_on`.
    #[error("token {token} is in the yard and {value} does not let it out")]
    NotAllowedOutOfYard {
        /// The token.
        token: u8,
        /// The die value.
        value: u8,
    },
    /// The move would overshoot 56 (finishing needs the exact roll).
    #[error("token {token} at {from} cannot move {value}: past the finish (56)")]
    WrongDistance {
        /// The token.
        token: u8,
        /// Its progress.
        from: u8,
        /// The die value.
        value: u8,
    },
    /// A pass while some token can move.
    #[error("pass while tokens {legal:?} can move")]
    PassWhileMovable {
        /// The tokens that could move.
        legal: Vec<u8>,
    },
}
