//! The simulated player base: accounts with ip and device hashes, skill, pace and behaviour, and the groups (pairs, rings) some behaviours need.

use std::collections::BTreeSet;

use serde::Serialize;

use super::rng::Rng;

/// What an account does on the platform (the ground truth of `labels.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    /// Plays normally (the large majority).
    Honest,
    /// Sends illegal attempts the server rejects, then plays legally.
    TamperedClient,
    /// Leaves (page closed, disconnected) when clearly losing.
    RageQuit,
    /// Lets the clock run out when losing.
    Sitter,
    /// Moves only near the clock limit when losing.
    Staller,
    /// One of a pair: the dumper loses its stake to the receiver, at high stakes.
    ChipDumping,
    /// One of a pair trading quick wins in rated games.
    WinTrading,
    /// Very regular think times.
    Bot,
    /// One of a ring of 3-5 accounts sharing a device, playing each other often.
    SharedDevice,
}

impl Behaviour {
    /// Every behaviour, in label order.
    pub const ALL: [Behaviour; 9] = [
        Behaviour::Honest,
        Behaviour::TamperedClient,
        Behaviour::RageQuit,
        Behaviour::Sitter,
        Behaviour::Staller,
        Behaviour::ChipDumping,
        Behaviour::WinTrading,
        Behaviour::Bot,
        Behaviour::SharedDevice,
    ];

    /// The label text.
    pub fn as_str(self) -> &'static str {
        match self {
            Behaviour::Honest => "honest",
            Behaviour::TamperedClient => "tampered_client",
            Behaviour::RageQuit => "rage_quit",
            Behaviour::Sitter => "sitter",
            Behaviour::Staller => "staller",
            Behaviour::ChipDumping => "chip_dumping",
            Behaviour::WinTrading => "win_trading",
            Behaviour::Bot => "bot",
            Behaviour::SharedDevice => "shared_device",
        }
    }
}

/// A member's role in its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupRole {
    /// Chip dumping: loses to the partner.
    Dumper,
    /// Chip dumping: receives the partner's stakes.
    Receiver,
    /// Win trading: both sides alternate.
    Trader,
    /// Shared-device ring member.
    Member,
}

/// An account.
#[derive(Debug, Clone)]
pub struct Account {
    /// `acc-NNNNN`.
    pub id: String,
    /// Home ip hash `ip-xxxxxxxx`.
    pub ip: String,
    /// A second ip (mobile, travel) used in some games.
    pub alt_ip: Option<String>,
    /// Device hash `dv-xxxxxxxx`.
    pub device: String,
    /// 0 (weak) to 1 (strong).
    pub skill: f64,
    /// Relative frequency of play.
    pub activity: f64,
    /// Personal pace: multiplies the median think time.
    pub pace: f64,
    /// Ground-truth behaviour.
    pub behaviour: Behaviour,
    /// Index of the account's group in [`Population::groups`].
    pub group: Option<usize>,
    /// Role in the group.
    pub role: Option<GroupRole>,
    /// Bots: mean and standard deviation of the think time (ms).
    pub bot_timing: Option<(f64, f64)>,
}

/// A pair or ring of accounts acting together.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// `chip_dumping`, `win_trading` or `shared_device`.
    pub behaviour: Behaviour,
    /// Account indices (for chip dumping: dumper first, receiver second).
    #[serde(skip)]
    pub members: Vec<usize>,
    /// The shared device of a ring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// All accounts.
#[derive(Debug, Clone)]
pub struct Population {
    /// Accounts, in creation order.
    pub accounts: Vec<Account>,
    /// Pairs and rings.
    pub groups: Vec<Group>,
    /// Cumulative activity weights for weighted picks.
    cumulative: Vec<f64>,
}

/// How many accounts of each behaviour a population of `accounts` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BehaviourCounts {
    /// Accounts per individual behaviour (tampered, rage quit, sitter, staller, bot).
    pub individual: usize,
    /// Chip-dumping pairs.
    pub dump_pairs: usize,
    /// Win-trading pairs.
    pub trade_pairs: usize,
    /// Shared-device rings.
    pub rings: usize,
}

impl BehaviourCounts {
    /// The counts for a population and a behaviour rate (0 disables behaviours).
    pub fn for_population(accounts: usize, rate: f64) -> BehaviourCounts {
        if rate <= 0.0 {
            return BehaviourCounts {
                individual: 0,
                dump_pairs: 0,
                trade_pairs: 0,
                rings: 0,
            };
        }
        let a = accounts as f64;
        BehaviourCounts {
            individual: ((a * rate).round() as usize).max(2),
            dump_pairs: ((a * rate / 2.0).round() as usize).max(1),
            trade_pairs: ((a * rate / 2.0).round() as usize).max(1),
            rings: ((a * rate / 4.0).round() as usize).max(1),
        }
    }

    /// Accounts needed, rings counted at their largest size, plus room for honest players.
    pub fn accounts_needed(&self) -> usize {
        5 * self.individual + 2 * self.dump_pairs + 2 * self.trade_pairs + 5 * self.rings + 8
    }
}

fn hash_token(rng: &mut Rng, prefix: &str) -> String {
    format!("{prefix}-{}", rng.hex(4))
}

