//! `vigie report`: generates the compliance audit report of a period, verifies a bundle (`report verify`), or calibrates the randomness battery (`report calibrate`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;

use super::Ctx;

/// Arguments of `vigie report`: a subcommand, or the period of a report to generate.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReportCommand {
    #[command(subcommand)]
    verify: Option<ReportCmd>,
    #[command(flatten)]
    args: ReportArgs,
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
    Calibrate(super::calibrate::CalibrateArgs),
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

impl ReportCommand {
    /// Runs `vigie report` (exit 1 when `report verify` finds the bundle changed).
    pub fn run(self, ctx: &Ctx) -> Result<ExitCode> {
        match self {
            Self {
                verify: Some(ReportCmd::Verify { dir }),
                ..
            } => verify(&dir),
            Self {
                verify: Some(ReportCmd::Calibrate(args)),
                ..
            } => {
                super::calibrate::calibrate(&args, ctx.progress)?;
                Ok(ExitCode::SUCCESS)
            }
            Self { verify: None, args } => generate(args),
        }
    }
}

/// `vigie report verify DIR`: exit 0 when the bundle is intact, 1 otherwise.
fn verify(dir: &Path) -> Result<ExitCode> {
    let check =
        vigie::report::verify(dir).with_context(|| format!("verifying {}", dir.display()))?;
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

/// `vigie report --from DATE --to DATE --out DIR`: writes the bundle and prints its summary.
fn generate(args: ReportArgs) -> Result<ExitCode> {
    let (Some(from), Some(to), Some(out)) = (args.from, args.to, args.out) else {
        anyhow::bail!("give --from DATE --to DATE --out DIR (or `report verify DIR`)");
    };
    let lake = super::open_existing(&args.lake)?;
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
