//! Every scalar function of an analyst session, bounded: no call builds a value larger than the session's budget allows, and none does quadratic work past a fixed amount.
//!
//! DataFusion's memory pool accounts for what operators hold (hash tables,
//! sort buffers, aggregate states), not for the values a function returns:
//! `repeat(repeat('x', 100000000), 8)` allocated 3.2 GB with a 64 MiB pool, and
//! `levenshtein` over two 100,000-character strings held a core for 14 s, out of
//! reach of the time limit (a query can only be stopped between batches).
//!
//! So an analyzer rule ([`BoundFunctions`], also run as the last optimizer
//! rule) wraps every scalar function call of a plan in [`Bounded`], and turns
//! the string operator `||` into a bounded function with the same kernel
//! ([`StringConcat`]). Before a call, [`Bounded`] predicts the size of its
//! result from its arguments (their sizes for most functions; a formula for
//! the functions whose result can be much larger than their arguments:
//! `repeat`, `lpad`, `rpad`, `replace`, `regexp_replace`, `array_repeat`,
//! `range`, `generate_series`, `array_resize`, `array_to_string`) and refuses
//! past [`value_cap`]; after it, it checks the actual result the same way.
//! `levenshtein`, `array_has_all` and `array_has_any` compare every element
//! of one argument with every element of the other: a call may do at most
//! [`MAX_PAIR_WORK`] comparisons. Constant folding during planning calls the
//! same wrappers, so a refused value is never built at plan time either; and
//! the constant values one query folds into its plan (which optimizer passes
//! copy) may take at most [`MAX_CONSTANT_BYTES`] together.
//!
//! A regular expression that differs per row (`regexp_like(a, b)`, `a ~ b`) is compiled once per
//! distinct pattern of a batch, and the compiled forms are kept for the batch, outside the pool:
//! one probe's 8,192 patterns such as `(game){500}x` took the server to 5.7 GB. The patterns of a
//! batch must compile, each, within the value cap divided by their number ([`Bounded`] compiles
//! them first with that limit); the regex operators with a pattern that is not a constant are
//! planned as `regexp_like` so that the same check applies, and `SIMILAR TO` takes constant
//! patterns only.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type, Schema};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::preimage::PreimageResult;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Documentation, Expr, ExpressionPlacement, LogicalPlan, Operator,
    ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, StructFieldMapping,
    Volatility,
};
use datafusion::optimizer::analyzer::AnalyzerRule;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr as PhysicalBinary, Column};

/// Most element comparisons one call of a pairwise function may make.
pub const MAX_PAIR_WORK: u128 = 100_000_000;

/// Most bytes of constant values one query may fold into its plan. Optimizer passes clone a
/// plan's literals (each clone a deep copy), so a few megabytes of literals cost hundreds.
pub const MAX_CONSTANT_BYTES: u128 = 1 << 20;

/// Largest value (one batch of one function's results) a session with this memory budget may build.
pub fn value_cap(memory_bytes: usize) -> usize {
    (memory_bytes / 8).max(1 << 20)
}

/// Rows of a batch (DataFusion's default `batch_size`, which Vigie's sessions keep): a constant
/// projected, or returned by a `CASE`, is copied into every row of each batch.
pub const BATCH_ROWS: usize = 8192;

/// Largest constant (a literal, or a function's result from constant arguments) a session
/// whose values may take `cap` bytes accepts: one batch of copies of it must fit in `cap`
/// (at least 1 KiB). A query of 150 bytes made a constant of 800 KB with `repeat`, projected it
/// through a `CASE` into batches of 8,192 rows and asked for 6.5 GB at once, which aborted the
/// process.
pub fn constant_cap(cap: usize) -> usize {
    (cap / BATCH_ROWS).max(1 << 10)
}

/// Why a constant of `size` bytes is refused where at most `most` may be copied into every row.
fn constant_too_big(size: u128, most: usize) -> String {
    format!(
        "a constant of {size} bytes, over the limit of {most} bytes (a constant is copied into every row of a batch, {BATCH_ROWS} rows)"
    )
}

/// How a function's result size (or work) follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Cost {
    /// At most about the size of the arguments.
    Linear,
    Repeat,
    Pad,
    Replace,
    RegexpReplace,
    ArrayRepeat,
    Range,
    ArrayResize,
    ArrayToString,
    /// Work: length of the first argument times length of the second, per row.
    Pairwise,
}

impl Cost {
    fn of(name: &str) -> Cost {
        match name {
            "repeat" => Cost::Repeat,
            "lpad" | "rpad" => Cost::Pad,
            "replace" => Cost::Replace,
            "regexp_replace" => Cost::RegexpReplace,
            "array_repeat" => Cost::ArrayRepeat,
            "range" | "generate_series" => Cost::Range,
            "array_resize" => Cost::ArrayResize,
            "array_to_string" => Cost::ArrayToString,
            "levenshtein" | "array_has_all" | "array_has_any" => Cost::Pairwise,
            _ => Cost::Linear,
        }
    }
}

/// Index of the argument that is a regular expression, for the functions that compile one.
fn pattern_arg(name: &str) -> Option<usize> {
    match name {
        "regexp_like" | "regexp_match" | "regexp_count" | "regexp_instr" | "regexp_replace"
        | "regexp_substr" => Some(1),
        _ => None,
    }
}

