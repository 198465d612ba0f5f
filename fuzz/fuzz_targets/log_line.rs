//! Fuzz target: any bytes as one server log line. The parser never panics; the fast scanner reads
//! exactly what serde_json reads; a valid event written back by the canonical writer parses to the
//! same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigie_log::{
    parse::fuzzing::scanner_agrees_with_serde, parse_line, parse_line_detail, to_line,
};

fuzz_target!(|line: &[u8]| {
    scanner_agrees_with_serde(line);
    if let Ok(p) = parse_line_detail(line) {
        let written = to_line(&p.event);
        assert_eq!(
            parse_line(written.as_bytes()).as_ref(),
            Ok(&p.event),
            "written back as {written}"
        );
    }
});
