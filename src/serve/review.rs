//! The review workflow: claim, confirm (with a decision), dismiss and reopen a flag; every action needs a reason (claim excepted) and appends an audit entry.
//!
//! Transitions (anything else is 409 Conflict with an explanation):
//!
//! | action | from | to | who |
//! |---|---|---|---|
//! | claim | open | claimed | a reviewer or admin |
//! | confirm | claimed | confirmed (`block_recommended` or `blocked`) | the claimer, or an admin |
//! | dismiss | claimed | dismissed (false positive) | the claimer, or an admin |
//! | reopen | claimed, confirmed, dismissed | open | a reviewer or admin |
//!
//! A missing or blank reason for confirm, dismiss or reopen is 400 Bad Request.
//! The state of a flag is the fold of its audit entries, so it survives restarts.

use axum::Form;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::AppState;
use super::auth::{Ctx, safe_next, see_other};
use super::context::flag_href;
use super::data::{DataError, Decision, FlagReview, ReviewStatus};
use super::pages::ErrorPage;
use super::users::Role;
use crate::review::{NewAuditEntry, ReviewAction};

/// Longest accepted reason, in characters.
pub const MAX_REASON: usize = 2000;

/// Form of the review actions.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ActionForm {
    /// Why (mandatory except for claim).
    #[serde(default)]
    pub reason: String,
    /// `block_recommended` or `blocked` (confirm only).
    #[serde(default)]
    pub decision: String,
    /// Where to go afterwards (a local path).
    #[serde(default)]
    pub return_to: String,
    /// The flag's state as the page that sent the form showed it ([`seen`]): an action taken
    /// from a page older than the flag's last change is refused (when given).
    #[serde(default)]
    pub seen: String,
}

/// The state of a flag as a page shows it, for its forms' `seen` field: the status and who
/// holds the claim (or decided).
pub fn seen(r: &crate::review::FlagReview) -> String {
    format!("{}:{}", r.status, r.claimed_by.as_deref().unwrap_or(""))
}

/// Why an action was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status.
    pub status: StatusCode,
    /// Message for people.
    pub message: String,
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        message: message.into(),
    }
}

/// Checks the form of an action: the trimmed reason and the decision.
pub fn check_form(
    action: ReviewAction,
    f: &ActionForm,
) -> Result<(String, Option<Decision>), Refusal> {
    let reason = f.reason.trim().to_owned();
    if action != ReviewAction::Claim && !reason.chars().any(visible) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("A reason is required to {action} a flag. Describe what you checked and why."),
        ));
    }
    if reason
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "The reason may not contain control characters (such as NUL); write it as plain text.",
        ));
    }
    if reason.chars().count() > MAX_REASON {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("The reason is too long (at most {MAX_REASON} characters)."),
        ));
    }
    let decision = if action == ReviewAction::Confirm {
        Some(Decision::parse(f.decision.trim()).ok_or_else(|| {
            refuse(
                StatusCode::BAD_REQUEST,
                "Choose a decision to confirm a flag: block_recommended or blocked.",
            )
        })?)
    } else {
        None
    };
    Ok((reason, decision))
}

/// Whether a character shows: not white space, and not one of Unicode's invisible format or
/// filler characters (zero-width spaces and joiners, direction marks and overrides, the soft
/// hyphen, variation selectors, Hangul fillers, tags): a reason of nothing else says nothing.
fn visible(c: char) -> bool {
    !c.is_whitespace()
        && !c.is_control()
        && !matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
            | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}')
}

