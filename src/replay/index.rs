//! The replay's index of the games it has replayed: open or closed, last event time, and which games used each seed and commitment.
//!
//! A batch run reads it whole from the `games` table. The stream keeps it
//! between runs and lets closed games go once they are older than a
//! retention period ([`GameIndex::evict`]); the index is then *partial*, and
//! a run first recalls from the lake the old games it needs
//! ([`super::recall`]). What stays is kept small: a game costs its name, a
//! few fixed-size fields and two 16-byte digests (the first half of the
//! SHA-256 of the seed and of the commitment as logged) instead of the two
//! 64-character texts. Two different texts share a digest with probability
//! 2^-128 per pair, which is the only way a false `seed_reused` finding
//! could come from it.
//!
//! Invariant: for every digest of a game it holds, the index lists every
//! game of the lake that used it. Eviction keeps a digest's list while one
//! of its games is still held, and recall looks up the digests of the games
//! it puts back.

use std::collections::HashMap;

use sha2::{Digest as _, Sha256};

/// The first 16 bytes of the SHA-256 of a seed or commitment as logged.
type Digest = [u8; 16];

pub(crate) fn digest(text: &str) -> Digest {
    let full = Sha256::digest(text.as_bytes());
    let mut d = [0u8; 16];
    d.copy_from_slice(&full[..16]);
    d
}

/// What the index knows of one game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub closed: bool,
    /// Timestamp of the game's last event (ms).
    pub last_ts: i64,
    commitment: Option<Digest>,
    seed: Option<Digest>,
}

/// The games that used one seed or commitment: nearly always one.
#[derive(Debug, Clone)]
enum Users {
    One(Box<str>),
    Many(Vec<Box<str>>),
}

impl Users {
    fn iter(&self) -> impl Iterator<Item = &str> {
        let games = match self {
            Users::One(g) => std::slice::from_ref(g),
            Users::Many(v) => v.as_slice(),
        };
        games.iter().map(|g| &**g)
    }

    fn add(&mut self, game: &str) {
        if self.iter().any(|g| g == game) {
            return;
        }
        match self {
            Users::One(first) => {
                *self = Users::Many(vec![std::mem::take(first), game.into()]);
            }
            Users::Many(v) => v.push(game.into()),
        }
    }

    /// Removes `game`; false when none is left.
    fn remove(&mut self, game: &str) -> bool {
        match self {
            Users::One(g) => &**g != game,
            Users::Many(v) => {
                v.retain(|g| &**g != game);
                match v.len() {
                    0 => false,
                    1 => {
                        let last = v.remove(0);
                        *self = Users::One(last);
                        true
                    }
                    _ => true,
                }
            }
        }
    }
}

/// Every replayed game by name, and the games of every seed and commitment.
#[derive(Debug, Clone, Default)]
pub struct GameIndex {
    games: HashMap<Box<str>, Slot>,
    by_commitment: HashMap<Digest, Users>,
    by_seed: HashMap<Digest, Users>,
    /// Games were evicted: a game not held may still be in the lake.
    partial: bool,
}

impl GameIndex {
    pub fn len(&self) -> usize {
        self.games.len()
    }

    pub fn is_empty(&self) -> bool {
        self.games.is_empty()
    }

    pub fn get(&self, game: &str) -> Option<Slot> {
        self.games.get(game).copied()
    }

    pub fn contains(&self, game: &str) -> bool {
        self.games.contains_key(game)
    }

