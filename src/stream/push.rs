//! `POST /ingest`: servers that push NDJSON instead of writing files, through the same validation, quarantine, commit and incremental path.
//!
//! The bearer token is checked before the body is read; at most
//! [`MAX_UPLOADS`] bodies are read at once, each streamed (never held whole in
//! memory) to `LAKE/_vigie/inbox/` up to [`MAX_BODY`] bytes and fsynced, then ingested as
//! a source file like any other (one commit); the answer comes only after the
//! commit is durable, with the lake version and the counts. A retried body
//! (same bytes) is recognised by its fingerprint and adds nothing. Requests
//! carry `Authorization: Bearer TOKEN`; the token is compared by its SHA-256
//! in constant time. Replay and detection follow on a thread of their own, coalesced
//! and scoped as the stream's passes are, whole again once the pushes rest,
//! and the stream's compaction thread keeps the lake's files few and vacuumed.
//! When the server stops, [`PushHandle::finish`] makes the last pass, as the
//! stream does on SIGTERM; a server started again after one killed before its
//! last pass replays and detects what that one left at once ([`router`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

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
    /// Least time between the starts of two detection runs (`serve --detect-interval`; none by
    /// default, as for the stream: the runs follow the replays, which coalesce the pushes).
    pub detect_interval: Duration,
    /// The vacuum of the maintenance thread deletes files removed longer ago than this
    /// ([`super::StreamOptions::vacuum_retain`]).
    pub vacuum_retain: Duration,
    /// The same for the tables every detection pass rewrites whole
    /// ([`super::StreamOptions::rewrites_retain`]).
    pub rewrites_retain: Duration,
    /// The logs' commits older than this are deleted at the vacuum
    /// ([`super::StreamOptions::log_retain`]).
    pub log_retain: Duration,
    /// After this long with no push, a last detection run recomputes every account (the runs
    /// that follow pushes recompute the accounts they touched and one slice of the others, as
    /// the stream's passes do), so that the flags at rest are those of a batch run.
    pub rest: Duration,
}

impl PushConfig {
    pub fn new(lake: PathBuf, token: &str, rules: crate::detect::rules::RuleSource) -> PushConfig {
        PushConfig {
            lake,
            token_sha256: Sha256::digest(token.trim().as_bytes()).into(),
            rules,
            detect_interval: Duration::ZERO,
            vacuum_retain: Duration::from_millis(crate::lake::DEFAULT_RETENTION_MS as u64),
            rewrites_retain: super::REWRITES_RETAIN,
            log_retain: Duration::from_millis(
                crate::lake::cleanup::DEFAULT_LOG_RETENTION_MS as u64,
            ),
            rest: REST,
        }
    }
}

/// How long the pushes rest before the detection run that recomputes every account
/// ([`PushConfig::rest`]).
pub const REST: Duration = Duration::from_secs(10);

/// Messages to the replay and detection thread.
enum Wake {
    /// A push committed.
    Pushed,
    /// The server is shutting down: a last pass, then stop ([`PushHandle::finish`]).
    Finish,
}

/// The replay and detection thread, once started.
struct Worker {
    tx: Sender<Wake>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Clone)]
struct PushState {
    cfg: Arc<PushConfig>,
    /// One commit at a time.
    commit: Arc<tokio::sync::Mutex<()>>,
    /// Set under `commit` by [`PushHandle::finish`]: later pushes are answered 503.
    closed: Arc<AtomicBool>,
    /// The replay and detection thread, started by the first push that commits, or at once on
    /// work an earlier process left ([`spawn_derive`]); `None` inside when it could not start.
    derive: Arc<std::sync::OnceLock<Option<Worker>>>,
    /// Bodies being read.
    uploads: Arc<tokio::sync::Semaphore>,
    /// When the inbox was last swept ([`sweep_inbox`]; ms since the epoch).
    swept_ms: Arc<std::sync::atomic::AtomicI64>,
}

/// Ends the push endpoint's background work when the server shuts down ([`PushHandle::finish`]).
pub struct PushHandle {
    commit: Arc<tokio::sync::Mutex<()>>,
    closed: Arc<AtomicBool>,
    derive: Arc<std::sync::OnceLock<Option<Worker>>>,
}

