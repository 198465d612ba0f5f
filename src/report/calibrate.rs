//! Calibration of the randomness battery (`vigie report calibrate`): honest games played with the real derivations and rules, seed after seed, to show that no test fails more often than its level, that p-values are uniform, and that injected biases are found with the stated power.
//!
//! Each seed simulates honest Ludo, Belote and Medieval games (the simulator's
//! players, the real rules engines, the fairness derivations of
//! `spec/fairness.md`; games stop on their own outcomes) until the battery has
//! at least the asked numbers of rolls, shuffles and duels, then runs the
//! battery exactly as the report does. A bias is injected into the counted
//! outcomes, after the games used them: a roll turned into a six, the first
//! card swapped to the top, a lost duel counted as won, each with the
//! probability that gives the stated size.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::randomness::{self, Counts, Verdict};
use crate::log::Body;
use crate::report::stats::{
    TestResult, chi_square_critical, ks_uniform, noncentral_chi_square_sf, normal_quantile,
};
use crate::sim::SimError;
use crate::sim::plan::GameKind;

/// A bias injected into the counted outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Bias {
    /// Sixes at this probability (fair: 1/6).
    Face(f64),
    /// The first card of the canonical deck (7S) on top at this probability (fair: 1/32).
    Card(f64),
    /// Duels won at this probability (fair: 1/2).
    Duel(f64),
}

impl Bias {
    /// Parses `face=0.175`, `card=0.0375` or `duel=0.52`.
    pub fn parse(s: &str) -> Result<Bias, String> {
        let (what, p) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: write face=P, card=P or duel=P"))?;
        let p: f64 = p
            .parse()
            .map_err(|_| format!("{p:?} is not a probability"))?;
        let (bias, fair) = match what {
            "face" => (Bias::Face(p), 1.0 / 6.0),
            "card" => (Bias::Card(p), 1.0 / 32.0),
            "duel" => (Bias::Duel(p), 0.5),
            other => return Err(format!("unknown bias {other:?}: face, card or duel")),
        };
        if !(p > fair && p < 1.0) {
            return Err(format!(
                "{what}={p}: give a probability above the fair {fair:.4} and below 1"
            ));
        }
        Ok(bias)
    }

    /// The test the bias is aimed at.
    pub fn test(self) -> &'static str {
        match self {
            Bias::Face(_) => "dice faces",
            Bias::Card(_) => "Belote card-by-position",
            Bias::Duel(_) => "Medieval duel win rate",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationOptions {
    pub seeds: u32,
    pub first_seed: u64,
    /// Least rolls, shuffles and duels per seed.
    pub rolls: u64,
    pub deals: u64,
    pub duels: u64,
    pub alpha: f64,
    pub bias: Option<Bias>,
    /// Seeds run at once.
    pub threads: usize,
}

/// One seed's battery.
#[derive(Debug, Clone, Serialize)]
pub struct SeedRun {
    pub seed: u64,
    pub rolls: u64,
    pub shuffles: u64,
    pub duels: u64,
    pub selection_draws: u64,
    pub verdict: Verdict,
    /// Per test: raw p-value (when it ran) and verdict.
    pub tests: Vec<(String, Option<f64>, Verdict)>,
}

/// The calibration of one test over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct TestCalibration {
    pub test: String,
    /// Seeds on which it ran.
    pub runs: u64,
    /// Runs with a raw p-value below alpha, and their share (it should not exceed alpha).
    pub below_alpha: u64,
    pub rate_below_alpha: f64,
    /// One-sided binomial p-value of seeing that many or more at a true rate of alpha.
    pub excess_p_value: f64,
    /// Runs the battery failed it on (after Holm).
    pub failed: u64,
    /// Kolmogorov-Smirnov of its p-values against uniform.
    pub ks_statistic: Option<f64>,
    pub ks_p_value: Option<f64>,
    /// With a bias aimed at it: the power predicted for the injected size, and what was seen.
    pub predicted_power: Option<f64>,
}

/// The calibration result.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub options: CalibrationOptions,
    pub tests: Vec<TestCalibration>,
    /// Seeds on which the whole battery said fail.
    pub battery_failed: u64,
    pub seeds: Vec<SeedRun>,
}

