//! The manifest directory source actor: static pods from YAML and JSON files in one
//! directory, watched with inotify and rescanned in full every period as a safety net.
//! Every scan sends the sync loop a complete snapshot (level-driven: the sync loop works
//! out what changed, and a restarted sync loop has everything again within a period). A
//! file that cannot be used is logged once per distinct reason, reported through
//! `GetManifestErrors`, and never stops the other files' pods; if it gave pods before (an
//! edit with a typo), those keep running until it is fixed or removed.
//!
//! Scans start on the inotify events that mean a file is complete or gone, at once (no
//! debounce: a pod's start waits for it); events during a scan coalesce into one more.
//!
//! Restart: the directory is the truth; the previous good versions of broken files are
//! recovered from the sync loop's desired pods before the first scan.

pub mod parse;
mod stamp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::prelude::*;
use inotify::{Inotify, WatchMask};
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use serde::Serialize;
use tracing::{info, warn};

use crate::protocol::manifests::{GetManifestErrors, ManifestError};
use crate::protocol::sources::{GetDesiredPods, Rescan, SourcePods};

/// The name of this source in the sync loop.
pub const SOURCE: &str = "file";

pub struct ManifestSource {
    dir: PathBuf,
    node: String,
    period: Duration,
    sink: Recipient<SourcePods>,
    /// Where a restarted source learns what its files gave before (the sync loop).
    desired: Option<Recipient<GetDesiredPods>>,
    errors: BTreeMap<PathBuf, String>,
    /// What each file gave at the last scan (see [`parse::LastGood`]).
    last_good: parse::LastGood,
    /// One scan at a time, so snapshots reach the sync loop in the order they were read.
    scanning: bool,
    /// Something changed while a scan ran: scan once more when it ends. This is the
    /// coalescing: a burst of file events costs one scan now and at most one after it.
    again: bool,
    pods: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestSourceSummary {
    pub dir: String,
    pub pods: usize,
    pub bad_files: usize,
}

impl ManifestSource {
    pub fn new(
        dir: PathBuf,
        node: String,
        period: Duration,
        sink: Recipient<SourcePods>,
        desired: Option<Recipient<GetDesiredPods>>,
    ) -> Self {
        Self {
            dir,
            node,
            period,
            sink,
            desired,
            errors: BTreeMap::new(),
            last_good: parse::LastGood::new(),
            scanning: false,
            again: false,
            pods: 0,
        }
    }

    fn request_scan(&mut self, ctx: &mut Context<Self>) {
        if self.scanning {
            self.again = true;
        } else {
            self.scan(ctx);
        }
    }

    /// Spawned, not awaited with `ctx.wait`: file events keep arriving during a scan and
    /// must only mark it to be repeated, not queue one scan each behind it.
    fn scan(&mut self, ctx: &mut Context<Self>) {
        self.scanning = true;
        let (dir, node, last) = (self.dir.clone(), self.node.clone(), self.last_good.clone());
        ctx.spawn(
            async move {
                tokio::task::spawn_blocking(move || parse::scan_keeping(&dir, &node, &last))
                    .await
                    .ok()
            }
            .into_actor(self)
            .map(|scan, act, ctx| {
                act.scanning = false;
                match scan {
                    Some(scan) => act.publish(scan),
                    None => warn!(dir = %act.dir.display(), "the manifest scan panicked; the next one retries"),
                }
                if std::mem::take(&mut act.again) {
                    act.scan(ctx);
                }
                podvisor_actors::publish_now(ctx);
            }),
        );
    }

    fn publish(&mut self, scan: parse::Scan) {
        let errors: BTreeMap<PathBuf, String> = scan.errors.into_iter().collect();
        for (path, why) in &errors {
            if self.errors.get(path) != Some(why) {
                warn!(path = %path.display(), reason = %why, "manifest not used");
            }
        }
        for path in self.errors.keys().filter(|p| !errors.contains_key(*p)) {
            info!(path = %path.display(), "manifest problem resolved");
        }
        self.errors = errors;
        self.last_good = scan.good;
        if scan.unreadable {
            // No snapshot: the sync loop keeps what it has (or, at start-up, waits and
            // kills nothing) until the directory can be read again.
            return;
        }
        self.pods = scan.pods.len();
        if let Err(e) = self.sink.try_send(SourcePods {
            source: SOURCE,
            pods: scan.pods,
        }) {
            warn!(error = ?e, "sync loop refused the manifest snapshot; the next scan resends it");
        }
    }

    fn watch(&mut self, ctx: &mut Context<Self>) -> std::io::Result<()> {
        let inotify = Inotify::init()?;
        inotify.watches().add(
            &self.dir,
            // The events that mean a file is complete or gone. A file being written sends
            // CLOSE_WRITE when done, so CREATE and MODIFY would only read it half-written.
            WatchMask::CLOSE_WRITE
                | WatchMask::MOVED_TO
                | WatchMask::MOVED_FROM
                | WatchMask::DELETE,
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
        ctx.run_interval(self.period, |act, ctx| act.request_scan(ctx));
        // Remember what the files gave before a restart (nothing at the agent's start),
        // then scan: a file that broke meanwhile keeps its pods.
        let desired = self.desired.clone();
        ctx.wait(
            async move {
                let desired = desired?;
                tokio::time::timeout(Duration::from_secs(5), desired.send(GetDesiredPods))
                    .await
                    .ok()?
                    .ok()
            }
            .into_actor(self)
            .map(|desired, act, ctx| {
                if let Some(d) = desired {
                    act.last_good = parse::last_good_from(&d.pods);
                }
                act.scan(ctx);
            }),
        );
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
        event: std::io::Result<inotify::Event<std::ffi::OsString>>,
        ctx: &mut Context<Self>,
    ) {
        // Temporary and hidden files (an editor's swap file, a `.x.yaml.tmp` about to be
        // renamed) are not manifests; their events need no scan.
        let relevant = match &event {
            Ok(e) => e
                .name
                .as_deref()
                .is_none_or(|n| parse::is_manifest_name(Path::new(n))),
            Err(_) => true,
        };
        if relevant {
            self.request_scan(ctx);
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        warn!(dir = %self.dir.display(), "stopped watching the manifest directory; rescanning every period only");
    }
}

impl Handler<Rescan> for ManifestSource {
    type Result = ();
    fn handle(&mut self, _: Rescan, ctx: &mut Context<Self>) {
        self.request_scan(ctx);
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
