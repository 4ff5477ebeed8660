//! The contract every [`crate::Backend`] must keep, as a suite each backend's tests run
//! against a live instance (the node's store with the agent's admission; a real
//! kube-apiserver with an admin's credentials). Each check panics with what went wrong.
//!
//! It works in the `default` namespace with names of its own (`contract-<check>-<n>`), and
//! uses pods bound to a node that does not exist, so no agent runs them.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use serde_json::json;

use crate::{
    Api, Client, DeleteParams, Deleted, Error, ListParams, Object, ObjectExt, Patch, PostParams,
    WatchEvent, WatchStream,
};

mod status;

use status::status_subresource;

const NS: &str = "default";
/// The node the contract's pods are bound to: none runs them.
pub const NOWHERE: &str = "contract-nowhere";
const WAIT: Duration = Duration::from_secs(10);

/// Every check, one after another.
pub async fn run_all(client: &Client) {
    crud(client).await;
    optimistic_concurrency(client).await;
    selectors(client).await;
    watch(client).await;
    status_subresource(client).await;
    patches(client).await;
    deletion(client).await;
}

fn unique(check: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("contract-{check}-{nanos}")
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some(BTreeMap::from([("contract".into(), name.into())]));
    let data = data.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    cm.data = Some(data.collect());
    cm
}

/// A pod bound to a node that does not exist.
pub fn pod(name: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.spec = Some(PodSpec {
        node_name: Some(NOWHERE.into()),
        containers: vec![Container {
            name: "c".into(),
            image: Some("localhost/contract:1".into()),
            ..Container::default()
        }],
        ..PodSpec::default()
    });
    p
}

fn data(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.data.as_ref()?.get(key).cloned()
}

async fn crud(client: &Client) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let name = unique("crud");
    let made = api
        .create(&PostParams::default(), config_map(&name, &[("a", "1")]))
        .await
        .expect("create");
    let meta = &made.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| !u.is_empty()), "a UID");
    assert!(meta.resource_version.is_some(), "a resourceVersion");
    assert!(meta.creation_timestamp.is_some(), "a creation time");
    assert_eq!(meta.namespace.as_deref(), Some(NS));
    let got = api.get(&name).await.expect("get");
    assert_eq!(got, made, "get answers what create stored");
    let again = api
        .create(&PostParams::default(), config_map(&name, &[]))
        .await;
    assert!(
        matches!(again, Err(Error::AlreadyExists { .. })),
        "{again:?}"
    );
    let missing = api.get(&unique("missing")).await;
    assert!(
        matches!(missing, Err(Error::NotFound { .. })),
        "{missing:?}"
    );
    assert!(api.get_opt(&unique("missing")).await.unwrap().is_none());
    let dry = PostParams { dry_run: true };
    let dry_name = unique("dry");
    api.create(&dry, config_map(&dry_name, &[])).await.unwrap();
    assert!(
        api.get_opt(&dry_name).await.unwrap().is_none(),
        "dry run stored"
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt(&name).await.unwrap().is_none(), "deleted");
}

async fn optimistic_concurrency(client: &Client) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let name = unique("occ");
    let v1 = api
        .create(&PostParams::default(), config_map(&name, &[("a", "1")]))
        .await
        .unwrap();
    let mut next = (*v1).clone();
    next.data = Some(BTreeMap::from([("a".into(), "2".into())]));
    let v2 = api.replace(&PostParams::default(), next).await.unwrap();
    assert_ne!(v2.metadata.resource_version, v1.metadata.resource_version);
    assert_eq!(data(&v2, "a").as_deref(), Some("2"));
    let mut stale = (*v1).clone();
    stale.data = Some(BTreeMap::from([("a".into(), "3".into())]));
    let r = api.replace(&PostParams::default(), stale).await;
    assert!(matches!(r, Err(Error::Conflict { .. })), "{r:?}");
    let edited = api
        .edit(
            &name,
            v1.metadata.uid.as_deref(),
            Default::default(),
            3,
            |cm| {
                cm.data = Some(BTreeMap::from([("a".into(), "4".into())]));
                true
            },
        )
        .await
        .unwrap()
        .expect("edited");
    assert_eq!(data(&edited, "a").as_deref(), Some("4"));
    let other = api.edit(&name, Some("another-uid"), Default::default(), 3, |_| true);
    assert!(
        other.await.unwrap().is_none(),
        "another incarnation is left alone"
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

async fn selectors(client: &Client) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let (a, b) = (unique("sel-a"), unique("sel-b"));
    for n in [&a, &b] {
        api.create(&PostParams::default(), config_map(n, &[]))
            .await
            .unwrap();
    }
    let by_label = ListParams::default()
        .labels(crate::LabelSelector::parse(&format!("contract={a}")).unwrap());
    let page = api.list(&by_label).await.unwrap();
    let names: Vec<&str> = page.items.iter().map(|o| o.name_str()).collect();
    assert_eq!(names, [a.as_str()]);
    assert!(!page.resource_version.is_empty(), "a list has a version");
    let by_name = ListParams::default().field_equals("metadata.name", &b);
    let page = api.list(&by_name).await.unwrap();
    let names: Vec<&str> = page.items.iter().map(|o| o.name_str()).collect();
    assert_eq!(names, [b.as_str()]);
    let all: Api<ConfigMap> = Api::all(client.clone());
    let everywhere = all.list(&by_name).await.unwrap();
    assert_eq!(everywhere.items.len(), 1, "across namespaces");
    for n in [&a, &b] {
        api.delete(n, &DeleteParams::default()).await.unwrap();
    }
}

