//! The sample preset exercises every event type of every game and mode, every timeout outcome, every reachable end reason, and more.

use std::collections::BTreeSet;

use vigie::log::{Body, EventType, Kind, Mode, MoveAction};

use crate::sim::common::sample;

#[test]
fn sample_covers_every_event_type_and_outcome() {
    let absent = gaps(sample());
    assert!(absent.is_empty(), "the sample misses {absent:?}");
}

/// Seed search for the sample preset: `cargo test --test it sample_seed_search -- --ignored --nocapture`.
#[test]
#[ignore]
fn sample_seed_search() {
    for seed in 20_261_122u64..20_261_222 {
        let mut o = vigie::sim::SimOptions::sample();
        o.seed = seed;
        let run = crate::sim::common::run_into(
            &o,
            &std::env::temp_dir().join(format!("vigie-seed-{seed}")),
        );
        let g = gaps(&run);
        println!("{seed}: {g:?}");
        if g.is_empty() {
            break;
        }
    }
}

fn gaps(run: &crate::sim::common::Run) -> Vec<String> {
    let games = run.games();
    assert!((20..=150).contains(&games.len()), "{} games", games.len());
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut note = |s: String| {
        seen.insert(s);
    };
    for g in games.values() {
        let Body::GameStarted(start) = &g.lines[0].1.body else {
            panic!()
        };
        let kind = match (start.kind, start.mode) {
            (Kind::Draughts8, Mode::Medieval) => "medieval".to_string(),
            (Kind::Ludo, _) => match &start.variant {
                Some(vigie::log::Variant::Ludo(v)) => format!("ludo_{}", v.name),
                _ => "ludo".to_string(),
            },
            (k, _) => k.as_str().to_string(),
        };
        note(format!("kind:{kind}"));
        let mut last_roll: Option<(String, u8)> = None;
        let mut sixes = 0;
        for (i, (_, e)) in g.lines.iter().enumerate() {
            note(format!("type:{}", e.event_type()));
            note(format!("{kind}:{}", e.event_type()));
            match &e.body {
                Body::Selection(s) if !s.auto.is_empty() => note("selection:auto".into()),
                Body::Move(m) => {
                    if let Some(r) = m.attempt.reason {
                        note(format!("rejected:{}", r.as_str()));
                        note(format!("{kind}:rejected:{}", r.as_str()));
                    }
                    if m.attempt.is_auto() {
                        note(format!("{kind}:auto_move"));
                    }
                    if m.action == MoveAction::Pass {
                        note("ludo:pass".into());
                    }
                    if m.duels.as_ref().is_some_and(|d| d.iter().any(|x| !x.won)) {
                        note("duel:lost".into());
                    }
                    if m.duels.as_ref().is_some_and(|d| d.iter().any(|x| x.won)) {
                        note("duel:won".into());
                    }
                }
                Body::Roll(r) => {
                    let same = last_roll.as_ref().is_some_and(|(p, _)| *p == r.player);
                    if same {
                        note("ludo:bonus_roll".into());
                    }
                    sixes = if r.value == 6 {
                        if same { sixes + 1 } else { 1 }
                    } else {
                        0
                    };
                    if sixes == 3 {
                        // A third six: nothing of this player follows; the next event is another player's roll.
                        if let Some((_, next)) = g.lines.get(i + 1)
                            && let Body::Roll(n) = &next.body
                            && n.player != r.player
                        {
                            note("ludo:third_six".into());
                        }
                    }
                    last_roll = Some((r.player.clone(), r.value));
                }
                Body::Bid(b) => {
                    note(format!(
                        "bid:round{}:{}",
                        b.round,
                        if b.bid.len() == 1 {
                            "suit"
                        } else {
                            b.bid.as_str()
                        }
                    ));
                    if b.attempt.is_auto() {
                        note("belote:auto_bid".into());
                    }
                }
                Body::Play(p) => {
                    if let Some(a) = p.announce {
                        note(format!("announce:{}", a.as_str()));
                    }
                    if p.attempt.is_auto() {
                        note("belote:auto_play".into());
                    }
                    if let Some(r) = p.attempt.reason {
                        note(format!("belote:rejected:{}", r.as_str()));
                    }
                }
                Body::DealEnded(d) => note(format!("deal:{}", d.outcome.as_str())),
                Body::Timeout(t) => note(format!("{kind}:timeout:{}", t.outcome.as_str())),
                Body::DrawAnswer(a) => note(format!("draw_answer:{}", a.accept)),
                Body::Left(l) => note(format!("left:{}", l.reason.as_str())),
                Body::GameEnded(ge) => {
                    note(format!("reason:{}", ge.reason.as_str()));
                    note(format!("{kind}:reason:{}", ge.reason.as_str()));
                    if ge.result == "draw" {
                        note("result:draw".into());
                    }
                }
                _ => {}
            }
        }
    }
    for t in EventType::ALL {
        assert!(seen.contains(&format!("type:{t}")), "no {t} event");
    }
    // Every event type each game and mode can log.
    let draughts = [
        "game_started",
        "move",
        "timeout",
        "draw_offer",
        "draw_answer",
        "left",
        "game_ended",
    ];
    let per_kind: [(&str, &[&str]); 7] = [
        ("draughts10", &draughts),
        ("draughts8", &draughts),
        (
            "medieval",
            &[
                "selection",
                "seed_revealed",
                "game_started",
                "move",
                "timeout",
                "draw_offer",
                "draw_answer",
                "left",
                "game_ended",
            ],
        ),
        (
            "ludo_classic",
            &[
                "game_started",
                "roll",
                "move",
                "timeout",
                "game_ended",
                "seed_revealed",
            ],
        ),
        (
            "ludo_duel",
            &[
                "game_started",
                "roll",
                "move",
                "timeout",
                "left",
                "game_ended",
                "seed_revealed",
            ],
        ),
        (
            "ludo_quick",
            &[
                "game_started",
                "roll",
                "move",
                "timeout",
                "left",
                "game_ended",
                "seed_revealed",
            ],
        ),
        (
            "belote",
            &[
                "game_started",
                "deal",
                "bid",
                "hands_completed",
                "play",
                "deal_ended",
                "timeout",
                "left",
                "game_ended",
                "seed_revealed",
            ],
        ),
    ];
    let mut absent = Vec::new();
    for (kind, types) in per_kind {
        for t in types {
            if !seen.contains(&format!("{kind}:{t}")) {
                absent.push(format!("{kind}:{t}"));
            }
        }
    }
    for k in ["draughts10", "draughts8", "medieval", "ludo_classic"] {
        for r in ["illegal", "not_your_turn"] {
            if !seen.contains(&format!("{k}:rejected:{r}")) {
                absent.push(format!("{k}:rejected:{r}"));
            }
        }
    }
    if !absent.is_empty() {
        return absent;
    }
    let want = [
        "kind:draughts10",
        "kind:draughts8",
        "kind:medieval",
        "kind:ludo_classic",
        "kind:ludo_duel",
        "kind:ludo_quick",
        "kind:belote",
        "selection:auto",
        "medieval:selection",
        "duel:won",
        "duel:lost",
        "rejected:illegal",
        "rejected:not_your_turn",
        "rejected:malformed",
        "rejected:game_over",
        "draughts10:rejected:illegal",
        "draughts8:auto_move",
        "medieval:auto_move",
        "ludo:pass",
        "ludo:bonus_roll",
        "ludo:third_six",
        "ludo_classic:auto_move",
        "bid:round1:take",
        "bid:round1:pass",
        "bid:round2:suit",
        "bid:round2:pass",
        "belote:auto_bid",
        "belote:auto_play",
        "belote:rejected:illegal",
        "announce:belote",
        "announce:rebelote",
        "deal:made",
        "deal:dedans",
        "deal:void",
        "deal:litige",
        "draughts10:timeout:loss",
        "draughts8:timeout:auto",
        "draughts8:timeout:loss",
        "medieval:timeout:auto",
        "medieval:timeout:loss",
        "ludo_classic:timeout:auto",
        "ludo_classic:timeout:forfeit",
        "ludo_duel:timeout:forfeit",
        "belote:timeout:auto",
        "belote:timeout:loss",
        "draw_answer:true",
        "draw_answer:false",
        "left:page_closed",
        "left:disconnected",
        "left:resigned",
        "reason:no_pieces",
        "reason:no_moves",
        "reason:timeout",
        "reason:timeouts",
        "reason:left",
        "reason:draw_rule",
        "reason:repetition",
        "reason:agreement",
        "reason:finished",
        "reason:target",
        "ludo_duel:reason:timeouts",
        "belote:reason:timeouts",
        "belote:reason:left",
        "medieval:reason:draw_rule",
        "result:draw",
    ];
    let missing: Vec<&str> = want
        .iter()
        .copied()
        .filter(|w| !seen.contains(*w))
        .collect();
    if !missing.is_empty() {
        return missing.iter().map(|m| m.to_string()).collect();
    }
    // Every behaviour and every fault code.
    let codes: BTreeSet<&str> = run.labels["faults"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["code"].as_str())
        .collect();
    let mut absent = Vec::new();
    for c in vigie::sim::plan::FaultCode::ALL {
        if !codes.contains(c.as_str()) {
            absent.push(format!("fault:{}", c.as_str()));
        }
    }
    let b = &run.labels["summary"]["behaviours"];
    for k in [
        "tampered_client",
        "rage_quit",
        "sitter",
        "staller",
        "chip_dumping",
        "win_trading",
        "bot",
        "shared_device",
    ] {
        if b[k].as_u64().unwrap_or(0) < 2 {
            absent.push(format!("behaviour:{k}"));
        }
    }
    absent
}
