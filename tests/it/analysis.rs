//! `vigie analyse`: every move of the selected games judged once, incrementally, in one commit per run.

use crate::common::{copy_dir, sample_lake, sql_first, sql_text};

fn options(max_games: usize) -> vigie::analysis::AnalyseOptions {
    vigie::analysis::AnalyseOptions {
        // Small budgets: the test binary is not optimised.
        nodes: 2_000,
        shallow_depth: 2,
        sample: 1.0,
        threads: 2,
        max_games: Some(max_games),
        ..Default::default()
    }
}

/// A copy of the sample lake in `dir`, opened.
fn sample_lake_in(dir: &std::path::Path) -> (std::path::PathBuf, vigie::lake::Lake) {
    let path = dir.join("lake");
    copy_dir(sample_lake(), &path);
    let lake = vigie::catalog::open_existing(&path).unwrap();
    (path, lake)
}

#[test]
fn analysis_judges_every_move_of_the_selected_games_once() {
    let dir = tempfile::tempdir().unwrap();
    let (path, lake) = sample_lake_in(dir.path());
    let eligible = sql_first(
        &path,
        "SELECT count(*) FROM games WHERE kind IN ('draughts10', 'draughts8') AND mode = 'standard' \
         AND rated AND closed AND finished",
    );
    let eligible: u64 = eligible.parse().unwrap();
    assert!(
        eligible >= 4,
        "the sample has rated standard draughts games: {eligible}"
    );
    let none = Default::default();
    let first = vigie::analysis::run(&lake, &options(2), &none, &|_, _| {}).unwrap();
    assert_eq!(first.eligible, eligible);
    assert_eq!(first.games_analysed + first.games_skipped, 2);
    assert!(first.version.is_some());
    // One row per accepted move of the analysed games, in order, each judged consistently.
    let want = sql_first(
        &path,
        "SELECT count(*) FROM moves WHERE accepted AND action = 'move' \
         AND game IN (SELECT DISTINCT game FROM move_analysis)",
    );
    let rows = sql_first(&path, "SELECT count(*) FROM move_analysis");
    assert_eq!(rows, want);
    assert_eq!(rows, first.rows.to_string());
    let bad = sql_first(
        &path,
        "SELECT count(*) FROM move_analysis WHERE rank < 1 OR loss < 0 OR near_best < 1 \
         OR (forced AND legal_moves <> 1) OR (matched AND played_score <> best_score) \
         OR (matched AND loss <> 0) OR (hard AND shallow_best = best)",
    );
    assert_eq!(bad, "0");
    // The next run takes the next games, never the same ones again.
    let second = vigie::analysis::run(&lake, &options(2), &none, &|_, _| {}).unwrap();
    assert_eq!(second.eligible, eligible - 2);
    let distinct = sql_text(
        &path,
        "SELECT count(*), count(DISTINCT concat(game, ':', CAST(seq AS VARCHAR))), count(DISTINCT game) FROM move_analysis",
    );
    assert_eq!(distinct[0][0], distinct[0][1]);
    assert_eq!(distinct[0][2], "4");
    // Detection sees the analysis move: it runs again instead of "nothing changed".
    let rules: vigie::detect::rules::RuleSource = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("queries/detect")
        .into();
    let d = vigie::detect::run(&lake, &rules, &Default::default()).unwrap();
    assert!(d.version.is_some(), "{d:?}");
    let again = vigie::detect::run(&lake, &rules, &Default::default()).unwrap();
    assert!(again.version.is_none());
}

#[test]
fn the_same_game_is_judged_the_same_in_another_lake() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut out = Vec::new();
    for d in [&a, &b] {
        let (path, lake) = sample_lake_in(d.path());
        // One thread against two: the rows must not depend on it.
        let mut o = options(1);
        o.threads = if out.is_empty() { 1 } else { 2 };
        vigie::analysis::run(&lake, &o, &Default::default(), &|_, _| {}).unwrap();
        out.push(sql_text(
            &path,
            "SELECT game, seq, best, best_score, played_score, rank, near_best, hard, depth, nodes FROM move_analysis ORDER BY game, seq",
        ));
    }
    assert!(!out[0].is_empty());
    assert_eq!(out[0], out[1]);
}

#[test]
fn excluded_games_are_never_selected_and_each_row_keeps_its_move_time() {
    let dir = tempfile::tempdir().unwrap();
    let (path, lake) = sample_lake_in(dir.path());
    let eligible: Vec<String> = sql_text(
        &path,
        "SELECT game FROM games WHERE kind IN ('draughts10', 'draughts8') AND mode = 'standard' \
         AND rated AND closed AND finished ORDER BY date, game",
    )
    .into_iter()
    .map(|r| r[0].clone())
    .collect();
    assert!(eligible.len() >= 2, "{eligible:?}");
    // Every eligible game but the last excluded: a run of one game takes the last.
    let last = eligible[eligible.len() - 1].clone();
    let mut opts = options(1);
    opts.exclude = eligible[..eligible.len() - 1].iter().cloned().collect();
    let r = vigie::analysis::run(&lake, &opts, &Default::default(), &|_, _| {}).unwrap();
    assert_eq!(r.selected, 1);
    // The sample's games are clean: every one can be followed.
    assert_eq!((r.games_analysed, r.skipped.len()), (1, 0));
    let analysed = sql_text(&path, "SELECT DISTINCT game FROM move_analysis");
    assert_eq!(analysed, vec![vec![last]]);
    // Each row has the time its move was logged.
    let off = sql_first(
        &path,
        "SELECT count(*) FROM move_analysis a LEFT JOIN moves m ON m.game = a.game AND m.seq = a.seq \
         WHERE a.ts IS NULL OR m.ts IS NULL OR a.ts <> m.ts",
    );
    assert_eq!(off, "0");
}
