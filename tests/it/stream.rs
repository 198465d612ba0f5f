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

/// A lake holding the sample's first three fifths of lines, detected whole by a new [`Derive`],
/// then its last two fifths replayed and detected by a scoped pass: the 20 accounts that play only
/// in the first part keep the features of the first window end. Returns the lake's path, the lake
/// and the derive.
///
/// [`Derive`]: vigie::stream::Derive
fn after_a_scoped_pass(tag: &str) -> (PathBuf, vigie::lake::Lake, vigie::stream::Derive) {
    use vigie::stream::{Derive, StreamReport, commit_final};
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(tag);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let sample = std::fs::read_to_string(crate::common::shared_sample()).unwrap();
    let lines: Vec<&str> = sample.lines().collect();
    let (first, rest) = lines.split_at(lines.len() * 3 / 5);
    let (a, b) = (work.join("a.jsonl"), work.join("b.jsonl"));
    std::fs::write(&a, first.join("\n") + "\n").unwrap();
    std::fs::write(&b, rest.join("\n") + "\n").unwrap();
    let path = work.join("lake");
    let lake = vigie::lake::Lake::open(&path).unwrap();
    commit_final(&lake, &[a]).unwrap();
    let mut derive = Derive::new(vigie::detect::rules::RuleSource::Builtin, Duration::ZERO, 1);
    let mut report = StreamReport::default();
    derive.run(&lake, false, &mut report).unwrap();
    assert!(derive.exact(), "the first run is whole");
    commit_final(&lake, &[b]).unwrap();
    derive.run(&lake, false, &mut report).unwrap();
    assert_eq!((report.replays, report.detections), (2, 2));
    assert!(!derive.exact(), "the second run is scoped");
    assert!(detect_stage(&lake).scoped, "its checkpoint says so");
    (path, lake, derive)
}

/// The lake's detection checkpoint (there is one).
fn detect_stage(lake: &vigie::lake::Lake) -> vigie::detect::DetectStage {
    let state = lake.state().unwrap();
    state
        .stage::<vigie::detect::DetectStage>()
        .unwrap()
        .unwrap()
}

/// A stream's last pass after a scoped one runs detection whole, even with nothing new to replay:
/// the features and flags end as a batch run over the same lake makes them (before, a stream whose
/// lines stopped after its last scoped pass ended with the untouched accounts' features of an
/// older window end).
#[test]
fn the_last_pass_after_a_scoped_one_is_whole() {
    let (path, lake, mut derive) = after_a_scoped_pass("stream-scoped-then-last");
    let scoped = crate::common::table_rows(&path, "account_features");
    let mut report = vigie::stream::StreamReport::default();
    derive.run(&lake, true, &mut report).unwrap();
    assert_eq!(
        (report.replays, report.detections),
        (0, 1),
        "nothing replayed, detection run"
    );
    assert!(derive.exact());
    let features = crate::common::table_rows(&path, "account_features");
    let flags = crate::common::table_rows(&path, "flags");
    assert_ne!(features, scoped, "the scoped pass had left accounts behind");
    assert_batch_detection_makes(
        &path,
        &vigie::detect::rules::RuleSource::Builtin,
        &features,
        &flags,
    );
}

/// Runs a detection forced over the whole of `lake` with `rules`, as a batch run, and checks that
/// it makes `features` and `flags` (rows as [`crate::common::table_rows`] shows them).
fn assert_batch_detection_makes(
    lake: &Path,
    rules: &vigie::detect::rules::RuleSource,
    features: &[String],
    flags: &[String],
) {
    let open = vigie::lake::Lake::open(lake).unwrap();
    let batch = vigie::detect::run_scoped(&open, rules, &Default::default(), None, true).unwrap();
    assert!(batch.version.is_some());
    assert_eq!(
        crate::common::table_rows(lake, "account_features"),
        features
    );
    assert_eq!(crate::common::table_rows(lake, "flags"), flags);
}

/// `vigie detect` after a stream's scoped pass recomputes every account although nothing was
/// replayed since (it used to say "nothing changed" and keep the scoped features); once whole, it
/// is skipped again.
#[test]
fn a_batch_detect_after_a_scoped_pass_is_whole() {
    let (path, lake, _derive) = after_a_scoped_pass("stream-scoped-then-batch");
    let scoped = crate::common::table_rows(&path, "account_features");
    let rules = vigie::detect::rules::RuleSource::Builtin;
    let report = vigie::detect::run(&lake, &rules, &Default::default()).unwrap();
    assert!(!report.unchanged && report.version.is_some(), "{report:?}");
    assert!(!detect_stage(&lake).scoped);
    assert_ne!(crate::common::table_rows(&path, "account_features"), scoped);
    let again = vigie::detect::run(&lake, &rules, &Default::default()).unwrap();
    assert!(again.unchanged, "{again:?}");
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
    // Not finished: the endpoint's threads make their last pass when it is dropped.
    let (lake, app, _) = push_app_configured(tag, rules, |_| {});
    (lake, app)
}

