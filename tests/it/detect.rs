//! Detection rules: each rule flags a crafted case and leaves a crafted look-alike alone; eval scores flags against labels.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vigie::lake::Lake;
use vigie::lake::tables::TableDef;

fn rules_dir() -> vigie::detect::rules::RuleSource {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("queries/detect")
        .into()
}

/// Writes rows (JSON objects keyed by column) as one file of a lake table.
fn write_table(lake: &Lake, def: &TableDef, rows: &[Value]) {
    write_table_without(lake, def, rows, &[]);
}

/// Writes rows of `def` as one file whose schema lacks the columns `drop` (a file of an older
/// Vigie when they are columns added since).
fn write_table_without(lake: &Lake, def: &TableDef, rows: &[Value], drop: &[&str]) {
    let mut decoder = arrow::json::ReaderBuilder::new(def.schema())
        .build_decoder()
        .unwrap();
    decoder.serialize(rows).unwrap();
    let full = decoder.flush().unwrap().unwrap();
    let keep: Vec<usize> = (0..full.num_columns())
        .filter(|&i| !drop.contains(&full.schema().field(i).name().as_str()))
        .collect();
    let batch = full.project(&keep).unwrap();
    let mut w = lake.writer().unwrap();
    let mut txn = w.begin("test").unwrap();
    let file = txn
        .new_file(def.name, def.partition.map(|_| "date=2026-11-20"))
        .unwrap();
    let mut meta = vigie::lake::parquet::batch_meta(def, &batch);
    meta.bytes =
        vigie::lake::parquet::write_file(&file.pending, def, batch.schema(), &[batch]).unwrap();
    txn.add_file_meta(file, meta);
    txn.commit(json!({})).unwrap();
}

/// An events row at 2026-11-21 00:00 UTC: the lake's latest event sets the windows' end.
fn write_window_end(lake: &Lake, game: &str) {
    let events = vigie::lake::tables::events();
    write_table(
        lake,
        &events,
        &[full_row(
            &events,
            "2026-11-21T00:00:00Z",
            json!({"game": game, "v": 1}),
        )],
    );
}

/// An account_features row with every count zero, then the given values.
fn features(account: &str, set: Value) -> Value {
    let mut row = serde_json::Map::new();
    for c in vigie::features::account_table().columns {
        let v = match c.ty {
            arrow::datatypes::DataType::Int64 => json!(0),
            arrow::datatypes::DataType::Float64 => Value::Null,
            _ => Value::Null,
        };
        row.insert(c.name.to_string(), v);
    }
    row.insert("account".into(), json!(account));
    row.insert("window".into(), json!("30d"));
    row.insert("window_end".into(), json!("2026-11-27T00:00:00Z"));
    row.insert("games".into(), json!(40));
    row.insert("losses".into(), json!(20));
    if let Value::Object(m) = set {
        row.extend(m);
    }
    Value::Object(row)
}

fn pair(a: &str, b: &str, set: Value) -> Value {
    let mut row = serde_json::Map::new();
    for c in vigie::features::pair_table().columns {
        row.insert(
            c.name.to_string(),
            if c.ty == arrow::datatypes::DataType::Int64 {
                json!(0)
            } else {
                Value::Null
            },
        );
    }
    row.insert("a".into(), json!(a));
    row.insert("b".into(), json!(b));
    row.insert("window".into(), json!("30d"));
    row.insert("window_end".into(), json!("2026-11-27T00:00:00Z"));
    if let Value::Object(m) = set {
        row.extend(m);
    }
    Value::Object(row)
}

fn player(game: &str, account: &str, device: &str) -> Value {
    json!({"game": game, "account": account, "seat": "white", "position": 0, "ip": "ip-1", "device": device,
           "kind": "draughts10", "mode": "standard", "rated": false, "started_at": "2026-11-20T10:00:00Z",
           "duration_ms": 1000, "stake": 10, "moves": 10, "rejected": 0, "timeouts": 0, "left": false,
           "game_moves": 20, "attempts": 10, "tamper_attempts": 0, "tamper_mask": 0, "races": 0, "malformed": 0,
           "late_attempts": 0, "timed_moves": 10, "think_sum_ms": 20000.0, "think_sq_sum": 40000000.0,
           "instant_moves": 0, "forced_moves": 0, "forced_think_ms": 0.0, "losing_moves": 0,
           "slow_losing_moves": 0, "other_moves": 10, "slow_other_moves": 0, "tamper_refs": []})
}

/// A game_players row with tamper attempts at `seqs`, the first at `first`.
fn tampered(game: &str, account: &str, seqs: &[i64], first: &str) -> Value {
    let mut row = player(game, account, "dv-tamper");
    row["tamper_attempts"] = json!(seqs.len());
    row["tamper_refs"] = json!(
        seqs.iter()
            .map(|q| format!("{game}:{q}"))
            .collect::<Vec<_>>()
    );
    row["tamper_first"] = json!(first);
    row["tamper_last"] = json!(first);
    row
}

