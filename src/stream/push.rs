//! `POST /ingest`: servers that push NDJSON instead of writing files, through the same validation, quarantine, commit and incremental path.
//!
//! The bearer token is checked before the body is read; at most
//! [`MAX_UPLOADS`] bodies are read at once, each streamed (never held whole in
//! memory) to `LAKE/_vigie/inbox/` up to [`MAX_BODY`] bytes and fsynced, then ingested as
//! a source file like any other (one commit); the answer comes only after the
//! commit is durable, with the lake version and the counts. A retried body
//! (same bytes) is recognised by its fingerprint and adds nothing. Requests
//! carry `Authorization: Bearer TOKEN`; the token is compared by its SHA-256
//! in constant time. Replay and detection follow in the background, coalesced,
//! and the stream's compaction thread keeps the lake's files few and vacuumed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use sha2::{Digest, Sha256};

use super::Derive;

/// Largest body accepted (bytes).
pub const MAX_BODY: usize = 64 << 20;

/// Bodies read at once; a request beyond is answered `503` with `Retry-After`.
pub const MAX_UPLOADS: usize = 4;

/// Configuration of the push endpoint.
#[derive(Debug, Clone)]
pub struct PushConfig {
    pub lake: PathBuf,
    /// SHA-256 of the bearer token.
    pub token_sha256: [u8; 32],
    pub rules: crate::detect::rules::RuleSource,
    pub detect_interval: Duration,
    /// The vacuum of the maintenance thread deletes files removed longer ago than this
    /// ([`super::StreamOptions::vacuum_retain`]).
    pub vacuum_retain: Duration,
    /// The same for the tables every detection pass rewrites whole
    /// ([`super::StreamOptions::rewrites_retain`]).
    pub rewrites_retain: Duration,
}

