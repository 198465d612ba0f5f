//! Lines exactly per the log format, files per server per day, time order, endings.

use std::collections::BTreeMap;

use vigie::log::{Body, parse_line, to_line};

use crate::sim::common::{clean, faulty, sample};

#[test]
fn every_line_parses_and_is_canonical() {
    for run in [clean(), sample()] {
        assert!(!run.lines.is_empty());
        for l in &run.lines {
            let e = match parse_line(&l.bytes) {
                Ok(e) => e,
                Err(r) => panic!("{}:{}: {r}", l.file, l.line),
            };
            assert_eq!(
                to_line(&e).as_bytes(),
                &l.bytes[..],
                "{}:{} is not canonical",
                l.file,
                l.line
            );
        }
    }
}

#[test]
fn one_file_per_server_per_day_last_day_plain() {
    for run in [clean(), faulty(), sample()] {
        let window = &run.labels["window"];
        let last = window[1].as_str().unwrap_or("");
        let mut files: Vec<&str> = run.lines.iter().map(|l| l.file.as_str()).collect();
        files.dedup();
        assert!(!files.is_empty());
        for f in &files {
            let (srv, name) = f.split_once('/').unwrap_or(("", ""));
            assert!(srv.starts_with("srv-") && srv.len() == 6, "{f}");
            let day = &name[..10];
            assert!(
                vigie::log::syntax::parse_ts(&format!("{day}T00:00:00.000Z")).is_ok(),
                "{f}"
            );
            if day == last {
                assert!(
                    name.ends_with(".jsonl") && !name.ends_with(".gz"),
                    "{f} should be plain"
                );
            } else {
                assert!(name.ends_with(".jsonl.gz"), "{f} should be compressed");
                assert!(day < last);
            }
        }
        // Each line sits in the file of the UTC day of its (write) time.
        let mut wt: BTreeMap<String, i64> = BTreeMap::new();
        let malformed: Vec<(String, u64)> = run.labels["malformed"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["file"].as_str().unwrap_or("").to_string(),
                    m["line"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        let mut last_in_file: BTreeMap<&str, i64> = BTreeMap::new();
        for l in &run.lines {
            if malformed.contains(&(l.file.clone(), l.line)) {
                continue;
            }
            let Ok(e) = parse_line(&l.bytes) else {
                panic!("{}:{}", l.file, l.line)
            };
            let t = wt.entry(e.game.clone()).or_insert(i64::MIN);
            *t = (*t).max(e.ts);
            let date = vigie::log::syntax::date_of(*t);
            assert!(
                l.file.contains(&date),
                "{}:{} written at {date}",
                l.file,
                l.line
            );
            let prev = last_in_file.entry(l.file.as_str()).or_insert(i64::MIN);
            assert!(*t >= *prev, "{}:{} out of time order", l.file, l.line);
            *prev = *t;
        }
    }
}

#[test]
fn clean_games_are_well_formed_from_start_to_end() {
    let games = clean().games();
    assert!(games.len() > 500, "{} games", games.len());
    for (id, g) in &games {
        let evs: Vec<&vigie::log::Event> = g.lines.iter().map(|(_, e)| e).collect();
        let Body::GameStarted(start) = &evs[0].body else {
            panic!("{id} does not start with game_started")
        };
        for (i, e) in evs.iter().enumerate() {
            assert_eq!(e.seq, i as i64, "{id}: seq");
            if i > 0 {
                assert_eq!(
                    e.prev.as_deref(),
                    Some(vigie::fairness::commitment(&g.lines[i - 1].0).as_str()),
                    "{id}: prev of {i}"
                );
                assert!(e.ts >= evs[i - 1].ts, "{id}: time goes back at seq {i}");
            }
        }
        let seeded = start.kind.uses_seed(start.mode);
        let end = evs
            .iter()
            .rposition(|e| matches!(e.body, Body::GameEnded(_)));
        let Some(end) = end else {
            panic!("{id} never ends")
        };
        let last = evs.len() - 1;
        if seeded {
            assert!(
                matches!(evs[last].body, Body::SeedRevealed(_)),
                "{id}: seed_revealed must close a seeded game"
            );
            let Body::SeedRevealed(s) = &evs[last].body else {
                continue;
            };
            assert_eq!(
                start.commitment.as_deref(),
                Some(vigie::fairness::commitment(&s.seed).as_str())
            );
            assert!(vigie::fairness::check_seed(&s.seed).is_ok());
        } else {
            assert!(start.commitment.is_none());
        }
        let Body::GameEnded(ge) = &evs[end].body else {
            continue;
        };
        let pot = start.stake * start.players.len() as i64;
        assert_eq!(
            ge.payouts.iter().map(|p| p.1).sum::<i64>() + ge.rake,
            pot,
            "{id}: pot"
        );
        if ge.result == "draw" {
            assert_eq!(ge.rake, 0);
            assert!(ge.payouts.iter().all(|p| p.1 == start.stake));
        } else {
            assert_eq!(ge.rake, pot * 5 / 100, "{id}: rake");
            let keys: Vec<&str> = ge.payouts.iter().map(|p| p.0.as_str()).collect();
            let players: Vec<&str> = start.players.iter().map(|p| p.account.as_str()).collect();
            assert_eq!(keys, players, "{id}: payouts in player order");
        }
    }
}

#[test]
fn seeds_are_unique_in_clean_runs() {
    let mut seen = std::collections::BTreeSet::new();
    for g in clean().games().values() {
        for (_, e) in &g.lines {
            if let Body::SeedRevealed(s) = &e.body {
                assert!(seen.insert(s.seed.clone()), "seed reused by {}", g.id);
            }
        }
    }
    assert!(seen.len() > 100);
}
