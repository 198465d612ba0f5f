//! The report's randomness tests: dice faces (overall, per variant, per seat), consecutive pairs, card-by-position of shuffles, Medieval duel win rate, with a Holm correction.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use serde::Serialize;

use super::ReportError;
use crate::fairness::stats::{FaceCounts, PairCounts, PositionCounts, TestResult, duel_wins_test};

/// One randomness test.
#[derive(Debug, Clone, Serialize)]
pub struct Test {
    /// e.g. `dice faces`, `dice faces, variant classic`.
    pub name: String,
    /// Observations (rolls, pairs, shuffles, duels).
    pub observations: u64,
    pub statistic: f64,
    pub df: Option<u32>,
    pub p_value: f64,
    /// The Holm-adjusted threshold this test's p-value is compared with.
    pub threshold: f64,
    pub pass: bool,
}

/// All randomness tests of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Randomness {
    /// Family-wise significance level.
    pub alpha: f64,
    pub correction: String,
    pub tests: Vec<Test>,
    pub all_pass: bool,
    /// Face counts by group (`all`, `variant:…`, `seat:…`).
    pub faces: BTreeMap<String, [u64; 6]>,
    pub duels_won: u64,
    pub duels: u64,
    pub shuffles: u64,
}

fn col<'a>(batch: &'a RecordBatch, name: &str) -> Option<&'a Arc<dyn Array>> {
    batch.schema().index_of(name).ok().map(|i| batch.column(i))
}

fn strings(b: &RecordBatch, name: &str) -> Result<StringArray, ReportError> {
    let c = col(b, name).ok_or_else(|| ReportError::Option(format!("missing column {name}")))?;
    Ok(arrow::compute::cast(c, &DataType::Utf8)?
        .as_string::<i32>()
        .clone())
}

fn ints(b: &RecordBatch, name: &str) -> Result<Int64Array, ReportError> {
    let c = col(b, name).ok_or_else(|| ReportError::Option(format!("missing column {name}")))?;
    Ok(arrow::compute::cast(c, &DataType::Int64)?
        .as_primitive::<arrow::datatypes::Int64Type>()
        .clone())
}