/// [`push_app_with`], its configuration changed by `configure` before the endpoint starts, and the
/// handle that finishes its background work.
fn push_app_configured(
    tag: &str,
    rules: vigie::detect::rules::RuleSource,
    configure: impl FnOnce(&mut vigie::stream::push::PushConfig),
) -> (PathBuf, axum::Router, vigie::stream::push::PushHandle) {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(tag);
    let _ = std::fs::remove_dir_all(&work);
    let lake = work.join("lake");
    vigie::lake::Lake::open(&lake).unwrap();
    let mut cfg = vigie::stream::push::PushConfig::new(lake.clone(), PUSH_TOKEN, rules);
    // The whole detection run at rest comes a second after the last push.
    cfg.rest = Duration::from_secs(1);
    configure(&mut cfg);
    let (app, handle) = vigie::stream::push::router(cfg);
    (lake, app, handle)
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

/// The runs after pushes are scoped as the stream's passes are (the accounts touched and a slice of
/// the others); once the pushes rest, one run recomputes every account: the features and flags at
/// rest are those a batch run makes of the same lake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_rest_a_pushed_lake_has_the_flags_of_a_batch_run() {
    use vigie::detect::DetectStage;
    use vigie::replay::run::ReplayStage;
    // Detection after every run: all but the first are scoped.
    let (lake, app, handle) = push_app_configured(
        "stream-push-rest",
        root().join("queries/detect").into(),
        |cfg| cfg.detect_interval = Duration::ZERO,
    );
    let last = push_in_pieces(&app).await;
    settled(
        &lake,
        Duration::from_secs(1),
        Duration::from_secs(300),
        |state| {
            let replay = state.stage::<ReplayStage>().unwrap();
            let detect = state.stage::<DetectStage>().unwrap();
            let at_rest = replay.as_ref().is_some_and(|r| r.version >= last)
                && detect
                    .as_ref()
                    .is_some_and(|d| !d.scoped && d.replay == replay);
            (!at_rest).then(|| format!("not at rest: replay {replay:?}, detection {detect:?}"))
        },
    )
    .await;
    let (features, flags) = (
        crate::common::table_rows(&lake, "account_features"),
        crate::common::table_rows(&lake, "flags"),
    );
    // The sample is clean: no flag, and every account's features.
    assert!(flags.is_empty() && !features.is_empty());
    assert!(scoped_detections(&lake) > 0, "some runs were scoped");
    // The endpoint gone and its threads done, a batch run forced over the same lake.
    tokio::task::spawn_blocking(move || {
        handle.finish();
        drop(app);
        let rules = root().join("queries/detect").into();
        assert_batch_detection_makes(&lake, &rules, &features, &flags);
    })
    .await
    .unwrap();
}

/// The detection commits of the lake's log that were scoped.
fn scoped_detections(lake: &Path) -> usize {
    let open = vigie::lake::Lake::open(lake).unwrap();
    let latest = open.state().unwrap().version;
    (1..=latest)
        .filter(|&v| {
            let commit = open.read_commit(v).unwrap();
            commit.op == "detect" && commit.stages["detect"]["scoped"] == serde_json::json!(true)
        })
        .count()
}

/// The number of `events` files of each partition.
fn events_files_per_partition(
    state: &vigie::lake::State,
) -> std::collections::BTreeMap<Option<String>, usize> {
    let mut per = std::collections::BTreeMap::new();
    for f in state.table_files("events") {
        *per.entry(f.partition.clone()).or_default() += 1;
    }
    per
}