/// A crafted lake with, for every rule, one account that must be flagged and one that must not.
fn crafted() -> (tempfile::TempDir, Lake) {
    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::open(dir.path()).unwrap();
    let acc = vec![
        // Tampering: 4 forged attempts of 2 kinds / an honest player with races and a flaky network.
        features(
            "tamper-yes",
            json!({"tamper_attempts": 4, "tamper_kinds": 2, "tamper_games": 3, "attempts": 400}),
        ),
        features(
            "tamper-no",
            json!({"tamper_attempts": 0, "races": 6, "malformed": 2, "attempts": 400}),
        ),
        // The rest of the platform, whose rates are the rules' baselines.
        features(
            "crowd",
            json!({"games": 20000, "losses": 10000, "moves_timed": 30000, "moves_losing": 10000,
                   "slow_moves_losing": 20, "slow_share_losing": 0.002, "slow_share_other": 0.002,
                   "abandons_losing": 100, "abandons": 250, "decisive_timeouts_losing": 30,
                   "decisive_timeouts": 60, "gave_up_cheaply": 60, "spread_games": 2000, "think_spread": 0.4}),
        ),
        // Rage quit: abandons lost games, never others / a bad connection, dropping out whatever the score.
        features(
            "rage-yes",
            json!({"abandons_losing": 9, "abandons": 9, "departures_losing": 9, "departures": 9}),
        ),
        features(
            "rage-no",
            json!({"abandons_losing": 4, "abandons": 12, "departures_losing": 4, "departures": 12}),
        ),
        // Sitting: lets the clock decide lost games / away now and then whatever the score.
        features(
            "sit-yes",
            json!({"decisive_timeouts_losing": 8, "decisive_timeouts": 8, "timeouts_losing": 8, "timeouts": 8}),
        ),
        features(
            "sit-no",
            json!({"decisive_timeouts_losing": 3, "decisive_timeouts": 9, "timeouts": 9}),
        ),
        // Stalling: slow only when losing / slow always.
        features(
            "stall-yes",
            json!({"moves_timed": 400, "slow_moves_losing": 60, "moves_losing": 80, "slow_share_losing": 0.75, "slow_share_other": 0.02, "moves_other_prestall": 300, "slow_moves_other_prestall": 6}),
        ),
        features(
            "stall-no",
            json!({"moves_timed": 400, "slow_moves_losing": 60, "moves_losing": 80, "slow_share_losing": 0.75, "slow_share_other": 0.7, "moves_other_prestall": 300, "slow_moves_other_prestall": 210}),
        ),
        // Bot: steady delays with a human-looking pause now and then (a high cv, a low median-based
        // spread) / a quick and steady person.
        features(
            "bot-yes",
            json!({"moves_timed": 500, "spread_games": 30, "think_spread": 0.03, "think_cv14": 0.4, "think_cv": 0.9, "think_mean_ms": 1500.0}),
        ),
        features(
            "bot-no",
            json!({"moves_timed": 500, "spread_games": 30, "think_spread": 0.16, "think_cv14": 0.2, "think_cv": 0.25, "think_mean_ms": 1200.0}),
        ),
        // The pairs' accounts, with their cheap give-ups against everyone.
        features("dump-a", json!({"gave_up_cheaply": 8})),
        features("dump-b", json!({})),
        features("fair-a", json!({"gave_up_cheaply": 1})),
        features("fair-b", json!({})),
        features("trade-a", json!({"gave_up_cheaply": 6})),
        features("trade-b", json!({"gave_up_cheaply": 6})),
        features("rival-a", json!({})),
        features("rival-b", json!({"gave_up_cheaply": 1})),
    ];
    write_table(&lake, &vigie::features::account_table(), &acc);
    let pairs = vec![
        // Chip dumping: dump-a keeps giving games up to dump-b while not behind / two friends who
        // split games, one of them once giving one up.
        pair(
            "dump-a",
            "dump-b",
            json!({"games": 9, "a_gave_up": 8, "a_gave_up_cheaply": 8, "b_wins": 9, "flow_a_to_b": 450, "max_stake": 50}),
        ),
        pair(
            "fair-a",
            "fair-b",
            json!({"games": 9, "a_gave_up": 1, "a_gave_up_cheaply": 1, "a_wins": 4, "b_wins": 5, "flow_a_to_b": 10, "max_stake": 10}),
        ),
        // Win trading: rated games given up in turns while even, not alternating strictly / a plain
        // rivalry between friends.
        pair(
            "trade-a",
            "trade-b",
            json!({"games": 12, "rated_games": 12, "a_wins": 6, "b_wins": 6, "result_switches": 5,
                   "a_gave_up": 6, "b_gave_up": 6, "a_gave_up_cheaply": 6, "b_gave_up_cheaply": 6}),
        ),
        pair(
            "rival-a",
            "rival-b",
            json!({"games": 12, "rated_games": 12, "a_wins": 6, "b_wins": 6, "result_switches": 3, "a_gave_up": 0, "b_gave_up": 1, "b_gave_up_cheaply": 1}),
        ),
        // Shared device: three accounts on one device, two of them meeting / two on one device.
        pair("ring-1", "ring-2", json!({"games": 5, "shared_devices": 1})),
        pair("ring-2", "ring-3", json!({"games": 4, "shared_devices": 1})),
        pair("home-1", "home-2", json!({"games": 5, "shared_devices": 1})),
        // A third account on the device, but only before the 30-day window: a household again.
        pair("old-1", "old-2", json!({"games": 5, "shared_devices": 1})),
    ];
    write_table(&lake, &vigie::features::pair_table(), &pairs);
    let mut players = vec![
        player("g1", "ring-1", "dv-ring"),
        player("g1", "ring-2", "dv-ring"),
        player("g2", "ring-3", "dv-ring"),
        player("g3", "home-1", "dv-home"),
        player("g3", "home-2", "dv-home"),
        // The tamper evidence the replay lists per game (out of order across games).
        tampered("g9", "tamper-yes", &[7, 8], "2026-11-21T10:00:00Z"),
        tampered("g8", "tamper-yes", &[3, 5], "2026-11-20T10:00:00Z"),
        player("g4", "old-1", "dv-old"),
        player("g4", "old-2", "dv-old"),
    ];
    // Before the window (it starts 2026-10-28, 30 days before window_end): not evidence.
    let mut stale = vec![
        tampered("g0", "tamper-yes", &[1], "2026-10-01T10:00:00Z"),
        player("g00", "old-3", "dv-old"),
    ];
    for row in &mut stale {
        row["started_at"] = json!("2026-10-01T10:00:00Z");
    }
    players.extend(stale);
    // rage-yes's games: its 100 timed moves in the first (10 at each edge from -4 to -1), none in the
    // other eight it left.
    for i in 0..9 {
        let mut quitter = player(&format!("r{i}"), "rage-yes", "dv-rage");
        let first = i == 0;
        quitter["timed_moves"] = json!(if first { 100 } else { 0 });
        quitter["losing_moves"] = json!(if first { 40 } else { 0 });
        quitter["other_moves"] = json!(if first { 60 } else { 0 });
        quitter["losing_edges"] = json!(if first {
            vec![-4.0, -3.0, -2.0, -1.0]
        } else {
            vec![]
        });
        quitter["losing_edge_moves"] = json!(if first { vec![10, 10, 10, 10] } else { vec![] });
        players.push(quitter);
    }
    write_table(&lake, &vigie::replay::rows::PlayerRow::def(), &players);
    // Rage quit's evidence: rage-yes left its lost games when clearly beaten (4 men down), at a
    // balance at which it played a tenth of its moves (the replay's counts per edge of the grid).
    let deps = vigie::replay::rows::DepartureRow::def();
    let departures: Vec<Value> = (0..9)
        .map(|i| {
            full_row(
                &deps,
                "2026-11-20T10:00:00Z",
                json!({"game": format!("r{i}"), "seq": 30, "player": "rage-yes", "event": "left",
                       "reason": "page_closed", "losing": true, "balance": -4.0, "decisive": true,
                       "kind": "draughts10", "mode": "standard"}),
            )
        })
        .collect();
    write_table(&lake, &deps, &departures);
    // Integrity involvement: twice favoured by server faults / once.
    let finding = |game: &str, seq: i64, account: &str| {
        json!({"game": game, "seq": seq, "ts": "2026-11-20T10:00:00Z", "kind": "draughts10", "mode": "standard",
               "account": account, "code": "accepted_illegal", "category": "integrity", "severity": "critical",
               "message": "crafted"})
    };
    let old_finding = |game: &str, seq: i64, account: &str| {
        let mut f = finding(game, seq, account);
        f["ts"] = json!("2026-10-01T10:00:00Z");
        f
    };
    let findings = vec![
        finding("g5", 3, "lucky-yes"),
        finding("g6", 9, "lucky-yes"),
        finding("g7", 4, "lucky-no"),
        // Twice, but before the window.
        old_finding("g01", 2, "stale-no"),
        old_finding("g02", 6, "stale-no"),
    ];
    write_table(&lake, &vigie::replay::rows::FindingRow::def(), &findings);
    (dir, lake)
}

