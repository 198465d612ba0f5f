//! SQL attacks on every path (CLI, console, PostgreSQL wire): a deep expression, quadratic and value-building functions, long queries, several statements, connection slots, and the audit log by role.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use super::{PASSWORD, Server, encode, have, psql_at, scratch, stderr, while_serving};
use crate::common::{sample_lake, vigie};

/// The probe's crash: 2,000 terms of `1+1+...`, about 4 KB.
fn deep() -> String {
    format!("SELECT 1{}", "+1".repeat(2_000))
}

/// Quadratic: 10^10 cell updates in one call.
const LEVENSHTEIN: &str =
    "SELECT levenshtein(repeat('a', 100000), repeat(c, 100000)) FROM (VALUES ('b')) t(c)";
/// 800 MB built at plan time from a 40-byte query.
const HUGE: &str = "SELECT length(repeat(repeat('x', 100000000), 8))";
/// Values each under the cap, concatenated past it by the `||` operator.
fn concat_bomb() -> String {
    format!(
        "SELECT length({})",
        vec!["repeat('x', 6000000)"; 40].join(" || ")
    )
}
/// A list of ten million elements joined with a kilobyte each.
const JOIN_BOMB: &str = "SELECT length(array_to_string(range(1, 10000000), repeat('x', 1000)))";
/// The second probe's (2026-12-07): 2.2 KB of CTEs, each reading the previous one twice (2^40
/// blocks once planned).
fn doubling_ctes() -> String {
    let mut q = String::from("WITH t0 AS (SELECT 1 AS x)");
    for i in 1..=40 {
        q.push_str(&format!(
            ", t{i} AS (SELECT x FROM t{p} UNION ALL SELECT x FROM t{p})",
            p = i - 1
        ));
    }
    q + " SELECT count(*) FROM t40"
}
/// 3,000 slices of a slice: one flat expression to the parser, minutes of planning.
fn slice_chain() -> String {
    format!(
        "SELECT cardinality(x{}) FROM (SELECT make_array(a.think_ms) AS x FROM moves a) t",
        "[1:1]".repeat(3_000)
    )
}
/// 150 bytes: an 800 KB constant copied by a CASE into 20,000 rows (16 GB, an abort).
const CASE_BOMB: &str = "SELECT length(max(s)) FROM (SELECT CASE WHEN i >= 0 THEN arrow_cast(repeat('x', 800000), 'LargeUtf8') END AS s FROM (SELECT unnest(range(20000)) AS i)) t";
/// Slow without being a row bomb: a three-way cross join of the sample's events.
const SLOW: &str =
    "SELECT count(*) FROM events a, events b, events c WHERE a.seq + b.seq + c.seq = -1";

