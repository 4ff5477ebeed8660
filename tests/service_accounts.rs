//! Service accounts on a node standing alone, driven by kubectl against a real agent and
//! containerd: a pod's projected token, CA and namespace; the pod using them through the
//! in-cluster environment to reach the node's API over TLS (verified against the mounted
//! CA), refused until a RoleBinding
//! grants its account the right and allowed after; the same token and CA with kubectl
//! from outside (the certificate names the node's address); TokenRequest
//! (`kubectl create token`) and TokenReview; the token dying with its pod; each
//! namespace's default account and `kube-root-ca.crt`; automount off; an unknown account
//! refused.

mod common;

use std::time::Duration;

use common::agent::Agent;
use common::kubectl::Kubectl;
use common::wait_for;

const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The in-cluster client (`tests/bin/incluster.rs`, a host binary run with the host's C
/// library): lists the pods of its namespace every second with the pod's own token,
/// verifying the API's certificate against the mounted CA.
fn client_yaml() -> String {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_podvisor-test-incluster"));
    format!(
        r#"apiVersion: v1
kind: ServiceAccount
metadata: {{name: robot}}
---
apiVersion: v1
kind: Pod
metadata: {{name: client}}
spec:
  serviceAccountName: robot
  terminationGracePeriodSeconds: 1
  volumes:
  - {{name: bin, hostPath: {{path: {dir}}}}}
  - {{name: lib, hostPath: {{path: /lib/x86_64-linux-gnu}}}}
  - {{name: lib64, hostPath: {{path: /lib64}}}}
  containers:
  - name: main
    image: localhost/podvisor/busybox:test
    command: ["/client/{name}"]
    volumeMounts:
    - {{name: bin, mountPath: /client, readOnly: true}}
    - {{name: lib, mountPath: /lib/x86_64-linux-gnu, readOnly: true}}
    - {{name: lib64, mountPath: /lib64, readOnly: true}}
"#,
        dir = bin.parent().unwrap().display(),
        name = bin.file_name().unwrap().to_string_lossy(),
    )
}

const GRANT: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: robot-reads}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: ServiceAccount, name: robot, namespace: default}
"#;

