//! Cards, suits and ranks: text form (`7S`, `TD`, `AH`), canonical order,
//! trick order and points.

/// Why a card, suit or deck is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    /// The text is not exactly two characters.
    #[error("card {0:?} is not two characters (rank then suit)")]
    Length(String),
    /// Unknown rank character.
    #[error("unknown rank {0:?}: expected one of 7 8 9 T J Q K A")]
    Rank(char),
    /// Unknown suit character.
    #[error("unknown suit {0:?}: expected one of S H D C")]
    Suit(char),
    /// Unknown suit text (for a bid or a trump).
    #[error("unknown suit {0:?}: expected S, H, D or C")]
    SuitText(String),
    /// A canonical index outside 0..32.
    #[error("card index {0} is outside 0..32")]
    Index(u8),
    /// A deck that is not 32 distinct cards.
    #[error("deck is not a permutation of the 32 cards: {0} repeated")]
    DuplicateInDeck(Card),
}

/// A suit, in canonical order S H D C.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Suit {
    /// S
    Spades,
    /// H
    Hearts,
    /// D
    Diamonds,
    /// C
    Clubs,
}

impl Suit {
    /// The four suits in canonical order.
    pub const ALL: [Suit; 4] = [Suit::Spades, Suit::Hearts, Suit::Diamonds, Suit::Clubs];

    /// Position in the canonical order (0-3).
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The letter used in logs.
    pub fn letter(self) -> char {
        match self {
            Suit::Spades => 'S',
            Suit::Hearts => 'H',
            Suit::Diamonds => 'D',
            Suit::Clubs => 'C',
        }
    }

    /// The suit of a letter.
    pub fn from_letter(c: char) -> Result<Suit, CardError> {
        match c {
            'S' => Ok(Suit::Spades),
            'H' => Ok(Suit::Hearts),
            'D' => Ok(Suit::Diamonds),
            'C' => Ok(Suit::Clubs),
            other => Err(CardError::Suit(other)),
        }
    }
}

impl std::fmt::Display for Suit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.letter())
    }
}

impl std::str::FromStr for Suit {
    type Err = CardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Suit::from_letter(c).map_err(|_| CardError::SuitText(s.to_owned())),
            _ => Err(CardError::SuitText(s.to_owned())),
        }
    }
}

/// A rank, in canonical order 7 8 9 T J Q K A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rank {
    /// 7
    Seven,
    /// 8
    Eight,
    /// 9
    Nine,
    /// T
    Ten,
    /// J
    Jack,
    /// Q
    Queen,
    /// K
    King,
    /// A
    Ace,
}

impl Rank {
    /// The eight ranks in canonical order.
    pub const ALL: [Rank; 8] = [
        Rank::Seven,
        Rank::Eight,
        Rank::Nine,
        Rank::Ten,
        Rank::Jack,
        Rank::Queen,
        Rank::King,
        Rank::Ace,
    ];

    /// Position in the canonical order (0-7).
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The character used in logs.
    pub fn letter(self) -> char {
        match self {
            Rank::Seven => '7',
            Rank::Eight => '8',
            Rank::Nine => '9',
            Rank::Ten => 'T',
            Rank::Jack => 'J',
            Rank::Queen => 'Q',
            Rank::King => 'K',
            Rank::Ace => 'A',
        }
    }

    /// The rank of a character.
    pub fn from_letter(c: char) -> Result<Rank, CardError> {
        Rank::ALL
            .into_iter()
            .find(|r| r.letter() == c)
            .ok_or(CardError::Rank(c))
    }

    /// Strength within the trump suit: J 9 A T K Q 8 7 (higher wins).
    pub fn trump_order(self) -> u8 {
        match self {
            Rank::Seven => 0,
            Rank::Eight => 1,
            Rank::Queen => 2,
            Rank::King => 3,
            Rank::Ten => 4,
            Rank::Ace => 5,
            Rank::Nine => 6,
            Rank::Jack => 7,
        }
    }