#[test]
fn the_cli_refuses_what_would_crash_it_or_outlast_its_limits() {
    let lake = sample_lake().to_string_lossy().into_owned();
    let sql = |args: &[&str]| {
        let mut all = vec!["sql", "--lake", lake.as_str()];
        all.extend_from_slice(args);
        vigie(&all)
    };
    // The deep expression: a clear SQL error (exit 2), said once, not an abort (134).
    let q = deep();
    let out = sql(&[&q]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("nested more than").count(), 1, "{err}");
    // The same from a file.
    let file = super::scratch("cli-sql").join("deep.sql");
    std::fs::write(&file, &q).unwrap();
    let out = sql(&["-f", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nested more than"));
    // Longer than the size limit.
    let long = format!("SELECT '{}'", "x".repeat(70_000));
    assert!(stderr(&sql(&[&long])).contains("bytes long"));
    // The quadratic call is refused before it runs, whatever the time limit.
    let out = sql(&["--timeout", "3", LEVENSHTEIN]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("pairs of elements"),
        "{}",
        stderr(&out)
    );
    // Values past the memory budget are refused, however they are built.
    for q in [HUGE.to_owned(), concat_bomb(), JOIN_BOMB.to_owned()] {
        let out = sql(&["--memory-mb", "64", &q]);
        assert!(!out.status.success(), "{q} ran");
        assert!(
            stderr(&out).contains("would take about"),
            "{q}: {}",
            stderr(&out)
        );
    }
    // What planned without bound, and the constant copied into every row: refused before running.
    for (q, why) in [
        (doubling_ctes(), "common table expression"),
        (slice_chain(), "subscripts"),
        (CASE_BOMB.to_owned(), "copied into every row"),
    ] {
        let out = sql(&["--timeout", "10", &q]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(why), "{why}: {}", stderr(&out));
    }
    // Under the budget the same functions work.
    let out = sql(&[
        "--format",
        "csv",
        "SELECT length(repeat('ab', 1000)) || 'z' AS n",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2000z"));
    // One statement at a time; SHOW and unnest work as documented.
    assert!(stderr(&sql(&["SELECT 1; SELECT 2"])).contains("one statement at a time"));
    let out = sql(&["SHOW TABLES"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("events"));
    let out = sql(&["--format", "csv", "SELECT unnest(make_array(1, 2, 3)) AS v"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 4);
    // A mistyped lake is an error, and nothing is created.
    let typo = super::scratch("typo").join("no-such-lake");
    let out = vigie(&["sql", "--lake", typo.to_str().unwrap(), "SELECT 1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not a Vigie lake"),
        "{}",
        stderr(&out)
    );
    assert!(!typo.exists(), "vigie sql created {}", typo.display());
}

#[test]
fn the_server_answers_every_sql_attack_and_keeps_serving() {
    if !have(
        "psql",
        "the_server_answers_every_sql_attack_and_keeps_serving",
    ) || !have(
        "curl",
        "the_server_answers_every_sql_attack_and_keeps_serving",
    ) {
        return;
    }
    let mut server = Server::start(
        "sql-attacks",
        &["--sql-timeout", "3", "--sql-memory-mb", "64"],
    );
    let web = server.login("ana");
    // Warm up every path (the dashboard's cache, a console session, a pg session), then measure.
    let csrf = web.csrf();
    assert_eq!(
        web.post("/sql", &[("csrf", &csrf), ("sql", "SELECT 1")])
            .status,
        200
    );
    assert!(
        server
            .psql("ana", "SELECT count(*) FROM events")
            .status
            .success()
    );
    let rss_before = server.peak_rss_kib();
    let q = deep();
    // Over the wire, while /healthz and another session answer.
    let (out, slowest) = while_serving(&server, Duration::from_secs(2), || server.psql("ana", &q));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("nested more than"),
        "{}",
        stderr(&out)
    );
    println!("deep over pg: slowest check {slowest:?}");
    // Through the console: GET /sql?q= and POST /sql.
    let r = web.get(&format!("/sql?q={}", encode(&q)));
    assert!(
        r.body.contains("nested more than"),
        "{} {}",
        r.status,
        &r.body[..r.body.len().min(300)]
    );
    let csrf = web.csrf();
    let r = web.post("/sql", &[("csrf", &csrf), ("sql", &q)]);
    assert!(r.body.contains("nested more than"), "{}", r.status);
    // The quadratic function, on both paths.
    let (out, _) = while_serving(&server, Duration::from_secs(2), || {
        server.psql("ana", LEVENSHTEIN)
    });
    assert!(
        stderr(&out).contains("pairs of elements"),
        "{}",
        stderr(&out)
    );
    let r = web.post("/sql", &[("csrf", &csrf), ("sql", LEVENSHTEIN)]);
    assert!(r.body.contains("pairs of elements"), "{}", r.status);
    // Values over the 64 MiB budget: refused, and the server's memory does not jump.
    for q in [HUGE.to_owned(), concat_bomb(), JOIN_BOMB.to_owned()] {
        let (out, _) = while_serving(&server, Duration::from_secs(2), || server.psql("ana", &q));
        assert!(
            stderr(&out).contains("would take about"),
            "{q}: {}",
            stderr(&out)
        );
    }
    let r = web.post("/sql", &[("csrf", &csrf), ("sql", HUGE)]);
    assert!(r.body.contains("would take about"), "{}", r.status);
    let grown = server.peak_rss_kib().saturating_sub(rss_before);
    assert!(
        grown < 256 * 1024,
        "the server's peak memory grew by {grown} KiB"
    );
    // A genuinely slow query is stopped at the 3 s limit while others are served.
    let (out, _) = while_serving(&server, Duration::from_secs(2), || server.psql("ana", SLOW));
    assert!(
        stderr(&out).contains("canceling statement"),
        "{}",
        stderr(&out)
    );
    let r = web.post("/sql", &[("csrf", &csrf), ("sql", SLOW)]);
    assert!(r.body.contains("longer than"), "{}", r.status);
    // Several statements are refused over the wire too, as documented, also behind a statement
    // only the wire library reads (it ran the deep query past every check).
    for q in [
        "SELECT 1; SELECT 2".to_owned(),
        format!("ABORT; {}", deep()),
    ] {
        let out = server.psql("ana", &q);
        assert!(
            stderr(&out).contains("one statement at a time"),
            "{}",
            stderr(&out)
        );
    }
    assert!(server.alive(), "the server died");
    assert!(server.healthy_within(Duration::from_secs(2)));
}

/// A PostgreSQL startup and cleartext password exchange on a raw socket: the open
/// connection, or the server's (severity, SQLSTATE, message).
fn raw_login(
    addr: SocketAddr,
    user: &str,
    password: &str,
) -> Result<TcpStream, (String, String, String)> {
    let io = |e: std::io::Error| ("IO".to_owned(), String::new(), e.to_string());
    let mut s = TcpStream::connect(addr).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(io)?;
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes());
    for (k, v) in [("user", user), ("database", "vigie")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).map_err(io)?;
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).map_err(io)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut payload = vec![0u8; len.saturating_sub(4)];
        s.read_exact(&mut payload).map_err(io)?;
        match head[0] {
            b'R' if payload.get(..4) == Some(&3u32.to_be_bytes()) => {
                let mut p = vec![b'p'];
                p.extend_from_slice(&((password.len() + 5) as u32).to_be_bytes());
                p.extend_from_slice(password.as_bytes());
                p.push(0);
                s.write_all(&p).map_err(io)?;
            }
            b'Z' => return Ok(s),
            b'E' => {
                let mut fields = std::collections::HashMap::new();
                for f in payload.split(|b| *b == 0).filter(|f| !f.is_empty()) {
                    fields.insert(f[0], String::from_utf8_lossy(&f[1..]).into_owned());
                }
                let get = |k: u8| fields.get(&k).cloned().unwrap_or_default();
                return Err((get(b'S'), get(b'C'), get(b'M')));
            }
            _ => {}
        }
    }
}

#[test]
fn pg_slots_are_taken_only_after_authentication() {
    if !have("psql", "pg_slots_are_taken_only_after_authentication") {
        return;
    }
    let server = Server::start(
        "pg-slots",
        &["--pg-max-connections", "2", "--pg-handshake-timeout", "1"],
    );
    // Forty connections that never authenticate take no slot...
    let idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(server.pg).expect("connect"))
        .collect();
    let out = server.psql("ana", "SELECT 1");
    assert!(out.status.success(), "{}", stderr(&out));
    // ...and are closed once the handshake time is up.
    std::thread::sleep(Duration::from_millis(2_500));
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 16];
        assert!(
            matches!(s.read(&mut buf), Ok(0) | Err(_)),
            "an unauthenticated connection is still open"
        );
    }
    // Two authenticated connections fill the slots; the third is told why, with SQLSTATE 53300.
    let a = raw_login(server.pg, "ana", PASSWORD).expect("first login");
    let b = raw_login(server.pg, "adam", PASSWORD).expect("second login");
    let (severity, code, message) =
        raw_login(server.pg, "ana", PASSWORD).expect_err("a third connection was admitted");
    assert_eq!(
        (severity.as_str(), code.as_str()),
        ("FATAL", "53300"),
        "{message}"
    );
    assert!(message.contains("too many connections"), "{message}");
    let out = psql_at(server.pg, "ana", "SELECT 1");
    assert!(
        stderr(&out).contains("too many connections"),
        "{}",
        stderr(&out)
    );
    // A wrong password is refused as such, and takes no slot either.
    let (_, code, _) = raw_login(server.pg, "ana", "wrong").expect_err("wrong password admitted");
    assert_eq!(code, "28P01");
    // A slot given back is free again.
    drop(a);
    std::thread::sleep(Duration::from_millis(300));
    let out = server.psql("ana", "SELECT 2");
    assert!(out.status.success(), "{}", stderr(&out));
    drop(b);
}

