//! The debug endpoint over real HTTP, against a live actor tree.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{
    ActorRef, ChildSpec, Registry, StartInfo, SupervisedActor, SupervisorConfig, start_root,
};
use podvisor_debug::client::{ClientError, get};
use podvisor_debug::{DebugConfig, DebugError, DebugServer, Health};

/// An actor that keeps what it is sent but only ever summarises it by length.
#[derive(Default)]
struct Vault {
    secrets: Vec<String>,
}

impl Actor for Vault {
    type Context = Context<Self>;
}

impl SupervisedActor for Vault {
    const KIND: &'static str = "vault";
    type Summary = usize;
    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}
    fn summary(&self) -> usize {
        self.secrets.len()
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Store(String);

impl Handler<Store> for Vault {
    type Result = ();
    fn handle(&mut self, Store(s): Store, _: &mut Context<Self>) {
        self.secrets.push(s);
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stall(Duration);

impl Handler<Stall> for Vault {
    type Result = ();
    fn handle(&mut self, Stall(d): Stall, _: &mut Context<Self>) {
        std::thread::sleep(d);
    }
}

fn tree(registry: &Arc<Registry>) -> (ActorRef<Vault>, ActorRef<Vault>) {
    let (a, a_spec) = ChildSpec::of(Vault::default).key("a").build();
    let (b, b_spec) = ChildSpec::of(Vault::default).key("b").build();
    let (_, sub) = podvisor_actors::Supervisor::spec(
        "sub",
        SupervisorConfig::default(),
        registry.clone(),
        vec![b_spec],
    );
    start_root(
        "root",
        SupervisorConfig::default(),
        registry.clone(),
        vec![a_spec, sub],
        |_| {},
    );
    (a, b)
}

fn local(token: Option<&str>) -> DebugConfig {
    DebugConfig {
        address: "127.0.0.1:0".parse().unwrap(),
        token: token.map(String::from),
        ..DebugConfig::default()
    }
}

async fn settle(registry: &Registry, n: usize) {
    for _ in 0..200 {
        if registry.len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("registry never reached {n} actors");
}

#[test]
fn json_tree_matches_the_registry() {
    System::new().block_on(async {
        let registry = Registry::new();
        let (a, b) = tree(&registry);
        a.send(Store("x".into())).await.unwrap();
        b.send(Store("y".into())).await.unwrap();
        settle(&registry, 4).await;
        let server = DebugServer::start(local(None), registry.clone(), Health::new()).unwrap();
        let url = format!("http://{}", server.address());

        let body = get(&url, "/debug/actors", None).await.unwrap();
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let ids: Vec<&str> = json["actors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        // Depth-first: each supervisor before its children.
        assert_eq!(
            ids,
            ["supervisor/root", "supervisor/sub", "vault/b", "vault/a"]
        );
        assert_eq!(json["total"], 4);
        assert_eq!(json["truncated"], false);
        let expected = serde_json::to_value(registry.tree(0, 500)).unwrap();
        let mut got = json.clone();
        // Ages and times move between the two reads; compare the stable parts.
        for v in [&mut got, &mut expected.clone()] {
            for a in v["actors"].as_array_mut().unwrap() {
                a["mailbox"]["oldest_queued_ms"] = 0.into();
                a["mailbox"]["handle_time"] = 0.into();
            }
        }
        let mut expected = expected;
        for a in expected["actors"].as_array_mut().unwrap() {
            a["mailbox"]["oldest_queued_ms"] = 0.into();
            a["mailbox"]["handle_time"] = 0.into();
        }
        assert_eq!(got, expected);
        let vault_b = &json["actors"][2];
        assert_eq!(vault_b["parent"], "supervisor/sub");
        assert_eq!(vault_b["depth"], 2);
        assert_eq!(vault_b["state"], 1);
        assert_eq!(vault_b["mailbox"]["handled"], 1);
        assert_eq!(vault_b["mailbox"]["capacity"], 1024);

        let one: serde_json::Value =
            serde_json::from_str(&get(&url, "/debug/actors/vault/b", None).await.unwrap()).unwrap();
        assert_eq!(one["id"], "vault/b");
        assert_eq!(one["depth"], 2);
        assert!(matches!(
            get(&url, "/debug/actors/vault/zzz", None).await,
            Err(ClientError::Status { status: 404, .. })
        ));

        // Paging: two per page, the rest flagged.
        let page: serde_json::Value = serde_json::from_str(
            &get(&url, "/debug/actors?offset=1&limit=2", None)
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(page["actors"].as_array().unwrap().len(), 2);
        assert_eq!(page["actors"][0]["id"], "supervisor/sub");
        assert_eq!(page["truncated"], true);

        let html = get(&url, "/debug", None).await.unwrap();
        assert!(
            html.contains("<table>")
                && html.contains("vault/b")
                && html.contains("http-equiv=\"refresh\"")
        );
        // The charts of the last minutes, drawn by the server (the first sample is taken
        // as the server starts).
        assert_eq!(html.matches("<svg").count(), 2, "{html}");
        assert!(html.contains("messages waiting, per actor kind"));

        let metrics = get(&url, "/metrics", None).await.unwrap();
        assert!(
            metrics.contains("podvisor_actors{kind=\"vault\"} 2"),
            "{metrics}"
        );
        assert!(
            metrics.contains("podvisor_messages_handled_total{kind=\"vault\"} 2"),
            "{metrics}"
        );
        assert!(
            metrics.contains("podvisor_message_handle_seconds_count{kind=\"vault\"} 2"),
            "{metrics}"
        );
        assert!(
            metrics
                .contains("podvisor_message_handle_seconds_bucket{kind=\"vault\",le=\"+Inf\"} 2")
        );
        server.stop().await;
    });
}

#[test]
fn non_loopback_needs_a_token_and_the_token_is_enforced() {
    System::new().block_on(async {
        let registry = Registry::new();
        let open = DebugConfig {
            address: "0.0.0.0:0".parse().unwrap(),
            ..DebugConfig::default()
        };
        assert!(matches!(
            DebugServer::start(open.clone(), registry.clone(), Health::new()),
            Err(DebugError::NonLoopbackWithoutToken(_))
        ));
        let empty = DebugConfig {
            token: Some(String::new()),
            ..local(None)
        };
        assert!(matches!(
            DebugServer::start(empty, registry.clone(), Health::new()),
            Err(DebugError::EmptyToken)
        ));

        let guarded = DebugConfig {
            token: Some("t0ken".into()),
            ..open
        };
        let server = DebugServer::start(guarded, registry.clone(), Health::new()).unwrap();
        let url = format!("http://127.0.0.1:{}", server.address().port());
        for path in ["/debug", "/debug/actors", "/debug/actors/x", "/metrics"] {
            assert!(
                matches!(
                    get(&url, path, None).await,
                    Err(ClientError::Status { status: 401, .. })
                ),
                "{path} without token"
            );
            assert!(
                matches!(
                    get(&url, path, Some("wrong")).await,
                    Err(ClientError::Status { status: 401, .. })
                ),
                "{path} with a wrong token"
            );
        }
        assert!(get(&url, "/debug/actors", Some("t0ken")).await.is_ok());
        // Health checks stay open for the service manager.
        assert_eq!(get(&url, "/healthz", None).await.unwrap(), "ok\n");
        server.stop().await;
    });
}

#[test]
fn health_routes_report_failing_checks() {
    System::new().block_on(async {
        let health = Health::new();
        let fresh = Arc::new(AtomicBool::new(true));
        let f = fresh.clone();
        health.liveness(
            "pleg",
            Arc::new(move || {
                if f.load(Ordering::Relaxed) {
                    Ok(())
                } else {
                    Err("last relist 4m ago".into())
                }
            }),
        );
        health.readiness("sync", Arc::new(|| Err("first sync pending".into())));
        let server = DebugServer::start(local(None), Registry::new(), health).unwrap();
        let url = format!("http://{}", server.address());
        assert_eq!(get(&url, "/healthz", None).await.unwrap(), "ok\n");
        match get(&url, "/readyz", None).await {
            Err(ClientError::Status {
                status: 503, body, ..
            }) => assert_eq!(body, "sync: first sync pending"),
            other => panic!("{other:?}"),
        }
        fresh.store(false, Ordering::Relaxed);
        match get(&url, "/healthz", None).await {
            Err(ClientError::Status {
                status: 503, body, ..
            }) => assert_eq!(body, "pleg: last relist 4m ago"),
            other => panic!("{other:?}"),
        }
        server.stop().await;
    });
}

#[test]
fn a_secret_in_a_message_never_appears_in_any_response() {
    const CANARY: &str = "CANARY-7f3a9c-do-not-leak";
    System::new().block_on(async {
        let registry = Registry::new();
        let (a, _) = tree(&registry);
        settle(&registry, 4).await;
        let server = DebugServer::start(local(None), registry.clone(), Health::new()).unwrap();
        let url = format!("http://{}", server.address());
        // One handled, and one still queued while the responses are read.
        a.send(Store(CANARY.into())).await.unwrap();
        a.do_send(Stall(Duration::from_millis(300)));
        a.do_send(Store(format!("env PASSWORD={CANARY}")));
        let url2 = url.clone();
        let reader = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                std::thread::sleep(Duration::from_millis(50));
                let mut all = String::new();
                for path in [
                    "/debug/actors",
                    "/debug/actors/vault/a",
                    "/debug",
                    "/metrics",
                    "/healthz",
                    "/readyz",
                ] {
                    all.push_str(&get(&url2, path, None).await.unwrap());
                }
                all
            })
        });
        while !reader.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let all = reader.join().unwrap();
        // The responses were read while the canary-bearing message sat in the queue.
        assert!(all.contains("\"id\":\"vault/a\""), "{all}");
        assert!(
            all.contains("\"last_message\":\"endpoint::Stall\""),
            "{all}"
        );
        assert!(all.contains("\"queued\":1,"), "{all}");
        assert!(!all.contains(CANARY), "canary leaked");
        assert!(!all.contains("PASSWORD"), "payload leaked");
        server.stop().await;
    });
}

#[cfg(feature = "fault-injection")]
#[test]
fn fault_injection_is_served_only_when_enabled() {
    System::new().block_on(async {
        let registry = Registry::new();
        let (a, _) = tree(&registry);
        a.send(Store("x".into())).await.unwrap();
        settle(&registry, 4).await;
        let post = |url: String, path: &'static str| async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let host = url.trim_start_matches("http://").to_string();
            let mut s = tokio::net::TcpStream::connect(&host).await.unwrap();
            let req = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        };
        let off = DebugServer::start(local(None), registry.clone(), Health::new()).unwrap();
        let resp = post(format!("http://{}", off.address()), "/debug/fault/panic/vault/a").await;
        assert!(resp.starts_with("HTTP/1.1 404"), "{resp}");
        off.stop().await;

        let on = DebugServer::start(DebugConfig { allow_fault_injection: true, ..local(None) }, registry.clone(), Health::new()).unwrap();
        let resp = post(format!("http://{}", on.address()), "/debug/fault/panic/vault/a").await;
        assert!(resp.starts_with("HTTP/1.1 202"), "{resp}");
        for _ in 0..200 {
            if registry.get("vault/a").unwrap().mailbox.restarts == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let snap = registry.get("vault/a").unwrap().mailbox;
        assert_eq!(snap.restarts, 1);
        assert!(snap.last_panic.unwrap().contains("requested through the debug endpoint"));
        assert_eq!(a.send(Store("y".into())).await, Ok(()), "restarted and serving");
        on.stop().await;
    });
}
