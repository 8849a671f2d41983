//! `Timestamp`: a UTC instant with millisecond precision, stored as RFC 3339 text
//! (`2026-11-22T10:15:30.123Z`).
//!
//! The store keeps times as text so a person reading the database with `sqlite3` sees
//! dates; the fixed width and the `Z` make the text sort like the instant, so SQL can
//! compare timestamps as strings. The calendar is jiff's.

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

    /// `2026-11-22T10:15:30.123Z`: millisecond precision, UTC, sorts as text.
    pub fn to_rfc3339(self) -> String {
        self.civil().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }

    /// `2026-11-22-101530`: for run ids and file names.
    pub fn to_compact(self) -> String {
        self.civil().strftime("%Y-%m-%d-%H%M%S").to_string()
    }

    /// `2026-11-22 10:15`: for people.
    pub fn to_minutes(self) -> String {
        self.civil().strftime("%Y-%m-%d %H:%M").to_string()
    }

    /// An RFC 3339 instant in UTC (`Z` or `+00:00`), with or without a fraction, as written
    /// by [`Timestamp::to_rfc3339`] or by earlier versions of rlm; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        if !(text.ends_with('Z') || text.ends_with("+00:00")) {
            return None;
        }
        let instant: jiff::Timestamp = text.parse().ok()?;
        Some(Timestamp(instant.as_millisecond()))
    }

    /// The instant as a UTC civil time (the epoch for instants jiff cannot represent).
    fn civil(self) -> jiff::civil::DateTime {
        let instant = jiff::Timestamp::from_millisecond(self.0).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        instant.to_zoned(jiff::tz::TimeZone::UTC).datetime()
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
