//! Rendered pages kept per data version: the same page again, each user's own forms, a review action seen at once, gzip for clients that accept it, and pages that are never kept.

use std::io::Read;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use vigie::serve::users::Role;

use super::common::{TempDir, TestApp, body, hidden};

async fn get_with(app: &TestApp, path: &str, cookie: &str, gzip: bool) -> axum::response::Response {
    let mut b = Request::get(path).header(header::COOKIE, cookie);
    if gzip {
        b = b.header(header::ACCEPT_ENCODING, "br;q=1.0, gzip;q=0.8");
    }
    app.send(b.body(Body::empty()).expect("request")).await
}

/// A response header as text.
fn header_of(r: &axum::response::Response, name: header::HeaderName) -> Option<&str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn gunzip(r: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(r.into_body(), 16 << 20)
        .await
        .expect("body");
    let mut out = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut out)
        .expect("a gzip body");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_kept_per_user_and_version_and_a_review_action_is_seen_at_once() {
    let dir = TempDir::new("page-cache");
    let app = TestApp::new(&dir.0);
    let (rita, rita_csrf) = app.session("rita", Role::Reviewer);
    let (rob, rob_csrf) = app.session("rob", Role::Reviewer);
    let account = format!("/account/{}", app.ids.account);
    let game = format!("/game/{}", app.ids.game);
    assert!(app.state.pages().is_empty());

    // The same page twice: the same bytes, kept once.
    let mut first = Vec::new();
    for path in ["/queue", account.as_str(), game.as_str()] {
        let a = get_with(&app, path, &rita, false).await;
        assert_eq!(a.status(), StatusCode::OK, "{path}");
        let a = body(a).await;
        let b = body(get_with(&app, path, &rita, false).await).await;
        assert_eq!(a, b, "{path}");
        first.push(a);
    }
    assert_eq!(app.state.pages().len(), 3);

    // Each user gets pages with their own CSRF token.
    assert_eq!(
        hidden(&first[1], "csrf").as_deref(),
        Some(rita_csrf.as_str())
    );
    let robs = body(get_with(&app, &account, &rob, false).await).await;
    assert_eq!(hidden(&robs, "csrf").as_deref(), Some(rob_csrf.as_str()));
    assert_ne!(robs, first[1]);

    // gzip when asked, the same page once decompressed; Vary on every kept page.
    let r = get_with(&app, &account, &rita, true).await;
    assert_eq!(header_of(&r, header::CONTENT_ENCODING), Some("gzip"));
    assert_eq!(header_of(&r, header::VARY), Some("Accept-Encoding"));
    assert_eq!(
        header_of(&r, header::CACHE_CONTROL),
        Some("no-store"),
        "staff pages stay out of the browser's cache"
    );
    assert_eq!(gunzip(r).await, first[1]);

    // A review action moves the lake: the kept account page is not answered again.
    assert!(first[1].contains("Claim this flag"));
    let flag = app.ids.flag.clone();
    let r = app
        .post(
            &format!("/flag/{flag}/claim"),
            Some(&rita),
            &format!("csrf={rita_csrf}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let after = body(get_with(&app, &account, &rita, false).await).await;
    assert_ne!(after, first[1]);
    assert!(
        after.contains(&format!("id=\"status-{flag}\">claimed · rita")),
        "the claim is on the page"
    );
    let queue = body(get_with(&app, "/queue", &rob, false).await).await;
    assert!(
        queue.contains("claimed by rita"),
        "the queue shows the claim"
    );
    assert_eq!(
        app.state.pages().len(),
        2,
        "pages of the older version are gone"
    );

    // Pages that are not 200 are never kept.
    let missing = "/game/no-such-game";
    for _ in 0..2 {
        let r = get_with(&app, missing, &rita, false).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert!(body(r).await.contains("No game no-such-game"));
    }
    assert_eq!(app.state.pages().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_files_are_served_gzipped_to_clients_that_accept_it() {
    let dir = TempDir::new("static-gzip");
    let app = TestApp::new(&dir.0);
    let plain = app.get("/static/app.css", None).await;
    assert_eq!(plain.status(), StatusCode::OK);
    assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
    let plain = body(plain).await;
    let r = app
        .send(
            Request::get(vigie::serve::assets::url("app.css"))
                .header(header::ACCEPT_ENCODING, "gzip, deflate")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header_of(&r, header::CONTENT_ENCODING), Some("gzip"));
    assert!(header_of(&r, header::CACHE_CONTROL).is_some_and(|v| v.contains("immutable")));
    assert_eq!(gunzip(r).await, plain);
}