async fn next<K: Object>(w: &mut WatchStream<std::sync::Arc<K>>) -> WatchEvent<std::sync::Arc<K>> {
    loop {
        let e = tokio::time::timeout(WAIT, w.next())
            .await
            .expect("a watch event within 10 s")
            .expect("the watch goes on")
            .expect("no error");
        if !matches!(e, WatchEvent::Bookmark(_)) {
            return e;
        }
    }
}

async fn watch(client: &Client) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let name = unique("watch");
    let lp = ListParams::default().field_equals("metadata.name", &name);
    let version = api.list(&lp).await.unwrap().resource_version;
    let mut w = api.watch(&lp, &version).await.unwrap();
    let made = api
        .create(&PostParams::default(), config_map(&name, &[]))
        .await
        .unwrap();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.uid == made.metadata.uid)
    );
    let patch = Patch::Merge(json!({"data": {"k": "v"}}));
    api.patch(&name, &PostParams::default(), &patch)
        .await
        .unwrap();
    match next(&mut w).await {
        WatchEvent::Modified(o) => assert_eq!(data(&o, "k").as_deref(), Some("v")),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Deleted(_)));
    // From "": what exists first, as ADDED.
    let keep = unique("watch-existing");
    api.create(&PostParams::default(), config_map(&keep, &[]))
        .await
        .unwrap();
    let lp = ListParams::default().field_equals("metadata.name", &keep);
    let mut w = api.watch(&lp, "").await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Added(o) if o.name_str() == keep));
    api.delete(&keep, &DeleteParams::default()).await.unwrap();
}

async fn patches(client: &Client) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let name = unique("patch");
    api.create(
        &PostParams::default(),
        config_map(&name, &[("a", "1"), ("b", "2")]),
    )
    .await
    .unwrap();
    let merge = Patch::Merge(json!({"data": {"a": null, "c": "3"}}));
    let o = api
        .patch(&name, &PostParams::default(), &merge)
        .await
        .unwrap();
    assert_eq!((data(&o, "a"), data(&o, "c").as_deref()), (None, Some("3")));
    let strategic = Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}}));
    let o = api
        .patch(&name, &PostParams::default(), &strategic)
        .await
        .unwrap();
    assert_eq!(
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("x"))
            .map(String::as_str),
        Some("y")
    );
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/b", "value": "9"}]))
            .unwrap();
    let o = api
        .patch(&name, &PostParams::default(), &Patch::Json(ops))
        .await
        .unwrap();
    assert_eq!(data(&o, "b").as_deref(), Some("9"));
    let missing = api
        .patch(&unique("missing"), &PostParams::default(), &merge)
        .await;
    assert!(
        matches!(missing, Err(Error::NotFound { .. })),
        "{missing:?}"
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
}

async fn deletion(client: &Client) {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let name = unique("delete");
    let made = api
        .create(&PostParams::default(), pod(&name))
        .await
        .unwrap();
    let wrong = api
        .delete(&name, &DeleteParams::if_uid("another-uid"))
        .await;
    assert!(matches!(wrong, Err(Error::Conflict { .. })), "{wrong:?}");
    let uid = made.metadata.uid.clone().unwrap_or_default();
    match api
        .delete(&name, &DeleteParams::if_uid(&uid))
        .await
        .unwrap()
    {
        Deleted::Marked(p) => assert!(p.metadata.deletion_timestamp.is_some()),
        Deleted::Gone(_) => panic!("a bound pod is deleted gracefully"),
    }
    let gone = api
        .delete(&name, &DeleteParams::now_if_uid(&uid))
        .await
        .unwrap();
    assert!(matches!(gone, Deleted::Gone(_)), "{gone:?}");
    let r = api.delete(&name, &DeleteParams::default()).await;
    assert!(matches!(r, Err(Error::NotFound { .. })), "{r:?}");
}
