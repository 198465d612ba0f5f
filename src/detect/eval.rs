//! `vigie eval`: precision and recall of the detection rules against the simulator's ground truth, per behaviour.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::FlagRow;
use super::rules::Rule;

/// The parts of the simulator's `labels.json` that evaluation reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Labels {
    pub accounts: Vec<LabelledAccount>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LabelledAccount {
    pub account: String,
    pub behaviour: String,
    /// Honest accounts built to look like cheaters: their class (`quick_steady`, `bad_connection`, ...).
    #[serde(default)]
    pub lookalike: Option<String>,
}

/// Errors of evaluation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("reading labels {path}: {msg}")]
    Labels { path: String, msg: String },
}

impl Labels {
    pub fn read(path: &Path) -> Result<Labels, EvalError> {
        let err = |msg: String| EvalError::Labels {
            path: path.display().to_string(),
            msg,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| err(e.to_string()))
    }
}

/// A flag or a miss, with what a reviewer would look at.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub account: String,
    /// The account's true behaviour.
    pub truth: String,
    /// Rules that flagged it (empty for a miss).
    pub rules: Vec<String>,
    pub action: Option<String>,
    pub evidence: Vec<String>,
}

/// Scores of one behaviour class.
#[derive(Debug, Clone, Serialize)]
pub struct ClassScore {
    pub behaviour: String,
    pub rules: Vec<String>,
    pub true_positives: u64,
    pub false_positives: u64,
    pub false_negatives: u64,
    pub true_negatives: u64,
    pub precision: f64,
    pub recall: f64,
    pub false_positive_cases: Vec<Case>,
    pub misses: Vec<Case>,
}

/// Account-level scores over every rule: a cheater flagged by any rule is found, an honest account
/// flagged by any rule (whatever its behaviour) is a false flag.
#[derive(Debug, Clone, Serialize)]
pub struct Pooled {
    pub cheaters: u64,
    pub honest: u64,
    pub true_positives: u64,
    pub false_positives: u64,
    pub false_negatives: u64,
    pub precision: f64,
    pub recall: f64,
}

/// How the honest look-alikes of one class fared.
#[derive(Debug, Clone, Serialize)]
pub struct LookalikeScore {
    pub class: String,
    pub accounts: u64,
    pub flagged: u64,
    pub block_recommended: u64,
    pub cases: Vec<Case>,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    pub accounts: u64,
    pub pooled: Pooled,
    pub classes: Vec<ClassScore>,
    /// Honest look-alikes per class (empty when the labels have none).
    pub lookalikes: Vec<LookalikeScore>,
    /// Honest accounts with a `block_recommended` flag (must be none).
    pub honest_blocked: Vec<Case>,
    /// Confusion table: true behaviour -> predicted behaviour (or `none`) -> accounts.
    pub confusion: BTreeMap<String, BTreeMap<String, u64>>,
}

/// `num / den`, 1.0 when nothing was counted (no prediction: precision 1; no label: recall 1).
fn share(num: u64, den: u64) -> f64 {
    if den == 0 {
        1.0
    } else {
        num as f64 / den as f64
    }
}

