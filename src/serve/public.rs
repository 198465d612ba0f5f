//! Public verification of finished games: `/verify`, `/verify/{id}` and `/verify/{id}.json`, without login.
//!
//! The page shows the seed commitment, the revealed seed, and every die,
//! deal, duel and automatic selection recomputed next to the logged value,
//! with the commands that check them by hand. `static/verify.js` recomputes
//! the same values in the visitor's browser with WebCrypto from the JSON
//! and shows both results. Only fairness data is shown: seats (`p1`, `p2`,
//! ...) instead of accounts, no ip or device, nothing for a game that is not
//! finished. Every request counts against a per-IP rate limit.

use askama::Template;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::assets;
use super::auth::{ClientAddr, Ctx, client_ip, found};
use super::pages::{ErrorPage, Layout, html};
use crate::lake::Lake;
use crate::replay::verify::{NotPublic, PublicVerification, public_verification};

/// Query of `GET /verify`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct FormQuery {
    #[serde(default)]
    id: String,
}

#[derive(Template)]
#[template(path = "verify_form.html")]
struct FormTpl {
    l: Layout,
    id: String,
    error: String,
}

/// `GET /verify`: the form; with `?id=` it redirects to the game's page.
pub async fn form(ctx: Ctx, Query(q): Query<FormQuery>) -> Response {
    let id = q.id.trim();
    if id.is_empty() {
        return html(
            StatusCode::OK,
            &FormTpl {
                l: Layout::new(&ctx, "Verify a game"),
                id: String::new(),
                error: String::new(),
            },
        );
    }
    if !valid_id(id) {
        return html(
            StatusCode::BAD_REQUEST,
            &FormTpl {
                l: Layout::new(&ctx, "Verify a game"),
                id: id.to_owned(),
                error: "A game or match id is made of letters, digits and - _ . : only.".into(),
            },
        );
    }
    // An id ending in `.json` names that game's page, not the JSON of the id before it.
    if id.ends_with(".json") {
        return found(&format!("/verify/{id}?format=html"));
    }
    found(&format!("/verify/{id}"))
}

/// The query of a game's page: `format=json` or `format=html` whatever the id ends with.
#[derive(Debug, Default, serde::Deserialize)]
pub struct FormatQuery {
    #[serde(default)]
    format: Option<String>,
}

/// The JSON URL of a game's verification.
fn json_url(game: &str) -> String {
    if game.ends_with(".json") {
        format!("/verify/{game}?format=json")
    } else {
        format!("/verify/{game}.json")
    }
}

/// Game and match ids the page accepts (the log format's ids, bounded).
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

struct DieVm {
    seq: i64,
    n: i64,
    logged: u8,
    derived: String,
    ok: bool,
}

struct DealVm {
    seq: i64,
    deal: i64,
    dealer: String,
    hands: String,
    turned: String,
    completed: String,
    deck: String,
    ok: bool,
}

struct DuelVm {
    seq: i64,
    m: u64,
    victim: u8,
    logged: &'static str,
    derived: &'static str,
    ok: bool,
}

struct SelectionVm {
    seq: i64,
    color: String,
    chosen: String,
    logged: String,
    derived: String,
    ok: bool,
}

struct FailureVm {
    seq: i64,
    code: String,
    message: String,
    expected: String,
    logged: String,
}

#[derive(Template)]
#[template(path = "verify.html")]
struct VerifyTpl {
    l: Layout,
    script: String,
    json_url: String,
    game: String,
    what: String,
    seats: String,
    verdict: String,
    commitment: String,
    seed: String,
    seed_sha256: String,
    commitment_ok: bool,
    dice: Vec<DieVm>,
    deals: Vec<DealVm>,
    duels: Vec<DuelVm>,
    selections: Vec<SelectionVm>,
    failures: Vec<FailureVm>,
    /// How to check by hand: (what it shows, command, what to expect).
    recipes: Vec<(String, String, String)>,
}

fn word(b: bool) -> &'static str {
    if b { "success" } else { "failure" }
}

fn list<T: ToString>(v: &[T]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

fn sorted(v: &[u8]) -> Vec<u8> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v
}

