//! The top of the tree. Nothing supervises the root supervisor: when it escalates (or
//! fails in any way), the process cannot help itself, so the default is to log the reason
//! and exit non-zero for the service manager to restart podvisor, which then adopts the
//! pods that kept running.

use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::error;

use super::{ChildSpec, Supervisor, SupervisorConfig};
use crate::mailbox::ActorRef;
use crate::pump::ExitReason;
use crate::registry::Registry;

/// Why the root gave up.
#[derive(Debug, Clone)]
pub struct Escalation {
    pub reason: ExitReason,
}

impl Escalation {
    /// The default handler: one log line, then exit code 70 (EX_SOFTWARE).
    pub fn exit_process(self) {
        error!(reason = ?self.reason, "root supervisor gave up; exiting for the service manager to restart podvisor");
        eprintln!("podvisor: root supervisor gave up: {:?}", self.reason);
        std::process::exit(70);
    }
}

/// Starts the root supervisor `supervisor/<name>` on the current arbiter. `on_escalate`
/// runs if it ever stops other than by a clean shutdown.
pub fn start_root(
    name: &str,
    config: SupervisorConfig,
    registry: Arc<Registry>,
    children: Vec<ChildSpec>,
    on_escalate: impl FnOnce(Escalation) + 'static,
) -> ActorRef<Supervisor> {
    crate::panic_capture::install();
    let (me, spec) = Supervisor::spec(name, config, registry.clone(), children);
    registry.register(spec.cell.probe(), None);
    let (tx, mut rx) = mpsc::unbounded_channel();
    spec.cell.spawn(1, Some(tx), &actix::Arbiter::current());
    actix::spawn(async move {
        if let Some(exit) = rx.recv().await {
            registry.deregister(&exit.id);
            if exit.reason.is_failure() {
                on_escalate(Escalation {
                    reason: exit.reason,
                });
            }
        }
    });
    me
}
