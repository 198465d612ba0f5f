//! HTTP attacks on `vigie serve`: open redirects (curl and headless Chromium), slowloris, unauthenticated and oversized uploads to `/ingest`, cookies, headers and CSV formulas.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{PASSWORD, Server, have, while_serving};

/// The probe's bypass: a tab (browsers drop it) then a backslash (browsers read it as `/`).
const EVIL_NEXT: &str = "/%09%5Cevil.example/healthz";

/// Status and `Location` of a request with a session's cookies, without following redirects.
fn location(server: &Server, jar: &std::path::Path, path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "--max-time", "10", "-b"])
        .arg(jar)
        .args(["-w", "%{http_code} %header{location}"])
        .arg(format!("http://{}{path}", server.http))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, loc) = text.split_once(' ').unwrap_or((&text, ""));
    (code.parse().unwrap_or(0), loc.trim().to_owned())
}

#[test]
fn redirects_after_login_stay_on_the_site() {
    if !have("curl", "redirects_after_login_stay_on_the_site") {
        return;
    }
    let server = Server::start("redirect", &[]);
    let _web = server.login("rita");
    let jar = server.dir.join("rita.cookies");
    for next in [
        EVIL_NEXT,
        "/%0A/evil.example",
        "//evil.example",
        "/%5C%5Cevil.example",
        "https://evil.example/",
        "/%20/evil.example",
    ] {
        let (code, loc) = location(&server, &jar, &format!("/login?next={next}"));
        assert_eq!((code, loc.as_str()), (302, "/queue"), "next={next}");
    }
    // A same-origin path is still honoured.
    let (code, loc) = location(&server, &jar, "/login?next=/audit%3Fpage%3D2");
    assert_eq!((code, loc.as_str()), (302, "/audit?page=2"));
    // The login form carries the refused target as the default, never the attacker's.
    let page = Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .arg(format!("http://{}/login?next={EVIL_NEXT}", server.http))
        .output()
        .expect("curl");
    let html = String::from_utf8_lossy(&page.stdout);
    assert!(!html.contains("evil.example"), "the form kept the target");

    // In a real browser: log in through the form with the attacker's link, then follow it again.
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/redirect.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let selenium = Command::new(&python)
        .args(["-c", "import selenium"])
        .status()
        .is_ok_and(|s| s.success());
    if !selenium || !std::path::Path::new("/usr/bin/chromium").exists() {
        println!(
            "skipped the Chromium half of redirects_after_login_stay_on_the_site: selenium or /usr/bin/chromium is missing (.ci/run installs them)"
        );
        return;
    }
    let out = Command::new(&python)
        .arg(&script)
        .args(["--base-url", &format!("http://{}", server.http)])
        .args(["--user", &format!("rita:{PASSWORD}")])
        .args(["--next", EVIL_NEXT])
        .output()
        .expect("run the redirect script");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether the server closed a socket (EOF, a reset, or a 408 answer and then EOF).
fn closed(s: &mut TcpStream) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn half_sent_requests_are_closed_and_never_lock_out_other_clients() {
    let test = "half_sent_requests_are_closed_and_never_lock_out_other_clients";
    if !have("curl", test) || !have("psql", test) {
        return;
    }
    let server = Server::start(
        "slowloris",
        &[
            "--http-header-timeout",
            "2",
            "--http-max-connections",
            "200",
        ],
    );
    // 1,000 connections (five times the cap), each holding a request whose headers never end,
    // trickling one more header byte every half second.
    let (mut held, slowest) = while_serving(&server, Duration::from_secs(2), || {
        let mut socks: Vec<TcpStream> = (0..1_000)
            .filter_map(|_| TcpStream::connect(server.http).ok())
            .collect();
        for s in &mut socks {
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-a: ");
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(4) {
            for s in &mut socks {
                let _ = s.write_all(b"a");
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        socks
    });
    assert!(
        slowest < Duration::from_secs(2),
        "slowest check {slowest:?}"
    );
    // Every half-sent request was closed: evicted to make room, or at its header timeout.
    std::thread::sleep(Duration::from_millis(500));
    let open = held.iter_mut().map(closed).filter(|c| !c).count();
    assert_eq!(open, 0, "{open} half-sent requests still open after 4.5 s");
    assert!(server.healthy_within(Duration::from_secs(2)));
}

/// Starts a server with `POST /ingest` on a copy-free scratch lake token.
fn push_server(tag: &str) -> (Server, String) {
    let token = "push-token-of-the-test";
    let file = super::scratch(&format!("{tag}-token")).join("token");
    std::fs::write(&file, token).expect("token file");
    let server = Server::start(tag, &["--ingest-token-file", file.to_str().expect("utf-8")]);
    (server, token.to_owned())
}

/// Sends a request head (and optionally part of a body) and reads the status line within 5 s.
fn status_of_head(server: &Server, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(server.http).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(head.as_bytes()).expect("head");
    let _ = s.write_all(body);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// `POST /ingest` of a file with `curl` and a bearer token; the HTTP status as curl printed it.
fn upload(server: &Server, token: &str, body: &std::path::Path, extra: &[&str]) -> String {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "60",
        ])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(extra)
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!("http://{}/ingest", server.http))
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn ingest_refuses_before_reading_and_bounds_what_it_reads() {
    let test = "ingest_refuses_before_reading_and_bounds_what_it_reads";
    if !have("curl", test) || !have("psql", test) {
        return;
    }
    let (server, token) = push_server("push-limits");
    // Unauthenticated: refused on the head, before a byte of the announced 64 MiB body arrives.
    let head = "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n";
    let t = Instant::now();
    let (code, text) = status_of_head(&server, head, b"");
    assert_eq!(code, 401, "{text}");
    assert!(t.elapsed() < Duration::from_secs(5));
    // Security headers on /ingest too.
    let lower = text.to_ascii_lowercase();
    assert!(lower.contains("x-content-type-options: nosniff"), "{text}");
    assert!(lower.contains("content-security-policy:"), "{text}");
    // Eight unauthenticated 32 MiB uploads at once add no memory worth speaking of.
    let big = super::scratch("push-limits-body").join("big.jsonl");
    std::fs::write(&big, vec![b'x'; 32 << 20]).expect("body file");
    // Warm up what the checks below use (pg sessions, the dashboard), then measure.
    let _ = while_serving(&server, Duration::from_secs(2), || {
        std::thread::sleep(Duration::from_secs(1))
    });
    let before = server.peak_rss_kib();
    let (codes, _) = while_serving(&server, Duration::from_secs(2), || {
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| upload(&server, "wrong", &big, &[])))
                .collect();
            runs.into_iter()
                .map(|r| r.join().expect("upload"))
                .collect::<Vec<_>>()
        })
    });
    assert!(codes.iter().all(|c| c == "401"), "{codes:?}");
    let grown = server.peak_rss_kib().saturating_sub(before);
    assert!(grown < 48 << 10, "peak RSS grew by {grown} KiB");
    // With the token: a body announced over the cap is refused on the head, and one that
    // grows past it while streaming is refused too, without being committed.
    let auth = format!("Authorization: Bearer {token}\r\n");
    let head =
        format!("POST /ingest HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 67108865\r\n\r\n");
    assert_eq!(status_of_head(&server, &head, b"").0, 413);
    let over = super::scratch("push-limits-over").join("over.jsonl");
    std::fs::write(&over, vec![b'\n'; (64 << 20) + 1]).expect("body file");
    assert_eq!(
        upload(
            &server,
            &token,
            &over,
            &["-H", "Transfer-Encoding: chunked"]
        ),
        "413"
    );
    // Bodies read at once are capped: four slow uploads hold the slots, the fifth is told to retry.
    let slow_head =
        format!("POST /ingest HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 1000\r\n\r\n");
    let slow: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(server.http).expect("connect");
            s.write_all(slow_head.as_bytes()).expect("head");
            s.write_all(b"{").expect("a byte");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (code, text) = status_of_head(&server, &slow_head, b"");
    assert_eq!(code, 503, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    drop(slow);
    // The spool keeps nothing of the refused or abandoned bodies.
    let inbox = crate::common::sample_lake().join("_vigie/inbox");
    let left = || std::fs::read_dir(&inbox).map_or(0, |d| d.count());
    let t = Instant::now();
    while left() > 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left(), 0, "spool files left in {}", inbox.display());
}

