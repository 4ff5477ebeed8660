//! Whether a container runs again, as Kubernetes 1.35 decides it: the pod's
//! `restartPolicy`, a container's own `restartPolicy` and its `restartPolicyRules`
//! (KEP-5307, beta and on in 1.35), and init containers with `restartPolicy: Always`
//! (native sidecars, KEP-753), which always restart. One copy of each rule, for the sync's
//! plan, the pod's phase and the prober.

use k8s_openapi::api::core::v1::{Container, ContainerRestartRule};

use crate::phase::RestartPolicy;

/// The only action a restart rule may name.
pub(crate) const RULE_ACTION_RESTART: &str = "Restart";
/// The operators a rule's `exitCodes` may use.
pub(crate) const RULE_OPERATORS: [&str; 2] = ["In", "NotIn"];
/// At most this many rules per container, and exit codes per rule (the API's limits).
pub(crate) const MAX_RULES: usize = 20;
pub(crate) const MAX_RULE_VALUES: usize = 255;

/// The container's own `restartPolicy`, when it has a valid one.
pub fn container_policy(c: &Container) -> Option<RestartPolicy> {
    c.restart_policy.as_deref().and_then(RestartPolicy::parse)
}

/// An init container with `restartPolicy: Always`: a sidecar, started in order with the
/// other init containers, running beside the app containers and restarted whatever
/// happens.
pub fn is_sidecar(init: &Container) -> bool {
    container_policy(init) == Some(RestartPolicy::Always)
}

/// Whether `rule` matches a container that exited with `code`.
fn rule_matches(rule: &ContainerRestartRule, code: i32) -> bool {
    let Some(codes) = &rule.exit_codes else {
        return false;
    };
    let listed = codes.values.as_deref().unwrap_or(&[]).contains(&code);
    match codes.operator.as_str() {
        "In" => listed,
        "NotIn" => !listed,
        _ => false,
    }
}

fn policy_allows(policy: RestartPolicy, code: i32) -> bool {
    match policy {
        RestartPolicy::Always => true,
        RestartPolicy::OnFailure => code != 0,
        RestartPolicy::Never => false,
    }
}

/// Whether a container that exited with `code` is started again: the first of its rules
/// that matches decides; else its own policy; else the pod's.
pub fn restarts_after_exit(c: &Container, pod: RestartPolicy, code: i32) -> bool {
    let Some(own) = container_policy(c) else {
        return policy_allows(pod, code);
    };
    let rules = c.restart_policy_rules.as_deref().unwrap_or(&[]);
    if let Some(rule) = rules.iter().find(|r| rule_matches(r, code)) {
        return rule.action == RULE_ACTION_RESTART;
    }
    policy_allows(own, code)
}

/// Whether a running container that must be killed (a failed liveness or startup probe)
/// is started again: there is no exit code for the rules to look at, so only the policy
/// (its own, else the pod's) decides.
pub fn restarts_when_killed(c: &Container, pod: RestartPolicy) -> bool {
    container_policy(c).unwrap_or(pod) != RestartPolicy::Never
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ContainerRestartRuleOnExitCodes;

    use super::*;

    fn container(policy: Option<&str>, rules: &[(&str, &str, &[i32])]) -> Container {
        Container {
            name: "c".into(),
            restart_policy: policy.map(String::from),
            restart_policy_rules: (!rules.is_empty()).then(|| {
                rules
                    .iter()
                    .map(|(action, op, values)| ContainerRestartRule {
                        action: action.to_string(),
                        exit_codes: Some(ContainerRestartRuleOnExitCodes {
                            operator: op.to_string(),
                            values: Some(values.to_vec()),
                        }),
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn without_a_container_policy_the_pods_decides() {
        let c = container(None, &[]);
        assert!(restarts_after_exit(&c, RestartPolicy::Always, 0));
        assert!(!restarts_after_exit(&c, RestartPolicy::OnFailure, 0));
        assert!(restarts_after_exit(&c, RestartPolicy::OnFailure, 1));
        assert!(!restarts_after_exit(&c, RestartPolicy::Never, 1));
        assert!(!restarts_when_killed(&c, RestartPolicy::Never));
        assert!(restarts_when_killed(&c, RestartPolicy::OnFailure));
    }

    #[test]
    fn the_first_matching_rule_decides_then_the_containers_policy() {
        // Restart on 42 only, in a pod that never restarts anything.
        let c = container(Some("Never"), &[("Restart", "In", &[42])]);
        assert!(restarts_after_exit(&c, RestartPolicy::Never, 42));
        assert!(!restarts_after_exit(&c, RestartPolicy::Never, 1));
        assert!(!restarts_after_exit(&c, RestartPolicy::Always, 0));
        // NotIn: everything but the listed codes.
        let c = container(Some("Never"), &[("Restart", "NotIn", &[0, 3])]);
        assert!(restarts_after_exit(&c, RestartPolicy::Always, 1));
        assert!(!restarts_after_exit(&c, RestartPolicy::Always, 3));
        // A rule with an unknown operator never matches; the policy decides.
        let c = container(Some("OnFailure"), &[("Restart", "Above", &[0])]);
        assert!(!restarts_after_exit(&c, RestartPolicy::Never, 0));
        assert!(restarts_after_exit(&c, RestartPolicy::Never, 2));
        // A killed container has no exit code: its policy alone decides.
        let c = container(Some("Never"), &[("Restart", "In", &[137])]);
        assert!(!restarts_when_killed(&c, RestartPolicy::Always));
    }

    #[test]
    fn a_sidecar_is_an_init_container_that_always_restarts() {
        assert!(is_sidecar(&container(Some("Always"), &[])));
        assert!(!is_sidecar(&container(Some("OnFailure"), &[])));
        assert!(!is_sidecar(&container(None, &[])));
    }
}
