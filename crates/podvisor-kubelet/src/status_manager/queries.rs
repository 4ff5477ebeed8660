//! What others ask of the status manager: every pod's record, the terminal phases of
//! some, every status published again.

use std::collections::HashMap;

use actix::prelude::*;
use podvisor_core::PodExt;

use super::StatusManager;
use crate::protocol::status::{ListPods, PodRecord, RepublishStatuses, TerminalPhases};

impl Handler<ListPods> for StatusManager {
    type Result = MessageResult<ListPods>;
    fn handle(&mut self, _: ListPods, _: &mut Context<Self>) -> Self::Result {
        let mut pods: Vec<PodRecord> = self.records.values().cloned().collect();
        pods.sort_by_key(|r| r.pod.key());
        MessageResult(pods)
    }
}

impl Handler<RepublishStatuses> for StatusManager {
    type Result = ();
    fn handle(&mut self, _: RepublishStatuses, _: &mut Context<Self>) {
        for uid in self.records.keys() {
            let terminated = self.inputs.get(uid).is_some_and(|i| i.terminated);
            self.publish(uid, terminated);
        }
    }
}

impl Handler<TerminalPhases> for StatusManager {
    type Result = MessageResult<TerminalPhases>;
    fn handle(
        &mut self,
        TerminalPhases(uids): TerminalPhases,
        _: &mut Context<Self>,
    ) -> Self::Result {
        let phases = uids
            .into_iter()
            .filter_map(|uid| {
                let phase = self.records.get(&uid)?.pod.phase()?;
                phase.is_terminal().then_some((uid, phase))
            })
            .collect::<HashMap<_, _>>();
        MessageResult(phases)
    }
}