/// Smallest compiled size a batch's distinct patterns may each be given before their number alone
/// is refused.
const MIN_PATTERN_BYTES: usize = 16 << 10;

/// A scalar function whose calls are checked against the session's value cap and the pairwise work limit.
#[derive(Debug)]
pub struct Bounded {
    inner: ScalarUDF,
    cap: usize,
    cost: Cost,
    /// Largest constant result accepted ([`constant_cap`]), when the query can make more than one
    /// row of it.
    constant_limit: Option<usize>,
    /// Bytes of constant results (every argument a scalar) this query's calls built so far:
    /// constant folding puts them in the plan, which every optimizer pass copies.
    constants: Arc<AtomicU64>,
}

impl PartialEq for Bounded {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
            && self.cap == other.cap
            && self.constant_limit == other.constant_limit
            && Arc::ptr_eq(&self.constants, &other.constants)
    }
}

impl Eq for Bounded {}

impl std::hash::Hash for Bounded {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.hash(state);
        self.cap.hash(state);
    }
}

impl Bounded {
    /// Wraps `inner` for a query whose values may take at most `cap` bytes each, each constant
    /// result at most `constant_limit` (none: the query makes one row), and whose constant
    /// results together at most [`MAX_CONSTANT_BYTES`] (counted in `constants`, shared by the
    /// query's calls).
    pub fn new(
        inner: ScalarUDF,
        cap: usize,
        constant_limit: Option<usize>,
        constants: Arc<AtomicU64>,
    ) -> Bounded {
        let cost = Cost::of(inner.name());
        Bounded {
            inner,
            cap,
            cost,
            constant_limit,
            constants,
        }
    }

    fn refuse(&self, what: String) -> DataFusionError {
        DataFusionError::ResourcesExhausted(format!("{}() refused: {what}", self.inner.name()))
    }

    /// Refuses a batch of per-row patterns that could not all be compiled within the value cap:
    /// each distinct pattern is compiled here first, limited to its share of the cap.
    fn check_patterns(&self, patterns: &ArrayRef) -> Result<()> {
        let mut distinct: std::collections::HashSet<&str> = std::collections::HashSet::new();
        match patterns.data_type() {
            DataType::Utf8 => distinct.extend(patterns.as_string::<i32>().iter().flatten()),
            DataType::LargeUtf8 => distinct.extend(patterns.as_string::<i64>().iter().flatten()),
            DataType::Utf8View => distinct.extend(patterns.as_string_view().iter().flatten()),
            _ => return Ok(()),
        }
        let n = distinct.len().max(1);
        let each = self.cap / n;
        if each < MIN_PATTERN_BYTES {
            return Err(self.refuse(format!(
                "it would compile {n} different regular expressions in one batch, more than this session's limit of {} bytes per value allows",
                self.cap
            )));
        }
        for p in distinct {
            let built = regex::RegexBuilder::new(p)
                .size_limit(each)
                .dfa_size_limit(each)
                .build();
            if let Err(regex::Error::CompiledTooBig(_)) = built {
                let shown: String = p.chars().take(40).collect();
                return Err(self.refuse(format!(
                    "the regular expression {shown:?} would take more than {each} bytes compiled ({n} different ones in one batch share this session's limit of {} bytes)",
                    self.cap
                )));
            }
        }
        Ok(())
    }

    fn too_big(&self, bytes: u128) -> DataFusionError {
        self.refuse(format!(
            "its result would take about {} bytes, over this session's limit of {} bytes per value (an eighth of its memory budget)",
            bytes, self.cap
        ))
    }

    /// The predicted size of a call's result (or its work), checked before it runs; returns the size.
    fn precheck(&self, args: &[ColumnarValue], rows: usize) -> Result<u128> {
        let cap = self.cap as u128;
        let arg = |i: usize| args.get(i);
        let predicted: u128 = match self.cost {
            Cost::Linear => args.iter().map(|a| bytes(a, rows)).sum(),
            Cost::Repeat => {
                let (s, n) = (lengths(arg(0), rows), ints(arg(1), rows));
                s.iter().zip(&n).map(|(l, n)| l * pos(*n)).sum()
            }
            Cost::Pad => {
                let (s, n) = (lengths(arg(0), rows), ints(arg(1), rows));
                s.iter().zip(&n).map(|(l, n)| (*l).max(4 * pos(*n))).sum()
            }
            Cost::Replace => {
                let (s, from, to) = (
                    lengths(arg(0), rows),
                    lengths(arg(1), rows),
                    lengths(arg(2), rows),
                );
                (0..rows)
                    .map(|i| {
                        // An empty pattern matches between every two characters.
                        let matches = s[i].checked_div(from[i]).unwrap_or(s[i] + 1);
                        s[i] + matches * to[i]
                    })
                    .sum()
            }
            Cost::RegexpReplace => {
                let (s, repl, refs) = (
                    lengths(arg(0), rows),
                    lengths(arg(2), rows),
                    references(arg(2), rows),
                );
                (0..rows)
                    .map(|i| s[i] * (1 + refs[i]) + (s[i] + 1) * repl[i])
                    .sum()
            }
            Cost::ArrayRepeat => {
                let each = arg(0).map_or(0, |a| bytes(a, rows)) / rows.max(1) as u128 + 8;
                ints(arg(1), rows).iter().map(|n| pos(*n) * each).sum()
            }
            Cost::Range => range_elements(args, rows)? * 8,
            Cost::ArrayResize => {
                let elems: u128 = lengths(arg(0), rows).iter().sum();
                let each = (arg(0).map_or(0, |a| bytes(a, rows)) / elems.max(1)).max(8);
                ints(arg(1), rows).iter().map(|n| pos(*n) * each).sum()
            }
            Cost::ArrayToString => {
                let (elems, delim, null) = (
                    lengths(arg(0), rows),
                    lengths(arg(1), rows),
                    lengths(arg(2), rows),
                );
                let joins: u128 = (0..rows).map(|i| elems[i] * (delim[i] + null[i])).sum();
                joins + arg(0).map_or(0, |a| bytes(a, rows))
            }
            Cost::Pairwise => {
                let (a, b) = (lengths(arg(0), rows), lengths(arg(1), rows));
                let work: u128 = a.iter().zip(&b).map(|(a, b)| a * b).sum();
                if work > MAX_PAIR_WORK {
                    return Err(self.refuse(format!(
                        "it would compare {work} pairs of elements in one batch, over the limit of {MAX_PAIR_WORK}"
                    )));
                }
                8 * rows as u128
            }
        };
        if predicted > cap {
            return Err(self.too_big(predicted));
        }
        Ok(predicted)
    }

