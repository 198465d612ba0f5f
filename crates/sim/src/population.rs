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
    /// Has a program choose draughts moves, on a share of moves or games ([`EngineUse`]).
    EngineAssisted,
}

impl Behaviour {
    /// Every behaviour, in label order.
    pub const ALL: [Behaviour; 10] = [
        Behaviour::Honest,
        Behaviour::TamperedClient,
        Behaviour::RageQuit,
        Behaviour::Sitter,
        Behaviour::Staller,
        Behaviour::ChipDumping,
        Behaviour::WinTrading,
        Behaviour::Bot,
        Behaviour::SharedDevice,
        Behaviour::EngineAssisted,
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
            Behaviour::EngineAssisted => "engine_assisted",
        }
    }
}

/// Honest accounts that look like cheaters to a careless rule (the ground truth stays `honest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lookalike {
    /// Quick and steady: a fast pace and a narrow spread of think times (like a bot).
    QuickSteady,
    /// Drops out of games at random moments, losing or not (like a rage-quitter or a sitter).
    BadConnection,
    /// One of a household: several accounts behind one ip, who sometimes play each other (like a ring).
    Household,
    /// One of two friends who play each other often, with ordinary results (like win traders).
    Friends,
    /// A very strong honest draughts player: searches a few plies and rarely errs (like an engine
    /// user). Placed by [`Style::strong_players`], not by [`Style::lookalikes`].
    VeryStrong,
}

impl Lookalike {
    /// The classes [`Style::lookalikes`] spreads its share over, in label order.
    pub const ALL: [Lookalike; 4] = [
        Lookalike::QuickSteady,
        Lookalike::BadConnection,
        Lookalike::Household,
        Lookalike::Friends,
    ];

    /// The label text.
    pub fn as_str(self) -> &'static str {
        match self {
            Lookalike::QuickSteady => "quick_steady",
            Lookalike::BadConnection => "bad_connection",
            Lookalike::Household => "household",
            Lookalike::Friends => "friends",
            Lookalike::VeryStrong => "very_strong",
        }
    }
}

/// How subtle the cheaters are, and how many honest accounts look like them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Style {
    /// 0 (the default): blatant cheaters; 1: subtle ones. In between, every knob moves linearly:
    /// tampered clients try an illegal move on 12 % of their turns at 0 and on 1-4 % at 1;
    /// rage-quitters, sitters and stallers act in every losing game at 0 and in a fifth at 1; bots add a
    /// human-looking pause to no move at 0 and to one move in ten at 1; chip dumpers leave early at
    /// high stakes at 0, and at 1 resign after several moves at ordinary stakes; win traders
    /// alternate strictly at 0 and pick the loser at random at 1; ring members meet four times a
    /// day at 0 and a fifth as often at 1.
    pub subtlety: f64,
    /// Share of the honest accounts that are look-alikes, spread over the [`Lookalike`] classes.
    pub lookalikes: f64,
    /// Engine-assisted accounts, their uses cycling through [`EngineUse::PATTERNS`] (0: none).
    pub engine_users: usize,
    /// Very strong honest draughts players ([`Lookalike::VeryStrong`]; 0: none).
    pub strong_players: usize,
}

/// How an engine-assisted account uses its program.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode", content = "share")]
pub enum EngineUse {
    /// The engine's move on each own move with this chance.
    Moves(f64),
    /// The engine's move on every own move of this share of games.
    Games(f64),
    /// The engine's move only in critical positions (where the best move is clearly better than
    /// the second), the player's own elsewhere.
    Critical,
}

impl EngineUse {
    /// The uses given to engine-assisted accounts in turn: shares of moves from all to a tenth,
    /// half of the games, critical positions only.
    pub const PATTERNS: [EngineUse; 7] = [
        EngineUse::Moves(1.0),
        EngineUse::Moves(0.5),
        EngineUse::Moves(1.0 / 3.0),
        EngineUse::Moves(0.2),
        EngineUse::Moves(0.1),
        EngineUse::Games(0.5),
        EngineUse::Critical,
    ];