fn flags_of(lake: &Lake) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for f in evaluate(lake) {
        out.entry(f.account.clone())
            .or_default()
            .push((f.rule.clone(), f.action.clone()));
    }
    out
}

fn evaluate(lake: &Lake) -> Vec<vigie::detect::FlagRow> {
    let rules = rules_dir().load().unwrap();
    let snapshot = lake.snapshot().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(vigie::detect::evaluate(
        &snapshot,
        &rules,
        &BTreeMap::new(),
        0,
    ))
    .unwrap()
    .flags
}

/// A rule's result is reused while its SQL and the files of the tables it reads are the same,
/// and only then: on the crafted lake a second evaluation reuses every rule with the same flags;
/// after a new `findings` file, `integrity_involvement` (which reads it) runs again and sees the
/// new row, while `engine_assistance` (which reads `move_analysis` only) is still reused.
#[test]
fn a_rule_is_reused_only_while_the_files_it_reads_are_the_same() {
    let (_dir, lake) = crafted();
    let rules = rules_dir().load().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = || {
        let snapshot = lake.snapshot().unwrap();
        rt.block_on(vigie::detect::evaluate(
            &snapshot,
            &rules,
            &BTreeMap::new(),
            0,
        ))
        .unwrap()
    };
    let text = |flags: &[vigie::detect::FlagRow]| format!("{flags:?}");
    let first = run();
    assert!(first.reused.is_empty(), "{:?}", first.reused);
    let second = run();
    let ids: Vec<String> = rules.iter().map(|r| r.id.clone()).collect();
    assert_eq!(second.reused, ids);
    assert_eq!(text(&second.flags), text(&first.flags));
    let lucky = |flags: &[vigie::detect::FlagRow]| {
        flags
            .iter()
            .any(|f| f.account == "lucky-no" && f.rule == "integrity_involvement")
    };
    assert!(!lucky(&second.flags));
    // A second server fault in lucky-no's favour, in a file of its own.
    write_table(
        &lake,
        &vigie::replay::rows::FindingRow::def(),
        &[
            json!({"game": "g7b", "seq": 5, "ts": "2026-11-20T11:00:00Z", "kind": "draughts10",
                 "mode": "standard", "account": "lucky-no", "code": "accepted_illegal",
                 "category": "integrity", "severity": "critical", "message": "crafted"}),
        ],
    );
    let third = run();
    assert!(
        !third.reused.iter().any(|r| r == "integrity_involvement"),
        "{:?}",
        third.reused
    );
    assert!(
        third.reused.iter().any(|r| r == "engine_assistance"),
        "{:?}",
        third.reused
    );
    assert!(lucky(&third.flags), "{}", text(&third.flags));
}

/// The rules that read no features (`shared_device_ring`: `game_players` alone) run while the
/// features are computed, on the same files: after a replay's new `game_players` file (a device
/// of three accounts, two of which met), a pass takes the ring rule's result computed before its
/// features' commit, and its flags are those of a pass that ran every rule after them (a copy of
/// the same lake, which nothing ran before).
#[test]
fn the_rules_without_features_run_before_the_features_with_the_same_flags() {
    let dir = tempfile::tempdir().unwrap();
    let (early, fresh) = (dir.path().join("early"), dir.path().join("fresh"));
    crate::common::copy_dir(crate::common::sample_lake(), &early);
    let lake = vigie::catalog::open(&early).unwrap();
    let first =
        vigie::detect::run_scoped(&lake, &rules_dir(), &BTreeMap::new(), None, true).unwrap();
    // Nothing was known of the rules on this lake: every one ran after the features.
    assert!(first.rules_run_before_features.is_empty(), "{first:?}");
    let seat = |game: &str, account: &str, device: &str| {
        let mut r = player(game, account, device);
        r["started_at"] = json!("2026-11-20T12:00:00Z");
        r
    };
    write_table(
        &lake,
        &vigie::replay::rows::PlayerRow::def(),
        &[
            seat("early-1", "early-a", "dv-early"),
            seat("early-1", "early-b", "dv-early"),
            seat("early-2", "early-c", "dv-early"),
            seat("early-2", "early-d", "dv-other"),
        ],
    );
    crate::common::copy_dir(&early, &fresh);
    let second =
        vigie::detect::run_scoped(&lake, &rules_dir(), &BTreeMap::new(), None, true).unwrap();
    assert_eq!(second.rules_run_before_features, ["shared_device_ring"]);
    assert!(
        !second
            .rules_reused
            .iter()
            .any(|r| r == "shared_device_ring"),
        "{second:?}"
    );
    let other = vigie::catalog::open(&fresh).unwrap();
    let again =
        vigie::detect::run_scoped(&other, &rules_dir(), &BTreeMap::new(), None, true).unwrap();
    assert!(again.rules_run_before_features.is_empty(), "{again:?}");
    let flags = |lake: &Path| {
        crate::common::sql_text(
            lake,
            "SELECT account, rule, score, evidence, array_to_string(refs, ' ') FROM flags ORDER BY account, rule",
        )
    };
    let (taken, ran) = (flags(&early), flags(&fresh));
    assert_eq!(taken, ran);
    let ring: Vec<&String> = taken
        .iter()
        .filter(|r| r[1] == "shared_device_ring")
        .map(|r| &r[0])
        .collect();
    // early-a and early-b met on the device; early-c played one game from it and met nobody.
    let flagged = |a: &str| ring.iter().any(|r| *r == a);
    assert!(flagged("early-a") && flagged("early-b"), "{ring:?}");
    assert!(!flagged("early-c"), "{ring:?}");
}

