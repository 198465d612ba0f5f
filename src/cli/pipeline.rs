//! What several commands share: the `demo` main job's pipeline, serving, streaming, simulating and staff accounts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use vigie::ingest::{self, IngestOptions};
use vigie::lake::Lake;
use vigie::replay::run::ReplayOptions;
use vigie::serve::users::{Role, add_user};
use vigie::sim::{SimOptions, simulate};

/// Where a lake keeps its staff accounts.
pub fn users_file(lake: &Path) -> PathBuf {
    lake.join("_vigie/config/users.json")
}

/// `vigie simulate`.
pub fn run_simulate(out: &Path, opts: &SimOptions, progress: bool) -> Result<()> {
    let bar = if progress {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} simulate {pos} events {per_sec}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let report = simulate(opts, out, &|n| bar.set_position(n))
        .with_context(|| format!("simulating into {}", out.display()))?;
    bar.finish_and_clear();
    println!(
        "simulate: {} games ({} dropped past the window), {} events, {} malformed lines, {} faults, {} files; labels in {}",
        report.games,
        report.dropped_games,
        report.events,
        report.malformed,
        report.faults,
        report.files.len(),
        report.labels.display()
    );
    Ok(())
}

/// The dashboard's HTTP settings of `vigie serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeHttpArgs {
    /// Mark session cookies `Secure`, so that browsers send them over HTTPS only (set it when a
    /// TLS proxy is in front). Default: on, unless the dashboard listens on a loopback address.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub secure_cookies: Option<bool>,
    /// Seconds a client has to send a request's headers; it also closes idle kept-alive connections.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub http_header_timeout: u64,
    /// HTTP connections open at once (when all are taken, the oldest one without a request makes room).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub http_max_connections: u64,
}

impl Default for ServeHttpArgs {
    fn default() -> Self {
        let limits = vigie::serve::http::HttpLimits::default();
        ServeHttpArgs {
            secure_cookies: None,
            http_header_timeout: limits.header_timeout.as_secs(),
            http_max_connections: limits.max_connections as u64,
        }
    }
}

impl ServeHttpArgs {
    /// Whether cookies are marked `Secure` for a dashboard on `addr`.
    pub fn secure_cookies_on(&self, addr: SocketAddr) -> bool {
        self.secure_cookies.unwrap_or(!addr.ip().is_loopback())
    }

    /// The connection limits.
    pub fn limits(&self) -> vigie::serve::http::HttpLimits {
        vigie::serve::http::HttpLimits {
            header_timeout: std::time::Duration::from_secs(self.http_header_timeout),
            max_connections: self.http_max_connections as usize,
            ..vigie::serve::http::HttpLimits::default()
        }
    }
}

/// The dashboard over a lake (and the PostgreSQL endpoint when `pg` is given), until Ctrl-C or SIGTERM.
pub async fn serve(
    lake_dir: &Path,
    addr: SocketAddr,
    users: PathBuf,
    pg: Option<SocketAddr>,
    push: Option<vigie::stream::push::PushConfig>,
    sql: &crate::cli::sql::ServeSqlArgs,
    http: &ServeHttpArgs,
) -> Result<()> {
    let lake = super::open_existing(lake_dir)?;
    let config = vigie::serve::Config {
        addr,
        users_file: users.clone(),
        secure_cookies: http.secure_cookies_on(addr),
        ..vigie::serve::Config::default()
    };
    let data = Arc::new(vigie::serve::lake_data::LakeData::new(lake).with_limits(sql.limits()));
    let state = vigie::serve::AppState::new(config, data).map_err(|e| anyhow::anyhow!("{e}"))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let pg_task = match pg {
        Some(pg_addr) => {
            let pg_listener = tokio::net::TcpListener::bind(pg_addr)
                .await
                .with_context(|| format!("binding {pg_addr}"))?;
            let mut cfg = vigie::sql::pg::PgConfig::new(lake_dir.to_path_buf(), users);
            cfg.limits = sql.limits();
            cfg.max_connections = sql.pg_max_connections as usize;
            cfg.handshake_timeout = std::time::Duration::from_secs(sql.pg_handshake_timeout);
            println!(
                "serve: PostgreSQL endpoint on {} (analyst and admin accounts, password)",
                pg_listener.local_addr().unwrap_or(pg_addr)
            );
            Some(tokio::spawn(vigie::sql::pg::serve(
                pg_listener,
                cfg,
                stopped(stop_rx.clone()),
            )))
        }
        None => None,
    };
    let mut app = vigie::serve::router(state);
    let mut pushes = None;
    if let Some(push) = push {
        println!("serve: POST /ingest enabled (bearer token)");
        let (router, handle) = vigie::stream::push::router(push);
        pushes = Some(handle);
        // The app's security headers are layered on its own routes only: the push router gets them here.
        app = app.merge(router.layer(axum::middleware::from_fn(
            vigie::serve::with_security_headers,
        )));
    }
    // The last line of the start-up: scripts wait for it.
    println!(
        "serve: dashboard on http://{}/ (lake {})",
        listener.local_addr().unwrap_or(addr),
        lake_dir.display()
    );
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let served = vigie::serve::http::serve_on(listener, app, http.limits(), stopped(stop_rx)).await;
    let pg = match pg_task {
        Some(t) => t.await.context("PostgreSQL endpoint").and_then(|r| Ok(r?)),
        None => Ok(()),
    };
    if let Some(pushes) = pushes {
        // What was pushed is replayed and detected, and the small files merged, before the end,
        // whatever ended the other endpoints.
        println!("serve: finishing the replay and detection of the pushes");
        tokio::task::spawn_blocking(move || pushes.finish())
            .await
            .context("the push endpoint's last pass")?;
    }
    served?;
    pg?;
    println!("serve: stopped");
    Ok(())
}

