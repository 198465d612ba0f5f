//! The analysts' SQL console (`/sql`): the saved queries of `queries/` one click away, results as a table, CSV download.
//!
//! Every query goes through the data source's [`DataSource::analyst_query`]
//! (the SQL guard: read-only, no table functions, memory and time limits,
//! logged with the analyst's name). The page shows at most
//! [`super::Config::console_rows`] rows; the CSV holds up to
//! [`super::Config::csv_rows`].
//!
//! [`DataSource::analyst_query`]: super::DataSource::analyst_query

use askama::Template;
use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::auth::Ctx;
use super::data::{DataError, QueryResult};
use super::pages::{ErrorPage, Layout, html};
use crate::sql::{SavedQuery, TableAccess, saved_queries};

/// Query string of `GET /sql`: a saved query to run, or a query text.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ConsoleQuery {
    #[serde(default)]
    saved: String,
    #[serde(default)]
    q: String,
}

/// Form of `POST /sql` and `POST /sql/csv`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ConsoleForm {
    #[serde(default)]
    sql: String,
}

struct SavedVm {
    group: &'static str,
    name: String,
    doc: String,
    href: String,
    active: bool,
}

#[derive(Template)]
#[template(path = "sql.html")]
struct ConsoleTpl {
    l: Layout,
    sql: String,
    saved: Vec<SavedVm>,
    groups: Vec<(&'static str, &'static str)>,
    ran: bool,
    error: String,
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
    summary: String,
    truncated: bool,
    max_rows: usize,
    csv_rows: usize,
}

fn href(name: &str) -> String {
    format!("/sql?saved={name}")
}

fn page(
    ctx: &Ctx,
    app: &AppState,
    sql: &str,
    active: &str,
    outcome: Option<Result<QueryResult, DataError>>,
) -> Response {
    let saved: Vec<SavedVm> = saved_queries()
        .into_iter()
        .filter(|q| access(ctx).allows(&q.sql))
        .map(|q: SavedQuery| SavedVm {
            group: q.group,
            href: href(&q.name),
            active: q.name == active,
            name: q.name,
            doc: q.doc,
        })
        .collect();
    let mut t = ConsoleTpl {
        l: Layout::new(ctx, "SQL"),
        sql: sql.to_owned(),
        saved,
        groups: vec![
            ("view", "Views"),
            ("panel", "Dashboard panels"),
            ("rule", "Detection rules (default thresholds)"),
        ],
        ran: outcome.is_some(),
        error: String::new(),
        columns: Vec::new(),
        rows: Vec::new(),
        summary: String::new(),
        truncated: false,
        max_rows: app.config().console_rows,
        csv_rows: app.config().csv_rows,
    };
    let status = match outcome {
        None => StatusCode::OK,
        Some(Ok(r)) => {
            t.summary = format!(
                "{} row{}{} in {} ms · lake snapshot {}",
                r.rows.len(),
                if r.rows.len() == 1 { "" } else { "s" },
                if r.truncated { " shown" } else { "" },
                r.ms,
                r.snapshot
            );
            t.truncated = r.truncated;
            t.columns = r.columns;
            t.rows = r.rows;
            StatusCode::OK
        }
        Some(Err(DataError::BadQuery(m))) => {
            t.error = m;
            StatusCode::BAD_REQUEST
        }
        Some(Err(e)) => {
            t.error = e.to_string();
            StatusCode::SERVICE_UNAVAILABLE
        }
    };
    html(status, &t)
}

fn who(ctx: &Ctx) -> String {
    ctx.user
        .as_ref()
        .map_or_else(|| "unknown".to_owned(), |u| u.name.clone())
}

/// The tables the user's queries may read: the audit log only for the roles that see `/audit`.
fn access(ctx: &Ctx) -> TableAccess {
    match &ctx.user {
        Some(u) if super::access::OVERSIGHT.contains(&u.role) => TableAccess::All,
        _ => TableAccess::WithoutAudit,
    }
}

