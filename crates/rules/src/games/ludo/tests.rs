//! Rule tests for the Ludo engine, one or more per rule of rules.md "Ludo".

use super::*;
use TokenPos::{At, Yard};

fn duel() -> Game {
    Game::with_default_seats(Variant::duel()).unwrap()
}

fn classic() -> Game {
    Game::with_default_seats(Variant::classic()).unwrap()
}

/// Rolls `value` for the expected player and moves `token`.
fn roll_move(g: &mut Game, value: u8, token: u8) -> MoveOutcome {
    let p = g.current();
    g.roll(p, value).unwrap();
    g.move_token(p, token).unwrap()
}

#[test]
fn rule_track_squares_absolute_from_seat_start() {
    assert_eq!(Seat::Green.square(0), 13);
    assert_eq!(Seat::Blue.square(12), 51);
    assert_eq!(Seat::Blue.square(13), 0);
    assert_eq!(Seat::Yellow.square(50), 24);
}

#[test]
fn rule_first_player_is_first_listed_then_seat_order() {
    let mut v = Variant::classic();
    v.bonus_on_six = false;
    let mut g = Game::new(v, &[Seat::Green, Seat::Red, Seat::Blue, Seat::Yellow]).unwrap();
    let mut order = Vec::new();
    for _ in 0..5 {
        let p = g.current();
        order.push(g.seat(p).unwrap());
        g.roll(p, 3).unwrap();
        g.pass(p).unwrap();
    }
    assert_eq!(
        order,
        [
            Seat::Green,
            Seat::Yellow,
            Seat::Blue,
            Seat::Red,
            Seat::Green
        ]
    );
    let g = Game::new(Variant::duel(), &[Seat::Yellow, Seat::Red]).unwrap();
    assert_eq!(g.expected(), Expected::Roll(0));
    assert_eq!(g.seat(0), Some(Seat::Yellow));
}

#[test]
fn rule_two_player_games_use_red_and_yellow() {
    assert_eq!(
        Game::new(Variant::duel(), &[Seat::Red, Seat::Green]),
        Err(LudoError::Seats(SeatsError::TwoPlayerSeat(Seat::Green)))
    );
    assert_eq!(
        Game::new(Variant::classic(), &[Seat::Red, Seat::Yellow]),
        Err(LudoError::Seats(SeatsError::Count {
            expected: 4,
            got: 2
        }))
    );
    assert_eq!(
        Game::new(
            Variant::classic(),
            &[Seat::Red, Seat::Red, Seat::Blue, Seat::Green]
        ),
        Err(LudoError::Seats(SeatsError::Duplicate(Seat::Red)))
    );
}

#[test]
fn rule_every_variant_setting_is_validated() {
    let mut v = Variant::classic();
    v.exit_on = vec![0];
    assert_eq!(
        Game::with_default_seats(v),
        Err(LudoError::Variant(VariantError::ExitValue(0)))
    );
}

#[test]
fn rule_leave_yard_only_on_exit_on_value() {
    let mut g = duel();
    g.roll(0, 5).unwrap();
    assert_eq!(
        g.classify_move(0, 0),
        Err(LudoError::NotAllowedOutOfYard { token: 0, value: 5 })
    );
    assert_eq!(
        g.expected(),
        Expected::Pass {
            player: 0,
            value: 5
        }
    );
    g.pass(0).unwrap();
    g.roll(1, 6).unwrap();
    let m = g.move_token(1, 2).unwrap();
    assert_eq!(
        (m.from, m.to),
        (Yard, 0),
        "a token leaves the yard onto p = 0"
    );
}

#[test]
fn rule_quick_exits_on_one_onto_p0() {
    let mut g = Game::with_default_seats(Variant::quick()).unwrap();
    assert_eq!(g.legal_tokens_for(0, 1), vec![0, 1]);
    assert!(g.legal_tokens_for(0, 3).is_empty());
    let m = roll_move(&mut g, 1, 1);
    assert_eq!(m.to, 0);
    assert!(!m.extra_roll);
    assert_eq!(g.tokens(0).unwrap(), &[Yard, At(0)]);
}

#[test]
fn rule_exact_roll_to_finish() {
    let mut g = duel();
    g.set_tokens(0, &[At(53), Yard, Yard, Yard]);
    g.roll(0, 4).unwrap();
    assert_eq!(
        g.classify_move(0, 0),
        Err(LudoError::WrongDistance {
            token: 0,
            from: 53,
            value: 4
        })
    );
    assert_eq!(g.classify_pass(0), Ok(()));
    g.pass(0).unwrap();
    g.roll(1, 1).unwrap();
    g.pass(1).unwrap();
    let m = roll_move(&mut g, 3, 0);
    assert!(m.finished);
    assert_eq!(m.to, FINISHED);
    assert_eq!(g.finished_tokens(0), 1);
}

