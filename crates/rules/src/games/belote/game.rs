//! The Belote match state machine (two players).
//!
//! A match is a series of deals. For each deal the engine expects, in order:
//! the deal ([`Match::deal`] with the shuffled deck, or [`Match::deal_visible`]
//! with the six-card hands and turned card when the deck is not known yet),
//! bids, then (only after `deal_visible`) the completed hands
//! ([`Match::complete_hands`]), then 32 plays. [`Match::expected`] tells what
//! comes next.
//!
//! ## Timeouts
//! Each player has a match-wide counter of consecutive timeouts. A timeout
//! increments it; the `max_timeouts`-th (3) in a row loses the match and is
//! not followed by an automatic action. Otherwise the server passes (bidding)
//! or plays the first legal card in canonical deck order without any
//! announcement. The counter is reset by an accepted bid or play of the
//! player's own (not one the server made for them).
//!
//! ## Held-over points (litige)
//! A litige puts the taker's card points (with the last trick) on hold; they
//! are added to the points of the winner of the next deal that is neither void
//! nor litige (they appear in that deal's `points`, see
//! [`DealEnd::released`]); consecutive litiges add up; they are lost if the
//! match ends first.

pub use super::actions::{Announce, Bid, Expected};
use super::cards::{Card, Suit, check_deck};
use super::deal::{
    DealScore, LAST_TRICK_BONUS, Outcome, PLAYERS, Player, TRICKS, completion_cards, dealer_of,
    initial_deal, other, score_deal,
};
use super::error::{AnnounceProblem, BeloteError, BidProblem, DealProblem};
use super::rules::{classify_card, legal_cards};

/// Match settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchConfig {
    /// Points to reach (`variant.target`, default 501).
    pub target: u32,
    /// Consecutive timeouts that lose the match (`clock.max_timeouts`, 3).
    pub max_timeouts: u32,
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            target: 501,
            max_timeouts: 3,
        }
    }
}

/// How a match was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchEnd {
    /// A deal ended with a player at or above the target and totals unequal.
    Target,
    /// The loser reached the maximum of consecutive timeouts.
    Timeouts,
    /// The loser left.
    Left,
}

/// A deal that has been dealt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DealStart {
    /// Deal number.
    pub deal: u32,
    /// Dealer.
    pub dealer: Player,
    /// Six cards each, indexed by player.
    pub hands: [Vec<Card>; PLAYERS],
    /// The turned card.
    pub turned: Card,
}

/// What an accepted bid leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BidOutcome {
    /// The next bid is expected.
    Next {
        /// Who bids.
        player: Player,
        /// In which round.
        round: u8,
    },
    /// A player took.
    Taken {
        /// The taker.
        taker: Player,
        /// The trump.
        trump: Suit,
        /// The completed 16-card hands if the deck is known (else
        /// [`Match::complete_hands`] is expected).
        hands: Option<[Vec<Card>; PLAYERS]>,
    },
    /// Two passes in round 2: the deal is void.
    Void(DealEnd),
}

/// A finished trick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrickResult {
    /// 1 to 16.
    pub number: u8,
    /// The two cards, leader first.
    pub cards: [(Player, Card); 2],
    /// Who won it (and leads next).
    pub winner: Player,
    /// Card points in it, plus 10 if it is the last.
    pub points: u32,
}

/// How a deal ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DealEnd {
    /// Deal number.
    pub deal: u32,
    /// The outcome.
    pub outcome: Outcome,
    /// The taker (`None` for a void deal).
    pub taker: Option<Player>,
    /// The trump (`None` for a void deal).
    pub trump: Option<Suit>,
    /// Card points with the last trick (adding up to 162; zeros if void).
    pub card_points: [u32; PLAYERS],
    /// Tricks taken.
    pub tricks: [u8; PLAYERS],
    /// Whether each player scored the belote bonus.
    pub belote: [bool; PLAYERS],
    /// Points scored by this deal (as logged in `deal_ended.points`),
    /// released held-over points included.
    pub points: [u32; PLAYERS],
    /// Match totals after the deal.
    pub totals: [u32; PLAYERS],
    /// The deal's winner (`None` for a litige or a void deal): who held-over points go to.
    pub deal_winner: Option<Player>,
    /// Held-over points released to this deal's winner (included in `points`).
    pub released: u32,
    /// Points on hold after this deal (0 once the match is over: they are
    /// lost).
    pub held_over: u32,
    /// The match winner, if this deal ended the match.
    pub match_winner: Option<Player>,
}

