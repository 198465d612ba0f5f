//! Fairness checks of one game: commitment present and on time, seed revealed and well-formed, every die, deal, duel and selection equal to its derivation.

use super::context::{Cx, Draw, Logged, NEVER_ENDED_AFTER_MS};
use super::finding::{Category, Code};
use crate::fairness::{self, SelectColor};
use crate::games::belote::{self as b, Card, PLAYERS};
use crate::log::{Body, syntax};

/// A game's fairness verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The game draws no randomness (standard draughts).
    NotApplicable,
    /// The seed is not revealed yet (game running).
    Pending,
    Pass,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::NotApplicable => "n/a",
            Verdict::Pending => "pending",
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// Checks everything `fairness.md` promises for one game, adding findings to `cx`. `horizon_ms` is
/// the latest time the replay has seen (of any game): a game that ended without its seed is
/// pending until it has been silent for [`NEVER_ENDED_AFTER_MS`], since the reveal may come in the
/// next file or micro-batch.
pub fn check_game(
    lines: &[Logged],
    ended: Option<&Logged>,
    revealed: Option<&Logged>,
    horizon_ms: i64,
    cx: &mut Cx<'_>,
) -> Verdict {
    let start = cx.start;
    if !start.kind.uses_seed(start.mode) {
        return Verdict::NotApplicable;
    }
    let before = cx
        .findings
        .iter()
        .filter(|f| f.category == Category::Fairness)
        .count();
    let start_seq = lines.first().map(Logged::seq).unwrap_or(0);
    let start_ts = cx.start_ts();
    match &start.commitment {
        None => {
            cx.find(
                start_seq,
                Code::CommitmentMissing,
                "no seed commitment in game_started",
            )
            .expected("64 lowercase hex characters");
        }
        Some(c) if !syntax::is_hex64(c) => {
            cx.find(
                start_seq,
                Code::CommitmentMissing,
                "the commitment is not a SHA-256 digest in lowercase hex",
            )
            .expected("64 lowercase hex characters")
            .logged(c.clone());
        }
        Some(_) => {}
    }
    if let Some((ts, seq)) = cx.draws.iter().filter_map(Draw::random_ts).min()
        && start_ts > ts
    {
        cx.find(
            start_seq,
            Code::LateCommitment,
            format!("the commitment was published after the first random draw (seq {seq})"),
        )
        .expected(format!("ts <= {}", syntax::format_ts(ts)))
        .logged(syntax::format_ts(start_ts));
    }
    // Where lines are missing (a seq_gap at the first seq after each hole).
    let gaps: Vec<i64> = cx
        .findings
        .iter()
        .filter(|f| f.code == Code::SeqGap)
        .map(|f| f.seq)
        .collect();
    check_numbers(&gaps, cx);
    let last_ts = lines.last().map_or(start_ts, Logged::ts);
    let Some(reveal) = revealed else {
        return match ended {
            Some(end) if horizon_ms - last_ts > NEVER_ENDED_AFTER_MS => {
                cx.find(
                    end.seq(),
                    Code::SeedMissing,
                    "the game ended but its seed was never revealed",
                )
                .expected("seed_revealed after game_ended");
                Verdict::Fail
            }
            _ if cx
                .findings
                .iter()
                .filter(|f| f.category == Category::Fairness)
                .count()
                > before =>
            {
                Verdict::Fail
            }
            _ => Verdict::Pending,
        };
    };
    // The seed comes after the last random event, and after game_ended (log-format.md): revealed
    // earlier, it lets the players foresee the draws still to come.
    let last_draw = cx
        .draws
        .iter()
        .filter_map(Draw::random_ts)
        .map(|(_, seq)| seq)
        .max();
    // Without game_ended, the reveal is early unless lines are missing before it (a seq_gap):
    // game_ended may be among them, in a file or micro-batch not read yet.
    let lines_missing = gaps.iter().any(|&g| g <= reveal.seq());
    let before_end = match ended {
        Some(end) => end.seq() > reveal.seq(),
        None => !lines_missing,
    };
    if before_end || last_draw.is_some_and(|seq| seq > reveal.seq()) {
        cx.find(
            reveal.seq(),
            Code::SeedEarly,
            match ended {
                Some(end) if end.seq() > reveal.seq() => format!(
                    "the seed was revealed before game_ended (seq {})",
                    end.seq()
                ),
                Some(_) => "the seed was revealed before the game's last random draw".to_string(),
                None => "the seed was revealed while the game is still running".to_string(),
            },
        )
        .expected(match ended {
            Some(end) => format!("seed_revealed after seq {}", end.seq()),
            None => "seed_revealed after game_ended".to_string(),
        })
        .logged(format!("seq {}", reveal.seq()));
    }
    let Body::SeedRevealed(s) = &reveal.event.body else {
        return Verdict::Fail;
    };
    let seed = s.seed.as_str();
    if let Err(e) = fairness::check_seed(seed) {
        cx.find(
            reveal.seq(),
            Code::SeedMalformed,
            format!("the revealed seed is malformed: {e}"),
        )
        .expected("64 lowercase hex characters")
        .logged(seed.to_string());
        return Verdict::Fail;
    }
    if let Some(c) = &start.commitment {
        let actual = fairness::commitment(seed);
        if &actual != c {
            cx.find(
                reveal.seq(),
                Code::CommitmentMismatch,
                "SHA-256 of the revealed seed differs from the commitment",
            )
            .expected(actual)
            .logged(c.clone());
        }
    }
    verify_draws(seed, cx);
    if cx
        .findings
        .iter()
        .filter(|f| f.category == Category::Fairness)
        .count()
        > before
    {
        Verdict::Fail
    } else {
        Verdict::Pass
    }
}

