//! How a failed pod counts (the pod failure policy's rules, first match wins) and how long
//! a Job waits before replacing failed pods (Kubernetes' backoff: 10 s doubling per
//! failure, at most six minutes, from the last failure).

use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, PodFailurePolicyRule};
use k8s_openapi::api::core::v1::Pod;

/// What a failed pod means for its Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Counts toward `backoffLimit`.
    Count,
    /// Not counted: replaced as if it never ran.
    Ignore,
    /// The Job fails at once, with this message.
    FailJob(String),
}

fn pod_name(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The first container that ended with a non-zero code matching the rule's exit codes.
fn exit_code_match(rule: &PodFailurePolicyRule, p: &Pod) -> Option<(String, i32)> {
    let codes = rule.on_exit_codes.as_ref()?;
    let statuses = p.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|s| {
        let code = s.state.as_ref()?.terminated.as_ref()?.exit_code;
        let named = codes.container_name.as_ref().is_none_or(|n| *n == s.name);
        let listed = codes.values.contains(&code);
        let hit = code != 0 && named && (listed == (codes.operator == "In"));
        hit.then(|| (s.name.clone(), code))
    })
}

fn condition_match(rule: &PodFailurePolicyRule, p: &Pod) -> Option<String> {
    let wanted = rule.on_pod_conditions.as_ref()?;
    let have = p.status.as_ref()?.conditions.as_ref()?;
    wanted.iter().find_map(|w| {
        let status = w.status.as_deref().unwrap_or("True");
        have.iter()
            .any(|c| c.type_ == w.type_ && c.status == status)
            .then(|| w.type_.clone())
    })
}

/// The verdict on one failed pod.
pub fn verdict(job: &Job, p: &Pod) -> Verdict {
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    let rules = policy.map(|p| p.rules.as_slice()).unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        let why = if let Some((container, code)) = exit_code_match(rule, p) {
            format!(
                "Container {container} for pod {} failed with exit code {code} matching {} rule at index {i}",
                pod_name(p),
                rule.action
            )
        } else if let Some(cond) = condition_match(rule, p) {
            format!(
                "Pod {} has condition {cond} matching {} rule at index {i}",
                pod_name(p),
                rule.action
            )
        } else {
            continue;
        };
        return match rule.action.as_str() {
            "FailJob" => Verdict::FailJob(why),
            "Ignore" => Verdict::Ignore,
            _ => Verdict::Count,
        };
    }
    Verdict::Count
}

/// When a failed pod stopped (its containers' last finish), in milliseconds.
pub fn failed_at_ms(p: &Pod) -> Option<i64> {
    let statuses = p.status.as_ref()?.container_statuses.as_ref()?;
    statuses
        .iter()
        .filter_map(|s| s.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0.as_millisecond())
        .max()
}

/// How long after the last failure a replacement may start, after `failures` failures.
pub fn backoff(failures: i32) -> Duration {
    if failures <= 0 {
        return Duration::ZERO;
    }
    let exp = u32::try_from(failures - 1).unwrap_or(0).min(6);
    Duration::from_secs(10 << exp).min(Duration::from_secs(360))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(rules: serde_json::Value) -> Job {
        serde_json::from_value(
            json!({"spec": {"template": {}, "podFailurePolicy": {"rules": rules}}}),
        )
        .unwrap()
    }

    fn failed(code: i32, conditions: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "conditions": conditions, "containerStatuses": [
                {"name": "main", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": code}}}]}}))
        .unwrap()
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let j = job(json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42]}},
        ]));
        let disrupted = failed(42, json!([{"type": "DisruptionTarget", "status": "True"}]));
        assert_eq!(verdict(&j, &disrupted), Verdict::Ignore);
        match verdict(&j, &failed(42, json!([]))) {
            Verdict::FailJob(why) => assert_eq!(
                why,
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(verdict(&j, &failed(1, json!([]))), Verdict::Count);
        assert_eq!(
            verdict(&job(json!([])), &failed(42, json!([]))),
            Verdict::Count
        );
    }

    #[test]
    fn backoff_doubles_from_ten_seconds_to_six_minutes() {
        let secs: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [0, 10, 20, 40, 80, 160, 320, 360, 360]);
    }
}
