//! Fuzz target: a draughts game driven by arbitrary bytes (international, Brazilian or Medieval,
//! from the start or from an arbitrary FEN). Nothing panics; FEN prints back to the position it
//! was read from; move text the engine accepts names a legal move; the PDN the engine writes for a
//! legal move reads back as that move; every legal move can be played; Medieval selections and
//! duel outcomes are accepted or refused, never half-applied. An input whose first line is `I` or
//! `B` and a FEN the engine reads starts from that position (`seeds/draughts/`).
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use vigie_rules::games::draughts::{
    Color, Duel, Game, Mode, Position, Status, Variant, duel_victims,
};

/// A game from a FEN the engine reads, after checking that the FEN it prints reads back as the
/// same position.
fn from_fen(variant: Variant, fen: &str) -> Option<Game> {
    let p = Position::from_fen(variant, fen).ok()?;
    let printed = p.to_fen();
    assert_eq!(Position::from_fen(variant, &printed), Ok(p), "{printed}");
    Some(Game::from_position(p, Mode::Standard))
}

fn game(u: &mut Unstructured<'_>) -> Result<Game> {
    Ok(match u.int_in_range(0u8..=4)? {
        0 => Game::new(Variant::International),
        1 => Game::new(Variant::Brazilian),
        2 => Game::new_medieval(),
        v => {
            let variant = if v == 3 {
                Variant::International
            } else {
                Variant::Brazilian
            };
            from_fen(variant, u.arbitrary()?).unwrap_or_else(|| Game::new(variant))
        }
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mut g = game(u)?;
    if g.mode() == Mode::Medieval {
        for color in [Color::White, Color::Black] {
            let picks: Vec<u8> = u.arbitrary()?;
            let squares: Vec<_> = picks
                .iter()
                .filter_map(|&n| g.variant().square(u32::from(n)))
                .collect();
            let before = *g.position();
            if g.select(color, &squares).is_err() {
                assert_eq!(
                    *g.position(),
                    before,
                    "a refused selection changed the position"
                );
            }
        }
    }
    play(g, u)
}

fn play(mut g: Game, u: &mut Unstructured<'_>) -> Result<()> {
    for _ in 0..200 {
        // A Medieval game whose selections were refused cannot start.
        if g.status() != Status::Ongoing || !g.selection_done() || u.is_empty() {
            break;
        }
        // Arbitrary move text: refused, or one of the legal moves.
        if u.ratio(1u8, 4u8)? {
            let text: &str = u.arbitrary()?;
            if let Ok(m) = g.classify(text) {
                assert!(
                    g.legal_moves().iter().any(|l| l.same_move(&m)),
                    "{text:?} was read as {}, which is not legal",
                    m.to_full_string()
                );
            }
        }
        let moves = g.legal_moves();
        assert_eq!(moves.len(), g.legal_move_count());
        assert!(
            !moves.is_empty(),
            "an ongoing game with nothing to play: {}",
            g.position().to_fen()
        );
        let m = &moves[u.choose_index(moves.len())?];
        let pdn = g.position().to_pdn(m);
        let back = g.classify(&pdn);
        assert!(
            back.as_ref().is_ok_and(|b| b.same_move(m)),
            "{pdn} reads back as {back:?}"
        );
        let victims = duel_victims(g.position(), m);
        let duels: Vec<Duel> = if u.ratio(1u8, 8u8)? {
            // Arbitrary outcomes: the engine accepts them only when they fit the move.
            let n = u.int_in_range(0usize..=3)?;
            (0..n)
                .map(|_| -> Result<Duel> {
                    let sq = u.int_in_range(1u32..=50)?;
                    Ok(Duel {
                        victim: g.variant().square(sq).unwrap_or(m.from()),
                        won: u.arbitrary()?,
                    })
                })
                .collect::<Result<_>>()?
        } else {
            // The victims in order, each duel won or lost; a lost duel ends the capture there.
            let mut duels = Vec::with_capacity(victims.len());
            for &victim in &victims {
                let won = u.ratio(3u8, 4u8)?;
                duels.push(Duel { victim, won });
                if !won {
                    break;
                }
            }
            duels
        };
        let before = *g.position();
        let ply = g.ply();
        match g.play_with_duels(m, &duels) {
            Ok(_) => assert_eq!(g.ply(), ply + 1),
            Err(e) => {
                assert_eq!(
                    *g.position(),
                    before,
                    "a refused move ({e}) changed the position"
                );
                // The same move with its own victims' outcomes is always accepted.
                let fair: Vec<Duel> = victims
                    .iter()
                    .map(|&victim| Duel { victim, won: true })
                    .collect();
                if let Err(e) = g.play_with_duels(m, &fair) {
                    panic!("a legal move was refused: {e}");
                }
            }
        }
    }
    Ok(())
}

/// A game from a first line `I<FEN>` or `B<FEN>` (international or Brazilian), if it holds one
/// the engine reads: the seeds start from the rule and perft positions of the fixtures.
fn from_first_line(data: &[u8]) -> Option<(Game, &[u8])> {
    let end = data.iter().position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&data[..end]).ok()?;
    let variant = match line.as_bytes().first()? {
        b'I' => Variant::International,
        b'B' => Variant::Brazilian,
        _ => return None,
    };
    Some((from_fen(variant, line.get(1..)?)?, &data[end + 1..]))
}

fuzz_target!(|data: &[u8]| {
    let _ = match from_first_line(data) {
        Some((g, rest)) => play(g, &mut Unstructured::new(rest)),
        None => run(&mut Unstructured::new(data)),
    };
});
