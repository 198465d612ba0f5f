//! Cross-checks the sample's Medieval games against the fairness derivations:
//! every logged duel and every automatic selection.

use crate::engines::common::{revealed_seed, sample_games_of};
use vigie_rules::fairness::{SelectColor, auto_select, duel};

#[test]
fn sample_medieval_duels_and_selections_match_derivations() {
    let games: Vec<_> = sample_games_of("draughts8")
        .into_iter()
        .filter(|(_, ev)| ev[0]["mode"] == "medieval")
        .collect();
    assert_eq!(games.len(), 8);
    let (mut duels, mut autos) = (0, 0);
    for (id, events) in &games {
        let seed = revealed_seed(events);
        let seat_of = |account: &serde_json::Value| -> SelectColor {
            let p = events[0]["players"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| &p["account"] == account)
                .unwrap();
            p["seat"].as_str().unwrap().parse().unwrap()
        };
        let mut m = 0u64;
        for e in events {
            if e["type"] == "selection" {
                let color = seat_of(&e["player"]);
                let squares: Vec<u8> = e["squares"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as u8)
                    .collect();
                let auto: Vec<u8> = e["auto"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as u8)
                    .collect();
                if auto.is_empty() {
                    continue;
                }
                let chosen: Vec<u8> = squares
                    .iter()
                    .copied()
                    .filter(|s| !auto.contains(s))
                    .collect();
                let men: Vec<u8> = match color {
                    SelectColor::White => (21..=32).collect(),
                    SelectColor::Black => (1..=12).collect(),
                };
                assert_eq!(auto_select(&seed, id, color, &chosen, &men), auto, "{id}");
                autos += 1;
            }
            if e["type"] == "move"
                && e["status"] == "accepted"
                && let Some(ds) = e["duels"].as_array()
            {
                for d in ds {
                    assert_eq!(
                        Some(duel(&seed, id, m)),
                        d["won"].as_bool(),
                        "{id} seq {}: duel {m}",
                        e["seq"]
                    );
                    m += 1;
                    duels += 1;
                }
            }
        }
    }
    assert!(
        duels > 20 && autos > 0,
        "{duels} duels, {autos} automatic selections"
    );
}
