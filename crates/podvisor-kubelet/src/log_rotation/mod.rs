//! The log rotation actor (the kubelet's container log manager): every `monitor_interval`
//! it lists the runtime's containers and, for each running container of this node whose
//! log has grown past `max_size`, renames the log aside, has the runtime reopen it (CRI
//! ReopenContainerLog) and keeps only the newest `max_files - 1` rotated files beside the
//! live one, so a chatty container can fill neither the disk nor the memory of whoever
//! reads its log. A runtime that cannot reopen gets the file back. Each check also makes
//! the node's `/var/log/containers` links match the containers the runtime holds
//! (`links.rs`). Nothing is kept between checks: a restarted actor just checks again.

pub(crate) mod links;
mod rotate;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_cri::{ContainerState, Runtime};
use serde::Serialize;
use tracing::{info, warn};

use crate::kuberuntime::config::NodeConfig;

// ---- messages ------------------------------------------------------------------------------

/// Checks every running container's log now (the timer's tick; tests send it).
#[derive(Message)]
#[rtype(result = "RotationReport")]
pub struct CheckLogs;

/// What one check did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RotationReport {
    pub checked: usize,
    pub rotated: usize,
    pub removed: usize,
    pub failed: usize,
    /// `/var/log/containers` links made and removed.
    pub linked: usize,
    pub unlinked: usize,
}

/// Removes the rotated files of a container instance's log (the instance is gone).
pub(crate) fn remove_rotated(log: &std::path::Path) {
    for p in rotate::rotated(log) {
        let _ = std::fs::remove_file(p);
    }
}

// ---- the actor -----------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
pub struct LogRotationConfig {
    /// The size past which a container's log is rotated (the kubelet's
    /// `containerLogMaxSize`, 10 MiB).
    pub max_size: u64,
    /// How many log files a container keeps, the live one included (the kubelet's
    /// `containerLogMaxFiles`, 5).
    pub max_files: usize,
    /// How often the logs are checked (the kubelet's `containerLogMonitorInterval`, 10 s).
    pub monitor_interval: Duration,
}

impl Default for LogRotationConfig {
    fn default() -> Self {
        Self {
            max_size: 10 << 20,
            max_files: 5,
            monitor_interval: Duration::from_secs(10),
        }
    }
}

/// Every how many checks the links directory is read whole, the links of other agents
/// with it (a minute at the default interval: the kubelet's container GC period, when it
/// removes dead links); the checks between only follow what this node wants linked.
const SWEEP_LINKS_EVERY: u64 = 6;

/// A link's name → the log it points at.
type Links = std::collections::BTreeMap<String, PathBuf>;

pub struct LogRotation {
    runtime: Arc<dyn Runtime>,
    node: NodeConfig,
    config: LogRotationConfig,
    totals: RotationReport,
    /// Checks begun by this instance.
    checks: u64,
    /// The links the last check left, when it could (the next one only follows changes).
    linked: Option<Links>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogRotationSummary {
    pub max_size: u64,
    pub max_files: usize,
    /// Since this instance started.
    pub totals: RotationReport,
}

/// One container's log to look at.
struct Live {
    id: String,
    path: PathBuf,
    running: bool,
    /// Its `/var/log/containers` link's name.
    link: String,
}

impl LogRotation {
    pub fn new(runtime: Arc<dyn Runtime>, node: NodeConfig, config: LogRotationConfig) -> Self {
        Self {
            runtime,
            node,
            config,
            totals: RotationReport::default(),
            checks: 0,
            linked: None,
        }
    }

    /// This node's containers and where their logs are; `None` if the runtime cannot be
    /// listed (no link is then taken for gone).
    async fn live(runtime: Arc<dyn Runtime>, node: NodeConfig) -> Option<Vec<Live>> {
        let pods = runtime.list_pods().await.ok()?;
        let live = pods
            .iter()
            .filter(|p| podvisor_cri::labels::owned_by(p, &node.node_name))
            .flat_map(|p| {
                let dir = node
                    .pod_log_dir
                    .join(format!("{}_{}_{}", p.pod.namespace, p.pod.name, p.pod.uid));
                p.containers.iter().map(move |c| Live {
                    id: c.id.clone(),
                    path: dir.join(&c.name).join(format!("{}.log", c.attempt)),
                    running: c.state == ContainerState::Running,
                    link: links::name(&p.pod.name, &p.pod.namespace, &c.name, &c.id),
                })
            })
            .collect();
        Some(live)
    }

