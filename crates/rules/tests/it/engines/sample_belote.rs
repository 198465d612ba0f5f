//! Replays every Belote match of sample.jsonl through the engine: from the
//! decks derived from the revealed seed, and again from the logged hands
//! alone (`deal_visible` + `complete_hands`).

use crate::engines::common::{accounts, player_index, revealed_seed, sample_games_of};
use serde_json::Value;
use vigie_rules::fairness::shuffle;
use vigie_rules::games::belote::{
    Announce, Bid, BidOutcome, Card, DealEnd, Expected, Match, MatchConfig, MatchEnd, Outcome,
    deck_from_indices,
};

fn card(v: &Value) -> Card {
    v.as_str().unwrap().parse().unwrap()
}

fn hands(v: &Value, accts: &[String]) -> [Vec<Card>; 2] {
    let get = |a: &String| -> Vec<Card> { v[a].as_array().unwrap().iter().map(card).collect() };
    [get(&accts[0]), get(&accts[1])]
}

fn per_player(v: &Value, accts: &[String]) -> [u32; 2] {
    [
        v[&accts[0]].as_u64().unwrap() as u32,
        v[&accts[1]].as_u64().unwrap() as u32,
    ]
}

#[derive(Default, Debug)]
struct Tally {
    deals: usize,
    voids: usize,
    plays: usize,
    belotes: usize,
    outcomes: Vec<Outcome>,
}

