//! Fuzz target: a Ludo game driven by arbitrary bytes, under a preset or an arbitrary variant (the
//! log's `game_started` may carry any). Nothing panics; a refused action leaves the game as it was;
//! `classify_*` accepts exactly what the action accepts; the tokens `legal_tokens` lists are exactly
//! the ones that may move; every player keeps the variant's number of tokens.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use vigie_rules::games::ludo::{Expected, Game, Seat, Variant};

fn variant(u: &mut Unstructured<'_>) -> Result<Variant> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => Variant::classic(),
        1 => Variant::duel(),
        2 => Variant::quick(),
        _ => Variant {
            name: u.arbitrary()?,
            players: u.int_in_range(0u8..=5)?,
            tokens: u.int_in_range(0u8..=6)?,
            exit_on: u.arbitrary()?,
            safe_squares: u.arbitrary()?,
            bonus_on_six: u.arbitrary()?,
            three_sixes: u.arbitrary()?,
            bonus_on_capture: u.arbitrary()?,
            bonus_on_finish: u.arbitrary()?,
            turn_s: u.arbitrary()?,
            max_timeouts: u.int_in_range(0u32..=4)?,
        },
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let v = variant(u)?;
    let seats: Vec<Seat> = if u.ratio(1u8, 8u8)? {
        u.arbitrary_iter::<u8>()?
            .take(5)
            .map(|s| s.map(|s| Seat::ALL[usize::from(s % 4)]))
            .collect::<Result<_>>()?
    } else if v.players == 2 {
        vec![Seat::Red, Seat::Yellow]
    } else {
        Seat::ALL.to_vec()
    };
    let Ok(mut g) = Game::new(v.clone(), &seats) else {
        return Ok(());
    };
    let n = g.players();
    for _ in 0..1000 {
        if g.is_over() || u.is_empty() {
            break;
        }
        let before = g.clone();
        let any_player = u.ratio(1u8, 16u8)?;
        let mut player = if any_player {
            u.int_in_range(0..=n)?
        } else {
            g.current()
        };
        let refused = match (u.int_in_range(0u8..=50)?, g.expected()) {
            (0, _) => g.timeout(player).is_err(),
            (1, _) => g.leave(player).is_err(),
            (_, Expected::Roll(p)) => {
                if !any_player {
                    player = p;
                }
                let value = u.int_in_range(0u8..=7)?;
                let judged = g.classify_roll(player, value).is_ok();
                let done = g.roll(player, value).is_ok();
                assert_eq!(judged, done, "classify_roll disagrees with roll");
                !done
            }
            (_, Expected::Move { player: p, value }) => {
                let legal = g.legal_tokens(value);
                assert!(
                    !legal.is_empty(),
                    "a move is expected but no token can move"
                );
                for t in 0..=v.tokens {
                    assert_eq!(
                        g.classify_move(p, t).is_ok(),
                        legal.contains(&t),
                        "token {t} and the legal tokens {legal:?} disagree"
                    );
                }
                if !any_player {
                    player = p;
                }
                let token = if u.ratio(1u8, 8u8)? {
                    u.int_in_range(0u8..=7)?
                } else {
                    legal[u.choose_index(legal.len())?]
                };
                let judged = g.classify_move(player, token).is_ok();
                let done = g.move_token(player, token).is_ok();
                assert_eq!(judged, done, "classify_move disagrees with move_token");
                !done
            }
            (_, Expected::Pass { player: p, value }) => {
                assert!(
                    g.legal_tokens(value).is_empty(),
                    "a pass is expected but a token can move"
                );
                if !any_player {
                    player = p;
                }
                let judged = g.classify_pass(player).is_ok();
                let done = g.pass(player).is_ok();
                assert_eq!(judged, done, "classify_pass disagrees with pass");
                !done
            }
            (_, Expected::Nothing) => true,
        };
        if refused {
            assert_eq!(g, before, "a refused action changed the game");
        }
        for p in 0..n {
            assert_eq!(g.tokens(p).map(<[_]>::len), Some(usize::from(v.tokens)));
        }
        assert_eq!(g.is_over(), g.winner().is_some());
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
