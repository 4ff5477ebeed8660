//! The Node's pressure conditions and taints from the eviction manager's view: each of
//! `MemoryPressure`, `DiskPressure`, `PIDPressure` with the kubelet's reason and message,
//! and, on a node standing alone (in a cluster the node lifecycle controller taints by
//! condition), the matching `node.kubernetes.io/*-pressure:NoSchedule` taints.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeSpec, Taint};
use podvisor_eviction::Pressure;

/// Each pressure condition: (type, "True"/"False", reason, message).
pub(crate) fn conditions(
    under: &BTreeSet<Pressure>,
) -> impl Iterator<Item = (&'static str, &'static str, &'static str, &'static str)> + '_ {
    Pressure::ALL.into_iter().map(|p| {
        let on = under.contains(&p);
        let (reason, message) = p.reason(on);
        (
            p.condition(),
            if on { "True" } else { "False" },
            reason,
            message,
        )
    })
}

/// The spec with the pressure taints `under` asks for, when they differ from its own.
pub(crate) fn with_taints(spec: Option<&NodeSpec>, under: &BTreeSet<Pressure>) -> Option<NodeSpec> {
    let mut spec = spec.cloned().unwrap_or_default();
    let keys: Vec<&str> = Pressure::ALL.iter().map(|p| p.taint_key()).collect();
    let taints = spec.taints.clone().unwrap_or_default();
    let have: BTreeSet<&str> = taints
        .iter()
        .filter(|t| keys.contains(&t.key.as_str()) && t.effect == "NoSchedule")
        .map(|t| t.key.as_str())
        .collect();
    let want: BTreeSet<&str> = under.iter().map(|p| p.taint_key()).collect();
    if have == want {
        return None;
    }
    let mut next: Vec<Taint> = taints
        .into_iter()
        .filter(|t| !keys.contains(&t.key.as_str()) || t.effect != "NoSchedule")
        .collect();
    next.extend(want.iter().map(|k| Taint {
        key: k.to_string(),
        effect: "NoSchedule".into(),
        ..Taint::default()
    }));
    spec.taints = (!next.is_empty()).then_some(next);
    Some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_taints_follow_the_conditions_and_others_stay() {
        let own = NodeSpec {
            taints: Some(vec![Taint {
                key: "gpu".into(),
                effect: "NoExecute".into(),
                ..Taint::default()
            }]),
            ..NodeSpec::default()
        };
        let disk = BTreeSet::from([Pressure::Disk]);
        let tainted = with_taints(Some(&own), &disk).unwrap();
        let keys: Vec<_> = tainted
            .taints
            .as_ref()
            .unwrap()
            .iter()
            .map(|t| t.key.as_str())
            .collect();
        assert_eq!(keys, ["gpu", "node.kubernetes.io/disk-pressure"]);
        assert_eq!(with_taints(Some(&tainted), &disk), None, "already so");
        let cleared = with_taints(Some(&tainted), &BTreeSet::new()).unwrap();
        assert_eq!(cleared, own);
        let c: Vec<_> = conditions(&disk).collect();
        assert_eq!(
            c[1],
            (
                "DiskPressure",
                "True",
                "KubeletHasDiskPressure",
                "kubelet has disk pressure"
            )
        );
        assert_eq!(c[0].2, "KubeletHasSufficientMemory");
    }
}
