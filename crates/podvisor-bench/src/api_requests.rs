//! The API server's own count of the requests it served (`apiserver_request_total` on its
//! `/metrics`), by verb and resource: what a stretch of work cost the control plane. It
//! counts every client's requests (the benchmark's, the node's, the controller manager's
//! and the scheduler's) and says nothing of who asked.

use std::collections::BTreeMap;
use std::path::Path;

/// Requests served, by `"VERB resource[/subresource]"`.
pub type Counts = BTreeMap<String, u64>;

/// The API server's counts now, read with `kubectl get --raw /metrics` (`$KUBECTL`, or
/// `kubectl` on the path) as the cluster's admin.
pub fn read(kubeconfig: &Path) -> anyhow::Result<Counts> {
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let out = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "--raw", "/metrics"])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl get --raw /metrics: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

/// The `apiserver_request_total` samples of a Prometheus text page, summed over their
/// other labels (code, scope, version…).
pub fn parse(text: &str) -> Counts {
    let mut counts = Counts::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let key = match (label(labels, "subresource"), label(labels, "resource")) {
            (Some(sub), Some(res)) if !sub.is_empty() => format!("{res}/{sub}"),
            (_, Some(res)) if !res.is_empty() => res.to_string(),
            _ => "(no resource)".to_string(),
        };
        let verb = label(labels, "verb").unwrap_or("?");
        *counts.entry(format!("{verb} {key}")).or_default() += value as u64;
    }
    counts
}

/// One label's value in a sample's `a="x",b="y"` (values here hold no quotes or commas).
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| v.trim_matches('"'))
    })
}

/// What was served between `before` and `after`, most first; kinds with none left out.
pub fn served(before: &Counts, after: &Counts) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.saturating_sub(before.get(k).copied().unwrap_or(0)),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.2e+01
apiserver_request_total_other{resource="pods",verb="GET"} 99
apiserver_request_duration_seconds_count{resource="pods",verb="GET"} 5
"#;

    #[test]
    fn sums_a_kind_over_its_codes_and_keeps_subresources_apart() {
        let c = parse(PAGE);
        assert_eq!(c.get("POST pods"), Some(&9));
        assert_eq!(c.get("PATCH pods/status"), Some(&12));
        assert_eq!(c.len(), 2, "{c:?}");
    }

    #[test]
    fn served_is_the_difference_most_first() {
        let before = parse(PAGE);
        let mut after = before.clone();
        *after.get_mut("POST pods").unwrap() += 100;
        *after.get_mut("PATCH pods/status").unwrap() += 200;
        after.insert("POST events".into(), 3);
        assert_eq!(
            served(&before, &after),
            vec![
                ("PATCH pods/status".to_string(), 200),
                ("POST pods".to_string(), 100),
                ("POST events".to_string(), 3),
            ]
        );
    }
}