fn hands_text(h: &std::collections::BTreeMap<String, Vec<String>>) -> String {
    h.iter()
        .map(|(seat, cards)| format!("{seat}: {}", cards.join(" ")))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Shell-quotes a value for the recipes (ids and seeds are plain, but be safe).
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The byte of a die's block (in hex) that decides the face: the first below `fc` (a byte from
/// `fc` up is skipped, so that the faces stay equally likely), with its index from 0.
fn deciding_byte(block: &str) -> Option<(usize, &str)> {
    (0..block.len() / 2)
        .map(|i| (i, &block[2 * i..2 * i + 2]))
        .find(|(_, x)| u8::from_str_radix(x, 16).is_ok_and(|v| v < 252))
}

fn recipes(v: &PublicVerification) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let (Some(seed), Some(commitment)) = (&v.seed, &v.commitment) else {
        return out;
    };
    out.push((
        "The commitment is the SHA-256 of the seed's 64 hex characters".into(),
        format!("printf '%s' {} | sha256sum", sq(seed)),
        format!("{commitment}  -"),
    ));
    let block = |msg: &str| crate::lake::hex(&crate::fairness::block(seed, msg));
    if let Some(d) = v.dice.first() {
        let msg = format!("{}:die:{}", v.game, d.n);
        let b = block(&msg);
        out.push((
            format!(
                "Die number {}: the first byte below 252 (hex fc), mod 6, plus 1",
                d.n
            ),
            format!(
                "printf '%s' {} | openssl dgst -sha256 -hmac {}",
                sq(&msg),
                sq(seed)
            ),
            match deciding_byte(&b) {
                Some((0, x)) => format!(
                    "…= {b}  (first byte {x} → {})",
                    d.derived.map_or("?".into(), |f| f.to_string())
                ),
                Some((i, x)) => format!(
                    "…= {b}  (byte {} is {x}, the first below fc → {})",
                    i + 1,
                    d.derived.map_or("?".into(), |f| f.to_string())
                ),
                None => format!(
                    "…= {b}  (no byte below fc: the next block decides → {})",
                    d.derived.map_or("?".into(), |f| f.to_string())
                ),
            },
        ));
    }
    if let Some(d) = v.deals.first() {
        let msg = format!("{}:deal:{}:0", v.game, d.deal);
        out.push((
            format!(
                "Deal {}: the stream's first block; read it as 4-byte big-endian integers for Fisher-Yates (fairness protocol)",
                d.deal
            ),
            format!("printf '%s' {} | openssl dgst -sha256 -hmac {}", sq(&msg), sq(seed)),
            format!("…= {}", block(&msg)),
        ));
    }
    if let Some(d) = v.duels.first() {
        let msg = format!("{}:duel:{}", v.game, d.m);
        let b = block(&msg);
        out.push((
            format!(
                "Duel number {}: won when the first byte is below 128 (hex 80)",
                d.m
            ),
            format!(
                "printf '%s' {} | openssl dgst -sha256 -hmac {}",
                sq(&msg),
                sq(seed)
            ),
            format!("…= {b}  (first byte {})", &b[..2]),
        ));
    }
    out
}

