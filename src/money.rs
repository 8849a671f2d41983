//! Amounts of money as people read them: `$0.0283`, `$1.52`, `$12.40`, `$0.000123`.
//!
//! An amount shown with too few digits can say something false: "$0.0283 reached
//! --max-cost ($0.03)" for a budget of $0.0283, or "$0.00 exceeds $0.00" for a budget of 0
//! (issue 17). So every amount rlm shows goes through [`usd`] — at least two decimals, and at
//! least three significant digits however small the amount — and two amounts compared in one
//! message go through [`usd_pair`], which adds digits until amounts that differ read
//! differently.

/// Fewest decimals shown: cents.
const MIN_DECIMALS: usize = 2;
/// Fewest significant digits shown, for amounts below a cent.
const SIGNIFICANT: i32 = 3;
/// Most decimals ever shown (well past what any price table can tell apart).
const MAX_DECIMALS: usize = 12;

/// `$0.0283`, `$0.03`, `$1.52`, `$12.40`, `$0.00`: at least two decimals and three
/// significant digits; zeros past the second decimal are left out.
pub fn usd(amount: f64) -> String {
    with_decimals(amount, decimals_for(amount))
}

/// Two amounts that a message compares ("$X reached $Y", "$X exceeds $Y"): each as [`usd`]
/// shows it, with more digits for both where that is needed to tell them apart.
pub fn usd_pair(a: f64, b: f64) -> (String, String) {
    let mut decimals = decimals_for(a).max(decimals_for(b));
    loop {
        let (x, y) = (with_decimals(a, decimals), with_decimals(b, decimals));
        if x != y || a == b || decimals >= MAX_DECIMALS {
            return (x, y);
        }
        decimals += 1;
    }
}

/// Decimals for two decimals or three significant digits, whichever is more.
fn decimals_for(amount: f64) -> usize {
    let a = amount.abs();
    if a == 0.0 || !a.is_finite() {
        return MIN_DECIMALS;
    }
    // 0.0283 → -2, 1.52 → 0, 12.4 → 1.
    let magnitude = a.log10().floor() as i32;
    (SIGNIFICANT - 1 - magnitude).clamp(MIN_DECIMALS as i32, MAX_DECIMALS as i32) as usize
}

fn with_decimals(amount: f64, decimals: usize) -> String {
    // `-0.0` would print as `-0.00`.
    let amount = if amount == 0.0 { 0.0 } else { amount };
    let text = format!("{:.*}", decimals, amount.abs());
    // Zeros past the second decimal say nothing: `0.0300` is `0.03`.
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut fraction = fraction.trim_end_matches('0').to_string();
    while fraction.len() < MIN_DECIMALS {
        fraction.push('0');
    }
    let sign = if amount < 0.0 { "-" } else { "" };
    format!("{sign}${whole}.{fraction}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cents_at_least_and_three_significant_digits_below_a_cent() {
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(-0.0), "$0.00");
        assert_eq!(usd(0.03), "$0.03");
        assert_eq!(usd(0.0283), "$0.0283");
        assert_eq!(usd(0.000_123_4), "$0.000123");
        assert_eq!(usd(1.52), "$1.52");
        assert_eq!(usd(2.2649), "$2.26");
        assert_eq!(usd(12.4), "$12.40");
        assert_eq!(usd(100.0), "$100.00");
        assert_eq!(usd(-1.5), "-$1.50");
    }

    #[test]
    fn compared_amounts_that_differ_read_differently() {
        assert_eq!(usd_pair(0.02834, 0.0283), ("$0.02834".into(), "$0.0283".into()));
        assert_eq!(usd_pair(0.000_123, 0.0), ("$0.000123".into(), "$0.00".into()));
        assert_eq!(usd_pair(2.004, 2.0), ("$2.004".into(), "$2.00".into()));
        assert_eq!(usd_pair(1.0, 1.0), ("$1.00".into(), "$1.00".into()));
        let amounts = [
            0.0, 1e-9, 0.0049, 0.005, 0.0283, 0.02834, 0.03, 0.999_999, 1.0, 1.000_01, 2.26,
        ];
        for &a in &amounts {
            for &b in &amounts {
                let (x, y) = usd_pair(a, b);
                assert_eq!(x == y, a == b, "{a} vs {b}: {x} vs {y}");
            }
        }
    }
}