/// A uniform number in [0, 1) from a label (deterministic injection).
fn unit(label: &str) -> f64 {
    let h = Sha256::digest(label.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[..8]);
    (u64::from_be_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

/// Counts of one seed: honest games until the targets are met.
pub fn seed_counts(seed: u64, opts: &CalibrationOptions) -> Result<Counts, SimError> {
    let mut c = Counts::default();
    let mut shuffles = 0u64;
    let keep = |k: GameKind| matches!(k, GameKind::Ludo(_) | GameKind::Belote | GameKind::Medieval);
    crate::sim::honest_games(seed, keep, |spec, game| {
        count_game(&mut c, spec, &game.text, opts.bias, &mut shuffles);
        let rolls: u64 = c.faces.get("all").map_or(0, |f| f.counts().iter().sum());
        rolls < opts.rolls || shuffles < opts.deals || c.duels < opts.duels
    })?;
    Ok(c)
}

/// Counts one game's outcomes from its log lines, as the report does from the lake.
fn count_game(
    c: &mut Counts,
    spec: &crate::sim::plan::GameSpec,
    text: &str,
    bias: Option<Bias>,
    shuffles: &mut u64,
) {
    let seed = spec.seed.clone().unwrap_or_default();
    let mut seats: BTreeMap<String, String> = BTreeMap::new();
    let mut variant: Option<String> = None;
    let mut previous: Option<u8> = None;
    for line in text.lines() {
        let Ok(e) = crate::log::parse_line(line.as_bytes()) else {
            continue;
        };
        match e.body {
            Body::GameStarted(g) => {
                for p in &g.players {
                    seats.insert(p.account.clone(), p.seat.as_str().to_owned());
                }
                if let Some(crate::log::event::Variant::Ludo(v)) = &g.variant {
                    variant = Some(v.name.clone());
                }
            }
            Body::Roll(r) => {
                let mut face = r.value;
                if let Some(Bias::Face(p)) = bias {
                    let q = (p - 1.0 / 6.0) / (5.0 / 6.0);
                    if unit(&format!("face:{}:{}", e.game, r.n)) < q {
                        face = 6;
                    }
                }
                c.roll(
                    face,
                    previous,
                    variant.as_deref(),
                    seats.get(&r.player).map(String::as_str),
                );
                previous = Some(face);
            }
            Body::Deal(d) => {
                let Ok(n) = u32::try_from(d.deal) else {
                    continue;
                };
                let mut deck = crate::fairness::shuffle(&seed, &e.game, n);
                if let Some(Bias::Card(p)) = bias {
                    let q = (p - 1.0 / 32.0) / (31.0 / 32.0);
                    if unit(&format!("card:{}:{n}", e.game)) < q
                        && let Some(at) = deck.iter().position(|&x| x == 0)
                    {
                        deck.swap(0, at);
                    }
                }
                c.shuffle(&deck, n);
                *shuffles += 1;
            }
            Body::Move(m) => {
                for (i, d) in m.duels.unwrap_or_default().iter().enumerate() {
                    let mut won = d.won;
                    if let Some(Bias::Duel(p)) = bias
                        && !won
                    {
                        let q = (p - 0.5) / 0.5;
                        won = unit(&format!("duel:{}:{}:{i}", e.game, e.seq)) < q;
                    }
                    c.duel(won);
                }
            }
            Body::Selection(s) => {
                if let Some(color) = seats
                    .get(&s.player)
                    .and_then(|c| c.parse::<crate::fairness::SelectColor>().ok())
                {
                    c.selection(&seed, &e.game, color, &s);
                }
            }
            _ => {}
        }
    }
}

/// The power a test has against the injected bias, at its strictest Holm threshold.
fn predicted_power(bias: Bias, c: &Counts, at_alpha: f64) -> f64 {
    match bias {
        Bias::Face(p) => {
            let n: u64 = c.faces.get("all").map_or(0, |f| f.counts().iter().sum());
            let d = p - 1.0 / 6.0;
            // One face at 1/6 + d, the others at 1/6 - d/5.
            let l = 7.2 * n as f64 * d * d;
            noncentral_chi_square_sf(chi_square_critical(5, at_alpha), 5, l)
        }
        Bias::Card(p) => {
            let n = c.positions.shuffles() as f64;
            let d = p - 1.0 / 32.0;
            let l = n * d * d * 1024.0 / 31.0;
            noncentral_chi_square_sf(chi_square_critical(961, at_alpha), 961, l)
        }
        Bias::Duel(p) => {
            let n = c.duels as f64;
            let z = (p - 0.5) * 2.0 * n.sqrt() - normal_quantile(1.0 - at_alpha / 2.0);
            use statrs::distribution::{ContinuousCDF as _, Normal};
            Normal::new(0.0, 1.0).map_or(f64::NAN, |nd| nd.cdf(z))
        }
    }
}

/// Runs the calibration; `progress` is told after each seed.
pub fn run(
    opts: &CalibrationOptions,
    progress: &(dyn Fn(u32) + Sync),
) -> Result<Calibration, SimError> {
    let seeds: Vec<u64> = (0..u64::from(opts.seeds))
        .map(|i| opts.first_seed + i)
        .collect();
    let threads = opts.threads.clamp(1, 64);
    let done = std::sync::atomic::AtomicU32::new(0);
    let mut results: Vec<(u64, Counts)> = Vec::new();
    std::thread::scope(|s| -> Result<(), SimError> {
        let chunks: Vec<Vec<u64>> = (0..threads)
            .map(|t| seeds.iter().copied().skip(t).step_by(threads).collect())
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let done = &done;
                s.spawn(move || -> Result<Vec<(u64, Counts)>, SimError> {
                    let mut out = Vec::new();
                    for seed in chunk {
                        out.push((seed, seed_counts(seed, opts)?));
                        progress(done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1);
                    }
                    Ok(out)
                })
            })
            .collect();
        for h in handles {
            let part = h
                .join()
                .map_err(|_| SimError::Internal("a calibration thread panicked".into()))??;
            results.extend(part);
        }
        Ok(())
    })?;
    results.sort_by_key(|(seed, _)| *seed);
    let mut runs = Vec::new();
    let mut p_values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut failed: BTreeMap<String, u64> = BTreeMap::new();
    let mut powers: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (seed, c) in &results {
        let r = randomness::battery(c, opts.alpha);
        let at_alpha = opts.alpha / r.tests_run.max(1) as f64;
        for t in &r.tests {
            if !order.contains(&t.name) {
                order.push(t.name.clone());
            }
            if let Some(p) = t.p_value {
                p_values.entry(t.name.clone()).or_default().push(p);
            }
            if t.verdict == Verdict::Fail {
                *failed.entry(t.name.clone()).or_default() += 1;
            }
        }
        if let Some(b) = opts.bias {
            powers
                .entry(b.test().to_owned())
                .or_default()
                .push(predicted_power(b, c, at_alpha));
        }
        runs.push(SeedRun {
            seed: *seed,
            rolls: c.faces.get("all").map_or(0, |f| f.counts().iter().sum()),
            shuffles: c.positions.shuffles(),
            duels: c.duels,
            selection_draws: c.selections.draws(),
            verdict: r.verdict,
            tests: r
                .tests
                .iter()
                .map(|t| (t.name.clone(), t.p_value, t.verdict))
                .collect(),
        });
    }
    let tests = order
        .into_iter()
        .map(|name| {
            let ps = p_values.get(&name).cloned().unwrap_or_default();
            let below = ps.iter().filter(|&&p| p < opts.alpha).count() as u64;
            let n = ps.len() as u64;
            let ks: Option<TestResult> = (n >= 5).then(|| ks_uniform(&ps).ok()).flatten();
            let excess = upper_binomial_tail(below, n, opts.alpha);
            TestCalibration {
                runs: n,
                below_alpha: below,
                rate_below_alpha: if n == 0 { 0.0 } else { below as f64 / n as f64 },
                excess_p_value: excess,
                failed: failed.get(&name).copied().unwrap_or(0),
                ks_statistic: ks.map(|k| k.statistic),
                ks_p_value: ks.map(|k| k.p_value),
                predicted_power: powers
                    .get(&name)
                    .map(|v| v.iter().sum::<f64>() / v.len().max(1) as f64),
                test: name,
            }
        })
        .collect();
    Ok(Calibration {
        options: opts.clone(),
        tests,
        battery_failed: runs.iter().filter(|r| r.verdict == Verdict::Fail).count() as u64,
        seeds: runs,
    })
}

