//! Who may use which route: the access rules ([`Access`], the role groups), the route specification type, the lookup table the guard uses, and the navigation built from it.

use axum::http::Method;
use axum::routing::MethodRouter;

use super::AppState;
use super::users::Role;

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

pub(crate) const fn spec(
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
