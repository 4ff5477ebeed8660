//! A node that falls silent (its agent killed) in a real cluster: NotReady after the node
//! monitor grace period, the `unreachable` NoExecute taint, and eviction by each pod's
//! toleration once the agent is back. Alone in its test binary: the node lifecycle
//! controller adds that taint only while the rest of the zone is healthy (a witness node
//! here), and other tests' nodes going silent at the same time would stop it.

mod common;

use std::time::Duration;

use common::eventually;
use common::nodes::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_node_goes_not_ready_and_its_unreachable_taint_evicts_by_tolerations() {
    // The rest of the zone, healthy throughout.
    let witness = join("cn-witness", None).await;
    let (_, witness_cleanup) = setup(&witness);
    let mut agent = join("cn-silent", None).await;
    let (admin, cleanup) = setup(&agent);
    node_ready(&admin, &witness.node).await;
    let (ns, node) = (cleanup.namespace.clone(), agent.node.clone());
    node_ready(&admin, &node).await;
    let unreachable = "node.kubernetes.io/unreachable";
    admin.apply(&tolerating(&ns, "brief", &node, unreachable, Some(5)));
    admin.apply(&tolerating(&ns, "patient", &node, unreachable, Some(3600)));
    running(&admin, &ns, &node, 2).await;
    let id_path = "{.status.containerStatuses[0].containerID}";
    let patient_id = admin.jsonpath(&["pod", "patient", "-n", &ns], id_path);

    agent.kill9();
    let ready = r#"{.status.conditions[?(@.type=="Ready")].status}"#;
    let taints = r#"{.spec.taints[?(@.effect=="NoExecute")].key}"#;
    eventually(
        "the node NotReady with the unreachable NoExecute taint",
        2 * MINUTE,
        || async {
            let r = admin.jsonpath(&["node", &node], ready);
            let t = admin.jsonpath(&["node", &node], taints);
            (r == "Unknown" && t.contains(unreachable)).then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(6)).await; // past the brief toleration
    // Back: the taint has stood longer than `brief` tolerates it; `patient` stays.
    agent.restart().await;
    node_ready(&admin, &node).await;
    eventually("the briefly tolerating pod evicted", MINUTE, || async {
        (names(&admin, &ns) == ["patient"]).then_some(())
    })
    .await;
    assert_eq!(
        admin.jsonpath(&["pod", "patient", "-n", &ns], id_path),
        patient_id
    );
    assert_eq!(running_containers(&agent).await, 1);
    drop((cleanup, witness_cleanup));
}
