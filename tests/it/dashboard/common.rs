//! Shared test helpers: an app over a copy of the lake the real pipeline built from the simulator's sample (ingest, replay, detect), one user per role, requests through the router, sessions and CSRF tokens.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use tower::ServiceExt;
use vigie::serve::data::{DataSource, GameView, QueueQuery};
use vigie::serve::lake_data::LakeData;
use vigie::serve::users::{Role, add_user};
use vigie::serve::{AppState, Config, router};

/// Password of every test user.
pub const PASSWORD: &str = "test-password-1";

/// Test users: (name, role).
pub const USERS: &[(&str, Role)] = &[
    ("rita", Role::Reviewer),
    ("rob", Role::Reviewer),
    ("ana", Role::Analyst),
    ("carl", Role::Compliance),
    ("adam", Role::Admin),
];

/// A fresh temporary directory (removed on drop).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("vigie-it-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes the users file once per directory.
pub fn users_file(dir: &Path) -> PathBuf {
    let path = dir.join("users.json");
    if !path.exists() {
        for (name, role) in USERS {
            add_user(&path, name, *role, PASSWORD).expect("add user");
        }
    }
    path
}

/// The ids a test needs, taken from the lake: the account at the top of the queue, a flag of
/// it with evidence in a game (one with a finding at the event it names when there is one), and that game.
#[derive(Debug, Clone, Default)]
pub struct SampleIds {
    pub account: String,
    pub flag: String,
    pub game: String,
}

/// A runtime for blocking on the data source outside async tests.
fn blocking<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// Finds [`SampleIds`] in a lake's queue.
pub async fn sample_ids(data: &dyn DataSource) -> SampleIds {
    let page = data.queue(&QueueQuery::default()).await.expect("queue");
    let mut first = None;
    for row in &page.items {
        let view = data
            .account(&row.account)
            .await
            .expect("account")
            .expect("account view");
        for f in &view.flags {
            let Some(r) = f.evidence.refs.first() else {
                continue;
            };
            let ids = SampleIds {
                account: row.account.clone(),
                flag: f.id.clone(),
                game: r.game.clone(),
            };
            let game = data.game(&r.game).await.expect("game").expect("game view");
            if game.findings.iter().any(|x| x.seq == r.seq) {
                return ids;
            }
            first.get_or_insert(ids);
        }
    }
    first.expect("a flag with evidence in a game in the sample lake")
}

/// Every game of the sample lake, as the dashboard shows it (read once per test run).
pub fn lake_games() -> &'static [GameView] {
    static GAMES: std::sync::OnceLock<Vec<GameView>> = std::sync::OnceLock::new();
    GAMES.get_or_init(|| {
        let lake = std::thread::spawn(crate::common::sample_lake)
            .join()
            .expect("the sample lake");
        let data = LakeData::new(vigie::lake::Lake::open(lake).expect("lake"));
        let ids = crate::common::sql_text(lake, "SELECT game FROM games ORDER BY game");
        blocking(async {
            let mut out = Vec::new();
            for id in ids {
                out.push(data.game(&id[0]).await.expect("game").expect("game view"));
            }
            out
        })
    })
}

/// An app over the sample lake, copied into `dir/lake` (review actions append to its audit log).
pub struct TestApp {
    pub state: AppState,
    pub router: Router,
    pub ids: SampleIds,
}

impl TestApp {
    pub fn new(dir: &Path) -> TestApp {
        Self::with(dir, |_| {})
    }

    pub fn with(dir: &Path, tweak: impl FnOnce(&mut Config)) -> TestApp {
        Self::build(dir, tweak, None)
    }

    /// An app whose sample ids are already known (when the lake's queue cannot be read).
    pub fn with_ids(dir: &Path, ids: SampleIds) -> TestApp {
        Self::build(dir, |_| {}, Some(ids))
    }