/// Roll numbers `n` and deal numbers count every roll of the game and every deal of the match,
/// redeals included, from 0 (fairness.md): each logged number is the next one. A number that is not
/// lets the server choose which derivation a draw shows, so it is a finding, once per break (the
/// count then goes on from the logged number). A jump over a gap in the game's seqs is not one: the
/// missing line (a `seq_gap`, whose seqs are `gaps`) may be the draw in between.
fn check_numbers(gaps: &[i64], cx: &mut Cx<'_>) {
    let mut breaks = Vec::new();
    // (what, next expected number, seq of the previous draw of that kind)
    let mut dice = (0i64, -1i64);
    let mut deals = (0i64, -1i64);
    for d in &cx.draws {
        let (what, number, seq, state) = match d {
            Draw::Die { seq, n, .. } => ("roll", *n, *seq, &mut dice),
            Draw::Deal { seq, deal, .. } => ("deal", *deal, *seq, &mut deals),
            _ => continue,
        };
        let (expected, prev_seq) = *state;
        let gap_between = gaps.iter().any(|&g| g > prev_seq && g <= seq);
        if number != expected && !(number > expected && gap_between) {
            breaks.push((seq, what, number, expected));
        }
        *state = (number.saturating_add(1), seq);
    }
    for (seq, what, number, expected) in breaks {
        cx.find(
            seq,
            Code::DrawMisnumbered,
            format!(
                "{what} number {number} logged where the game's count of {what}s is at {expected}"
            ),
        )
        .expected(expected.to_string())
        .logged(number.to_string());
    }
}