/// The state an action leads to from the current one, or why it may not be taken.
pub fn transition(
    current: &FlagReview,
    action: ReviewAction,
    actor: &str,
    role: Role,
) -> Result<ReviewStatus, Refusal> {
    let conflict = |m: String| Err(refuse(StatusCode::CONFLICT, m));
    match (action, current.status) {
        (ReviewAction::Claim, ReviewStatus::Open) => Ok(ReviewStatus::Claimed),
        (ReviewAction::Claim, ReviewStatus::Claimed) => match &current.claimed_by {
            Some(by) if by == actor => conflict("You have already claimed this flag.".to_owned()),
            Some(by) => conflict(format!("This flag is already claimed by {by}.")),
            None => conflict("This flag is already claimed.".to_owned()),
        },
        (ReviewAction::Claim, s) => {
            conflict(format!("This flag is {s}; reopen it before claiming it."))
        }
        (ReviewAction::Confirm | ReviewAction::Dismiss, ReviewStatus::Claimed) => {
            let mine = current.claimed_by.as_deref() == Some(actor);
            if !mine && role != Role::Admin {
                return conflict(format!(
                    "This flag is claimed by {}; only they (or an admin) can decide it.",
                    current.claimed_by.as_deref().unwrap_or("someone else")
                ));
            }
            Ok(if action == ReviewAction::Confirm {
                ReviewStatus::Confirmed
            } else {
                ReviewStatus::Dismissed
            })
        }
        (ReviewAction::Confirm | ReviewAction::Dismiss, ReviewStatus::Open) => {
            conflict("Claim the flag before deciding it.".to_owned())
        }
        (ReviewAction::Confirm | ReviewAction::Dismiss, s) => conflict(format!(
            "This flag is already {s}; reopen it to decide again."
        )),
        (ReviewAction::Reopen, ReviewStatus::Open) => {
            conflict("This flag is already open.".to_owned())
        }
        (ReviewAction::Reopen, _) => Ok(ReviewStatus::Open),
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

async fn act(app: AppState, ctx: Ctx, id: String, action: ReviewAction, f: ActionForm) -> Response {
    let Some(user) = ctx.user.clone() else {
        return ErrorPage::response(&ctx, StatusCode::UNAUTHORIZED, "Please log in.");
    };
    let fail = |r: Refusal| ErrorPage::response(&ctx, r.status, &r.message);
    let (reason, decision) = match check_form(action, &f) {
        Ok(x) => x,
        Err(r) => return fail(r),
    };
    let _serial = app.review_lock().lock().await;
    let flag = match app.data().flag(&id).await {
        Ok(Some(flag)) => flag,
        Ok(None) => return fail(refuse(StatusCode::NOT_FOUND, format!("No flag {id}."))),
        Err(e) => return fail(refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    };
    if !f.seen.is_empty() && f.seen != seen(&flag.review) {
        let by = flag
            .review
            .claimed_by
            .as_deref()
            .map(|b| format!(" by {b}"))
            .unwrap_or_default();
        return fail(refuse(
            StatusCode::CONFLICT,
            format!(
                "The action was not recorded: the flag changed since this page was loaded (it is now {}{by}). Reload the page and decide again.",
                flag.review.status
            ),
        ));
    }
    let new_state = match transition(&flag.review, action, &user.name, user.role) {
        Ok(s) => s,
        Err(r) => return fail(r),
    };
    let entry = NewAuditEntry {
        at: now_ms(),
        actor: user.name.clone(),
        role: user.role,
        action,
        flag: flag.id.clone(),
        account: flag.account.clone(),
        reason,
        decision,
        prev_state: flag.review.status,
        new_state,
    };
    match app.data().append_audit(entry).await {
        Ok(_) => {}
        // Another dashboard on the same lake (or a re-judgement) acted on the flag meanwhile.
        Err(DataError::Conflict(why)) => {
            return fail(refuse(
                StatusCode::CONFLICT,
                format!("The action was not recorded: {why}."),
            ));
        }
        Err(e) => {
            return fail(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("The action was not recorded: {e}"),
            ));
        }
    }
    let back =
        safe_next(&f.return_to).map_or_else(|| flag_href(&flag.account, &flag.id), str::to_owned);
    see_other(&back)
}

/// `POST /flag/{id}/claim`.
pub async fn claim(
    State(app): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    Form(f): Form<ActionForm>,
) -> Response {
    act(app, ctx, id, ReviewAction::Claim, f).await
}

/// `POST /flag/{id}/confirm`.
pub async fn confirm(
    State(app): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    Form(f): Form<ActionForm>,
) -> Response {
    act(app, ctx, id, ReviewAction::Confirm, f).await
}

/// `POST /flag/{id}/dismiss`.
pub async fn dismiss(
    State(app): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    Form(f): Form<ActionForm>,
) -> Response {
    act(app, ctx, id, ReviewAction::Dismiss, f).await
}

/// `POST /flag/{id}/reopen`.
pub async fn reopen(
    State(app): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    Form(f): Form<ActionForm>,
) -> Response {
    act(app, ctx, id, ReviewAction::Reopen, f).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: ReviewStatus, by: Option<&str>) -> FlagReview {
        FlagReview {
            status,
            claimed_by: by.map(str::to_owned),
            ..FlagReview::default()
        }
    }

    #[test]
    fn transitions() {
        let open = state(ReviewStatus::Open, None);
        let mine = state(ReviewStatus::Claimed, Some("a"));
        assert_eq!(
            transition(&open, ReviewAction::Claim, "a", Role::Reviewer),
            Ok(ReviewStatus::Claimed)
        );
        assert!(transition(&mine, ReviewAction::Claim, "b", Role::Reviewer).is_err());
        assert!(transition(&open, ReviewAction::Confirm, "a", Role::Reviewer).is_err());
        assert_eq!(
            transition(&mine, ReviewAction::Confirm, "a", Role::Reviewer),
            Ok(ReviewStatus::Confirmed)
        );
        assert!(transition(&mine, ReviewAction::Dismiss, "b", Role::Reviewer).is_err());
        assert_eq!(
            transition(&mine, ReviewAction::Dismiss, "b", Role::Admin),
            Ok(ReviewStatus::Dismissed)
        );
        let done = state(ReviewStatus::Confirmed, Some("a"));
        assert_eq!(
            transition(&done, ReviewAction::Reopen, "b", Role::Reviewer),
            Ok(ReviewStatus::Open)
        );
        assert!(transition(&open, ReviewAction::Reopen, "b", Role::Reviewer).is_err());
    }

    #[test]
    fn reasons_are_mandatory() {
        let blank = ActionForm {
            reason: "   ".to_owned(),
            decision: "blocked".to_owned(),
            ..ActionForm::default()
        };
        assert!(check_form(ReviewAction::Claim, &blank).is_ok());
        for a in [
            ReviewAction::Confirm,
            ReviewAction::Dismiss,
            ReviewAction::Reopen,
        ] {
            assert_eq!(
                check_form(a, &blank).map_err(|r| r.status),
                Err(StatusCode::BAD_REQUEST)
            );
        }
        let no_decision = ActionForm {
            reason: "seen".to_owned(),
            ..ActionForm::default()
        };
        assert!(check_form(ReviewAction::Confirm, &no_decision).is_err());
        assert!(check_form(ReviewAction::Dismiss, &no_decision).is_ok());
    }

    #[test]
    fn reasons_with_control_characters_are_refused() {
        let nul = ActionForm {
            reason: "seen\0 twice".to_owned(),
            ..ActionForm::default()
        };
        assert_eq!(
            check_form(ReviewAction::Dismiss, &nul).map_err(|r| r.status),
            Err(StatusCode::BAD_REQUEST)
        );
        let lines = ActionForm {
            reason: "seen\r\n\tand checked".to_owned(),
            ..ActionForm::default()
        };
        assert!(check_form(ReviewAction::Dismiss, &lines).is_ok());
    }

    #[test]
    fn reasons_of_invisible_characters_only_are_blank() {
        for invisible in [
            "\u{200B}\u{200B}",
            "\u{202E}",
            " \u{FEFF}\u{2060} ",
            "\u{3164}",
        ] {
            let f = ActionForm {
                reason: invisible.to_owned(),
                ..ActionForm::default()
            };
            assert_eq!(
                check_form(ReviewAction::Dismiss, &f).map_err(|r| r.status),
                Err(StatusCode::BAD_REQUEST),
                "{invisible:?}"
            );
        }
        // Any visible character in any script is a reason.
        for seen in ["vu", "\u{200B}ok", "見た", "✓"] {
            let f = ActionForm {
                reason: seen.to_owned(),
                ..ActionForm::default()
            };
            assert!(check_form(ReviewAction::Reopen, &f).is_ok(), "{seen:?}");
        }
    }
}
