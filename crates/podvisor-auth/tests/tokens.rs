//! Tokens against a real store: issued for an account bound to its pod, accepted while
//! both are there, refused once either is gone or the token is altered; RBAC decided by
//! the store's bindings.

use std::sync::Arc;

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, PodSpec, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use podvisor_actors::ChildSpec;
use podvisor_auth::rbac::{Request, authorize};
use podvisor_auth::{AuthError, Signer, authenticate, issue};
use podvisor_client::{Api, Client, DeleteParams, PostParams};
use podvisor_store::{LocalClient, StoreActor, StoreConfig};

fn client(name: &str) -> Client {
    let dir = std::env::temp_dir().join(format!("podvisor-auth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = StoreConfig {
        path: dir.join("s.redb"),
        window: 1000,
    };
    let store = ChildSpec::of(move || StoreActor::new(cfg.clone(), 16)).start_unsupervised();
    LocalClient::client(&store)
}

fn signer() -> Arc<Signer> {
    let key = rcgen_key();
    Arc::new(Signer::from_pem(&key).unwrap())
}

fn rcgen_key() -> String {
    let dir = std::env::temp_dir().join(format!("podvisor-auth-key-{}", uuid()));
    let _ = Signer::load_or_make(&dir).unwrap();
    std::fs::read_to_string(dir.join("sa.key")).unwrap()
}

fn uuid() -> String {
    format!("{:?}", std::time::SystemTime::now()).replace(['{', '}', ' ', ':', ','], "")
}

async fn setup(c: &Client) -> (Arc<ServiceAccount>, Arc<Pod>) {
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("robot".into());
    let sa = Api::namespaced(c.clone(), "default")
        .create(&PostParams::default(), sa)
        .await
        .unwrap();
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.spec = Some(PodSpec {
        service_account_name: Some("robot".into()),
        containers: vec![k8s_openapi::api::core::v1::Container {
            name: "c".into(),
            image: Some("i".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    let pod = Api::namespaced(c.clone(), "default")
        .create(&PostParams::default(), pod)
        .await
        .unwrap();
    (sa, pod)
}

fn bound_to(pod: &Pod) -> TokenRequestSpec {
    TokenRequestSpec {
        audiences: None,
        attestations: None,
        expiration_seconds: Some(3600),
        bound_object_ref: Some(BoundObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
        }),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[actix_rt::test]
async fn a_bound_token_is_accepted_while_its_pod_lives_and_refused_after() {
    let (c, s) = (client("bound"), signer());
    let (sa, pod) = setup(&c).await;
    let status = issue(&s, &c, ("default", "robot"), &bound_to(&pod), now())
        .await
        .unwrap();
    let who = authenticate(&s, &c, status.token.as_deref().unwrap(), &[], now())
        .await
        .unwrap();
    assert_eq!(
        who.user.username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    assert_eq!(who.user.uid, sa.metadata.uid);
    let groups = who.user.groups.clone().unwrap();
    assert!(groups.contains(&"system:serviceaccounts:default".to_string()));
    let extra = who.user.extra.clone().unwrap();
    assert_eq!(extra["authentication.kubernetes.io/pod-name"], vec!["p"]);

    // Another audience than the token's is refused.
    let other = authenticate(
        &s,
        &c,
        status.token.as_deref().unwrap(),
        &["vault".into()],
        now(),
    )
    .await;
    assert!(matches!(other, Err(AuthError::Unauthenticated(m)) if m.contains("audiences")));

    // An altered token, or one of another key, is refused.
    let mut altered = status.token.clone().unwrap();
    altered.pop();
    assert!(authenticate(&s, &c, &altered, &[], now()).await.is_err());
    assert!(
        authenticate(&signer(), &c, status.token.as_deref().unwrap(), &[], now())
            .await
            .is_err()
    );

    // The pod gone: the token dies with it.
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    pods.delete(
        "p",
        &DeleteParams {
            grace_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
    let gone = authenticate(&s, &c, status.token.as_deref().unwrap(), &[], now()).await;
    assert!(
        matches!(&gone, Err(AuthError::Unauthenticated(m)) if m.contains("deleted")),
        "{gone:?}"
    );
}

#[actix_rt::test]
async fn token_requests_are_checked_as_kube_apiserver_checks_them() {
    let (c, s) = (client("checks"), signer());
    let (_, pod) = setup(&c).await;
    let mut short = bound_to(&pod);
    short.expiration_seconds = Some(599);
    let e = issue(&s, &c, ("default", "robot"), &short, now()).await;
    assert!(matches!(e, Err(AuthError::Invalid(m)) if m.contains("10 minutes")));
    let e = issue(&s, &c, ("default", "nobody"), &bound_to(&pod), now()).await;
    assert!(matches!(
        e,
        Err(AuthError::NotFound {
            kind: "ServiceAccount",
            ..
        })
    ));
    let mut stale = bound_to(&pod);
    stale.bound_object_ref.as_mut().unwrap().uid = Some("not-this-one".into());
    let e = issue(&s, &c, ("default", "robot"), &stale, now()).await;
    assert!(matches!(&e, Err(AuthError::Conflict(_))), "{e:?}");
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("other".into());
    Api::namespaced(c.clone(), "default")
        .create(&PostParams::default(), sa)
        .await
        .unwrap();
    let e = issue(&s, &c, ("default", "other"), &bound_to(&pod), now()).await;
    assert!(matches!(e, Err(AuthError::Invalid(m)) if m.contains("different serviceaccount")));
}

fn list_pods(ns: &str) -> Request {
    Request::Resource {
        verb: "list".into(),
        group: String::new(),
        resource: "pods".into(),
        subresource: None,
        namespace: Some(ns.into()),
        name: None,
    }
}

#[actix_rt::test]
async fn a_role_binding_grants_its_role_in_its_namespace_only() {
    let (c, s) = (client("rbac"), signer());
    let (_, pod) = setup(&c).await;
    let status = issue(&s, &c, ("default", "robot"), &bound_to(&pod), now())
        .await
        .unwrap();
    let user = authenticate(&s, &c, status.token.as_deref().unwrap(), &[], now())
        .await
        .unwrap()
        .user;
    assert!(!authorize(&c, &user, &list_pods("default")).await.unwrap());
    let mut role = Role::default();
    role.metadata.name = Some("pod-reader".into());
    role.rules = Some(vec![PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["pods".into()]),
        verbs: vec!["get".into(), "list".into()],
        ..Default::default()
    }]);
    Api::namespaced(c.clone(), "default")
        .create(&PostParams::default(), role)
        .await
        .unwrap();
    let mut binding = RoleBinding::default();
    binding.metadata.name = Some("robot-reads".into());
    binding.role_ref = RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "Role".into(),
        name: "pod-reader".into(),
    };
    binding.subjects = Some(vec![Subject {
        kind: "ServiceAccount".into(),
        name: "robot".into(),
        ..Default::default()
    }]);
    Api::namespaced(c.clone(), "default")
        .create(&PostParams::default(), binding)
        .await
        .unwrap();
    assert!(authorize(&c, &user, &list_pods("default")).await.unwrap());
    assert!(
        !authorize(&c, &user, &list_pods("kube-system"))
            .await
            .unwrap()
    );
    let delete = Request::Resource {
        verb: "delete".into(),
        group: String::new(),
        resource: "pods".into(),
        subresource: None,
        namespace: Some("default".into()),
        name: Some("p".into()),
    };
    assert!(!authorize(&c, &user, &delete).await.unwrap());
    assert_eq!(
        list_pods("kube-system").refusal(&user),
        "User \"system:serviceaccount:default:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"kube-system\""
    );
}
