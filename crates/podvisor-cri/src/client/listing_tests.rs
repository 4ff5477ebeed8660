use std::collections::BTreeMap;

use prost::Message;

use super::*;
use crate::model::{ContainerState, SandboxState};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn sandbox(id: &str, uid: &str, node: &str) -> PodSandbox {
    PodSandbox {
        id: id.into(),
        metadata: Some(PodSandboxMetadata {
            name: "web".into(),
            uid: uid.into(),
            namespace: "default".into(),
            attempt: 2,
        }),
        state: PodSandboxState::SandboxNotready as i32,
        created_at: 7,
        labels: map(&[
            ("app", "web"),
            (labels::MANAGED_BY, node),
            (labels::POD_UID, uid),
        ]),
        annotations: map(&[("kubernetes.io/config.source", "file")]),
        runtime_handler: "runc".into(),
    }
}

fn container(id: &str, sandbox: &str, uid: &str) -> crate::proto::Container {
    crate::proto::Container {
        id: id.into(),
        pod_sandbox_id: sandbox.into(),
        metadata: Some(ContainerMetadata {
            name: "app".into(),
            attempt: 3,
        }),
        image: Some(ImageSpec {
            image: "busybox".into(),
            ..Default::default()
        }),
        image_ref: "sha256:abc".into(),
        state: ContainerState_::ContainerRunning as i32,
        created_at: 9,
        labels: map(&[
            (labels::POD_UID, uid),
            (labels::POD_NAME, "web"),
            (labels::POD_NAMESPACE, "default"),
            (labels::MANAGED_BY, "node-a"),
        ]),
        annotations: map(&[
            (labels::GRACE_PERIOD, "45"),
            ("io.kubernetes.container.hash", "1234"),
        ]),
        image_id: "sha256:abc".into(),
    }
}

type ContainerState_ = crate::proto::ContainerState;

/// The whole messages encoded as a runtime sends them, read back as views.
fn views(
    sandboxes: Vec<PodSandbox>,
    containers: Vec<crate::proto::Container>,
) -> (Vec<SandboxView>, Vec<ContainerView>) {
    let s = ListPodSandboxResponse { items: sandboxes }.encode_to_vec();
    let c = ListContainersResponse { containers }.encode_to_vec();
    (
        SandboxListing::decode(Bytes::from(s)).unwrap().items,
        ContainerListing::decode(Bytes::from(c)).unwrap().containers,
    )
}

#[test]
fn a_view_reads_what_podvisor_needs_from_the_whole_message() {
    let (s, c) = views(
        vec![sandbox("sb1", "u1", "node-a")],
        vec![container("c1", "sb1", "u1")],
    );
    let (s, c) = into_model(s, c);
    assert_eq!(
        s,
        vec![Sandbox {
            id: "sb1".into(),
            pod: PodRef {
                uid: "u1".into(),
                name: "web".into(),
                namespace: "default".into(),
            },
            attempt: 2,
            state: SandboxState::NotReady,
            created_at: 7,
            managed_by: Some("node-a".into()),
        }]
    );
    assert_eq!(
        c,
        vec![model::Container {
            id: "c1".into(),
            sandbox_id: "sb1".into(),
            name: "app".into(),
            attempt: 3,
            state: ContainerState::Running,
            created_at: 9,
            managed_by: Some("node-a".into()),
            grace_period: Some(45),
            // Its sandbox is in the same listing: nothing else is read.
            labelled_pod: None,
        }]
    );
}

#[test]
fn a_container_without_its_sandbox_names_its_pod_by_its_labels() {
    let (s, c) = views(vec![], vec![container("c1", "gone", "u9")]);
    let (_, c) = into_model(s, c);
    assert_eq!(
        c[0].labelled_pod,
        Some(PodRef {
            uid: "u9".into(),
            name: "web".into(),
            namespace: "default".into(),
        })
    );
    let pods = crate::model::group_pods(vec![], c);
    assert_eq!(pods[0].pod.uid, "u9");
}

#[test]
fn a_pod_another_agent_made_has_no_owner_and_unknown_states_read_as_the_default() {
    let mut foreign = sandbox("sb2", "u2", "x");
    foreign.labels.remove(labels::MANAGED_BY);
    foreign.state = 42;
    let (s, c) = views(vec![foreign], vec![]);
    let (s, _) = into_model(s, c);
    assert_eq!(s[0].managed_by, None);
    // As the generated getter reads an unknown value: the enum's first.
    assert_eq!(s[0].state, SandboxState::Ready);
}

#[test]
fn ids_keep_each_container_with_its_sandbox() {
    let (s, c) = views(
        vec![sandbox("sb1", "u1", "n")],
        vec![container("c1", "sb1", "u1"), container("c2", "sb0", "u1")],
    );
    let ids = ids(s, c);
    assert_eq!(ids.sandboxes, vec!["sb1".to_string()]);
    assert_eq!(
        ids.containers,
        vec![
            ("c1".to_string(), "sb1".to_string()),
            ("c2".to_string(), "sb0".to_string())
        ]
    );
}

#[test]
fn map_entries_are_read_in_place_and_malformed_ones_are_skipped() {
    let entry_of = |k: &str, v: &str| {
        let mut b = Vec::new();
        prost::encoding::string::encode(1, &k.to_string(), &mut b);
        prost::encoding::string::encode(2, &v.to_string(), &mut b);
        Bytes::from(b)
    };
    let empty_value = {
        let mut b = Vec::new();
        prost::encoding::string::encode(1, &"k".to_string(), &mut b);
        Bytes::from(b)
    };
    let entries = vec![
        Bytes::from_static(&[0x08, 0x01]), // a varint field: not an entry
        Bytes::from_static(&[0x0a, 0x05, b'a']), // a length past the end
        Bytes::from_static(&[0x0a, 0x01, 0xff]), // not UTF-8
        Bytes::from_static(&[0x0a, 0xff]), // a varint cut short
        entry_of("a", "1"),
        empty_value,
    ];
    assert_eq!(entry(&entries, "a"), Some("1"));
    assert_eq!(entry(&entries, "k"), Some(""));
    assert_eq!(entry(&entries, "b"), None);
}