#[test]
fn every_rule_flags_its_case_and_not_the_look_alike() {
    let (_dir, lake) = crafted();
    let flags = flags_of(&lake);
    let has = |acc: &str, rule: &str| {
        flags
            .get(acc)
            .is_some_and(|v| v.iter().any(|(r, _)| r == rule))
    };
    for (rule, yes, no) in [
        ("manipulation_attempts", "tamper-yes", "tamper-no"),
        ("rage_quit", "rage-yes", "rage-no"),
        ("sitting", "sit-yes", "sit-no"),
        ("stalling", "stall-yes", "stall-no"),
        ("bot_timing", "bot-yes", "bot-no"),
        ("chip_dumping", "dump-a", "fair-a"),
        ("chip_dumping", "dump-b", "fair-b"),
        ("win_trading", "trade-a", "rival-a"),
        ("win_trading", "trade-b", "rival-b"),
        ("shared_device_ring", "ring-2", "home-1"),
        ("shared_device_ring", "ring-2", "old-1"),
        ("integrity_involvement", "lucky-yes", "lucky-no"),
        ("integrity_involvement", "lucky-yes", "stale-no"),
    ] {
        assert!(has(yes, rule), "{rule} did not flag {yes}: {flags:?}");
        assert!(!has(no, rule), "{rule} flagged {no}: {flags:?}");
    }
    // rage-yes's nine abandons came 4 men down, where 10 of its 100 moves were: each at a depth of
    // 11 / 101, their chance at random moments (Fisher's) far under the bound.
    let rage = evaluate(&lake)
        .into_iter()
        .find(|f| f.account == "rage-yes" && f.rule == "rage_quit")
        .unwrap();
    let evidence: Value = serde_json::from_str(&rage.evidence).unwrap();
    assert_eq!(evidence["depth_abandons"], json!(9), "{evidence}");
    let mean = evidence["mean_depth"].as_f64().unwrap();
    assert!((mean - 11.0 / 101.0).abs() < 1e-12, "{evidence}");
    let want = vigie::lake::functions::poisson_at_most(8.0, 9.0 * (101.0f64 / 11.0).ln());
    assert!(
        (evidence["p_depth"].as_f64().unwrap() / want - 1.0).abs() < 1e-9,
        "{evidence}"
    );
    assert!(want < 0.01, "{want}");
    // Its evidence: every tamper attempt the replay listed in the window, in time order.
    let tamper = evaluate(&lake)
        .into_iter()
        .find(|f| f.account == "tamper-yes" && f.rule == "manipulation_attempts")
        .unwrap();
    assert_eq!(tamper.refs, ["g8:3", "g8:5", "g9:7", "g9:8"]);
    assert!(tamper.first_seen < tamper.last_seen, "{tamper:?}");
    // Tampering is the one rule that recommends a block.
    assert!(
        flags["tamper-yes"]
            .iter()
            .any(|(r, a)| r == "manipulation_attempts" && a == "block_recommended")
    );
    for (acc, v) in &flags {
        for (r, a) in v {
            assert!(
                a != "block_recommended" || r == "manipulation_attempts",
                "{acc} {r} {a}"
            );
        }
    }
}

/// A query's rows as sorted lines (rules do not order their rows).
async fn sorted_rows(ctx: &datafusion::prelude::SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let opts = arrow::util::display::FormatOptions::default().with_null("NULL");
    let mut rows: Vec<String> = crate::common::batch_text(&batches, &opts)
        .into_iter()
        .map(|row| row.join("|"))
        .collect();
    rows.sort();
    rows
}

/// Detection gives the rules the end of their window as a literal time, so that the planner
/// prunes what lies before it; a rule means the same as with the subquery that reads it. On the
/// crafted lake, whose tables hold rows from before the window, every rule returns the same rows
/// both ways, and no subquery is left in the literal form.
#[test]
fn rules_return_the_same_rows_with_their_window_end_as_a_literal() {
    let (_dir, lake) = crafted();
    let snapshot = lake.snapshot().unwrap();
    let rules = rules_dir().load().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = vigie::lake::sql::session(
            &snapshot,
            &vigie::detect::rule_tables(),
            vigie::lake::sql::Limits::default(),
        )
        .await
        .unwrap();
        let end = sorted_rows(
            &ctx,
            &format!(
                "SELECT CAST({} AS BIGINT)",
                vigie::detect::rules::WINDOW_END_QUERY
            ),
        )
        .await;
        let end: i64 = end[0].parse().unwrap();
        let (mut literal, mut rows) = (0, 0);
        for r in &rules {
            let subquery = r.render(&BTreeMap::new());
            let at = r.render_at(&BTreeMap::new(), Some(end));
            if at != subquery {
                literal += 1;
                assert!(
                    !at.contains(vigie::detect::rules::WINDOW_END_QUERY),
                    "{}",
                    r.id
                );
            }
            let want = sorted_rows(&ctx, &subquery).await;
            rows += want.len();
            assert_eq!(sorted_rows(&ctx, &at).await, want, "{}", r.id);
        }
        assert!(literal >= 6, "{literal} rules use the window end");
        assert!(rows >= 10, "{rows} rows: the rules flag the crafted cases");
    });
}

