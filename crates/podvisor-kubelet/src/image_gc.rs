//! The image garbage collector actor (kind `image-gc`; the kubelet's image GC manager):
//! every period it lists the runtime's images and containers, notes when each image was
//! first seen and last used (`podvisor_eviction::image_gc::Images`), removes images unused
//! for longer than `imageMaximumGCAge`, and, when the images' filesystem is used at or
//! above `imageGCHighThresholdPercent`, removes the least recently used unused images until
//! it is down to `imageGCLowThresholdPercent` (a Warning `FreeDiskSpaceFailed` on the Node
//! when that is not enough). Never an image a container uses (in any state), a pinned one
//! (the sandbox image) or one seen for less than `imageMinimumGCAge`. Each removal is a
//! Normal `ImageRemoved` event on the Node (the kubelet only logs it). The eviction
//! manager asks it to remove every unused image under disk pressure (`DeleteUnusedImages`).
//!
//! Restart: what it knew is rebuilt from the next listing; every image is then first seen
//! at that moment, so none goes before the minimum age.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{Recipient, StartInfo, SupervisedActor};
use podvisor_core::EventType;
use podvisor_cri::{CriError, Image, Runtime};
use podvisor_eviction::image_gc::{Images, Listed, Policy};
use serde::Serialize;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::protocol::eviction::{DeleteUnusedImages, NodeEvent};

#[derive(Debug, Clone)]
pub struct ImageGcConfig {
    pub policy: Policy,
    /// How often it looks (the kubelet's 5 minutes).
    pub period: Duration,
}

pub struct ImageGc {
    runtime: Arc<dyn Runtime>,
    config: ImageGcConfig,
    events: Option<Recipient<NodeEvent>>,
    images: Images,
    removed: u64,
    freed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageGcSummary {
    pub images: usize,
    pub removed: u64,
    pub freed_bytes: u64,
}

/// What one listing saw.
struct Seen {
    listed: Vec<Listed>,
    in_use: HashSet<String>,
    /// The images' filesystem: (capacity, available).
    fs: Option<(u64, u64)>,
}

async fn look(runtime: &dyn Runtime) -> Result<Seen, CriError> {
    let (images, used) = tokio::try_join!(runtime.list_images(), runtime.images_in_use())?;
    let refs: HashSet<&str> = used.iter().map(String::as_str).collect();
    let used = |i: &Image| {
        refs.contains(i.id.as_str())
            || i.repo_tags
                .iter()
                .chain(&i.repo_digests)
                .any(|r| refs.contains(r.as_str()))
    };
    let in_use = images
        .iter()
        .filter(|i| used(i))
        .map(|i| i.id.clone())
        .collect();
    let listed = images
        .iter()
        .map(|i| Listed {
            id: i.id.clone(),
            size: i.size,
            pinned: i.pinned,
        })
        .collect();
    let fs = match runtime.image_fs().await {
        Ok(all) => all.first().and_then(|f| {
            let at = podvisor_core::time::now();
            let s = crate::stats::disk::filesystem(Path::new(&f.mountpoint), &at)?;
            Some((s.capacity_bytes?, s.available_bytes?))
        }),
        Err(_) => None,
    };
    Ok(Seen { listed, in_use, fs })
}

/// What one collection removes, and what it had to free when above the high threshold.
struct Chosen {
    remove: Vec<(String, u64)>,
    /// (bytes to free, the filesystem's use in percent).
    over: Option<(u64, u64)>,
}

/// Removes `which` in order: the bytes freed and the ids removed.
async fn remove(runtime: &dyn Runtime, which: Vec<(String, u64)>) -> (u64, Vec<String>) {
    let (mut freed, mut gone) = (0, Vec::new());
    for (id, size) in which {
        match runtime.remove_image(&id).await {
            Ok(()) => {
                info!(image = %id, size, "removed an unused image");
                freed += size;
                gone.push(id);
            }
            Err(e) => warn!(image = %id, error = %e, "cannot remove an unused image"),
        }
    }
    (freed, gone)
}

impl ImageGc {
    pub fn new(
        runtime: Arc<dyn Runtime>,
        config: ImageGcConfig,
        events: Option<Recipient<NodeEvent>>,
    ) -> Self {
        Self {
            runtime,
            config,
            events,
            images: Images::default(),
            removed: 0,
            freed: 0,
        }
    }

