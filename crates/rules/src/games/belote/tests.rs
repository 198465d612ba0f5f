//! Rule tests for the Belote engine, one or more per rule of rules.md "Belote".

use super::*;

fn c(s: &str) -> Card {
    s.parse().unwrap()
}

fn cards(s: &str) -> Vec<Card> {
    s.split_whitespace().map(c).collect()
}

/// A small deterministic generator for test decks (no dependency on
/// `fairness`).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn deck(&mut self) -> [Card; 32] {
        let mut d = canonical_deck();
        for i in (1..32).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            d.swap(i, j);
        }
        d
    }
}

/// Deal 0 (player 1 deals, player 0 is first hand) from explicit 16-card
/// hands: the first six of each are dealt, `turned` (in the taker's hand,
/// not among its first six) is turned; the taker takes in round 1 when
/// `trump` is the turned suit, else names `trump` in round 2.
fn setup(m: &mut Match, h0: &str, h1: &str, turned: &str, taker: Player, trump: Suit) {
    let hands = [cards(h0), cards(h1)];
    let turned = c(turned);
    m.deal_visible([hands[0][..6].to_vec(), hands[1][..6].to_vec()], turned)
        .unwrap();
    let first = m.first_hand();
    let order = [first, other(first)];
    if turned.suit == trump {
        for p in order {
            if p == taker {
                m.bid(p, Bid::Take).unwrap();
                break;
            }
            m.bid(p, Bid::Pass).unwrap();
        }
    } else {
        for p in order {
            m.bid(p, Bid::Pass).unwrap();
        }
        for p in order {
            if p == taker {
                m.bid(p, Bid::Name(trump)).unwrap();
                break;
            }
            m.bid(p, Bid::Pass).unwrap();
        }
    }
    m.complete_hands(hands).unwrap();
}

fn new_match() -> Match {
    Match::new(MatchConfig::default()).unwrap()
}

/// Plays the first legal card until the deal ends; returns the deal end.
fn play_out(m: &mut Match) -> DealEnd {
    loop {
        let Expected::Play { player } = m.expected() else {
            panic!("not in play: {:?}", m.expected());
        };
        let card = m.legal_cards()[0];
        let out = m.play(player, card, None).unwrap();
        if let Some(end) = out.deal_end {
            return end;
        }
    }
}

/// Plays a whole deal from a deck: first hand takes, first legal cards.
fn deal_and_play(m: &mut Match, deck: &[Card; 32]) -> DealEnd {
    m.deal(deck).unwrap();
    let first = m.first_hand();
    m.bid(first, Bid::Take).unwrap();
    play_out(m)
}

#[test]
fn rule_dealer_of_deal_0_is_second_player_then_alternates_voids_included() {
    assert_eq!((dealer_of(0), dealer_of(1), dealer_of(2)), (1, 0, 1));
    let mut m = new_match();
    let mut g = XorShift(7);
    assert_eq!(m.expected(), Expected::Deal { deal: 0, dealer: 1 });
    m.deal(&g.deck()).unwrap();
    assert_eq!((m.dealer(), m.first_hand()), (1, 0));
    for p in [0, 1, 0, 1] {
        m.bid(p, Bid::Pass).unwrap();
    }
    assert_eq!(m.expected(), Expected::Deal { deal: 1, dealer: 0 });
    m.deal(&g.deck()).unwrap();
    assert_eq!(
        m.expected(),
        Expected::Bid {
            player: 1,
            round: 1
        }
    );
}

#[test]
fn rule_dealing_three_three_three_three_then_turned() {
    let deck = canonical_deck();
    let init = initial_deal(&deck, 1);
    assert_eq!(init.hands[0], cards("7S 8S 9S KS AS 7H"));
    assert_eq!(init.hands[1], cards("TS JS QS 8H 9H TH"));
    assert_eq!(init.turned, c("JH"));
    let mut m = new_match();
    let start = m.deal(&deck).unwrap();
    assert_eq!(start.hands, init.hands);
    assert_eq!(start.turned, c("JH"));
}

