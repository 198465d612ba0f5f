//! What every handler learns about its request: the logged-in user and the navigation ([`Ctx`]), the peer address, the redirects (with the check that keeps them on the site), and the links to account pages (accounts are any text: percent-encoded).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::access::NavEntry;
use super::users::Role;

/// The logged-in user of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentUser {
    /// Username.
    pub name: String,
    /// Role.
    pub role: Role,
    /// The session's CSRF token (for forms).
    pub csrf: String,
}

/// What handlers learn about the request: the user (if any) and the navigation.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Logged-in user, when there is one.
    pub user: Option<CurrentUser>,
    /// Every navigation entry (filtered per role when rendered).
    pub nav: Arc<Vec<NavEntry>>,
    /// Request path (for the active nav link).
    pub path: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Ctx>()
            .cloned()
            .unwrap_or_else(|| Ctx {
                user: None,
                nav: Arc::new(Vec::new()),
                path: parts.uri.path().to_owned(),
            }))
    }
}

/// Percent-encodes every byte of `s` but the unreserved ones (`A-Z a-z 0-9 - . _ ~`) and, when
/// `keep_slash`, `/`: a path segment or a query value made of any text.
pub fn percent_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The account page's path: accounts are any text but control characters (`acc/7`, `o'brien`,
/// `ac c`), so the id is one percent-encoded segment, which axum's `Path` decodes back.
pub fn account_href(account: &str) -> String {
    format!("/account/{}", percent_encode(account, false))
}

/// A flag's place on its account's page.
pub fn flag_href(account: &str, flag: &str) -> String {
    format!("{}#flag-{flag}", account_href(account))
}

/// Whether a `next` target is a safe same-origin relative path.
///
/// Browsers drop tabs and newlines anywhere in a URL and read `\\` as `/`, so
/// `/\t\\evil.example` would be `//evil.example`, another origin. Only a path
/// made of visible ASCII without backslashes, starting with one `/` that is not
/// followed by another, is accepted.
pub fn safe_next(next: &str) -> Option<&str> {
    let visible = next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    let ok = visible
        && next.starts_with('/')
        && !next.starts_with("//")
        && !next.starts_with("/login")
        && !next.starts_with("/logout");
    ok.then_some(next)
}

/// 302 to a location.
pub fn found(location: &str) -> Response {
    let mut r = StatusCode::FOUND.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// 303 See Other (after a POST).
pub fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// The peer address, when the server was started with connect info.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0),
        ))
    }
}

/// The client address a rate limit counts: the first `X-Forwarded-For` entry behind a trusted proxy, else the peer.
pub(crate) fn client_ip(
    parts_headers: &HeaderMap,
    connect: Option<SocketAddr>,
    trust_xff: bool,
) -> String {
    if trust_xff
        && let Some(ip) = parts_headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    {
        return ip.to_owned();
    }
    connect.map_or_else(|| "unknown".to_owned(), |a| a.ip().to_string())
}