fn review(k: &Kubectl, token: &str) -> (String, String) {
    let yaml = format!(
        "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {{token: \"{token}\"}}\n"
    );
    let r = k.run_with(&["create", "-f", "-", "-o", "json"], &yaml);
    assert!(r.ok, "TokenReview refused: {}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let s = &v["status"];
    (
        s["authenticated"].to_string(),
        s["user"]["username"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

async fn logs_say(k: &Kubectl, what: &str) {
    wait_for(what, Duration::from_secs(30), || {
        k.run(&["logs", "client"]).stdout.contains(what)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_reaches_the_node_s_api_with_its_token_and_its_account_s_rights() {
    let agent = Agent::start_reachable("sa-client", "").await;
    let k = Kubectl::for_agent(&agent);
    // The client runs from the host (hostPath): a privileged namespace.
    k.ok(&[
        "label",
        "namespace",
        "default",
        "pod-security.kubernetes.io/enforce=privileged",
    ]);
    k.apply(&client_yaml());
    wait_for("client Running", Duration::from_secs(60), || {
        k.jsonpath(&["pod", "client"], "{.status.phase}") == "Running"
    })
    .await;
    logs_say(&k, "env host=").await;
    let log = k.run(&["logs", "client"]).stdout;
    let env_line = log.lines().next().unwrap_or_default().to_string();
    assert!(
        env_line.contains("ns=default") && !env_line.contains("host= "),
        "{log}"
    );

    // The mounted CA is the API's.
    let ca = k.ok(&["exec", "client", "--", "cat", &format!("{SA_DIR}/ca.crt")]);
    let api_ca = std::fs::read_to_string(agent.state_dir().join("pki/ca.crt")).unwrap();
    assert_eq!(ca.trim(), api_ca.trim());

    // Without a binding the account may not list pods: 403 from inside the pod.
    logs_say(&k, "answer HTTP/1.1 403 Forbidden podlist=false").await;
    k.apply(GRANT);
    logs_say(&k, "answer HTTP/1.1 200 OK podlist=true").await;

    // The same token and CA from outside: kubectl verifies the certificate names the
    // node's address, lists pods, and is refused a delete.
    let token = k.ok(&["exec", "client", "--", "cat", &format!("{SA_DIR}/token")]);
    let host = env_line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("host="))
        .unwrap()
        .to_string();
    let port = env_line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("port="))
        .unwrap()
        .to_string();
    let ca_file = agent.out_dir().join("sa-ca.crt");
    std::fs::write(&ca_file, &ca).unwrap();
    let as_robot = |args: &[&str]| {
        let mut full = vec![
            "--kubeconfig=/dev/null".to_string(),
            format!("--server=https://{host}:{port}"),
            format!("--certificate-authority={}", ca_file.display()),
            format!("--token={}", token.trim()),
        ];
        full.extend(args.iter().map(|a| a.to_string()));
        let out = std::process::Command::new(common::kubectl::binary())
            .args(&full)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, out) = as_robot(&["get", "pods", "-n", "default", "-o", "name"]);
    assert!(ok && out.contains("pod/client"), "{out}");
    let (ok, out) = as_robot(&["delete", "pod", "client", "-n", "default"]);
    assert!(
        !ok && out.contains("cannot delete resource \"pods\""),
        "{out}"
    );
    let (ok, out) = as_robot(&["get", "secrets", "-n", "default"]);
    assert!(!ok && out.to_lowercase().contains("forbidden"), "{out}");

    // `admin` in its namespace: it reads the namespace itself, and may not bind itself
    // to more (`bind` on that ClusterRole, or its every right, is what that takes).
    k.ok(&[
        "create",
        "rolebinding",
        "robot-admin",
        "--clusterrole=admin",
        "--serviceaccount=default:robot",
    ]);
    let (ok, out) = as_robot(&["get", "namespace", "default"]);
    assert!(ok, "{out}");
    let (ok, out) = as_robot(&[
        "create",
        "rolebinding",
        "grab",
        "--clusterrole=cluster-admin",
        "--serviceaccount=default:robot",
        "-n",
        "default",
    ]);
    assert!(
        !ok && out.contains("cannot bind resource \"clusterroles\""),
        "{out}"
    );

    // TokenReview says whose it is; a TokenRequest gives another.
    assert_eq!(
        review(&k, token.trim()),
        ("true".into(), "system:serviceaccount:default:robot".into())
    );
    let fresh = k.ok(&["create", "token", "robot", "--duration=10m"]);
    assert_eq!(review(&k, fresh.trim()).0, "true");

    // The pod gone, its token is refused.
    k.ok(&["delete", "pod", "client", "--grace-period=0", "--force"]);
    wait_for(
        "the bound token to be refused",
        Duration::from_secs(20),
        || review(&k, token.trim()).0 == "false",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_get_their_account_and_ca_and_pods_opt_out_or_are_refused() {
    let agent = Agent::start("sa-defaults").await;
    let k = Kubectl::for_agent(&agent);
    k.ok(&["create", "namespace", "team"]);
    wait_for(
        "team's default account and CA",
        Duration::from_secs(20),
        || {
            k.run(&["get", "serviceaccount", "default", "-n", "team"])
                .ok
                && k.run(&["get", "configmap", "kube-root-ca.crt", "-n", "team"])
                    .ok
        },
    )
    .await;
    // The CA is put back when changed.
    k.ok(&[
        "-n",
        "team",
        "patch",
        "configmap",
        "kube-root-ca.crt",
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"tampered"}}"#,
    ]);
    wait_for("the CA put back", Duration::from_secs(45), || {
        k.jsonpath(
            &["-n", "team", "configmap", "kube-root-ca.crt"],
            "{.data.ca\\.crt}",
        )
        .contains("BEGIN CERTIFICATE")
    })
    .await;
    // kubectl's generators send these as protobuf.
    k.ok(&["create", "serviceaccount", "builder", "-n", "team"]);
    k.ok(&[
        "create",
        "role",
        "r",
        "--verb=get",
        "--resource=pods",
        "-n",
        "team",
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "rb",
        "--role=r",
        "--serviceaccount=team:builder",
        "-n",
        "team",
    ]);
    let wide = k.ok(&["get", "rolebinding", "rb", "-n", "team", "-o", "wide"]);
    assert!(
        wide.contains("Role/r") && wide.contains("team/builder"),
        "{wide}"
    );
    let roles = k.ok(&["get", "clusterroles", "-o", "name"]);
    for r in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
        assert!(
            roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{r}")),
            "{roles}"
        );
    }

    let off = r#"apiVersion: v1
kind: Pod
metadata: {name: quiet, namespace: team}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: localhost/podvisor/busybox:test, command: [sleep, "3600"]}
"#;
    k.apply(off);
    let mounts = k.jsonpath(
        &["-n", "team", "pod", "quiet"],
        "{.spec.containers[0].volumeMounts}",
    );
    assert!(!mounts.contains(SA_DIR), "{mounts}");
    assert_eq!(
        k.jsonpath(
            &["-n", "team", "pod", "quiet"],
            "{.spec.serviceAccountName}"
        ),
        "default"
    );
    let on = off
        .replace("quiet", "chatty")
        .replace("  automountServiceAccountToken: false\n", "");
    k.apply(&on);
    let volumes = k.jsonpath(&["-n", "team", "pod", "chatty"], "{.spec.volumes[0].name}");
    assert!(volumes.starts_with("kube-api-access-"), "{volumes}");

    let unknown = off.replace("quiet", "lost").replace(
        "automountServiceAccountToken: false",
        "serviceAccountName: nobody",
    );
    let r = k.run_with(&["apply", "-f", "-"], &unknown);
    assert!(
        !r.ok
            && r.stderr
                .contains("error looking up service account team/nobody"),
        "{}",
        r.stderr
    );
}
