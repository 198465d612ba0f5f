//! Replays every Ludo game of sample.jsonl through the engine with the dice
//! derived from the revealed seed.

use crate::engines::common::{accounts, player_index, revealed_seed, sample_games_of};
use serde_json::Value;
use vigie_rules::fairness::Dice;
use vigie_rules::games::ludo::{
    EndReason, Expected, Game, RollOutcome, Seat, TimeoutOutcome, Variant,
};

pub fn variant_from_json(v: &Value) -> Variant {
    let b = |k: &str| v[k].as_bool().unwrap();
    let n = |k: &str| v[k].as_u64().unwrap();
    Variant {
        name: v["name"].as_str().unwrap().to_owned(),
        players: n("players") as u8,
        tokens: n("tokens") as u8,
        exit_on: v["exit_on"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u8)
            .collect(),
        safe_squares: b("safe_squares"),
        bonus_on_six: b("bonus_on_six"),
        three_sixes: b("three_sixes"),
        bonus_on_capture: b("bonus_on_capture"),
        bonus_on_finish: b("bonus_on_finish"),
        turn_s: n("turn_s") as u32,
        max_timeouts: n("max_timeouts") as u32,
    }
}

#[derive(Default, Debug)]
struct Tally {
    rolls: usize,
    moves: usize,
    passes: usize,
    third_sixes: usize,
    bonus_rolls: usize,
    captures: usize,
}

fn replay(game_id: &str, events: &[Value]) -> Tally {
    let started = &events[0];
    let variant = variant_from_json(&started["variant"]);
    // The preset named in the log carries exactly the preset's settings.
    if let Some(preset) = Variant::preset(&variant.name) {
        assert_eq!(variant, preset, "{game_id}: variant {}", variant.name);
    }
    assert_eq!(
        started["clock"]["turn_s"].as_u64(),
        Some(u64::from(variant.turn_s))
    );
    let accts = accounts(started);
    let seats: Vec<Seat> = started["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["seat"].as_str().unwrap().parse().unwrap())
        .collect();
    let seed = revealed_seed(events);
    let mut dice = Dice::new(&seed, game_id);
    let mut g = Game::new(variant, &seats).unwrap();
    let mut t = Tally::default();
    let mut last_mover = None;
    for e in &events[1..] {
        let seq = &e["seq"];
        match e["type"].as_str().unwrap() {
            "roll" => {
                let p = player_index(&accts, &e["player"]);
                assert_eq!(
                    g.expected(),
                    Expected::Roll(p),
                    "{game_id} seq {seq}: roller"
                );
                assert_eq!(e["n"].as_u64(), Some(g.rolls()), "{game_id} seq {seq}: n");
                let value = e["value"].as_u64().unwrap() as u8;
                assert_eq!(Some(value), dice.next(), "{game_id} seq {seq}: die");
                if last_mover == Some(p) {
                    t.bonus_rolls += 1;
                }
                t.rolls += 1;
                if let RollOutcome::ThirdSix { .. } = g.roll(p, value).unwrap() {
                    t.third_sixes += 1;
                    last_mover = None;
                }
            }
            "move" => {
                let p = player_index(&accts, &e["player"]);
                let accepted = e["status"] == "accepted";
                let is_pass = e["pass"].as_bool().unwrap_or(false);
                if !accepted {
                    let r = if is_pass {
                        g.classify_pass(p).err()
                    } else {
                        g.classify_move(p, e["token"].as_u64().unwrap() as u8).err()
                    };
                    assert!(r.is_some(), "{game_id} seq {seq}: rejected move is legal");
                    continue;
                }
                if e["auto"].as_bool().unwrap_or(false) {
                    // Applied by the preceding timeout; nothing in this sample.
                    continue;
                }
                if is_pass {
                    g.pass(p)
                        .unwrap_or_else(|err| panic!("{game_id} seq {seq}: {err}"));
                    t.passes += 1;
                } else {
                    let token = e["token"].as_u64().unwrap() as u8;
                    let m = g
                        .move_token(p, token)
                        .unwrap_or_else(|err| panic!("{game_id} seq {seq}: {err}"));
                    t.captures += m.captures.len();
                    t.moves += 1;
                }
                last_mover = Some(p);
            }
            "timeout" => {
                let p = player_index(&accts, &e["player"]);
                let out = g.timeout(p).unwrap();
                let forfeit = matches!(out, TimeoutOutcome::Forfeit { .. });
                assert_eq!(forfeit, e["outcome"] == "forfeit", "{game_id} seq {seq}");
            }
            "left" => {
                let p = player_index(&accts, &e["player"]);
                g.leave(p).unwrap();
            }
            "game_ended" => {
                let (w, reason) = g.winner().unwrap_or_else(|| panic!("{game_id}: not over"));
                assert_eq!(accts[w], e["result"].as_str().unwrap(), "{game_id}: winner");
                if e["reason"] == "finished" {
                    assert_eq!(reason, EndReason::Finished);
                }
            }
            "seed_revealed" => assert!(g.is_over()),
            other => panic!("{game_id}: unexpected {other}"),
        }
    }
    assert!(
        g.is_over(),
        "{game_id}: game not over at the end of the log"
    );
    t
}

#[test]
fn sample_ludo_games_replay_legally_with_derived_dice() {
    let games = sample_games_of("ludo");
    assert_eq!(games.len(), 8);
    let mut total = Tally::default();
    for (id, events) in &games {
        let t = replay(id, events);
        total.rolls += t.rolls;
        total.moves += t.moves;
        total.passes += t.passes;
        total.third_sixes += t.third_sixes;
        total.bonus_rolls += t.bonus_rolls;
        total.captures += t.captures;
    }
    // The sample exercises passes, third sixes, bonus rolls and captures.
    assert!(total.passes > 0 && total.third_sixes > 0 && total.bonus_rolls > 0);
    assert!(total.captures > 0, "{total:?}");
    eprintln!("ludo sample: {total:?}");
}
