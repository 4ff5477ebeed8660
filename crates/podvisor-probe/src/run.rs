//! Running an [`Action`] against a container: once as a probe (an [`Outcome`] within the
//! probe's timeout) or once as a lifecycle hook (done, or why not).

use std::sync::Arc;
use std::time::Duration;

use podvisor_cri::Runtime;

use crate::action::Action;
use crate::outcome::Outcome;

/// Where a probe or hook runs.
#[derive(Clone)]
pub struct Target {
    pub runtime: Arc<dyn Runtime>,
    pub container_id: String,
    /// The pod's address: its IP, or the node's (`127.0.0.1`) for a host-network pod;
    /// empty while a pod of its own network has none known yet.
    pub pod_ip: String,
}

/// A network probe with nowhere to go: a pod whose IP is not known yet is not probed
/// (it used to be probed at `127.0.0.1`, the node's own loopback), and the run counts
/// neither way.
fn no_address() -> Outcome {
    Outcome::Error("the pod has no IP address yet".into())
}

/// How long an HTTP hook may take when nothing else bounds it: as long as an exec hook's
/// runtime call may (CRI's default deadline).
pub const HOOK_LIMIT: Duration = Duration::from_secs(120);

/// Runs `action` once as a probe (owning what it needs, so it can be spawned).
pub async fn probe(action: Action, target: Target, timeout: Duration) -> Outcome {
    match &action {
        Action::Exec(cmd) => {
            crate::exec::exec(target.runtime.as_ref(), &target.container_id, cmd, timeout).await
        }
        Action::HttpGet(get) if get.host.is_none() && target.pod_ip.is_empty() => no_address(),
        Action::HttpGet(get) => crate::http::probe(get, &target.pod_ip, timeout).await,
        Action::Tcp { host, port } => match host.as_deref().unwrap_or(&target.pod_ip) {
            "" => no_address(),
            address => crate::tcp::tcp(address, *port, timeout).await,
        },
        Action::Grpc { .. } if target.pod_ip.is_empty() => no_address(),
        Action::Grpc { port, service } => {
            crate::grpc::grpc(&target.pod_ip, *port, service, timeout).await
        }
        Action::Sleep(d) => {
            tokio::time::sleep(*d).await;
            Outcome::Success
        }
    }
}

/// Why a hook failed, as the kubelet words it (`Exec lifecycle hook ([...]) ... failed -
/// error: ...`); the kubelet keeps this out of events (a hook's output may hold secrets)
/// and shows it as the container's waiting message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

/// Runs `action` once as a hook of container `container`, within `limit` when one is
/// given (a preStop hook's grace period; `None` for postStart, which the kubelet does not
/// bound: an exec hook then ends with its runtime call's deadline, an HTTP one after
/// [`HOOK_LIMIT`]).
pub async fn hook(
    action: &Action,
    target: &Target,
    container: &str,
    pod: &str,
    limit: Option<Duration>,
) -> Result<(), HookError> {
    match action {
        Action::Exec(cmd) => {
            let timeout = limit.unwrap_or(Duration::ZERO);
            match crate::exec::exec(target.runtime.as_ref(), &target.container_id, cmd, timeout)
                .await
            {
                Outcome::Success | Outcome::Warning(_) => Ok(()),
                Outcome::Failure(m) | Outcome::Error(m) => Err(HookError(format!(
                    "Exec lifecycle hook ({cmd:?}) for Container {container:?} in Pod {pod:?} failed - error: {m}"
                ))),
            }
        }
        Action::HttpGet(get) => {
            crate::http::hook(get, &target.pod_ip, limit.unwrap_or(HOOK_LIMIT))
                .await
                .map_err(|e| {
                    HookError(format!(
                        "HTTP lifecycle hook ({}) for Container {container:?} in Pod {pod:?} failed - error: {e}",
                        get.path
                    ))
                })
        }
        Action::Sleep(d) => {
            tokio::time::sleep(limit.map_or(*d, |l| l.min(*d))).await;
            Ok(())
        }
        Action::Tcp { .. } | Action::Grpc { .. } => Err(HookError(format!(
            "Cannot run handler: invalid handler for Container {container:?} in Pod {pod:?}"
        ))),
    }
}