#[test]
fn cookies_are_secure_when_asked_and_csv_cells_are_not_formulas() {
    if !have(
        "curl",
        "cookies_are_secure_when_asked_and_csv_cells_are_not_formulas",
    ) {
        return;
    }
    let head = |server: &Server| {
        let out = Command::new("curl")
            .args(["-s", "-D", "-", "-o", "/dev/null", "--max-time", "10"])
            .arg(format!("http://{}/login", server.http))
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout).to_ascii_lowercase()
    };
    let plain = Server::start("cookies-loopback", &[]);
    let h = head(&plain);
    assert!(h.contains("set-cookie:") && !h.contains("; secure"), "{h}");
    let web = plain.login("ana");
    let csrf = web.csrf();
    let r = web.post(
        "/sql/csv",
        &[
            ("csrf", &csrf),
            (
                "sql",
                "SELECT '=HYPERLINK(\"http://evil\")' AS a, '-1.5' AS b, '@x' AS c",
            ),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let row = r.body.lines().nth(1).unwrap_or_default().to_owned();
    assert_eq!(row, "\"'=HYPERLINK(\"\"http://evil\"\")\",-1.5,\"'@x\"");
    drop(plain);
    let secure = Server::start("cookies-secure", &["--secure-cookies"]);
    let h = head(&secure);
    assert!(h.contains("set-cookie:") && h.contains("; secure"), "{h}");
}
