//! `vigie sql`: read-only SQL over the lake's committed snapshot, printed as a table, CSV, JSON or Parquet.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use datafusion::arrow::array::RecordBatch;

use vigie::lake::Lake;
use vigie::sql::{Guard, QueryLimits};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
    Parquet,
}

/// Runs one query (or the statements of a file) and writes the result to stdout.
pub fn run(
    lake_dir: &Path,
    query: Option<String>,
    file: Option<PathBuf>,
    format: Format,
) -> Result<()> {
    let text = match (query, file) {
        (Some(q), None) => q,
        (None, Some(f)) => {
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?
        }
        (None, None) => bail!(
            "give a query, or a file with -f (the interactive shell is `vigie sql` on a terminal)"
        ),
        (Some(_), Some(_)) => bail!("give a query or -f FILE, not both"),
    };
    let lake =
        Lake::open(lake_dir).with_context(|| format!("opening lake {}", lake_dir.display()))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let guard = Guard::open(&lake, QueryLimits::default()).await?;
        let batches = guard.query(&text, "cli").await?;
        print_batches(&batches, format)
    })
}

/// Writes batches to stdout in a format.
pub fn print_batches(batches: &[RecordBatch], format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            writeln!(out, "{text}")?;
        }
        Format::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            for b in batches {
                w.write(b)?;
            }
        }
        Format::Json => {
            let mut w = datafusion::arrow::json::ArrayWriter::new(&mut out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
            writeln!(out)?;
        }
        Format::Parquet => {
            let Some(first) = batches.first() else {
                return Ok(());
            };
            let mut buf = Vec::new();
            let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, first.schema(), None)?;
            for b in batches {
                w.write(b)?;
            }
            w.close()?;
            out.write_all(&buf)?;
        }
    }
    Ok(())
}
