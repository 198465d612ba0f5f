//! A small server-side SVG chart renderer: line, bar, stacked bar, and HTML tables, from a [`Table`] pivoted by x and series columns.
//!
//! Colours come from CSS classes `c0`…`c7` (no inline styles: the CSP forbids
//! them); every point and bar carries a `<title>` so values show on hover
//! without JavaScript.

use std::fmt::Write as _;

use super::board::esc;
use super::data::{Cell, ColumnType, Table};

/// Series values by x position.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChartData {
    /// X labels, in order.
    pub x: Vec<String>,
    /// (series name, value per x).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// Chart kinds of dashboard panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartKind {
    Line,
    Bar,
    StackedBar,
    Table,
}

/// Replaces missing values with `v` (for counts, where no row means zero).
pub fn fill_missing(d: &mut ChartData, v: f64) {
    for (_, vals) in &mut d.series {
        for x in vals.iter_mut() {
            if x.is_none() {
                *x = Some(v);
            }
        }
    }
}

/// Pivots a table: `x` gives the categories, `series` (when given) splits
/// the first `ys` column into one series per distinct value; otherwise every
/// `ys` column is a series. Sortable x columns (dates, numbers) are sorted.
pub fn pivot(t: &Table, x: &str, ys: &[String], series: Option<&str>) -> Result<ChartData, String> {
    let xi = t
        .column(x)
        .ok_or_else(|| format!("no column {x:?} in the result"))?;
    let yis: Vec<usize> = ys
        .iter()
        .map(|y| {
            t.column(y)
                .ok_or_else(|| format!("no column {y:?} in the result"))
        })
        .collect::<Result<_, _>>()?;
    if yis.is_empty() {
        return Err("no y column".to_owned());
    }
    let si = match series {
        Some(s) => Some(
            t.column(s)
                .ok_or_else(|| format!("no column {s:?} in the result"))?,
        ),
        None => None,
    };
    let sortable = matches!(
        t.columns[xi].ty,
        ColumnType::Date | ColumnType::Int | ColumnType::Float | ColumnType::Timestamp
    );
    let mut xs: Vec<(Cell, String)> = Vec::new();
    for row in &t.rows {
        let c = row.get(xi).cloned().unwrap_or(Cell::Null);
        let label = c.to_string();
        if !xs.iter().any(|(_, l)| *l == label) {
            xs.push((c, label));
        }
    }
    if sortable {
        xs.sort_by(|a, b| cell_order(&a.0, &b.0));
    }
    // Dates: every day between the first and the last, so gaps show.
    if let (Some((Cell::Date(lo), _)), Some((Cell::Date(hi), _))) = (xs.first(), xs.last()) {
        let (lo, hi) = (lo.0, hi.0);
        if hi >= lo && hi - lo <= 3660 {
            xs = (lo..=hi)
                .map(|d| {
                    (
                        Cell::Date(super::data::Day(d)),
                        super::data::Day(d).to_string(),
                    )
                })
                .collect();
        }
    }
    let x_labels: Vec<String> = xs.into_iter().map(|(_, l)| l).collect();
    let pos = |label: &str| x_labels.iter().position(|l| l == label);
    let mut out: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    match si {
        Some(si) => {
            let yi = yis[0];
            for row in &t.rows {
                let name = row.get(si).map(ToString::to_string).unwrap_or_default();
                let Some(p) = row.get(xi).and_then(|c| pos(&c.to_string())) else {
                    continue;
                };
                let v = row.get(yi).and_then(Cell::as_f64);
                let idx = match out.iter().position(|(n, _)| *n == name) {
                    Some(i) => i,
                    None => {
                        out.push((name, vec![None; x_labels.len()]));
                        out.len() - 1
                    }
                };
                if let Some(v) = v {
                    let slot = &mut out[idx].1[p];
                    *slot = Some(slot.unwrap_or(0.0) + v);
                }
            }
        }
        None => {
            for (k, &yi) in yis.iter().enumerate() {
                let mut vals = vec![None; x_labels.len()];
                for row in &t.rows {
                    let Some(p) = row.get(xi).and_then(|c| pos(&c.to_string())) else {
                        continue;
                    };
                    if let Some(v) = row.get(yi).and_then(Cell::as_f64) {
                        vals[p] = Some(vals[p].unwrap_or(0.0) + v);
                    }
                }
                out.push((ys[k].clone(), vals));
            }
        }
    }
    Ok(ChartData {
        x: x_labels,
        series: out,
    })
}