/// `P(X >= k)` for `X ~ Binomial(n, p)`.
fn upper_binomial_tail(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    (k..=n)
        .map(|i| {
            (statrs::function::factorial::ln_binomial(n, i)
                + i as f64 * p.ln()
                + (n - i) as f64 * (1.0 - p).ln())
            .exp()
        })
        .sum::<f64>()
        .min(1.0)
}

impl Calibration {
    /// A table for people: one line per test.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<34} {:>5} {:>10} {:>8} {:>7} {:>8} {:>8} {:>9}\n",
            "test", "runs", "p<alpha", "rate", "failed", "KS D", "KS p", "power"
        );
        for t in &self.tests {
            let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
            let power = match t.predicted_power {
                Some(p) => format!("{p:.3}"),
                None => "-".to_owned(),
            };
            out.push_str(&format!(
                "{:<34} {:>5} {:>10} {:>8.4} {:>7} {:>8} {:>8} {:>9}\n",
                t.test,
                t.runs,
                t.below_alpha,
                t.rate_below_alpha,
                t.failed,
                opt(t.ks_statistic),
                opt(t.ks_p_value),
                power
            ));
        }
        out
    }

    /// With a bias: the share of seeds on which its test failed, and the power predicted for it.
    pub fn detection(&self) -> Option<(f64, f64)> {
        let b = self.options.bias?;
        let t = self.tests.iter().find(|t| t.test == b.test())?;
        Some((
            t.failed as f64 / t.runs.max(1) as f64,
            t.predicted_power.unwrap_or(f64::NAN),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn biases_parse_and_refuse_fair_or_impossible_sizes() {
        assert_eq!(Bias::parse("face=0.175"), Ok(Bias::Face(0.175)));
        assert_eq!(
            Bias::parse("duel=0.52").map(Bias::test),
            Ok("Medieval duel win rate")
        );
        assert!(Bias::parse("face=0.1").is_err());
        assert!(Bias::parse("card=1.5").is_err());
        assert!(Bias::parse("coin=0.6").is_err());
        assert!(Bias::parse("face").is_err());
    }

    #[test]
    fn the_binomial_tail_is_exact_on_small_cases() {
        // P(X >= 1) for n = 2, p = 0.5 is 3/4.
        assert!((upper_binomial_tail(1, 2, 0.5) - 0.75).abs() < 1e-12);
        assert_eq!(upper_binomial_tail(0, 10, 0.01), 1.0);
    }

    #[test]
    fn injection_draws_are_deterministic_and_uniform_enough() {
        assert_eq!(unit("a"), unit("a"));
        let mean: f64 = (0..2000).map(|i| unit(&format!("x{i}"))).sum::<f64>() / 2000.0;
        assert!((mean - 0.5).abs() < 0.03, "{mean}");
    }
}
