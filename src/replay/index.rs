//! The replay's index of the games it has replayed: open or closed, last event time, and which games used each seed and commitment.
//!
//! The stream holds it for every game the lake has ever seen, so it is kept
//! small: a game costs its name, a few fixed-size fields and two 16-byte
//! digests (the first half of the SHA-256 of the seed and of the
//! commitment as logged) instead of the two 64-character texts. Two
//! different texts share a digest with probability 2^-128 per pair, which
//! is the only way a false `seed_reused` finding could come from it.

use std::collections::HashMap;

use sha2::{Digest as _, Sha256};

/// The first 16 bytes of the SHA-256 of a seed or commitment as logged.
type Digest = [u8; 16];

fn digest(text: &str) -> Digest {
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
        if let Some(old) = self.games.get(game).copied() {
            self.forget_keys(game, old);
        }
        for (map, key) in [
            (&mut self.by_commitment, slot.commitment),
            (&mut self.by_seed, slot.seed),
        ] {
            if let Some(k) = key {
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

    fn forget_keys(&mut self, game: &str, old: Slot) {
        for (map, key) in [
            (&mut self.by_commitment, old.commitment),
            (&mut self.by_seed, old.seed),
        ] {
            if let Some(k) = key
                && let Some(users) = map.get_mut(&k)
                && !users.remove(game)
            {
                map.remove(&k);
            }
        }
    }

    /// Games that used this commitment or this seed (a game using both is named twice).
    pub fn users<'a>(
        &'a self,
        commitment: Option<&str>,
        seed: Option<&str>,
    ) -> impl Iterator<Item = &'a str> {
        let c = commitment.and_then(|c| self.by_commitment.get(&digest(c)));
        let s = seed.and_then(|s| self.by_seed.get(&digest(s)));
        c.into_iter().chain(s).flat_map(Users::iter)
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
}
