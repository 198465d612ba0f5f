//! The command line: the demo (the README's main job), engines and fairness commands checked against an independent implementation, and `vigie verify`.

use std::process::Command;

use crate::common::*;

fn stdout(args: &[&str]) -> String {
    let out = vigie(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// An independent implementation of fairness.md in Python (hashlib and hmac only).
const PYTHON_FAIRNESS: &str = r#"
import hashlib, hmac, sys, json
seed, game, what, arg = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def block(msg): return hmac.new(seed.encode(), msg.encode(), hashlib.sha256).digest()
class Stream:
    def __init__(s, prefix): s.prefix, s.i, s.buf = prefix, 0, b""
    def u32(s):
        while len(s.buf) < 4:
            s.buf += block(f"{s.prefix}:{s.i}"); s.i += 1
        v, s.buf = int.from_bytes(s.buf[:4], "big"), s.buf[4:]
        return v
    def below(s, n):
        lim = (2**32 // n) * n
        while True:
            v = s.u32()
            if v < lim: return v % n
def die(n):
    k = 0
    while True:
        msg = f"{game}:die:{n}" if k == 0 else f"{game}:die:{n}:{k}"
        for b in block(msg):
            if b < 252: return b % 6 + 1
        k += 1
if what == "commit": print(hashlib.sha256(seed.encode()).hexdigest())
elif what == "dice": print(" ".join(str(die(n)) for n in range(arg)))
elif what == "duels": print(" ".join("won" if block(f"{game}:duel:{m}")[0] < 128 else "lost" for m in range(arg)))
elif what == "shuffle":
    deck = [r + s for s in "SHDC" for r in "789TJQKA"]
    st = Stream(f"{game}:deal:{arg}")
    for i in range(31, 0, -1):
        j = st.below(i + 1); deck[i], deck[j] = deck[j], deck[i]
    print(" ".join(deck))
"#;

fn python(seed: &str, game: &str, what: &str, arg: u64) -> String {
    let out = Command::new("python3")
        .args(["-c", PYTHON_FAIRNESS, seed, game, what, &arg.to_string()])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn fairness_commands_match_an_independent_implementation() {
    for (seed, game) in [
        (
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "lu-test-1",
        ),
        (
            "f00dfacef00dfacef00dfacef00dfacef00dfacef00dfacef00dfacef00dface",
            "be_x.99",
        ),
    ] {
        assert_eq!(
            stdout(&["fairness", "commit", "--seed", seed]),
            python(seed, game, "commit", 0)
        );
        assert_eq!(
            stdout(&[
                "fairness", "dice", "--seed", seed, "--game", game, "--count", "300"
            ]),
            python(seed, game, "dice", 300)
        );
        assert_eq!(
            stdout(&[
                "fairness", "duels", "--seed", seed, "--game", game, "--count", "64"
            ]),
            python(seed, game, "duels", 64)
        );
        for deal in [0, 1, 17] {
            assert_eq!(
                stdout(&[
                    "fairness",
                    "shuffle",
                    "--seed",
                    seed,
                    "--game",
                    game,
                    "--deal",
                    &deal.to_string()
                ]),
                python(seed, game, "shuffle", deal)
            );
        }
    }
    assert!(
        !vigie(&["fairness", "commit", "--seed", "ABC"])
            .status
            .success()
    );
}

#[test]
fn draughts_commands_reproduce_the_fixtures() {
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(shared().join("fixtures/draughts-perft.json")).unwrap(),
    )
    .unwrap();
    for p in fixture["positions"].as_array().unwrap() {
        let counts = p["perft"].as_array().unwrap();
        // The CLI runs unoptimised in tests: the first depths of each position suffice here.
        for (d, expected) in counts.iter().enumerate().take(5) {
            let out = stdout(&[
                "draughts",
                "perft",
                "--variant",
                p["variant"].as_str().unwrap(),
                "--fen",
                p["fen"].as_str().unwrap(),
                "--depth",
                &(d + 1).to_string(),
            ]);
            let first = out.lines().next().unwrap();
            assert_eq!(first, expected.to_string(), "{} depth {}", p["name"], d + 1);
            assert!(out.lines().nth(1).unwrap().contains("leaves/s"));
        }
    }
    let moves = stdout(&[
        "draughts",
        "moves",
        "--variant",
        "international",
        "--fen",
        "W:WK46:B23",
    ]);
    assert_eq!(moves.lines().count(), 4);
    let json: serde_json::Value = serde_json::from_str(&stdout(&[
        "draughts",
        "moves",
        "--variant",
        "international",
        "--fen",
        "W:W15:B8,19,20",
        "--json",
    ]))
    .unwrap();
    // The fixture's "men capture backwards" case: one move, every stop and every piece taken, in order.
    assert_eq!(
        json,
        serde_json::json!([{"from": 15, "to": 2, "path": [15, 24, 13, 2], "captures": [20, 19, 8]}])
    );
}

#[test]
fn draughts_analyse_prints_ranked_lines_and_answers_fens_on_stdin() {
    // White's man on 28 must take Black's last piece: the one move, a win in one ply.
    let text = stdout(&[
        "draughts",
        "analyse",
        "--variant",
        "international",
        "--fen",
        "W:W28:B23",
        "--depth",
        "4",
    ]);
    assert!(text.contains("1. 28x19 win in 1"), "{text}");
    // Three ranked lines from the start, deterministic for a node budget.
    let args = [
        "draughts",
        "analyse",
        "--variant",
        "brazilian",
        "--fen",
        "W:W21-32:B1-12",
        "--nodes",
        "20000",
        "--multipv",
        "3",
        "--json",
    ];
    let a: serde_json::Value = serde_json::from_str(&stdout(&args)).unwrap();
    let b: serde_json::Value = serde_json::from_str(&stdout(&args)).unwrap();
    let lines = a["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3);
    assert!(lines[0]["score"].as_i64() >= lines[1]["score"].as_i64());
    assert_eq!(lines[0]["pv"][0], lines[0]["move"]);
    assert_eq!(
        (a["lines"].clone(), a["nodes"].clone()),
        (b["lines"].clone(), b["nodes"].clone())
    );
    // --fen -: one JSON line per FEN, a bad one answered with its error and the loop going on.
    use std::io::Write;
    let mut child = std::process::Command::new(crate::common::vigie_bin())
        .args([
            "draughts",
            "analyse",
            "--variant",
            "international",
            "--fen",
            "-",
            "--depth",
            "3",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"W:W31-50:B1-20\nnot a fen\nB:W28:B\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let replies: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 3);
    assert_eq!(replies[0]["depth"], 3);
    assert!(replies[1]["error"].is_string());
    // Black without a piece has no move: no line.
    assert_eq!(replies[2]["lines"], serde_json::json!([]));
}

/// A log of several games, each with one fault injected, for `vigie verify`.
fn faulty_log() -> (String, Vec<(String, i64, &'static str)>) {
    use crate::replay::{relink, sample_game, seq_of};
    use serde_json::Value;
    let mut text = String::new();
    let mut expected = Vec::new();
    let id = |lines: &[Value]| lines[0]["game"].as_str().unwrap().to_string();
    // A wrong die.
    let mut a = sample_game("lu-", 0);
    let i = seq_of(&a, |v| v["type"] == "roll" && v["n"] == 7);
    let v = a[i]["value"].as_i64().unwrap();
    a[i]["value"] = Value::from(v % 6 + 1);
    expected.push((id(&a), i as i64, "wrong_die"));
    // A commitment that does not match the seed.
    let mut b = sample_game("be-", 0);
    b[0]["commitment"] = Value::from("11".repeat(32));
    expected.push((
        id(&b),
        seq_of(&b, |v| v["type"] == "seed_revealed") as i64,
        "commitment_mismatch",
    ));
    // A wrong deal: the turned card swapped with a card of the first hand.
    let mut c = sample_game("be-", 1);
    let i = seq_of(&c, |v| v["type"] == "deal");
    let acc = c[i]["hands"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let card = c[i]["hands"][&acc][0].clone();
    let turned = c[i]["turned"].clone();
    c[i]["hands"][&acc][0] = turned.clone();
    c[i]["turned"] = card.clone();
    let k = seq_of(&c, |v| v["type"] == "hands_completed");
    let _ = k;
    expected.push((id(&c), i as i64, "wrong_deal"));
    // A flipped duel.
    let mut d = sample_game("md-", 1);
    let i = seq_of(&d, |v| v.get("duels").is_some());
    let won = d[i]["duels"][0]["won"].as_bool().unwrap();
    d[i]["duels"][0]["won"] = Value::from(!won);
    expected.push((id(&d), i as i64, "wrong_duel"));
    // A missing reveal (a file is complete: `verify` does not wait for a reveal the way the
    // pipeline does, whatever the file's last time).
    let mut e = sample_game("lu-", 1);
    e.retain(|v| v["type"] != "seed_revealed");
    expected.push((
        id(&e),
        seq_of(&e, |v| v["type"] == "game_ended") as i64,
        "seed_missing",
    ));
    // A commitment published after the first roll.
    let mut f = sample_game("lu-", 2);
    let mut ts = f[1]["ts"].as_str().unwrap().to_string();
    ts.replace_range(20..23, "999");
    f[0]["ts"] = Value::from(ts);
    expected.push((id(&f), 0, "late_commitment"));
    // A reused seed: a short Medieval game (no duel drawn) committed to the seed of another one.
    let g = sample_game("md-", 2);
    // A Medieval game whose selections drew nothing (no automatic picks).
    let mut h = (3..8)
        .map(|k| sample_game("md-", k))
        .find(|l| {
            l.iter().all(|v| {
                v["type"] != "selection" || v["auto"].as_array().is_some_and(|a| a.is_empty())
            })
        })
        .expect("a Medieval game without automatic picks");
    let first_capture = seq_of(&h, |v| {
        v["type"] == "move" && v["move"].as_str().is_some_and(|m| m.contains('x'))
    });
    h.truncate(first_capture);
    let last = h.last().unwrap().clone();
    let black = h[0]["players"][1]["account"].as_str().unwrap().to_string();
    let white = h[0]["players"][0]["account"].as_str().unwrap().to_string();
    let stake = h[0]["stake"].as_i64().unwrap();
    let rake = 2 * stake * 5 / 100;
    let gid = id(&h);
    let n = h.len() as i64;
    let ts = last["ts"].as_str().unwrap().to_string();
    h.push(serde_json::json!({"v":1,"game":gid,"seq":n,"ts":ts,"type":"left","player":black,"reason":"resigned"}));
    h.push(serde_json::json!({"v":1,"game":gid,"seq":n+1,"ts":ts,"type":"game_ended","result":"white","reason":"left",
        "payouts":{white.clone(): 2*stake - rake, black.clone(): 0},"rake":rake}));
    let g_seed = g.iter().find(|v| v["type"] == "seed_revealed").unwrap()["seed"].clone();
    h.push(serde_json::json!({"v":1,"game":gid,"seq":n+2,"ts":ts,"type":"seed_revealed","seed":g_seed}));
    h[0]["commitment"] = g[0]["commitment"].clone();
    expected.push((
        id(&g),
        seq_of(&g, |v| v["type"] == "seed_revealed") as i64,
        "seed_reused",
    ));
    expected.push((gid.clone(), n + 2, "seed_reused"));
    for lines in [&a, &b, &c, &d, &e, &f, &g, &h] {
        text.push_str(&relink(lines));
        text.push('\n');
    }
    (text, expected)
}

#[test]
fn verify_reports_each_injected_fault_once_with_game_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (text, expected) = faulty_log();
    let path = dir.path().join("faulty.jsonl");
    std::fs::write(&path, &text).unwrap();
    let out = vigie(&["verify", path.to_str().unwrap(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got: Vec<(String, i64, String)> = Vec::new();
    for v in verdicts.as_array().unwrap() {
        for f in v["failures"].as_array().unwrap() {
            got.push((
                f["game"].as_str().unwrap().into(),
                f["seq"].as_i64().unwrap(),
                f["code"].as_str().unwrap().into(),
            ));
        }
    }
    got.sort();
    let mut want: Vec<(String, i64, String)> = expected
        .into_iter()
        .map(|(g, s, c)| (g, s, c.to_string()))
        .collect();
    want.sort();
    assert_eq!(got, want);
    // One game alone, in text.
    let one = vigie(&["verify", path.to_str().unwrap(), "--game", &want[0].0]);
    assert_eq!(one.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&one.stdout).contains(&want[0].2));
    // Each game of a reused seed alone: the other game of the file still counts.
    for (game, _, _) in want.iter().filter(|w| w.2 == "seed_reused") {
        let one = vigie(&["verify", path.to_str().unwrap(), "--game", game]);
        assert_eq!(one.status.code(), Some(1), "{game}");
        let text = String::from_utf8_lossy(&one.stdout);
        assert!(text.contains("seed_reused"), "{game}: {text}");
    }
}

#[test]
fn verify_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let clean = vigie(&["verify", shared_sample().to_str().unwrap()]);
    assert_eq!(clean.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&clean.stdout).contains("24 games, 24 pass, 0 fail, 0 pending")
    );
    // Every game passes, but a line could not be read: not "all pass".
    let partly = dir.path().join("partly.jsonl");
    let mut text = std::fs::read_to_string(shared_sample()).unwrap();
    text.push_str("{\"v\":1,\"game\":\"lu-x\",\"seq\":3,\"type\":\"roll\"}\n");
    std::fs::write(&partly, text).unwrap();
    let out = vigie(&["verify", partly.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "24 pass, 0 fail, 0 pending (seed not revealed: not verified), 1 lines unreadable"
        ),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, "not a log\n").unwrap();
    assert_eq!(
        vigie(&["verify", garbage.to_str().unwrap()]).status.code(),
        Some(2)
    );
    assert_eq!(
        vigie(&["verify", dir.path().join("missing.jsonl").to_str().unwrap()])
            .status
            .code(),
        Some(2)
    );
}

/// Durations given in seconds that no duration holds are refused with the option named, never a
/// panic (`vigie stream --commit-interval inf` panicked in `Duration::from_secs_f64`).
#[test]
fn seconds_no_duration_holds_are_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (follow, lake) = (dir.path().join("logs"), dir.path().join("lake"));
    std::fs::create_dir_all(&follow).unwrap();
    let (follow, lake) = (follow.to_str().unwrap(), lake.to_str().unwrap());
    for (option, value) in [("--commit-interval", "inf"), ("--detect-interval", "1e30")] {
        let out = vigie(&[
            "stream", "--follow", follow, "--lake", lake, "--once", option, value,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option} {value}: {err}");
        assert!(err.contains(option) && !err.contains("panicked"), "{err}");
    }
    let token = dir.path().join("token");
    std::fs::write(&token, "a-token-of-sixteen-chars").unwrap();
    let out = vigie(&[
        "serve",
        "--lake",
        lake,
        "--addr",
        "127.0.0.1:0",
        "--ingest-token-file",
        token.to_str().unwrap(),
        "--detect-interval",
        "inf",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--detect-interval") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn docs_tables_md_is_what_the_code_generates() {
    let generated = stdout(&["docs", "tables"]);
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tables.md"),
    )
    .unwrap();
    assert!(
        generated == committed,
        "docs/tables.md is stale: run `cargo run -- docs tables > docs/tables.md`"
    );
    assert!(committed.contains("## `events`") && committed.contains("## `account_risk`"));
}

/// The README's main job, without the server: from a directory with no `queries/` (the rules built
/// into the binary), every simulated line ingested, flags written, a reviewer added; run again, it
/// reuses the logs, finds nothing new and says so.
#[test]
fn demo_runs_the_pipeline_from_any_directory_and_again() {
    let dir = tempfile::tempdir().unwrap();
    let demo = || {
        let out = Command::new(vigie_bin())
            .current_dir(dir.path())
            .args([
                "demo",
                "--no-serve",
                "--days",
                "1",
                "--games-per-day",
                "300",
            ])
            .args(["--analyse-games", "1"])
            .env("VIGIE_LOG", "warn")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let line = |out: &str, start: &str| -> String {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{out}"))
            .to_string()
    };
    let first = demo();
    let ingest = line(&first, "ingest:");
    assert!(ingest.contains(" valid + 0 quarantined"), "{ingest}");
    assert!(line(&first, "replay:").contains("committed lake version"));
    let detect = line(&first, "detect:");
    let flags: u64 = detect
        .strip_prefix("detect: ")
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{detect}"));
    assert!(flags > 0, "{detect}");
    let lake = dir.path().join("data/lake");
    let rows: usize = read_table(&lake, "flags")
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert!(
        rows as u64 >= flags,
        "{rows} flag rows in the lake, {detect}"
    );
    // Every class of the labels is scored, with the counts it rests on.
    let evals: Vec<&str> = first.lines().filter(|l| l.starts_with("eval:")).collect();
    assert!(evals.len() >= 8, "{first}");
    assert!(
        evals
            .iter()
            .all(|l| l.contains(" found, ") || l.contains("no labelled account")),
        "{evals:?}"
    );
    let login = line(&first, "demo: reviewer login: demo / ");
    let password = login.rsplit(' ').next().unwrap_or_default();
    assert!(
        password.len() == 24 && password.bytes().all(|b| b.is_ascii_hexdigit()),
        "{login}"
    );
    let users = std::fs::read_to_string(lake.join("_vigie/config/users.json")).unwrap();
    assert!(users.contains("\"demo\""), "{users}");

    let second = demo();
    assert!(
        second.contains("demo: reusing the simulated logs"),
        "{second}"
    );
    assert!(
        line(&second, "ingest:").contains("(0 new, 0 grown"),
        "{second}"
    );
    assert!(
        line(&second, "detect:").starts_with("detect: nothing changed"),
        "{second}"
    );
}

/// `vigie verify` fails a game whose log can hide a draw (a roll line lost: the draws left all
/// match, yet one may be missing), and a Belote deal whose cards were handed out by another
/// dealer than the rules' (logged as such: the logged dealer's deal matches the seed).
#[test]
fn verify_fails_a_lost_draw_and_cards_dealt_by_another_dealer() {
    use crate::replay::{relink, sample_game, seq_of};
    use serde_json::{Value, json};
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, lines: &[Value]| -> (Option<i32>, String) {
        let path = dir.path().join(name);
        std::fs::write(&path, relink(lines) + "\n").unwrap();
        let game = lines[0]["game"].as_str().unwrap();
        let out = vigie(&["verify", path.to_str().unwrap(), "--game", game]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let mut a = sample_game("lu-", 1);
    let (code, text) = run("whole.jsonl", &a);
    assert_eq!(code, Some(0), "{text}");
    let i = seq_of(&a, |v| v["type"] == "roll" && v["n"] == 5);
    a.remove(i);
    let (code, text) = run("gap.jsonl", &a);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("seq_gap"), "{text}");
    // Lines of a game without its start: nothing of it can be checked, a failure (it was left
    // out, "0 games", and passed).
    a.remove(0);
    let (code, text) = run("no-start.jsonl", &a);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("missing_start"), "{text}");

    let mut b = sample_game("be-", 0);
    let (code, text) = run("belote.jsonl", &b);
    assert_eq!(code, Some(0), "{text}");
    let seed = b.iter().find(|v| v["type"] == "seed_revealed").unwrap()["seed"]
        .as_str()
        .unwrap()
        .to_owned();
    let game = b[0]["game"].as_str().unwrap().to_owned();
    let players: Vec<String> = (0..2)
        .map(|p| b[0]["players"][p]["account"].as_str().unwrap().to_owned())
        .collect();
    let d = seq_of(&b, |v| v["type"] == "deal" && v["deal"] == 0);
    assert_eq!(
        b[d]["dealer"],
        Value::from(players[1].clone()),
        "the rules' dealer"
    );
    let deck = vigie::games::belote::deck_from_indices(&vigie::fairness::shuffle(&seed, &game, 0))
        .unwrap();
    let other = vigie::games::belote::initial_deal(&deck, 0);
    let cards = |h: &[vigie::games::belote::Card]| -> Vec<String> {
        h.iter().map(|c| c.to_string()).collect()
    };
    b[d]["dealer"] = Value::from(players[0].clone());
    b[d]["hands"] = json!({
        players[0].clone(): cards(&other.hands[0]),
        players[1].clone(): cards(&other.hands[1]),
    });
    b[d]["turned"] = Value::from(other.turned.to_string());
    let (code, text) = run("dealer.jsonl", &b);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("wrong_deal"), "{text}");
}
