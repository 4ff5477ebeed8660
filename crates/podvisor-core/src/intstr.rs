//! An int-or-percent value (a Deployment's `maxSurge`, `maxUnavailable`) against a total,
//! as apimachinery's `GetScaledValueFromIntOrPercent`.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Why an int-or-percent has no value against a total.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntOrPercentError {
    #[error("invalid value for IntOrString: invalid type: string is not a percentage: {0:?}")]
    NotAPercentage(String),
    #[error("{value} of {total} is out of range")]
    OutOfRange { value: String, total: i32 },
}

/// `v` against `total`: an int as it is, `"N%"` as N % of `total`, rounded up or down.
/// A string that is not a percentage is an error naming it.
pub fn scaled(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, IntOrPercentError> {
    match v {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let p = percent(s)?;
            let product = i64::from(p) * i64::from(total);
            let value = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            i32::try_from(value).map_err(|_| IntOrPercentError::OutOfRange {
                value: s.clone(),
                total,
            })
        }
    }
}

/// The N of `"N%"`.
pub fn percent(s: &str) -> Result<i32, IntOrPercentError> {
    s.strip_suffix('%')
        .and_then(|n| n.parse::<i32>().ok())
        .ok_or_else(|| IntOrPercentError::NotAPercentage(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn percentages_round_as_asked_and_ints_pass_through() {
        assert_eq!(scaled(&s("25%"), 10, true), Ok(3));
        assert_eq!(scaled(&s("25%"), 10, false), Ok(2));
        assert_eq!(scaled(&s("0%"), 10, true), Ok(0));
        assert_eq!(scaled(&s("100%"), 7, false), Ok(7));
        assert_eq!(scaled(&IntOrString::Int(4), 10, true), Ok(4));
        assert!(scaled(&s("25"), 10, true).is_err());
        assert!(scaled(&s("x%"), 10, true).is_err());
    }
}
