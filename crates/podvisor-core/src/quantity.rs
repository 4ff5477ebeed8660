//! Kubernetes resource quantities ("500m", "1.5", "128Mi", "2G"), as far as podvisor needs
//! them: CPU in millicores and memory in bytes.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {0:?}")]
pub struct QuantityError(pub String);

/// Larger results are refused: far beyond any machine (4 EiB of memory, 2^62 millicores),
/// and small enough that sums and the cgroup conversions stay in range.
const MAX: f64 = (1u64 << 62) as f64;

/// The value times 1000 (millicores for CPU), rounded up like the kubelet does.
pub fn parse_milli(q: &str) -> Result<i64, QuantityError> {
    let (value, scale) = parse(q)?;
    bounded(q, (value * scale * 1000.0).ceil())
}

/// The value in plain units (bytes for memory), rounded up.
pub fn parse_units(q: &str) -> Result<i64, QuantityError> {
    let (value, scale) = parse(q)?;
    bounded(q, (value * scale).ceil())
}

fn bounded(q: &str, v: f64) -> Result<i64, QuantityError> {
    if v > MAX {
        return Err(QuantityError(q.to_string()));
    }
    Ok(v as i64)
}

fn parse(q: &str) -> Result<(f64, f64), QuantityError> {
    let bad = || QuantityError(q.to_string());
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad())?;
    if !value.is_finite() || value < 0.0 {
        return Err(bad());
    }
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0f64.powi(2),
        "Gi" => 1024.0f64.powi(3),
        "Ti" => 1024.0f64.powi(4),
        "Pi" => 1024.0f64.powi(5),
        "Ei" => 1024.0f64.powi(6),
        _ => return Err(bad()),
    };
    Ok((value, scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_quantities_are_refused_not_wrapped() {
        assert!(parse_units("9Ei").is_err());
        assert!(parse_milli("10000000000000000").is_err());
        assert_eq!(parse_units("3Ei"), Ok(3 << 60));
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
        for bad in ["", "abc", "1x", "-1", "1.2.3Mi"] {
            assert!(parse_units(bad).is_err(), "{bad}");
        }
    }
}
