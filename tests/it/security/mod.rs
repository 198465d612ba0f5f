//! The attacks of the security probe (issue 19), replayed against a real `vigie serve` process and the real CLI with real clients (`curl`, `psql`).
//!
//! Each attack must get a clear refusal or be stopped within its limit, and
//! the server must keep serving other clients meanwhile: every server test
//! checks `/healthz` and a second PostgreSQL session during the attack.

mod cli;
mod files;
mod http;
mod sql;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use vigie::serve::users::{Role, add_user};

use crate::common::sample_lake;

/// Password of the test staff.
pub const PASSWORD: &str = "security-test-pw-1";

/// A scratch directory under the test target dir, emptied first.
pub fn scratch(tag: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("security-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Whether an external tool runs; prints why a test skips when it does not.
pub fn have(tool: &str, test: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("skipped {test}: `{tool}` is not installed (.ci/run installs it)");
    }
    ok
}

/// A `vigie serve` process over the sample lake, with the dashboard and the PostgreSQL endpoint on free ports.
pub struct Server {
    child: Child,
    pub http: SocketAddr,
    pub pg: SocketAddr,
    pub dir: PathBuf,
}

impl Server {
    /// Starts `vigie serve` with extra arguments; staff: ana (analyst), adam (admin), rita (reviewer).
    pub fn start(tag: &str, extra: &[&str]) -> Server {
        Server::start_on(tag, sample_lake(), extra)
    }

    /// [`Server::start`] on the lake `lake`.
    pub fn start_on(tag: &str, lake: &Path, extra: &[&str]) -> Server {
        let dir = scratch(tag);
        let users = dir.join("users.json");
        for (name, role) in [
            ("ana", Role::Analyst),
            ("adam", Role::Admin),
            ("rita", Role::Reviewer),
        ] {
            add_user(&users, name, role, PASSWORD).expect("add user");
        }
        let lake = lake.to_string_lossy().into_owned();
        let mut child = Command::new(crate::common::vigie_bin())
            .args(["serve", "--lake", &lake, "--addr", "127.0.0.1:0"])
            .args(["--pg", "127.0.0.1:0", "--users"])
            .arg(&users)
            .args(extra)
            .env("VIGIE_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start vigie serve");
        let stdout = child.stdout.take().expect("stdout");
        let (mut http, mut pg) = (None, None);
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let line = line.expect("serve output");
            let addr = |prefix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|rest| rest.split([' ', '/']).next())
                    .and_then(|a| a.parse::<SocketAddr>().ok())
            };
            if let Some(a) = addr("serve: PostgreSQL endpoint on ") {
                pg = Some(a);
            }
            if let Some(a) = addr("serve: dashboard on http://") {
                http = Some(a);
                break;
            }
        }
        // Keep reading what it prints later: a closed pipe would fail the server's next line.
        std::thread::spawn(move || lines.for_each(drop));
        Server {
            child,
            http: http.expect("dashboard address in the output"),
            pg: pg.expect("pg address in the output"),
            dir,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Peak resident memory of the server so far, in KiB (`VmHWM`).
    pub fn peak_rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(0)
    }

    /// `GET /healthz` with `curl`, within `limit`: true when it answered 200.
    pub fn healthy_within(&self, limit: Duration) -> bool {
        let out = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time"])
            .arg(format!("{:.1}", limit.as_secs_f64()))
            .arg(format!("http://{}/healthz", self.http))
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout) == "200"
    }

    /// Runs one statement with `psql` as `user`.
    pub fn psql(&self, user: &str, sql: &str) -> Output {
        psql_at(self.pg, user, sql)
    }

    /// A logged-in `curl` session of `user`.
    pub fn login(&self, user: &str) -> Web {
        let web = Web {
            base: format!("http://{}", self.http),
            jar: self.dir.join(format!("{user}.cookies")),
        };
        let page = web.get("/login");
        let csrf = form_token(&page.body).expect("login form token");
        let r = web.post(
            "/login",
            &[("username", user), ("password", PASSWORD), ("csrf", &csrf)],
        );
        assert!(
            r.status == 303 || r.status == 302,
            "login of {user}: {} {}",
            r.status,
            r.body
        );
        web
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one statement with `psql` against an endpoint.
pub fn psql_at(addr: SocketAddr, user: &str, sql: &str) -> Output {
    Command::new("psql")
        .arg(format!(
            "host={} port={} user={user} dbname=vigie sslmode=disable connect_timeout=10",
            addr.ip(),
            addr.port()
        ))
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env("PGPASSWORD", PASSWORD)
        .output()
        .expect("psql")
}

/// An HTTP response read by `curl`.
pub struct Reply {
    pub status: u16,
    pub body: String,
}

/// A `curl` session with a cookie jar.
pub struct Web {
    base: String,
    jar: PathBuf,
}

impl Web {
    fn run(&self, args: &[&str], path: &str) -> Reply {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "60", "-b"])
            .arg(&self.jar)
            .arg("-c")
            .arg(&self.jar)
            .args(["-w", "\n%{http_code}"])
            .args(args)
            .arg(format!("{}{path}", self.base))
            .output()
            .expect("curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        Reply {
            status: code.trim().parse().unwrap_or(0),
            body: body.to_owned(),
        }
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Reply {
        self.run(&[], path)
    }

    /// `POST path` with an urlencoded form.
    pub fn post(&self, path: &str, form: &[(&str, &str)]) -> Reply {
        let mut args = Vec::new();
        for (k, v) in form {
            args.push("--data-urlencode".to_owned());
            args.push(format!("{k}={v}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&args, path)
    }

    /// The session's CSRF token, read from a page's form.
    pub fn csrf(&self) -> String {
        form_token(&self.get("/sql").body).expect("csrf token on /sql")
    }
}

/// The value of the first `name="csrf"` input of a page.
pub fn form_token(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\"")?;
    let rest = &html[at..];
    let v = rest.find("value=\"")? + 7;
    let end = rest[v..].find('"')?;
    Some(rest[v..v + end].to_owned())
}

/// Percent-encodes a query-string value.
pub fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Runs `attack` on another thread while checking, every 200 ms, that `/healthz` and a second
/// PostgreSQL session answer within `answer`; returns the attack's result and the slowest check.
pub fn while_serving<T: Send>(
    server: &Server,
    answer: Duration,
    attack: impl FnOnce() -> T + Send,
) -> (T, Duration) {
    std::thread::scope(|s| {
        let running = s.spawn(attack);
        let mut slowest = Duration::ZERO;
        let mut checks = 0;
        while !running.is_finished() || checks == 0 {
            let t = Instant::now();
            assert!(
                server.healthy_within(answer),
                "/healthz did not answer within {answer:?} during the attack"
            );
            let out = server.psql("ana", "SELECT 41 + 1");
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "42",
                "a second pg session failed during the attack: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            slowest = slowest.max(t.elapsed());
            checks += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
        (running.join().expect("attack thread"), slowest)
    })
}

/// The text of a command's standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
