//! The review workflow over HTTP: claim, confirm with a reason, missing reason, analyst refused, conflicts, reopen, and state surviving a restart.

use axum::http::StatusCode;
use vigie::serve::data::{Decision, ReviewStatus};
use vigie::serve::users::Role;

use super::common::{TempDir, TestApp, body, location};

async fn status_of(app: &TestApp, flag: &str) -> ReviewStatus {
    app.state
        .data()
        .flag(flag)
        .await
        .expect("flag")
        .expect("exists")
        .review
        .status
}

/// Posts a review action on a flag for a session: `/flag/{flag}/{action}` with the form `form`.
async fn act(
    app: &TestApp,
    flag: &str,
    action: &str,
    cookie: &str,
    form: &str,
) -> axum::http::Response<axum::body::Body> {
    app.post(&format!("/flag/{flag}/{action}"), Some(cookie), form)
        .await
}

/// Page numbers that are not pages show a page of the queue, not a plain-text 400; a page past
/// the end says so and links back to the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_pages_out_of_range_are_answered_with_the_queue() {
    let dir = TempDir::new("queue-pages");
    let app = TestApp::new(&dir.0);
    let (ana, _) = app.session("ana", Role::Analyst);
    let first = body(app.get("/queue", Some(&ana)).await).await;
    assert!(
        first.contains("page 1 of 1"),
        "the sample's queue fits one page"
    );
    for page in ["-1", "", "abc", "0"] {
        let r = app.get(&format!("/queue?page={page}"), Some(&ana)).await;
        assert_eq!(r.status(), StatusCode::OK, "{page}");
        assert!(body(r).await.contains("page 1 of 1"), "{page}");
    }
    let r = app
        .get("/queue?page=99999999999999999999", Some(&ana))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let past = body(r).await;
    assert!(past.contains("is past the end"), "{past}");
    assert!(
        past.contains("href=\"/queue\""),
        "a link back to the last page"
    );
}

