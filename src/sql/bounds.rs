//! What one analyst query may be before it is planned (its size and nesting), and the runtime it runs on.
//!
//! A query is refused before planning when its text is longer than
//! [`MAX_QUERY_BYTES`], when an expression nests deeper than
//! [`MAX_EXPR_DEPTH`] (a chain `1+1+...+1` is as deep as it is long, and
//! planning and evaluating it recurse once per level), or when it holds more
//! than [`MAX_QUERY_BLOCKS`] query blocks and table references (a chain of
//! `UNION`s or joins is a tree as deep as it is long). The walk that measures
//! nesting stops at the first level past the limit, so the check itself never
//! recurses deeper than the limit. A common table expression is planned again
//! at each reference (and the optimizer walks every copy): a query of 2 KB
//! whose CTEs each read the previous one twice stood for 2^40 blocks and
//! planned, out of reach of the time limit, until the server ran out of
//! memory. So the blocks are also counted with each reference to a CTE
//! standing for the blocks of its body, expanded likewise, at most
//! [`MAX_EXPANDED_BLOCKS`]. A chain of subscripts and field accesses
//! (`x[1:1][1:1]...`) is one flat expression to the parser but one nested call
//! per step to the planner, whose time grows with the cube of its length: at
//! most [`MAX_ACCESS_CHAIN`] steps.
//!
//! Planning and execution then run on [`runtime`], a tokio runtime of its own
//! whose threads have [`STACK_BYTES`] of stack: far more than any query within
//! these limits needs, and apart from the threads that serve the dashboard, so
//! a query that keeps its cores busy does not keep `/healthz` waiting.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::OnceLock;
use std::time::Duration;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    Expr, ObjectName, ObjectNamePart, Query, Select, TableFactor, Visit, Visitor,
};

use super::SqlError;

/// Longest query text accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;
/// Deepest nesting of expressions accepted.
pub const MAX_EXPR_DEPTH: usize = 256;
/// Most query blocks (`SELECT`s, subqueries) and table references in one statement.
pub const MAX_QUERY_BLOCKS: usize = 256;
/// Most query blocks and table references a statement may stand for once each reference to a
/// common table expression is counted as the blocks of its body, expanded likewise.
pub const MAX_EXPANDED_BLOCKS: u64 = 4096;
/// Longest chain of subscripts and field accesses in one expression.
pub const MAX_ACCESS_CHAIN: usize = 32;
/// Stack of each thread of the SQL runtime.
pub const STACK_BYTES: usize = 64 << 20;

/// Refuses a text longer than [`MAX_QUERY_BYTES`] (checked before parsing).
pub fn check_size(sql: &str) -> Result<(), SqlError> {
    if sql.len() > MAX_QUERY_BYTES {
        return Err(SqlError::Refused(format!(
            "the query is {} bytes long; at most {MAX_QUERY_BYTES} are accepted",
            sql.len()
        )));
    }
    Ok(())
}

/// Refuses statements nested deeper, or made of more blocks (their common table expressions
/// expanded), than the limits.
pub fn check_shape(statements: &[DFStatement]) -> Result<(), SqlError> {
    for s in statements {
        let mut walk = Shape::default();
        if let ControlFlow::Break(why) = shape_of(s, &mut walk) {
            return Err(SqlError::Refused(why));
        }
        let expanded = expanded_blocks(s);
        if expanded > MAX_EXPANDED_BLOCKS {
            return Err(SqlError::Refused(format!(
                "the query stands for about {expanded} query blocks and table references once each reference to a common table expression (WITH) is expanded; at most {MAX_EXPANDED_BLOCKS} are accepted"
            )));
        }
    }
    Ok(())
}

