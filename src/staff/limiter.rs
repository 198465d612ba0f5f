//! Failed-login counters per key (an address, a user name), shared by the dashboard's login form and the PostgreSQL endpoint.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Failed-login counters per key (`ip:…`, `user:…`), and the bound on password checks running at
/// once.
#[derive(Debug)]
pub struct LoginLimiter {
    max: u32,
    window: Duration,
    failures: Mutex<HashMap<String, Vec<Instant>>>,
    checks: tokio::sync::Semaphore,
}

/// Password checks (Argon2, 19 MiB each) that may run at once, per limiter: more wait.
const CHECKS_AT_ONCE: usize = 4;

impl LoginLimiter {
    /// At most `max` failures per key within `window`.
    pub fn new(max: u32, window: Duration) -> LoginLimiter {
        LoginLimiter {
            max: max.max(1),
            window,
            failures: Mutex::new(HashMap::new()),
            checks: tokio::sync::Semaphore::new(CHECKS_AT_ONCE),
        }
    }

    /// Counts an attempt as a failure against every key before its password is checked, so that
    /// attempts sent together cannot all pass the limit before the first is refused; the
    /// attempt's mark, for [`LoginLimiter::withdraw`]. When a key is over the limit, nothing is
    /// counted and the error says how long until it is not.
    pub fn attempt(&self, keys: &[String]) -> Result<Instant, Duration> {
        let now = Instant::now();
        let mut map = lock(&self.failures);
        if let Some(wait) = self.over(&mut map, keys, now) {
            return Err(wait);
        }
        self.record(&mut map, keys, now);
        Ok(now)
    }

    /// Takes back the count of the attempt marked `at` from every key (it succeeded, or its
    /// password could not be checked).
    pub fn withdraw(&self, keys: &[String], at: Instant) {
        let mut map = lock(&self.failures);
        for k in keys {
            if let Some(v) = map.get_mut(k)
                && let Some(i) = v.iter().position(|t| *t == at)
            {
                v.swap_remove(i);
            }
        }
    }

    /// Waits for a turn to check a password: at most a few checks run at once, whatever the
    /// number of attempts (each holds 19 MiB while it runs).
    pub async fn check_turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.checks.acquire().await.ok()
    }

    /// When any key is over the limit: how long until it is not.
    pub fn blocked(&self, keys: &[String]) -> Option<Duration> {
        self.over(&mut lock(&self.failures), keys, Instant::now())
    }

    fn over(
        &self,
        map: &mut HashMap<String, Vec<Instant>>,
        keys: &[String],
        now: Instant,
    ) -> Option<Duration> {
        let mut wait: Option<Duration> = None;
        for k in keys {
            if let Some(v) = map.get_mut(k) {
                v.retain(|t| now.duration_since(*t) < self.window);
                if v.len() >= self.max as usize {
                    let oldest = v.iter().min().copied().unwrap_or(now);
                    let left = self.window.saturating_sub(now.duration_since(oldest));
                    wait = Some(wait.map_or(left, |w| w.max(left)));
                }
            }
        }
        wait
    }

    /// Records a failure against every key.
    pub fn fail(&self, keys: &[String]) {
        self.record(&mut lock(&self.failures), keys, Instant::now());
    }

    fn record(&self, map: &mut HashMap<String, Vec<Instant>>, keys: &[String], now: Instant) {
        if map.len() > 100_000 {
            let window = self.window;
            map.retain(|_, v| v.iter().any(|t| now.duration_since(*t) < window));
        }
        for k in keys {
            let v = map.entry(k.clone()).or_default();
            v.retain(|t| now.duration_since(*t) < self.window);
            v.push(now);
        }
    }

    /// Forgets the failures of one key (a successful login of that user).
    pub fn reset(&self, key: &str) {
        lock(&self.failures).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_made_together_are_counted_before_their_passwords_are_checked() {
        let l = LoginLimiter::new(3, Duration::from_secs(60));
        let keys = ["ip:1".to_owned(), "user:a".to_owned()];
        // Eight attempts in flight at once: three get a turn, whatever their passwords.
        let marks: Vec<_> = (0..8).map(|_| l.attempt(&keys)).collect();
        assert_eq!(marks.iter().filter(|m| m.is_ok()).count(), 3);
        assert!(marks[3..].iter().all(|m| m.is_err()));
        // One of them succeeds: its count is taken back, the user's failures forgotten.
        let Ok(first) = marks[0] else {
            panic!("the first attempt had a turn")
        };
        l.withdraw(&keys, first);
        l.reset("user:a");
        assert!(l.blocked(&["user:a".to_owned()]).is_none());
        assert!(l.attempt(&keys).is_ok(), "the address has 2 failures left");
        assert!(l.attempt(&keys).is_err());
    }
}