#[test]
fn a_pg_connection_holds_its_snapshot_with_a_lease_until_it_ends() {
    let lake = scratch("pg-lease-lake").join("lake");
    crate::common::copy_dir(sample_lake(), &lake);
    // Leases of other tests' readers of the sample lake, copied unlocked.
    let _ = std::fs::remove_dir_all(lake.join("_vigie/readers"));
    let server = Server::start_on("pg-lease", &lake, &[]);
    let leases = || {
        std::fs::read_dir(lake.join("_vigie/readers"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".lease"))
                    .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert!(leases().is_empty());
    let version = vigie::lake::Lake::open(&lake)
        .unwrap()
        .state()
        .unwrap()
        .version;
    let a = raw_login(server.pg, "ana", PASSWORD).expect("login");
    assert_eq!(leases(), vec![format!("{version}\n")]);
    drop(a);
    let since = std::time::Instant::now();
    while !leases().is_empty() {
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "the lease outlived its connection"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn analysts_do_not_read_the_audit_log_admins_do() {
    if !have("psql", "analysts_do_not_read_the_audit_log_admins_do") {
        return;
    }
    let server = Server::start("audit-by-role", &[]);
    for q in [
        "SELECT count(*) FROM audit_log",
        "SELECT count(*) FROM review_state",
    ] {
        let out = server.psql("ana", q);
        assert!(!out.status.success(), "an analyst read {q}");
        assert!(stderr(&out).contains("not found"), "{}", stderr(&out));
        let out = server.psql("adam", q);
        assert!(out.status.success(), "admin: {q}: {}", stderr(&out));
    }
    let out = server.psql("ana", "SELECT count(*) FROM flags");
    assert!(out.status.success(), "{}", stderr(&out));
    if !have(
        "curl",
        "analysts_do_not_read_the_audit_log_admins_do (console)",
    ) {
        return;
    }
    let q = encode("SELECT count(*) AS n FROM audit_log");
    let r = server.login("ana").get(&format!("/sql?q={q}"));
    assert!(r.body.contains("not found"), "{}", r.status);
    let r = server.login("adam").get(&format!("/sql?q={q}"));
    assert!(
        !r.body.contains("not found") && r.status == 200,
        "{}",
        r.status
    );
}

#[test]
fn pg_messages_over_the_bound_close_their_connection_and_encryption_requests_are_declined() {
    if !have(
        "psql",
        "pg_messages_over_the_bound_close_their_connection_and_encryption_requests_are_declined",
    ) {
        return;
    }
    let server = Server::start("pg-frames", &[]);
    // psql's defaults ask for TLS and GSS encryption first: declined ("N"), then plain text.
    for mode in ["sslmode=prefer", "gssencmode=prefer sslmode=prefer"] {
        let out = Command::new("psql")
            .arg(format!(
                "host={} port={} user=ana dbname=vigie {mode} connect_timeout=10",
                server.pg.ip(),
                server.pg.port()
            ))
            .args(["-X", "-A", "-t", "-c", "SELECT 41 + 1"])
            .env("PGPASSWORD", PASSWORD)
            .output()
            .expect("psql");
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    }
    // A simple query announcing 200 MB: the connection is closed at its header (nothing of the
    // body needs to be sent), and the server keeps answering others.
    let mut s = raw_login(server.pg, "ana", PASSWORD).expect("login");
    let mut q = vec![b'Q'];
    q.extend_from_slice(&(200u32 << 20).to_be_bytes());
    q.extend_from_slice(b"SELECT 1");
    let _ = s.write_all(&q);
    let mut buf = [0u8; 64];
    // Closed: end of stream or a reset, not the read timeout of a server waiting for the body.
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the connection stayed open: {other:?}"),
    }
    let out = server.psql("ana", "SELECT 1");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_fatal_protocol_error_gives_the_connection_slot_back() {
    if !have(
        "psql",
        "a_fatal_protocol_error_gives_the_connection_slot_back",
    ) {
        return;
    }
    let server = Server::start("pg-fatal", &["--pg-max-connections", "1"]);
    for round in 0..3 {
        // A Describe of an unknown kind ('Z'): the wire library ends the session with a FATAL
        // error and closes its side; the relay must close the connection, and the slot is free.
        let mut s = raw_login(server.pg, "ana", PASSWORD).expect("login");
        let mut d = vec![b'D'];
        d.extend_from_slice(&6u32.to_be_bytes());
        d.extend_from_slice(b"Z\0");
        s.write_all(&d).unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        assert!(all.contains(&b'E'), "round {round}: no error sent");
        drop(s);
        std::thread::sleep(Duration::from_millis(300));
        let out = server.psql("ana", "SELECT 1");
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
    }
}