#[test]
fn rule_progress_runs_track_then_home_column() {
    let mut g = duel();
    g.set_tokens(1, &[At(48), Yard, Yard, Yard]);
    g.roll(0, 1).unwrap();
    g.pass(0).unwrap();
    let m = roll_move(&mut g, 5, 0);
    assert_eq!(m.to, 53, "p 51-55 is the home column");
    assert!(m.captures.is_empty());
}

#[test]
fn rule_capture_sends_all_opponent_tokens_on_the_square_back() {
    let mut v = Variant::duel();
    v.safe_squares = true;
    let mut g = Game::with_default_seats(v).unwrap();
    // Yellow tokens at p = 30 and 30 are on square (26 + 30) mod 52 = 4.
    g.set_tokens(1, &[At(30), At(30), At(10), Yard]);
    g.set_tokens(0, &[At(1), Yard, Yard, Yard]);
    let m = roll_move(&mut g, 3, 0);
    assert_eq!(m.to, 4);
    assert_eq!(m.captures.len(), 2);
    assert!(m.captures.iter().all(|c| c.player == 1 && c.square == 4));
    assert_eq!(g.tokens(1).unwrap(), &[Yard, Yard, At(10), Yard]);
    assert!(!m.extra_roll, "duel has no capture bonus");
}

#[test]
fn rule_no_capture_on_safe_squares() {
    let mut g = duel();
    // Square 8 is safe: yellow p = 34 is (26 + 34) mod 52 = 8.
    g.set_tokens(1, &[At(34), Yard, Yard, Yard]);
    g.set_tokens(0, &[At(5), Yard, Yard, Yard]);
    let m = roll_move(&mut g, 3, 0);
    assert_eq!(m.to, 8);
    assert!(m.captures.is_empty());
    assert_eq!(g.tokens(1).unwrap()[0], At(34));
}

#[test]
fn rule_safe_squares_off_capture_anywhere_even_on_start() {
    let mut v = Variant::duel();
    v.safe_squares = false;
    let mut g = Game::with_default_seats(v).unwrap();
    // Yellow at p = 26 is on square 0, red's start.
    g.set_tokens(1, &[At(26), Yard, Yard, Yard]);
    let m = roll_move(&mut g, 6, 0);
    assert_eq!(m.to, 0);
    assert_eq!(m.captures.len(), 1);
    assert_eq!(g.tokens(1).unwrap()[0], Yard);
}

#[test]
fn rule_own_tokens_may_share_a_square() {
    let mut g = duel();
    g.set_tokens(0, &[At(3), At(5), Yard, Yard]);
    let m = roll_move(&mut g, 2, 0);
    assert!(m.captures.is_empty());
    assert_eq!(g.tokens(0).unwrap()[..2], [At(5), At(5)]);
}

#[test]
fn rule_home_column_is_out_of_reach() {
    let mut g = duel();
    g.set_tokens(0, &[At(51), Yard, Yard, Yard]);
    g.set_tokens(1, &[At(48), Yard, Yard, Yard]);
    g.roll(0, 1).unwrap();
    g.move_token(0, 0).unwrap();
    let m = roll_move(&mut g, 3, 0);
    assert!(m.captures.is_empty());
    assert_eq!(g.tokens(0).unwrap()[0], At(52));
}

#[test]
fn rule_must_move_when_any_token_can_and_chooses_which() {
    let mut g = duel();
    g.set_tokens(0, &[At(3), At(10), Yard, At(55)]);
    g.roll(0, 4).unwrap();
    assert_eq!(g.legal_tokens(4), vec![0, 1]);
    assert_eq!(
        g.classify_pass(0),
        Err(LudoError::PassWhileMovable { legal: vec![0, 1] })
    );
    assert_eq!(
        g.expected(),
        Expected::Move {
            player: 0,
            value: 4
        }
    );
    // The player chooses: the higher token is fine.
    assert_eq!(g.move_token(0, 1).unwrap().to, 14);
}

