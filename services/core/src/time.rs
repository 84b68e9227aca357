//! `Timestamp`: a UTC instant with millisecond precision, written as RFC 3339
//! (`2026-11-30T10:00:00.000Z`) in JSON and held as milliseconds since the Unix epoch, which is
//! also what MongoDB's date type stores. Hand-written civil-date arithmetic (Howard Hinnant's
//! algorithms) keeps a date crate out of the dependency tree.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Timestamp(i64);

impl Timestamp {
    pub fn now() -> Self {
        let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
        Self(millis)
    }

    pub fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    /// Parses exactly `YYYY-MM-DDTHH:MM:SS.mmmZ` (the only form this project writes).
    pub fn parse(text: &str) -> Result<Self, String> {
        let invalid = || format!("`{text}` is not an RFC 3339 UTC timestamp like 2026-11-30T10:00:00.000Z");
        let b = text.as_bytes();
        let shape_ok = b.len() == 24
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && b[16] == b':'
            && b[19] == b'.'
            && b[23] == b'Z';
        if !shape_ok {
            return Err(invalid());
        }
        let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
            let part = &text[range];
            if part.bytes().all(|c| c.is_ascii_digit()) { part.parse().map_err(|_| invalid()) } else { Err(invalid()) }
        };
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second, milli) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
        let in_range = (1..=12).contains(&month)
            && (1..=days_in_month(year, month)).contains(&day)
            && hour < 24
            && minute < 60
            && second < 60;
        if !in_range {
            return Err(invalid());
        }
        let days = days_from_civil(year, month, day);
        Ok(Self(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli))
    }
}

/// Length of `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub const RFC3339_LEN: usize = 24;

impl Timestamp {
    /// The civil fields: year, month, day, hour, minute, second, millisecond.
    fn fields(self) -> [i64; 7] {
        let days = self.0.div_euclid(86_400_000);
        let ms_of_day = self.0.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(days);
        let (hour, rest) = (ms_of_day / 3_600_000, ms_of_day % 3_600_000);
        let (minute, rest) = (rest / 60_000, rest % 60_000);
        let (second, milli) = (rest / 1000, rest % 1000);
        [year, month, day, hour, minute, second, milli]
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` as ASCII bytes without going through `fmt` (it is written once
    /// per timestamp of every response); `None` for years outside 0..=9999, which `Display`
    /// writes instead.
    pub fn rfc3339_bytes(self) -> Option<[u8; RFC3339_LEN]> {
        let [year, month, day, hour, minute, second, milli] = self.fields();
        if !(0..=9999).contains(&year) {
            return None;
        }
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut put = |end: usize, mut value: i64, digits: usize| {
            for position in (end - digits..end).rev() {
                out[position] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(4, year, 4);
        put(7, month, 2);
        put(10, day, 2);
        put(13, hour, 2);
        put(16, minute, 2);
        put(19, second, 2);
        put(23, milli, 3);
        Some(out)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(bytes) = self.rfc3339_bytes() {
            return f.write_str(std::str::from_utf8(&bytes).map_err(|_| fmt::Error)?);
        }
        let [year, month, day, hour, minute, second, milli] = self.fields();
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.rfc3339_bytes() {
            Some(bytes) => serializer.serialize_str(std::str::from_utf8(&bytes).map_err(serde::ser::Error::custom)?),
            None => serializer.collect_str(self),
        }
    }
}

impl TryFrom<String> for Timestamp {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

impl From<Timestamp> for String {
    fn from(ts: Timestamp) -> String {
        ts.to_string()
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(Timestamp::from_millis(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::from_millis(1_795_946_400_123).to_string(), "2026-11-29T10:00:00.123Z");
        assert_eq!(Timestamp::from_millis(951_782_400_000).to_string(), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn the_fast_form_equals_the_formatted_one_and_years_beyond_four_digits_still_format() {
        let mut millis = -62_167_219_200_000_i64 - 86_400_000; // the last day of year -1
        while millis < 253_402_300_800_000 + 86_400_000 {
            let ts = Timestamp::from_millis(millis);
            let [year, month, day, hour, minute, second, milli] = ts.fields();
            let formatted = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z");
            assert_eq!(ts.to_string(), formatted);
            match ts.rfc3339_bytes() {
                Some(bytes) => assert_eq!(bytes.as_slice(), formatted.as_bytes()),
                None => assert!(!(0..=9999).contains(&year), "{formatted}"),
            }
            assert_eq!(serde_json::to_string(&ts).expect("serialise"), format!("\"{formatted}\""));
            millis += 86_399_999 * 41 + 7;
        }
        assert_eq!(Timestamp::from_millis(253_402_300_800_000).to_string(), "10000-01-01T00:00:00.000Z");
    }

    #[test]
    fn parse_inverts_format_over_centuries() {
        let mut millis = -2_000_000_000_000_i64;
        while millis < 9_000_000_000_000 {
            let ts = Timestamp::from_millis(millis);
            assert_eq!(Timestamp::parse(&ts.to_string()), Ok(ts));
            millis += 86_399_999 * 37;
        }
    }

    #[test]
    fn parse_rejects_other_shapes_and_impossible_dates() {
        for bad in [
            "2026-11-30T10:00:00Z",
            "2026-11-30 10:00:00.000Z",
            "2026-11-30T10:00:00.000+01:00",
            "2026-02-30T10:00:00.000Z",
            "2025-02-29T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-11-30T24:00:00.000Z",
            "+026-11-30T10:00:00.000Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad} should be rejected");
        }
    }
}
