//! Kubernetes resource quantities ("500m", "1.5", "128Mi", "2G", "1e3"), as far as podvisor
//! needs them: CPU in millicores and memory in bytes. The arithmetic is exact decimal, as
//! Kubernetes' own (`resource.Quantity`): a value is its digits over a power of ten times its
//! suffix's multiplier, rounded up once at the end (`MilliValue`, `Value`). Floating point
//! made `102m` 103 millicores and `8.3M` 8,300,001 bytes.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {0:?}")]
pub struct QuantityError(pub String);

/// Larger results are refused: far beyond any machine (4 EiB of memory, 2^62 millicores),
/// and small enough that sums and the cgroup conversions stay in range.
const MAX: u128 = 1 << 62;

/// Digits kept of a number; those beyond can only round the result up, and do.
const MAX_DIGITS: usize = 30;

/// The value times 1000 (millicores for CPU), rounded up as Kubernetes' `MilliValue`.
pub fn parse_milli(q: &str) -> Result<i64, QuantityError> {
    scaled(q, 1000)
}

/// The value in plain units (bytes for memory), rounded up as Kubernetes' `Value`.
pub fn parse_units(q: &str) -> Result<i64, QuantityError> {
    scaled(q, 1)
}

/// A quantity as an exact fraction: `num / den`.
struct Exact {
    num: u128,
    den: u128,
    /// Digits were dropped past [`MAX_DIGITS`]: the true value is a little more.
    inexact: bool,
}

fn scaled(q: &str, by: u128) -> Result<i64, QuantityError> {
    let bad = || QuantityError(q.to_string());
    let e = parse(q).ok_or_else(bad)?;
    let num = e.num.checked_mul(by).ok_or_else(bad)?;
    let mut v = num.div_ceil(e.den);
    if e.inexact && num % e.den == 0 {
        v += 1;
    }
    if v > MAX {
        return Err(bad());
    }
    i64::try_from(v).map_err(|_| bad())
}

/// `10^n`, or `None` past what the arithmetic holds.
fn ten(n: u32) -> Option<u128> {
    10u128.checked_pow(n)
}

/// The suffix's multiplier as `(numerator, denominator)`.
fn suffix(s: &str) -> Option<(u128, u128)> {
    let decimal = |e: i32| match e >= 0 {
        true => Some((ten(e.unsigned_abs())?, 1)),
        false => Some((1, ten(e.unsigned_abs())?)),
    };
    match s {
        "" => Some((1, 1)),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some((1 << 10, 1)),
        "Mi" => Some((1 << 20, 1)),
        "Gi" => Some((1 << 30, 1)),
        "Ti" => Some((1 << 40, 1)),
        "Pi" => Some((1 << 50, 1)),
        "Ei" => Some((1 << 60, 1)),
        // A decimal exponent: `1e3`, `12E-1`.
        _ => {
            let exp = s.strip_prefix(['e', 'E'])?;
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            decimal(exp.parse::<i32>().ok().filter(|e| e.abs() <= 30)?)
        }
    }
}

fn parse(q: &str) -> Option<Exact> {
    let q = q.trim();
    let q = q.strip_prefix('+').unwrap_or(q);
    let end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, rest) = q.split_at(end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let (mult, div) = suffix(rest)?;
    // The digits as one integer over a power of ten, leading zeros dropped.
    let digits: String = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let kept = &digits[..digits.len().min(MAX_DIGITS)];
    let dropped = &digits[kept.len()..];
    let mantissa: u128 = if kept.is_empty() {
        0
    } else {
        kept.parse().ok()?
    };
    let places = u32::try_from(fraction.len()).ok()?;
    let shift = u32::try_from(dropped.len()).ok()?;
    // value = mantissa * 10^shift / 10^places * mult / div
    let (up, down) = match shift >= places {
        true => (ten(shift - places)?, 1),
        false => (1, ten(places - shift)?),
    };
    Some(Exact {
        num: mantissa.checked_mul(up)?.checked_mul(mult)?,
        den: down.checked_mul(div)?,
        inexact: dropped.bytes().any(|b| b != b'0'),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_quantities_are_refused_not_wrapped() {
        assert!(parse_units("9Ei").is_err());
        assert!(parse_milli("10000000000000000").is_err());
        assert_eq!(parse_units("3Ei"), Ok(3 << 60));
        for bad in [
            "", "abc", "1x", "-1", "1.2.3Mi", ".", "1e", "1e+", "1.5e3x", "Mi",
        ] {
            assert!(parse_units(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_and_memory() {
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("2"), Ok(2000));
        assert_eq!(parse_milli("0.25"), Ok(250));
        assert_eq!(parse_units("128Mi"), Ok(128 << 20));
        assert_eq!(parse_units("1G"), Ok(1_000_000_000));
        assert_eq!(parse_units("1.5Ki"), Ok(1536));
        assert_eq!(parse_units("42"), Ok(42));
    }

    /// Values floating point got wrong (the review's), and Kubernetes' own rounding: a
    /// `MilliValue` or `Value` rounds up whatever does not fit (`quantity_test.go`).
    #[test]
    fn exact_as_kubernetes() {
        for m in 1..=2000 {
            assert_eq!(parse_milli(&format!("{m}m")), Ok(m), "{m}m");
        }
        assert_eq!(parse_milli("102m"), Ok(102));
        assert_eq!(parse_milli("2.007"), Ok(2007));
        assert_eq!(parse_units("8.3M"), Ok(8_300_000));
        assert_eq!(parse_milli("0.1"), Ok(100));
        assert_eq!(parse_milli("100n"), Ok(1), "rounded up");
        assert_eq!(parse_milli("1001u"), Ok(2));
        assert_eq!(parse_units("1.1"), Ok(2));
        assert_eq!(parse_units("1e3"), Ok(1000));
        assert_eq!(parse_units("12E-1"), Ok(2));
        assert_eq!(parse_units("1.5E"), Ok(1_500_000_000_000_000_000));
        assert_eq!(parse_milli("+1"), Ok(1000));
        assert_eq!(parse_units("0.5Gi"), Ok(512 << 20));
        assert_eq!(parse_units("0"), Ok(0));
        assert_eq!(parse_milli("0.0000000000000000000000000000000001"), Ok(1));
        assert_eq!(
            parse_milli("1.00000000000000000000000000000000000"),
            Ok(1000)
        );
    }
}
