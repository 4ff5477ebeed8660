//! Who may call the node's API: the agent's own bearer token (the kubeconfig's: everything),
//! or, on a node standing alone, a service-account token the node issued, allowed what
//! RBAC's Roles and bindings allow its account (the default policy lets every
//! authenticated caller read discovery). Anything else is 401; an account asking beyond
//! its rights is 403 with kube-apiserver's message.

use std::future::{Ready, ready};
use std::rc::Rc;
use std::sync::Arc;

use actix_web::HttpMessage;
use actix_web::body::EitherBody;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform, forward_ready};
use actix_web::http::Method;
use futures_util::future::LocalBoxFuture;
use k8s_openapi::api::authentication::v1::UserInfo;
use podvisor_auth::rbac::{self, Request};
use podvisor_auth::{AuthError, Signer};
use podvisor_client::Client;

use crate::status::ApiError;

/// Service-account tokens and RBAC, when the node issues tokens (standalone).
#[derive(Clone)]
pub struct Accounts {
    pub signer: Arc<Signer>,
    /// The node's store.
    pub client: Client,
}

/// The middleware.
#[derive(Clone)]
pub(crate) struct Access {
    pub token: Arc<str>,
    pub accounts: Option<Accounts>,
}

pub(crate) fn now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    i64::try_from(since.unwrap_or_default().as_secs()).unwrap_or(i64::MAX)
}

fn open_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/livez" | "/readyz")
}

fn verb(method: &Method, named: bool, watch: bool) -> &'static str {
    match (method.as_str(), named) {
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) if watch => "watch",
        ("GET" | "HEAD", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "unknown",
    }
}

/// The request as RBAC sees it: a resource under `/api/v1` or `/apis/{group}/{version}`,
/// else a path.
pub(crate) fn attributes(method: &Method, path: &str, query: &str) -> Request {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", g, _, rest @ ..] if !rest.is_empty() => (*g, rest),
        _ => {
            return Request::NonResource {
                verb: method.as_str().to_lowercase(),
                path: path.to_string(),
            };
        }
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, more @ ..]
            if !more.is_empty() && !matches!(more, ["status" | "finalize"]) =>
        {
            (Some(ns.to_string()), more)
        }
        // A namespace itself is in itself, as kube-apiserver's request info says.
        ["namespaces", ns, ..] => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(n.to_string()), None),
        [r, n, s, ..] => (*r, Some(n.to_string()), Some(s.to_string())),
        [] => ("", None, None),
    };
    // Decoded as the handlers decode it (`watch=%74rue` is a watch too).
    let watch = actix_web::web::Query::<WatchParam>::from_query(query)
        .is_ok_and(|q| matches!(q.watch.as_deref(), Some("true" | "1")));
    Request::Resource {
        verb: verb(method, name.is_some(), watch).into(),
        group: group.into(),
        resource: resource.into(),
        subresource: sub,
        namespace,
        name,
    }
}

#[derive(serde::Deserialize)]
struct WatchParam {
    watch: Option<String>,
}

/// What writing a role takes beyond the verb on it: Kubernetes lets an account grant only
/// what it holds unless it may `escalate`; podvisor does not compare a role's rules with
/// its writer's, so it asks for `escalate` outright (stricter: `admin` and `edit` may not
/// write roles; `cluster-admin` may). A binding's writer is judged by the role it names,
/// which is in its body: [`check_bind`], from the write handlers.
fn escalation(req: &Request) -> Option<Request> {
    let Request::Resource {
        verb,
        group,
        resource,
        namespace,
        ..
    } = req
    else {
        return None;
    };
    if group != podvisor_store::RBAC || !matches!(verb.as_str(), "create" | "update" | "patch") {
        return None;
    }
    if !matches!(resource.as_str(), "roles" | "clusterroles") {
        return None;
    }
    Some(Request::Resource {
        verb: "escalate".into(),
        group: group.clone(),
        resource: resource.clone(),
        subresource: None,
        namespace: namespace.clone(),
        name: None,
    })
}

fn forbidden(req: &Request, user: &UserInfo) -> ApiError {
    let why = req.refusal(user);
    match req {
        Request::Resource {
            group,
            resource,
            name,
            ..
        } => {
            let what = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let message = match name {
                Some(n) => format!("{what} {n:?} is forbidden: {why}"),
                None => format!("{what} is forbidden: {why}"),
            };
            ApiError::new(403, "Forbidden", message).named(resource, name.as_deref().unwrap_or(""))
        }
        Request::NonResource { .. } => ApiError::new(403, "Forbidden", format!("forbidden: {why}")),
    }
}

fn bearer(req: &ServiceRequest) -> Option<String> {
    let h = req.headers().get(actix_web::http::header::AUTHORIZATION)?;
    h.to_str().ok()?.strip_prefix("Bearer ").map(str::to_string)
}