/// Runs `vigie stream` until SIGTERM or Ctrl-C (the batch under way is finished and committed).
pub fn stream(
    lake: &Lake,
    opts: &vigie::stream::StreamOptions,
) -> Result<vigie::stream::StreamReport> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let flag = Arc::clone(&stop);
    let _signals = std::thread::spawn(move || {
        rt.block_on(shutdown_signal());
        tracing::info!("stop requested: finishing the batch under way");
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    tracing::info!(follow = %opts.follow.display(), "streaming");
    vigie::stream::run(lake, opts, &stop).context("streaming")
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// `vigie admin add-user`.
pub fn add_staff(lake_dir: &Path, name: &str, role: &str, password: &str) -> Result<()> {
    let role = Role::parse(role).with_context(|| {
        format!("unknown role {role:?}: reviewer, compliance, analyst or admin")
    })?;
    let path = users_file(lake_dir);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let outcome = add_user(&path, name, role, password).map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "admin: user {name} ({}) {outcome:?} in {}",
        role.as_str(),
        path.display()
    );
    Ok(())
}

/// A random password for the demo account.
/// Fails when the OS random source does: a guessable password is never handed out.
fn demo_password() -> Result<String> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("the OS random source failed: {e}"))
        .context("making the demo reviewer's password")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// How much the demo simulates and analyses.
pub struct DemoSize {
    pub days: u32,
    pub games_per_day: u32,
    /// Games the engine analysis judges at most.
    pub analyse_games: usize,
}

/// The main job: a week of simulated traffic through the whole pipeline, then the dashboard.
pub fn demo(
    lake_dir: &Path,
    data_dir: &Path,
    addr: SocketAddr,
    size: &DemoSize,
    serve_after: bool,
) -> Result<()> {
    let progress = true;
    let sim_dir = data_dir.join("sim");
    let opts = SimOptions {
        seed: 7,
        days: size.days,
        games_per_day: size.games_per_day,
        accounts: size.games_per_day.max(200),
        ..SimOptions::default()
    };
    if sim_dir.join("labels.json").exists() {
        println!("demo: reusing the simulated logs in {}", sim_dir.display());
    } else {
        run_simulate(&sim_dir, &opts, progress)?;
    }
    let lake = super::open(lake_dir)?;
    let r = ingest::ingest_paths(
        &lake,
        std::slice::from_ref(&sim_dir),
        &IngestOptions {
            progress,
            ..Default::default()
        },
    )
    .context("ingesting")?;
    println!("{}", r.summary_line());
    let r = vigie::replay::run::run(
        &lake,
        &ReplayOptions {
            progress,
            ..Default::default()
        },
    )
    .context("replaying")?;
    println!("{}", r.summary_line());
    let rules = vigie::detect::rules::RuleSource::Builtin;
    let r = vigie::detect::run(&lake, &rules, &Default::default()).context("detecting")?;
    println!("{}", r.summary_line());
    // The engine analysis of the flagged accounts' rated draughts games (and of unusual win rates),
    // with a sample of the others as the platform's baseline; a smaller budget than `vigie
    // analyse`'s default and at most `--analyse-games` games (150 by default), so that the demo stays a few minutes.
    // Then detection again, which reads it.
    let a = super::analyse::analyse(
        &lake,
        &vigie::analysis::AnalyseOptions {
            nodes: 20_000,
            max_games: Some(size.analyse_games),
            ..Default::default()
        },
        progress,
    )?;
    println!("{}", a.summary_line());
    if a.version.is_some() {
        let r = vigie::detect::run(&lake, &rules, &Default::default()).context("detecting")?;
        println!("{}", r.summary_line());
    }
    let labels = vigie::detect::eval::Labels::read(&sim_dir.join("labels.json"))?;
    let rules = rules.load()?;
    let flags = vigie::detect::read_flags(&lake.snapshot()?)?;
    let ev = vigie::detect::eval::evaluate(&labels, &rules, &flags);
    for c in &ev.classes {
        let labelled = c.true_positives + c.false_negatives;
        if labelled == 0 && c.false_positives == 0 {
            // Precision and recall of an empty class are 1 by convention: say what they rest on.
            println!("eval: {:<16} no labelled account, no flag", c.behaviour);
        } else {
            println!(
                "eval: {:<16} precision {:.3} recall {:.3} ({} of {} found, {} false flags)",
                c.behaviour, c.precision, c.recall, c.true_positives, labelled, c.false_positives
            );
        }
    }
    let password = demo_password()?;
    add_staff(lake_dir, "demo", "reviewer", &password)?;
    println!("demo: reviewer login: demo / {password}");
    if serve_after {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let sql = crate::cli::sql::ServeSqlArgs {
            sql_timeout: 30,
            sql_memory_mb: 512,
            pg_max_connections: 16,
            pg_handshake_timeout: 5,
        };
        rt.block_on(serve(
            lake_dir,
            addr,
            users_file(lake_dir),
            None,
            None,
            &sql,
            &ServeHttpArgs::default(),
        ))?;
    }
    Ok(())
}
