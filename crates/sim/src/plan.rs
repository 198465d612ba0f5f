//! The planner: which games start when, on which server, between whom, at what stake, with which seed and which injected fault.
//!
//! Games are planned in start order, day by day. Each day gets
//! `games_per_day` start times drawn from a diurnal curve; a few of those slots
//! are given to the pairs and rings whose behaviour needs them (chip dumping,
//! win trading, shared-device rings), the rest are random pairings of accounts
//! weighted by activity, avoiding accounts that are still busy in another
//! game (estimated). A short look-ahead buffer lets a `seed_reused` fault pick
//! its donor among the games planned just before it.

use std::collections::VecDeque;

use serde::Serialize;

use super::SimOptions;
use super::population::{Behaviour, Lookalike, Population};
use super::rng::{Rng, mix};
use vigie_log::{Kind, LeftReason, Mode};
use vigie_rules::fairness;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Named RNG streams (so that each use of the seed is independent).
pub mod stream {
    pub const POPULATION: u64 = 1;
    pub const PLANNER: u64 = 2;
    pub const GAME: u64 = 3;
    pub const SEED: u64 = 4;
    pub const MALFORMED: u64 = 5;
    pub const OTHER_SEED: u64 = 6;
    pub const COVERAGE: u64 = 7;
}

/// Ludo variants run by the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LudoPreset {
    Classic,
    Duel,
    Quick,
}

/// A game kind and mode as the simulator plans them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GameKind {
    Draughts10,
    Draughts8,
    Medieval,
    Ludo(LudoPreset),
    Belote,
}

impl GameKind {
    /// Every kind, in report order.
    pub const ALL: [GameKind; 7] = [
        GameKind::Draughts10,
        GameKind::Draughts8,
        GameKind::Medieval,
        GameKind::Ludo(LudoPreset::Classic),
        GameKind::Ludo(LudoPreset::Duel),
        GameKind::Ludo(LudoPreset::Quick),
        GameKind::Belote,
    ];

    /// Short name for reports and labels.
    pub fn name(self) -> &'static str {
        match self {
            GameKind::Draughts10 => "draughts10",
            GameKind::Draughts8 => "draughts8",
            GameKind::Medieval => "medieval",
            GameKind::Ludo(LudoPreset::Classic) => "ludo_classic",
            GameKind::Ludo(LudoPreset::Duel) => "ludo_duel",
            GameKind::Ludo(LudoPreset::Quick) => "ludo_quick",
            GameKind::Belote => "belote",
        }
    }

    /// Game id prefix, as in the platform's logs.
    pub fn prefix(self) -> &'static str {
        match self {
            GameKind::Draughts10 => "d10",
            GameKind::Draughts8 => "d8",
            GameKind::Medieval => "md",
            GameKind::Ludo(_) => "lu",
            GameKind::Belote => "be",
        }
    }

    /// The `kind` field.
    pub fn log_kind(self) -> Kind {
        match self {
            GameKind::Draughts10 => Kind::Draughts10,
            GameKind::Draughts8 | GameKind::Medieval => Kind::Draughts8,
            GameKind::Ludo(_) => Kind::Ludo,
            GameKind::Belote => Kind::Belote,
        }
    }

    /// The `mode` field.
    pub fn mode(self) -> Mode {
        if self == GameKind::Medieval {
            Mode::Medieval
        } else {
            Mode::Standard
        }
    }

    /// Whether the game commits to a seed.
    pub fn seeded(self) -> bool {
        self.log_kind().uses_seed(self.mode())
    }

    /// Number of players.
    pub fn players(self) -> usize {
        if self == GameKind::Ludo(LudoPreset::Classic) {
            4
        } else {
            2
        }
    }

    /// Whether it is a draughts game.
    pub fn is_draughts(self) -> bool {
        matches!(
            self,
            GameKind::Draughts10 | GameKind::Draughts8 | GameKind::Medieval
        )
    }

    /// A rough upper estimate of the duration, used to keep accounts out of simultaneous games.
    fn busy_ms(self) -> i64 {
        60_000
            * match self {
                GameKind::Draughts10 => 16,
                GameKind::Draughts8 | GameKind::Medieval => 9,
                GameKind::Ludo(LudoPreset::Classic) => 20,
                GameKind::Ludo(LudoPreset::Duel) => 15,
                GameKind::Ludo(LudoPreset::Quick) => 7,
                GameKind::Belote => 16,
            }
    }
}