fn view(ctx: &Ctx, v: &PublicVerification) -> VerifyTpl {
    let what = [
        Some(v.kind.as_str()),
        Some(v.mode.as_str()),
        v.variant.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join(" · ");
    VerifyTpl {
        l: Layout::new(ctx, &format!("Verify {}", v.game)),
        script: assets::url("verify.js"),
        json_url: json_url(&v.game),
        game: v.game.clone(),
        what,
        seats: v.seats.join(", "),
        verdict: v.verdict.clone(),
        commitment: v.commitment.clone().unwrap_or_default(),
        seed: v.seed.clone().unwrap_or_default(),
        seed_sha256: v.seed_sha256.clone().unwrap_or_default(),
        commitment_ok: v.commitment.is_some() && v.commitment == v.seed_sha256,
        dice: v
            .dice
            .iter()
            .map(|d| DieVm {
                seq: d.seq,
                n: d.n,
                logged: d.logged,
                derived: d.derived.map_or_else(|| "?".into(), |f| f.to_string()),
                ok: d.derived == Some(d.logged),
            })
            .collect(),
        deals: v
            .deals
            .iter()
            .map(|d| DealVm {
                seq: d.seq,
                deal: d.deal,
                dealer: d.dealer.clone(),
                hands: hands_text(&d.hands),
                turned: d.turned.clone(),
                completed: d
                    .completion
                    .as_ref()
                    .map(|c| format!("taker {}: {}", c.taker, hands_text(&c.hands)))
                    .unwrap_or_else(|| "(no taker)".into()),
                deck: d.derived_deck.join(" "),
                ok: d.ok,
            })
            .collect(),
        duels: v
            .duels
            .iter()
            .map(|d| DuelVm {
                seq: d.seq,
                m: d.m,
                victim: d.victim,
                logged: word(d.logged),
                derived: d.derived.map_or("?", word),
                ok: d.derived == Some(d.logged),
            })
            .collect(),
        selections: v
            .selections
            .iter()
            .map(|s| SelectionVm {
                seq: s.seq,
                color: s.color.clone(),
                chosen: list(&s.chosen),
                logged: list(&s.logged),
                derived: list(&s.derived),
                ok: sorted(&s.logged) == sorted(&s.derived),
            })
            .collect(),
        failures: v
            .failures
            .iter()
            .map(|f| FailureVm {
                seq: f.seq,
                code: f.code.clone(),
                message: f.message.clone(),
                expected: f.expected.clone().unwrap_or_default(),
                logged: f.logged.clone().unwrap_or_default(),
            })
            .collect(),
        recipes: recipes(v),
    }
}

fn too_many(wait: std::time::Duration) -> Response {
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        "too many verification requests from this address; try again in a minute\n",
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn json_error(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

/// `GET /verify/{id}` (HTML) and `GET /verify/{id}.json`; `?format=json` or `?format=html`
/// chooses whatever the id ends with (game ids may end in `.json`: without a format, such a path is
/// the JSON of the id before the suffix, or, when no game has that id, the page of the whole id).
pub async fn game(
    State(app): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    ClientAddr(connect): ClientAddr,
    Path(id): Path<String>,
    Query(q): Query<FormatQuery>,
) -> Response {
    let key = [format!(
        "verify:{}",
        client_ip(&headers, connect, app.config().trust_forwarded_for)
    )];
    if let Some(wait) = app.public_limiter().blocked(&key) {
        return too_many(wait);
    }
    app.public_limiter().fail(&key);
    let (id, as_json, whole) = match (q.format.as_deref(), id.strip_suffix(".json")) {
        (Some("json"), _) => (id, true, None),
        (Some("html"), _) => (id, false, None),
        (Some(other), _) => {
            return ErrorPage::response(
                &ctx,
                StatusCode::BAD_REQUEST,
                &format!("Unknown format {other:?}: json or html."),
            );
        }
        (None, Some(g)) => (g.to_owned(), true, Some(id.clone())),
        (None, None) => (id, false, None),
    };
    let fail = |status: StatusCode, message: &str| {
        if as_json {
            json_error(status, message)
        } else {
            ErrorPage::response(&ctx, status, message)
        }
    };
    if !valid_id(&id) {
        return fail(StatusCode::BAD_REQUEST, "not a game or match id");
    }
    let Some(root) = app.data().lake_root().map(std::path::Path::to_path_buf) else {
        return fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "public verification reads the lake, and this server has none",
        );
    };
    let game = id.clone();
    let result = tokio::task::spawn_blocking(move || {
        let lake = Lake::open(&root).map_err(|e| e.to_string())?;
        let first = public_verification(&lake, &game).map_err(|e| e.to_string())?;
        // `X.json` where no game is X: the page of the game `X.json`, if there is one.
        match (&first, whole.filter(|w| valid_id(w))) {
            (Err(NotPublic::Unknown), Some(w)) => public_verification(&lake, &w)
                .map(|r| r.map(|v| (v, false)))
                .map_err(|e| e.to_string()),
            _ => Ok(first.map(|v| (v, as_json))),
        }
    })
    .await;
    let (v, as_json) = match result {
        Ok(Ok(Ok(v))) => v,
        Ok(Ok(Err(NotPublic::Unknown))) => {
            return fail(
                StatusCode::NOT_FOUND,
                "no finished game or match has this id",
            );
        }
        Ok(Ok(Err(NotPublic::NotFinished))) => {
            // The same answer as for an unknown id: nothing about unfinished games.
            return fail(
                StatusCode::NOT_FOUND,
                "no finished game or match has this id",
            );
        }
        Ok(Err(e)) => {
            tracing::warn!(game = %id, error = %e, "public verification failed");
            return fail(
                StatusCode::SERVICE_UNAVAILABLE,
                "the lake could not be read",
            );
        }
        Err(e) => {
            tracing::warn!(game = %id, error = %e, "public verification task failed");
            return fail(StatusCode::INTERNAL_SERVER_ERROR, "verification failed");
        }
    };
    if as_json {
        return Json(v).into_response();
    }
    html(StatusCode::OK, &view(&ctx, &v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recipe_names_the_byte_that_decides_the_die() {
        assert_eq!(deciding_byte("0afc"), Some((0, "0a")));
        // Bytes from fc up are skipped: the face comes from a later one.
        assert_eq!(deciding_byte("fcfe07ff"), Some((2, "07")));
        assert_eq!(deciding_byte("fbff"), Some((0, "fb")));
        assert_eq!(deciding_byte("fcfdfeff"), None);
    }

    #[test]
    fn ids_are_bounded_plain_words() {
        assert!(valid_id("g-2026-11-28-000123"));
        assert!(valid_id("m:1.b_2"));
        assert!(!valid_id(""));
        assert!(!valid_id("../etc/passwd"));
        assert!(!valid_id("a b"));
        assert!(!valid_id(&"x".repeat(129)));
    }

    #[test]
    fn shell_quotes_survive_quotes() {
        assert_eq!(sq("abc"), "'abc'");
        assert_eq!(sq("a'b"), "'a'\\''b'");
    }
}
