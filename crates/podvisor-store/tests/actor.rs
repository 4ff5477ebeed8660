//! The store actor's fan-out: watchers get every change they select, and one that stops
//! reading is cut off after its allowance instead of growing memory.

use k8s_openapi::api::core::v1::ConfigMap;
use podvisor_actors::ChildSpec;
use podvisor_client::{AnyObject, PostParams};
use podvisor_core::Kind;
use podvisor_store::actor::{Create, Watch, WatchEvent};
use podvisor_store::{Selector, StoreActor, StoreConfig};

fn create(name: String) -> Create {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name);
    Create {
        namespace: Some("default".into()),
        object: AnyObject::new(cm),
        opts: PostParams::default(),
    }
}

#[actix_rt::test]
async fn a_watcher_that_stops_reading_is_cut_off_and_others_see_everything() {
    let dir = std::env::temp_dir().join(format!("podvisor-store-actor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 1000,
    };
    let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 16)).start_unsupervised();
    let sel = Selector::all(Kind::ConfigMap);
    let watch = |from| Watch {
        selector: sel.clone(),
        from,
    };
    let mut slow = store.send(watch(None)).await.unwrap().unwrap();
    let mut fast = store.send(watch(None)).await.unwrap().unwrap();
    let mut seen = Vec::new();
    for i in 0..40 {
        store
            .send(create(format!("cm-{i:02}")))
            .await
            .unwrap()
            .unwrap();
        while let Ok(WatchEvent::Change(c)) = fast.try_recv() {
            seen.push(c.object.name.clone());
        }
    }
    let want: Vec<String> = (0..40).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(
        seen, want,
        "a watcher that keeps up sees every change, in order"
    );
    let mut kept = 0;
    while let Some(e) = slow.recv().await {
        assert!(matches!(e, WatchEvent::Change(_)));
        kept += 1;
    }
    assert_eq!(
        kept, 16,
        "the slow watcher got its allowance, then its stream ended"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn a_dry_run_is_answered_and_nobody_is_told() {
    let dir = std::env::temp_dir().join(format!("podvisor-store-dry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 1000,
    };
    let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 16)).start_unsupervised();
    let mut w = store
        .send(Watch {
            selector: Selector::all(Kind::ConfigMap),
            from: None,
        })
        .await
        .unwrap()
        .unwrap();
    let mut dry = create("dry".into());
    dry.opts.dry_run = true;
    let answered = store.send(dry).await.unwrap().unwrap();
    assert_eq!(answered.name, "dry");
    store.send(create("real".into())).await.unwrap().unwrap();
    match w.recv().await {
        Some(WatchEvent::Change(c)) => {
            assert_eq!(c.object.name, "real", "the dry run was never sent")
        }
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
