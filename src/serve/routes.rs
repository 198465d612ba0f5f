//! The route table: every route with its method, access rule and navigation label, in one place.
//!
//! The router is built from this table ([`super::router`]) and the guard
//! middleware looks every request up in it, so a route cannot exist without
//! an access rule. Tests iterate the same table (every role against every route).
//!
//! | route | method | access |
//! |---|---|---|
//! | `/healthz` | GET | public |
//! | `/static/{file}` | GET | public |
//! | `/login` | GET, POST | public (POST checks a login CSRF token) |
//! | `/logout` | POST | any staff role |
//! | `/` | GET | any staff role (redirects to `/queue`) |
//! | `/queue`, `/account/{id}`, `/game/{id}`, `/dashboards` | GET | reviewer, compliance, analyst, admin |
//! | `/decisions`, `/audit` | GET | reviewer, compliance, admin |
//! | `/flag/{id}/claim`, `/confirm`, `/dismiss`, `/reopen` | POST | reviewer, admin |
//! | `/metrics` | GET | admin session, or `Authorization: Bearer <metrics_token>` |
//! | `/verify`, `/verify/{id}` (`.json` suffix for JSON) | GET | public, rate-limited per IP |
//! | `/sql` | GET, POST | analyst, admin |
//! | `/sql/csv` | POST | analyst, admin |
//! | `/compliance` | GET | compliance, admin |
//! | `/compliance/report` | POST | compliance, admin |

use axum::http::Method;
use axum::routing::{MethodRouter, get, post};

use super::AppState;
use super::users::Role;
use super::{assets, auth, compliance, console, metrics, pages, public, review};

/// Every staff role.
pub const ALL_STAFF: &[Role] = &[Role::Reviewer, Role::Compliance, Role::Analyst, Role::Admin];
/// Roles that review flags.
pub const REVIEWERS: &[Role] = &[Role::Reviewer, Role::Admin];
/// Roles that see decisions and the audit log.
pub const OVERSIGHT: &[Role] = &[Role::Reviewer, Role::Compliance, Role::Admin];
/// Roles of the analyst SQL console.
pub const ANALYSTS: &[Role] = &[Role::Analyst, Role::Admin];
/// Roles of the compliance pages.
pub const COMPLIANCE: &[Role] = &[Role::Compliance, Role::Admin];

/// Who may use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, logged in or not.
    Public,
    /// A logged-in user with one of these roles; POSTs also need the session's CSRF token.
    Roles(&'static [Role]),
    /// `/metrics`: a logged-in admin, or the configured bearer token.
    Metrics,
}

impl Access {
    /// Whether a logged-in user with this role may use the route.
    pub fn allows(self, role: Role) -> bool {
        match self {
            Access::Public => true,
            Access::Roles(rs) => rs.contains(&role),
            Access::Metrics => role == Role::Admin,
        }
    }
}

/// HTTP methods used by the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteMethod {
    Get,
    Post,
}

impl RouteMethod {
    /// The `http` method.
    pub fn method(self) -> Method {
        match self {
            RouteMethod::Get => Method::GET,
            RouteMethod::Post => Method::POST,
        }
    }
}

/// One route.
#[derive(Clone)]
pub struct RouteSpec {
    /// Method.
    pub method: RouteMethod,
    /// Path pattern as axum writes it (`/account/{id}`).
    pub path: &'static str,
    /// Access rule.
    pub access: Access,
    /// Label in the navigation bar (GET routes only), shown to roles that may use it.
    pub nav: Option<&'static str>,
    /// Builds the handler.
    pub handler: fn() -> MethodRouter<AppState>,
}

impl std::fmt::Debug for RouteSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteSpec")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("access", &self.access)
            .field("nav", &self.nav)
            .finish()
    }
}

const fn spec(
    method: RouteMethod,
    path: &'static str,
    access: Access,
    nav: Option<&'static str>,
    handler: fn() -> MethodRouter<AppState>,
) -> RouteSpec {
    RouteSpec {
        method,
        path,
        access,
        nav,
        handler,
    }
}

use RouteMethod::{Get, Post};

