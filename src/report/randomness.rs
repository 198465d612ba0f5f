//! The report's randomness battery: dice faces (overall, per variant, per seat), transitions between consecutive rolls, Belote card-by-position and adjacent pairs, Medieval duels and automatic selections; each with its verdict, minimum sample and power, under a Holm correction.
//!
//! Every test is valid for outcomes that games consume and stop on (a Ludo
//! game ends on its winning roll, a Belote match on the deal that decides
//! it): what is counted, and whether the next outcome is drawn at all, is
//! decided by the outcomes before it, never by the outcome itself. Each count
//! minus its expectation is then a martingale, so the usual chi-square and
//! binomial limits hold. The one test that broke this (pairs of consecutive
//! rolls against 1/36 each: the first roll of a pair is biased, because a
//! game goes on less often after a small, winning, roll) is replaced by the
//! Anderson-Goodman test of transitions, which conditions on the first roll
//! ([`crate::report::stats::TransitionCounts`]). `docs/report.md` has the
//! reasoning, the minimum samples and the calibration.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use serde::Serialize;

use super::ReportError;
use crate::report::stats::{
    ADJACENT_CELLS, AdjacentPairCounts, FaceCounts, PositionCounts, SelectionCounts, TestResult,
    TransitionCounts, detectable_noncentrality, duel_wins_test, normal_quantile,
};

/// The power at which the report states the smallest detectable bias of each test.
pub const POWER: f64 = 0.8;

/// A test's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "fail")]
    Fail,
    /// Below the test's minimum sample: no p-value is given and nothing is claimed.
    #[serde(rename = "insufficient data")]
    InsufficientData,
}

impl Verdict {
    /// `pass`, `fail` or `insufficient data`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::InsufficientData => "insufficient data",
        }
    }
}

/// The smallest bias a test detects with probability [`POWER`] at its threshold.
#[derive(Debug, Clone, Serialize)]
pub struct Power {
    /// The significance level the power is computed at (the family's alpha over the number
    /// of tests run: Holm's first, strictest, threshold).
    pub at_alpha: f64,
    pub power: f64,
    /// The probability under fair randomness of the cell the bias moves.
    pub fair_probability: f64,
    /// The smallest probability of that cell the test detects (above the fair one).
    pub detectable_probability: f64,
    /// In words, e.g. `one face at 16.94 % instead of 16.67 %`.
    pub description: String,
}

/// One randomness test.
#[derive(Debug, Clone, Serialize)]
pub struct Test {
    /// e.g. `dice faces`, `dice faces, variant classic`.
    pub name: String,
    /// What is tested, and the statistic.
    pub method: String,
    /// Observations (rolls, transitions, shuffles, duels, draws).
    pub observations: u64,
    /// The least sample the test is run on, in the unit of `minimum_unit`.
    pub minimum: u64,
    pub minimum_unit: String,
    pub statistic: Option<f64>,
    pub df: Option<u32>,
    pub p_value: Option<f64>,
    /// The Holm-adjusted threshold this test's p-value is compared with.
    pub threshold: Option<f64>,
    pub verdict: Verdict,
    pub power: Option<Power>,
}

/// All randomness tests of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Randomness {
    /// Family-wise significance level.
    pub alpha: f64,
    pub correction: String,
    pub tests: Vec<Test>,
    /// `fail` when a test fails; `insufficient data` when none fails but some test could
    /// not run; `pass` only when every test ran and passed.
    pub verdict: Verdict,
    pub tests_run: usize,
    pub tests_insufficient: usize,
    /// Face counts by group (`all`, `variant:…`, `seat:…`).
    pub faces: BTreeMap<String, [u64; 6]>,
    /// Transitions between consecutive rolls of a game, `[previous - 1][next - 1]`.
    pub transitions: [[u64; 6]; 6],
    pub duels_won: u64,
    pub duels: u64,
    pub shuffles: u64,
    pub selection_draws: u64,
}

fn col<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a Arc<dyn Array>, ReportError> {
    batch
        .schema()
        .index_of(name)
        .ok()
        .map(|i| batch.column(i))
        .ok_or_else(|| ReportError::Option(format!("missing column {name}")))
}

