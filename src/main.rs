//! The `vigie` command line: one subcommand per pipeline stage, plus the `demo` main job.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

mod cli;

/// jemalloc with background purging: freed memory goes back to the system (docs/performance.md).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its first allocation: dirty pages go back to the system after
/// 1 s instead of 10 (the same latency and a lower RSS floor for the stream, docs/performance.md).
/// The `_RJEM_MALLOC_CONF` environment variable still overrides it.
#[cfg(target_os = "linux")]
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 37] = b"dirty_decay_ms:1000,muzzy_decay_ms:0\0";

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
    /// The main job: simulates a week of traffic, runs the whole pipeline, and serves the dashboard.
    Demo(cli::demo::DemoArgs),
    /// Writes simulated server logs with known cheaters and server faults, and their ground truth (labels.json).
    Simulate(cli::simulate::SimulateArgs),
    /// Serves the trust-and-safety dashboard over a lake.
    Serve(cli::serve::ServeArgs),
    /// Follows a log directory live: commits micro-batches exactly once, replays and detects continuously.
    Stream(cli::stream::StreamArgs),
    /// Administration: staff accounts.
    #[command(subcommand)]
    Admin(cli::admin::AdminCmd),
    /// Ingests server log files or directories (.jsonl, .jsonl.gz, .jsonl.zst) into the lake.
    Ingest(cli::ingest::IngestArgs),
    /// Draughts: legal moves, perft and engine analysis of a position.
    #[command(subcommand)]
    Draughts(cli::engines::Draughts),
    /// Recomputes commitments, dice, shuffles and duels from a seed, by hand.
    #[command(subcommand)]
    Fairness(cli::engines::Fairness),
    /// Verifies the randomness of every Ludo, Belote and Medieval game of a log file, or one game of the lake.
    ///
    /// Exit code 0 when every check passes, 1 when one fails, 2 on unusable input.
    Verify(cli::verify::VerifyArgs),
    /// Runs a read-only SQL query over the lake (or the statements of a file).
    Sql(cli::sql::SqlArgs),
    /// Deletes the files that commits removed longer ago than the retention (older versions that
    /// named them can no longer be read).
    Vacuum(cli::vacuum::VacuumArgs),
    /// Lake maintenance: `check` reads every table's Delta log against Vigie's log.
    Lake(cli::lake::LakeArgs),
    /// Computes account and pair features, then runs the detection rules into flags.
    Detect(cli::detect::DetectArgs),
    /// Judges every move of selected rated draughts games with the engine, into move_analysis.
    Analyse(cli::analyse::AnalyseArgs),
    /// Scores the flags against the simulator's ground truth: precision and recall per behaviour.
    Eval(cli::eval::EvalArgs),
    /// Generates the compliance audit report of a period (or verifies one: `vigie report verify DIR`).
    Report(cli::report::ReportCommand),
    /// Prints generated documentation (`tables`: docs/tables.md).
    Docs(cli::docs::DocsArgs),
    /// Replays new or changed games of the lake through the rules engines into findings, games, moves and departures.
    Replay(cli::replay::ReplayArgs),
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.json);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes on one line, each said once: a cause whose text its
/// parent already holds (typed errors often repeat their source) is left out.
fn error_text(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if parts.iter().any(|p| p.contains(text.as_str())) {
            continue;
        }
        parts.push(text);
    }
    parts.join(": ")
}

fn run(cli: Cli) -> Result<ExitCode> {
    let ctx = cli::Ctx {
        progress: !cli.quiet,
    };
    match cli.command {
        Command::Demo(args) => args.run(&ctx),
        Command::Simulate(args) => args.run(&ctx),
        Command::Serve(args) => args.run(&ctx),
        Command::Stream(args) => args.run(&ctx),
        Command::Admin(cmd) => cmd.run(&ctx),
        Command::Ingest(args) => args.run(&ctx),
        Command::Draughts(cmd) => cmd.run(&ctx),
        Command::Fairness(cmd) => cmd.run(&ctx),
        Command::Verify(args) => args.run(&ctx),
        Command::Sql(args) => args.run(&ctx),
        Command::Vacuum(args) => args.run(&ctx),
        Command::Lake(args) => args.run(&ctx),
        Command::Detect(args) => args.run(&ctx),
        Command::Analyse(args) => args.run(&ctx),
        Command::Eval(args) => args.run(&ctx),
        Command::Report(args) => args.run(&ctx),
        Command::Docs(args) => args.run(&ctx),
        Command::Replay(args) => args.run(&ctx),
    }
}