/// The caller of a request that is not the agent's own, checked.
async fn check_account(accounts: &Accounts, req: &ServiceRequest) -> Result<(), ApiError> {
    let token = bearer(req).ok_or_else(ApiError::unauthorized)?;
    let who = podvisor_auth::authenticate(&accounts.signer, &accounts.client, &token, &[], now())
        .await
        .map_err(|e| match e {
            AuthError::Client(c) => ApiError::from(c),
            _ => ApiError::unauthorized(),
        })?;
    let attrs = attributes(req.method(), req.path(), req.query_string());
    for needed in std::iter::once(attrs.clone()).chain(escalation(&attrs)) {
        let allowed = rbac::authorize(&accounts.client, &who.user, &needed)
            .await
            .map_err(|e| match e {
                AuthError::Client(c) => ApiError::from(c),
                other => ApiError::new(500, "InternalError", other.to_string()),
            })?;
        if !allowed {
            return Err(forbidden(&needed, &who.user));
        }
    }
    req.extensions_mut().insert(who.user);
    Ok(())
}

impl<S, B> Transform<S, ServiceRequest> for Access
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Transform = AccessMiddleware<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(AccessMiddleware {
            service: Rc::new(service),
            access: self.clone(),
        }))
    }
}

pub(crate) struct AccessMiddleware<S> {
    service: Rc<S>,
    access: Access,
}

impl<S, B> Service<ServiceRequest> for AccessMiddleware<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let service = self.service.clone();
        let access = self.access.clone();
        Box::pin(async move {
            let own = open_path(req.path())
                || podvisor_debug::auth::authorized(req.request(), Some(&access.token));
            let verdict = match (&access.accounts, own) {
                (_, true) => Ok(()),
                (Some(accounts), false) => check_account(accounts, &req).await,
                (None, false) => Err(ApiError::unauthorized()),
            };
            match verdict {
                Ok(()) => Ok(service.call(req).await?.map_into_left_body()),
                Err(e) => {
                    let (r, _) = req.into_parts();
                    Ok(ServiceResponse::new(r, e.respond()).map_into_right_body())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        method: Method,
        path: &str,
        query: &str,
    ) -> (
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    ) {
        match attributes(&method, path, query) {
            Request::Resource {
                verb,
                group,
                resource,
                subresource,
                namespace,
                name,
            } => (verb, group, resource, subresource, namespace, name),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requests_become_rbac_attributes_as_kube_apiserver_reads_them() {
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            res(Method::GET, "/api/v1/namespaces/default/pods", ""),
            (
                "list".into(),
                "".into(),
                "pods".into(),
                None,
                s("default"),
                None
            )
        );
        assert_eq!(
            res(Method::GET, "/api/v1/pods", "watch=true&x=1"),
            ("watch".into(), "".into(), "pods".into(), None, None, None)
        );
        assert_eq!(
            res(Method::POST, "/api/v1/namespaces/ns/pods/p/exec", ""),
            (
                "create".into(),
                "".into(),
                "pods".into(),
                s("exec"),
                s("ns"),
                s("p")
            )
        );
        assert_eq!(
            res(
                Method::DELETE,
                "/apis/apps/v1/namespaces/ns/replicasets",
                ""
            ),
            (
                "deletecollection".into(),
                "apps".into(),
                "replicasets".into(),
                None,
                s("ns"),
                None
            )
        );
        assert_eq!(
            res(Method::GET, "/api/v1/namespaces/kube-system", ""),
            (
                "get".into(),
                "".into(),
                "namespaces".into(),
                None,
                s("kube-system"),
                s("kube-system")
            )
        );
        assert_eq!(
            res(Method::PUT, "/api/v1/namespaces/x/status", ""),
            (
                "update".into(),
                "".into(),
                "namespaces".into(),
                s("status"),
                s("x"),
                s("x")
            )
        );
        assert_eq!(
            res(
                Method::GET,
                "/api/v1/namespaces/default/pods",
                "watch=%74rue"
            )
            .0,
            "watch"
        );
        let role = escalation(&attributes(
            &Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles",
            "",
        ));
        assert!(
            matches!(&role, Some(Request::Resource { verb, resource, .. }) if verb == "escalate" && resource == "roles"),
            "{role:?}"
        );
        let binding = attributes(
            &Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings",
            "",
        );
        assert_eq!(
            escalation(&binding),
            None,
            "judged by its role, in the handler"
        );
        let delete = attributes(
            &Method::DELETE,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles/r",
            "",
        );
        assert_eq!(escalation(&delete), None);
        assert_eq!(
            attributes(&Method::GET, "/apis/apps/v1", ""),
            Request::NonResource {
                verb: "get".into(),
                path: "/apis/apps/v1".into()
            }
        );
    }
}
