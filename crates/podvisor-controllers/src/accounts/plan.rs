//! What each namespace lacks: its `default` ServiceAccount (kube-controller-manager's
//! serviceaccount controller makes it) and its `kube-root-ca.crt` ConfigMap holding the
//! API's CA (the root CA publisher's), which the `kube-api-access-*` volume of every pod
//! reads. Plain data in, actions out.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

pub const DEFAULT_ACCOUNT: &str = "default";
pub const ROOT_CA: &str = "kube-root-ca.crt";
pub const CA_KEY: &str = "ca.crt";

/// One write that closes a gap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    CreateAccount {
        namespace: String,
    },
    CreateRootCa {
        namespace: String,
    },
    /// The ConfigMap is there with other content: put the CA back.
    UpdateRootCa {
        namespace: String,
    },
}

/// The namespaces that are not being deleted (nothing is made in one that is).
fn live(namespaces: &[&Namespace]) -> Vec<String> {
    namespaces
        .iter()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter(|n| n.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating"))
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

/// The actions for the namespaces, given which have a `default` account and what their
/// `kube-root-ca.crt` holds.
pub fn plan(
    namespaces: &[&Namespace],
    with_account: &HashSet<String>,
    root_cas: &HashMap<String, &ConfigMap>,
    ca_pem: &str,
) -> Vec<Action> {
    let mut out = Vec::new();
    for ns in live(namespaces) {
        if !with_account.contains(&ns) {
            out.push(Action::CreateAccount {
                namespace: ns.clone(),
            });
        }
        match root_cas.get(&ns) {
            None => out.push(Action::CreateRootCa { namespace: ns }),
            Some(cm) if !holds(cm, ca_pem) => out.push(Action::UpdateRootCa { namespace: ns }),
            Some(_) => {}
        }
    }
    out
}

fn holds(cm: &ConfigMap, ca_pem: &str) -> bool {
    let data = cm.data.as_ref();
    data.and_then(|d| d.get(CA_KEY)).map(String::as_str) == Some(ca_pem)
}

/// The ConfigMap as the publisher writes it.
pub fn root_ca(namespace: &str, ca_pem: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(ROOT_CA.into());
    cm.metadata.namespace = Some(namespace.into());
    cm.metadata.annotations = Some(BTreeMap::from([(
        "kubernetes.io/description".into(),
        "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.".into(),
    )]));
    cm.data = Some(BTreeMap::from([(CA_KEY.into(), ca_pem.into())]));
    cm
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str, terminating: bool) -> Namespace {
        let mut n = Namespace::default();
        n.metadata.name = Some(name.into());
        if terminating {
            n.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
                phase: Some("Terminating".into()),
                ..Default::default()
            });
        }
        n
    }

    #[test]
    fn each_live_namespace_gets_its_account_and_the_current_ca() {
        let (a, b, c, gone) = (
            ns("a", false),
            ns("b", false),
            ns("c", false),
            ns("x", true),
        );
        let with_account = HashSet::from(["a".to_string()]);
        let (good, stale) = (root_ca("a", "CA"), root_ca("b", "OLD"));
        let cas = HashMap::from([("a".to_string(), &good), ("b".to_string(), &stale)]);
        let actions = plan(&[&a, &b, &c, &gone], &with_account, &cas, "CA");
        assert_eq!(
            actions,
            vec![
                Action::CreateAccount {
                    namespace: "b".into()
                },
                Action::UpdateRootCa {
                    namespace: "b".into()
                },
                Action::CreateAccount {
                    namespace: "c".into()
                },
                Action::CreateRootCa {
                    namespace: "c".into()
                },
            ]
        );
        let all = HashSet::from(["a".to_string(), "b".to_string(), "c".to_string()]);
        let (fixed_b, new_c) = (root_ca("b", "CA"), root_ca("c", "CA"));
        let cas = HashMap::from([
            ("a".to_string(), &good),
            ("b".to_string(), &fixed_b),
            ("c".to_string(), &new_c),
        ]);
        assert!(plan(&[&a, &b, &c, &gone], &all, &cas, "CA").is_empty());
    }
}
