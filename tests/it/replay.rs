//! Replay: the independent sample is clean; crafted faults are found at their seq.

use std::collections::BTreeMap;

use vigie::replay::{Context, GameReplay, Logged, replay_game};

use crate::common::*;

/// Replays every game of a JSON Lines text.
pub fn replay_text(text: &str) -> BTreeMap<String, GameReplay> {
    replay_text_after(text, 0)
}

/// Replays every game of a JSON Lines text as if the replay had seen lines up to `later_ms` after
/// the text's last one.
pub fn replay_text_after(text: &str, later_ms: i64) -> BTreeMap<String, GameReplay> {
    let mut games: BTreeMap<String, Vec<Logged>> = BTreeMap::new();
    let mut horizon = 0;
    for line in text.lines() {
        let l = Logged::parse(line.to_string()).expect("valid line");
        horizon = horizon.max(l.ts());
        games.entry(l.event.game.clone()).or_default().push(l);
    }
    let ctx = Context {
        horizon_ms: horizon + later_ms,
    };
    games
        .into_iter()
        .map(|(g, lines)| (g.clone(), replay_game(&g, lines, &ctx)))
        .collect()
}

#[test]
fn the_independent_sample_replays_without_any_finding() {
    let text = std::fs::read_to_string(shared_sample()).unwrap();
    let games = replay_text(&text);
    assert_eq!(games.len(), 40);
    let mut problems = Vec::new();
    for (id, r) in &games {
        for f in &r.findings {
            problems.push(format!(
                "{id} seq {} {}: {} (expected {:?}, logged {:?})",
                f.seq,
                f.code.as_str(),
                f.message,
                f.expected,
                f.logged
            ));
        }
        let g = r.game.as_ref().expect("game row");
        assert!(g.finished, "{id} not finished");
        assert_eq!(g.result_logged, g.result_replayed, "{id}");
        assert!(!g.desynced, "{id} desynced");
        if g.kind == "ludo" || g.kind == "belote" || g.mode == "medieval" {
            assert_eq!(g.fairness, "pass", "{id}");
        } else {
            assert_eq!(g.fairness, "n/a", "{id}");
        }
    }
    assert!(
        problems.is_empty(),
        "{} findings:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // Every attempt has its row; every departure its row.
    let moves: usize = games.values().map(|r| r.moves.len()).sum();
    assert_eq!(moves, 2464 + 162 + 1344);
    let departures: usize = games.values().map(|r| r.departures.len()).sum();
    assert_eq!(departures, 3);
    assert!(
        games
            .values()
            .flat_map(|r| &r.moves)
            .all(|m| m.legal && m.accepted)
    );
}

/// Each seat of the sample lake lists its slow moves while losing (the `stalling` rule's evidence),
/// one per move its count says, and each listed move is one: accepted, played by the player, while
/// losing, at 80 % of the clock or more.
#[test]
fn each_seat_lists_its_slow_moves_while_losing() {
    let lake = sample_lake();
    let q = |sql: &str| sql_first(lake, sql);
    assert_eq!(
        q(
            "SELECT count(*) FROM game_players WHERE slow_losing_refs IS NULL \
           OR cardinality(slow_losing_refs) <> slow_losing_moves"
        ),
        "0"
    );
    let listed: i64 = q("SELECT sum(slow_losing_moves) FROM game_players")
        .parse()
        .unwrap();
    assert!(
        listed > 0,
        "the sample has no slow move while losing to list"
    );
    let moves = q(
        "SELECT count(*) FROM (SELECT unnest(slow_losing_refs) AS r, account FROM game_players) x \
         JOIN moves m ON concat(m.game, ':', CAST(m.seq AS VARCHAR)) = x.r AND m.player = x.account \
         WHERE m.accepted AND NOT m.auto AND m.balance < 0 \
           AND CAST(m.think_ms AS DOUBLE) >= 0.8 * CAST(m.limit_ms AS DOUBLE)",
    );
    assert_eq!(moves, listed.to_string());
    // And the first and last of them are timed.
    assert_eq!(
        q(
            "SELECT count(*) FROM game_players WHERE slow_losing_moves > 0 \
           AND (slow_losing_first IS NULL OR slow_losing_last < slow_losing_first)"
        ),
        "0"
    );
}

/// The lines of one game of the sample, as JSON values.
pub fn sample_game(prefix: &str, nth: usize) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(shared_sample()).unwrap();
    let mut games: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        games
            .entry(v["game"].as_str().unwrap().to_string())
            .or_default()
            .push(v);
    }
    let mut lines = games
        .into_iter()
        .filter(|(g, _)| g.starts_with(prefix))
        .nth(nth)
        .unwrap()
        .1;
    lines.sort_by_key(|v| v["seq"].as_i64());
    lines
}

/// A game's lines under another id, each timestamp moved to `date` (same time of day; the
/// game must not cross midnight).
pub fn moved_game(lines: &[serde_json::Value], id: &str, date: &str) -> Vec<serde_json::Value> {
    lines
        .iter()
        .map(|v| {
            let mut v = v.clone();
            v["game"] = id.into();
            let ts = v["ts"].as_str().unwrap();
            v["ts"] = format!("{date}{}", &ts[10..]).into();
            v
        })
        .collect()
}

/// Writes JSON values back as a game's lines, re-chaining `prev` over the new text (serde_json sorts keys).
pub fn relink(lines: &[serde_json::Value]) -> String {
    relink_broken(lines, None)
}

