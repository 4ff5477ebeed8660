//! What others ask of the status manager: the pods that finished, every status published
//! again.

use std::collections::HashMap;

use actix::prelude::*;

use super::StatusManager;
use crate::protocol::status::{FinishedPods, RepublishStatuses};

impl Handler<RepublishStatuses> for StatusManager {
    type Result = ();
    fn handle(&mut self, _: RepublishStatuses, _: &mut Context<Self>) {
        for uid in self.records.keys() {
            let terminated = self.inputs.get(uid).is_some_and(|i| i.terminated);
            self.publish(uid, terminated);
        }
    }
}

impl Handler<FinishedPods> for StatusManager {
    type Result = MessageResult<FinishedPods>;
    fn handle(&mut self, _: FinishedPods, _: &mut Context<Self>) -> Self::Result {
        let phases = self
            .records
            .iter()
            .filter_map(|(uid, r)| {
                let phase = r.phase()?;
                phase.is_terminal().then(|| (uid.clone(), phase))
            })
            .collect::<HashMap<_, _>>();
        MessageResult(phases)
    }
}
