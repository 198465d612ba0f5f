//! `vigie stream`: exactly once under SIGKILL, rotation, compression and partial lines, compared with a batch run; `POST /ingest`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{event_rows, quarantine_rows, sql_text, vigie};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Lines of a log file, decompressed.
fn lines_of(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8(bytes).unwrap();
    }
    text.lines().map(str::to_string).collect()
}

/// The committed sample's lines, per server, in file order.
fn sample_lines(server: &str) -> Vec<String> {
    let dir = root().join("data/sample").join(server);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().flat_map(|f| lines_of(f)).collect()
}

/// A small deterministic generator for the kill moments.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn streamer(follow: &Path, lake: &Path, once: bool) -> Child {
    streamer_with(follow, lake, once, &[])
}

/// [`streamer`] with more arguments.
fn streamer_with(follow: &Path, lake: &Path, once: bool, extra: &[&str]) -> Child {
    let mut cmd = Command::new(crate::common::vigie_bin());
    cmd.args(["stream", "--follow"])
        .arg(follow)
        .arg("--lake")
        .arg(lake)
        .args(["--commit-interval", "0.05", "--detect-interval", "0.2"])
        // The background engine analysis is tested apart (a debug build's engine is slow).
        .args(["--analyse-share", "0"])
        .arg("--rules")
        .arg(root().join("queries/detect"))
        .env("VIGIE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if once {
        cmd.arg("--once");
    }
    cmd.args(extra);
    cmd.spawn().expect("spawn vigie stream")
}

/// The servers: append the sample's lines in small chunks, with a partial line, a rotation and a compressed archive.
fn write_logs(follow: &Path, done: &AtomicBool) {
    let a = sample_lines("srv-01");
    let b = sample_lines("srv-02");
    let open = |name: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(follow.join(name))
            .unwrap()
    };
    let mut fa = open("a.jsonl");
    let mut fb = open("b.jsonl");
    let rotate_at = a.len() / 2;
    let chunk = 40;
    let (mut ia, mut ib) = (0, 0);
    let mut step = 0;
    while ia < a.len() || ib < b.len() {
        step += 1;
        if ia < a.len() {
            let end = (ia + chunk).min(a.len());
            for l in &a[ia..end] {
                writeln!(fa, "{l}").unwrap();
            }
            ia = end;
            if ia >= rotate_at && ia - chunk < rotate_at {
                // Rotation: rename, start a new file, then compress the old one (written in two steps).
                drop(fa);
                std::fs::rename(follow.join("a.jsonl"), follow.join("a-1.jsonl")).unwrap();
                fa = open("a.jsonl");
                std::thread::sleep(Duration::from_millis(120));
                let old = std::fs::read(follow.join("a-1.jsonl")).unwrap();
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(&old).unwrap();
                let bytes = gz.finish().unwrap();
                let tmp = follow.join("a-1.jsonl.gz");
                let mut f = std::fs::File::create(&tmp).unwrap();
                f.write_all(&bytes[..bytes.len() / 2]).unwrap();
                f.flush().unwrap();
                std::thread::sleep(Duration::from_millis(150));
                f.write_all(&bytes[bytes.len() / 2..]).unwrap();
                drop(f);
                std::thread::sleep(Duration::from_millis(150));
                std::fs::remove_file(follow.join("a-1.jsonl")).unwrap();
            }
        }
        if ib < b.len() {
            let end = (ib + chunk / 2).min(b.len());
            for l in &b[ib..end] {
                if step % 7 == 0 {
                    // A line written in two halves: the streamer must wait for the second.
                    let (h, t) = l.split_at(l.len() / 2);
                    write!(fb, "{h}").unwrap();
                    fb.flush().unwrap();
                    std::thread::sleep(Duration::from_millis(60));
                    writeln!(fb, "{t}").unwrap();
                } else {
                    writeln!(fb, "{l}").unwrap();
                }
            }
            ib = end;
        }
        std::thread::sleep(Duration::from_millis(45));
    }
    done.store(true, Ordering::SeqCst);
}

fn flags(lake: &Path) -> Vec<Vec<String>> {
    sql_text(
        lake,
        "SELECT account, rule, \"window\", CAST(score AS VARCHAR), severity, action, evidence, array_to_string(refs, ' ') FROM flags ORDER BY 1, 2, 3",
    )
}

