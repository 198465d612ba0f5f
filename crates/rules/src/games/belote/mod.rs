//! Belote for two players (rules.md "Belote"): cards, dealing, legal play,
//! scoring and the match state machine.
//!
//! Players are 0 (first listed, `p1`) and 1 (second listed, `p2`, who deals
//! deal 0).

mod actions;
mod cards;
mod deal;
mod error;
mod game;
mod rules;
#[cfg(test)]
mod tests;

pub use cards::{Card, CardError, Rank, Suit, canonical_deck, check_deck, deck_from_indices};
pub use deal::{
    BELOTE_BONUS, CAPOT_POINTS, DEAL_POINTS, DealScore, InitialDeal, LAST_TRICK_BONUS, Outcome,
    PLAYERS, Player, TRICKS, completed_hands, completion_cards, dealer_of, first_hand_of,
    initial_deal, other, score_deal,
};
pub use error::{AnnounceProblem, BeloteError, BidProblem, DealProblem, ParseError};
pub use game::{
    Announce, Bid, BidOutcome, DealEnd, DealStart, Expected, Match, MatchConfig, MatchEnd,
    PlayOutcome, TimeoutOutcome, TrickResult,
};
pub use rules::{classify_card, legal_cards, trick_winner};
