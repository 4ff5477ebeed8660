//! The event recorder against a real store actor: repeats become one Event with a count,
//! other events their own, each with what `kubectl describe` selects them by.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Namespace};
use podvisor_actors::ChildSpec;
use podvisor_client::{Api, FieldSelector, ListParams, PostParams};
use podvisor_core::{EventType, Kind, ObjectKey, Uid};
use podvisor_machinery::events::{EventRecorder, RecordEvent, Reporter};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};
use serde_json::Value;

fn event(object: &ObjectKey, reason: &str, message: &str) -> RecordEvent {
    RecordEvent {
        object: object.clone(),
        type_: EventType::Warning,
        reason: reason.into(),
        message: message.into(),
    }
}

#[actix_rt::test]
async fn repeats_count_on_one_event_and_others_stand_alone() {
    let dir = std::env::temp_dir().join(format!("podvisor-recorder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 1000,
    };
    let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 64)).start_unsupervised();
    let client = LocalClient::client(&store);
    let mut team = Namespace::default();
    team.metadata.name = Some("team".into());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(&PostParams::default(), team)
        .await
        .unwrap();
    let events: Api<Event> = Api::all(client.clone());
    let events_api = events.clone();
    let recorder = ChildSpec::of(move || {
        let reporter = Reporter {
            component: "kubelet".into(),
            host: "n1".into(),
        };
        EventRecorder::new(reporter, events_api.clone())
    })
    .start_unsupervised();
    let pod = ObjectKey::pod("team", "web").with_uid(Uid::from("u-1"));
    let node = ObjectKey::new(Kind::Node, None, "n1");
    for e in [
        event(&pod, "BackOff", "Back-off restarting failed container"),
        event(&pod, "BackOff", "Back-off restarting failed container"),
        event(&pod, "Killing", "Stopping container main"),
        event(&node, "NodeReady", "Node n1 status is now: NodeReady"),
    ] {
        recorder.send(e).await.unwrap();
    }
    let mut items: Vec<Value> = Vec::new();
    for _ in 0..100 {
        let page = events.list(&ListParams::default()).await.unwrap();
        items = page
            .items
            .iter()
            .map(|o| serde_json::to_value(o.as_ref()).unwrap())
            .collect();
        let counted = items.iter().any(|e| e["count"] == 2);
        if items.len() == 3 && counted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(items.len(), 3, "{items:#?}");
    let backoff = items.iter().find(|e| e["reason"] == "BackOff").unwrap();
    assert_eq!(backoff["count"], 2);
    assert_eq!(backoff["type"], "Warning");
    assert_eq!(backoff["metadata"]["namespace"], "team");
    assert_eq!(backoff["involvedObject"]["uid"], "u-1");
    assert_eq!(backoff["source"]["component"], "kubelet");
    assert!(backoff["firstTimestamp"].is_string() && backoff["lastTimestamp"].is_string());
    let on_node = items.iter().find(|e| e["reason"] == "NodeReady").unwrap();
    assert_eq!(
        on_node["metadata"]["namespace"], "default",
        "cluster-scoped objects' events live in default"
    );
    assert!(on_node["involvedObject"].get("namespace").is_none());

    // What `kubectl describe pod` asks for.
    let fields = FieldSelector::parse_for(
        Kind::Event,
        "involvedObject.name=web,involvedObject.uid=u-1",
    )
    .unwrap();
    let page = events
        .within("team")
        .list(&ListParams::default().fields(fields))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
}
