//! Authentication and request guarding: server-side sessions with idle expiry, CSRF tokens, login rate limiting, the guard middleware and the login/logout handlers.
//!
//! * Sessions live in memory, keyed by the SHA-256 of a random 256-bit token
//!   sent in the `vigie_session` cookie (HttpOnly, SameSite=Strict, Path=/,
//!   Secure when [`super::Config::secure_cookies`]). A session unused for
//!   [`super::Config::session_idle`] is dropped; the next request goes back to
//!   the login page. Login rotates the token (no fixation).
//! * Every session has its own CSRF token; the guard checks it on every POST
//!   of a logged-in route (form field `csrf` or header `X-CSRF-Token`,
//!   constant-time compare) before any handler runs. The login form, which has
//!   no session yet, uses a double-submit token (cookie `vigie_login_csrf`
//!   equal to the form field).
//! * Failed logins are counted per client IP and per username; after
//!   [`super::Config::login_max_failures`] failures within
//!   [`super::Config::login_window`], login answers 429 (even with the right
//!   password) until the oldest failure leaves the window.
//! * A session remembers the user's record as it was at login (a hash of the
//!   role and the password hash): once the users file says otherwise (the user
//!   removed, given another role or another password), the session is ended at
//!   its next request ([`UsersWatch`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use askama::Template;
use axum::Form;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::access::{Access, AccessTable, NavEntry};
pub(crate) use super::context::client_ip;
use super::context::percent_encode;
pub use super::context::{ClientAddr, Ctx, CurrentUser, found, safe_next, see_other};
use super::layout::{ErrorPage, Layout, html};
use super::users::{self, Role};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "vigie_session";
/// Name of the login form's double-submit cookie.
pub const LOGIN_CSRF_COOKIE: &str = "vigie_login_csrf";
/// Largest POST body the guard reads.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// 32 random bytes as lowercase hex.
pub fn random_token() -> String {
    let mut b = [0u8; 32];
    if getrandom::fill(&mut b).is_err() {
        // No entropy: refuse to mint predictable tokens.
        return String::new();
    }
    let mut s = String::with_capacity(64);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Constant-time equality of two byte strings (the length is not secret).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug)]
struct Session {
    user: CurrentUser,
    last_seen: Instant,
    /// The user's record at login ([`users::record_fingerprint`]); `None`: not checked.
    credential: Option<String>,
}

/// What a session cookie resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionLookup {
    /// A live session (its idle timer restarted).
    Valid(CurrentUser),
    /// The session existed but was idle too long (now removed).
    Expired,
    /// No cookie, or an unknown token.
    Missing,
}

/// Server-side sessions.
#[derive(Debug)]
pub struct Sessions {
    idle: Duration,
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Sessions expiring after `idle` without use.
    pub fn new(idle: Duration) -> Sessions {
        Sessions {
            idle,
            map: Mutex::new(HashMap::new()),
        }
    }

    fn key(token: &str) -> String {
        crate::review::sha256_hex(token.as_bytes())
    }

    /// Opens a session; returns its token.
    pub fn create(&self, name: &str, role: Role) -> String {
        self.create_for(name, role, None)
    }

    /// Opens a session for a user whose record (at login) has this fingerprint; returns its token.
    pub fn create_for(&self, name: &str, role: Role, credential: Option<String>) -> String {
        let token = random_token();
        let now = Instant::now();
        let mut map = lock(&self.map);
        if map.len() >= 1024 {
            let idle = self.idle;
            map.retain(|_, s| now.duration_since(s.last_seen) <= idle);
        }
        map.insert(
            Self::key(&token),
            Session {
                user: CurrentUser {
                    name: name.to_owned(),
                    role,
                    csrf: random_token(),
                },
                last_seen: now,
                credential,
            },
        );
        token
    }

    /// Looks a token up and restarts its idle timer.
    pub fn lookup(&self, token: &str) -> SessionLookup {
        self.lookup_checked(token, |_, _| true)
    }

