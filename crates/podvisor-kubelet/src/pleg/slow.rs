//! Pods whose inspection hangs the runtime, kept from holding up everyone else's status
//! (the kubelet's failure mode in kubernetes#94829: one `PodSandboxStatus` that never
//! answers stalls the relist, every pod's status with it, and at last the PLEG's health).
//!
//! Every inspection the PLEG waits for (a relist's, a re-inspection's, one after a runtime
//! event) is bounded by `inspect_timeout`. A pod whose inspection runs past it is *slow*:
//! the cache gets the timeout as the pod's status (so its worker does not sync on an old
//! one, exactly as for any failed inspection), and from then on the pod is inspected
//! aside: one call at a time, with the runtime's own deadline, in a future the PLEG does
//! not wait for. Relists, re-inspections and events skip it meanwhile. When an aside
//! inspection answers, the pod is settled like a re-inspected one (its records from that
//! status, its events, its status stored) and is no longer slow.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_core::PodUid;
use podvisor_cri::{CriError, ListedIds, PodStatus, Runtime};
use tokio::time::Instant;
use tracing::{info, warn};

use super::Pleg;

/// What an inspection the PLEG waited for and gave up on reports.
pub(super) const OP: &str = "PodStatus (bounded by the PLEG)";

/// Inspects pod `uid`, giving up after `bound`: by status calls alone when a listing
/// just showed its ids (a relist's), else with a listing of its own.
pub(super) async fn inspect_bounded(
    runtime: Arc<dyn Runtime>,
    uid: PodUid,
    listed: Option<ListedIds>,
    bound: Duration,
) -> Result<PodStatus, CriError> {
    let inspection = async {
        match &listed {
            Some(listed) => runtime.pod_status_listed(uid.as_str(), listed).await,
            None => runtime.pod_status(uid.as_str()).await,
        }
    };
    match tokio::time::timeout(bound, inspection).await {
        Ok(result) => result,
        Err(_) => Err(CriError::Timeout {
            op: OP,
            after: bound,
        }),
    }
}

/// Whether an inspection failed by running past the PLEG's bound.
pub(super) fn gave_up(result: &Result<PodStatus, CriError>) -> bool {
    matches!(result, Err(CriError::Timeout { op, .. }) if *op == OP)
}

impl Pleg {
    /// Pod `uid`'s inspection ran past the bound: it is slow from now on.
    pub(super) fn mark_slow(&mut self, uid: &PodUid, ctx: &mut Context<Self>) {
        if self.slow.insert(uid.clone()) {
            warn!(pod_uid = %uid, bound_ms = self.config.inspect_timeout.as_millis() as u64, "inspecting the pod hangs the runtime; inspecting it aside, one call at a time");
        }
        self.inspect_slow(ctx);
    }

    /// Starts an aside inspection of every slow pod that has none in flight.
    pub(super) fn inspect_slow(&mut self, ctx: &mut Context<Self>) {
        let due: Vec<PodUid> = self.slow.difference(&self.aside).cloned().collect();
        for uid in due {
            self.aside.insert(uid.clone());
            let runtime = self.runtime.clone();
            let started = Instant::now();
            let u = uid.clone();
            let work = async move { runtime.pod_status(u.as_str()).await }
                .into_actor(self)
                .map(move |result, act, ctx| act.aside_done(uid, result, started, ctx));
            ctx.spawn(work);
        }
    }

    fn aside_done(
        &mut self,
        uid: PodUid,
        result: Result<PodStatus, CriError>,
        started: Instant,
        ctx: &mut Context<Self>,
    ) {
        self.aside.remove(&uid);
        if !self.slow.remove(&uid) {
            return; // forgotten meanwhile (a PLEG restart starts with none)
        }
        match result {
            Ok(status) => {
                info!(pod_uid = %uid, took_ms = started.elapsed().as_millis() as u64, "a slow pod's inspection answered");
                self.settle_one(&uid, status, started, ctx);
            }
            Err(error) => {
                warn!(pod_uid = %uid, %error, "a slow pod's inspection failed; retrying on the next relist");
                self.store(&uid, Err(error), started);
                self.reinspect.insert(uid);
            }
        }
    }
}