/// An accepted play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayOutcome {
    /// Who played.
    pub player: Player,
    /// The card.
    pub card: Card,
    /// The announcement accepted with it.
    pub announce: Option<Announce>,
    /// Whether the server played it after a timeout.
    pub auto: bool,
    /// The trick, if this card completed it.
    pub trick: Option<TrickResult>,
    /// The deal's end, if this was the last card.
    pub deal_end: Option<DealEnd>,
    /// Who plays next (`None` at the end of the deal).
    pub next: Option<Player>,
}

/// What a timeout leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutOutcome {
    /// The server passed for the player (applied).
    AutoBid(BidOutcome),
    /// The server played the first legal card in canonical order (applied).
    AutoPlay(PlayOutcome),
    /// The player reached the maximum of consecutive timeouts: match lost.
    Lost {
        /// The match winner.
        winner: Player,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct DealState {
    number: u32,
    dealer: Player,
    hands: [Vec<Card>; PLAYERS],
    turned: Card,
    /// The whole deck when known.
    deck: Option<[Card; 32]>,
    round: u8,
    to_act: Player,
    trump: Option<Suit>,
    taker: Option<Player>,
    trick: Vec<(Player, Card)>,
    played: Vec<(Player, Card)>,
    tricks_done: u8,
    tricks: [u8; PLAYERS],
    card_points: [u32; PLAYERS],
    belote_holder: Option<Player>,
    belote_cards_played: u8,
    belote_first_announced: bool,
    belote_scored: bool,
}

impl DealState {
    fn first(&self) -> Player {
        other(self.dealer)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitDeal,
    Bidding,
    Completing,
    Playing,
    Over,
}

/// A two-player Belote match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    config: MatchConfig,
    totals: [u32; PLAYERS],
    next_deal: u32,
    held: u32,
    timeouts: [u32; PLAYERS],
    winner: Option<(Player, MatchEnd)>,
    phase: Phase,
    deal: Option<DealState>,
}

impl Match {
    /// A new match.
    pub fn new(config: MatchConfig) -> Result<Match, BeloteError> {
        if config.target == 0 {
            return Err(BeloteError::Target);
        }
        Ok(Match {
            config,
            totals: [0; PLAYERS],
            next_deal: 0,
            held: 0,
            timeouts: [0; PLAYERS],
            winner: None,
            phase: Phase::AwaitDeal,
            deal: None,
        })
    }

    // ----- read access -----

    /// The settings.
    pub fn config(&self) -> MatchConfig {
        self.config
    }

    /// Match totals.
    pub fn totals(&self) -> [u32; PLAYERS] {
        self.totals
    }

    /// Points held over from litiges.
    pub fn held_over(&self) -> u32 {
        self.held
    }

    /// A player's consecutive timeouts.
    pub fn timeouts(&self, player: Player) -> Option<u32> {
        self.timeouts.get(player).copied()
    }

    /// The winner and how, once the match is over.
    pub fn winner(&self) -> Option<(Player, MatchEnd)> {
        self.winner
    }

    /// Whether the match is over.
    pub fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    /// Number of the current deal (or of the next one between deals).
    pub fn deal_number(&self) -> u32 {
        match (&self.deal, self.phase) {
            (Some(d), Phase::Bidding | Phase::Completing | Phase::Playing) => d.number,
            _ => self.next_deal,
        }
    }

    /// The current deal's dealer (or the next deal's between deals).
    pub fn dealer(&self) -> Player {
        match (&self.deal, self.phase) {
            (Some(d), Phase::Bidding | Phase::Completing | Phase::Playing) => d.dealer,
            _ => dealer_of(self.next_deal),
        }
    }

    /// The current deal's first hand.
    pub fn first_hand(&self) -> Player {
        other(self.dealer())
    }

    fn live_deal(&self) -> Option<&DealState> {
        match self.phase {
            Phase::Bidding | Phase::Completing | Phase::Playing => self.deal.as_ref(),
            _ => None,
        }
    }

    /// A player's hand in the current deal (in the order received, minus
    /// played cards).
    pub fn hand(&self, player: Player) -> &[Card] {
        self.live_deal()
            .and_then(|d| d.hands.get(player))
            .map_or(&[], Vec::as_slice)
    }

    /// The turned card of the current deal.
    pub fn turned(&self) -> Option<Card> {
        self.live_deal().map(|d| d.turned)
    }

    /// The trump of the current deal, once taken.
    pub fn trump(&self) -> Option<Suit> {
        self.live_deal().and_then(|d| d.trump)
    }

    /// The taker of the current deal, once taken.
    pub fn taker(&self) -> Option<Player> {
        self.live_deal().and_then(|d| d.taker)
    }

    /// The player holding trump K and Q in the current deal, if any.
    pub fn belote_holder(&self) -> Option<Player> {
        self.live_deal().and_then(|d| d.belote_holder)
    }

    /// The cards of the trick in progress, leader first.
    pub fn current_trick(&self) -> &[(Player, Card)] {
        self.live_deal().map_or(&[], |d| d.trick.as_slice())
    }

    /// Every card played in the current deal, in order (current trick
    /// included).
    pub fn played_cards(&self) -> &[(Player, Card)] {
        self.live_deal().map_or(&[], |d| d.played.as_slice())
    }

    /// Tricks completed in the current deal.
    pub fn tricks_played(&self) -> u8 {
        self.live_deal().map_or(0, |d| d.tricks_done)
    }

    /// Tricks won so far in the current deal, per player.
    pub fn tricks_won(&self) -> [u8; PLAYERS] {
        self.live_deal().map_or([0; PLAYERS], |d| d.tricks)
    }

    /// Card points won so far in the current deal, per player (the last
    /// trick's 10 included once it is played).
    pub fn card_points(&self) -> [u32; PLAYERS] {
        self.live_deal().map_or([0; PLAYERS], |d| d.card_points)
    }

    /// The current deal's card points of `player` minus the opponent's.
    pub fn deal_points_balance(&self, player: Player) -> i64 {
        let cp = self.card_points();
        let p = player % 2;
        i64::from(cp[p]) - i64::from(cp[other(p)])
    }

    /// What the match expects next.
    pub fn expected(&self) -> Expected {
        match (self.phase, &self.deal) {
            (Phase::Over, _) => Expected::Nothing,
            (Phase::AwaitDeal, _) | (_, None) => Expected::Deal {
                deal: self.next_deal,
                dealer: dealer_of(self.next_deal),
            },
            (Phase::Bidding, Some(d)) => Expected::Bid {
                player: d.to_act,
                round: d.round,
            },
            (Phase::Completing, Some(d)) => Expected::CompleteHands {
                taker: d.taker.unwrap_or(d.to_act),
            },
            (Phase::Playing, Some(d)) => Expected::Play { player: d.to_act },
        }
    }

    /// The cards the player to act may play, in canonical order (empty
    /// outside the play phase).
    pub fn legal_cards(&self) -> Vec<Card> {
        match (self.phase, &self.deal) {
            (Phase::Playing, Some(d)) => match d.trump {
                Some(trump) => {
                    legal_cards(&d.hands[d.to_act], d.trick.first().map(|&(_, c)| c), trump)
                }
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    // ----- dealing -----

    fn check_deal_phase(&self) -> Result<(), BeloteError> {
        match self.phase {
            Phase::Over => Err(BeloteError::MatchOver),
            Phase::AwaitDeal => Ok(()),
            _ => Err(BeloteError::WrongPhase {
                expected: self.expected(),
            }),
        }
    }

    fn start_deal(
        &mut self,
        hands: [Vec<Card>; PLAYERS],
        turned: Card,
        deck: Option<[Card; 32]>,
    ) -> DealStart {
        let number = self.next_deal;
        let dealer = dealer_of(number);
        self.deal = Some(DealState {
            number,
            dealer,
            hands: hands.clone(),
            turned,
            deck,
            round: 1,
            to_act: other(dealer),
            trump: None,
            taker: None,
            trick: Vec::new(),
            played: Vec::new(),
            tricks_done: 0,
            tricks: [0; PLAYERS],
            card_points: [0; PLAYERS],
            belote_holder: None,
            belote_cards_played: 0,
            belote_first_announced: false,
            belote_scored: false,
        });
        self.phase = Phase::Bidding;
        DealStart {
            deal: number,
            dealer,
            hands,
            turned,
        }
    }

    /// Deals the next deal from the shuffled deck (top card first).
    pub fn deal(&mut self, deck: &[Card; 32]) -> Result<DealStart, BeloteError> {
        self.check_deal_phase()?;
        check_deck(deck)?;
        let init = initial_deal(deck, dealer_of(self.next_deal));
        Ok(self.start_deal(init.hands, init.turned, Some(*deck)))
    }

    /// Deals the next deal from what a `deal` event shows (six cards per
    /// player, indexed by player, and the turned card), when the deck is not
    /// known. After a take, [`Match::complete_hands`] is expected.
    pub fn deal_visible(
        &mut self,
        hands: [Vec<Card>; PLAYERS],
        turned: Card,
    ) -> Result<DealStart, BeloteError> {
        self.check_deal_phase()?;
        let mut seen = Vec::with_capacity(13);
        for (player, h) in hands.iter().enumerate() {
            if h.len() != 6 {
                return Err(BeloteError::Deal(DealProblem::HandSize {
                    player,
                    expected: 6,
                    got: h.len(),
                }));
            }
            seen.extend_from_slice(h);
        }
        seen.push(turned);
        check_distinct(&seen)?;
        Ok(self.start_deal(hands, turned, None))
    }

    /// The completed 16-card hands (from `hands_completed`), indexed by
    /// player, after [`Match::deal_visible`] and a take. Each must hold the
    /// player's six cards, the taker's the turned card, 32 distinct cards in
    /// all.
    pub fn complete_hands(&mut self, hands: [Vec<Card>; PLAYERS]) -> Result<(), BeloteError> {
        if self.phase == Phase::Over {
            return Err(BeloteError::MatchOver);
        }
        let expected = self.expected();
        let (Phase::Completing, Some(d)) = (self.phase, self.deal.as_mut()) else {
            return Err(BeloteError::WrongPhase { expected });
        };
        let taker = d.taker.unwrap_or(0);
        let mut all = Vec::with_capacity(32);
        for (player, h) in hands.iter().enumerate() {
            if h.len() != 16 {
                return Err(BeloteError::Deal(DealProblem::HandSize {
                    player,
                    expected: 16,
                    got: h.len(),
                }));
            }
            if let Some(card) = d.hands[player].iter().find(|c| !h.contains(c)) {
                return Err(BeloteError::Deal(DealProblem::MissingCard {
                    player,
                    card: *card,
                }));
            }
            all.extend_from_slice(h);
        }
        check_distinct(&all)?;
        if !hands[taker].contains(&d.turned) {
            return Err(BeloteError::Deal(DealProblem::TurnedNotWithTaker));
        }
        d.hands = hands;
        start_play(d);
        self.phase = Phase::Playing;
        Ok(())
    }

    // ----- bidding -----

    fn check_actor(&self, player: Player, want: Phase) -> Result<&DealState, BeloteError> {
        if self.phase == Phase::Over {
            return Err(BeloteError::MatchOver);
        }
        if player >= PLAYERS {
            return Err(BeloteError::UnknownPlayer(player));
        }
        match (&self.deal, self.phase) {
            (Some(d), phase) if phase == want => {
                if d.to_act != player {
                    Err(BeloteError::NotYourTurn {
                        player,
                        expected: d.to_act,
                    })
                } else {
                    Ok(d)
                }
            }
            _ => Err(BeloteError::WrongPhase {
                expected: self.expected(),
            }),
        }
    }

    /// Classifies a bid: `Ok` if [`Match::bid`] would accept it.
    pub fn classify_bid(&self, player: Player, bid: Bid) -> Result<(), BeloteError> {
        let d = self.check_actor(player, Phase::Bidding)?;
        let problem = match (d.round, bid) {
            (_, Bid::Pass) | (1, Bid::Take) => None,
            (1, Bid::Name(_)) => Some(BidProblem::SuitInRound1),
            (_, Bid::Take) => Some(BidProblem::TakeInRound2),
            (_, Bid::Name(s)) if s == d.turned.suit => Some(BidProblem::TurnedSuitInRound2),
            (_, Bid::Name(_)) => None,
        };
        match problem {
            Some(problem) => Err(BeloteError::InvalidBid {
                bid,
                round: d.round,
                problem,
            }),
            None => Ok(()),
        }
    }

    /// A bid by `player`.
    pub fn bid(&mut self, player: Player, bid: Bid) -> Result<BidOutcome, BeloteError> {
        self.classify_bid(player, bid)?;
        self.timeouts[player] = 0;
        Ok(self.apply_bid(player, bid))
    }

    fn apply_bid(&mut self, player: Player, bid: Bid) -> BidOutcome {
        let Some(d) = self.deal.as_mut() else {
            return BidOutcome::Next { player, round: 1 };
        };
        let trump = match bid {
            Bid::Take => d.turned.suit,
            Bid::Name(s) => s,
            Bid::Pass => {
                if player == d.first() {
                    d.to_act = d.dealer;
                    return BidOutcome::Next {
                        player: d.to_act,
                        round: d.round,
                    };
                }
                if d.round == 1 {
                    d.round = 2;
                    d.to_act = d.first();
                    return BidOutcome::Next {
                        player: d.to_act,
                        round: 2,
                    };
                }
                return BidOutcome::Void(self.end_void());
            }
        };
        d.trump = Some(trump);
        d.taker = Some(player);
        match d.deck {
            Some(deck) => {
                let add = completion_cards(&deck, d.dealer, player);
                for (h, a) in d.hands.iter_mut().zip(add) {
                    h.extend(a);
                }
                start_play(d);
                self.phase = Phase::Playing;
                BidOutcome::Taken {
                    taker: player,
                    trump,
                    hands: Some(d.hands.clone()),
                }
            }
            None => {
                self.phase = Phase::Completing;
                BidOutcome::Taken {
                    taker: player,
                    trump,
                    hands: None,
                }
            }
        }
    }

    fn end_void(&mut self) -> DealEnd {
        let number = self.deal.as_ref().map_or(self.next_deal, |d| d.number);
        self.next_deal = number + 1;
        self.phase = Phase::AwaitDeal;
        let match_winner = self.check_target();
        DealEnd {
            deal: number,
            outcome: Outcome::Void,
            taker: None,
            trump: None,
            card_points: [0; PLAYERS],
            tricks: [0; PLAYERS],
            belote: [false; PLAYERS],
            points: [0; PLAYERS],
            totals: self.totals,
            deal_winner: None,
            released: 0,
            held_over: self.held,
            match_winner,
        }
    }

    /// Ends the match if a player has reached the target with unequal totals.
    fn check_target(&mut self) -> Option<Player> {
        let [a, b] = self.totals;
        if a.max(b) >= self.config.target && a != b {
            let w = if a > b { 0 } else { 1 };
            self.winner = Some((w, MatchEnd::Target));
            self.phase = Phase::Over;
            Some(w)
        } else {
            None
        }
    }

    // ----- playing -----

    /// Classifies a play: `Ok` if [`Match::play`] would accept it. Causes in
    /// order: match over, unknown player, wrong phase, not your turn,
    /// `CardNotInHand`, `DidNotFollowSuit`, `DidNotBeatTrump`, `DidNotTrump`,
    /// then `InvalidAnnounce`.
    pub fn classify_play(
        &self,
        player: Player,
        card: Card,
        announce: Option<Announce>,
    ) -> Result<(), BeloteError> {
        let d = self.check_actor(player, Phase::Playing)?;
        let Some(trump) = d.trump else {
            return Err(BeloteError::WrongPhase {
                expected: self.expected(),
            });
        };
        classify_card(
            &d.hands[player],
            d.trick.first().map(|&(_, c)| c),
            trump,
            card,
        )?;
        if let Some(announce) = announce {
            let problem = if card.suit != trump
                || !matches!(
                    card.rank,
                    super::cards::Rank::King | super::cards::Rank::Queen
                ) {
                Some(AnnounceProblem::NotTrumpKingOrQueen)
            } else if d.belote_holder != Some(player) {
                Some(AnnounceProblem::NotHolder)
            } else {
                let want = if d.belote_cards_played == 0 {
                    Announce::Belote
                } else {
                    Announce::Rebelote
                };
                (announce != want).then_some(AnnounceProblem::WrongWord)
            };
            if let Some(problem) = problem {
                return Err(BeloteError::InvalidAnnounce {
                    card,
                    announce,
                    problem,
                });
            }
        }
        Ok(())
    }

    /// A card played by `player`, with an optional announcement.
    pub fn play(
        &mut self,
        player: Player,
        card: Card,
        announce: Option<Announce>,
    ) -> Result<PlayOutcome, BeloteError> {
        self.classify_play(player, card, announce)?;
        self.timeouts[player] = 0;
        Ok(self.apply_play(player, card, announce, false))
    }

    fn apply_play(
        &mut self,
        player: Player,
        card: Card,
        announce: Option<Announce>,
        auto: bool,
    ) -> PlayOutcome {
        let mut out = PlayOutcome {
            player,
            card,
            announce,
            auto,
            trick: None,
            deal_end: None,
            next: None,
        };
        let Some(d) = self.deal.as_mut() else {
            return out;
        };
        let Some(trump) = d.trump else {
            return out;
        };
        d.hands[player].retain(|c| *c != card);
        d.trick.push((player, card));
        d.played.push((player, card));
        if d.belote_holder == Some(player)
            && card.suit == trump
            && matches!(
                card.rank,
                super::cards::Rank::King | super::cards::Rank::Queen
            )
        {
            d.belote_cards_played += 1;
            match (d.belote_cards_played, announce) {
                (1, Some(Announce::Belote)) => d.belote_first_announced = true,
                (2, Some(Announce::Rebelote)) if d.belote_first_announced => d.belote_scored = true,
                _ => {}
            }
        }
        if let [(leader, lead), (second, answer)] = d.trick[..] {
            let winner = if answer.beats(lead, lead.suit, trump) {
                second
            } else {
                leader
            };
            d.tricks_done += 1;
            let mut points = lead.points(trump) + answer.points(trump);
            if d.tricks_done == TRICKS {
                points += LAST_TRICK_BONUS;
            }
            d.tricks[winner] += 1;
            d.card_points[winner] += points;
            d.trick.clear();
            d.to_act = winner;
            out.trick = Some(TrickResult {
                number: d.tricks_done,
                cards: [(leader, lead), (second, answer)],
                winner,
                points,
            });
            if d.tricks_done == TRICKS {
                out.deal_end = Some(self.end_played());
                return out;
            }
        } else {
            d.to_act = other(player);
        }
        out.next = Some(d.to_act);
        out
    }

    fn end_played(&mut self) -> DealEnd {
        let Some(d) = self.deal.as_ref() else {
            return self.end_void();
        };
        let taker = d.taker.unwrap_or(0);
        let mut belote = [false; PLAYERS];
        if let Some(h) = d.belote_holder {
            belote[h] = d.belote_scored;
        }
        let DealScore {
            outcome,
            mut points,
            held_over,
            deal_winner,
        } = score_deal(taker, d.card_points, d.tricks, belote);
        let mut released = 0;
        if let Some(w) = deal_winner {
            released = self.held;
            points[w] += released;
            self.held = 0;
        }
        self.held += held_over;
        for (t, p) in self.totals.iter_mut().zip(points) {
            *t += p;
        }
        let (number, trump, card_points, tricks) = (d.number, d.trump, d.card_points, d.tricks);
        self.next_deal = number + 1;
        self.phase = Phase::AwaitDeal;
        let match_winner = self.check_target();
        if match_winner.is_some() {
            // Held-over points are lost when the match ends.
            self.held = 0;
        }
        DealEnd {
            deal: number,
            outcome,
            taker: Some(taker),
            trump,
            card_points,
            tricks,
            belote,
            points,
            totals: self.totals,
            deal_winner,
            released,
            held_over: self.held,
            match_winner,
        }
    }

    // ----- timeouts and departures -----

    /// A timeout of `player`, who was expected to bid or play.
    pub fn timeout(&mut self, player: Player) -> Result<TimeoutOutcome, BeloteError> {
        if self.phase == Phase::Over {
            return Err(BeloteError::MatchOver);
        }
        let want = match self.phase {
            Phase::Bidding => Phase::Bidding,
            Phase::Playing => Phase::Playing,
            _ => {
                return Err(BeloteError::WrongPhase {
                    expected: self.expected(),
                });
            }
        };
        self.check_actor(player, want)?;
        self.timeouts[player] += 1;
        if self.timeouts[player] >= self.config.max_timeouts {
            let winner = other(player);
            self.winner = Some((winner, MatchEnd::Timeouts));
            self.phase = Phase::Over;
            return Ok(TimeoutOutcome::Lost { winner });
        }
        if want == Phase::Bidding {
            return Ok(TimeoutOutcome::AutoBid(self.apply_bid(player, Bid::Pass)));
        }
        match self.legal_cards().first() {
            Some(&card) => Ok(TimeoutOutcome::AutoPlay(
                self.apply_play(player, card, None, true),
            )),
            // A player to act always holds a card during the play phase.
            None => Err(BeloteError::WrongPhase {
                expected: self.expected(),
            }),
        }
    }

    /// `player` leaves: they lose the match. Returns the winner.
    pub fn leave(&mut self, player: Player) -> Result<Player, BeloteError> {
        if self.phase == Phase::Over {
            return Err(BeloteError::MatchOver);
        }
        if player >= PLAYERS {
            return Err(BeloteError::UnknownPlayer(player));
        }
        let winner = other(player);
        self.winner = Some((winner, MatchEnd::Left));
        self.phase = Phase::Over;
        Ok(winner)
    }
}

/// Sets up the play phase once the hands are complete.
fn start_play(d: &mut DealState) {
    d.to_act = d.first();
    d.trick.clear();
    d.belote_holder = d.trump.and_then(|t| {
        (0..PLAYERS).find(|&p| {
            let h = &d.hands[p];
            h.contains(&Card::new(super::cards::Rank::King, t))
                && h.contains(&Card::new(super::cards::Rank::Queen, t))
        })
    });
}

fn check_distinct(cards: &[Card]) -> Result<(), BeloteError> {
    let mut seen = [false; 32];
    for c in cards {
        let i = usize::from(c.index());
        if seen[i] {
            return Err(BeloteError::Deal(DealProblem::Duplicate(*c)));
        }
        seen[i] = true;
    }
    Ok(())
}

#[cfg(test)]
impl Match {
    /// Test setup: sets the match totals.
    pub(crate) fn set_totals(&mut self, totals: [u32; PLAYERS]) {
        self.totals = totals;
    }
}