/// `GET /sql`: the console; `?saved=NAME` runs a saved query, `?q=` a query text.
pub async fn console(
    State(app): State<AppState>,
    ctx: Ctx,
    Query(q): Query<ConsoleQuery>,
) -> Response {
    if !q.saved.is_empty() {
        let found = saved_queries()
            .into_iter()
            .find(|s| s.name == q.saved && access(&ctx).allows(&s.sql));
        let Some(s) = found else {
            return ErrorPage::response(
                &ctx,
                StatusCode::NOT_FOUND,
                "No saved query has this name.",
            );
        };
        let out = app
            .data()
            .analyst_query(&s.sql, &who(&ctx), access(&ctx), app.config().console_rows)
            .await;
        return page(&ctx, &app, &s.sql, &s.name, Some(out));
    }
    if !q.q.trim().is_empty() {
        let out = app
            .data()
            .analyst_query(&q.q, &who(&ctx), access(&ctx), app.config().console_rows)
            .await;
        return page(&ctx, &app, &q.q, "", Some(out));
    }
    page(
        &ctx,
        &app,
        "SELECT * FROM daily_volumes ORDER BY day DESC",
        "",
        None,
    )
}

/// `POST /sql`: runs the query of the form.
pub async fn run(State(app): State<AppState>, ctx: Ctx, Form(f): Form<ConsoleForm>) -> Response {
    if f.sql.trim().is_empty() {
        return page(
            &ctx,
            &app,
            "",
            "",
            Some(Err(DataError::BadQuery("empty query".into()))),
        );
    }
    let out = app
        .data()
        .analyst_query(&f.sql, &who(&ctx), access(&ctx), app.config().console_rows)
        .await;
    page(&ctx, &app, &f.sql, "", Some(out))
}

/// One CSV field (RFC 4180: quoted when it holds a comma, quote or line break).
///
/// A text that a spreadsheet would run as a formula (it starts with `=`, `+`,
/// `-`, `@`, a tab or a carriage return, and is not a number) is neutralised
/// with a leading `'`, as OWASP advises against CSV injection: the lake holds
/// account names and reasons that players and staff typed.
fn csv_field(out: &mut String, v: &str) {
    let formula = crate::report::spreadsheet_formula(v);
    if formula || v.contains([',', '"', '\n', '\r']) {
        out.push('"');
        if formula {
            out.push('\'');
        }
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(v);
    }
}

/// A result as CSV: a header line, then one line per row; NULL is an empty field.
pub fn to_csv(r: &QueryResult) -> String {
    let mut out = String::new();
    for (i, c) in r.columns.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(&mut out, c);
    }
    out.push_str("\r\n");
    for row in &r.rows {
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            csv_field(&mut out, v.as_deref().unwrap_or(""));
        }
        out.push_str("\r\n");
    }
    out
}

/// `POST /sql/csv`: the query's result as a CSV download.
pub async fn csv(State(app): State<AppState>, ctx: Ctx, Form(f): Form<ConsoleForm>) -> Response {
    match app
        .data()
        .analyst_query(&f.sql, &who(&ctx), access(&ctx), app.config().csv_rows)
        .await
    {
        Ok(r) => {
            let mut res = (StatusCode::OK, to_csv(&r)).into_response();
            let h = res.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            );
            h.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"vigie-query.csv\""),
            );
            if r.truncated {
                h.insert(
                    header::HeaderName::from_static("x-vigie-truncated"),
                    HeaderValue::from_static("true"),
                );
            }
            res
        }
        Err(e) => page(&ctx, &app, &f.sql, "", Some(Err(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let r = QueryResult {
            columns: vec!["a".into(), "b,c".into()],
            rows: vec![
                vec![Some("x".into()), None],
                vec![Some("say \"hi\"".into()), Some("1\n2".into())],
            ],
            ..QueryResult::default()
        };
        assert_eq!(
            to_csv(&r),
            "a,\"b,c\"\r\nx,\r\n\"say \"\"hi\"\"\",\"1\n2\"\r\n"
        );
    }

    #[test]
    fn csv_neutralises_formulas_but_not_numbers() {
        let r = QueryResult {
            columns: vec!["v".into()],
            rows: [
                "=HYPERLINK(\"http://evil\")",
                "+1+2",
                "-2.5",
                "@SUM(A1)",
                "\tx",
                "-",
                "1e3",
            ]
            .iter()
            .map(|v| vec![Some((*v).to_owned())])
            .collect(),
            ..QueryResult::default()
        };
        assert_eq!(
            to_csv(&r),
            "v\r\n\"'=HYPERLINK(\"\"http://evil\"\")\"\r\n\"'+1+2\"\r\n-2.5\r\n\"'@SUM(A1)\"\r\n\"'\tx\"\r\n\"'-\"\r\n1e3\r\n"
        );
    }
}
