//! The dashboard over a real lake (the simulator's sample through ingest, replay and detection): its data source, and the browser review flow on it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use vigie::lake::Lake;
use vigie::serve::data::{DataSource, QueueQuery};
use vigie::serve::lake_data::LakeData;

use super::common::{PASSWORD, users_file};

use crate::common::sample_lake;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A copy of the sample lake for a test that writes (audit entries).
fn lake_copy(tag: &str) -> PathBuf {
    let dst = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("dashboard-lake-{tag}"));
    let _ = std::fs::remove_dir_all(&dst);
    crate::common::copy_dir(sample_lake(), &dst);
    dst
}

#[test]
fn the_lake_data_source_serves_queue_account_game_and_panels() {
    let data = LakeData::new(Lake::open(sample_lake()).unwrap());
    let rt = runtime();
    let page = rt.block_on(data.queue(&QueueQuery::default())).unwrap();
    assert!(page.total > 0, "no flagged account in the sample");
    let row = &page.items[0];
    assert!(!row.flags.is_empty());
    let view = rt
        .block_on(data.account(&row.account))
        .unwrap()
        .expect("account view");
    assert_eq!(view.flags.len(), row.flags.len());
    assert!(
        view.series
            .iter()
            .any(|s| s.metric == "games" && !s.points.is_empty())
    );
    // A flag with evidence in a game: the game view holds that event.
    let (game, seq) = view
        .flags
        .iter()
        .flat_map(|f| f.evidence.refs.iter().map(|r| (r.game.clone(), r.seq)))
        .next()
        .expect("a flag with game references");
    let g = rt.block_on(data.game(&game)).unwrap().expect("game view");
    assert!(
        g.events.iter().any(|e| e.event.seq == seq),
        "{game} has no event {seq}"
    );
    assert_eq!(g.events.first().map(|e| e.event.seq), Some(0));
    for q in [
        "queries/dashboard/flags_per_day_by_rule.sql",
        "queries/dashboard/rejected_attempts_per_day_by_kind.sql",
        "queries/dashboard/departure_timeout_rates.sql",
        "queries/dashboard/flagged_pair_stake_flows.sql",
    ] {
        let t = rt.block_on(data.panel(q)).unwrap();
        assert!(!t.columns.is_empty(), "{q} has no columns");
    }
    let status = rt.block_on(data.status()).unwrap();
    assert!(status.open_flags > 0);
    assert!(rt.block_on(data.game("no-such-game")).unwrap().is_none());
}

/// The account page names each evidence event: a tamper attempt by its finding's code, a give-up
/// by its departure or timeout, a slow move by its think time; a ring's game start stays unnamed.
#[test]
fn evidence_events_are_named_by_their_findings_or_departures() {
    let data = LakeData::new(Lake::open(sample_lake()).unwrap());
    let rt = runtime();
    let page = rt
        .block_on(data.queue(&QueueQuery {
            per_page: 200,
            ..QueueQuery::default()
        }))
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for row in &page.items {
        let view = rt.block_on(data.account(&row.account)).unwrap().unwrap();
        for f in &view.flags {
            for r in &f.evidence.refs {
                let ok = match f.rule.as_str() {
                    "chip_dumping" => {
                        r.note.starts_with("left: ") || r.note.starts_with("timeout: ")
                    }
                    "manipulation_attempts" => !r.note.is_empty() && !r.note.contains(':'),
                    "shared_device_ring" => r.note.is_empty(),
                    // A slow move while behind: its think time against the clock.
                    "stalling" => r.note.contains(" s of ") && r.note.ends_with(", behind"),
                    _ => true,
                };
                assert!(ok, "{} {}:{} named {:?}", f.rule, r.game, r.seq, r.note);
            }
            if !f.evidence.refs.is_empty() {
                seen.insert(f.rule.clone());
            }
        }
    }
    for rule in [
        "chip_dumping",
        "manipulation_attempts",
        "shared_device_ring",
        "stalling",
    ] {
        assert!(
            seen.contains(rule),
            "no {rule} flag with refs in the sample: {seen:?}"
        );
    }
}

