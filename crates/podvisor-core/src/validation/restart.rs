//! A container's own `restartPolicy` and `restartPolicyRules` (Kubernetes 1.35: sidecars
//! for init containers, KEP-753; restart rules for every container, KEP-5307, beta).

use k8s_openapi::api::core::v1::{Container, ContainerRestartRule};

use super::field::{FieldError, FieldErrors, FieldPath};
use crate::phase::RestartPolicy;
use crate::restart::{MAX_RULE_VALUES, MAX_RULES, RULE_ACTION_RESTART, RULE_OPERATORS};

/// Checks `c`'s restart policy and rules; `init` for an init container, where `Always`
/// makes a sidecar and takes no rules.
pub(super) fn validate(c: &Container, path: &FieldPath, init: bool, errs: &mut FieldErrors) {
    let rules = c.restart_policy_rules.as_deref().unwrap_or(&[]);
    let Some(policy) = c.restart_policy.as_deref() else {
        if !rules.is_empty() {
            errs.push(FieldError::required(
                &path.child("restartPolicy"),
                "must specify restartPolicy when restart rules are used",
            ));
        }
        return;
    };
    if RestartPolicy::parse(policy).is_none() {
        errs.push(FieldError::not_supported(
            &path.child("restartPolicy"),
            policy,
            &RestartPolicy::NAMES,
        ));
    }
    let rules_path = path.child("restartPolicyRules");
    if init && policy == "Always" && !rules.is_empty() {
        errs.push(FieldError::forbidden(
            &rules_path,
            "restartPolicyRules are not allowed for init containers with restart policy Always",
        ));
        return;
    }
    if rules.len() > MAX_RULES {
        errs.push(FieldError::invalid_number(
            &rules_path,
            rules.len() as i64,
            &format!("must have at most {MAX_RULES} items"),
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        validate_rule(rule, &rules_path.index(i), errs);
    }
}

fn validate_rule(rule: &ContainerRestartRule, r_path: &FieldPath, errs: &mut FieldErrors) {
    if rule.action != RULE_ACTION_RESTART {
        errs.push(FieldError::not_supported(
            &r_path.child("action"),
            &rule.action,
            &[RULE_ACTION_RESTART],
        ));
    }
    let Some(codes) = &rule.exit_codes else {
        errs.push(FieldError::required(
            &r_path.child("exitCodes"),
            "must be specified",
        ));
        return;
    };
    let c_path = r_path.child("exitCodes");
    if !RULE_OPERATORS.contains(&codes.operator.as_str()) {
        errs.push(FieldError::not_supported(
            &c_path.child("operator"),
            &codes.operator,
            &RULE_OPERATORS,
        ));
    }
    let n = codes.values.as_ref().map_or(0, Vec::len);
    if n > MAX_RULE_VALUES {
        errs.push(FieldError::invalid_number(
            &c_path.child("values"),
            n as i64,
            &format!("must have at most {MAX_RULE_VALUES} items"),
        ));
    }
}
