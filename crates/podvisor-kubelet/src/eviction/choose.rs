//! Which pod an eviction pass evicts, and with what words and grace period: the pods
//! still running ranked for the signal, critical ones passed over (the kubelet refuses to
//! evict them), a hard threshold's pod given one second, a soft one's the shorter of its
//! own grace period and `evictionMaxPodGracePeriod`.

use podvisor_core::stats::Summary;
use podvisor_core::{GracePeriod, PodExt, SharedPod};
use podvisor_eviction::rank::{Candidate, DiskParts, rank};
use podvisor_eviction::{Observation, Threshold, message};

use crate::protocol::eviction::EvictPod;

/// What the pass knows when it must evict.
pub(crate) struct Choice<'a> {
    pub threshold: &'a Threshold,
    pub observation: Option<Observation>,
    pub dedicated_image_fs: bool,
    /// `evictionMaxPodGracePeriod`, seconds.
    pub max_pod_grace: i64,
}

impl Choice<'_> {
    /// The eviction to make among `pods` (the node's desired pods), if any may go.
    pub(crate) fn evict(&self, pods: &[SharedPod], summary: &Summary) -> Option<EvictPod> {
        let active: Vec<&SharedPod> = pods.iter().filter(|p| !p.is_terminal()).collect();
        let stats = |p: &SharedPod| {
            summary
                .pods
                .iter()
                .find(|s| s.pod_ref.uid == p.uid().as_str())
        };
        let mut candidates: Vec<Candidate<'_>> = active
            .iter()
            .map(|p| Candidate {
                pod: p.pod(),
                stats: stats(p),
            })
            .collect();
        let signal = self.threshold.signal;
        rank(
            &mut candidates,
            signal,
            DiskParts::for_signal(signal, self.dedicated_image_fs),
        );
        let chosen = candidates
            .iter()
            .find(|c| !podvisor_eviction::admit::is_critical(c.pod))?;
        let pod = active
            .iter()
            .find(|p| std::ptr::eq(p.pod(), chosen.pod))
            .map(|p| (*p).clone())?;
        let message = message::eviction(signal.resource(), self.met_info(), &pod, chosen.stats);
        Some(EvictPod {
            grace: self.grace(&pod),
            pod,
            message,
        })
    }

    /// "Threshold quantity: …, available: …" as the kubelet prints them.
    fn met_info(&self) -> Option<(String, String)> {
        let o = self.observation?;
        let bytes = self.threshold.signal.in_bytes();
        Some((
            message::quantity(self.threshold.value.of(o.capacity), bytes),
            message::quantity(o.available, bytes),
        ))
    }

    fn grace(&self, pod: &SharedPod) -> GracePeriod {
        if self.threshold.is_hard() {
            return GracePeriod::MIN;
        }
        let own = pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds);
        GracePeriod::from_seconds(own.map_or(self.max_pod_grace, |g| g.min(self.max_pod_grace)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use podvisor_core::stats::{NodeStats, PodReference, PodStats, ProcessStats};
    use podvisor_eviction::{Signal, Value};

    use super::*;

    fn pod(name: &str, extra: serde_json::Value) -> SharedPod {
        let mut v = serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [{"name": "c"}], "terminationGracePeriodSeconds": 30}
        });
        if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        SharedPod::new(serde_json::from_value(v).unwrap()).unwrap()
    }

    fn stats(name: &str, processes: u64) -> PodStats {
        PodStats {
            process_stats: Some(ProcessStats {
                process_count: Some(processes),
            }),
            ..serde_json::from_value(serde_json::json!({
                "podRef": PodReference { name: name.into(), namespace: "default".into(), uid: name.into() },
                "containers": []
            }))
            .unwrap()
        }
    }

    #[test]
    fn the_greediest_pod_goes_critical_ones_never_with_the_kubelets_grace_periods() {
        let pods = vec![
            pod("calm", serde_json::json!({})),
            pod("forker", serde_json::json!({"priority": 2_000_000_000})),
            pod("busy", serde_json::json!({})),
        ];
        let summary = Summary {
            node: serde_json::from_value::<NodeStats>(serde_json::json!({"nodeName": "n"}))
                .unwrap(),
            pods: vec![stats("calm", 1), stats("forker", 900), stats("busy", 50)],
        };
        let mut t = Threshold {
            signal: Signal::PidAvailable,
            value: Value::Quantity(1000),
            grace: Duration::ZERO,
            min_reclaim: None,
        };
        let choice = |t: &Threshold| {
            Choice {
                threshold: t,
                observation: Some(Observation {
                    available: 900,
                    capacity: 32768,
                }),
                dedicated_image_fs: false,
                max_pod_grace: 10,
            }
            .evict(&pods, &summary)
            .unwrap()
        };
        let e = choice(&t);
        assert_eq!(e.pod.name(), "busy", "the critical forker is passed over");
        assert_eq!(e.grace, GracePeriod::MIN);
        assert_eq!(
            e.message,
            "The node was low on resource: pids. Threshold quantity: 1k, available: 900. "
        );
        t.grace = Duration::from_secs(60);
        assert_eq!(
            choice(&t).grace,
            GracePeriod::from_seconds(10),
            "soft: capped by the maximum"
        );
    }
}
