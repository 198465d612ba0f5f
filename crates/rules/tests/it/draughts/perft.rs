//! Every perft count of `draughts-perft.json`, at every depth listed, plus a
//! cross-check of the fast perft against the public API (make/unmake).

use vigie_rules::games::draughts::{Position, Variant, perft, perft_slow};

use super::fixtures::json;

fn variant(name: &str) -> Variant {
    match name {
        "international" => Variant::International,
        "brazilian" => Variant::Brazilian,
        other => panic!("unknown variant {other}"),
    }
}

#[test]
fn perft_fixture_every_depth() {
    let data = json("draughts-perft.json");
    let positions = data["positions"].as_array().expect("positions");
    assert_eq!(positions.len(), 4);
    let mut checked = 0;
    for p in positions {
        let name = p["name"].as_str().expect("name");
        let pos = Position::from_fen(
            variant(p["variant"].as_str().expect("variant")),
            p["fen"].as_str().expect("fen"),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, expected) in p["perft"].as_array().expect("perft").iter().enumerate() {
            let depth = i as u32 + 1;
            let expected = expected.as_u64().expect("count");
            assert_eq!(perft(&pos, depth), expected, "{name} depth {depth}");
            checked += 1;
        }
    }
    // 8 + 9 + 11 + 7 depths.
    assert_eq!(checked, 35);
}

#[test]
fn fast_perft_agrees_with_public_api() {
    for (v, fen, depth) in [
        (Variant::International, "W:W31-50:B1-20", 4),
        (Variant::Brazilian, "W:W21-32:B1-12", 5),
        (
            Variant::International,
            "W:B12,13,14,16,18,19,21,23,24,26:W25,27,28,30,32,33,34,35,37,38",
            6,
        ),
        (Variant::International, "W:WK31-50:BK1-20", 3),
        (Variant::Brazilian, "B:WK29,K32,18:BK1,K4,10,11", 4),
    ] {
        let mut pos = Position::from_fen(v, fen).expect("fen");
        let before = pos;
        assert_eq!(perft_slow(&mut pos, depth), perft(&pos, depth), "{fen}");
        assert_eq!(pos, before, "make/unmake restored {fen}");
    }
}

/// Timing run for PERF.md (release): `cargo test --release --test it perft_timing -- --ignored --nocapture`.
/// Set `PERFT_FEN`, `PERFT_VARIANT` (international|brazilian), `PERFT_DEPTH` and
/// `PERFT_RUNS` to time another position.
#[test]
#[ignore = "timing run, not a check"]
fn perft_timing() {
    let fen = std::env::var("PERFT_FEN").unwrap_or_else(|_| "W:W31-50:B1-20".to_string());
    let v =
        variant(&std::env::var("PERFT_VARIANT").unwrap_or_else(|_| "international".to_string()));
    let depth: u32 = std::env::var("PERFT_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(9);
    let runs: usize = std::env::var("PERFT_RUNS")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(5);
    let pos = Position::from_fen(v, &fen).expect("fen");
    let mut times = Vec::new();
    let mut nodes = 0;
    for _ in 0..runs {
        let t = std::time::Instant::now();
        nodes = perft(&pos, depth);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "vigie perft {fen} depth {depth}: {nodes} leaves; runs {runs}; min {:.3} s, median {median:.3} s, {:.1} M leaves/s (median)",
        times[0],
        nodes as f64 / median / 1e6
    );
}
