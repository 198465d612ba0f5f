//! Audit chain tamper detection on the persisted JSON-lines file: an edited reason or a deleted entry is named by `verify_chain` and shown on /audit.

use vigie::serve::audit::{AuditFile, verify_chain};
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

#[tokio::test]
async fn an_edited_reason_is_named() {
    let dir = TempDir::new("tamper-edit");
    let app = TestApp::new(&dir.0);
    three_entries(&app).await;
    drop(app);
    let path = dir.0.join("audit.jsonl");
    let text = std::fs::read_to_string(&path).expect("audit file");
    assert_eq!(text.lines().count(), 3);
    assert!(
        verify_chain(
            &AuditFile::open(&path)
                .expect("open")
                .entries()
                .expect("entries")
        )
        .ok()
    );
    let edited = text.replace("original reason", "nothing to see");
    assert_ne!(edited, text);
    std::fs::write(&path, edited).expect("write");
    let entries = AuditFile::open(&path)
        .expect("open")
        .entries()
        .expect("entries");
    let report = verify_chain(&entries);
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

#[tokio::test]
async fn a_deleted_entry_is_detected() {
    let dir = TempDir::new("tamper-delete");
    let app = TestApp::new(&dir.0);
    three_entries(&app).await;
    drop(app);
    let path = dir.0.join("audit.jsonl");
    let text = std::fs::read_to_string(&path).expect("audit file");
    let kept: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, l)| l)
        .collect();
    std::fs::write(&path, kept.join("\n") + "\n").expect("write");
    let entries = AuditFile::open(&path)
        .expect("open")
        .entries()
        .expect("entries");
    let broken = verify_chain(&entries).broken.expect("deletion detected");
    assert_eq!((broken.index, broken.seq), (1, 3));
    // Re-sealing the remaining entry so the numbering looks right still breaks the link.
    let mut entries = entries;
    entries[1].seq = 2;
    entries[1].hash = entries[1].computed_hash();
    let broken = verify_chain(&entries).broken.expect("relink detected");
    assert_eq!(broken.seq, 2);
    assert!(broken.reason.contains("prev_hash"), "{}", broken.reason);
    // A line that is not JSON makes the log unreadable (and refuses appends).
    std::fs::write(
        &path,
        format!("{}\nnot json\n", text.lines().next().unwrap_or("")),
    )
    .expect("write");
    let log = AuditFile::open(&path).expect("open");
    assert!(log.entries().is_err());
    let app = TestApp::new(&dir.0);
    let (c, t) = app.session("rita", Role::Reviewer);
    let page = body(app.get("/audit", Some(&c)).await).await;
    assert!(page.contains("cannot be read"));
    let r = app
        .post(
            &format!("/flag/{}/claim", app.ids.flag),
            Some(&c),
            &format!("csrf={t}"),
        )
        .await;
    assert_eq!(r.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
}
