//! Page handlers and their view models: queue, account, game replay, dashboards, decisions, audit log, errors.
//!
//! Handlers turn data-source results into plain view structs of strings
//! (formatted here, not in templates) rendered by askama templates that
//! extend `templates/base.html`. The public, console and compliance pages
//! use [`Layout`] the same way.

use std::collections::HashMap;
use std::fmt::Write as _;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::log::syntax::EpochMs;
use crate::log::{Body, Kind};

use super::AppState;
use super::board::{board_html, esc};
use super::charts::{self, ChartKind};
use super::context::{Ctx, account_href, flag_href, found, percent_encode};
use super::data::{
    Cmp, DataError, Day, FindingCategory, QueueQuery, RULES, RecommendedAction, ReviewStatus,
    Severity,
};
use super::frames::{self, Tone};
pub use super::layout::{ErrorPage, Layout, NavLink, html};
use super::users::Role;
use crate::review::{AuditEntry, ReviewAction, ReviewIndex, verify_chain};

fn data_error(ctx: &Ctx, e: &DataError) -> Response {
    let status = match e {
        DataError::NotFound(_) => StatusCode::NOT_FOUND,
        DataError::BadQuery(_) => StatusCode::BAD_REQUEST,
        DataError::Conflict(_) => StatusCode::CONFLICT,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    ErrorPage::response(ctx, status, &e.to_string())
}

/// `YYYY-MM-DD HH:MM` (UTC).
pub fn fmt_time(ms: EpochMs) -> String {
    let s = crate::log::syntax::format_ts(ms);
    format!("{} {}", &s[..10], &s[11..16])
}

/// `YYYY-MM-DD HH:MM:SS.mmm` (UTC).
fn fmt_time_ms(ms: EpochMs) -> String {
    let s = crate::log::syntax::format_ts(ms);
    format!("{} {}", &s[..10], &s[11..23])
}

fn fmt_score(v: f64) -> String {
    format!("{v:.1}")
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn action_label(a: RecommendedAction) -> &'static str {
    match a {
        RecommendedAction::Review => "Review",
        RecommendedAction::BlockRecommended => "Block recommended",
    }
}

fn kind_label(k: Kind) -> &'static str {
    match k {
        Kind::Draughts10 => "International draughts 10×10",
        Kind::Draughts8 => "Brazilian draughts 8×8",
        Kind::Ludo => "Ludo",
        Kind::Belote => "Belote",
    }
}

fn can_review(ctx: &Ctx) -> bool {
    ctx.user
        .as_ref()
        .is_some_and(|u| matches!(u.role, Role::Reviewer | Role::Admin))
}

fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        if v.is_empty() {
            continue;
        }
        s.push(if s.is_empty() { '?' } else { '&' });
        s.push_str(k);
        s.push('=');
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
                s.push(b as char);
            } else {
                let _ = write!(s, "%{b:02X}");
            }
        }
    }
    s
}

/// `GET /healthz`.
pub async fn healthz() -> Response {
    (StatusCode::OK, "ok\n").into_response()
}

/// `GET /`.
pub async fn home() -> Response {
    found("/queue")
}

/// 404 fallback.
pub async fn not_found(ctx: Ctx) -> Response {
    ErrorPage::response(
        &ctx,
        StatusCode::NOT_FOUND,
        "There is no page at this address.",
    )
}

// ----- queue -----

/// Query of `GET /queue`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct QueueParams {
    #[serde(default)]
    rule: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    /// Any text: a number that is not a page (`-1`, empty, too large) shows the first or last
    /// page instead of the framework's plain-text 400.
    #[serde(default)]
    page: String,
}

struct Opt {
    value: String,
    label: String,
    selected: bool,
}

struct ChipVm {
    rule: String,
    title: String,
    status: String,
    severity: String,
    who: String,
}

struct QueueRowVm {
    rank: usize,
    account: String,
    href: String,
    risk: String,
    severity: String,
    action: String,
    action_label: String,
    flags: Vec<ChipVm>,
    games: i64,
    last_seen: String,
    claim: String,
    claim_title: String,
}

#[derive(Template)]
#[template(path = "queue.html")]
struct QueueTpl {
    l: Layout,
    rules: Vec<Opt>,
    kinds: Vec<Opt>,
    statuses: Vec<Opt>,
    from: String,
    to: String,
    rows: Vec<QueueRowVm>,
    showing: String,
    prev: String,
    next: String,
    can_review: bool,
    return_to: String,
    filtered: bool,
}

const STATUS_OPTS: &[(&str, &str)] = &[
    ("active", "Open or claimed"),
    ("open", "Open"),
    ("claimed", "Claimed"),
    ("confirmed", "Confirmed"),
    ("dismissed", "Dismissed"),
    ("all", "Any status"),
];