#[test]
fn rule_no_legal_move_records_a_pass() {
    let mut g = duel();
    assert_eq!(g.roll(0, 2), Ok(RollOutcome::Pass));
    assert_eq!(
        g.expected(),
        Expected::Pass {
            player: 0,
            value: 2
        }
    );
    let p = g.pass(0).unwrap();
    assert_eq!(p.next, 1);
    assert!(!p.extra_roll);
}

#[test]
fn rule_bonus_on_six_even_when_nothing_could_move() {
    let mut g = duel();
    g.set_tokens(0, &[At(53), At(56), At(56), At(56)]);
    assert_eq!(g.roll(0, 6), Ok(RollOutcome::Pass));
    let p = g.pass(0).unwrap();
    assert!(p.extra_roll);
    assert_eq!(g.expected(), Expected::Roll(0));
    let mut g = duel();
    let m = roll_move(&mut g, 6, 0);
    assert!(m.extra_roll);
    assert_eq!(m.next, Some(0));
}

#[test]
fn rule_no_bonus_on_six_when_disabled() {
    let mut v = Variant::duel();
    v.bonus_on_six = false;
    let mut g = Game::with_default_seats(v).unwrap();
    let m = roll_move(&mut g, 6, 0);
    assert!(!m.extra_roll);
    assert_eq!(g.expected(), Expected::Roll(1));
}

#[test]
fn rule_three_sixes_third_six_not_played_turn_passes() {
    let mut g = duel();
    roll_move(&mut g, 6, 0);
    roll_move(&mut g, 6, 0);
    let before = g.tokens(0).unwrap().to_vec();
    assert_eq!(g.roll(0, 6), Ok(RollOutcome::ThirdSix { next: 1 }));
    assert_eq!(g.tokens(0).unwrap(), before.as_slice());
    assert_eq!(g.expected(), Expected::Roll(1));
    assert_eq!(g.sixes_in_row(), 0);
    assert_eq!(g.rolls(), 3, "the third six is a roll");
}

#[test]
fn rule_three_sixes_counts_only_in_a_row() {
    let mut v = Variant::duel();
    v.bonus_on_capture = true;
    let mut g = Game::with_default_seats(v).unwrap();
    g.set_tokens(0, &[At(0), Yard, Yard, Yard]);
    // Yellow at p = 35 is on square 9 (not safe): 6, then a 3 that captures
    // (bonus), then 6, 6: never three sixes in a row.
    g.set_tokens(1, &[At(35), Yard, Yard, Yard]);
    roll_move(&mut g, 6, 0);
    let m = roll_move(&mut g, 3, 0);
    assert_eq!(m.captures.len(), 1);
    assert!(m.extra_roll);
    roll_move(&mut g, 6, 0);
    let m = roll_move(&mut g, 6, 0);
    assert!(m.extra_roll);
    assert_eq!(g.sixes_in_row(), 2);
}

#[test]
fn rule_three_sixes_off_third_six_is_played() {
    let mut v = Variant::duel();
    v.three_sixes = false;
    let mut g = Game::with_default_seats(v).unwrap();
    for _ in 0..3 {
        roll_move(&mut g, 6, 0);
    }
    assert_eq!(g.expected(), Expected::Roll(0));
}

#[test]
fn sixes_in_a_row_without_the_three_sixes_rule_never_overflow() {
    // Found by the fuzz target: 256 sixes in a row overflowed the count.
    let mut v = Variant::duel();
    v.three_sixes = false;
    let mut g = Game::with_default_seats(v).unwrap();
    g.set_tokens(0, &[At(53), At(56), At(56), At(56)]);
    for _ in 0..300 {
        assert_eq!(g.roll(0, 6), Ok(RollOutcome::Pass));
        assert!(g.pass(0).unwrap().extra_roll);
    }
    assert_eq!(g.sixes_in_row(), u8::MAX);
    assert_eq!(g.rolls(), 300);
}

#[test]
fn rule_bonus_on_capture() {
    let mut v = Variant::duel();
    v.bonus_on_capture = true;
    let mut g = Game::with_default_seats(v).unwrap();
    g.set_tokens(0, &[At(2), Yard, Yard, Yard]);
    g.set_tokens(1, &[At(31), Yard, Yard, Yard]); // square 5
    let m = roll_move(&mut g, 3, 0);
    assert_eq!(m.captures.len(), 1);
    assert!(m.extra_roll);
    assert_eq!(g.expected(), Expected::Roll(0));
}

