//! `Timestamp`: a UTC instant with millisecond precision, stored as RFC 3339 text
//! (`2026-11-22T10:15:30.123Z`).
//!
//! The store keeps times as text so a person reading the database with `sqlite3` sees
//! dates; the fixed width and the `Z` make the text sort like the instant, so SQL can
//! compare timestamps as strings. No date crate is needed for UTC only.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

/// Milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        Timestamp::from_system_time(SystemTime::now())
    }

    /// The instant `time`, truncated to milliseconds (times before 1970 become 1970).
    pub fn from_system_time(time: SystemTime) -> Self {
        let ms = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        Timestamp(i64::try_from(ms).unwrap_or(i64::MAX))
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millis(self) -> i64 {
        self.0
    }

    /// The instant `ms` milliseconds after the epoch.
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    /// How long after `earlier` this is (zero when it is not after).
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0 - earlier.0).unwrap_or(0))
    }

    /// `2026-11-22T10:15:30.123Z`.
    pub fn to_rfc3339(self) -> String {
        let (date, h, mi, s, ms) = self.fields();
        format!("{date}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
    }

    /// `2026-11-22-101530`: the form used in run ids and directory names.
    pub fn to_compact(self) -> String {
        let (date, h, mi, s, _) = self.fields();
        format!("{date}-{h:02}{mi:02}{s:02}")
    }

    /// `2026-11-22 10:15`: for tables read by people.
    pub fn to_minutes(self) -> String {
        let (date, h, mi, _, _) = self.fields();
        format!("{date} {h:02}:{mi:02}")
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fff]Z` (what [`Timestamp::to_rfc3339`] writes; a
    /// `+00:00` offset is accepted too). `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.strip_suffix('Z').or_else(|| text.strip_suffix("+00:00"))?;
        let (date, time) = text.split_once('T')?;
        let mut date_parts = date.splitn(3, '-');
        let y: i64 = date_parts.next()?.parse().ok()?;
        let mo: u32 = date_parts.next()?.parse().ok()?;
        let d: u32 = date_parts.next()?.parse().ok()?;
        let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
        let mut time_parts = hms.splitn(3, ':');
        let h: i64 = time_parts.next()?.parse().ok()?;
        let mi: i64 = time_parts.next()?.parse().ok()?;
        let s: i64 = time_parts.next()?.parse().ok()?;
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
            return None;
        }
        let ms: i64 = if frac.is_empty() {
            0
        } else {
            // Milliseconds: the first three digits of the fraction, right-padded.
            let digits: String = frac.chars().chain("000".chars()).take(3).collect();
            digits.parse().ok()?
        };
        let days = days_from_civil(y, mo, d);
        Some(Timestamp((days * 86_400 + h * 3600 + mi * 60 + s) * 1000 + ms))
    }

    fn fields(self) -> (String, i64, i64, i64, i64) {
        let secs = self.0.div_euclid(1000);
        let ms = self.0.rem_euclid(1000);
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, mo, d) = civil_from_days(days);
        (
            format!("{y:04}-{mo:02}-{d:02}"),
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            ms,
        )
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_known_instants() {
        // 2026-11-22T10:15:30.123Z, computed independently: 20779 days after the epoch.
        let t = Timestamp::from_millis((20_779 * 86_400 + 10 * 3600 + 15 * 60 + 30) * 1000 + 123);
        assert_eq!(t.to_rfc3339(), "2026-11-22T10:15:30.123Z");
        assert_eq!(t.to_compact(), "2026-11-22-101530");
        assert_eq!(t.to_minutes(), "2026-11-22 10:15");
        assert_eq!(Timestamp::parse("2026-11-22T10:15:30.123Z"), Some(t));
        assert_eq!(Timestamp::from_millis(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Timestamp::parse("2024-02-29T23:59:59+00:00").map(Timestamp::to_rfc3339),
            Some("2024-02-29T23:59:59.000Z".to_string())
        );
        assert_eq!(
            Timestamp::parse("2024-02-29T23:59:59.5Z").map(Timestamp::as_millis),
            Timestamp::parse("2024-02-29T23:59:59.500Z").map(Timestamp::as_millis)
        );
    }

    #[test]
    fn round_trips_across_many_days_and_sorts_as_text() {
        let mut previous: Option<(Timestamp, String)> = None;
        // Every ~3.7 days over ~60 years: leap years, month ends, century rules.
        for i in 0..6000_i64 {
            let t = Timestamp::from_millis(i * 318_767_123);
            let text = t.to_rfc3339();
            assert_eq!(Timestamp::parse(&text), Some(t), "{text}");
            if let Some((pt, ptext)) = &previous {
                assert_eq!(pt < &t, ptext < &text);
            }
            previous = Some((t, text));
        }
    }

    #[test]
    fn rejects_what_it_does_not_write() {
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22T10:15:30",
            "2026-13-01T00:00:00Z",
            "x-y-zTa:b:cZ",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn since_never_goes_negative() {
        let a = Timestamp::from_millis(5_000);
        let b = Timestamp::from_millis(7_500);
        assert_eq!(b.since(a), Duration::from_millis(2_500));
        assert_eq!(a.since(b), Duration::ZERO);
    }
}
