//! Value syntax of log format v1: timestamps, identifiers, hex digests, cards and PDN moves.

/// Milliseconds since the Unix epoch, UTC.
pub type EpochMs = i64;

/// Parses a timestamp as the log format allows it: RFC 3339 UTC with milliseconds,
/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, and returns epoch milliseconds. As RFC 3339 allows, `T` and `Z` may
/// be lower case and UTC may be written `+00:00` (or `-00:00`); any other offset is not UTC and is
/// refused, and so is a leap second (`:60`: none has been inserted since 2016, and none will be).
pub fn parse_ts(s: &str) -> Result<EpochMs, &'static str> {
    let b = s.as_bytes();
    let utc = match b.len() {
        24 => matches!(b[23], b'Z' | b'z'),
        29 => matches!(&b[23..], b"+00:00" | b"-00:00"),
        _ => return Err("expected YYYY-MM-DDTHH:MM:SS.mmmZ (24 characters)"),
    };
    let sep_ok = b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't')
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && utc;
    if !sep_ok {
        return Err("expected YYYY-MM-DDTHH:MM:SS.mmmZ in UTC");
    }
    let num = |from: usize, to: usize| -> Result<i64, &'static str> {
        let mut v = 0i64;
        for &c in &b[from..to] {
            if !c.is_ascii_digit() {
                return Err("non-digit in a date or time field");
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Ok(v)
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second, milli) = (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?);
    if !(1..=12).contains(&month) {
        return Err("month out of range");
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err("day out of range for the month");
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err("time of day out of range");
    }
    let days = days_from_civil(year, month, day);
    Ok(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli)
}

/// Formats epoch milliseconds as the log's timestamp shape.
pub fn format_ts(ms: EpochMs) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// The UTC calendar date (`YYYY-MM-DD`) of epoch milliseconds.
pub fn date_of(ms: EpochMs) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 of a UTC date given as epoch milliseconds.
pub fn epoch_day(ms: EpochMs) -> i32 {
    // Any representable log timestamp (years 0000-9999) fits in i32 days.
    ms.div_euclid(86_400_000) as i32
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Howard Hinnant's days-from-civil algorithm.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Game and match ids: 1-64 characters of `[A-Za-z0-9._-]`.
pub fn is_game_id(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(is_id_byte)
}

/// Most characters of an account.
pub const MAX_ACCOUNT_CHARS: usize = 128;

/// Accounts: the contract says only "strings such as `acc-10482`", so any string of 1 to
/// [`MAX_ACCOUNT_CHARS`] characters with no control character (`/`, `:`, `'`, spaces, letters of
/// any script...). Whatever names a page or a query with one escapes it there.
pub fn is_account(s: &str) -> bool {
    !s.is_empty() && s.chars().count() <= MAX_ACCOUNT_CHARS && !s.chars().any(char::is_control)
}

/// Most characters of an `ip` or `device` hash.
pub const MAX_HASH_CHARS: usize = 256;

/// `ip` and `device`: opaque hashes made by the server, in whatever encoding it uses (hex, base64
/// with `+`, `/` and `=`, ...): 1 to [`MAX_HASH_CHARS`] characters, none of them a control character.
pub fn is_hash_text(s: &str) -> bool {
    !s.is_empty() && s.chars().count() <= MAX_HASH_CHARS && !s.chars().any(char::is_control)
}

/// Whether `s` is a raw network address rather than a hash (log-format.md: `ip` and `device` are
/// "never raw addresses"): an IPv4 or IPv6 address, with or without a port, or a MAC address
/// (six pairs of hex digits separated by `:` or `-`).
pub fn is_raw_address(s: &str) -> bool {
    if !s.contains(['.', ':', '-']) {
        return false;
    }
    if s.parse::<std::net::IpAddr>().is_ok() || s.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let b = s.as_bytes();
    b.len() == 17
        && b.chunks(3).enumerate().all(|(i, c)| {
            c[0].is_ascii_hexdigit()
                && c[1].is_ascii_hexdigit()
                && (i == 5 || c.get(2).is_some_and(|&sep| sep == b':' || sep == b'-'))
        })
        && (b[2] == b[5] && b[5] == b[8] && b[8] == b[11] && b[11] == b[14])
}

fn is_id_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-'
}

/// Exactly 64 lowercase hexadecimal characters (a SHA-256 digest or a seed).
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// A card: rank `7 8 9 T J Q K A` then suit `S H D C`, e.g. `TD`.
pub fn is_card(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 2 && b"789TJQKA".contains(&b[0]) && is_suit_byte(b[1])
}

