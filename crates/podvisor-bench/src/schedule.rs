//! A burst's schedule as the runtime saw it: when each pod's sandbox was begun and its
//! container created and started (containerd's own timestamps, nanoseconds), beside when
//! the pod showed Running and Ready through the API. What tells whether pods' containers
//! waited behind other pods' sandboxes.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use podvisor_cri::CriClient;
use podvisor_cri::proto::{ContainerFilter, PodSandboxFilter};

use crate::stats::Samples;

/// One pod of the burst, each time an offset from the burst's start.
#[derive(Debug, Clone, Copy)]
pub struct PodTimes {
    pub sandbox_begun: Duration,
    pub container_created: Duration,
    pub container_started: Duration,
    pub running: Duration,
}

const NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";

fn offset(t0_ns: i64, at_ns: i64) -> Duration {
    Duration::from_nanos(u64::try_from(at_ns - t0_ns).unwrap_or(0))
}

/// The times of namespace `ns`'s pods named in `running` (each one's offset when seen
/// Running), from the runtime that ran them; `t0` is the burst's start.
pub async fn of_namespace(
    cri: &CriClient,
    ns: &str,
    t0: SystemTime,
    running: &HashMap<String, Duration>,
) -> anyhow::Result<Vec<PodTimes>> {
    let t0_ns = i64::try_from(t0.duration_since(SystemTime::UNIX_EPOCH)?.as_nanos())?;
    let selector =
        std::collections::BTreeMap::from([(NAMESPACE_LABEL.to_string(), ns.to_string())]);
    let sandboxes = cri
        .list_pod_sandbox(Some(PodSandboxFilter {
            label_selector: selector.clone(),
            ..Default::default()
        }))
        .await?;
    let containers = cri
        .list_containers(Some(ContainerFilter {
            label_selector: selector,
            ..Default::default()
        }))
        .await?;
    let mut out = Vec::new();
    for s in sandboxes {
        let Some(name) = s.metadata.as_ref().map(|m| m.name.clone()) else {
            continue;
        };
        let Some(&ran) = running.get(&name) else {
            continue;
        };
        let Some(c) = containers.iter().find(|c| c.pod_sandbox_id == s.id) else {
            continue;
        };
        let status = cri.container_status(&c.id).await?;
        out.push(PodTimes {
            sandbox_begun: offset(t0_ns, s.created_at),
            container_created: offset(t0_ns, c.created_at),
            container_started: offset(t0_ns, status.started_at),
            running: ran,
        });
    }
    out.sort_by_key(|p| p.running);
    Ok(out)
}

/// How long after its sandbox was begun each pod's container was created (the sandbox's
/// own time plus any wait for the runtime).
pub fn sandbox_to_container(pods: &[PodTimes]) -> Samples {
    let mut s = Samples::new();
    for p in pods {
        s.push(p.container_created.saturating_sub(p.sandbox_begun));
    }
    s
}

/// The schedule as a Markdown table: in each of `rows` equal slices of the burst, how
/// many sandboxes were begun, containers created and started, and pods seen Running.
pub fn table(pods: &[PodTimes], rows: u32) -> String {
    let end = pods.iter().map(|p| p.running).max().unwrap_or_default();
    let step_ms = u64::try_from(end.as_millis()).unwrap_or(u64::MAX) / u64::from(rows.max(1)) + 1;
    let step = Duration::from_millis(step_ms);
    let mut out = String::from(
        "| until s | sandboxes begun | containers created | containers started | Running (API) |\n|---:|---:|---:|---:|---:|\n",
    );
    let mut from = Duration::ZERO;
    while from <= end {
        let to = from + step;
        let within = |f: fn(&PodTimes) -> Duration| {
            pods.iter().filter(|p| (from..to).contains(&f(p))).count()
        };
        out += &format!(
            "| {:.1} | {} | {} | {} | {} |\n",
            to.as_secs_f64(),
            within(|p| p.sandbox_begun),
            within(|p| p.container_created),
            within(|p| p.container_started),
            within(|p| p.running),
        );
        from = to;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_table_counts_each_event_in_its_slice() {
        let pods = [
            PodTimes {
                sandbox_begun: ms(0),
                container_created: ms(300),
                container_started: ms(400),
                running: ms(500),
            },
            PodTimes {
                sandbox_begun: ms(10),
                container_created: ms(1200),
                container_started: ms(1500),
                running: ms(1999),
            },
        ];
        let t = table(&pods, 2);
        let rows: Vec<&str> = t.lines().skip(2).collect();
        assert_eq!(rows[0], "| 1.0 | 2 | 1 | 1 | 1 |", "{t}");
        assert_eq!(rows[1], "| 2.0 | 0 | 1 | 1 | 1 |", "{t}");
        assert_eq!(sandbox_to_container(&pods).summary().max, ms(1190));
    }
}
