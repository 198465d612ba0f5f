//! SQL behaviour the DataFusion way: the sqllogictest files of `tests/slt/` run the analysts'
//! views, the report queries and every detection rule on small crafted tables.
//!
//! Each file gets a fresh session holding every lake table (empty, every column nullable, the
//! `date` partition column as in the lake), then Vigie's views, each report query as a view
//! `report_<name>` (period 2026-11-01 to 2026-11-30) and each detection rule rendered with its
//! default parameters as a view `rule_<id>` (with Vigie's SQL functions of `vigie::lake::functions`,
//! as in every session). A file fills the tables it needs with `INSERT` and checks the rows that come out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

/// The report period of the `report_<name>` views.
const FROM: &str = "2026-11-01";
const TO: &str = "2026-11-30";

struct Vigie {
    ctx: SessionContext,
}

async fn session() -> Result<SessionContext, DataFusionError> {
    let ctx = SessionContext::new();
    for def in vigie::sql::all_tables() {
        if ctx.table_exist(def.name)? {
            continue;
        }
        let mut fields: Vec<Field> = def
            .columns
            .iter()
            .map(|c| Field::new(c.name, c.ty.clone(), true))
            .collect();
        if let Some(p) = def.partition {
            fields.push(Field::new(p, DataType::Date32, true));
        }
        let schema = Arc::new(Schema::new(fields));
        let table = MemTable::try_new(schema, vec![vec![]])?;
        ctx.register_table(def.name, Arc::new(table))?;
    }
    vigie::lake::functions::register(&ctx);
    vigie::sql::register_views(&ctx).await?;
    for (name, sql) in vigie::report::QUERIES {
        // Events of every day: the chunked queries' partition bounds prune nothing here.
        let sql = vigie::report::render_query(sql, FROM, TO, "1970-01-01", "9999-12-31");
        let view = ctx.sql(&sql).await?.into_view();
        ctx.register_table(format!("report_{name}"), view)?;
    }
    let rules = vigie::detect::rules::load_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("queries/detect"),
    )
    .map_err(|e| DataFusionError::External(Box::new(e)))?;
    for rule in rules {
        let view = ctx.sql(&rule.render(&BTreeMap::new())).await?.into_view();
        ctx.register_table(format!("rule_{}", rule.id), view)?;
    }
    Ok(ctx)
}

#[async_trait::async_trait]
impl AsyncDB for Vigie {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let df = self.ctx.sql(sql).await?;
        let is_query = {
            let head = sql.trim_start().to_ascii_lowercase();
            ["select", "with", "values", "explain"]
                .iter()
                .any(|k| head.starts_with(k))
        };
        let types = vec![DefaultColumnType::Any; df.schema().fields().len()];
        let batches = df.collect().await?;
        if !is_query {
            return Ok(DBOutput::StatementComplete(0));
        }
        let opts = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for b in &batches {
            let cols = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
                .collect::<Result<Vec<_>, _>>()?;
            for i in 0..b.num_rows() {
                rows.push(
                    cols.iter()
                        .map(|f| {
                            let s = f.value(i).to_string();
                            if s.is_empty() {
                                "(empty)".to_owned()
                            } else {
                                s
                            }
                        })
                        .collect(),
                );
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        "vigie"
    }

    async fn shutdown(&mut self) {}
}

fn slt_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("tests/slt") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            slt_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "slt") {
            out.push(p);
        }
    }
}

#[test]
fn sqllogictest_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files = Vec::new();
    slt_files(&dir, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no .slt file under {}", dir.display());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    for file in &files {
        let result = rt.block_on(async {
            let ctx = session().await.map_err(|e| e.to_string())?;
            let mut runner = sqllogictest::Runner::new(move || {
                let ctx = ctx.clone();
                async move { Ok(Vigie { ctx }) }
            });
            runner
                .run_file_async(file)
                .await
                .map_err(|e| e.display(true).to_string())
        });
        if let Err(e) = result {
            failures.push(format!("{}:\n{e}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