/// Like [`relink`], with a wrong `prev` written on line `broken`.
pub fn relink_broken(lines: &[serde_json::Value], broken: Option<usize>) -> String {
    use sha2::{Digest, Sha256};
    let mut out = Vec::new();
    let mut prev: Option<String> = None;
    for (k, v) in lines.iter().enumerate() {
        let mut v = v.clone();
        if let Some(obj) = v.as_object_mut() {
            obj.remove("prev");
            if let Some(p) = &prev {
                let p = if Some(k) == broken {
                    "ab".repeat(32)
                } else {
                    p.clone()
                };
                obj.insert("prev".into(), serde_json::Value::from(p));
            }
        }
        let line = serde_json::to_string(&v).unwrap();
        prev = Some(
            Sha256::digest(line.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        );
        out.push(line);
    }
    out.join("\n")
}

/// The (seq, code) pairs found in a game.
fn found(text: &str) -> Vec<(i64, String)> {
    found_after(text, 0)
}

/// The (seq, code) pairs found in a game, the replay having seen lines up to `later_ms` after it.
fn found_after(text: &str, later_ms: i64) -> Vec<(i64, String)> {
    let games = replay_text_after(text, later_ms);
    games
        .values()
        .flat_map(|r| {
            r.findings
                .iter()
                .map(|f| (f.seq, f.code.as_str().to_string()))
        })
        .collect()
}

pub fn seq_of(lines: &[serde_json::Value], pred: impl Fn(&serde_json::Value) -> bool) -> usize {
    lines.iter().position(pred).expect("event present")
}

/// Renumbers the lines from index `at` on one seq higher: a gap before the line at `at`.
fn leave_gap(lines: &mut [serde_json::Value], at: usize) {
    for v in lines.iter_mut().skip(at) {
        let s = v["seq"].as_i64().unwrap();
        v["seq"] = serde_json::Value::from(s + 1);
    }
}

/// Logs the other side's win on a draughts `game_ended` (white for a draw).
fn flip_result(end: &mut serde_json::Value) {
    let flipped = match end["result"].as_str().unwrap() {
        "white" => "black",
        _ => "white",
    };
    end["result"] = serde_json::Value::from(flipped);
}

#[test]
fn a_wrong_die_is_found_at_its_roll() {
    let mut lines = sample_game("lu-", 0);
    let i = seq_of(&lines, |v| v["type"] == "roll" && v["n"] == 5);
    let value = lines[i]["value"].as_i64().unwrap();
    lines[i]["value"] = serde_json::Value::from(value % 6 + 1);
    let f = found(&relink(&lines));
    assert!(f.contains(&(i as i64, "wrong_die".into())), "{f:?}");
}

#[test]
fn commitment_mismatch_missing_reveal_and_late_commitment() {
    let mut lines = sample_game("be-", 0);
    lines[0]["commitment"] = serde_json::Value::from("00".repeat(32));
    let reveal = seq_of(&lines, |v| v["type"] == "seed_revealed");
    let f = found(&relink(&lines));
    assert_eq!(f, vec![(reveal as i64, "commitment_mismatch".into())]);

    let mut lines = sample_game("lu-", 1);
    lines.retain(|v| v["type"] != "seed_revealed");
    let end = seq_of(&lines, |v| v["type"] == "game_ended");
    // The reveal may still come in the next file or micro-batch: pending for an hour, then missing.
    assert_eq!(found_after(&relink(&lines), 59 * 60 * 1000), vec![]);
    let games = replay_text(&relink(&lines));
    let g = games.values().next().and_then(|r| r.game.as_ref()).unwrap();
    assert_eq!(g.fairness, "pending");
    assert_eq!(
        found_after(&relink(&lines), 61 * 60 * 1000),
        vec![(end as i64, "seed_missing".into())]
    );

    let mut lines = sample_game("lu-", 2);
    // game_started stamped later than the first roll (same second, 999 ms).
    let mut ts = lines[1]["ts"].as_str().unwrap().to_string();
    ts.replace_range(20..23, "999");
    lines[0]["ts"] = serde_json::Value::from(ts);
    assert_eq!(found(&relink(&lines)), vec![(0, "late_commitment".into())]);
}

/// Renumbers seqs from 0 in list order.
fn renumber(lines: &mut [serde_json::Value]) {
    for (k, v) in lines.iter_mut().enumerate() {
        v["seq"] = serde_json::Value::from(k as i64);
    }
}

#[test]
fn a_ludo_winner_named_draw_is_no_draw() {
    let lines = sample_game("lu-", 0);
    let end = seq_of(&lines, |v| v["type"] == "game_ended");
    let winner = lines[end]["result"].as_str().unwrap().to_string();
    let renamed: Vec<serde_json::Value> = lines
        .iter()
        .map(|v| {
            let text = serde_json::to_string(v)
                .unwrap()
                .replace(&format!("\"{winner}\""), "\"draw\"");
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    assert_eq!(renamed[end]["result"], "draw");
    assert_eq!(found(&relink(&renamed)), vec![]);
}

#[test]
fn the_parser_takes_every_ludo_variant_the_engine_plays() {
    assert_eq!(
        vigie::log::parse::MAX_LUDO_TOKENS,
        i64::from(vigie::games::ludo::MAX_TOKENS)
    );
}

/// A line delivered twice is a copy made on the way (`seq_redelivered`, info), one seq logged in two
/// different lines is the server's fault (`seq_duplicate`); either way the first is replayed.
#[test]
fn a_line_delivered_twice_is_told_from_a_seq_logged_twice() {
    let lines = sample_game("d10-", 0);
    let logged: Vec<Logged> = relink(&lines)
        .lines()
        .map(|l| Logged::parse(l.to_owned()).expect("valid line"))
        .collect();
    let horizon = logged.iter().map(Logged::ts).max().unwrap();
    let game = logged[0].event.game.clone();
    let ctx = Context {
        horizon_ms: horizon,
    };
    let mut twice = logged.clone();
    twice.insert(4, Logged::parse(format!("{}\r", logged[3].raw)).unwrap());
    let r = replay_game(&game, twice, &ctx);
    let found: Vec<(i64, &str, &str)> = r
        .findings
        .iter()
        .map(|f| (f.seq, f.code.as_str(), f.severity.as_str()))
        .collect();
    assert_eq!(found, vec![(3, "seq_redelivered", "info")]);
    let Some(think) = logged[3].event.attempt().map(|a| a.think_ms) else {
        panic!("seq 3 is not an attempt: {}", logged[3].raw)
    };
    let changed = logged[3].raw.replace(
        &format!("\"think_ms\":{think}"),
        &format!("\"think_ms\":{}", think + 1),
    );
    assert_ne!(changed, logged[3].raw);
    let mut two = logged.clone();
    two.insert(4, Logged::parse(changed).unwrap());
    let r = replay_game(&game, two, &ctx);
    let found: Vec<(i64, &str)> = r
        .findings
        .iter()
        .map(|f| (f.seq, f.code.as_str()))
        .collect();
    assert_eq!(found, vec![(3, "seq_duplicate")]);
}

#[test]
fn a_game_written_with_crlf_line_ends_or_a_byte_order_mark_chains() {
    // The server hashed each line without its newline; its newline is CRLF, so the raw line the
    // reader keeps ends with `\r`. Line 2 opens a file written "UTF-8 with BOM".
    let lines = sample_game("d10-", 0);
    let mut logged: Vec<Logged> = relink(&lines)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let bom = if i == 2 { "\u{feff}" } else { "" };
            Logged::parse(format!("{bom}{l}\r")).expect("valid line")
        })
        .collect();
    assert!(logged[1].raw.ends_with('\r'));
    assert!(logged[2].raw.starts_with('\u{feff}'));
    let horizon = logged.iter().map(Logged::ts).max().unwrap();
    let game = logged[0].event.game.clone();
    let r = replay_game(
        &game,
        logged.clone(),
        &Context {
            horizon_ms: horizon,
        },
    );
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    // A wrong prev is still found.
    let bad = logged[5]
        .raw
        .replace(logged[5].event.prev.as_deref().unwrap(), &"ab".repeat(32));
    logged[5] = Logged::parse(bad).unwrap();
    let r = replay_game(
        &game,
        logged,
        &Context {
            horizon_ms: horizon,
        },
    );
    let codes: Vec<(i64, &str)> = r
        .findings
        .iter()
        .map(|f| (f.seq, f.code.as_str()))
        .collect();
    // (and at 6, whose prev hashes line 5 as it was)
    assert_eq!(codes, vec![(5, "chain_broken"), (6, "chain_broken")]);
}

#[test]
fn a_seed_revealed_before_the_end_is_found() {
    let mut lines = sample_game("lu-", 0);
    let r = seq_of(&lines, |v| v["type"] == "seed_revealed");
    let mut reveal = lines.remove(r);
    reveal["ts"] = lines[0]["ts"].clone();
    lines.insert(1, reveal);
    renumber(&mut lines);
    let f = found(&relink(&lines));
    assert_eq!(f, vec![(1, "seed_early".into())]);
}

#[test]
fn a_reveal_without_game_ended_waits_when_lines_are_missing_before_it() {
    // game_ended (and the line before it) not read yet: the reveal may well be on time.
    let mut lines = sample_game("lu-", 0);
    let end = seq_of(&lines, |v| v["type"] == "game_ended");
    lines.drain(end - 1..=end);
    let f = found(&relink(&lines));
    assert!(f.iter().any(|(_, c)| c == "seq_gap"), "{f:?}");
    assert!(!f.iter().any(|(_, c)| c == "seed_early"), "{f:?}");
    // With every line before it present and no game_ended, it is early.
    let mut lines = sample_game("lu-", 0);
    let end = seq_of(&lines, |v| v["type"] == "game_ended");
    lines.remove(end);
    renumber(&mut lines);
    let f = found(&relink(&lines));
    assert!(f.contains(&(end as i64, "seed_early".into())), "{f:?}");
}

#[test]
fn roll_numbers_must_count_every_roll() {
    let mut lines = sample_game("lu-", 0);
    let i = seq_of(&lines, |v| v["type"] == "roll" && v["n"] == 10);
    lines[i]["n"] = serde_json::Value::from(79);
    let f = found(&relink(&lines));
    assert!(f.contains(&(i as i64, "draw_misnumbered".into())), "{f:?}");
    // Once: the count goes on from the logged number, so the next roll (n 11) breaks it again, and
    // the one after does not.
    let misnumbered: Vec<i64> = f
        .iter()
        .filter(|(_, c)| c == "draw_misnumbered")
        .map(|(s, _)| *s)
        .collect();
    let next = seq_of(&lines, |v| v["type"] == "roll" && v["n"] == 11) as i64;
    assert_eq!(misnumbered, vec![i as i64, next]);
    let games = replay_text(&relink(&lines));
    let g = games.values().next().and_then(|r| r.game.as_ref()).unwrap();
    assert_eq!(g.fairness, "fail");
}

#[test]
fn duels_after_a_misapplied_one_are_still_checked() {
    let mut lines = sample_game("md-", 0);
    let duel_moves: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, v)| v.get("duels").is_some())
        .map(|(k, _)| k)
        .collect();
    let (first, second) = (duel_moves[0], duel_moves[1]);
    // The first capture's duel names a square that is no victim: the replay stops following the
    // board there; the second duel, flipped, is still checked against its derivation.
    lines[first]["duels"][0]["victim"] = serde_json::Value::from(1);
    let won = lines[second]["duels"][0]["won"].as_bool().unwrap();
    lines[second]["duels"][0]["won"] = serde_json::Value::from(!won);
    let f = found(&relink(&lines));
    assert!(
        f.contains(&(first as i64, "duel_misapplied".into())),
        "{f:?}"
    );
    assert!(f.contains(&(second as i64, "wrong_duel".into())), "{f:?}");
}

