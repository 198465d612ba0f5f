//! Randomness tests over many games: dice faces, transitions between consecutive rolls,
//! card-by-position uniformity of shuffles and duel wins.
//!
//! Each test returns a [`TestResult`] `{statistic, df, p_value}`. Counts are
//! kept in accumulators ([`FaceCounts`], [`TransitionCounts`], [`PositionCounts`],
//! [`AdjacentPairCounts`], [`SelectionCounts`])
//! so that a pipeline can add game after game and test at the end. The power
//! helpers ([`detectable_noncentrality`]) give the smallest bias a test detects,
//! and [`ks_uniform`] checks that p-values over many seeds are uniform.

use statrs::distribution::{ChiSquared, ContinuousCDF};
use statrs::function::factorial::ln_binomial;

/// The outcome of a statistical test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestResult {
    /// The test statistic (chi-square value, or the number of successes for
    /// the binomial test).
    pub statistic: f64,
    /// Degrees of freedom; `None` where not applicable (exact binomial test).
    pub df: Option<u32>,
    /// The p-value: the probability, under the null hypothesis of fair
    /// randomness, of a result at least as extreme.
    pub p_value: f64,
}

impl TestResult {
    /// Whether the null hypothesis is rejected at level `alpha` (`p < alpha`).
    pub fn rejects(&self, alpha: f64) -> bool {
        self.p_value < alpha
    }
}

/// Why a test could not be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// Nothing was observed.
    #[error("no observations")]
    NoData,
    /// A die face outside 1..=6.
    #[error("die face {0} is not in 1..=6")]
    FaceOutOfRange(u8),
    /// A shuffle that is not a permutation of the 32 deck indices.
    #[error("shuffle is not a permutation of 0..32")]
    NotAPermutation,
    /// A probability outside [0, 1] or not finite.
    #[error("probability {0} is not in [0, 1]")]
    InvalidProbability(f64),
    /// Expected probabilities that do not fit the observations.
    #[error("expected probabilities do not match the {cells} observed cells")]
    BadExpectation {
        /// Number of observed cells.
        cells: usize,
    },
    /// More successes than trials.
    #[error("{successes} successes out of {trials} trials")]
    TooManySuccesses {
        /// Successes.
        successes: u64,
        /// Trials.
        trials: u64,
    },
}

/// Upper tail of the chi-square distribution with `df` degrees of freedom.
pub fn chi_square_sf(statistic: f64, df: u32) -> f64 {
    if df == 0 {
        return if statistic > 0.0 { 0.0 } else { 1.0 };
    }
    match ChiSquared::new(f64::from(df)) {
        Ok(dist) => dist.sf(statistic.max(0.0)),
        // df >= 1 is always a valid shape.
        Err(_) => f64::NAN,
    }
}

/// Pearson's chi-square goodness-of-fit test of `observed` counts against
/// cell probabilities `probs` (same length, positive, summing to 1);
/// `df = cells - 1`.
pub fn chi_square_gof(observed: &[u64], probs: &[f64]) -> Result<TestResult, StatsError> {
    if observed.len() != probs.len() || observed.len() < 2 {
        return Err(StatsError::BadExpectation {
            cells: observed.len(),
        });
    }
    for &p in probs {
        if !(p.is_finite() && p > 0.0 && p <= 1.0) {
            return Err(StatsError::InvalidProbability(p));
        }
    }
    if (probs.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
        return Err(StatsError::BadExpectation {
            cells: observed.len(),
        });
    }
    let n: u64 = observed.iter().sum();
    if n == 0 {
        return Err(StatsError::NoData);
    }
    let n = n as f64;
    let statistic = observed
        .iter()
        .zip(probs)
        .map(|(&o, &p)| {
            let e = n * p;
            (o as f64 - e).powi(2) / e
        })
        .sum::<f64>();
    let df = (observed.len() - 1) as u32;
    Ok(TestResult {
        statistic,
        df: Some(df),
        p_value: chi_square_sf(statistic, df),
    })
}

fn uniform_gof(observed: &[u64]) -> Result<TestResult, StatsError> {
    let p = 1.0 / observed.len() as f64;
    chi_square_gof(observed, &vec![p; observed.len()])
}

fn face_index(face: u8) -> Result<usize, StatsError> {
    if (1..=6).contains(&face) {
        Ok(usize::from(face - 1))
    } else {
        Err(StatsError::FaceOutOfRange(face))
    }
}

/// Counts of die faces 1-6.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaceCounts {
    counts: [u64; 6],
}

impl FaceCounts {
    /// Empty counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one face.
    pub fn add(&mut self, face: u8) -> Result<(), StatsError> {
        self.counts[face_index(face)?] += 1;
        Ok(())
    }

