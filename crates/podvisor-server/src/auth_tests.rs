use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

#[test]
fn paths_and_methods_map_as_the_kubelet_maps_them() {
    let a = attributes("GET", "/stats/summary");
    assert_eq!((a.verb, a.subresource), ("get", "stats"));
    assert_eq!(
        attributes("GET", "/metrics/resource").subresource,
        "metrics"
    );
    assert_eq!(attributes("GET", "/logs/").subresource, "log");
    let a = attributes("POST", "/exec/ns/pod/c");
    assert_eq!((a.verb, a.subresource), ("create", "proxy"));
    assert_eq!(
        attributes("GET", "/containerLogs/ns/p/c").subresource,
        "proxy"
    );
    assert_eq!(attributes("GET", "/pods").subresource, "proxy");
}

/// Knows one token and allows only `stats` to its user; counts its calls.
struct Counting {
    calls: AtomicUsize,
}

#[async_trait]
impl Reviewer for Counting {
    async fn authenticate(&self, token: &str) -> Result<Option<Identity>, ReviewError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok((token == "good").then(|| Identity {
            user: "alice".into(),
            groups: vec![],
        }))
    }

    async fn authorize(
        &self,
        _: &Identity,
        node: &str,
        what: Attributes,
    ) -> Result<bool, ReviewError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        assert_eq!(node, "n1");
        Ok(what.subresource == "stats")
    }
}

#[tokio::test(start_paused = true)]
async fn tokens_and_decisions_are_reviewed_once_then_cached_until_they_expire() {
    let reviewer = Arc::new(Counting {
        calls: AtomicUsize::new(0),
    });
    let guard = Guard::new("n1", reviewer.clone());
    let stats = attributes("GET", "/stats/summary");
    let who = guard.check(None, Some("Bearer good"), stats).await.unwrap();
    assert_eq!(who.user, "alice");
    assert_eq!(reviewer.calls.load(Ordering::SeqCst), 2);
    guard.check(None, Some("Bearer good"), stats).await.unwrap();
    assert_eq!(
        reviewer.calls.load(Ordering::SeqCst),
        2,
        "both answers cached"
    );

    let exec = attributes("POST", "/exec/d/p/c");
    let refused = guard
        .check(None, Some("Bearer good"), exec)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), 403);
    assert!(
        refused.to_string().contains("subresource=proxy"),
        "{refused}"
    );
    tokio::time::advance(Duration::from_secs(31)).await;
    guard
        .check(None, Some("Bearer good"), exec)
        .await
        .unwrap_err();
    assert_eq!(
        reviewer.calls.load(Ordering::SeqCst),
        4,
        "a denial is asked again after 30 s"
    );
}

#[tokio::test]
async fn no_or_bad_credentials_are_unauthenticated() {
    let guard = Guard::new(
        "n1",
        Arc::new(Counting {
            calls: AtomicUsize::new(0),
        }),
    );
    let what = attributes("GET", "/pods");
    for header in [None, Some("Bearer "), Some("Basic abc"), Some("Bearer bad")] {
        let refused = guard.check(None, header, what).await.unwrap_err();
        assert_eq!(refused, Refusal::Unauthenticated, "{header:?}");
    }
}

#[tokio::test]
async fn a_certificate_needs_no_token() {
    let guard = Guard::new(
        "n1",
        Arc::new(Counting {
            calls: AtomicUsize::new(0),
        }),
    );
    let cert = Identity {
        user: "kube-apiserver".into(),
        groups: vec![],
    };
    let who = guard
        .check(Some(cert), None, attributes("GET", "/stats/summary"))
        .await;
    assert_eq!(who.unwrap().user, "kube-apiserver");
}

#[tokio::test]
async fn standalone_only_the_nodes_token_is_admitted() {
    let node = NodeToken::new("s3cret");
    assert_eq!(
        node.authenticate("s3cret").await.unwrap(),
        Some(node_admin())
    );
    assert_eq!(node.authenticate("s3cre").await.unwrap(), None);
    assert_eq!(node.authenticate("s3cretx").await.unwrap(), None);
    let stranger = Identity {
        user: "x".into(),
        groups: vec!["system:nodes".into()],
    };
    assert!(
        !node
            .authorize(&stranger, "n", attributes("GET", "/pods"))
            .await
            .unwrap()
    );
}
