//! How a duration is written for people: the one duration format of rlm's output. Beneath
//! every layer that says how long something took (the executor's retry waits, the store's
//! `rlm status`, the reports), so none of them reaches up into another for it.

/// A duration for people — `850ms`, `3.2s`, `1m 5s`, `2h 5m` — in jiff's compact
/// friendly format, to the precision that matters at that length: the one duration
/// format of rlm's output (reports, progress, `rlm status`).
pub fn format_duration(ms: u64) -> String {
    use jiff::fmt::friendly::{Designator, FractionalUnit, SpanPrinter};
    let printer = SpanPrinter::new().designator(Designator::Compact);
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    let duration = match ms {
        0..=999 => jiff::SignedDuration::from_millis(ms),
        1_000..=59_999 => {
            // Tenths of a second, rounded down: 3,250 ms is 3.2s.
            let tenths = ms / 100;
            return printer
                .fractional(Some(FractionalUnit::Second))
                .precision(Some(1))
                .duration_to_string(&jiff::SignedDuration::from_millis(tenths * 100));
        }
        60_000..=3_599_999 => jiff::SignedDuration::from_secs(ms / 1000),
        _ => jiff::SignedDuration::from_secs(ms / 60_000 * 60),
    };
    printer.duration_to_string(&duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(format_duration(850), "850ms");
        assert_eq!(format_duration(3_250), "3.2s");
        assert_eq!(format_duration(1_000), "1.0s");
        assert_eq!(format_duration(65_000), "1m 5s");
        assert_eq!(format_duration(250_000), "4m 10s");
        assert_eq!(format_duration(7_530_000), "2h 5m");
    }
}