    /// Counts every face of a sequence (all or nothing on a bad face).
    pub fn add_all(&mut self, faces: &[u8]) -> Result<(), StatsError> {
        for &f in faces {
            face_index(f)?;
        }
        for &f in faces {
            self.add(f)?;
        }
        Ok(())
    }

    /// The counts, face 1 first.
    pub fn counts(&self) -> &[u64; 6] {
        &self.counts
    }

    /// Chi-square test of uniform faces: `df = 5`.
    pub fn test(&self) -> Result<TestResult, StatsError> {
        uniform_gof(&self.counts)
    }
}

/// Chi-square test of uniform die faces (df 5).
pub fn chi_square_faces(faces: &[u8]) -> Result<TestResult, StatsError> {
    let mut c = FaceCounts::new();
    c.add_all(faces)?;
    c.test()
}

/// Transitions between consecutive rolls of one game: `counts[previous - 1][next - 1]`.
///
/// ## Why transitions, and why this test is valid when games stop on their rolls
/// A game stops right after its winning roll, and winning rolls are mostly
/// small, so the *first* roll of a within-game pair is not uniform: a pair
/// `(x, y)` exists only when the game went on after `x`. A test of the 36
/// cells against 1/36 each (or of independence with uniform margins) is
/// therefore biased on fair dice at large samples. What fair dice do promise
/// is that each roll is uniform *whatever came before*, including whether
/// the game went on. So the test here is the Anderson-Goodman test of known
/// transition probabilities: for each previous face `a` with `R_a` pairs,
/// `Σ_b (C_ab - R_a/6)² / (R_a/6)`, summed over the six rows, is
/// asymptotically chi-square with `6 × 5 = 30` degrees of freedom. Which pairs
/// are counted is decided by the past only, so each row's counts are a
/// martingale and the selection cannot bias them. It detects both serial
/// dependence and a face that is favoured after another.
///
/// Every consecutive pair of a game is counted (overlapping: `(x0, x1)`,
/// `(x1, x2)`, ...); pairs never straddle two games.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransitionCounts {
    counts: [[u64; 6]; 6],
}

impl TransitionCounts {
    /// Empty counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one transition from `previous` to `next` (two consecutive rolls of one game).
    pub fn add(&mut self, previous: u8, next: u8) -> Result<(), StatsError> {
        let (a, b) = (face_index(previous)?, face_index(next)?);
        self.counts[a][b] += 1;
        Ok(())
    }

    /// Counts every consecutive pair of one game's rolls, in roll order (all or nothing on a bad face).
    pub fn add_sequence(&mut self, faces: &[u8]) -> Result<(), StatsError> {
        for &f in faces {
            face_index(f)?;
        }
        for w in faces.windows(2) {
            self.add(w[0], w[1])?;
        }
        Ok(())
    }

    /// The counts, indexed `[previous - 1][next - 1]`.
    pub fn counts(&self) -> &[[u64; 6]; 6] {
        &self.counts
    }

    /// Pairs counted.
    pub fn pairs(&self) -> u64 {
        self.counts.iter().flatten().sum()
    }

    /// The fewest pairs of any previous face (the test wants 5 expected per cell: 30).
    pub fn smallest_row(&self) -> u64 {
        self.counts
            .iter()
            .map(|r| r.iter().sum::<u64>())
            .min()
            .unwrap_or(0)
    }

    /// The Anderson-Goodman test: `df = 30`, or `5 ×` the rows seen when a face never came first.
    pub fn test(&self) -> Result<TestResult, StatsError> {
        let mut statistic = 0.0;
        let mut df = 0u32;
        for row in &self.counts {
            let r: u64 = row.iter().sum();
            if r == 0 {
                continue;
            }
            let e = r as f64 / 6.0;
            statistic += row.iter().map(|&o| (o as f64 - e).powi(2) / e).sum::<f64>();
            df += 5;
        }
        if df == 0 {
            return Err(StatsError::NoData);
        }
        Ok(TestResult {
            statistic,
            df: Some(df),
            p_value: chi_square_sf(statistic, df),
        })
    }
}

/// Anderson-Goodman test of the transitions of one sequence (df 30); see [`TransitionCounts`].
pub fn chi_square_transitions(faces: &[u8]) -> Result<TestResult, StatsError> {
    let mut c = TransitionCounts::new();
    c.add_sequence(faces)?;
    c.test()
}

/// Number of positions (and cards) of a Belote deck.
const N: usize = 32;