#[test]
fn rule_bonus_on_finish() {
    let mut v = Variant::duel();
    v.bonus_on_finish = true;
    let mut g = Game::with_default_seats(v).unwrap();
    g.set_tokens(0, &[At(54), Yard, Yard, Yard]);
    let m = roll_move(&mut g, 2, 0);
    assert!(m.finished && m.extra_roll);
    let mut g = duel();
    g.set_tokens(0, &[At(54), Yard, Yard, Yard]);
    let m = roll_move(&mut g, 2, 0);
    assert!(m.finished && !m.extra_roll, "duel has no finish bonus");
}

#[test]
fn rule_several_bonuses_give_one_extra_roll() {
    let mut v = Variant::duel();
    v.bonus_on_capture = true;
    let mut g = Game::with_default_seats(v).unwrap();
    g.set_tokens(0, &[At(3), Yard, Yard, Yard]);
    g.set_tokens(1, &[At(35), Yard, Yard, Yard]); // square 9
    let m = roll_move(&mut g, 6, 0);
    assert!(m.extra_roll && m.captures.len() == 1);
    // One extra roll: after it (a 2, no bonus) the turn passes.
    roll_move(&mut g, 2, 0);
    assert_eq!(g.expected(), Expected::Roll(1));
}

#[test]
fn rule_first_to_finish_all_tokens_wins() {
    let mut g = duel();
    g.set_tokens(0, &[At(56), At(56), At(56), At(50)]);
    let m = roll_move(&mut g, 6, 3);
    assert_eq!(m.winner, Some(0));
    assert!(!m.extra_roll, "no bonus roll after winning");
    assert_eq!(g.winner(), Some((0, EndReason::Finished)));
    assert_eq!(g.expected(), Expected::Nothing);
    assert_eq!(g.roll(1, 3), Err(LudoError::GameOver));
    assert_eq!(g.leave(1), Err(LudoError::GameOver));
}

#[test]
fn rule_timeout_on_roll_server_rolls() {
    let mut g = duel();
    assert_eq!(g.timeout(0), Ok(TimeoutOutcome::AutoRoll));
    assert_eq!(g.expected(), Expected::Roll(0));
    g.roll(0, 4).unwrap();
    assert_eq!(g.timeouts(0), Some(1), "the server's roll does not reset");
}

#[test]
fn rule_timeout_on_move_moves_lowest_numbered_movable_token() {
    let mut g = duel();
    g.set_tokens(0, &[At(55), At(7), At(9), Yard]);
    g.roll(0, 3).unwrap();
    assert_eq!(g.auto_move_choice(), Some(1));
    let TimeoutOutcome::AutoMove(m) = g.timeout(0).unwrap() else {
        panic!("expected an automatic move")
    };
    assert_eq!((m.token, m.to, m.auto), (1, 10, true));
    assert_eq!(g.timeouts(0), Some(1));
}

#[test]
fn rule_timeout_with_nothing_movable_passes() {
    let mut g = duel();
    g.roll(0, 3).unwrap();
    assert!(matches!(g.timeout(0), Ok(TimeoutOutcome::AutoPass(p)) if p.next == 1));
}

#[test]
fn rule_max_timeouts_consecutive_forfeit() {
    let mut g = duel();
    // Timeout on roll, server rolls 2, nothing can move: pass (no reset).
    g.timeout(0).unwrap();
    g.roll(0, 2).unwrap();
    g.pass(0).unwrap();
    g.roll(1, 2).unwrap();
    g.pass(1).unwrap();
    g.timeout(0).unwrap();
    g.roll(0, 2).unwrap();
    g.pass(0).unwrap();
    g.roll(1, 2).unwrap();
    g.pass(1).unwrap();
    assert_eq!(g.timeouts(0), Some(2));
    assert_eq!(
        g.timeout(0),
        Ok(TimeoutOutcome::Forfeit {
            winner: Some(1),
            next: None
        })
    );
    assert_eq!(g.status(0), Some(PlayerStatus::Forfeited));
    assert_eq!(g.winner(), Some((1, EndReason::LastPlayerStanding)));
    assert!(g.tokens(0).unwrap().iter().all(|t| *t == TokenPos::Removed));
}

#[test]
fn rule_own_action_resets_the_timeout_counter() {
    let mut g = duel();
    g.timeout(0).unwrap();
    g.roll(0, 6).unwrap();
    g.timeout(0).unwrap(); // auto move of token 0, 6 gives a bonus roll
    assert_eq!(g.timeouts(0), Some(2));
    g.roll(0, 3).unwrap(); // the player's own roll
    assert_eq!(g.timeouts(0), Some(0));
    g.timeout(0).unwrap();
    assert_eq!(g.timeouts(0), Some(1));
    let mut g = duel();
    g.timeout(0).unwrap();
    g.roll(0, 6).unwrap();
    g.move_token(0, 0).unwrap(); // own move after an automatic roll
    assert_eq!(g.timeouts(0), Some(0));
}

