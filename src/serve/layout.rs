//! The frame of every page: the layout `base.html` needs (title, user, navigation, CSRF token, asset URLs), the error page, and rendering a template with a status.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::access::Access;
use super::assets;
use super::context::Ctx;

/// Renders a template with a status (500 on a template error).
pub fn html<T: Template>(status: StatusCode, t: &T) -> Response {
    match t.render() {
        Ok(body) => (status, Html(body)).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("template error: {e}\n"),
        )
            .into_response(),
    }
}

/// A navigation link.
#[derive(Debug, Clone)]
pub struct NavLink {
    /// Target.
    pub href: String,
    /// Label.
    pub label: String,
    /// The current section.
    pub active: bool,
}

/// What `base.html` needs: title, user, navigation, CSRF token, asset URLs.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Page title.
    pub title: String,
    /// Username (empty when logged out).
    pub user: String,
    /// Role (empty when logged out).
    pub role: String,
    /// Navigation for this user.
    pub nav: Vec<NavLink>,
    /// CSRF token for forms.
    pub csrf: String,
    /// Stylesheet URL.
    pub css: String,
    /// Script URL.
    pub js: String,
    /// Icon URL.
    pub icon: String,
}

impl Layout {
    /// The layout of a page for this request.
    pub fn new(ctx: &Ctx, title: &str) -> Layout {
        let role = ctx.user.as_ref().map(|u| u.role);
        let nav = ctx
            .nav
            .iter()
            .filter(|n| match (n.access, role) {
                (Access::Public, _) => true,
                (a, Some(r)) => a.allows(r),
                _ => false,
            })
            .map(|n| NavLink {
                href: n.path.to_owned(),
                label: n.label.to_owned(),
                active: ctx.path == n.path
                    || (n.path == "/queue"
                        && (ctx.path.starts_with("/account/") || ctx.path.starts_with("/game/"))),
            })
            .collect();
        Layout {
            title: title.to_owned(),
            user: ctx
                .user
                .as_ref()
                .map(|u| u.name.clone())
                .unwrap_or_default(),
            role: role.map(|r| r.as_str().to_owned()).unwrap_or_default(),
            nav,
            csrf: ctx
                .user
                .as_ref()
                .map(|u| u.csrf.clone())
                .unwrap_or_default(),
            css: assets::url("app.css"),
            js: assets::url("app.js"),
            icon: assets::url("favicon.svg"),
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorTpl {
    l: Layout,
    status: u16,
    reason: String,
    message: String,
}

/// An error page.
pub struct ErrorPage;

impl ErrorPage {
    /// Renders an error page with a status and a message for people.
    pub fn response(ctx: &Ctx, status: StatusCode, message: &str) -> Response {
        let reason = status.canonical_reason().unwrap_or("Error").to_owned();
        html(
            status,
            &ErrorTpl {
                l: Layout::new(ctx, &reason),
                status: status.as_u16(),
                reason,
                message: message.to_owned(),
            },
        )
    }
}