#[test]
fn rule_completion_taker_gets_turned_plus_two() {
    let deck = canonical_deck();
    // Rest of the deck after the turned JH: QH KH AH 7D 8D | 9D TD JD QD KD AD 7C | 8C ...
    let first_takes = completed_hands(&deck, 1, 0);
    assert_eq!(
        first_takes[0][6..],
        cards("JH QH KH 9D TD JD QD KD AD 7C")[..]
    );
    assert_eq!(
        first_takes[1][6..],
        cards("AH 7D 8D 8C 9C TC JC QC KC AC")[..]
    );
    let dealer_takes = completed_hands(&deck, 1, 1);
    assert_eq!(
        dealer_takes[0][6..],
        cards("QH KH AH 9D TD JD QD KD AD 7C")[..]
    );
    assert_eq!(
        dealer_takes[1][6..],
        cards("JH 7D 8D 8C 9C TC JC QC KC AC")[..]
    );
    for h in first_takes.iter().chain(&dealer_takes) {
        assert_eq!(h.len(), 16);
    }
    // Through the engine, with a round-2 take: the taker still gets the turned card.
    let mut m = new_match();
    m.deal(&deck).unwrap();
    m.bid(0, Bid::Pass).unwrap();
    m.bid(1, Bid::Pass).unwrap();
    m.bid(0, Bid::Pass).unwrap();
    let out = m.bid(1, Bid::Name(Suit::Clubs)).unwrap();
    assert_eq!(
        out,
        BidOutcome::Taken {
            taker: 1,
            trump: Suit::Clubs,
            hands: Some(dealer_takes)
        }
    );
}

#[test]
fn rule_bidding_round_one_first_hand_then_dealer_take_or_pass() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    assert_eq!(
        m.classify_bid(1, Bid::Take),
        Err(BeloteError::NotYourTurn {
            player: 1,
            expected: 0
        })
    );
    assert!(matches!(
        m.classify_bid(0, Bid::Name(Suit::Spades)),
        Err(BeloteError::InvalidBid {
            problem: BidProblem::SuitInRound1,
            ..
        })
    ));
    assert_eq!(
        m.bid(0, Bid::Pass),
        Ok(BidOutcome::Next {
            player: 1,
            round: 1
        })
    );
    let out = m.bid(1, Bid::Take).unwrap();
    assert!(matches!(
        out,
        BidOutcome::Taken {
            taker: 1,
            trump: Suit::Hearts,
            ..
        }
    ));
    assert_eq!(m.trump(), Some(Suit::Hearts));
}

#[test]
fn rule_bidding_round_two_names_another_suit() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    m.bid(0, Bid::Pass).unwrap();
    assert_eq!(
        m.bid(1, Bid::Pass),
        Ok(BidOutcome::Next {
            player: 0,
            round: 2
        })
    );
    assert_eq!(
        m.classify_bid(0, Bid::Name(Suit::Hearts)),
        Err(BeloteError::InvalidBid {
            bid: Bid::Name(Suit::Hearts),
            round: 2,
            problem: BidProblem::TurnedSuitInRound2
        })
    );
    assert!(matches!(
        m.classify_bid(0, Bid::Take),
        Err(BeloteError::InvalidBid {
            problem: BidProblem::TakeInRound2,
            ..
        })
    ));
    assert!(matches!(
        m.bid(0, Bid::Name(Suit::Diamonds)),
        Ok(BidOutcome::Taken {
            taker: 0,
            trump: Suit::Diamonds,
            ..
        })
    ));
}

#[test]
fn rule_two_passes_in_round_two_void_the_deal() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    for p in [0, 1, 0] {
        m.bid(p, Bid::Pass).unwrap();
    }
    let BidOutcome::Void(end) = m.bid(1, Bid::Pass).unwrap() else {
        panic!("expected a void deal")
    };
    assert_eq!(end.outcome, Outcome::Void);
    assert_eq!(end.points, [0, 0]);
    assert_eq!(m.expected(), Expected::Deal { deal: 1, dealer: 0 });
}