fn findings(lake: &Path) -> Vec<Vec<String>> {
    sql_text(
        lake,
        "SELECT game, CAST(seq AS VARCHAR), code, category FROM findings ORDER BY 1, 2, 3",
    )
}

#[test]
fn killed_twenty_times_the_stream_equals_a_batch_run() {
    let (work, follow, lake) = fresh_dirs("stream-kill");
    let done = AtomicBool::new(false);
    let mut kills = 0;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    std::thread::scope(|s| {
        s.spawn(|| write_logs(&follow, &done));
        let started = Instant::now();
        while kills < 20 || !done.load(Ordering::SeqCst) {
            let mut child = streamer(&follow, &lake, false);
            std::thread::sleep(Duration::from_millis(80 + rng.below(900)));
            match child.try_wait().unwrap() {
                Some(status) => {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    panic!("the streamer stopped by itself ({status}): {err}");
                }
                None => {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    kills += 1;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(600), "writer stuck");
        }
    });
    assert!(kills >= 20);
    let before = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    assert!(
        before.version >= 20 && before.table_rows("events") > 0,
        "the killed streamers committed along the way (version {})",
        before.version
    );
    // Catch up and exit.
    let out = streamer(&follow, &lake, true).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The rotated file was compressed and removed: the batch sees the final files only.
    let mut names: Vec<String> = std::fs::read_dir(&follow)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a-1.jsonl.gz", "a.jsonl", "b.jsonl"]);
    let batch = work.join("batch");
    for args in [
        vec![
            "ingest",
            "--lake",
            batch.to_str().unwrap(),
            follow.to_str().unwrap(),
        ],
        vec!["replay", "-q", "--lake", batch.to_str().unwrap()],
        vec![
            "detect",
            "--lake",
            batch.to_str().unwrap(),
            "--rules",
            root().join("queries/detect").to_str().unwrap(),
        ],
    ] {
        let out = vigie(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let streamed = event_rows(&lake);
    let batched = event_rows(&batch);
    let expected = sample_lines("srv-01").len() + sample_lines("srv-02").len();
    assert_eq!(
        batched.len() + quarantine_rows(&batch).len(),
        expected,
        "the batch run holds every line"
    );
    assert_eq!(streamed.len(), batched.len(), "same number of events");
    assert!(
        streamed == batched,
        "the same events, none twice, none missing"
    );
    assert_eq!(quarantine_rows(&lake).len(), quarantine_rows(&batch).len());
    let (f_stream, f_batch) = (findings(&lake), findings(&batch));
    assert!(!f_batch.is_empty(), "the sample has findings");
    assert_eq!(f_stream, f_batch);
    let (g_stream, g_batch) = (flags(&lake), flags(&batch));
    assert!(!g_batch.is_empty(), "the sample has flags");
    assert_eq!(g_stream, g_batch);
    // After the kills and one more run, every table's Delta log describes exactly the
    // committed files (compaction's removes included), and none is behind.
    for c in vigie::catalog::open(&lake).unwrap().check_delta().unwrap() {
        assert!(c.problems.is_empty() && c.behind == 0, "{c:?}");
    }
    // Compaction left one file per partition where streaming wrote many.
    let state = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    let files = state.table_files("events").count();
    let parts = vigie::ingest::batch::partition_rows(&state, "events").len();
    assert!(
        files <= parts * 3,
        "{files} events files for {parts} partitions"
    );
}

/// A fresh work directory for a streaming test (an earlier run's removed): the directory, its
/// followed logs directory (made, empty) and its lake's path.
fn fresh_dirs(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&work);
    let follow = work.join("logs");
    std::fs::create_dir_all(&follow).unwrap();
    let lake = work.join("lake");
    (work, follow, lake)
}

#[test]
fn sigterm_finishes_the_batch_and_exits() {
    let (_, follow, lake) = fresh_dirs("stream-term");
    std::fs::copy(crate::common::shared_sample(), follow.join("s.jsonl")).unwrap();
    let child = streamer(&follow, &lake, false);
    // Wait for the first commit, then ask it to stop.
    let started = Instant::now();
    while event_count(&lake) == 0 {
        assert!(started.elapsed() < Duration::from_secs(120), "no commit");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = terminate(child);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stream:"));
    assert_eq!(
        event_count(&lake),
        lines_of(&crate::common::shared_sample()).len()
    );
}

#[test]
fn while_following_the_stream_vacuums_what_each_pass_rewrites_with_no_new_lines() {
    let (_, follow, lake) = fresh_dirs("stream-vacuum");
    let lines = lines_of(&crate::common::shared_sample());
    let (first, second) = lines.split_at(lines.len() / 2);
    let write = |name: &str, part: &[String]| {
        let mut text = part.join("\n");
        text.push('\n');
        std::fs::write(follow.join(name), text).unwrap();
    };
    let state = || vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    let features = |s: &vigie::lake::State| {
        s.table_files("account_features")
            .map(|f| f.path.clone())
            .collect::<Vec<_>>()
    };
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let since = Instant::now();
        while !done() {
            assert!(since.elapsed() < Duration::from_secs(120), "{what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    write("a.jsonl", first);
    let mut child = streamer_with(&follow, &lake, false, &["--vacuum-retain-rewrites", "0"]);
    wait("no features for the first half", &|| {
        lake.join("_vigie").exists() && !features(&state()).is_empty()
    });
    let old = features(&state());
    write("b.jsonl", second);
    wait("the second half's pass", &|| {
        event_count(&lake) == lines.len() && features(&state()) != old
    });
    // No more lines: the compaction thread's vacuum deletes the first half's features anyway,
    // while the stream still follows.
    wait("the replaced features were not vacuumed", &|| {
        let s = state();
        old.iter()
            .all(|p| !lake.join(p).exists() && !s.tombstones.contains_key(p))
    });
    assert!(child.try_wait().unwrap().is_none(), "the stream stopped");
    terminate(child);
    // Files of the other tables that commits removed stay for the week's retention.
    assert!(state().tombstones.keys().all(|p| lake.join(p).exists()));
}

/// Stops a following stream with SIGTERM; it must exit cleanly.
fn terminate(child: Child) -> std::process::Output {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn event_count(lake: &Path) -> usize {
    if !lake.join("_vigie").exists() {
        return 0;
    }
    event_rows(lake).len()
}

const PUSH_TOKEN: &str = "push-token-0123456789abcdef";

/// A new lake under the test directory `tag`, and the push endpoint over it (token [`PUSH_TOKEN`]).
fn push_app(tag: &str) -> (PathBuf, axum::Router) {
    push_app_with(tag, root().join("queries/detect").into())
}

/// [`push_app`] with the detection rules `rules`.
fn push_app_with(tag: &str, rules: vigie::detect::rules::RuleSource) -> (PathBuf, axum::Router) {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(tag);
    let _ = std::fs::remove_dir_all(&work);
    let lake = work.join("lake");
    vigie::lake::Lake::open(&lake).unwrap();
    let app = vigie::stream::push::router(vigie::stream::push::PushConfig::new(
        lake.clone(),
        PUSH_TOKEN,
        rules,
    ));
    (lake, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_commits_before_answering_and_a_retry_adds_nothing() {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;
    let (lake, app) = push_app("stream-push");
    let token = PUSH_TOKEN;
    let mut body = std::fs::read_to_string(crate::common::shared_sample()).unwrap();
    body.push_str("{\"not\": \"an event\"}");
    let lines = body.lines().count();
    let post = |auth: Option<&str>, body: String| {
        let mut r = Request::post("/ingest");
        if let Some(a) = auth {
            r = r.header("authorization", format!("Bearer {a}"));
        }
        r.body(Body::from(body)).unwrap()
    };
    let r = app.clone().oneshot(post(None, body.clone())).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = app
        .clone()
        .oneshot(post(Some("wrong-token-0123456789"), body.clone()))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let answer = |r: axum::response::Response| async move {
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
    };
    let r = app
        .clone()
        .oneshot(post(Some(token), body.clone()))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = answer(r).await;
    assert!(v["version"].as_u64().is_some(), "{v}");
    assert_eq!(v["valid"].as_u64(), Some(lines as u64 - 1), "{v}");
    assert_eq!(v["quarantined"].as_u64(), Some(1), "{v}");
    // Durable before the answer: the committed snapshot already holds the lines.
    assert_eq!(event_rows(&lake).len(), lines - 1);
    assert_eq!(quarantine_rows(&lake).len(), 1);
    // A retried body adds nothing.
    let r = app.clone().oneshot(post(Some(token), body)).await.unwrap();
    let v = answer(r).await;
    assert!(v["version"].is_null(), "{v}");
    assert_eq!(event_rows(&lake).len(), lines - 1);
    // Replay and detection follow in the background.
    let started = Instant::now();
    loop {
        let state = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
        if state.stages.contains_key("detect") {
            assert!(state.table_rows("games") > 0);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no replay after the push"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Pushes leave no trail of small files: the push endpoint runs the stream's compaction beside its
/// replay and detection, so forty small pushes (each committing files of its own) end as at most
/// three files per partition, with every line kept once and the Delta log describing exactly the
/// live files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_small_pushes_are_compacted() {
    let (lake, app) = push_app("stream-push-compact");
    let state = push_in_pieces_until_settled(&lake, app).await;
    assert!(state.stages.contains_key("detect"), "detection followed");
}

/// The compaction beside the push endpoint does not wait for a detection that fails (here: its
/// rules directory is missing): the replay's and the pushes' files are merged all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_are_compacted_when_their_detection_fails() {
    let (lake, app) = push_app_with(
        "stream-push-compact-no-rules",
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("no-such-rules")
            .into(),
    );
    let state = push_in_pieces_until_settled(&lake, app).await;
    assert!(!state.stages.contains_key("detect"), "no detection ran");
}

/// Pushes the sample in 40 bodies, then waits until the lake settles ([`settled`]): the last push
/// replayed, at most three events files in each of its three partitions, and no commit for a
/// second. Checks every line kept once and the Delta logs; returns the settled state.
async fn push_in_pieces_until_settled(
    lake: &Path,
    app: axum::Router,
) -> std::sync::Arc<vigie::lake::State> {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use std::collections::BTreeMap;
    use tower::ServiceExt;
    let sample = std::fs::read_to_string(crate::common::shared_sample()).unwrap();
    let lines: Vec<&str> = sample.lines().collect();
    let mut last = 0;
    // Each push commits at least one events file of its own: 40 at least, over three days.
    for chunk in lines.chunks(lines.len().div_ceil(40)) {
        let body = chunk.iter().map(|l| format!("{l}\n")).collect::<String>();
        let r = app
            .clone()
            .oneshot(
                Request::post("/ingest")
                    .header("authorization", format!("Bearer {PUSH_TOKEN}"))
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        assert_eq!(
            status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        last = v["version"].as_u64().expect("a new push commits");
    }
    let files_per_partition = |state: &vigie::lake::State| {
        let mut per: BTreeMap<Option<String>, usize> = BTreeMap::new();
        for f in state.table_files("events") {
            *per.entry(f.partition.clone()).or_default() += 1;
        }
        per
    };
    // Settled: the last push replayed, at most three events files in each partition, and no
    // commit for a second (the replay, detection and compaction that follow are done).
    let state = settled(lake, Duration::from_secs(1), Duration::from_secs(300), |state| {
        let replayed = state
            .stage::<vigie::replay::run::ReplayStage>()
            .unwrap()
            .map_or(0, |s| s.version);
        let per = files_per_partition(state);
        (replayed < last || per.values().any(|&n| n > 3)).then(|| {
            format!("events files per partition {per:?}, replayed {replayed} of {last}: not compacted")
        })
    })
    .await;
    assert_eq!(files_per_partition(&state).len(), 3, "three days");
    let mut events = event_rows(lake);
    assert_eq!(events.len(), lines.len(), "every line kept");
    events.sort();
    events.dedup();
    assert_eq!(events.len(), lines.len(), "none twice");
    // The endpoint gone, its maintenance thread ends after what it has in hand: once no commit
    // came for two seconds, the Delta logs describe exactly the live files (a check that meets a
    // table's log being written after its commit is made again).
    drop(app);
    settled(
        lake,
        Duration::from_secs(2),
        Duration::from_secs(120),
        |_| {
            let bad: Vec<String> = match vigie::catalog::open(lake).unwrap().check_delta() {
                Ok(checks) => checks
                    .iter()
                    .filter(|c| !c.problems.is_empty() || c.behind > 0)
                    .map(|c| format!("{c:?}"))
                    .collect(),
                Err(e) => vec![e.to_string()],
            };
            (!bad.is_empty()).then(|| format!("{bad:?}"))
        },
    )
    .await;
    state
}

/// Waits until `lake` has had no commit for `quiet` and `missing` (asked only then) finds nothing
/// missing in its state, at most `deadline` (then fails with what was missing); returns the state.
async fn settled(
    lake: &Path,
    quiet: Duration,
    deadline: Duration,
    mut missing: impl FnMut(&vigie::lake::State) -> Option<String>,
) -> std::sync::Arc<vigie::lake::State> {
    let started = Instant::now();
    let mut seen: Option<(u64, Instant)> = None;
    let mut why = String::from("commits kept coming");
    loop {
        let state = vigie::lake::Lake::open(lake).unwrap().state().unwrap();
        match seen {
            Some((v, since)) if v == state.version => {
                if since.elapsed() >= quiet {
                    match missing(&state) {
                        None => return state,
                        Some(w) => why = w,
                    }
                }
            }
            _ => seen = Some((state.version, Instant::now())),
        }
        assert!(started.elapsed() < deadline, "{why}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A pushed body may be a gzip or zstd archive, as log files may (`Content-Encoding: gzip` or none):
/// read whole, its last line without a newline included; one cut short is quarantined as corrupt,
/// with a 200 that says so, never answered 200 with nothing kept. An encoding it cannot read is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_archives_are_read_whole_or_quarantined() {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use std::io::Write;
    use tower::ServiceExt;
    let (lake, app) = push_app("stream-push-archives");
    let token = PUSH_TOKEN;
    let sample = std::fs::read_to_string(crate::common::shared_sample()).unwrap();
    let lines: Vec<&str> = sample.lines().collect();
    let post = |encoding: Option<&str>, body: Vec<u8>| {
        let mut r = Request::post("/ingest").header("authorization", format!("Bearer {token}"));
        if let Some(e) = encoding {
            r = r.header("content-encoding", e);
        }
        r.body(Body::from(body)).unwrap()
    };
    let send = |req: Request<Body>| {
        let app = app.clone();
        async move {
            let r = app.oneshot(req).await.unwrap();
            let status = r.status();
            let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
            (
                status,
                serde_json::from_slice::<serde_json::Value>(&bytes).unwrap(),
            )
        }
    };
    // 100 lines gzipped, the last without its newline, then the start of the next one.
    let text = format!("{}\n{}", lines[..100].join("\n"), &lines[100][..40]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let (status, v) = send(post(Some("gzip"), gz.clone())).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (v["valid"].as_u64(), v["quarantined"].as_u64()),
        (Some(100), Some(1)),
        "{v}"
    );
    assert!(v["version"].as_u64().is_some(), "{v}");
    // 50 more lines as a zstd frame, no newline at the end, no header.
    let zst = zstd::encode_all(lines[101..151].join("\n").as_bytes(), 1).unwrap();
    let (status, v) = send(post(None, zst)).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (v["valid"].as_u64(), v["quarantined"].as_u64()),
        (Some(50), Some(0)),
        "{v}"
    );
    assert_eq!(event_rows(&lake).len(), 150);
    // An archive cut short: its whole members read, the rest kept in quarantine, and said.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(lines[200..300].join("\n").as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let (status, v) = send(post(Some("gzip"), gz[..gz.len() / 2].to_vec())).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["corrupt"].as_u64(), Some(1), "{v}");
    let reasons: Vec<String> = quarantine_rows(&lake).into_iter().map(|r| r.2).collect();
    assert!(
        reasons.iter().any(|r| r == "corrupt_archive"),
        "{reasons:?}"
    );
    let taken = event_rows(&lake).len();
    assert!(taken > 150 && taken < 250, "{taken} events");
    // The first archive cut short: a copy of what is already in, which cannot be read up to where
    // that one was read. A pushed body is complete: it is kept in quarantine and said, not
    // answered "send again" for ever.
    let mut first = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    first.write_all(text.as_bytes()).unwrap();
    let first = first.finish().unwrap();
    let (status, v) = send(post(Some("gzip"), first[..first.len() / 2].to_vec())).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (v["corrupt"].as_u64(), v["valid"].as_u64()),
        (Some(1), Some(0)),
        "{v}"
    );
    assert_eq!(event_rows(&lake).len(), taken);
    // Brotli is not read.
    let (status, _) = send(post(Some("br"), b"x".to_vec())).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(event_rows(&lake).len(), taken);
}

#[test]
fn the_stream_analyses_games_in_the_background_and_detects_again() {
    let (_, follow, lake_dir) = fresh_dirs("stream-analysis");
    std::fs::copy(crate::common::shared_sample(), follow.join("s.jsonl")).unwrap();
    let lake = vigie::catalog::open(&lake_dir).unwrap();
    let mut opts = vigie::stream::StreamOptions::new(follow, root().join("queries/detect").into());
    opts.commit_interval = Duration::from_millis(50);
    opts.detect_interval = Duration::from_millis(200);
    // Every eligible game, small budgets (the test binary is not optimised), the whole core.
    let mut a = vigie::stream::StreamAnalysis::new(1.0, 2_000, 1.0);
    a.options.shallow_depth = 2;
    opts.analysis = Some(a);
    let lines = lines_of(&crate::common::shared_sample()).len();
    let stop = AtomicBool::new(false);
    let (eligible, report) = std::thread::scope(|s| {
        let run = s.spawn(|| vigie::stream::run(&lake, &opts, &stop));
        // Until every line is in and every eligible game (finished, rated, standard draughts) judged.
        let count = |sql: &str| sql_text(&lake_dir, sql)[0][0].parse::<usize>().unwrap();
        let started = Instant::now();
        let eligible = loop {
            if event_count(&lake_dir) == lines {
                let eligible = count(
                    "SELECT count(*) FROM games WHERE kind IN ('draughts10', 'draughts8') \
                     AND mode = 'standard' AND rated AND closed AND finished",
                );
                let judged = count("SELECT count(DISTINCT game) FROM move_analysis");
                if eligible > 0 && judged == eligible {
                    break eligible;
                }
            }
            if started.elapsed() > Duration::from_secs(600) {
                // Stop the stream first: the scope waits for it.
                stop.store(true, Ordering::Relaxed);
                panic!("not every eligible game judged");
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        stop.store(true, Ordering::Relaxed);
        (eligible, run.join().unwrap().unwrap())
    });
    assert_eq!(report.games_analysed as usize, eligible, "{report:?}");
    assert!(report.analysis_rounds >= eligible.div_ceil(4) as u64);
    assert_eq!(report.analysis_errors, 0);
    // Each accepted move judged once, and detection ran after the last analysis.
    let rows = sql_text(
        &lake_dir,
        "SELECT count(*), count(DISTINCT concat(game, ':', CAST(seq AS VARCHAR))) FROM move_analysis",
    );
    assert_eq!(rows[0][0], rows[0][1]);
    let moves = sql_text(
        &lake_dir,
        "SELECT count(*) FROM moves WHERE accepted AND action = 'move' \
         AND game IN (SELECT DISTINCT game FROM move_analysis)",
    );
    assert_eq!(rows[0][0], moves[0][0]);
    let state = lake.state().unwrap();
    let ops: Vec<String> = (1..=state.version)
        .map(|v| lake.read_commit(v).unwrap().op)
        .collect();
    let last = |op: &str| ops.iter().rposition(|o| o == op);
    assert!(last("analyse").is_some(), "{ops:?}");
    assert!(last("detect") > last("analyse"), "{ops:?}");
    let detected = sql_text(
        &lake_dir,
        "SELECT count(*) FROM flags WHERE rule = 'engine_assistance'",
    );
    assert_eq!(
        detected[0][0], "0",
        "too few games for the rule, but it ran"
    );
    assert!(report.detections >= 2, "{report:?}");
}
