//! Property tests: FEN and notation round trips, make/unmake, fast counts
//! against the full move lists, Medieval duels, and parsers that never panic.

use proptest::prelude::*;
use vigie_rules::games::draughts::{
    Color, Duel, Illegal, Piece, Position, Role, Square, Variant, apply_duels, classify,
    duel_victims, perft,
};

fn variant() -> impl Strategy<Value = Variant> {
    prop_oneof![Just(Variant::International), Just(Variant::Brazilian)]
}

/// Any placement of pieces (kings included, medieval flags on the Brazilian board).
fn random_position() -> impl Strategy<Value = Position> {
    (
        variant(),
        any::<bool>(),
        prop::collection::vec((0u8..10, any::<bool>()), 50),
    )
        .prop_map(|(v, white, cells)| {
            let mut p = Position::empty(v, if white { Color::White } else { Color::Black });
            for (sq, (kind, medieval)) in v.all_squares().zip(cells) {
                let piece = match kind {
                    0 => Some((Color::White, Role::Man)),
                    1 => Some((Color::White, Role::King)),
                    2 => Some((Color::Black, Role::Man)),
                    3 => Some((Color::Black, Role::King)),
                    _ => None,
                };
                p.set_piece(
                    sq,
                    piece.map(|(color, role)| Piece {
                        color,
                        role,
                        medieval: medieval && v == Variant::Brazilian,
                    }),
                );
            }
            p
        })
}

/// A position reached by random legal play from the start.
fn played_position() -> impl Strategy<Value = Position> {
    (
        variant(),
        prop::collection::vec(any::<prop::sample::Index>(), 0..80),
    )
        .prop_map(|(v, picks)| {
            let mut p = Position::new(v);
            for pick in picks {
                let moves = p.legal_paths();
                if moves.is_empty() {
                    break;
                }
                let m = &moves[pick.index(moves.len())];
                let _ = p.make(m);
            }
            p
        })
}

