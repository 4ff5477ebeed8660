//! What a pod's API status is computed from: the pod, its runtime status (from the status
//! cache, which the status manager follows), why its syncs left containers waiting, and,
//! once it terminated, the adjustments its kills asked for.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::PodStatus as ApiPodStatus;
use podvisor_core::SharedPod;
use podvisor_cri::PodStatus;

use crate::api_status::probes::ProbeView;
use crate::api_status::{api_status, stamp_host};
use crate::protocol::status::Waiting;
use crate::protocol::updates::StatusFn;

pub(crate) struct Inputs {
    pub pod: SharedPod,
    pub waiting: HashMap<String, Waiting>,
    /// Why the last sync could not resize the pod in place.
    pub resize_error: Option<String>,
    pub terminated: bool,
    pub status_fns: Vec<StatusFn>,
}

impl Inputs {
    pub(crate) fn new(pod: SharedPod) -> Self {
        Self {
            pod,
            waiting: HashMap::new(),
            resize_error: None,
            terminated: false,
            status_fns: Vec::new(),
        }
    }

    /// The API status as `runtime` (nothing in the runtime if `None`) and the probes
    /// (`view`) show the pod, on the node at `host_ip`.
    pub(crate) fn status(
        &self,
        runtime: Option<&PodStatus>,
        view: ProbeView<'_>,
        host_ip: Option<&str>,
    ) -> ApiPodStatus {
        let empty = PodStatus::default();
        let rt = runtime.unwrap_or(&empty);
        let mut status = api_status(&self.pod, rt, &self.waiting, self.terminated, view);
        if let Some(error) = &self.resize_error {
            resize_failed(&mut status, error);
        }
        stamp_host(&self.pod, &mut status, host_ip);
        for f in &self.status_fns {
            f(&mut status);
        }
        status
    }
}

/// A resize still in progress that the last sync could not carry out says why (the
/// kubelet's `Error` reason).
fn resize_failed(status: &mut ApiPodStatus, error: &str) {
    let conditions = status.conditions.iter_mut().flatten();
    for c in conditions.filter(|c| c.type_ == "PodResizeInProgress") {
        c.reason = Some("Error".into());
        c.message = Some(error.to_string());
    }
}
