//! The fields of `KubeletConfiguration` (k8s.io/kubelet/config/v1beta1, Kubernetes 1.37)
//! that podvisor does not map onto a key of its own (those are in `kubelet.rs`), each with
//! the kubelet's default and why podvisor cannot take another value. podvisor behaves as
//! the default does, so a file may leave the field out, give its zero value (as kubeadm
//! writes `0s` for "the default") or give the default itself; anything else is refused by
//! name with the reason: nothing given is silently ignored.

use serde_json::Value;

/// What becomes of one field.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Accepted,
    Refused {
        default: &'static str,
        reason: &'static str,
    },
    /// Not a field of the kubelet's schema.
    Unknown,
}

const NO_MEMCG: &str = "podvisor measures memory pressure every monitoring period, not \
                        through memcg threshold notifications";
const NO_RESERVED: &str = "podvisor sets what pods may use directly ([allocatable] cpu and \
                           memory), not as capacity less reservations";
const NO_MANAGERS: &str = "podvisor has no CPU, memory or topology manager: containers \
                           share the node's CPUs and NUMA nodes";
const NO_RATE_LIMIT: &str = "podvisor does not rate-limit its requests";
const NO_STATIC_URL: &str = "podvisor reads static pods from a directory, not a URL";
const FIXED_STATUS: &str = "podvisor looks at the node's conditions every second, writes them \
                            at once on a change and at least every minute, and renews a 40 s \
                            Lease every 10 s";
const NO_SHUTDOWN: &str = "podvisor does not take an inhibitor lock to stop pods when the \
                           machine shuts down";
const ALWAYS_SERVED: &str = "podvisor always serves exec, attach, port-forward, logs and its \
                             metrics on :10250";
const NO_SYSCTLS: &str = "podvisor allows only the safe sysctls";
const CGROUPS: &str = "podvisor manages only the pods' cgroups";
const TLS: &str = "podvisor's :10250 uses rustls' defaults: TLS 1.2 and 1.3 with their safe \
                   cipher suites and curves";