/// Card-by-position counts of shuffles: `counts[position][card]`.
///
/// ## Statistic and degrees of freedom
/// Each shuffle is a permutation matrix, so every row (position) and every
/// column (card) of the table sums to the number of shuffles `S`: the table
/// lives in a space of dimension `(32 - 1)^2 = 961`. For uniform random
/// permutations the covariance of one permutation matrix is
/// `(1 / (n - 1)) (I - J/n) ⊗ (I - J/n)` with `n = 32`, a multiple of a
/// projection of rank `(n - 1)^2`. Hence Pearson's
/// `X² = Σ (O - E)² / E` (with `E = S / 32`) tends to `(n / (n - 1)) χ²(961)`,
/// not `χ²(1023)` (which would ignore the margins) nor `χ²(961)` itself
/// (its mean is `32 · 31 = 992`). The reported statistic is therefore the
/// rescaled `X² · 31 / 32`, asymptotically chi-square with `df = 961`.
/// The approximation wants `E >= 5`, i.e. at least 160 shuffles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionCounts {
    counts: Box<[[u64; N]; N]>,
    shuffles: u64,
}

impl Default for PositionCounts {
    fn default() -> Self {
        PositionCounts {
            counts: Box::new([[0; N]; N]),
            shuffles: 0,
        }
    }
}

impl PositionCounts {
    /// Empty counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one shuffle (canonical indices, top card first).
    pub fn add(&mut self, deck: &[u8; N]) -> Result<(), StatsError> {
        let mut seen = [false; N];
        for &c in deck {
            let c = usize::from(c);
            if c >= N || seen[c] {
                return Err(StatsError::NotAPermutation);
            }
            seen[c] = true;
        }
        for (pos, &c) in deck.iter().enumerate() {
            self.counts[pos][usize::from(c)] += 1;
        }
        self.shuffles += 1;
        Ok(())
    }

    /// Number of shuffles counted.
    pub fn shuffles(&self) -> u64 {
        self.shuffles
    }

    /// The table, `[position][card]`.
    pub fn counts(&self) -> &[[u64; N]; N] {
        &self.counts
    }

    /// Pearson's raw `X² = Σ (O - E)² / E` over the 1024 cells.
    pub fn pearson(&self) -> Result<f64, StatsError> {
        if self.shuffles == 0 {
            return Err(StatsError::NoData);
        }
        let e = self.shuffles as f64 / N as f64;
        Ok(self
            .counts
            .iter()
            .flatten()
            .map(|&o| (o as f64 - e).powi(2) / e)
            .sum())
    }

    /// The uniformity test: statistic `X² · 31/32`, `df = 961` (see the type's
    /// documentation).
    pub fn test(&self) -> Result<TestResult, StatsError> {
        let n = N as f64;
        let statistic = self.pearson()? * (n - 1.0) / n;
        let df = ((N - 1) * (N - 1)) as u32;
        Ok(TestResult {
            statistic,
            df: Some(df),
            p_value: chi_square_sf(statistic, df),
        })
    }
}

/// Card-by-position uniformity of a set of shuffles (df 961); see
/// [`PositionCounts`].
pub fn card_position_uniformity(shuffles: &[[u8; N]]) -> Result<TestResult, StatsError> {
    let mut c = PositionCounts::new();
    for s in shuffles {
        c.add(s)?;
    }
    c.test()
}

/// One adjacent pair of cards per shuffle: `counts[first][second]` of the cards at positions
/// `p` and `p + 1`, where `p` is chosen without looking at the shuffle (the report uses
/// `deal mod 31`, so that every position pair is covered).
///
/// Taking one pair per shuffle keeps the observations independent: under a uniform
/// shuffle the pair is uniform over the `32 × 31 = 992` ordered pairs of distinct
/// cards, so Pearson's statistic over those cells is asymptotically chi-square with
/// `df = 991`, without the corrections that overlapping pairs of one permutation would
/// need. It detects shuffles that keep neighbours together (or apart), which the
/// card-by-position table cannot see. The approximation wants 5 expected per cell:
/// at least 4,960 shuffles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdjacentPairCounts {
    counts: Box<[[u64; N]; N]>,
    shuffles: u64,
}

impl Default for AdjacentPairCounts {
    fn default() -> Self {
        AdjacentPairCounts {
            counts: Box::new([[0; N]; N]),
            shuffles: 0,
        }
    }
}

/// Ordered pairs of distinct cards.
pub const ADJACENT_CELLS: usize = N * (N - 1);

