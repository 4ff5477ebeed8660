//! Image garbage collection on a real agent, against a containerd 2.1 of the test's own
//! (removing images from the shared one would take them from every other test; its pods
//! use the host's network, so it hands out no pod address the shared one could): two
//! images imported for the test (ids of their own) are removed once older than the
//! minimum age, by the eviction manager under imagefs pressure before any pod goes, and by
//! the collector's own thresholds; the image a running container uses and the pinned
//! sandbox image never; each removal is an event on the Node. Under pressure that the
//! images do not relieve, the pod is evicted next.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;

const DIR: &str = "/var/lib/podvisor-image-gc-test";
const EXTRA: [&str; 2] = ["localhost/podvisor/gc-a:1", "localhost/podvisor/gc-b:1"];

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts")
}

fn ctr(sock: &str, args: &[&str]) -> String {
    let tools = std::env::var("PODVISOR_TOOLS").unwrap_or("/var/lib/podvisor-tools".into());
    let out = Command::new(format!("{tools}/containerd-2.1/usr/bin/ctr"))
        .args(["-a", sock, "-n", "k8s.io"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ctr {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The test's containerd: up (with the pause and busybox images), stopped on drop.
struct Containerd {
    sock: String,
}

impl Containerd {
    fn up() -> Self {
        let out = Command::new(scripts().join("containerd-up"))
            .env("PODVISOR_CONTAINERD_VERSION", "2.1")
            .env("PODVISOR_CONTAINERD_DIR", DIR)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "containerd-up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        Self {
            sock: stdout.lines().last().unwrap().trim().to_string(),
        }
    }

    /// Imports the test's two images afresh.
    fn import_extra(&self) {
        let dir = std::env::temp_dir().join(format!("podvisor-gc-images-{}", std::process::id()));
        let out = Command::new(scripts().join("build-images"))
            .arg(&dir)
            .env("PODVISOR_EXTRA_IMAGES", EXTRA.join(" "))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "build-images: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for name in ["gc-a-1.tar", "gc-b-1.tar"] {
            ctr(
                &self.sock,
                &["images", "import", &dir.join(name).display().to_string()],
            );
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    fn images(&self) -> String {
        ctr(&self.sock, &["images", "ls", "-q"])
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = Command::new(scripts().join("containerd-down"))
            .env("PODVISOR_CONTAINERD_VERSION", "2.1")
            .env("PODVISOR_CONTAINERD_DIR", DIR)
            .output();
    }
}

/// A pod on the host's network (no address from the test's containerd), in a namespace
/// that allows it.
const POD: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: localhost/podvisor/busybox:test, command: [sleep, "3600"]}
"#;

async fn start(c: &Containerd, node: &str, extra: &str) -> (Agent, Kubectl) {
    let agent = Agent::start_on(node, &format!("unix://{}", c.sock), "", extra).await;
    let k = Kubectl::for_agent(&agent).privileged();
    k.apply(POD);
    common::eventually("the pod to run", Duration::from_secs(30), || async {
        (k.jsonpath(&["pod", "user"], "{.status.phase}") == "Running").then_some(())
    })
    .await;
    (agent, k)
}

fn removed_events(k: &Kubectl) -> Vec<String> {
    let on_node = k.events("ImageRemoved");
    let on_node = on_node
        .iter()
        .filter(|e| e["involvedObject"]["kind"] == "Node");
    on_node
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect()
}

async fn both_gone(c: &Containerd, within: Duration) {
    common::eventually("the test's images to be removed", within, || async {
        let have = c.images();
        EXTRA.iter().all(|i| !have.contains(i)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unused_images_go_in_use_and_pinned_ones_stay_before_and_under_pressure() {
    let c = Containerd::up();
    c.import_extra();
    let have = c.images();
    assert!(EXTRA.iter().all(|i| have.contains(i)), "{have}");

    // The collector's thresholds: the disk is used above 1 %, so everything unused may go,
    // once seen for 8 s; nothing evicts.
    let gc = "[eviction]\nhard = {}\n[image_gc]\nhigh_threshold_percent = 1\nlow_threshold_percent = 0\nminimum_age = \"8s\"\nperiod = \"2s\"\n";
    let (agent, k) = start(&c, "image-gc", gc).await;
    assert!(
        EXTRA.iter().all(|i| c.images().contains(i)),
        "not before the minimum age"
    );
    both_gone(&c, Duration::from_secs(30)).await;
    let have = c.images();
    assert!(
        have.contains("localhost/podvisor/busybox:test"),
        "in use: {have}"
    );
    assert!(
        have.contains("localhost/podvisor/pause:1"),
        "pinned: {have}"
    );
    let events = removed_events(&k);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e.starts_with("Removed unused image sha256:")),
        "{events:?}"
    );
    drop(agent);

    // Under imagefs pressure no image relieves (99 % must be free), acted on after a soft
    // grace period: the unused images go first, then the pod. The pod runs before the
    // pressure begins (a node under DiskPressure admits none): the agent is restarted with
    // the threshold raised from 1 % (always free) to 99 %, and takes its pod back.
    c.import_extra();
    let pressure = "[eviction]\nhard = {}\nsoft = { \"imagefs.available\" = \"1%\" }\nsoft_grace_period = { \"imagefs.available\" = \"10s\" }\nmonitoring_period = \"1s\"\n[image_gc]\nhigh_threshold_percent = 100\nminimum_age = \"8s\"\n";
    let (mut agent, k) = start(&c, "image-gc-pressure", pressure).await;
    agent.terminate();
    let config = agent.dir.join("podvisor.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("\"1%\"", "\"99%\"")).unwrap();
    agent.restart().await;
    assert!(
        EXTRA.iter().all(|i| c.images().contains(i)),
        "not within the grace period"
    );
    both_gone(&c, Duration::from_secs(30)).await;
    let phase = common::eventually("the pod to be evicted", Duration::from_secs(30), || async {
        let s = k.jsonpath(
            &["pod", "user"],
            "{.status.phase}|{.status.reason}|{.status.message}",
        );
        s.starts_with("Failed").then_some(s)
    })
    .await;
    assert!(
        phase.starts_with("Failed|Evicted|The node was low on resource: ephemeral-storage. "),
        "{phase}"
    );
    assert!(c.images().contains("localhost/podvisor/pause:1"), "pinned");
    let log = std::fs::read_to_string(agent.dir.join("agent.log")).unwrap();
    let (removed, evicted) = (
        log.find("removed an unused image"),
        log.find("evicting the pod"),
    );
    assert!(
        removed.is_some() && removed < evicted,
        "images first:\n{log}"
    );
}
