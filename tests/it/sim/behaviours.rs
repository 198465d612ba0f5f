//! Behaviours: tampered clients send engine-illegal attempts of many kinds, honest players only benign ones; the pairs, rings, bots, sitters and stallers leave their marks.

use std::collections::{BTreeMap, BTreeSet};

use vigie::log::{Body, RejectReason};

use crate::sim::common::{Run, clean, faulty, subtle};
use crate::sim::replay_adapter::{AttemptInfo, horizon, replay};

fn attempts(run: &Run) -> Vec<AttemptInfo> {
    let fault_seqs: BTreeSet<(String, i64)> = run
        .faults()
        .into_iter()
        .flat_map(|(g, v)| v.into_iter().map(move |(s, _)| (g.clone(), s)))
        .collect();
    let games = run.games();
    let horizon = horizon(&games);
    games
        .values()
        .flat_map(|g| replay(g, horizon).attempts)
        .filter(|a| !fault_seqs.contains(&(a.game.clone(), a.seq)))
        .collect()
}

const ILLEGAL: [&str; 13] = [
    "not_own_piece",
    "wrong_direction",
    "skipped_capture",
    "not_majority",
    "no_such_path",
    "no_such_token",
    "token_finished",
    "wrong_distance",
    "not_out_of_yard",
    "did_not_follow_suit",
    "did_not_trump",
    "did_not_beat_trump",
    "card_not_in_hand",
];

#[test]
fn tampered_clients_send_illegal_attempts_of_many_kinds() {
    for run in [clean(), faulty()] {
        let who = run.behaviours();
        let mut kinds = BTreeSet::new();
        let mut n = 0;
        for a in attempts(run) {
            if who.get(&a.account).map(String::as_str) != Some("tampered_client") {
                continue;
            }
            n += 1;
            match a.reason {
                RejectReason::Illegal => {
                    assert!(
                        ILLEGAL.contains(&a.class.as_str()),
                        "{}:{} {} is {}",
                        a.game,
                        a.seq,
                        a.account,
                        a.class
                    )
                }
                RejectReason::NotYourTurn => {
                    assert_eq!(a.class, "out_of_turn");
                }
                RejectReason::Malformed => {
                    assert!(a.class == "unparseable" || a.class.starts_with("card_not"))
                }
                RejectReason::GameOver => assert_eq!(a.class, "after_end"),
            }
            if a.reason == RejectReason::NotYourTurn && a.think_ms >= 1000 {
                kinds.insert("out_of_turn_far".to_string());
            }
            kinds.insert(a.class.clone());
        }
        assert!(n > 30, "{n} tampered attempts");
        for k in [
            "not_own_piece",
            "wrong_direction",
            "no_such_path",
            "unparseable",
            "out_of_turn_far",
            "no_such_token",
            "card_not_in_hand",
        ] {
            assert!(
                kinds.contains(k),
                "no tampered attempt of kind {k}: {kinds:?}"
            );
        }
        assert!(kinds.len() >= 10, "{kinds:?}");
    }
}

#[test]
fn other_players_only_make_benign_rejected_attempts() {
    for run in [clean(), faulty()] {
        let who = run.behaviours();
        let mut races = 0;
        for a in attempts(run) {
            if who.get(&a.account).map(String::as_str) == Some("tampered_client") {
                continue;
            }
            let benign = match a.reason {
                RejectReason::NotYourTurn => a.class == "out_of_turn" && a.think_ms <= 300,
                RejectReason::Malformed => {
                    a.class == "unparseable" || a.class == "card_not_in_hand"
                }
                RejectReason::GameOver => a.class == "after_end",
                RejectReason::Illegal => false,
            };
            assert!(
                benign,
                "{}:{} {} ({}) {:?} {} after {} ms",
                a.game,
                a.seq,
                a.account,
                who.get(&a.account).map_or("", |s| s),
                a.reason,
                a.class,
                a.think_ms
            );
            races += usize::from(a.reason == RejectReason::NotYourTurn);
        }
        assert!(races > 5, "{races} races");
    }
}

fn arranged(run: &Run, kind: &str) -> Vec<serde_json::Value> {
    run.labels["arranged"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["arranged"] == kind)
        .cloned()
        .collect()
}

