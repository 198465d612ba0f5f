//! The compliance page (`/compliance`): generate the audit report of a period and download it as one tar archive.
//!
//! The bundle is [`crate::report::generate`]'s, byte for byte: the same
//! period and lake snapshot give the same files as `vigie report`, and the
//! archive itself is deterministic (sorted entries, zero mtimes and owners),
//! so its SHA-256 is stable too. The bundle digest travels in the
//! `X-Vigie-Bundle-Digest` header and inside the archive (`MANIFEST.sha256`).

use std::path::{Path, PathBuf};

use askama::Template;
use axum::Form;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::auth::Ctx;
use super::pages::{ErrorPage, Layout, html};
use crate::lake::Lake;
use crate::report::ReportOptions;

#[derive(Template)]
#[template(path = "compliance.html")]
struct ComplianceTpl {
    l: Layout,
    from: String,
    to: String,
    alpha: String,
    first_day: String,
    last_day: String,
    error: String,
}

/// Form of `POST /compliance/report`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ReportForm {
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    alpha: String,
}

/// First and last day holding events in the lake (`YYYY-MM-DD`).
fn lake_days(root: &Path) -> Option<(String, String)> {
    let lake = Lake::open(root).ok()?;
    let state = lake.state().ok()?;
    let mut days: Vec<String> = state
        .table_files("events")
        .filter_map(|f| {
            f.partition
                .as_deref()?
                .strip_prefix("date=")
                .map(str::to_owned)
        })
        .collect();
    days.sort();
    Some((days.first()?.clone(), days.last()?.clone()))
}

fn form_page(
    ctx: &Ctx,
    app: &AppState,
    f: &ReportForm,
    status: StatusCode,
    error: &str,
) -> Response {
    let (first, last) = app
        .data()
        .lake_root()
        .and_then(lake_days)
        .unwrap_or_default();
    let pick = |v: &str, d: &str| {
        if v.is_empty() {
            d.to_owned()
        } else {
            v.to_owned()
        }
    };
    html(
        status,
        &ComplianceTpl {
            l: Layout::new(ctx, "Compliance"),
            from: pick(&f.from, &first),
            to: pick(&f.to, &last),
            alpha: pick(&f.alpha, "0.01"),
            first_day: first,
            last_day: last,
            error: error.to_owned(),
        },
    )
}

/// `GET /compliance`.
pub async fn page(State(app): State<AppState>, ctx: Ctx) -> Response {
    form_page(&ctx, &app, &ReportForm::default(), StatusCode::OK, "")
}

/// Writes `dir`'s files (sorted, recursively) under `prefix/` as a deterministic ustar archive.
pub fn tar_dir(dir: &Path, prefix: &str) -> std::io::Result<Vec<u8>> {
    let files = crate::lake::walk_files(dir).map_err(std::io::Error::other)?;
    let mut rel: Vec<(String, PathBuf)> = files
        .into_iter()
        .filter_map(|p| {
            let r = p
                .strip_prefix(dir)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            Some((r, p))
        })
        .collect();
    rel.sort();
    let mut b = tar::Builder::new(Vec::new());
    b.mode(tar::HeaderMode::Deterministic);
    for (name, path) in rel {
        let data = std::fs::read(&path)?;
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, format!("{prefix}/{name}"), data.as_slice())?;
    }
    b.into_inner()
}

fn scratch_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("vigie-report-{}-{nanos}", std::process::id()))
}

/// `POST /compliance/report`: generates the bundle and returns it as `vigie-report-FROM-TO.tar`.
pub async fn report(State(app): State<AppState>, ctx: Ctx, Form(f): Form<ReportForm>) -> Response {
    let Some(root) = app.data().lake_root().map(Path::to_path_buf) else {
        return ErrorPage::response(
            &ctx,
            StatusCode::SERVICE_UNAVAILABLE,
            "The report reads the lake, and this server has none.",
        );
    };
    let alpha = match f.alpha.trim() {
        "" => 0.01,
        a => match a.parse::<f64>() {
            Ok(v) if v > 0.0 && v < 0.5 => v,
            _ => {
                return form_page(
                    &ctx,
                    &app,
                    &f,
                    StatusCode::BAD_REQUEST,
                    "The significance level is a number between 0 and 0.5, such as 0.01.",
                );
            }
        },
    };
    let (from, to) = (f.from.trim().to_owned(), f.to.trim().to_owned());
    if from.is_empty() || to.is_empty() || from > to {
        return form_page(
            &ctx,
            &app,
            &f,
            StatusCode::BAD_REQUEST,
            "Give a period: first day, then last day.",
        );
    }
    let who = ctx
        .user
        .as_ref()
        .map_or_else(String::new, |u| u.name.clone());
    let out = scratch_dir();
    let opts = ReportOptions {
        generated_at: format!("{to}T23:59:59.999Z"),
        from: from.clone(),
        to: to.clone(),
        alpha,
        out: out.clone(),
        as_of: None,
    };
    let built = tokio::task::spawn_blocking(move || {
        let result = (|| {
            // With the catalogue: the report may roll a Delta log forward, which creates the
            // logs of tables that have none with their declared schemas.
            let lake = crate::catalog::open(&root).map_err(|e| e.to_string())?;
            let (_, digest) = crate::report::generate(&lake, &opts).map_err(|e| e.to_string())?;
            let prefix = format!("vigie-report-{}-{}", opts.from, opts.to);
            let bytes = tar_dir(&opts.out, &prefix).map_err(|e| e.to_string())?;
            Ok::<_, String>((digest, bytes))
        })();
        let _ = std::fs::remove_dir_all(&opts.out);
        result
    })
    .await;
    let (digest, bytes) = match built {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            let status = if e.starts_with("invalid option") {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            return form_page(
                &ctx,
                &app,
                &f,
                status,
                &format!("The report could not be generated: {e}"),
            );
        }
        Err(e) => {
            return form_page(
                &ctx,
                &app,
                &f,
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("The report task failed: {e}"),
            );
        }
    };
    tracing::info!(target: "vigie::report", who, from, to, digest, bytes = bytes.len(), "compliance report downloaded");
    let mut res = (StatusCode::OK, bytes).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-tar"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"vigie-report-{from}-{to}.tar\""
    )) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Ok(v) = HeaderValue::from_str(&digest) {
        h.insert(HeaderName::from_static("x-vigie-bundle-digest"), v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_are_deterministic_and_complete() {
        let dir = std::env::temp_dir().join(format!("vigie-tar-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("evidence")).unwrap();
        std::fs::write(dir.join("summary.json"), b"{}").unwrap();
        std::fs::write(dir.join("evidence/a.csv"), b"x\n1\n").unwrap();
        let a = tar_dir(&dir, "r").unwrap();
        let b = tar_dir(&dir, "r").unwrap();
        assert_eq!(a, b);
        let mut names = Vec::new();
        let mut ar = tar::Archive::new(a.as_slice());
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            assert_eq!(e.header().mtime().unwrap(), 0);
            names.push(e.path().unwrap().to_string_lossy().into_owned());
        }
        assert_eq!(names, ["r/evidence/a.csv", "r/summary.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