    /// [`Sessions::lookup`], ending the session (as expired) when `still` says its user's record
    /// (name, fingerprint at login) no longer holds.
    pub fn lookup_checked(
        &self,
        token: &str,
        still: impl FnOnce(&str, Option<&str>) -> bool,
    ) -> SessionLookup {
        if token.len() != 64 {
            return SessionLookup::Missing;
        }
        let key = Self::key(token);
        let now = Instant::now();
        let mut map = lock(&self.map);
        match map.get_mut(&key) {
            None => SessionLookup::Missing,
            Some(s) if now.duration_since(s.last_seen) > self.idle => {
                map.remove(&key);
                SessionLookup::Expired
            }
            Some(s) if !still(&s.user.name, s.credential.as_deref()) => {
                map.remove(&key);
                SessionLookup::Expired
            }
            Some(s) => {
                s.last_seen = now;
                SessionLookup::Valid(s.user.clone())
            }
        }
    }

    /// Ends a session.
    pub fn remove(&self, token: &str) {
        lock(&self.map).remove(&Self::key(token));
    }

    /// Live sessions (for /metrics).
    pub fn active(&self) -> usize {
        let now = Instant::now();
        lock(&self.map)
            .values()
            .filter(|s| now.duration_since(s.last_seen) <= self.idle)
            .count()
    }
}

pub use crate::staff::limiter::LoginLimiter;

/// The users file as sessions check it: each user's record fingerprint, read again when the
/// file's modification time or length changes (one `stat` a request).
#[derive(Debug)]
pub struct UsersWatch {
    path: std::path::PathBuf,
    seen: Mutex<Option<UsersSeen>>,
}

/// The users file as last read: its modification time and length, and each user's fingerprint.
type UsersSeen = (Option<std::time::SystemTime>, u64, HashMap<String, String>);

impl UsersWatch {
    /// Watches the users file at `path`.
    pub fn new(path: std::path::PathBuf) -> UsersWatch {
        UsersWatch {
            path,
            seen: Mutex::new(None),
        }
    }

    /// Whether a session opened with `credential` for `name` still matches the users file
    /// (`None`: a session not tied to a record, such as the tests' own). A file that cannot be read
    /// keeps what was last read from it.
    pub fn still(&self, name: &str, credential: Option<&str>) -> bool {
        let Some(credential) = credential else {
            return true;
        };
        let meta = std::fs::metadata(&self.path);
        let stamp = meta
            .as_ref()
            .map(|m| (m.modified().ok(), m.len()))
            .unwrap_or((None, 0));
        let mut seen = lock(&self.seen);
        let fresh = seen
            .as_ref()
            .is_some_and(|(t, len, _)| (*t, *len) == stamp && t.is_some());
        if !fresh {
            match users::load_users(&self.path) {
                Ok(list) => {
                    let map = list
                        .iter()
                        .map(|u| (u.username.clone(), users::record_fingerprint(u)))
                        .collect();
                    *seen = Some((stamp.0, stamp.1, map));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the users file: sessions kept as they were")
                }
            }
        }
        seen.as_ref()
            .is_some_and(|(_, _, map)| map.get(name).map(String::as_str) == Some(credential))
    }
}