#[test]
fn rule_first_hand_leads_first_trick_and_winner_leads_next() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    m.bid(0, Bid::Pass).unwrap();
    m.bid(1, Bid::Take).unwrap();
    assert_eq!(m.expected(), Expected::Play { player: 0 });
    // Player 0 leads AS; player 1 holds spades (TS JS QS) and must follow.
    m.play(0, c("AS"), None).unwrap();
    let out = m.play(1, c("TS"), None).unwrap();
    assert_eq!(out.trick.map(|t| t.winner), Some(0));
    assert_eq!(m.expected(), Expected::Play { player: 0 });
    m.play(0, c("7S"), None).unwrap();
    let out = m.play(1, c("QS"), None).unwrap();
    assert_eq!(out.trick.map(|t| (t.winner, t.points)), Some((1, 3)));
    assert_eq!(m.expected(), Expected::Play { player: 1 });
}

/// Hands for the legality tests: trump hearts, player 0 leads.
fn legality_match() -> Match {
    let mut m = new_match();
    setup(
        &mut m,
        "7S 8S 9S TS JS QS KS AS 9H TH 7D 8D 9D TD JD QD",
        "7C 8C 9C TC JC QC KC AC 7H 8H JH QH KH AH KD AD",
        "7H",
        1,
        Suit::Hearts,
    );
    m
}

#[test]
fn rule_must_follow_suit() {
    let mut m = legality_match();
    m.play(0, c("7D"), None).unwrap();
    assert_eq!(
        m.classify_play(1, c("7C"), None),
        Err(BeloteError::DidNotFollowSuit {
            led: Suit::Diamonds,
            card: c("7C")
        })
    );
    assert_eq!(
        m.classify_play(1, c("JH"), None),
        Err(BeloteError::DidNotFollowSuit {
            led: Suit::Diamonds,
            card: c("JH")
        }),
        "trumping is not allowed while able to follow"
    );
    assert_eq!(m.legal_cards(), cards("KD AD"));
}

#[test]
fn rule_must_trump_when_unable_to_follow() {
    let mut m = legality_match();
    m.play(0, c("AS"), None).unwrap();
    assert_eq!(
        m.classify_play(1, c("7C"), None),
        Err(BeloteError::DidNotTrump { card: c("7C") })
    );
    assert_eq!(m.legal_cards(), cards("7H 8H JH QH KH AH"));
    let out = m.play(1, c("7H"), None).unwrap();
    assert_eq!(
        out.trick.map(|t| t.winner),
        Some(1),
        "any trump beats the suit led"
    );
}

#[test]
fn rule_must_beat_the_trump_led_when_able() {
    let mut m = legality_match();
    m.play(0, c("TH"), None).unwrap();
    assert_eq!(
        m.classify_play(1, c("KH"), None),
        Err(BeloteError::DidNotBeatTrump {
            led: c("TH"),
            card: c("KH")
        })
    );
    assert_eq!(m.legal_cards(), cards("JH AH"));
    assert!(matches!(
        m.classify_play(1, c("7C"), None),
        Err(BeloteError::DidNotFollowSuit { .. })
    ));
}

#[test]
fn rule_trump_led_unbeatable_any_trump() {
    let mut m = new_match();
    setup(
        &mut m,
        "JH 8S 9S TS JS QS KS AS 9H TH 7D 8D 9D TD JD QD",
        "7C 8C 9C TC JC QC KC AC 7H 8H 7S QH KH AH KD AD",
        "7H",
        1,
        Suit::Hearts,
    );
    m.play(0, c("JH"), None).unwrap();
    assert_eq!(m.legal_cards(), cards("7H 8H QH KH AH"));
}

#[test]
fn rule_any_card_when_neither_suit_led_nor_trump() {
    let mut m = new_match();
    setup(
        &mut m,
        "7S 8S 9S TS JS QS KS AS 9H TH 7D 8D 9D TD JD QD",
        "7H 8H JH QH KH AH 7C 8C 9C TC JC QC KC AC KD AD",
        "7C",
        1,
        Suit::Clubs,
    );
    // Trump clubs: player 1 has no spade and... holds clubs (trump): must trump.
    m.play(0, c("AS"), None).unwrap();
    assert_eq!(m.legal_cards().len(), 8);
    let mut m = new_match();
    setup(
        &mut m,
        "7C 8C 9C TC JC QC KC AC 9H TH 7D 8D 9D TD JD QD",
        "7S 8S 9S TS JS QS KS AS 7H 8H JH QH KH AH KD AD",
        "7D",
        0,
        Suit::Diamonds,
    );
    m.play(0, c("AC"), None).unwrap();
    // Player 1: no club, trump diamonds held (KD AD): must trump.
    assert_eq!(m.legal_cards(), cards("KD AD"));
    let mut m = new_match();
    setup(
        &mut m,
        "7C 8C 9C TC JC QC KC AC 9H TH 7D 8D 9D TD JD QD",
        "7S 8S 9S TS JS QS KS AS 7H 8H JH QH KH AH KD AD",
        "7D",
        0,
        Suit::Diamonds,
    );
    m.play(0, c("9H"), None).unwrap();
    assert_eq!(m.legal_cards(), cards("7H 8H JH QH KH AH"));
    // Without the suit led or a trump, anything goes (pure rule).
    let hand = cards("7S 8H");
    assert_eq!(
        legal_cards(&hand, Some(c("AC")), Suit::Diamonds),
        cards("7S 8H")
    );
}