#[test]
fn every_rule_file_has_a_complete_header() {
    let rules = rules_dir().load().unwrap();
    assert!(rules.len() >= 9);
    for r in &rules {
        assert!(
            !r.title.is_empty() && !r.catches.is_empty() && !r.why.is_empty(),
            "{}",
            r.id
        );
        assert!(
            ["info", "low", "medium", "high", "critical"].contains(&r.severity.as_str()),
            "{}",
            r.id
        );
        assert!(
            ["review", "block_recommended"].contains(&r.action.as_str()),
            "{}",
            r.id
        );
        assert!(
            r.path.file_stem().is_some_and(|s| s == r.id.as_str()),
            "{} is not in {}.sql",
            r.id,
            r.id
        );
        for p in &r.params {
            assert!(
                r.sql.contains(&format!("${{{}}}", p.name)),
                "{}: parameter {} unused",
                r.id,
                p.name
            );
        }
        assert!(
            !r.render(&BTreeMap::new()).contains("${"),
            "{}: unresolved parameter",
            r.id
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A copy of the sample lake in `dir/lake` (replayed, with the features of a full run), its path,
/// and the rows of its two feature tables.
fn sample_lake_with_features(dir: &Path) -> (Lake, PathBuf, Vec<String>, Vec<String>) {
    let path = dir.join("lake");
    copy_dir(crate::common::sample_lake(), &path);
    let lake = Lake::open(&path).unwrap();
    let accounts = crate::common::table_rows(&path, "account_features");
    let pairs = crate::common::table_rows(&path, "pair_features");
    (lake, path, accounts, pairs)
}

/// The lake's two feature tables hold exactly these rows.
fn assert_features(path: &Path, accounts: &[String], pairs: &[String]) {
    assert_eq!(
        crate::common::table_rows(path, "account_features"),
        accounts
    );
    assert_eq!(crate::common::table_rows(path, "pair_features"), pairs);
}

/// The streaming job recomputes the features of a few accounts: their rows
/// (and their pairs') are those a full run gives, everyone else's are kept.
#[test]
fn scoped_features_equal_a_full_run_for_their_accounts() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, path, full_accounts, full_pairs) = sample_lake_with_features(dir.path());
    assert!(full_accounts.len() > 30 && full_pairs.len() > 30);
    // Accounts of pairs (so pair rows are recomputed too), and one that quit games.
    let a = crate::common::sql_text(&path, "SELECT DISTINCT a FROM pair_features ORDER BY a");
    let mut scope: std::collections::BTreeSet<String> =
        a.iter().step_by(7).take(6).map(|r| r[0].clone()).collect();
    assert!(scope.len() >= 3);
    // And one side of a pair sharing a device and an ip: the other side's hashes are read as
    // distinct (account, device, ip) rows, which must give the same counts.
    let shared = crate::common::sql_text(
        &path,
        "SELECT a FROM pair_features WHERE shared_devices > 0 AND shared_ips > 0 ORDER BY a, b LIMIT 1",
    );
    assert_eq!(
        shared.len(),
        1,
        "the sample has a pair sharing a device and an ip"
    );
    scope.insert(shared[0][0].clone());
    let r = vigie::features::run_scoped(&lake, Some(&scope)).unwrap();
    assert_eq!(r.account_rows as usize, full_accounts.len());
    assert_features(&path, &full_accounts, &full_pairs);
    // The scoped run really recomputed its accounts: empty their rows, and they come back.
    let sql = format!(
        "account IN ({})",
        scope
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let kept = crate::common::sql_first(
        &path,
        &format!("SELECT count(*) FROM account_features WHERE NOT ({sql})"),
    );
    let emptied: Vec<String> = full_accounts
        .iter()
        .filter(|r| !scope.iter().any(|s| r.starts_with(&format!("{s}|"))))
        .cloned()
        .collect();
    assert_eq!(kept.parse::<usize>().unwrap(), emptied.len());
    let none = std::collections::BTreeSet::new();
    vigie::features::run_scoped(&lake, Some(&none)).unwrap();
    assert_eq!(
        crate::common::table_rows(&path, "account_features"),
        full_accounts
    );
}

/// Counts of departures, timeouts and integrity findings are 0 for an account that has none in the
/// window, never null (an analyst's `avg(departures)` counts it), and agree with the tables they
/// count.
#[test]
fn account_features_count_zero_departures_as_zero_not_unknown() {
    let path = crate::common::sample_lake();
    let counts = vigie::features::ZERO_WHEN_NONE;
    assert!(counts.contains(&"departures") && counts.contains(&"integrity_findings"));
    let nulls = counts
        .iter()
        .map(|c| format!("count(*) FILTER (WHERE {c} IS NULL)"))
        .collect::<Vec<_>>()
        .join(", ");
    let row = crate::common::sql_text(path, &format!("SELECT {nulls} FROM account_features"));
    assert_eq!(row, vec![vec!["0".to_string(); counts.len()]]);
    // Most of the sample's accounts never left a game nor timed out: they are rows of zeros.
    let quiet = crate::common::sql_first(
        path,
        "SELECT count(*) FROM account_features WHERE \"window\" = '30d' AND departures = 0 AND timeouts = 0",
    );
    assert!(quiet.parse::<u64>().unwrap() > 0, "{quiet}");
    // And the counts are those of the departures table (the sample's games all fall in the window).
    let mismatched = crate::common::sql_first(
        path,
        "SELECT count(*) FROM account_features f LEFT JOIN (
             SELECT player, count(*) FILTER (WHERE event = 'left') AS l,
                    count(*) FILTER (WHERE event = 'timeout') AS t
             FROM departures GROUP BY player) d ON d.player = f.account
         WHERE f.\"window\" = '30d' AND (f.departures <> coalesce(d.l, 0) OR f.timeouts <> coalesce(d.t, 0))",
    );
    assert_eq!(mismatched, "0");
}

/// One line stamped in the year 9999 (a server's broken clock) moves neither the detection window
/// nor the replay's horizon: the same windows, flags and findings as without it (before, every
/// window ended in 9999, so nobody could be flagged, and every game in progress was closed as
/// `never_ended`).
#[test]
fn a_stray_line_from_the_far_future_does_not_move_the_lake_clock() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(crate::common::shared_sample()).unwrap();
    // The sample without the last game's end: a game in progress at the lake's latest event.
    let mut lines: Vec<&str> = text.lines().collect();
    let last_end = lines
        .iter()
        .rposition(|l| l.contains("\"type\":\"game_ended\""))
        .unwrap();
    let open_game: Value = serde_json::from_str(lines[last_end]).unwrap();
    let open_game = open_game["game"].as_str().unwrap().to_string();
    lines.retain(|l| {
        !(l.contains(&format!("\"game\":\"{open_game}\"")) && l.contains("\"type\":\"game_ended\""))
    });
    let base = dir.path().join("base.jsonl");
    std::fs::write(&base, lines.join("\n") + "\n").unwrap();
    let mut stray: Value = serde_json::from_str(lines[0]).unwrap();
    stray["game"] = json!("stray-clock-1");
    stray["ts"] = json!("9999-12-31T23:59:59.999Z");
    stray["commitment"] = json!("c".repeat(64));
    let stray_file = dir.path().join("stray.jsonl");
    std::fs::write(&stray_file, stray.to_string() + "\n").unwrap();
    let build = |name: &str, inputs: &[&Path]| -> PathBuf {
        let path = dir.path().join(name);
        for i in inputs {
            crate::common::quiet_ingest(&path, i);
        }
        crate::common::quiet_replay(&path);
        vigie::detect::run(
            &Lake::open(&path).unwrap(),
            &rules_dir(),
            &Default::default(),
        )
        .unwrap();
        path
    };
    let clean = build("clean", &[&base]);
    let with_stray = build("stray", &[&base, &stray_file]);
    let q = |lake: &Path, sql: &str| crate::common::sql_text(lake, sql);
    let ends = "SELECT DISTINCT CAST(window_end AS VARCHAR) FROM account_features";
    assert_eq!(q(&with_stray, ends), q(&clean, ends));
    assert!(!q(&clean, ends)[0][0].starts_with("9999"));
    let findings =
        "SELECT game, seq, code FROM findings WHERE game <> 'stray-clock-1' ORDER BY 1, 2, 3";
    assert_eq!(q(&with_stray, findings), q(&clean, findings));
    let open = format!(
        "SELECT count(*) FROM findings WHERE game = '{open_game}' AND code = 'never_ended'"
    );
    assert_eq!(q(&with_stray, &open), vec![vec!["0".to_string()]]);
    let flags = "SELECT account, rule FROM flags ORDER BY 1, 2";
    assert_eq!(q(&with_stray, flags), q(&clean, flags));
}

