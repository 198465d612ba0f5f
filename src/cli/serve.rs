//! `vigie serve`: the trust-and-safety dashboard over a lake, with the optional PostgreSQL endpoint and `POST /ingest`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::Ctx;

/// Arguments of `vigie serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
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
    /// Directory of detection rule files for the replay and detection that follow a push (default:
    /// the rules built into the binary).
    #[arg(long, value_name = "DIR", requires = "ingest_token_file")]
    rules: Option<PathBuf>,
    /// Hours the vacuum beside the push endpoint (at least hourly) keeps the files that commits
    /// removed (time travel needs them); as `vigie stream --vacuum-retain`.
    #[arg(long, default_value_t = 168, requires = "ingest_token_file")]
    vacuum_retain: u64,
    /// Minutes the vacuum beside the push endpoint keeps the removed files of the tables every
    /// detection pass rewrites whole (account_features, pair_features, flags); as `vigie stream
    /// --vacuum-retain-rewrites`.
    #[arg(long, default_value_t = 5, requires = "ingest_token_file")]
    vacuum_retain_rewrites: u64,
    /// Hours the logs keep their commits, beside the push endpoint; as `vigie stream
    /// --vacuum-log-retain`.
    #[arg(long, default_value_t = 168, requires = "ingest_token_file")]
    vacuum_log_retain: u64,
    /// Least seconds between the starts of two detection runs after pushes (0: as soon as a
    /// replay lands); as `vigie stream --detect-interval`.
    #[arg(long, default_value_t = 0.0, requires = "ingest_token_file")]
    detect_interval: f64,
    #[command(flatten)]
    sql: super::sql::ServeSqlArgs,
    #[command(flatten)]
    http: super::pipeline::ServeHttpArgs,
}

impl ServeArgs {
    /// Runs `vigie serve` until Ctrl-C or SIGTERM.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            lake,
            addr,
            users,
            pg,
            ingest_token_file,
            rules,
            vacuum_retain,
            vacuum_retain_rewrites,
            vacuum_log_retain,
            detect_interval,
            sql,
            http,
        } = self;
        let users = users.unwrap_or_else(|| super::pipeline::users_file(&lake));
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
                let mut push = vigie::stream::push::PushConfig::new(
                    lake.clone(),
                    &token,
                    vigie::detect::rules::RuleSource::from_arg(rules),
                );
                (push.vacuum_retain, push.rewrites_retain) =
                    super::stream::retention(vacuum_retain, vacuum_retain_rewrites);
                push.log_retain = super::stream::hours(vacuum_log_retain);
                push.detect_interval =
                    super::stream::seconds("detect-interval", detect_interval, 0.0)?;
                Some(push)
            }
            None => None,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        rt.block_on(super::pipeline::serve(
            &lake, addr, users, pg, push, &sql, &http,
        ))?;
        Ok(ExitCode::SUCCESS)
    }
}