#[test]
fn rule_trick_won_by_highest_trump_else_highest_of_suit_led() {
    let t = Suit::Hearts;
    assert_eq!(trick_winner(c("AS"), c("7H"), t), 1);
    assert_eq!(trick_winner(c("9H"), c("AH"), t), 0, "9 beats A in trump");
    assert_eq!(trick_winner(c("JH"), c("9H"), t), 0);
    assert_eq!(trick_winner(c("TS"), c("AS"), t), 1);
    assert_eq!(
        trick_winner(c("TS"), c("KS"), t),
        0,
        "T beats K outside trump"
    );
    assert_eq!(
        trick_winner(c("7S"), c("AD"), t),
        0,
        "an off-suit card never wins"
    );
    assert_eq!(
        trick_winner(c("JS"), c("9S"), t),
        0,
        "J beats 9 outside trump"
    );
}

#[test]
fn rule_card_not_in_hand_and_turn_checks() {
    let mut m = legality_match();
    assert_eq!(
        m.classify_play(0, c("AC"), None),
        Err(BeloteError::CardNotInHand(c("AC")))
    );
    assert_eq!(
        m.classify_play(1, c("AC"), None),
        Err(BeloteError::NotYourTurn {
            player: 1,
            expected: 0
        })
    );
    assert!(matches!(
        m.classify_bid(0, Bid::Pass),
        Err(BeloteError::WrongPhase { .. })
    ));
    assert_eq!(
        m.classify_play(2, c("AC"), None),
        Err(BeloteError::UnknownPlayer(2))
    );
    m.play(0, c("AS"), None).unwrap();
    assert_eq!(
        m.play(1, c("AS"), None),
        Err(BeloteError::CardNotInHand(c("AS")))
    );
}

#[test]
fn rule_last_trick_ten_and_deal_total_162() {
    let mut g = XorShift(99);
    for _ in 0..50 {
        let mut m = new_match();
        let end = deal_and_play(&mut m, &g.deck());
        assert_eq!(end.card_points[0] + end.card_points[1], DEAL_POINTS);
        assert_eq!(end.tricks[0] + end.tricks[1], TRICKS);
    }
}

#[test]
fn rule_belote_counts_only_when_both_announced() {
    // Player 1 holds KH QH with hearts trump.
    let mut m = legality_match();
    assert_eq!(m.belote_holder(), Some(1));
    m.play(0, c("TH"), None).unwrap();
    // Player 1 must beat TH: JH or AH. Then leads KH with belote.
    m.play(1, c("JH"), None).unwrap();
    assert_eq!(
        m.classify_play(1, c("KH"), Some(Announce::Rebelote)),
        Err(BeloteError::InvalidAnnounce {
            card: c("KH"),
            announce: Announce::Rebelote,
            problem: AnnounceProblem::WrongWord
        })
    );
    assert_eq!(
        m.classify_play(1, c("AD"), Some(Announce::Belote)),
        Err(BeloteError::InvalidAnnounce {
            card: c("AD"),
            announce: Announce::Belote,
            problem: AnnounceProblem::NotTrumpKingOrQueen
        })
    );
    m.play(1, c("KH"), Some(Announce::Belote)).unwrap();
    // Player 0 must beat KH with its last heart, 9H, and leads AS: player 1
    // has no spade and must trump.
    m.play(0, c("9H"), None).unwrap();
    m.play(0, c("AS"), None).unwrap();
    let end_with = {
        let mut m2 = m.clone();
        m2.play(1, c("QH"), Some(Announce::Rebelote)).unwrap();
        play_out(&mut m2)
    };
    let end_without = {
        let mut m3 = m.clone();
        m3.play(1, c("QH"), None).unwrap();
        play_out(&mut m3)
    };
    assert_eq!(end_with.belote, [false, true]);
    assert_eq!(end_without.belote, [false, false]);
}