/// Field, the kubelet's default (JSON), and why another value is refused.
const FIELDS: &[(&str, &str, &str)] = &[
    ("staticPodURL", "\"\"", NO_STATIC_URL),
    ("staticPodURLHeader", "{}", NO_STATIC_URL),
    ("httpCheckFrequency", "\"20s\"", NO_STATIC_URL),
    (
        "readOnlyPort",
        "0",
        "podvisor serves no unauthenticated read-only port",
    ),
    ("tlsCipherSuites", "[]", TLS),
    ("tlsCurvePreferences", "[]", TLS),
    ("tlsMinVersion", "\"\"", TLS),
    ("registryPullQPS", "5", NO_RATE_LIMIT),
    ("registryBurst", "10", NO_RATE_LIMIT),
    ("eventRecordQPS", "50", NO_RATE_LIMIT),
    ("eventBurst", "100", NO_RATE_LIMIT),
    ("kubeAPIQPS", "50", NO_RATE_LIMIT),
    ("kubeAPIBurst", "100", NO_RATE_LIMIT),
    (
        "imagePullCredentialsVerificationPolicy",
        "\"NeverVerifyPreloadedImages\"",
        "podvisor does not verify the credentials of images already pulled",
    ),
    (
        "preloadedImagesVerificationAllowlist",
        "[]",
        "podvisor does not verify the credentials of images already pulled",
    ),
    ("enableDebuggingHandlers", "true", ALWAYS_SERVED),
    (
        "enableContentionProfiling",
        "false",
        "podvisor has no profiling handlers",
    ),
    ("enableProfilingHandler", "true", ALWAYS_SERVED),
    ("enableDebugFlagsHandler", "true", ALWAYS_SERVED),
    ("enableSystemLogHandler", "true", ALWAYS_SERVED),
    (
        "enableSystemLogQuery",
        "false",
        "podvisor does not serve the node's own logs",
    ),
    (
        "oomScoreAdj",
        "-999",
        "podvisor leaves its own OOM score to its service manager",
    ),
    ("nodeStatusUpdateFrequency", "\"10s\"", FIXED_STATUS),
    ("nodeStatusReportFrequency", "\"5m0s\"", FIXED_STATUS),
    ("nodeLeaseDurationSeconds", "40", FIXED_STATUS),
    (
        "volumeStatsAggPeriod",
        "\"1m0s\"",
        "podvisor measures volumes when asked",
    ),
    ("kubeletCgroups", "\"\"", CGROUPS),
    ("systemCgroups", "\"\"", CGROUPS),
    ("systemReservedCgroup", "\"\"", CGROUPS),
    ("kubeReservedCgroup", "\"\"", CGROUPS),
    ("cpuManagerPolicy", "\"none\"", NO_MANAGERS),
    ("cpuManagerPolicyOptions", "{}", NO_MANAGERS),
    ("cpuManagerReconcilePeriod", "\"10s\"", NO_MANAGERS),
    ("memoryManagerPolicy", "\"None\"", NO_MANAGERS),
    ("topologyManagerPolicy", "\"none\"", NO_MANAGERS),
    ("topologyManagerScope", "\"container\"", NO_MANAGERS),
    ("topologyManagerPolicyOptions", "{}", NO_MANAGERS),
    ("reservedSystemCPUs", "\"\"", NO_MANAGERS),
    ("reservedMemory", "[]", NO_MANAGERS),
    (
        "singleProcessOOMKill",
        "false",
        "podvisor leaves the runtime's cgroup v2 default: the OOM killer takes the container whole",
    ),
    (
        "qosReserved",
        "{}",
        "podvisor does not reserve memory per QoS class",
    ),
    (
        "hairpinMode",
        "\"promiscuous-bridge\"",
        "networking is the CNI plugin's",
    ),
    ("podCIDR", "\"\"", "networking is the CNI plugin's"),
    (
        "makeIPTablesUtilChains",
        "true",
        "networking is the CNI plugin's",
    ),
    (
        "iptablesMasqueradeBit",
        "14",
        "networking is the CNI plugin's",
    ),
    ("iptablesDropBit", "15", "networking is the CNI plugin's"),
    ("podPidsLimit", "-1", "podvisor sets no PID limit on pods"),
    ("runOnce", "false", "podvisor runs until it is stopped"),
    (
        "cpuCFSQuota",
        "true",
        "podvisor enforces CPU limits with CFS quotas",
    ),
    (
        "cpuCFSQuotaPeriod",
        "\"100ms\"",
        "podvisor's CFS period is the kernel's 100 ms",
    ),
    (
        "nodeStatusMaxImages",
        "50",
        "podvisor reports no images in the Node's status",
    ),
    (
        "maxOpenFiles",
        "1000000",
        "podvisor leaves its open-file limit to its service manager",
    ),
    (
        "contentType",
        "\"application/vnd.kubernetes.protobuf\"",
        "podvisor speaks JSON to the API server",
    ),
    (
        "serializeImagePulls",
        "true",
        "podvisor pulls one image at a time per pod",
    ),
    (
        "maxParallelImagePulls",
        "null",
        "podvisor pulls one image at a time per pod",
    ),
    ("podsPerCore", "0", "podvisor's pod limit is maxPods alone"),
    (
        "enableControllerAttachDetach",
        "true",
        "podvisor attaches no volumes itself",
    ),
    (
        "protectKernelDefaults",
        "false",
        "podvisor does not check the kernel's tunables",
    ),
    (
        "featureGates",
        "{}",
        "podvisor has no feature gates: it does what it does by default",
    ),
    ("failSwapOn", "true", "podvisor does not check for swap"),
    ("memorySwap", "{}", "podvisor gives containers no swap"),
    (
        "containerLogMaxWorkers",
        "1",
        "podvisor rotates logs with one task",
    ),
    (
        "configMapAndSecretChangeDetectionStrategy",
        "\"Watch\"",
        "podvisor watches the ConfigMaps and Secrets its pods use",
    ),
    ("systemReserved", "{}", NO_RESERVED),
    ("kubeReserved", "{}", NO_RESERVED),
    ("enforceNodeAllocatable", "[\"pods\"]", NO_RESERVED),
    (
        "showHiddenMetricsForVersion",
        "\"\"",
        "podvisor hides no metrics",
    ),
    ("allowedUnsafeSysctls", "[]", NO_SYSCTLS),
    ("defaultPodSysctls", "[]", NO_SYSCTLS),
    (
        "volumePluginDir",
        "\"/usr/libexec/kubernetes/kubelet-plugins/volume/exec/\"",
        "podvisor has no FlexVolume plugins",
    ),
    (
        "providerID",
        "\"\"",
        "podvisor sets no providerID: no cloud provider",
    ),
    ("kernelMemcgNotification", "false", NO_MEMCG),
    ("shutdownGracePeriod", "\"0s\"", NO_SHUTDOWN),
    ("shutdownGracePeriodCriticalPods", "\"0s\"", NO_SHUTDOWN),
    ("shutdownGracePeriodByPodPriority", "[]", NO_SHUTDOWN),
    (
        "crashLoopBackOff",
        "{}",
        "podvisor's crash-loop back-off is the kubelet's default: 10 s doubling to 5 min",
    ),
    (
        "seccompDefault",
        "false",
        "podvisor runs containers Unconfined unless their securityContext says otherwise",
    ),
    (
        "memoryThrottlingFactor",
        "0.9",
        "podvisor sets no memory.high",
    ),
    (
        "memoryReservationPolicy",
        "\"None\"",
        "podvisor sets no memory.min",
    ),
    ("registerNode", "true", "podvisor always registers its Node"),
    ("tracing", "null", "podvisor exports no traces"),
    (
        "localStorageCapacityIsolation",
        "true",
        "podvisor reports ephemeral-storage capacity and counts requests against it",
    ),
    (
        "userNamespaces",
        "null",
        "podvisor does not map pods' user IDs",
    ),
];