impl AdjacentPairCounts {
    /// Empty counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts the cards at positions `p` and `p + 1` of one shuffle (`p` in `0..31`).
    pub fn add(&mut self, deck: &[u8; N], p: usize) -> Result<(), StatsError> {
        if p + 1 >= N {
            return Err(StatsError::BadExpectation { cells: p });
        }
        let (a, b) = (usize::from(deck[p]), usize::from(deck[p + 1]));
        if a >= N || b >= N || a == b {
            return Err(StatsError::NotAPermutation);
        }
        self.counts[a][b] += 1;
        self.shuffles += 1;
        Ok(())
    }

    /// Shuffles counted.
    pub fn shuffles(&self) -> u64 {
        self.shuffles
    }

    /// Chi-square test of the 992 ordered pairs against 1/992 each: `df = 991`.
    pub fn test(&self) -> Result<TestResult, StatsError> {
        let flat: Vec<u64> = (0..N)
            .flat_map(|a| (0..N).filter(move |&b| b != a).map(move |b| (a, b)))
            .map(|(a, b)| self.counts[a][b])
            .collect();
        uniform_gof(&flat)
    }
}

/// Indices drawn by `below(len)` for automatic selections, by list length:
/// `counts[len]` has one count per index `0..len`.
///
/// Each draw is uniform over its list whatever happened before, so for every
/// length the counts are tested against `1/len`; the statistics of the lengths
/// with enough draws (5 expected per index) are added, and so are their degrees
/// of freedom (`Σ (len - 1)`): independent chi-squares add.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelectionCounts {
    counts: std::collections::BTreeMap<u32, Vec<u64>>,
}

impl SelectionCounts {
    /// Empty counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one draw of `index` from a list of `len` squares.
    pub fn add(&mut self, len: u32, index: u32) -> Result<(), StatsError> {
        if index >= len {
            return Err(StatsError::BadExpectation {
                cells: len as usize,
            });
        }
        let row = self
            .counts
            .entry(len)
            .or_insert_with(|| vec![0; len as usize]);
        row[index as usize] += 1;
        Ok(())
    }

    /// Every draw counted.
    pub fn draws(&self) -> u64 {
        self.counts.values().flatten().sum()
    }

    /// Draws from lists long enough and frequent enough to be tested (5 expected per index).
    pub fn testable_draws(&self) -> u64 {
        self.testable()
            .map(|(_, row)| row.iter().sum::<u64>())
            .sum()
    }

    fn testable(&self) -> impl Iterator<Item = (u32, &Vec<u64>)> {
        self.counts
            .iter()
            .filter(|(len, row)| **len >= 2 && row.iter().sum::<u64>() >= 5 * u64::from(**len))
            .map(|(len, row)| (*len, row))
    }

    /// The summed chi-square over the testable lengths.
    pub fn test(&self) -> Result<TestResult, StatsError> {
        let mut statistic = 0.0;
        let mut df = 0u32;
        for (len, row) in self.testable() {
            let n: u64 = row.iter().sum();
            let e = n as f64 / f64::from(len);
            statistic += row.iter().map(|&o| (o as f64 - e).powi(2) / e).sum::<f64>();
            df += len - 1;
        }
        if df == 0 {
            return Err(StatsError::NoData);
        }
        Ok(TestResult {
            statistic,
            df: Some(df),
            p_value: chi_square_sf(statistic, df),
        })
    }

    /// The most frequent testable length and its draws (for the power statement).
    pub fn main_length(&self) -> Option<(u32, u64)> {
        self.testable()
            .map(|(len, row)| (len, row.iter().sum::<u64>()))
            .max_by_key(|(len, n)| (*n, *len))
    }
}

/// Upper tail of the non-central chi-square distribution (`df`, non-centrality `lambda`),
/// as the Poisson mixture of central tails `Σ_j Pois(j; λ/2) P(χ²(df + 2j) > x)`.
pub fn noncentral_chi_square_sf(x: f64, df: u32, lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return chi_square_sf(x, df);
    }
    let half = lambda / 2.0;
    let spread = 12.0 * half.sqrt() + 30.0;
    let lo = (half - spread).max(0.0) as u64;
    let hi = (half + spread) as u64;
    let mut total = 0.0;
    for j in lo..=hi {
        let ln_w = -half + j as f64 * half.ln() - statrs::function::gamma::ln_gamma(j as f64 + 1.0);
        let w = ln_w.exp();
        if w < 1e-300 {
            continue;
        }
        total += w * chi_square_sf(x, df + 2 * j as u32);
    }
    total.min(1.0)
}

/// The chi-square critical value: `P(χ²(df) > c) = alpha`.
pub fn chi_square_critical(df: u32, alpha: f64) -> f64 {
    match ChiSquared::new(f64::from(df.max(1))) {
        Ok(d) => d.inverse_cdf(1.0 - alpha),
        Err(_) => f64::NAN,
    }
}

