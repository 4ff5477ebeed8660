//! A container's postStart hook, run right after it started: until the hook is done the
//! container is not Running (its status waits, `ContainerCreating`), and a hook that fails
//! stops the container (with its preStop hook and the pod's grace period), which then
//! restarts as its policy says. The hook's own words stay out of the event (they may hold
//! secrets) and go to the container's waiting message.

use k8s_openapi::api::core::v1::Container;
use podvisor_core::{PodExt, SharedPod};
use podvisor_probe::{Action, HookError, Target as HookTarget};
use tracing::warn;

use super::super::{CriSyncError, CriSyncer};
use super::start::{Target, Waits};
use super::{Stop, pod_ip};
use crate::protocol::status::{EventType, Waiting, WaitingReason};
use crate::protocol::sync::SyncError;

impl CriSyncer {
    pub(crate) async fn post_start(
        &self,
        t: &Target<'_>,
        c: &Container,
        id: &str,
        waits: &mut Waits,
    ) -> Result<(), SyncError> {
        let Some(h) = c.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) else {
            return Ok(());
        };
        let ip = match &t.sandbox.ip {
            Some(ip) if !t.pod.host_network() => ip.clone(),
            _ => pod_ip(t.pod, t.status),
        };
        let mut creating = Waiting::new(WaitingReason::ContainerCreating, String::new());
        creating.instance = Some(id.to_string());
        waits.insert(c.name.clone(), creating);
        self.report(t.pod, waits.clone());
        let result = self.run_post_start(t.pod, c, h, id, &ip).await;
        waits.remove(&c.name);
        let Err(e) = result else { return Ok(()) };
        warn!(pod_uid = %t.pod.uid(), container = %c.name, error = %e, "postStart hook failed");
        self.event(
            t.pod,
            EventType::Warning,
            "FailedPostStartHook",
            "PostStartHook failed".into(),
        );
        let mut stop = Stop::new(id, &c.name, t.pod.spec_grace_period());
        stop.message = "FailedPostStartHook".into();
        if let Err(k) = self.kill(t.pod, &ip, &[stop], &[]).await {
            warn!(pod_uid = %t.pod.uid(), container = %c.name, error = %k, "stopping the container after its postStart hook failed");
        }
        waits.insert(
            c.name.clone(),
            Waiting::new(WaitingReason::PostStartHookError, e.0.clone()),
        );
        Err(CriSyncError::PostStartHook(e).into())
    }

    async fn run_post_start(
        &self,
        pod: &SharedPod,
        c: &Container,
        h: &k8s_openapi::api::core::v1::LifecycleHandler,
        id: &str,
        ip: &str,
    ) -> Result<(), HookError> {
        let action =
            Action::of_hook(c, h).map_err(|e| HookError(format!("Cannot run handler: {e}")))?;
        let target = HookTarget {
            runtime: self.runtime.clone(),
            container_id: id.to_string(),
            pod_ip: ip.to_string(),
        };
        let who = format!("{}/{}", pod.namespace(), pod.name());
        podvisor_probe::run::hook(&action, &target, &c.name, &who, None).await
    }
}
