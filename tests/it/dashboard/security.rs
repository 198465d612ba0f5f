//! CSRF on every POST, login with argon2 and its double-submit token, idle session expiry, and the login rate limits (per IP and per username).

use std::time::Duration;

use axum::http::StatusCode;
use vigie::serve::users::Role;

use super::common::{PASSWORD, TempDir, TestApp, body, location, set_cookie, sleep, to_login};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_need_the_session_csrf_token() {
    let dir = TempDir::new("csrf");
    let app = TestApp::new(&dir.0);
    let (cookie, csrf) = app.session("rita", Role::Reviewer);
    let flag = app.ids.flag.clone();
    let claim = format!("/flag/{flag}/claim");
    let r = app.post(&claim, Some(&cookie), "reason=").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "no token");
    assert!(body(r).await.contains("CSRF"));
    let r = app.post(&claim, Some(&cookie), "csrf=0000&reason=").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "wrong token");
    let (_, other_csrf) = app.session("rob", Role::Reviewer);
    let r = app
        .post(&claim, Some(&cookie), &format!("csrf={other_csrf}"))
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "another session's token");
    let r = app.post("/logout", Some(&cookie), "").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "logout without token");
    // Nothing was recorded.
    assert!(
        app.state
            .data()
            .audit_log()
            .await
            .expect("audit")
            .is_empty()
    );
    let r = app
        .post(&claim, Some(&cookie), &format!("csrf={csrf}"))
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "right token");
    assert_eq!(app.state.data().audit_log().await.expect("audit").len(), 1);
    // The header form is accepted too.
    let req = axum::http::Request::post("/logout")
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .body(axum::body::Body::empty())
        .expect("request");
    let r = app.send(req).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(
        to_login(&app.get("/queue", Some(&cookie)).await),
        "logged out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_flow_and_login_csrf() {
    let dir = TempDir::new("login");
    let app = TestApp::new(&dir.0);
    // Without the double-submit token.
    let r = app
        .post(
            "/login",
            None,
            &format!("username=rita&password={PASSWORD}&csrf=abc"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // Wrong password, unknown user.
    assert_eq!(
        app.login("rita", "wrong-password", &[]).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        app.login("nobody", PASSWORD, &[]).await.status(),
        StatusCode::UNAUTHORIZED
    );
    // Right password: a session cookie, HttpOnly and SameSite=Strict, then the queue.
    let r = app.login("rita", PASSWORD, &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/queue");
    let raw = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("vigie_session="))
        .expect("session cookie")
        .to_owned();
    assert!(
        raw.contains("HttpOnly") && raw.contains("SameSite=Strict") && raw.contains("Path=/"),
        "{raw}"
    );
    assert!(!raw.contains("Secure"), "plain HTTP in tests");
    let token = set_cookie(&r, "vigie_session").expect("token");
    let page = app
        .get("/queue", Some(&format!("vigie_session={token}")))
        .await;
    assert_eq!(page.status(), StatusCode::OK);
    assert!(body(page).await.contains("rita"));
    // Secure cookies when configured.
    let dir2 = TempDir::new("login-secure");
    let secure = TestApp::with(&dir2.0, |c| c.secure_cookies = true);
    let r = secure.login("rita", PASSWORD, &[]).await;
    let raw = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("vigie_session="))
        .expect("session cookie")
        .to_owned();
    assert!(raw.contains("; Secure"), "{raw}");
}

/// A session ends once the users file changes its user: another role, another password, or
/// removed; the other users' sessions go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_when_its_user_is_changed() {
    let dir = TempDir::new("demoted");
    let app = TestApp::new(&dir.0);
    let cookie_of = |r: &axum::http::Response<axum::body::Body>| {
        format!(
            "vigie_session={}",
            set_cookie(r, "vigie_session").expect("token")
        )
    };
    let adam = cookie_of(&app.login("adam", PASSWORD, &[]).await);
    let rob = cookie_of(&app.login("rob", PASSWORD, &[]).await);
    let rita = cookie_of(&app.login("rita", PASSWORD, &[]).await);
    assert_eq!(
        app.get("/metrics", Some(&adam)).await.status(),
        StatusCode::OK
    );
    let users = super::common::users_file(&dir.0);
    // Demoted to analyst (with another password): the admin session is over.
    vigie::serve::users::add_user(&users, "adam", Role::Analyst, "other-password-456").unwrap();
    let r = app.get("/queue", Some(&adam)).await;
    assert!(to_login(&r), "{}", r.status());
    assert_eq!(
        app.get("/metrics", Some(&adam)).await.status(),
        StatusCode::UNAUTHORIZED
    );
    // Same role, new password: over too.
    vigie::serve::users::add_user(&users, "rob", Role::Reviewer, "other-password-789").unwrap();
    assert!(to_login(&app.get("/queue", Some(&rob)).await));
    // Rita's record did not change: her session goes on, and the new logins work.
    assert_eq!(
        app.get("/queue", Some(&rita)).await.status(),
        StatusCode::OK
    );
    let again = app.login("adam", "other-password-456", &[]).await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    let adam = cookie_of(&again);
    assert_eq!(
        app.get("/metrics", Some(&adam)).await.status(),
        StatusCode::FORBIDDEN
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire() {
    let dir = TempDir::new("idle");
    let app = TestApp::with(&dir.0, |c| c.session_idle = Duration::from_millis(300));
    let r = app.login("ana", PASSWORD, &[]).await;
    let cookie = format!(
        "vigie_session={}",
        set_cookie(&r, "vigie_session").expect("token")
    );
    // Activity keeps it alive.
    for _ in 0..3 {
        sleep(150).await;
        assert_eq!(
            app.get("/queue", Some(&cookie)).await.status(),
            StatusCode::OK
        );
    }
    sleep(450).await;
    let r = app.get("/queue", Some(&cookie)).await;
    assert!(to_login(&r), "{}", r.status());
    assert!(location(&r).contains("expired=1"));
    let page = body(app.get(&location(&r), None).await).await;
    assert!(page.contains("session expired"));
    // Still out afterwards.
    assert!(to_login(&app.get("/queue", Some(&cookie)).await));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_rate_limit_per_ip_and_per_username() {
    let dir = TempDir::new("limit");
    let app = TestApp::with(&dir.0, |c| {
        c.login_max_failures = 3;
        c.trust_forwarded_for = true;
    });
    let ip1 = [("x-forwarded-for", "10.0.0.1")];
    for _ in 0..3 {
        assert_eq!(
            app.login("rita", "bad-password", &ip1).await.status(),
            StatusCode::UNAUTHORIZED
        );
    }
    // Locked, even with the right password.
    let r = app.login("rita", PASSWORD, &ip1).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().get("retry-after").is_some());
    assert!(body(r).await.contains("Too many failed attempts"));
    // Per username: the same user from another address is still locked.
    let ip2 = [("x-forwarded-for", "10.0.0.2")];
    assert_eq!(
        app.login("rita", PASSWORD, &ip2).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // Per IP: another user from the first address is locked too.
    assert_eq!(
        app.login("ana", PASSWORD, &ip1).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another user from another address is fine.
    assert_eq!(
        app.login("ana", PASSWORD, &ip2).await.status(),
        StatusCode::SEE_OTHER
    );
}

/// Logins sent together on one key are judged one after the other: wrong ones get no more tries
/// than the limit (they all passed the limit before the first failure was counted), and right
/// ones all get in (a pool of connections opened at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_sent_together_get_no_more_tries_than_the_limit() {
    let dir = TempDir::new("limit-parallel");
    let app = TestApp::with(&dir.0, |c| {
        c.login_max_failures = 3;
        c.trust_forwarded_for = true;
    });
    let ip = [("x-forwarded-for", "10.0.0.9")];
    let right = (0..6).map(|_| app.login("ana", PASSWORD, &ip));
    let statuses: Vec<StatusCode> = futures::future::join_all(right)
        .await
        .into_iter()
        .map(|r| r.status())
        .collect();
    assert!(
        statuses.iter().all(|s| *s == StatusCode::SEE_OTHER),
        "{statuses:?}"
    );
    let tries = (0..12).map(|_| app.login("rita", "bad-password", &ip));
    let statuses: Vec<StatusCode> = futures::future::join_all(tries)
        .await
        .into_iter()
        .map(|r| r.status())
        .collect();
    let checked = statuses
        .iter()
        .filter(|s| **s == StatusCode::UNAUTHORIZED)
        .count();
    let limited = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((checked, limited), (3, 9), "{statuses:?}");
    // The right password after them is refused too: the user is locked.
    assert_eq!(
        app.login("rita", PASSWORD, &[("x-forwarded-for", "10.0.0.10")])
            .await
            .status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}
