//! Pulls with `imagePullSecrets` from a real registry that wants a login (docker-registry
//! with htpasswd on loopback, the test image pushed with skopeo), against a real agent and
//! containerd, driven by kubectl: the right Secret pulls (after a wrong one is tried
//! first, and a missing one is reported); no Secret or only a wrong one is
//! `ErrImagePull`, then `ImagePullBackOff`, with the registry's refusal.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::registry::{self, Registry};
use common::wait_for;

fn pod(name: &str, image: &str, secrets: &[&str]) -> String {
    let secrets: Vec<String> = secrets.iter().map(|s| format!("{{name: {s}}}")).collect();
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 0
  imagePullSecrets: [{}]
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Always
    command: ["/bin/sh", "-c", "sleep 3600"]
"#,
        secrets.join(", ")
    )
}

fn docker_secret(k: &Kubectl, name: &str, server: &str, password: &str) {
    k.ok(&[
        "create",
        "secret",
        "docker-registry",
        name,
        &format!("--docker-server={server}"),
        &format!("--docker-username={}", registry::USER),
        &format!("--docker-password={password}"),
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_pull_with_their_secrets_and_without_them_back_off() {
    let registry = Registry::start("pull").await;
    let image = registry.push("private/busybox", "1");
    let server = format!("localhost:{}", registry.port);
    assert!(image.starts_with(&server));
    let agent = Agent::start("image-pull-secrets").await;
    let k = Kubectl::for_agent(&agent);
    docker_secret(&k, "regcred", &server, registry::PASSWORD);
    docker_secret(&k, "badcred", &server, "wrong");
    k.apply(&pod(
        "with-secret",
        &image,
        &["missing", "badcred", "regcred"],
    ));
    k.apply(&pod("wrong-secret", &image, &["badcred"]));
    k.apply(&pod("no-secret", &image, &[]));

    for _ in 0..60 {
        if k.jsonpath(&["pod", "with-secret"], "{.status.phase}") == "Running" {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let phase = k.jsonpath(&["pod", "with-secret"], "{.status.phase}");
    assert_eq!(
        phase,
        "Running",
        "{}",
        k.run(&["get", "events", "-o", "custom-columns=R:.reason,M:.message"])
            .stdout
    );
    let waiting = "{.status.containerStatuses[0].state.waiting.reason}";
    for p in ["wrong-secret", "no-secret"] {
        wait_for(&format!("{p} backing off"), Duration::from_secs(60), || {
            k.jsonpath(&["pod", p], waiting) == "ImagePullBackOff"
        })
        .await;
        assert_eq!(k.jsonpath(&["pod", p], "{.status.phase}"), "Pending");
    }
    let path = "{range .items[*]}{.involvedObject.name} {.reason} {.message}{\"\\n\"}{end}";
    let events = k.jsonpath(&["events"], path);
    let refusal = |pod: &str| {
        let failed = format!("{pod} Failed ");
        let found = events
            .lines()
            .find(|l| l.starts_with(&failed) && l.contains("PullImage"));
        let found = found.unwrap_or_else(|| panic!("no failed pull of {pod} among {events}"));
        found.to_lowercase()
    };
    // The registry refused the wrong login and the missing one (containerd 1.6 says 401;
    // 1.7 and 2.x, asked for a login, say they have none).
    let unauthorized =
        |m: &str| m.contains("401") || m.contains("unauthorized") || m.contains("no basic auth");
    let wrong = refusal("wrong-secret");
    assert!(unauthorized(&wrong), "{wrong}");
    let none = refusal("no-secret");
    assert!(unauthorized(&none), "{none}");
    let missing = "with-secret FailedToRetrieveImagePullSecret";
    assert!(
        events
            .lines()
            .any(|l| l.starts_with(missing) && l.contains("missing")),
        "{events}"
    );
    assert!(
        !events.contains(registry::PASSWORD),
        "no password in events"
    );
}
