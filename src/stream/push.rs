//! `POST /ingest`: servers that push NDJSON instead of writing files, through the same validation, quarantine, commit and incremental path.
//!
//! The body is spooled to `LAKE/_vigie/inbox/` and fsynced, then ingested as
//! a source file like any other (one commit); the answer comes only after the
//! commit is durable, with the lake version and the counts. A retried body
//! (same bytes) is recognised by its fingerprint and adds nothing. Requests
//! carry `Authorization: Bearer TOKEN`; the token is compared by its SHA-256
//! in constant time. Replay and detection follow in the background, coalesced.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use sha2::{Digest, Sha256};

use super::Derive;
use crate::lake::Lake;

/// Largest body accepted (bytes).
pub const MAX_BODY: usize = 64 << 20;

/// Configuration of the push endpoint.
#[derive(Debug, Clone)]
pub struct PushConfig {
    pub lake: PathBuf,
    /// SHA-256 of the bearer token.
    pub token_sha256: [u8; 32],
    pub rules_dir: PathBuf,
    pub detect_interval: Duration,
}

impl PushConfig {
    pub fn new(lake: PathBuf, token: &str, rules_dir: PathBuf) -> PushConfig {
        PushConfig {
            lake,
            token_sha256: Sha256::digest(token.trim().as_bytes()).into(),
            rules_dir,
            detect_interval: Duration::from_secs(2),
        }
    }
}

#[derive(Clone)]
struct PushState {
    cfg: Arc<PushConfig>,
    /// One commit at a time.
    commit: Arc<tokio::sync::Mutex<()>>,
    /// New data since the last replay; the derive worker runs while set.
    dirty: Arc<AtomicBool>,
    derive: Arc<std::sync::Mutex<Derive>>,
}

/// The router of `POST /ingest`.
pub fn router(cfg: PushConfig) -> Router {
    let derive = Derive::new(cfg.rules_dir.clone(), cfg.detect_interval, 2);
    let state = PushState {
        cfg: Arc::new(cfg),
        commit: Arc::new(tokio::sync::Mutex::new(())),
        dirty: Arc::new(AtomicBool::new(false)),
        derive: Arc::new(std::sync::Mutex::new(derive)),
    };
    Router::new()
        .route("/ingest", post(ingest))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

fn authorized(cfg: &PushConfig, headers: &HeaderMap) -> bool {
    let Some(token) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let got: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
    got.iter()
        .zip(cfg.token_sha256.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

fn json(status: StatusCode, v: serde_json::Value) -> Response {
    (status, axum::Json(v)).into_response()
}

async fn ingest(State(st): State<PushState>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&st.cfg, &headers) {
        return json(
            StatusCode::UNAUTHORIZED,
            serde_json::json!({ "error": "a valid bearer token is required" }),
        );
    }
    if body.is_empty() {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({ "error": "empty body: send NDJSON, one event per line" }),
        );
    }
    let guard = st.commit.lock().await;
    let cfg = Arc::clone(&st.cfg);
    let result = tokio::task::spawn_blocking(move || commit_body(&cfg, &body)).await;
    drop(guard);
    match result {
        Ok(Ok(r)) => {
            if r.version.is_some() {
                st.dirty.store(true, Ordering::SeqCst);
                spawn_derive(&st);
            }
            json(
                StatusCode::OK,
                serde_json::json!({
                    "version": r.version,
                    "lines": r.lines_read,
                    "valid": r.lines_valid,
                    "quarantined": r.lines_quarantined,
                }),
            )
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "push ingest failed");
            json(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "error": format!("not committed, send again: {e}") }),
            )
        }
        Err(_) => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            serde_json::json!({ "error": "not committed, send again" }),
        ),
    }
}

/// Spools the body (durably), ingests it in one commit, removes the spool file.
fn commit_body(cfg: &PushConfig, body: &[u8]) -> Result<crate::ingest::IngestReport, String> {
    use std::io::Write;
    let lake = Lake::open(&cfg.lake).map_err(|e| e.to_string())?;
    let inbox = lake.root().join("_vigie/inbox");
    std::fs::create_dir_all(&inbox).map_err(|e| e.to_string())?;
    let name = format!(
        "push-{}-{}.jsonl",
        crate::lake::now_ms(),
        crate::lake::hex(&Sha256::digest(body)[..8])
    );
    let path = inbox.join(name);
    {
        let mut f = std::fs::File::create(&path).map_err(|e| e.to_string())?;
        f.write_all(body).map_err(|e| e.to_string())?;
        // The body is complete: a last line without newline is a whole line.
        if !body.ends_with(b"\n") {
            f.write_all(b"\n").map_err(|e| e.to_string())?;
        }
        f.sync_all().map_err(|e| e.to_string())?;
    }
    let result = super::commit_batch(&lake, std::slice::from_ref(&path)).map_err(|e| e.to_string());
    // Committed or not, the spool file is not needed: the caller sends again on failure.
    let _ = std::fs::remove_file(&path);
    result
}

/// Runs replay and detection in the background until no new data is waiting.
fn spawn_derive(st: &PushState) {
    let st = st.clone();
    tokio::task::spawn_blocking(move || {
        let Ok(lake) = Lake::open(&st.cfg.lake) else {
            return;
        };
        loop {
            {
                // One worker at a time; a push arriving meanwhile sets `dirty` again.
                let Ok(mut derive) = st.derive.try_lock() else {
                    return;
                };
                while st.dirty.swap(false, Ordering::SeqCst) {
                    let mut report = super::StreamReport::default();
                    if let Err(e) = derive.run(&lake, true, &mut report) {
                        tracing::error!(error = %e, "replay or detection after a push failed");
                    }
                }
            }
            // A push that found the worker busy just before it let go is not left waiting.
            if !st.dirty.load(Ordering::SeqCst) {
                return;
            }
        }
    });
}
