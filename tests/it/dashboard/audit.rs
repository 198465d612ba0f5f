//! Audit chain tamper detection on the lake's `audit_log` table: an edited reason, a deleted entry (re-sealed or not) and an unreadable file are named by `verify_chain` and shown on /audit; appends are refused while the log cannot be read.

use std::path::Path;

use vigie::review::{AuditEntry, verify_chain};
use vigie::serve::users::Role;

use super::common::{TempDir, TestApp, body};

async fn three_entries(app: &TestApp) {
    let flag = app.ids.flag.clone();
    let (c, t) = app.session("rita", Role::Reviewer);
    for (action, form) in [
        ("claim", format!("csrf={t}")),
        (
            "confirm",
            format!("csrf={t}&decision=block_recommended&reason=original+reason"),
        ),
        ("reopen", format!("csrf={t}&reason=second+look")),
    ] {
        let r = app
            .post(&format!("/flag/{flag}/{action}"), Some(&c), &form)
            .await;
        assert_eq!(r.status(), axum::http::StatusCode::SEE_OTHER, "{action}");
    }
}

/// The audit log of the lake in `dir/lake`, in seq order.
fn entries(dir: &Path) -> Vec<AuditEntry> {
    let lake = vigie::lake::Lake::open(dir.join("lake")).expect("lake");
    vigie::review::lake::read_log(&lake.snapshot().expect("snapshot")).expect("audit log")
}

/// Replaces the lake's audit log with `kept`, in one commit through the lake's own writer: what
/// someone who can write the lake directory could do to rewrite history.
fn rewrite(dir: &Path, kept: &[AuditEntry]) {
    let lake = vigie::lake::Lake::open(dir.join("lake")).expect("lake");
    let snapshot = lake.snapshot().expect("snapshot");
    let old: Vec<String> = snapshot
        .state
        .table_files("audit_log")
        .map(|f| f.path.clone())
        .collect();
    let def = vigie::review::AuditRow::def();
    let batch = vigie::review::lake::audit_batch(kept).expect("batch");
    let mut w = lake.writer().expect("writer");
    let mut txn = w.begin("tamper").expect("txn");
    for p in &old {
        txn.remove_file(p);
    }
    let f = txn.new_file(def.name, None).expect("file");
    let mut meta = vigie::lake::parquet::batch_meta(&def, &batch);
    meta.bytes =
        vigie::lake::parquet::write_file(&f.pending, &def, def.schema(), &[batch]).expect("write");
    txn.add_file_meta(f, meta);
    txn.commit(serde_json::json!({})).expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_reason_is_named() {
    let dir = TempDir::new("tamper-edit");
    let app = TestApp::new(&dir.0);
    three_entries(&app).await;
    drop(app);
    let mut log = entries(&dir.0);
    assert_eq!(log.len(), 3);
    assert!(verify_chain(&log).ok());
    // The reason of entry 2 changed, its hash left as it was.
    let line = log[1]
        .to_line()
        .replace("original reason", "nothing to see");
    assert_ne!(line, log[1].to_line());
    log[1] = AuditEntry::from_line(&line).expect("still a well-formed entry");
    rewrite(&dir.0, &log);
    let report = verify_chain(&entries(&dir.0));
    let broken = report.broken.expect("tampering detected");
    assert_eq!(broken.seq, 2);
    assert!(
        broken.reason.contains("entry 2 was modified"),
        "{}",
        broken.reason
    );
    // The page shows it.
    let app = TestApp::new(&dir.0);
    let (c, _) = app.session("carl", Role::Compliance);
    let page = body(app.get("/audit", Some(&c)).await).await;
    assert!(
        page.contains("chain-broken") && page.contains("Chain broken at entry 2"),
        "audit page"
    );
    assert!(page.contains("class=\"broken\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_entry_is_detected() {
    let dir = TempDir::new("tamper-delete");
    let app = TestApp::new(&dir.0);
    three_entries(&app).await;
    let ids = app.ids.clone();
    drop(app);
    let log = entries(&dir.0);
    let kept: Vec<AuditEntry> = vec![log[0].clone(), log[2].clone()];
    rewrite(&dir.0, &kept);
    let read = entries(&dir.0);
    let broken = verify_chain(&read).broken.expect("deletion detected");
    assert_eq!((broken.index, broken.seq), (1, 3));
    // Re-sealing the remaining entry so the numbering looks right still breaks the link.
    let mut relinked = read;
    relinked[1].seq = 2;
    relinked[1].hash = relinked[1].computed_hash();
    rewrite(&dir.0, &relinked);
    let broken = verify_chain(&entries(&dir.0))
        .broken
        .expect("relink detected");
    assert_eq!(broken.seq, 2);
    assert!(broken.reason.contains("prev_hash"), "{}", broken.reason);
    // An audit file that cannot be read makes the log unreadable, on the page, and refuses appends.
    let lake = vigie::lake::Lake::open(dir.0.join("lake")).expect("lake");
    let files = lake.snapshot().expect("snapshot").table_paths("audit_log");
    std::fs::write(&files[0], b"not parquet").expect("write");
    let app = TestApp::with_ids(&dir.0, ids);
    let (c, t) = app.session("rita", Role::Reviewer);
    let page = body(app.get("/audit", Some(&c)).await).await;
    assert!(page.contains("cannot be read"), "audit page");
    let r = app
        .post(
            &format!("/flag/{}/claim", app.ids.flag),
            Some(&c),
            &format!("csrf={t}"),
        )
        .await;
    assert_eq!(r.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
}