    /// Refuses a constant result when the query's constants would pass [`MAX_CONSTANT_BYTES`]
    /// with `more` bytes.
    fn check_constants(&self, more: u128) -> Result<()> {
        let total = self.constants.load(Ordering::Relaxed) as u128 + more;
        if total > MAX_CONSTANT_BYTES {
            return Err(self.refuse(format!(
                "the query's constant values would take about {total} bytes, over the limit of {MAX_CONSTANT_BYTES} bytes"
            )));
        }
        Ok(())
    }
}

/// Non-negative part of a count.
fn pos(n: i64) -> u128 {
    n.max(0) as u128
}

/// Bytes a value takes (a scalar counts once per row it stands for).
fn bytes(v: &ColumnarValue, rows: usize) -> u128 {
    match v {
        ColumnarValue::Array(a) => {
            a.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| a.get_array_memory_size()) as u128
        }
        ColumnarValue::Scalar(s) => s.size() as u128 * rows as u128,
    }
}

/// Per-row lengths: bytes of a string or binary value, elements of a list (0 for nulls, other types and missing arguments).
fn lengths(v: Option<&ColumnarValue>, rows: usize) -> Vec<u128> {
    match v {
        None => vec![0; rows],
        Some(ColumnarValue::Array(a)) => {
            let mut out = array_lengths(a);
            out.resize(rows, 0);
            out
        }
        Some(ColumnarValue::Scalar(s)) => {
            let one = s
                .to_array_of_size(1)
                .map(|a| array_lengths(&a).first().copied().unwrap_or(0))
                .unwrap_or(0);
            vec![one; rows]
        }
    }
}

fn offsets_len<O: datafusion::arrow::array::OffsetSizeTrait>(o: &[O]) -> Vec<u128> {
    o.windows(2)
        .map(|w| (w[1].as_usize().saturating_sub(w[0].as_usize())) as u128)
        .collect()
}

pub(crate) fn array_lengths(a: &ArrayRef) -> Vec<u128> {
    match a.data_type() {
        DataType::Utf8 => offsets_len(a.as_string::<i32>().value_offsets()),
        DataType::LargeUtf8 => offsets_len(a.as_string::<i64>().value_offsets()),
        DataType::Binary => offsets_len(a.as_binary::<i32>().value_offsets()),
        DataType::LargeBinary => offsets_len(a.as_binary::<i64>().value_offsets()),
        DataType::Utf8View => a
            .as_string_view()
            .views()
            .iter()
            .map(|v| (*v as u32) as u128)
            .collect(),
        DataType::BinaryView => a
            .as_binary_view()
            .views()
            .iter()
            .map(|v| (*v as u32) as u128)
            .collect(),
        DataType::List(_) => offsets_len(a.as_list::<i32>().value_offsets()),
        DataType::LargeList(_) => offsets_len(a.as_list::<i64>().value_offsets()),
        DataType::FixedSizeList(_, n) => vec![(*n).max(0) as u128; a.len()],
        _ => vec![0; a.len()],
    }
}

/// Per-row integers (0 for nulls and values that are not integers).
fn ints(v: Option<&ColumnarValue>, rows: usize) -> Vec<i64> {
    match v {
        None => vec![0; rows],
        Some(ColumnarValue::Scalar(s)) => {
            let n = match s.cast_to(&DataType::Int64) {
                Ok(ScalarValue::Int64(Some(n))) => n,
                _ => 0,
            };
            vec![n; rows]
        }
        Some(ColumnarValue::Array(a)) => {
            let mut out: Vec<i64> = datafusion::arrow::compute::cast(a, &DataType::Int64)
                .map(|c| {
                    c.as_primitive::<Int64Type>()
                        .iter()
                        .map(|x| x.unwrap_or(0))
                        .collect()
                })
                .unwrap_or_default();
            out.resize(rows, 0);
            out
        }
    }
}

