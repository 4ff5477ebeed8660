//! How a supervisor handles its children's exits and its own messages (start a dynamic
//! child, stop one, shut the tree down), and what it does when it goes away.

use super::*;

impl StreamHandler<ChildExit> for Supervisor {
    fn handle(&mut self, exit: ChildExit, ctx: &mut Context<Self>) {
        let Some(slot) = self.slots.get_mut(&exit.id) else {
            return;
        };
        if slot.instance != exit.instance {
            return; // a predecessor's late report
        }
        match slot.state {
            SlotState::StoppingForGood => {
                let dynamic = slot.dynamic;
                self.remove(&exit.id);
                if let Some(spec) = self.successors.remove(&exit.id) {
                    self.add_child(spec, dynamic);
                }
            }
            SlotState::StoppingForRestart { due } => {
                slot.state = SlotState::Waiting { due };
                slot.spec.cell.set_lifecycle(Lifecycle::Restarting);
                self.start_due();
            }
            SlotState::Running => self.on_unexpected_exit(&exit.id, exit.reason, ctx),
            SlotState::Waiting { .. } => {}
        }
        // Exits arrive on a stream, not through the mailbox whose pump publishes the
        // summary after each message: publish it here, so the debug view is current.
        if let Some(me) = &self.me {
            me.annotate(self.summary());
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        // The supervisor holds a sender itself, so the stream never ends while it lives.
    }
}

impl Handler<StartChild> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: StartChild, _ctx: &mut Context<Self>) {
        if !self.escalated {
            self.add_child(msg.0, true);
        }
    }
}

impl Handler<StopChild> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: StopChild, _ctx: &mut Context<Self>) {
        let Some(slot) = self.slots.get_mut(&msg.0) else {
            return;
        };
        match slot.state {
            SlotState::Running | SlotState::StoppingForRestart { .. } => {
                slot.spec.cell.stop();
                slot.state = SlotState::StoppingForGood;
            }
            SlotState::Waiting { .. } => self.remove(&msg.0),
            // Already going; a successor waiting for it is what this stop is for.
            SlotState::StoppingForGood => {
                if let Some(spec) = self.successors.remove(&msg.0) {
                    spec.cell.close();
                }
            }
        }
    }
}

impl Handler<Shutdown> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        info!(supervisor = %self.name, "shutting down");
        self.escalated = true;
        for slot in self.slots.values_mut() {
            if slot.state == SlotState::Running {
                slot.spec.cell.stop();
            }
            slot.state = SlotState::StoppingForGood;
        }
        ctx.stop();
    }
}

impl Drop for Supervisor {
    /// Whether it crashed, escalated or was stopped, a supervisor's children go with it.
    /// After a crash its successor starts the static children again on the same
    /// mailboxes, so those stay open (queued messages wait for the new instances); a clean
    /// stop or an escalation closes them all, so senders learn the actors are gone.
    /// Dynamic children belonged to this instance alone and are always closed.
    fn drop(&mut self) {
        let crashed = std::thread::panicking();
        for (id, slot) in &self.slots {
            slot.spec.cell.stop();
            if slot.dynamic || !crashed {
                slot.spec.cell.close();
                self.registry.deregister(id);
            } else {
                self.registry.deregister_for_restart(id);
            }
        }
        for spec in self.successors.values() {
            spec.cell.close();
        }
    }
}