    /// Strength in a suit that is not trump: A T K Q J 9 8 7.
    pub fn plain_order(self) -> u8 {
        match self {
            Rank::Seven => 0,
            Rank::Eight => 1,
            Rank::Nine => 2,
            Rank::Jack => 3,
            Rank::Queen => 4,
            Rank::King => 5,
            Rank::Ten => 6,
            Rank::Ace => 7,
        }
    }

    /// Points as a trump: J 20, 9 14, A 11, T 10, K 4, Q 3, 8 and 7 0.
    pub fn trump_points(self) -> u32 {
        match self {
            Rank::Jack => 20,
            Rank::Nine => 14,
            Rank::Ace => 11,
            Rank::Ten => 10,
            Rank::King => 4,
            Rank::Queen => 3,
            Rank::Eight | Rank::Seven => 0,
        }
    }

    /// Points outside trump: A 11, T 10, K 4, Q 3, J 2, 9 8 7 0.
    pub fn plain_points(self) -> u32 {
        match self {
            Rank::Ace => 11,
            Rank::Ten => 10,
            Rank::King => 4,
            Rank::Queen => 3,
            Rank::Jack => 2,
            Rank::Nine | Rank::Eight | Rank::Seven => 0,
        }
    }
}

impl std::fmt::Display for Rank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// A card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Card {
    /// Its suit (compared first: canonical order is suit-major).
    pub suit: Suit,
    /// Its rank.
    pub rank: Rank,
}

impl Card {
    /// A card.
    pub const fn new(rank: Rank, suit: Suit) -> Card {
        Card { suit, rank }
    }

    /// Canonical deck index: `suit * 8 + rank` (0 = 7S, 7 = AS, 8 = 7H, 31 = AC).
    pub fn index(self) -> u8 {
        self.suit.index() * 8 + self.rank.index()
    }

    /// The card of a canonical deck index.
    pub fn from_index(index: u8) -> Result<Card, CardError> {
        if index >= 32 {
            return Err(CardError::Index(index));
        }
        Ok(Card {
            suit: Suit::ALL[usize::from(index / 8)],
            rank: Rank::ALL[usize::from(index % 8)],
        })
    }

    /// Points of the card with this trump.
    pub fn points(self, trump: Suit) -> u32 {
        if self.suit == trump {
            self.rank.trump_points()
        } else {
            self.rank.plain_points()
        }
    }

    /// Whether this card beats `other` in a trick led with suit `led` under
    /// `trump` (`other` being the card currently winning).
    pub fn beats(self, other: Card, led: Suit, trump: Suit) -> bool {
        match (self.suit == trump, other.suit == trump) {
            (true, true) => self.rank.trump_order() > other.rank.trump_order(),
            (true, false) => true,
            (false, true) => false,
            (false, false) => {
                self.suit == led
                    && (other.suit != led || self.rank.plain_order() > other.rank.plain_order())
            }
        }
    }
}

impl std::fmt::Display for Card {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.rank.letter(), self.suit.letter())
    }
}

impl std::str::FromStr for Card {
    type Err = CardError;

    /// Parses rank then suit, upper case only: `7S`, `TD`, `AH`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some(r), Some(su), None) => Ok(Card {
                rank: Rank::from_letter(r)?,
                suit: Suit::from_letter(su)?,
            }),
            _ => Err(CardError::Length(s.to_owned())),
        }
    }
}

/// The 32 cards in canonical order `7S 8S ... AS 7H ... AC`.
pub fn canonical_deck() -> [Card; 32] {
    std::array::from_fn(|i| Card {
        suit: Suit::ALL[i / 8],
        rank: Rank::ALL[i % 8],
    })
}

/// A deck from canonical indices (as returned by `fairness::shuffle`), top
/// card first; errors on an index out of range or a repeated card.
pub fn deck_from_indices(indices: &[u8; 32]) -> Result<[Card; 32], CardError> {
    let mut deck = [Card::new(Rank::Seven, Suit::Spades); 32];
    for (slot, &i) in deck.iter_mut().zip(indices) {
        *slot = Card::from_index(i)?;
    }
    check_deck(&deck)?;
    Ok(deck)
}