/// The blocks `s` stands for with every reference to a common table expression counted as the
/// blocks of its body, expanded likewise (saturating; see [`MAX_EXPANDED_BLOCKS`]).
fn expanded_blocks(s: &DFStatement) -> u64 {
    let mut all = Refs::default();
    let _ = shape_of(s, &mut all);
    // Each CTE's weight: its body's blocks and the weights of the CTEs it reads, until nothing
    // changes (a body may read a CTE defined inside it, listed after it). A name defined twice
    // takes the larger weight; a recursive CTE's reference to itself counts one block.
    let mut weights: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    // A frame's blocks and the weights of the CTEs it reads, but `own` (its own name).
    let weigh = |frame: &Frame, own: &str, weights: &std::collections::HashMap<&str, u64>| {
        frame
            .refs
            .iter()
            .filter(|r| *r != own)
            .fold(frame.blocks, |w, r| {
                w.saturating_add(weights.get(r.as_str()).copied().unwrap_or(0))
            })
    };
    for _ in 0..=all.ctes.len() {
        let mut changed = false;
        for (name, body) in &all.ctes {
            let w = weigh(body, name, &weights);
            let slot = weights.entry(name.as_str()).or_insert(0);
            if w > *slot {
                *slot = w;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    weigh(&all.main, "", &weights)
}

/// The blocks a part of a statement holds and the names it reads (lower case): the statement
/// outside every common table expression's body, or one body outside the bodies nested in it.
#[derive(Default)]
struct Frame {
    blocks: u64,
    refs: Vec<String>,
}

/// One walk of a statement: its own [`Frame`], and each common table expression it defines, at
/// any depth, with its body's. Each body is walked once (a walk of its own per body, started at
/// each `WITH`, cost 2^depth for `WITH`s nested in bodies).
#[derive(Default)]
struct Refs {
    main: Frame,
    ctes: Vec<(String, Frame)>,
    /// The frames of the bodies the walk is in, innermost last.
    open: Vec<(String, Frame)>,
    /// The bodies of the CTEs met so far (by address in the statement walked), with their names.
    bodies: std::collections::HashMap<*const Query, String>,
}

impl Refs {
    fn top(&mut self) -> &mut Frame {
        match self.open.last_mut() {
            Some((_, f)) => f,
            None => &mut self.main,
        }
    }
}

impl Visitor for Refs {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(name) = self.bodies.get(&std::ptr::from_ref(q)) {
            self.open.push((name.clone(), Frame::default()));
        }
        self.top().blocks += 1;
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.bodies.insert(
                    std::ptr::from_ref(&*cte.query),
                    cte.alias.name.value.to_lowercase(),
                );
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if self.bodies.contains_key(&std::ptr::from_ref(q))
            && let Some(done) = self.open.pop()
        {
            self.ctes.push(done);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, _: &Select) -> ControlFlow<()> {
        self.top().blocks += 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, _: &TableFactor) -> ControlFlow<()> {
        self.top().blocks += 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &ObjectName) -> ControlFlow<()> {
        if let Some(ObjectNamePart::Identifier(id)) = name.0.last() {
            let id = id.value.to_lowercase();
            self.top().refs.push(id);
        }
        ControlFlow::Continue(())
    }
}

fn shape_of<V: Visitor<Break = B>, B>(s: &DFStatement, walk: &mut V) -> ControlFlow<B> {
    match s {
        DFStatement::Statement(st) => st.visit(walk),
        DFStatement::Explain(e) => shape_of(&e.statement, walk),
        DFStatement::CopyTo(c) => match &c.source {
            datafusion::sql::parser::CopyToSource::Query(q) => q.visit(walk),
            datafusion::sql::parser::CopyToSource::Relation(_) => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    }
}

/// The walk measuring a statement: current expression depth and blocks seen.
#[derive(Default)]
struct Shape {
    depth: usize,
    blocks: usize,
}

impl Shape {
    fn block(&mut self) -> ControlFlow<String> {
        self.blocks += 1;
        if self.blocks > MAX_QUERY_BLOCKS {
            return ControlFlow::Break(format!(
                "the query has more than {MAX_QUERY_BLOCKS} query blocks and table references"
            ));
        }
        ControlFlow::Continue(())
    }
}

impl Visitor for Shape {
    type Break = String;

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<String> {
        if let Expr::CompoundFieldAccess { access_chain, .. } = e
            && access_chain.len() > MAX_ACCESS_CHAIN
        {
            return ControlFlow::Break(format!(
                "a chain of {} subscripts and field accesses; at most {MAX_ACCESS_CHAIN} are accepted",
                access_chain.len()
            ));
        }
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return ControlFlow::Break(format!(
                "an expression is nested more than {MAX_EXPR_DEPTH} levels deep (a long chain of operators counts one level per operator)"
            ));
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<String> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<String> {
        self.block()
    }

    fn pre_visit_select(&mut self, _: &Select) -> ControlFlow<String> {
        self.block()
    }

    fn pre_visit_table_factor(&mut self, _: &TableFactor) -> ControlFlow<String> {
        self.block()
    }
}

/// The runtime analyst queries are planned and executed on (threads with [`STACK_BYTES`] of stack).
pub fn runtime() -> Result<&'static tokio::runtime::Runtime, SqlError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(2),
                )
                .thread_name("vigie-sql")
                .thread_stack_size(STACK_BYTES)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| SqlError::Runtime(e.clone()))
}

/// Runs `work` on the SQL [`runtime`] and waits for it at most `limit`; past the limit
/// the work is cancelled (it stops at its next yield) and the answer is [`SqlError::Timeout`].
pub async fn run_bounded<T, F>(limit: Duration, work: F) -> Result<T, SqlError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, SqlError>> + Send + 'static,
{
    let task = runtime()?.spawn(work);
    let abort = task.abort_handle();
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) if e.is_panic() => Err(SqlError::Runtime(format!(
            "the query failed inside the engine: {}",
            panic_text(e.into_panic())
        ))),
        Ok(Err(_)) => Err(SqlError::Timeout(limit)),
        Err(_) => {
            abort.abort();
            Err(SqlError::Timeout(limit))
        }
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::GenericDialect;

    fn shape(sql: &str) -> Result<(), SqlError> {
        let st = DFParser::parse_sql_with_dialect(sql, &GenericDialect {}).unwrap();
        check_shape(&st.into_iter().collect::<Vec<_>>())
    }

    #[test]
    fn long_operator_chains_are_refused_short_ones_pass() {
        let chain = |n: usize| format!("SELECT 1{}", "+1".repeat(n));
        assert!(shape(&chain(100)).is_ok());
        let err = shape(&chain(2_000)).unwrap_err().to_string();
        assert!(err.contains("nested more than 256"), "{err}");
        let ands = |n: usize| format!("SELECT * FROM t WHERE {}", vec!["a = 1"; n].join(" AND "));
        assert!(shape(&ands(50)).is_ok());
        assert!(shape(&ands(400)).is_err());
    }

    #[test]
    fn union_and_join_chains_are_bounded() {
        let unions = |n: usize| vec!["SELECT 1"; n].join(" UNION ALL ");
        assert!(shape(&unions(20)).is_ok());
        let err = shape(&unions(1_000)).unwrap_err().to_string();
        assert!(err.contains("query blocks"), "{err}");
        let joins = |n: usize| {
            let mut q = "SELECT 1 FROM t0".to_string();
            for i in 1..n {
                q.push_str(&format!(" JOIN t{i} ON true"));
            }
            q
        };
        assert!(shape(&joins(10)).is_ok());
        assert!(shape(&joins(600)).is_err());
    }

    #[test]
    fn common_table_expressions_count_once_per_reference() {
        // Each CTE reads the previous one twice: 2^levels blocks once expanded.
        let doubling = |levels: usize| {
            let mut q = String::from("WITH t0 AS (SELECT 1 AS x)");
            for i in 1..=levels {
                q.push_str(&format!(
                    ", t{i} AS (SELECT x FROM t{p} UNION ALL SELECT x FROM t{p})",
                    p = i - 1
                ));
            }
            q + &format!(" SELECT count(*) FROM t{levels}")
        };
        assert!(shape(&doubling(5)).is_ok());
        let err = shape(&doubling(18)).unwrap_err().to_string();
        assert!(err.contains("common table expression"), "{err}");
        assert!(shape(&doubling(40)).is_err());
        // The same inside a subquery, and through a CTE defined inside another's body.
        assert!(shape(&format!("SELECT * FROM ({})", doubling(18))).is_err());
        assert!(shape(&doubling(8)).is_ok());
        let reused = |n: usize| {
            format!(
                "WITH a AS ({}) SELECT * FROM a{}",
                doubling(8),
                (1..n)
                    .map(|i| format!(" JOIN a a{i} ON true"))
                    .collect::<String>()
            )
        };
        assert!(shape(&reused(1)).is_ok());
        assert!(shape(&reused(4)).is_err());
        // Ordinary reuse passes, as does a recursive CTE reading itself.
        assert!(
            shape(
                "WITH a AS (SELECT * FROM moves), b AS (SELECT * FROM a JOIN games USING (game)) \
                 SELECT * FROM a JOIN b USING (game) JOIN b c USING (game)"
            )
            .is_ok()
        );
        assert!(
            shape(
                "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 9) \
                 SELECT * FROM r"
            )
            .is_ok()
        );
    }

    #[test]
    fn common_table_expressions_nested_in_bodies_are_walked_once() {
        // Forty WITHs, each inside the body of the CTE before: each body read once, accepted at
        // once (a walk per body, started at each WITH, took 2^40 steps).
        let mut q = String::from("SELECT 1 AS x");
        for i in 0..40 {
            q = format!("WITH a{i} AS ({q}) SELECT x FROM a{i}");
        }
        let started = std::time::Instant::now();
        assert!(shape(&q).is_ok());
        assert!(started.elapsed() < Duration::from_secs(5));
        // And each reading the one inside it twice: refused.
        let mut q = String::from("SELECT 1 AS x");
        for i in 0..40 {
            q = format!("WITH a{i} AS ({q}) SELECT x FROM a{i} UNION ALL SELECT x FROM a{i}");
        }
        assert!(shape(&q).is_err());
    }

    #[test]
    fn long_subscript_chains_are_refused() {
        let chain = |n: usize| format!("SELECT x{} FROM t", "[1:1]".repeat(n));
        assert!(shape(&chain(MAX_ACCESS_CHAIN)).is_ok());
        let err = shape(&chain(300)).unwrap_err().to_string();
        assert!(err.contains("subscripts"), "{err}");
    }

    #[test]
    fn size_is_checked_before_parsing() {
        assert!(check_size("SELECT 1").is_ok());
        let long = format!("SELECT '{}'", "x".repeat(MAX_QUERY_BYTES));
        assert!(
            check_size(&long)
                .unwrap_err()
                .to_string()
                .contains("bytes long")
        );
    }

    #[test]
    fn bounded_work_times_out_and_panics_become_errors() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let slow = rt.block_on(run_bounded(Duration::from_millis(50), async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(())
        }));
        assert!(matches!(slow, Err(SqlError::Timeout(_))), "{slow:?}");
        let boom: Result<(), SqlError> = rt.block_on(run_bounded(Duration::from_secs(5), async {
            panic!("deliberate")
        }));
        let text = boom.unwrap_err().to_string();
        assert!(text.contains("deliberate"), "{text}");
        let fine = rt.block_on(run_bounded(Duration::from_secs(5), async { Ok(7) }));
        assert_eq!(fine.unwrap(), 7);
    }
}