impl PushConfig {
    pub fn new(lake: PathBuf, token: &str, rules: crate::detect::rules::RuleSource) -> PushConfig {
        PushConfig {
            lake,
            token_sha256: Sha256::digest(token.trim().as_bytes()).into(),
            rules,
            detect_interval: Duration::from_secs(2),
            vacuum_retain: Duration::from_millis(crate::lake::DEFAULT_RETENTION_MS as u64),
            rewrites_retain: super::REWRITES_RETAIN,
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
    /// Bodies being read.
    uploads: Arc<tokio::sync::Semaphore>,
    /// Asks the maintenance thread for a compaction; the thread is started when the first replay
    /// and detection run after a push ends ([`spawn_maintenance`]), so a server that is pushed
    /// nothing never writes to its lake.
    maintain: Arc<std::sync::OnceLock<Option<std::sync::mpsc::Sender<()>>>>,
}

/// The router of `POST /ingest`.
pub fn router(cfg: PushConfig) -> Router {
    let derive = Derive::new(cfg.rules.clone(), cfg.detect_interval, 2);
    let state = PushState {
        cfg: Arc::new(cfg),
        commit: Arc::new(tokio::sync::Mutex::new(())),
        dirty: Arc::new(AtomicBool::new(false)),
        derive: Arc::new(std::sync::Mutex::new(derive)),
        uploads: Arc::new(tokio::sync::Semaphore::new(MAX_UPLOADS)),
        maintain: Arc::new(std::sync::OnceLock::new()),
    };
    Router::new()
        .route("/ingest", post(ingest))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

/// Starts the maintenance `vigie stream` runs beside its passes, for the pushed lake: the
/// compaction thread (small files merged, asked after each replay and detection run; removed
/// files vacuumed when due, after [`PushConfig::rewrites_retain`] for the tables every detection
/// pass rewrites and [`PushConfig::vacuum_retain`] for the others; the shared caches' entries of
/// removed files dropped). Without it every push would leave files of its own in each partition
/// it touched, and the tables each pass rewrites would keep every removed file on disk. The
/// thread ends when the router's last state is dropped; `None` when it could not start (logged),
/// and the endpoint then works without it.
fn spawn_maintenance(cfg: &PushConfig) -> Option<std::sync::mpsc::Sender<()>> {
    let lake = match crate::catalog::open(&cfg.lake) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "the push endpoint's compaction and vacuum could not open the lake; not tried again until restarted");
            return None;
        }
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    // The stream's compaction settings; nothing is followed.
    let mut opts = super::StreamOptions::new(PathBuf::new(), cfg.rules.clone());
    opts.vacuum_retain = cfg.vacuum_retain;
    opts.rewrites_retain = cfg.rewrites_retain;
    let spawned = std::thread::Builder::new()
        .name("vigie-push-maintenance".into())
        .spawn(move || {
            super::compact_loop(&lake, &opts, rx, &std::sync::Mutex::new(()));
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::error!(error = %e, "the push endpoint's compaction and vacuum could not start; not tried again until restarted");
            None
        }
    }
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

/// Why a body could not be spooled.
enum SpoolError {
    Empty,
    TooLarge,
    Body(String),
    Io(std::io::Error),
}

/// The `Content-Encoding` of a request when it is neither absent, `identity`, `gzip` nor `zstd`.
fn unsupported_encoding(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::CONTENT_ENCODING)?;
    let text = String::from_utf8_lossy(v.as_bytes())
        .trim()
        .to_ascii_lowercase();
    let known = ["", "identity", "gzip", "x-gzip", "zstd"];
    (!known.contains(&text.as_str())).then_some(text)
}

/// Whether a body starts as a gzip member or a zstd frame does.
fn compressed(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// The `Content-Length` a request announces, if any.
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

async fn ingest(State(st): State<PushState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // The token is checked before a byte of the body is read.
    if !authorized(&st.cfg, &parts.headers) {
        return json(
            StatusCode::UNAUTHORIZED,
            serde_json::json!({ "error": "a valid bearer token is required" }),
        );
    }
    if content_length(&parts.headers).is_some_and(|n| n > MAX_BODY as u64) {
        return too_large();
    }
    // The body is stored as sent and read as a log file is: plain, or a gzip or zstd archive
    // (recognised by its first bytes). Another coding would be read as lines of garbage.
    if let Some(coding) = unsupported_encoding(&parts.headers) {
        return json(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            serde_json::json!({ "error": format!("Content-Encoding {coding} is not read: send NDJSON, plain, gzip or zstd") }),
        );
    }
    let Ok(_upload) = Arc::clone(&st.uploads).try_acquire_owned() else {
        let mut res = json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({ "error": format!("{MAX_UPLOADS} uploads are being read: send again shortly") }),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return res;
    };
    let path = match spool(&st.cfg, body).await {
        Ok(p) => p,
        Err(SpoolError::Empty) => {
            return json(
                StatusCode::BAD_REQUEST,
                serde_json::json!({ "error": "empty body: send NDJSON, one event per line" }),
            );
        }
        Err(SpoolError::TooLarge) => return too_large(),
        Err(SpoolError::Body(e)) => {
            return json(
                StatusCode::BAD_REQUEST,
                serde_json::json!({ "error": format!("the body could not be read, send again: {e}") }),
            );
        }
        Err(SpoolError::Io(e)) => {
            tracing::error!(error = %e, "spooling a push failed");
            return json(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "error": "not committed, send again" }),
            );
        }
    };
    let guard = st.commit.lock().await;
    let cfg = Arc::clone(&st.cfg);
    let result = tokio::task::spawn_blocking(move || commit_spooled(&cfg, &path)).await;
    drop(guard);
    match result {
        Ok(Ok(r)) if r.files_unreadable > 0 => {
            // The spool file could not be read (and is removed like any other): nothing of it is
            // in the lake, which the sender must hear.
            tracing::error!("a pushed body could not be read back from the inbox");
            json(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "error": "not committed, send again" }),
            )
        }
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
                    "corrupt": r.files_corrupt,
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

fn too_large() -> Response {
    json(
        StatusCode::PAYLOAD_TOO_LARGE,
        serde_json::json!({ "error": format!("the body is larger than {MAX_BODY} bytes: send smaller batches") }),
    )
}