#[test]
fn a_pass_marked_automatic_is_no_finding() {
    let mut lines = sample_game("lu-", 0);
    let i = seq_of(&lines, |v| v["type"] == "move" && v["pass"] == true);
    lines[i]["auto"] = serde_json::Value::from(true);
    assert_eq!(found(&relink(&lines)), vec![]);
    // An automatic token move without a timeout before it still is.
    let mut lines = sample_game("lu-", 0);
    let i = seq_of(&lines, |v| v["type"] == "move" && v.get("token").is_some());
    lines[i]["auto"] = serde_json::Value::from(true);
    assert_eq!(
        found(&relink(&lines)),
        vec![(i as i64, "wrong_auto_move".into())]
    );
}

/// The games of the simulator's clean run, each as its lines' JSON values in seq order.
fn clean_games() -> Vec<Vec<serde_json::Value>> {
    crate::sim::common::clean()
        .games()
        .values()
        .map(|g| {
            g.lines
                .iter()
                .map(|(t, _)| serde_json::from_str(t).unwrap())
                .collect()
        })
        .collect()
}

/// An attempt the server rejects after a timeout, before it logs the automatic action it owes
/// (the contract fixes no order between them), from the player who timed out or from another:
/// out of turn since the timeout (a race), never a legal action wrongly rejected, whatever the
/// engine's state after the automatic action it already applied.
#[test]
fn an_attempt_between_a_timeout_and_the_automatic_action_is_out_of_turn() {
    let mut tried = BTreeMap::new();
    for lines in clean_games() {
        let kind = lines[0]["kind"].as_str().unwrap_or_default().to_string();
        if tried.get(&kind).is_some_and(|n| *n >= 3) {
            continue;
        }
        // A timeout that owes an action, followed by that automatic action.
        let Some(t) = (1..lines.len() - 1).find(|&i| {
            lines[i]["type"] == "timeout"
                && lines[i]["outcome"] == "auto"
                && lines[i + 1]["auto"] == true
                && lines[i + 1]["player"] == lines[i]["player"]
        }) else {
            continue;
        };
        if !found(&relink(&lines)).is_empty() {
            continue;
        }
        let late = lines[t]["player"].clone();
        let other = lines[0]["players"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["account"].clone())
            .find(|a| *a != late)
            .unwrap();
        let mut g = lines.clone();
        for (k, who) in [late, other].into_iter().enumerate() {
            let mut attempt = lines[t + 1].clone();
            attempt["player"] = who;
            attempt["status"] = "rejected".into();
            attempt["reason"] = if k == 0 { "not_your_turn" } else { "illegal" }.into();
            attempt["auto"] = false.into();
            attempt["think_ms"] = 500.into();
            attempt["ts"] = lines[t]["ts"].clone();
            g.insert(t + 1 + k, attempt);
        }
        renumber(&mut g);
        let at = |k: usize| (t + 1 + k) as i64;
        assert_eq!(
            found(&relink(&g)),
            vec![(at(0), "out_of_turn".into()), (at(1), "out_of_turn".into())],
            "{} ({kind}) at seq {t}",
            g[0]["game"]
        );
        let replayed = replay_text(&relink(&g));
        let moves = &replayed.values().next().unwrap().moves;
        for k in 0..2 {
            let row = moves.iter().find(|m| m.seq == at(k)).unwrap();
            assert_eq!((row.on_turn, row.since_turn_ms), (false, Some(0)), "{kind}");
        }
        *tried.entry(kind).or_insert(0) += 1;
    }
    assert_eq!(
        tried.keys().collect::<Vec<_>>(),
        ["belote", "draughts8", "ludo"],
        "{tried:?}"
    );
}

/// A Ludo player who left while the others play on: a late attempt of theirs, rejected
/// `game_over` (or `not_your_turn`), is an attempt after the game was over for them, not out of
/// turn (which counts as tampering once a second has passed) nor a wrong reason.
#[test]
fn an_attempt_from_a_ludo_player_who_left_is_after_their_end() {
    let mut tried = 0;
    for lines in clean_games() {
        // A departure followed by a roll: the game goes on without the player.
        let Some(at) = (1..lines.len() - 1)
            .find(|&i| lines[i]["type"] == "left" && lines[i + 1]["type"] == "roll")
        else {
            continue;
        };
        if lines[0]["kind"] != "ludo" || !found(&relink(&lines)).is_empty() {
            continue;
        }
        for reason in ["game_over", "not_your_turn"] {
            let mut g = lines.clone();
            let mut late = serde_json::json!({"v": 1, "game": lines[0]["game"], "seq": 0,
                "ts": lines[at + 1]["ts"], "type": "move", "player": lines[at]["player"],
                "token": 0, "status": "rejected", "reason": reason, "think_ms": 40000});
            late["auto"] = false.into();
            g.insert(at + 2, late);
            renumber(&mut g);
            assert_eq!(
                found(&relink(&g)),
                vec![((at + 2) as i64, "after_end".into())],
                "{} {reason}",
                g[0]["game"]
            );
        }
        tried += 1;
        if tried == 3 {
            break;
        }
    }
    assert!(tried > 0, "no Ludo game goes on after a departure");
}