/// Server faults the simulator injects, named by their finding code (`docs/findings.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultCode {
    AcceptedIllegal,
    RejectedLegal,
    WrongResult,
    WrongPayout,
    CommitmentMismatch,
    WrongDie,
    WrongDeal,
    WrongDuel,
    SeedReused,
    SeedMissing,
    LateCommitment,
    SeqGap,
    ChainBroken,
    LateMove,
    TimeoutRule,
}

impl FaultCode {
    /// Every code.
    pub const ALL: [FaultCode; 15] = [
        FaultCode::AcceptedIllegal,
        FaultCode::RejectedLegal,
        FaultCode::WrongResult,
        FaultCode::WrongPayout,
        FaultCode::CommitmentMismatch,
        FaultCode::WrongDie,
        FaultCode::WrongDeal,
        FaultCode::WrongDuel,
        FaultCode::SeedReused,
        FaultCode::SeedMissing,
        FaultCode::LateCommitment,
        FaultCode::SeqGap,
        FaultCode::ChainBroken,
        FaultCode::LateMove,
        FaultCode::TimeoutRule,
    ];

    /// The finding code.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultCode::AcceptedIllegal => "accepted_illegal",
            FaultCode::RejectedLegal => "rejected_legal",
            FaultCode::WrongResult => "wrong_result",
            FaultCode::WrongPayout => "wrong_payout",
            FaultCode::CommitmentMismatch => "commitment_mismatch",
            FaultCode::WrongDie => "wrong_die",
            FaultCode::WrongDeal => "wrong_deal",
            FaultCode::WrongDuel => "wrong_duel",
            FaultCode::SeedReused => "seed_reused",
            FaultCode::SeedMissing => "seed_missing",
            FaultCode::LateCommitment => "late_commitment",
            FaultCode::SeqGap => "seq_gap",
            FaultCode::ChainBroken => "chain_broken",
            FaultCode::LateMove => "late_move",
            FaultCode::TimeoutRule => "timeout_rule",
        }
    }

    /// Whether the fault can be injected into a game of this kind.
    pub fn applies_to(self, kind: GameKind, stake: i64) -> bool {
        match self {
            FaultCode::RejectedLegal
            | FaultCode::WrongResult
            | FaultCode::SeqGap
            | FaultCode::ChainBroken
            | FaultCode::LateMove => true,
            FaultCode::WrongPayout => stake > 0,
            FaultCode::AcceptedIllegal => kind.is_draughts(),
            FaultCode::CommitmentMismatch
            | FaultCode::SeedReused
            | FaultCode::SeedMissing
            | FaultCode::LateCommitment => kind.seeded(),
            FaultCode::WrongDie => matches!(kind, GameKind::Ludo(_)),
            FaultCode::WrongDeal => kind == GameKind::Belote,
            FaultCode::WrongDuel => kind == GameKind::Medieval,
            FaultCode::TimeoutRule => matches!(kind, GameKind::Draughts8 | GameKind::Medieval),
        }
    }
}

/// How a scripted loser loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoseBy {
    /// Leaves with this reason.
    Leave(LeftReason),
    /// Lets the clock run out until the rules end the game for them.
    Timeouts,
}

/// Why a game was set up the way it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arranged {
    /// Random matchmaking.
    Random,
    /// A chip-dumping pair's game.
    ChipDumping,
    /// A win-trading pair's game.
    WinTrading,
    /// Two members of a shared-device ring.
    SharedDevice,
    /// Two members of an honest household or pair of friends (look-alikes), playing normally.
    HonestGroup,
    /// Scripted by the coverage preset.
    Coverage,
}

impl Arranged {
    /// The label text.
    pub fn as_str(self) -> &'static str {
        match self {
            Arranged::Random => "random",
            Arranged::ChipDumping => "chip_dumping",
            Arranged::WinTrading => "win_trading",
            Arranged::SharedDevice => "shared_device",
            Arranged::HonestGroup => "honest_group",
            Arranged::Coverage => "coverage",
        }
    }
}

