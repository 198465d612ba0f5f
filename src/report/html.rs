//! `summary.html`: the report for people, printable, with inline SVG charts and no external resource.

use std::fmt::Write as _;

use super::{Summary, randomness};

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => esc(s),
        serde_json::Value::Null => String::new(),
        other => esc(&other.to_string()),
    }
}

/// A table of JSON rows with the given columns.
fn table(
    rows: &[std::collections::BTreeMap<String, serde_json::Value>],
    columns: &[&str],
) -> String {
    if rows.is_empty() {
        return "<p class=\"none\">None.</p>\n".into();
    }
    let mut out = String::from("<table>\n<thead><tr>");
    for c in columns {
        let _ = write!(out, "<th>{}</th>", esc(c));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in columns {
            let _ = write!(out, "<td>{}</td>", r.get(*c).map(cell).unwrap_or_default());
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// A small SVG bar chart of six face counts against the expected count.
fn faces_chart(title: &str, counts: &[u64; 6]) -> String {
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / 6.0;
    let max = counts.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.15;
    let (w, h, pad) = (240.0, 140.0, 20.0);
    let bw = (w - 2.0 * pad) / 6.0;
    let mut s = format!(
        "<figure><svg viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
        esc(title)
    );
    for (i, &c) in counts.iter().enumerate() {
        let bh = (h - 2.0 * pad) * c as f64 / max;
        let x = pad + i as f64 * bw + 3.0;
        let y = h - pad - bh;
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#4a6fa5\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            bw - 6.0,
            x + (bw - 6.0) / 2.0,
            h - 6.0,
            i + 1
        );
    }
    let ey = h - pad - (h - 2.0 * pad) * expected / max;
    let _ = write!(
        s,
        "<line x1=\"{pad}\" x2=\"{:.1}\" y1=\"{ey:.1}\" y2=\"{ey:.1}\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/></svg><figcaption>{} ({} rolls; dashed: expected)</figcaption></figure>",
        w - pad,
        esc(title),
        total
    );
    s
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem}h2{border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;font-size:.9rem;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f8}.pass{color:#1e7b34;font-weight:600}.fail{color:#b22222;font-weight:600}.insufficient{color:#8a6d00;font-weight:600}.none{color:#666}
figure{display:inline-block;margin:.5rem}figcaption{font-size:.8rem;color:#444;text-align:center}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}table{page-break-inside:avoid}}";

/// Renders the summary as one HTML page.
pub fn render(s: &Summary) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Vigie audit report {} to {}</title><style>{STYLE}</style></head><body>\n",
        esc(&s.scope.period_from),
        esc(&s.scope.period_to)
    );
    let _ = write!(
        h,
        "<h1>Audit report: {} to {}</h1>\n<dl><dt>Generated at</dt><dd>{}</dd><dt>Vigie</dt><dd>{} (build {})</dd><dt>Lake snapshot</dt><dd>{} (version {})</dd></dl>\n",
        esc(&s.scope.period_from),
        esc(&s.scope.period_to),
        esc(&s.scope.generated_at),
        esc(&s.scope.vigie_version),
        esc(&s.scope.build),
        esc(&s.scope.lake_snapshot),
        s.scope.lake_version
    );
    h.push_str("<p>Every figure below has its evidence in <code>evidence/</code> (CSV and Parquet); <code>MANIFEST.sha256</code> lists the SHA-256 of every file (<code>sha256sum -c MANIFEST.sha256</code>) and <code>DIGEST</code> is the SHA-256 of the manifest.</p>\n");
    h.push_str("<h2>Volumes</h2>\n");
    h.push_str(&table(
        &s.volumes,
        &[
            "kind",
            "mode",
            "games",
            "finished_games",
            "events",
            "players",
            "stakes",
            "rake",
            "payouts",
        ],
    ));
    h.push_str("<h2>Fairness</h2>\n");
    let f = &s.fairness;
    let _ = writeln!(
        h,
        "<p>Commitments checked: {}; failed (mismatch, missing or late): <span class=\"{}\">{}</span>; seed reuse findings: {}; missing reveals: {}.</p>",
        f.commitments_checked,
        if f.commitments_failed == 0 {
            "pass"
        } else {
            "fail"
        },
        f.commitments_failed,
        f.seed_reuse,
        f.missing_reveals
    );
    h.push_str(&table(
        &f.by_kind,
        &[
            "kind",
            "mode",
            "games",
            "passed",
            "failed",
            "pending",
            "commitments",
            "missing_reveals",
        ],
    ));
    h.push_str("<h3>Failed checks</h3>\n");
    h.push_str(&table(
        &f.failures,
        &["game", "seq", "code", "expected", "logged", "message"],
    ));
    let r = &s.randomness;
    let _ = write!(
        h,
        "<h2>Randomness tests</h2>\n<p>Significance level {} for the whole family of tests, {}. Overall: <span class=\"{}\">{}</span> ({} tests ran, {} had insufficient data). A test below its minimum sample gives no p-value and claims nothing. The power column is the smallest bias each test detects with probability {:.0} % at the strictest threshold.</p>\n<table><thead><tr><th>test</th><th>observations</th><th>minimum</th><th>statistic</th><th>df</th><th>p-value</th><th>threshold</th><th>result</th><th>detects (power)</th></tr></thead><tbody>\n",
        r.alpha,
        esc(&r.correction),
        verdict_class(r.verdict),
        r.verdict.as_str(),
        r.tests_run,
        r.tests_insufficient,
        100.0 * randomness::POWER,
    );
    for t in &r.tests {
        let num = |v: Option<f64>, prec: usize| {
            v.map_or_else(|| "-".to_owned(), |v| format!("{v:.prec$}"))
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&t.name),
            t.observations,
            t.minimum,
            esc(&t.minimum_unit),
            num(t.statistic, 3),
            t.df.map(|d| d.to_string()).unwrap_or_else(|| "-".into()),
            sig(t.p_value),
            sig(t.threshold),
            verdict_class(t.verdict),
            t.verdict.as_str(),
            t.power
                .as_ref()
                .map_or_else(|| "-".to_owned(), |p| esc(&p.description)),
        );
    }
    h.push_str("</tbody></table>\n");
    for (g, counts) in &r.faces {
        h.push_str(&faces_chart(&format!("Dice faces, {g}"), counts));
    }
    let _ = writeln!(
        h,
        "<p>Medieval duels won: {} of {}. Belote shuffles tested: {}.</p>",
        r.duels_won, r.duels, r.shuffles
    );
    h.push_str("<h2>Integrity incidents</h2>\n");
    h.push_str(&table(
        &s.integrity,
        &["code", "severity", "incidents", "games", "game_ids"],
    ));
    h.push_str("<h2>Enforcement</h2>\n");
    let e = &s.enforcement;
    let a = &e.audit;
    let _ = writeln!(
        h,
        "<p>Flags at this snapshot: {}. Staff actions in the period: {}; flags reviewed {}, confirmed {}, dismissed {}; median time from claim to decision: {}. Audit log hash chain: <span class=\"{}\">{}</span>.</p>",
        e.flags_total,
        a.entries_in_period,
        a.flags_reviewed,
        a.confirmed,
        a.dismissed,
        a.median_time_to_decision_ms
            .map(|ms| format!("{:.1} min", ms as f64 / 60000.0))
            .unwrap_or_else(|| "n/a".into()),
        if a.chain_verified { "pass" } else { "fail" },
        if a.chain_verified {
            format!("verified (head {})", a.chain_head)
        } else {
            format!("BROKEN: {}", a.chain_problem.clone().unwrap_or_default())
        }
    );
    h.push_str(&table(
        &e.flags,
        &["rule", "action", "severity", "flags", "accounts"],
    ));
    h.push_str("<h3>Blocks and block recommendations</h3>\n");
    if a.blocks.is_empty() {
        h.push_str("<p class=\"none\">None.</p>\n");
    } else {
        h.push_str("<table><thead><tr><th>account</th><th>decision</th><th>reason</th><th>by</th><th>when</th></tr></thead><tbody>\n");
        for b in &a.blocks {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&b.account),
                esc(&b.decision),
                esc(&b.reason),
                esc(&b.who),
                esc(&b.ts)
            );
        }
        h.push_str("</tbody></table>\n");
    }
    h.push_str("<h2>Evidence files</h2>\n<ul>\n");
    for (figure, files) in &s.evidence {
        let _ = writeln!(
            h,
            "<li>{}: {}</li>",
            esc(figure),
            files
                .iter()
                .map(|f| format!("<code>{}</code>", esc(f)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    h.push_str("</ul>\n</body></html>\n");
    h
}

/// The CSS class of a verdict.
fn verdict_class(v: randomness::Verdict) -> &'static str {
    match v {
        randomness::Verdict::Pass => "pass",
        randomness::Verdict::Fail => "fail",
        randomness::Verdict::InsufficientData => "insufficient",
    }
}

/// A probability with four significant digits (`0.0007600`, `1.234e-9`), so that a p-value and
/// its threshold print in an order that agrees with the verdict (at four decimals, p = 0.00076
/// showed as 0.0008 beside a threshold of 0.00077 and a failure).
fn sig(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(0.0) => "0".to_owned(),
        Some(v) if v.abs() >= 1e-4 => {
            let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
            format!("{v:.digits$}")
        }
        Some(v) => format!("{v:.3e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::sig;

    #[test]
    fn probabilities_print_in_the_order_of_their_values() {
        // A p-value just under its threshold reads as under it.
        assert_eq!(sig(Some(0.00076)), "0.0007600");
        assert_eq!(sig(Some(0.01 / 13.0)), "0.0007692");
        assert_eq!(sig(Some(0.5)), "0.5000");
        assert_eq!(sig(Some(1.0)), "1.000");
        assert_eq!(sig(Some(2.5e-9)), "2.500e-9");
        assert_eq!(sig(Some(0.0)), "0");
        assert_eq!(sig(None), "-");
    }
}
