//! Typed errors of the Belote engine: rejected bids, plays and deals.

use super::actions::{Announce, Bid, Expected};
use super::cards::{Card, CardError, Suit};
use super::deal::Player;

pub use super::actions::ParseError;

/// Why a bid is invalid in its round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BidProblem {
    /// Naming a suit in round 1 (only take or pass).
    SuitInRound1,
    /// `take` in round 2 (name a suit or pass).
    TakeInRound2,
    /// Naming the turned card's suit in round 2.
    TurnedSuitInRound2,
}

/// Why an announcement is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnnounceProblem {
    /// The card is not the trump king or queen.
    NotTrumpKingOrQueen,
    /// The player was not dealt both the trump king and queen.
    NotHolder,
    /// `belote` must go with the first of the two, `rebelote` with the second.
    WrongWord,
}

/// Why the hands or cards given for a deal do not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DealProblem {
    /// A hand does not have the expected number of cards.
    HandSize {
        /// The player.
        player: Player,
        /// Expected count.
        expected: usize,
        /// Given count.
        got: usize,
    },
    /// A card appears twice (across hands and the turned card).
    Duplicate(Card),
    /// A completed hand lacks a card the player already held.
    MissingCard {
        /// The player.
        player: Player,
        /// The card.
        card: Card,
    },
    /// The taker's completed hand lacks the turned card.
    TurnedNotWithTaker,
}

/// Why an action is rejected (the attempt classifier's causes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeloteError {
    /// The match is over.
    #[error("the match is over")]
    MatchOver,
    /// No such player (players are 0 and 1).
    #[error("no player {0}: players are 0 and 1")]
    UnknownPlayer(Player),
    /// The action does not fit the phase (e.g. a bid while cards are played).
    #[error("wrong action now: expected {expected:?}")]
    WrongPhase {
        /// What is expected.
        expected: Expected,
    },
    /// The other player is expected to act.
    #[error("player {player} acted, player {expected} is expected")]
    NotYourTurn {
        /// Who acted.
        player: Player,
        /// Who is expected.
        expected: Player,
    },
    /// A bid that is not allowed in this round.
    #[error("invalid bid {bid:?} in round {round}: {problem:?}")]
    InvalidBid {
        /// The bid.
        bid: Bid,
        /// The round (1 or 2).
        round: u8,
        /// Why.
        problem: BidProblem,
    },
    /// The card is not in the player's hand.
    #[error("{0} is not in the player's hand")]
    CardNotInHand(Card),
    /// The player holds the suit led but played another suit.
    #[error("{card} played while holding the suit led ({led})")]
    DidNotFollowSuit {
        /// The suit led.
        led: Suit,
        /// The card played.
        card: Card,
    },
    /// Trump was led and the player could beat it but played a lower trump.
    #[error("{card} does not beat the trump led ({led}) though a higher trump is held")]
    DidNotBeatTrump {
        /// The trump led.
        led: Card,
        /// The card played.
        card: Card,
    },
    /// The player could not follow, held a trump, but played something else.
    #[error("{card} played while unable to follow and holding a trump")]
    DidNotTrump {
        /// The card played.
        card: Card,
    },
    /// An announcement that does not fit the card or the player.
    #[error("announce {announce:?} with {card}: {problem:?}")]
    InvalidAnnounce {
        /// The card.
        card: Card,
        /// The announcement.
        announce: Announce,
        /// Why.
        problem: AnnounceProblem,
    },
    /// A deck or card problem.
    #[error("bad deck: {0}")]
    Deck(#[from] CardError),
    /// Hands given for a deal or its completion that do not fit.
    #[error("bad deal: {0:?}")]
    Deal(DealProblem),
    /// A match target of 0.
    #[error("target must be positive")]
    Target,
}