/// `GET /queue`.
pub async fn queue(
    State(app): State<AppState>,
    ctx: Ctx,
    Query(p): Query<QueueParams>,
) -> Response {
    let bad = |m: String| ErrorPage::response(&ctx, StatusCode::BAD_REQUEST, &m);
    let status = if p.status.is_empty() {
        "active"
    } else {
        p.status.as_str()
    };
    let statuses = match status {
        "active" => vec![ReviewStatus::Open, ReviewStatus::Claimed],
        "all" => vec![],
        s => match ReviewStatus::parse(s) {
            Some(x) => vec![x],
            None => return bad(format!("Unknown status {s:?}.")),
        },
    };
    let kind = if p.kind.is_empty() {
        None
    } else {
        match Kind::parse(&p.kind) {
            Some(k) => Some(k),
            None => return bad(format!("Unknown game kind {:?}.", p.kind)),
        }
    };
    let day = |s: &str, what: &str| -> Result<Option<Day>, String> {
        if s.is_empty() {
            Ok(None)
        } else {
            Day::parse(s)
                .map(Some)
                .ok_or_else(|| format!("The {what} date must be YYYY-MM-DD, got {s:?}."))
        }
    };
    let (from, to) = match (day(&p.from, "from"), day(&p.to, "to")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => return bad(m),
    };
    if p.rule.len() > 64 {
        return bad("The rule id is too long.".to_owned());
    }
    let digits = p.page.trim();
    let page = match digits.parse::<u64>() {
        Ok(n) => n.clamp(1, 100_000) as u32,
        // A number too large for 64 bits is past every page.
        Err(_) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => 100_000,
        Err(_) => 1,
    };
    let q = QueueQuery {
        rule: (!p.rule.is_empty()).then(|| p.rule.clone()),
        kind,
        statuses,
        from,
        to,
        page: page - 1,
        per_page: 25,
    };
    let result = match app.data().queue(&q).await {
        Ok(r) => r,
        Err(e) => return data_error(&ctx, &e),
    };
    let base_pairs = |page: u32| -> String {
        let page = page.to_string();
        query_string(&[
            ("rule", &p.rule),
            ("kind", &p.kind),
            ("status", if status == "active" { "" } else { status }),
            ("from", &p.from),
            ("to", &p.to),
            ("page", if page == "1" { "" } else { &page }),
        ])
    };
    let pages = result.pages();
    let this_url = format!("/queue{}", base_pairs(page));
    let offset = (page as usize - 1) * 25;
    let rows = result
        .items
        .iter()
        .enumerate()
        .map(|(i, r)| {
            // The claim button claims the account's highest-scoring open flag among those the
            // filters matched (a queue filtered on one rule claims that rule's flag).
            let top_open = r
                .flags
                .iter()
                .filter(|f| f.review.status == ReviewStatus::Open)
                .find(|f| q.matches(f))
                .or_else(|| {
                    r.flags
                        .iter()
                        .find(|f| f.review.status == ReviewStatus::Open)
                });
            QueueRowVm {
                rank: offset + i + 1,
                account: r.account.clone(),
                href: account_href(&r.account),
                risk: fmt_score(r.risk),
                severity: r.max_severity.as_str().to_owned(),
                action: r.action.as_str().to_owned(),
                action_label: action_label(r.action).to_owned(),
                flags: r
                    .flags
                    .iter()
                    .map(|f| ChipVm {
                        rule: f.rule.clone(),
                        title: f.title.clone(),
                        status: f.review.status.as_str().to_owned(),
                        severity: f.severity.as_str().to_owned(),
                        who: f.review.claimed_by.clone().unwrap_or_default(),
                    })
                    .collect(),
                games: r.games,
                last_seen: fmt_time(r.last_seen),
                claim: top_open.map(|f| f.id.clone()).unwrap_or_default(),
                claim_title: top_open.map(|f| f.title.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let mut rules: Vec<Opt> = vec![Opt {
        value: String::new(),
        label: "Any rule".to_owned(),
        selected: p.rule.is_empty(),
    }];
    rules.extend(RULES.iter().map(|(id, title)| Opt {
        value: (*id).to_owned(),
        label: format!("{title} ({id})"),
        selected: p.rule == *id,
    }));
    if !p.rule.is_empty() && !RULES.iter().any(|(id, _)| *id == p.rule) {
        rules.push(Opt {
            value: p.rule.clone(),
            label: p.rule.clone(),
            selected: true,
        });
    }
    let mut kinds = vec![Opt {
        value: String::new(),
        label: "Any game".to_owned(),
        selected: kind.is_none(),
    }];
    kinds.extend(Kind::ALL.iter().map(|k| Opt {
        value: k.as_str().to_owned(),
        label: kind_label(*k).to_owned(),
        selected: kind == Some(*k),
    }));
    let statuses = STATUS_OPTS
        .iter()
        .map(|(v, l)| Opt {
            value: (*v).to_owned(),
            label: (*l).to_owned(),
            selected: *v == status,
        })
        .collect();
    let shown = result.items.len();
    let past_end = result.total > 0 && shown == 0;
    let showing = if result.total == 0 {
        "No flagged account matches these filters.".to_owned()
    } else if past_end {
        format!(
            "Page {page} is past the end: {} accounts on {pages} page(s).",
            result.total
        )
    } else {
        format!(
            "{}–{} of {} accounts · page {page} of {pages}",
            offset + 1,
            offset + shown,
            result.total
        )
    };
    let t = QueueTpl {
        l: Layout::new(&ctx, "Review queue"),
        rules,
        kinds,
        statuses,
        from: p.from.clone(),
        to: p.to.clone(),
        rows,
        showing,
        prev: if past_end {
            format!("/queue{}", base_pairs(pages.max(1)))
        } else if page > 1 {
            format!("/queue{}", base_pairs(page - 1))
        } else {
            String::new()
        },
        next: if page < pages {
            format!("/queue{}", base_pairs(page + 1))
        } else {
            String::new()
        },
        can_review: can_review(&ctx),
        return_to: this_url,
        filtered: !(p.rule.is_empty()
            && p.kind.is_empty()
            && p.from.is_empty()
            && p.to.is_empty()
            && status == "active"),
    };
    html(StatusCode::OK, &t)
}

// ----- account -----

struct CountVm {
    name: String,
    value: i64,
}

struct FeatVm {
    name: String,
    value: String,
    cmp: String,
    threshold: String,
}

struct RefVm {
    href: String,
    seq: i64,
}

/// A flag's events in one game: the first (the earliest, the one to look at) linked with the game,
/// the others as short links after it.
struct RefGameVm {
    game: String,
    href: String,
    first_seq: i64,
    /// What the events are, with how many of each (`not_own_piece ×8 · wrong_direction ×5`).
    kinds: String,
    /// (name, count) behind `kinds`, in the order first met.
    named: Vec<(String, usize)>,
    count: usize,
    more: Vec<RefVm>,
}

/// Games listed per flag on the account page; the rest are counted.
const REF_GAMES_SHOWN: usize = 40;
/// Further events linked per game.
const REF_SEQS_SHOWN: usize = 8;

/// A flag's evidence events grouped per game, games in the order of their first event.
fn ref_games(refs: &[crate::serve::data::EvidenceRef], account: &str) -> Vec<RefGameVm> {
    let focus = format!("&for={}", percent_encode(account, false));
    let mut out: Vec<RefGameVm> = Vec::new();
    for r in refs {
        let href = seq_href(&r.game, r.seq, &focus);
        let g = match out.iter().position(|g| g.game == r.game) {
            Some(i) => {
                let g = &mut out[i];
                g.count += 1;
                if g.more.len() < REF_SEQS_SHOWN {
                    g.more.push(RefVm { href, seq: r.seq });
                }
                g
            }
            None => {
                out.push(RefGameVm {
                    game: r.game.clone(),
                    href,
                    first_seq: r.seq,
                    kinds: String::new(),
                    named: Vec::new(),
                    count: 1,
                    more: Vec::new(),
                });
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        if !r.note.is_empty() {
            match g.named.iter_mut().find(|(n, _)| *n == r.note) {
                Some((_, k)) => *k += 1,
                None => g.named.push((r.note.clone(), 1)),
            }
        }
    }
    for g in &mut out {
        g.kinds = g
            .named
            .iter()
            .map(|(n, k)| {
                if *k > 1 {
                    format!("{n} ×{k}")
                } else {
                    n.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" · ");
    }
    out
}

/// The evidence notes with how unusual the account is first: the p-value, the baseline, the
/// platform's rate and the percentile, then the rest in their order.
fn stats_first(notes: &[(String, String)]) -> Vec<(String, String)> {
    let rank = |k: &str| {
        if k == "p_value" {
            0
        } else if k.starts_with("baseline") || k.starts_with("platform") || k.contains("percentile")
        {
            1
        } else {
            2
        }
    };
    let mut v = notes.to_vec();
    v.sort_by_key(|(k, _)| rank(k));
    v
}

struct FlagVm {
    id: String,
    rule: String,
    title: String,
    window: String,
    score: String,
    severity: String,
    first_seen: String,
    last_seen: String,
    kinds: String,
    status: String,
    claimed_by: String,
    decision: String,
    last_reason: String,
    updated: String,
    counts: Vec<CountVm>,
    features: Vec<FeatVm>,
    notes: Vec<(String, String)>,
    ref_games: Vec<RefGameVm>,
    ref_games_hidden: usize,
    ref_total: usize,
    can_claim: bool,
    can_decide: bool,
    can_reopen: bool,
    return_to: String,
    /// The flag's state as this page shows it (the forms' `seen` field).
    seen: String,
}

struct ChartVm {
    label: String,
    svg: String,
    latest: String,
    threshold: String,
}

struct LinkedVm {
    account: String,
    href: String,
    via: String,
    hash: String,
    games: i64,
    flagged: bool,
}

struct OppVm {
    account: String,
    href: String,
    games: i64,
    record: String,
    net: String,
    net_class: String,
    flagged: bool,
}

struct DecisionVm {
    seq: u64,
    at: String,
    actor: String,
    role: String,
    action: String,
    flag: String,
    flag_title: String,
    account: String,
    account_href: String,
    href: String,
    decision: String,
    reason: String,
    transition: String,
    current: String,
    superseded: bool,
}

struct HistVm {
    at: String,
    by: String,
    decision: String,
    reason: String,
    source: String,
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountTpl {
    l: Layout,
    account: String,
    severity: String,
    score: String,
    action: String,
    action_label: String,
    games: i64,
    first_seen: String,
    last_seen: String,
    open_flags: usize,
    flags: Vec<FlagVm>,
    charts: Vec<ChartVm>,
    linked: Vec<LinkedVm>,
    opponents: Vec<OppVm>,
    decisions: Vec<DecisionVm>,
    history: Vec<HistVm>,
    can_review: bool,
    analysis: Option<AnalysisVm>,
}

/// The account's analysed draughts moves against the population's.
struct AnalysisVm {
    positions: i64,
    games: i64,
    average_loss: String,
    match_rate: String,
    accounts: usize,
    loss_percentile: String,
    match_percentile: String,
    loss_svg: String,
    match_svg: String,
}

fn analysis_vm(a: &super::data::AccountAnalysis) -> AnalysisVm {
    use super::analysis_view::distribution_svg;
    use super::data::AccountAnalysis;
    let losses: Vec<f64> = a.population.iter().map(|p| p.0).collect();
    let rates: Vec<f64> = a.population.iter().map(|p| p.1).collect();
    let pct = |v: Option<f64>| {
        v.map(|p| format!("{:.0}", p * 100.0))
            .unwrap_or_else(|| "—".to_owned())
    };
    AnalysisVm {
        positions: a.positions,
        games: a.games,
        average_loss: format!("{:.1}", a.average_loss),
        match_rate: format!("{:.1} %", a.match_rate * 100.0),
        accounts: a.population.len(),
        loss_percentile: pct(AccountAnalysis::percentile(
            losses.iter().copied(),
            a.average_loss,
        )),
        match_percentile: pct(AccountAnalysis::percentile(
            rates.iter().copied(),
            a.match_rate,
        )),
        loss_svg: distribution_svg(&losses, a.average_loss, "Average loss per move", |v| {
            format!("{v:.0}")
        }),
        match_svg: distribution_svg(&rates, a.match_rate, "Engine match rate", |v| {
            format!("{:.0} %", v * 100.0)
        }),
    }
}

fn decision_vm(
    e: &AuditEntry,
    titles: &HashMap<String, String>,
    idx: Option<&ReviewIndex>,
) -> DecisionVm {
    let current = idx.map(|i| i.get(&e.flag).status);
    DecisionVm {
        seq: e.seq,
        at: fmt_time(e.at),
        actor: e.actor.clone(),
        role: e.role.as_str().to_owned(),
        action: e.action.as_str().to_owned(),
        flag: e.flag.clone(),
        flag_title: titles.get(&e.flag).cloned().unwrap_or_default(),
        account: e.account.clone(),
        account_href: account_href(&e.account),
        href: flag_href(&e.account, &e.flag),
        decision: e
            .decision
            .map(|d| d.as_str().to_owned())
            .unwrap_or_default(),
        reason: e.reason.clone(),
        transition: format!("{} → {}", e.prev_state, e.new_state),
        current: current.map(|s| s.as_str().to_owned()).unwrap_or_default(),
        superseded: current.is_some_and(|s| s != e.new_state),
    }
}

/// `GET /account/{id}`.
pub async fn account(State(app): State<AppState>, ctx: Ctx, Path(id): Path<String>) -> Response {
    let view = match app.data().account(&id).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return ErrorPage::response(
                &ctx,
                StatusCode::NOT_FOUND,
                &format!("No account {id} in the lake."),
            );
        }
        Err(e) => return data_error(&ctx, &e),
    };
    let audit = match app.data().audit_log().await {
        Ok(a) => a,
        Err(e) => return data_error(&ctx, &e),
    };
    let user = ctx.user.as_ref();
    let reviewer = can_review(&ctx);
    let titles: HashMap<String, String> = view
        .flags
        .iter()
        .map(|f| (f.id.clone(), f.title.clone()))
        .collect();
    let flags = view
        .flags
        .iter()
        .map(|f| {
            let r = &f.review;
            let mine = user.is_some_and(|u| r.claimed_by.as_deref() == Some(u.name.as_str()));
            let admin = user.is_some_and(|u| u.role == Role::Admin);
            let mut games = ref_games(&f.evidence.refs, &view.account);
            let ref_games_hidden = games.len().saturating_sub(REF_GAMES_SHOWN);
            games.truncate(REF_GAMES_SHOWN);
            FlagVm {
                id: f.id.clone(),
                rule: f.rule.clone(),
                title: f.title.clone(),
                window: f.window.as_str().to_owned(),
                score: fmt_score(f.score),
                severity: f.severity.as_str().to_owned(),
                first_seen: fmt_time(f.first_seen),
                last_seen: fmt_time(f.last_seen),
                kinds: f
                    .kinds
                    .iter()
                    .map(|k| kind_label(*k))
                    .collect::<Vec<_>>()
                    .join(", "),
                status: r.status.as_str().to_owned(),
                claimed_by: r.claimed_by.clone().unwrap_or_default(),
                decision: r
                    .decision
                    .map(|d| d.as_str().to_owned())
                    .unwrap_or_default(),
                last_reason: r.last_reason.clone().unwrap_or_default(),
                updated: match (&r.updated_by, r.updated_at) {
                    (Some(by), Some(at)) => format!("{by}, {}", fmt_time(at)),
                    _ => String::new(),
                },
                counts: f
                    .evidence
                    .counts
                    .iter()
                    .map(|c| CountVm {
                        name: c.name.clone(),
                        value: c.value,
                    })
                    .collect(),
                features: f
                    .evidence
                    .features
                    .iter()
                    .map(|x| FeatVm {
                        name: x.name.clone(),
                        value: fmt_value(x.value),
                        cmp: x.cmp.as_str().to_owned(),
                        threshold: fmt_value(x.threshold),
                    })
                    .collect(),
                notes: stats_first(&f.evidence.notes),
                ref_games: games,
                ref_games_hidden,
                ref_total: f.evidence.refs.len(),
                can_claim: reviewer && r.status == ReviewStatus::Open,
                can_decide: reviewer && r.status == ReviewStatus::Claimed && (mine || admin),
                can_reopen: reviewer && r.status != ReviewStatus::Open,
                return_to: flag_href(&view.account, &f.id),
                seen: super::review::seen(r),
            }
        })
        .collect();
    let charts = view
        .series
        .iter()
        .map(|s| {
            let d = charts::ChartData {
                x: s.points.iter().map(|(d, _)| d.to_string()).collect(),
                series: vec![(
                    s.label.clone(),
                    s.points.iter().map(|(_, v)| Some(*v)).collect(),
                )],
            };
            ChartVm {
                label: s.label.clone(),
                svg: charts::line_svg(
                    &d,
                    charts::Frame { w: 520.0, h: 170.0 },
                    &s.label,
                    s.threshold,
                ),
                latest: s
                    .points
                    .last()
                    .map(|(_, v)| fmt_value(*v))
                    .unwrap_or_default(),
                threshold: s.threshold.map(fmt_value).unwrap_or_default(),
            }
        })
        .collect();
    let idx = ReviewIndex::from_entries(&audit);
    let mut decisions: Vec<DecisionVm> = audit
        .iter()
        .filter(|e| e.account == view.account)
        .map(|e| decision_vm(e, &titles, Some(&idx)))
        .collect();
    decisions.reverse();
    let s = &view.summary;
    let t = AccountTpl {
        l: Layout::new(&ctx, &format!("Account {}", view.account)),
        account: view.account.clone(),
        severity: s.max_severity.as_str().to_owned(),
        score: fmt_score(s.total_score),
        action: s.action.as_str().to_owned(),
        action_label: action_label(s.action).to_owned(),
        games: s.games,
        first_seen: s.first_seen.map(fmt_time).unwrap_or_default(),
        last_seen: s.last_seen.map(fmt_time).unwrap_or_default(),
        open_flags: view
            .flags
            .iter()
            .filter(|f| matches!(f.review.status, ReviewStatus::Open | ReviewStatus::Claimed))
            .count(),
        flags,
        charts,
        linked: view
            .linked
            .iter()
            .map(|l| LinkedVm {
                account: l.account.clone(),
                href: account_href(&l.account),
                via: l.via.as_str().to_owned(),
                hash: l.hash.clone(),
                games: l.games_together,
                flagged: l.flagged,
            })
            .collect(),
        opponents: view
            .opponents
            .iter()
            .map(|o| OppVm {
                account: o.account.clone(),
                href: account_href(&o.account),
                games: o.games,
                record: format!("{}–{}", o.wins, o.losses),
                net: format!("{:+}", o.net_stake),
                net_class: if o.net_stake < 0 {
                    "neg".to_owned()
                } else if o.net_stake > 0 {
                    "pos".to_owned()
                } else {
                    String::new()
                },
                flagged: o.flagged,
            })
            .collect(),
        decisions,
        analysis: view.analysis.as_ref().map(analysis_vm),
        history: view
            .history
            .iter()
            .map(|h| HistVm {
                at: fmt_time(h.at),
                by: h.by.clone(),
                decision: h.decision.clone(),
                reason: h.reason.clone(),
                source: h.source.clone(),
            })
            .collect(),
        can_review: reviewer,
    };
    html(StatusCode::OK, &t)
}

// ----- game -----

/// Query of `GET /game/{id}`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct GameParams {
    seq: Option<i64>,
    /// The account whose evidence led here (`for=`): its seat and its events are marked.
    #[serde(rename = "for")]
    focus: Option<String>,
}

/// A link to event `seq` of game `id`, keeping the marked account (`focus`: "" or `&for=...`).
fn seq_href(id: &str, seq: i64, focus: &str) -> String {
    format!("/game/{id}?seq={seq}{focus}")
}

struct PlayerVm {
    account: String,
    href: String,
    /// The account the page was opened for.
    focus: bool,
    seat: String,
    outcome: String,
    net: String,
    net_class: String,
    device: String,
    ip: String,
}

struct FindingVm {
    seq: i64,
    href: String,
    code: String,
    category: String,
    severity: String,
    account: String,
    expected: String,
    logged: String,
    message: String,
}

/// Events a game page's timeline lists before it shows a window around the current one.
const TIMELINE_MAX: usize = 500;
/// Findings a game page lists one per row before it groups them by code and account.
const FINDINGS_MAX: usize = 200;

/// A link over the timeline events a long game's page leaves out.
struct TlGapVm {
    count: usize,
    href: String,
}

/// The findings of one code for one account in a game with too many to list.
struct FindingGroupVm {
    code: String,
    category: String,
    severity: String,
    account: String,
    count: usize,
    first_seq: i64,
    first_href: String,
    last_seq: i64,
    last_href: String,
    message: String,
}

/// The timeline window of a game page: all events when there are at most [`TIMELINE_MAX`],
/// else [`TIMELINE_MAX`] events centred on the current one (the range of frame indices).
fn timeline_window(total: usize, index: usize) -> std::ops::Range<usize> {
    if total <= TIMELINE_MAX {
        return 0..total;
    }
    let start = index
        .saturating_sub(TIMELINE_MAX / 2)
        .min(total - TIMELINE_MAX);
    start..start + TIMELINE_MAX
}

/// Findings grouped by code and account, in the order of their first seq.
fn finding_groups(id: &str, focus: &str, findings: &[super::data::Finding]) -> Vec<FindingGroupVm> {
    let mut at: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    let mut out: Vec<FindingGroupVm> = Vec::new();
    for f in findings {
        let key = (f.code.as_str(), f.account.as_deref());
        let href = seq_href(id, f.seq, focus);
        match at.get(&key) {
            Some(&i) => {
                let g = &mut out[i];
                g.count += 1;
                if f.seq < g.first_seq {
                    g.first_seq = f.seq;
                    g.first_href = href;
                    g.message = f.message.clone();
                } else if f.seq > g.last_seq {
                    g.last_seq = f.seq;
                    g.last_href = href;
                }
            }
            None => {
                at.insert(key, out.len());
                out.push(FindingGroupVm {
                    code: f.code.clone(),
                    category: f.category.as_str().to_owned(),
                    severity: f.severity.as_str().to_owned(),
                    account: f.account.clone().unwrap_or_default(),
                    count: 1,
                    first_seq: f.seq,
                    first_href: href.clone(),
                    last_seq: f.seq,
                    last_href: href,
                    message: f.message.clone(),
                });
            }
        }
    }
    out.sort_by_key(|g| g.first_seq);
    out
}

struct TlVm {
    seq: i64,
    href: String,
    summary: String,
    tone: String,
    current: bool,
    /// An event of the account the page was opened for.
    mine: bool,
    codes: String,
}

#[derive(Template)]
#[template(path = "game.html")]
struct GameTpl {
    l: Layout,
    id: String,
    /// The account the page was opened for, when it played here ("" otherwise).
    focus: String,
    kind: String,
    mode: String,
    variant: String,
    rated: bool,
    stake: String,
    started: String,
    ended: String,
    result_logged: String,
    result_replayed: String,
    mismatch: bool,
    fairness: String,
    desynced: bool,
    players: Vec<PlayerVm>,
    board: String,
    seq: i64,
    position: usize,
    total: usize,
    ts: String,
    summary: String,
    tone: String,
    verdict: String,
    error: String,
    raw: String,
    here: Vec<FindingVm>,
    first: String,
    prev: String,
    next: String,
    last: String,
    timeline: Vec<TlVm>,
    /// The events before the timeline's window (long games only).
    timeline_before: Option<TlGapVm>,
    /// The events after it.
    timeline_after: Option<TlGapVm>,
    /// Every finding, one per row (at most [`FINDINGS_MAX`]).
    findings: Vec<FindingVm>,
    /// Or, when there are more, grouped by code and account.
    finding_groups: Vec<FindingGroupVm>,
    /// How many findings the game has.
    finding_count: usize,
    missing_seq: String,
    replay_errors: usize,
    /// The evaluation graph (empty when the game was not analysed).
    eval_graph: String,
    /// Why there is no analysis, or what made it.
    analysis_note: String,
    /// Per player: analysed moves, average loss, best moves, blunders.
    analysis_players: Vec<AnalysedPlayerVm>,
    /// The engine's judgement of the move at this seq.
    engine: Option<EngineVm>,
}

struct AnalysedPlayerVm {
    account: String,
    href: String,
    moves: usize,
    average_loss: String,
    best: usize,
    blunders: usize,
    hard: String,
}

struct EngineVm {
    line: String,
    played: String,
    best: String,
    loss: i64,
    matched: bool,
    board: String,
}

/// The game page's analysis parts.
#[derive(Default)]
struct GameAnalysisVm {
    /// The evaluation graph (empty when the game was not analysed).
    graph: String,
    /// Why there is no analysis, or what made it.
    note: String,
    /// Per player: judged moves, average loss, best moves, blunders.
    players: Vec<AnalysedPlayerVm>,
    /// The engine's judgement of the move at the frame shown.
    engine: Option<EngineVm>,
}

/// The game page's analysis parts for the frame at `index`.
fn analysis_parts(
    id: &str,
    focus: &str,
    view: &super::data::GameView,
    fr: &[frames::Frame],
    index: usize,
) -> GameAnalysisVm {
    use super::analysis_view::{self as av, BLUNDER};
    use crate::log::Mode;
    let s = &view.summary;
    if !matches!(s.kind, Kind::Draughts10 | Kind::Draughts8) {
        return GameAnalysisVm::default();
    }
    if view.analysis.is_empty() {
        let note = if s.mode == Mode::Medieval {
            "Medieval games are not analysed: the engine does not model duels."
        } else if !s.rated {
            "Not analysed: only rated games are."
        } else {
            "Not analysed (vigie analyse judges the games of flagged accounts, of unusual win rates and a sample of the rest)."
        };
        return GameAnalysisVm {
            note: note.to_owned(),
            ..GameAnalysisVm::default()
        };
    }
    let white = fr
        .iter()
        .find_map(|f| match &f.board {
            frames::Board::Draughts(b) => Some(b.white.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let cur = &fr[index];
    let graph = av::eval_graph_svg(id, focus, &view.analysis, &white, cur.seq);
    let note = format!(
        "Judged by {}; scores in hundredths of a man, White's side up.",
        view.analysis[0].engine
    );
    let mut players: Vec<AnalysedPlayerVm> = Vec::new();
    for p in &s.players {
        let mine: Vec<_> = view
            .analysis
            .iter()
            .filter(|j| j.player == p.account && !j.forced && !j.auto)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let hard: Vec<_> = mine.iter().filter(|j| j.hard).collect();
        players.push(AnalysedPlayerVm {
            account: p.account.clone(),
            href: account_href(&p.account),
            moves: mine.len(),
            average_loss: format!(
                "{:.1}",
                mine.iter().map(|j| j.loss as f64).sum::<f64>() / mine.len() as f64
            ),
            best: mine.iter().filter(|j| j.matched).count(),
            blunders: mine.iter().filter(|j| j.loss >= BLUNDER).count(),
            hard: format!(
                "{} of {}",
                hard.iter().filter(|j| j.matched).count(),
                hard.len()
            ),
        });
    }
    let engine = view
        .analysis
        .iter()
        .find(|j| j.seq == cur.seq)
        .map(|j| EngineVm {
            line: av::describe(j),
            played: j.played.clone(),
            best: j.best.clone(),
            loss: j.loss,
            matched: j.matched,
            board: match index.checked_sub(1).map(|i| &fr[i].board) {
                Some(frames::Board::Draughts(b)) => av::engine_board(b, j),
                _ => String::new(),
            },
        });
    GameAnalysisVm {
        graph,
        note,
        players,
        engine,
    }
}

fn finding_vm(id: &str, focus: &str, f: &super::data::Finding) -> FindingVm {
    FindingVm {
        seq: f.seq,
        href: seq_href(id, f.seq, focus),
        code: f.code.clone(),
        category: f.category.as_str().to_owned(),
        severity: f.severity.as_str().to_owned(),
        account: f.account.clone().unwrap_or_default(),
        expected: f.expected.clone().unwrap_or_default(),
        logged: f.logged.clone().unwrap_or_default(),
        message: f.message.clone(),
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut o: String = s.chars().take(max.saturating_sub(1)).collect();
        o.push('…');
        o
    }
}

/// `GET /game/{id}?seq=N`.
pub async fn game(
    State(app): State<AppState>,
    ctx: Ctx,
    Path(id): Path<String>,
    Query(p): Query<GameParams>,
) -> Response {
    let view = match app.data().game(&id).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return ErrorPage::response(
                &ctx,
                StatusCode::NOT_FOUND,
                &format!("No game {id} in the lake."),
            );
        }
        Err(e) => return data_error(&ctx, &e),
    };
    let fr = frames::frames(&view);
    if fr.is_empty() {
        return ErrorPage::response(
            &ctx,
            StatusCode::NOT_FOUND,
            &format!("Game {id} has no events."),
        );
    }
    let mut missing_seq = String::new();
    let index = match p.seq {
        None => 0,
        Some(seq) => match fr.iter().position(|f| f.seq == seq) {
            Some(i) => i,
            None => {
                missing_seq =
                    format!("This game has no event with seq {seq}; showing the nearest one.");
                fr.iter()
                    .enumerate()
                    .min_by_key(|(_, f)| f.seq.abs_diff(seq))
                    .map_or(0, |(i, _)| i)
            }
        },
    };
    let cur = &fr[index];
    // The account whose evidence led here, when it played in this game: marked, and kept in links.
    let focus = p
        .focus
        .filter(|a| view.summary.players.iter().any(|pl| &pl.account == a))
        .unwrap_or_default();
    let focus_q = if focus.is_empty() {
        String::new()
    } else {
        format!("&for={}", percent_encode(&focus, false))
    };
    let href = |i: usize| seq_href(&id, fr[i].seq, &focus_q);
    let mut codes_at: HashMap<i64, Vec<String>> = HashMap::new();
    for f in &view.findings {
        codes_at.entry(f.seq).or_default().push(f.code.clone());
    }
    let window = timeline_window(fr.len(), index);
    // A gap's link centres the next window just past the one shown.
    let timeline_before = (window.start > 0).then(|| TlGapVm {
        count: window.start,
        href: href(window.start.saturating_sub(TIMELINE_MAX / 2)),
    });
    let timeline_after = (window.end < fr.len()).then(|| TlGapVm {
        count: fr.len() - window.end,
        href: href((window.end + TIMELINE_MAX / 2).min(fr.len() - 1)),
    });
    let timeline = fr[window]
        .iter()
        .map(|f| TlVm {
            seq: f.seq,
            href: href(f.index),
            summary: shorten(&f.summary, 90),
            tone: f.tone.class().to_owned(),
            current: f.index == index,
            mine: !focus.is_empty() && f.actor.as_deref() == Some(focus.as_str()),
            codes: codes_at
                .get(&f.seq)
                .map(|v| v.join(", "))
                .unwrap_or_default(),
        })
        .collect();
    let s = &view.summary;
    let mut ended_body = None;
    for le in &view.events {
        if let Body::GameEnded(g) = &le.event.body {
            ended_body = Some(g.clone());
        }
    }
    let players = s
        .players
        .iter()
        .map(|pl| PlayerVm {
            account: pl.account.clone(),
            href: account_href(&pl.account),
            focus: pl.account == focus,
            seat: pl.seat.as_str().to_owned(),
            outcome: pl.outcome.clone().unwrap_or_default(),
            net: pl.net.map(|n| format!("{n:+}")).unwrap_or_default(),
            net_class: match pl.net {
                Some(n) if n < 0 => "neg".to_owned(),
                Some(n) if n > 0 => "pos".to_owned(),
                _ => String::new(),
            },
            device: pl.device.clone(),
            ip: pl.ip.clone(),
        })
        .collect();
    let result = |r: &Option<String>, why: &Option<String>| match (r, why) {
        (Some(r), Some(w)) => format!("{r} ({w})"),
        (Some(r), None) => r.clone(),
        _ => "—".to_owned(),
    };
    let _ = ended_body;
    let raw = view
        .events
        .get(index)
        .map(|e| pretty_json(&e.raw))
        .unwrap_or_default();
    let analysis = analysis_parts(&id, &focus_q, &view, &fr, index);
    let t = GameTpl {
        l: Layout::new(&ctx, &format!("Game {id}")),
        id: id.clone(),
        focus: focus.clone(),
        kind: kind_label(s.kind).to_owned(),
        mode: s.mode.as_str().to_owned(),
        variant: s.variant.clone().unwrap_or_default(),
        rated: s.rated,
        stake: format!("{} {}", s.stake, s.currency),
        started: fmt_time(s.started_at),
        ended: s
            .ended_at
            .map(fmt_time)
            .unwrap_or_else(|| "running".to_owned()),
        result_logged: result(&s.result_logged, &s.reason_logged),
        result_replayed: result(&s.result_replayed, &s.reason_replayed),
        mismatch: s.result_logged != s.result_replayed || s.reason_logged != s.reason_replayed,
        fairness: s.fairness.clone(),
        desynced: s.desynced,
        players,
        board: board_html(&cur.board),
        seq: cur.seq,
        position: index + 1,
        total: fr.len(),
        ts: fmt_time_ms(cur.ts),
        summary: cur.summary.clone(),
        tone: cur.tone.class().to_owned(),
        verdict: cur.verdict.clone().unwrap_or_default(),
        error: cur.error.clone().unwrap_or_default(),
        raw,
        here: view
            .findings
            .iter()
            .filter(|f| f.seq == cur.seq)
            .map(|f| finding_vm(&id, &focus_q, f))
            .collect(),
        first: if index > 0 { href(0) } else { String::new() },
        prev: if index > 0 {
            href(index - 1)
        } else {
            String::new()
        },
        next: if index + 1 < fr.len() {
            href(index + 1)
        } else {
            String::new()
        },
        last: if index + 1 < fr.len() {
            href(fr.len() - 1)
        } else {
            String::new()
        },
        timeline,
        timeline_before,
        timeline_after,
        findings: if view.findings.len() <= FINDINGS_MAX {
            view.findings
                .iter()
                .map(|f| finding_vm(&id, &focus_q, f))
                .collect()
        } else {
            Vec::new()
        },
        finding_groups: if view.findings.len() > FINDINGS_MAX {
            finding_groups(&id, &focus_q, &view.findings)
        } else {
            Vec::new()
        },
        finding_count: view.findings.len(),
        missing_seq,
        replay_errors: fr.iter().filter(|f| f.tone == Tone::Error).count(),
        eval_graph: analysis.graph,
        analysis_note: analysis.note,
        analysis_players: analysis.players,
        engine: analysis.engine,
    };
    html(StatusCode::OK, &t)
}

/// Re-indents a JSON line for reading (falls back to the raw text).
fn pretty_json(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| raw.to_owned()),
        Err(_) => raw.to_owned(),
    }
}

// ----- dashboards -----

struct PanelVm {
    title: String,
    query: String,
    body: String,
    error: String,
    wide: bool,
}

struct DashVm {
    id: String,
    title: String,
    description: String,
    panels: Vec<PanelVm>,
}

#[derive(Template)]
#[template(path = "dashboards.html")]
struct DashboardsTpl {
    l: Layout,
    dashboards: Vec<DashVm>,
}

/// `GET /dashboards`.
pub async fn dashboards(State(app): State<AppState>, ctx: Ctx) -> Response {
    let mut out = Vec::new();
    for d in app.dashboards() {
        let mut panels = Vec::new();
        for p in &d.panels {
            let (body, error) = match app.data().panel(&p.query).await {
                Err(e) => (String::new(), e.to_string()),
                Ok(table) => match p.chart {
                    ChartKind::Table => (charts::table_html(&table, 50), String::new()),
                    kind => match charts::pivot(&table, &p.x, &p.y, p.series.as_deref()) {
                        Err(e) => (String::new(), e),
                        Ok(data) if data.x.is_empty() => (String::new(), "No data.".to_owned()),
                        Ok(mut data) => {
                            if let Some(v) = p.fill {
                                charts::fill_missing(&mut data, v);
                            }
                            let f = charts::Frame::default();
                            let svg = match kind {
                                ChartKind::Line => charts::line_svg(&data, f, &p.title, None),
                                ChartKind::StackedBar => charts::bar_svg(&data, f, &p.title, true),
                                _ => charts::bar_svg(&data, f, &p.title, false),
                            };
                            (format!("{svg}{}", charts::legend(&data)), String::new())
                        }
                    },
                },
            };
            panels.push(PanelVm {
                title: p.title.clone(),
                query: p.query.clone(),
                body,
                error,
                wide: p.chart == ChartKind::Table,
            });
        }
        out.push(DashVm {
            id: d.id.clone(),
            title: d.title.clone(),
            description: d.description.clone(),
            panels,
        });
    }
    html(
        StatusCode::OK,
        &DashboardsTpl {
            l: Layout::new(&ctx, "Dashboards"),
            dashboards: out,
        },
    )
}

// ----- decisions and audit -----

#[derive(Template)]
#[template(path = "decisions.html")]
struct DecisionsTpl {
    l: Layout,
    rows: Vec<DecisionVm>,
    confirmed: usize,
    dismissed: usize,
    reopened: usize,
}

/// `GET /decisions`.
pub async fn decisions(State(app): State<AppState>, ctx: Ctx) -> Response {
    let audit = match app.data().audit_log().await {
        Ok(a) => a,
        Err(e) => return data_error(&ctx, &e),
    };
    let idx = ReviewIndex::from_entries(&audit);
    let titles = HashMap::new();
    let mut rows: Vec<DecisionVm> = audit
        .iter()
        .filter(|e| e.action != ReviewAction::Claim)
        .map(|e| decision_vm(e, &titles, Some(&idx)))
        .collect();
    rows.reverse();
    let count = |a: ReviewAction| audit.iter().filter(|e| e.action == a).count();
    html(
        StatusCode::OK,
        &DecisionsTpl {
            l: Layout::new(&ctx, "Decisions"),
            confirmed: count(ReviewAction::Confirm),
            dismissed: count(ReviewAction::Dismiss),
            reopened: count(ReviewAction::Reopen),
            rows,
        },
    )
}

struct AuditVm {
    seq: u64,
    at: String,
    actor: String,
    role: String,
    action: String,
    flag: String,
    account: String,
    account_href: String,
    href: String,
    reason: String,
    decision: String,
    transition: String,
    hash: String,
    prev: String,
    broken: bool,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditTpl {
    l: Layout,
    ok: bool,
    verdict: String,
    detail: String,
    head: String,
    entries: usize,
    rows: Vec<AuditVm>,
}

/// `GET /audit`.
pub async fn audit(State(app): State<AppState>, ctx: Ctx) -> Response {
    let (entries, load_error) = match app.data().audit_log().await {
        Ok(a) => (a, None),
        Err(e @ DataError::Corrupt(_)) => (Vec::new(), Some(e.to_string())),
        Err(e) => return data_error(&ctx, &e),
    };
    let report = verify_chain(&entries);
    let (ok, verdict, detail) = match (&load_error, &report.broken) {
        (Some(e), _) => (
            false,
            "The audit log cannot be read: it was altered.".to_owned(),
            e.clone(),
        ),
        (None, Some(b)) => (
            false,
            format!(
                "Chain broken at entry {} (position {}).",
                b.seq,
                b.index + 1
            ),
            b.reason.clone(),
        ),
        (None, None) => (
            true,
            format!(
                "Hash chain verified: {} entries, every hash and link checks out.",
                report.entries
            ),
            String::new(),
        ),
    };
    let broken_index = report.broken.as_ref().map(|b| b.index);
    let mut rows: Vec<AuditVm> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| AuditVm {
            seq: e.seq,
            at: fmt_time_ms(e.at),
            actor: e.actor.clone(),
            role: e.role.as_str().to_owned(),
            action: e.action.as_str().to_owned(),
            flag: e.flag.clone(),
            account: e.account.clone(),
            account_href: account_href(&e.account),
            href: flag_href(&e.account, &e.flag),
            reason: e.reason.clone(),
            decision: e
                .decision
                .map(|d| d.as_str().to_owned())
                .unwrap_or_default(),
            transition: format!("{} → {}", e.prev_state, e.new_state),
            hash: e.hash.get(..16).unwrap_or(&e.hash).to_owned(),
            prev: e.prev_hash.get(..16).unwrap_or(&e.prev_hash).to_owned(),
            broken: broken_index == Some(i),
        })
        .collect();
    rows.reverse();
    html(
        StatusCode::OK,
        &AuditTpl {
            l: Layout::new(&ctx, "Audit log"),
            ok,
            verdict,
            detail,
            head: report.head.clone(),
            entries: report.entries,
            rows,
        },
    )
}

/// Severity as CSS class and label (used by templates through strings).
pub fn severity_class(s: Severity) -> &'static str {
    s.as_str()
}

/// Category label.
pub fn category_label(c: FindingCategory) -> &'static str {
    c.as_str()
}

/// Comparison label.
pub fn cmp_label(c: Cmp) -> &'static str {
    c.as_str()
}

/// Escapes text (re-exported for the main crate's pages).
pub fn escape(s: &str) -> String {
    esc(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::data::EvidenceRef;

    fn r(game: &str, seq: i64) -> EvidenceRef {
        EvidenceRef {
            game: game.into(),
            seq,
            note: String::new(),
        }
    }

    #[test]
    fn evidence_is_grouped_per_game_in_first_seen_order() {
        let mut refs = vec![r("g2", 7), r("g1", 3), r("g2", 9)];
        refs.extend((10..30).map(|q| r("g1", q)));
        // What the events are: counted per game in the order first met; unnamed ones are left out.
        for (i, note) in [
            (0, "not_own_piece"),
            (2, "not_own_piece"),
            (3, "b"),
            (4, "a"),
            (5, "b"),
        ] {
            refs[i].note = note.into();
        }
        let g = ref_games(&refs, "o'brien/7");
        assert_eq!(g[0].kinds, "not_own_piece ×2");
        assert_eq!(g[1].kinds, "b ×2 · a");
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].game.as_str(), g[0].first_seq, g[0].count),
            ("g2", 7, 2)
        );
        assert_eq!(g[0].href, "/game/g2?seq=7&for=o%27brien%2F7");
        assert_eq!(g[0].more.iter().map(|m| m.seq).collect::<Vec<_>>(), [9]);
        // g1: 21 events, the first linked with the game, 8 more shown.
        assert_eq!(
            (g[1].first_seq, g[1].count, g[1].more.len()),
            (3, 21, REF_SEQS_SHOWN)
        );
    }

    #[test]
    fn how_unusual_comes_first() {
        let notes: Vec<(String, String)> = [
            "partner",
            "baseline_rate",
            "games_note",
            "p_value",
            "spread_percentile",
        ]
        .iter()
        .map(|k| (k.to_string(), String::new()))
        .collect();
        let keys: Vec<String> = stats_first(&notes).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "p_value",
                "baseline_rate",
                "spread_percentile",
                "partner",
                "games_note"
            ]
        );
    }
}
