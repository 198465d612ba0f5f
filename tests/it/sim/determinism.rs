//! Same options, same bytes (whatever the number of threads); another seed, other bytes.

use std::path::Path;

use vigie::sim::{SimOptions, simulate};

/// Every file of a run (compressed bytes as written), sorted by path.
fn raw_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir)
                    .map(|r| r.to_string_lossy().to_string())
                    .unwrap_or_default();
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn run(opts: &SimOptions) -> (tempfile::TempDir, Vec<(String, Vec<u8>)>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    if let Err(e) = simulate(opts, dir.path(), &|_| {}) {
        panic!("simulate: {e}");
    }
    let files = raw_files(dir.path());
    (dir, files)
}

fn small() -> SimOptions {
    SimOptions {
        days: 2,
        games_per_day: 150,
        accounts: 120,
        servers: 3,
        malformed: 12,
        fault_rate: 0.1,
        ..SimOptions::default()
    }
}

#[test]
fn same_seed_same_bytes_whatever_the_threads() {
    let (_a, one) = run(&SimOptions {
        threads: 1,
        ..small()
    });
    let (_b, three) = run(&SimOptions {
        threads: 3,
        ..small()
    });
    assert!(one.len() >= 4, "{} files", one.len());
    assert_eq!(one.len(), three.len());
    for ((pa, ba), (pb, bb)) in one.iter().zip(&three) {
        assert_eq!(pa, pb);
        assert!(ba == bb, "{pa} differs");
    }
    assert!(one.iter().any(|(p, _)| p == "labels.json"));
}

#[test]
fn sample_preset_is_reproducible() {
    let (_a, x) = run(&SimOptions::sample());
    let (_b, y) = run(&SimOptions {
        threads: 1,
        ..SimOptions::sample()
    });
    assert!(x == y, "the sample preset differs between two runs");
}

#[test]
fn another_seed_gives_other_bytes() {
    let (_a, one) = run(&small());
    let (_b, other) = run(&SimOptions { seed: 2, ..small() });
    for ((pa, ba), (pb, bb)) in one.iter().zip(&other) {
        if pa == pb && pa.contains("srv-") {
            assert!(ba != bb, "{pa} is the same under another seed");
        }
    }
}

/// The accounts of a run's labels, and the game ids of its log lines.
fn accounts_and_games(files: &[(String, Vec<u8>)]) -> (serde_json::Value, Vec<String>) {
    let labels = files
        .iter()
        .find(|(p, _)| p == "labels.json")
        .map(|(_, b)| serde_json::from_slice::<serde_json::Value>(b))
        .unwrap_or_else(|| panic!("no labels.json"))
        .unwrap_or_else(|e| panic!("labels.json: {e}"));
    let mut games = Vec::new();
    for (p, bytes) in files {
        if p.ends_with(".jsonl") {
            for line in String::from_utf8_lossy(bytes).lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
                    && let Some(g) = v.get("game").and_then(|g| g.as_str())
                {
                    games.push(g.to_string());
                }
            }
        }
    }
    games.sort();
    games.dedup();
    (labels["accounts"].clone(), games)
}

/// `population_seed` continues an earlier run's platform: the same accounts and behaviours,
/// other games with other ids.
#[test]
fn a_population_seed_keeps_the_accounts_and_draws_new_games() {
    let first = small();
    let next = SimOptions {
        seed: 2,
        population_seed: Some(first.seed),
        start: "2026-11-22".into(),
        malformed: 0,
        ..small()
    };
    let (_a, a) = run(&first);
    let (_b, b) = run(&next);
    let (_c, c) = run(&SimOptions { seed: 2, ..small() });
    let (accounts_a, games_a) = accounts_and_games(&a);
    let (accounts_b, games_b) = accounts_and_games(&b);
    let (accounts_c, _) = accounts_and_games(&c);
    assert!(
        accounts_a.as_array().is_some_and(|v| v.len() == 120),
        "{accounts_a}"
    );
    assert_eq!(
        accounts_a, accounts_b,
        "the continued run has other accounts"
    );
    assert_ne!(
        accounts_a, accounts_c,
        "seed 2 alone drew the same accounts"
    );
    assert!(games_a.len() > 100 && games_b.len() > 100);
    assert!(
        games_b.iter().all(|g| games_a.binary_search(g).is_err()),
        "a game id of the first run comes back in the continued run"
    );
}

#[test]
fn invalid_options_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    for bad in [
        SimOptions {
            days: 0,
            ..SimOptions::default()
        },
        SimOptions {
            start: "2026-13-01".into(),
            ..SimOptions::default()
        },
        SimOptions {
            accounts: 3,
            ..SimOptions::default()
        },
        SimOptions {
            fault_rate: 1.5,
            ..SimOptions::default()
        },
        SimOptions {
            servers: 0,
            ..SimOptions::default()
        },
    ] {
        let r = simulate(&bad, dir.path(), &|_| {});
        assert!(
            matches!(r, Err(vigie::sim::SimError::Options(_))),
            "{bad:?} gave {r:?}"
        );
    }
}

/// The committed sample (`data/sample`, the logs the lake tests ingest) is what the simulator writes
/// today: the subtlety knob and the look-alikes, at their defaults, draw nothing new.
#[test]
fn the_committed_sample_logs_are_reproduced() {
    let (_dir, files) = run(&SimOptions::sample());
    let committed = raw_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample"));
    let logs = |v: &[(String, Vec<u8>)]| -> Vec<(String, Vec<u8>)> {
        v.iter()
            .filter(|(p, _)| p.starts_with("srv-"))
            .cloned()
            .collect()
    };
    let (now, then) = (logs(&files), logs(&committed));
    assert!(!then.is_empty());
    assert_eq!(
        now.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        then.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((p, a), (_, b)) in now.iter().zip(&then) {
        assert!(a == b, "{p} differs from data/sample");
    }
}