    /// Every game with its slot, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Slot)> {
        self.games.iter().map(|(g, s)| (&**g, *s))
    }

    /// Records (or replaces) what is known of `game`.
    pub fn insert(
        &mut self,
        game: &str,
        closed: bool,
        last_ts: i64,
        commitment: Option<&str>,
        seed: Option<&str>,
    ) {
        let slot = Slot {
            closed,
            last_ts,
            commitment: commitment.map(digest),
            seed: seed.map(digest),
        };
        let old = self.games.get(game).copied();
        for (map, before, now) in [
            (
                &mut self.by_commitment,
                old.and_then(|o| o.commitment),
                slot.commitment,
            ),
            (&mut self.by_seed, old.and_then(|o| o.seed), slot.seed),
        ] {
            if before != now
                && let Some(k) = before
                && let Some(users) = map.get_mut(&k)
            {
                // Gone when no other game uses it, or none that is held (evicted games are
                // listed only for the held games that share their digest).
                if !users.remove(game) || users.iter().all(|g| !self.games.contains_key(g)) {
                    map.remove(&k);
                }
            }
            if let Some(k) = now {
                match map.get_mut(&k) {
                    Some(users) => users.add(game),
                    None => {
                        map.insert(k, Users::One(game.into()));
                    }
                }
            }
        }
        match self.games.get_mut(game) {
            Some(s) => *s = slot,
            None => {
                self.games.insert(game.into(), slot);
            }
        }
    }

    /// Whether `game` is in the index with exactly this commitment and seed, and no other game
    /// of the index used either of them.
    pub fn alone(&self, game: &str, commitment: Option<&str>, seed: Option<&str>) -> bool {
        self.games
            .get(game)
            .is_some_and(|s| s.commitment == commitment.map(digest) && s.seed == seed.map(digest))
            && self.users(commitment, seed).all(|g| g == game)
    }

    /// Games that used this commitment or this seed (a game using both is named twice).
    pub fn users<'a>(
        &'a self,
        commitment: Option<&str>,
        seed: Option<&str>,
    ) -> impl Iterator<Item = &'a str> + use<'a> {
        let c = commitment.and_then(|c| self.by_commitment.get(&digest(c)));
        let s = seed.and_then(|s| self.by_seed.get(&digest(s)));
        c.into_iter().chain(s).flat_map(Users::iter)
    }

    /// Whether games were let go ([`GameIndex::evict`]): a game not held may be in the lake.
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// Lets go of the closed games whose last event is before `before` (ms); returns how many.
    ///
    /// A digest's list of games stays while one of its games is still held, so that a held
    /// game always finds every partner of its seed and commitment.
    pub fn evict(&mut self, before: i64) -> usize {
        let gone: Vec<(Box<str>, Slot)> = self
            .games
            .iter()
            .filter(|(_, s)| s.closed && s.last_ts < before)
            .map(|(g, s)| (g.clone(), *s))
            .collect();
        for (g, _) in &gone {
            self.games.remove(g);
        }
        for (_, slot) in &gone {
            for (map, key) in [
                (&mut self.by_commitment, slot.commitment),
                (&mut self.by_seed, slot.seed),
            ] {
                if let Some(k) = key
                    && map
                        .get(&k)
                        .is_some_and(|u| u.iter().all(|g| !self.games.contains_key(g)))
                {
                    map.remove(&k);
                }
            }
        }
        if !gone.is_empty() {
            self.partial = true;
        }
        gone.len()
    }

    /// Digests listed (seed and commitment), for the stream's debug log (memory).
    pub fn digests(&self) -> usize {
        self.by_commitment.len() + self.by_seed.len()
    }

    /// Trims spare capacity (after a rebuild, or when many games were replaced).
    pub fn shrink(&mut self) {
        self.games.shrink_to_fit();
        self.by_commitment.shrink_to_fit();
        self.by_seed.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(ix: &GameIndex, c: Option<&str>, s: Option<&str>) -> Vec<String> {
        let mut v: Vec<String> = ix.users(c, s).map(String::from).collect();
        v.sort();
        v
    }

    #[test]
    fn seeds_and_commitments_find_every_game_that_used_them() {
        let mut ix = GameIndex::default();
        ix.insert("g1", true, 10, Some("c1"), Some("s1"));
        ix.insert("g2", false, 20, Some("c2"), Some("s1"));
        ix.insert("g3", false, 30, Some("c1"), None);
        assert_eq!(users(&ix, Some("c1"), None), ["g1", "g3"]);
        assert_eq!(users(&ix, None, Some("s1")), ["g1", "g2"]);
        assert_eq!(users(&ix, Some("c2"), Some("s1")), ["g1", "g2", "g2"]);
        assert!(users(&ix, Some("s1"), Some("c1")).is_empty());
        assert_eq!(ix.len(), 3);
        assert_eq!(
            ix.get("g2"),
            Some(Slot {
                closed: false,
                last_ts: 20,
                commitment: Some(digest("c2")),
                seed: Some(digest("s1")),
            })
        );
    }

    #[test]
    fn replacing_a_game_moves_it_off_its_old_seed() {
        let mut ix = GameIndex::default();
        ix.insert("g1", false, 10, Some("c1"), None);
        ix.insert("g2", false, 10, Some("c1"), None);
        ix.insert("g3", false, 10, Some("c1"), None);
        ix.insert("g2", true, 50, Some("c9"), Some("s9"));
        assert_eq!(users(&ix, Some("c1"), None), ["g1", "g3"]);
        assert_eq!(users(&ix, Some("c9"), Some("s9")), ["g2", "g2"]);
        ix.insert("g1", true, 60, None, None);
        ix.insert("g3", true, 60, None, None);
        assert!(users(&ix, Some("c1"), None).is_empty());
        assert!(!ix.by_commitment.contains_key(&digest("c1")));
        // Re-inserting the same game with the same seed names it once.
        ix.insert("g2", true, 70, Some("c9"), Some("s9"));
        assert_eq!(users(&ix, Some("c9"), None), ["g2"]);
        assert!(ix.get("g2").is_some_and(|s| s.closed && s.last_ts == 70));
    }

    #[test]
    fn eviction_keeps_a_shared_digest_while_one_of_its_games_is_held() {
        let mut ix = GameIndex::default();
        ix.insert("old", true, 10, Some("c1"), Some("s1"));
        ix.insert("old-alone", true, 10, Some("c2"), Some("s2"));
        ix.insert("open", false, 5, Some("c1"), None);
        ix.insert("recent", true, 100, Some("c3"), Some("s1"));
        assert!(!ix.is_partial());
        assert_eq!(ix.evict(50), 2);
        assert!(ix.is_partial());
        assert!(!ix.contains("old") && !ix.contains("old-alone"));
        // An open game is never let go, however old.
        assert!(ix.contains("open") && ix.contains("recent"));
        // Held games still find the evicted game that shares their seed or commitment.
        assert_eq!(users(&ix, Some("c1"), None), ["old", "open"]);
        assert_eq!(users(&ix, None, Some("s1")), ["old", "recent"]);
        // A digest no held game uses is gone.
        assert!(users(&ix, Some("c2"), Some("s2")).is_empty());
        assert_eq!(ix.digests(), 3);
        // Once the last holder goes, so does the digest.
        ix.insert("recent", true, 100, Some("c3"), None);
        assert_eq!(ix.evict(200), 1);
        assert!(users(&ix, None, Some("s1")).is_empty());
        assert_eq!(ix.digests(), 1);
    }
}
