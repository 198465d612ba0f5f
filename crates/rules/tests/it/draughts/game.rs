//! Game state: end of game, draw rules, repetitions, Medieval selection and
//! duels, the Brazilian timeout move.

use vigie_rules::games::draughts::{
    Color, DrawReason, Duel, DuelError, DuelOutcome, Game, GameError, Mode, Position, Role,
    SelectError, Status, Variant, WinReason, apply_duels, auto_move, check_duels, duel_victims,
};

fn pos(v: Variant, fen: &str) -> Position {
    Position::from_fen(v, fen).expect("fen")
}

fn sq(v: Variant, n: u32) -> vigie_rules::games::draughts::Square {
    v.square(n).expect("square")
}

fn play(g: &mut Game, text: &str) {
    let m = g
        .classify(text)
        .unwrap_or_else(|e| panic!("{text} in {}: {e}", g.position().to_fen()));
    g.play(&m).unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// Plays king moves that neither capture, nor allow a capture, nor repeat a
/// position, until `plies` are played.
fn wander(g: &mut Game, plies: u32, seen: &mut Vec<Position>) {
    for _ in 0..plies {
        let next = g.legal_moves().into_iter().find(|m| {
            let after = g.position().after(m);
            !m.is_capture() && !after.has_capture() && !seen.contains(&after)
        });
        let m = next.unwrap_or_else(|| panic!("no fresh quiet move in {}", g.position().to_fen()));
        seen.push(g.position().after(&m));
        g.play(&m).expect("legal");
    }
}

#[test]
fn international_draw_rule_after_50_quiet_plies() {
    // Kings on edge squares can never be captured: 50 king moves and no capture.
    let v = Variant::International;
    let mut g = Game::from_position(pos(v, "W:WK50:BK1"), Mode::Standard);
    for i in 0..49 {
        let text = match i % 4 {
            0 => "50-45",
            1 => "1-6",
            2 => "45-50",
            _ => "6-1",
        };
        play(&mut g, text);
        assert_eq!(g.quiet_plies(), i + 1);
    }
    // No repetition rule in international draughts: still going after 49.
    assert_eq!(g.status(), Status::Ongoing);
    assert!(g.repetitions() >= 3);
    play(&mut g, "1-6");
    assert_eq!(g.quiet_plies(), 50);
    assert_eq!(
        g.status(),
        Status::Draw {
            reason: DrawReason::DrawRule
        }
    );
    assert_eq!(g.ply(), 50);
    let m = g.legal_moves()[0].clone();
    assert_eq!(g.play(&m), Err(GameError::GameOver));
}

#[test]
fn man_moves_and_captures_reset_the_counter() {
    let v = Variant::International;
    let mut g = Game::from_position(pos(v, "W:WK50,35:BK1,14"), Mode::Standard);
    play(&mut g, "50-45");
    play(&mut g, "1-6");
    assert_eq!(g.quiet_plies(), 2);
    play(&mut g, "35-30");
    assert_eq!(g.quiet_plies(), 0);
    play(&mut g, "6-1");
    assert_eq!(g.quiet_plies(), 1);
    play(&mut g, "45-50");
    assert_eq!(g.quiet_plies(), 2);
    play(&mut g, "14-19");
    assert_eq!(g.quiet_plies(), 0);
    // A capture resets it too.
    let mut g = Game::from_position(pos(v, "W:WK50,28:BK1,23"), Mode::Standard);
    play(&mut g, "28x19");
    assert_eq!(g.quiet_plies(), 0);
}

#[test]
fn brazilian_draw_rule_after_40_quiet_plies() {
    let v = Variant::Brazilian;
    let mut g = Game::from_position(pos(v, "W:WK32:BK1"), Mode::Standard);
    let mut seen = vec![*g.position()];
    wander(&mut g, 39, &mut seen);
    assert_eq!(g.quiet_plies(), 39);
    assert_eq!(g.status(), Status::Ongoing);
    wander(&mut g, 1, &mut seen);
    assert_eq!(
        g.status(),
        Status::Draw {
            reason: DrawReason::DrawRule
        }
    );
}

#[test]
fn brazilian_threefold_repetition() {
    let v = Variant::Brazilian;
    // Kings on edge squares (32-28, 1-5) can never be captured.
    let mut g = Game::from_position(pos(v, "W:WK32:BK1"), Mode::Standard);
    // The start position counts as the first occurrence.
    for text in ["32-28", "1-5", "28-32", "5-1"] {
        play(&mut g, text);
    }
    assert_eq!(g.repetitions(), 2);
    assert_eq!(g.status(), Status::Ongoing);
    for text in ["32-28", "1-5", "28-32"] {
        play(&mut g, text);
    }
    assert_eq!(g.status(), Status::Ongoing);
    play(&mut g, "5-1");
    assert_eq!(g.repetitions(), 3);
    assert_eq!(
        g.status(),
        Status::Draw {
            reason: DrawReason::Repetition
        }
    );
}

#[test]
fn repetition_counts_medieval_flags_and_side_to_move() {
    let v = Variant::Brazilian;
    let a = pos(v, "W:WK29:BK4");
    let b = pos(v, "W:WMK29:BK4");
    let c = pos(v, "B:WK29:BK4");
    assert_ne!(a, b);
    assert_ne!(a, c);
}

#[test]
fn wins_by_no_pieces_and_no_moves() {
    let v = Variant::International;
    let g = Game::new(v);
    assert_eq!(g.status(), Status::Ongoing);
    assert_eq!(g.legal_move_count(), 9);
    assert!(!g.is_forced());
    let mut g = Game::from_position(pos(v, "W:W28:B23"), Mode::Standard);
    assert!(g.is_forced());
    play(&mut g, "28x19");
    assert_eq!(
        g.status(),
        Status::Win {
            winner: Color::White,
            reason: WinReason::NoPieces
        }
    );
    // Black's man on 36 is blocked after 46-41 (41 occupied, 47 behind it).
    let mut g = Game::from_position(pos(v, "W:W46,47:B36"), Mode::Standard);
    play(&mut g, "46-41");
    assert_eq!(
        g.status(),
        Status::Win {
            winner: Color::White,
            reason: WinReason::NoMoves
        }
    );
    // A position can start finished.
    let g = Game::from_position(pos(v, "B:W41,47:B36"), Mode::Standard);
    assert_eq!(
        g.status(),
        Status::Win {
            winner: Color::White,
            reason: WinReason::NoMoves
        }
    );
    let g = Game::from_position(pos(v, "B:W41:B"), Mode::Standard);
    assert_eq!(
        g.status(),
        Status::Win {
            winner: Color::White,
            reason: WinReason::NoPieces
        }
    );
}

#[test]
fn material_counts() {
    let g = Game::from_position(
        pos(Variant::Brazilian, "W:WK29,MK30,21,22:BM1,2"),
        Mode::Medieval,
    );
    let m = g.material();
    assert_eq!((m.white.men, m.white.kings, m.white.medieval), (2, 2, 1));
    assert_eq!((m.black.men, m.black.kings, m.black.medieval), (2, 0, 1));
    assert_eq!(m.side(Color::White).pieces(), 4);
    // Standard mode drops medieval flags.
    let g = Game::from_position(pos(Variant::Brazilian, "W:WMK30:BM1"), Mode::Standard);
    assert_eq!(g.material().white.medieval, 0);
}

#[test]
fn illegal_moves_are_refused_by_the_game() {
    let mut g = Game::new(Variant::International);
    let other = Position::from_fen(Variant::International, "W:W28,32:B23").expect("fen");
    let m = other.parse_move("28x19").expect("legal there");
    assert!(matches!(g.play(&m), Err(GameError::NotLegal { .. })));
}

#[test]
fn auto_move_is_the_smallest_path() {
    let braz = Position::new(Variant::Brazilian);
    assert_eq!(
        auto_move(&braz).map(|m| m.to_full_string()),
        Some("21-17".to_string())
    );
    // Two paths of one move: the smallest stop sequence wins.
    let p = pos(Variant::International, "W:W43:B38,28,39,29");
    assert_eq!(
        auto_move(&p).map(|m| m.to_full_string()),
        Some("43x32x23x34x43".to_string())
    );
    // Several pieces can capture: the lowest start square first.
    let p = pos(Variant::Brazilian, "W:W22,23:B18");
    assert_eq!(
        auto_move(&p).map(|m| m.to_full_string()),
        Some("22x15".to_string())
    );
    assert_eq!(
        Game::from_position(p, Mode::Standard).auto_move(),
        auto_move(&p)
    );
    assert_eq!(auto_move(&pos(Variant::Brazilian, "W:W:B1")), None);
}

#[test]
fn medieval_selection() {
    let v = Variant::Brazilian;
    let s = |ns: &[u32]| ns.iter().map(|&n| sq(v, n)).collect::<Vec<_>>();
    let mut g = Game::new_medieval();
    let first = g.legal_moves()[0].clone();
    assert_eq!(g.play(&first), Err(GameError::SelectionPending));
    assert_eq!(
        g.select(Color::White, &s(&[21, 22])),
        Err(GameError::Selection(SelectError::WrongCount { count: 2 }))
    );
    assert_eq!(
        g.select(Color::White, &s(&[21, 21, 22])),
        Err(GameError::Selection(SelectError::Duplicate {
            square: sq(v, 21)
        }))
    );
    assert_eq!(
        g.select(Color::White, &s(&[21, 22, 5])),
        Err(GameError::Selection(SelectError::NotOwnMan {
            square: sq(v, 5),
            color: Color::White
        }))
    );
    assert_eq!(
        g.select(Color::White, &s(&[21, 22, 17])),
        Err(GameError::Selection(SelectError::NotOwnMan {
            square: sq(v, 17),
            color: Color::White
        }))
    );
    g.select(Color::White, &s(&[21, 22, 23])).expect("valid");
    assert_eq!(
        g.select(Color::White, &s(&[24, 25, 26])),
        Err(GameError::Selection(SelectError::AlreadySelected {
            color: Color::White
        }))
    );
    assert_eq!(g.play(&first), Err(GameError::SelectionPending));
    g.select(Color::Black, &s(&[1, 2, 3])).expect("valid");
    assert_eq!(g.material().white.medieval, 3);
    g.play(&first).expect("now legal");
    assert_eq!(
        g.select(Color::Black, &s(&[4, 5, 6])),
        Err(GameError::Selection(SelectError::NotStartPosition))
    );
    assert_eq!(
        Game::new(v).select(Color::White, &s(&[21, 22, 23])),
        Err(GameError::NotMedieval)
    );
    let intl = Position::new(Variant::International);
    assert_eq!(
        intl.select_medieval(Color::White, &[]),
        Err(SelectError::NotBrazilian)
    );
}

#[test]
fn medieval_duel_outcomes() {
    let v = Variant::Brazilian;
    // From the sample log: 18x11x2x9 takes 15 (ordinary), then 7 and 6 (medieval).
    let p = pos(v, "W:W18,32:B15,M7,M6,4");
    let m = p.parse_move("18x11x2x9").expect("legal");
    let d = |n: u32, won: bool| Duel {
        victim: sq(v, n),
        won,
    };
    assert_eq!(duel_victims(&p, &m), vec![sq(v, 7), sq(v, 6)]);
    assert_eq!(
        check_duels(&p, &m, &[]),
        Err(DuelError::TooFew {
            expected: 2,
            found: 0
        })
    );
    assert_eq!(
        check_duels(&p, &m, &[d(7, true)]),
        Err(DuelError::TooFew {
            expected: 2,
            found: 1
        })
    );
    assert_eq!(
        check_duels(&p, &m, &[d(6, true), d(7, true)]),
        Err(DuelError::WrongVictim {
            index: 0,
            expected: sq(v, 7),
            found: sq(v, 6)
        })
    );
    assert_eq!(
        check_duels(&p, &m, &[d(7, false), d(6, true)]),
        Err(DuelError::AfterLoss {
            index: 1,
            victim: sq(v, 6)
        })
    );
    assert_eq!(
        check_duels(&p, &m, &[d(7, true), d(6, true), d(6, true)]),
        Err(DuelError::TooMany {
            expected: 2,
            found: 3
        })
    );
    // Lost first duel: 15 stays taken, the attacker goes, 7 and 6 stay.
    let (after, outcome) = apply_duels(&p, &m, &[d(7, false)]).expect("fits");
    assert_eq!(
        outcome,
        DuelOutcome::Lost {
            victim: sq(v, 7),
            taken: vec![sq(v, 15)]
        }
    );
    assert_eq!(after.to_fen(), "B:W32:B4,M6,M7");
    // Won then lost.
    let (after, _) = apply_duels(&p, &m, &[d(7, true), d(6, false)]).expect("fits");
    assert_eq!(after.to_fen(), "B:W32:B4,M6");
    // All won: the full move, like an ordinary capture.
    let (after, outcome) = apply_duels(&p, &m, &[d(7, true), d(6, true)]).expect("fits");
    assert_eq!(outcome, DuelOutcome::Completed);
    assert_eq!(after, p.after(&m));
    // A capture of ordinary pieces needs no duel.
    let q = pos(v, "W:WM18:B15,4");
    let m = q.parse_move("18x11").expect("legal");
    assert!(duel_victims(&q, &m).is_empty());
    assert_eq!(
        apply_duels(&q, &m, &[]).map(|(_, o)| o),
        Ok(DuelOutcome::Completed)
    );
}

#[test]
fn medieval_game_lost_duel_rules() {
    let v = Variant::Brazilian;
    let d = |n: u32, won: bool| Duel {
        victim: sq(v, n),
        won,
    };
    // The cut-short capture resets the draw counter and passes the turn.
    let mut g = Game::from_position(pos(v, "W:WK29,18:BK10,M7,M6"), Mode::Medieval);
    play(&mut g, "29-25");
    // The ordinary black king steps next to the man: 18 must take 15, 7 and 6.
    play(&mut g, "10-15");
    assert_eq!(g.quiet_plies(), 2);
    let m = g.classify("18x11x2x9").expect("legal");
    assert!(matches!(
        g.play(&m),
        Err(GameError::Duel(DuelError::TooFew { .. }))
    ));
    let outcome = g.play_with_duels(&m, &[d(7, false)]).expect("fits");
    assert!(matches!(outcome, DuelOutcome::Lost { .. }));
    assert_eq!(g.quiet_plies(), 0);
    assert_eq!(g.position().turn(), Color::Black);
    assert_eq!(g.position().to_fen(), "B:WK25:BM6,M7");
    assert_eq!(g.status(), Status::Ongoing);
    // A player whose last piece loses a duel loses at once.
    let mut g = Game::from_position(pos(v, "W:W18:B15,M7,M6,4"), Mode::Medieval);
    let m = g.classify("18x11x2x9").expect("legal");
    g.play_with_duels(&m, &[d(7, false)]).expect("fits");
    assert_eq!(
        g.status(),
        Status::Win {
            winner: Color::Black,
            reason: WinReason::NoPieces
        }
    );
}

#[test]
fn medieval_man_keeps_its_flag_when_promoted() {
    let v = Variant::Brazilian;
    let p = pos(v, "W:WM6:B28");
    let m = p.parse_move("6-1").expect("legal");
    assert!(m.promotes());
    let after = p.after(&m);
    let piece = after.piece_at(sq(v, 1)).expect("piece");
    assert_eq!((piece.role, piece.medieval), (Role::King, true));
    assert_eq!(after.to_fen(), "B:WMK1:B28");
}
