//! A fast, strict scanner of one JSON object into its top-level (key, raw value) pairs: the common lines, with serde_json for the rest.
//!
//! It answers only when it is sure: a line whose every string is free of escapes, whose values are
//! nested at most [`MAX_DEPTH`] deep inside its object, and which is valid JSON (RFC 8259, as
//! serde_json reads it). Anything else, valid or
//! not, gives `None`, and the caller parses the line with serde_json, which also words the error
//! of an invalid line. So the pairs it returns are the ones serde_json would return, and no line
//! serde_json refuses is ever taken.

/// Deepest nesting the scanner follows (the log's deepest value, `hands`, is 2).
pub const MAX_DEPTH: u32 = 16;

/// The (key, raw value) pairs of the object `s`, in order, or `None` when unsure.
pub fn object(s: &str) -> Option<Vec<(std::borrow::Cow<'_, str>, &str)>> {
    let b = s.as_bytes();
    let start = ws(b, 0);
    let mut items = Vec::with_capacity(12);
    let mut spans_ok = true;
    let end = members(
        b,
        start,
        1,
        &mut |key, value| match (s.get(key), s.get(value)) {
            (Some(k), Some(v)) => items.push((std::borrow::Cow::Borrowed(k), v)),
            _ => spans_ok = false,
        },
    )?;
    (spans_ok && ws(b, end) == b.len()).then_some(items)
}

/// The index after the object starting at `i` (at its `{`), its values at nesting `depth`; each
/// member's key (without quotes) and value are given to `member` as byte ranges.
fn members(
    b: &[u8],
    i: usize,
    depth: u32,
    member: &mut impl FnMut(std::ops::Range<usize>, std::ops::Range<usize>),
) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i + 1)?;
        let key = i + 1..key_end;
        i = ws(b, key_end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = ws(b, i + 1);
        i = value(b, start, depth)?;
        member(key, start..i);
        i = ws(b, i);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The index after JSON whitespace from `i`.
#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if c == b' ' || c == b'\n' || c == b'\t' || c == b'\r' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether one of the 8 bytes of `x` is below 0x20, a quote or a backslash.
#[inline]
fn special(x: u64) -> bool {
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
    (below | zero(x ^ (ONES * u64::from(b'"'))) | zero(x ^ (ONES * u64::from(b'\\')))) != 0
}

/// The index of the closing quote of a string whose content starts at `i`; `None` at an escape,
/// a control character or the end of the input.
#[inline]
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if special(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' {
            return Some(i);
        }
        if c == b'\\' || c < 0x20 {
            return None;
        }
        i += 1;
    }
    None
}

