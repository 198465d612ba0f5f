//! Every case of `draughts-rules.json`: the complete legal move set.

use std::collections::BTreeSet;

use vigie_rules::games::draughts::{Position, Variant};

use super::fixtures::json;

#[test]
fn rules_fixture_move_sets() {
    let data = json("draughts-rules.json");
    let cases = data["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 13);
    for case in cases {
        let variant = match case["variant"].as_str() {
            None | Some("international") => Variant::International,
            Some("brazilian") => Variant::Brazilian,
            Some(other) => panic!("unknown variant {other}"),
        };
        let fen = case["fen"].as_str().expect("fen");
        let what = case["tests"].as_str().unwrap_or("");
        let pos = Position::from_fen(variant, fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
        let expected: BTreeSet<String> = case["moves"]
            .as_array()
            .expect("moves")
            .iter()
            .map(|m| m.as_str().expect("move").to_string())
            .collect();
        let moves = pos.legal_moves();
        let got: BTreeSet<String> = moves.iter().map(|m| m.to_short_string()).collect();
        assert_eq!(got, expected, "{fen} ({what})");
        assert_eq!(
            moves.len(),
            expected.len(),
            "{fen}: one move per listed entry"
        );
        assert_eq!(pos.legal_move_count(), moves.len(), "{fen}: count agrees");
        // Each listed move parses in its short form to the same move.
        for m in &moves {
            let parsed = pos
                .parse_move(&m.to_short_string())
                .unwrap_or_else(|e| panic!("{fen} {m}: {e}"));
            assert!(parsed.same_move(m));
        }
    }
}

#[test]
fn promotion_only_when_ending_on_far_row() {
    // "W:W15:B9,10": 15x13 goes through 4 (far row) and stays a man.
    let pos = Position::from_fen(Variant::International, "W:W15:B9,10").expect("fen");
    let moves = pos.legal_moves();
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0].to_full_string(), "15x4x13");
    assert!(!moves[0].promotes());
    // Brazilian: 11x2x9 passes 2 and ends on 9: no promotion.
    let pos = Position::from_fen(Variant::Brazilian, "W:W11:B6,7").expect("fen");
    let m = &pos.legal_moves()[0];
    assert_eq!(m.to_full_string(), "11x2x9");
    assert!(!m.promotes());
    // Ending on the far row promotes.
    let pos = Position::from_fen(Variant::International, "W:W12:B7").expect("fen");
    let m = &pos.legal_moves()[0];
    assert_eq!(m.to_full_string(), "12x1");
    assert!(m.promotes());
    let after = pos.after(m);
    assert_eq!(after.to_fen(), "B:WK1:B");
}