    /// What to remove now: the too old, then what the threshold asks (everything unused
    /// when `all`).
    fn choose(&mut self, seen: &Seen, all: bool) -> Chosen {
        let now = Instant::now();
        self.images.detect(&seen.listed, &seen.in_use, now);
        let policy = self.config.policy;
        let mut out = self.images.too_old(&seen.in_use, now, &policy);
        let need = match all {
            true => Some(u64::MAX),
            false => seen.fs.and_then(|(c, a)| policy.to_free(c, a)),
        };
        if let Some(bytes) = need {
            for pick in self
                .images
                .to_free(bytes, &seen.in_use, now, policy.min_age)
            {
                if !out.contains(&pick) {
                    out.push(pick);
                }
            }
        }
        let over = need
            .filter(|_| !all)
            .zip(seen.fs.map(|(c, a)| 100 - a.min(c) * 100 / c.max(1)));
        Chosen { remove: out, over }
    }

    fn collect(&mut self, all: bool) -> impl ActorFuture<Self, Output = u64> + 'static {
        let runtime = self.runtime.clone();
        async move { look(&*runtime).await }
            .into_actor(self)
            .then(move |seen, act, _| {
                let runtime = act.runtime.clone();
                let chosen = match &seen {
                    Ok(seen) => act.choose(seen, all),
                    Err(e) => {
                        warn!(error = %e, "image garbage collection cannot list the runtime");
                        Chosen {
                            remove: Vec::new(),
                            over: None,
                        }
                    }
                };
                let over = chosen.over;
                async move { (remove(&*runtime, chosen.remove).await, over) }.into_actor(act)
            })
            .map(|((freed, gone), short), act, _| {
                act.removed_now(freed, gone, short);
                freed
            })
    }

    fn removed_now(&mut self, freed: u64, gone: Vec<String>, short: Option<(u64, u64)>) {
        self.freed += freed;
        self.removed += gone.len() as u64;
        for id in gone {
            self.event(
                EventType::Normal,
                "ImageRemoved",
                format!("Removed unused image {id} (image garbage collection)"),
            );
            self.images.forget(&id);
        }
        if let Some((wanted, used_percent)) = short.filter(|(wanted, _)| freed < *wanted) {
            self.event(
                EventType::Warning,
                "FreeDiskSpaceFailed",
                format!(
                    "Insufficient free disk space on the node's image filesystem ({used_percent}% used). \
                     Failed to free sufficient space by deleting unused images (freed {freed} bytes of {wanted})."
                ),
            );
        }
    }

    fn event(&self, kind: EventType, reason: &'static str, message: String) {
        if let Some(events) = &self.events {
            events.do_send(NodeEvent {
                kind,
                reason,
                message,
            });
        }
    }
}

impl Handler<DeleteUnusedImages> for ImageGc {
    type Result = AtomicResponse<Self, u64>;

    fn handle(&mut self, _: DeleteUnusedImages, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(Box::pin(self.collect(true)))
    }
}

impl Actor for ImageGc {
    type Context = Context<Self>;
}

impl SupervisedActor for ImageGc {
    const KIND: &'static str = "image-gc";
    type Summary = ImageGcSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, _: &StartInfo<Self>) {
        ctx.wait(self.collect(false).map(|_, _, _| ()));
        ctx.run_interval(self.config.period, |act, ctx| {
            ctx.wait(act.collect(false).map(|_, _, _| ()));
        });
    }

    fn summary(&self) -> ImageGcSummary {
        ImageGcSummary {
            images: self.images.len(),
            removed: self.removed,
            freed_bytes: self.freed,
        }
    }
}