/// Cookie value by name.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    secure: bool,
    max_age: Option<u64>,
) -> HeaderValue {
    let mut c = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Strict");
    if let Some(age) = max_age {
        c.push_str(&format!("; Max-Age={age}"));
    }
    if secure {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// State of the guard middleware.
#[derive(Clone)]
pub struct Guard {
    /// The app.
    pub app: AppState,
    /// Access rules.
    pub table: Arc<AccessTable>,
    /// Navigation.
    pub nav: Arc<Vec<NavEntry>>,
}

/// Decodes one `application/x-www-form-urlencoded` component.
pub fn form_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form_field(body: &[u8], name: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    text.split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| form_decode(k) == name)
        .map(|(_, v)| form_decode(v))
}

/// The guard: resolves the session, applies the route's access rule and the CSRF check.
pub async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let matched = parts
        .extensions
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned());
    let access = matched
        .as_deref()
        .and_then(|p| g.table.lookup(&parts.method, p));
    let token = cookie(&parts.headers, SESSION_COOKIE);
    let lookup = token.as_deref().map_or(SessionLookup::Missing, |t| {
        g.app
            .sessions()
            .lookup_checked(t, |name, cred| g.app.users_watch().still(name, cred))
    });
    let user = match &lookup {
        SessionLookup::Valid(u) => Some(u.clone()),
        _ => None,
    };
    let ctx = Ctx {
        user: user.clone(),
        nav: g.nav.clone(),
        path: parts.uri.path().to_owned(),
    };
    parts.extensions.insert(ctx.clone());
    let Some(access) = access else {
        // No route matched: the 404 fallback answers.
        return next.run(Request::from_parts(parts, body)).await;
    };
    match access {
        Access::Public => return next.run(Request::from_parts(parts, body)).await,
        Access::Metrics => {
            let bearer = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            let token_ok = match (bearer, g.app.config().metrics_token.as_deref()) {
                (Some(b), Some(t)) if !t.is_empty() => ct_eq(b.as_bytes(), t.as_bytes()),
                _ => false,
            };
            let admin = user.as_ref().is_some_and(|u| u.role == Role::Admin);
            if token_ok || admin {
                return next.run(Request::from_parts(parts, body)).await;
            }
            if user.is_some() {
                return ErrorPage::response(
                    &ctx,
                    StatusCode::FORBIDDEN,
                    "The metrics are for administrators and the monitoring token.",
                );
            }
            let mut r = (
                StatusCode::UNAUTHORIZED,
                "metrics need a bearer token or an admin session\n",
            )
                .into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
        Access::Roles(_) => {}
    }
    let Some(user) = user else {
        let secure = g.app.config().secure_cookies;
        let mut r = if parts.method == Method::GET || parts.method == Method::HEAD {
            let target = parts
                .uri
                .path_and_query()
                .map_or("/", |pq| pq.as_str())
                .to_owned();
            let mut loc = format!("/login?next={}", percent_encode(&target, true));
            if lookup == SessionLookup::Expired {
                loc.push_str("&expired=1");
            }
            found(&loc)
        } else {
            ErrorPage::response(
                &ctx,
                StatusCode::UNAUTHORIZED,
                if lookup == SessionLookup::Expired {
                    "Your session expired. Log in again, then repeat the action."
                } else {
                    "Please log in."
                },
            )
        };
        if lookup == SessionLookup::Expired {
            r.headers_mut().append(
                header::SET_COOKIE,
                set_cookie(SESSION_COOKIE, "", "/", secure, Some(0)),
            );
        }
        return r;
    };
    if !access.allows(user.role) {
        return ErrorPage::response(
            &ctx,
            StatusCode::FORBIDDEN,
            &format!("Your role ({}) does not allow this.", user.role),
        );
    }
    if parts.method == Method::POST {
        let bytes = match axum::body::to_bytes(body, MAX_FORM_BYTES).await {
            Ok(b) => b,
            Err(_) => {
                return ErrorPage::response(
                    &ctx,
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "The form is too large.",
                );
            }
        };
        let sent = parts
            .headers
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| form_field(&bytes, "csrf"));
        let ok = sent
            .is_some_and(|s| !user.csrf.is_empty() && ct_eq(s.as_bytes(), user.csrf.as_bytes()));
        if !ok {
            return ErrorPage::response(
                &ctx,
                StatusCode::FORBIDDEN,
                "The form's security token is missing or wrong (CSRF check). Reload the page and try again.",
            );
        }
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    }
    next.run(Request::from_parts(parts, body)).await
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    l: Layout,
    csrf: String,
    next: String,
    username: String,
    error: String,
    notice: String,
}

/// Query of `GET /login`.
#[derive(Debug, serde::Deserialize, Default)]
pub struct LoginQuery {
    next: Option<String>,
    expired: Option<String>,
}