/// The built-in route table.
pub fn routes() -> Vec<RouteSpec> {
    vec![
        spec(Get, "/healthz", Access::Public, None, || {
            get(pages::healthz)
        }),
        spec(Get, "/static/{file}", Access::Public, None, || {
            get(assets::static_file)
        }),
        spec(Get, "/login", Access::Public, None, || {
            get(auth::login_form)
        }),
        spec(Post, "/login", Access::Public, None, || post(auth::login)),
        spec(Post, "/logout", Access::Roles(ALL_STAFF), None, || {
            post(auth::logout)
        }),
        spec(Get, "/", Access::Roles(ALL_STAFF), None, || {
            get(pages::home)
        }),
        spec(
            Get,
            "/queue",
            Access::Roles(ALL_STAFF),
            Some("Queue"),
            || get(pages::queue),
        ),
        spec(Get, "/account/{id}", Access::Roles(ALL_STAFF), None, || {
            get(pages::account)
        }),
        spec(Get, "/game/{id}", Access::Roles(ALL_STAFF), None, || {
            get(pages::game)
        }),
        spec(
            Get,
            "/dashboards",
            Access::Roles(ALL_STAFF),
            Some("Dashboards"),
            || get(pages::dashboards),
        ),
        spec(
            Get,
            "/decisions",
            Access::Roles(OVERSIGHT),
            Some("Decisions"),
            || get(pages::decisions),
        ),
        spec(
            Get,
            "/audit",
            Access::Roles(OVERSIGHT),
            Some("Audit log"),
            || get(pages::audit),
        ),
        spec(
            Post,
            "/flag/{id}/claim",
            Access::Roles(REVIEWERS),
            None,
            || post(review::claim),
        ),
        spec(
            Post,
            "/flag/{id}/confirm",
            Access::Roles(REVIEWERS),
            None,
            || post(review::confirm),
        ),
        spec(
            Post,
            "/flag/{id}/dismiss",
            Access::Roles(REVIEWERS),
            None,
            || post(review::dismiss),
        ),
        spec(
            Post,
            "/flag/{id}/reopen",
            Access::Roles(REVIEWERS),
            None,
            || post(review::reopen),
        ),
        spec(Get, "/metrics", Access::Metrics, None, || {
            get(metrics::handler)
        }),
        spec(Get, "/verify", Access::Public, Some("Verify"), || {
            get(public::form)
        }),
        spec(Get, "/verify/{id}", Access::Public, None, || {
            get(public::game)
        }),
        spec(Get, "/sql", Access::Roles(ANALYSTS), Some("SQL"), || {
            get(console::console)
        }),
        spec(Post, "/sql", Access::Roles(ANALYSTS), None, || {
            post(console::run)
        }),
        spec(Post, "/sql/csv", Access::Roles(ANALYSTS), None, || {
            post(console::csv)
        }),
        spec(
            Get,
            "/compliance",
            Access::Roles(COMPLIANCE),
            Some("Compliance"),
            || get(compliance::page),
        ),
        spec(
            Post,
            "/compliance/report",
            Access::Roles(COMPLIANCE),
            None,
            || post(compliance::report),
        ),
    ]
}

/// The access table the guard consults, built from the final route list.
#[derive(Debug, Clone, Default)]
pub struct AccessTable {
    entries: Vec<(Method, &'static str, Access)>,
}

impl AccessTable {
    /// From a route list.
    pub fn new(specs: &[RouteSpec]) -> AccessTable {
        AccessTable {
            entries: specs
                .iter()
                .map(|s| (s.method.method(), s.path, s.access))
                .collect(),
        }
    }

    /// The rule for a matched route. A known path with another method (which
    /// the router answers 405) needs a logged-in staff member; `None` means
    /// no route matched (the 404 fallback).
    pub fn lookup(&self, method: &Method, path: &str) -> Option<Access> {
        let method = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        let mut path_known = false;
        for (m, p, a) in &self.entries {
            if *p == path {
                if m == method {
                    return Some(*a);
                }
                path_known = true;
            }
        }
        path_known.then_some(Access::Roles(ALL_STAFF))
    }
}

/// A navigation entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NavEntry {
    /// Link target.
    pub path: &'static str,
    /// Label.
    pub label: &'static str,
    /// Who sees it.
    pub access: Access,
}

/// Navigation entries of a route list.
pub fn nav_entries(specs: &[RouteSpec]) -> Vec<NavEntry> {
    specs
        .iter()
        .filter(|s| s.method == RouteMethod::Get)
        .filter_map(|s| {
            s.nav.map(|label| NavEntry {
                path: s.path,
                label,
                access: s.access,
            })
        })
        .collect()
}
