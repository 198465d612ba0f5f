//! Checks of the search: exact against a plain minimax of the same tree, deterministic for a node
//! budget, and right on positions with a known result.

use super::*;

/// A small deterministic generator for random playouts.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

fn opponent_can_capture(pos: &Position) -> bool {
    let mut p = *pos;
    p.set_turn(pos.turn().other());
    p.has_capture()
}

fn quiesce(pos: &Position, ply: i32) -> i32 {
    if !pos.has_capture() {
        return evaluate(pos);
    }
    pos.legal_moves()
        .iter()
        .map(|m| -quiesce(&pos.after(m), ply + 1))
        .max()
        .unwrap_or(-MATE + ply)
}

/// Plain minimax (negamax) with the engine's extensions: one more ply for a single legal move,
/// one quiet ply at the horizon when the opponent threatens a capture, captures resolved.
fn minimax(pos: &Position, mut depth: i32, ply: i32) -> i32 {
    let capture = pos.has_capture();
    if depth <= 0 {
        let threat = depth == 0 && !capture && opponent_can_capture(pos);
        if !threat {
            return quiesce(pos, ply);
        }
        depth = 0;
    }
    let moves = pos.legal_moves();
    if moves.is_empty() {
        return -MATE + ply;
    }
    let ext = i32::from(moves.len() == 1);
    moves
        .iter()
        .map(|m| -minimax(&pos.after(m), depth - 1 + ext, ply + 1))
        .max()
        .unwrap_or(-MATE + ply)
}

/// Positions of random games without kings (so no repetition can arise in a shallow search).
fn positions(variant: Variant, seed: u64, count: usize) -> Vec<Position> {
    let mut rng = Lcg(seed);
    let mut out = Vec::new();
    while out.len() < count {
        let mut pos = Position::new(variant);
        let plies = 6 + rng.next(40);
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let m = &moves[rng.next(moves.len())];
            let _ = pos.make(m);
        }
        if pos.material().side(Color::White).kings == 0
            && pos.material().side(Color::Black).kings == 0
            && pos.legal_move_count() > 0
        {
            out.push(pos);
        }
    }
    out
}

#[test]
fn the_full_width_search_equals_minimax_of_the_same_tree() {
    let mut engine = Engine::new(1);
    for (variant, depth, seed) in [
        (Variant::Brazilian, 3, 1),
        (Variant::Brazilian, 4, 2),
        (Variant::International, 2, 3),
        (Variant::International, 3, 4),
    ] {
        for pos in positions(variant, seed, 12) {
            engine.clear();
            let limits = Limits {
                depth: Some(depth),
                full_width: true,
                ..Limits::default()
            };
            let got = engine.analyse(&pos, &limits, 1);
            let want = minimax(&pos, depth as i32, 0);
            assert_eq!(
                got.lines[0].score.to_cp(),
                want,
                "{} at depth {depth}",
                pos.to_fen()
            );
            // The best move's own subtree has that value too.
            let best = &got.lines[0].mv;
            assert_eq!(
                -minimax(
                    &pos.after(best),
                    depth as i32 - 1 + i32::from(pos.legal_move_count() == 1),
                    1
                ),
                want
            );
        }
    }
}

#[test]
fn the_pruned_search_agrees_with_minimax_on_the_best_score_at_low_depth() {
    // Without reductions (depth < 3) the table is the only difference: the scores must agree.
    let mut engine = Engine::new(1);
    for pos in positions(Variant::International, 9, 20) {
        let got = engine.analyse(&pos, &Limits::depth(2), 1);
        assert_eq!(
            got.lines[0].score.to_cp(),
            minimax(&pos, 2, 0),
            "{}",
            pos.to_fen()
        );
    }
}

#[test]
fn multipv_lines_are_distinct_ordered_and_legal() {
    let mut engine = Engine::new(4);
    for pos in positions(Variant::International, 5, 6) {
        let a = engine.analyse(&pos, &Limits::depth(4), 4);
        let n = pos.legal_move_count().min(4);
        assert_eq!(a.lines.len(), n);
        for w in a.lines.windows(2) {
            assert!(w[0].score.to_cp() >= w[1].score.to_cp());
            assert_ne!(w[0].mv.key(), w[1].mv.key());
        }
        for line in &a.lines {
            let mut p = pos;
            assert_eq!(line.pv.first(), Some(&line.mv));
            for m in &line.pv {
                assert!(p.is_legal(m), "{} in {}", m, p.to_fen());
                let _ = p.make(m);
            }
        }
    }
}

#[test]
fn a_node_budget_gives_the_same_result_every_time() {
    let pos = Position::new(Variant::International);
    let a = Engine::new(8).analyse(&pos, &Limits::nodes(200_000), 2);
    let b = Engine::new(8).analyse(&pos, &Limits::nodes(200_000), 2);
    assert_eq!(a, b);
    assert!(a.depth >= 4, "depth {}", a.depth);
    assert!(a.nodes <= 200_000);
}

#[test]
fn a_side_without_a_move_has_no_line_and_a_win_is_found() {
    let mut engine = Engine::new(1);
    let lost = Position::from_fen(Variant::Brazilian, "B:W18:B").unwrap();
    assert!(engine.analyse(&lost, &Limits::depth(3), 1).lines.is_empty());
    // Black's last man, on 36, is blocked by 41 and 47: any White move that keeps the block
    // (50-44 or 50-45) leaves Black without a move.
    let pos = Position::from_fen(Variant::International, "W:W41,47,50:B36").unwrap();
    let a = engine.analyse(&pos, &Limits::depth(5), 1);
    assert_eq!(a.lines[0].score, Score::Win(1), "{:?}", a.lines[0]);
    assert_eq!(a.lines[0].mv.from().number(), 50);
}

#[test]
fn restricting_the_root_scores_a_chosen_move() {
    let pos = Position::new(Variant::Brazilian);
    let mut engine = Engine::new(2);
    let all = engine.analyse(&pos, &Limits::depth(5), 7);
    let worst = all.lines.last().unwrap();
    let only = engine.analyse_moves(
        &pos,
        &Limits::depth(5),
        1,
        Some(std::slice::from_ref(&worst.mv)),
    );
    assert_eq!(only.lines.len(), 1);
    assert_eq!(only.lines[0].mv, worst.mv);
    assert!(only.lines[0].score.to_cp() <= all.lines[0].score.to_cp());
}
