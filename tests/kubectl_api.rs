//! The API verbs beyond the everyday ones, driven by real clients: kubectl's JSON and merge
//! patches, paged lists (`--chunk-size`), foreground cascading deletion; the Python client's
//! paged list, selecting watch, bookmarks, JSON patch and deletecollection.

mod common;

use common::agent::Agent;
use common::kubectl::Kubectl;

fn python() -> String {
    std::env::var("PODVISOR_PYTHON").expect("PODVISOR_PYTHON (scripts/test-deps sets it)")
}

fn configmap(name: &str, owner: Option<(&str, &str)>) -> String {
    let owners = owner.map_or(String::new(), |(n, uid)| {
        format!(
            "\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: {n}, uid: {uid}, blockOwnerDeletion: true}}"
        )
    });
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}{owners}\ndata: {{a: '1'}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_patches_pages_and_cascades_in_the_foreground() {
    let agent = Agent::start("kubectl-api").await;
    let k = Kubectl::for_agent(&agent);
    k.apply(&configmap("cfg", None));
    let json_patch =
        r#"[{"op":"add","path":"/data/b","value":"2"},{"op":"remove","path":"/data/a"}]"#;
    k.ok(&["patch", "configmap", "cfg", "--type=json", "-p", json_patch]);
    k.ok(&[
        "patch",
        "configmap",
        "cfg",
        "--type=merge",
        "-p",
        r#"{"data":{"c":"3"}}"#,
    ]);
    assert_eq!(
        k.jsonpath(&["configmap", "cfg"], "{.data}"),
        r#"{"b":"2","c":"3"}"#
    );
    let bad = k.run(&[
        "patch",
        "configmap",
        "cfg",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/data/zz"}]"#,
    ]);
    assert!(
        !bad.ok,
        "a JSON patch that does not apply is refused: {}",
        bad.stdout
    );

    for i in 0..5 {
        k.apply(&configmap(&format!("many-{i}"), None));
    }
    // kubectl asks for two at a time and follows `continue` to the end.
    let names = k.ok(&["get", "configmaps", "--chunk-size=2", "-o", "name"]);
    let many = names
        .lines()
        .filter(|l| l.starts_with("configmap/many-"))
        .count();
    assert_eq!(many, 5, "{names}");

    // Foreground: the owner stays, held by `foregroundDeletion`, while a dependent does
    // (one held by a finalizer here); it goes once the dependent has gone.
    k.apply(&configmap("owner", None));
    let uid = k.jsonpath(&["configmap", "owner"], "{.metadata.uid}");
    k.apply(&configmap("dependent", Some(("owner", &uid))));
    let hold = r#"{"metadata":{"finalizers":["example.com/hold"]}}"#;
    k.ok(&[
        "patch",
        "configmap",
        "dependent",
        "--type=merge",
        "-p",
        hold,
    ]);
    k.ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    assert_eq!(
        k.jsonpath(&["configmap", "owner"], "{.metadata.finalizers}"),
        r#"["foregroundDeletion"]"#
    );
    let marked = k.jsonpath(&["configmap", "dependent"], "{.metadata.deletionTimestamp}");
    assert!(!marked.is_empty(), "the dependent is being deleted");
    let release = r#"[{"op":"remove","path":"/metadata/finalizers"}]"#;
    k.ok(&[
        "patch",
        "configmap",
        "dependent",
        "--type=json",
        "-p",
        release,
    ]);
    k.ok(&["wait", "--for=delete", "configmap/owner", "--timeout=30s"]);
    let left = k.run(&["get", "configmap", "owner", "dependent", "-o", "name"]);
    assert!(left.stdout.trim().is_empty(), "{}", left.stdout);
    assert!(left.stderr.contains("NotFound"), "{}", left.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_pages_watches_selections_patches_and_deletes_collections() {
    let agent = Agent::start("python-verbs").await;
    let k = Kubectl::for_agent(&agent);
    let out = std::process::Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/verbs.py"
        ))
        .arg(&k.kubeconfig)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("paged 3 pages 7 items 1 revisions"),
        "{stdout}"
    );
    let watch = stdout
        .lines()
        .find(|l| l.starts_with("watch"))
        .unwrap_or_default();
    assert!(
        watch.contains("DELETED:page-0"),
        "left the selection: {watch}"
    );
    assert!(watch.contains("MODIFIED:page-1"), "{watch}");
    assert!(!watch.contains("MODIFIED:page-0"), "{watch}");
    assert!(stdout.contains("json-patched gone"), "{stdout}");
    assert!(
        stdout.contains("after deletecollection page-0"),
        "only the selected ones: {stdout}"
    );
}