fn login_page(
    ctx: &Ctx,
    status: StatusCode,
    next: &str,
    username: &str,
    error: &str,
    notice: &str,
    secure: bool,
) -> Response {
    let csrf = random_token();
    let page = LoginPage {
        l: Layout::new(ctx, "Log in"),
        csrf: csrf.clone(),
        next: next.to_owned(),
        username: username.to_owned(),
        error: error.to_owned(),
        notice: notice.to_owned(),
    };
    let mut r = html(status, &page);
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(LOGIN_CSRF_COOKIE, &csrf, "/login", secure, Some(3600)),
    );
    r
}

/// `GET /login`.
pub async fn login_form(
    State(app): State<AppState>,
    ctx: Ctx,
    axum::extract::Query(q): axum::extract::Query<LoginQuery>,
) -> Response {
    let next = q.next.as_deref().and_then(safe_next).unwrap_or("/queue");
    if ctx.user.is_some() {
        return found(next);
    }
    let notice = if q.expired.is_some() {
        "Your session expired after a period of inactivity. Please log in again."
    } else {
        ""
    };
    login_page(
        &ctx,
        StatusCode::OK,
        next,
        "",
        "",
        notice,
        app.config().secure_cookies,
    )
}

/// Form of `POST /login`.
#[derive(Debug, serde::Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

/// `POST /login`.
pub async fn login(
    State(app): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    ClientAddr(connect): ClientAddr,
    Form(f): Form<LoginForm>,
) -> Response {
    let secure = app.config().secure_cookies;
    let next = safe_next(&f.next).unwrap_or("/queue").to_owned();
    let cookie_token = cookie(&headers, LOGIN_CSRF_COOKIE).unwrap_or_default();
    if f.csrf.is_empty() || !ct_eq(f.csrf.as_bytes(), cookie_token.as_bytes()) {
        return login_page(
            &ctx,
            StatusCode::FORBIDDEN,
            &next,
            &f.username,
            "The login form expired (security token mismatch). Please try again.",
            "",
            secure,
        );
    }
    let ip = client_ip(&headers, connect, app.config().trust_forwarded_for);
    // A name longer than any account's is keyed by its start (the limiter keeps its keys).
    let name: String = f
        .username
        .to_lowercase()
        .chars()
        .take(crate::staff::limiter::MAX_KEY_NAME)
        .collect();
    let user_key = format!("user:{name}");
    let keys = [format!("ip:{ip}"), user_key.clone()];
    // Attempts on a key are judged one after the other: sent together, they cannot all pass
    // the limit before the first failure is counted.
    let turn = app.limiter().turn(&keys).await;
    if let Some(wait) = app.limiter().blocked(&keys) {
        app.metrics().login_limited();
        let minutes = wait.as_secs().div_ceil(60).max(1);
        let mut r = login_page(
            &ctx,
            StatusCode::TOO_MANY_REQUESTS,
            &next,
            &f.username,
            &format!("Too many failed attempts. Try again in {minutes} minute(s)."),
            "",
            secure,
        );
        if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return r;
    }
    let path = app.config().users_file.clone();
    let (username, password) = (f.username.clone(), f.password.clone());
    // Judged to the end on a task of its own, holding the keys' turn and a check's slot: a
    // request dropped mid-check (its client closed the connection) still has its failure
    // counted, and frees its turn and slot only when its check is done.
    let judge = {
        let (app, keys) = (app.clone(), keys.clone());
        tokio::spawn(async move {
            let _turn = turn;
            let check = app.limiter().check_turn().await;
            let verified =
                tokio::task::spawn_blocking(move || -> Result<Option<(Role, String)>, String> {
                    let users = users::load_users(&path).map_err(|e| e.to_string())?;
                    let found = users.iter().find(|u| u.username == username);
                    let hash: &str = match found {
                        Some(u) => &u.hash,
                        None => users::dummy_hash(),
                    };
                    let ok = users::verify_password(hash, &password);
                    Ok(found
                        .filter(|_| ok)
                        .map(|u| (u.role, users::record_fingerprint(u))))
                })
                .await;
            drop(check);
            if matches!(verified, Ok(Ok(None))) {
                app.limiter().fail(&keys);
            }
            verified
        })
    };
    let verified = judge.await.unwrap_or_else(Err);
    let role = match verified {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return ErrorPage::response(
                &ctx,
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("Cannot read the users file: {e}"),
            );
        }
        Err(_) => {
            return ErrorPage::response(
                &ctx,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Login failed unexpectedly.",
            );
        }
    };
    let Some((role, credential)) = role else {
        app.metrics().login_failed();
        return login_page(
            &ctx,
            StatusCode::UNAUTHORIZED,
            &next,
            &f.username,
            "Invalid username or password.",
            "",
            secure,
        );
    };
    app.limiter().reset(&user_key);
    app.metrics().login_ok();
    if let Some(old) = cookie(&headers, SESSION_COOKIE) {
        app.sessions().remove(&old);
    }
    let token = app
        .sessions()
        .create_for(&f.username, role, Some(credential));
    if token.is_empty() {
        return ErrorPage::response(
            &ctx,
            StatusCode::INTERNAL_SERVER_ERROR,
            "No randomness available for a session token.",
        );
    }
    let mut r = see_other(&next);
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(SESSION_COOKIE, &token, "/", secure, None),
    );
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(LOGIN_CSRF_COOKIE, "", "/login", secure, Some(0)),
    );
    r
}

