//! SQL functions of every session (rules, reports, analysts): tests of an account against the population's baseline.
//!
//! `poisson_at_least(k, lambda)`: the chance that a Poisson count of mean `lambda` is at least
//! `k`, i.e. how often an account with the platform's rate would show `k` or more events. Null
//! when an argument is null; 1 when `k <= 0`; 0 when `lambda <= 0 < k`.
//!
//! `normal_at_least(z)`: the chance that a standard normal variable is at least `z` (the p-value of a
//! z-score). Null when `z` is null.
//!
//! `binomial_at_least(k, n, p)`: the chance of at least `k` successes in `n` trials of
//! probability `p`, i.e. how often an account with the platform's share would show `k` or more
//! of its `n` (an abandon in `k` of `n` lost games). Null when an argument is null or `p` is not
//! in [0, 1]; 1 when `k <= 0`; 0 when `k > n`.
//!
//! `poisson_at_most(k, lambda)`: the chance that a Poisson count of mean `lambda` is at most `k`
//! (computed directly, not as 1 minus the other tail, so that a small chance keeps its digits): with
//! `k = n - 1` and `lambda` the sum of `-ln u` over `n` uniform chances `u`, Fisher's combination of
//! them. Null when an argument is null; 0 when `k < 0`; 1 when `lambda <= 0 <= k`.
//!
//! `balance_edge(balance)`: the edge of the balance grid a balance below 0 falls on (see
//! [`balance_edge`]), the grid on which the replay counts a player's moves while losing
//! (`game_players.losing_edges`).

use std::sync::Arc;

use arrow::array::{Array, AsArray, Float64Array};
use arrow::datatypes::{DataType, Float64Type};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;

/// Magnitudes of the balance grid: 0, then 1, 1.5, 2, 3, 4, 6, 8, 12, ... (two steps an octave).
fn grid_magnitude(k: i32) -> f64 {
    match k {
        i32::MIN..=0 => 0.0,
        k if k % 2 == 1 => 2f64.powi((k - 1) / 2),
        k => 1.5 * 2f64.powi((k - 2) / 2),
    }
}

/// The edge of the balance grid a balance below 0 falls on: minus the largest magnitude of the grid
/// (0, 1, 1.5, 2, 3, 4, 6, 8, 12, ...) that is at most its absolute value; the balance itself when
/// it is 0 or more (or not a number).
///
/// Moves are counted per edge instead of per balance (a Ludo player meets some forty balances a
/// game, a draughts player five) and an edge is never below the balances it stands for: the share
/// of a player's moves whose edge is at most a balance's edge is at least the share at or below the
/// balance, so a depth computed on the grid is never smaller than the true one.
///
/// ```
/// use vigie::lake::functions::balance_edge;
/// assert_eq!(balance_edge(-1.0), -1.0);
/// assert_eq!(balance_edge(-5.0), -4.0);
/// assert_eq!(balance_edge(-7.0), -6.0);
/// assert_eq!(balance_edge(-0.5), 0.0);
/// assert_eq!(balance_edge(2.0), 2.0);
/// ```
pub fn balance_edge(balance: f64) -> f64 {
    if balance >= 0.0 || balance.is_nan() {
        return balance;
    }
    let magnitude = -balance;
    let mut k = 0;
    while k < 2100 && grid_magnitude(k + 1) <= magnitude {
        k += 1;
    }
    if k == 0 { 0.0 } else { -grid_magnitude(k) }
}

/// P(X <= k) for X ~ Poisson(lambda).
pub fn poisson_at_most(k: f64, lambda: f64) -> f64 {
    if k.is_nan() || lambda.is_nan() {
        return f64::NAN;
    }
    let k = k.floor();
    if k < 0.0 {
        return 0.0;
    }
    if lambda <= 0.0 {
        return 1.0;
    }
    if lambda.is_infinite() {
        return 0.0;
    }
    // P(X <= k) = Q(k + 1, lambda), the upper regularized gamma function.
    statrs::function::gamma::checked_gamma_ur(k + 1.0, lambda).unwrap_or(f64::NAN)
}

/// P(X >= k) for X ~ Poisson(lambda).
pub fn poisson_at_least(k: f64, lambda: f64) -> f64 {
    if k.is_nan() || lambda.is_nan() {
        return f64::NAN;
    }
    let k = k.ceil();
    if k <= 0.0 {
        return 1.0;
    }
    if lambda <= 0.0 {
        return 0.0;
    }
    if lambda.is_infinite() {
        return 1.0;
    }
    // P(X >= k) = P(k, lambda), the lower regularized gamma function.
    statrs::function::gamma::checked_gamma_lr(k, lambda).unwrap_or(f64::NAN)
}

/// P(X >= k) for X ~ Binomial(n, p); NaN when `p` is not a probability.
pub fn binomial_at_least(k: f64, n: f64, p: f64) -> f64 {
    use statrs::distribution::{Binomial, DiscreteCDF};
    if k.is_nan() || n.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    let (k, n) = (k.ceil(), n.floor().max(0.0));
    if k <= 0.0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    match Binomial::new(p, n as u64) {
        // sf(x) = P(X > x).
        Ok(b) => b.sf(k as u64 - 1),
        Err(_) => f64::NAN,
    }
}

/// P(Z >= z) for Z ~ Normal(0, 1).
pub fn normal_at_least(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    0.5 * statrs::function::erf::erfc(z / std::f64::consts::SQRT_2)
}

