//! Randomness tests over many games: dice faces, consecutive face pairs,
//! card-by-position uniformity of shuffles and duel wins.
//!
//! Each test returns a [`TestResult`] `{statistic, df, p_value}`. Counts are
//! kept in accumulators ([`FaceCounts`], [`PairCounts`], [`PositionCounts`])
//! so that a pipeline can add game after game and test at the end.

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

/// Counts of consecutive face pairs `(first, second)`.
///
/// Pairs are taken without overlap within each sequence added: `(x0, x1)`,
/// `(x2, x3)`, ...; an odd last face is dropped. Disjoint pairs of independent
/// uniform faces are independent and uniform over the 36 cells, so the
/// Pearson statistic is asymptotically chi-square with exactly 35 degrees of
/// freedom. (Overlapping pairs would not be: Good's serial test shows their
/// statistic is not chi-square(35).) Pairs never straddle two sequences
/// (games).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairCounts {
    counts: [[u64; 6]; 6],
}

impl PairCounts {
    /// Empty counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts the disjoint consecutive pairs of one sequence (one game's
    /// rolls, in roll order). All or nothing on a bad face.
    pub fn add_sequence(&mut self, faces: &[u8]) -> Result<(), StatsError> {
        for &f in faces {
            face_index(f)?;
        }
        for pair in faces.chunks_exact(2) {
            self.counts[face_index(pair[0])?][face_index(pair[1])?] += 1;
        }
        Ok(())
    }

    /// The counts, indexed `[first - 1][second - 1]`.
    pub fn counts(&self) -> &[[u64; 6]; 6] {
        &self.counts
    }

    /// Chi-square test of uniform pairs: `df = 35`.
    pub fn test(&self) -> Result<TestResult, StatsError> {
        let flat: Vec<u64> = self.counts.iter().flatten().copied().collect();
        uniform_gof(&flat)
    }
}

/// Chi-square test of consecutive face pairs of one sequence (df 35); see
/// [`PairCounts`] for how pairs are formed.
pub fn chi_square_pairs(faces: &[u8]) -> Result<TestResult, StatsError> {
    let mut c = PairCounts::new();
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
    fn pairs_uniform_passes_biased_fails() {
        let fair: Vec<u8> = Dice::new(SEED, "pairs").take(20000).collect();
        let r = chi_square_pairs(&fair).unwrap();
        assert_eq!(r.df, Some(35));
        assert!(!r.rejects(0.001), "{r:?}");
        // Uniform faces but each face always followed by the next one: the
        // face test passes while the pair test fails.
        let cyclic: Vec<u8> = (0..3600).map(|i| (i % 6 + 1) as u8).collect();
        assert!(!chi_square_faces(&cyclic).unwrap().rejects(0.05));
        assert!(chi_square_pairs(&cyclic).unwrap().rejects(0.001));
    }

    #[test]
    fn pairs_hand_computed_value() {
        // 360 pairs, 10 per cell except (1,1) = 20 and (6,6) = 0:
        // X² = (100 + 100) / 10 = 20, df 35, p = 0.980231 (closed form for odd df).
        let mut seq = Vec::new();
        for a in 1..=6u8 {
            for b in 1..=6u8 {
                let n = match (a, b) {
                    (1, 1) => 20,
                    (6, 6) => 0,
                    _ => 10,
                };
                for _ in 0..n {
                    seq.extend([a, b]);
                }
            }
        }
        let r = chi_square_pairs(&seq).unwrap();
        assert!(close(r.statistic, 20.0, 1e-9));
        assert_eq!(r.df, Some(35));
        assert!(close(r.p_value, 0.980_230_917, 1e-6), "{r:?}");
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
    fn pairs_are_disjoint_and_per_sequence() {
        let mut c = PairCounts::new();
        c.add_sequence(&[1, 2, 3, 4, 5]).unwrap();
        c.add_sequence(&[6, 1]).unwrap();
        let counts = c.counts();
        assert_eq!(counts[0][1], 1);
        assert_eq!(counts[2][3], 1);
        assert_eq!(counts[5][0], 1);
        assert_eq!(counts[1][2], 0, "overlapping pair (2, 3) is not counted");
        assert_eq!(counts.iter().flatten().sum::<u64>(), 3);
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