/// `POST /logout`.
pub async fn logout(State(app): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(t) = cookie(&headers, SESSION_COOKIE) {
        app.sessions().remove(&t);
    }
    let mut r = see_other("/login");
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            SESSION_COOKIE,
            "",
            "/",
            app.config().secure_cookies,
            Some(0),
        ),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }

    #[test]
    fn sessions_expire() {
        let s = Sessions::new(Duration::from_millis(30));
        let t = s.create("alice", Role::Reviewer);
        assert!(matches!(s.lookup(&t), SessionLookup::Valid(u) if u.name == "alice"));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(s.lookup(&t), SessionLookup::Expired);
        assert_eq!(s.lookup(&t), SessionLookup::Missing);
    }

    #[test]
    fn limiter_counts_per_key() {
        let l = LoginLimiter::new(2, Duration::from_secs(60));
        let keys = ["ip:1".to_owned(), "user:a".to_owned()];
        assert!(l.blocked(&keys).is_none());
        l.fail(&keys);
        l.fail(&keys);
        assert!(l.blocked(&keys).is_some());
        assert!(l.blocked(&["ip:2".to_owned()]).is_none());
        l.reset("user:a");
        assert!(l.blocked(&["user:a".to_owned()]).is_none());
        assert!(l.blocked(&["ip:1".to_owned()]).is_some());
    }

    #[test]
    fn next_targets() {
        assert_eq!(safe_next("/queue?x=1"), Some("/queue?x=1"));
        assert_eq!(safe_next("//evil.example"), None);
        assert_eq!(safe_next("https://evil.example"), None);
        assert_eq!(safe_next("/\\evil"), None);
        // The probe's bypass: a tab (dropped by browsers) before a backslash (read as `/`).
        assert_eq!(safe_next("/\t\\evil.example/healthz"), None);
        assert_eq!(safe_next("/\n/evil.example"), None);
        assert_eq!(safe_next("/ /evil.example"), None);
        assert_eq!(safe_next("/queue\\x"), None);
        assert_eq!(
            safe_next("/account/a%2Fb#flag-1"),
            Some("/account/a%2Fb#flag-1")
        );
    }

    #[test]
    fn form_decoding() {
        assert_eq!(form_decode("a+b%20c%2"), "a b c%2");
        assert_eq!(
            form_field(b"x=1&csrf=ab%63", "csrf").as_deref(),
            Some("abc")
        );
    }
}
