//! SQL functions of every session (rules, reports, analysts): tests of an account against the population's baseline.
//!
//! `poisson_at_least(k, lambda)`: the chance that a Poisson count of mean `lambda` is at least
//! `k`, i.e. how often an account with the platform's rate would show `k` or more events. Null
//! when an argument is null; 1 when `k <= 0`; 0 when `lambda <= 0 < k`.

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

fn poisson_udf() -> ScalarUDF {
    create_udf(
        "poisson_at_least",
        vec![DataType::Float64, DataType::Float64],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let [k, lambda] = arrays.as_slice() else {
                return Err(DataFusionError::Plan(
                    "poisson_at_least takes two arguments".into(),
                ));
            };
            let (k, lambda) = (
                k.as_primitive::<Float64Type>(),
                lambda.as_primitive::<Float64Type>(),
            );
            let out: Float64Array = (0..k.len())
                .map(|i| {
                    (!k.is_null(i) && !lambda.is_null(i))
                        .then(|| poisson_at_least(k.value(i), lambda.value(i)))
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// Registers the rules' functions in a session.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(poisson_udf());
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[tokio::test]
    async fn the_function_is_callable_from_sql() {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx
            .sql("SELECT round(poisson_at_least(3, 1.0), 6) AS p, poisson_at_least(NULL, 1.0) AS n")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let p = batches[0].column(0).as_primitive::<Float64Type>().value(0);
        assert!((p - 0.080301).abs() < 1e-9, "{p}");
        assert!(batches[0].column(1).is_null(0));
    }
}
