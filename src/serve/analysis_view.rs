//! Drawing the engine analysis: a game's evaluation graph, the engine's best move beside the played one, and an account's numbers against the population's distribution (inline SVG, CSS classes only).

use std::fmt::Write as _;

use super::board::{draughts_svg_with, esc};
use super::data::MoveJudgement;
use super::frames::DraughtsBoard;

/// Scores beyond this (hundredths of a man) are drawn at the graph's edge.
const CLAMP: i64 = 500;
/// A move that loses at least this much is drawn as a blunder.
pub const BLUNDER: i64 = 100;
/// A move that loses at least this much (and less than [`BLUNDER`]) is drawn as a mistake.
pub const MISTAKE: i64 = 30;

/// The squares of a move written as PDN (`31-26`, `31x22x13`): empty when it is not one.
pub fn move_squares(m: &str) -> Vec<u8> {
    let parts: Vec<Option<u8>> = m
        .split(['-', 'x'])
        .map(|p| p.trim().parse::<u8>().ok())
        .collect();
    if parts.len() < 2 || parts.iter().any(Option::is_none) {
        return Vec::new();
    }
    parts.into_iter().flatten().collect()
}

/// The evaluation after each move from White's side (the played move's score, positive when
/// White stands better), for the judgements of a game whose White is `white`.
pub fn white_view(j: &MoveJudgement, white: &str) -> i64 {
    if j.player == white {
        j.played_score
    } else {
        -j.played_score
    }
}

/// CSS class of a judged move's dot.
fn dot_class(j: &MoveJudgement) -> &'static str {
    if j.auto {
        "ev-auto"
    } else if j.loss >= BLUNDER {
        "ev-blunder"
    } else if j.loss >= MISTAKE {
        "ev-mistake"
    } else if j.hard && j.matched {
        "ev-hard"
    } else {
        "ev-ok"
    }
}

/// One line describing a judged move (a dot's tooltip, the move card's heading).
pub fn describe(j: &MoveJudgement) -> String {
    let mut s = format!(
        "seq {} · {} played {} ({:+}) · best {} ({:+}) · loss {}",
        j.seq, j.player, j.played, j.played_score, j.best, j.best_score, j.loss
    );
    if j.forced {
        s.push_str(" · forced");
    } else {
        let _ = write!(
            s,
            " · rank {} of {} · {} within a fifth of a man",
            j.rank, j.legal_moves, j.near_best
        );
    }
    if j.hard {
        s.push_str(if j.matched {
            " · hard position, found"
        } else {
            " · hard position"
        });
    }
    if j.auto {
        s.push_str(" · played by the server after a timeout");
    }
    s
}

/// The evaluation graph of a game: White's evaluation after each judged move (clamped to five
/// men), a dot per move coloured by its loss and linked to the viewer at that seq; the move at
/// `current` ringed. `focus` ends each link (`&for=...` keeps the viewer's marked account; "").
pub fn eval_graph_svg(
    game: &str,
    focus: &str,
    judged: &[MoveJudgement],
    white: &str,
    current: i64,
) -> String {
    const W: f64 = 720.0;
    const H: f64 = 180.0;
    const PAD: f64 = 12.0;
    let n = judged.len().max(2) as f64;
    let x = |i: usize| PAD + (W - 2.0 * PAD) * i as f64 / (n - 1.0);
    let y = |v: i64| {
        let v = v.clamp(-CLAMP, CLAMP) as f64;
        H / 2.0 - (H / 2.0 - PAD) * v / CLAMP as f64
    };
    let mut s = String::with_capacity(256 + judged.len() * 200);
    let _ = write!(
        s,
        "<svg class=\"eval-graph\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"Evaluation after each move, White's side up\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    let _ = write!(
        s,
        "<rect class=\"ev-white\" x=\"0\" y=\"0\" width=\"{W}\" height=\"{}\"/><line class=\"ev-zero\" x1=\"0\" y1=\"{}\" x2=\"{W}\" y2=\"{}\"/>",
        H / 2.0,
        H / 2.0,
        H / 2.0
    );
    let pts: Vec<String> = judged
        .iter()
        .enumerate()
        .map(|(i, j)| format!("{:.1},{:.1}", x(i), y(white_view(j, white))))
        .collect();
    if pts.len() >= 2 {
        let _ = write!(
            s,
            "<polyline class=\"ev-line\" points=\"{}\"/>",
            pts.join(" ")
        );
    }
    for (i, j) in judged.iter().enumerate() {
        let (cx, cy) = (x(i), y(white_view(j, white)));
        let _ = write!(
            s,
            "<a href=\"{}\"><circle class=\"ev-dot {}{}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{}\"><title>{}</title></circle></a>",
            esc(&format!("/game/{game}?seq={}{focus}", j.seq)),
            dot_class(j),
            if j.seq == current { " ev-current" } else { "" },
            if j.seq == current { 6 } else { 3 },
            esc(&describe(j))
        );
    }
    s.push_str("</svg>");
    s
}