/// Per-row count of `$` and `\` in a replacement text (each may stand for a captured group).
fn references(v: Option<&ColumnarValue>, rows: usize) -> Vec<u128> {
    let count = |s: &str| s.bytes().filter(|b| *b == b'$' || *b == b'\\').count() as u128;
    match v {
        None => vec![0; rows],
        Some(ColumnarValue::Scalar(s)) => {
            let n = match s.cast_to(&DataType::Utf8) {
                Ok(ScalarValue::Utf8(Some(t))) => count(&t),
                _ => 0,
            };
            vec![n; rows]
        }
        Some(ColumnarValue::Array(a)) => {
            let mut out: Vec<u128> = datafusion::arrow::compute::cast(a, &DataType::Utf8)
                .map(|c| {
                    c.as_string::<i32>()
                        .iter()
                        .map(|t| t.map_or(0, count))
                        .collect()
                })
                .unwrap_or_default();
            out.resize(rows, 0);
            out
        }
    }
}

/// Elements `range` / `generate_series` would produce over all rows.
fn range_elements(args: &[ColumnarValue], rows: usize) -> Result<u128> {
    let scalar = |i: usize, row: usize| -> Result<Option<ScalarValue>> {
        match args.get(i) {
            None => Ok(None),
            Some(ColumnarValue::Scalar(s)) => Ok(Some(s.clone())),
            Some(ColumnarValue::Array(a)) => ScalarValue::try_from_array(a, row).map(Some),
        }
    };
    let mut total = 0u128;
    for row in 0..rows.max(1) {
        let (start, stop, step) = match args.len() {
            1 => (None, scalar(0, row)?, None),
            _ => (scalar(0, row)?, scalar(1, row)?, scalar(2, row)?),
        };
        let (Some(stop), start) = (stop.as_ref().and_then(instant), start.as_ref()) else {
            continue;
        };
        let start = match start {
            Some(s) => match instant(s) {
                Some(v) => v,
                None => continue,
            },
            None => 0,
        };
        let step = match step.as_ref() {
            None => 1,
            Some(s) => match stride(s) {
                Some(v) => v,
                None => continue,
            },
        };
        if step == 0 {
            continue;
        }
        let span = stop - start;
        if span.signum() != 0 && span.signum() != step.signum() {
            continue;
        }
        total = total.saturating_add((span / step).unsigned_abs() + 1);
    }
    Ok(total)
}

const DAY_NS: i128 = 86_400_000_000_000;

/// A range bound as an integer (an integer as is, a date or timestamp in nanoseconds).
fn instant(v: &ScalarValue) -> Option<i128> {
    match v {
        ScalarValue::Date32(Some(d)) => Some(*d as i128 * DAY_NS),
        ScalarValue::Date64(Some(ms)) => Some(*ms as i128 * 1_000_000),
        ScalarValue::TimestampSecond(Some(t), _) => Some(*t as i128 * 1_000_000_000),
        ScalarValue::TimestampMillisecond(Some(t), _) => Some(*t as i128 * 1_000_000),
        ScalarValue::TimestampMicrosecond(Some(t), _) => Some(*t as i128 * 1_000),
        ScalarValue::TimestampNanosecond(Some(t), _) => Some(*t as i128),
        other => match other.cast_to(&DataType::Int64) {
            Ok(ScalarValue::Int64(Some(n))) => Some(n as i128),
            _ => None,
        },
    }
}

/// A range step as an integer (an interval in its fewest nanoseconds: a month counts 28 days).
fn stride(v: &ScalarValue) -> Option<i128> {
    match v {
        ScalarValue::IntervalYearMonth(Some(m)) => Some(*m as i128 * 28 * DAY_NS),
        ScalarValue::IntervalDayTime(Some(d)) => {
            Some(d.days as i128 * DAY_NS + d.milliseconds as i128 * 1_000_000)
        }
        ScalarValue::IntervalMonthDayNano(Some(i)) => {
            Some(i.months as i128 * 28 * DAY_NS + i.days as i128 * DAY_NS + i.nanoseconds as i128)
        }
        other => instant(other),
    }
}

/// Bytes of a function's result.
fn result_bytes(v: &ColumnarValue) -> u128 {
    bytes(v, 1)
}

