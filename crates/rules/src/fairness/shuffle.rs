//! Belote shuffles: Fisher-Yates over the canonical deck with `GAME:deal:d`.

use super::stream::Stream;

/// Number of cards in the Belote deck.
pub const DECK_SIZE: usize = 32;

/// The shuffled deck of deal `deal` (0 for the match's first deal, voided
/// deals counted) of match `game`, as canonical deck indices, top card first.
///
/// Index `i` is the card at position `i` of the canonical order
/// `7S 8S 9S TS JS QS KS AS 7H ... AH 7D ... AD 7C ... AC` (suit `i / 8` in
/// S H D C, rank `i % 8` in 7 8 9 T J Q K A). Fisher-Yates: for `i` from 31
/// down to 1, `j = below(i + 1)` from the stream `GAME:deal:d`, swap `i`, `j`.
pub fn shuffle(seed_hex: &str, game: &str, deal: u32) -> [u8; DECK_SIZE] {
    let mut deck: [u8; DECK_SIZE] = std::array::from_fn(|i| i as u8);
    let mut stream = Stream::new(seed_hex, format!("{game}:deal:{deal}"));
    for i in (1..DECK_SIZE).rev() {
        // i + 1 >= 2, so `below` always yields a value.
        let j = stream.below(i as u32 + 1).unwrap_or(0) as usize;
        deck.swap(i, j);
    }
    deck
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_is_a_permutation() {
        for d in 0..20 {
            let mut deck = shuffle("ab", "m", d);
            deck.sort_unstable();
            let canonical: [u8; DECK_SIZE] = std::array::from_fn(|i| i as u8);
            assert_eq!(deck, canonical);
        }
    }

    #[test]
    fn deals_differ() {
        assert_ne!(shuffle("ab", "m", 0), shuffle("ab", "m", 1));
        assert_ne!(shuffle("ab", "m", 0), shuffle("ab", "n", 0));
    }
}