/// Checks that a deck holds the 32 cards once each.
pub fn check_deck(deck: &[Card; 32]) -> Result<(), CardError> {
    let mut seen = [false; 32];
    for c in deck {
        let i = usize::from(c.index());
        if seen[i] {
            return Err(CardError::DuplicateInDeck(*c));
        }
        seen[i] = true;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trip_and_canonical_order() {
        let deck = canonical_deck();
        for (i, c) in deck.iter().enumerate() {
            assert_eq!(usize::from(c.index()), i);
            assert_eq!(Card::from_index(i as u8), Ok(*c));
        }
        assert_eq!(deck[0].to_string(), "7S");
        assert_eq!(deck[7].to_string(), "AS");
        assert_eq!(deck[8].to_string(), "7H");
        assert_eq!(deck[31].to_string(), "AC");
        assert_eq!(Card::from_index(32), Err(CardError::Index(32)));
        let mut sorted = deck;
        sorted.reverse();
        sorted.sort();
        assert_eq!(sorted, deck, "Ord is the canonical order");
    }

    #[test]
    fn parse_and_print() {
        for c in canonical_deck() {
            assert_eq!(c.to_string().parse::<Card>(), Ok(c));
        }
        assert_eq!(
            "TD".parse::<Card>(),
            Ok(Card::new(Rank::Ten, Suit::Diamonds))
        );
        assert_eq!("1S".parse::<Card>(), Err(CardError::Rank('1')));
        assert_eq!("AX".parse::<Card>(), Err(CardError::Suit('X')));
        assert_eq!("as".parse::<Card>(), Err(CardError::Rank('a')));
        assert_eq!("10H".parse::<Card>(), Err(CardError::Length("10H".into())));
        assert_eq!("".parse::<Card>(), Err(CardError::Length(String::new())));
        assert_eq!("H".parse::<Suit>(), Ok(Suit::Hearts));
        assert!("HH".parse::<Suit>().is_err());
    }

    #[test]
    fn rule_trump_order_and_points() {
        let order: Vec<char> = {
            let mut r = Rank::ALL.to_vec();
            r.sort_by_key(|r| std::cmp::Reverse(r.trump_order()));
            r.iter().map(|r| r.letter()).collect()
        };
        assert_eq!(order, ['J', '9', 'A', 'T', 'K', 'Q', '8', '7']);
        let pts: Vec<u32> = "J9ATKQ87"
            .chars()
            .map(|c| Rank::from_letter(c).map(Rank::trump_points).unwrap_or(99))
            .collect();
        assert_eq!(pts, [20, 14, 11, 10, 4, 3, 0, 0]);
    }

    #[test]
    fn rule_plain_order_and_points() {
        let order: Vec<char> = {
            let mut r = Rank::ALL.to_vec();
            r.sort_by_key(|r| std::cmp::Reverse(r.plain_order()));
            r.iter().map(|r| r.letter()).collect()
        };
        assert_eq!(order, ['A', 'T', 'K', 'Q', 'J', '9', '8', '7']);
        let pts: Vec<u32> = "ATKQJ987"
            .chars()
            .map(|c| Rank::from_letter(c).map(Rank::plain_points).unwrap_or(99))
            .collect();
        assert_eq!(pts, [11, 10, 4, 3, 2, 0, 0, 0]);
    }

    #[test]
    fn rule_total_card_points_152_plus_last_trick_162() {
        for trump in Suit::ALL {
            let total: u32 = canonical_deck().iter().map(|c| c.points(trump)).sum();
            assert_eq!(total + 10, 162);
        }
    }

    #[test]
    fn deck_from_indices_checks_permutation() {
        let idx: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(deck_from_indices(&idx), Ok(canonical_deck()));
        let mut bad = idx;
        bad[3] = 4;
        assert!(matches!(
            deck_from_indices(&bad),
            Err(CardError::DuplicateInDeck(_))
        ));
        bad[3] = 40;
        assert_eq!(deck_from_indices(&bad), Err(CardError::Index(40)));
    }
}
