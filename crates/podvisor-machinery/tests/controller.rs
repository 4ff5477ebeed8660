//! The controller runtime against a real store, with a small reconciler of its own: each
//! ConfigMap gets a Secret of the same name and an annotation, and an Event on it. A
//! write that meets a newer version (Conflict) is retried and is not a failure; a write the
//! store refuses is a failure, retried with a growing delay; Events name the root's UID.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Secret};
use podvisor_actors::testing::paused_system;
use podvisor_actors::{ChildSpec, Registry, SupervisorConfig, start_root};
use podvisor_client::{Api, Client, ListParams, ObjectExt, PostParams};
use podvisor_core::ObjectKey;
use podvisor_machinery::cache::Delta;
use podvisor_machinery::controller::{
    Controller, Effects, Event, Reconciler, SyncError, Watches, World,
};
use podvisor_machinery::events::{EventRecorder, Reporter};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};
use serde_json::Value;

const PP: PostParams = PostParams { dry_run: false };

/// Makes each ConfigMap's Secret, then annotates the ConfigMap. Its first annotation of
/// each ConfigMap is written against a stale version on purpose (a Conflict).
#[derive(Default)]
struct Stamp {
    stale_once: std::collections::HashSet<ObjectKey>,
}

#[derive(Debug, Default)]
struct Done {
    made: bool,
    error: Option<SyncError>,
}

#[derive(Debug, PartialEq, serde::Serialize)]
struct NoCounts {}

async fn stamp(client: Client, cm: Arc<ConfigMap>, make: bool, stale: bool) -> Done {
    let ns = cm.namespace_str().to_string();
    let mut done = Done::default();
    if make {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
        let mut s = Secret::default();
        s.metadata.name = Some(cm.name_str().to_string());
        if cm.name_str() == "huge" {
            // Over the store's object limit: refused (TooLarge) at every try.
            let big = k8s_openapi::ByteString(vec![b'x'; 2 << 20]);
            s.data = Some([("x".to_string(), big)].into());
        }
        if let Err(e) = secrets.create(&PP, s).await {
            done.error = Some(SyncError::new("making the secret", e));
            return done;
        }
        done.made = true;
    }
    if cm.metadata.annotations.is_some() {
        return done;
    }
    let mut next = (*cm).clone();
    next.metadata.annotations = Some([("stamped".to_string(), "yes".to_string())].into());
    if stale {
        next.metadata.resource_version = Some("1".into());
    }
    let cms: Api<ConfigMap> = Api::namespaced(client, &ns);
    if let Err(e) = cms.replace(&PP, next).await {
        done.error = Some(SyncError::new("annotating", e));
    }
    done
}

impl Reconciler for Stamp {
    const KIND: &'static str = "stamp-controller";
    type Root = ConfigMap;
    type Owned = Secret;
    type Trigger = ConfigMap;
    type Report = Done;
    type Counts = NoCounts;

    fn watches(&self) -> Watches {
        Watches::default()
    }

    fn on_root(&mut self, _: &Delta<ConfigMap>, _: &World<Self>, _: &mut Effects) {}

    fn on_owned(&mut self, _: &Delta<Secret>, _: &World<Self>, _: &mut Effects) {}

    fn reconcile(
        &mut self,
        key: &ObjectKey,
        cm: Arc<ConfigMap>,
        w: &World<Self>,
        _: &mut Effects,
    ) -> Option<LocalBoxFuture<'static, Done>> {
        if cm.name_str() == "kube-root-ca.crt" {
            return None;
        }
        let secret = ObjectKey::new(
            podvisor_core::Kind::Secret,
            key.namespace.as_deref(),
            &key.name,
        );
        let make = w.owned.get(&secret).is_none();
        let stale = self.stale_once.insert(key.clone());
        Some(Box::pin(stamp(w.client.clone(), cm, make, stale)))
    }

    fn reconciled(
        &mut self,
        key: &ObjectKey,
        done: Done,
        _: &World<Self>,
        fx: &mut Effects,
    ) -> Result<Option<Duration>, SyncError> {
        if done.made {
            fx.event(
                key,
                Event::normal("Made", format!("Made secret {}", key.name)),
            );
        }
        done.error.map_or(Ok(None), Err)
    }

    fn counts(&self) -> NoCounts {
        NoCounts {}
    }
}

fn setup(name: &str) -> (Client, Arc<Registry>) {
    let dir = std::env::temp_dir()
        .join("podvisor-controller-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 10_000,
    };
    let registry = Registry::new();
    let (store, store_spec) = ChildSpec::of(move || StoreActor::new(cfg.clone(), 10_000)).build();
    let client = LocalClient::client(&store);
    let reporter = Reporter {
        component: Stamp::KIND.into(),
        host: "n1".into(),
    };
    let events_api = Api::all(client.clone());
    let (events, events_spec) =
        ChildSpec::of(move || EventRecorder::new(reporter.clone(), events_api.clone())).build();
    let c = client.clone();
    let (_, spec) =
        ChildSpec::of(move || Controller::new(Stamp::default(), c.clone(), events.recipient(), 2))
            .build();
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![store_spec, events_spec, spec],
        |e| panic!("escalated: {e:?}"),
    );
    (client, registry)
}

fn summary(registry: &Registry) -> Value {
    registry
        .tree(0, 100)
        .actors
        .into_iter()
        .find(|a| a.kind == Stamp::KIND)
        .and_then(|a| a.state)
        .unwrap_or_default()
}

async fn config_map(client: &Client, name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    Api::namespaced(client.clone(), "default")
        .create(&PP, cm)
        .await
        .unwrap()
}

#[test]
fn a_conflict_is_retried_and_is_no_failure_and_events_name_the_root() {
    paused_system().block_on(async {
        let (client, registry) = setup("conflict");
        let made = config_map(&client, "a").await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let a = cms.get("a").await.unwrap();
        assert_eq!(
            a.metadata
                .annotations
                .as_ref()
                .and_then(|m| m.get("stamped")),
            Some(&"yes".to_string()),
            "annotated after its conflict"
        );
        let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
        assert!(secrets.get_opt("a").await.unwrap().is_some());
        let s = summary(&registry);
        assert_eq!(s["failed_syncs"], 0, "{s}");
        assert!(s["syncs"].as_u64().unwrap() >= 2, "{s}");
        assert_eq!(
            (s["objects"].as_u64(), s["owned"].as_u64()),
            (Some(1), Some(1)),
            "{s}"
        );
        let events: Api<CoreEvent> = Api::namespaced(client, "default");
        let all = events.list(&ListParams::default()).await.unwrap().items;
        let made_events: Vec<_> = all
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Made"))
            .collect();
        assert_eq!(made_events.len(), 1, "{all:?}");
        assert_eq!(made_events[0].involved_object.uid, made.metadata.uid);
    });
}

#[test]
fn a_refused_write_is_a_failure_retried_ever_later() {
    paused_system().block_on(async {
        let (client, registry) = setup("refused");
        config_map(&client, "huge").await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let half = summary(&registry)["failed_syncs"].as_u64().unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        let failed = summary(&registry)["failed_syncs"].as_u64().unwrap();
        // 5 ms doubling: about 14 in a minute, and the second half-minute holds one or two.
        assert!(
            (8..=20).contains(&failed),
            "{failed} failed syncs in a minute"
        );
        assert!(
            failed - half <= 2,
            "{half} then {failed}: the retries slow down"
        );
    });
}