#[test]
fn a_draw_offered_before_the_offerers_own_move_stands_until_the_opponent_moves() {
    use serde_json::{Value, json};
    let lines = sample_game("d10-", 0);
    let accepted = |v: &Value| v["type"] == "move" && v["status"] == "accepted";
    let first = seq_of(&lines, accepted);
    let second = first + 1 + seq_of(&lines[first + 1..], accepted);
    let gid = lines[0]["game"].clone();
    let ts = lines[second]["ts"].clone();
    let players = lines[0]["players"].as_array().unwrap().clone();
    let stake = lines[0]["stake"].as_i64().unwrap();
    let mover = lines[second]["player"].as_str().unwrap().to_string();
    let other = players
        .iter()
        .map(|p| p["account"].as_str().unwrap().to_string())
        .find(|a| *a != mover)
        .unwrap();
    let ending = |g: &mut Vec<Value>| {
        g.push(json!({"v":1,"game":gid,"seq":0,"ts":ts,"type":"draw_answer","player":other,"accept":true}));
        g.push(json!({"v":1,"game":gid,"seq":0,"ts":ts,"type":"game_ended","result":"draw","reason":"agreement",
            "payouts":{mover.clone(): stake, other.clone(): stake},"rake":0}));
        renumber(g);
    };
    // The player to move offers a draw, then makes its move; the opponent accepts.
    let mut g: Vec<Value> = lines[..=first].to_vec();
    g.push(json!({"v":1,"game":gid,"seq":0,"ts":ts,"type":"draw_offer","player":mover}));
    g.push(lines[second].clone());
    ending(&mut g);
    assert_eq!(found(&relink(&g)), vec![]);
    // Declined by the opponent's move: a later acceptance is no agreement.
    let mut g: Vec<Value> = lines[..first].to_vec();
    let offerer = lines[first]["player"].clone();
    g.push(json!({"v":1,"game":gid,"seq":0,"ts":ts,"type":"draw_offer","player":offerer}));
    g.push(lines[first].clone());
    g.push(lines[second].clone());
    let late = g.len() as i64;
    let mut swapped = g.clone();
    swapped.push(
        json!({"v":1,"game":gid,"seq":0,"ts":ts,"type":"draw_answer","player":mover,"accept":true}),
    );
    renumber(&mut swapped);
    let f = found(&relink(&swapped));
    assert!(f.contains(&(late, "accepted_illegal".into())), "{f:?}");
}

#[test]
fn a_capture_must_list_every_stop() {
    let lines = sample_game("d10-", 0);
    let i = seq_of(&lines, |v| {
        v["status"] == "accepted"
            && v["move"]
                .as_str()
                .is_some_and(|m| m.matches('x').count() >= 2)
    });
    let full = lines[i]["move"].as_str().unwrap().to_string();
    let squares: Vec<&str> = full.split('x').collect();
    let short = format!("{}x{}", squares[0], squares[squares.len() - 1]);
    // A client's short form, rejected by the server as malformed: an attempt finding, not a
    // legal move rejected.
    let mut rej = lines.clone();
    let mut r = rej[i].clone();
    r["move"] = short.clone().into();
    r["status"] = "rejected".into();
    r["reason"] = "malformed".into();
    rej.insert(i, r);
    renumber(&mut rej);
    assert_eq!(
        found(&relink(&rej)),
        vec![(i as i64, "missing_stops".into())]
    );
    // Accepted and logged without its stops: not the contract's notation; the board still follows
    // the one move it names, so nothing else is found.
    let mut acc = lines.clone();
    acc[i]["move"] = short.into();
    assert_eq!(
        found(&relink(&acc)),
        vec![(i as i64, "accepted_illegal".into())]
    );
}

#[test]
fn a_wrong_duel_and_a_wrong_deal_are_found() {
    let mut lines = sample_game("md-", 1);
    let i = seq_of(&lines, |v| v.get("duels").is_some());
    let won = lines[i]["duels"][0]["won"].as_bool().unwrap();
    lines[i]["duels"][0]["won"] = serde_json::Value::from(!won);
    let f = found(&relink(&lines));
    assert!(f.contains(&(i as i64, "wrong_duel".into())), "{f:?}");

    let mut lines = sample_game("be-", 1);
    let i = seq_of(&lines, |v| v["type"] == "deal");
    let hands = lines[i]["hands"].as_object().unwrap().clone();
    let keys: Vec<String> = hands.keys().cloned().collect();
    // Swap one card between the two hands, and the same in the completed hands.
    let a = lines[i]["hands"][&keys[0]][0].clone();
    let b = lines[i]["hands"][&keys[1]][0].clone();
    lines[i]["hands"][&keys[0]][0] = b.clone();
    lines[i]["hands"][&keys[1]][0] = a.clone();
    let f = found(&relink(&lines));
    assert!(f.contains(&(i as i64, "wrong_deal".into())), "{f:?}");
}

#[test]
fn sequence_and_chain_faults() {
    let lines = sample_game("d10-", 0);
    // A gap: drop seq 5's number by renumbering everything after it.
    let mut gap = lines.clone();
    leave_gap(&mut gap, 5);
    let f = found(&relink(&gap));
    assert!(f.contains(&(6, "seq_gap".into())), "{f:?}");
    assert!(!f.iter().any(|(_, c)| c == "chain_broken"), "{f:?}");
    // A broken chain at seq 7: a wrong prev; the next lines hash the lines as written.
    assert_eq!(
        found(&relink_broken(&lines, Some(7))),
        vec![(7, "chain_broken".into())]
    );
}

#[test]
fn accepted_illegal_rejected_legal_and_late_moves() {
    let lines = sample_game("d8-", 0);
    // Replace white's first move by a backwards... not possible at the start: use a move to an occupied square.
    let mut acc = lines.clone();
    let i = seq_of(&acc, |v| v["type"] == "move");
    let legal = acc[i]["move"].as_str().unwrap().to_string();
    acc[i]["move"] = serde_json::Value::from("21-18"); // not a legal opening move on 8x8 unless it is
    let f = found(&relink(&acc));
    if legal != "21-18" {
        assert!(f.contains(&(i as i64, "accepted_illegal".into())), "{f:?}");
    }
    // A legal move rejected, then the same move accepted.
    let mut rej = lines.clone();
    let mut r = rej[i].clone();
    r["status"] = serde_json::Value::from("rejected");
    r["reason"] = serde_json::Value::from("illegal");
    rej.insert(i, r);
    for (k, v) in rej.iter_mut().enumerate() {
        v["seq"] = serde_json::Value::from(k as i64);
    }
    let f = found(&relink(&rej));
    assert_eq!(f, vec![(i as i64, "rejected_legal".into())]);
    // Accepted after the clock limit (60 s on 8x8).
    let mut late = lines.clone();
    late[i]["think_ms"] = serde_json::Value::from(61_000);
    assert_eq!(found(&relink(&late)), vec![(i as i64, "late_move".into())]);
}

