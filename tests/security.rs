//! Security contexts against containerd, through a real agent: what a container can see
//! and do is what its manifest says, as under the kubelet (`/proc` masked, seccomp,
//! capabilities, user and groups, fsGroup on an emptyDir, a safe sysctl), and what cannot
//! be honoured (runAsNonRoot for an image that runs as root, AppArmor on a node without
//! it) keeps the container from starting, with the reason in its status.

mod common;

use std::time::Duration;

use common::agent::Agent;
use k8s_openapi::api::core::v1::Pod;

const IMAGE: &str = "localhost/podvisor/busybox:test";

/// What the container reports of itself, one `key=value` per line.
const REPORT: &str = "{ \
    echo keys=$(grep -c ' /proc/keys ' /proc/self/mountinfo); \
    echo procsys=$(grep ' /proc/sys ' /proc/self/mountinfo | grep -c ' ro,'); \
    echo seccomp=$(awk '/^Seccomp:/ {print $2}' /proc/self/status); \
    echo capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status); \
    echo uid=$(id -u); echo groups=\"$(id -G)\"; \
    echo data=$(stat -c %a /data); \
    touch /data/f && echo file_group=$(stat -c %g /data/f); \
    echo port_start=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start); \
} > /out/$NAME.tmp; mv /out/$NAME.tmp /out/$NAME; exec sleep 3600";

fn pod(name: &str, out: &std::path::Path, pod_sc: &str, sc: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {pod_sc}
  volumes:
  - {{name: data, emptyDir: {{}}}}
  - {{name: out, hostPath: {{path: {out}}}}}
  containers:
  - name: c
    image: {IMAGE}
    env: [{{name: NAME, value: {name}}}]
    securityContext: {sc}
    volumeMounts: [{{name: data, mountPath: /data}}, {{name: out, mountPath: /out}}]
    command: ["sh", "-c", {report}]
"#,
        out = out.display(),
        report = serde_json::to_string(REPORT).unwrap()
    )
}

async fn report(agent: &Agent, name: &str) -> std::collections::HashMap<String, String> {
    let file = agent.out_dir().join(name);
    let text = common::eventually("the container's report", Duration::from_secs(60), || {
        let f = file.clone();
        async move { std::fs::read_to_string(f).ok() }
    })
    .await;
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

fn waiting(p: &Pod) -> Option<(String, String)> {
    let s = p.status.as_ref()?.container_statuses.as_ref()?.first()?;
    let w = s.state.as_ref()?.waiting.as_ref()?;
    Some((w.reason.clone()?, w.message.clone().unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_gets_the_security_its_manifest_asks_for() {
    let agent = Agent::start("security").await;
    let out = agent.out_dir();
    // Containers running as a user other than root write their reports here.
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    agent.write("plain.yaml", &pod("plain", &out, "{}", "{}"));
    agent.write(
        "hardened.yaml",
        &pod(
            "hardened",
            &out,
            "{runAsUser: 1000, runAsNonRoot: true, fsGroup: 2000, seccompProfile: {type: RuntimeDefault}, \
             sysctls: [{name: net.ipv4.ip_unprivileged_port_start, value: \"0\"}]}",
            "{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}",
        ),
    );
    let plain = report(&agent, "plain").await;
    assert_eq!(plain["keys"], "1", "/proc/keys is masked: {plain:?}");
    assert_eq!(plain["procsys"], "1", "/proc/sys is read-only: {plain:?}");
    assert_eq!(plain["seccomp"], "0", "unconfined unless asked: {plain:?}");
    assert_eq!(plain["uid"], "0");
    assert_eq!(plain["data"], "777", "an emptyDir is everyone's: {plain:?}");
    let hard = report(&agent, "hardened").await;
    assert_eq!(
        hard["seccomp"], "2",
        "the runtime's default profile: {hard:?}"
    );
    assert_eq!(
        hard["capeff"], "0000000000000000",
        "no capabilities: {hard:?}"
    );
    assert_eq!(hard["uid"], "1000");
    assert!(hard["groups"].split(' ').any(|g| g == "2000"), "{hard:?}");
    assert_eq!(hard["data"], "2777", "the fsGroup's, setgid: {hard:?}");
    assert_eq!(
        hard["file_group"], "2000",
        "new files are the fsGroup's: {hard:?}"
    );
    assert_eq!(hard["port_start"], "0", "the safe sysctl is set: {hard:?}");
    // containerd 2.x opens the unprivileged ports in every pod itself
    // (`enable_unprivileged_ports`, on by default since 2.0); 1.x only where asked.
    let version = common::runtime_version().await;
    if version.starts_with("1.") {
        assert_ne!(
            plain["port_start"], "0",
            "only in the pod that asked: {plain:?}"
        );
    } else {
        assert_eq!(
            plain["port_start"], "0",
            "containerd {version}'s default: {plain:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_honoured_keeps_the_container_from_starting_with_the_reason() {
    let agent = Agent::start("security-refused").await;
    let out = agent.out_dir();
    agent.write(
        "root.yaml",
        &pod("root", &out, "{runAsNonRoot: true}", "{}"),
    );
    // An explicit root user under the same policy: admitted, refused by the node.
    agent.write(
        "uid0.yaml",
        &pod("uid0", &out, "{runAsNonRoot: true}", "{runAsUser: 0}"),
    );
    let apparmor_on_node = std::fs::read_to_string("/sys/module/apparmor/parameters/enabled")
        .is_ok_and(|v| v.trim() == "Y");
    agent.write(
        "armor.yaml",
        &pod(
            "armor",
            &out,
            "{}",
            "{appArmorProfile: {type: RuntimeDefault}}",
        ),
    );
    let p = agent
        .wait_pod("root", "refused", Duration::from_secs(60), |p| {
            waiting(p).is_some_and(|(r, _)| r == "CreateContainerConfigError")
        })
        .await;
    let (_, message) = waiting(&p).unwrap();
    assert!(
        message.contains("runAsNonRoot and image will run as root"),
        "{message}"
    );
    let p = agent
        .wait_pod("uid0", "refused", Duration::from_secs(60), |p| {
            waiting(p).is_some_and(|(r, _)| r == "CreateContainerConfigError")
        })
        .await;
    let (_, message) = waiting(&p).unwrap();
    assert!(
        message.contains("container's runAsUser breaks non-root policy"),
        "{message}"
    );
    if apparmor_on_node {
        report(&agent, "armor").await;
    } else {
        let p = agent
            .wait_pod("armor", "refused", Duration::from_secs(60), |p| {
                waiting(p).is_some_and(|(r, _)| r == "CreateContainerConfigError")
            })
            .await;
        let (_, message) = waiting(&p).unwrap();
        assert!(
            message.contains("AppArmor is not enabled on this node"),
            "{message}"
        );
    }
    assert!(!out.join("root").exists(), "the root container never ran");
    assert!(!out.join("uid0").exists(), "nor the uid 0 one");
}