/// When the server shuts down, the endpoint's last pass replays what was pushed, runs detection
/// whole (the last run was scoped) and merges the small files before [`PushHandle::finish`]
/// returns, as `vigie stream` does on SIGTERM (before, the thread was left to the process's exit).
///
/// [`PushHandle::finish`]: vigie::stream::push::PushHandle::finish
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishing_the_endpoint_replays_detects_and_compacts_what_was_pushed() {
    use vigie::detect::DetectStage;
    use vigie::replay::run::ReplayStage;
    // Detection after every run, and no rest within the test.
    let (lake, app, handle) = push_app_configured(
        "stream-push-finish",
        root().join("queries/detect").into(),
        |cfg| {
            cfg.detect_interval = Duration::ZERO;
            cfg.rest = Duration::from_secs(3600);
        },
    );
    let last = push_in_pieces(&app).await;
    // The last push replayed and detected by a scoped run.
    settled(&lake, Duration::ZERO, Duration::from_secs(300), |state| {
        let replay = state.stage::<ReplayStage>().unwrap();
        let detect = state.stage::<DetectStage>().unwrap();
        let scoped = replay.as_ref().is_some_and(|r| r.version >= last)
            && detect
                .as_ref()
                .is_some_and(|d| d.scoped && d.replay == replay);
        (!scoped).then(|| format!("replay {replay:?}, detection {detect:?}"))
    })
    .await;
    tokio::task::spawn_blocking(move || handle.finish())
        .await
        .unwrap();
    let state = vigie::lake::Lake::open(&lake).unwrap().state().unwrap();
    let replay = state.stage::<ReplayStage>().unwrap();
    assert!(
        replay.as_ref().is_some_and(|r| r.version >= last),
        "{replay:?}"
    );
    let detect = state.stage::<DetectStage>().unwrap().unwrap();
    assert!(!detect.scoped && detect.replay == replay, "{detect:?}");
    let per = events_files_per_partition(&state);
    assert!(per.len() == 3 && per.values().all(|&n| n <= 3), "{per:?}");
    // Finished, the endpoint takes no more pushes.
    use tower::ServiceExt;
    let r = app
        .oneshot(
            axum::http::Request::post("/ingest")
                .header("authorization", format!("Bearer {PUSH_TOKEN}"))
                .body(axum::body::Body::from("{}\n"))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
}

/// A server killed before its last pass leaves pushes committed but not replayed, and spooled
/// bodies in the inbox: started again, the endpoint replays and detects them at once (before,
/// only at the next push) and removes the bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_endpoint_catches_up_what_the_killed_one_left() {
    use vigie::detect::DetectStage;
    use vigie::replay::run::ReplayStage;
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stream-push-restart");
    let _ = std::fs::remove_dir_all(&work);
    let lake = work.join("lake");
    // What the killed server committed: the sample's lines, not replayed.
    crate::common::quiet_ingest(&lake, &crate::common::shared_sample());
    let ingested = vigie::lake::Lake::open(&lake)
        .unwrap()
        .state()
        .unwrap()
        .version;
    // And a body it was reading when killed, two hours ago.
    let inbox = lake.join("_vigie/inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let part = inbox.join(".push-0123456789abcdef.part");
    std::fs::write(&part, "{\"partial\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&part)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    let cfg = vigie::stream::push::PushConfig::new(
        lake.clone(),
        PUSH_TOKEN,
        root().join("queries/detect").into(),
    );
    let (app, handle) = vigie::stream::push::router(cfg);
    assert!(!part.exists(), "the stale spool file is removed");
    // No push: replayed and detected all the same.
    settled(&lake, Duration::ZERO, Duration::from_secs(120), |state| {
        let replay = state.stage::<ReplayStage>().unwrap();
        let detect = state.stage::<DetectStage>().unwrap();
        let done = replay.as_ref().is_some_and(|r| r.version >= ingested)
            && detect
                .as_ref()
                .is_some_and(|d| !d.scoped && d.replay == replay);
        (!done).then(|| format!("replay {replay:?}, detection {detect:?}"))
    })
    .await;
    // The sample is clean: every account's features, no flag.
    assert!(!crate::common::table_rows(&lake, "account_features").is_empty());
    assert!(crate::common::table_rows(&lake, "flags").is_empty());
    tokio::task::spawn_blocking(move || {
        handle.finish();
        drop(app);
    })
    .await
    .unwrap();
}

/// A lake with nothing left undone starts no work: the endpoint over the lake of a batch run
/// writes nothing until a push comes.
#[test]
fn an_endpoint_over_a_lake_with_nothing_left_writes_nothing() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stream-push-nothing-left");
    let _ = std::fs::remove_dir_all(&work);
    let lake = work.join("lake");
    crate::common::copy_dir(crate::common::sample_lake(), &lake);
    let before = vigie::lake::Lake::open(&lake)
        .unwrap()
        .state()
        .unwrap()
        .version;
    let cfg = vigie::stream::push::PushConfig::new(
        lake.clone(),
        PUSH_TOKEN,
        root().join("queries/detect").into(),
    );
    let (app, handle) = vigie::stream::push::router(cfg);
    handle.finish();
    drop(app);
    let after = vigie::lake::Lake::open(&lake)
        .unwrap()
        .state()
        .unwrap()
        .version;
    assert_eq!(before, after);
}

/// Pushes the sample in 40 bodies, each answered 200 with a new version; returns the last version.
async fn push_in_pieces(app: &axum::Router) -> u64 {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
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
    last
}

/// Pushes the sample in 40 bodies ([`push_in_pieces`]), then waits until the lake settles
/// ([`settled`]): the last push replayed, at most three events files in each of its three
/// partitions, and no commit for a second. Checks every line kept once and the Delta logs; returns
/// the settled state.
async fn push_in_pieces_until_settled(
    lake: &Path,
    app: axum::Router,
) -> std::sync::Arc<vigie::lake::State> {
    let files_per_partition = events_files_per_partition;
    let last = push_in_pieces(&app).await;
    let lines = std::fs::read_to_string(crate::common::shared_sample())
        .unwrap()
        .lines()
        .count();
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
    assert_eq!(events.len(), lines, "every line kept");
    events.sort();
    events.dedup();
    assert_eq!(events.len(), lines, "none twice");
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