/// Streams the body to a spool file in `LAKE/_vigie/inbox/` (at most [`MAX_BODY`] bytes, never
/// held whole in memory), fsynced, with a complete last line.
async fn spool(cfg: &PushConfig, body: Body) -> Result<PathBuf, SpoolError> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    let inbox = cfg.lake.join("_vigie/inbox");
    tokio::fs::create_dir_all(&inbox)
        .await
        .map_err(SpoolError::Io)?;
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| SpoolError::Io(std::io::Error::other(e)))?;
    let part = inbox.join(format!(".push-{}.part", crate::lake::hex(&nonce)));
    // Removes the partial file however this ends: an error, or the request dropped mid-body
    // (the client went away and the server cancelled the handler).
    struct Partial(Option<PathBuf>);
    impl Drop for Partial {
        fn drop(&mut self) {
            if let Some(p) = self.0.take() {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    let mut partial = Partial(Some(part.clone()));
    let result = async {
        let mut f = tokio::fs::File::create(&part)
            .await
            .map_err(SpoolError::Io)?;
        let mut hash = Sha256::new();
        let mut len = 0usize;
        let mut last = 0u8;
        let mut head = Vec::with_capacity(4);
        let mut chunks = body.into_data_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| SpoolError::Body(e.to_string()))?;
            len += chunk.len();
            if len > MAX_BODY {
                return Err(SpoolError::TooLarge);
            }
            if let Some(b) = chunk.last() {
                last = *b;
            }
            let want = 4usize.saturating_sub(head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..want]);
            hash.update(&chunk);
            f.write_all(&chunk).await.map_err(SpoolError::Io)?;
        }
        if len == 0 {
            return Err(SpoolError::Empty);
        }
        // The body is complete: a last line without newline is a whole line. (Not after an
        // archive: a byte after its end would be a member cut short; an archive is read as final.)
        if last != b'\n' && !compressed(&head) {
            f.write_all(b"\n").await.map_err(SpoolError::Io)?;
        }
        f.sync_all().await.map_err(SpoolError::Io)?;
        let path = inbox.join(format!(
            "push-{}-{}.jsonl",
            crate::lake::now_ms(),
            crate::lake::hex(&hash.finalize()[..8])
        ));
        tokio::fs::rename(&part, &path)
            .await
            .map_err(SpoolError::Io)?;
        Ok(path)
    }
    .await;
    if result.is_ok() {
        // Renamed into place: nothing partial is left.
        partial.0 = None;
    }
    result
}

/// Ingests a spooled body in one commit, then removes the spool file.
fn commit_spooled(
    cfg: &PushConfig,
    path: &std::path::Path,
) -> Result<crate::ingest::IngestReport, String> {
    let result = crate::catalog::open(&cfg.lake)
        .map_err(|e| e.to_string())
        .and_then(|lake| {
            super::commit_final(&lake, &[path.to_path_buf()]).map_err(|e| e.to_string())
        });
    // Committed or not, the spool file is not needed: the caller sends again on failure.
    let _ = std::fs::remove_file(path);
    result
}

/// Times a replay and detection run after a push that met a concurrent commit is run again after
/// a pause, before the next push runs it.
const CONFLICT_RETRIES: u32 = 3;

/// Pause before the first such retry (twice it before the second, and so on).
const CONFLICT_PAUSE: Duration = Duration::from_millis(200);

/// Runs replay and detection in the background until no new data is waiting.
fn spawn_derive(st: &PushState) {
    let st = st.clone();
    tokio::task::spawn_blocking(move || {
        let Ok(lake) = crate::catalog::open(&st.cfg.lake) else {
            return;
        };
        loop {
            {
                // One worker at a time; a push arriving meanwhile sets `dirty` again.
                let Ok(mut derive) = st.derive.try_lock() else {
                    return;
                };
                let mut conflicts = 0;
                while st.dirty.swap(false, Ordering::SeqCst) {
                    let mut report = super::StreamReport::default();
                    let result = derive.run(&lake, true, &mut report);
                    let retried = matches!(&result, Err(e) if e.is_conflict())
                        && conflicts < CONFLICT_RETRIES;
                    // The pushes' and the replay's files wait to be merged whatever the detection
                    // did (a rule that fails must not stop the compaction and the vacuum); not
                    // before a retry, which a compaction committing meanwhile would conflict with.
                    if !retried
                        && let Some(tx) = st.maintain.get_or_init(|| spawn_maintenance(&st.cfg))
                    {
                        // A closed thread is no reason to stop.
                        let _ = tx.send(());
                    }
                    match result {
                        Ok(()) => conflicts = 0,
                        // A compaction (or another writer) committed meanwhile: run again from the
                        // lake after a pause, a few times; then the next push runs it.
                        Err(e) if retried => {
                            conflicts += 1;
                            tracing::warn!(conflict = %e, "concurrent commit; replay after a push retried");
                            std::thread::sleep(CONFLICT_PAUSE * conflicts);
                            st.dirty.store(true, Ordering::SeqCst);
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "replay or detection after a push failed; tried again at the next push");
                        }
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