/// A suit letter `S H D C`.
pub fn is_suit(s: &str) -> bool {
    s.len() == 1 && is_suit_byte(s.as_bytes()[0])
}

fn is_suit_byte(c: u8) -> bool {
    matches!(c, b'S' | b'H' | b'D' | b'C')
}

/// The syntax of a PDN move as servers log accepted moves: squares 1-50
/// separated by `-` (a single step or king move: exactly two squares) or by
/// `x` (a capture, two or more squares). Whether the squares exist on the
/// game's board is the replay's business.
pub fn is_pdn_move(s: &str) -> bool {
    let sep = if s.contains('x') { b'x' } else { b'-' };
    let mut count = 0;
    for part in s.split(sep as char) {
        let ok = !part.is_empty()
            && part.len() <= 2
            && part.bytes().all(|c| c.is_ascii_digit())
            && !part.starts_with('0')
            && part.parse::<u8>().is_ok_and(|n| (1..=50).contains(&n));
        if !ok {
            return false;
        }
        count += 1;
    }
    if sep == b'-' { count == 2 } else { count >= 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        let ms = parse_ts("2026-11-29T20:15:03.120Z").unwrap();
        assert_eq!(format_ts(ms), "2026-11-29T20:15:03.120Z");
        assert_eq!(date_of(ms), "2026-11-29");
        assert_eq!(parse_ts("1970-01-01T00:00:00.000Z"), Ok(0));
        assert_eq!(parse_ts("2024-02-29T00:00:00.001Z"), Ok(1_709_164_800_001));
        // The other spellings of UTC that RFC 3339 allows.
        for same in [
            "2026-11-29t20:15:03.120z",
            "2026-11-29T20:15:03.120z",
            "2026-11-29T20:15:03.120+00:00",
            "2026-11-29T20:15:03.120-00:00",
        ] {
            assert_eq!(parse_ts(same), Ok(ms), "{same}");
        }
    }

    #[test]
    fn timestamps_rejected() {
        for bad in [
            "2026-11-29T20:15:03Z",
            "2026-11-29T20:15:03.12Z",
            "2026-11-29 20:15:03.120Z",
            "2026-11-29T20:15:03.120+01:00",
            "2026-11-29T20:15:03.120+00:30",
            "2026-11-29T20:15:03.120+0000",
            "2026-11-29T20:15:03.120Z00:00",
            "2026-11-29T20:15:03.120 ",
            "2026-13-01T00:00:00.000Z",
            "2025-02-29T00:00:00.000Z",
            "2026-11-29T24:00:00.000Z",
            "2026-11-29T23:60:00.000Z",
            "2026-11-29T23:59:60.000Z",
            "2026-11-2xT23:59:59.000Z",
            "",
        ] {
            assert!(parse_ts(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn ids_and_tokens() {
        assert!(is_game_id("d10-7f3a"));
        assert!(is_game_id(&"a".repeat(64)));
        assert!(!is_game_id(&"a".repeat(65)));
        assert!(!is_game_id(""));
        assert!(!is_game_id("a b"));
        assert!(!is_game_id("é"));
    }

    #[test]
    fn accounts_are_any_text_without_control_characters() {
        for ok in [
            "acc-10482",
            "acc/x",
            "ac c",
            "accé",
            "acc:7",
            "o'brien",
            "<b>",
            "%2F",
            "用户",
        ] {
            assert!(is_account(ok), "{ok} refused");
        }
        assert!(is_account(&"é".repeat(MAX_ACCOUNT_CHARS)));
        for bad in ["", "a\nb", "a\u{1f}b", "\u{7f}", "tab\there"] {
            assert!(!is_account(bad), "{bad:?} accepted");
        }
        assert!(!is_account(&"a".repeat(MAX_ACCOUNT_CHARS + 1)));
    }

    #[test]
    fn hex_cards_moves() {
        assert!(is_hex64(&"ab".repeat(32)));
        assert!(!is_hex64(&"AB".repeat(32)));
        assert!(is_card("TD") && is_card("7S") && is_card("AH"));
        assert!(!is_card("1S") && !is_card("TX") && !is_card("T"));
        assert!(is_pdn_move("32-28") && is_pdn_move("28x19x10") && is_pdn_move("46-5"));
        for bad in [
            "32-28-23", "28x", "x19", "51-46", "0-5", "05-10", "28-19x10", "abc", "",
        ] {
            assert!(!is_pdn_move(bad), "{bad} accepted");
        }
    }
}
