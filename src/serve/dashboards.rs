//! Declarative dashboards: `dashboards/*.json` definitions (panels naming a SQL file of the main crate's `queries/`, a chart type and the columns to plot).
//!
//! ```json
//! {"id": "trust_and_safety", "title": "…", "description": "…",
//!  "panels": [{"title": "…", "query": "queries/dashboard/flags_per_day_by_rule.sql",
//!              "chart": "stacked_bar", "x": "day", "y": ["flags"], "series": "rule", "fill": 0}]}
//! ```
//!
//! `chart` is `line`, `bar`, `stacked_bar` or `table`; `series` (optional)
//! splits the first `y` column by the values of that column; `fill` (optional)
//! replaces missing points (date axes list every day). The built-in
//! definitions are embedded; [`super::Config::dashboards_dir`] loads a
//! directory instead.

use std::path::Path;

use super::charts::ChartKind;

/// One panel.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// Title.
    pub title: String,
    /// Query file under `queries/`.
    pub query: String,
    /// Chart type.
    pub chart: ChartKind,
    /// X column.
    pub x: String,
    /// Y column(s).
    pub y: Vec<String>,
    /// Series column.
    #[serde(default)]
    pub series: Option<String>,
    /// Value for missing points (e.g. `0` for counts, where no row means none).
    #[serde(default)]
    pub fill: Option<f64>,
}

/// One dashboard.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dashboard {
    /// Id (anchor on the page).
    pub id: String,
    /// Title.
    pub title: String,
    /// One line about it.
    #[serde(default)]
    pub description: String,
    /// Panels, in order.
    pub panels: Vec<Panel>,
}

const BUILTIN: &[(&str, &str)] = &[(
    "trust_and_safety.json",
    include_str!("../../dashboards/trust_and_safety.json"),
)];

/// Parses and checks one definition.
pub fn parse(name: &str, text: &str) -> Result<Dashboard, String> {
    let d: Dashboard = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
    for p in &d.panels {
        let ok_query = p.query.starts_with("queries/")
            && p.query.ends_with(".sql")
            && !p.query.contains("..")
            && !p.query.contains('\\');
        if !ok_query {
            return Err(format!(
                "{name}: panel {:?}: query must be a .sql file under queries/",
                p.title
            ));
        }
        if p.y.is_empty() {
            return Err(format!("{name}: panel {:?}: no y column", p.title));
        }
    }
    Ok(d)
}

/// The embedded definitions.
pub fn builtin() -> Result<Vec<Dashboard>, String> {
    BUILTIN.iter().map(|(n, t)| parse(n, t)).collect()
}

/// Every `*.json` of a directory, by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Dashboard>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            parse(&p.display().to_string(), &text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses_with_the_required_panels() {
        let all = builtin().unwrap_or_default();
        let queries: Vec<&str> = all
            .iter()
            .flat_map(|d| d.panels.iter().map(|p| p.query.as_str()))
            .collect();
        for q in [
            "queries/dashboard/flags_per_day_by_rule.sql",
            "queries/dashboard/rejected_attempts_per_day_by_kind.sql",
            "queries/dashboard/departure_timeout_rates.sql",
            "queries/dashboard/flagged_pair_stake_flows.sql",
        ] {
            assert!(queries.contains(&q), "{q}");
        }
        assert!(parse("x", r#"{"id":"a","title":"b","panels":[{"title":"c","query":"../etc.sql","chart":"line","x":"d","y":["e"]}]}"#).is_err());
    }
}
