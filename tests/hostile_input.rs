//! Hostile input costs nothing (issue 17, finding 1): manifests and API bodies an
//! attacker writes (bad names, duplicate containers, the wrong kind, not YAML at all,
//! alias bombs exponential and quadratic, deep nesting, a file near the size cap) are
//! refused with their reasons, the other pods keep running, and the agent's memory comes
//! back to within 5 MiB of where it was.

mod common;

use std::process::Command;
use std::time::Duration;

use common::agent::Agent;

const MIB: u64 = 1024;

/// Files a hostile user drops into the manifest directory, with a word of each reason.
fn hostile(round: usize) -> Vec<(String, String, &'static str)> {
    let pod = |name: &str, rest: &str| {
        format!(
            "# round {round}\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{rest}"
        )
    };
    let c = "  containers:\n  - {name: c, image: localhost/podvisor/busybox:test}\n";
    let mut laughs =
        format!("# round {round}\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        laughs.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let mut quadratic = format!("# round {round}\na: &a [");
    quadratic.push_str(&vec!["x"; 1000].join(","));
    quadratic.push_str("]\nb: [");
    quadratic.push_str(&vec!["*a"; 20_000].join(","));
    quadratic.push_str("]\n");
    let deep = format!(
        "# round {round}\n{}{}\n",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    let big = format!(
        "# round {round}\nkind: Pod\nx: \"{}\"\n",
        "y".repeat(9 << 20)
    );
    vec![
        ("bad-name".into(), pod("Bad_Name", c), "RFC 1123"),
        (
            "twins".into(),
            pod(
                "twins",
                "  containers:\n  - {name: c, image: i}\n  - {name: c, image: i}\n",
            ),
            "Duplicate",
        ),
        (
            "kind".into(),
            format!(
                "# round {round}\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\n"
            ),
            "Deployment",
        ),
        (
            "binary".into(),
            format!("# round {round}\n\u{1}\u{2}: [: {{]\n"),
            "",
        ),
        ("laughs".into(), laughs, "aliases"),
        ("quadratic".into(), quadratic, "aliases"),
        ("deep".into(), deep, ""),
        ("big".into(), big, ""),
    ]
}

async fn manifest_errors(agent: &Agent) -> serde_json::Value {
    let body = podvisor_debug::client::get(
        &agent.endpoint,
        "/debug/manifest-errors",
        Some(&agent.token()),
    )
    .await
    .unwrap();
    serde_json::from_str(&body).unwrap()
}

/// Waits until every file of `round` is reported unusable with its reason.
async fn all_refused(agent: &Agent, round: usize) {
    let files = hostile(round);
    common::eventually(
        &format!("round {round} refused"),
        Duration::from_secs(60),
        || async {
            let errors = manifest_errors(agent).await;
            let errors = errors.as_array()?;
            let refused = files.iter().all(|(name, _, why)| {
                errors.iter().any(|e| {
                    e["path"]
                        .as_str()
                        .is_some_and(|p| p.ends_with(&format!("{name}-{round}.yaml")))
                        && e["reason"].as_str().is_some_and(|r| r.contains(why))
                })
            });
            refused.then_some(())
        },
    )
    .await;
}

fn post_raw(agent: &Agent, file: &std::path::Path) -> String {
    let python =
        std::env::var("PODVISOR_PYTHON").expect("PODVISOR_PYTHON (scripts/test-deps sets it)");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/raw_post.py");
    let out = Command::new(python)
        .arg(script)
        .arg(agent.dir.join("state").join("kubeconfig"))
        .args(["/api/v1/namespaces/default/pods", "application/yaml"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The agent's RSS once it has stopped falling (an allocator hands freed memory back to
/// the system over a few seconds).
async fn settled_rss(agent: &Agent) -> u64 {
    let mut last = agent.rss_kib();
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = agent.rss_kib();
        if now + 256 >= last {
            return now.min(last);
        }
        last = now;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_manifests_and_bodies_cost_no_memory_and_stop_no_pod() {
    let agent = Agent::start("hostile").await;
    agent.write(
        "good.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  containers:\n  - {name: c, image: localhost/podvisor/busybox:test, command: [sleep, \"3600\"]}\n",
    );
    let running = |p: &k8s_openapi::api::core::v1::Pod| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    };
    // What is measured is what hostile input costs, not how soon a pod starts: once, with
    // the suite's other lane busy, containerd 2.1 took 30.2 s over this pod's RunPodSandbox.
    agent
        .wait_pod("good", "running", Duration::from_secs(90), running)
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = settled_rss(&agent).await;
    let mut peak = before;
    for round in 1..=3 {
        for (name, text, _) in hostile(round) {
            if round > 1 {
                agent.remove(&format!("{name}-{}.yaml", round - 1));
            }
            agent.write(&format!("{name}-{round}.yaml"), &text);
            peak = peak.max(agent.rss_kib());
        }
        all_refused(&agent, round).await;
        for (name, text, _) in hostile(round) {
            let file = agent.out_dir().join(format!("{name}.yaml"));
            std::fs::write(&file, text).unwrap();
            let code = post_raw(&agent, &file);
            assert!(code.starts_with('4'), "{name}: the API answered {code}");
            peak = peak.max(agent.rss_kib());
        }
    }
    let after = settled_rss(&agent).await;
    eprintln!("hostile: RSS {before} KiB before, {peak} KiB at most, {after} KiB after");
    assert!(
        after <= before + 5 * MIB,
        "RSS went from {before} KiB to {after} KiB and stayed"
    );
    assert!(peak <= before + 64 * MIB, "RSS peaked at {peak} KiB");
    let good = agent.pod("good").await.expect("the good pod");
    assert!(running(&good));
    assert_eq!(agent.pods().await.len(), 1, "no hostile input made a pod");
}
