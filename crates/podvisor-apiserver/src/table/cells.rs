//! One row's cells per kind, computed as kubectl's printers do.

use podvisor_core::Kind;
use serde_json::{Value, json};

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn or_none(v: &Value) -> String {
    match s(v) {
        "" => "<none>".into(),
        x => x.into(),
    }
}

fn seconds_since(t: &Value) -> Option<i64> {
    let ts: k8s_openapi::jiff::Timestamp = s(t).parse().ok()?;
    Some(podvisor_core::time::now().0.as_second() - ts.as_second())
}

/// kubectl's `HumanDuration`.
pub fn human(secs: i64) -> String {
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    match secs {
        i64::MIN..=-2 => "<invalid>".into(),
        -1..=0 => "0s".into(),
        _ if secs < 120 => format!("{secs}s"),
        _ if m < 10 && secs % 60 == 0 => format!("{m}m"),
        _ if m < 10 => format!("{m}m{}s", secs % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 == 0 => format!("{h}h"),
        _ if h < 8 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if h < 192 && h % 24 == 0 => format!("{d}d"),
        _ if h < 192 => format!("{d}d{}h", h % 24),
        _ if d < 365 * 2 => format!("{d}d"),
        _ => format!("{}y{}d", d / 365, d % 365),
    }
}

fn age(v: &Value) -> String {
    seconds_since(&v["metadata"]["creationTimestamp"]).map_or("<unknown>".into(), human)
}

pub fn of(kind: Kind, v: &Value) -> Vec<Value> {
    let name = json!(s(&v["metadata"]["name"]));
    match kind {
        Kind::Pod => pod(v),
        Kind::Node => node(v),
        Kind::ReplicaSet => replica_set(v),
        Kind::Deployment => deployment(v),
        Kind::Job => job(v),
        Kind::Namespace => vec![name, json!(s(&v["status"]["phase"])), json!(age(v))],
        Kind::ConfigMap => {
            let n = count(&v["data"]) + count(&v["binaryData"]);
            vec![name, json!(n), json!(age(v))]
        }
        Kind::Secret => vec![
            name,
            json!(s(&v["type"])),
            json!(count(&v["data"])),
            json!(age(v)),
        ],
        Kind::Event => event(v),
        Kind::ServiceAccount => vec![name, json!(count_items(&v["secrets"])), json!(age(v))],
        Kind::Role | Kind::ClusterRole => {
            vec![name, json!(s(&v["metadata"]["creationTimestamp"]))]
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => binding(name, v),
    }
}

fn count_items(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// A binding's role (`ClusterRole/view`) and its subjects by kind.
fn binding(name: Value, v: &Value) -> Vec<Value> {
    let role = format!("{}/{}", s(&v["roleRef"]["kind"]), s(&v["roleRef"]["name"]));
    let subjects = v["subjects"].as_array().cloned().unwrap_or_default();
    let of = |kind: &str| {
        let names: Vec<String> = subjects
            .iter()
            .filter(|x| x["kind"] == kind)
            .map(|x| match x["namespace"].as_str() {
                Some(ns) if kind == "ServiceAccount" => format!("{ns}/{}", s(&x["name"])),
                _ => s(&x["name"]).to_string(),
            })
            .collect();
        json!(names.join(", "))
    };
    vec![
        name,
        json!(role),
        json!(age(v)),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]
}

fn count(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len())
}

fn statuses(v: &Value, field: &str) -> Vec<Value> {
    v["status"][field].as_array().cloned().unwrap_or_default()
}

/// The STATUS column: the init step, or the most telling container state.
fn pod_status(v: &Value) -> String {
    let mut reason = s(&v["status"]["phase"]).to_string();
    if let Some(r) = v["status"]["reason"].as_str() {
        reason = r.into();
    }
    let init = statuses(v, "initContainerStatuses");
    let total_init = v["spec"]["initContainers"].as_array().map_or(0, Vec::len);
    for (i, c) in init.iter().enumerate() {
        let st = &c["state"];
        if st["terminated"]["exitCode"].as_i64() == Some(0) || c["started"] == true {
            continue;
        }
        reason = match (&st["terminated"], &st["waiting"]) {
            (t, _) if t.is_object() => match t["reason"].as_str() {
                Some(r) => format!("Init:{r}"),
                None => format!("Init:ExitCode:{}", t["exitCode"]),
            },
            (_, w)
                if w.is_object()
                    && s(&w["reason"]) != "PodInitializing"
                    && !s(&w["reason"]).is_empty() =>
            {
                format!("Init:{}", s(&w["reason"]))
            }
            _ => format!("Init:{i}/{total_init}"),
        };
        return terminating(v, reason);
    }
    let mut running = false;
    for c in statuses(v, "containerStatuses").iter().rev() {
        let st = &c["state"];
        if let Some(r) = st["waiting"]["reason"].as_str().filter(|r| !r.is_empty()) {
            reason = r.into();
        } else if st["terminated"].is_object() {
            reason = match st["terminated"]["reason"].as_str() {
                Some(r) => r.into(),
                None => format!("ExitCode:{}", st["terminated"]["exitCode"]),
            };
        } else if st["running"].is_object() && c["ready"] == true {
            running = true;
        }
    }
    if reason == "Completed" && running {
        reason = "Running".into();
    }
    terminating(v, reason)
}

fn terminating(v: &Value, reason: String) -> String {
    if v["metadata"]["deletionTimestamp"].is_string() {
        "Terminating".into()
    } else {
        reason
    }
}

fn restarts(v: &Value) -> String {
    let all = statuses(v, "containerStatuses");
    let n: i64 = all
        .iter()
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum();
    let last = all
        .iter()
        .filter_map(|c| seconds_since(&c["lastState"]["terminated"]["finishedAt"]))
        .min();
    match last {
        Some(ago) if n > 0 => format!("{n} ({} ago)", human(ago)),
        _ => n.to_string(),
    }
}

fn pod(v: &Value) -> Vec<Value> {
    let total = v["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = statuses(v, "containerStatuses")
        .iter()
        .filter(|c| c["ready"] == true)
        .count();
    vec![
        json!(s(&v["metadata"]["name"])),
        json!(format!("{ready}/{total}")),
        json!(pod_status(v)),
        json!(restarts(v)),
        json!(age(v)),
        json!(or_none(&v["status"]["podIP"])),
        json!(or_none(&v["spec"]["nodeName"])),
        json!("<none>"),
        json!("<none>"),
    ]
}

fn node(v: &Value) -> Vec<Value> {
    let ready = v["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| c["status"] == "True");
    let mut status = if ready { "Ready" } else { "NotReady" }.to_string();
    if v["spec"]["unschedulable"] == true {
        status += ",SchedulingDisabled";
    }
    let addr = |t: &str| {
        v["status"]["addresses"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["type"] == t))
            .map_or("<none>".to_string(), |x| s(&x["address"]).to_string())
    };
    let info = &v["status"]["nodeInfo"];
    vec![
        json!(s(&v["metadata"]["name"])),
        json!(status),
        json!("<none>"),
        json!(age(v)),
        json!(s(&info["kubeletVersion"])),
        json!(addr("InternalIP")),
        json!(addr("ExternalIP")),
        json!(s(&info["osImage"])),
        json!(s(&info["kernelVersion"])),
        json!(s(&info["containerRuntimeVersion"])),
    ]
}

/// A workload's wide columns: its template's container names and images, its selector.
fn template_columns(v: &Value) -> [Value; 3] {
    let containers = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let join = |f: &str| {
        containers
            .iter()
            .map(|c| s(&c[f]).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let selector = v["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, x)| format!("{k}={}", s(x)))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    [json!(join("name")), json!(join("image")), json!(selector)]
}

fn n(x: &Value) -> i64 {
    x.as_i64().unwrap_or(0)
}

fn replica_set(v: &Value) -> Vec<Value> {
    let mut row = vec![
        json!(s(&v["metadata"]["name"])),
        json!(v["spec"]["replicas"].as_i64().unwrap_or(1)),
        json!(n(&v["status"]["replicas"])),
        json!(n(&v["status"]["readyReplicas"])),
        json!(age(v)),
    ];
    row.extend(template_columns(v));
    row
}

fn deployment(v: &Value) -> Vec<Value> {
    let st = &v["status"];
    let ready = format!("{}/{}", n(&st["readyReplicas"]), n(&v["spec"]["replicas"]));
    let mut row = vec![
        json!(s(&v["metadata"]["name"])),
        json!(ready),
        json!(n(&st["updatedReplicas"])),
        json!(n(&st["availableReplicas"])),
        json!(age(v)),
    ];
    row.extend(template_columns(v));
    row
}

fn has_condition(v: &Value, type_: &str) -> bool {
    let all = v["status"]["conditions"].as_array();
    all.is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

/// kubectl's Job status column.
fn job_status(v: &Value) -> &'static str {
    let deleting = !v["metadata"]["deletionTimestamp"].is_null();
    match () {
        () if has_condition(v, "Complete") => "Complete",
        () if has_condition(v, "Failed") => "Failed",
        () if deleting => "Terminating",
        () if has_condition(v, "Suspended") => "Suspended",
        () if has_condition(v, "FailureTarget") => "FailureTarget",
        () if has_condition(v, "SuccessCriteriaMet") => "SuccessCriteriaMet",
        () => "Running",
    }
}

fn job(v: &Value) -> Vec<Value> {
    let succeeded = n(&v["status"]["succeeded"]);
    let parallelism = n(&v["spec"]["parallelism"]);
    let completions = match v["spec"]["completions"].as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        None => format!("{succeeded}/1"),
    };
    let time = |f: &str| {
        s(&v["status"][f])
            .parse::<k8s_openapi::jiff::Timestamp>()
            .ok()
    };
    let duration = match (time("startTime"), time("completionTime")) {
        (Some(a), Some(b)) => human(b.as_second() - a.as_second()),
        (Some(a), None) => human(podvisor_core::time::now().0.as_second() - a.as_second()),
        _ => String::new(),
    };
    let mut row = vec![
        json!(s(&v["metadata"]["name"])),
        json!(job_status(v)),
        json!(completions),
        json!(duration),
        json!(age(v)),
    ];
    row.extend(template_columns(v));
    row
}

fn event(v: &Value) -> Vec<Value> {
    let last = [
        &v["lastTimestamp"],
        &v["eventTime"],
        &v["metadata"]["creationTimestamp"],
    ]
    .into_iter()
    .find_map(seconds_since)
    .map_or("<unknown>".into(), human);
    let obj = &v["involvedObject"];
    vec![
        json!(last),
        json!(s(&v["type"])),
        json!(s(&v["reason"])),
        json!(format!(
            "{}/{}",
            s(&obj["kind"]).to_lowercase(),
            s(&obj["name"])
        )),
        json!(s(&v["message"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (secs, want) in [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (30 * 3600, "30h"),
            (50 * 3600, "2d2h"),
            (10 * 86400, "10d"),
        ] {
            assert_eq!(human(secs), want, "{secs}");
        }
    }

    #[test]
    fn pod_status_shows_init_steps_waiting_reasons_and_terminating() {
        let init = json!({"spec": {"initContainers": [{}, {}]}, "status": {"phase": "Pending",
            "initContainerStatuses": [{"state": {"terminated": {"exitCode": 0}}}, {"state": {"running": {}}}]}});
        assert_eq!(pod_status(&init), "Init:1/2");
        let crash = json!({"status": {"phase": "Running", "containerStatuses": [
            {"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        assert_eq!(pod_status(&crash), "CrashLoopBackOff");
        let mut going = json!({"status": {"phase": "Running"}});
        going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        assert_eq!(pod_status(&going), "Terminating");
    }
}
