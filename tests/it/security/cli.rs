//! CLI arguments from the probe list: none panics, aborts or overflows the stack; each gets a clear refusal.

use super::{scratch, stderr};
use crate::common::vigie;

const SEED: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// Exit code of a refused argument (clap's usage error), never a panic (101) or an abort (134).
fn refused(args: &[&str]) -> String {
    let out = vigie(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    stderr(&out)
}

#[test]
fn huge_counts_and_depths_are_refused_not_crashed_on() {
    for count in ["18446744073709551615", "10000000000"] {
        for what in ["dice", "duels"] {
            let err = refused(&[
                "fairness", what, "--seed", SEED, "--game", "g1", "--count", count,
            ]);
            assert!(err.contains("--count"), "{what} {count}: {err}");
        }
    }
    let err = refused(&[
        "draughts",
        "perft",
        "--variant",
        "international",
        "--fen",
        "W:W31-50:B1-20",
        "--depth",
        "100000",
    ]);
    assert!(err.contains("--depth"), "{err}");
    // Within the limits they work, and dice stream out without being held.
    let out = vigie(&[
        "fairness", "dice", "--seed", SEED, "--game", "g1", "--count", "5",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let faces: Vec<u8> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|f| f.parse().expect("a face"))
        .collect();
    assert_eq!(faces.len(), 5);
    assert!(faces.iter().all(|f| (1..=6).contains(f)), "{faces:?}");
}

#[test]
fn reading_commands_never_create_a_lake() {
    let dir = scratch("no-lake");
    let missing = dir.join("nonexistent");
    let m = missing.to_str().unwrap();
    for args in [
        vec!["sql", "--lake", m, "SELECT 1"],
        vec!["verify", "--lake", m, "--game", "g1"],
        vec!["detect", "--lake", m],
        vec!["replay", "--lake", m],
        vec![
            "report",
            "--lake",
            m,
            "--from",
            "2026-11-20",
            "--to",
            "2026-11-21",
            "--out",
            m,
        ],
    ] {
        let out = vigie(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains("not a Vigie lake"), "{args:?}: {err}");
        assert!(!missing.join("_vigie").exists(), "{args:?} created a lake");
    }
}
