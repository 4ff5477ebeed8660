//! `[node] labels` (the kubelet's `--node-labels`), checked as the kubelet checks them: each
//! key a qualified name and each value a label value, and a key under `kubernetes.io` or
//! `k8s.io` only if a node may set it itself (the node-restriction admission would refuse
//! the others: `node-role.kubernetes.io/*` is for an admin to add).

use std::collections::BTreeMap;

/// Labels a node may give itself under `kubernetes.io` (k8s.io/kubelet's well-known set).
const KUBELET_LABELS: &[&str] = &[
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];
/// Prefixes (and their subdomains) a node may label itself under.
const KUBELET_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

fn namespace(key: &str) -> &str {
    key.split_once('/').map_or("", |(ns, _)| ns)
}

fn under(ns: &str, domain: &str) -> bool {
    ns == domain || ns.ends_with(&format!(".{domain}"))
}

fn kubernetes_label(key: &str) -> bool {
    let ns = namespace(key);
    under(ns, "kubernetes.io") || under(ns, "k8s.io")
}

fn kubelet_label(key: &str) -> bool {
    KUBELET_LABELS.contains(&key) || KUBELET_NAMESPACES.iter().any(|d| under(namespace(key), d))
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?` of at most 63 characters.
fn name_part(v: &str) -> bool {
    let ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    v.len() <= 63
        && v.bytes().all(ok)
        && v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
}

fn qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    prefix_ok && name_part(name)
}

/// Why the labels cannot be registered, the kubelet's words where it has them.
pub(super) fn check(labels: &BTreeMap<String, String>) -> Result<(), String> {
    let unknown: Vec<&str> = labels
        .keys()
        .filter(|k| kubernetes_label(k) && !kubelet_label(k))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: \
             {unknown:?}; --node-labels in the 'kubernetes.io' namespace must begin with \
             an allowed prefix ({}) or be in the specifically allowed set ({})",
            KUBELET_NAMESPACES.join(", "),
            KUBELET_LABELS.join(", ")
        ));
    }
    for (k, v) in labels {
        if !qualified_name(k) {
            return Err(format!(
                "invalid node label key {k:?}: not a qualified name"
            ));
        }
        if !v.is_empty() && !name_part(v) {
            return Err(format!("invalid node label value {v:?} (of {k})"));
        }
    }
    Ok(())
}

/// `k=v,k2=v2` (the kubelet's flag), as a map.
pub fn parse_flag(s: &str) -> Result<BTreeMap<String, String>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
            None => Err(format!("{p:?} is not key=value")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_node_labels_itself_only_where_the_kubelet_may() {
        assert!(check(&labels(&[("team", "a"), ("example.com/rack", "r1")])).is_ok());
        assert!(check(&labels(&[("node.kubernetes.io/pool", "gpu")])).is_ok());
        assert!(check(&labels(&[("topology.kubernetes.io/zone", "z1")])).is_ok());
        assert!(check(&labels(&[("x.kubelet.kubernetes.io/y", "")])).is_ok());
        let e = check(&labels(&[("node-role.kubernetes.io/worker", "")])).unwrap_err();
        assert!(e.contains("node-role.kubernetes.io/worker"), "{e}");
        assert!(check(&labels(&[("k8s.io/x", "y")])).is_err());
        assert!(check(&labels(&[("bad key", "v")])).is_err());
        assert!(check(&labels(&[("k", "-bad")])).is_err());
        assert!(check(&labels(&[("Example.com/k", "v")])).is_err());
    }

    #[test]
    fn the_flag_is_comma_separated_pairs() {
        assert_eq!(
            parse_flag("a=1,b.example.com/c=,d=x").unwrap(),
            labels(&[("a", "1"), ("b.example.com/c", ""), ("d", "x")])
        );
        assert!(parse_flag("a").is_err());
        assert!(parse_flag("").unwrap().is_empty());
    }
}