impl PushHandle {
    /// Tells the replay and detection thread to make its last pass and waits for it (blocking):
    /// what was pushed is replayed, detection runs whole if the last run was scoped (or new data
    /// came), the maintenance thread ends after the calls it has in hand, then what is left of the small
    /// files is merged and the removed files due are vacuumed, as `vigie stream` does on SIGTERM.
    /// Nothing to do when no push was committed and nothing was left to catch up. Called after the server stopped taking requests;
    /// a push still being committed (its connection dropped, its commit going on) is waited for,
    /// and any later one is answered 503. Blocks: not to be called from an async task.
    pub fn finish(self) {
        {
            let _one = self.commit.blocking_lock();
            self.closed.store(true, Ordering::SeqCst);
        }
        let Some(Some(worker)) = self.derive.get() else {
            return;
        };
        // A thread that already stopped has logged why.
        let _ = worker.tx.send(Wake::Finish);
        let thread = worker
            .thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = thread
            && t.join().is_err()
        {
            tracing::error!("the push endpoint's replay and detection thread panicked");
        }
    }
}

/// The router of `POST /ingest`, and the handle that ends its background work.
///
/// An earlier process's leftovers are taken up at once: spooled bodies it left in the inbox
/// ([`sweep_inbox`]) are removed (and looked for again every ten minutes of pushes, for those
/// not yet an hour old at the start), and when its pushes were not all replayed and detected (it
/// was killed before its last pass), the replay and detection thread starts now, not at the next
/// push.
pub fn router(cfg: PushConfig) -> (Router, PushHandle) {
    let cfg = Arc::new(cfg);
    sweep_inbox(&cfg.lake, STALE_SPOOL);
    let derive = Arc::new(std::sync::OnceLock::new());
    match left_undone(&cfg.lake) {
        Ok(false) => {}
        Ok(true) => {
            tracing::info!(
                "the lake holds pushes not yet replayed or detected: their replay and detection start now"
            );
            let _ = derive.set(spawn_derive(&cfg));
        }
        // The first push tries again (and says why if it fails).
        Err(e) => {
            tracing::warn!(error = %e, "could not tell whether the lake holds pushes not yet replayed")
        }
    }
    let commit = Arc::new(tokio::sync::Mutex::new(()));
    let closed = Arc::new(AtomicBool::new(false));
    let state = PushState {
        cfg,
        commit: Arc::clone(&commit),
        closed: Arc::clone(&closed),
        derive: Arc::clone(&derive),
        uploads: Arc::new(tokio::sync::Semaphore::new(MAX_UPLOADS)),
        swept_ms: Arc::new(std::sync::atomic::AtomicI64::new(crate::lake::now_ms())),
    };
    let router = Router::new()
        .route("/ingest", post(ingest))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state);
    (
        router,
        PushHandle {
            commit,
            closed,
            derive,
        },
    )
}

/// How old a spooled body must be for [`router`] to remove it as left by an earlier process (a
/// live one's spool files are written, or wait for the commit lock, for much less).
const STALE_SPOOL: Duration = Duration::from_secs(3600);

/// How often the pushes look for such bodies again after the start (ms).
const SWEEP_EVERY_MS: i64 = 10 * 60 * 1000;

/// Removes from `LAKE/_vigie/inbox/` the spooled bodies (whole or partial) last written more than
/// `older_than` ago: a process killed while it read or committed a body leaves it there, and its
/// sender, who had no answer 200, sends it again (a body that was committed adds nothing the
/// second time). Returns how many were removed.
fn sweep_inbox(lake: &std::path::Path, older_than: Duration) -> usize {
    let Ok(dir) = std::fs::read_dir(lake.join("_vigie/inbox")) else {
        return 0;
    };
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let spooled = (name.starts_with("push-") && name.ends_with(".jsonl"))
            || (name.starts_with(".push-") && name.ends_with(".part"));
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= older_than);
        if spooled && stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(
            removed,
            "spooled bodies left in the inbox by an earlier process removed (their senders send them again)"
        );
    }
    removed
}

/// Whether the lake at `dir` holds work for the replay and detection thread that an earlier
/// process left: events committed after the replay's checkpoint, or a detection behind the
/// replay, or scoped (its last pass did not run). `false` for a lake that does not exist or holds
/// no events.
fn left_undone(dir: &std::path::Path) -> Result<bool, crate::lake::LakeError> {
    use crate::detect::DetectStage;
    use crate::replay::run::ReplayStage;
    if !dir.join("_vigie/log").is_dir() {
        return Ok(false);
    }
    let state = crate::lake::Lake::open_existing(dir)?.state()?;
    let replay = state.stage::<ReplayStage>()?;
    let since = replay.map_or(0, |r| r.version);
    let unreplayed = state
        .table_files("events")
        .any(|f| f.data_version() > since);
    let undetected = replay.is_some()
        && state
            .stage::<DetectStage>()?
            .is_none_or(|d| d.scoped || d.replay != replay);
    Ok(unreplayed || undetected)
}