/// The sample logs plus copies of `game` moved to other days (`(id, date)`), ingested, replayed
/// and with their features computed, in `dir/lake`.
fn lake_with_moved_copies(dir: &Path, game: &[Value], copies: &[(&str, &str)]) -> Lake {
    use crate::replay::{moved_game, relink};
    let mut text = std::fs::read_to_string(crate::common::shared_sample()).unwrap();
    for (id, date) in copies {
        text.push_str(&relink(&moved_game(game, id, date)));
        text.push('\n');
    }
    let input = dir.join("server.jsonl");
    std::fs::write(&input, text).unwrap();
    let path = dir.join("lake");
    crate::common::quiet_ingest(&path, &input);
    crate::common::quiet_replay(&path);
    let lake = Lake::open(&path).unwrap();
    vigie::features::run(&lake).unwrap();
    lake
}

/// A scoped run opens only the `date` partitions from the window's first day: a game that
/// started on that day, after the window's start, still counts, and one from before the
/// window (in an older partition) does not change anything. Scoped rows equal a full run's.
#[test]
fn scoped_features_read_the_window_first_day_and_skip_older_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lake");
    // The sample ends 2026-11-22T19:24:50Z, so the 30-day window starts 2026-10-23T19:24:50Z.
    // This game started at 20:21 on 2026-11-20: moved to 2026-10-23 it is in the window, in
    // the partition of its first day; moved to 2026-10-01 it is before it.
    let game = crate::replay::sample_game("d8-db8f-000063", 0);
    assert!(game[0]["ts"].as_str().unwrap() >= "2026-11-20T19:25");
    let lake = lake_with_moved_copies(
        dir.path(),
        &game,
        &[
            ("d8-ffff-000001", "2026-10-23"),
            ("d8-ffff-000002", "2026-10-01"),
        ],
    );
    let full = crate::common::table_rows(&path, "account_features");
    let players = crate::common::sql_text(
        &path,
        "SELECT account FROM game_players WHERE game = 'd8-ffff-000001' ORDER BY account",
    );
    assert_eq!(players.len(), 2);
    // The moved game is in its players' 30-day window: one more game than in 7 days.
    for p in &players {
        let n = crate::common::sql_text(
            &path,
            &format!(
                "SELECT window, games FROM account_features WHERE account = '{}' ORDER BY window",
                p[0]
            ),
        );
        let games = |w: &str| n.iter().find(|r| r[0] == w).map(|r| r[1].clone());
        assert_ne!(games("30d"), games("7d"), "{n:?}");
    }
    let scope: std::collections::BTreeSet<String> = players.iter().map(|r| r[0].clone()).collect();
    vigie::features::run_scoped(&lake, Some(&scope)).unwrap();
    assert_eq!(crate::common::table_rows(&path, "account_features"), full);
}

/// A scoped run reads `departures` only from files whose latest departure is in the window (the
/// commit log records each file's latest `ts`): a departure's partition is the date its game
/// started, so that bound needs no guess at how long a game can last. Shown by breaking an old
/// file after a full run: the scoped run never opens it, and its rows equal the full run's.
#[test]
fn scoped_features_never_open_departures_files_older_than_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lake");
    // The sample ends 2026-11-22T19:24:50Z: its 30-day window starts 2026-10-23T19:24:50Z. This
    // game ends with a departure (a resignation); one copy is from before the window, one in it.
    let game = crate::replay::sample_game("d8-db8f-000117", 0);
    assert!(game.iter().any(|v| v["type"] == "left"));
    let lake = lake_with_moved_copies(
        dir.path(),
        &game,
        &[
            ("d8-ffff-000011", "2026-10-01"),
            ("d8-ffff-000012", "2026-10-24"),
        ],
    );
    let full = crate::common::table_rows(&path, "account_features");
    let players = crate::common::sql_text(
        &path,
        "SELECT DISTINCT player FROM departures WHERE game IN ('d8-ffff-000011', 'd8-ffff-000012')",
    );
    assert!(!players.is_empty());
    let old: Vec<std::path::PathBuf> = lake
        .snapshot()
        .unwrap()
        .table_files("departures")
        .into_iter()
        .filter(|(_, f)| f.partition.as_deref() == Some("date=2026-10-01"))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        old.len(),
        1,
        "the old game's departure has a file of its own"
    );
    for p in &old {
        std::fs::write(p, b"not a parquet file").unwrap();
    }
    let scope: std::collections::BTreeSet<String> = players.iter().map(|r| r[0].clone()).collect();
    vigie::features::run_scoped(&lake, Some(&scope)).unwrap();
    assert_eq!(crate::common::table_rows(&path, "account_features"), full);
    // The broken file is really read by a run that needs it (the test would show nothing otherwise).
    assert!(vigie::features::run(&lake).is_err());
}

/// The streaming job's scoped runs keep the files they decode (lake files never change): a second
/// run reads its window from memory, with the rows of a run from disk. Shown by breaking the
/// window's `game_players` files between the two: the second scoped run still gives the full
/// run's rows, and a full run (which reads from disk) fails on them.
#[test]
fn scoped_features_read_the_window_once_and_then_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, path, full_accounts, full_pairs) = sample_lake_with_features(dir.path());
    let a = crate::common::sql_text(&path, "SELECT DISTINCT a FROM pair_features ORDER BY a");
    let scope: std::collections::BTreeSet<String> =
        a.iter().step_by(5).take(8).map(|r| r[0].clone()).collect();
    assert!(scope.len() >= 3);
    vigie::features::run_scoped(&lake, Some(&scope)).unwrap();
    assert_eq!(
        crate::common::table_rows(&path, "account_features"),
        full_accounts
    );
    let players = lake.snapshot().unwrap().table_paths("game_players");
    assert!(!players.is_empty());
    for p in &players {
        std::fs::write(p, b"not a parquet file").unwrap();
    }
    vigie::features::run_scoped(&lake, Some(&scope)).unwrap();
    assert_features(&path, &full_accounts, &full_pairs);
    assert!(vigie::features::run(&lake).is_err());
}

