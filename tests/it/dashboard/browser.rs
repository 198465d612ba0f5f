//! Drives real headless Chromium (Python + selenium, `tests/browser/review_flow.py`) against a live server on a free port with the fake data, a demo reviewer and an analyst; screenshots go to `target/screenshots/`.
//!
//! Needs `python3` with selenium (installed with pip when missing) and
//! Debian's `chromium` and `chromium-driver`; without them the test fails
//! with the command to run, it never passes silently.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use vigie::serve::fake::FakeData;
use vigie::serve::{AppState, Config, router, serve_on};

use super::common::{PASSWORD, TempDir, users_file};

fn python_with_selenium() -> String {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let has = |p: &str| {
        Command::new(p)
            .args(["-c", "import selenium"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has(&python) {
        eprintln!("selenium missing: installing it with pip");
        let _ = Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "selenium"])
            .status();
    }
    assert!(
        has(&python),
        "the browser test needs Python 3 with selenium: `{python} -m pip install selenium` failed or {python} is missing"
    );
    python
}

fn check_browser() {
    let chrome = std::env::var("CHROME_BIN").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let driver =
        std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".to_owned());
    for (path, pkg) in [(&chrome, "chromium"), (&driver, "chromium-driver")] {
        assert!(
            std::path::Path::new(path).exists(),
            "the browser test needs {path}: run `apt-get install -y chromium chromium-driver` (package {pkg})"
        );
    }
}

#[test]
fn review_flow_in_headless_chromium() {
    check_browser();
    let python = python_with_selenium();
    let dir = TempDir::new("browser");
    let users = users_file(&dir.0);
    let data = FakeData::with_audit_file(&dir.0.join("audit.jsonl")).expect("fake data");
    let ids = data.sample_ids().expect("ids");
    let state = AppState::new(
        Config {
            users_file: users,
            ..Config::default()
        },
        Arc::new(data),
    )
    .expect("state");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = rt.spawn(serve_on(listener, router(state), async {
        let _ = stop_rx.await;
    }));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target =
        std::env::var("CARGO_TARGET_DIR").map_or_else(|_| root.join("target"), PathBuf::from);
    let shots = target.join("screenshots");
    let out = Command::new(&python)
        .arg(root.join("tests/browser/review_flow.py"))
        .args(["--base-url", &format!("http://{addr}")])
        .args(["--reviewer", &format!("rita:{PASSWORD}")])
        .args(["--analyst", &format!("ana:{PASSWORD}")])
        .args([
            "--account",
            &ids.account,
            "--flag",
            &ids.flag,
            "--game",
            &ids.game,
        ])
        .args(["--seq", &ids.seq.to_string()])
        .arg("--screenshots")
        .arg(&shots)
        .output()
        .expect("run the browser script");
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "browser script failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(shots.join("05-audit.png").exists());
}