#[test]
fn rule_forfeited_tokens_leave_the_board_and_play_goes_on() {
    let mut v = Variant::classic();
    v.max_timeouts = 1;
    let mut g = Game::with_default_seats(v).unwrap();
    g.set_tokens(1, &[At(0), Yard, Yard, Yard]); // green on square 13
    let out = g.timeout(0).unwrap();
    assert_eq!(
        out,
        TimeoutOutcome::Forfeit {
            winner: None,
            next: Some(1)
        }
    );
    g.roll(1, 2).unwrap();
    g.move_token(1, 0).unwrap();
    g.roll(2, 1).unwrap();
    g.pass(2).unwrap();
    g.roll(3, 1).unwrap();
    g.pass(3).unwrap();
    assert_eq!(g.expected(), Expected::Roll(1), "red is skipped");
    assert_eq!(g.roll(0, 3), Err(LudoError::PlayerOut(0)));
    assert_eq!(g.progress_balance(1), Some(2 + -3 - (-4)));
}

#[test]
fn rule_leaving_forfeits_and_last_player_standing_wins() {
    let mut g = classic();
    g.roll(0, 6).unwrap();
    let out = g.leave(0).unwrap();
    assert_eq!(
        out,
        LeaveOutcome {
            winner: None,
            next: Some(1)
        }
    );
    assert_eq!(g.expected(), Expected::Roll(1));
    assert_eq!(g.leave(3).unwrap().winner, None);
    assert_eq!(
        g.expected(),
        Expected::Roll(1),
        "a departure out of turn keeps the turn"
    );
    let out = g.leave(1).unwrap();
    assert_eq!(
        out,
        LeaveOutcome {
            winner: Some(2),
            next: None
        }
    );
    assert_eq!(g.winner(), Some((2, EndReason::LastPlayerStanding)));
}

#[test]
fn classifier_causes() {
    let mut g = duel();
    assert_eq!(
        g.classify_move(1, 0),
        Err(LudoError::NotYourTurn {
            player: 1,
            expected: 0
        })
    );
    assert_eq!(g.classify_move(0, 0), Err(LudoError::ExpectedRoll(0)));
    assert_eq!(g.classify_pass(0), Err(LudoError::ExpectedRoll(0)));
    assert_eq!(g.classify_roll(0, 7), Err(LudoError::InvalidDieValue(7)));
    assert_eq!(g.classify_roll(5, 3), Err(LudoError::UnknownPlayer(5)));
    g.set_tokens(0, &[At(56), At(2), Yard, Yard]);
    g.roll(0, 3).unwrap();
    assert_eq!(g.classify_roll(0, 3), Err(LudoError::ExpectedMove(0)));
    assert_eq!(
        g.classify_move(0, 4),
        Err(LudoError::NoSuchToken {
            token: 4,
            tokens: 4
        })
    );
    assert_eq!(g.classify_move(0, 0), Err(LudoError::TokenFinished(0)));
    assert_eq!(
        g.classify_move(0, 2),
        Err(LudoError::NotAllowedOutOfYard { token: 2, value: 3 })
    );
    assert_eq!(g.classify_move(0, 1), Ok(5));
    // A rejected attempt changes nothing.
    assert_eq!(g.move_token(0, 0), Err(LudoError::TokenFinished(0)));
    assert_eq!(
        g.expected(),
        Expected::Move {
            player: 0,
            value: 3
        }
    );
}

#[test]
fn progress_counts_yard_as_minus_one() {
    let mut g = duel();
    assert_eq!(g.progress(0), Some(-4));
    g.set_tokens(0, &[At(56), At(10), At(0), Yard]);
    assert_eq!(g.progress(0), Some(56 + 10 - 1));
    assert_eq!(g.progress_balance(0), Some(65 + 4));
    assert_eq!(g.progress_balance(1), Some(-4 - 65));
    assert_eq!(g.progress(9), None);
}

#[test]
fn out_of_range_values_never_move() {
    let g = duel();
    assert!(g.legal_tokens(0).is_empty());
    assert!(g.legal_tokens(255).is_empty());
    assert!(g.legal_tokens_for(7, 6).is_empty());
}
