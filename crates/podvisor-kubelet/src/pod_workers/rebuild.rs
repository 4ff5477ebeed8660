//! How a (re)started dispatcher rebuilds from the truth: the desired pods are updated
//! (their first sync adopts what runs); podvisor's runtime pods that nobody wants are
//! killed, but only once every config source has been heard from.

use std::collections::HashSet;

use actix::prelude::*;
use podvisor_core::PodUid;
use podvisor_cri::{CriError, labels};
use tracing::{info, warn};

use super::PodWorkers;
use crate::protocol::sources::{DesiredPods, GetDesiredPods};
use crate::protocol::updates::{RuntimePod, UpdatePodOptions, UpdateType};

impl PodWorkers {
    pub(super) fn rebuild_from_truth(&mut self, ctx: &mut Context<Self>) {
        let Some(desired) = self.deps.desired.clone() else {
            return;
        };
        let runtime = self.deps.runtime.clone();
        ctx.wait(
            async move {
                let desired = desired.send(GetDesiredPods).await;
                let running = runtime.list_pods().await;
                (desired, running)
            }
            .into_actor(self)
            .map(|(desired, running), act, ctx| match desired {
                Ok(desired) => act.adopt(desired, running, ctx),
                Err(_) => warn!("no desired pods to rebuild from; waiting for the sync loop"),
            }),
        );
    }

    fn adopt(
        &mut self,
        desired: DesiredPods,
        running: Result<Vec<podvisor_cri::Pod>, CriError>,
        ctx: &mut Context<Self>,
    ) {
        let wanted: HashSet<PodUid> = desired.pods.iter().map(|p| p.uid().clone()).collect();
        for p in desired.pods {
            self.update(UpdatePodOptions::new(UpdateType::Create, p), ctx);
        }
        let pods = match running {
            Ok(pods) if desired.all_sources_seen => pods,
            Ok(_) => return,
            Err(e) => {
                return warn!(error = %e, "cannot list the runtime while rebuilding; housekeeping will catch up");
            }
        };
        for rp in pods {
            let rp = RuntimePod::new(rp);
            if labels::owned_by(rp.runtime(), &self.deps.node_name) && !wanted.contains(rp.uid()) {
                info!(pod_uid = %rp.uid(), "runtime pod in no config: killing it");
                self.update(UpdatePodOptions::runtime_kill(rp), ctx);
            }
        }
    }
}