fn strings(b: &RecordBatch, name: &str) -> Result<StringArray, ReportError> {
    Ok(arrow::compute::cast(col(b, name)?, &DataType::Utf8)?
        .as_string::<i32>()
        .clone())
}

fn ints(b: &RecordBatch, name: &str) -> Result<Int64Array, ReportError> {
    Ok(arrow::compute::cast(col(b, name)?, &DataType::Int64)?
        .as_primitive::<arrow::datatypes::Int64Type>()
        .clone())
}

/// The counts behind the battery, filled from the report queries (or by the calibration).
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub faces: BTreeMap<String, FaceCounts>,
    pub transitions: TransitionCounts,
    pub positions: PositionCounts,
    pub adjacent: AdjacentPairCounts,
    pub duels_won: u64,
    pub duels: u64,
    pub selections: SelectionCounts,
}

impl Counts {
    /// Counts one roll of a game (in roll order), with its variant and seat when known;
    /// `previous` is the game's roll before it, if any.
    pub fn roll(
        &mut self,
        face: u8,
        previous: Option<u8>,
        variant: Option<&str>,
        seat: Option<&str>,
    ) {
        if !(1..=6).contains(&face) {
            return;
        }
        let mut add = |g: String| {
            let _ = self.faces.entry(g).or_default().add(face);
        };
        add("all".to_owned());
        if let Some(v) = variant {
            add(format!("variant:{v}"));
        }
        if let Some(s) = seat {
            add(format!("seat:{s}"));
        }
        if let Some(p) = previous {
            let _ = self.transitions.add(p, face);
        }
    }

    /// Counts one shuffle, deal number `deal` of its match.
    pub fn shuffle(&mut self, deck: &[u8; 32], deal: u32) {
        let _ = self.positions.add(deck);
        let _ = self.adjacent.add(deck, deal as usize % 31);
    }

    /// Counts the draws of one automatic selection (recomputed from the revealed seed): the
    /// side `color` chose the squares of `s` that are not in its `auto` list.
    pub fn selection(
        &mut self,
        seed: &str,
        game: &str,
        color: crate::fairness::SelectColor,
        s: &crate::log::event::Selection,
    ) {
        if s.auto.is_empty() {
            return;
        }
        let chosen = s.squares.iter().filter(|q| !s.auto.contains(q)).count();
        let eligible = crate::replay::fairness::medieval_eligible(color.as_str()).len();
        let remaining = eligible - chosen.min(eligible);
        for (len, idx) in crate::fairness::auto_select_draws(seed, game, color, chosen, remaining) {
            let _ = self.selections.add(len, idx);
        }
    }

    /// Counts one duel.
    pub fn duel(&mut self, won: bool) {
        self.duels += 1;
        self.duels_won += u64::from(won);
    }
}

/// Computes every test from the report queries' results.
pub fn compute(
    results: &[(String, Vec<RecordBatch>)],
    alpha: f64,
) -> Result<Randomness, ReportError> {
    Ok(battery(&counts(results)?, alpha))
}

/// The battery of tests over counts a [`Tally`] filled.
pub fn compute_counts(counts: &Counts, alpha: f64) -> Randomness {
    battery(counts, alpha)
}

/// Fills the counts from the report queries' results (`dice`, `seeds`, `deals`, `duels`,
/// `selections`).
pub fn counts(results: &[(String, Vec<RecordBatch>)]) -> Result<Counts, ReportError> {
    let mut t = Tally::default();
    for name in ["dice", "seeds", "deals", "duels", "selections"] {
        for (_, batches) in results.iter().filter(|(n, _)| n == name) {
            for b in batches {
                t.add(name, b)?;
            }
        }
    }
    Ok(t.finish())
}

