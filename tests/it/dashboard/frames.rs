//! Replay frames: games of every kind step through every event without error, and board states at known seqs match an independent replay with the engines.

use std::collections::BTreeMap;
use std::path::PathBuf;

use vigie::games::draughts::{self as dr, Color, Variant};
use vigie::games::ludo::TokenPos;
use vigie::log::{Body, Kind, Mode, MoveAction, parse_line};
use vigie::serve::data::{GameSummary, GameView, LoggedEvent};
use vigie::serve::frames::{Board, frames};

use super::common::lake_games;

/// A game of the sample lake of a kind and mode that `pred` accepts.
fn pick(kind: Kind, mode: Mode, pred: impl Fn(&GameView) -> bool) -> &'static GameView {
    lake_games()
        .iter()
        .find(|g| g.summary.kind == kind && g.summary.mode == mode && pred(g))
        .unwrap_or_else(|| panic!("no {kind} {mode} game"))
}

/// Whether the server accepted something the rules refuse (an injected server fault): the
/// engine cannot replay such a game move by move, the frames mark it (tested elsewhere).
fn server_erred(g: &GameView) -> bool {
    g.summary.desynced
        || g.findings
            .iter()
            .any(|f| f.category == vigie::serve::data::FindingCategory::Integrity)
}

fn has_rejected(g: &GameView) -> bool {
    g.events
        .iter()
        .any(|e| e.event.attempt().is_some_and(|a| !a.accepted()))
}

fn has_lost_duel(g: &GameView) -> bool {
    g.events.iter().any(|e| matches!(&e.event.body, Body::Move(m) if m.duels.as_ref().is_some_and(|d| d.iter().any(|x| !x.won))))
}

/// Replays a draughts game with the engine alone and checks every frame's pieces.
fn check_draughts(g: &GameView) {
    let fr = frames(g);
    assert_eq!(fr.len(), g.events.len());
    let variant = if g.summary.kind == Kind::Draughts10 {
        Variant::International
    } else {
        Variant::Brazilian
    };
    let mut game = if g.summary.mode == Mode::Medieval {
        dr::Game::new_medieval()
    } else {
        dr::Game::new(variant)
    };
    let white = g
        .summary
        .players
        .iter()
        .find(|p| p.seat == vigie::log::Seat::White)
        .map(|p| p.account.clone());
    for (i, le) in g.events.iter().enumerate() {
        match &le.event.body {
            Body::Selection(s) => {
                let color = if Some(&s.player) == white.as_ref() {
                    Color::White
                } else {
                    Color::Black
                };
                let sq: Vec<dr::Square> = s
                    .squares
                    .iter()
                    .filter_map(|&n| variant.square(u32::from(n)))
                    .collect();
                game.select(color, &sq).expect("selection");
            }
            Body::Move(m) if m.attempt.accepted() => {
                let MoveAction::Draughts(text) = &m.action else {
                    panic!("not a draughts move")
                };
                let mv = game.classify(text).expect("legal");
                let duels: Vec<dr::Duel> = m
                    .duels
                    .iter()
                    .flatten()
                    .map(|d| dr::Duel {
                        victim: variant.square(u32::from(d.victim)).expect("square"),
                        won: d.won,
                    })
                    .collect();
                game.play_with_duels(&mv, &duels).expect("play");
            }
            _ => {}
        }
        let f = &fr[i];
        assert!(
            f.error.is_none(),
            "{} seq {}: {:?}",
            g.summary.id,
            f.seq,
            f.error
        );
        let Board::Draughts(b) = &f.board else {
            panic!("draughts board")
        };
        let want: Vec<(u8, dr::Piece)> = game
            .position()
            .pieces()
            .into_iter()
            .map(|(s, p)| (s.number(), p))
            .collect();
        assert_eq!(b.pieces, want, "{} seq {}", g.summary.id, f.seq);
        let m = game.material();
        assert_eq!(b.pieces.len() as u32, m.white.pieces() + m.black.pieces());
        assert_eq!(b.material, m);
        assert_eq!(b.turn, game.position().turn());
    }
}

#[test]
fn draughts_both_boards_step_through_and_match_the_engine() {
    let clean_rejected = |g: &GameView| has_rejected(g) && !server_erred(g);
    check_draughts(pick(Kind::Draughts10, Mode::Standard, clean_rejected));
    check_draughts(pick(Kind::Draughts8, Mode::Standard, clean_rejected));
    // Every draughts game of the lake the server did not err in.
    for g in lake_games().iter().filter(|g| {
        matches!(g.summary.kind, Kind::Draughts10 | Kind::Draughts8) && !server_erred(g)
    }) {
        check_draughts(g);
    }
}

