//! Failed-login counters per key (an address, a user name), shared by the dashboard's login form and the PostgreSQL endpoint.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Failed-login counters per key (`ip:…`, `user:…`), one attempt at a time per key, and the bound
/// on password checks running at once.
#[derive(Debug)]
pub struct LoginLimiter {
    max: u32,
    window: Duration,
    failures: Mutex<HashMap<String, Vec<Instant>>>,
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    checks: tokio::sync::Semaphore,
}

/// Password checks (Argon2, 19 MiB each) that may run at once, per limiter: more wait.
const CHECKS_AT_ONCE: usize = 4;

/// Characters of a user name a key holds (a longer name is keyed by its start: no account has
/// one, and the limiter keeps its keys).
pub const MAX_KEY_NAME: usize = 128;

/// Keys whose turns are kept before the unused ones are dropped.
const TURNS_KEPT: usize = 10_000;

/// A login attempt's turn on each of its keys ([`LoginLimiter::turn`]), held until it is judged.
#[derive(Debug)]
pub struct Turn {
    _held: Vec<tokio::sync::OwnedMutexGuard<()>>,
}

impl LoginLimiter {
    /// At most `max` failures per key within `window`.
    pub fn new(max: u32, window: Duration) -> LoginLimiter {
        LoginLimiter {
            max: max.max(1),
            window,
            failures: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
            checks: tokio::sync::Semaphore::new(CHECKS_AT_ONCE),
        }
    }

    /// Waits for the turn of an attempt on `keys`: attempts on a key are judged one after the
    /// other, so that attempts sent together cannot all pass [`LoginLimiter::blocked`] before the
    /// first failure is recorded, while correct ones sent together (a pool of connections) all
    /// get in. Taken in the keys' order, so that two attempts never wait for each other.
    pub async fn turn(&self, keys: &[String]) -> Turn {
        let mut keys: Vec<&String> = keys.iter().collect();
        keys.sort();
        keys.dedup();
        let locks: Vec<Arc<tokio::sync::Mutex<()>>> = {
            let mut turns = lock(&self.turns);
            if turns.len() > TURNS_KEPT {
                turns.retain(|_, t| Arc::strong_count(t) > 1);
            }
            keys.iter()
                .map(|k| Arc::clone(turns.entry((*k).clone()).or_default()))
                .collect()
        };
        let mut held = Vec::with_capacity(locks.len());
        for l in locks {
            held.push(l.lock_owned().await);
        }
        Turn { _held: held }
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

    /// Eight attempts with a wrong password sent together on one key: judged one after the
    /// other, three are checked and the others find the key over the limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn attempts_sent_together_are_judged_one_after_the_other() {
        let l = Arc::new(LoginLimiter::new(3, Duration::from_secs(60)));
        let keys = vec!["ip:1".to_owned(), "user:a".to_owned()];
        let tries = (0..8).map(|_| {
            let (l, keys) = (Arc::clone(&l), keys.clone());
            tokio::spawn(async move {
                let _turn = l.turn(&keys).await;
                if l.blocked(&keys).is_some() {
                    return false;
                }
                // The password check, slow as Argon2 is, while the others wait.
                tokio::time::sleep(Duration::from_millis(20)).await;
                l.fail(&keys);
                true
            })
        });
        let mut checked = 0;
        for t in tries {
            checked += usize::from(t.await.unwrap_or(false));
        }
        assert_eq!(checked, 3);
    }
}
