//! The `vigie` command line: one subcommand per pipeline stage, plus the `demo` main job.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use vigie::ingest::{self, IngestOptions};
use vigie::lake::Lake;
use vigie::replay::{self, run::ReplayOptions};

/// Vigie: anti-cheat and audit analytics for the games platform.
#[derive(Debug, Parser)]
#[command(name = "vigie", version, about)]
struct Cli {
    /// Log as JSON lines (for machines) instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Hide progress bars.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The main job: runs the pipeline on the embedded sample data.
    Demo {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
    },
    /// Ingests server log files or directories (.jsonl, .jsonl.gz, .jsonl.zst) into the lake.
    Ingest {
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
    },
    /// Replays new or changed games of the lake through the rules engines into findings, games, moves and departures.
    Replay {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Print the run report as JSON on stdout.
        #[arg(long)]
        report_json: bool,
    },
}

fn init_tracing(json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("VIGIE_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.with_target(false).init();
    }
}

/// Prints a run's summary line (stdout), or its JSON report (stdout) with the summary on stderr.
fn print_report<T: serde::Serialize>(json: bool, report: &T, summary: &str) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.json);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let progress = !cli.quiet;
    match cli.command {
        Command::Demo { lake } => {
            let sample = PathBuf::from("data/sample");
            let lake =
                Lake::open(&lake).with_context(|| format!("opening lake {}", lake.display()))?;
            let report = ingest::ingest_paths(
                &lake,
                &[sample],
                &IngestOptions {
                    progress,
                    ..Default::default()
                },
            )
            .context("ingesting data/sample")?;
            println!("{}", report.summary_line());
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest {
            lake,
            r#final,
            report_json,
            paths,
        } => {
            for p in &paths {
                anyhow::ensure!(p.exists(), "input {} does not exist", p.display());
            }
            let lake_dir = lake;
            let lake = Lake::open(&lake_dir)
                .with_context(|| format!("opening lake {}", lake_dir.display()))?;
            let opts = IngestOptions {
                progress,
                final_files: r#final,
                ..Default::default()
            };
            let report = ingest::ingest_paths(&lake, &paths, &opts)
                .with_context(|| format!("ingesting into {}", lake_dir.display()))?;
            print_report(report_json, &report, &report.summary_line())?;
            tracing::info!(
                lines_read = report.lines_read,
                valid = report.lines_valid,
                quarantined = report.lines_quarantined,
                version = report.version,
                "ingest finished"
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay {
            lake,
            threads,
            report_json,
        } => {
            let lake_dir = lake;
            let lake = Lake::open(&lake_dir)
                .with_context(|| format!("opening lake {}", lake_dir.display()))?;
            let mut opts = ReplayOptions {
                progress,
                ..Default::default()
            };
            if let Some(t) = threads {
                opts.threads = t.max(1);
            }
            let report = replay::run::run(&lake, &opts)
                .with_context(|| format!("replaying {}", lake_dir.display()))?;
            print_report(report_json, &report, &report.summary_line())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
