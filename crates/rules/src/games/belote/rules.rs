//! Pure card-play rules: legal cards, the classifier of a played card, and
//! trick winners.

use super::cards::{Card, Suit};
use super::error::BeloteError;

/// The cards of `hand` that may be played, in canonical order, given the card
/// led (`None` when leading) and the trump:
/// - leading: any card;
/// - holding the suit led: that suit, and if it is trump, only trumps that
///   beat the one led when any does;
/// - else holding a trump: only trumps;
/// - else any card.
pub fn legal_cards(hand: &[Card], led: Option<Card>, trump: Suit) -> Vec<Card> {
    let mut legal: Vec<Card> = hand
        .iter()
        .copied()
        .filter(|&c| classify_card(hand, led, trump, c).is_ok())
        .collect();
    legal.sort_unstable();
    legal
}

/// Why `card` may not be played from `hand` (`CardNotInHand`,
/// `DidNotFollowSuit`, `DidNotBeatTrump`, `DidNotTrump`), or `Ok`.
pub fn classify_card(
    hand: &[Card],
    led: Option<Card>,
    trump: Suit,
    card: Card,
) -> Result<(), BeloteError> {
    if !hand.contains(&card) {
        return Err(BeloteError::CardNotInHand(card));
    }
    let Some(led) = led else {
        return Ok(());
    };
    let holds = |pred: &dyn Fn(&Card) -> bool| hand.iter().any(pred);
    if holds(&|c| c.suit == led.suit) {
        if card.suit != led.suit {
            return Err(BeloteError::DidNotFollowSuit {
                led: led.suit,
                card,
            });
        }
        if led.suit == trump
            && !card.beats(led, led.suit, trump)
            && holds(&|c| c.suit == trump && c.beats(led, led.suit, trump))
        {
            return Err(BeloteError::DidNotBeatTrump { led, card });
        }
        return Ok(());
    }
    if card.suit != trump && holds(&|c| c.suit == trump) {
        return Err(BeloteError::DidNotTrump { card });
    }
    Ok(())
}

/// The index (0 or 1) of the card that wins a two-card trick: the highest
/// trump, else the highest card of the suit led (the first card).
pub fn trick_winner(lead: Card, answer: Card, trump: Suit) -> usize {
    usize::from(answer.beats(lead, lead.suit, trump))
}
