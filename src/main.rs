//! The `vigie` command line: one subcommand per pipeline stage, plus the `demo` main job.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

mod cli;

use vigie::ingest::{self, IngestOptions};
use vigie::lake::Lake;
use vigie::replay::{self, run::ReplayOptions};

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
    Demo {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Where generated data (the simulated logs) go.
        #[arg(long, default_value = "data/generated")]
        data: PathBuf,
        /// Dashboard address.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
        /// Days of traffic.
        #[arg(long, default_value_t = 7)]
        days: u32,
        /// Games per day.
        #[arg(long, default_value_t = 1500)]
        games_per_day: u32,
        /// Stop after the pipeline instead of serving the dashboard.
        #[arg(long)]
        no_serve: bool,
    },
    /// Writes simulated server logs with known cheaters and server faults, and their ground truth (labels.json).
    Simulate {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 3)]
        days: u32,
        #[arg(long, default_value_t = 2000)]
        games_per_day: u32,
        #[arg(long, default_value_t = 1000)]
        accounts: u32,
        /// Malformed lines to splice into the files (labelled).
        #[arg(long, default_value_t = 0)]
        malformed: u32,
        /// First simulated day (YYYY-MM-DD).
        #[arg(long)]
        start: Option<String>,
        /// Game servers (one file per server per day).
        #[arg(long)]
        servers: Option<u32>,
        /// Fraction of randomly matched games with one server fault.
        #[arg(long)]
        fault_rate: Option<f64>,
        /// Accounts per individual behaviour, as a fraction of all accounts.
        #[arg(long)]
        behaviour_rate: Option<f64>,
        /// The small preset that exercises every event type (used for data/sample).
        #[arg(long)]
        sample: bool,
    },
    /// Serves the trust-and-safety dashboard over a lake.
    Serve {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Listen address.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
        /// Staff accounts file (default: LAKE/_vigie/config/users.json).
        #[arg(long)]
        users: Option<PathBuf>,
        /// Also serve SQL over the PostgreSQL wire protocol on this address (analyst and admin accounts).
        #[arg(long)]
        pg: Option<std::net::SocketAddr>,
        /// Enable `POST /ingest` (NDJSON pushed by game servers) with the bearer token in this file.
        #[arg(long)]
        ingest_token_file: Option<PathBuf>,
        /// Detection rules directory (for the replay and detection that follow a push).
        #[arg(long, default_value = "queries/detect")]
        rules: PathBuf,
        #[command(flatten)]
        sql: cli::sql::ServeSqlArgs,
        #[command(flatten)]
        http: cli::pipeline::ServeHttpArgs,
    },
    /// Follows a log directory live: commits micro-batches exactly once, replays and detects continuously.
    Stream {
        /// The directory the game servers write.
        #[arg(long)]
        follow: PathBuf,
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Seconds between two looks at the directory (and so between commits).
        #[arg(long, default_value_t = 1.0)]
        commit_interval: f64,
        /// Least seconds between the starts of two detection runs.
        #[arg(long, default_value_t = 1.0)]
        detect_interval: f64,
        /// Detection rules directory.
        #[arg(long, default_value = "queries/detect")]
        rules: PathBuf,
        /// Catch up with the directory, then exit.
        #[arg(long)]
        once: bool,
        /// Hours the hourly vacuum keeps the files that commits removed (time travel needs them).
        #[arg(long, default_value_t = 168)]
        vacuum_retain: u64,
        /// Print the run report as JSON on stdout.
        #[arg(long)]
        report_json: bool,
    },
    /// Administration: staff accounts.
    #[command(subcommand)]
    Admin(AdminCmd),
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
    /// Draughts: legal moves and perft of a position.
    #[command(subcommand)]
    Draughts(cli::engines::Draughts),
    /// Recomputes commitments, dice, shuffles and duels from a seed, by hand.
    #[command(subcommand)]
    Fairness(cli::engines::Fairness),
    /// Verifies the randomness of every Ludo, Belote and Medieval game of a log file, or one game of the lake.
    ///
    /// Exit code 0 when every check passes, 1 when one fails, 2 on unusable input.
    Verify {
        /// A log file (.jsonl, .jsonl.gz, .jsonl.zst); omit with --lake.
        file: Option<PathBuf>,
        /// Only this game (or match) id; with --lake, the full verdict of this game.
        #[arg(long)]
        game: Option<String>,
        /// Read the game from this lake instead of a file (needs --game).
        #[arg(long)]
        lake: Option<PathBuf>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Runs a read-only SQL query over the lake (or the statements of a file).
    Sql {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Read the query from a file.
        #[arg(short = 'f', long = "file")]
        file: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: cli::sql::Format,
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
    },
    /// Deletes the files that commits removed longer ago than the retention (older versions that
    /// named them can no longer be read).
    Vacuum {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Keep removed files this many hours (Delta's default: 168).
        #[arg(long, default_value_t = 168)]
        retain: u64,
    },
    /// Lake maintenance: `check` reads every table's Delta log against Vigie's log.
    Lake {
        #[command(subcommand)]
        cmd: LakeCmd,
    },
    /// Computes account and pair features, then runs the detection rules into flags.
    Detect {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Directory of the rule files.
        #[arg(long, default_value = "queries/detect")]
        rules: PathBuf,
        /// Print the run report as JSON on stdout.
        #[arg(long)]
        report_json: bool,
        /// Benchmark a streaming pass: recompute the features of this many accounts (the next
        /// ones each run) and run every rule, `--repeat` times, then print the times.
        #[arg(long, value_name = "ACCOUNTS")]
        bench_scope: Option<usize>,
        /// Runs of `--bench-scope`.
        #[arg(long, default_value_t = 10)]
        repeat: usize,
    },
    /// Scores the flags against the simulator's ground truth: precision and recall per behaviour.
    Eval {
        /// The simulator's labels.json.
        #[arg(long)]
        labels: PathBuf,
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Directory of the rule files (for the behaviour each rule targets).
        #[arg(long, default_value = "queries/detect")]
        rules: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Generates the compliance audit report of a period (or verifies one: `vigie report verify DIR`).
    #[command(args_conflicts_with_subcommands = true)]
    Report {
        #[command(subcommand)]
        verify: Option<ReportCmd>,
        #[command(flatten)]
        args: ReportArgs,
    },
    /// Prints generated documentation (`tables`: docs/tables.md).
    Docs {
        /// What to print: `tables`.
        what: String,
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

#[derive(Debug, Subcommand)]
enum AdminCmd {
    /// Creates or replaces a staff account (argon2 hash in LAKE/_vigie/config/users.json).
    AddUser {
        /// Login name.
        name: String,
        /// reviewer, compliance, analyst or admin.
        #[arg(long)]
        role: String,
        /// The password (or read it from the VIGIE_PASSWORD environment variable).
        #[arg(long, env = "VIGIE_PASSWORD", hide_env_values = true)]
        password: String,
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum LakeCmd {
    /// Replays every Delta version of every table and compares it with Vigie's log and the files
    /// on disk; exits 1 when anything is wrong.
    Check {
        /// Lake directory.
        #[arg(long, default_value = "data/lake")]
        lake: PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ReportCmd {
    /// Re-hashes a report bundle and reports any changed, missing or extra file.
    Verify {
        /// The bundle directory.
        dir: PathBuf,
    },
    /// Runs the randomness battery over many seeds of honest simulated games (optionally with an
    /// injected bias): rejection rates, uniformity of p-values, detection against predicted power.
    Calibrate(cli::calibrate::CalibrateArgs),
}

#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// First day of the period (YYYY-MM-DD, UTC).
    #[arg(long)]
    from: Option<String>,
    /// Last day of the period (inclusive).
    #[arg(long)]
    to: Option<String>,
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Output directory (replaced).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Generation time written in the report (default: the end of the period); an input, for reproducibility.
    #[arg(long)]
    generated_at: Option<String>,
    /// Family-wise significance level of the randomness tests.
    #[arg(long, default_value_t = 0.01)]
    alpha: f64,
    /// Read the lake as it was at this version (the bundle's scope.lake_version), or time.
    #[arg(long)]
    as_of: Option<String>,
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

/// `vigie detect --bench-scope N`: times scoped detection runs as the streaming job makes them.
fn bench_detect(lake: &Lake, rules: &Path, n: usize, repeat: usize) -> Result<ExitCode> {
    vigie::detect::run(lake, rules, &Default::default()).context("running detection")?;
    let accounts = vigie::features::feature_accounts(lake).context("reading accounts")?;
    if accounts.is_empty() || n == 0 {
        anyhow::bail!("no account to scope (is the lake replayed?)");
    }
    let mut times = Vec::new();
    for k in 0..repeat {
        let scope: std::collections::BTreeSet<String> = (0..n)
            .map(|i| accounts[(k * n + i) % accounts.len()].clone())
            .collect();
        let r = vigie::detect::run_scoped(lake, rules, &Default::default(), Some(&scope), true)
            .context("running detection")?;
        tracing::info!(
            run = k,
            ms = r.elapsed_ms,
            flags = r.flags,
            "scoped detection"
        );
        times.push(r.elapsed_ms);
    }
    times.sort_unstable();
    println!(
        "detect bench: {repeat} runs scoped to {n} of {} accounts: median {} ms, min {} ms, max {} ms",
        accounts.len(),
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
    Ok(ExitCode::SUCCESS)
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
    let progress = !cli.quiet;
    match cli.command {
        Command::Demo {
            lake,
            data,
            addr,
            days,
            games_per_day,
            no_serve,
        } => {
            cli::pipeline::demo(&lake, &data, addr, days, games_per_day, !no_serve)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Simulate {
            out,
            seed,
            days,
            games_per_day,
            accounts,
            malformed,
            start,
            servers,
            fault_rate,
            behaviour_rate,
            sample,
        } => {
            let mut opts = if sample {
                vigie::sim::SimOptions::sample()
            } else {
                vigie::sim::SimOptions::default()
            };
            if !sample {
                opts.seed = seed;
                opts.days = days;
                opts.games_per_day = games_per_day;
                opts.accounts = accounts;
            }
            opts.malformed = malformed;
            if let Some(s) = start {
                opts.start = s;
            }
            if let Some(v) = servers {
                opts.servers = v;
            }
            if let Some(v) = fault_rate {
                opts.fault_rate = v;
            }
            if let Some(v) = behaviour_rate {
                opts.behaviour_rate = v;
            }
            cli::pipeline::run_simulate(&out, &opts, progress)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve {
            lake,
            addr,
            users,
            pg,
            ingest_token_file,
            rules,
            sql,
            http,
        } => {
            let users = users.unwrap_or_else(|| cli::pipeline::users_file(&lake));
            let push = match ingest_token_file {
                Some(f) => {
                    let token = std::fs::read_to_string(&f)
                        .with_context(|| format!("reading the ingest token {}", f.display()))?;
                    if token.trim().len() < 16 {
                        anyhow::bail!(
                            "the ingest token in {} is shorter than 16 characters",
                            f.display()
                        );
                    }
                    Some(vigie::stream::push::PushConfig::new(
                        lake.clone(),
                        &token,
                        rules,
                    ))
                }
                None => None,
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(cli::pipeline::serve(
                &lake, addr, users, pg, push, &sql, &http,
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stream {
            follow,
            lake,
            commit_interval,
            detect_interval,
            rules,
            once,
            vacuum_retain,
            report_json,
        } => {
            let lake_dir = lake;
            let lake = vigie::catalog::open(&lake_dir)
                .with_context(|| format!("opening lake {}", lake_dir.display()))?;
            let mut opts = vigie::stream::StreamOptions::new(follow, rules);
            opts.commit_interval = std::time::Duration::from_secs_f64(commit_interval.max(0.01));
            opts.detect_interval = std::time::Duration::from_secs_f64(detect_interval.max(0.0));
            opts.once = once;
            opts.vacuum_retain = std::time::Duration::from_secs(vacuum_retain.saturating_mul(3600));
            let report = cli::pipeline::stream(&lake, &opts)?;
            if report_json {
                println!("{}", serde_json::to_string(&report)?);
            }
            eprintln!("{}", report.summary_line());
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin(AdminCmd::AddUser {
            name,
            role,
            password,
            lake,
        }) => {
            cli::pipeline::add_staff(&lake, &name, &role, &password)?;
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
            let lake = vigie::catalog::open(&lake_dir)
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
        Command::Draughts(cmd) => {
            cli::engines::draughts(cmd)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Fairness(cmd) => {
            cli::engines::fairness(cmd)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify {
            file,
            game,
            lake,
            json,
        } => verify(file, game, lake, json),
        Command::Detect {
            lake,
            rules,
            report_json,
            bench_scope,
            repeat,
        } => {
            let lake = vigie::catalog::open_existing(&lake)
                .with_context(|| format!("opening lake {}", lake.display()))?;
            if let Some(n) = bench_scope {
                return bench_detect(&lake, &rules, n, repeat.max(1));
            }
            let report = vigie::detect::run(&lake, &rules, &Default::default())
                .context("running detection")?;
            print_report(report_json, &report, &report.summary_line())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Eval {
            labels,
            lake,
            rules,
            json,
        } => {
            let lake = vigie::catalog::open_existing(&lake)
                .with_context(|| format!("opening lake {}", lake.display()))?;
            let labels = vigie::detect::eval::Labels::read(&labels)?;
            let rules = vigie::detect::rules::load(&rules)?;
            let flags = vigie::detect::read_flags(&lake.snapshot()?)?;
            let ev = vigie::detect::eval::evaluate(&labels, &rules, &flags);
            if json {
                println!("{}", serde_json::to_string_pretty(&ev)?);
            } else {
                print!("{}", ev.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Report {
            verify: Some(ReportCmd::Verify { dir }),
            ..
        } => {
            let check = vigie::report::verify(&dir)
                .with_context(|| format!("verifying {}", dir.display()))?;
            for f in &check.changed {
                println!("changed: {f}");
            }
            for f in &check.missing {
                println!("missing: {f}");
            }
            for f in &check.extra {
                println!("extra: {f}");
            }
            for f in &check.refused {
                println!("refused: {f}");
            }
            if !check.digest_ok {
                println!(
                    "DIGEST does not match the manifest (sha256 {})",
                    check.digest
                );
            }
            println!(
                "report verify: {} (digest {})",
                if check.ok() { "ok" } else { "FAILED" },
                check.digest
            );
            Ok(if check.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Report {
            verify: Some(ReportCmd::Calibrate(args)),
            ..
        } => {
            cli::calibrate::calibrate(&args, progress)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { verify: None, args } => {
            let (Some(from), Some(to), Some(out)) = (args.from, args.to, args.out) else {
                anyhow::bail!("give --from DATE --to DATE --out DIR (or `report verify DIR`)");
            };
            let lake = vigie::catalog::open_existing(&args.lake)
                .with_context(|| format!("opening lake {}", args.lake.display()))?;
            let generated_at = args
                .generated_at
                .unwrap_or_else(|| format!("{to}T23:59:59.999Z"));
            let as_of = match &args.as_of {
                Some(spec) => Some(lake.version_of(spec)?),
                None => None,
            };
            let opts = vigie::report::ReportOptions {
                from,
                to,
                generated_at,
                alpha: args.alpha,
                out: out.clone(),
                as_of,
            };
            let (summary, digest) =
                vigie::report::generate(&lake, &opts).context("generating the report")?;
            println!(
                "report: {} to {}, {} figures with evidence, randomness {}, written to {}; digest {digest}",
                summary.scope.period_from,
                summary.scope.period_to,
                summary.evidence.len(),
                match summary.randomness.verdict {
                    vigie::report::randomness::Verdict::Pass => "pass".to_owned(),
                    vigie::report::randomness::Verdict::Fail => "FAIL".to_owned(),
                    vigie::report::randomness::Verdict::InsufficientData => format!(
                        "insufficient data ({} of {} tests could not run)",
                        summary.randomness.tests_insufficient,
                        summary.randomness.tests.len()
                    ),
                },
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Docs { what } => {
            anyhow::ensure!(
                what == "tables",
                "unknown documentation {what:?}: try `tables`"
            );
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            print!("{}", rt.block_on(vigie::sql::docs::tables_markdown())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Vacuum { lake, retain } => {
            let lake = vigie::catalog::open_existing(&lake)
                .with_context(|| format!("opening lake {}", lake.display()))?;
            let retain_ms = i64::try_from(retain.saturating_mul(3_600_000)).unwrap_or(i64::MAX);
            let mut w = lake.writer().context("starting a writer")?;
            let r = w.vacuum(retain_ms).context("vacuuming")?;
            println!(
                "vacuum: {} files ({} bytes) removed more than {retain} h ago deleted{}",
                r.files,
                r.bytes,
                r.version
                    .map(|v| format!(", commit {v}"))
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Lake {
            cmd: LakeCmd::Check { lake, json },
        } => {
            let lake = vigie::catalog::open_existing(&lake)
                .with_context(|| format!("opening lake {}", lake.display()))?;
            let checks = lake.check_delta().context("checking the Delta logs")?;
            let problems: usize = checks.iter().map(|c| c.problems.len()).sum();
            if json {
                println!("{}", serde_json::to_string_pretty(&checks)?);
            } else {
                for c in &checks {
                    println!(
                        "{:<16} delta {:>6} vigie {:>6} files {:>7} behind {:>3} {}",
                        c.table,
                        c.delta_version
                            .map_or_else(|| "-".into(), |v| v.to_string()),
                        c.vigie_version
                            .map_or_else(|| "-".into(), |v| v.to_string()),
                        c.files,
                        c.behind,
                        if c.problems.is_empty() {
                            "ok"
                        } else {
                            "PROBLEMS"
                        }
                    );
                    for p in &c.problems {
                        println!("  {p}");
                    }
                }
                println!("lake check: {} tables, {problems} problems", checks.len());
            }
            Ok(if problems == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Sql {
            lake,
            file,
            format,
            timeout,
            memory_mb,
            as_of,
            query,
        } => {
            let limits = vigie::sql::QueryLimits {
                memory_bytes: memory_mb.clamp(1, 1 << 20).saturating_mul(1 << 20),
                timeout: std::time::Duration::from_secs(timeout.clamp(1, 86_400)),
                max_rows: None,
            };
            cli::sql::run(&lake, query, file, format, limits, as_of.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay {
            lake,
            threads,
            report_json,
        } => {
            let lake_dir = lake;
            let lake = vigie::catalog::open_existing(&lake_dir)
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

/// `vigie verify`: exit 0 all pass, 1 a check failed, 2 unusable input.
fn verify(
    file: Option<PathBuf>,
    game: Option<String>,
    lake: Option<PathBuf>,
    json: bool,
) -> Result<ExitCode> {
    use vigie::replay::verify::{verify_file, verify_in_lake};
    let verdicts = match (&file, &lake, &game) {
        (Some(path), None, _) => match verify_file(path, game.as_deref()) {
            Ok(v) => {
                for s in &v.skipped_lines {
                    eprintln!("skipped {s}");
                }
                v.verdicts
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        (None, Some(dir), Some(id)) => {
            let lake = vigie::catalog::open_existing(dir)
                .with_context(|| format!("opening lake {}", dir.display()))?;
            match verify_in_lake(&lake, id) {
                Ok(v) => vec![v],
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            }
        }
        _ => {
            eprintln!("error: give a log FILE, or --lake DIR with --game ID");
            return Ok(ExitCode::from(2));
        }
    };
    let failed = verdicts.iter().any(|v| v.failed());
    if json {
        println!("{}", serde_json::to_string_pretty(&verdicts)?);
    } else {
        for v in &verdicts {
            print!("{}", v.to_text());
        }
        let bad = verdicts.iter().filter(|v| v.failed()).count();
        println!(
            "verify: {} games, {} pass, {} fail",
            verdicts.len(),
            verdicts.len() - bad,
            bad
        );
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