#[test]
fn rule_belote_only_by_the_holder() {
    let mut m = new_match();
    // Player 0 holds QH only, player 1 holds KH: no holder.
    setup(
        &mut m,
        "QH 8S 9S TS JS QS KS AS 9H TH 7D 8D 9D TD JD QD",
        "7C 8C 9C TC JC QC KC AC 7H 8H JH 7S KH AH KD AD",
        "7H",
        1,
        Suit::Hearts,
    );
    assert_eq!(m.belote_holder(), None);
    assert!(matches!(
        m.classify_play(0, c("QH"), Some(Announce::Belote)),
        Err(BeloteError::InvalidAnnounce {
            problem: AnnounceProblem::NotHolder,
            ..
        })
    ));
}

#[test]
fn rule_scoring_made() {
    let s = score_deal(0, [100, 62], [9, 7], [false, false]);
    assert_eq!(
        (s.outcome, s.points, s.held_over, s.deal_winner),
        (Outcome::Made, [100, 62], 0, Some(0))
    );
    // With the taker's belote: 182 in all (sample be-db8f-000003 deal 4: 27 / 155).
    let s = score_deal(1, [27, 135], [3, 13], [false, true]);
    assert_eq!((s.outcome, s.points), (Outcome::Made, [27, 155]));
}

#[test]
fn rule_scoring_dedans_belote_stays_with_its_holder() {
    let s = score_deal(0, [70, 92], [8, 8], [false, false]);
    assert_eq!(
        (s.outcome, s.points, s.deal_winner),
        (Outcome::Dedans, [0, 162], Some(1))
    );
    // Taker's belote: sample be-db8f-000100 deal 5 scored 162 / 20.
    let s = score_deal(1, [100, 62], [6, 10], [false, true]);
    assert_eq!((s.outcome, s.points), (Outcome::Dedans, [162, 20]));
    // Defender's belote: 162 + 20.
    let s = score_deal(1, [100, 62], [6, 10], [true, false]);
    assert_eq!((s.outcome, s.points), (Outcome::Dedans, [182, 0]));
    // Taker's 75 + 20 = 95 vs 87: made thanks to the belote.
    let s = score_deal(0, [75, 87], [8, 8], [true, false]);
    assert_eq!((s.outcome, s.points), (Outcome::Made, [95, 87]));
}

#[test]
fn rule_scoring_litige_holds_the_takers_points() {
    let s = score_deal(0, [81, 81], [8, 8], [false, false]);
    assert_eq!(
        (s.outcome, s.points, s.held_over, s.deal_winner),
        (Outcome::Litige, [0, 81], 81, None)
    );
    // Taker 71 + 20 (belote) = defender 91.
    let s = score_deal(1, [91, 71], [8, 8], [false, true]);
    assert_eq!(
        (s.outcome, s.points, s.held_over),
        (Outcome::Litige, [91, 20], 71)
    );
}

#[test]
fn rule_scoring_capot_252() {
    let s = score_deal(0, [162, 0], [16, 0], [false, false]);
    assert_eq!(
        (s.outcome, s.points, s.deal_winner),
        (Outcome::Capot, [252, 0], Some(0))
    );
    let s = score_deal(0, [162, 0], [16, 0], [true, false]);
    assert_eq!(s.points, [272, 0]);
    // The defender takes every trick: capot for the defender, the taker keeps
    // only their belote.
    let s = score_deal(0, [0, 162], [0, 16], [true, false]);
    assert_eq!(
        (s.outcome, s.points, s.deal_winner),
        (Outcome::Capot, [20, 252], Some(1))
    );
}