/// The settings of the stream's compaction and vacuum, for the pushed lake (nothing is followed).
fn maintenance_options(cfg: &PushConfig) -> super::StreamOptions {
    let mut opts = super::StreamOptions::new(PathBuf::new(), cfg.rules.clone());
    opts.vacuum_retain = cfg.vacuum_retain;
    opts.rewrites_retain = cfg.rewrites_retain;
    opts.log_retain = cfg.log_retain;
    opts
}

/// Starts the maintenance `vigie stream` runs beside its passes, for the pushed lake: the
/// compaction thread (small files merged, asked after each replay and detection run; removed
/// files vacuumed when due, after [`PushConfig::rewrites_retain`] for the tables every detection
/// pass rewrites and [`PushConfig::vacuum_retain`] for the others; the shared caches' entries of
/// removed files dropped). Without it every push would leave files of its own in each partition
/// it touched, and the tables each pass rewrites would keep every removed file on disk. The
/// thread ends when its sender is dropped, after the calls it has in hand ([`stop_maintenance`]);
/// `None` when it could not start (logged), and the endpoint then works without it.
fn spawn_maintenance(
    cfg: &PushConfig,
) -> Option<(Sender<()>, std::thread::JoinHandle<super::StreamReport>)> {
    let lake = match crate::catalog::open(&cfg.lake) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "the push endpoint's compaction and vacuum could not open the lake; not tried again until restarted");
            return None;
        }
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let opts = maintenance_options(cfg);
    let spawned = std::thread::Builder::new()
        .name("vigie-push-maintenance".into())
        .spawn(move || super::compact_loop(&lake, &opts, rx, &std::sync::Mutex::new(())));
    match spawned {
        Ok(thread) => Some((tx, thread)),
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
    // From here the spooled body is removed however the request ends (dropped while it waits
    // for the commit lock, refused, or committed).
    let spooled = Spooled(path);
    let guard = Arc::clone(&st.commit).lock_owned().await;
    if st.closed.load(Ordering::SeqCst) {
        drop(spooled);
        let mut res = json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({ "error": "the server is shutting down: send again shortly" }),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
        return res;
    }
    let committing = st.clone();
    let result = tokio::task::spawn_blocking(move || {
        // Held until the commit and its wake-up are done, even if the request is dropped
        // meanwhile: the last pass ([`PushHandle::finish`]) waits for them.
        let _one = guard;
        let r = commit_spooled(&committing.cfg, &spooled.0);
        drop(spooled);
        // Spooled bodies an earlier process left (killed, and started again within the hour)
        // are old enough to go after a while: looked for every ten minutes of pushes.
        let now = crate::lake::now_ms();
        let last = committing.swept_ms.load(Ordering::Relaxed);
        if now - last >= SWEEP_EVERY_MS
            && committing
                .swept_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            sweep_inbox(&committing.cfg.lake, STALE_SPOOL);
        }
        if let Ok(r) = &r
            && r.files_unreadable == 0
            && r.version.is_some()
            && let Some(worker) = committing
                .derive
                .get_or_init(|| spawn_derive(&committing.cfg))
        {
            // A thread that stopped has logged why; the commit stands.
            let _ = worker.tx.send(Wake::Pushed);
        }
        r
    })
    .await;
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
        Ok(Ok(r)) => json(
            StatusCode::OK,
            serde_json::json!({
                "version": r.version,
                "lines": r.lines_read,
                "valid": r.lines_valid,
                "quarantined": r.lines_quarantined,
                "corrupt": r.files_corrupt,
            }),
        ),
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

/// A spooled body in the inbox, removed when dropped: committed or not, it is not needed again
/// (the sender sends again on any answer but 200).
struct Spooled(PathBuf);

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Ingests a spooled body in one commit.
fn commit_spooled(
    cfg: &PushConfig,
    path: &std::path::Path,
) -> Result<crate::ingest::IngestReport, String> {
    crate::catalog::open(&cfg.lake)
        .map_err(|e| e.to_string())
        .and_then(|lake| {
            super::commit_final(&lake, &[path.to_path_buf()]).map_err(|e| e.to_string())
        })
}