fn any_position() -> impl Strategy<Value = Position> {
    prop_oneof![played_position(), random_position()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn fen_round_trip(p in any_position()) {
        let fen = p.to_fen();
        let back = Position::from_fen(p.variant(), &fen);
        prop_assert_eq!(back, Ok(p), "{}", fen);
        // Canonical: printing the parsed FEN gives the same text.
        prop_assert_eq!(Position::from_fen(p.variant(), &fen).map(|q| q.to_fen()), Ok(fen));
    }

    #[test]
    fn notation_round_trip(p in played_position()) {
        let moves = p.legal_moves();
        for m in p.legal_paths() {
            let full = m.to_full_string();
            prop_assert_eq!(classify(&p, &full), Ok(m.clone()), "{} in {}", full, p.to_fen());
            let short = m.to_short_string();
            let same_ends = moves.iter().filter(|o| o.from() == m.from() && o.to() == m.to()).count();
            match classify(&p, &short) {
                Ok(found) => {
                    prop_assert!(found.same_move(&m), "{} in {}", short, p.to_fen());
                    prop_assert_eq!(same_ends, 1);
                }
                Err(Illegal::Ambiguous { count }) => {
                    prop_assert!(m.is_capture());
                    prop_assert_eq!(count, same_ends);
                }
                Err(e) => prop_assert!(false, "{} in {}: {}", short, p.to_fen(), e),
            }
            let pdn = p.to_pdn(&m);
            prop_assert!(classify(&p, &pdn).is_ok_and(|f| f.same_move(&m)));
        }
    }

    #[test]
    fn make_unmake_restores(p in any_position()) {
        let mut q = p;
        for m in p.legal_paths() {
            let undo = q.make(&m);
            prop_assert_eq!(q, p.after(&m));
            prop_assert_eq!(q.turn(), p.turn().other());
            q.unmake(&m, undo);
            prop_assert_eq!(q, p, "{} in {}", m, p.to_fen());
        }
    }

    #[test]
    fn random_game_unwinds(v in variant(), picks in prop::collection::vec(any::<prop::sample::Index>(), 0..120)) {
        // Play a random game keeping every undo, then take it all back.
        let start = Position::new(v);
        let mut p = start;
        let mut stack = Vec::new();
        for pick in picks {
            let moves = p.legal_paths();
            if moves.is_empty() {
                break;
            }
            let m = moves[pick.index(moves.len())].clone();
            let before = p;
            let undo = p.make(&m);
            stack.push((m, undo, before));
        }
        while let Some((m, undo, before)) = stack.pop() {
            p.unmake(&m, undo);
            prop_assert_eq!(p, before);
        }
        prop_assert_eq!(p, start);
    }

    #[test]
    fn counts_agree(p in any_position()) {
        let moves = p.legal_moves();
        prop_assert_eq!(p.legal_move_count(), moves.len(), "{}", p.to_fen());
        prop_assert_eq!(perft(&p, 1), moves.len() as u64);
        // Every move obeys the majority rule and mandatory capture.
        let best = moves.iter().map(|m| m.captures().len()).max().unwrap_or(0);
        prop_assert!(moves.iter().all(|m| m.captures().len() == best));
        prop_assert_eq!(best > 0, p.has_capture());
        // Deduplicated: distinct FMJD keys.
        let mut keys: Vec<_> = moves.iter().map(|m| m.key()).collect();
        keys.sort();
        keys.dedup();
        prop_assert_eq!(keys.len(), moves.len());
        // Captured squares hold opponent pieces, each once.
        for m in &moves {
            for (i, s) in m.captures().iter().enumerate() {
                prop_assert_eq!(p.piece_at(*s).map(|x| x.color), Some(p.turn().other()));
                prop_assert!(!m.captures()[..i].contains(s));
            }
        }
    }

    #[test]
    fn duels_apply_consistently(p in any_position(), wins in prop::collection::vec(any::<bool>(), 0..20)) {
        for m in p.legal_paths() {
            let victims = duel_victims(&p, &m);
            let mut duels = Vec::new();
            for (v, &won) in victims.iter().zip(wins.iter().chain(std::iter::repeat(&true))) {
                duels.push(Duel { victim: *v, won });
                if !won {
                    break;
                }
            }
            let (after, _) = apply_duels(&p, &m, &duels).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(after.turn(), p.turn().other());
            let lost = duels.iter().any(|d| !d.won);
            let mover = p.turn();
            let before = p.material();
            let now = after.material();
            if lost {
                prop_assert_eq!(now.side(mover).pieces() + 1, before.side(mover).pieces());
            } else {
                prop_assert_eq!(after, p.after(&m));
            }
        }
    }

    #[test]
    fn fen_parser_never_panics(v in variant(), s in "\\PC{0,40}") {
        let _ = Position::from_fen(v, &s);
    }

    #[test]
    fn fen_parser_never_panics_on_fen_like_text(v in variant(), s in "[WBKM0-9:,\\-]{0,40}") {
        if let Ok(p) = Position::from_fen(v, &s) {
            prop_assert_eq!(Position::from_fen(v, &p.to_fen()), Ok(p));
        }
    }

    #[test]
    fn classify_never_panics(p in any_position(), s in "\\PC{0,24}") {
        let _ = classify(&p, &s);
    }

    #[test]
    fn classify_never_panics_on_move_like_text(p in any_position(), s in "[0-9x\\-]{0,16}") {
        if let Ok(m) = classify(&p, &s) {
            prop_assert!(p.legal_paths().contains(&m));
        }
    }
}

#[test]
fn squares_from_untrusted_numbers() {
    assert_eq!(Variant::International.square(0), None);
    assert_eq!(Variant::International.square(51), None);
    assert_eq!(Variant::Brazilian.square(33), None);
    assert_eq!(Variant::Brazilian.square(32).map(Square::number), Some(32));
}
