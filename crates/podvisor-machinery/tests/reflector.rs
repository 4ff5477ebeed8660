//! A reflector against a real store: the actor's view matches the store after a list,
//! after changes, and after the store cut its watch off for falling behind (it resumes
//! from its revision and misses nothing).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use podvisor_actors::{ChildSpec, StartInfo, SupervisedActor};
use podvisor_client::{Api, DeleteParams, ListParams, ObjectExt, PostParams, WatchEvent};
use podvisor_machinery::reflector::{Reflected, Reflector, Update};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};

#[derive(Default)]
struct Seen {
    names: BTreeMap<String, String>,
    resets: usize,
}

struct View {
    reflector: Reflector<ConfigMap>,
    seen: Arc<Mutex<Seen>>,
}

impl Actor for View {
    type Context = Context<Self>;
}

impl SupervisedActor for View {
    const KIND: &'static str = "view";
    type Summary = ();
    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.reflector.start(ctx, start.me.recipient());
    }
    fn summary(&self) {}
}

fn version(o: &ConfigMap) -> String {
    o.metadata.resource_version.clone().unwrap_or_default()
}

impl Handler<Reflected<ConfigMap>> for View {
    type Result = ();
    fn handle(&mut self, msg: Reflected<ConfigMap>, ctx: &mut Context<Self>) {
        let Some(update) = self.reflector.accept(msg, ctx) else {
            return;
        };
        let mut seen = self.seen.lock().unwrap();
        match update {
            Update::Reset(items) => {
                seen.resets += 1;
                seen.names = items
                    .iter()
                    .map(|o| (o.name_str().to_string(), version(o)))
                    .collect();
            }
            Update::Change(WatchEvent::Deleted(o)) => {
                seen.names.remove(o.name_str());
            }
            Update::Change(e) => {
                if let Some(o) = e.object() {
                    seen.names.insert(o.name_str().to_string(), version(o));
                }
            }
        }
    }
}

fn cm(name: String) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name);
    cm
}

async fn until(seen: &Arc<Mutex<Seen>>, what: &str, cond: impl Fn(&Seen) -> bool) {
    for _ in 0..500 {
        if cond(&seen.lock().unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let s = seen.lock().unwrap();
    panic!("{what}: {} names, {} resets", s.names.len(), s.resets);
}

#[actix_rt::test]
async fn the_view_follows_the_store_through_cut_offs_and_relists() {
    let dir = std::env::temp_dir().join(format!("podvisor-reflector-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 40,
    };
    // Watchers may fall 16 changes behind.
    let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 16)).start_unsupervised();
    let api: Api<ConfigMap> = Api::namespaced(LocalClient::client(&store), "default");
    let pp = PostParams::default();
    for i in 0..5 {
        api.create(&pp, cm(format!("before-{i}"))).await.unwrap();
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (all, v) = (Api::all(api.client().clone()), seen.clone());
    ChildSpec::of(move || View {
        reflector: Reflector::new(all.clone(), ListParams::default()),
        seen: v.clone(),
    })
    .start_unsupervised();
    until(&seen, "the first list", |s| s.names.len() == 5).await;

    // A burst far beyond the watcher's allowance, sent without waiting: the watcher is cut
    // off, resumes from its revision, and misses nothing.
    let sends: Vec<_> = (0..30)
        .map(|i| api.create(&pp, cm(format!("burst-{i:02}"))))
        .collect();
    for s in futures_util::future::join_all(sends).await {
        s.unwrap();
    }
    api.delete("before-0", &DeleteParams::default())
        .await
        .unwrap();
    until(&seen, "every change", |s| {
        s.names.len() == 34 && !s.names.contains_key("before-0")
    })
    .await;
    let resets = seen.lock().unwrap().resets;

    // The view agrees with a fresh list of the store, versions included.
    let page = api.list(&ListParams::default()).await.unwrap();
    let listed: BTreeMap<String, String> = page
        .items
        .iter()
        .map(|o| (o.name_str().to_string(), version(o)))
        .collect();
    assert_eq!(seen.lock().unwrap().names, listed);
    assert!(resets >= 1);
}
