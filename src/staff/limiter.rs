//! Failed-login counters per key (an address, a user name), shared by the dashboard's login form and the PostgreSQL endpoint.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Failed-login counters per key (`ip:…`, `user:…`).
#[derive(Debug)]
pub struct LoginLimiter {
    max: u32,
    window: Duration,
    failures: Mutex<HashMap<String, Vec<Instant>>>,
}

impl LoginLimiter {
    /// At most `max` failures per key within `window`.
    pub fn new(max: u32, window: Duration) -> LoginLimiter {
        LoginLimiter {
            max: max.max(1),
            window,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// When any key is over the limit: how long until it is not.
    pub fn blocked(&self, keys: &[String]) -> Option<Duration> {
        let now = Instant::now();
        let mut map = lock(&self.failures);
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
        let now = Instant::now();
        let mut map = lock(&self.failures);
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