    /// A label for reports: `moves 0.50`, `games 0.50`, `critical`.
    pub fn label(self) -> String {
        match self {
            EngineUse::Moves(s) => format!("moves {s:.2}"),
            EngineUse::Games(s) => format!("games {s:.2}"),
            EngineUse::Critical => "critical".to_string(),
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
    /// An honest household or pair of friends (look-alikes).
    Honest,
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
    /// Bots: chance per move of a human-looking pause (0 for blatant bots).
    pub bot_pause: f64,
    /// Rage-quitters, sitters and stallers: share of losing games in which they act (1 for blatant ones).
    pub act_share: f64,
    /// Tampered clients: their chance per turn of an illegal attempt, as a multiple of the game
    /// kind's blatant rate (1 for blatant ones).
    pub tamper_scale: f64,
    /// A personal log-space spread of think times (`None`: the game kind's).
    pub sigma: Option<f64>,
    /// Extra chance per turn of dropping out (a bad connection; 0 for most).
    pub disconnect_rate: f64,
    /// The honest look-alike class, if any.
    pub lookalike: Option<Lookalike>,
    /// Engine-assisted accounts: how they use the program.
    pub engine: Option<EngineUse>,
}

impl Account {
    /// Whether this rage-quitter, sitter or staller acts in the game of RNG seed `game_seed` when
    /// losing there: always for blatant ones, in a share [`Account::act_share`] of games for
    /// subtle ones. A hash of the game and the account, so the game's own draws are not disturbed.
    pub fn acts_in(&self, game_seed: u64) -> bool {
        if self.act_share >= 1.0 {
            return true;
        }
        let mut h = game_seed ^ 0x9e37_79b9_7f4a_7c15;
        for b in self.id.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng::new(h).chance(self.act_share)
    }

    /// This account's chance per turn of a tampered attempt where a blatant client's is `blatant`.
    pub fn tamper_chance(&self, blatant: f64) -> f64 {
        blatant * self.tamper_scale
    }
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
    /// Honest groups: the look-alike class (household, friends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lookalike: Option<Lookalike>,
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
    /// Builds `n` accounts with behaviours from `counts` in `style`, deterministically from `rng`.
    /// The blatant style without look-alikes (the default) draws exactly what it drew before the
    /// style existed, so its output is unchanged.
    pub fn generate(rng: &mut Rng, n: usize, counts: BehaviourCounts, style: Style) -> Population {
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
                    bot_pause: 0.0,
                    act_share: 1.0,
                    tamper_scale: 1.0,
                    sigma: None,
                    disconnect_rate: 0.0,
                    lookalike: None,
                    engine: None,
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
                    lookalike: None,
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
                lookalike: None,
            });
        }
        let s = style.subtlety.clamp(0.0, 1.0);
        if s > 0.0 {
            let lerp = |blatant: f64, subtle: f64| blatant + (subtle - blatant) * s;
            for a in &mut accounts {
                match a.behaviour {
                    Behaviour::TamperedClient => {
                        // 1-4 % of turns where the blatant rate is 12 % (Ludo's).
                        let subtle = rng.uniform(0.01, 0.04) / 0.12;
                        a.tamper_scale = lerp(1.0, subtle);
                    }
                    Behaviour::RageQuit | Behaviour::Sitter | Behaviour::Staller => {
                        a.act_share = lerp(1.0, 0.2);
                    }
                    Behaviour::Bot => a.bot_pause = lerp(0.0, 0.1),
                    _ => {}
                }
            }
        }
        if style.lookalikes > 0.0 {
            let per_class =
                ((free.len() as f64 * style.lookalikes.clamp(0.0, 1.0)) / 4.0).round() as usize;
            for class in Lookalike::ALL {
                let mut placed = 0;
                while placed < per_class {
                    let size = match class {
                        Lookalike::QuickSteady
                        | Lookalike::BadConnection
                        | Lookalike::VeryStrong => 1,
                        Lookalike::Friends => 2,
                        Lookalike::Household => rng.range(2, 4) as usize,
                    };
                    if free.len() < size {
                        break;
                    }
                    let members: Vec<usize> = (0..size).filter_map(|_| take(&mut free)).collect();
                    placed += size;
                    let shared_ip = hash_token(rng, "ip");
                    let g = groups.len();
                    for &i in &members {
                        let a = &mut accounts[i];
                        a.lookalike = Some(class);
                        match class {
                            Lookalike::QuickSteady => {
                                a.pace = rng.uniform(0.45, 0.7);
                                a.sigma = Some(rng.uniform(0.15, 0.25));
                                a.activity = a.activity.max(1.0) * 2.0;
                            }
                            Lookalike::BadConnection => {
                                a.disconnect_rate = rng.uniform(0.004, 0.012);
                                a.activity = a.activity.max(1.0) * 2.0;
                            }
                            Lookalike::Household => a.ip = shared_ip.clone(),
                            Lookalike::Friends | Lookalike::VeryStrong => {}
                        }
                        if size > 1 {
                            a.group = Some(g);
                            a.role = Some(GroupRole::Honest);
                        }
                    }
                    if size > 1 {
                        groups.push(Group {
                            behaviour: Behaviour::Honest,
                            members,
                            device: None,
                            lookalike: Some(class),
                        });
                    }
                }
            }
        }
        // Drawn last, and only when asked for, so that populations without them are unchanged.
        for k in 0..style.engine_users {
            let Some(i) = take(&mut free) else { break };
            let a = &mut accounts[i];
            a.behaviour = Behaviour::EngineAssisted;
            a.engine = Some(EngineUse::PATTERNS[k % EngineUse::PATTERNS.len()]);
            a.activity = a.activity.max(1.0) * 2.0;
        }
        for _ in 0..style.strong_players {
            let Some(i) = take(&mut free) else { break };
            let a = &mut accounts[i];
            a.lookalike = Some(Lookalike::VeryStrong);
            a.skill = rng.uniform(0.95, 0.99);
            a.activity = a.activity.max(1.0) * 2.0;
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
        let pop = Population::generate(&mut rng, 200, counts, Style::default());
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
            assert!(
                vigie_log::syntax::is_account(&a.id) && a.ip.len() == 11 && a.device.len() == 11
            );
        }
    }

    #[test]
    fn subtle_style_sets_the_knobs_and_labels_lookalikes() {
        let counts = BehaviourCounts::for_population(400, 0.01);
        let blatant = Population::generate(&mut Rng::new(9), 400, counts, Style::default());
        assert!(blatant.accounts.iter().all(|a| a.lookalike.is_none()
            && a.act_share == 1.0
            && a.tamper_scale == 1.0
            && a.bot_pause == 0.0));
        let style = Style {
            subtlety: 1.0,
            lookalikes: 0.1,
            ..Style::default()
        };
        let subtle = Population::generate(&mut Rng::new(9), 400, counts, style);
        // The same accounts have the same behaviours: only the knobs differ.
        for (a, b) in blatant.accounts.iter().zip(&subtle.accounts) {
            assert_eq!((&a.id, a.behaviour), (&b.id, b.behaviour));
        }
        for a in &subtle.accounts {
            match a.behaviour {
                Behaviour::TamperedClient => {
                    let rate = a.tamper_chance(0.12);
                    assert!((0.01..=0.04).contains(&rate), "{rate}");
                }
                Behaviour::RageQuit | Behaviour::Sitter | Behaviour::Staller => {
                    assert!((a.act_share - 0.2).abs() < 1e-12)
                }
                Behaviour::Bot => assert!((a.bot_pause - 0.1).abs() < 1e-12),
                _ => {}
            }
        }
        for l in Lookalike::ALL {
            let n = subtle
                .accounts
                .iter()
                .filter(|a| a.lookalike == Some(l))
                .count();
            assert!(n >= 8, "{l:?}: {n}");
            assert!(
                subtle
                    .accounts
                    .iter()
                    .filter(|a| a.lookalike == Some(l))
                    .all(|a| a.behaviour == Behaviour::Honest)
            );
        }
        // A household shares one ip; friends and households are honest groups.
        let household = subtle
            .groups
            .iter()
            .find(|g| g.lookalike == Some(Lookalike::Household));
        let Some(household) = household else {
            panic!("no household")
        };
        let ips: BTreeSet<&str> = household
            .members
            .iter()
            .map(|&i| subtle.accounts[i].ip.as_str())
            .collect();
        assert_eq!(ips.len(), 1);
        assert_eq!(household.behaviour, Behaviour::Honest);
    }

    #[test]
    fn engine_users_and_strong_players_are_drawn_last_and_change_nobody_else() {
        let counts = BehaviourCounts::for_population(200, 0.01);
        let plain = Population::generate(&mut Rng::new(5), 200, counts, Style::default());
        let style = Style {
            engine_users: 9,
            strong_players: 3,
            ..Style::default()
        };
        let with = Population::generate(&mut Rng::new(5), 200, counts, style);
        let users: Vec<&Account> = with
            .accounts
            .iter()
            .filter(|a| a.behaviour == Behaviour::EngineAssisted)
            .collect();
        assert_eq!(users.len(), 9);
        // Every use of the cycle is given, the first two twice.
        for u in EngineUse::PATTERNS {
            assert!(users.iter().any(|a| a.engine == Some(u)), "{u:?}");
        }
        let strong: Vec<&Account> = with
            .accounts
            .iter()
            .filter(|a| a.lookalike == Some(Lookalike::VeryStrong))
            .collect();
        assert_eq!(strong.len(), 3);
        assert!(
            strong
                .iter()
                .all(|a| a.skill >= 0.95 && a.behaviour == Behaviour::Honest)
        );
        let mut changed = 0;
        for (a, b) in plain.accounts.iter().zip(&with.accounts) {
            assert_eq!(a.id, b.id);
            if a.behaviour != b.behaviour || a.lookalike != b.lookalike {
                changed += 1;
                assert_eq!(
                    a.behaviour,
                    Behaviour::Honest,
                    "only honest accounts are turned"
                );
            } else {
                assert_eq!(
                    (a.skill, a.activity, &a.device),
                    (b.skill, b.activity, &b.device)
                );
            }
        }
        assert_eq!(changed, 12);
    }

    #[test]
    fn a_subtle_quitter_acts_in_about_its_share_of_games() {
        let counts = BehaviourCounts::for_population(100, 0.02);
        let style = Style {
            subtlety: 1.0,
            lookalikes: 0.0,
            ..Style::default()
        };
        let pop = Population::generate(&mut Rng::new(4), 100, counts, style);
        let Some(q) = pop
            .accounts
            .iter()
            .find(|a| a.behaviour == Behaviour::RageQuit)
        else {
            panic!("no rage-quitter")
        };
        let acting = (0..10_000u64).filter(|g| q.acts_in(g * 7919)).count();
        assert!((1_700..=2_300).contains(&acting), "{acting}");
        // The same game always gives the same answer.
        assert_eq!(q.acts_in(42), q.acts_in(42));
    }
}