/// Computes every test from the report queries' results.
pub fn compute(
    results: &[(String, Vec<RecordBatch>)],
    alpha: f64,
) -> Result<Randomness, ReportError> {
    let get = |n: &str| {
        results
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, b)| b.as_slice())
            .unwrap_or(&[])
    };
    // Dice: faces by group, and each game's sequence for the pairs test.
    let mut faces: BTreeMap<String, FaceCounts> = BTreeMap::new();
    let mut sequences: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for b in get("dice") {
        let (game, value, variant, seat) = (
            strings(b, "game")?,
            ints(b, "value")?,
            strings(b, "variant")?,
            strings(b, "seat")?,
        );
        for i in 0..b.num_rows() {
            let v = value.value(i) as u8;
            if !(1..=6).contains(&v) {
                continue;
            }
            let mut groups = vec!["all".to_string()];
            if !variant.is_null(i) {
                groups.push(format!("variant:{}", variant.value(i)));
            }
            if !seat.is_null(i) {
                groups.push(format!("seat:{}", seat.value(i)));
            }
            for g in groups {
                let _ = faces.entry(g).or_default().add(v);
            }
            sequences
                .entry(game.value(i).to_string())
                .or_default()
                .push(v);
        }
    }
    let mut pairs = PairCounts::new();
    for seq in sequences.values() {
        let _ = pairs.add_sequence(seq);
    }
    // Shuffles: recomputed from the revealed seeds of Belote matches.
    let mut seeds: BTreeMap<String, String> = BTreeMap::new();
    for b in get("seeds") {
        let (game, kind, seed) = (
            strings(b, "game")?,
            strings(b, "kind")?,
            strings(b, "seed")?,
        );
        for i in 0..b.num_rows() {
            if kind.value(i) == "belote" && crate::fairness::check_seed(seed.value(i)).is_ok() {
                seeds.insert(game.value(i).to_string(), seed.value(i).to_string());
            }
        }
    }
    let mut positions = PositionCounts::new();
    for b in get("deals") {
        let (game, deal) = (strings(b, "game")?, ints(b, "deal")?);
        for i in 0..b.num_rows() {
            let (Some(seed), Ok(d)) = (seeds.get(game.value(i)), u32::try_from(deal.value(i)))
            else {
                continue;
            };
            let _ = positions.add(&crate::fairness::shuffle(seed, game.value(i), d));
        }
    }
    // Duels: every logged outcome.
    let (mut won, mut duels) = (0u64, 0u64);
    for b in get("duels") {
        let raw = strings(b, "raw")?;
        for i in 0..b.num_rows() {
            if let Ok(e) = crate::log::parse_line(raw.value(i).as_bytes())
                && let crate::log::Body::Move(m) = e.body
            {
                for d in m.duels.unwrap_or_default() {
                    duels += 1;
                    won += u64::from(d.won);
                }
            }
        }
    }
    let mut raw_tests: Vec<(String, u64, TestResult)> = Vec::new();
    for (g, c) in &faces {
        let n: u64 = c.counts().iter().sum();
        if n >= 30
            && let Ok(t) = c.test()
        {
            let name = match g.as_str() {
                "all" => "dice faces".to_string(),
                other => format!("dice faces, {}", other.replace(':', " ")),
            };
            raw_tests.push((name, n, t));
        }
    }
    let pair_n: u64 = pairs.counts().iter().flatten().sum();
    if pair_n >= 180
        && let Ok(t) = pairs.test()
    {
        raw_tests.push(("dice consecutive pairs".into(), pair_n, t));
    }
    if positions.shuffles() >= 32
        && let Ok(t) = positions.test()
    {
        raw_tests.push(("Belote card-by-position".into(), positions.shuffles(), t));
    }
    if duels >= 10
        && let Ok(t) = duel_wins_test(won, duels)
    {
        raw_tests.push(("Medieval duel win rate".into(), duels, t));
    }
    // Holm (step-down): sort by p-value; the i-th smallest (0-based) is rejected when p <= alpha / (m - i),
    // and once one is not rejected, none of the larger ones is.
    let m = raw_tests.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| {
        raw_tests[a]
            .2
            .p_value
            .total_cmp(&raw_tests[b].2.p_value)
            .then(raw_tests[a].0.cmp(&raw_tests[b].0))
    });
    let mut thresholds = vec![0.0; m];
    let mut pass = vec![true; m];
    let mut stopped = false;
    for (rank, &i) in order.iter().enumerate() {
        let th = alpha / (m - rank) as f64;
        thresholds[i] = th;
        if !stopped && raw_tests[i].2.p_value <= th {
            pass[i] = false;
        } else {
            stopped = true;
        }
    }
    let tests: Vec<Test> = raw_tests
        .into_iter()
        .enumerate()
        .map(|(i, (name, n, t))| Test {
            name,
            observations: n,
            statistic: t.statistic,
            df: t.df,
            p_value: t.p_value,
            threshold: thresholds[i],
            pass: pass[i],
        })
        .collect();
    Ok(Randomness {
        alpha,
        correction: "Holm-Bonferroni over all tests of the report".into(),
        all_pass: tests.iter().all(|t| t.pass),
        tests,
        faces: faces
            .iter()
            .map(|(k, c)| (k.clone(), *c.counts()))
            .collect(),
        duels_won: won,
        duels,
        shuffles: positions.shuffles(),
    })
}

/// Evidence tables of the randomness figures: tests, face counts, duel outcomes.
pub fn evidence_tables(r: &Randomness) -> Result<Vec<(String, RecordBatch)>, ReportError> {
    let tests = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("test", DataType::Utf8, false),
            Field::new("observations", DataType::Int64, false),
            Field::new("statistic", DataType::Float64, false),
            Field::new("df", DataType::Int64, true),
            Field::new("p_value", DataType::Float64, false),
            Field::new("holm_threshold", DataType::Float64, false),
            Field::new("pass", DataType::Boolean, false),
        ])),
        vec![
            Arc::new(StringArray::from_iter_values(
                r.tests.iter().map(|t| t.name.clone()),
            )),
            Arc::new(Int64Array::from_iter_values(
                r.tests.iter().map(|t| t.observations as i64),
            )),
            Arc::new(Float64Array::from_iter_values(
                r.tests.iter().map(|t| t.statistic),
            )),
            Arc::new(Int64Array::from_iter(
                r.tests.iter().map(|t| t.df.map(i64::from)),
            )),
            Arc::new(Float64Array::from_iter_values(
                r.tests.iter().map(|t| t.p_value),
            )),
            Arc::new(Float64Array::from_iter_values(
                r.tests.iter().map(|t| t.threshold),
            )),
            Arc::new(arrow::array::BooleanArray::from_iter(
                r.tests.iter().map(|t| Some(t.pass)),
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
    let duels = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("duels", DataType::Int64, false),
            Field::new("won", DataType::Int64, false),
            Field::new("shuffles_tested", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values([r.duels as i64])),
            Arc::new(Int64Array::from_iter_values([r.duels_won as i64])),
            Arc::new(Int64Array::from_iter_values([r.shuffles as i64])),
        ],
    )?;
    Ok(vec![
        ("randomness_tests".into(), tests),
        ("dice_faces".into(), faces),
        ("duels_and_shuffles".into(), duels),
    ])
}