    /// The logs among `live` that have grown past `max_size`, in one blocking call: one
    /// hand-off to the blocking pool per container was 50 thread wake-ups a second at 500
    /// pods, for a size each.
    async fn full(live: Vec<Live>, max_size: u64) -> Vec<Live> {
        tokio::task::spawn_blocking(move || {
            live.into_iter()
                .filter(|c| c.running && rotate::too_big(&c.path, max_size))
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Makes the node's container log links match `live` (when the node keeps them): from
    /// what the last check left (`before`) or, without it, by a sweep of the directory.
    /// What is linked now, if that worked.
    async fn link(
        node: &NodeConfig,
        live: &[Live],
        before: Option<Links>,
        report: &mut RotationReport,
    ) -> Option<Links> {
        let dir = node.container_links_dir.clone()?;
        let wanted: Links = live
            .iter()
            .map(|c| (c.link.clone(), c.path.clone()))
            .collect();
        let pods = node.pod_log_dir.clone();
        let made = tokio::task::spawn_blocking(move || {
            match &before {
                Some(before) => links::update(&dir, before, &wanted),
                None => links::sweep(&dir, &pods, &wanted, true),
            }
            .map(|swept| (swept, wanted))
        });
        match made.await {
            Ok(Ok((swept, wanted))) => {
                report.linked += swept.made;
                report.unlinked += swept.removed;
                Some(wanted)
            }
            Ok(Err(e)) => {
                warn!(error = %e, "cannot keep the container log links");
                None
            }
            Err(_) => None,
        }
    }

    /// Rotates one full log (if it still is); adds what happened to `report`.
    async fn rotate_one(
        runtime: &dyn Runtime,
        c: Live,
        cfg: LogRotationConfig,
        report: &mut RotationReport,
    ) {
        let path = c.path.clone();
        let keep = cfg.max_files.saturating_sub(2);
        let stamp = rotate::stamp(podvisor_core::time::now_unix_ms() as i64 / 1000);
        let aside = tokio::task::spawn_blocking(move || {
            if !rotate::too_big(&path, cfg.max_size) {
                return Ok(None);
            }
            // Room for the one about to be made: max_files - 1 rotated, then the live one.
            let removed = rotate::prune(&path, keep)?;
            rotate::rename_aside(&path, &stamp).map(|to| Some((to, removed)))
        })
        .await;
        let (to, removed) = match aside {
            Ok(Ok(Some(done))) => done,
            Ok(Ok(None)) => return,
            Ok(Err(e)) => {
                warn!(container_id = %c.id, path = %c.path.display(), error = %e, "cannot rotate a container's log");
                report.failed += 1;
                return;
            }
            Err(_) => return,
        };
        report.removed += removed;
        match runtime.reopen_container_log(&c.id).await {
            Ok(()) => {
                info!(container_id = %c.id, rotated_to = %to.display(), "rotated a container's log");
                report.rotated += 1;
            }
            Err(error) => {
                warn!(container_id = %c.id, %error, "the runtime did not reopen the log; putting it back");
                let _ = rotate::undo(&c.path, &to);
                report.failed += 1;
            }
        }
    }

    fn check(&mut self, ctx: &mut Context<Self>) -> impl Future<Output = RotationReport> + use<> {
        let (runtime, node, cfg) = (self.runtime.clone(), self.node.clone(), self.config);
        let sweep = self.checks.is_multiple_of(SWEEP_LINKS_EVERY);
        let before = if sweep { None } else { self.linked.take() };
        self.checks += 1;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let work = async move {
            let mut report = RotationReport::default();
            let Some(live) = Self::live(runtime.clone(), node.clone()).await else {
                return (report, before);
            };
            report.checked = live.iter().filter(|c| c.running).count();
            let linked = Self::link(&node, &live, before, &mut report).await;
            for c in Self::full(live, cfg.max_size).await {
                Self::rotate_one(runtime.as_ref(), c, cfg, &mut report).await;
            }
            (report, linked)
        }
        .into_actor(self)
        .map(|(report, linked), act, _| {
            act.linked = linked;
            act.totals.checked += report.checked;
            act.totals.rotated += report.rotated;
            act.totals.removed += report.removed;
            act.totals.failed += report.failed;
            act.totals.linked += report.linked;
            act.totals.unlinked += report.unlinked;
            let _ = tx.send(report);
        });
        ctx.wait(work);
        async move { rx.await.unwrap_or_default() }
    }
}

impl Actor for LogRotation {
    type Context = Context<Self>;
}

impl SupervisedActor for LogRotation {
    const KIND: &'static str = "log-rotation";
    type Summary = LogRotationSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        ctx.run_interval(self.config.monitor_interval, |act, ctx| {
            drop(act.check(ctx));
        });
    }

    fn summary(&self) -> LogRotationSummary {
        LogRotationSummary {
            max_size: self.config.max_size,
            max_files: self.config.max_files,
            totals: self.totals.clone(),
        }
    }
}

impl Handler<CheckLogs> for LogRotation {
    type Result = ResponseFuture<RotationReport>;

    fn handle(&mut self, _: CheckLogs, ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.check(ctx))
    }
}