/// The smallest non-centrality a chi-square test with `df` detects at level `alpha`
/// with probability `power` (bisection on [`noncentral_chi_square_sf`]).
pub fn detectable_noncentrality(df: u32, alpha: f64, power: f64) -> f64 {
    let crit = chi_square_critical(df, alpha);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while noncentral_chi_square_sf(crit, df, hi) < power {
        hi *= 2.0;
        if hi > 1e9 {
            return f64::INFINITY;
        }
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if noncentral_chi_square_sf(crit, df, mid) < power {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Standard normal quantile.
pub fn normal_quantile(p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF as _, Normal};
    Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p))
}

/// The one-sample Kolmogorov-Smirnov test of `values` against the uniform distribution on
/// [0, 1]: the statistic `D` and its asymptotic p-value (with Stephens' small-sample
/// correction `(√n + 0.12 + 0.11/√n) D`).
pub fn ks_uniform(values: &[f64]) -> Result<TestResult, StatsError> {
    if values.is_empty() {
        return Err(StatsError::NoData);
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut d = 0.0f64;
    for (i, &x) in v.iter().enumerate() {
        let x = x.clamp(0.0, 1.0);
        d = d.max((i as f64 + 1.0) / n - x).max(x - i as f64 / n);
    }
    let t = (n.sqrt() + 0.12 + 0.11 / n.sqrt()) * d;
    // Q_KS(t) = 2 Σ_{k>=1} (-1)^(k-1) e^(-2 k² t²).
    let p_value = if t < 1e-3 {
        1.0
    } else {
        let mut q = 0.0;
        for k in 1..=100 {
            let k = f64::from(k);
            let term = 2.0 * (-2.0 * k * k * t * t).exp();
            q += if k as u32 % 2 == 1 { term } else { -term };
            if term < 1e-16 {
                break;
            }
        }
        q.clamp(0.0, 1.0)
    };
    Ok(TestResult {
        statistic: d,
        df: None,
        p_value,
    })
}

fn ln_pmf(k: u64, n: u64, p: f64) -> f64 {
    // Edge probabilities: all mass on one value.
    if p == 0.0 {
        return if k == 0 { 0.0 } else { f64::NEG_INFINITY };
    }
    if p == 1.0 {
        return if k == n { 0.0 } else { f64::NEG_INFINITY };
    }
    ln_binomial(n, k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()
}

/// Exact two-sided binomial test of `successes` out of `trials` against
/// probability `p`: the p-value is the total probability of the outcomes no
/// more likely than the one observed (relative tolerance 1e-7, as R's
/// `binom.test`). The statistic is the number of successes; `df` is `None`.
pub fn binomial_test(successes: u64, trials: u64, p: f64) -> Result<TestResult, StatsError> {
    if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
        return Err(StatsError::InvalidProbability(p));
    }
    if trials == 0 {
        return Err(StatsError::NoData);
    }
    if successes > trials {
        return Err(StatsError::TooManySuccesses { successes, trials });
    }
    let observed = ln_pmf(successes, trials, p);
    let threshold = observed + (1.0 + 1e-7f64).ln();
    let p_value = (0..=trials)
        .map(|k| ln_pmf(k, trials, p))
        .filter(|&l| l <= threshold)
        .map(f64::exp)
        .sum::<f64>()
        .min(1.0);
    Ok(TestResult {
        statistic: successes as f64,
        df: None,
        p_value,
    })
}

/// Exact two-sided binomial test of duel wins against `p = 1/2`.
pub fn duel_wins_test(wins: u64, duels: u64) -> Result<TestResult, StatsError> {
    binomial_test(wins, duels, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairness::{Dice, duel, shuffle};

    const SEED: &str = "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7";

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn chi_square_textbook_critical_values() {
        // Table values: chi2(5) at 0.05 is 11.0705, chi2(35) at 0.05 is 49.8018.
        assert!(close(chi_square_sf(11.0705, 5), 0.05, 1e-5));
        assert!(close(chi_square_sf(49.8018, 35), 0.05, 1e-5));
        // chi2(961) at 0.05 is about 1034.0 (Wilson-Hilferty).
        let p = chi_square_sf(1034.0, 961);
        assert!(p > 0.04 && p < 0.06, "{p}");
    }

    #[test]
    fn faces_textbook_value() {
        // 60 rolls with counts 5 8 9 8 10 20: X² = 13.4, df 5, p = 0.019905.
        let mut faces = Vec::new();
        for (face, n) in [(1u8, 5), (2, 8), (3, 9), (4, 8), (5, 10), (6, 20)] {
            faces.extend(std::iter::repeat_n(face, n));
        }
        let r = chi_square_faces(&faces).unwrap();
        assert!(close(r.statistic, 13.4, 1e-9));
        assert_eq!(r.df, Some(5));
        assert!(close(r.p_value, 0.019_905_220, 1e-6), "{}", r.p_value);
    }

    #[test]
    fn faces_uniform_passes_biased_fails() {
        let fair: Vec<u8> = Dice::new(SEED, "stats").take(6000).collect();
        let r = chi_square_faces(&fair).unwrap();
        assert!(!r.rejects(0.001), "{r:?}");
        let exact: Vec<u8> = (0..600).map(|i| (i % 6 + 1) as u8).collect();
        assert_eq!(chi_square_faces(&exact).unwrap().p_value, 1.0);
        let biased: Vec<u8> = (0..600)
            .map(|i| if i % 4 == 0 { 6 } else { (i % 6 + 1) as u8 })
            .collect();
        assert!(chi_square_faces(&biased).unwrap().rejects(0.001));
    }

    #[test]
    fn faces_errors() {
        assert_eq!(chi_square_faces(&[]), Err(StatsError::NoData));
        assert_eq!(
            chi_square_faces(&[1, 7]),
            Err(StatsError::FaceOutOfRange(7))
        );
        assert_eq!(chi_square_faces(&[0]), Err(StatsError::FaceOutOfRange(0)));
    }

    #[test]
    fn transitions_uniform_passes_biased_fails() {
        let fair: Vec<u8> = Dice::new(SEED, "pairs").take(20000).collect();
        let r = chi_square_transitions(&fair).unwrap();
        assert_eq!(r.df, Some(30));
        assert!(!r.rejects(0.001), "{r:?}");
        // Uniform faces but each face always followed by the next one: the
        // face test passes while the transition test fails.
        let cyclic: Vec<u8> = (0..3600).map(|i| (i % 6 + 1) as u8).collect();
        assert!(!chi_square_faces(&cyclic).unwrap().rejects(0.05));
        assert!(chi_square_transitions(&cyclic).unwrap().rejects(0.001));
    }

    #[test]
    fn transitions_hand_computed_value() {
        // Row "after 1": 20 10 10 10 10 0 (R = 60, E = 10): (100 + 100) / 10 = 20.
        // Every other row exactly 10 per cell: 0. df 30; P(chi2(30) > 20) = e^-10 Σ_{i<15} 10^i/i!.
        let mut c = TransitionCounts::new();
        for a in 1..=6u8 {
            for b in 1..=6u8 {
                let n = match (a, b) {
                    (1, 1) => 20,
                    (1, 6) => 0,
                    _ => 10,
                };
                for _ in 0..n {
                    c.add(a, b).unwrap();
                }
            }
        }
        let r = c.test().unwrap();
        assert!(close(r.statistic, 20.0, 1e-9));
        assert_eq!(r.df, Some(30));
        assert!(close(r.p_value, 0.916_541_527, 1e-6), "{r:?}");
        assert_eq!(c.smallest_row(), 60);
    }

    #[test]
    fn transitions_overlap_within_a_game_and_never_straddle_games() {
        let mut c = TransitionCounts::new();
        c.add_sequence(&[1, 2, 3]).unwrap();
        c.add_sequence(&[6, 1]).unwrap();
        let counts = c.counts();
        assert_eq!(counts[0][1], 1);
        assert_eq!(counts[1][2], 1);
        assert_eq!(counts[5][0], 1);
        assert_eq!(counts[2][5], 0, "no pair across two games");
        assert_eq!(c.pairs(), 3);
        assert_eq!(c.add_sequence(&[1, 7]), Err(StatsError::FaceOutOfRange(7)));
        assert_eq!(c.pairs(), 3, "all or nothing");
    }

    #[test]
    fn transitions_stay_valid_when_games_stop_on_small_rolls() {
        // Games that stop after a 1 with probability 1/2: the first face of a pair is then
        // short of 1s, which biased the old test of the 36 cells against 1/36. The
        // transition test conditions on the first face and stays calibrated.
        let mut c = TransitionCounts::new();
        let mut rejected_naive = 0;
        for seed in 0..20u32 {
            let mut t = TransitionCounts::new();
            let mut cells = [[0u64; 6]; 6];
            let mut game = 0u32;
            let mut dice = Dice::new(SEED, &format!("stop-{seed}-{game}"));
            let mut prev: Option<u8> = None;
            let mut coin = Dice::new(SEED, &format!("coin-{seed}"));
            for _ in 0..60_000 {
                let f = dice.next().unwrap_or(1);
                if let Some(p) = prev {
                    t.add(p, f).unwrap();
                    cells[usize::from(p - 1)][usize::from(f - 1)] += 1;
                }
                prev = Some(f);
                if f == 1 && coin.next().unwrap_or(1) <= 3 {
                    game += 1;
                    dice = Dice::new(SEED, &format!("stop-{seed}-{game}"));
                    prev = None;
                }
            }
            let flat: Vec<u64> = cells.iter().flatten().copied().collect();
            if uniform_gof(&flat).unwrap().rejects(0.01) {
                rejected_naive += 1;
            }
            if seed == 0 {
                c = t.clone();
            }
            assert!(
                !t.test().unwrap().rejects(0.0005),
                "seed {seed}: {:?}",
                t.test()
            );
        }
        assert!(c.pairs() > 50_000);
        assert!(
            rejected_naive >= 10,
            "the naive test rejected only {rejected_naive} of 20"
        );
    }

    #[test]
    fn adjacent_pairs_fair_pass_neighbours_kept_fail() {
        let fair: Vec<[u8; 32]> = (0..6000).map(|d| shuffle(SEED, "adj", d)).collect();
        let mut c = AdjacentPairCounts::new();
        for (d, deck) in fair.iter().enumerate() {
            c.add(deck, d % 31).unwrap();
        }
        let r = c.test().unwrap();
        assert_eq!(r.df, Some(991));
        assert!(!r.rejects(0.001), "{r:?}");
        // A shuffle that puts card 1 right after card 0 one time in ten: every card is
        // still at a uniform position, but the pair test sees it.
        let mut biased = AdjacentPairCounts::new();
        for (d, deck) in fair.iter().enumerate() {
            let mut deck = *deck;
            if d % 10 == 0 {
                let p = d % 31;
                let (a, b) = (
                    deck.iter().position(|&x| x == 0).unwrap_or(0),
                    deck.iter().position(|&x| x == 1).unwrap_or(1),
                );
                deck.swap(a, p);
                let b = if b == p { a } else { b };
                deck.swap(b, p + 1);
            }
            biased.add(&deck, d % 31).unwrap();
        }
        assert!(biased.test().unwrap().rejects(0.001));
        assert!(biased.add(&fair[0], 31).is_err());
    }

    #[test]
    fn selections_sum_the_lengths_with_enough_draws() {
        let mut c = SelectionCounts::new();
        for i in 0..90u32 {
            c.add(9, i % 9).unwrap();
        }
        // Too few draws from lists of 10 to be tested: left out of the statistic.
        c.add(10, 3).unwrap();
        let r = c.test().unwrap();
        assert_eq!((r.statistic, r.df), (0.0, Some(8)));
        assert_eq!(c.draws(), 91);
        assert_eq!(c.testable_draws(), 90);
        assert_eq!(c.main_length(), Some((9, 90)));
        assert!(c.add(3, 3).is_err());
        // Always index 0: refused.
        let mut bad = SelectionCounts::new();
        for _ in 0..100 {
            bad.add(9, 0).unwrap();
        }
        assert!(bad.test().unwrap().rejects(0.001));
    }

    #[test]
    fn noncentral_tail_matches_the_closed_form_at_one_df() {
        // With df 1, X = (Z + √λ)²: P(X > x) = Φ(√λ - √x) + Φ(-√x - √λ).
        use statrs::distribution::{ContinuousCDF as _, Normal};
        let n = Normal::new(0.0, 1.0).unwrap();
        for (x, lambda) in [(3.84, 2.0), (10.0, 7.0), (1.0, 0.5), (20.0, 30.0)] {
            let (rx, rl): (f64, f64) = (f64::sqrt(x), f64::sqrt(lambda));
            let want = n.cdf(rl - rx) + n.cdf(-rx - rl);
            let got = noncentral_chi_square_sf(x, 1, lambda);
            assert!(close(got, want, 1e-9), "x {x} λ {lambda}: {got} vs {want}");
        }
        // The classic sample-size constant: (1.95996 + 0.84162)² = 7.8489.
        let l = detectable_noncentrality(1, 0.05, 0.8);
        assert!(close(l, 7.8489, 1e-3), "{l}");
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-6));
    }

    #[test]
    fn ks_accepts_uniform_values_and_refuses_skewed_ones() {
        let even: Vec<f64> = (0..200).map(|i| (f64::from(i) + 0.5) / 200.0).collect();
        let r = ks_uniform(&even).unwrap();
        assert!(close(r.statistic, 0.0025, 1e-12), "{r:?}");
        assert!(r.p_value > 0.999);
        let skewed: Vec<f64> = even.iter().map(|x| x * x).collect();
        assert!(ks_uniform(&skewed).unwrap().p_value < 1e-6);
        let one = ks_uniform(&[0.5]).unwrap();
        assert!(close(one.statistic, 0.5, 1e-12));
        assert_eq!(ks_uniform(&[]), Err(StatsError::NoData));
    }

    #[test]
    fn positions_hand_computed_value() {
        // 32 identity "shuffles": 32 on the diagonal, 0 elsewhere, E = 1:
        // X² = 32 * 31² + 992 = 31744, rescaled by 31/32: 30752.
        let id: [u8; 32] = std::array::from_fn(|i| i as u8);
        let mut c = PositionCounts::new();
        for _ in 0..32 {
            c.add(&id).unwrap();
        }
        assert_eq!(c.pearson().unwrap(), 31744.0);
        let r = c.test().unwrap();
        assert_eq!(r.statistic, 30752.0);
        assert!(r.p_value < 1e-12);
    }

    #[test]
    fn positions_uniform_passes_biased_fails() {
        let fair: Vec<[u8; 32]> = (0..2000).map(|d| shuffle(SEED, "pos", d)).collect();
        let r = card_position_uniformity(&fair).unwrap();
        assert_eq!(r.df, Some(961));
        assert!(!r.rejects(0.001), "{r:?}");
        // Mean of the rescaled statistic is 961 under the null: a fair run
        // should land near it.
        assert!(r.statistic > 800.0 && r.statistic < 1120.0, "{r:?}");
        // A shuffle that never moves the bottom card.
        let biased: Vec<[u8; 32]> = fair
            .iter()
            .map(|d| {
                let mut d = *d;
                let at = d.iter().position(|&c| c == 31).unwrap_or(31);
                d.swap(at, 31);
                d
            })
            .collect();
        assert!(card_position_uniformity(&biased).unwrap().rejects(0.001));
    }

    #[test]
    fn positions_latin_square_is_perfect() {
        // The 32 cyclic shifts put every card exactly once in every position.
        let shifts: Vec<[u8; 32]> = (0..32)
            .map(|k| std::array::from_fn(|i| ((i + k) % 32) as u8))
            .collect();
        let r = card_position_uniformity(&shifts).unwrap();
        assert_eq!(r.statistic, 0.0);
        assert_eq!(r.p_value, 1.0);
    }

    #[test]
    fn positions_reject_non_permutations() {
        let mut d: [u8; 32] = std::array::from_fn(|i| i as u8);
        d[0] = 1;
        assert_eq!(
            PositionCounts::new().add(&d),
            Err(StatsError::NotAPermutation)
        );
        d[0] = 32;
        assert_eq!(
            PositionCounts::new().add(&d),
            Err(StatsError::NotAPermutation)
        );
        assert_eq!(PositionCounts::new().test(), Err(StatsError::NoData));
    }

    #[test]
    fn binomial_textbook_values() {
        // 7 successes in 20 at p = 1/2: p = 2 * P(X <= 7) = 0.263176.
        let r = duel_wins_test(7, 20).unwrap();
        assert!(close(r.p_value, 0.263_175_964, 1e-8), "{r:?}");
        assert_eq!(r.df, None);
        assert_eq!(r.statistic, 7.0);
        // R's binom.test(682, 925, p = 3/4): p-value 0.3825.
        let r = binomial_test(682, 925, 0.75).unwrap();
        assert!(close(r.p_value, 0.382_491_56, 1e-6), "{r:?}");
        // The mode gives p = 1.
        assert_eq!(duel_wins_test(10, 20).unwrap().p_value, 1.0);
    }

    #[test]
    fn duels_fair_passes_biased_fails() {
        let wins = (0..4000).filter(|&m| duel(SEED, "d", m)).count() as u64;
        assert!(!duel_wins_test(wins, 4000).unwrap().rejects(0.001));
        assert!(duel_wins_test(2300, 4000).unwrap().rejects(0.001));
        assert!(duel_wins_test(0, 30).unwrap().rejects(0.001));
    }

    #[test]
    fn binomial_errors() {
        assert_eq!(duel_wins_test(0, 0), Err(StatsError::NoData));
        assert_eq!(
            duel_wins_test(3, 2),
            Err(StatsError::TooManySuccesses {
                successes: 3,
                trials: 2
            })
        );
        assert!(matches!(
            binomial_test(1, 2, 1.5),
            Err(StatsError::InvalidProbability(_))
        ));
        assert_eq!(binomial_test(0, 5, 0.0).unwrap().p_value, 1.0);
    }
}