fn cell_order(a: &Cell, b: &Cell) -> std::cmp::Ordering {
    match (a, b) {
        (Cell::Date(x), Cell::Date(y)) => x.cmp(y),
        (Cell::Timestamp(x), Cell::Timestamp(y)) => x.cmp(y),
        _ => a
            .as_f64()
            .partial_cmp(&b.as_f64())
            .unwrap_or(std::cmp::Ordering::Equal),
    }
}

/// Compact number formatting for axes and tooltips.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn nice_step(range: f64, ticks: f64) -> f64 {
    let raw = (range / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let n = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * mag
}

/// Chart geometry.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// Total width.
    pub w: f64,
    /// Total height.
    pub h: f64,
}

impl Default for Frame {
    fn default() -> Self {
        Frame { w: 720.0, h: 240.0 }
    }
}

const ML: f64 = 52.0;
const MR: f64 = 12.0;
const MT: f64 = 12.0;
const MB: f64 = 30.0;

struct Axes {
    f: Frame,
    lo: f64,
    hi: f64,
    n: usize,
}

impl Axes {
    fn new(f: Frame, lo: f64, hi: f64, n: usize) -> Axes {
        let (lo, hi) = if (hi - lo).abs() < f64::EPSILON {
            (lo.min(0.0), hi + 1.0)
        } else {
            (lo, hi)
        };
        let step = nice_step(hi - lo, 4.0);
        let lo = (lo / step).floor() * step;
        let hi = (hi / step).ceil() * step;
        Axes { f, lo, hi, n }
    }
    fn plot_w(&self) -> f64 {
        self.f.w - ML - MR
    }
    fn plot_h(&self) -> f64 {
        self.f.h - MT - MB
    }
    fn y(&self, v: f64) -> f64 {
        MT + self.plot_h() * (1.0 - (v - self.lo) / (self.hi - self.lo))
    }
    /// Centre of band `i`.
    fn x_band(&self, i: usize) -> f64 {
        ML + self.plot_w() * (i as f64 + 0.5) / self.n.max(1) as f64
    }
    fn band(&self) -> f64 {
        self.plot_w() / self.n.max(1) as f64
    }
    fn draw(&self, s: &mut String, x: &[String]) {
        let step = nice_step(self.hi - self.lo, 4.0);
        let mut v = self.lo;
        let mut guard = 0;
        while v <= self.hi + step * 1e-9 && guard < 20 {
            let y = self.y(v);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{ML}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"ytick\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                self.f.w - MR,
                ML - 6.0,
                y + 4.0,
                fmt_num(v)
            );
            v += step;
            guard += 1;
        }
        let every = x.len().div_ceil(8).max(1);
        let last = x.len().saturating_sub(1);
        // Regular ticks, and the last label unless it would touch the previous one.
        let last_regular = last - last % every;
        let show_last = last == last_regular || (last - last_regular) * 5 >= every * 3;
        for (i, label) in x.iter().enumerate() {
            if i % every != 0 && !(i == last && show_last) {
                continue;
            }
            let short = label
                .strip_prefix("20")
                .filter(|l| l.len() == 8)
                .map_or(label.as_str(), |l| &l[3..]);
            let _ = write!(
                s,
                "<text class=\"xtick\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                self.x_band(i),
                self.f.h - 10.0,
                esc(short)
            );
        }
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{ML}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
            self.f.w - MR,
            self.y(self.lo.max(0.0).min(self.hi)),
            self.y(self.lo.max(0.0).min(self.hi))
        );
    }
}