#[test]
fn review_flow_on_the_real_lake_in_headless_chromium() {
    let dir = lake_copy("browser");
    let users = users_file(&dir);
    let data = LakeData::new(Lake::open(&dir).unwrap());
    let rt = runtime();
    let page = rt.block_on(data.queue(&QueueQuery::default())).unwrap();
    // A flag with evidence in a game, to open at its seq.
    let mut target = None;
    for row in &page.items {
        let view = rt.block_on(data.account(&row.account)).unwrap().unwrap();
        if let Some(f) = view.flags.iter().find(|f| !f.evidence.refs.is_empty()) {
            target = Some((
                row.account.clone(),
                f.id.clone(),
                f.evidence.refs[0].game.clone(),
                f.evidence.refs[0].seq,
            ));
            break;
        }
    }
    let (account, flag, game, seq) = target.expect("a flag with a game reference");
    let (addr, stop_tx, server) = spawn_server(&rt, &dir, users);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target_dir =
        std::env::var("CARGO_TARGET_DIR").map_or_else(|_| root.join("target"), PathBuf::from);
    let shots = target_dir.join("screenshots/real-lake");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(&python)
        .arg(root.join("tests/browser/review_flow.py"))
        .args(["--base-url", &format!("http://{addr}")])
        .args(["--reviewer", &format!("rita:{PASSWORD}")])
        .args(["--analyst", &format!("ana:{PASSWORD}")])
        .args([
            "--account",
            &account,
            "--flag",
            &flag,
            "--game",
            &game,
            "--seq",
            &seq.to_string(),
        ])
        .arg("--screenshots")
        .arg(&shots)
        .output()
        .expect("run the browser script");
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if browser_tools_missing(&out.status) {
        eprintln!("skipped: {}", stderr.trim());
        return;
    }
    assert!(
        out.status.success(),
        "browser script failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(shots.join("05-audit.png").exists());
    // The confirmation is in the lake's audit log, and the chain holds.
    let log = vigie::review::read_log(&Lake::open(&dir).unwrap().snapshot().unwrap()).unwrap();
    assert!(
        log.iter()
            .any(|e| e.flag == flag && e.action == vigie::review::ReviewAction::Confirm)
    );
    assert!(vigie::review::verify_chain(&log).ok());
}

use crate::common::{sql_first as first, sql_text as sql_rows};

/// Serves the dashboard over a lake on a free port: (address, stop signal, server task).
fn spawn_server(
    rt: &tokio::runtime::Runtime,
    lake: &Path,
    users: PathBuf,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let state = vigie::serve::AppState::new(
        vigie::serve::Config {
            users_file: users,
            ..vigie::serve::Config::default()
        },
        Arc::new(LakeData::new(Lake::open(lake).unwrap())),
    )
    .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = rt.spawn(vigie::serve::serve_on(
        listener,
        vigie::serve::router(state),
        async {
            let _ = stop_rx.await;
        },
    ));
    (addr, stop_tx, server)
}

#[test]
fn public_verification_agrees_in_headless_chromium() {
    let lake = sample_lake();
    let pick = |kind: &str, verdict: &str| {
        first(
            lake,
            &format!(
                "SELECT game FROM games WHERE kind = '{kind}' AND fairness = '{verdict}' AND finished ORDER BY game LIMIT 1"
            ),
        )
    };
    let games = [
        format!("{}=pass", pick("ludo", "pass")),
        format!("{}=pass", pick("belote", "pass")),
        format!("{}=fail", pick("ludo", "fail")),
        format!("{}=fail", pick("belote", "fail")),
    ];
    let dir = super::common::TempDir::new("verify-browser");
    let rt = runtime();
    let (addr, stop_tx, server) = spawn_server(&rt, lake, users_file(&dir.0));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target_dir =
        std::env::var("CARGO_TARGET_DIR").map_or_else(|_| root.join("target"), PathBuf::from);
    let shots = target_dir.join("screenshots/verify");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let mut cmd = Command::new(&python);
    cmd.arg(root.join("tests/browser/verify_flow.py"))
        .args(["--base-url", &format!("http://{addr}")])
        .arg("--screenshots")
        .arg(&shots);
    for g in &games {
        cmd.args(["--game", g]);
    }
    let out = cmd.output().expect("run the browser script");
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if browser_tools_missing(&out.status) {
        eprintln!("skipped: {}", stderr.trim());
        return;
    }
    assert!(
        out.status.success(),
        "browser script failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("agrees with the server"), "{stdout}");
    assert!(
        shots
            .join("verify-02-".to_owned() + games[1].split('=').next().unwrap() + ".png")
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_verification_shows_fairness_only_and_is_rate_limited() {
    use super::common::{TestApp, body};
    let lake = tokio::task::spawn_blocking(|| sample_lake().to_path_buf())
        .await
        .unwrap();
    let (game, players) = tokio::task::spawn_blocking({
        let lake = lake.clone();
        move || {
            let g = first(
                &lake,
                "SELECT min(f.game) FROM findings f JOIN games g ON g.game = f.game WHERE f.code = 'wrong_die' AND g.finished",
            );
            let players: Vec<String> = sql_rows(
                &lake,
                &format!("SELECT account FROM game_players WHERE game = '{g}'"),
            )
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
            (g, players)
        }
    })
    .await
    .unwrap();
    assert!(!players.is_empty());
    let dir = super::common::TempDir::new("verify-http");
    let app = TestApp::over(
        &dir.0,
        Arc::new(LakeData::new(Lake::open(&lake).unwrap())),
        |c| c.verify_per_minute = 4,
    );
    let r = app.get(&format!("/verify/{game}.json"), None).await;
    assert_eq!(r.status(), axum::http::StatusCode::OK);
    let json = body(r).await;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["game"], game.as_str());
    assert_eq!(v["verdict"], "fail");
    assert!(v["dice"].as_array().is_some_and(|d| !d.is_empty()));
    assert!(
        v["failures"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x["code"] == "wrong_die"))
    );
    for p in &players {
        assert!(
            !json.contains(p.as_str()),
            "the public JSON names account {p}"
        );
    }
    for key in ["\"ip", "device", "\"account"] {
        assert!(!json.contains(key), "the public JSON holds {key}");
    }
    let html = body(app.get(&format!("/verify/{game}"), None).await).await;
    assert!(html.contains("openssl dgst -sha256 -hmac"));
    assert!(html.contains("sha256sum"));
    assert!(html.contains(&format!("/verify/{game}.json")));
    let r = app.get("/verify/not-a-game-xyz.json", None).await;
    assert_eq!(r.status(), axum::http::StatusCode::NOT_FOUND);
    // Three requests so far from this address: the fourth passes, the fifth is refused.
    let r = app.get(&format!("/verify/{game}.json"), None).await;
    assert_eq!(r.status(), axum::http::StatusCode::OK);
    let r = app.get(&format!("/verify/{game}.json"), None).await;
    assert_eq!(r.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key("retry-after"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_console_runs_saved_queries_refuses_writes_and_downloads_csv() {
    use super::common::{TestApp, body};
    use axum::http::StatusCode;
    use vigie::serve::users::Role;
    let lake = tokio::task::spawn_blocking(|| sample_lake().to_path_buf())
        .await
        .unwrap();
    let dir = super::common::TempDir::new("console");
    let app = TestApp::over(
        &dir.0,
        Arc::new(LakeData::new(Lake::open(&lake).unwrap())),
        |c| c.console_rows = 7,
    );
    let (cookie, csrf) = app.session("ana", Role::Analyst);
    let page = body(app.get("/sql", Some(&cookie)).await).await;
    let saved = vigie::sql::saved_queries();
    assert!(saved.len() >= 15, "{}", saved.len());
    // An analyst is not offered the queries over the staff audit log (an admin is).
    let (admin, _) = app.session("adam", Role::Admin);
    let admin_page = body(app.get("/sql", Some(&admin)).await).await;
    let (analyst_saved, audit_saved): (Vec<_>, Vec<_>) = saved
        .iter()
        .partition(|s| vigie::sql::TableAccess::WithoutAudit.allows(&s.sql));
    assert!(!audit_saved.is_empty());
    for s in &audit_saved {
        let link = format!("/sql?saved={}", s.name);
        assert!(!page.contains(&link), "{} offered to an analyst", s.name);
        assert!(
            admin_page.contains(&link),
            "{} not offered to an admin",
            s.name
        );
        let r = app.get(&link, Some(&cookie)).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{}", s.name);
    }
    for s in analyst_saved {
        assert!(
            page.contains(&format!("/sql?saved={}", s.name)),
            "{} not listed",
            s.name
        );
        let r = app
            .get(&format!("/sql?saved={}", s.name), Some(&cookie))
            .await;
        let status = r.status();
        let html = body(r).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "saved query {} failed: {html}",
            s.name
        );
        assert!(html.contains("id=\"sql-table\""), "{}", s.name);
    }
    // A join and an aggregate, through the form.
    let join = "SELECT g.kind, count(DISTINCT p.account) AS players FROM games g JOIN game_players p ON p.game = g.game GROUP BY g.kind ORDER BY g.kind";
    let form = |sql: &str| {
        format!(
            "csrf={csrf}&sql={}",
            url::form_urlencoded::byte_serialize(sql.as_bytes()).collect::<String>()
        )
    };
    let r = app.post("/sql", Some(&cookie), &form(join)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = body(r).await;
    let expected = tokio::task::spawn_blocking({
        let lake = lake.clone();
        move || sql_rows(&lake, join)
    })
    .await
    .unwrap();
    for row in &expected {
        assert!(
            html.contains(&format!("<td>{}</td><td>{}</td>", row[0], row[1])),
            "{row:?} missing"
        );
    }
    // The row limit of the page, and the CSV with every row.
    let r = app
        .post(
            "/sql",
            Some(&cookie),
            &form("SELECT game, seq FROM events ORDER BY game, seq"),
        )
        .await;
    let html = body(r).await;
    assert!(html.contains("id=\"sql-truncated\""));
    assert_eq!(html.matches("<tr><td>").count(), 7);
    let r = app
        .post(
            "/sql/csv",
            Some(&cookie),
            &form("SELECT game, seq FROM events ORDER BY game, seq"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()[axum::http::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let csv = body(r).await;
    let events: usize = tokio::task::spawn_blocking({
        let lake = lake.clone();
        move || first(&lake, "SELECT count(*) FROM events")
    })
    .await
    .unwrap()
    .parse()
    .unwrap();
    assert_eq!(csv.lines().count(), events + 1);
    assert!(csv.starts_with("game,seq\r\n"));
    // Wide rows: the download is cut by size too (its rows are held outside the session's pool).
    let r = app
        .post(
            "/sql/csv",
            Some(&cookie),
            &form(
                "SELECT lpad(e.game, 1000) AS a FROM events e \
                 CROSS JOIN (VALUES (1), (2), (3), (4), (5), (6), (7), (8)) AS v(k)",
            ),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-vigie-truncated"], "true");
    let wide = axum::body::to_bytes(r.into_body(), 1 << 30).await.unwrap();
    let wide = String::from_utf8_lossy(&wide);
    let kept = wide.lines().count() - 1;
    assert!(
        kept > 0 && kept < 8 * events,
        "{kept} of {} rows",
        8 * events
    );
    assert!(
        wide.len() < 3 * vigie::serve::lake_data::RESULT_BYTES,
        "{} bytes",
        wide.len()
    );
    // One row wider than the cap by itself (40 values of 1 MB): not one row of it is kept, the
    // download says so (the whole row was answered before: 640 MB for 40 values of 16 MB).
    let columns: Vec<String> = (0..40)
        .map(|k| format!("lpad(game, 1000000) AS c{k}"))
        .collect();
    let r = app
        .post(
            "/sql/csv",
            Some(&cookie),
            &form(&format!(
                "SELECT {} FROM (SELECT game FROM events LIMIT 1)",
                columns.join(", ")
            )),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-vigie-truncated"], "true");
    let one = body(r).await;
    assert_eq!(one.lines().count(), 1, "{} bytes", one.len());
    // Writes and escapes are refused with a reason, and the console keeps working.
    for bad in crate::common::REFUSED_SQL {
        let r = app.post("/sql", Some(&cookie), &form(bad)).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        let html = body(r).await;
        assert!(html.contains("id=\"sql-error\""), "{bad}: {html}");
    }
    assert!(!Path::new("/tmp/vigie-sql-escape.csv").exists());
    let r = app
        .post("/sql", Some(&cookie), &form("SELECT 1 AS one"))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    // A reviewer has no console; a POST without the CSRF token is refused.
    let (rc, _) = app.session("rita", Role::Reviewer);
    assert_eq!(
        app.get("/sql", Some(&rc)).await.status(),
        StatusCode::FORBIDDEN
    );
    let r = app.post("/sql", Some(&cookie), "sql=SELECT+1").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compliance_download_is_the_cli_bundle_and_verifies() {
    use super::common::{TestApp, body};
    use axum::http::StatusCode;
    use vigie::serve::users::Role;
    let lake = tokio::task::spawn_blocking(|| sample_lake().to_path_buf())
        .await
        .unwrap();
    let dir = super::common::TempDir::new("compliance");
    let app = TestApp::over(
        &dir.0,
        Arc::new(LakeData::new(Lake::open(&lake).unwrap())),
        |_| {},
    );
    let (cookie, csrf) = app.session("carl", Role::Compliance);
    let page = body(app.get("/compliance", Some(&cookie)).await).await;
    let value = |name: &str| {
        let key = format!("name=\"{name}\" value=\"");
        let at = page.find(&key).expect(name) + key.len();
        page[at..].split('"').next().unwrap().to_owned()
    };
    let (from, to) = (value("from"), value("to"));
    assert_eq!(from.len(), 10);
    let form = format!("csrf={csrf}&from={from}&to={to}&alpha=0.01");
    let r = app.post("/compliance/report", Some(&cookie), &form).await;
    if r.status() != StatusCode::OK {
        panic!("{}: {}", r.status(), body(r).await);
    }
    let digest = r.headers()["x-vigie-bundle-digest"]
        .to_str()
        .unwrap()
        .to_owned();
    let tar1 = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    let r = app.post("/compliance/report", Some(&cookie), &form).await;
    let tar2 = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(tar1, tar2, "two downloads differ");
    // Unpacked, it verifies, and it is the CLI's bundle for the same period.
    let unpacked = dir.0.join("unpacked");
    tar::Archive::new(tar1.as_ref()).unpack(&unpacked).unwrap();
    let bundle = unpacked.join(format!("vigie-report-{from}-{to}"));
    let check = vigie::report::verify(&bundle).unwrap();
    assert!(check.ok(), "{check:?}");
    assert_eq!(check.digest, digest);
    let cli = dir.0.join("cli");
    let opts = vigie::report::ReportOptions {
        from: from.clone(),
        to: to.clone(),
        generated_at: format!("{to}T23:59:59.999Z"),
        alpha: 0.01,
        out: cli.clone(),
        as_of: None,
    };
    let (_, cli_digest) = tokio::task::spawn_blocking({
        let lake = lake.clone();
        move || vigie::report::generate(&Lake::open(&lake).unwrap(), &opts).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(cli_digest, digest);
    // A bad period is refused with a reason; an analyst cannot generate reports.
    let r = app
        .post(
            "/compliance/report",
            Some(&cookie),
            &format!("csrf={csrf}&from={from}&to=not-a-date"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let (ac, acsrf) = app.session("ana", Role::Analyst);
    let r = app
        .post(
            "/compliance/report",
            Some(&ac),
            &format!("csrf={acsrf}&from={from}&to={to}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}

/// Rewrites `column` of every row of `table` in the lake at `dir` with `value`, through the lake's
/// own writer (what a buggy writer or a hand edit could leave behind).
fn overwrite_column(dir: &Path, table: &str, column: &str, value: &str) {
    use arrow::array::{ArrayRef, StringArray};
    use arrow::record_batch::RecordBatch;
    let lake = Lake::open(dir).unwrap();
    let snapshot = lake.snapshot().unwrap();
    let def = vigie::sql::all_tables()
        .into_iter()
        .find(|d| d.name == table)
        .expect("a lake table");
    let files: Vec<_> = snapshot.state.table_files(table).cloned().collect();
    assert!(!files.is_empty(), "{table} has no file");
    let mut w = lake.writer().unwrap();
    let mut txn = w.begin("tamper").unwrap();
    for f in &files {
        let batches = vigie::lake::parquet::read_file(&dir.join(&f.path), None).unwrap();
        let batches: Vec<RecordBatch> = batches
            .into_iter()
            .map(|b| {
                let i = b.schema().index_of(column).unwrap();
                let mut cols = b.columns().to_vec();
                cols[i] =
                    std::sync::Arc::new(StringArray::from(vec![value; b.num_rows()])) as ArrayRef;
                RecordBatch::try_new(b.schema(), cols).unwrap()
            })
            .collect();
        txn.remove_file(&f.path);
        let nf = txn.new_file(def.name, f.partition.as_deref()).unwrap();
        let meta = vigie::lake::FileMeta {
            rows: f.rows,
            bytes: vigie::lake::parquet::write_file(&nf.pending, &def, def.schema(), &batches)
                .unwrap(),
            min_key: f.min_key.clone(),
            max_key: f.max_key.clone(),
            max_ts: f.max_ts,
            ts_nulls: f.ts_nulls,
            open: f.open,
            data_added: f.data_added,
        };
        txn.add_file_meta(nf, meta);
    }
    txn.commit(serde_json::json!({})).unwrap();
}

#[test]
fn an_unknown_value_read_from_the_lake_is_an_error_naming_table_column_and_value() {
    let rt = runtime();
    // A game kind the code does not know is not drawn as a 10x10 board.
    let dir = lake_copy("unknown-kind");
    let game = {
        let data = LakeData::new(Lake::open(&dir).unwrap());
        let page = rt.block_on(data.queue(&QueueQuery::default())).unwrap();
        let view = rt
            .block_on(data.account(&page.items[0].account))
            .unwrap()
            .unwrap();
        view.flags
            .iter()
            .flat_map(|f| f.evidence.refs.iter().map(|r| r.game.clone()))
            .next()
            .expect("a flag with a game")
    };
    overwrite_column(&dir, "games", "kind", "draughts12");
    let data = LakeData::new(Lake::open(&dir).unwrap());
    let Err(err) = rt.block_on(data.game(&game)) else {
        panic!("an unknown game kind was read without error");
    };
    let msg = err.to_string();
    assert!(
        msg.contains("games.kind") && msg.contains("draughts12"),
        "{msg}"
    );
    // An unknown recommended action is not shown as a plain review.
    let dir = lake_copy("unknown-action");
    overwrite_column(&dir, "flags", "action", "nuke_from_orbit");
    let data = LakeData::new(Lake::open(&dir).unwrap());
    let Err(err) = rt.block_on(data.queue(&QueueQuery::default())) else {
        panic!("an unknown action was read without error");
    };
    let msg = err.to_string();
    assert!(
        msg.contains("flags.action") && msg.contains("nuke_from_orbit"),
        "{msg}"
    );
}

/// The browser scripts exit with 3 when selenium, Chromium or ChromeDriver is missing (`.ci/run`
/// installs them): the test is then skipped with the script's reason, never passed silently.
fn browser_tools_missing(status: &std::process::ExitStatus) -> bool {
    status.code() == Some(3)
}

#[test]
fn the_game_and_account_pages_show_the_engine_analysis() {
    use super::common::{TempDir, TestApp, body};
    use vigie::serve::users::Role;
    let dir = TempDir::new("analysis-pages");
    let path = dir.0.join("lake");
    crate::common::copy_dir(sample_lake(), &path);
    let lake = vigie::catalog::open_existing(&path).unwrap();
    let options = vigie::analysis::AnalyseOptions {
        nodes: 2_000,
        shallow_depth: 2,
        sample: 1.0,
        threads: 2,
        max_games: Some(2),
        ..Default::default()
    };
    vigie::analysis::run(&lake, &options, &Default::default(), &|_, _| {}).unwrap();
    // A move the engine would have played differently, and its game's judged moves.
    let rows = crate::common::sql_text(
        &path,
        "SELECT game, CAST(seq AS VARCHAR) AS s, player, best \
         FROM move_analysis WHERE NOT matched ORDER BY game, seq LIMIT 1",
    );
    let [game, seq, player, best] = &rows[0][..] else {
        panic!("no move_analysis row: {rows:?}")
    };
    let judged = crate::common::sql_first(
        &path,
        &format!("SELECT count(*) FROM move_analysis WHERE game = '{game}'"),
    );
    let app = TestApp::new(&dir.0);
    let (cookie, _) = app.session("rita", Role::Reviewer);
    let rt = runtime();
    let page = rt.block_on(async {
        body(
            app.get(&format!("/game/{game}?seq={seq}"), Some(&cookie))
                .await,
        )
        .await
    });
    assert!(page.contains("class=\"eval-graph\""), "no graph on {game}");
    assert_eq!(
        page.matches("class=\"ev-dot").count().to_string(),
        judged,
        "one dot per judged move"
    );
    assert!(page.contains("ev-current"));
    assert!(page.contains("id=\"engine-move\""));
    assert!(page.contains(&format!("engine's best {best}")), "{best}");
    assert!(page.contains("class=\"best-line\"") && page.contains("class=\"played-line\""));
    // A game nobody analysed says so.
    let other = crate::common::sql_first(
        &path,
        "SELECT game FROM games WHERE kind = 'draughts10' AND game NOT IN (SELECT game FROM move_analysis) ORDER BY game LIMIT 1",
    );
    let page =
        rt.block_on(async { body(app.get(&format!("/game/{other}"), Some(&cookie)).await).await });
    assert!(!page.contains("class=\"eval-graph\""));
    assert!(
        page.contains("id=\"analysis\""),
        "{other} gives no analysis note"
    );
    // The mover's account page: its numbers against the analysed accounts'.
    let page = rt.block_on(async {
        body(app.get(&format!("/account/{player}"), Some(&cookie)).await).await
    });
    assert!(
        page.contains("Engine analysis of its draughts moves"),
        "{player}"
    );
    assert_eq!(page.matches("class=\"dist\"").count(), 2);
    assert!(page.contains("this account:"));
}

/// A draughts game's lines with `n` rejected attempts of an impossible move (`1-2`) by the player
/// of its fourth event inserted after its third, the later events' seq moved on to make room.
fn with_impossible_moves(game: &[serde_json::Value], n: usize) -> Vec<serde_json::Value> {
    let mover = game[3]["player"].clone();
    let mut lines: Vec<serde_json::Value> = game[..3].to_vec();
    for _ in 0..n {
        let mut v = game[2].clone();
        v["player"] = mover.clone();
        v["move"] = "1-2".into();
        v["status"] = "rejected".into();
        v["reason"] = "illegal".into();
        lines.push(v);
    }
    lines.extend(game[3..].iter().cloned());
    for (seq, v) in lines.iter_mut().enumerate() {
        v["seq"] = seq.into();
    }
    lines
}

/// A client that sends a thousand rejected moves makes a game of over a thousand events: its page
/// lists a window of the timeline around the current event with links over the rest, and its
/// findings grouped by code and account, instead of every event and finding (50,000 such events
/// made a page of 26 MB).
#[test]
fn a_game_of_many_rejected_attempts_gets_a_page_of_bounded_size() {
    use super::common::{SampleIds, TempDir, TestApp, body};
    use vigie::serve::users::Role;
    const SPAM: usize = 1_200;
    let dir = TempDir::new("long-game-page");
    // A draughts game of the sample with SPAM rejected attempts after its third event.
    let game = crate::replay::sample_game("d10-", 0);
    let id = game[0]["game"].as_str().unwrap().to_owned();
    let lines = with_impossible_moves(&game, SPAM);
    let input = dir.0.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("spam.jsonl"),
        crate::replay::relink(&lines) + "\n",
    )
    .unwrap();
    let lake = dir.0.join("lake");
    crate::common::quiet_ingest(&lake, &input);
    crate::common::quiet_replay(&lake);
    let findings: usize = crate::common::sql_first(
        &lake,
        &format!("SELECT count(*) FROM findings WHERE game = '{id}'"),
    )
    .parse()
    .unwrap();
    assert!(findings >= SPAM, "{findings} findings");
    let app = TestApp::with_ids(&dir.0, SampleIds::default());
    let (cookie, _) = app.session("rita", Role::Reviewer);
    let rt = runtime();
    let get = |path: String| rt.block_on(async { body(app.get(&path, Some(&cookie)).await).await });
    let items = |page: &str| page.matches("<li id=\"ev-").count();
    let total = lines.len();

    // The first event: the first 500 events, and a link over the rest.
    let page = get(format!("/game/{id}"));
    assert_eq!(items(&page), 500);
    assert!(page.contains("id=\"ev-0\""));
    assert!(!page.contains("id=\"tl-before\""));
    assert!(
        page.contains(&format!("▼ {} later events", total - 500)),
        "no link over the later events"
    );
    // The findings grouped: one row for the spam, with its count and first and last seq.
    assert!(page.contains("id=\"finding-groups\""));
    assert!(page.contains(&format!("{findings} findings, grouped")));
    assert!(page.contains(&format!("<td class=\"num\">{SPAM}</td>")));
    let groups = page
        .split("id=\"finding-groups\"")
        .nth(1)
        .unwrap_or_default();
    assert!(
        groups.contains("?seq=3\">3</a>")
            && groups.contains(&format!("?seq={0}\">{0}</a>", SPAM + 2)),
        "{}",
        &groups[..groups.len().min(3000)]
    );
    assert!(page.len() < 300_000, "a page of {} bytes", page.len());

    // The link over the later events shows the next 500, just after.
    let after = page
        .split("id=\"tl-after\"><a href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .replace("&#x3f;", "?")
        .replace("&#x3d;", "=");
    let next = get(after);
    assert_eq!(items(&next), 500);
    assert!(next.contains("id=\"ev-500\"") && next.contains("id=\"ev-999\""));
    assert!(!next.contains("id=\"ev-499\"") && !next.contains("id=\"ev-1000\""));
    assert!(next.contains("▲ 500 earlier events"));

    // An event in the middle is in its own window, marked current; the last event ends one.
    let mid = get(format!("/game/{id}?seq=700"));
    assert_eq!(items(&mid), 500);
    assert!(mid.contains("<li id=\"ev-700\" class=\"tl tone-") && mid.contains("aria-current"));
    let last = get(format!("/game/{id}?seq={}", total - 1));
    assert_eq!(items(&last), 500);
    assert!(last.contains(&format!("id=\"ev-{}\"", total - 1)));
    assert!(!last.contains("id=\"tl-after\""));
}

/// Game ids may end in `.json`: the form leads to that game's page, `/verify/X.json` is the JSON
/// of the game X when there is one and else the page of the game `X.json`, and `?format=` chooses.
#[test]
fn a_game_whose_id_ends_in_json_can_be_verified() {
    use super::common::{SampleIds, TempDir, TestApp, body, location};
    let dir = TempDir::new("verify-dot-json");
    let first = crate::replay::sample_game("lu-", 0);
    let second = crate::replay::sample_game("lu-", 1);
    let id = first[0]["game"].as_str().unwrap().to_owned();
    let lone = second[0]["game"].as_str().unwrap().to_owned();
    let day = |g: &[serde_json::Value]| g[0]["ts"].as_str().unwrap()[..10].to_owned();
    let twin = crate::replay::moved_game(&first, &format!("{id}.json"), &day(&first));
    // The second game only as `LONE.json`: no game is LONE.
    let lone_twin = crate::replay::moved_game(&second, &format!("{lone}.json"), &day(&second));
    let input = dir.0.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let text: String = [&first, &twin, &lone_twin]
        .iter()
        .map(|g| crate::replay::relink(g) + "\n")
        .collect();
    std::fs::write(input.join("games.jsonl"), text).unwrap();
    let lake = dir.0.join("lake");
    crate::common::quiet_ingest(&lake, &input);
    crate::common::quiet_replay(&lake);
    let app = TestApp::with_ids(&dir.0, SampleIds::default());
    let rt = runtime();
    let get = |path: String| rt.block_on(app.get(&path, None));
    let r = get(format!("/verify?id={id}.json"));
    assert_eq!(location(&r), format!("/verify/{id}.json?format=html"));
    let page = rt.block_on(body(get(location(&r))));
    assert!(
        page.contains(&format!("Verify {id}.json")),
        "the page of {id}.json"
    );
    let json = |path: String| -> serde_json::Value {
        serde_json::from_str(&rt.block_on(body(get(path)))).unwrap()
    };
    assert_eq!(json(format!("/verify/{id}.json"))["game"], id.as_str());
    assert_eq!(
        json(format!("/verify/{id}.json?format=json"))["game"],
        format!("{id}.json")
    );
    let page = rt.block_on(body(get(format!("/verify/{lone}.json"))));
    assert!(
        page.contains(&format!("Verify {lone}.json")),
        "the page of {lone}.json"
    );
}

/// Renames accounts everywhere in a game's lines: values (`player`, `players[].account`,
/// `dealer`, `taker`, `result`) and keys (`hands`, `points`, `totals`, `payouts`).
fn rename_accounts(v: &serde_json::Value, names: &[(&str, &str)]) -> serde_json::Value {
    use serde_json::Value;
    let renamed = |s: &str| {
        names
            .iter()
            .find(|(old, _)| *old == s)
            .map_or_else(|| s.to_owned(), |(_, new)| (*new).to_owned())
    };
    match v {
        Value::String(s) => Value::String(renamed(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| rename_accounts(x, names)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (renamed(k), rename_accounts(x, names)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The contract says accounts are "strings such as `acc-10482`": one with a slash, a quote, a space,
/// `#`, `?`, `%`, `+` or markup is ingested and replayed like any other (none of its lines
/// quarantined, no finding in a clean game), flagged by the real rules when it cheats, and its
/// pages are reached through links that encode it: the queue, the account page, a review action's
/// redirect back, the game page, the decisions.
#[test]
fn accounts_of_any_text_are_ingested_flagged_and_linked() {
    use super::common::{SampleIds, TempDir, TestApp, body, hidden, location};
    use axum::http::StatusCode;
    use vigie::serve::users::Role;
    let dir = TempDir::new("odd-accounts");
    let cheat = "o'brien/ac c#1?x=%2F+";
    let other = "用户:7";
    // (a backslash before a quote: SQL that took backslash escapes would read past the literal)
    let (bel1, bel2) = ("<b>&amp;", "a+b c\\' OR '1'='1");
    // A draughts game of the sample whose white player tries three moves no client offers.
    let game = crate::replay::sample_game("d10-", 0);
    let id = game[0]["game"].as_str().unwrap().to_owned();
    let seat =
        |v: &serde_json::Value, i: usize| v["players"][i]["account"].as_str().unwrap().to_owned();
    let (white, black) = (seat(&game[0], 0), seat(&game[0], 1));
    let mover = game[3]["player"].as_str().unwrap().to_owned();
    let names = [(white.as_str(), cheat), (black.as_str(), other)];
    let lines: Vec<serde_json::Value> = with_impossible_moves(&game, 3)
        .iter()
        .map(|v| rename_accounts(v, &names))
        .collect();
    let cheater = if mover == white { cheat } else { other };
    // A Belote match of the sample: accounts are also keys there (hands, points, payouts).
    let belote = crate::replay::sample_game("be-", 0);
    let belote_id = belote[0]["game"].as_str().unwrap().to_owned();
    let belote_names = [(seat(&belote[0], 0), bel1), (seat(&belote[0], 1), bel2)];
    let belote_names: Vec<(&str, &str)> =
        belote_names.iter().map(|(o, n)| (o.as_str(), *n)).collect();
    let belote: Vec<serde_json::Value> = belote
        .iter()
        .map(|v| rename_accounts(v, &belote_names))
        .collect();
    let input = dir.0.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("odd.jsonl"),
        crate::replay::relink(&lines) + "\n" + &crate::replay::relink(&belote) + "\n",
    )
    .unwrap();
    let lake = dir.0.join("lake");
    crate::common::quiet_ingest(&lake, &input);
    assert_eq!(crate::common::quarantine_rows(&lake), vec![]);
    crate::common::quiet_replay(&lake);
    let q = vigie::lake::sql::literal;
    let count = |sql: String| -> usize { crate::common::sql_first(&lake, &sql).parse().unwrap() };
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM game_players WHERE account IN ({}, {}, {}, {})",
            q(cheat),
            q(other),
            q(bel1),
            q(bel2)
        )),
        4
    );
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM findings WHERE game = {}",
            q(&belote_id)
        )),
        0,
        "the renamed Belote match replays clean"
    );
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM findings WHERE game = {} AND (account IS NULL OR account <> {})",
            q(&id),
            q(cheater)
        )),
        0,
        "only the cheater's attempts are findings"
    );
    let l = vigie::catalog::open(&lake).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    vigie::detect::run(&l, &root.join("queries/detect").into(), &Default::default()).unwrap();
    let flag = crate::common::sql_first(
        &lake,
        &format!(
            "SELECT flag_id FROM flags WHERE account = {} AND rule = 'manipulation_attempts'",
            q(cheater)
        ),
    );
    assert!(!flag.is_empty(), "the cheater is flagged");

    let app = TestApp::with_ids(&dir.0, SampleIds::default());
    let (cookie, csrf) = app.session("rita", Role::Reviewer);
    let rt = runtime();
    let get = |path: &str| {
        rt.block_on(async {
            let r = app.get(path, Some(&cookie)).await;
            (r.status(), body(r).await)
        })
    };
    let href = vigie::serve::context::account_href(cheater);
    assert!(
        href.starts_with("/account/") && !href[9..].contains(['/', '#', '?', ' ', '\'', '+']),
        "{href}"
    );
    let (status, queue) = get("/queue");
    assert_eq!(status, StatusCode::OK);
    assert!(
        queue.contains(&format!("href=\"{href}\"")),
        "the queue links {href}"
    );
    let (status, page) = get(&href);
    assert_eq!(status, StatusCode::OK, "{href}");
    assert!(page.contains("Claim this flag"));
    let back = format!("{href}#flag-{flag}");
    assert_eq!(hidden(&page, "return_to").as_deref(), Some(back.as_str()));
    // Its evidence says what the events are: the three attempts' finding code.
    let code = crate::common::sql_first(
        &lake,
        &format!(
            "SELECT min(code) FROM findings WHERE account = {} AND game = {}",
            q(cheater),
            q(&id)
        ),
    );
    assert!(
        page.contains(&format!("<span class=\"ref-kinds\">{code} ×3</span>")),
        "the evidence names its events ({code})"
    );
    // Its evidence opens the game with its seat marked, the name encoded in the link.
    // (askama writes `&` in an attribute as `&#38;`)
    let for_q = format!("&#38;for={}", &href["/account/".len()..]);
    let evidence = page
        .split("href=\"")
        .filter_map(|h| h.split('"').next())
        .find(|h| h.starts_with(&format!("/game/{id}?seq=")) && h.ends_with(&for_q))
        .unwrap_or_else(|| {
            let at = page.find("class=\"ref\"").unwrap_or(0);
            panic!(
                "no evidence link to {id} with {for_q}: {}",
                &page[at..(at + 400).min(page.len())]
            )
        })
        .replace("&#38;", "&");
    let (status, marked) = get(&evidence);
    assert_eq!(status, StatusCode::OK, "{evidence}");
    assert_eq!(marked.matches("class=\"focus\"").count(), 1);
    assert!(marked.contains("id=\"focus-note\""));
    assert!(
        marked.matches(&for_q).count() > 3,
        "the game page's own links keep the mark"
    );

    // Claiming sends the reviewer back to the flag on that page, which shows the claim.
    let form = format!(
        "csrf={csrf}&return_to={}",
        vigie::serve::context::percent_encode(&back, false)
    );
    let r = rt.block_on(app.post(&format!("/flag/{flag}/claim"), Some(&cookie), &form));
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), back);
    let (status, page) = get(&href);
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains(&format!("id=\"status-{flag}\">claimed · rita")));
    let (_, audit) = get("/audit");
    assert!(
        audit.contains(&format!("href=\"{href}\"")),
        "the audit log links {href}"
    );
    let form = format!("csrf={csrf}&reason=three+impossible+moves&decision=block_recommended");
    let r = rt.block_on(app.post(&format!("/flag/{flag}/confirm"), Some(&cookie), &form));
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        location(&r),
        back,
        "without return_to, back to the flag all the same"
    );
    let (_, decisions) = get("/decisions");
    assert!(
        decisions.contains(&format!("href=\"{href}\"")),
        "decisions link {href}"
    );

    // The game pages link both players, and markup in a name stays text.
    let (status, page) = get(&format!("/game/{id}"));
    assert_eq!(status, StatusCode::OK);
    for name in [cheat, other] {
        let h = vigie::serve::context::account_href(name);
        assert!(
            page.contains(&format!("href=\"{h}\"")),
            "the game page links {h}"
        );
        assert_eq!(get(&h).0, StatusCode::OK, "{h}");
    }
    let (status, page) = get(&format!("/game/{belote_id}"));
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("<b>&amp;") && page.contains("&lt;b&gt;"));
    for name in [bel1, bel2] {
        let h = vigie::serve::context::account_href(name);
        assert!(
            page.contains(&format!("href=\"{h}\"")),
            "the game page links {h}"
        );
        let (status, account) = get(&h);
        assert_eq!(status, StatusCode::OK, "{h}");
        assert!(!account.contains("<b>&amp;"), "markup in a name stays text");
    }
}