/// Two dashboards on one lake: an action taken on a flag another dashboard acted on meanwhile is
/// refused (409), never recorded over it; the audit log holds one claim and one decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_dashboards_on_one_lake_do_not_record_conflicting_actions() {
    let dir = TempDir::new("review-two");
    let first = TestApp::new(&dir.0);
    let second = TestApp::new(&dir.0);
    let flag = first.ids.flag.clone();
    let (rita, rita_csrf) = first.session("rita", Role::Reviewer);
    let (rob, rob_csrf) = second.session("rob", Role::Reviewer);
    // Both dashboards have read the flag open.
    assert_eq!(status_of(&first, &flag).await, ReviewStatus::Open);
    assert_eq!(status_of(&second, &flag).await, ReviewStatus::Open);
    let r = act(&second, &flag, "claim", &rob, &format!("csrf={rob_csrf}")).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = act(&first, &flag, "claim", &rita, &format!("csrf={rita_csrf}")).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(body(r).await.contains("claimed by rob"));
    // Rob decides on the second dashboard; an admin on the first dismisses the flag it still
    // shows claimed.
    let r = act(
        &second,
        &flag,
        "confirm",
        &rob,
        &format!("csrf={rob_csrf}&decision=blocked&reason=seen"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (ada, ada_csrf) = first.session("ada", Role::Admin);
    let r = act(
        &first,
        &flag,
        "dismiss",
        &ada,
        &format!("csrf={ada_csrf}&reason=nothing"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let text = body(r).await;
    assert!(text.contains("confirmed"), "{text}");
    let log = vigie::review::read_log(
        &vigie::catalog::open(dir.0.join("lake"))
            .unwrap()
            .snapshot()
            .unwrap(),
    )
    .unwrap();
    let actions: Vec<(String, String)> = log
        .iter()
        .filter(|e| e.flag == flag)
        .map(|e| (e.actor.clone(), e.action.to_string()))
        .collect();
    assert_eq!(
        actions,
        [
            ("rob".into(), "claim".into()),
            ("rob".into(), "confirm".into())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_confirm_reopen_and_restart() {
    let dir = TempDir::new("review");
    let app = TestApp::new(&dir.0);
    let flag = app.ids.flag.clone();
    let account = app.ids.account.clone();
    let (rita, rita_csrf) = app.session("rita", Role::Reviewer);
    let (rob, rob_csrf) = app.session("rob", Role::Reviewer);
    let (ana, ana_csrf) = app.session("ana", Role::Analyst);

    // Deciding before claiming is a conflict.
    let r = app
        .post(
            &format!("/flag/{flag}/confirm"),
            Some(&rita),
            &format!("csrf={rita_csrf}&decision=blocked&reason=seen"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);

    // Claim.
    let r = app
        .post(
            &format!("/flag/{flag}/claim"),
            Some(&rita),
            &format!("csrf={rita_csrf}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), format!("/account/{account}#flag-{flag}"));
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Claimed);
    // Someone else cannot claim or decide it.
    let r = app
        .post(
            &format!("/flag/{flag}/claim"),
            Some(&rob),
            &format!("csrf={rob_csrf}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(body(r).await.contains("already claimed by rita"));
    let r = app
        .post(
            &format!("/flag/{flag}/dismiss"),
            Some(&rob),
            &format!("csrf={rob_csrf}&reason=nope"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);

    // Missing or blank reason: 400 with a clear message.
    for form in [
        format!("csrf={rita_csrf}&decision=blocked"),
        format!("csrf={rita_csrf}&decision=blocked&reason=+++"),
    ] {
        let r = app
            .post(&format!("/flag/{flag}/confirm"), Some(&rita), &form)
            .await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert!(
            body(r)
                .await
                .contains("A reason is required to confirm a flag")
        );
    }
    // A decision is required to confirm.
    let r = app
        .post(
            &format!("/flag/{flag}/confirm"),
            Some(&rita),
            &format!("csrf={rita_csrf}&reason=ok&decision=ban"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    // An analyst cannot confirm, even with a valid token of their own.
    let r = app
        .post(
            &format!("/flag/{flag}/confirm"),
            Some(&ana),
            &format!("csrf={ana_csrf}&decision=blocked&reason=x"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Claimed);

    // Confirm with a reason.
    let reason = "Left four games at move 3 against the same partner";
    let r = app
        .post(
            &format!("/flag/{flag}/confirm"),
            Some(&rita),
            &format!(
                "csrf={rita_csrf}&decision=blocked&reason={}",
                reason.replace(' ', "+")
            ),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let f = app
        .state
        .data()
        .flag(&flag)
        .await
        .expect("flag")
        .expect("exists");
    assert_eq!(f.review.status, ReviewStatus::Confirmed);
    assert_eq!(f.review.decision, Some(Decision::Blocked));

    // In the audit log (chain verified) and on /decisions.
    let audit = body(app.get("/audit", Some(&rita)).await).await;
    assert!(
        audit.contains(reason)
            && audit.contains("chain-ok")
            && audit.contains("Hash chain verified: 2 entries")
    );
    let decisions = body(app.get("/decisions", Some(&rita)).await).await;
    assert!(decisions.contains(reason) && decisions.contains(&flag));
    let page = body(app.get(&format!("/account/{account}"), Some(&rita)).await).await;
    assert!(page.contains(reason) && page.contains("confirmed"));
    // The analyst sees the account without any review action.
    let page = body(app.get(&format!("/account/{account}"), Some(&ana)).await).await;
    assert!(
        !page.contains("action=\"/flag/"),
        "analyst sees review forms"
    );
    // And no decisions page for analysts.
    assert_eq!(
        app.get("/decisions", Some(&ana)).await.status(),
        StatusCode::FORBIDDEN
    );

    // Restart: a new app on the same audit file sees the same state.
    drop(app);
    let app = TestApp::new(&dir.0);
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Confirmed);
    let (rob, rob_csrf) = app.session("rob", Role::Reviewer);
    // Reopen needs a reason too.
    let r = app
        .post(
            &format!("/flag/{flag}/reopen"),
            Some(&rob),
            &format!("csrf={rob_csrf}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(
        body(r)
            .await
            .contains("A reason is required to reopen a flag")
    );
    let r = app
        .post(
            &format!("/flag/{flag}/reopen"),
            Some(&rob),
            &format!("csrf={rob_csrf}&reason=new+evidence+from+support"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Open);
    // Rob can now claim and dismiss it.
    let r = app
        .post(
            &format!("/flag/{flag}/claim"),
            Some(&rob),
            &format!("csrf={rob_csrf}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .post(
            &format!("/flag/{flag}/dismiss"),
            Some(&rob),
            &format!("csrf={rob_csrf}&reason=false+positive"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    drop(app);
    let app = TestApp::new(&dir.0);
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Dismissed);
    let log = app.state.data().audit_log().await.expect("audit");
    let actions: Vec<String> = log
        .iter()
        .map(|e| format!("{}:{}", e.actor, e.action))
        .collect();
    assert_eq!(
        actions,
        [
            "rita:claim",
            "rita:confirm",
            "rob:reopen",
            "rob:claim",
            "rob:dismiss"
        ]
    );
    assert!(vigie::review::verify_chain(&log).ok());

    // The queue filter by status follows the fold.
    let (cookie, _) = app.session("carl", Role::Compliance);
    let dismissed = body(app.get("/queue?status=dismissed", Some(&cookie)).await).await;
    assert!(dismissed.contains(&account));
    let open = body(app.get("/queue?status=confirmed", Some(&cookie)).await).await;
    assert!(!open.contains(&format!(">{account}<")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_may_decide_a_claim_of_someone_else_and_queue_claims() {
    let dir = TempDir::new("review-admin");
    let app = TestApp::new(&dir.0);
    let flag = app.ids.flag.clone();
    let (rita, rita_csrf) = app.session("rita", Role::Reviewer);
    let (adam, adam_csrf) = app.session("adam", Role::Admin);
    // Claim from the queue (the keyboard shortcut submits this form) goes back to the queue.
    let r = app
        .post(
            &format!("/flag/{flag}/claim"),
            Some(&rita),
            &format!("csrf={rita_csrf}&return_to=%2Fqueue%3Fpage%3D1"),
        )
        .await;
    assert_eq!(location(&r), "/queue?page=1");
    // An open redirect is not followed.
    let r = app
        .post(
            &format!("/flag/{flag}/dismiss"),
            Some(&adam),
            &format!("csrf={adam_csrf}&reason=duplicate&return_to=%2F%2Fevil.example"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(location(&r).starts_with("/account/"));
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Dismissed);
    let r = app
        .post(
            "/flag/fl-nope/claim",
            Some(&rita),
            &format!("csrf={rita_csrf}"),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

/// A dismissed flag is a false positive: the account's risk, severity and recommended action
/// (its account page and its queue row) count only the flags not dismissed. The admin who decided
/// over nobody's claim is the one named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dismissed_flags_no_longer_count_towards_the_accounts_risk() {
    let dir = TempDir::new("review-dismissed-risk");
    let app = TestApp::new(&dir.0);
    let account = app.ids.account.clone();
    async fn view(app: &TestApp, account: &str) -> vigie::serve::data::AccountView {
        app.state
            .data()
            .account(account)
            .await
            .expect("account")
            .expect("exists")
    }
    let before = view(&app, &account).await;
    assert!(before.summary.total_score > 0.0, "{:?}", before.summary);
    let (adam, adam_csrf) = app.session("adam", Role::Admin);
    for f in &before.flags {
        let r = act(&app, &f.id, "claim", &adam, &format!("csrf={adam_csrf}")).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let r = act(
            &app,
            &f.id,
            "dismiss",
            &adam,
            &format!("csrf={adam_csrf}&reason=false+positive"),
        )
        .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    }
    let after = view(&app, &account).await;
    assert_eq!(after.summary.total_score, 0.0, "{:?}", after.summary);
    assert_eq!(
        after.summary.action,
        vigie::serve::data::RecommendedAction::Review
    );
    assert!(after.flags.iter().all(|f| {
        f.review.status == ReviewStatus::Dismissed && f.review.claimed_by.as_deref() == Some("adam")
    }));
    let row = app
        .state
        .data()
        .queue(&vigie::serve::data::QueueQuery {
            statuses: vec![ReviewStatus::Dismissed],
            ..Default::default()
        })
        .await
        .expect("queue")
        .items
        .into_iter()
        .find(|r| r.account == account)
        .expect("the account is in the queue of dismissed flags");
    assert_eq!(row.risk, 0.0);
    assert_eq!(row.action, vigie::serve::data::RecommendedAction::Review);
}

/// The review forms carry the flag's state as their page showed it: an action sent from a page
/// older than the flag's last change (a reopen over someone's new claim, an admin's decision over
/// another claimer) is refused, not applied to the state the flag has now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_from_a_page_older_than_the_flag_is_refused() {
    let dir = TempDir::new("review-seen");
    let app = TestApp::new(&dir.0);
    let flag = app.ids.flag.clone();
    let (rita, rita_csrf) = app.session("rita", Role::Reviewer);
    let (adam, adam_csrf) = app.session("adam", Role::Admin);
    let page = body(
        app.get(&format!("/account/{}", app.ids.account), Some(&rita))
            .await,
    )
    .await;
    assert!(
        page.contains(r#"name="seen" value="open:""#),
        "the forms say what they saw"
    );
    // Adam's page shows the flag open; rita claims it meanwhile.
    let r = act(
        &app,
        &flag,
        "claim",
        &rita,
        &format!("csrf={rita_csrf}&seen=open:"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = act(
        &app,
        &flag,
        "claim",
        &adam,
        &format!("csrf={adam_csrf}&seen=open:"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(body(r).await.contains("changed since this page was loaded"));
    // An admin deciding from a page that showed rita's claim: taken while it is hers.
    let stale = format!("csrf={adam_csrf}&seen=claimed:rob&decision=blocked&reason=checked");
    let r = act(&app, &flag, "confirm", &adam, &stale).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Claimed);
    let fresh = format!("csrf={adam_csrf}&seen=claimed:rita&decision=blocked&reason=checked");
    let r = act(&app, &flag, "confirm", &adam, &fresh).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(status_of(&app, &flag).await, ReviewStatus::Confirmed);
}