fn fmt_cards(cards: &[Card]) -> String {
    cards
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The men a side may select as medieval (its 12 starting men on the 8x8 board), ascending.
pub(crate) fn medieval_eligible(color: &str) -> Vec<u8> {
    if color == "white" {
        (21..=32).collect()
    } else {
        (1..=12).collect()
    }
}

pub(crate) fn same_cards(logged: &[String], expected: &[Card]) -> bool {
    let mut a: Vec<String> = logged.to_vec();
    let mut b: Vec<String> = expected.iter().map(|c| c.to_string()).collect();
    a.sort();
    b.sort();
    a == b
}

/// Every logged random outcome against its derivation from the revealed seed.
fn verify_draws(seed: &str, cx: &mut Cx<'_>) {
    let game = cx.game.to_string();
    let accounts = cx.accounts();
    let draws = std::mem::take(&mut cx.draws);
    let mut bad_deals = std::collections::BTreeSet::new();
    let mut deal_seq = std::collections::BTreeMap::new();
    for d in &draws {
        match d {
            Draw::Die { seq, n, value, .. } => {
                let Ok(n) = u64::try_from(*n) else { continue };
                let expected = fairness::die(seed, &game, n);
                if expected != *value {
                    cx.find(
                        *seq,
                        Code::WrongDie,
                        format!("roll {n} shows {value}, its derivation gives {expected}"),
                    )
                    .expected(expected.to_string())
                    .logged(value.to_string());
                }
            }
            Draw::Deal {
                seq,
                deal,
                hands,
                turned,
                ..
            } => {
                deal_seq.insert(*deal, *seq);
                let Some((deck, dealer_idx)) = deck_for(seed, &game, *deal) else {
                    continue;
                };
                let init = b::initial_deal(&deck, dealer_idx);
                // Every player's hand, each once: a hand missing or of another account is a deal
                // that cannot be the seed's.
                let mut wrong = deck[12].to_string() != *turned || hands.len() != accounts.len();
                for (acc, cards) in hands {
                    match accounts.iter().position(|a| a == acc) {
                        Some(i) => wrong |= !same_cards(cards, &init.hands[i]),
                        None => wrong = true,
                    }
                }
                if wrong {
                    bad_deals.insert(*deal);
                    let expected = accounts
                        .iter()
                        .enumerate()
                        .map(|(i, a)| format!("{a}: {}", fmt_cards(&init.hands[i])))
                        .collect::<Vec<_>>()
                        .join("; ");
                    let logged = hands
                        .iter()
                        .map(|(a, c)| format!("{a}: {}", c.join(" ")))
                        .collect::<Vec<_>>()
                        .join("; ");
                    cx.find(
                        *seq,
                        Code::WrongDeal,
                        format!("deal {deal} differs from the shuffle of its seed"),
                    )
                    .expected(format!("{expected}; turned {}", init.turned))
                    .logged(format!("{logged}; turned {turned}"));
                }
            }
            Draw::Completion {
                seq,
                deal,
                taker,
                hands,
            } => {
                if bad_deals.contains(deal) {
                    continue;
                }
                if !draws
                    .iter()
                    .any(|x| matches!(x, Draw::Deal { deal: dd, .. } if dd == deal))
                {
                    continue;
                }
                let Some((deck, dealer_idx)) = deck_for(seed, &game, *deal) else {
                    continue;
                };
                // A taker who is not a player takes the dealer's partner's place: the hands
                // then differ from any the seed gives, as for a hand missing or of another account.
                let taker_idx = accounts.iter().position(|a| a == taker);
                let expected = b::completed_hands(&deck, dealer_idx, taker_idx.unwrap_or(0));
                let wrong = taker_idx.is_none()
                    || hands.len() != accounts.len()
                    || hands.iter().any(|(acc, cards)| {
                        accounts
                            .iter()
                            .position(|a| a == acc)
                            .is_none_or(|i| !same_cards(cards, &expected[i]))
                    });
                if wrong {
                    bad_deals.insert(*deal);
                    let at = deal_seq.get(deal).copied().unwrap_or(*seq);
                    cx.find(
                        at,
                        Code::WrongDeal,
                        format!(
                            "deal {deal}: the completed hands differ from the shuffle of its seed"
                        ),
                    )
                    .expected(
                        accounts
                            .iter()
                            .enumerate()
                            .map(|(i, a)| format!("{a}: {}", fmt_cards(&expected[i])))
                            .collect::<Vec<_>>()
                            .join("; "),
                    )
                    .logged(
                        hands
                            .iter()
                            .map(|(a, c)| format!("{a}: {}", c.join(" ")))
                            .collect::<Vec<_>>()
                            .join("; "),
                    );
                }
            }
            Draw::Duel {
                seq,
                m,
                victim,
                won,
                account,
                ..
            } => {
                let expected = fairness::duel(seed, &game, *m);
                if expected != *won {
                    let word = |w: bool| if w { "won" } else { "lost" };
                    cx.find(
                        *seq,
                        Code::WrongDuel,
                        format!(
                            "duel {m} (victim {victim}) logged {}, its derivation gives {}",
                            word(*won),
                            word(expected)
                        ),
                    )
                    .account(account)
                    .expected(word(expected))
                    .logged(word(*won));
                }
            }
            Draw::Selection {
                seq,
                color,
                account,
                chosen,
                auto,
                ..
            } => {
                if auto.is_empty() {
                    continue;
                }
                let (Ok(c), eligible) = (color.parse::<SelectColor>(), medieval_eligible(color))
                else {
                    continue;
                };
                let expected = fairness::auto_select(seed, &game, c, chosen, &eligible);
                let mut e = expected.clone();
                let mut l = auto.clone();
                e.sort_unstable();
                l.sort_unstable();
                if e != l {
                    cx.find(
                        *seq,
                        Code::WrongSelection,
                        format!("the automatic picks of {color} differ from their derivation"),
                    )
                    .account(account)
                    .expected(format!("{expected:?}"))
                    .logged(format!("{auto:?}"));
                }
            }
        }
    }
    cx.draws = draws;
}

/// The shuffled deck of a deal and the index of its dealer by the rules (the second player
/// listed deals deal 0, then the deal alternates), not the logged one: a server that names
/// another dealer hands the cards out in another order, which the players' cards show.
pub(crate) fn deck_for(seed: &str, game: &str, deal: i64) -> Option<([Card; 32], usize)> {
    let deal = u32::try_from(deal).ok()?;
    let deck = b::deck_from_indices(&fairness::shuffle(seed, game, deal)).ok()?;
    let dealer = b::dealer_of(deal);
    (dealer < PLAYERS).then_some((deck, dealer))
}