/// Per-game script: who loses on purpose, and coverage switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// How the game was arranged.
    pub arranged: Arranged,
    /// Seat that loses on purpose, how, and after how many of its own turns.
    pub loser: Option<(usize, LoseBy, u32)>,
    /// Coverage: a draw offer that is accepted, made at this ply (draughts).
    pub draw_at: Option<u32>,
    /// Coverage: both selections incomplete (Medieval auto picks).
    pub auto_select: bool,
    /// Coverage: a late attempt after the deciding event.
    pub late_attempt: bool,
    /// Coverage: the game is re-drawn (new game RNG seeds) until one of its lines contains this text.
    pub want: Option<&'static str>,
    /// Coverage: the first seat goes to an account of this behaviour.
    pub with: Option<Behaviour>,
    /// Coverage: this server fault is injected.
    pub fault: Option<FaultCode>,
}

impl Scenario {
    /// A plain game.
    pub fn random() -> Scenario {
        Scenario {
            arranged: Arranged::Random,
            loser: None,
            draw_at: None,
            auto_select: false,
            late_attempt: false,
            want: None,
            with: None,
            fault: None,
        }
    }
}

/// A player as seated in a game.
#[derive(Debug, Clone)]
pub struct PlayerSpec {
    /// Index into the population.
    pub account: usize,
    /// The ip hash used for this game.
    pub ip: String,
    /// The device hash used for this game.
    pub device: String,
}

/// Everything needed to simulate one game.
#[derive(Debug, Clone)]
pub struct GameSpec {
    /// 0-based position in start order.
    pub index: u64,
    /// Game id (`d10-a1b2-000001`).
    pub id: String,
    pub kind: GameKind,
    /// Server number (0-based).
    pub server: u32,
    /// `ts` of `game_started`.
    pub start_ms: i64,
    /// In the order of `players` (first listed plays first).
    pub players: Vec<PlayerSpec>,
    /// Per player, in coins.
    pub stake: i64,
    pub rated: bool,
    /// Seed (hex) used for every derivation of the game.
    pub seed: Option<String>,
    /// Commitment logged in `game_started`.
    pub commitment: Option<String>,
    /// Injected server fault.
    pub fault: Option<FaultCode>,
    /// The game this one shares its seed with (`seed_reused`).
    pub reused_with: Option<String>,
    pub scenario: Scenario,
    /// Seed of the game's own RNG.
    pub rng_seed: u64,
    /// [`SimOptions::six_bias`](crate::SimOptions::six_bias).
    pub six_bias: f64,
}

#[derive(Debug, Clone, Copy)]
enum Special {
    Group(usize),
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    start: i64,
    special: Option<Special>,
}

/// Hourly weights of game starts (UTC), a European evening peak.
const HOURLY: [f64; 24] = [
    3.0, 2.0, 1.5, 1.0, 1.0, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 5.5, 6.0, 6.0, 6.0, 6.5, 7.0, 8.0, 9.0,
    10.0, 10.0, 9.0, 7.0, 5.0,
];

/// Stake levels (coins per player) and their weights; multiples of 10 so the 5 % rake is exact.
const STAKES: [(i64, f64); 7] = [
    (0, 8.0),
    (10, 22.0),
    (20, 24.0),
    (50, 22.0),
    (100, 14.0),
    (200, 7.0),
    (500, 3.0),
];
const DUMP_STAKES: [(i64, f64); 3] = [(200, 3.0), (500, 4.0), (1000, 2.0)];

/// Kind mix of random games.
const MIX: [(GameKind, f64); 7] = [
    (GameKind::Draughts10, 22.0),
    (GameKind::Draughts8, 18.0),
    (GameKind::Medieval, 12.0),
    (GameKind::Ludo(LudoPreset::Classic), 9.0),
    (GameKind::Ludo(LudoPreset::Duel), 9.0),
    (GameKind::Ludo(LudoPreset::Quick), 8.0),
    (GameKind::Belote, 22.0),
];

const TWO_PLAYER: [GameKind; 6] = [
    GameKind::Draughts10,
    GameKind::Draughts8,
    GameKind::Medieval,
    GameKind::Ludo(LudoPreset::Duel),
    GameKind::Ludo(LudoPreset::Quick),
    GameKind::Belote,
];
const RATED_KINDS: [GameKind; 4] = [
    GameKind::Draughts10,
    GameKind::Draughts8,
    GameKind::Medieval,
    GameKind::Belote,
];