/// Server faults that land on honest players (a simulated population without cheaters, a third of
/// its games with one server fault) flag none of them as favoured by faults, although many are
/// named in two integrity findings or more.
#[test]
fn server_faults_alone_do_not_flag_the_honest_players_they_land_on() {
    let dir = tempfile::tempdir().unwrap();
    let opts = vigie::sim::SimOptions {
        seed: 8080,
        days: 2,
        games_per_day: 800,
        accounts: 200,
        fault_rate: 0.35,
        behaviour_rate: 0.0,
        ..vigie::sim::SimOptions::default()
    };
    let lake_dir = crate::common::simulated_lake(&opts, dir.path());
    let named_twice: i64 = crate::common::sql_first(
        &lake_dir,
        "SELECT count(*) FROM (SELECT account FROM findings WHERE category = 'integrity' \
         AND account IS NOT NULL GROUP BY account HAVING count(*) >= 2)",
    )
    .parse()
    .unwrap();
    assert!(
        named_twice > 0,
        "no honest account is named twice: the test shows nothing"
    );
    let lake = Lake::open(&lake_dir).unwrap();
    vigie::detect::run(&lake, &rules_dir(), &Default::default()).unwrap();
    let flags = vigie::detect::read_flags(&lake.snapshot().unwrap()).unwrap();
    let favoured: Vec<&str> = flags
        .iter()
        .filter(|f| f.rule == "integrity_involvement")
        .map(|f| f.account.as_str())
        .collect();
    assert!(
        favoured.is_empty(),
        "{named_twice} honest accounts named twice or more; flagged: {favoured:?}"
    );
}

/// A row of `def` with every non-null column at a neutral value (0, "", false, `ts`), then `set`.
fn full_row(def: &TableDef, ts: &str, set: Value) -> Value {
    use arrow::datatypes::DataType;
    let mut row = serde_json::Map::new();
    for c in &def.columns {
        if c.nullable {
            continue;
        }
        let v = match &c.ty {
            DataType::Int64 | DataType::Int32 => json!(0),
            DataType::Float64 => json!(0.0),
            DataType::Boolean => json!(false),
            DataType::Timestamp(..) => json!(ts),
            DataType::List(_) => json!([]),
            _ => json!(""),
        };
        row.insert(c.name.to_string(), v);
    }
    if let Value::Object(m) = set {
        row.extend(m);
    }
    Value::Object(row)
}

#[test]
fn features_judge_a_run_of_timeouts_by_its_start_and_count_cheap_give_ups() {
    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::open(dir.path()).unwrap();
    let ts = "2026-11-20T10:00:00Z";
    write_window_end(&lake, "s1");
    let given_up = |game: &str, account: &str, balance: Option<f64>, plies: i64| {
        let mut row = player(game, account, "dv-1");
        row["started_at"] = json!(ts);
        row["outcome"] = json!("loss");
        row["game_moves"] = json!(plies);
        row["quit_balance"] = json!(balance);
        row
    };
    let players = vec![
        given_up("s1", "sitter", Some(1.0), 40),
        given_up("s2", "sitter", Some(0.0), 40),
        // Given up a man behind within 20 plies (cheap), two men behind after 40 (not), even
        // after 60 (cheap); played to the end in 5 plies (not given up).
        given_up("q1", "quitter", Some(-1.0), 10),
        given_up("q2", "quitter", Some(-2.0), 40),
        given_up("q3", "quitter", Some(0.0), 60),
        given_up("q4", "quitter", None, 5),
    ];
    write_table(&lake, &vigie::replay::rows::PlayerRow::def(), &players);
    let deps = vigie::replay::rows::DepartureRow::def();
    let timeout = |game: &str, seq: i64, losing: bool, consecutive: i64, decisive: bool| {
        full_row(
            &deps,
            ts,
            json!({"game": game, "seq": seq, "player": "sitter", "event": "timeout",
                   "reason": if decisive { "loss" } else { "auto" }, "losing": losing,
                   "balance": if losing { -3.0 } else { 1.0 }, "consecutive": consecutive,
                   "decisive": decisive, "kind": "draughts8", "mode": "standard"}),
        )
    };
    // s1: the sitter stops playing three men down; the server's automatic move wins a man back, and
    // the run ends the game while "not losing": a run begun while losing. s2: one timeout while even.
    let departures = vec![
        timeout("s1", 23, true, 1, false),
        timeout("s1", 26, false, 2, false),
        timeout("s1", 29, false, 3, true),
        timeout("s2", 9, false, 1, true),
    ];
    write_table(&lake, &deps, &departures);
    vigie::features::run(&lake).unwrap();
    let rows = crate::common::sql_text(
        dir.path(),
        "SELECT account, decisive_timeouts, decisive_timeouts_losing, timeouts_losing, gave_up_cheaply \
         FROM account_features WHERE \"window\" = '30d' ORDER BY account",
    );
    assert_eq!(
        rows,
        vec![
            // No timeout at all: counts of 0, not unknown.
            vec!["quitter", "0", "0", "0", "2"],
            vec!["sitter", "2", "1", "1", "2"],
        ]
    );
}

#[test]
fn a_scoped_detect_without_a_matching_last_run_recomputes_every_account() {
    // The crafted lake has feature rows but no detect checkpoint: nothing says they were computed by
    // these rules and these features' definitions, so a scoped run must not keep them.
    let (dir, lake) = crafted();
    let before = crate::common::sql_text(
        dir.path(),
        "SELECT count(*) FROM account_features WHERE account = 'crowd'",
    );
    assert_eq!(before, vec![vec!["1".to_string()]]);
    let scope: std::collections::BTreeSet<String> = ["ring-1".to_string()].into();
    vigie::detect::run_scoped(&lake, &rules_dir(), &BTreeMap::new(), Some(&scope), false).unwrap();
    let after = crate::common::sql_text(
        dir.path(),
        "SELECT count(*) FROM account_features WHERE account = 'crowd'",
    );
    assert_eq!(after, vec![vec!["0".to_string()]]);
}