    fn build(dir: &Path, tweak: impl FnOnce(&mut Config), known: Option<SampleIds>) -> TestApp {
        let mut config = Config {
            users_file: users_file(dir),
            metrics_token: Some("metrics-secret".to_owned()),
            ..Config::default()
        };
        tweak(&mut config);
        let lake = dir.join("lake");
        if !lake.exists() {
            // Built once per run by the real pipeline, which starts runtimes of its own: not
            // from inside the test's runtime.
            let sample = std::thread::spawn(crate::common::sample_lake)
                .join()
                .expect("the sample lake");
            crate::common::copy_dir(sample, &lake);
        }
        let data = Arc::new(LakeData::new(vigie::catalog::open(&lake).expect("lake")));
        let ids = match known {
            Some(ids) => ids,
            None => {
                let data = Arc::clone(&data);
                std::thread::spawn(move || blocking(sample_ids(data.as_ref())))
                    .join()
                    .expect("sample ids")
            }
        };
        let state = AppState::new(config, data).expect("app state");
        TestApp {
            router: router(state.clone()),
            state,
            ids,
        }
    }

    /// An app over any data source (the real lake's, in lake.rs).
    pub fn over(
        dir: &Path,
        data: Arc<dyn vigie::serve::DataSource>,
        tweak: impl FnOnce(&mut Config),
    ) -> TestApp {
        let mut config = Config {
            users_file: users_file(dir),
            ..Config::default()
        };
        tweak(&mut config);
        let state = AppState::new(config, data).expect("app state");
        TestApp {
            router: router(state.clone()),
            state,
            ids: SampleIds::default(),
        }
    }

    /// A session for a user without going through the login form: (cookie header, csrf token).
    pub fn session(&self, name: &str, role: Role) -> (String, String) {
        let token = self.state.sessions().create(name, role);
        let csrf = match self.state.sessions().lookup(&token) {
            vigie::serve::auth::SessionLookup::Valid(u) => u.csrf,
            other => panic!("new session not valid: {other:?}"),
        };
        (format!("vigie_session={token}"), csrf)
    }

    pub async fn send(&self, req: Request<Body>) -> Response<Body> {
        self.router
            .clone()
            .oneshot(req)
            .await
            .expect("infallible router")
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Response<Body> {
        let mut b = Request::get(path);
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        self.send(b.body(Body::empty()).expect("request")).await
    }

    pub async fn post(&self, path: &str, cookie: Option<&str>, form: &str) -> Response<Body> {
        let mut b =
            Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        self.send(b.body(Body::from(form.to_owned())).expect("request"))
            .await
    }

    /// Logs in through the form: returns the response of POST /login.
    pub async fn login(
        &self,
        user: &str,
        password: &str,
        extra_headers: &[(&str, &str)],
    ) -> Response<Body> {
        let page = self.get("/login", None).await;
        let cookie = set_cookie(&page, "vigie_login_csrf").expect("login csrf cookie");
        let html = body(page).await;
        let csrf = hidden(&html, "csrf").expect("csrf field");
        let mut b = Request::post("/login")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::COOKIE, format!("vigie_login_csrf={cookie}"));
        for (k, v) in extra_headers {
            b = b.header(*k, *v);
        }
        let form = format!("username={user}&password={password}&csrf={csrf}&next=%2Fqueue");
        self.send(b.body(Body::from(form)).expect("request")).await
    }
}

/// Body as text.
pub async fn body(r: Response<Body>) -> String {
    let bytes = axum::body::to_bytes(r.into_body(), 16 * 1024 * 1024)
        .await
        .expect("body");
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Value of a cookie set by a response.
pub fn set_cookie(r: &Response<Body>, name: &str) -> Option<String> {
    r.headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            v.strip_prefix(&format!("{name}="))
                .map(|rest| rest.split(';').next().unwrap_or("").to_owned())
        })
}

/// Value of a hidden input in a page.
pub fn hidden(html: &str, name: &str) -> Option<String> {
    let key = format!("name=\"{name}\" value=\"");
    let at = html.find(&key)? + key.len();
    Some(html[at..].split('"').next()?.to_owned())
}

/// Location header.
pub fn location(r: &Response<Body>) -> String {
    r.headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// Whether a response sends the visitor to the login page.
pub fn to_login(r: &Response<Body>) -> bool {
    r.status() == StatusCode::FOUND && location(r).starts_with("/login")
}

/// Sleeps (for idle-expiry tests).
pub async fn sleep(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