/// Times a replay and detection run after a push that met a concurrent commit is run again after
/// a pause, before the next push runs it.
const CONFLICT_RETRIES: u32 = 3;

/// Pause before the first such retry (twice it before the second, and so on).
const CONFLICT_PAUSE: Duration = Duration::from_millis(200);

/// Starts the thread that replays the pushes and runs detection ([`derive_loop`]); `None` when
/// it could not start (logged: the pushes are still committed, and wait for a replay).
fn spawn_derive(cfg: &Arc<PushConfig>) -> Option<Worker> {
    let (tx, rx) = std::sync::mpsc::channel::<Wake>();
    let cfg = Arc::clone(cfg);
    let spawned = std::thread::Builder::new()
        .name("vigie-push-derive".into())
        .spawn(move || derive_loop(&cfg, &rx));
    match spawned {
        Ok(thread) => Some(Worker {
            tx,
            thread: std::sync::Mutex::new(Some(thread)),
        }),
        Err(e) => {
            tracing::error!(error = %e, "the push endpoint's replay and detection could not start; not tried again until restarted");
            None
        }
    }
}

/// Replay and detection after pushes, as the stream's replay thread runs them: each wake-up
/// (one push or many) replays what is new, and detection runs when its interval allows,
/// scoped to the accounts touched since the last run plus one slice of the others
/// ([`Derive`]); once no push came for [`PushConfig::rest`], one run recomputes every account,
/// so that the flags at rest are those of a batch run. After each run the maintenance thread
/// is asked for a compaction. A run that fails (a rule included) is tried again at the next
/// push; one that keeps meeting concurrent commits, after the rest or at the next push. At [`Wake::Finish`], or when the endpoint is dropped, a last pass as `vigie stream`'s
/// on SIGTERM ([`last_pass`]).
fn derive_loop(cfg: &PushConfig, rx: &Receiver<Wake>) {
    let mut derive = Derive::new(cfg.rules.clone(), cfg.detect_interval, 2);
    let mut lake = None;
    let mut maintain: Option<Option<(Sender<()>, std::thread::JoinHandle<super::StreamReport>)>> =
        None;
    let mut last_push = Instant::now();
    // Woken by a first push (or started on work an earlier process left: [`router`]).
    let mut pushed = true;
    let mut finish = false;
    let mut conflicts = 0;
    // The `force` of a run that met a concurrent commit, to run again after a pause.
    let mut retry: Option<bool> = None;
    // The last run failed: only a push (or the end) wakes the next one.
    let mut failed = false;
    // A run whose concurrent commits outlasted its retries: run again then, if no push came first.
    let mut again: Option<Instant> = None;
    loop {
        let force = match retry.take() {
            Some(force) => force,
            None => {
                if !pushed && !finish {
                    // A push; else a detection run waiting for its interval; else, if the last run
                    // was scoped, the rest.
                    let wait = if failed {
                        None
                    } else {
                        let rest =
                            (!derive.exact()).then(|| cfg.rest.saturating_sub(last_push.elapsed()));
                        let again = again.map(|t| t.saturating_duration_since(Instant::now()));
                        [derive.detection_wait(), rest, again]
                            .into_iter()
                            .flatten()
                            .min()
                    };
                    let woke = match wait {
                        Some(w) => rx.recv_timeout(w),
                        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    };
                    match woke {
                        Ok(Wake::Pushed) => pushed = true,
                        Ok(Wake::Finish) | Err(RecvTimeoutError::Disconnected) => finish = true,
                        Err(RecvTimeoutError::Timeout) => {}
                    }
                }
                // Every push waiting is taken by this run.
                for m in rx.try_iter() {
                    match m {
                        Wake::Pushed => pushed = true,
                        Wake::Finish => finish = true,
                    }
                }
                if pushed {
                    last_push = Instant::now();
                    failed = false;
                }
                again = None;
                let rested =
                    !pushed && derive.detection_wait().is_none() && last_push.elapsed() >= cfg.rest;
                pushed = false;
                if finish {
                    // The last run and the last compaction are this thread's, with no call of the
                    // maintenance thread under way to conflict with them.
                    stop_maintenance(maintain.take().flatten());
                }
                finish || rested
            }
        };
        let lake = match &lake {
            Some(l) => l,
            None => match crate::catalog::open(&cfg.lake) {
                Ok(l) => lake.insert(l),
                Err(e) => {
                    tracing::error!(error = %e, "replay after a push could not open the lake; tried again at the next push");
                    if finish {
                        return;
                    }
                    failed = true;
                    continue;
                }
            },
        };
        let mut report = super::StreamReport::default();
        let result = derive.run(lake, force, &mut report);
        if report.detect_errors > 0 {
            // A rule failed (the flags are as they were): not tried again before the next push.
            failed = true;
        }
        let retried = matches!(&result, Err(e) if e.is_conflict()) && conflicts < CONFLICT_RETRIES;
        // The pushes' and the replay's files wait to be merged whatever the detection did (a rule
        // that fails must not stop the compaction and the vacuum); not before a retry, which a
        // compaction committing meanwhile would conflict with, nor before the last pass's own.
        // The maintenance thread starts after the first run, so a server that is pushed nothing
        // never writes to its lake.
        if !retried
            && !finish
            && let Some((tx, _)) = maintain.get_or_insert_with(|| spawn_maintenance(cfg))
        {
            // A closed thread is no reason to stop.
            let _ = tx.send(());
        }
        match result {
            Ok(()) => conflicts = 0,
            // A compaction (or another writer) committed meanwhile: the same run again from the
            // lake after a pause, a few times; then the next push runs it.
            Err(e) if retried => {
                conflicts += 1;
                tracing::warn!(conflict = %e, "concurrent commit; replay after a push retried");
                std::thread::sleep(CONFLICT_PAUSE * conflicts);
                retry = Some(force);
                continue;
            }
            Err(e) if e.is_conflict() => {
                conflicts = 0;
                again = Some(Instant::now() + cfg.rest);
                tracing::warn!(conflict = %e, "concurrent commits outlasted the retries; replay after a push tried again after the rest or at the next push");
            }
            Err(e) => {
                conflicts = 0;
                failed = true;
                tracing::error!(error = %e, "replay or detection after a push failed; tried again at the next push");
            }
        }
        if finish {
            last_pass(lake, cfg);
            return;
        }
    }
}

