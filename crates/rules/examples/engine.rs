//! A minimal engine loop over stdin, for playing matches while tuning the search: one FEN per
//! line in, one JSON line out with the chosen move. `vigie draughts analyse --fen -` is the
//! command for users.
//!
//! ```sh
//! cargo run --release -p vigie-rules --example engine -- international 100 <<< "W:W31-50:B1-20"
//! ```

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use vigie_rules::games::draughts::search::{Engine, Limits};
use vigie_rules::games::draughts::{Position, Variant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let variant = match args.get(1).map(String::as_str) {
        Some("brazilian") => Variant::Brazilian,
        _ => Variant::International,
    };
    let movetime: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let mut engine = Engine::new(64);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let fen = line.trim();
        if fen == "new" {
            engine.clear();
            continue;
        }
        let reply = match Position::from_fen(variant, fen) {
            Err(e) => format!("{{\"error\":\"{e}\"}}"),
            Ok(pos) => {
                let limits = Limits {
                    deadline: Some(Instant::now() + Duration::from_millis(movetime)),
                    ..Limits::default()
                };
                let a = engine.analyse(&pos, &limits, 1);
                match a.lines.first() {
                    None => "{\"move\":null}".to_string(),
                    Some(l) => format!(
                        "{{\"move\":\"{}\",\"from\":{},\"to\":{},\"captures\":{:?},\"score\":{},\"depth\":{},\"nodes\":{}}}",
                        l.mv.to_full_string(),
                        l.mv.from().number(),
                        l.mv.to().number(),
                        l.mv.captures()
                            .iter()
                            .map(|s| s.number())
                            .collect::<Vec<_>>(),
                        l.score.to_cp(),
                        a.depth,
                        a.nodes
                    ),
                }
            }
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}