/// Scores flags against labels; a rule counts for the behaviour its header names.
pub fn evaluate(labels: &Labels, rules: &[Rule], flags: &[FlagRow]) -> Evaluation {
    let truth: BTreeMap<&str, &str> = labels
        .accounts
        .iter()
        .map(|a| (a.account.as_str(), a.behaviour.as_str()))
        .collect();
    let rule_behaviour: BTreeMap<&str, &str> = rules
        .iter()
        .filter_map(|r| r.behaviour.as_deref().map(|b| (r.id.as_str(), b)))
        .collect();
    // Behaviours predicted per account, and the flags behind them.
    let mut predicted: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut by_account: BTreeMap<&str, Vec<&FlagRow>> = BTreeMap::new();
    for f in flags {
        by_account.entry(&f.account).or_default().push(f);
        if let Some(b) = rule_behaviour.get(f.rule.as_str()) {
            predicted.entry(&f.account).or_default().insert(b);
        }
    }
    let case = |account: &str| -> Case {
        let fl = by_account.get(account).cloned().unwrap_or_default();
        let action = if fl.iter().any(|f| f.action == "block_recommended") {
            Some("block_recommended".to_string())
        } else if fl.is_empty() {
            None
        } else {
            Some("review".to_string())
        };
        Case {
            account: account.to_string(),
            truth: truth.get(account).copied().unwrap_or("unknown").to_string(),
            rules: fl
                .iter()
                .map(|f| format!("{}/{}", f.rule, f.window))
                .collect(),
            action,
            evidence: fl
                .iter()
                .map(|f| format!("{}: {}", f.rule, f.evidence))
                .collect(),
        }
    };
    let behaviours: BTreeSet<&str> = rule_behaviour.values().copied().collect();
    let mut classes = Vec::new();
    for b in &behaviours {
        let mut s = ClassScore {
            behaviour: b.to_string(),
            rules: rule_behaviour
                .iter()
                .filter(|(_, x)| *x == b)
                .map(|(r, _)| r.to_string())
                .collect(),
            true_positives: 0,
            false_positives: 0,
            false_negatives: 0,
            true_negatives: 0,
            precision: 0.0,
            recall: 0.0,
            false_positive_cases: Vec::new(),
            misses: Vec::new(),
        };
        for (acc, t) in &truth {
            let p = predicted.get(acc).is_some_and(|set| set.contains(b));
            match (p, t == b) {
                (true, true) => s.true_positives += 1,
                (true, false) => {
                    s.false_positives += 1;
                    s.false_positive_cases.push(case(acc));
                }
                (false, true) => {
                    s.false_negatives += 1;
                    s.misses.push(case(acc));
                }
                (false, false) => s.true_negatives += 1,
            }
        }
        s.precision = share(s.true_positives, s.true_positives + s.false_positives);
        s.recall = share(s.true_positives, s.true_positives + s.false_negatives);
        classes.push(s);
    }
    let honest_blocked = truth
        .iter()
        .filter(|(_, t)| **t == "honest")
        .filter(|(a, _)| {
            by_account
                .get(*a)
                .is_some_and(|fl| fl.iter().any(|f| f.action == "block_recommended"))
        })
        .map(|(a, _)| case(a))
        .collect();
    let flagged = |a: &str| by_account.get(a).is_some_and(|fl| !fl.is_empty());
    let (mut tp, mut fp, mut fneg) = (0u64, 0u64, 0u64);
    for (acc, t) in &truth {
        match (flagged(acc), *t == "honest") {
            (true, false) => tp += 1,
            (true, true) => fp += 1,
            (false, false) => fneg += 1,
            (false, true) => {}
        }
    }
    let cheaters = tp + fneg;
    let pooled = Pooled {
        cheaters,
        honest: truth.len() as u64 - cheaters,
        true_positives: tp,
        false_positives: fp,
        false_negatives: fneg,
        precision: share(tp, tp + fp),
        recall: share(tp, cheaters),
    };
    let mut classes_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in &labels.accounts {
        if let Some(l) = &a.lookalike {
            classes_of
                .entry(l.as_str())
                .or_default()
                .push(a.account.as_str());
        }
    }
    let lookalikes = classes_of
        .into_iter()
        .map(|(class, accounts)| {
            let cases: Vec<Case> = accounts
                .iter()
                .filter(|a| flagged(a))
                .map(|a| case(a))
                .collect();
            LookalikeScore {
                class: class.to_string(),
                accounts: accounts.len() as u64,
                flagged: cases.len() as u64,
                block_recommended: cases
                    .iter()
                    .filter(|c| c.action.as_deref() == Some("block_recommended"))
                    .count() as u64,
                cases,
            }
        })
        .collect();
    let mut confusion: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (acc, t) in &truth {
        let row = confusion.entry(t.to_string()).or_default();
        match predicted.get(acc) {
            Some(set) if !set.is_empty() => {
                for p in set {
                    *row.entry(p.to_string()).or_default() += 1;
                }
            }
            _ => *row.entry("none".to_string()).or_default() += 1,
        }
    }
    Evaluation {
        accounts: truth.len() as u64,
        pooled,
        classes,
        lookalikes,
        honest_blocked,
        confusion,
    }
}

