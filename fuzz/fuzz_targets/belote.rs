//! Fuzz target: a two-player Belote match driven by arbitrary bytes: shuffled or arbitrary decks,
//! decks dealt whole or shown hand by hand (hands completed after the bid, rightly or not), any bid,
//! card, announce, timeout or departure by either player. Nothing panics; a refused action leaves
//! the match as it was; `classify_*` accepts exactly what the action accepts; the cards
//! `legal_cards` lists are exactly the ones the player to act may play; match totals never fall.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use vigie_rules::games::belote::{
    Announce, Bid, Card, Expected, Match, MatchConfig, Suit, canonical_deck, completed_hands,
    initial_deal,
};

/// The 32 cards in an order drawn from the bytes.
fn shuffled(u: &mut Unstructured<'_>) -> Result<[Card; 32]> {
    let mut d = canonical_deck();
    for i in (1..32).rev() {
        d.swap(i, u.int_in_range(0..=i)?);
    }
    Ok(d)
}

/// A shuffled deck or, now and then, 32 cards drawn with repetition (which a deal refuses).
fn deck(u: &mut Unstructured<'_>) -> Result<[Card; 32]> {
    if !u.ratio(1u8, 16u8)? {
        return shuffled(u);
    }
    let mut d = canonical_deck();
    for c in &mut d {
        *c = card(u)?;
    }
    Ok(d)
}

fn card(u: &mut Unstructured<'_>) -> Result<Card> {
    u.choose(&canonical_deck()).copied()
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let config = if u.ratio(1u8, 8u8)? {
        MatchConfig {
            target: u.int_in_range(0u32..=2000)?,
            max_timeouts: u.int_in_range(0u32..=5)?,
        }
    } else {
        MatchConfig::default()
    };
    let Ok(mut m) = Match::new(config) else {
        return Ok(());
    };
    let mut hidden: Option<[Card; 32]> = None;
    for _ in 0..600 {
        if m.is_over() || u.is_empty() {
            break;
        }
        let totals = m.totals();
        let before = m.clone();
        let player = if u.ratio(1u8, 16u8)? {
            u.int_in_range(0usize..=2)?
        } else {
            match m.expected() {
                Expected::Bid { player, .. } | Expected::Play { player } => player,
                Expected::CompleteHands { taker } => taker,
                Expected::Deal { dealer, .. } => dealer,
                Expected::Nothing => 0,
            }
        };
        let refused = match u.int_in_range(0u8..=40)? {
            0 => m.timeout(player).is_err(),
            1 => m.leave(player).is_err(),
            _ => match m.expected() {
                Expected::Deal { dealer, .. } => {
                    let d = deck(u)?;
                    if u.ratio(1u8, 3u8)? {
                        let init = initial_deal(&d, dealer);
                        hidden = Some(d);
                        m.deal_visible(init.hands, init.turned).is_err()
                    } else {
                        hidden = None;
                        m.deal(&d).is_err()
                    }
                }
                Expected::Bid { .. } => {
                    let bid = match u.int_in_range(0u8..=6)? {
                        0 => Bid::Take,
                        1 | 2 => Bid::Pass,
                        s => Bid::Name(Suit::ALL[usize::from(s - 3)]),
                    };
                    let judged = m.classify_bid(player, bid).is_ok();
                    let done = m.bid(player, bid).is_ok();
                    assert_eq!(judged, done, "classify_bid disagrees with bid");
                    !done
                }
                Expected::CompleteHands { taker } => {
                    let hands = match hidden {
                        Some(d) if !u.ratio(1u8, 8u8)? => completed_hands(&d, m.dealer(), taker),
                        _ => {
                            let d = shuffled(u)?;
                            [d[..16].to_vec(), d[16..].to_vec()]
                        }
                    };
                    m.complete_hands(hands).is_err()
                }
                Expected::Play { player: to_act } => {
                    let legal = m.legal_cards();
                    assert!(!legal.is_empty(), "nothing to play");
                    for c in m.hand(to_act).to_vec() {
                        assert_eq!(
                            m.classify_play(to_act, c, None).is_ok(),
                            legal.contains(&c),
                            "{c:?} and the legal cards {legal:?} disagree"
                        );
                    }
                    let c = if u.ratio(1u8, 8u8)? {
                        card(u)?
                    } else {
                        legal[u.choose_index(legal.len())?]
                    };
                    let announce = match u.int_in_range(0u8..=7)? {
                        0 => Some(Announce::Belote),
                        1 => Some(Announce::Rebelote),
                        _ => None,
                    };
                    let judged = m.classify_play(player, c, announce).is_ok();
                    let done = m.play(player, c, announce).is_ok();
                    assert_eq!(judged, done, "classify_play disagrees with play");
                    !done
                }
                Expected::Nothing => true,
            },
        };
        if refused {
            assert_eq!(m, before, "a refused action changed the match");
        }
        let after = m.totals();
        assert!(
            after[0] >= totals[0] && after[1] >= totals[1],
            "totals fell"
        );
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
