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

use axum::routing::{get, post};

use super::{assets, auth, compliance, console, metrics, pages, public, review};

use super::access::spec;
pub use super::access::*;

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