/// A scalar function of `N` Float64 arguments, row by row: null when an argument is null or
/// `f` gives none.
fn float_udf<const N: usize>(name: &'static str, f: fn([f64; N]) -> Option<f64>) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Float64; N],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            if arrays.len() != N {
                return Err(DataFusionError::Plan(format!("{name} takes {N} arguments")));
            }
            let cols: Vec<&Float64Array> = arrays
                .iter()
                .map(|a| a.as_primitive::<Float64Type>())
                .collect();
            let rows = cols.first().map_or(0, |c| c.len());
            let out: Float64Array = (0..rows)
                .map(|i| {
                    if cols.iter().any(|c| c.is_null(i)) {
                        return None;
                    }
                    f(std::array::from_fn(|j| cols[j].value(i)))
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// Registers the rules' functions in a session.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(float_udf("poisson_at_least", |[k, lambda]| {
        Some(poisson_at_least(k, lambda))
    }));
    ctx.register_udf(float_udf("normal_at_least", |[z]| {
        Some(normal_at_least(z)).filter(|v| !v.is_nan())
    }));
    ctx.register_udf(float_udf("binomial_at_least", |[k, n, p]| {
        Some(binomial_at_least(k, n, p)).filter(|v| !v.is_nan())
    }));
    ctx.register_udf(float_udf("poisson_at_most", |[k, lambda]| {
        Some(poisson_at_most(k, lambda)).filter(|v| !v.is_nan())
    }));
    ctx.register_udf(float_udf("balance_edge", |[b]| Some(balance_edge(b))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_tail() {
        assert!((normal_at_least(0.0) - 0.5).abs() < 1e-15);
        assert!((normal_at_least(1.959_963_984_540_054) - 0.025).abs() < 1e-9);
        assert!((normal_at_least(-1.0) - (1.0 - normal_at_least(1.0))).abs() < 1e-12);
        assert!((normal_at_least(4.753_424_308_822_899) / 1e-6 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn poisson_lower_tail_is_the_complement_with_its_digits() {
        for (k, lambda) in [(0.0, 0.5), (3.0, 1.0), (2.0, 6.9), (8.0, 20.7)] {
            let sum = poisson_at_most(k, lambda) + poisson_at_least(k + 1.0, lambda);
            assert!((sum - 1.0).abs() < 1e-12, "{k} {lambda}: {sum}");
        }
        // P(X <= 0) = e^-lambda, far below what 1 minus the other tail can tell.
        assert!((poisson_at_most(0.0, 50.0) / (-50.0f64).exp() - 1.0).abs() < 1e-9);
        assert_eq!(poisson_at_most(-1.0, 2.0), 0.0);
        assert_eq!(poisson_at_most(2.0, 0.0), 1.0);
    }

    #[test]
    fn the_balance_grid_never_goes_below_a_balance() {
        let grid: Vec<f64> = (0..12).map(grid_magnitude).collect();
        assert_eq!(
            grid,
            [
                0.0, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0
            ]
        );
        let mut last = 0.0;
        for i in 1..4000 {
            let b = -f64::from(i) / 7.0;
            let e = balance_edge(b);
            // At or above the balance, on the grid, and no higher for a deeper balance.
            assert!(e >= b, "{b} -> {e}");
            assert!(grid.contains(&-e) || -e > 32.0, "{b} -> {e}");
            assert!(e <= last, "{b} -> {e} after {last}");
            last = e;
        }
        assert_eq!(balance_edge(-230.0), -192.0);
        assert_eq!(balance_edge(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(balance_edge(0.0), 0.0);
    }

    #[test]
    fn poisson_tails() {
        assert_eq!(poisson_at_least(0.0, 2.0), 1.0);
        assert_eq!(poisson_at_least(1.0, 0.0), 0.0);
        // P(X >= 1) = 1 - e^-lambda.
        assert!((poisson_at_least(1.0, 0.5) - (1.0 - (-0.5f64).exp())).abs() < 1e-12);
        // P(X >= 3), lambda 1: 1 - e^-1 (1 + 1 + 1/2).
        let want = 1.0 - (-1.0f64).exp() * 2.5;
        assert!((poisson_at_least(3.0, 1.0) - want).abs() < 1e-12);
        assert!(poisson_at_least(10.0, 0.1) < 1e-15);
    }

    #[test]
    fn binomial_tails() {
        assert_eq!(binomial_at_least(0.0, 10.0, 0.3), 1.0);
        assert_eq!(binomial_at_least(11.0, 10.0, 0.3), 0.0);
        // P(X >= 2), n 3, p 0.5: (3 + 1) / 8.
        assert!((binomial_at_least(2.0, 3.0, 0.5) - 0.5).abs() < 1e-12);
        // P(X >= 3), n 3, p 0.1: 0.001.
        assert!((binomial_at_least(3.0, 3.0, 0.1) - 0.001).abs() < 1e-12);
        assert!(binomial_at_least(1.0, 3.0, 1.5).is_nan());
    }

    #[tokio::test]
    async fn the_function_is_callable_from_sql() {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx
            .sql(
                "SELECT round(poisson_at_least(3, 1.0), 6) AS p, poisson_at_least(NULL, 1.0) AS n, \
                 binomial_at_least(2, 3, 0.5) AS b, binomial_at_least(1, 3, 2) AS bad",
            )
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let p = batches[0].column(0).as_primitive::<Float64Type>().value(0);
        assert!((p - 0.080301).abs() < 1e-9, "{p}");
        assert!(batches[0].column(1).is_null(0));
        let b = batches[0].column(2).as_primitive::<Float64Type>().value(0);
        assert!((b - 0.5).abs() < 1e-12, "{b}");
        assert!(batches[0].column(3).is_null(0));
    }
}
