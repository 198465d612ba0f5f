//! What players and the match do: bids, announcements, what the match expects next, and the text they are parsed from.

use super::cards::Suit;
use super::deal::Player;

/// Text that is not a bid or an announcement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Not `take`, `pass` or a suit letter.
    #[error("unknown bid {0:?}: expected take, pass, S, H, D or C")]
    Bid(String),
    /// Not `belote` or `rebelote`.
    #[error("unknown announce {0:?}: expected belote or rebelote")]
    Announce(String),
}

/// A bid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bid {
    /// Round 1: take the turned card's suit as trump.
    Take,
    /// Pass.
    Pass,
    /// Round 2: name another suit as trump.
    Name(Suit),
}

impl std::str::FromStr for Bid {
    type Err = ParseError;

    /// `take`, `pass`, or a suit letter `S`, `H`, `D`, `C` (as in logs).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "take" => Ok(Bid::Take),
            "pass" => Ok(Bid::Pass),
            other => other
                .parse()
                .map(Bid::Name)
                .map_err(|_| ParseError::Bid(other.to_owned())),
        }
    }
}

impl std::fmt::Display for Bid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bid::Take => f.write_str("take"),
            Bid::Pass => f.write_str("pass"),
            Bid::Name(s) => write!(f, "{s}"),
        }
    }
}

/// An announcement made with a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Announce {
    /// With the first of the trump king and queen played.
    Belote,
    /// With the second.
    Rebelote,
}

impl std::str::FromStr for Announce {
    type Err = ParseError;

    /// `belote` or `rebelote` (as in logs).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "belote" => Ok(Announce::Belote),
            "rebelote" => Ok(Announce::Rebelote),
            other => Err(ParseError::Announce(other.to_owned())),
        }
    }
}

impl Announce {
    /// The word used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Announce::Belote => "belote",
            Announce::Rebelote => "rebelote",
        }
    }
}

/// What the match expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expected {
    /// The next deal.
    Deal {
        /// Its number.
        deal: u32,
        /// Its dealer.
        dealer: Player,
    },
    /// A bid.
    Bid {
        /// Who bids.
        player: Player,
        /// Round 1 or 2.
        round: u8,
    },
    /// The completed hands (after [`super::Match::deal_visible`] and a take).
    CompleteHands {
        /// The taker.
        taker: Player,
    },
    /// A card.
    Play {
        /// Who plays.
        player: Player,
    },
    /// The match is over.
    Nothing,
}