/// Ends the maintenance thread: after the calls it has in hand (the one under way, and one more
/// if one was asked meanwhile), and waits for it.
fn stop_maintenance(maintain: Option<(Sender<()>, std::thread::JoinHandle<super::StreamReport>)>) {
    if let Some((tx, thread)) = maintain {
        drop(tx);
        if thread.join().is_err() {
            tracing::error!("the push endpoint's compaction thread panicked");
        }
    }
}

/// The end of the push endpoint's work, after its last run, as `vigie stream`'s last pass: what
/// is left of the small files is merged (whatever the size) and the removed files due are
/// vacuumed, on this thread (the maintenance thread has ended).
fn last_pass(lake: &crate::lake::Lake, cfg: &PushConfig) {
    let opts = maintenance_options(cfg);
    let mut report = super::StreamReport::default();
    super::log_background(
        "compaction",
        super::compact_once(lake, &opts, None, &mut report),
    );
    super::log_background("vacuum", super::vacuum_once(lake, &opts, &mut report));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_removes_only_old_spooled_bodies() {
        let lake = std::env::temp_dir().join(format!("vigie-sweep-{}", std::process::id()));
        let inbox = lake.join("_vigie/inbox");
        std::fs::create_dir_all(&inbox).unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(7200);
        let write = |name: &str, aged: bool| {
            let p = inbox.join(name);
            std::fs::write(&p, "{}\n").unwrap();
            if aged {
                std::fs::File::options()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }
            p
        };
        let left = [
            write("push-1-00aa.jsonl", true),
            write(".push-00bb.part", true),
        ];
        let kept = [
            write("push-2-00cc.jsonl", false),
            write(".push-00dd.part", false),
            write("notes.txt", true),
        ];
        assert_eq!(sweep_inbox(&lake, STALE_SPOOL), 2);
        assert!(left.iter().all(|p| !p.exists()));
        assert!(kept.iter().all(|p| p.exists()));
        // No inbox: nothing to do.
        assert_eq!(sweep_inbox(&lake.join("none"), STALE_SPOOL), 0);
        let _ = std::fs::remove_dir_all(&lake);
    }
}
