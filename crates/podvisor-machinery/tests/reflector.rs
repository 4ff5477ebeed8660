//! A reflector against a real store: the actor's view matches the store after a list,
//! after changes, and after the store cut its watch off for falling behind (it resumes
//! from its revision and misses nothing).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{ChildSpec, StartInfo, SupervisedActor};
use podvisor_core::Kind;
use podvisor_machinery::reflector::{Reflected, Reflector, Source, Update};
use podvisor_store::actor::{Create, Delete};
use podvisor_store::{
    ChangeType, DeleteOptions, Resource, Selector, StoreActor, StoreConfig, WriteOptions,
};
use serde_json::json;

#[derive(Default)]
struct Seen {
    names: BTreeMap<String, u64>,
    resets: usize,
}

struct View {
    reflector: Reflector,
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

impl Handler<Reflected> for View {
    type Result = ();
    fn handle(&mut self, msg: Reflected, ctx: &mut Context<Self>) {
        let Some(update) = self.reflector.accept(msg, ctx) else {
            return;
        };
        let mut seen = self.seen.lock().unwrap();
        match update {
            Update::Reset(items) => {
                seen.resets += 1;
                seen.names = items.iter().map(|o| (o.name.clone(), o.revision)).collect();
            }
            Update::Change(c) if c.kind == ChangeType::Deleted => {
                seen.names.remove(&c.object.name);
            }
            Update::Change(c) => {
                seen.names.insert(c.object.name.clone(), c.revision);
            }
        }
    }
}

fn cm(name: String) -> Create {
    Create {
        resource: Resource::of(Kind::ConfigMap),
        namespace: Some("default".into()),
        body: json!({"metadata": {"name": name}}),
        opts: WriteOptions::default(),
    }
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
    for i in 0..5 {
        store
            .send(cm(format!("before-{i}")))
            .await
            .unwrap()
            .unwrap();
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (s, v) = (store.clone(), seen.clone());
    let source = Source::of(&s);
    ChildSpec::of(move || View {
        reflector: Reflector::new("cms", Selector::all(Kind::ConfigMap), source.clone()),
        seen: v.clone(),
    })
    .start_unsupervised();
    until(&seen, "the first list", |s| s.names.len() == 5).await;

    // A burst far beyond the watcher's allowance, sent without waiting: the watcher is cut
    // off, resumes from its revision, and misses nothing.
    let sends: Vec<_> = (0..30)
        .map(|i| store.send(cm(format!("burst-{i:02}"))))
        .collect();
    for s in sends {
        s.await.unwrap().unwrap();
    }
    let delete = Delete {
        resource: Resource::of(Kind::ConfigMap),
        namespace: "default".into(),
        name: "before-0".into(),
        opts: DeleteOptions::default(),
    };
    store.send(delete).await.unwrap().unwrap();
    until(&seen, "every change", |s| {
        s.names.len() == 34 && !s.names.contains_key("before-0")
    })
    .await;
    let resets = seen.lock().unwrap().resets;

    // The view agrees with a fresh list of the store, revisions included.
    let page = store
        .send(podvisor_store::actor::List {
            selector: Selector::all(Kind::ConfigMap),
            limit: None,
            continue_token: None,
        })
        .await
        .unwrap()
        .unwrap();
    let listed: BTreeMap<String, u64> = page
        .items
        .iter()
        .map(|o| (o.name.clone(), o.revision))
        .collect();
    assert_eq!(seen.lock().unwrap().names, listed);
    assert!(resets >= 1);
}