/// No `seed_reused` pair is planned this close to the end (its games must not be dropped).
const REUSE_GUARD_MS: i64 = 6 * 3_600_000;

/// The planner: an iterator over [`GameSpec`] in start order.
pub struct Planner<'a> {
    opts: &'a SimOptions,
    pop: &'a Population,
    rng: Rng,
    run: String,
    window_start: i64,
    window_end: i64,
    day: u32,
    slots: Vec<Slot>,
    slot_pos: usize,
    next_index: u64,
    busy: Vec<i64>,
    buffer: VecDeque<GameSpec>,
    trades: Vec<u32>,
    coverage: VecDeque<(GameKind, Scenario)>,
}

impl<'a> Planner<'a> {
    /// A planner over the window `[window_start, window_start + days)`.
    pub fn new(opts: &'a SimOptions, pop: &'a Population, window_start: i64) -> Planner<'a> {
        let rng = Rng::derive(opts.seed, stream::PLANNER, 0);
        let run = format!("{:04x}", mix(&[opts.seed, 0x5255_4e00]) & 0xffff);
        let coverage = if opts.coverage {
            coverage_script()
        } else {
            VecDeque::new()
        };
        Planner {
            opts,
            pop,
            rng,
            run,
            window_start,
            window_end: window_start + i64::from(opts.days) * DAY_MS,
            day: 0,
            slots: Vec::new(),
            slot_pos: 0,
            next_index: 0,
            busy: vec![i64::MIN; pop.accounts.len()],
            buffer: VecDeque::new(),
            trades: vec![0; pop.groups.len()],
            coverage,
        }
    }

    /// The run tag in game ids.
    pub fn run_tag(&self) -> &str {
        &self.run
    }

    fn plan_day(&mut self) -> bool {
        if self.day >= self.opts.days {
            return false;
        }
        let day_start = self.window_start + i64::from(self.day) * DAY_MS;
        let n = self.opts.games_per_day as usize;
        let mut starts: Vec<i64> = (0..n)
            .map(|_| {
                let h = self.rng.weighted(&HOURLY) as i64;
                day_start + h * 3_600_000 + self.rng.range(0, 3_599_999)
            })
            .collect();
        starts.sort_unstable();
        let mut slots: Vec<Slot> = starts
            .into_iter()
            .map(|start| Slot {
                start,
                special: None,
            })
            .collect();
        // Games of pairs and rings, on random slots (at most half of the day).
        let mut specials = Vec::new();
        let boost = if self.opts.coverage { 2.0 } else { 1.0 };
        let subtlety = self.opts.subtlety.clamp(0.0, 1.0);
        for (g, group) in self.pop.groups.iter().enumerate() {
            let lambda = boost
                * match group.behaviour {
                    Behaviour::ChipDumping => 3.0,
                    Behaviour::WinTrading => 4.0,
                    // Subtle rings rarely meet two by two.
                    Behaviour::SharedDevice => 4.0 * (1.0 - 0.8 * subtlety),
                    // Friends play each other often; a household now and then.
                    Behaviour::Honest if group.lookalike == Some(Lookalike::Friends) => 3.0,
                    Behaviour::Honest => 1.0,
                    _ => 4.0,
                };
            for _ in 0..self.rng.poisson(lambda) {
                specials.push(Special::Group(g));
            }
        }
        specials.truncate(n / 2);
        let mut positions: Vec<usize> = (0..n).collect();
        self.rng.shuffle(&mut positions);
        for (s, &p) in specials.iter().zip(&positions) {
            slots[p].special = Some(*s);
        }
        self.slots = slots;
        self.slot_pos = 0;
        self.day += 1;
        true
    }

    fn next_slot(&mut self) -> Option<Slot> {
        while self.slot_pos >= self.slots.len() {
            if !self.plan_day() {
                return None;
            }
        }
        let s = self.slots[self.slot_pos];
        self.slot_pos += 1;
        Some(s)
    }

    fn pick_free(&mut self, start: i64, taken: &[usize]) -> usize {
        let mut last = 0;
        for _ in 0..24 {
            let i = self.pop.pick_weighted(&mut self.rng);
            last = i;
            if taken.contains(&i) {
                continue;
            }
            if self.busy[i] <= start {
                return i;
            }
        }
        if !taken.contains(&last) {
            return last;
        }
        (0..self.pop.accounts.len())
            .find(|i| !taken.contains(i))
            .unwrap_or(0)
    }

    fn pick_kind(&mut self, kinds: &[GameKind]) -> GameKind {
        let i = self.rng.index(kinds.len());
        kinds.get(i).copied().unwrap_or(GameKind::Draughts10)
    }

    fn stake(&mut self, table: &[(i64, f64)]) -> i64 {
        let weights: Vec<f64> = table.iter().map(|(_, w)| *w).collect();
        table
            .get(self.rng.weighted(&weights))
            .map_or(0, |(s, _)| *s)
    }

    fn player_spec(&mut self, account: usize) -> PlayerSpec {
        let a = &self.pop.accounts[account];
        let use_alt = match a.behaviour {
            Behaviour::SharedDevice => 0.5,
            _ => 0.25,
        };
        let ip = match &a.alt_ip {
            Some(alt) if self.rng.chance(use_alt) => alt.clone(),
            _ => a.ip.clone(),
        };
        PlayerSpec {
            account,
            ip,
            device: a.device.clone(),
        }
    }

    /// Whether an arranged game is played the subtle way: with chance `subtlety`, drawn only when
    /// it is above 0 (so the blatant default draws what it always drew).
    fn draw_subtle(&mut self) -> bool {
        let s = self.opts.subtlety;
        s > 0.0 && self.rng.chance(s)
    }

    fn plan_game(&mut self, slot: Slot) -> GameSpec {
        let index = self.next_index;
        self.next_index += 1;
        let mut scenario = Scenario::random();
        let mut stake_table: &[(i64, f64)] = &STAKES;
        let mut rated: Option<bool> = None;
        let (kind, accounts) = if let Some((kind, sc)) = self.coverage.pop_front() {
            scenario = sc;
            let mut taken = Vec::new();
            if let Some(b) = sc.with {
                let pool: Vec<usize> = (0..self.pop.accounts.len())
                    .filter(|&i| self.pop.accounts[i].behaviour == b)
                    .collect();
                if let Some(&i) = self.rng.pick(&pool) {
                    taken.push(i);
                }
            }
            while taken.len() < kind.players() {
                let i = self.pick_free(slot.start, &taken);
                taken.push(i);
            }
            (kind, taken)
        } else if let Some(Special::Group(g)) = slot.special {
            let group = &self.pop.groups[g];
            let behaviour = group.behaviour;
            let members = group.members.clone();
            match behaviour {
                Behaviour::ChipDumping => {
                    let kind = self.pick_kind(&TWO_PLAYER);
                    // A subtle dumper resigns after several moves at ordinary stakes.
                    let subtle = self.draw_subtle();
                    stake_table = if subtle { &STAKES } else { &DUMP_STAKES };
                    // members[0] is the dumper.
                    let dumper_first = self.rng.chance(0.5);
                    let accounts = if dumper_first {
                        vec![members[0], members[1]]
                    } else {
                        vec![members[1], members[0]]
                    };
                    let seat = if dumper_first { 0 } else { 1 };
                    let how = if subtle {
                        LoseBy::Leave(LeftReason::Resigned)
                    } else if self.rng.chance(0.6) {
                        LoseBy::Leave(
                            *self
                                .rng
                                .pick(&[
                                    LeftReason::PageClosed,
                                    LeftReason::Disconnected,
                                    LeftReason::Resigned,
                                ])
                                .unwrap_or(&LeftReason::PageClosed),
                        )
                    } else {
                        LoseBy::Timeouts
                    };
                    let after = if subtle {
                        self.rng.range(6, 20)
                    } else {
                        self.rng.range(1, 6)
                    } as u32;
                    scenario = Scenario {
                        arranged: Arranged::ChipDumping,
                        loser: Some((seat, how, after)),
                        ..Scenario::random()
                    };
                    (kind, accounts)
                }
                Behaviour::WinTrading => {
                    let kind = self.pick_kind(&RATED_KINDS);
                    rated = Some(true);
                    let k = self.trades[g];
                    self.trades[g] += 1;
                    // Subtle traders do not alternate: the loser is drawn.
                    let loser_account = if self.draw_subtle() {
                        members[self.rng.index(2)]
                    } else {
                        members[(k % 2) as usize]
                    };
                    let mut accounts = vec![members[0], members[1]];
                    if self.rng.chance(0.5) {
                        accounts.swap(0, 1);
                    }
                    let seat = usize::from(accounts[1] == loser_account);
                    let reason = if self.rng.chance(0.7) {
                        LeftReason::Resigned
                    } else {
                        LeftReason::PageClosed
                    };
                    let after = self.rng.range(2, 8) as u32;
                    scenario = Scenario {
                        arranged: Arranged::WinTrading,
                        loser: Some((seat, LoseBy::Leave(reason), after)),
                        ..Scenario::random()
                    };
                    (kind, accounts)
                }
                _ => {
                    let kind = self.pick_kind(&TWO_PLAYER);
                    let mut pool = members;
                    self.rng.shuffle(&mut pool);
                    pool.truncate(2);
                    let arranged = if behaviour == Behaviour::Honest {
                        Arranged::HonestGroup
                    } else {
                        Arranged::SharedDevice
                    };
                    scenario = Scenario {
                        arranged,
                        ..Scenario::random()
                    };
                    (kind, pool)
                }
            }
        } else {
            let weights: Vec<f64> = MIX.iter().map(|(_, w)| *w).collect();
            let kind = MIX[self.rng.weighted(&weights)].0;
            let mut taken = Vec::new();
            for _ in 0..kind.players() {
                let i = self.pick_free(slot.start, &taken);
                taken.push(i);
            }
            (kind, taken)
        };
        for &a in &accounts {
            self.busy[a] = self.busy[a].max(slot.start + kind.busy_ms());
        }
        let players: Vec<PlayerSpec> = accounts.iter().map(|&a| self.player_spec(a)).collect();
        let stake = self.stake(stake_table);
        let rated = rated.unwrap_or_else(|| {
            let p = match kind {
                GameKind::Draughts10 | GameKind::Draughts8 | GameKind::Medieval => 0.65,
                GameKind::Ludo(_) => 0.15,
                GameKind::Belote => 0.5,
            };
            self.rng.chance(p)
        });
        let id = format!("{}-{}-{:06}", kind.prefix(), self.run, index + 1);
        let (seed, commitment) = if kind.seeded() {
            let seed = Rng::derive(self.opts.seed, stream::SEED, index).hex(32);
            let c = fairness::commitment(&seed);
            (Some(seed), Some(c))
        } else {
            (None, None)
        };
        let server = self.rng.below(u64::from(self.opts.servers.max(1))) as u32;
        let rng_seed = mix(&[self.opts.seed, stream::GAME, index]);
        let mut spec = GameSpec {
            index,
            id,
            kind,
            server,
            start_ms: slot.start,
            players,
            stake,
            rated,
            seed,
            commitment,
            fault: None,
            reused_with: None,
            scenario,
            rng_seed,
            six_bias: self.opts.six_bias,
        };
        if let Some(code) = scenario.fault {
            self.assign_fault(&mut spec, Some(code));
        } else if scenario.arranged == Arranged::Random && self.rng.chance(self.opts.fault_rate) {
            self.assign_fault(&mut spec, None);
        }
        if scenario.want.is_some() || scenario.fault.is_some() {
            self.redraw_until(&mut spec, scenario.want);
        }
        spec
    }

    /// Coverage: tries new game RNG seeds (and, every 20 tries of a game
    /// without a scripted seat, other honest players) until the game logs
    /// `want` and, when a fault is planned, injects it (keeps the last try otherwise).
    fn redraw_until(&self, spec: &mut GameSpec, want: Option<&str>) {
        let honest: Vec<usize> = (0..self.pop.accounts.len())
            .filter(|&i| self.pop.accounts[i].behaviour == Behaviour::Honest)
            .collect();
        let free_seats = spec.scenario.with.is_none() && spec.scenario.loser.is_none();
        for attempt in 0..4000u64 {
            if free_seats && attempt > 0 && attempt % 20 == 0 && honest.len() >= spec.players.len()
            {
                let mut r = Rng::derive(
                    self.opts.seed,
                    stream::COVERAGE,
                    spec.index * 4096 + attempt,
                );
                let mut pool = honest.clone();
                r.shuffle(&mut pool);
                for (p, &a) in spec.players.iter_mut().zip(&pool) {
                    let acc = &self.pop.accounts[a];
                    *p = PlayerSpec {
                        account: a,
                        ip: acc.ip.clone(),
                        device: acc.device.clone(),
                    };
                }
            }
            spec.rng_seed = mix(&[self.opts.seed, stream::GAME, spec.index, attempt]);
            if let Ok(out) = super::simulate_game(spec, self.pop)
                && out.end_ms < self.window_end
                && want.is_none_or(|w| out.text.contains(w))
                && (spec.fault.is_none() || !out.faults.is_empty())
            {
                return;
            }
        }
    }

    fn assign_fault(&mut self, spec: &mut GameSpec, forced: Option<FaultCode>) {
        let mut codes: Vec<FaultCode> = FaultCode::ALL
            .iter()
            .copied()
            .filter(|c| c.applies_to(spec.kind, spec.stake))
            .collect();
        if spec.start_ms > self.window_end - REUSE_GUARD_MS {
            codes.retain(|c| *c != FaultCode::SeedReused);
        }
        if let Some(f) = forced {
            codes.retain(|c| *c == f);
        }
        let Some(&code) = self.rng.pick(&codes) else {
            return;
        };
        match code {
            FaultCode::SeedReused => {
                let donor = self
                    .buffer
                    .iter_mut()
                    .rev()
                    .find(|g| g.kind.seeded() && g.fault.is_none());
                match donor {
                    Some(d) => {
                        d.fault = Some(FaultCode::SeedReused);
                        d.reused_with = Some(spec.id.clone());
                        spec.seed = d.seed.clone();
                        spec.commitment = d.commitment.clone();
                        spec.reused_with = Some(d.id.clone());
                        spec.fault = Some(FaultCode::SeedReused);
                    }
                    None => spec.fault = Some(FaultCode::SeedMissing),
                }
            }
            FaultCode::CommitmentMismatch => {
                let other = Rng::derive(self.opts.seed, stream::OTHER_SEED, spec.index).hex(32);
                spec.commitment = Some(fairness::commitment(&other));
                spec.fault = Some(code);
            }
            _ => spec.fault = Some(code),
        }
    }
}