#[test]
fn wrong_result_and_wrong_payouts() {
    let lines = sample_game("d10-", 1);
    let end = seq_of(&lines, |v| v["type"] == "game_ended");
    let mut wr = lines.clone();
    flip_result(&mut wr[end]);
    let f = found(&relink(&wr));
    assert!(f.contains(&(end as i64, "wrong_result".into())), "{f:?}");

    let mut wp = lines.clone();
    let payouts = wp[end]["payouts"].as_object().unwrap().clone();
    let accounts: Vec<String> = payouts.keys().cloned().collect();
    let a = payouts[&accounts[0]].clone();
    wp[end]["payouts"][&accounts[0]] = payouts[&accounts[1]].clone();
    wp[end]["payouts"][&accounts[1]] = a;
    let f = found(&relink(&wp));
    if payouts[&accounts[0]] != payouts[&accounts[1]] {
        assert_eq!(f, vec![(end as i64, "wrong_payout".into())]);
    }
}

#[test]
fn every_finding_row_has_the_time_of_the_line_it_is_about() {
    // Findings about lines that are neither moves nor departures (the end, the seed reveal, the line
    // after a gap) carry the time of that line, so that a window on `ts` holds them.
    let lines = sample_game("d10-", 1);
    let end = seq_of(&lines, |v| v["type"] == "game_ended");
    let mut bad = lines.clone();
    flip_result(&mut bad[end]);
    leave_gap(&mut bad, 5);
    let mut ludo = sample_game("lu-", 0);
    ludo[0]["commitment"] = serde_json::Value::from("00".repeat(32));
    let mut codes = Vec::new();
    for lines in [bad, ludo] {
        for f in replay_text(&relink(&lines))
            .values()
            .flat_map(GameReplay::finding_rows)
        {
            let line = lines
                .iter()
                .find(|v| v["seq"] == f.seq)
                .expect("a line at the seq");
            let ts = vigie::log::syntax::parse_ts(line["ts"].as_str().unwrap()).unwrap();
            assert_eq!(f.ts.map(|t| t.0), Some(ts), "{} at seq {}", f.code, f.seq);
            codes.push(f.code);
        }
    }
    for code in ["wrong_result", "commitment_mismatch", "seq_gap"] {
        assert!(codes.iter().any(|c| c == code), "{codes:?}");
    }
}

mod lake {
    use std::path::Path;

    use vigie::lake::Lake;
    use vigie::replay::run::{Resident, run_with};

    use super::{moved_game, relink, sample_game};
    use crate::common::*;

    /// The game of a raw line.
    fn game_of(line: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["game"].as_str().unwrap().to_string()
    }

    /// Index of a line of `game` in the middle of its lines.
    fn a_middle_line(lines: &[&str], game: &str) -> usize {
        let own: Vec<usize> = (0..lines.len())
            .filter(|&i| game_of(lines[i]) == game)
            .collect();
        own[own.len() / 2]
    }

    /// The derived tables of `staged` are those of one replay of the whole sample (into `whole`).
    fn assert_same_as_one_replay(staged: &Path, whole: &Path) {
        quiet_ingest(whole, &shared_sample());
        quiet_replay(whole);
        assert_same_tables(staged, whole);
    }

    /// The derived tables of two lakes hold the same rows.
    fn assert_same_tables(staged: &Path, whole: &Path) {
        for table in ["games", "game_players", "moves", "departures", "findings"] {
            assert_eq!(
                table_rows(staged, table),
                table_rows(whole, table),
                "table {table} differs"
            );
        }
    }

    /// A server stuck on one seed: every game that used it gets one `seed_reused` finding naming
    /// the others (the first ten, and how many), not one per other game (N² findings: 2,000
    /// copies of a game start gave 3,998,000 before).
    #[test]
    fn games_sharing_one_seed_get_one_finding_each() {
        let dir = tempfile::tempdir().unwrap();
        let first = sample_game("lu-", 0);
        let original = first[0]["game"].as_str().unwrap().to_string();
        let mut content = String::new();
        for k in 0..25 {
            content.push_str(&relink(&moved_game(
                &first,
                &format!("lu-ffff-7000{k:02}"),
                "2026-11-23",
            )));
            if !content.ends_with('\n') {
                content.push('\n');
            }
        }
        let logs = dir.path().join("copies.jsonl");
        std::fs::write(&logs, content).unwrap();
        let lake = dir.path().join("lake");
        quiet_ingest(&lake, &shared_sample());
        quiet_ingest(&lake, &logs);
        quiet_replay(&lake);
        let rows = crate::common::sql_text(
            &lake,
            "SELECT game, count(*), min(message), min(logged) FROM findings \
             WHERE code = 'seed_reused' GROUP BY game ORDER BY game",
        );
        // The original and its 25 copies: 26 games, each sharing with 25 others.
        assert_eq!(rows.len(), 26, "{rows:?}");
        assert!(rows.iter().any(|r| r[0] == original));
        for r in &rows {
            assert_eq!(r[1], "1", "{r:?}");
            assert!(
                r[2].contains("also used by 25 other games: ") && r[2].ends_with(", ..."),
                "{r:?}"
            );
            assert_eq!(r[2].matches(", ").count(), 10, "ten named, then ...: {r:?}");
            assert!(
                !r[2].contains(&format!(" {},", r[0])),
                "names itself: {r:?}"
            );
            assert_eq!(r[3], "shared with 25 games");
        }
    }

