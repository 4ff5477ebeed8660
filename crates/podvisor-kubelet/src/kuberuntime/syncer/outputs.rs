//! What the syncer tells others: the status manager its report, the recorder its events,
//! the metrics its container starts.

use std::collections::HashMap;

use podvisor_core::SharedPod;

use super::CriSyncer;
use crate::protocol::cache::ContainerId;
use crate::protocol::status::{EventType, PodSynced, RecordEvent, Waiting};
use crate::protocol::sync::SyncError;

impl CriSyncer {
    /// A start attempt (not one skipped while backing off), and its error's reason.
    pub(super) fn count_start(
        &self,
        init: bool,
        started: &Result<Option<ContainerId>, SyncError>,
        reason: Option<&str>,
    ) {
        let kind = if init { "init_container" } else { "container" };
        match started {
            Ok(None) => {}
            Ok(Some(_)) => self
                .metrics
                .started_containers
                .with_label_values(&[kind])
                .inc(),
            Err(_) => {
                self.metrics
                    .started_containers
                    .with_label_values(&[kind])
                    .inc();
                let code = reason.unwrap_or("CreateContainerError");
                self.metrics
                    .started_container_errors
                    .with_label_values(&[kind, code])
                    .inc();
            }
        }
    }

    pub(super) fn event(
        &self,
        pod: &SharedPod,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        self.out.events.do_send(RecordEvent {
            pod: pod.clone(),
            kind,
            reason,
            message,
        });
    }

    pub(super) fn report(&self, pod: &SharedPod, waiting: HashMap<String, Waiting>) {
        self.report_resized(pod, waiting, None);
    }

    pub(super) fn report_resized(
        &self,
        pod: &SharedPod,
        waiting: HashMap<String, Waiting>,
        resize_error: Option<String>,
    ) {
        self.out.synced.do_send(PodSynced {
            pod: pod.clone(),
            waiting,
            resize_error,
        });
    }
}
