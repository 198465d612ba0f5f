//! Property tests: random complete games of every Ludo variant and random
//! Belote matches end without panic and conserve tokens and cards; the card
//! parser never panics; fairness derivations stay in range.

use proptest::prelude::*;
use vigie_rules::fairness;
use vigie_rules::games::belote::{
    self, Announce, Bid, BidOutcome, Card, Expected as BExpected, Match, MatchConfig, Outcome,
    TimeoutOutcome as BTimeout,
};
use vigie_rules::games::ludo::{
    Expected, FINISHED, Game, LAST_TRACK, PlayerStatus, TokenPos, Variant,
};

/// A small deterministic generator driven by the proptest seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, per_thousand: u64) -> bool {
        self.below(1000) < per_thousand
    }
}

// ----- Ludo -----

fn check_ludo_invariants(g: &Game) {
    let v = g.variant();
    for p in 0..g.players() {
        let tokens = g.tokens(p).unwrap();
        assert_eq!(tokens.len(), usize::from(v.tokens), "tokens are conserved");
        let out = g.status(p) != Some(PlayerStatus::Playing);
        for t in tokens {
            match *t {
                TokenPos::At(x) => assert!(x <= FINISHED && !out),
                TokenPos::Removed => assert!(out),
                TokenPos::Yard => assert!(!out),
            }
        }
    }
    // No unsafe track square is shared by tokens of two different players.
    let mut owner = [None::<usize>; 52];
    for p in 0..g.players() {
        let seat = g.seat(p).unwrap();
        for t in g.tokens(p).unwrap() {
            if let TokenPos::At(x) = *t
                && x <= LAST_TRACK
            {
                let sq = seat.square(x);
                if v.is_safe(sq) {
                    continue;
                }
                match owner[usize::from(sq)] {
                    Some(o) => assert_eq!(o, p, "square {sq} shared without capture"),
                    None => owner[usize::from(sq)] = Some(p),
                }
            }
        }
    }
}

/// Plays a random game to its end; returns the number of actions.
fn random_ludo_game(variant: Variant, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut g = Game::with_default_seats(variant).unwrap();
    let mut steps = 0;
    while !g.is_over() {
        steps += 1;
        assert!(steps < 200_000, "game does not end");
        // Rare departures and timeouts.
        if rng.chance(1) {
            let p = rng.below(g.players() as u64) as usize;
            if g.status(p) == Some(PlayerStatus::Playing) {
                g.leave(p).unwrap();
                check_ludo_invariants(&g);
                continue;
            }
        }
        let current = g.current();
        if rng.chance(20) {
            g.timeout(current).unwrap();
            check_ludo_invariants(&g);
            continue;
        }
        match g.expected() {
            Expected::Roll(p) => {
                let value = rng.below(6) as u8 + 1;
                g.roll(p, value).unwrap();
            }
            Expected::Move { player, value } => {
                let legal = g.legal_tokens(value);
                assert!(!legal.is_empty());
                // A rejected attempt changes nothing.
                let before = g.clone();
                for t in 0..g.variant().tokens {
                    if !legal.contains(&t) {
                        assert!(g.classify_move(player, t).is_err());
                        assert!(g.move_token(player, t).is_err());
                    }
                }
                assert!(g.pass(player).is_err());
                assert_eq!(g, before);
                let t = legal[rng.below(legal.len() as u64) as usize];
                let m = g.move_token(player, t).unwrap();
                match m.from {
                    TokenPos::Yard => assert_eq!(m.to, 0, "leaving the yard lands on p = 0"),
                    TokenPos::At(p) => assert_eq!(m.to, p + value),
                    TokenPos::Removed => unreachable!(),
                }
            }
            Expected::Pass { player, .. } => {
                g.pass(player).unwrap();
            }
            Expected::Nothing => unreachable!(),
        }
        check_ludo_invariants(&g);
    }
    assert!(g.winner().is_some());
    steps
}

