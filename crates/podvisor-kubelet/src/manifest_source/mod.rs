//! The manifest directory source actor: static pods from YAML and JSON files in one
//! directory, watched with inotify and rescanned in full every period as a safety net.
//! Every scan sends the sync loop a complete snapshot (level-driven: the sync loop works
//! out what changed, and a restarted sync loop has everything again within a period). A
//! file that cannot be used is logged once per distinct reason, reported through
//! `GetManifestErrors`, and never stops the other files' pods.

pub mod parse;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;
use inotify::{Inotify, WatchMask};
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::sync_loop::SourcePods;

/// The name of this source in the sync loop.
pub const SOURCE: &str = "file";

// ---- messages ------------------------------------------------------------------------------

/// Scan the directory now (also what a file change triggers).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Rescan;

/// The manifests that could not be used, and why.
#[derive(Message)]
#[rtype(result = "Vec<ManifestError>")]
pub struct GetManifestErrors;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestError {
    pub path: String,
    pub reason: String,
}

// ---- actor ---------------------------------------------------------------------------------

/// File events often come in bursts (an editor writes, renames, chmods): one scan after
/// the burst is enough.
const DEBOUNCE: Duration = Duration::from_millis(50);

pub struct ManifestSource {
    dir: PathBuf,
    node: String,
    period: Duration,
    sink: Recipient<SourcePods>,
    errors: BTreeMap<PathBuf, String>,
    scan_pending: bool,
    pods: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestSourceSummary {
    pub dir: String,
    pub pods: usize,
    pub bad_files: usize,
}

impl ManifestSource {
    pub fn new(dir: PathBuf, node: String, period: Duration, sink: Recipient<SourcePods>) -> Self {
        Self {
            dir,
            node,
            period,
            sink,
            errors: BTreeMap::new(),
            scan_pending: false,
            pods: 0,
        }
    }

    fn schedule_scan(&mut self, ctx: &mut Context<Self>, after: Duration) {
        if self.scan_pending {
            return;
        }
        self.scan_pending = true;
        ctx.run_later(after, |act, ctx| act.scan(ctx));
    }

    fn scan(&mut self, ctx: &mut Context<Self>) {
        let (dir, node) = (self.dir.clone(), self.node.clone());
        ctx.wait(
            async move {
                tokio::task::spawn_blocking(move || parse::scan(&dir, &node))
                    .await
                    .unwrap_or_default()
            }
            .into_actor(self)
            .map(|scan, act, _| {
                act.scan_pending = false;
                let errors: BTreeMap<PathBuf, String> = scan.errors.into_iter().collect();
                for (path, why) in &errors {
                    if act.errors.get(path) != Some(why) {
                        warn!(path = %path.display(), reason = %why, "manifest not used");
                    }
                }
                for path in act.errors.keys().filter(|p| !errors.contains_key(*p)) {
                    info!(path = %path.display(), "manifest problem resolved");
                }
                act.errors = errors;
                act.pods = scan.pods.len();
                if let Err(e) = act.sink.try_send(SourcePods {
                    source: SOURCE.into(),
                    pods: scan.pods,
                }) {
                    warn!(error = ?e, "sync loop refused the manifest snapshot; the next scan resends it");
                }
            }),
        );
    }

    fn watch(&mut self, ctx: &mut Context<Self>) -> std::io::Result<()> {
        let inotify = Inotify::init()?;
        inotify.watches().add(
            &self.dir,
            WatchMask::CREATE
                | WatchMask::DELETE
                | WatchMask::CLOSE_WRITE
                | WatchMask::MOVED_TO
                | WatchMask::MOVED_FROM
                | WatchMask::MODIFY,
        )?;
        ctx.add_stream(inotify.into_event_stream(vec![0u8; 4096])?);
        Ok(())
    }
}

impl Actor for ManifestSource {
    type Context = Context<Self>;
}

impl SupervisedActor for ManifestSource {
    const KIND: &'static str = "manifest-source";
    type Summary = ManifestSourceSummary;

    /// Nothing to remember: the directory is the truth. Watch it and read it now.
    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            warn!(dir = %self.dir.display(), error = %e, "cannot create the manifest directory");
        }
        if let Err(e) = self.watch(ctx) {
            warn!(dir = %self.dir.display(), error = %e, period = ?self.period, "cannot watch the manifest directory; rescanning every period only");
        }
        ctx.run_interval(self.period, |act, ctx| {
            act.schedule_scan(ctx, Duration::ZERO)
        });
        self.scan(ctx);
    }

    fn summary(&self) -> ManifestSourceSummary {
        ManifestSourceSummary {
            dir: self.dir.display().to_string(),
            pods: self.pods,
            bad_files: self.errors.len(),
        }
    }
}

impl StreamHandler<std::io::Result<inotify::Event<std::ffi::OsString>>> for ManifestSource {
    fn handle(
        &mut self,
        _event: std::io::Result<inotify::Event<std::ffi::OsString>>,
        ctx: &mut Context<Self>,
    ) {
        self.schedule_scan(ctx, DEBOUNCE);
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        warn!(dir = %self.dir.display(), "stopped watching the manifest directory; rescanning every period only");
    }
}

impl Handler<Rescan> for ManifestSource {
    type Result = ();
    fn handle(&mut self, _: Rescan, ctx: &mut Context<Self>) {
        self.schedule_scan(ctx, Duration::ZERO);
    }
}

impl Handler<GetManifestErrors> for ManifestSource {
    type Result = MessageResult<GetManifestErrors>;
    fn handle(&mut self, _: GetManifestErrors, _: &mut Context<Self>) -> Self::Result {
        MessageResult(
            self.errors
                .iter()
                .map(|(p, r)| ManifestError {
                    path: p.display().to_string(),
                    reason: r.clone(),
                })
                .collect(),
        )
    }
}
