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
    pub terminated: bool,
    pub status_fns: Vec<StatusFn>,
}

impl Inputs {
    pub(crate) fn new(pod: SharedPod) -> Self {
        Self {
            pod,
            waiting: HashMap::new(),
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
        stamp_host(&self.pod, &mut status, host_ip);
        for f in &self.status_fns {
            f(&mut status);
        }
        status
    }
}