#[warn(clippy::missing_trait_methods)]
impl ScalarUDFImpl for Bounded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        #[allow(deprecated)]
        self.inner.inner().display_name(args)
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.inner().schema_name(args)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.inner().return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn is_nullable(&self, args: &[Expr], schema: &dyn ExprSchema) -> bool {
        #[allow(deprecated)]
        self.inner.inner().is_nullable(args, schema)
    }

    fn is_strict(&self) -> bool {
        self.inner.inner().is_strict()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let Some(i) = pattern_arg(self.inner.name())
            && let Some(ColumnarValue::Array(patterns)) = args.args.get(i)
        {
            self.check_patterns(patterns)?;
        }
        let any_array = args
            .args
            .iter()
            .any(|a| matches!(a, ColumnarValue::Array(_)));
        let rows = if any_array { args.number_rows } else { 1 };
        let predicted = self.precheck(&args.args, rows)?;
        // A growing function's constant result is refused before it is built; any other
        // one is at most about its arguments, which are counted already.
        if !any_array && self.cost != Cost::Linear {
            self.check_constants(predicted)?;
        }
        let out = self.inner.invoke_with_args(args)?;
        let size = result_bytes(&out);
        if size > self.cap as u128 {
            return Err(self.too_big(size));
        }
        if matches!(out, ColumnarValue::Scalar(_)) {
            if let Some(most) = self.constant_limit
                && size > most as u128
            {
                return Err(self.refuse(constant_too_big(size, most)));
            }
            self.check_constants(size)?;
            self.constants
                .fetch_add(size.min(u64::MAX as u128) as u64, Ordering::Relaxed);
        }
        Ok(out)
    }

    fn with_updated_config(&self, config: &ConfigOptions) -> Option<ScalarUDF> {
        self.inner.inner().with_updated_config(config).map(|u| {
            ScalarUDF::new_from_impl(Bounded::new(
                u,
                self.cap,
                self.constant_limit,
                Arc::clone(&self.constants),
            ))
        })
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn preimage(
        &self,
        args: &[Expr],
        lit_expr: &Expr,
        info: &SimplifyContext,
    ) -> Result<PreimageResult> {
        self.inner.inner().preimage(args, lit_expr, info)
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.inner().conditional_arguments(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn evaluate_bounds(&self, input: &[&Interval]) -> Result<Interval> {
        self.inner.evaluate_bounds(input)
    }

    fn propagate_constraints(
        &self,
        interval: &Interval,
        inputs: &[&Interval],
    ) -> Result<Option<Vec<Interval>>> {
        self.inner.propagate_constraints(interval, inputs)
    }

    fn struct_field_mapping(
        &self,
        literal_args: &[Option<ScalarValue>],
    ) -> Option<StructFieldMapping> {
        self.inner.inner().struct_field_mapping(literal_args)
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }

    fn strictly_order_preserving(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.inner().strictly_order_preserving(inputs)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        self.inner.inner().placement(args)
    }
}

/// The string operator `a || b` as a function, with the operator's own kernel (NULL if either side is).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StringConcat {
    signature: Signature,
}

impl Default for StringConcat {
    fn default() -> Self {
        StringConcat {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for StringConcat {
    fn name(&self) -> &str {
        "string_concat"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, t: &[DataType]) -> Result<DataType> {
        match t {
            [l, r] => BinaryTypeCoercer::new(l, &Operator::StringConcat, r).get_result_type(),
            _ => Err(DataFusionError::Plan("|| takes two operands".into())),
        }
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        match args {
            [l, r] => Ok(operator(l.clone(), r.clone()).schema_name().to_string()),
            _ => Err(DataFusionError::Plan("|| takes two operands".into())),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [l, r] = args.args.as_slice() else {
            return Err(DataFusionError::Plan("|| takes two operands".into()));
        };
        let scalar = matches!((l, r), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let (la, ra) = (l.to_array(rows)?, r.to_array(rows)?);
        let schema = Arc::new(Schema::new(vec![
            Field::new("l", la.data_type().clone(), true),
            Field::new("r", ra.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(schema, vec![la, ra])?;
        let kernel = PhysicalBinary::new(
            Arc::new(Column::new("l", 0)),
            Operator::StringConcat,
            Arc::new(Column::new("r", 1)),
        );
        let out = kernel.evaluate(&batch)?;
        if scalar {
            let a = out.to_array(1)?;
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&a, 0)?));
        }
        Ok(out)
    }
}

fn operator(l: Expr, r: Expr) -> Expr {
    Expr::BinaryExpr(BinaryExpr::new(
        Box::new(l),
        Operator::StringConcat,
        Box::new(r),
    ))
}

/// The analyzer and optimizer rule that bounds every function call of a plan.
#[derive(Debug)]
pub struct BoundFunctions {
    cap: usize,
}

impl BoundFunctions {
    /// For a session whose values may take at most `cap` bytes ([`value_cap`]).
    pub fn new(cap: usize) -> BoundFunctions {
        BoundFunctions { cap }
    }

    fn expr(
        &self,
        e: Expr,
        constant_limit: Option<usize>,
        constants: &Arc<AtomicU64>,
    ) -> Result<Transformed<Expr>> {
        let bounded = |f: ScalarUDF| {
            Arc::new(ScalarUDF::new_from_impl(Bounded::new(
                f,
                self.cap,
                constant_limit,
                Arc::clone(constants),
            )))
        };
        match e {
            Expr::ScalarFunction(f) if !is_bounded(&f.func) => {
                let wrapped = bounded(f.func.as_ref().clone());
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(wrapped, f.args),
                )))
            }
            Expr::BinaryExpr(b) if b.op == Operator::StringConcat => {
                let wrapped = bounded(ScalarUDF::new_from_impl(StringConcat::default()));
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(wrapped, vec![*b.left, *b.right]),
                )))
            }
            // A pattern per row: planned as `regexp_like`, whose patterns are checked.
            Expr::BinaryExpr(b)
                if matches!(
                    b.op,
                    Operator::RegexMatch
                        | Operator::RegexIMatch
                        | Operator::RegexNotMatch
                        | Operator::RegexNotIMatch
                ) && !matches!(*b.right, Expr::Literal(..)) =>
            {
                let wrapped = bounded(datafusion::functions::regex::regexp_like().as_ref().clone());
                let mut args = vec![*b.left, *b.right];
                if matches!(b.op, Operator::RegexIMatch | Operator::RegexNotIMatch) {
                    args.push(Expr::Literal(ScalarValue::Utf8(Some("i".to_owned())), None));
                }
                let like = Expr::ScalarFunction(ScalarFunction::new_udf(wrapped, args));
                Ok(Transformed::yes(
                    if matches!(b.op, Operator::RegexNotMatch | Operator::RegexNotIMatch) {
                        Expr::Not(Box::new(like))
                    } else {
                        like
                    },
                ))
            }
            Expr::SimilarTo(l) if !matches!(*l.pattern, Expr::Literal(..)) => {
                Err(DataFusionError::Plan(
                    "SIMILAR TO takes a constant pattern; for a pattern per row use regexp_like"
                        .to_owned(),
                ))
            }
            other => Ok(Transformed::no(other)),
        }
    }

    /// Wraps the plan's calls; the calls wrapped in one pass share one budget of constants, and
    /// the constants of a node whose rows are copied are bounded by [`constant_cap`].
    fn plan(&self, plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
        let constants = Arc::new(AtomicU64::new(0));
        self.node(plan, false, &[], false, &constants)
    }

    /// [`BoundFunctions::plan`] of one node and what is under it. A node's constants are copied
    /// into many rows when its input makes more than one (it evaluates them once per batch and
    /// may copy them into every row: `SELECT range(20000) FROM moves`), or when a node above
    /// copies its rows (`copied`): a join that outputs this side's columns with another side of
    /// many rows (`moves CROSS JOIN (SELECT repeat(...))`), an unnest (which copies every column
    /// but the lists it unnests into each of their elements' rows), or a subquery of an
    /// expression over many rows. Under an unnest every node counts as copied, except, in the
    /// projection right under it, the expressions of the columns it splits (`split`), which are
    /// copied only as the unnest's own rows are (`split_copied`): `SELECT unnest(range(20000))`
    /// makes its list once, over one row, and nothing copies it; a list made further down
    /// (`SELECT unnest(x) FROM (SELECT range(20000) AS x)`) is bounded as copied.
    fn node(
        &self,
        plan: LogicalPlan,
        copied: bool,
        split: &[String],
        split_copied: bool,
        constants: &Arc<AtomicU64>,
    ) -> Result<Transformed<LogicalPlan>> {
        use datafusion::common::JoinType;
        let many: Vec<bool> = plan.inputs().into_iter().map(many_rows).collect();
        let input_many = many.iter().any(|m| *m);
        let mine = copied || input_many;
        // What the node does to its children's rows: a join whose output carries a side's
        // columns copies that side's rows once per match on the other side; an unnest copies its
        // input's other columns.
        let copies_sides = match &plan {
            LogicalPlan::Join(j) => matches!(
                j.join_type,
                JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full
            ),
            _ => false,
        };
        let unnested: Option<Vec<String>> = match &plan {
            LogicalPlan::Unnest(u) => Some(u.exec_columns.iter().map(|c| c.name.clone()).collect()),
            _ => None,
        };
        let mut child = 0;
        let plan = plan.map_children(|c| {
            let other_side_many =
                copies_sides && many.iter().enumerate().any(|(j, m)| j != child && *m);
            child += 1;
            match &unnested {
                Some(unnested) => {
                    // Only a projection's columns can be told apart.
                    let split: &[String] = if matches!(c, LogicalPlan::Projection(_)) {
                        unnested
                    } else {
                        &[]
                    };
                    self.node(c, true, split, copied, constants)
                }
                None => self.node(c, copied || other_side_many, &[], false, constants),
            }
        })?;
        let plan = plan
            .transform_data(|p| p.map_subqueries(|s| self.node(s, mine, &[], false, constants)))?;
        let cap = constant_cap(self.cap);
        // In the projection under an unnest, the columns it splits are not copied by it.
        let copied_expr = |e: &Expr| -> bool {
            // Named only under an unnest: a name is the expression's text, long for a rule's CASE.
            if split.is_empty() {
                return mine;
            }
            let name = match e {
                Expr::Alias(a) => a.name.clone(),
                other => other.schema_name().to_string(),
            };
            if split.contains(&name) {
                split_copied || input_many
            } else {
                mine
            }
        };
        plan.transform_data(|p| {
            p.map_expressions(|e| {
                let limit = copied_expr(&e).then_some(cap);
                if let Some(most) = limit {
                    check_literals(&e, most)?;
                }
                e.transform_up(|e| self.expr(e, limit, constants))
            })
        })
    }
}

/// Refuses a literal of `e` larger than `most`, except an operand of a comparison, a `LIKE`
/// pattern or an `IN` list item, which are compared as they are, never copied into rows.
fn check_literals(e: &Expr, most: usize) -> Result<()> {
    // A literal, or one cast (type coercion casts a compared literal to the other side's type).
    fn literal(e: &Expr) -> bool {
        match e {
            Expr::Literal(..) => true,
            Expr::Cast(c) => literal(&c.expr),
            Expr::TryCast(c) => literal(&c.expr),
            _ => false,
        }
    }
    let unless_literal = |e: &Expr| {
        if literal(e) {
            Ok(())
        } else {
            check_literals(e, most)
        }
    };
    match e {
        Expr::Literal(v, _) if v.size() > most => Err(DataFusionError::ResourcesExhausted(
            constant_too_big(v.size() as u128, most),
        )),
        Expr::BinaryExpr(b)
            if matches!(
                b.op,
                Operator::Eq
                    | Operator::NotEq
                    | Operator::Lt
                    | Operator::LtEq
                    | Operator::Gt
                    | Operator::GtEq
                    | Operator::IsDistinctFrom
                    | Operator::IsNotDistinctFrom
                    | Operator::LikeMatch
                    | Operator::ILikeMatch
                    | Operator::NotLikeMatch
                    | Operator::NotILikeMatch
            ) =>
        {
            unless_literal(&b.left)?;
            unless_literal(&b.right)
        }
        Expr::Like(l) => {
            check_literals(&l.expr, most)?;
            unless_literal(&l.pattern)
        }
        Expr::InList(l) => {
            check_literals(&l.expr, most)?;
            l.list.iter().try_for_each(unless_literal)
        }
        other => {
            other.apply_children(|c| {
                check_literals(c, most)?;
                Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
            })?;
            Ok(())
        }
    }
}

/// Whether a plan may make more than one row anywhere (a table, a join, an unnest, a union, a
/// recursive query...). A plan made of single rows (`SELECT length(repeat('x', 300000))`) keeps
/// the larger bound of one value.
fn many_rows(plan: &LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut many = false;
    let _ = plan.apply_with_subqueries(|node| {
        let single = match node {
            LogicalPlan::EmptyRelation(_)
            | LogicalPlan::Projection(_)
            | LogicalPlan::Filter(_)
            | LogicalPlan::Limit(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::SubqueryAlias(_)
            | LogicalPlan::Aggregate(_)
            | LogicalPlan::Distinct(_) => true,
            LogicalPlan::Values(v) => v.values.len() <= 1,
            _ => false,
        };
        many |= !single;
        Ok(if many {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    many
}

fn is_bounded(f: &ScalarUDF) -> bool {
    (f.inner().as_ref() as &dyn Any).is::<Bounded>()
}

impl AnalyzerRule for BoundFunctions {
    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        self.plan(plan).data()
    }

    fn name(&self) -> &str {
        "vigie_bound_functions"
    }
}

impl OptimizerRule for BoundFunctions {
    fn name(&self) -> &str {
        "vigie_bound_functions"
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        self.plan(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    /// Runs one query in a session whose calls are bounded by `cap`; the error text, if any.
    fn run(cap: usize, sql: &str) -> Result<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let state = datafusion::execution::SessionStateBuilder::new()
                .with_default_features()
                .with_analyzer_rule(Arc::new(BoundFunctions::new(cap)))
                .with_optimizer_rule(Arc::new(BoundFunctions::new(cap)))
                .build();
            let ctx = SessionContext::new_with_state(state);
            let batches = ctx
                .sql(sql)
                .await
                .map_err(|e| e.to_string())?
                .collect()
                .await
                .map_err(|e| e.to_string())?;
            Ok(
                datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .map_err(|e| e.to_string())?
                    .to_string(),
            )
        })
    }

    const MB: usize = 1 << 20;

    #[test]
    fn growing_functions_are_refused_before_they_build_their_result() {
        for q in [
            "SELECT length(repeat(repeat('x', 100000000), 8))",
            "SELECT length(lpad('x', 100000000))",
            "SELECT length(replace(repeat('a', 1000000), 'a', repeat('b', 100)))",
            "SELECT length(regexp_replace(repeat('a', 100000), '', repeat('b', 1000), 'g'))",
            "SELECT cardinality(array_repeat(1, 100000000))",
            "SELECT cardinality(range(1, 100000000))",
            "SELECT cardinality(generate_series(DATE '1970-01-01', DATE '2030-01-01', INTERVAL '1 minute'))",
            "SELECT length(array_to_string(range(1, 100000), repeat('x', 1000)))",
        ] {
            let err = run(8 * MB, q).expect_err(q);
            assert!(err.contains("would take about"), "{q}: {err}");
        }
    }

    #[test]
    fn operators_and_folded_constants_count_too() {
        let bomb = format!(
            "SELECT length({})",
            ["repeat('x', 300000)"; 10].join(" || ")
        );
        let err = run(8 * MB, &bomb).expect_err("the || chain ran");
        assert!(err.contains("would take about"), "{err}");
        // Within the cap the operator keeps its meaning: NULL when either side is NULL.
        let out = run(
            8 * MB,
            "SELECT 'a' || 'b' AS s, NULL || 'b' AS n, length(repeat('x', 300000)) AS l",
        )
        .unwrap();
        assert!(out.contains("| ab |"), "{out}");
        assert!(out.contains("300000"), "{out}");
        let out = run(
            8 * MB,
            "SELECT concat(NULL, 'b') AS c, NULL || 'b' IS NULL AS isnull",
        )
        .unwrap();
        assert!(out.contains("| b ") && out.contains("true"), "{out}");
    }

    #[test]
    fn a_pattern_per_row_must_compile_within_the_cap() {
        // Eight rows, each its own pattern that expands 10,000 times (over the 1 MiB cap shared by
        // eight): refused, through the function and through the operators.
        let many = "FROM (SELECT concat('ab', CAST(v AS VARCHAR)) AS g FROM \
                    (VALUES (1),(2),(3),(4),(5),(6),(7),(8)) t(v)) s";
        for q in [
            format!("SELECT count(*) {many} WHERE regexp_like(g, concat('(', g, '){{10000}}x'))"),
            format!("SELECT count(*) {many} WHERE g ~ concat('(', g, '){{10000}}x')"),
            format!("SELECT count(*) {many} WHERE g !~* concat('(', g, '){{10000}}x')"),
        ] {
            let err = run(MB, &q).expect_err(&q);
            assert!(err.contains("compiled"), "{q}: {err}");
        }
        // Small patterns per row, and any constant pattern, still run, with the operators' meaning.
        let out = run(
            MB,
            &format!(
                "SELECT count(*) FILTER (WHERE g ~ concat('^', g, '$')) AS a, \
                 count(*) FILTER (WHERE g !~ concat('^', g, '$')) AS b, \
                 count(*) FILTER (WHERE upper(g) ~* concat('^', g)) AS c, \
                 count(*) FILTER (WHERE g ~ 'ab[0-9]') AS d {many}"
            ),
        )
        .unwrap();
        assert!(out.contains("| 8 | 0 | 8 | 8 |"), "{out}");
        let err = run(MB, &format!("SELECT count(*) {many} WHERE g SIMILAR TO g")).unwrap_err();
        assert!(err.contains("constant pattern"), "{err}");
    }

    #[test]
    fn pairwise_work_is_bounded() {
        let err = run(
            64 * MB,
            "SELECT levenshtein(repeat('a', 100000), repeat(c, 100000)) FROM (VALUES ('b')) t(c)",
        )
        .expect_err("levenshtein ran");
        assert!(err.contains("pairs of elements"), "{err}");
        let out = run(
            64 * MB,
            "SELECT levenshtein('kitten', c) AS d FROM (VALUES ('sitting')) t(c)",
        )
        .unwrap();
        assert!(out.contains("| 3 |"), "{out}");
        let err = run(
            64 * MB,
            "SELECT array_has_all(range(1, 20000), range(1, 20000))",
        )
        .expect_err("array_has_all ran");
        assert!(err.contains("pairs of elements"), "{err}");
    }

    #[test]
    fn a_large_constant_copied_into_many_rows_is_refused() {
        // 800 KB made once, projected into every row of a batch through a CASE: 6.5 GB asked at
        // once before. Over a table of rows, a folded constant and a literal are bounded.
        let rows = "FROM (VALUES (1), (2), (3)) t(i)";
        for q in [
            format!("SELECT length(max(CASE WHEN i >= 0 THEN repeat('x', 800000) END)) {rows}"),
            format!("SELECT length(repeat('x', 800000)) AS n {rows}"),
            format!("SELECT '{}' AS s {rows}", "y".repeat(4000)),
        ] {
            let err = run(8 * MB, &q).expect_err(&q);
            assert!(err.contains("copied into every row"), "{err}");
        }
        // One row: one value, within the cap; a list made once over one row, then unnested.
        let out = run(8 * MB, "SELECT length(repeat('x', 300000)) AS n").unwrap();
        assert!(out.contains("300000"), "{out}");
        let out = run(
            8 * MB,
            "SELECT count(*) AS n FROM (SELECT unnest(range(20000)) AS i) t",
        )
        .unwrap();
        assert!(out.contains("| 20000 |"), "{out}");
        let err = run(
            8 * MB,
            "SELECT max(CASE WHEN i >= 0 THEN repeat('x', 800000) END) FROM (SELECT unnest(range(20000)) AS i) t",
        )
        .expect_err("the CASE over 20,000 rows ran");
        assert!(err.contains("copied into every row"), "{err}");
        // Through a join with a side of many rows, a subquery over many rows, a row of VALUES so
        // joined, or a column an unnest copies into each element's row: refused too.
        let wide = "w".repeat(4000);
        for q in [
            format!("SELECT length(s) {rows} CROSS JOIN (SELECT repeat('x', 800000) AS s) c"),
            format!("SELECT (SELECT repeat('x', 800000)) AS s {rows}"),
            format!("SELECT length(s) {rows} CROSS JOIN (VALUES ('{wide}')) v(s)"),
            "SELECT max(length(s)) FROM (SELECT unnest(range(20000)) AS i, s FROM (SELECT repeat('x', 500000) AS s) c) t".to_owned(),
        ] {
            let err = run(8 * MB, &q).expect_err(&q);
            assert!(err.contains("copied into every row"), "{q}: {err}");
        }
        // A long literal compared (never copied), and rows of VALUES, run.
        let long = "z".repeat(4000);
        let out = run(
            8 * MB,
            &format!("SELECT count(*) AS n {rows} WHERE CAST(i AS VARCHAR) <> '{long}' AND CAST(i AS VARCHAR) NOT IN ('{long}')"),
        )
        .unwrap();
        assert!(out.contains("| 3 |"), "{out}");
        let out = run(
            8 * MB,
            &format!("SELECT count(*) AS n FROM (VALUES ('{long}'), ('{long}')) t(s)"),
        )
        .unwrap();
        assert!(out.contains("| 2 |"), "{out}");
        // Small constants over many rows.
        let out = run(
            8 * MB,
            &format!("SELECT count(*) AS n {rows} WHERE i >= 0 AND 'ab' < 'b'"),
        )
        .unwrap();
        assert!(out.contains("| 3 |"), "{out}");
    }

    #[test]
    fn ordinary_queries_are_unchanged() {
        let out = run(
            8 * MB,
            "SELECT upper(s) || '-' || lpad(s, 4, '*') AS v FROM (VALUES ('ab'), ('cd')) t(s) ORDER BY v",
        )
        .unwrap();
        assert!(out.contains("AB-**ab") && out.contains("CD-**cd"), "{out}");
        let out = run(8 * MB, "SELECT cardinality(range(1, 1000)) AS n").unwrap();
        assert!(out.contains("999"), "{out}");
    }
}
