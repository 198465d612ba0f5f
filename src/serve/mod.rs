//! The trust-and-safety dashboard: an axum app with server-rendered pages for reviewers, analysts, compliance and admins.
//!
//! * [`data`]: the [`DataSource`] trait, the boundary with the main crate's lake.
//! * [`routes`]: the route table (route, method, roles) that builds the router and guards it.
//! * [`auth`], [`users`]: sessions, CSRF, login rate limit, users file.
//! * [`review`]: the review workflow (the hash-chained audit log is [`crate::review`]'s).
//! * [`frames`], [`board`]: game replay frames computed with the engines, drawn as SVG.
//! * [`charts`], [`dashboards`]: declarative dashboards rendered as server-side SVG.
//! * [`metrics`]: Prometheus text.
//! * [`public`]: public verification of finished games (no login).
//! * [`console`]: the analysts' SQL console.
//! * [`compliance`]: the compliance report download.
//! * [`page_cache`]: rendered pages kept per data version, gzip for clients that accept it.
//! * [`http`]: the connection layer (header, body and idle timeouts, a cap on connections).
//!
//! Entry points: [`router`] and [`serve`].

pub mod access;
pub mod analysis_view;
pub mod assets;
pub mod auth;
pub mod board;
pub mod charts;
pub mod compliance;
pub mod console;
pub mod context;
pub mod dashboards;
pub mod data;
pub mod frames;
pub mod http;
pub mod lake_data;
pub mod layout;
pub mod metrics;
pub mod page_cache;
pub mod pages;
pub mod public;
pub mod review;
pub mod routes;
/// Staff accounts (the module lives in [`crate::staff`], shared with the PostgreSQL endpoint).
pub use crate::staff::users;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::Response;

pub use data::DataSource;
pub use routes::{Access, RouteMethod, RouteSpec};

/// Dashboard settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address.
    pub addr: SocketAddr,
    /// `users.json` (see [`users`]).
    pub users_file: PathBuf,
    /// Sessions unused for this long are dropped.
    pub session_idle: Duration,
    /// Mark cookies `Secure` (set when served over TLS, directly or behind a proxy).
    pub secure_cookies: bool,
    /// Failed logins allowed per IP and per username within [`Config::login_window`].
    pub login_max_failures: u32,
    /// Window of the login rate limit.
    pub login_window: Duration,
    /// Bearer token accepted on `/metrics` (admins may always read it).
    pub metrics_token: Option<String>,
    /// Load `*.json` dashboard definitions from this directory instead of the built-in ones.
    pub dashboards_dir: Option<PathBuf>,
    /// Take the client IP for the login rate limit from `X-Forwarded-For` (only behind a trusted proxy).
    pub trust_forwarded_for: bool,
    /// Public verification pages one IP may open per minute.
    pub verify_per_minute: u32,
    /// Rows the SQL console shows at most.
    pub console_rows: usize,
    /// Rows a console CSV download holds at most.
    pub csv_rows: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 8088)),
            users_file: PathBuf::from("users.json"),
            session_idle: Duration::from_secs(30 * 60),
            secure_cookies: false,
            login_max_failures: 5,
            login_window: Duration::from_secs(15 * 60),
            metrics_token: None,
            dashboards_dir: None,
            trust_forwarded_for: false,
            verify_per_minute: 60,
            console_rows: 1000,
            csv_rows: 1_000_000,
        }
    }
}

struct Inner {
    data: Arc<dyn DataSource>,
    config: Config,
    sessions: auth::Sessions,
    users_watch: auth::UsersWatch,
    limiter: auth::LoginLimiter,
    public_limiter: auth::LoginLimiter,
    metrics: metrics::Metrics,
    review_lock: tokio::sync::Mutex<()>,
    dashboards: Vec<dashboards::Dashboard>,
    pages: page_cache::PageCache,
}

/// Shared state of the app (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

/// Why the app could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("dashboard definitions: {0}")]
    Dashboards(String),
}

impl AppState {
    /// A new app over a data source.
    pub fn new(config: Config, data: Arc<dyn DataSource>) -> Result<AppState, SetupError> {
        let dashboards = match &config.dashboards_dir {
            Some(dir) => dashboards::load_dir(dir).map_err(SetupError::Dashboards)?,
            None => dashboards::builtin().map_err(SetupError::Dashboards)?,
        };
        Ok(AppState {
            inner: Arc::new(Inner {
                data,
                sessions: auth::Sessions::new(config.session_idle),
                users_watch: auth::UsersWatch::new(config.users_file.clone()),
                limiter: auth::LoginLimiter::new(config.login_max_failures, config.login_window),
                public_limiter: auth::LoginLimiter::new(
                    config.verify_per_minute,
                    Duration::from_secs(60),
                ),
                metrics: metrics::Metrics::default(),
                review_lock: tokio::sync::Mutex::new(()),
                dashboards,
                pages: page_cache::PageCache::default(),
                config,
            }),
        })
    }

    /// The data source.
    pub fn data(&self) -> &dyn DataSource {
        self.inner.data.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Sessions.
    pub fn sessions(&self) -> &auth::Sessions {
        &self.inner.sessions
    }

    /// The users file as sessions check it.
    pub fn users_watch(&self) -> &auth::UsersWatch {
        &self.inner.users_watch
    }

    /// Login rate limit.
    pub fn limiter(&self) -> &auth::LoginLimiter {
        &self.inner.limiter
    }

    /// Rate limit of the public verification pages (every request counts).
    pub fn public_limiter(&self) -> &auth::LoginLimiter {
        &self.inner.public_limiter
    }

    /// Metrics.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.inner.metrics
    }

    /// Serialises review actions (read state, check, append) within this process.
    pub fn review_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.review_lock
    }

    /// Rendered pages kept per data version.
    pub fn pages(&self) -> &page_cache::PageCache {
        &self.inner.pages
    }

    /// Dashboard definitions.
    pub fn dashboards(&self) -> &[dashboards::Dashboard] {
        &self.inner.dashboards
    }
}

/// The final route list (the route table).
pub fn route_list() -> Vec<RouteSpec> {
    routes::routes()
}

/// The app's router.
pub fn router(state: AppState) -> Router {
    let specs = route_list();
    let guard = auth::Guard {
        app: state.clone(),
        table: Arc::new(routes::AccessTable::new(&specs)),
        nav: Arc::new(routes::nav_entries(&specs)),
    };
    let mut r: Router<AppState> = Router::new();
    for s in &specs {
        r = r.route(s.path, (s.handler)());
    }
    r.fallback(pages::not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            page_cache::layer,
        ))
        .layer(middleware::from_fn_with_state(guard, auth::guard))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// The Content-Security-Policy of every response.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// Outermost middleware: security headers on every response, request metrics.
async fn observe(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let mut res = next.run(req).await;
    security_headers(&mut res);
    app.metrics()
        .record(&route, &method, res.status().as_u16(), start.elapsed());
    res
}

/// Middleware for routes served beside the app (`POST /ingest`): the same security headers.
pub async fn with_security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    security_headers(&mut res);
    res
}

/// Sets the security headers every response carries, and `no-store` unless a cache policy is set.
fn security_headers(res: &mut Response) {
    let h = res.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// Binds `addr` and serves the app until `shutdown` completes.
pub async fn serve(
    addr: SocketAddr,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    serve_on(listener, router(state), shutdown).await
}

/// Serves a router on a bound listener with the default [`http::HttpLimits`] (tests bind port 0 first).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    http::serve_on(listener, app, http::HttpLimits::default(), shutdown).await
}