fn open_svg(f: Frame, label: &str) -> String {
    format!(
        "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        f.w,
        f.h,
        esc(label)
    )
}

/// A legend as HTML.
pub fn legend(d: &ChartData) -> String {
    if d.series.len() <= 1 {
        return String::new();
    }
    let mut s = String::from("<ul class=\"legend\">");
    for (i, (name, _)) in d.series.iter().enumerate() {
        let _ = write!(
            s,
            "<li><span class=\"swatch c{}\"></span>{}</li>",
            i % 10,
            esc(name)
        );
    }
    s.push_str("</ul>");
    s
}

/// A line chart (with an optional dashed threshold line).
pub fn line_svg(d: &ChartData, f: Frame, label: &str, threshold: Option<f64>) -> String {
    let vals = d
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied());
    let (mut lo, mut hi) = (0.0f64, f64::MIN);
    for v in vals {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if let Some(t) = threshold {
        hi = hi.max(t);
        lo = lo.min(t);
    }
    if hi == f64::MIN {
        hi = 1.0;
    }
    let ax = Axes::new(f, lo, hi, d.x.len());
    let mut s = open_svg(f, label);
    ax.draw(&mut s, &d.x);
    if let Some(t) = threshold {
        let y = ax.y(t);
        let _ = write!(
            s,
            "<line class=\"threshold\" x1=\"{ML}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"><title>threshold {}</title></line>",
            f.w - MR,
            fmt_num(t)
        );
    }
    for (k, (name, vals)) in d.series.iter().enumerate() {
        let pts: Vec<String> = vals
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", ax.x_band(i), ax.y(v))))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"line c{}\" points=\"{}\"/>",
            k % 10,
            pts.join(" ")
        );
        if vals.len() <= 62 {
            for (i, v) in vals.iter().enumerate() {
                if let Some(v) = v {
                    let _ = write!(
                        s,
                        "<circle class=\"dot c{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.6\"><title>{} · {}: {}</title></circle>",
                        k % 10,
                        ax.x_band(i),
                        ax.y(*v),
                        esc(&d.x[i]),
                        esc(name),
                        fmt_num(*v)
                    );
                }
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// A bar chart: grouped bars, or stacked.
pub fn bar_svg(d: &ChartData, f: Frame, label: &str, stacked: bool) -> String {
    let n = d.x.len();
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for i in 0..n {
        if stacked {
            let (mut pos, mut neg) = (0.0, 0.0);
            for (_, v) in &d.series {
                let x = v.get(i).copied().flatten().unwrap_or(0.0);
                if x >= 0.0 {
                    pos += x;
                } else {
                    neg += x;
                }
            }
            hi = hi.max(pos);
            lo = lo.min(neg);
        } else {
            for (_, v) in &d.series {
                let x = v.get(i).copied().flatten().unwrap_or(0.0);
                hi = hi.max(x);
                lo = lo.min(x);
            }
        }
    }
    let ax = Axes::new(f, lo, hi, n);
    let mut s = open_svg(f, label);
    ax.draw(&mut s, &d.x);
    let band = ax.band();
    let inner = band * 0.78;
    let groups = if stacked { 1 } else { d.series.len().max(1) };
    let bw = inner / groups as f64;
    for i in 0..n {
        let x0 = ax.x_band(i) - inner / 2.0;
        let (mut up, mut down) = (0.0f64, 0.0f64);
        for (k, (name, vals)) in d.series.iter().enumerate() {
            let Some(v) = vals.get(i).copied().flatten() else {
                continue;
            };
            if v == 0.0 {
                continue;
            }
            let (a, b) = if stacked {
                if v >= 0.0 {
                    let r = (up, up + v);
                    up += v;
                    r
                } else {
                    let r = (down + v, down);
                    down += v;
                    r
                }
            } else {
                (v.min(0.0), v.max(0.0))
            };
            let x = if stacked { x0 } else { x0 + bw * k as f64 };
            let (y1, y2) = (ax.y(b), ax.y(a));
            let _ = write!(
                s,
                "<rect class=\"bar c{}\" x=\"{x:.1}\" y=\"{y1:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{} · {}: {}</title></rect>",
                k % 10,
                (bw - 1.0).max(1.0),
                (y2 - y1).max(0.5),
                esc(&d.x[i]),
                esc(name),
                fmt_num(v)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// A result table as HTML (numbers right-aligned).
pub fn table_html(t: &Table, max_rows: usize) -> String {
    let mut s = String::from("<div class=\"table-wrap\"><table class=\"data\"><thead><tr>");
    for c in &t.columns {
        let num = matches!(c.ty, ColumnType::Int | ColumnType::Float);
        let _ = write!(
            s,
            "<th{}>{}</th>",
            if num { " class=\"num\"" } else { "" },
            esc(&c.name)
        );
    }
    s.push_str("</tr></thead><tbody>");
    for row in t.rows.iter().take(max_rows) {
        s.push_str("<tr>");
        for cell in row {
            let num = matches!(cell, Cell::Int(_) | Cell::Float(_));
            let text = match cell {
                Cell::Float(v) => fmt_num(*v),
                other => other.to_string(),
            };
            let _ = write!(
                s,
                "<td{}>{}</td>",
                if num { " class=\"num\"" } else { "" },
                esc(&text)
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    if t.rows.len() > max_rows {
        let _ = write!(
            s,
            "<p class=\"muted\">{} more rows not shown.</p>",
            t.rows.len() - max_rows
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::data::{Column, Day};

    fn table() -> Table {
        Table {
            columns: vec![
                Column {
                    name: "day".into(),
                    ty: ColumnType::Date,
                },
                Column {
                    name: "rule".into(),
                    ty: ColumnType::Text,
                },
                Column {
                    name: "flags".into(),
                    ty: ColumnType::Int,
                },
            ],
            rows: vec![
                vec![Cell::Date(Day(2)), Cell::Text("a".into()), Cell::Int(3)],
                vec![Cell::Date(Day(1)), Cell::Text("a".into()), Cell::Int(1)],
                vec![Cell::Date(Day(1)), Cell::Text("b<".into()), Cell::Int(2)],
            ],
        }
    }

    #[test]
    fn pivot_by_series() {
        let d = pivot(&table(), "day", &["flags".to_owned()], Some("rule")).unwrap_or_default();
        assert_eq!(d.x, vec!["1970-01-02", "1970-01-03"]);
        assert_eq!(d.series[0], ("a".to_owned(), vec![Some(1.0), Some(3.0)]));
        assert_eq!(d.series[1], ("b<".to_owned(), vec![Some(2.0), None]));
        assert!(pivot(&table(), "nope", &["flags".to_owned()], None).is_err());
    }

    #[test]
    fn svg_is_escaped_and_closed() {
        let d = pivot(&table(), "day", &["flags".to_owned()], Some("rule")).unwrap_or_default();
        for svg in [
            line_svg(&d, Frame::default(), "t", Some(2.0)),
            bar_svg(&d, Frame::default(), "t", true),
            bar_svg(&d, Frame::default(), "t", false),
        ] {
            assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
            assert!(!svg.contains("b<"));
            assert!(!svg.contains("style="));
        }
        assert!(legend(&d).contains("b&lt;"));
    }

    #[test]
    fn ticks() {
        assert_eq!(nice_step(10.0, 4.0), 2.5);
        assert_eq!(nice_step(100.0, 4.0), 25.0);
        assert_eq!(fmt_num(12345.0), "12.3k");
        assert_eq!(fmt_num(0.126), "0.13");
    }
}