/// Whether `v` is a zero value: what an encoder writes for a field left at its default.
fn unset(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty() || s == "0s",
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Every field podvisor does not map, at the kubelet's default (what `/configz` shows).
pub(super) fn defaults() -> impl Iterator<Item = (&'static str, Value)> {
    FIELDS
        .iter()
        .map(|(f, d, _)| (*f, serde_json::from_str(d).unwrap_or(Value::Null)))
}

pub(super) fn verdict(field: &str, v: &Value) -> Verdict {
    let Some((_, default, reason)) = FIELDS.iter().find(|(f, ..)| *f == field) else {
        return Verdict::Unknown;
    };
    let default_value: Value = serde_json::from_str(default).unwrap_or(Value::Null);
    if unset(v) || *v == default_value {
        Verdict::Accepted
    } else {
        Verdict::Refused { default, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_json_and_no_field_is_listed_twice() {
        let mut seen = std::collections::BTreeSet::new();
        for (field, default, _) in FIELDS {
            assert!(
                serde_json::from_str::<Value>(default).is_ok(),
                "{field}: {default}"
            );
            assert!(seen.insert(*field), "{field} twice");
        }
    }

    #[test]
    fn a_field_is_accepted_unset_or_at_its_default_and_refused_otherwise() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert_eq!(verdict("readOnlyPort", &v("0")), Verdict::Accepted);
        assert_eq!(
            verdict("nodeStatusReportFrequency", &v("\"0s\"")),
            Verdict::Accepted
        );
        assert_eq!(
            verdict("nodeStatusReportFrequency", &v("\"5m0s\"")),
            Verdict::Accepted
        );
        assert_eq!(verdict("systemReserved", &v("{}")), Verdict::Accepted);
        assert!(matches!(
            verdict("readOnlyPort", &v("10255")),
            Verdict::Refused { default: "0", .. }
        ));
        assert!(matches!(
            verdict("systemReserved", &v("{\"memory\": \"100Mi\"}")),
            Verdict::Refused { .. }
        ));
        assert!(matches!(
            verdict("featureGates", &v("{\"SomeGate\": true}")),
            Verdict::Refused { .. }
        ));
        assert_eq!(verdict("readOnlyPorts", &v("0")), Verdict::Unknown);
    }
}