#[test]
fn medieval_game_with_a_lost_duel() {
    let g = pick(Kind::Draughts8, Mode::Medieval, |g| {
        has_lost_duel(g) && !server_erred(g)
    });
    check_draughts(g);
    let fr = frames(g);
    let (i, m) = g
        .events
        .iter()
        .enumerate()
        .find_map(|(i, e)| match &e.event.body {
            Body::Move(m) if m.duels.as_ref().is_some_and(|d| d.iter().any(|x| !x.won)) => {
                Some((i, m))
            }
            _ => None,
        })
        .expect("lost duel");
    let MoveAction::Draughts(text) = &m.action else {
        panic!("draughts")
    };
    let from: u8 = text
        .split(['x', '-'])
        .next()
        .and_then(|s| s.parse().ok())
        .expect("from square");
    let lost = m
        .duels
        .as_ref()
        .and_then(|d| d.iter().find(|x| !x.won))
        .expect("lost")
        .victim;
    let (Board::Draughts(before), Board::Draughts(after)) = (&fr[i - 1].board, &fr[i].board) else {
        panic!("boards")
    };
    let at = |b: &vigie::serve::frames::DraughtsBoard, n: u8| {
        b.pieces.iter().find(|(s, _)| *s == n).map(|(_, p)| *p)
    };
    assert!(at(before, from).is_some(), "attacker on {from} before");
    assert!(
        at(after, from).is_none(),
        "attacker removed from {from} after the lost duel"
    );
    assert!(
        at(after, lost).is_some_and(|p| p.medieval),
        "the medieval defender on {lost} stays"
    );
    assert_eq!(after.lost_attacker, Some(from));
    let won_before = m
        .duels
        .as_ref()
        .map_or(0, |d| d.iter().filter(|x| x.won).count());
    assert!(
        after.pieces.len() + 1 + after.captured.len() == before.pieces.len(),
        "taken {} won {won_before}",
        after.captured.len()
    );
    assert!(fr[i].summary.contains("duel lost"));
    // Medieval pieces are marked on the drawing.
    let svg = vigie::serve::board::board_html(&fr[i].board);
    assert!(svg.contains("medieval") && svg.contains("class=\"shield\""));
}

#[test]
fn ludo_games_step_through_with_consistent_tokens() {
    let mut seen = 0;
    for g in lake_games().iter().filter(|g| g.summary.kind == Kind::Ludo) {
        let fr = frames(g);
        assert_eq!(fr.len(), g.events.len());
        for (i, le) in g.events.iter().enumerate() {
            let f = &fr[i];
            assert!(
                f.error.is_none(),
                "{} seq {}: {:?}",
                g.summary.id,
                f.seq,
                f.error
            );
            let Board::Ludo(b) = &f.board else {
                panic!("ludo board")
            };
            // A player's own accepted move: the token advanced by the die (or left the yard).
            if let Body::Move(m) = &le.event.body
                && m.attempt.accepted()
                && !m.attempt.is_auto()
                && let MoveAction::Token(t) = m.action
                && i > 0
            {
                let Board::Ludo(prev) = &fr[i - 1].board else {
                    panic!("ludo board")
                };
                let p = b
                    .seats
                    .iter()
                    .position(|(_, a)| *a == m.player)
                    .expect("player");
                let die = prev.die.expect("rolled");
                let t = usize::try_from(t).expect("token");
                let want = match prev.tokens[p][t] {
                    TokenPos::Yard => TokenPos::At(0),
                    TokenPos::At(x) => TokenPos::At(x + die),
                    TokenPos::Removed => panic!("removed token moved"),
                };
                assert_eq!(b.tokens[p][t], want, "{} seq {}", g.summary.id, f.seq);
                seen += 1;
            }
        }
        // The logged winner finished all tokens or outlasted the others.
        if g.summary.reason_logged.as_deref() == Some("finished") {
            let Board::Ludo(last) = &fr[fr.len() - 1].board else {
                panic!("ludo board")
            };
            let w = g.summary.result_logged.clone().expect("winner");
            let p = last
                .seats
                .iter()
                .position(|(_, a)| *a == w)
                .expect("winner seat");
            assert!(
                last.tokens[p].iter().all(|t| *t == TokenPos::At(56)),
                "{}",
                g.summary.id
            );
        }
    }
    assert!(seen > 100, "{seen}");
    assert!(
        lake_games()
            .iter()
            .any(|g| g.summary.kind == Kind::Ludo && g.summary.players.len() == 4)
    );
}

