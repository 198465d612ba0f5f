//! Shared helpers: locating and reading the shared fixtures.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The read-only `shared/` directory.
pub fn shared_dir() -> PathBuf {
    crate::common::shared()
}

pub fn read_json(rel: &str) -> Value {
    let path = shared_dir().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The sample's games: game id -> events in seq order.
pub fn sample_games() -> BTreeMap<String, Vec<Value>> {
    let path = shared_dir().join("fixtures/server-logs/sample.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut games: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let game = v["game"].as_str().unwrap().to_owned();
        games.entry(game).or_default().push(v);
    }
    for events in games.values_mut() {
        events.sort_by_key(|e| e["seq"].as_u64());
    }
    games
}

/// Games of one kind (`ludo`, `belote`).
pub fn sample_games_of(kind: &str) -> Vec<(String, Vec<Value>)> {
    sample_games()
        .into_iter()
        .filter(|(_, ev)| ev[0]["kind"] == kind)
        .collect()
}

/// Accounts in `players` order.
pub fn accounts(started: &Value) -> Vec<String> {
    started["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["account"].as_str().unwrap().to_owned())
        .collect()
}

pub fn player_index(accounts: &[String], account: &Value) -> usize {
    let a = account.as_str().unwrap();
    accounts
        .iter()
        .position(|x| x == a)
        .unwrap_or_else(|| panic!("unknown account {a}"))
}

/// The revealed seed of a game, checked against its commitment.
pub fn revealed_seed(events: &[Value]) -> String {
    let seed = events
        .iter()
        .find(|e| e["type"] == "seed_revealed")
        .and_then(|e| e["seed"].as_str())
        .expect("seed revealed")
        .to_owned();
    vigie_rules::fairness::check_seed(&seed).unwrap();
    let commitment = events[0]["commitment"].as_str().unwrap();
    assert_eq!(
        vigie_rules::fairness::commitment(&seed),
        commitment,
        "commitment = sha256(seed)"
    );
    seed
}
