//! `vigie sql`: read-only SQL over the lake's committed snapshot, printed as a table, CSV, JSON or Parquet.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use datafusion::arrow::array::RecordBatch;

use vigie::sql::{Guard, QueryLimits};

use super::Ctx;

/// Arguments of `vigie sql`.
#[derive(Debug, clap::Args)]
pub struct SqlArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Read the query from a file.
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Time limit of a query, seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Memory limit of the session, MiB (operators that can spill do so beyond it).
    #[arg(long, default_value_t = 512)]
    memory_mb: usize,
    /// Read the lake as it was at this version, or at this time (2026-11-20T10:00:00.000Z).
    #[arg(long)]
    as_of: Option<String>,
    /// The query.
    query: Option<String>,
}

impl SqlArgs {
    /// Runs `vigie sql`: the query, the statements of the file, or the interactive shell.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake,
            file,
            format,
            timeout,
            memory_mb,
            as_of,
            query,
        } = self;
        let limits = QueryLimits {
            memory_bytes: memory_mb.clamp(1, 1 << 20).saturating_mul(1 << 20),
            timeout: std::time::Duration::from_secs(timeout.clamp(1, 86_400)),
            max_rows: None,
        };
        run(&lake, query, file, format, limits, as_of.as_deref())?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Limits of analysts' SQL in `vigie serve` (the console and the PostgreSQL endpoint).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeSqlArgs {
    /// Time limit of one analyst query, in seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub sql_timeout: u64,
    /// Memory budget of one SQL session (a console user's, or a PostgreSQL connection's), in MiB.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub sql_memory_mb: u64,
    /// Authenticated PostgreSQL connections served at once (the next is told "too many connections").
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub pg_max_connections: u64,
    /// Seconds a new PostgreSQL connection has to authenticate before it is closed.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub pg_handshake_timeout: u64,
}

impl ServeSqlArgs {
    /// The per-query limits these arguments set.
    pub fn limits(&self) -> QueryLimits {
        QueryLimits {
            memory_bytes: (self.sql_memory_mb as usize).saturating_mul(1 << 20),
            timeout: std::time::Duration::from_secs(self.sql_timeout),
            max_rows: None,
        }
    }
}

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
    limits: QueryLimits,
    as_of: Option<&str>,
) -> Result<()> {
    let text = match (query, file) {
        (Some(q), None) => q,
        (None, Some(f)) => {
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?
        }
        (None, None) => return shell(lake_dir, format, limits, as_of),
        (Some(_), Some(_)) => bail!("give a query or -f FILE, not both"),
    };
    let (snapshot, _lease) = snapshot(lake_dir, as_of)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let guard = Guard::on(snapshot, limits).await?;
        let batches = guard.query(&text, "cli").await?;
        print_batches(&batches, format)
    });
    // A query stopped at its time limit may leave an operator mid-computation: do not wait for it.
    rt.shutdown_background();
    result
}

/// The latest snapshot of a lake, or the one `--as-of` names, held while the lease lives.
fn snapshot(
    lake_dir: &Path,
    as_of: Option<&str>,
) -> Result<(vigie::lake::Snapshot, Option<vigie::lake::Lease>)> {
    let lake = super::open_existing(lake_dir)?;
    Ok(match as_of {
        None => lake.held_snapshot(None)?,
        Some(spec) => {
            let v = lake.version_of(spec)?;
            lake.held_snapshot(Some(v))
                .with_context(|| format!("reading version {v} (--as-of {spec})"))?
        }
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

/// The interactive shell: one statement per `;`, history in ~/.vigie_sql_history, `\\d` lists tables, `\\d NAME` describes one.
fn shell(lake_dir: &Path, format: Format, limits: QueryLimits, as_of: Option<&str>) -> Result<()> {
    use rustyline::error::ReadlineError;
    let (snapshot, _lease) = snapshot(lake_dir, as_of)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let guard = rt.block_on(Guard::on(snapshot, limits))?;
    println!(
        "vigie sql on {} (snapshot {}): end statements with ';', \\d lists tables, \\d NAME describes one, \\q quits",
        lake_dir.display(),
        guard.snapshot().id()
    );
    let mut rl = rustyline::DefaultEditor::new()?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".vigie_sql_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "vigie> "
        } else {
            "   ..> "
        };
        let line = match rl.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let trimmed = line.trim();
        if buffer.is_empty() && trimmed.starts_with('\\') {
            let _ = rl.add_history_entry(trimmed);
            let mut parts = trimmed.split_whitespace();
            let query = match (parts.next(), parts.next()) {
                (Some("\\q"), _) => break,
                (Some("\\d"), None) => "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'lake' ORDER BY table_name".to_string(),
                (Some("\\d"), Some(name)) => format!(
                    "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'lake' AND table_name = '{}' ORDER BY ordinal_position",
                    name.replace('\'', "")
                ),
                _ => {
                    println!("unknown command: {trimmed}");
                    continue;
                }
            };
            match rt.block_on(guard.query_internal(&query)) {
                Ok(b) => print_batches(&b, format)?,
                Err(e) => println!("error: {e}"),
            }
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if !trimmed.ends_with(';') {
            continue;
        }
        let sql = std::mem::take(&mut buffer);
        let _ = rl.add_history_entry(sql.trim());
        match rt.block_on(guard.query(&sql, "shell")) {
            Ok(b) => print_batches(&b, format)?,
            Err(e) => println!("error: {e}"),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(())
}