#[test]
fn chip_dumpers_lose_high_stakes_to_their_partner() {
    let run = faulty();
    let games = run.games();
    let list = arranged(run, "chip_dumping");
    assert!(list.len() >= 4, "{} chip-dumping games", list.len());
    let groups = run.labels["groups"].as_array().cloned().unwrap_or_default();
    for a in &list {
        let g = &games[a["game"].as_str().unwrap_or("")];
        let loser = a["loser"].as_str().unwrap_or("");
        let group = groups
            .iter()
            .find(|gr| gr["behaviour"] == "chip_dumping" && gr["accounts"][0] == loser);
        assert!(group.is_some(), "the loser {loser} is not a dumper");
        let Body::GameStarted(s) = &g.lines[0].1.body else {
            panic!()
        };
        assert!(s.stake >= 200, "stake {}", s.stake);
        let end = g.lines.iter().find_map(|(_, e)| match &e.body {
            Body::GameEnded(x) => Some(x.clone()),
            _ => None,
        });
        let Some(end) = end else { panic!() };
        assert!(matches!(
            end.reason,
            vigie::log::EndReason::Left
                | vigie::log::EndReason::Timeout
                | vigie::log::EndReason::Timeouts
        ));
        assert_eq!(
            end.payouts.iter().find(|p| p.0 == loser).map(|p| p.1),
            Some(0)
        );
        assert!(g.lines.len() < 200, "{} is not quick", g.id);
    }
}

#[test]
fn win_traders_alternate_quick_rated_wins() {
    let run = faulty();
    let games = run.games();
    let mut by_pair: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for a in arranged(run, "win_trading") {
        let g = &games[a["game"].as_str().unwrap_or("")];
        let Body::GameStarted(s) = &g.lines[0].1.body else {
            panic!()
        };
        assert!(s.rated);
        let mut pair: Vec<String> = s.players.iter().map(|p| p.account.clone()).collect();
        pair.sort();
        let loser = a["loser"].as_str().unwrap_or("").to_string();
        let left = g
            .lines
            .iter()
            .any(|(_, e)| matches!(&e.body, Body::Left(l) if l.player == loser));
        assert!(left, "{}: the loser does not leave", g.id);
        by_pair.entry(pair).or_default().push(loser);
    }
    assert!(!by_pair.is_empty());
    for losers in by_pair.values() {
        for w in losers.windows(2) {
            assert_ne!(w[0], w[1], "losers do not alternate: {losers:?}");
        }
    }
}

#[test]
fn rings_share_a_device_and_play_each_other() {
    let run = faulty();
    let games = run.games();
    let list = arranged(run, "shared_device");
    assert!(!list.is_empty());
    for a in list {
        let g = &games[a["game"].as_str().unwrap_or("")];
        let Body::GameStarted(s) = &g.lines[0].1.body else {
            panic!()
        };
        assert_eq!(s.players[0].device, s.players[1].device);
    }
}

/// Think times of accepted, non-automatic draughts moves per account.
fn think_times(run: &Run) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for g in run.games().values() {
        for (_, e) in &g.lines {
            if let Body::Move(m) = &e.body
                && m.attempt.accepted()
                && !m.attempt.is_auto()
                && matches!(m.action, vigie::log::MoveAction::Draughts(_))
            {
                out.entry(m.player.clone())
                    .or_default()
                    .push(m.attempt.think_ms as f64);
            }
        }
    }
    out
}

fn cv(xs: &[f64]) -> f64 {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
    var.sqrt() / mean
}

#[test]
fn bots_think_regularly_and_stallers_near_the_limit() {
    let run = clean();
    let who = run.behaviours();
    let times = think_times(run);
    let mut bots = 0;
    for (acc, xs) in &times {
        if xs.len() < 30 {
            continue;
        }
        match who.get(acc).map(String::as_str) {
            Some("bot") => {
                bots += 1;
                assert!(cv(xs) < 0.12, "bot {acc}: cv {}", cv(xs));
            }
            Some("honest") => assert!(cv(xs) > 0.3, "honest {acc}: cv {}", cv(xs)),
            _ => {}
        }
    }
    assert!(bots >= 1);
    let stalls: usize = times
        .iter()
        .filter(|(a, _)| who.get(*a).map(String::as_str) == Some("staller"))
        .map(|(_, xs)| xs.iter().filter(|&&t| t >= 27_500.0).count())
        .sum();
    assert!(stalls > 10, "{stalls} stalled moves");
}

