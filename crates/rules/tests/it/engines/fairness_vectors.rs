//! Every vector of fairness-vectors.json, bit for bit.

use crate::engines::common::read_json;
use vigie_rules::fairness::{self, SelectColor};
use vigie_rules::games::belote::Card;

fn names(deck: &[u8; 32]) -> Vec<String> {
    deck.iter()
        .map(|&i| Card::from_index(i).unwrap().to_string())
        .collect()
}

#[test]
fn vector_seed_and_commitment() {
    let v = read_json("fixtures/fairness-vectors.json");
    let seed = v["seed"].as_str().unwrap();
    assert_eq!(fairness::check_seed(seed), Ok(()));
    assert_eq!(
        fairness::commitment(seed),
        v["commitment"].as_str().unwrap()
    );
    assert!(fairness::verify_commitment(
        seed,
        v["commitment"].as_str().unwrap()
    ));
}

#[test]
fn vector_dice_first_40() {
    let v = read_json("fixtures/fairness-vectors.json");
    let seed = v["seed"].as_str().unwrap();
    let game = v["dice"]["game"].as_str().unwrap();
    let expected: Vec<u8> = v["dice"]["first_40"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u8)
        .collect();
    let got: Vec<u8> = (0..40).map(|n| fairness::die(seed, game, n)).collect();
    assert_eq!(got, expected);
    let iter: Vec<u8> = fairness::Dice::new(seed, game).take(40).collect();
    assert_eq!(iter, expected);
}

#[test]
fn vector_shuffles_deal_0_and_1() {
    let v = read_json("fixtures/fairness-vectors.json");
    let seed = v["seed"].as_str().unwrap();
    let game = v["shuffles"]["match"].as_str().unwrap();
    for (d, key) in [(0, "deal_0"), (1, "deal_1")] {
        let expected: Vec<String> = v["shuffles"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names(&fairness::shuffle(seed, game, d)), expected, "{key}");
    }
}

#[test]
fn vector_duels_first_16() {
    let v = read_json("fixtures/fairness-vectors.json");
    let seed = v["seed"].as_str().unwrap();
    let game = v["duels"]["game"].as_str().unwrap();
    let expected: Vec<bool> = v["duels"]["first_16"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_bool().unwrap())
        .collect();
    let got: Vec<bool> = (0..16).map(|m| fairness::duel(seed, game, m)).collect();
    assert_eq!(got, expected);
}

#[test]
fn vector_autoselect() {
    let v = read_json("fixtures/fairness-vectors.json");
    let seed = v["seed"].as_str().unwrap();
    let a = &v["autoselect"];
    let list = |k: &str| -> Vec<u8> {
        a[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u8)
            .collect()
    };
    let color: SelectColor = a["color"].as_str().unwrap().parse().unwrap();
    let picked = fairness::auto_select(
        seed,
        a["game"].as_str().unwrap(),
        color,
        &list("chosen"),
        &list("candidates"),
    );
    assert_eq!(picked, list("picked"));
}