impl Evaluation {
    /// The evaluation as text for people.
    pub fn to_text(&self) -> String {
        let p = &self.pooled;
        let mut out = format!(
            "{} labelled accounts: {} cheaters, {} honest\n\npooled (any rule): precision {:.3} recall {:.3} (tp {}, fp {}, fn {})\n\n",
            self.accounts,
            p.cheaters,
            p.honest,
            p.precision,
            p.recall,
            p.true_positives,
            p.false_positives,
            p.false_negatives
        );
        out.push_str(&format!(
            "{:<18} {:>5} {:>5} {:>5} {:>7} {:>9} {:>7}  rules\n",
            "behaviour", "tp", "fp", "fn", "tn", "precision", "recall"
        ));
        // A share of nothing is shown as "-" (the JSON keeps the convention of 1: no flag, no miss).
        let share = |value: f64, den: u64| {
            if den == 0 {
                "-".to_string()
            } else {
                format!("{value:.3}")
            }
        };
        for c in &self.classes {
            out.push_str(&format!(
                "{:<18} {:>5} {:>5} {:>5} {:>7} {:>9} {:>7}  {}\n",
                c.behaviour,
                c.true_positives,
                c.false_positives,
                c.false_negatives,
                c.true_negatives,
                share(c.precision, c.true_positives + c.false_positives),
                share(c.recall, c.true_positives + c.false_negatives),
                c.rules.join(", ")
            ));
        }
        out.push_str(&format!(
            "\nhonest accounts with block_recommended: {}\n",
            self.honest_blocked.len()
        ));
        for l in &self.lookalikes {
            out.push_str(&format!(
                "honest look-alikes {:<15} {:>4} accounts, {:>3} flagged, {} block_recommended\n",
                l.class, l.accounts, l.flagged, l.block_recommended
            ));
            for k in &l.cases {
                out.push_str(&format!(
                    "  {} flagged by {}: {}\n",
                    k.account,
                    k.rules.join(", "),
                    k.evidence.join(" | ")
                ));
            }
        }
        out.push_str("\nconfusion (true behaviour -> predicted):\n");
        for (t, row) in &self.confusion {
            let cells: Vec<String> = row.iter().map(|(p, n)| format!("{p} {n}")).collect();
            out.push_str(&format!("  {t:<16} {}\n", cells.join(", ")));
        }
        for c in &self.classes {
            for (what, cases) in [
                ("false positive", &c.false_positive_cases),
                ("miss", &c.misses),
            ] {
                for k in cases {
                    out.push_str(&format!(
                        "{} {}: {} (truth {}; flags: {})\n",
                        c.behaviour,
                        what,
                        k.account,
                        k.truth,
                        if k.evidence.is_empty() {
                            "none".to_string()
                        } else {
                            k.evidence.join(" | ")
                        }
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::record::Ts;

    fn flag(account: &str, rule: &str, action: &str) -> FlagRow {
        FlagRow {
            flag_id: format!("{account}-{rule}"),
            account: account.into(),
            rule: rule.into(),
            title: rule.into(),
            window: "30d".into(),
            score: 1.0,
            severity: "medium".into(),
            action: action.into(),
            evidence: "{}".into(),
            refs: Vec::new(),
            first_seen: None,
            last_seen: None,
            window_end: Ts(0),
            rule_version: "v".into(),
        }
    }

    fn account(id: &str, behaviour: &str, lookalike: Option<&str>) -> LabelledAccount {
        LabelledAccount {
            account: id.into(),
            behaviour: behaviour.into(),
            lookalike: lookalike.map(str::to_string),
        }
    }

    #[test]
    fn pooled_scores_and_lookalikes() {
        let rule = |id: &str, behaviour: &str| {
            let text = format!(
                "-- id: {id}\n-- title: t\n-- behaviour: {behaviour}\n-- catches: c\n-- why: w\n-- severity: medium\n-- action: review\nSELECT 1"
            );
            Rule::parse(Path::new("r.sql"), &text).unwrap()
        };
        let rules = [rule("rage_quit", "rage_quit"), rule("bot_timing", "bot")];
        let labels = Labels {
            accounts: vec![
                account("q1", "rage_quit", None),
                account("q2", "rage_quit", None),
                account("b1", "bot", None),
                account("h1", "honest", Some("bad_connection")),
                account("h2", "honest", Some("bad_connection")),
                account("h3", "honest", None),
            ],
        };
        // q1 found by its rule, b1 found by the wrong rule (still found at the account level),
        // q2 missed, the look-alike h1 flagged; an unlabelled account is ignored.
        let flags = [
            flag("q1", "rage_quit", "review"),
            flag("b1", "rage_quit", "review"),
            flag("h1", "rage_quit", "review"),
            flag("zz", "bot_timing", "review"),
        ];
        let ev = evaluate(&labels, &rules, &flags);
        let p = &ev.pooled;
        assert_eq!((p.cheaters, p.honest), (3, 3));
        assert_eq!(
            (p.true_positives, p.false_positives, p.false_negatives),
            (2, 1, 1)
        );
        assert!((p.precision - 2.0 / 3.0).abs() < 1e-12 && (p.recall - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(ev.lookalikes.len(), 1);
        let l = &ev.lookalikes[0];
        assert_eq!(
            (l.class.as_str(), l.accounts, l.flagged, l.block_recommended),
            ("bad_connection", 2, 1, 0)
        );
        assert_eq!(l.cases[0].account, "h1");
        // Per class: rage_quit has q1 right, b1 and h1 wrong, q2 missed.
        let rq = ev
            .classes
            .iter()
            .find(|c| c.behaviour == "rage_quit")
            .unwrap();
        assert_eq!(
            (rq.true_positives, rq.false_positives, rq.false_negatives),
            (1, 2, 1)
        );
        assert!(
            ev.to_text()
                .contains("pooled (any rule): precision 0.667 recall 0.667")
        );
        // The bot class has no flag of its rule: its precision is a share of nothing, shown "-".
        let text = ev.to_text();
        let bot: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("bot "))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(bot, ["bot", "0", "0", "1", "5", "-", "0.000", "bot_timing"]);
    }
}