    #[test]
    fn replay_writes_the_derived_tables_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let lake = dir.path().join("lake");
        quiet_ingest(&lake, &shared_sample());
        let r = quiet_replay(&lake);
        assert_eq!((r.games, r.events, r.findings), (40, 5010, 0));
        assert_eq!(table_rows(&lake, "games").len(), 40);
        assert_eq!(table_rows(&lake, "game_players").len(), (40 * 2));
        assert_eq!(table_rows(&lake, "moves").len(), 3970);
        assert!(table_rows(&lake, "findings").is_empty());
        let again = quiet_replay(&lake);
        assert_eq!((again.games, again.version), (0, None));
    }

    #[test]
    fn incremental_replay_equals_one_replay_of_everything() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(shared_sample()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // The log arrives in three parts; games are cut mid-way.
        let parts = [&lines[..1500], &lines[1500..3100], &lines[3100..]];
        let staged = dir.path().join("staged");
        let growing = dir.path().join("server.jsonl");
        let mut content = String::new();
        for part in parts {
            for l in part {
                content.push_str(l);
                content.push('\n');
            }
            std::fs::write(&growing, &content).unwrap();
            quiet_ingest(&staged, &growing);
            quiet_replay(&staged);
        }
        assert_same_as_one_replay(&staged, &dir.path().join("whole"));
        // Only open games' files are rewritten: no open file is left once every game closed.
        let state = Lake::open(&staged).unwrap().state().unwrap();
        assert!(state.files.values().all(|f| !f.open));
    }

    /// A line of a game that already ended arrives late: that game's rows are rewritten, in
    /// the files holding it only, and the derived tables end as one replay of everything.
    #[test]
    fn a_late_line_of_a_closed_game_rewrites_only_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(shared_sample()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let late_game = game_of(lines[1000]);
        let late = a_middle_line(&lines, &late_game);
        let staged = dir.path().join("staged");
        let first = dir.path().join("a.jsonl");
        let rest: Vec<&str> = (0..lines.len())
            .filter(|&i| i != late)
            .map(|i| lines[i])
            .collect();
        std::fs::write(&first, rest.join("\n") + "\n").unwrap();
        quiet_ingest(&staged, &first);
        let r = quiet_replay(&staged);
        assert!(r.findings > 0, "the gap is a finding: {r:?}");
        let before = Lake::open(&staged).unwrap().state().unwrap();
        assert!(before.files.values().all(|f| !f.open));
        let second = dir.path().join("b.jsonl");
        std::fs::write(&second, format!("{}\n", lines[late])).unwrap();
        quiet_ingest(&staged, &second);
        let r = quiet_replay(&staged);
        assert_eq!(r.games, 1, "{r:?}");
        let after = Lake::open(&staged).unwrap().state().unwrap();
        let replaced: Vec<_> = before
            .files
            .values()
            .filter(|f| f.table != "events" && !after.files.contains_key(&f.path))
            .collect();
        // games, game_players, moves (and findings, which held the gap) of one partition.
        assert!(replaced.len() >= 3, "{replaced:?}");
        assert!(
            replaced
                .iter()
                .all(|f| f.partition == replaced[0].partition)
        );
        let kept = before
            .files
            .values()
            .filter(|f| f.table == "moves" && after.files.contains_key(&f.path))
            .count();
        assert!(kept >= 1, "the other day's moves file stays");
        assert_same_as_one_replay(&staged, &dir.path().join("whole"));
    }

    /// A streaming replay: the lines of open games held in memory between runs.
    #[test]
    fn resident_replay_equals_one_replay_of_everything() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(shared_sample()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let staged = dir.path().join("staged");
        let growing = dir.path().join("server.jsonl");
        let opts = quiet_replay_options();
        // An index that keeps every game (the next test lets them go).
        let mut resident = Resident::retaining(i64::MAX);
        let mut content = String::new();
        let mut most_open = 0;
        for (k, part) in lines.chunks(400).enumerate() {
            for l in part {
                content.push_str(l);
                content.push('\n');
            }
            std::fs::write(&growing, &content).unwrap();
            quiet_ingest(&staged, &growing);
            let l = Lake::open(&staged).unwrap();
            if k == 6 {
                // Another process replays in between: the resident state is stale and rebuilt.
                quiet_replay(&staged);
            }
            run_with(&l, &opts, Some(&mut resident)).unwrap();
            most_open = most_open.max(resident.open_games());
            assert!(!resident.take_accounts().is_empty() || k == 6);
        }
        // Games were open between parts, and none is held once all are closed.
        assert!(most_open > 0);
        assert_eq!(resident.open_games(), 0);
        assert_eq!(resident.indexed_games(), 40);
        assert_same_as_one_replay(&staged, &dir.path().join("whole"));
    }

    /// A resident index that lets every closed game go (no retention) still replays as one
    /// run over everything: a late line of a game it let go of, a new game reusing the seed
    /// and commitment of one, and a new game whose game_started comes a pass after its
    /// seed_revealed, recall those games from the lake.
    #[test]
    fn an_index_that_lets_old_games_go_recalls_them_from_the_lake() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(shared_sample()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // A line of an early game held back to the end.
        let late_game = game_of(lines[300]);
        let late = a_middle_line(&lines, &late_game);
        // A copy of the first Ludo game, three days later under another id: same seed, same
        // commitment.
        let first = sample_game("lu-", 0);
        let original = first[0]["game"].as_str().unwrap().to_string();
        assert_ne!(original, late_game);
        let copy = |id: &str| moved_game(&first, id, "2026-11-23");
        let mut parts: Vec<String> = (0..lines.len())
            .filter(|&i| i != late)
            .map(|i| lines[i].to_string())
            .collect();
        parts.push(lines[late].to_string());
        parts.extend(relink(&copy("lu-ffff-900001")).lines().map(str::to_string));
        // Another copy with its own commitment (so only the seed is shared), its game_started
        // logged after all its other lines, in a pass of its own.
        let mut other = copy("lu-ffff-900002");
        other[0]["commitment"] = "0".repeat(64).into();
        let other = relink(&other);
        let mut other: Vec<&str> = other.lines().collect();
        let other_start = other.remove(0).to_string();
        parts.extend(other.iter().map(|l| l.to_string()));

        let staged = dir.path().join("staged");
        let growing = dir.path().join("server.jsonl");
        let opts = quiet_replay_options();
        let mut resident = Resident::retaining(0);
        let mut content = String::new();
        let mut most_held = 0;
        let mut passes: Vec<&[String]> = parts.chunks(500).collect();
        let last = [other_start];
        passes.push(&last);
        for part in passes {
            for l in part {
                content.push_str(l);
                content.push('\n');
            }
            std::fs::write(&growing, &content).unwrap();
            quiet_ingest(&staged, &growing);
            let l = Lake::open(&staged).unwrap();
            run_with(&l, &opts, Some(&mut resident)).unwrap();
            most_held = most_held.max(resident.indexed_games());
        }
        // The index held only the games of a chunk or so, never the 41.
        assert!(most_held < 20, "held {most_held}");
        let whole = dir.path().join("whole");
        let all = dir.path().join("all.jsonl");
        std::fs::write(&all, &content).unwrap();
        quiet_ingest(&whole, &all);
        quiet_replay(&whole);
        assert_same_tables(&staged, &whole);
        // The one-run replay does find the reuse, both ways, and the gap of the late line
        // closed: so the equality above covers both recalls.
        let findings = table_rows(&whole, "findings");
        let reused = |g: &str| {
            findings
                .iter()
                .any(|r| r.contains(g) && r.contains("seed_reused"))
        };
        assert!(reused(&original) && reused("lu-ffff-900001") && reused("lu-ffff-900002"));
    }

    /// A game whose lines came before its game_started has no game row: a resident state
    /// rebuilt after a restart must still hold its lines, or the game_started arriving later
    /// would replay it from that line alone.
    #[test]
    fn a_game_without_its_start_survives_a_restart_of_the_resident_state() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(shared_sample()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let late_game = game_of(lines[2000]);
        let start = (0..lines.len())
            .find(|&i| game_of(lines[i]) == late_game && lines[i].contains("\"game_started\""))
            .unwrap();
        let mut order: Vec<&str> = (0..lines.len())
            .filter(|&i| i != start)
            .map(|i| lines[i])
            .collect();
        order.push(lines[start]);
        let staged = dir.path().join("staged");
        let growing = dir.path().join("server.jsonl");
        let opts = quiet_replay_options();
        let n = order.len();
        // Pass 1: everything but the last 100 lines and the start. Then a restart (a fresh
        // state), pass 2 with 99 more lines, and pass 3 with the start alone.
        let cuts = [n - 101, n - 1, n];
        let mut resident = Resident::default();
        for (k, &cut) in cuts.iter().enumerate() {
            std::fs::write(&growing, order[..cut].join("\n") + "\n").unwrap();
            quiet_ingest(&staged, &growing);
            if k == 1 {
                resident = Resident::default();
            }
            let l = Lake::open(&staged).unwrap();
            run_with(&l, &opts, Some(&mut resident)).unwrap();
        }
        let whole = dir.path().join("whole");
        quiet_ingest(&whole, &growing);
        quiet_replay(&whole);
        assert_same_tables(&staged, &whole);
        let games = table_rows(&staged, "games");
        assert!(
            games
                .iter()
                .any(|r| r.starts_with(&format!("{late_game}|")))
        );
    }
}