/// The counts of the randomness tests, filled batch by batch from the report queries: rolls
/// arrive ordered by game and seq, a game's seed before its deals and selections. A report over
/// a long period feeds it a chunk of games at a time ([`Tally::end_chunk`]), so that only one
/// chunk's seeds are held.
#[derive(Default)]
pub struct Tally {
    c: Counts,
    /// The game and value of the last roll (transitions are counted within a game).
    current: Option<(String, u8)>,
    /// Revealed seeds of the chunk's games: shuffles and selections are recomputed from them.
    seeds: BTreeMap<String, String>,
    /// The last game and seq (deal number for deals) counted per query: a line the lake holds
    /// twice (a file read again, a seq logged twice) is one draw, counted once (its copies come
    /// one after the other, the first in the sources' order first).
    last: BTreeMap<&'static str, (String, i64)>,
}

impl Tally {
    /// Counts one batch of the query `name` (others are ignored).
    pub fn add(&mut self, name: &str, b: &RecordBatch) -> Result<(), ReportError> {
        match name {
            "dice" => self.dice(b),
            "seeds" => {
                let (game, seed) = (strings(b, "game")?, strings(b, "seed")?);
                for i in 0..b.num_rows() {
                    if !seed.is_null(i) && crate::fairness::check_seed(seed.value(i)).is_ok() {
                        self.seeds
                            .insert(game.value(i).to_string(), seed.value(i).to_string());
                    }
                }
                Ok(())
            }
            "deals" => {
                let (game, deal) = (strings(b, "game")?, ints(b, "deal")?);
                for i in 0..b.num_rows() {
                    if !self.first_copy("deals", game.value(i), deal.value(i)) {
                        continue;
                    }
                    let (Some(seed), Ok(d)) =
                        (self.seeds.get(game.value(i)), u32::try_from(deal.value(i)))
                    else {
                        continue;
                    };
                    self.c
                        .shuffle(&crate::fairness::shuffle(seed, game.value(i), d), d);
                }
                Ok(())
            }
            "duels" => {
                let (game, seq, raw) = (strings(b, "game")?, ints(b, "seq")?, strings(b, "raw")?);
                for i in 0..b.num_rows() {
                    if !self.first_copy("duels", game.value(i), seq.value(i)) {
                        continue;
                    }
                    if let Ok(e) = crate::log::parse_line(raw.value(i).as_bytes())
                        && let crate::log::Body::Move(m) = e.body
                    {
                        for d in m.duels.unwrap_or_default() {
                            self.c.duel(d.won);
                        }
                    }
                }
                Ok(())
            }
            "selections" => {
                let (game, seq, raw, seat) = (
                    strings(b, "game")?,
                    ints(b, "seq")?,
                    strings(b, "raw")?,
                    strings(b, "seat")?,
                );
                for i in 0..b.num_rows() {
                    if !self.first_copy("selections", game.value(i), seq.value(i)) {
                        continue;
                    }
                    let (Some(seed), Ok(color)) = (
                        self.seeds.get(game.value(i)),
                        seat.value(i).parse::<crate::fairness::SelectColor>(),
                    ) else {
                        continue;
                    };
                    let Ok(e) = crate::log::parse_line(raw.value(i).as_bytes()) else {
                        continue;
                    };
                    if let crate::log::Body::Selection(s) = e.body {
                        self.c.selection(seed, game.value(i), color, &s);
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether the row of `query` for `game` and `key` is the first of its copies.
    fn first_copy(&mut self, query: &'static str, game: &str, key: i64) -> bool {
        match self.last.get_mut(query) {
            Some((g, k)) if g == game && *k == key => false,
            Some((g, k)) => {
                g.clear();
                g.push_str(game);
                *k = key;
                true
            }
            None => {
                self.last.insert(query, (game.to_owned(), key));
                true
            }
        }
    }

    fn dice(&mut self, b: &RecordBatch) -> Result<(), ReportError> {
        let (game, seq, value, variant, seat) = (
            strings(b, "game")?,
            ints(b, "seq")?,
            ints(b, "value")?,
            strings(b, "variant")?,
            strings(b, "seat")?,
        );
        for i in 0..b.num_rows() {
            if !self.first_copy("dice", game.value(i), seq.value(i)) {
                continue;
            }
            let Ok(v) = u8::try_from(value.value(i)) else {
                continue;
            };
            if !(1..=6).contains(&v) {
                continue;
            }
            let g = game.value(i);
            let previous = match &self.current {
                Some((cg, p)) if cg == g => Some(*p),
                _ => None,
            };
            self.c.roll(
                v,
                previous,
                (!variant.is_null(i)).then(|| variant.value(i)),
                (!seat.is_null(i)).then(|| seat.value(i)),
            );
            match &mut self.current {
                Some((cg, p)) if cg == g => *p = v,
                _ => self.current = Some((g.to_owned(), v)),
            }
        }
        Ok(())
    }

    /// The chunk's games are all counted: their seeds can go.
    pub fn end_chunk(&mut self) {
        self.seeds.clear();
        self.current = None;
    }

    pub fn finish(self) -> Counts {
        self.c
    }
}

/// A test before the Holm step: its result, or why it did not run.
struct Planned {
    name: String,
    method: String,
    observations: u64,
    minimum: u64,
    minimum_unit: &'static str,
    result: Option<TestResult>,
    /// Turns a detectable non-centrality (chi-square) or the power level (binomial) into a bias.
    power: Box<dyn Fn(f64) -> Option<Power>>,
}

fn pct(p: f64) -> String {
    format!("{:.2} %", 100.0 * p)
}

/// The fair probability `p0` of one of `cells` equiprobable cells, raised by `delta`.
fn cell_power(at_alpha: f64, p0: f64, delta: f64, what: &str) -> Power {
    Power {
        at_alpha,
        power: POWER,
        fair_probability: p0,
        detectable_probability: p0 + delta,
        description: format!("{what} at {} instead of {}", pct(p0 + delta), pct(p0)),
    }
}

/// Runs the battery on the counts: minimum samples, p-values, Holm at `alpha`, power.
pub fn battery(c: &Counts, alpha: f64) -> Randomness {
    let mut planned: Vec<Planned> = Vec::new();
    for (g, fc) in &c.faces {
        let n: u64 = fc.counts().iter().sum();
        let name = match g.as_str() {
            "all" => "dice faces".to_string(),
            other => format!("dice faces, {}", other.replace(':', " ")),
        };
        planned.push(Planned {
            name,
            method: "Pearson chi-square of the six faces against 1/6 each".into(),
            observations: n,
            minimum: 30,
            minimum_unit: "rolls (5 expected per face)",
            result: (n >= 30).then(|| fc.test().ok()).flatten(),
            // One face at 1/6 + d, the others at 1/6 - d/5: λ = n · 7.2 d².
            power: Box::new(move |l| {
                Some(cell_power(
                    0.0,
                    1.0 / 6.0,
                    (l / (7.2 * n as f64)).sqrt(),
                    "one face",
                ))
            }),
        });
    }
    let rows = c.transitions.smallest_row();
    planned.push(Planned {
        name: "dice transitions".into(),
        method: "Anderson-Goodman chi-square of the roll after each face against 1/6 (consecutive rolls of a game)".into(),
        observations: c.transitions.pairs(),
        minimum: 30,
        minimum_unit: "transitions after every face (5 expected per cell)",
        result: (rows >= 30).then(|| c.transitions.test().ok()).flatten(),
        power: Box::new(move |l| {
            Some(cell_power(
                0.0,
                1.0 / 6.0,
                (l / (7.2 * rows as f64)).sqrt(),
                "one face right after a given face",
            ))
        }),
    });
    let shuffles = c.positions.shuffles();
    planned.push(Planned {
        name: "Belote card-by-position".into(),
        method: "Pearson chi-square of the 32 x 32 card-by-position table, rescaled by 31/32 for permutations (df 961)".into(),
        observations: shuffles,
        minimum: 160,
        minimum_unit: "shuffles (5 expected per cell)",
        result: (shuffles >= 160).then(|| c.positions.test().ok()).flatten(),
        // A card favouring a position by d: λ = n d² 32² / 31.
        power: Box::new(move |l| {
            Some(cell_power(
                0.0,
                1.0 / 32.0,
                (l * 31.0 / (1024.0 * shuffles as f64)).sqrt(),
                "one card at one position",
            ))
        }),
    });
    let adjacent = c.adjacent.shuffles();
    let k = ADJACENT_CELLS as f64;
    planned.push(Planned {
        name: "Belote adjacent pairs".into(),
        method: "Pearson chi-square of the ordered pair of cards at positions (deal mod 31, +1), one per shuffle, against 1/992 each".into(),
        observations: adjacent,
        minimum: 5 * ADJACENT_CELLS as u64,
        minimum_unit: "shuffles (5 expected per pair)",
        result: (adjacent >= 5 * ADJACENT_CELLS as u64)
            .then(|| c.adjacent.test().ok())
            .flatten(),
        power: Box::new(move |l| {
            Some(cell_power(
                0.0,
                1.0 / k,
                (l * (k - 1.0) / (adjacent as f64 * k * k)).sqrt(),
                "one card right after a given card",
            ))
        }),
    });
    let duels = c.duels;
    planned.push(Planned {
        name: "Medieval duel win rate".into(),
        method: "exact two-sided binomial test of duels won against 1/2".into(),
        observations: duels,
        minimum: 30,
        minimum_unit: "duels",
        result: (duels >= 30)
            .then(|| duel_wins_test(c.duels_won, duels).ok())
            .flatten(),
        power: Box::new(move |_| None),
    });
    let main = c.selections.main_length();
    planned.push(Planned {
        name: "Medieval automatic selections".into(),
        method: "chi-square of the index drawn from each list length against uniform, summed over the lengths with 5 expected per index".into(),
        observations: c.selections.testable_draws(),
        minimum: main.map_or(10, |(len, _)| 5 * u64::from(len)),
        minimum_unit: "draws from one list length (5 expected per index)",
        result: c.selections.test().ok(),
        power: Box::new(move |l| {
            main.map(|(len, n)| {
                let len = f64::from(len);
                cell_power(
                    0.0,
                    1.0 / len,
                    (l * (len - 1.0) / (n as f64 * len * len)).sqrt(),
                    &format!("one square of a list of {len}"),
                )
            })
        }),
    });
    // Holm (step-down) over the tests that ran: sort by p-value; the i-th smallest (0-based)
    // is rejected when p <= alpha / (m - i), and once one is not, none of the larger ones is.
    let ran: Vec<usize> = (0..planned.len())
        .filter(|&i| planned[i].result.is_some())
        .collect();
    let m = ran.len();
    let p_of = |i: usize| planned[i].result.map_or(1.0, |r| r.p_value);
    let mut order = ran.clone();
    order.sort_by(|&a, &b| {
        p_of(a)
            .total_cmp(&p_of(b))
            .then(planned[a].name.cmp(&planned[b].name))
    });
    let mut thresholds: BTreeMap<usize, f64> = BTreeMap::new();
    let mut failed: BTreeMap<usize, bool> = BTreeMap::new();
    let mut stopped = false;
    for (rank, &i) in order.iter().enumerate() {
        let th = alpha / (m - rank) as f64;
        thresholds.insert(i, th);
        let reject = !stopped && p_of(i) <= th;
        if !reject {
            stopped = true;
        }
        failed.insert(i, reject);
    }
    let at_alpha = alpha / m.max(1) as f64;
    let z = normal_quantile(1.0 - at_alpha / 2.0) + normal_quantile(POWER);
    let tests: Vec<Test> = planned
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let verdict = match (p.result, failed.get(&i)) {
                (Some(_), Some(true)) => Verdict::Fail,
                (Some(_), _) => Verdict::Pass,
                (None, _) => Verdict::InsufficientData,
            };
            let power = if p.name == "Medieval duel win rate" {
                (p.observations > 0).then(|| {
                    let d = z * 0.5 / (p.observations as f64).sqrt();
                    cell_power(at_alpha, 0.5, d, "duels won")
                })
            } else {
                p.result.and_then(|r| {
                    let l = detectable_noncentrality(r.df.unwrap_or(1), at_alpha, POWER);
                    (p.power)(l).map(|pw| Power { at_alpha, ..pw })
                })
            };
            Test {
                name: p.name,
                method: p.method,
                observations: p.observations,
                minimum: p.minimum,
                minimum_unit: p.minimum_unit.to_owned(),
                statistic: p.result.map(|r| r.statistic),
                df: p.result.and_then(|r| r.df),
                p_value: p.result.map(|r| r.p_value),
                threshold: thresholds.get(&i).copied(),
                verdict,
                power,
            }
        })
        .collect();
    let tests_insufficient = tests
        .iter()
        .filter(|t| t.verdict == Verdict::InsufficientData)
        .count();
    let verdict = if tests.iter().any(|t| t.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if tests_insufficient > 0 || tests.is_empty() {
        Verdict::InsufficientData
    } else {
        Verdict::Pass
    };
    Randomness {
        alpha,
        correction: "Holm-Bonferroni over the tests of the report that ran".into(),
        tests_run: m,
        tests_insufficient,
        verdict,
        tests,
        faces: c
            .faces
            .iter()
            .map(|(k, f)| (k.clone(), *f.counts()))
            .collect(),
        transitions: *c.transitions.counts(),
        duels_won: c.duels_won,
        duels: c.duels,
        shuffles,
        selection_draws: c.selections.draws(),
    }
}

/// Evidence tables of the randomness figures: tests, face counts, transitions, duel outcomes.
pub fn evidence_tables(r: &Randomness) -> Result<Vec<(String, RecordBatch)>, ReportError> {
    let opt_f = |f: fn(&Test) -> Option<f64>| Float64Array::from_iter(r.tests.iter().map(f));
    let tests = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("test", DataType::Utf8, false),
            Field::new("method", DataType::Utf8, false),
            Field::new("observations", DataType::Int64, false),
            Field::new("minimum", DataType::Int64, false),
            Field::new("minimum_unit", DataType::Utf8, false),
            Field::new("statistic", DataType::Float64, true),
            Field::new("df", DataType::Int64, true),
            Field::new("p_value", DataType::Float64, true),
            Field::new("holm_threshold", DataType::Float64, true),
            Field::new("verdict", DataType::Utf8, false),
            Field::new("power_at_alpha", DataType::Float64, true),
            Field::new("detectable_probability", DataType::Float64, true),
            Field::new("fair_probability", DataType::Float64, true),
            Field::new("detectable_bias", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(StringArray::from_iter_values(
                r.tests.iter().map(|t| t.name.clone()),
            )),
            Arc::new(StringArray::from_iter_values(
                r.tests.iter().map(|t| t.method.clone()),
            )),
            Arc::new(Int64Array::from_iter_values(
                r.tests.iter().map(|t| t.observations as i64),
            )),
            Arc::new(Int64Array::from_iter_values(
                r.tests.iter().map(|t| t.minimum as i64),
            )),
            Arc::new(StringArray::from_iter_values(
                r.tests.iter().map(|t| t.minimum_unit.clone()),
            )),
            Arc::new(opt_f(|t| t.statistic)),
            Arc::new(Int64Array::from_iter(
                r.tests.iter().map(|t| t.df.map(i64::from)),
            )),
            Arc::new(opt_f(|t| t.p_value)),
            Arc::new(opt_f(|t| t.threshold)),
            Arc::new(StringArray::from_iter_values(
                r.tests.iter().map(|t| t.verdict.as_str()),
            )),
            Arc::new(opt_f(|t| t.power.as_ref().map(|p| p.at_alpha))),
            Arc::new(opt_f(|t| {
                t.power.as_ref().map(|p| p.detectable_probability)
            })),
            Arc::new(opt_f(|t| t.power.as_ref().map(|p| p.fair_probability))),
            Arc::new(StringArray::from_iter(
                r.tests
                    .iter()
                    .map(|t| t.power.as_ref().map(|p| p.description.clone())),
            )),
        ],
    )?;
    let mut groups = Vec::new();
    let mut face = Vec::new();
    let mut count = Vec::new();
    for (g, counts) in &r.faces {
        for (f, c) in counts.iter().enumerate() {
            groups.push(g.clone());
            face.push(f as i64 + 1);
            count.push(*c as i64);
        }
    }
    let faces = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("group", DataType::Utf8, false),
            Field::new("face", DataType::Int64, false),
            Field::new("count", DataType::Int64, false),
        ])),
        vec![
            Arc::new(StringArray::from_iter_values(groups)),
            Arc::new(Int64Array::from_iter_values(face)),
            Arc::new(Int64Array::from_iter_values(count)),
        ],
    )?;
    let (mut prev, mut next, mut n) = (Vec::new(), Vec::new(), Vec::new());
    for (a, row) in r.transitions.iter().enumerate() {
        for (b, c) in row.iter().enumerate() {
            prev.push(a as i64 + 1);
            next.push(b as i64 + 1);
            n.push(*c as i64);
        }
    }
    let transitions = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("previous", DataType::Int64, false),
            Field::new("next", DataType::Int64, false),
            Field::new("count", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values(prev)),
            Arc::new(Int64Array::from_iter_values(next)),
            Arc::new(Int64Array::from_iter_values(n)),
        ],
    )?;
    let duels = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("duels", DataType::Int64, false),
            Field::new("won", DataType::Int64, false),
            Field::new("shuffles_tested", DataType::Int64, false),
            Field::new("selection_draws", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values([r.duels as i64])),
            Arc::new(Int64Array::from_iter_values([r.duels_won as i64])),
            Arc::new(Int64Array::from_iter_values([r.shuffles as i64])),
            Arc::new(Int64Array::from_iter_values([r.selection_draws as i64])),
        ],
    )?;
    Ok(vec![
        ("randomness_tests".into(), tests),
        ("dice_faces".into(), faces),
        ("dice_transitions".into(), transitions),
        ("duels_and_shuffles".into(), duels),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairness::{Dice, duel, shuffle};

    const SEED: &str = "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7";

    fn fair_counts(rolls: usize, deals: u32, duels: u64) -> Counts {
        let mut c = Counts::default();
        let mut prev = None;
        for (i, f) in Dice::new(SEED, "battery").take(rolls).enumerate() {
            c.roll(
                f,
                prev,
                Some("classic"),
                Some(if i % 2 == 0 { "red" } else { "blue" }),
            );
            prev = Some(f);
        }
        for d in 0..deals {
            c.shuffle(&shuffle(SEED, "battery", d), d);
        }
        for m in 0..duels {
            c.duel(duel(SEED, "battery", m));
        }
        for g in 0..400 {
            for (len, idx) in crate::fairness::auto_select_draws(
                SEED,
                &format!("sel-{g}"),
                crate::fairness::SelectColor::White,
                1,
                11,
            ) {
                c.selections.add(len, idx).unwrap();
            }
        }
        c
    }

    /// A batch of the `dice` query.
    fn dice_rows(rows: &[(&str, i64, i64)]) -> RecordBatch {
        let strs = |f: &dyn Fn(&(&str, i64, i64)) -> String| {
            Arc::new(StringArray::from(rows.iter().map(f).collect::<Vec<_>>())) as _
        };
        let ints = |f: &dyn Fn(&(&str, i64, i64)) -> i64| {
            Arc::new(Int64Array::from(rows.iter().map(f).collect::<Vec<_>>())) as _
        };
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("game", DataType::Utf8, false),
                Field::new("seq", DataType::Int64, false),
                Field::new("value", DataType::Int64, false),
                Field::new("variant", DataType::Utf8, false),
                Field::new("seat", DataType::Utf8, false),
            ])),
            vec![
                strs(&|r| r.0.to_owned()),
                ints(&|r| r.1),
                ints(&|r| r.2),
                strs(&|_| "classic".to_owned()),
                strs(&|_| "red".to_owned()),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_roll_the_lake_holds_twice_is_counted_once() {
        let once = [("g1", 1, 3), ("g1", 2, 5), ("g1", 3, 5), ("g2", 1, 6)];
        // A file read again: the copies of seq 2 and of g2's seq 1 come after the first ones,
        // one of them at a batch's start.
        let twice = [("g1", 1, 3), ("g1", 2, 5), ("g1", 2, 5)];
        let rest = [("g1", 3, 5), ("g2", 1, 6), ("g2", 1, 6)];
        let mut a = Tally::default();
        a.add("dice", &dice_rows(&once)).unwrap();
        let mut b = Tally::default();
        b.add("dice", &dice_rows(&twice)).unwrap();
        b.add("dice", &dice_rows(&rest)).unwrap();
        let (a, b) = (a.finish(), b.finish());
        assert_eq!(a.faces, b.faces);
        assert_eq!(
            a.transitions, b.transitions,
            "no (5, 5) transition made by the copy"
        );
        assert_eq!(b.faces["variant:classic"], {
            let mut f = FaceCounts::new();
            for v in [3, 5, 5, 6] {
                f.add(v).unwrap();
            }
            f
        });
    }

    #[test]
    fn an_empty_period_is_insufficient_data_never_pass() {
        let r = battery(&Counts::default(), 0.01);
        assert_eq!(r.verdict, Verdict::InsufficientData);
        assert_eq!(r.tests_run, 0);
        assert!(
            r.tests
                .iter()
                .all(|t| t.verdict == Verdict::InsufficientData
                    && t.p_value.is_none()
                    && t.threshold.is_none())
        );
    }

    #[test]
    fn a_fair_full_battery_passes_with_power_stated() {
        let r = battery(&fair_counts(30_000, 6_000, 2_000), 0.01);
        assert_eq!(r.verdict, Verdict::Pass, "{:#?}", r.tests);
        assert_eq!(r.tests_insufficient, 0);
        for t in &r.tests {
            let p = t.power.as_ref().expect("power of a test that ran");
            assert!(p.detectable_probability > p.fair_probability, "{}", t.name);
            assert!(p.at_alpha > 0.0 && p.at_alpha <= 0.01);
        }
        // With 30,000 rolls, about 11 tests and alpha 0.01: λ ≈ 24 at df 5 (power 0.8 at
        // alpha ≈ 0.0009), so one face is detectable about one percentage point off.
        let faces = r.tests.iter().find(|t| t.name == "dice faces").unwrap();
        let d = faces.power.as_ref().unwrap().detectable_probability - 1.0 / 6.0;
        assert!(d > 0.008 && d < 0.013, "{d}");
        // Four times the rolls halve it.
        let more = battery(&fair_counts(120_000, 6_000, 2_000), 0.01);
        let faces = more.tests.iter().find(|t| t.name == "dice faces").unwrap();
        let d4 = faces.power.as_ref().unwrap().detectable_probability - 1.0 / 6.0;
        assert!((d / d4 - 2.0).abs() < 0.05, "{d} {d4}");
    }

    #[test]
    fn one_missing_kind_makes_the_whole_verdict_insufficient_not_pass() {
        let r = battery(&fair_counts(30_000, 0, 2_000), 0.01);
        assert_eq!(r.verdict, Verdict::InsufficientData);
        let cards = r
            .tests
            .iter()
            .find(|t| t.name == "Belote card-by-position")
            .unwrap();
        assert_eq!(cards.verdict, Verdict::InsufficientData);
        assert!(r.tests.iter().any(|t| t.verdict == Verdict::Pass));
    }

    #[test]
    fn a_loaded_die_fails_the_faces_test_and_the_verdict() {
        let mut c = fair_counts(30_000, 6_000, 2_000);
        // Every 20th roll turned into a six: about 20.8 % sixes.
        let mut loaded = Counts::default();
        let mut prev = None;
        for (i, f) in Dice::new(SEED, "loaded").take(30_000).enumerate() {
            let f = if i % 20 == 0 { 6 } else { f };
            loaded.roll(f, prev, None, None);
            prev = Some(f);
        }
        c.faces = loaded.faces;
        c.transitions = loaded.transitions;
        let r = battery(&c, 0.01);
        assert_eq!(r.verdict, Verdict::Fail);
        let t = r.tests.iter().find(|t| t.name == "dice faces").unwrap();
        assert_eq!(t.verdict, Verdict::Fail);
        let cards = r
            .tests
            .iter()
            .find(|t| t.name == "Belote card-by-position")
            .unwrap();
        assert_eq!(cards.verdict, Verdict::Pass);
    }
}