/// The position before a judged move with the move played and the engine's best drawn on it.
pub fn engine_board(before: &DraughtsBoard, j: &MoveJudgement) -> String {
    let mut b = before.clone();
    b.path.clear();
    b.captured.clear();
    b.attempted.clear();
    b.duels.clear();
    b.lost_attacker = None;
    let played = move_squares(&j.played);
    let best = move_squares(&j.best);
    let played_title = format!("played {}", j.played);
    let best_title = format!("the engine's best {}", j.best);
    let mut lines: Vec<(&[u8], &str, &str)> = Vec::new();
    if j.best != j.played {
        lines.push((&best, "best-line", &best_title));
    }
    lines.push((&played, "played-line", &played_title));
    draughts_svg_with(&b, &lines)
}

/// A histogram of the population's values (20 bins between the smallest and the largest) with
/// this account's value marked.
pub fn distribution_svg(values: &[f64], mine: f64, label: &str, fmt: fn(f64) -> String) -> String {
    const W: f64 = 320.0;
    const H: f64 = 110.0;
    const BASE: f64 = 92.0;
    const BINS: usize = 20;
    let lo = values.iter().copied().fold(mine, f64::min);
    let hi = values.iter().copied().fold(mine, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let bin = |v: f64| (((v - lo) / span * BINS as f64) as usize).min(BINS - 1);
    let mut counts = [0usize; BINS];
    for &v in values {
        counts[bin(v)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let bw = W / BINS as f64;
    let mut s = String::with_capacity(4096);
    let _ = write!(
        s,
        "<svg class=\"dist\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(label)
    );
    for (i, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let h = (BASE - 8.0) * c as f64 / top;
        let _ = write!(
            s,
            "<rect class=\"dist-bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\"><title>{c} account(s) from {} to {}</title></rect>",
            i as f64 * bw + 1.0,
            BASE - h,
            bw - 2.0,
            fmt(lo + span * i as f64 / BINS as f64),
            fmt(lo + span * (i + 1) as f64 / BINS as f64)
        );
    }
    let mx = ((mine - lo) / span * W).clamp(1.0, W - 1.0);
    let _ = write!(
        s,
        "<line class=\"dist-mark\" x1=\"{mx:.1}\" y1=\"0\" x2=\"{mx:.1}\" y2=\"{BASE}\"><title>this account: {}</title></line>",
        fmt(mine)
    );
    let _ = write!(
        s,
        "<text class=\"dist-axis\" x=\"0\" y=\"{H}\">{}</text><text class=\"dist-axis end\" x=\"{W}\" y=\"{H}\">{}</text></svg>",
        fmt(lo),
        fmt(hi)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(seq: i64, player: &str, played_score: i64, loss: i64) -> MoveJudgement {
        MoveJudgement {
            seq,
            player: player.into(),
            played: "31-26".into(),
            best: "32-28".into(),
            best_score: played_score + loss,
            played_score,
            loss,
            rank: 2,
            legal_moves: 9,
            near_best: 3,
            forced: false,
            matched: loss == 0,
            hard: false,
            auto: false,
            engine: "vigie-rules".into(),
        }
    }

    #[test]
    fn move_squares_reads_pdn_moves_and_refuses_the_rest() {
        assert_eq!(move_squares("31-26"), vec![31, 26]);
        assert_eq!(move_squares("31x22x13"), vec![31, 22, 13]);
        assert!(move_squares("31").is_empty());
        assert!(move_squares("a-b").is_empty());
        assert!(move_squares("").is_empty());
    }

    #[test]
    fn the_graph_is_drawn_from_whites_side_with_one_linked_dot_per_move() {
        let moves = [
            judged(3, "w", 40, 0),
            judged(4, "b", 60, 150),
            judged(5, "w", 9_000, 0),
        ];
        assert_eq!(white_view(&moves[0], "w"), 40);
        assert_eq!(white_view(&moves[1], "w"), -60);
        let svg = eval_graph_svg("g1", "", &moves, "w", 4);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("href=\"/game/g1?seq=4\""));
        let marked = eval_graph_svg("g1", "&for=o%27b", &moves, "w", 4);
        assert!(marked.contains("href=\"/game/g1?seq=4&amp;for=o%27b\""));
        assert!(svg.contains("ev-blunder ev-current"));
        // White's +90 men is clamped to the top edge (y = 12), Black's +0.6 men below the middle.
        assert!(svg.contains("cy=\"12.0\""));
        assert!(svg.contains("cy=\"99.4\""), "{svg}");
    }

    #[test]
    fn the_account_is_marked_on_the_population_histogram() {
        let values: Vec<f64> = (0..100).map(|i| f64::from(i) / 100.0).collect();
        let svg = distribution_svg(&values, 0.5, "match rate", |v| format!("{v:.2}"));
        assert_eq!(svg.matches("class=\"dist-bar\"").count(), 20);
        assert!(svg.contains("this account: 0.50"));
        assert!(svg.contains("5 account(s) from 0.00 to 0.05"), "{svg}");
    }
}
