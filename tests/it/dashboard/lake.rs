//! The dashboard over a real lake (the simulator's sample through ingest, replay and detection): its data source, and the browser review flow on it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use vigie::ingest::{IngestOptions, ingest_paths};
use vigie::lake::Lake;
use vigie::replay::run::ReplayOptions;
use vigie::serve::data::{DataSource, QueueQuery};
use vigie::serve::lake_data::LakeData;

use super::common::{PASSWORD, users_file};

/// A lake built once from data/sample: ingested, replayed, detected.
fn sample_lake() -> &'static Path {
    static LAKE: OnceLock<PathBuf> = OnceLock::new();
    LAKE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-sample-lake");
        let _ = std::fs::remove_dir_all(&dir);
        let lake = Lake::open(&dir).unwrap();
        ingest_paths(
            &lake,
            &[root.join("data/sample")],
            &IngestOptions {
                progress: false,
                ..Default::default()
            },
        )
        .unwrap();
        vigie::replay::run::run(
            &lake,
            &ReplayOptions {
                threads: 2,
                progress: false,
            },
        )
        .unwrap();
        vigie::detect::run(&lake, &root.join("queries/detect"), &Default::default()).unwrap();
        dir
    })
}

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
    let src = sample_lake();
    for f in vigie::lake::walk_files(src).unwrap() {
        let rel = f.strip_prefix(src).unwrap();
        let to = dst.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
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
    let state = vigie::serve::AppState::new(
        vigie::serve::Config {
            users_file: users,
            ..vigie::serve::Config::default()
        },
        Arc::new(data),
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