#[test]
fn belote_matches_step_through_with_consistent_hands_and_scores() {
    let mut deals = 0;
    for g in lake_games()
        .iter()
        .filter(|g| g.summary.kind == Kind::Belote)
    {
        let fr = frames(g);
        for (i, le) in g.events.iter().enumerate() {
            let f = &fr[i];
            assert!(
                f.error.is_none(),
                "{} seq {}: {:?}",
                g.summary.id,
                f.seq,
                f.error
            );
            let Board::Belote(t) = &f.board else {
                panic!("belote table")
            };
            match &le.event.body {
                Body::HandsCompleted(_) => {
                    assert_eq!((t.hands[0].len(), t.hands[1].len()), (16, 16));
                    assert!(t.trump.is_some() && t.taker.is_some());
                }
                Body::Deal(_) => assert_eq!((t.hands[0].len(), t.hands[1].len()), (6, 6)),
                Body::Play(p) if p.attempt.accepted() && !p.attempt.is_auto() && i > 0 => {
                    let Board::Belote(prev) = &fr[i - 1].board else {
                        panic!("table")
                    };
                    let who = t
                        .accounts
                        .iter()
                        .position(|a| *a == p.player)
                        .expect("player");
                    let card: vigie::games::belote::Card = p.card.parse().expect("card");
                    assert!(
                        prev.hands[who].contains(&card),
                        "{} seq {}",
                        g.summary.id,
                        le.event.seq
                    );
                    assert!(!t.hands[who].contains(&card));
                }
                Body::DealEnded(d) => {
                    deals += 1;
                    let logged: BTreeMap<&str, i64> =
                        d.totals.iter().map(|(a, v)| (a.as_str(), *v)).collect();
                    assert_eq!(t.totals[0], logged[t.accounts[0].as_str()]);
                    assert_eq!(t.totals[1], logged[t.accounts[1].as_str()]);
                    if d.outcome != vigie::log::DealOutcome::Void {
                        assert_eq!(
                            t.card_points[0] + t.card_points[1],
                            162,
                            "{} deal {}",
                            g.summary.id,
                            d.deal
                        );
                        assert_eq!(t.tricks_won[0] + t.tricks_won[1], 16);
                    }
                }
                _ => {}
            }
        }
    }
    assert!(deals > 10, "{deals}");
}

fn sample_log() -> PathBuf {
    std::env::var("VIGIE_SAMPLE_LOG").map_or_else(|_| crate::common::shared_sample(), PathBuf::from)
}

/// The 40 games of the independent sample log (shared/fixtures) replay without a single frame error.
#[test]
fn independent_sample_log_replays_without_errors() {
    let path = sample_log();
    let text = std::fs::read_to_string(&path).expect("the sample log (tests/fixtures)");
    let mut by_game: BTreeMap<String, Vec<LoggedEvent>> = BTreeMap::new();
    for line in text.lines() {
        let e = parse_line(line.as_bytes()).expect("valid line");
        by_game
            .entry(e.game.clone())
            .or_default()
            .push(LoggedEvent {
                event: e,
                raw: line.to_owned(),
            });
    }
    assert_eq!(by_game.len(), 40);
    for (id, mut events) in by_game {
        events.sort_by_key(|e| e.event.seq);
        let Body::GameStarted(s) = &events[0].event.body else {
            panic!("{id}: no start")
        };
        let view = GameView {
            summary: GameSummary {
                id: id.clone(),
                kind: s.kind,
                mode: s.mode,
                variant: None,
                rated: s.rated,
                stake: s.stake,
                currency: s.currency.clone(),
                players: vec![],
                started_at: events[0].event.ts,
                ended_at: None,
                result_logged: None,
                reason_logged: None,
                result_replayed: None,
                reason_replayed: None,
                fairness: "n/a".into(),
                desynced: false,
            },
            events,
            findings: vec![],
            analysis: vec![],
        };
        for f in frames(&view) {
            assert!(
                f.error.is_none(),
                "{id} seq {}: {:?} ({})",
                f.seq,
                f.error,
                f.summary
            );
        }
    }
}

/// Every attempt a player made says how long the player thought (what a reviewer weighs for
/// bot-like steadiness or stalling); the server's automatic moves say they were automatic.
#[test]
fn each_attempt_says_its_think_time() {
    let mut seen = [0usize; 3];
    for g in lake_games() {
        let fr = frames(g);
        for (f, e) in fr.iter().zip(&g.events) {
            let Some(a) = e.event.attempt() else {
                continue;
            };
            if a.is_auto() {
                assert!(f.summary.contains("(automatic)"), "{}", f.summary);
                continue;
            }
            let ms = a.think_ms;
            let want = if ms < 1_000 {
                format!(" · {ms} ms")
            } else if ms < 60_000 {
                format!(" · {:.1} s", ms as f64 / 1_000.0)
            } else {
                format!(" · {} min {:02} s", ms / 60_000, ms % 60_000 / 1_000)
            };
            assert!(
                f.summary.contains(&want),
                "{} seq {}: {} lacks {want}",
                g.summary.id,
                f.seq,
                f.summary
            );
            seen[usize::from(ms >= 1_000) + usize::from(ms >= 60_000)] += 1;
        }
    }
    assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
}