/// The index after the value starting at `i` (no whitespace before it), at nesting `depth`.
fn value(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i + 1).map(|e| e + 1),
        b'{' if depth <= MAX_DEPTH => members(b, i, depth + 1, &mut |_, _| {}),
        b'[' if depth <= MAX_DEPTH => {
            let mut i = ws(b, i + 1);
            if b.get(i) == Some(&b']') {
                return Some(i + 1);
            }
            loop {
                i = ws(b, value(b, i, depth + 1)?);
                match b.get(i) {
                    Some(b',') => i = ws(b, i + 1),
                    Some(b']') => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        b'-' | b'0'..=b'9' => number(b, i),
        _ => None,
    }
}

#[inline]
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

#[inline]
fn digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(b, i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(b, i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(b, i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_json's reading of a line (the parser's own fallback): its top-level pairs, or `None`
    /// when it refuses it.
    fn serde_pairs(s: &str) -> Option<Vec<(String, String)>> {
        serde_json::from_str::<crate::parse::TopLevel<'_>>(s)
            .ok()
            .map(|t| {
                t.0.into_iter()
                    .map(|(k, v)| (k.into_owned(), v.to_string()))
                    .collect()
            })
    }

    fn scanned(s: &str) -> Option<Vec<(String, String)>> {
        object(s).map(|v| {
            v.into_iter()
                .map(|(k, v)| (k.into_owned(), v.to_string()))
                .collect()
        })
    }

    /// Whatever the scanner takes, serde_json takes with the same pairs.
    fn agrees(s: &str) {
        if let Some(pairs) = scanned(s) {
            assert_eq!(Some(pairs), serde_pairs(s), "{s:?}");
        }
    }

    #[test]
    fn the_log_lines_are_scanned_as_serde_reads_them() {
        let text = include_str!("../../../tests/fixtures/server-logs/sample.jsonl");
        let mut lines = 0;
        for line in text.lines() {
            let pairs = scanned(line);
            assert!(pairs.is_some(), "a clean line not scanned: {line}");
            assert_eq!(pairs, serde_pairs(line), "{line}");
            lines += 1;
        }
        assert!(lines > 1000, "{lines} lines");
    }

    #[test]
    fn nothing_serde_refuses_is_taken() {
        for bad in [
            "",
            "{",
            "}",
            "{}x",
            "{\"a\":1,}",
            "{\"a\":1 \"b\":2}",
            "{\"a\"1}",
            "{a:1}",
            "{\"a\":01}",
            "{\"a\":-}",
            "{\"a\":1.}",
            "{\"a\":.5}",
            "{\"a\":1e}",
            "{\"a\":1e+}",
            "{\"a\":+1}",
            "{\"a\":tru}",
            "{\"a\":nul}",
            "{\"a\":[1,]}",
            "{\"a\":[1 2]}",
            "{\"a\":{\"b\"}}",
            "{\"a\":{\"b\":1,}}",
            "{\"a\":\"x\ty\"}",
            "{\"a\":\"x\u{1}\"}",
            "{\"a\":'x'}",
            "{\"a\":NaN}",
            "{\"a\":Infinity}",
            "{\"a\":[}",
            "{\"a\":\"}",
            "[1]",
            "{\"a\":1}}",
            "{\"a\":0x10}",
            "{\"a\":1}\u{a0}",
        ] {
            assert_eq!(scanned(bad), None, "{bad:?} taken");
            agrees(bad);
        }
        // Valid, but left to serde_json: escapes and deep nesting.
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(20), "]".repeat(20));
        for unsure in ["{\"a\":\"x\\\"y\"}", "{\"a\\u0041\":1}", deep.as_str()] {
            assert!(serde_pairs(unsure).is_some(), "{unsure}");
            assert_eq!(scanned(unsure), None, "{unsure:?}");
        }
        for good in [
            "{}",
            " { } ",
            "{\"a\":-0.5e+10,\"b\":[],\"c\":{},\"d\":[true,false,null]}",
            "{\"a\" : \"é ü \u{7f}\" , \"a\":1}",
            "\t{\"x\":[ {\"y\" :[ 1 , 2 ]} ]}\r\n",
            "{\"a\":0,\"b\":-0,\"c\":10E3,\"d\":1.25}",
        ] {
            assert_eq!(scanned(good), serde_pairs(good), "{good:?}");
            assert!(scanned(good).is_some(), "{good:?}");
        }
    }

    #[test]
    fn every_one_byte_change_of_a_line_is_read_as_serde_reads_it() {
        let text = include_str!("../../../tests/fixtures/server-logs/sample.jsonl");
        let replacements = b"\"\\{}[],:0-9.eE+ tfnx\x01\x7f";
        let mut taken = 0;
        for line in text.lines().step_by(37).take(60) {
            let bytes = line.as_bytes();
            for at in 0..bytes.len() {
                for &r in replacements {
                    let mut b = bytes.to_vec();
                    b[at] = r;
                    if let Ok(s) = std::str::from_utf8(&b) {
                        agrees(s);
                        taken += usize::from(scanned(s).is_some());
                    }
                    let mut cut = bytes.to_vec();
                    cut.remove(at);
                    if let Ok(s) = std::str::from_utf8(&cut) {
                        agrees(s);
                    }
                }
            }
        }
        assert!(taken > 1000, "{taken}");
    }

    #[test]
    fn the_word_test_finds_each_special_byte_at_each_place() {
        for place in 0..8 {
            for special_byte in [b'"', b'\\', 0x00, 0x1f] {
                let mut w = [b'a'; 8];
                w[place] = special_byte;
                assert!(special(u64::from_le_bytes(w)), "{special_byte} at {place}");
            }
            for plain in [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff] {
                let mut w = [b'a'; 8];
                w[place] = plain;
                assert!(!special(u64::from_le_bytes(w)), "{plain} at {place}");
            }
        }
    }
}
