//! `vigie report calibrate`: the randomness battery over many seeds of honest simulated games, with or without an injected bias.

use anyhow::{Context, Result};

use vigie::report::calibrate::{Bias, CalibrationOptions, run};

/// Arguments of `vigie report calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// Seeds (independent runs of the whole battery).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub seeds: u32,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub first_seed: u64,
    /// Least Ludo rolls per seed.
    #[arg(long, default_value_t = 5_000_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub rolls: u64,
    /// Least Belote shuffles per seed.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub deals: u64,
    /// Least Medieval duels per seed.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub duels: u64,
    /// Family-wise significance level, as in `vigie report`.
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// A bias injected into the counted outcomes: face=P (sixes), card=P (7S on top) or duel=P (duels won).
    #[arg(long, value_parser = Bias::parse)]
    pub bias: Option<Bias>,
    /// Seeds run at once (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print the whole result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the calibration and prints its table (or JSON) and a summary line.
pub fn calibrate(args: &CalibrateArgs, progress: bool) -> Result<()> {
    anyhow::ensure!(
        args.alpha > 0.0 && args.alpha < 1.0,
        "--alpha must be in (0, 1)"
    );
    let opts = CalibrationOptions {
        seeds: args.seeds,
        first_seed: args.first_seed,
        rolls: args.rolls,
        deals: args.deals,
        duels: args.duels,
        alpha: args.alpha,
        bias: args.bias,
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let bar = if progress && !args.json {
        indicatif::ProgressBar::new(u64::from(args.seeds))
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("calibrate {bar:30} {pos}/{len} seeds {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let result = run(&opts, &|n| bar.set_position(u64::from(n))).context("calibrating")?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(());
    }
    print!("{}", result.table());
    let detection = match result.detection() {
        Some((seen, predicted)) => {
            format!(
                ", bias detected on {:.1} % of seeds (predicted power {:.1} %)",
                100.0 * seen,
                100.0 * predicted
            )
        }
        None => String::new(),
    };
    println!(
        "calibrate: {} seeds at alpha {} in {:.0} s, the battery failed on {}{detection}",
        args.seeds,
        args.alpha,
        started.elapsed().as_secs_f64(),
        result.battery_failed,
    );
    Ok(())
}
