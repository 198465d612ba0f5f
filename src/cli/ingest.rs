//! `vigie ingest`: server log files or directories (.jsonl, .jsonl.gz, .jsonl.zst) into the lake.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use vigie::ingest::{self, IngestOptions};

use super::Ctx;

/// Arguments of `vigie ingest`.
#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Treat a last line without newline as complete (the files are final).
    #[arg(long)]
    r#final: bool,
    /// Print the run report as JSON on stdout.
    #[arg(long)]
    report_json: bool,
    /// Files or directories to ingest.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

impl IngestArgs {
    /// Runs `vigie ingest`.
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake: lake_dir,
            r#final,
            report_json,
            paths,
        } = self;
        for p in &paths {
            anyhow::ensure!(p.exists(), "input {} does not exist", p.display());
        }
        let lake = super::open(&lake_dir)?;
        let opts = IngestOptions {
            progress: ctx.progress,
            final_files: r#final,
            ..Default::default()
        };
        let report = ingest::ingest_paths(&lake, &paths, &opts)
            .with_context(|| format!("ingesting into {}", lake_dir.display()))?;
        super::print_report(report_json, &report, &report.summary_line())?;
        tracing::info!(
            lines_read = report.lines_read,
            valid = report.lines_valid,
            quarantined = report.lines_quarantined,
            version = report.version,
            "ingest finished"
        );
        Ok(ExitCode::SUCCESS)
    }
}