/// `vigie replay --rejudge`: the games of a period judged again, their rows replaced exactly.
mod rejudge {
    use std::collections::BTreeSet;
    use std::path::Path;
    use std::time::Duration;

    use arrow::array::{AsArray, Int64Array, RecordBatch};
    use arrow::datatypes::Int64Type;
    use vigie::lake::Lake;

    use crate::common::*;

    const TABLES: [&str; 5] = ["games", "game_players", "moves", "departures", "findings"];

    fn derived(lake: &Path) -> Vec<Vec<String>> {
        TABLES.iter().map(|t| table_rows(lake, t)).collect()
    }

    /// The derived files of a lake outside one partition, by path.
    fn files_outside(lake: &Path, partition: &str) -> BTreeSet<String> {
        let state = Lake::open(lake).unwrap().state().unwrap();
        state
            .files
            .values()
            .filter(|f| TABLES.contains(&f.table.as_str()))
            .filter(|f| f.partition.as_deref() != Some(partition))
            .map(|f| f.path.clone())
            .collect()
    }

    /// Every row of one partition of a table, as committed.
    fn read_partition(lake: &Path, table: &str, partition: &str) -> Vec<RecordBatch> {
        let l = Lake::open(lake).unwrap();
        let state = l.state().unwrap();
        let mut out = Vec::new();
        for f in state
            .table_files(table)
            .filter(|f| f.partition.as_deref() == Some(partition))
        {
            out.extend(
                vigie::lake::parquet::read_file(&vigie::lake::resolve(l.root(), &f.path), None)
                    .unwrap(),
            );
        }
        out
    }

    /// Commits `batches` in place of every file of one partition of a table.
    fn replace_partition(
        lake: &Path,
        def: &vigie::lake::tables::TableDef,
        partition: &str,
        batches: &[RecordBatch],
    ) {
        let l = Lake::open(lake).unwrap();
        let state = l.state().unwrap();
        let mut w = l.writer().unwrap();
        let mut txn = w.begin("test").unwrap();
        for f in state
            .table_files(def.name)
            .filter(|f| f.partition.as_deref() == Some(partition))
        {
            txn.remove_file(&f.path);
        }
        let file = txn.new_file(def.name, Some(partition)).unwrap();
        let meta =
            vigie::lake::parquet::write_sorted(&file.pending, def, def.schema(), batches).unwrap();
        txn.add_file_meta(file, meta);
        txn.commit(serde_json::json!({})).unwrap();
    }

    /// What an older engine might have said of one day: one finding missing, one that is not
    /// true (an existing finding copied to seq 9999). Returns both as `game:seq code`.
    fn tamper_findings(lake: &Path, partition: &str) -> (String, String) {
        let batches = read_partition(lake, "findings", partition);
        let all = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        assert!(all.num_rows() >= 2, "the day has findings to tamper with");
        let key = |i: usize| {
            format!(
                "{}:{} {}",
                all.column_by_name("game")
                    .unwrap()
                    .as_string::<i32>()
                    .value(i),
                all.column_by_name("seq")
                    .unwrap()
                    .as_primitive::<Int64Type>()
                    .value(i),
                all.column_by_name("code")
                    .unwrap()
                    .as_string::<i32>()
                    .value(i)
            )
        };
        let missing = key(0);
        let copied = all.slice(1, 1);
        let seq_idx = copied.schema().index_of("seq").unwrap();
        let mut columns = copied.columns().to_vec();
        columns[seq_idx] = std::sync::Arc::new(Int64Array::from(vec![9999]));
        let bogus = RecordBatch::try_new(copied.schema(), columns).unwrap();
        let bogus_key = format!(
            "{}:9999 {}",
            bogus
                .column_by_name("game")
                .unwrap()
                .as_string::<i32>()
                .value(0),
            bogus
                .column_by_name("code")
                .unwrap()
                .as_string::<i32>()
                .value(0)
        );
        let rest = all.slice(1, all.num_rows() - 1);
        replace_partition(
            lake,
            &vigie::replay::rows::FindingRow::def(),
            partition,
            &[rest, bogus],
        );
        (missing, bogus_key)
    }

    /// A lake of three simulated days with server faults, replayed and detected, and the day
    /// in the middle.
    fn lake(dir: &Path) -> (std::path::PathBuf, String) {
        let opts = vigie::sim::SimOptions {
            seed: 31337,
            days: 3,
            games_per_day: 150,
            accounts: 200,
            fault_rate: 0.1,
            ..vigie::sim::SimOptions::default()
        };
        let lake = simulated_lake(&opts, dir);
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let l = vigie::catalog::open(&lake).unwrap();
        vigie::detect::run(&l, &root.join("queries/detect").into(), &Default::default()).unwrap();
        let state = l.state().unwrap();
        let days: BTreeSet<String> = state
            .table_files("games")
            .filter_map(|f| f.partition.clone())
            .collect();
        assert_eq!(days.len(), 3, "{days:?}");
        let middle = days.into_iter().nth(1).unwrap();
        (lake, middle)
    }

