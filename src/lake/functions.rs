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

use std::sync::Arc;

use arrow::array::{Array, AsArray, Float64Array};
use arrow::datatypes::{DataType, Float64Type};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;

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
