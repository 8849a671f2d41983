//! Range-checked parsers for the numeric flags: a value out of range is a usage error
//! (exit 2) that says the range, never a panic and never a silent clamp.

/// Seconds: finite, above 0, at most a day (`1e30` would overflow a `Duration`).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err("must be more than 0 and at most 86400 seconds".into())
    }
}

/// A duration for the whole run: `90`, `90s`, `15m`, `2h`; more than 0, at most a week.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let factor = match unit {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}' is not a duration: write 90s, 15m or 2h")),
    };
    let v = parse_f64(number.trim()).map_err(|_| format!("'{s}' is not a duration: write 90s, 15m or 2h"))? * factor;
    if v > 0.0 && v <= 604_800.0 {
        Ok(v)
    } else {
        Err("must be more than 0 and at most a week (168h)".into())
    }
}

/// `--shard K/N`: N from 1 to 10000, K from 1 to N.
pub fn parse_shard(s: &str) -> Result<crate::shard::Shard, String> {
    s.parse()
}

/// A sampling temperature: 0 to 2, as both APIs accept.
pub fn parse_temperature(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if (0.0..=2.0).contains(&v) {
        Ok(v as f32)
    } else {
        Err("must be between 0 and 2".into())
    }
}

/// USD: 0 to one million.
pub fn parse_max_cost(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if (0.0..=1_000_000.0).contains(&v) {
        Ok(v)
    } else {
        Err("must be between 0 and 1000000 USD".into())
    }
}

/// Output tokens per call: 1 to a million.
pub fn parse_max_tokens(s: &str) -> Result<u32, String> {
    parse_whole(s, 1, 1_000_000).map(|v| v as u32)
}

/// A context window: 256 tokens to 100 million.
pub fn parse_context_window(s: &str) -> Result<u64, String> {
    parse_whole(s, 256, 100_000_000)
}

/// Calls in flight: at least 1 (a value above the cap is clamped later, with a warning, as
/// the seed asks).
pub fn parse_width(s: &str) -> Result<usize, String> {
    parse_whole(s, 1, 1_000_000).map(|v| v as usize)
}

/// Files per run: 1 to 100000.
pub fn parse_max_files(s: &str) -> Result<usize, String> {
    parse_whole(s, 1, 100_000).map(|v| v as usize)
}

fn parse_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("'{s}' is not a finite number"))
    }
}

fn parse_whole(s: &str, min: u64, max: u64) -> Result<u64, String> {
    let v: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number between {min} and {max}"))?;
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be between {min} and {max}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_and_non_finite_values_are_refused() {
        assert!(parse_seconds("1e30").is_err());
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("NaN").is_err());
        assert!(parse_seconds("inf").is_err());
        assert_eq!(parse_seconds("2.5"), Ok(2.5));
        assert!(parse_temperature("NaN").is_err());
        assert!(parse_temperature("-0.1").is_err());
        assert!(parse_temperature("2.5").is_err());
        assert_eq!(parse_temperature("0.7"), Ok(0.7));
        assert!(parse_max_cost("-1").is_err());
        assert!(parse_max_tokens("0").is_err());
        assert!(parse_max_tokens("99999999999").is_err());
        assert!(parse_context_window("10").is_err());
        assert!(parse_width("0").is_err());
        assert_eq!(parse_width("50"), Ok(50));
    }
}
