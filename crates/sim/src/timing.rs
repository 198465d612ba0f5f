//! Think times: log-normal for people (fast on forced moves, slower in complex positions, always inside the clock for honest players), near-constant for bots, near the limit for stallers.

use super::population::{Account, Behaviour};
use super::rng::Rng;

/// How hard a decision is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Only one legal action.
    Forced,
    /// A choice among `n` options (weighted by the game).
    Choice(usize),
}

/// Timing settings of a game kind.
#[derive(Debug, Clone, Copy)]
pub struct Clockwork {
    /// Median think time of an average player on an average decision (ms).
    pub median_ms: f64,
    /// Log-space spread.
    pub sigma: f64,
    /// The clock limit per action (ms).
    pub limit_ms: i64,
}

/// Shortest think time a person produces (ms).
pub const MIN_THINK_MS: i64 = 150;

impl Clockwork {
    /// The latest an honest action lands: a margin under the limit.
    pub fn honest_max(&self) -> i64 {
        (self.limit_ms - 700).max(MIN_THINK_MS + 1)
    }

    /// A think time for `acc` facing `load`; `stalling` when a staller is losing.
    pub fn think(&self, rng: &mut Rng, acc: &Account, load: Load, stalling: bool) -> i64 {
        if stalling && acc.behaviour == Behaviour::Staller {
            return self.limit_ms - rng.range(250, 2500);
        }
        if let Some((mean, sd)) = acc.bot_timing {
            // A subtle bot adds a human-looking pause now and then.
            if acc.bot_pause > 0.0 && rng.chance(acc.bot_pause) {
                let t = rng.lognormal(self.median_ms * 1.6, 0.5);
                return (t.round() as i64).clamp(MIN_THINK_MS, self.honest_max());
            }
            let t = mean * self.median_ms / 3000.0 + sd * rng.normal();
            return (t.round() as i64).clamp(MIN_THINK_MS, self.honest_max());
        }
        let factor = match load {
            Load::Forced => 0.22,
            Load::Choice(n) => 0.55 + 0.06 * (n.min(16) as f64),
        };
        let median = self.median_ms * acc.pace * factor;
        let t = rng.lognormal(median, acc.sigma.unwrap_or(self.sigma));
        (t.round() as i64).clamp(MIN_THINK_MS, self.honest_max())
    }

    /// A short delay for mechanical actions (clicking "roll", answering).
    pub fn click(&self, rng: &mut Rng, acc: &Account) -> i64 {
        if let Some((mean, sd)) = acc.bot_timing {
            let t = 0.4 * mean + 0.5 * sd * rng.normal();
            return (t.round() as i64).clamp(MIN_THINK_MS, self.honest_max());
        }
        let t = rng.lognormal(900.0 * acc.pace, 0.55);
        (t.round() as i64).clamp(MIN_THINK_MS, self.honest_max())
    }

    /// `elapsed_ms` of a timeout: at the limit or a few ms after.
    pub fn timeout_elapsed(&self, rng: &mut Rng) -> i64 {
        self.limit_ms + rng.range(0, 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::population::{BehaviourCounts, Population, Style};

    #[test]
    fn honest_times_stay_inside_the_clock() {
        let mut rng = Rng::new(11);
        let pop = Population::generate(
            &mut rng,
            60,
            BehaviourCounts::for_population(60, 0.05),
            Style::default(),
        );
        let c = Clockwork {
            median_ms: 4500.0,
            sigma: 0.6,
            limit_ms: 30_000,
        };
        for a in &pop.accounts {
            for n in [0, 1, 5, 30] {
                let load = if n == 0 {
                    Load::Forced
                } else {
                    Load::Choice(n)
                };
                for _ in 0..200 {
                    let t = c.think(&mut rng, a, load, false);
                    assert!((MIN_THINK_MS..=c.honest_max()).contains(&t));
                }
            }
        }
    }

    #[test]
    fn bots_are_regular() {
        let mut rng = Rng::new(2);
        let pop = Population::generate(
            &mut rng,
            60,
            BehaviourCounts::for_population(60, 0.05),
            Style::default(),
        );
        let Some(bot) = pop.accounts.iter().find(|a| a.behaviour == Behaviour::Bot) else {
            panic!("no bot")
        };
        let c = Clockwork {
            median_ms: 3000.0,
            sigma: 0.6,
            limit_ms: 30_000,
        };
        let xs: Vec<f64> = (0..500)
            .map(|i| {
                c.think(
                    &mut rng,
                    bot,
                    if i % 2 == 0 {
                        Load::Forced
                    } else {
                        Load::Choice(9)
                    },
                    false,
                ) as f64
            })
            .collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!(sd / mean < 0.1, "cv {}", sd / mean);
    }
}
