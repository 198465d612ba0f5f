//! Pure dealing and scoring rules: who deals, which cards go where, and what
//! a finished deal scores.

use super::cards::Card;

/// A player: 0 for the first listed (`p1`), 1 for the second (`p2`).
pub type Player = usize;

/// Number of players.
pub const PLAYERS: usize = 2;
/// Card points in a deal: 152 in the cards plus 10 for the last trick.
pub const DEAL_POINTS: u32 = 162;
/// What a capot side scores instead of 162.
pub const CAPOT_POINTS: u32 = 252;
/// The last trick's bonus.
pub const LAST_TRICK_BONUS: u32 = 10;
/// The belote bonus (trump K and Q both announced).
pub const BELOTE_BONUS: u32 = 20;
/// Tricks in a deal.
pub const TRICKS: u8 = 16;

/// The other player (players are 0 and 1; taken mod 2).
pub fn other(p: Player) -> Player {
    1 - (p % 2)
}

/// The dealer of deal `deal`: the second listed player (1) deals deal 0, then
/// the dealer alternates every deal, voided deals included.
pub fn dealer_of(deal: u32) -> Player {
    if deal.is_multiple_of(2) { 1 } else { 0 }
}

/// The first hand (non-dealer) of deal `deal`.
pub fn first_hand_of(deal: u32) -> Player {
    other(dealer_of(deal))
}

/// The first six cards of each player (indexed by player) and the turned card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialDeal {
    /// Six cards each, indexed by player, in the order dealt.
    pub hands: [Vec<Card>; PLAYERS],
    /// The 13th card, turned up.
    pub turned: Card,
}

/// Deals from the top of `deck`: 3 to first hand, 3 to the dealer, 3 to first
/// hand, 3 to the dealer; the 13th card is turned up. `dealer` is taken mod 2.
pub fn initial_deal(deck: &[Card; 32], dealer: Player) -> InitialDeal {
    let dealer = dealer % 2;
    let first = other(dealer);
    let mut hands: [Vec<Card>; PLAYERS] = [Vec::with_capacity(16), Vec::with_capacity(16)];
    hands[first].extend_from_slice(&deck[0..3]);
    hands[dealer].extend_from_slice(&deck[3..6]);
    hands[first].extend_from_slice(&deck[6..9]);
    hands[dealer].extend_from_slice(&deck[9..12]);
    InitialDeal {
        hands,
        turned: deck[12],
    }
}

/// The cards each player receives to complete their hand, continuing down the
/// deck after the turned card: first hand then dealer receive 3 each, except
/// that the taker receives the turned card plus 2; then first hand 7 and the
/// dealer 7. Indexed by player, in the order received.
pub fn completion_cards(deck: &[Card; 32], dealer: Player, taker: Player) -> [Vec<Card>; PLAYERS] {
    let dealer = dealer % 2;
    let taker = taker % 2;
    let first = other(dealer);
    let turned = deck[12];
    let mut add: [Vec<Card>; PLAYERS] = [Vec::with_capacity(10), Vec::with_capacity(10)];
    let mut next = 13;
    for p in [first, dealer] {
        if p == taker {
            add[p].push(turned);
            add[p].extend_from_slice(&deck[next..next + 2]);
            next += 2;
        } else {
            add[p].extend_from_slice(&deck[next..next + 3]);
            next += 3;
        }
    }
    add[first].extend_from_slice(&deck[next..next + 7]);
    next += 7;
    add[dealer].extend_from_slice(&deck[next..next + 7]);
    add
}

/// The 16-card hands after completion (initial six, then the cards received
/// in order), indexed by player.
pub fn completed_hands(deck: &[Card; 32], dealer: Player, taker: Player) -> [Vec<Card>; PLAYERS] {
    let InitialDeal { mut hands, .. } = initial_deal(deck, dealer);
    let add = completion_cards(deck, dealer, taker);
    for (h, a) in hands.iter_mut().zip(add) {
        h.extend(a);
    }
    hands
}

/// How a deal ended (the `outcome` of `deal_ended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The taker's total exceeded the defender's.
    Made,
    /// The taker's total was below the defender's.
    Dedans,
    /// Equal totals.
    Litige,
    /// One side took all 16 tricks.
    Capot,
    /// Two passes in round 2.
    Void,
}

impl Outcome {
    /// The name used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Made => "made",
            Outcome::Dedans => "dedans",
            Outcome::Litige => "litige",
            Outcome::Capot => "capot",
            Outcome::Void => "void",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a played deal scores, before any held-over points are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DealScore {
    /// The outcome (never `Void`).
    pub outcome: Outcome,
    /// Points scored by each player in this deal (without released
    /// held-over points).
    pub points: [u32; PLAYERS],
    /// Points put on hold by a litige (the taker's cards and last trick).
    pub held_over: u32,
    /// Who wins the deal and so receives the points held over from earlier
    /// litiges: the taker if made, the defender if dedans, the capot side on
    /// capot, nobody on a litige.
    pub deal_winner: Option<Player>,
}

/// Scores a played deal.
///
/// `card_points` are each player's card points including the 10 for the last
/// trick (they add up to 162), `tricks` the tricks taken, `belote` whether the
/// player announced both belote and rebelote. A player's total is card points
/// plus 20 for a belote.
///
/// - Capot (one player took all 16 tricks, whether taker or defender): the
///   capot side scores 252 plus their belote; the other side scores only their
///   belote (the bonus always stays with its holder). The contract question
///   does not arise: a taker capot is made, a taker capot'd is dedans, and the
///   outcome is logged `capot` either way.
/// - Made (taker total > defender total): each scores their total.
/// - Dedans (taker total < defender total): the defender scores 162 plus their
///   belote, the taker only their belote.
/// - Litige (equal totals): the defender scores their total, the taker only
///   their belote; the taker's card points (with the last trick) are held over.
pub fn score_deal(
    taker: Player,
    card_points: [u32; PLAYERS],
    tricks: [u8; PLAYERS],
    belote: [bool; PLAYERS],
) -> DealScore {
    let taker = taker % 2;
    let defender = other(taker);
    let bonus = belote.map(|b| if b { BELOTE_BONUS } else { 0 });
    if let Some(capot) = (0..PLAYERS).find(|&p| tricks[p] == TRICKS) {
        let mut points = bonus;
        points[capot] += CAPOT_POINTS;
        return DealScore {
            outcome: Outcome::Capot,
            points,
            held_over: 0,
            deal_winner: Some(capot),
        };
    }
    let total = [card_points[0] + bonus[0], card_points[1] + bonus[1]];
    let mut points = [0; PLAYERS];
    let (outcome, held_over, deal_winner) = if total[taker] > total[defender] {
        points = total;
        (Outcome::Made, 0, Some(taker))
    } else if total[taker] < total[defender] {
        points[defender] = DEAL_POINTS + bonus[defender];
        points[taker] = bonus[taker];
        (Outcome::Dedans, 0, Some(defender))
    } else {
        points[defender] = total[defender];
        points[taker] = bonus[taker];
        (Outcome::Litige, card_points[taker], None)
    };
    DealScore {
        outcome,
        points,
        held_over,
        deal_winner,
    }
}