#[test]
fn rule_capot_through_the_engine() {
    // Player 0 holds every trump and every ace... simply: all 8 spades
    // (trump) plus the top of every other suit, and leads.
    let mut m = new_match();
    setup(
        &mut m,
        "AH TH KH AD TD KD 7S 8S 9S TS JS QS KS AS AC TC",
        "7H 8H 9H JH QH 7D 8D 9D JD QD 7C 8C 9C JC QC KC",
        "7S",
        0,
        Suit::Spades,
    );
    let end = play_out(&mut m);
    assert_eq!(end.outcome, Outcome::Capot);
    assert_eq!(end.tricks, [16, 0]);
    assert_eq!(end.card_points, [162, 0]);
    // KS QS were played without announcements: no belote.
    assert_eq!(end.points, [252, 0]);
}

/// Plays first-legal deals from generated decks until one ends with
/// `outcome`; returns the match just after it.
fn find_deal(outcome: Outcome, seed: u64) -> (Match, DealEnd, XorShift) {
    let mut g = XorShift(seed);
    for _ in 0..20_000 {
        let mut m = new_match();
        let end = deal_and_play(&mut m, &g.deck());
        if end.outcome == outcome {
            return (m, end, g);
        }
    }
    panic!("no {outcome:?} found");
}

#[test]
fn rule_litige_points_go_to_the_next_decided_deal_winner() {
    let (mut m, litige, mut g) = find_deal(Outcome::Litige, 12345);
    let taker = litige.taker.unwrap();
    let held = litige.card_points[taker];
    assert_eq!(litige.held_over, held);
    assert_eq!(litige.deal_winner, None);
    assert_eq!(m.held_over(), held);
    assert_eq!(litige.points[taker], 0);
    // A void deal does not release them.
    m.deal(&g.deck()).unwrap();
    let first = m.first_hand();
    for p in [first, other(first), first] {
        m.bid(p, Bid::Pass).unwrap();
    }
    let BidOutcome::Void(v) = m.bid(other(first), Bid::Pass).unwrap() else {
        panic!("void expected")
    };
    assert_eq!((v.released, v.held_over, v.deal_winner), (0, held, None));
    // The next decided deal releases them to its winner.
    loop {
        let before = m.totals();
        let end = deal_and_play(&mut m, &g.deck());
        if end.outcome == Outcome::Litige {
            continue;
        }
        let winner = match end.outcome {
            Outcome::Made => end.taker.unwrap(),
            Outcome::Dedans => other(end.taker.unwrap()),
            _ => (0..2).find(|&p| end.tricks[p] == 16).unwrap(),
        };
        assert_eq!(end.deal_winner, Some(winner));
        assert!(end.released >= held);
        assert_eq!(end.held_over, 0);
        let base = score_deal(end.taker.unwrap(), end.card_points, end.tricks, end.belote);
        let mut expect = base.points;
        expect[winner] += end.released;
        assert_eq!(end.points, expect);
        assert_eq!(end.totals, [before[0] + expect[0], before[1] + expect[1]]);
        break;
    }
}

#[test]
fn rule_match_ends_at_target_higher_total_wins_equal_plays_on() {
    let mut m = Match::new(MatchConfig {
        target: 300,
        max_timeouts: 3,
    })
    .unwrap();
    let mut g = XorShift(4242);
    let mut deals = 0;
    loop {
        let end = deal_and_play(&mut m, &g.deck());
        deals += 1;
        let [a, b] = end.totals;
        if a.max(b) >= 300 && a != b {
            let w = if a > b { 0 } else { 1 };
            assert_eq!(end.match_winner, Some(w));
            assert_eq!(m.winner(), Some((w, MatchEnd::Target)));
            assert_eq!(m.expected(), Expected::Nothing);
            assert_eq!(m.deal(&g.deck()), Err(BeloteError::MatchOver));
            break;
        }
        assert_eq!(end.match_winner, None);
        assert!(deals < 100);
    }
}

#[test]
fn rule_equal_totals_at_target_play_on() {
    let mut m = new_match();
    m.set_totals([600, 600]);
    let mut g = XorShift(3);
    m.deal(&g.deck()).unwrap();
    for p in [0, 1, 0, 1] {
        m.bid(p, Bid::Pass).unwrap();
    }
    assert_eq!(m.winner(), None, "600 = 600: equal totals play on");
    let end = deal_and_play(&mut m, &g.deck());
    let w = if end.totals[0] > end.totals[1] { 0 } else { 1 };
    assert_ne!(end.totals[0], end.totals[1]);
    assert_eq!(end.match_winner, Some(w));
}