impl Population {
    /// Builds `n` accounts with behaviours from `counts`, deterministically from `rng`.
    pub fn generate(rng: &mut Rng, n: usize, counts: BehaviourCounts) -> Population {
        // Distinct account numbers, 5 digits while they fit.
        let (lo, hi) = if n <= 45_000 {
            (10_000u64, 99_999u64)
        } else {
            (1_000_000, 9_999_999)
        };
        let mut numbers = BTreeSet::new();
        let mut order = Vec::with_capacity(n);
        while order.len() < n {
            let v = lo + rng.below(hi - lo + 1);
            if numbers.insert(v) {
                order.push(v);
            }
        }
        let mut accounts: Vec<Account> = order
            .iter()
            .map(|num| {
                let skill = (0.5 + 0.2 * rng.normal()).clamp(0.02, 0.98);
                Account {
                    id: format!("acc-{num}"),
                    ip: hash_token(rng, "ip"),
                    alt_ip: if rng.chance(0.2) {
                        Some(hash_token(rng, "ip"))
                    } else {
                        None
                    },
                    device: hash_token(rng, "dv"),
                    skill,
                    activity: rng.lognormal(1.0, 0.8),
                    pace: rng.lognormal(1.0, 0.25),
                    behaviour: Behaviour::Honest,
                    group: None,
                    role: None,
                    bot_timing: None,
                }
            })
            .collect();
        let mut groups = Vec::new();
        let mut free: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut free);
        let take = |free: &mut Vec<usize>| free.pop();
        for b in [
            Behaviour::TamperedClient,
            Behaviour::RageQuit,
            Behaviour::Sitter,
            Behaviour::Staller,
            Behaviour::Bot,
        ] {
            for _ in 0..counts.individual {
                let Some(i) = take(&mut free) else { break };
                let a = &mut accounts[i];
                a.behaviour = b;
                a.activity = a.activity.max(1.0) * 2.0;
                if b == Behaviour::Bot {
                    a.skill = a.skill.max(0.8);
                    a.bot_timing = Some((rng.uniform(900.0, 2600.0), rng.uniform(25.0, 80.0)));
                }
            }
        }
        for (behaviour, pairs) in [
            (Behaviour::ChipDumping, counts.dump_pairs),
            (Behaviour::WinTrading, counts.trade_pairs),
        ] {
            for _ in 0..pairs {
                let (Some(x), Some(y)) = (take(&mut free), take(&mut free)) else {
                    break;
                };
                let g = groups.len();
                groups.push(Group {
                    behaviour,
                    members: vec![x, y],
                    device: None,
                });
                for (k, &i) in [x, y].iter().enumerate() {
                    let a = &mut accounts[i];
                    a.behaviour = behaviour;
                    a.group = Some(g);
                    a.role = Some(match (behaviour, k) {
                        (Behaviour::ChipDumping, 0) => GroupRole::Dumper,
                        (Behaviour::ChipDumping, _) => GroupRole::Receiver,
                        _ => GroupRole::Trader,
                    });
                }
            }
        }
        for _ in 0..counts.rings {
            let size = rng.range(3, 5) as usize;
            let mut members = Vec::with_capacity(size);
            for _ in 0..size {
                if let Some(i) = take(&mut free) {
                    members.push(i);
                }
            }
            if members.len() < 2 {
                break;
            }
            let device = hash_token(rng, "dv");
            let ip = hash_token(rng, "ip");
            let g = groups.len();
            for &i in &members {
                let a = &mut accounts[i];
                a.behaviour = Behaviour::SharedDevice;
                a.group = Some(g);
                a.role = Some(GroupRole::Member);
                a.device = device.clone();
                a.alt_ip = Some(ip.clone());
            }
            groups.push(Group {
                behaviour: Behaviour::SharedDevice,
                members,
                device: Some(device),
            });
        }
        let mut cumulative = Vec::with_capacity(n);
        let mut acc = 0.0;
        for a in &accounts {
            acc += a.activity;
            cumulative.push(acc);
        }
        Population {
            accounts,
            groups,
            cumulative,
        }
    }

    /// An account drawn with probability proportional to its activity.
    pub fn pick_weighted(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let x = rng.f64() * total;
        let i = self.cumulative.partition_point(|&c| c <= x);
        i.min(self.accounts.len().saturating_sub(1))
    }

    /// Accounts per behaviour.
    pub fn count(&self, b: Behaviour) -> usize {
        self.accounts.iter().filter(|a| a.behaviour == b).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviours_are_assigned_and_ids_unique() {
        let mut rng = Rng::new(5);
        let counts = BehaviourCounts::for_population(200, 0.01);
        let pop = Population::generate(&mut rng, 200, counts);
        let ids: BTreeSet<&str> = pop.accounts.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids.len(), 200);
        for b in [Behaviour::TamperedClient, Behaviour::Bot, Behaviour::Sitter] {
            assert_eq!(pop.count(b), 2);
        }
        assert_eq!(pop.count(Behaviour::ChipDumping), 2);
        let ring = pop
            .groups
            .iter()
            .find(|g| g.behaviour == Behaviour::SharedDevice);
        let Some(ring) = ring else { panic!("no ring") };
        let devices: BTreeSet<&str> = ring
            .members
            .iter()
            .map(|&i| pop.accounts[i].device.as_str())
            .collect();
        assert_eq!(devices.len(), 1);
        for a in &pop.accounts {
            assert!(vigie_log::syntax::is_token(&a.id) && a.ip.len() == 11 && a.device.len() == 11);
        }
    }
}
