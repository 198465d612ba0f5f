//! Every role (and no login) against every route of the route table: allowed, 403, or sent to the login page.

use axum::http::StatusCode;
use vigie::serve::users::Role;
use vigie::serve::{Access, RouteMethod, route_list};

use super::common::{TempDir, TestApp, location, to_login};

fn concrete(path: &str, app: &TestApp) -> String {
    let id = if path.starts_with("/account/") {
        app.ids.account.as_str()
    } else if path.starts_with("/game/") {
        app.ids.game.as_str()
    } else if path.starts_with("/flag/") {
        app.ids.flag.as_str()
    } else {
        "app.css"
    };
    path.replace("{id}", id).replace("{file}", id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_role_against_every_route() {
    let dir = TempDir::new("routes");
    let app = TestApp::new(&dir.0);
    let specs = route_list();
    assert!(specs.len() >= 20);
    let roles = [Role::Reviewer, Role::Compliance, Role::Analyst, Role::Admin];
    let mut checked = 0;
    for spec in &specs {
        let path = concrete(spec.path, &app);
        // POST /login is public but needs its own double-submit token: covered in security.rs.
        if spec.method == RouteMethod::Post && spec.path == "/login" {
            continue;
        }
        // Anonymous.
        let r = match spec.method {
            RouteMethod::Get => app.get(&path, None).await,
            RouteMethod::Post => app.post(&path, None, "reason=x").await,
        };
        match spec.access {
            Access::Public => assert!(
                r.status() != StatusCode::FORBIDDEN
                    && r.status() != StatusCode::UNAUTHORIZED
                    && !to_login(&r),
                "anonymous {} {path}: {}",
                spec.path,
                r.status()
            ),
            Access::Metrics => assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "anonymous {path}"),
            Access::Roles(_) => match spec.method {
                RouteMethod::Get => {
                    assert!(
                        to_login(&r),
                        "anonymous GET {path}: {} {}",
                        r.status(),
                        location(&r)
                    );
                    assert!(location(&r).contains("next="), "{path}");
                }
                RouteMethod::Post => assert_eq!(
                    r.status(),
                    StatusCode::UNAUTHORIZED,
                    "anonymous POST {path}"
                ),
            },
        }
        checked += 1;
        for role in roles {
            let (cookie, csrf) = app.session(&format!("user-{role}"), role);
            let r = match spec.method {
                RouteMethod::Get => app.get(&path, Some(&cookie)).await,
                RouteMethod::Post => {
                    app.post(
                        &path,
                        Some(&cookie),
                        &format!("csrf={csrf}&reason=matrix+check&decision=blocked"),
                    )
                    .await
                }
            };
            let allowed = match spec.access {
                Access::Public => true,
                Access::Roles(rs) => rs.contains(&role),
                Access::Metrics => role == Role::Admin,
            };
            if allowed {
                assert!(
                    r.status() != StatusCode::FORBIDDEN
                        && r.status() != StatusCode::UNAUTHORIZED
                        && !to_login(&r),
                    "{role} {:?} {path} should be allowed, got {}",
                    spec.method,
                    r.status()
                );
            } else {
                assert_eq!(
                    r.status(),
                    StatusCode::FORBIDDEN,
                    "{role} {:?} {path} should be forbidden",
                    spec.method
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 90, "{checked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_token_and_content() {
    let dir = TempDir::new("metrics");
    let app = TestApp::new(&dir.0);
    let _ = app.get("/healthz", None).await;
    let req = axum::http::Request::get("/metrics")
        .header("authorization", "Bearer metrics-secret")
        .body(axum::body::Body::empty())
        .expect("request");
    let r = app.send(req).await;
    assert_eq!(r.status(), StatusCode::OK);
    let text = super::common::body(r).await;
    for needle in [
        "vigie_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 1",
        "vigie_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 1",
        "vigie_pipeline_lag_seconds ",
        "vigie_open_flags ",
        "vigie_audit_chain_ok 1",
    ] {
        assert!(text.contains(needle), "missing {needle}\n{text}");
    }
    let req = axum::http::Request::get("/metrics")
        .header("authorization", "Bearer wrong")
        .body(axum::body::Body::empty())
        .expect("request");
    assert_eq!(app.send(req).await.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_headers_on_every_response() {
    let dir = TempDir::new("headers");
    let app = TestApp::new(&dir.0);
    let (cookie, _) = app.session("rita", Role::Reviewer);
    for (path, cookie) in [
        ("/healthz", None),
        ("/login", None),
        ("/static/app.css", None),
        ("/queue", Some(cookie.as_str())),
        ("/no/such/page", None),
        ("/queue", None),
    ] {
        let r = app.get(path, cookie).await;
        let h = r.headers();
        assert_eq!(
            h.get("content-security-policy")
                .and_then(|v| v.to_str().ok()),
            Some(
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
            ),
            "{path}"
        );
        assert_eq!(
            h.get("x-content-type-options")
                .and_then(|v| v.to_str().ok()),
            Some("nosniff")
        );
        assert_eq!(
            h.get("x-frame-options").and_then(|v| v.to_str().ok()),
            Some("DENY")
        );
        assert!(h.get("referrer-policy").is_some());
    }
    let r = app.get(&vigie::serve::assets::url("app.js"), None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("immutable"))
    );
    // Without its version, or with an old one, it is revalidated at each use instead.
    for stale in ["/static/app.js", "/static/app.js?v=old"] {
        let r = app.get(stale, None).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(
            r.headers()
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("no-cache"),
            "{stale}"
        );
    }
    // Pages carry no inline script or style.
    let page = super::common::body(app.get("/queue", Some(&cookie)).await).await;
    assert!(
        !page.contains("<script>") && !page.contains("style=") && !page.contains("<style"),
        "inline script or style"
    );
}
