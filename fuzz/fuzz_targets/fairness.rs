//! Fuzz target: the fairness derivations (spec/fairness.md) on any seed text, game id and counter,
//! as a log may carry them. Nothing panics; dice are faces 1-6; a shuffle is a permutation of the
//! 32 cards; a seed's commitment verifies and another does not; `check_seed` accepts exactly 64
//! lowercase hex digits; an automatic selection picks distinct eligible squares the player did not
//! choose, as many as are missing (or as remain).
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use vigie_rules::fairness::{
    DECK_SIZE, MEDIEVAL_PIECES, SelectColor, auto_select, check_seed, commitment, die, duel,
    shuffle, verify_commitment,
};

struct Input<'a> {
    seed: &'a str,
    game: &'a str,
    n: u64,
    deal: u32,
    white: bool,
    chosen: Vec<u8>,
    eligible: Vec<u8>,
}

fn run(i: &Input<'_>) {
    let face = die(i.seed, i.game, i.n);
    assert!((1..=6).contains(&face), "die {face}");
    assert_eq!(duel(i.seed, i.game, i.n), duel(i.seed, i.game, i.n));
    let mut deck = shuffle(i.seed, i.game, i.deal);
    deck.sort_unstable();
    assert!(
        deck.iter().enumerate().all(|(k, &c)| usize::from(c) == k),
        "not a permutation of the {DECK_SIZE} cards: {deck:?}"
    );
    let c = commitment(i.seed);
    assert!(verify_commitment(i.seed, &c));
    assert!(!verify_commitment(&format!("{}0", i.seed), &c));
    let hex64 = i.seed.len() == 64
        && i.seed
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    assert_eq!(check_seed(i.seed).is_ok(), hex64, "{:?}", i.seed);
    let color = if i.white {
        SelectColor::White
    } else {
        SelectColor::Black
    };
    let chosen = &i.chosen[..i.chosen.len().min(8)];
    let eligible = &i.eligible[..i.eligible.len().min(40)];
    let picked = auto_select(i.seed, i.game, color, chosen, eligible);
    let mut remaining: Vec<u8> = eligible
        .iter()
        .copied()
        .filter(|s| !chosen.contains(s))
        .collect();
    remaining.sort_unstable();
    remaining.dedup();
    let missing = MEDIEVAL_PIECES.saturating_sub(chosen.len());
    assert_eq!(picked.len(), missing.min(remaining.len()), "{picked:?}");
    for (k, s) in picked.iter().enumerate() {
        assert!(remaining.contains(s), "{s} was not eligible");
        assert!(!picked[..k].contains(s), "{s} picked twice");
    }
}

fn input<'a>(u: &mut Unstructured<'a>) -> Result<Input<'a>> {
    Ok(Input {
        seed: u.arbitrary()?,
        game: u.arbitrary()?,
        n: u.arbitrary()?,
        deal: u.arbitrary()?,
        white: u.arbitrary()?,
        chosen: u.arbitrary()?,
        eligible: u.arbitrary()?,
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(i) = input(&mut Unstructured::new(data)) {
        run(&i);
    }
});
