//! Prometheus metrics: requests by route and status, a latency histogram per route, login counters, and gauges read at scrape time (pipeline lag, open flags, sessions, audit head).
//!
//! `/metrics` needs a logged-in admin or `Authorization: Bearer <metrics_token>`
//! (see [`super::Config::metrics_token`]): route names and volumes are internal.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::review::verify_chain;

/// Histogram bucket upper bounds, seconds.
pub const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

#[derive(Debug, Default, Clone)]
struct Hist {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Request and login counters.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<HashMap<(String, String, u16), u64>>,
    latency: Mutex<HashMap<String, Hist>>,
    logins_ok: AtomicU64,
    logins_failed: AtomicU64,
    logins_limited: AtomicU64,
}

impl Metrics {
    /// Records one request.
    pub fn record(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        {
            let mut m = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
            *m.entry((route.to_owned(), method.to_owned(), status))
                .or_insert(0) += 1;
        }
        let secs = elapsed.as_secs_f64();
        let mut l = self.latency.lock().unwrap_or_else(PoisonError::into_inner);
        let h = l.entry(route.to_owned()).or_default();
        h.count += 1;
        h.sum += secs;
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                h.counts[i] += 1;
            }
        }
    }

    /// A successful login.
    pub fn login_ok(&self) {
        self.logins_ok.fetch_add(1, Ordering::Relaxed);
    }

    /// A failed login.
    pub fn login_failed(&self) {
        self.logins_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A login refused by the rate limit.
    pub fn login_limited(&self) {
        self.logins_limited.fetch_add(1, Ordering::Relaxed);
    }

    /// Renders the counters in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        out.push_str("# HELP vigie_http_requests_total HTTP requests by route pattern, method and status.\n# TYPE vigie_http_requests_total counter\n");
        let mut reqs: Vec<_> = self
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        reqs.sort();
        for ((route, method, status), n) in reqs {
            let _ = writeln!(
                out,
                "vigie_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{status}\"}} {n}",
                label(&route),
                label(&method)
            );
        }
        out.push_str("# HELP vigie_http_request_duration_seconds Request latency by route pattern.\n# TYPE vigie_http_request_duration_seconds histogram\n");
        let mut hists: Vec<_> = self
            .latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        hists.sort_by(|a, b| a.0.cmp(&b.0));
        for (route, h) in hists {
            let r = label(&route);
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "vigie_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"{b}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "vigie_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "vigie_http_request_duration_seconds_sum{{route=\"{r}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "vigie_http_request_duration_seconds_count{{route=\"{r}\"}} {}",
                h.count
            );
        }
        for (name, help, v) in [
            ("vigie_logins_total", "Successful logins.", &self.logins_ok),
            (
                "vigie_login_failures_total",
                "Failed logins.",
                &self.logins_failed,
            ),
            (
                "vigie_login_rate_limited_total",
                "Logins refused by the rate limit.",
                &self.logins_limited,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        }
    }
}

fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `GET /metrics`.
pub async fn handler(State(app): State<AppState>) -> Response {
    let mut out = String::with_capacity(8192);
    app.metrics().render(&mut out);
    match app.data().status().await {
        Ok(s) => {
            let _ = writeln!(
                out,
                "# HELP vigie_data_up Whether the data source answered.\n# TYPE vigie_data_up gauge\nvigie_data_up 1"
            );
            let _ = writeln!(
                out,
                "# HELP vigie_lake_info Lake version.\n# TYPE vigie_lake_info gauge\nvigie_lake_info{{version=\"{}\"}} 1",
                label(&s.lake_version)
            );
            if let Some(lag) = s.lag_seconds {
                let _ = writeln!(
                    out,
                    "# HELP vigie_pipeline_lag_seconds Now minus the latest event timestamp in the lake.\n# TYPE vigie_pipeline_lag_seconds gauge\nvigie_pipeline_lag_seconds {lag}"
                );
            }
            let _ = writeln!(
                out,
                "# HELP vigie_open_flags Flags waiting for review.\n# TYPE vigie_open_flags gauge\nvigie_open_flags {}",
                s.open_flags
            );
        }
        Err(_) => {
            let _ = writeln!(out, "# TYPE vigie_data_up gauge\nvigie_data_up 0");
        }
    }
    if let Ok(entries) = app.data().audit_log().await {
        let report = verify_chain(&entries);
        let _ = writeln!(
            out,
            "# HELP vigie_audit_entries Entries in the audit log.\n# TYPE vigie_audit_entries gauge\nvigie_audit_entries {}\n# HELP vigie_audit_chain_ok Whether the audit hash chain verifies.\n# TYPE vigie_audit_chain_ok gauge\nvigie_audit_chain_ok {}\n# HELP vigie_audit_head_info Head of the audit chain.\n# TYPE vigie_audit_head_info gauge\nvigie_audit_head_info{{hash=\"{}\"}} 1",
            report.entries,
            u8::from(report.ok()),
            report.head
        );
    }
    let _ = writeln!(
        out,
        "# HELP vigie_sessions_active Live staff sessions.\n# TYPE vigie_sessions_active gauge\nvigie_sessions_active {}",
        app.sessions().active()
    );
    let mut r = (StatusCode::OK, out).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}