impl Iterator for Planner<'_> {
    type Item = GameSpec;

    fn next(&mut self) -> Option<GameSpec> {
        while self.buffer.len() < 16 {
            let Some(slot) = self.next_slot() else { break };
            let spec = self.plan_game(slot);
            self.buffer.push_back(spec);
        }
        self.buffer.pop_front()
    }
}

/// The scripted games that open a coverage run (the sample preset): every
/// timeout outcome of every kind, departures, agreed draws, auto picks, late
/// attempts, rare endings (re-drawn until they happen), tampered clients and
/// one game per fault code, whatever the random games then add.
#[rustfmt::skip]
fn coverage_script() -> VecDeque<(GameKind, Scenario)> {
    use GameKind::{Belote, Draughts10, Draughts8, Medieval};
    use LudoPreset::{Classic, Duel, Quick};
    let base = Scenario { arranged: Arranged::Coverage, ..Scenario::random() };
    let sit = |seat: usize, after: u32| Scenario { loser: Some((seat, LoseBy::Timeouts, after)), late_attempt: true, ..base };
    let leave = |seat: usize, reason: LeftReason, after: u32| Scenario { loser: Some((seat, LoseBy::Leave(reason), after)), ..base };
    let want = |text: &'static str| Scenario { want: Some(text), ..base };
    let tampered = |text: &'static str| Scenario { with: Some(Behaviour::TamperedClient), want: Some(text), ..base };
    let fault = |code: FaultCode| Scenario { fault: Some(code), ..base };
    VecDeque::from(vec![
        (Draughts10, sit(1, 12)),
        (Draughts8, sit(0, 9)),
        (Medieval, Scenario { auto_select: true, ..sit(1, 7) }),
        (GameKind::Ludo(Classic), Scenario { want: Some("\"auto\":true"), ..sit(2, 10) }),
        (GameKind::Ludo(Duel), sit(1, 8)),
        (GameKind::Ludo(Quick), leave(0, LeftReason::Disconnected, 6)),
        (GameKind::Ludo(Duel), leave(1, LeftReason::PageClosed, 5)),
        (Belote, Scenario { want: Some("\"bid\":\"pass\",\"status\":\"accepted\",\"think_ms\":30000,\"auto\":true"), ..sit(0, 20) }),
        (Belote, leave(1, LeftReason::PageClosed, 30)),
        (Draughts10, Scenario { draw_at: Some(24), ..base }),
        (Draughts8, Scenario { draw_at: Some(16), ..base }),
        (Medieval, Scenario { draw_at: Some(12), ..base }),
        (Medieval, leave(0, LeftReason::Resigned, 10)),
        (Draughts10, want("\"reason\":\"draw_rule\"")),
        (Draughts10, want("\"reason\":\"no_moves\"")),
        (Draughts10, want("\"accept\":false")),
        (Draughts8, want("\"reason\":\"repetition\"")),
        (Medieval, want("\"reason\":\"draw_rule\"")),
        (Belote, want("\"outcome\":\"litige\"")),
        (Belote, tampered("\"reason\":\"illegal\"")),
        (GameKind::Ludo(Quick), tampered("\"reason\":\"illegal\"")),
        (Draughts8, tampered("\"reason\":\"illegal\"")),
        (Draughts8, Scenario { with: Some(Behaviour::Bot), ..base }),
        (GameKind::Ludo(Duel), fault(FaultCode::WrongDie)),
        (Belote, fault(FaultCode::WrongDeal)),
        (Medieval, Scenario { want: Some("\"won\":false"), ..fault(FaultCode::WrongDuel) }),
        (Draughts10, fault(FaultCode::AcceptedIllegal)),
        (Draughts8, fault(FaultCode::TimeoutRule)),
        (GameKind::Ludo(Quick), fault(FaultCode::LateCommitment)),
        (Belote, fault(FaultCode::CommitmentMismatch)),
        (Draughts10, fault(FaultCode::WrongPayout)),
        (GameKind::Ludo(Quick), fault(FaultCode::SeedReused)),
        (Draughts8, fault(FaultCode::ChainBroken)),
        (Belote, fault(FaultCode::LateMove)),
        (GameKind::Ludo(Classic), fault(FaultCode::RejectedLegal)),
        (Medieval, fault(FaultCode::SeqGap)),
        (Belote, fault(FaultCode::WrongResult)),
        (GameKind::Ludo(Duel), fault(FaultCode::SeedMissing)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::population::BehaviourCounts;

    fn opts() -> SimOptions {
        SimOptions {
            games_per_day: 300,
            days: 2,
            accounts: 120,
            fault_rate: 0.2,
            ..SimOptions::default()
        }
    }

    #[test]
    fn specs_are_in_start_order_with_unique_ids_and_seeds() {
        let o = opts();
        let mut rng = Rng::derive(o.seed, stream::POPULATION, 0);
        let pop = Population::generate(
            &mut rng,
            120,
            BehaviourCounts::for_population(120, o.behaviour_rate),
            crate::population::Style::default(),
        );
        let specs: Vec<GameSpec> = Planner::new(&o, &pop, 0).collect();
        assert_eq!(specs.len(), 600);
        let mut last = i64::MIN;
        let mut seeds = std::collections::BTreeMap::new();
        for s in &specs {
            assert!(s.start_ms >= last);
            last = s.start_ms;
            assert_eq!(s.players.len(), s.kind.players());
            if let Some(seed) = &s.seed {
                seeds
                    .entry(seed.clone())
                    .or_insert_with(Vec::new)
                    .push(s.index);
            }
            if let Some(f) = s.fault {
                assert!(f.applies_to(s.kind, s.stake), "{f:?} on {:?}", s.kind);
            }
            let mut accs: Vec<usize> = s.players.iter().map(|p| p.account).collect();
            accs.sort_unstable();
            accs.dedup();
            assert_eq!(accs.len(), s.players.len());
        }
        for (seed, games) in seeds {
            if games.len() > 1 {
                assert_eq!(games.len(), 2, "{seed}");
                for g in games {
                    assert_eq!(specs[g as usize].fault, Some(FaultCode::SeedReused));
                }
            }
        }
    }
}