#[test]
fn rule_held_over_points_are_lost_if_the_match_ends() {
    let deck = litige_deck(12345);
    let mut m = new_match();
    m.set_totals([495, 495]);
    let end = deal_and_play(&mut m, &deck);
    assert_eq!(end.outcome, Outcome::Litige);
    assert!(
        end.match_winner.is_some(),
        "the defender reached the target"
    );
    assert_eq!((end.held_over, m.held_over()), (0, 0));
}

/// The deck of the first litige found by `find_deal(Litige, seed)`.
fn litige_deck(seed: u64) -> [Card; 32] {
    let mut g = XorShift(seed);
    loop {
        let deck = g.deck();
        let mut m = new_match();
        if deal_and_play(&mut m, &deck).outcome == Outcome::Litige {
            return deck;
        }
    }
}

#[test]
fn rule_timeout_in_bidding_passes() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    assert_eq!(
        m.timeout(0),
        Ok(TimeoutOutcome::AutoBid(BidOutcome::Next {
            player: 1,
            round: 1
        }))
    );
    assert_eq!(m.timeouts(0), Some(1));
}

#[test]
fn rule_timeout_plays_first_legal_card_in_canonical_order_without_belote() {
    let mut m = legality_match();
    m.play(0, c("8D"), None).unwrap();
    // Player 1 must follow diamonds: KD AD; canonical order puts KD first.
    let TimeoutOutcome::AutoPlay(p) = m.timeout(1).unwrap() else {
        panic!("auto play expected")
    };
    assert_eq!((p.card, p.auto, p.announce), (c("KD"), true, None));
    // Now player 1 leads; a timeout plays the first card in canonical order
    // among all legal ones: 7C... but make it a belote card: QH comes after
    // the clubs in canonical order (S H D C: hearts before clubs!).
    let TimeoutOutcome::AutoPlay(p) = m.timeout(1).unwrap() else {
        panic!("auto play expected")
    };
    assert_eq!(p.card, c("7H"), "hearts come before clubs in S H D C order");
}

#[test]
fn rule_auto_played_belote_card_does_not_count() {
    // Player 1 holds KH QH (trump hearts) and only hearts + a few: make the
    // belote cards the first legal in canonical order.
    let mut m = new_match();
    setup(
        &mut m,
        "7S 8S TS JS QS KS AS 7H 8H 9H TH JH 7D 8D 9D TD",
        "QH KH JD QD KD AD 7C 8C 9C TC JC QC KC AC 9S AH",
        "7C",
        1,
        Suit::Hearts,
    );
    // Hearts trump; player 0 leads 7H; player 1 must beat: QH is the lowest
    // beating trump in canonical order (Q, K, J, A all beat 7).
    m.play(0, c("7H"), None).unwrap();
    let TimeoutOutcome::AutoPlay(p) = m.timeout(1).unwrap() else {
        panic!()
    };
    assert_eq!((p.card, p.announce), (c("QH"), None));
    // The rebelote on KH is still a legal word but the bonus is lost.
    m.play(1, c("KH"), Some(Announce::Rebelote)).unwrap();
    let end = play_out(&mut m);
    assert_eq!(end.belote, [false, false]);
}

#[test]
fn rule_three_consecutive_timeouts_lose_the_match() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    m.timeout(0).unwrap(); // auto pass
    m.bid(1, Bid::Pass).unwrap();
    m.timeout(0).unwrap(); // auto pass, round 2
    m.bid(1, Bid::Pass).unwrap(); // void
    m.deal(&canonical_deck()).unwrap(); // deal 1: player 1 is first hand
    m.bid(1, Bid::Pass).unwrap();
    assert_eq!(m.timeouts(0), Some(2));
    assert_eq!(m.timeout(0), Ok(TimeoutOutcome::Lost { winner: 1 }));
    assert_eq!(m.winner(), Some((1, MatchEnd::Timeouts)));
    assert_eq!(m.bid(0, Bid::Pass), Err(BeloteError::MatchOver));
}

