//! Replays every draughts game of `sample.jsonl` (an independent
//! implementation's logs): every accepted move must parse to a legal move,
//! every `duels` array must fit and be applied, and the final status must agree
//! with `game_ended` for the reasons the engine decides.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use vigie_rules::games::draughts::{
    Color, DrawReason, Duel, Game, Status, Variant, WinReason, auto_move, duel_victims,
};

use super::fixtures::sample_log;

fn color(seat: &str) -> Color {
    match seat {
        "white" => Color::White,
        "black" => Color::Black,
        other => panic!("bad seat {other}"),
    }
}

fn square(game: &Game, v: &Value) -> vigie_rules::games::draughts::Square {
    let n = v.as_u64().expect("square number");
    game.variant()
        .square(u32::try_from(n).expect("small"))
        .expect("square on board")
}

#[derive(Default, Debug)]
struct Totals {
    games: BTreeMap<String, usize>,
    moves: usize,
    duel_moves: usize,
    duels: usize,
    lost_duels: usize,
    endings_checked: usize,
}

/// Replays one game's events (in `seq` order); returns what it checked.
fn replay_game(id: &str, events: &[&Value], totals: &mut Totals) {
    let start = events[0];
    assert_eq!(start["type"], "game_started", "{id}");
    let kind = start["kind"].as_str().expect("kind");
    let mode = start["mode"].as_str().expect("mode");
    let variant = match kind {
        "draughts10" => Variant::International,
        "draughts8" => Variant::Brazilian,
        _ => return,
    };
    *totals.games.entry(format!("{kind}/{mode}")).or_default() += 1;
    let mut game = if mode == "medieval" {
        Game::new_medieval()
    } else {
        Game::new(variant)
    };
    let seats: HashMap<&str, Color> = start["players"]
        .as_array()
        .expect("players")
        .iter()
        .map(|p| {
            (
                p["account"].as_str().expect("account"),
                color(p["seat"].as_str().expect("seat")),
            )
        })
        .collect();
    for e in &events[1..] {
        let seq = &e["seq"];
        match e["type"].as_str().expect("type") {
            "selection" => {
                let who = seats[e["player"].as_str().expect("player")];
                let squares: Vec<_> = e["squares"]
                    .as_array()
                    .expect("squares")
                    .iter()
                    .map(|s| square(&game, s))
                    .collect();
                game.select(who, &squares)
                    .unwrap_or_else(|err| panic!("{id} seq {seq}: selection: {err}"));
            }
            "move" => {
                let text = e["move"].as_str().expect("move text");
                let who = seats[e["player"].as_str().expect("player")];
                if e["status"] != "accepted" {
                    if e["reason"] == "illegal" && who == game.position().turn() {
                        assert!(
                            game.classify(text).is_err(),
                            "{id} seq {seq}: rejected {text} is legal"
                        );
                    }
                    continue;
                }
                assert_eq!(
                    who,
                    game.position().turn(),
                    "{id} seq {seq}: wrong side to move"
                );
                let m = game.classify(text).unwrap_or_else(|err| {
                    panic!(
                        "{id} seq {seq}: {text} in {}: {err}",
                        game.position().to_fen()
                    )
                });
                if e["auto"] == true {
                    let auto = auto_move(game.position()).expect("auto move exists");
                    assert_eq!(auto, m, "{id} seq {seq}: auto move");
                }
                let duels: Vec<Duel> = e["duels"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|d| Duel {
                                victim: square(&game, &d["victim"]),
                                won: d["won"].as_bool().expect("won"),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let victims = duel_victims(game.position(), &m);
                if !victims.is_empty() {
                    assert!(
                        !duels.is_empty(),
                        "{id} seq {seq}: medieval victims {victims:?} but no duels"
                    );
                    totals.duel_moves += 1;
                    totals.duels += duels.len();
                    totals.lost_duels += duels.iter().filter(|d| !d.won).count();
                }
                game.play_with_duels(&m, &duels)
                    .unwrap_or_else(|err| panic!("{id} seq {seq}: {text}: {err}"));
                totals.moves += 1;
            }
            "game_ended" => {
                let result = e["result"].as_str().expect("result");
                let reason = e["reason"].as_str().expect("reason");
                let expected = match reason {
                    "no_pieces" | "no_moves" => Some(Status::Win {
                        winner: color(result),
                        reason: if reason == "no_pieces" {
                            WinReason::NoPieces
                        } else {
                            WinReason::NoMoves
                        },
                    }),
                    "draw_rule" => Some(Status::Draw {
                        reason: DrawReason::DrawRule,
                    }),
                    "repetition" => Some(Status::Draw {
                        reason: DrawReason::Repetition,
                    }),
                    _ => None,
                };
                match expected {
                    Some(status) => {
                        assert_eq!(
                            game.status(),
                            status,
                            "{id} seq {seq}: {reason} at {}",
                            game.position().to_fen()
                        );
                        totals.endings_checked += 1;
                    }
                    None => assert_eq!(
                        game.status(),
                        Status::Ongoing,
                        "{id} seq {seq}: ended by {reason}"
                    ),
                }
                return;
            }
            _ => {}
        }
    }
    panic!("{id}: no game_ended");
}

#[test]
fn sample_log_draughts_games_replay() {
    let lines = sample_log();
    let mut games: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for l in &lines {
        games
            .entry(l["game"].as_str().expect("game id").to_string())
            .or_default()
            .push(l);
    }
    let mut totals = Totals::default();
    for (id, events) in &mut games {
        events.sort_by_key(|e| e["seq"].as_u64());
        replay_game(id, events, &mut totals);
    }
    eprintln!("{totals:?}");
    let kinds: Vec<(&str, usize)> = totals.games.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        kinds,
        vec![
            ("draughts10/standard", 8),
            ("draughts8/medieval", 8),
            ("draughts8/standard", 8)
        ]
    );
    assert_eq!(totals.moves, 1723, "every accepted draughts move replayed");
    assert_eq!(totals.duel_moves, 53, "every move with a duels array");
    // 15 no_pieces, 3 repetition, 1 draw_rule in the sample.
    assert_eq!(totals.endings_checked, 19);
}