/// `a_cheap_min_stake` / `b_cheap_min_stake` on the sample's pipeline agree with the same
/// definition written in SQL over `game_players`: the smallest stake of the window's two-player
/// games the account lost by leaving or timing out while not behind or within the first
/// `CHEAP_GIVE_UP_PLIES` plies; null when it gave none up cheaply.
#[test]
fn pair_features_carry_the_smallest_stake_of_cheap_give_ups() {
    let lake = crate::common::sample_lake();
    let nulls = crate::common::sql_text(
        lake,
        "SELECT count(*) FILTER (WHERE (coalesce(a_gave_up_cheaply, 0) > 0) <> (a_cheap_min_stake IS NOT NULL)),
                count(*) FILTER (WHERE (coalesce(b_gave_up_cheaply, 0) > 0) <> (b_cheap_min_stake IS NOT NULL)),
                count(*) FILTER (WHERE a_cheap_min_stake IS NOT NULL OR b_cheap_min_stake IS NOT NULL)
         FROM pair_features",
    );
    assert_eq!(
        nulls[0][..2],
        ["0", "0"],
        "a smallest stake without give-ups, or the reverse"
    );
    assert_ne!(
        nulls[0][2], "0",
        "the sample has cheap give-ups between pairs"
    );
    let plies = vigie::features::CHEAP_GIVE_UP_PLIES;
    let check = crate::common::sql_text(
        lake,
        &format!(
            "WITH w AS (SELECT max(window_end) AS e FROM pair_features WHERE \"window\" = '30d'),
             g AS (
                 SELECT least(account, opponent) AS a, greatest(account, opponent) AS b,
                        account AS quitter, stake
                 FROM game_players CROSS JOIN w
                 WHERE opponent IS NOT NULL AND outcome = 'loss' AND (\"left\" OR timeouts > 0)
                   AND quit_balance IS NOT NULL AND (quit_balance >= 0 OR game_moves < {plies})
                   AND started_at >= w.e - INTERVAL '30 days' AND started_at <= w.e
             ),
             m AS (
                 SELECT a, b, min(stake) FILTER (WHERE quitter = a) AS am,
                        min(stake) FILTER (WHERE quitter = b) AS bm
                 FROM g GROUP BY a, b
             )
             SELECT count(*),
                    count(*) FILTER (WHERE (p.a_cheap_min_stake IS NOT DISTINCT FROM m.am)
                                       AND (p.b_cheap_min_stake IS NOT DISTINCT FROM m.bm))
             FROM m JOIN pair_features p ON p.a = m.a AND p.b = m.b AND p.\"window\" = '30d'"
        ),
    );
    assert_ne!(
        check[0][0], "0",
        "no pair with a cheap give-up in the window"
    );
    assert_eq!(
        check[0][0], check[0][1],
        "pairs whose smallest stake differs from the SQL's"
    );
}

#[test]
fn features_read_game_players_files_written_before_the_prestall_counts() {
    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::open(dir.path()).unwrap();
    write_window_end(&lake, "o1");
    let def = vigie::replay::rows::PlayerRow::def();
    let row = |game: &str, account: &str, prestall: Option<(i64, i64)>| {
        let mut r = player(game, account, "dv-1");
        r["other_moves"] = json!(10);
        r["slow_other_moves"] = json!(3);
        if let Some((moves, slow)) = prestall {
            r["other_moves_prestall"] = json!(moves);
            r["slow_other_moves_prestall"] = json!(slow);
        }
        r
    };
    let prestall = ["other_moves_prestall", "slow_other_moves_prestall"];
    // Only old files first: the columns are in no file at all.
    write_table_without(&lake, &def, &[row("o1", "a", None)], &prestall);
    vigie::features::run(&lake).unwrap();
    let read = || {
        crate::common::sql_text(
            dir.path(),
            "SELECT account, moves_other_prestall, slow_moves_other_prestall FROM account_features \
             WHERE \"window\" = '30d' ORDER BY account",
        )
    };
    assert_eq!(read(), vec![vec!["a", "10", "3"]]);
    // Then a file with them: the old rows count all their moves not losing, the new ones their own.
    write_table(
        &lake,
        &def,
        &[row("n1", "a", Some((4, 1))), row("n2", "b", Some((6, 0)))],
    );
    vigie::features::run(&lake).unwrap();
    assert_eq!(read(), vec![vec!["a", "14", "4"], vec!["b", "6", "0"]]);
    // The streaming job's scoped run reads the same files from its cache.
    let scope: std::collections::BTreeSet<String> = ["a".to_owned()].into();
    vigie::features::run_scoped(&lake, Some(&scope)).unwrap();
    assert_eq!(read(), vec![vec!["a", "14", "4"], vec!["b", "6", "0"]]);
}

/// Without `--rules` the CLI runs the rules built into the binary, wherever it is started from: a
/// `queries/detect` in the working directory is not read; `--rules DIR` runs that directory's.
#[test]
fn the_cli_runs_the_built_in_rules_unless_given_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    crate::common::copy_dir(crate::common::sample_lake(), &lake);
    // A working directory with a rule of its own, which flags every account.
    let cwd = dir.path().join("elsewhere");
    let own = cwd.join("queries/detect");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("everyone.sql"),
        "-- id: everyone\n-- title: Everyone\n-- catches: every account\n-- why: a test\n-- severity: low\n-- action: review\nSELECT account, \"window\", 1.0 AS score FROM account_features\n",
    )
    .unwrap();
    // The report (whether anything ran) and the rules of the flags after it.
    let detect = |extra: &[&str]| {
        let out = std::process::Command::new(crate::common::vigie_bin())
            .current_dir(&cwd)
            .env("VIGIE_LOG", "warn")
            .args([
                "-q",
                "detect",
                "--report-json",
                "--lake",
                lake.to_str().unwrap(),
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let l = vigie::catalog::open(&lake).unwrap();
        let flags = vigie::detect::read_flags(&l.snapshot().unwrap()).unwrap();
        let rules: Vec<String> = flags
            .into_iter()
            .map(|f| f.rule)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        (report, rules)
    };
    // The sample lake was detected with the repository's rule files, which the built-in rules are:
    // the same rules, so nothing runs again.
    let (report, rules) = detect(&[]);
    assert_eq!(report["unchanged"], json!(true), "{report}");
    assert!(!rules.iter().any(|r| r == "everyone"), "{rules:?}");
    let (report, rules) = detect(&["--rules", own.to_str().unwrap()]);
    assert_eq!(report["unchanged"], json!(false), "{report}");
    assert_eq!(rules, ["everyone"]);
}