fn replay(game_id: &str, events: &[Value], from_seed: bool) -> Tally {
    let started = &events[0];
    let accts = accounts(started);
    let target = started["variant"]["target"].as_u64().unwrap() as u32;
    let max_timeouts = started["clock"]["max_timeouts"].as_u64().unwrap_or(3) as u32;
    let seed = revealed_seed(events);
    let mut m = Match::new(MatchConfig {
        target,
        max_timeouts,
    })
    .unwrap();
    let mut last_end: Option<DealEnd> = None;
    let mut taken_hands: Option<[Vec<Card>; 2]> = None;
    let mut t = Tally::default();
    for e in &events[1..] {
        let seq = &e["seq"];
        let ctx = format!("{game_id} seq {seq}");
        match e["type"].as_str().unwrap() {
            "deal" => {
                let d = e["deal"].as_u64().unwrap() as u32;
                let dealer = player_index(&accts, &e["dealer"]);
                assert_eq!(m.expected(), Expected::Deal { deal: d, dealer }, "{ctx}");
                let logged = hands(&e["hands"], &accts);
                let turned = card(&e["turned"]);
                // The derived deck always agrees with the log.
                let deck = deck_from_indices(&shuffle(&seed, game_id, d)).unwrap();
                let start = if from_seed {
                    m.deal(&deck).unwrap()
                } else {
                    m.deal_visible(logged.clone(), turned).unwrap()
                };
                let derived = vigie_rules::games::belote::initial_deal(&deck, dealer);
                assert_eq!(derived.hands, logged, "{ctx}: derived six-card hands");
                assert_eq!(derived.turned, turned, "{ctx}: derived turned card");
                assert_eq!(start.hands, logged, "{ctx}: hands");
                assert_eq!(start.turned, turned, "{ctx}: turned");
                t.deals += 1;
            }
            "bid" => {
                let p = player_index(&accts, &e["player"]);
                let bid: Bid = e["bid"].as_str().unwrap().parse().unwrap();
                if e["status"] != "accepted" {
                    assert!(
                        m.classify_bid(p, bid).is_err(),
                        "{ctx}: rejected bid is valid"
                    );
                    continue;
                }
                assert_eq!(
                    m.expected(),
                    Expected::Bid {
                        player: p,
                        round: e["round"].as_u64().unwrap() as u8
                    },
                    "{ctx}"
                );
                match m.bid(p, bid).unwrap_or_else(|err| panic!("{ctx}: {err}")) {
                    BidOutcome::Void(end) => {
                        t.voids += 1;
                        last_end = Some(end);
                    }
                    BidOutcome::Taken { hands, .. } => taken_hands = hands,
                    BidOutcome::Next { .. } => {}
                }
            }
            "hands_completed" => {
                let logged = hands(&e["hands"], &accts);
                let taker = player_index(&accts, &e["taker"]);
                if from_seed {
                    assert_eq!(
                        taken_hands.take(),
                        Some(logged.clone()),
                        "{ctx}: completed hands"
                    );
                } else {
                    m.complete_hands(logged.clone())
                        .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                    let d = m.deal_number();
                    let deck = deck_from_indices(&shuffle(&seed, game_id, d)).unwrap();
                    let derived =
                        vigie_rules::games::belote::completed_hands(&deck, m.dealer(), taker);
                    assert_eq!(derived, logged, "{ctx}: derived completion");
                }
                assert_eq!(m.taker(), Some(taker), "{ctx}: taker");
                assert_eq!(
                    m.trump().map(|s| s.to_string()),
                    e["trump"].as_str().map(str::to_owned),
                    "{ctx}: trump"
                );
            }
            "play" => {
                let p = player_index(&accts, &e["player"]);
                let c = card(&e["card"]);
                let announce: Option<Announce> = e["announce"].as_str().map(|a| a.parse().unwrap());
                if e["status"] != "accepted" {
                    assert!(
                        m.classify_play(p, c, announce).is_err(),
                        "{ctx}: rejected play is legal"
                    );
                    continue;
                }
                assert!(m.legal_cards().contains(&c), "{ctx}: {c} not legal");
                let out = m
                    .play(p, c, announce)
                    .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                if announce == Some(Announce::Rebelote) {
                    t.belotes += 1;
                }
                t.plays += 1;
                if let Some(end) = out.deal_end {
                    last_end = Some(end);
                }
            }
            "deal_ended" => {
                let end = last_end
                    .take()
                    .unwrap_or_else(|| panic!("{ctx}: no deal end"));
                assert_eq!(end.deal as u64, e["deal"].as_u64().unwrap(), "{ctx}");
                assert_eq!(
                    end.outcome.as_str(),
                    e["outcome"].as_str().unwrap(),
                    "{ctx}: outcome"
                );
                assert_eq!(
                    end.points,
                    per_player(&e["points"], &accts),
                    "{ctx}: points"
                );
                assert_eq!(
                    end.totals,
                    per_player(&e["totals"], &accts),
                    "{ctx}: totals"
                );
                if end.outcome != Outcome::Void {
                    assert_eq!(end.card_points[0] + end.card_points[1], 162);
                }
                t.outcomes.push(end.outcome);
            }
            "timeout" => {
                let p = player_index(&accts, &e["player"]);
                m.timeout(p).unwrap();
            }
            "left" => {
                let p = player_index(&accts, &e["player"]);
                m.leave(p).unwrap();
            }
            "game_ended" => {
                let (w, how) = m
                    .winner()
                    .unwrap_or_else(|| panic!("{ctx}: match not over"));
                assert_eq!(accts[w], e["result"].as_str().unwrap(), "{ctx}: winner");
                if e["reason"] == "target" {
                    assert_eq!(how, MatchEnd::Target);
                }
            }
            "seed_revealed" => assert!(m.is_over()),
            other => panic!("{ctx}: unexpected {other}"),
        }
    }
    assert!(m.is_over(), "{game_id}: match not over");
    t
}

#[test]
fn sample_belote_matches_replay_from_derived_decks() {
    let games = sample_games_of("belote");
    assert_eq!(games.len(), 8);
    let mut deals = 0;
    let mut belotes = 0;
    let mut outcomes = Vec::new();
    for (id, events) in &games {
        let t = replay(id, events, true);
        deals += t.deals;
        belotes += t.belotes;
        outcomes.extend(t.outcomes);
        assert!(t.plays > 0);
        let _ = t.voids;
    }
    assert!(deals > 40 && belotes > 0);
    for o in [Outcome::Made, Outcome::Dedans, Outcome::Void] {
        assert!(outcomes.contains(&o), "{o:?} exercised");
    }
}

#[test]
fn sample_belote_matches_replay_from_logged_hands() {
    for (id, events) in &sample_games_of("belote") {
        replay(id, events, false);
    }
}