#[test]
fn sitters_and_rage_quitters_show_up() {
    let run = clean();
    let who = run.behaviours();
    let mut timeouts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut left: BTreeMap<&str, usize> = BTreeMap::new();
    let games = run.games();
    for g in games.values() {
        for (_, e) in &g.lines {
            match &e.body {
                Body::Timeout(t) => {
                    *timeouts
                        .entry(who.get(&t.player).map_or("", String::as_str))
                        .or_insert(0) += 1
                }
                Body::Left(l) if l.reason != vigie::log::LeftReason::Resigned => {
                    *left
                        .entry(who.get(&l.player).map_or("", String::as_str))
                        .or_insert(0) += 1
                }
                _ => {}
            }
        }
    }
    let per = |m: &BTreeMap<&str, usize>, b: &str| {
        m.get(b).copied().unwrap_or(0) as f64
            / run.labels["summary"]["behaviours"][b]
                .as_f64()
                .unwrap_or(1.0)
    };
    assert!(
        per(&timeouts, "sitter") > 5.0 * per(&timeouts, "honest"),
        "{timeouts:?}"
    );
    assert!(
        per(&left, "rage_quit") > 5.0 * per(&left, "honest"),
        "{left:?}"
    );
}

/// The subtle setting: win traders no longer alternate strictly, chip dumpers resign after several
/// moves at ordinary stakes, and honest look-alikes are labelled (households share one ip).
#[test]
fn subtle_cheaters_and_lookalikes_are_labelled() {
    let run = subtle();
    let games = run.games();
    let mut repeats = 0;
    let mut by_pair: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for a in arranged(run, "win_trading") {
        let mut pair: Vec<String> = a["accounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect();
        pair.sort();
        by_pair
            .entry(pair)
            .or_default()
            .push(a["loser"].as_str().unwrap_or("").to_string());
    }
    for losers in by_pair.values() {
        repeats += losers.windows(2).filter(|w| w[0] == w[1]).count();
    }
    assert!(repeats > 0, "subtle traders still alternate: {by_pair:?}");
    let dumps = arranged(run, "chip_dumping");
    assert!(!dumps.is_empty());
    let mut small = 0;
    for a in &dumps {
        let g = &games[a["game"].as_str().unwrap_or("")];
        let Body::GameStarted(s) = &g.lines[0].1.body else {
            panic!()
        };
        // Ordinary stakes (at most 500, mostly under 200), not the blatant 200-1000.
        assert!(s.stake <= 500, "{}: stake {}", g.id, s.stake);
        small += usize::from(s.stake < 200);
        let loser = a["loser"].as_str().unwrap_or("");
        let resigned = g.lines.iter().any(|(_, e)| {
            matches!(&e.body, Body::Left(l) if l.player == loser && l.reason == vigie::log::LeftReason::Resigned)
        });
        assert!(resigned, "{}: the dumper does not resign", g.id);
    }
    assert!(
        small * 2 > dumps.len(),
        "{small} of {} under 200",
        dumps.len()
    );
    let accounts = run.labels["accounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for class in ["quick_steady", "bad_connection", "household", "friends"] {
        let n = accounts
            .iter()
            .filter(|a| a["lookalike"] == class && a["behaviour"] == "honest")
            .count();
        assert!(n >= 5, "{class}: {n}");
    }
    let households: Vec<&serde_json::Value> = run.labels["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["lookalike"] == "household")
        .collect();
    assert!(!households.is_empty());
    for h in households {
        let ips: std::collections::BTreeSet<String> = h["accounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|acc| accounts.iter().find(|a| a["account"] == *acc))
            .filter_map(|a| a["ips"][0].as_str().map(str::to_string))
            .collect();
        assert_eq!(ips.len(), 1, "{h}");
    }
    assert_eq!(run.labels["options"]["subtlety"], 1.0);
}
