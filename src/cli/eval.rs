//! `vigie eval`: scores the flags against the simulator's ground truth, precision and recall per behaviour.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::Ctx;

/// Arguments of `vigie eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The simulator's labels.json.
    #[arg(long)]
    labels: PathBuf,
    /// Lake directory.
    #[arg(long, default_value = "data/lake")]
    lake: PathBuf,
    /// Directory of rule files (for the behaviour each rule targets; default: the rules built into
    /// the binary).
    #[arg(long, value_name = "DIR")]
    rules: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

impl EvalArgs {
    /// Runs `vigie eval`.
    pub fn run(self, _ctx: &Ctx) -> Result<ExitCode> {
        let Self {
            labels,
            lake,
            rules,
            json,
        } = self;
        let lake = super::open_existing(&lake)?;
        let labels = vigie::detect::eval::Labels::read(&labels)?;
        let rules = vigie::detect::rules::RuleSource::from_arg(rules).load()?;
        let flags = vigie::detect::read_flags(&lake.snapshot()?)?;
        let ev = vigie::detect::eval::evaluate(&labels, &rules, &flags);
        if json {
            println!("{}", serde_json::to_string_pretty(&ev)?);
        } else {
            print!("{}", ev.to_text());
        }
        Ok(ExitCode::SUCCESS)
    }
}
