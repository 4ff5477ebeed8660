//! Log rotation against containerd, through a real agent: a chatty container's log is
//! rotated once it passes `[logs] max_size` (the runtime reopens it), only `max_files`
//! files are kept, and `kubectl logs -f` started before the rotations carries on across
//! them without losing or repeating a line; and each container's log is linked where log
//! shippers look (`[logs] container_links`) until the container is gone.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;

const CHATTY: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    command: ["sh", "-c", "i=0; pad=$(printf '%0100d' 0); while true; do i=$((i+1)); echo \"line $i $pad\"; [ $((i % 10)) -eq 0 ] && sleep 0.1; done"]
"#;

/// The numbers of the `line N ...` lines of `text`.
fn numbers(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.strip_prefix("line ")?.split(' ').next()?.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_containers_log_is_rotated_and_a_follow_goes_on_across_rotations() {
    let agent = Agent::start_with(
        "logrotate",
        "[logs]\nmax_size = \"16Ki\"\nmax_files = 3\nmonitor_interval = \"500ms\"\n",
    )
    .await;
    agent.write("chatty.yaml", CHATTY);
    let name = agent.name("chatty");
    agent
        .wait_pod("chatty", "running", Duration::from_secs(60), |p| {
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .await;
    let k = Kubectl::for_agent(&agent);
    let follow_out = agent.out_dir().join("follow.txt");
    let mut follow = k
        .command(&["logs", "-f", &name])
        .stdout(std::fs::File::create(&follow_out).unwrap())
        .spawn()
        .unwrap();
    let uid = agent.static_uid("chatty").await.unwrap();
    let dir = agent
        .dir
        .join("logs")
        .join(format!("default_{name}_{uid}"))
        .join("c");
    let files = || -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                (n, e.metadata().map(|m| m.len()).unwrap_or(0))
            })
            .collect();
        v.sort();
        v
    };
    common::eventually("several rotations", Duration::from_secs(60), || async {
        let rotations = agent.actor_state("log-rotation").await["totals"]["rotated"]
            .as_u64()
            .unwrap_or(0);
        (rotations >= 4).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = follow.kill();
    let _ = follow.wait();
    let now = files();
    assert!(now.len() <= 3, "at most max_files files: {now:?}");
    assert!(
        now.iter().any(|(n, _)| n.starts_with("0.log.")),
        "a rotated file beside the live one: {now:?}"
    );
    assert!(
        now.iter().all(|(_, size)| *size < 256 * 1024),
        "no file grows far past max_size: {now:?}"
    );
    let followed = numbers(&std::fs::read_to_string(&follow_out).unwrap());
    // The live file is in the CRI format: `<time> stdout F <line>`.
    let raw = std::fs::read_to_string(dir.join("0.log")).unwrap();
    let live: Vec<u64> = raw
        .lines()
        .filter_map(|l| l.splitn(4, ' ').nth(3))
        .flat_map(numbers)
        .collect();
    assert!(
        !followed.is_empty() && !live.is_empty(),
        "followed {} lines, the live file has {}",
        followed.len(),
        live.len()
    );
    assert_eq!(followed[0], 1, "the follow started at the first line");
    assert!(
        followed.windows(2).all(|w| w[1] == w[0] + 1),
        "no line lost or repeated across rotations: {:?}",
        followed.windows(2).find(|w| w[1] != w[0] + 1)
    );
    assert!(
        *followed.last().unwrap() >= live[0],
        "the follow reached the live file (first line there {}, followed to {})",
        live[0],
        followed.last().unwrap()
    );
}

const CRASHY: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: crashy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/podvisor/busybox:test
    command: ["sh", "-c", "echo started $(cat /proc/sys/kernel/random/uuid); sleep 2; exit 1"]
"#;

/// The links of `dir` whose name starts with `prefix`, with what reading through each gives.
fn linked(dir: &std::path::Path, prefix: &str) -> Vec<(String, String)> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap_or_default();
            (n, text)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_containers_log_is_linked_where_shippers_look_until_it_is_gone() {
    let links = std::env::temp_dir().join(format!("podvisor-log-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&links);
    let agent = Agent::start_with(
        "loglinks",
        &format!(
            "[logs]\nmonitor_interval = \"500ms\"\ncontainer_links = \"{}\"\n",
            links.display()
        ),
    )
    .await;
    agent.write("crashy.yaml", CRASHY);
    let name = agent.name("crashy");
    // The kubelet's name: <pod>_<namespace>_<container>-<container id>.log.
    let prefix = format!("{name}_default_c-");
    let (mut ids, mut starts) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    common::eventually(
        "links to two instances, read as a shipper reads",
        Duration::from_secs(90),
        || {
            for (link, text) in linked(&links, &prefix) {
                let id = link
                    .trim_start_matches(&prefix)
                    .trim_end_matches(".log")
                    .to_string();
                assert_eq!(id.len(), 64, "a container id: {link}");
                let target = std::fs::read_link(links.join(&link)).unwrap();
                assert!(
                    target.starts_with(agent.dir.join("logs")),
                    "{}",
                    target.display()
                );
                ids.insert(id);
                starts.extend(
                    text.lines()
                        .filter_map(|l| l.split_once("started "))
                        .map(|(_, u)| u.to_string()),
                );
            }
            let done = ids.len() >= 2 && starts.len() >= 2;
            async move { done.then_some(()) }
        },
    )
    .await;
    agent.remove("crashy.yaml");
    common::eventually(
        "no link left once the pod is gone",
        Duration::from_secs(60),
        || {
            let left = linked(&links, &prefix);
            async move { left.is_empty().then_some(()) }
        },
    )
    .await;
    let _ = std::fs::remove_dir_all(&links);
}
