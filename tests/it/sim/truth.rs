//! Ground truth against Vigie's replay: every labelled fault is found at its game and seq, clean games give no integrity or fairness finding.

use std::collections::{BTreeMap, BTreeSet};

use vigie::replay::Category;

use crate::sim::common::{Run, clean, faulty, sample};
use crate::sim::replay_adapter::replay;

/// Integrity and fairness findings per game as (seq, code), with seed reuse across the run's games.
fn server_findings(run: &Run) -> BTreeMap<String, BTreeSet<(i64, String)>> {
    let mut replays: Vec<vigie::replay::GameReplay> =
        run.games().values().map(|g| replay(g).replay).collect();
    vigie::replay::run::seed_reuse(&mut replays, &Default::default(), &BTreeSet::new());
    let mut out: BTreeMap<String, BTreeSet<(i64, String)>> = BTreeMap::new();
    for r in &replays {
        for f in &r.findings {
            if f.category != Category::Attempt {
                out.entry(f.game.clone())
                    .or_default()
                    .insert((f.seq, f.code.as_str().to_string()));
            }
        }
    }
    out
}

fn check(run: &Run) {
    let found = server_findings(run);
    let labels = run.faults();
    assert!(!labels.is_empty() || run.faults().is_empty());
    for (game, faults) in &labels {
        let got = found.get(game).cloned().unwrap_or_default();
        for (seq, code) in faults {
            assert!(
                got.contains(&(*seq, code.clone())),
                "{game}: label {code} at seq {seq} not found; found {got:?}"
            );
        }
    }
    for (game, got) in &found {
        assert!(
            labels.contains_key(game),
            "clean game {game} has server findings {got:?}"
        );
    }
}

#[test]
fn every_labelled_fault_is_found_at_its_seq_and_clean_games_have_none() {
    let run = faulty();
    let labels = run.faults();
    let codes: BTreeSet<String> = labels.values().flatten().map(|(_, c)| c.clone()).collect();
    assert!(codes.len() >= 15, "fault codes covered: {codes:?}");
    check(run);
}

#[test]
fn a_clean_run_and_the_sample_preset_replay_as_labelled() {
    check(clean());
    check(sample());
    assert!(server_findings(clean()).is_empty());
}