#[test]
fn rule_own_action_resets_timeouts() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    m.timeout(0).unwrap();
    m.bid(1, Bid::Pass).unwrap();
    m.timeout(0).unwrap();
    m.bid(1, Bid::Pass).unwrap();
    m.deal(&canonical_deck()).unwrap();
    m.bid(1, Bid::Pass).unwrap();
    m.bid(0, Bid::Pass).unwrap();
    assert_eq!(m.timeouts(0), Some(0));
}

#[test]
fn rule_leaving_loses_the_match() {
    let mut m = new_match();
    m.deal(&canonical_deck()).unwrap();
    assert_eq!(m.leave(0), Ok(1));
    assert_eq!(m.winner(), Some((1, MatchEnd::Left)));
    assert_eq!(m.leave(1), Err(BeloteError::MatchOver));
}

#[test]
fn visible_deal_checks_cards() {
    let mut m = new_match();
    assert!(matches!(
        m.deal_visible(
            [cards("7S 8S 9S TS JS"), cards("7H 8H 9H TH JH QH")],
            c("AC")
        ),
        Err(BeloteError::Deal(DealProblem::HandSize {
            player: 0,
            expected: 6,
            got: 5
        }))
    ));
    assert_eq!(
        m.deal_visible(
            [cards("7S 8S 9S TS JS QS"), cards("7H 8H 9H TH JH QS")],
            c("AC")
        ),
        Err(BeloteError::Deal(DealProblem::Duplicate(c("QS"))))
    );
    m.deal_visible(
        [cards("7S 8S 9S TS JS QS"), cards("7H 8H 9H TH JH QH")],
        c("AC"),
    )
    .unwrap();
    m.bid(0, Bid::Take).unwrap();
    assert_eq!(m.expected(), Expected::CompleteHands { taker: 0 });
    assert_eq!(
        m.complete_hands([
            cards("7S 8S 9S TS JS QS KS AS 7D 8D 9D TD JD QD KD AD"),
            cards("7H 8H 9H TH JH QH KH AH 7C 8C 9C TC JC QC KC AC"),
        ]),
        Err(BeloteError::Deal(DealProblem::TurnedNotWithTaker))
    );
    assert!(matches!(
        m.complete_hands([
            cards("7S 8S 9S TS JS KS AS AC 7D 8D 9D TD JD QD KD AD"),
            cards("7H 8H 9H TH JH QH KH AH 7C 8C 9C TC JC QC KC QS"),
        ]),
        Err(BeloteError::Deal(DealProblem::MissingCard {
            player: 0,
            ..
        }))
    ));
    m.complete_hands([
        cards("7S 8S 9S TS JS QS KS AS AC 8D 9D TD JD QD KD AD"),
        cards("7H 8H 9H TH JH QH KH AH 7C 8C 9C TC JC QC KC 7D"),
    ])
    .unwrap();
    assert_eq!(m.expected(), Expected::Play { player: 0 });
}

#[test]
fn position_facts() {
    let mut m = legality_match();
    m.play(0, c("AS"), None).unwrap();
    m.play(1, c("7H"), None).unwrap();
    assert_eq!(m.tricks_won(), [0, 1]);
    assert_eq!(m.card_points(), [0, 11]);
    assert_eq!(m.deal_points_balance(1), 11);
    assert_eq!(m.deal_points_balance(0), -11);
    assert_eq!(
        m.hand(0).len() + m.hand(1).len() + m.played_cards().len(),
        32
    );
}

#[test]
fn bid_and_announce_parse() {
    assert_eq!("take".parse::<Bid>(), Ok(Bid::Take));
    assert_eq!("pass".parse::<Bid>(), Ok(Bid::Pass));
    assert_eq!("D".parse::<Bid>(), Ok(Bid::Name(Suit::Diamonds)));
    assert_eq!("Take".parse::<Bid>(), Err(ParseError::Bid("Take".into())));
    for b in [Bid::Take, Bid::Pass, Bid::Name(Suit::Clubs)] {
        assert_eq!(b.to_string().parse::<Bid>(), Ok(b));
    }
    for a in [Announce::Belote, Announce::Rebelote] {
        assert_eq!(a.as_str().parse::<Announce>(), Ok(a));
    }
    assert_eq!(
        "belotte".parse::<Announce>(),
        Err(ParseError::Announce("belotte".into()))
    );
}
