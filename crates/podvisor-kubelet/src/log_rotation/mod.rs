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

pub struct LogRotation {
    runtime: Arc<dyn Runtime>,
    node: NodeConfig,
    config: LogRotationConfig,
    totals: RotationReport,
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
        }
    }

    /// This node's containers and where their logs are.
    async fn live(runtime: Arc<dyn Runtime>, node: NodeConfig) -> Vec<Live> {
        let Ok(pods) = runtime.list_pods().await else {
            return Vec::new();
        };
        pods.iter()
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
            .collect()
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

    /// Makes the node's container log links match `live` (when the node keeps them).
    async fn link(node: &NodeConfig, live: &[Live], report: &mut RotationReport) {
        let Some(dir) = node.container_links_dir.clone() else {
            return;
        };
        let wanted = live
            .iter()
            .map(|c| (c.link.clone(), c.path.clone()))
            .collect();
        let pods = node.pod_log_dir.clone();
        match tokio::task::spawn_blocking(move || links::sweep(&dir, &pods, &wanted)).await {
            Ok(Ok(swept)) => {
                report.linked += swept.made;
                report.unlinked += swept.removed;
            }
            Ok(Err(e)) => warn!(error = %e, "cannot keep the container log links"),
            Err(_) => {}
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
        let (tx, rx) = tokio::sync::oneshot::channel();
        let work = async move {
            let live = Self::live(runtime.clone(), node.clone()).await;
            let mut report = RotationReport {
                checked: live.iter().filter(|c| c.running).count(),
                ..Default::default()
            };
            Self::link(&node, &live, &mut report).await;
            for c in Self::full(live, cfg.max_size).await {
                Self::rotate_one(runtime.as_ref(), c, cfg, &mut report).await;
            }
            report
        }
        .into_actor(self)
        .map(|report, act, _| {
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