fn custom_variant() -> impl Strategy<Value = Variant> {
    (
        prop_oneof![Just(2u8), Just(4u8)],
        1u8..=4,
        proptest::collection::btree_set(1u8..=6, 1..=3),
        any::<[bool; 5]>(),
        1u32..=4,
    )
        .prop_map(|(players, tokens, exit_on, flags, max_timeouts)| Variant {
            name: "custom".into(),
            players,
            tokens,
            exit_on: exit_on.into_iter().collect(),
            safe_squares: flags[0],
            bonus_on_six: flags[1],
            three_sixes: flags[2],
            bonus_on_capture: flags[3],
            bonus_on_finish: flags[4],
            turn_s: 15,
            max_timeouts,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn prop_ludo_classic_games_end_and_conserve_tokens(seed in any::<u64>()) {
        random_ludo_game(Variant::classic(), seed);
    }

    #[test]
    fn prop_ludo_duel_games_end_and_conserve_tokens(seed in any::<u64>()) {
        random_ludo_game(Variant::duel(), seed);
    }

    #[test]
    fn prop_ludo_quick_games_end_and_conserve_tokens(seed in any::<u64>()) {
        random_ludo_game(Variant::quick(), seed);
    }

    #[test]
    fn prop_ludo_custom_games_end_and_conserve_tokens(v in custom_variant(), seed in any::<u64>()) {
        random_ludo_game(v, seed);
    }
}

// ----- Belote -----

fn check_cards_conserved(m: &Match) {
    let in_hands = m.hand(0).len() + m.hand(1).len();
    let played = m.played_cards().len();
    match m.expected() {
        BExpected::Play { .. } => assert_eq!(in_hands + played, 32, "hands + played = 32"),
        BExpected::Bid { .. } => assert_eq!(in_hands, 12),
        _ => {}
    }
    let mut all: Vec<Card> = m.hand(0).to_vec();
    all.extend_from_slice(m.hand(1));
    all.extend(m.played_cards().iter().map(|&(_, c)| c));
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "no card twice");
}

fn check_deal_end(end: &belote::DealEnd, before: [u32; 2]) {
    assert_eq!(
        end.totals,
        [before[0] + end.points[0], before[1] + end.points[1]]
    );
    if end.outcome == Outcome::Void {
        assert_eq!(end.points, [0, 0]);
        return;
    }
    assert_eq!(
        end.card_points[0] + end.card_points[1],
        162,
        "cards + last trick = 162"
    );
    assert_eq!(end.tricks[0] + end.tricks[1], 16);
    let bonus = end.belote.map(|b| if b { 20 } else { 0 });
    let taker = end.taker.unwrap();
    let base = belote::score_deal(taker, end.card_points, end.tricks, end.belote);
    let extra = [
        end.points[0] - base.points[0],
        end.points[1] - base.points[1],
    ];
    assert_eq!(extra[0] + extra[1], end.released);
    if end.outcome == Outcome::Capot {
        let side = (0..2).find(|&p| end.tricks[p] == 16).unwrap();
        assert_eq!(
            end.points[side] - bonus[side] - end.released,
            252,
            "capot scores 252"
        );
        assert_eq!(end.points[1 - side], bonus[1 - side]);
    } else {
        // Card points, last trick and the dedans/litige transfers: the deal
        // hands out 162 in all, plus belotes and released points, minus what
        // a litige holds over.
        let total = end.points[0] + end.points[1];
        assert_eq!(
            total + base.held_over,
            162 + bonus[0] + bonus[1] + end.released
        );
    }
}

fn random_match(seed_hex: &str, rng_seed: u64) -> usize {
    let mut rng = Rng::new(rng_seed);
    let mut m = Match::new(MatchConfig::default()).unwrap();
    let mut actions = 0;
    let game = "prop-match";
    while !m.is_over() {
        actions += 1;
        assert!(actions < 100_000, "match does not end");
        if rng.chance(1) {
            let p = rng.below(2) as usize;
            assert_eq!(m.leave(p), Ok(1 - p));
            break;
        }
        let before = m.totals();
        match m.expected() {
            BExpected::Deal { deal, .. } => {
                let deck =
                    belote::deck_from_indices(&fairness::shuffle(seed_hex, game, deal)).unwrap();
                m.deal(&deck).unwrap();
            }
            BExpected::Bid { player, round } => {
                if rng.chance(15) {
                    if let BTimeout::AutoBid(BidOutcome::Void(end)) = m.timeout(player).unwrap() {
                        check_deal_end(&end, before);
                    }
                    continue;
                }
                let turned = m.turned().unwrap();
                let bid = match (round, rng.below(3)) {
                    (1, 0) => Bid::Take,
                    (2, 0) => {
                        let s = belote::Suit::ALL[rng.below(4) as usize];
                        if s == turned.suit {
                            assert!(m.classify_bid(player, Bid::Name(s)).is_err());
                            Bid::Pass
                        } else {
                            Bid::Name(s)
                        }
                    }
                    _ => Bid::Pass,
                };
                if let BidOutcome::Void(end) = m.bid(player, bid).unwrap() {
                    check_deal_end(&end, before);
                }
            }
            BExpected::Play { player } => {
                let legal = m.legal_cards();
                assert!(!legal.is_empty());
                for c in m.hand(player) {
                    assert_eq!(legal.contains(c), m.classify_play(player, *c, None).is_ok());
                }
                let out = if rng.chance(15) {
                    match m.timeout(player).unwrap() {
                        BTimeout::AutoPlay(out) => {
                            assert_eq!(Some(&out.card), legal.first());
                            Some(out)
                        }
                        BTimeout::Lost { .. } => None,
                        BTimeout::AutoBid(_) => unreachable!(),
                    }
                } else {
                    let c = legal[rng.below(legal.len() as u64) as usize];
                    let announce = [Some(Announce::Belote), Some(Announce::Rebelote)]
                        .into_iter()
                        .find(|a| m.classify_play(player, c, *a).is_ok() && rng.chance(800))
                        .flatten();
                    Some(m.play(player, c, announce).unwrap())
                };
                if let Some(end) = out.and_then(|o| o.deal_end) {
                    check_deal_end(&end, before);
                }
            }
            BExpected::CompleteHands { .. } | BExpected::Nothing => unreachable!(),
        }
        if !m.is_over() {
            check_cards_conserved(&m);
        }
    }
    actions
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn prop_belote_random_matches_end_conserve_cards_and_points(
        seed in proptest::array::uniform32(any::<u8>()),
        rng_seed in any::<u64>(),
    ) {
        let seed_hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
        random_match(&seed_hex, rng_seed);
    }

    #[test]
    fn prop_card_parser_never_panics(s in ".{0,6}") {
        if let Ok(c) = s.parse::<Card>() {
            prop_assert_eq!(c.to_string(), s.clone());
        }
        let _ = s.parse::<belote::Suit>();
        let _ = s.parse::<Bid>();
    }

    #[test]
    fn prop_card_parser_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..5)) {
        let s = String::from_utf8_lossy(&bytes);
        if let Ok(c) = s.parse::<Card>() {
            prop_assert_eq!(c.to_string(), s.into_owned());
        }
    }

    #[test]
    fn prop_below_in_range(seed in "[0-9a-f]{64}", prefix in "[a-z]{1,8}", n in 1u32..) {
        let mut s = fairness::Stream::new(&seed, prefix);
        for _ in 0..4 {
            let v = s.below(n);
            prop_assert!(matches!(v, Some(x) if x < n));
        }
    }

    #[test]
    fn prop_shuffle_is_a_permutation(seed in "[0-9a-f]{64}", deal in 0u32..1000) {
        let mut d = fairness::shuffle(&seed, "g", deal);
        d.sort_unstable();
        prop_assert_eq!(d, std::array::from_fn(|i| i as u8));
    }

    #[test]
    fn prop_die_in_range(seed in ".{0,70}", n in any::<u64>()) {
        let f = fairness::die(&seed, "g", n);
        prop_assert!((1..=6).contains(&f));
    }
}
