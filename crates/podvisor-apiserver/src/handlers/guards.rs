//! What a client's write must pass before it reaches the store, beyond RBAC on its verb:
//! who is asking matters here, and admission (inside the store) does not know.

use actix_web::HttpRequest;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding, RoleRef};
use podvisor_client::AnyObject;
use podvisor_core::Kind;
use podvisor_core::pod::MIRROR_ANNOTATION;

use actix_web::HttpMessage;
use k8s_openapi::api::authentication::v1::UserInfo;
use podvisor_auth::{AuthError, escalation};

use super::{ApiState, read};
use crate::access::Accounts;
use crate::status::ApiError;
use crate::target::Target;

/// Whether `o` is a pod that says it mirrors a static pod.
pub(super) fn claims_mirror(o: &AnyObject) -> bool {
    let annotations = o.meta().annotations.as_ref();
    o.kind() == Kind::Pod && annotations.is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
}

/// A pod that says it mirrors a static pod, sent by a client: only the node makes mirror
/// pods (from its manifest files, through the store, never through this API), and a
/// forged one would pass for the node's own (no Pod Security, no admission of its
/// resources, its annotation taken for a static pod's UID).
pub(super) fn refuse_mirror(t: &Target, name: &str, claims_mirror: bool) -> Result<(), ApiError> {
    if t.resource.kind != Kind::Pod || !claims_mirror {
        return Ok(());
    }
    Err(ApiError::new(
        403,
        "Forbidden",
        format!(
            "pods {name:?} is forbidden: the annotation {MIRROR_ANNOTATION} is the node's own: only the node creates mirror pods of its static pods"
        ),
    )
    .named("pods", name))
}

/// A binding written by an account: its writer may grant the role it names.
pub(super) async fn may_bind(
    req: &HttpRequest,
    state: &ApiState,
    t: &Target,
    o: &AnyObject,
) -> Result<(), ApiError> {
    let role = match o {
        AnyObject::RoleBinding(b) => &b.role_ref,
        AnyObject::ClusterRoleBinding(b) => &b.role_ref,
        _ => return Ok(()),
    };
    let ns = namespace_of(t, o);
    check_bind(req, state.accounts.as_ref(), role, ns.as_deref()).await
}

fn namespace_of(t: &Target, o: &AnyObject) -> Option<String> {
    if o.kind() != Kind::RoleBinding {
        return None;
    }
    let ns = t.namespace.clone().or_else(|| o.meta().namespace.clone());
    Some(ns.unwrap_or_else(|| "default".into()))
}

/// A patched binding keeps its role (`roleRef` never changes): the stored one's, or for an
/// apply that creates it, the applied configuration's.
pub(super) async fn may_bind_patched(
    req: &HttpRequest,
    state: &ApiState,
    t: &Target,
    applied: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    if !matches!(
        t.resource.kind,
        Kind::RoleBinding | Kind::ClusterRoleBinding
    ) {
        return Ok(());
    }
    let role: RoleRef = match read::fetch(state, t).await {
        Ok(stored) if t.resource.kind == Kind::RoleBinding => {
            stored.typed::<RoleBinding>()?.role_ref.clone()
        }
        Ok(stored) => stored.typed::<ClusterRoleBinding>()?.role_ref.clone(),
        Err(e) if e.code == 404 && applied.is_some() => {
            let config = applied.map(|c| c["roleRef"].clone()).unwrap_or_default();
            serde_json::from_value(config)
                .map_err(|e| ApiError::bad_request(format!("roleRef: {e}")))?
        }
        Err(e) => return Err(e),
    };
    let ns =
        (t.resource.kind == Kind::RoleBinding).then(|| t.namespace.clone().unwrap_or_default());
    check_bind(req, state.accounts.as_ref(), &role, ns.as_deref()).await
}

/// Whether the caller of `req` may write a binding to `role` in `namespace` (`None`: a
/// ClusterRoleBinding): it may `bind` that role, or holds what the role gives
/// (`podvisor_auth::escalation`). The agent's own token may (it has no account).
async fn check_bind(
    req: &actix_web::HttpRequest,
    accounts: Option<&Accounts>,
    role: &k8s_openapi::api::rbac::v1::RoleRef,
    namespace: Option<&str>,
) -> Result<(), ApiError> {
    let user = req.extensions().get::<UserInfo>().cloned();
    let (Some(accounts), Some(user)) = (accounts, user) else {
        return Ok(());
    };
    let allowed = escalation::may_bind(&accounts.client, &user, role, namespace)
        .await
        .map_err(|e| match e {
            AuthError::Client(c) => ApiError::from(c),
            other => ApiError::new(500, "InternalError", other.to_string()),
        })?;
    if allowed {
        return Ok(());
    }
    let kind = if namespace.is_some() {
        "rolebindings"
    } else {
        "clusterrolebindings"
    };
    let why = escalation::bind_request(role, namespace).refusal(&user);
    Err(ApiError::new(
        403,
        "Forbidden",
        format!(
            "{kind}.{} is forbidden: {why}, and does not hold every permission {} {:?} gives",
            podvisor_store::RBAC,
            role.kind,
            role.name
        ),
    )
    .named(kind, ""))
}