    /// The arguments of `vigie replay --rejudge` of one day (`date=YYYY-MM-DD`) of `lake`.
    fn rejudge_args(lake: &Path, day: &str) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let day = day.trim_start_matches("date=");
        [
            "-q",
            "replay",
            "--lake",
            lake.to_str().unwrap(),
            "--rejudge",
            "--from",
            day,
            "--to",
            day,
            "--rules",
            root.join("queries/detect").to_str().unwrap(),
        ]
        .map(str::to_string)
        .to_vec()
    }

    fn rejudge(lake: &Path, day: &str) -> serde_json::Value {
        let mut args = rejudge_args(lake, day);
        args.push("--report-json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = vigie(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn flags(lake: &Path) -> Vec<(String, String, String)> {
        let l = Lake::open(lake).unwrap();
        let mut v: Vec<_> = vigie::detect::read_flags(&l.snapshot().unwrap())
            .unwrap()
            .into_iter()
            .map(|f| (f.flag_id, f.action, format!("{:.6}", f.score)))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn rejudging_a_day_replaces_exactly_its_derived_rows_and_lists_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let (lake, day) = lake(dir.path());
        let truth = derived(&lake);
        let flags_before = flags(&lake);
        let outside = files_outside(&lake, &day);
        let (missing, bogus) = tamper_findings(&lake, &day);
        assert_ne!(derived(&lake), truth);
        // The day holds games that share a seed (a server fault of the simulator): the check
        // that finds them must see them again, though the re-judgement holds in memory only
        // the games whose seed or commitment another game used.
        let reused_games: BTreeSet<String> = truth[4]
            .iter()
            .filter(|row| {
                row.contains("seed_reused") && row.contains(day.trim_start_matches("date="))
            })
            .map(|row| row.split('|').next().unwrap().to_string())
            .collect();
        assert!(
            !reused_games.is_empty(),
            "the simulated day has a seed reused"
        );
        let report = rejudge(&lake, &day);
        let r = &report["replay"]["rejudged"];
        assert_eq!(r["added"], serde_json::json!([missing]), "{r}");
        assert_eq!(r["withdrawn"], serde_json::json!([bogus]), "{r}");
        assert!(r["games"].as_u64().unwrap() >= 100, "{r}");
        let held = report["replay"]["held"].as_u64().unwrap();
        assert!(
            held >= reused_games.len() as u64 && held < r["games"].as_u64().unwrap() / 4,
            "held {held} of {} games; seed reuse in {reused_games:?}",
            r["games"]
        );
        assert!(!r["accounts"].as_array().unwrap().is_empty(), "{r}");
        // The accounts concerned are exactly the players of the games whose findings changed.
        let changed: BTreeSet<String> = [&missing, &bogus]
            .iter()
            .map(|k| k.split(':').next().unwrap().to_string())
            .collect();
        let players: BTreeSet<String> = table_rows(&lake, "game_players")
            .iter()
            .map(|row| row.split('|').collect::<Vec<_>>())
            .filter(|cols| changed.contains(cols[0]))
            .map(|cols| cols[1].to_string())
            .collect();
        let accounts: BTreeSet<String> = r["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(accounts, players, "{r}");
        // Every derived row of the lake as one replay made it: nothing lost, nothing doubled.
        assert_eq!(derived(&lake), truth);
        // The other days' files were not touched.
        assert!(outside.is_subset(&files_outside(&lake, &day)));
        assert_eq!(flags(&lake), flags_before);
        // Judging again with the same engines changes nothing.
        let again = rejudge(&lake, &day);
        assert_eq!(again["replay"]["rejudged"]["added"], serde_json::json!([]));
        assert_eq!(
            again["replay"]["rejudged"]["withdrawn"],
            serde_json::json!([])
        );
        assert_eq!(derived(&lake), truth);
    }

    /// Killed at any moment, a re-judgement leaves the lake as it was or as it should be, and
    /// the next run completes it.
    #[test]
    fn a_rejudgement_killed_at_any_moment_leaves_the_lake_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (lake, day) = lake(dir.path());
        let truth = derived(&lake);
        tamper_findings(&lake, &day);
        let tampered = derived(&lake);
        let mut seen_before = false;
        for wait_ms in [20u64, 80, 160, 320, 640, 1280] {
            let mut child = std::process::Command::new(vigie_bin())
                .args(rejudge_args(&lake, &day))
                .env("VIGIE_LOG", "warn")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(wait_ms));
            let _ = child.kill();
            let _ = child.wait();
            let now = derived(&lake);
            assert!(
                now == tampered || now == truth,
                "killed after {wait_ms} ms: a mixed lake"
            );
            seen_before |= now == tampered;
            if now == truth {
                break;
            }
        }
        assert!(seen_before, "no kill landed before the commit");
        rejudge(&lake, &day);
        assert_eq!(derived(&lake), truth);
    }

    /// One day's `game_players` rows without those of the given accounts (as an older engine
    /// might have left them), committed in place.
    fn drop_players(lake: &Path, partition: &str, accounts: &BTreeSet<String>) {
        let mut kept = Vec::new();
        for b in read_partition(lake, "game_players", partition) {
            let a = b
                .column_by_name("account")
                .unwrap()
                .as_string::<i32>()
                .clone();
            let keep: arrow::array::BooleanArray = (0..b.num_rows())
                .map(|i| Some(!accounts.contains(a.value(i))))
                .collect();
            kept.push(arrow::compute::filter_record_batch(&b, &keep).unwrap());
        }
        replace_partition(
            lake,
            &vigie::replay::rows::PlayerRow::def(),
            partition,
            &kept,
        );
    }

    /// A decision taken on a flag that only wrong derived rows produced goes back to the queue,
    /// with the engines and the change in the audit log.
    #[test]
    fn a_decision_on_a_flag_the_rejudgement_changes_is_reopened() {
        use vigie::review::{NewAuditEntry, ReviewAction, ReviewIndex, ReviewStatus, Role};
        let dir = tempfile::tempdir().unwrap();
        let (lake, day) = lake(dir.path());
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rules = root.join("queries/detect").into();
        let truth = flags(&lake);
        let l = vigie::catalog::open(&lake).unwrap();
        let flagged: BTreeSet<String> = vigie::detect::read_flags(&l.snapshot().unwrap())
            .unwrap()
            .into_iter()
            .map(|f| f.account)
            .collect();
        assert!(!flagged.is_empty(), "the simulation flags someone");
        // The flagged players' rows of one day go missing; detection runs on that.
        drop_players(&lake, &day, &flagged);
        // Forced: the replay checkpoint did not move.
        vigie::detect::run_scoped(&l, &rules, &Default::default(), None, true).unwrap();
        let wrong = flags(&lake);
        let changed: Vec<&(String, String, String)> =
            wrong.iter().filter(|f| !truth.contains(f)).collect();
        assert!(!changed.is_empty(), "the missing rows change a flag");
        let id = changed[0].0.clone();
        let account = vigie::detect::read_flags(&l.snapshot().unwrap())
            .unwrap()
            .into_iter()
            .find(|f| f.flag_id == id)
            .unwrap()
            .account;
        for (action, prev, new) in [
            (
                ReviewAction::Claim,
                ReviewStatus::Open,
                ReviewStatus::Claimed,
            ),
            (
                ReviewAction::Confirm,
                ReviewStatus::Claimed,
                ReviewStatus::Confirmed,
            ),
        ] {
            vigie::review::append(
                &l,
                NewAuditEntry {
                    at: 1_790_000_000_000,
                    actor: "alice".into(),
                    role: Role::Reviewer,
                    action,
                    flag: id.clone(),
                    account: account.clone(),
                    reason: "seen".into(),
                    decision: (action == ReviewAction::Confirm)
                        .then_some(vigie::review::Decision::BlockRecommended),
                    prev_state: prev,
                    new_state: new,
                },
            )
            .unwrap();
        }
        let report = rejudge(&lake, &day);
        assert_eq!(
            flags(&lake),
            truth,
            "the flags are those of the true rows again"
        );
        let listed: Vec<&str> = report["flags"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["flag_id"].as_str())
            .collect();
        assert!(listed.contains(&id.as_str()), "{report}");
        assert_eq!(report["reopened"], serde_json::json!([id]), "{report}");
        let log = vigie::review::read_log(&l.snapshot().unwrap()).unwrap();
        let last = log.last().unwrap();
        assert_eq!(last.actor, vigie::rejudge::ACTOR);
        assert_eq!(last.action, ReviewAction::Reopen);
        assert!(last.reason.contains("vigie-rules"), "{}", last.reason);
        assert_eq!(
            ReviewIndex::from_entries(&log).get(&id).status,
            ReviewStatus::Open
        );
    }
}
