//! Taints and tolerations, as Kubernetes matches them (`Toleration.ToleratesTaint` and the
//! helpers around it), shared by admission (a pod that does not tolerate this node's
//! taints is refused) and the taint eviction scheduler (one that stops tolerating them is
//! evicted): one copy of each rule.

use k8s_openapi::api::core::v1::{Taint, Toleration};

pub const NO_EXECUTE: &str = "NoExecute";
pub const NO_SCHEDULE: &str = "NoSchedule";
/// The taint a cordoned node (`spec.unschedulable`) counts as having.
pub const UNSCHEDULABLE_KEY: &str = "node.kubernetes.io/unschedulable";

fn empty(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

/// Whether `t` tolerates `taint`: an empty effect matches every effect, an empty key every
/// key (with `Exists`), `Exists` any value, `Equal` (or none) the same value, and `Lt`/`Gt`
/// compare integer values.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if !empty(&t.effect) && t.effect.as_deref() != Some(taint.effect.as_str()) {
        return false;
    }
    if !empty(&t.key) && t.key.as_deref() != Some(taint.key.as_str()) {
        return false;
    }
    let value = t.value.as_deref().unwrap_or("");
    let taint_value = taint.value.as_deref().unwrap_or("");
    match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => value == taint_value,
        "Exists" => true,
        op @ ("Lt" | "Gt") => match (taint_value.parse::<i64>(), value.parse::<i64>()) {
            (Ok(have), Ok(bound)) if op == "Lt" => have < bound,
            (Ok(have), Ok(bound)) => have > bound,
            _ => false,
        },
        _ => false,
    }
}

/// The toleration that `tolerations` uses for `taint`: the first in spec order that
/// tolerates it, as Kubernetes picks it.
pub fn used_toleration<'a>(tolerations: &'a [Toleration], taint: &Taint) -> Option<&'a Toleration> {
    tolerations.iter().find(|t| tolerates(t, taint))
}

/// The first of `taints` with one of `effects` that `tolerations` does not tolerate.
pub fn untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    effects: &[&str],
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| effects.contains(&t.effect.as_str()))
        .find(|t| used_toleration(tolerations, t).is_none())
}

/// `key=value:Effect` (or `key:Effect`), as kubectl writes a taint.
pub fn describe(t: &Taint) -> String {
    match t.value.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => format!("{}={v}:{}", t.key, t.effect),
        None => format!("{}:{}", t.key, t.effect),
    }
}

/// Why a taint's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaintError {
    #[error("taint {0:?} has no effect (key=value:Effect)")]
    NoEffect(String),
    #[error("taint {0:?}: effect {1:?} is not NoSchedule, PreferNoSchedule or NoExecute")]
    Effect(String, String),
    #[error("taint {0:?} has no key")]
    NoKey(String),
}

/// Parses `key=value:Effect` or `key:Effect` (the config's `[node] taints`, kubectl's
/// syntax).
pub fn parse(s: &str) -> Result<Taint, TaintError> {
    let (kv, effect) = s
        .rsplit_once(':')
        .ok_or_else(|| TaintError::NoEffect(s.into()))?;
    if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
        return Err(TaintError::Effect(s.into(), effect.into()));
    }
    let (key, value) = match kv.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (kv, None),
    };
    if key.is_empty() {
        return Err(TaintError::NoKey(s.into()));
    }
    Ok(Taint {
        key: key.to_string(),
        value,
        effect: effect.to_string(),
        time_added: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn matching_follows_key_operator_value_and_effect() {
        let t = taint("dedicated", "gpu", NO_EXECUTE);
        assert!(tolerates(&tol("dedicated", "Equal", "gpu", NO_EXECUTE), &t));
        assert!(
            tolerates(&tol("dedicated", "", "gpu", ""), &t),
            "no operator is Equal; no effect is any"
        );
        assert!(!tolerates(
            &tol("dedicated", "Equal", "cpu", NO_EXECUTE),
            &t
        ));
        assert!(tolerates(&tol("dedicated", "Exists", "", NO_EXECUTE), &t));
        assert!(!tolerates(&tol("dedicated", "Exists", "", NO_SCHEDULE), &t));
        assert!(
            tolerates(&tol("", "Exists", "", ""), &t),
            "empty key with Exists tolerates all"
        );
        assert!(!tolerates(&tol("other", "Exists", "", ""), &t));
        assert!(
            !tolerates(&tol("dedicated", "Equal", "", ""), &t),
            "an empty value matches only an empty value"
        );
        assert!(tolerates(
            &tol("k", "Equal", "", ""),
            &taint("k", "", NO_EXECUTE)
        ));
        assert!(tolerates(
            &tol("n", "Lt", "10", ""),
            &taint("n", "3", NO_EXECUTE)
        ));
        assert!(!tolerates(
            &tol("n", "Gt", "10", ""),
            &taint("n", "3", NO_EXECUTE)
        ));
        assert!(!tolerates(
            &tol("n", "Gt", "x", ""),
            &taint("n", "3", NO_EXECUTE)
        ));
        assert!(!tolerates(
            &tol("n", "Sometimes", "3", ""),
            &taint("n", "3", NO_EXECUTE)
        ));
    }

    #[test]
    fn the_first_matching_toleration_is_the_one_used() {
        let t = taint("k", "", NO_EXECUTE);
        let mut first = tol("k", "Exists", "", NO_EXECUTE);
        first.toleration_seconds = Some(60);
        let tolerations = [first, tol("", "Exists", "", "")];
        assert_eq!(
            used_toleration(&tolerations, &t)
                .unwrap()
                .toleration_seconds,
            Some(60)
        );
        let taints = [taint("a", "", NO_SCHEDULE), taint("b", "", NO_EXECUTE)];
        let only_a = [tol("a", "Exists", "", "")];
        assert_eq!(
            untolerated(&taints, &only_a, &[NO_EXECUTE]).unwrap().key,
            "b"
        );
        assert!(untolerated(&taints, &only_a, &[NO_SCHEDULE]).is_none());
    }

    #[test]
    fn taints_parse_and_print_as_kubectl_writes_them() {
        let t = parse("dedicated=gpu:NoExecute").unwrap();
        assert_eq!(
            (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
            ("dedicated", Some("gpu"), NO_EXECUTE)
        );
        assert_eq!(describe(&t), "dedicated=gpu:NoExecute");
        assert_eq!(
            describe(&parse("maintenance:NoSchedule").unwrap()),
            "maintenance:NoSchedule"
        );
        assert!(parse("k=v").is_err());
        assert!(parse("k=v:Sometimes").is_err());
        assert!(parse("=v:NoExecute").is_err());
    }
}
