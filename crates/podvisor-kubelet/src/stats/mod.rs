//! The stats actor (kind `stats`): what the node and each of its pods use, as the
//! kubelet's Summary API gives it (`/stats/summary`, and through the API
//! `metrics.k8s.io` for `kubectl top` and `podvisor top`). It samples the runtime's
//! container and sandbox stats (CRI ListContainerStats, ListPodSandboxStats), the images'
//! filesystem (ImageFsInfo), this node's pods (the listing the PLEG also makes) and the
//! node's /proc every 10 s, and its local storage once a minute (`local.rs`), but only
//! while someone asks: a question that
//! finds no recent sample takes two a second apart (a CPU rate needs two) and starts
//! the sampling, which stops a minute after the last question, so an unwatched node pays
//! nothing. A restarted actor has no samples; the next question starts again.

mod book;
pub(crate) mod disk;
mod local;
mod netdev;
mod node;
mod now;

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_core::stats::Summary;
use podvisor_cri::{CriError, Runtime};
use serde::Serialize;
use tokio::time::Instant;
use tracing::warn;

use book::{Book, Sample};
pub use local::Paths;
pub use now::NodeNow;

// ---- messages ------------------------------------------------------------------------------

/// The node's and its pods' use now (`None` until a sample could be taken).
#[derive(Message)]
#[rtype(result = "Option<Summary>")]
pub struct GetSummary;

/// One sample taken now (the pods' local storage walked too when `disk`), and the
/// summary with it: what an eviction ranks pods by. No CPU rate is waited for.
#[derive(Message)]
#[rtype(result = "Option<Summary>")]
pub struct SampleNow {
    pub disk: bool,
}

/// The node's own figures, measured now (no container's): what eviction decides on.
#[derive(Message)]
#[rtype(result = "NodeNow")]
pub struct GetNodeStats;

// ---- the actor -----------------------------------------------------------------------------

/// How often samples are taken while someone asks (the kubelet's housekeeping period).
pub const PERIOD: Duration = Duration::from_secs(10);
/// How long sampling goes on after the last question.
const WATCHED_FOR: Duration = Duration::from_secs(60);
/// Between the two samples a question takes when none is recent.
const WARM_UP: Duration = Duration::from_secs(1);
/// How often the local storage is walked (the kubelet's `volumeStatsAggPeriod`).
const DISK_PERIOD: Duration = Duration::from_secs(60);

pub struct StatsCollector {
    runtime: Arc<dyn Runtime>,
    node: String,
    paths: Paths,
    book: Book,
    disk_at: Option<Instant>,
    pids: netdev::Pids,
    last_sample: Option<Instant>,
    watched_until: Option<Instant>,
    timer: Option<SpawnHandle>,
    failures: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsSummary {
    pub sampling: bool,
    pub samples: u64,
    pub failures: u64,
}

type Sampled = Result<Sample, CriError>;

impl StatsCollector {
    pub fn new(runtime: Arc<dyn Runtime>, node: String, paths: Paths) -> Self {
        Self {
            runtime,
            node,
            paths,
            book: Book::default(),
            disk_at: None,
            pids: netdev::Pids::default(),
            last_sample: None,
            watched_until: None,
            timer: None,
            failures: 0,
        }
    }

    /// One sample of the runtime (this node's pods only) and of the node; of the local
    /// storage too when a minute has passed since it was last walked.
    fn sample(&mut self) -> impl Future<Output = Sampled> + 'static {
        let (runtime, node) = (self.runtime.clone(), self.node.clone());
        let disk_due = self.disk_at.is_none_or(|t| t.elapsed() >= DISK_PERIOD);
        if disk_due {
            self.disk_at = Some(Instant::now());
        }
        let paths = disk_due.then(|| self.paths.clone());
        let paths_now = self.paths.pods.clone();
        let pids = self.pids.clone();
        async move {
            let (usage, pods) = tokio::try_join!(runtime.container_usage(), runtime.list_pods())?;
            let pods: Vec<_> = pods
                .into_iter()
                .filter(|p| podvisor_cri::labels::owned_by(p, &node))
                .collect();
            // Read with the containers', not when the sample is recorded: the two samples
            // of a first question are recorded together.
            let host = node::read(podvisor_core::time::now_nanos(), &paths_now);
            let (sandboxes, image_fs) =
                tokio::join!(sandboxes(&*runtime, &node), image_fs(&*runtime));
            let sandboxes = netdev::complete(&*runtime, &pods, sandboxes, &pids).await;
            let disk = match paths {
                Some(paths) => walk(paths, &pods).await,
                None => None,
            };
            Ok(Sample {
                usage,
                sandboxes,
                image_fs,
                pods,
                host,
                disk,
            })
        }
    }

    fn record(&mut self, sampled: Sampled) {
        match sampled {
            Ok(sample) => {
                self.book.record(sample);
                self.last_sample = Some(Instant::now());
            }
            Err(e) => {
                self.failures += 1;
                warn!(error = %e, "the runtime's container stats could not be read");
            }
        }
    }

    /// Samples every period while watched; stops once nobody asked for a while.
    fn keep_sampling(&mut self, ctx: &mut Context<Self>) {
        if self.timer.is_some() {
            return;
        }
        let handle = ctx.run_interval(PERIOD, |act, ctx| {
            if act.watched_until.is_none_or(|t| Instant::now() > t) {
                if let Some(h) = act.timer.take() {
                    ctx.cancel_future(h);
                }
                return;
            }
            ctx.spawn(act.sample().into_actor(act).map(|s, act, _| act.record(s)));
        });
        self.timer = Some(handle);
    }
}

/// The sandboxes' networks; none where the runtime cannot say (containerd 1.6).
async fn sandboxes(runtime: &dyn Runtime, node: &str) -> Vec<podvisor_cri::SandboxUsage> {
    match runtime.sandbox_usage(node).await {
        Ok(s) => s,
        Err(CriError::Unimplemented { .. }) => Vec::new(),
        // Every sample while asked, and the networks come from the sandboxes' namespaces
        // all the same: not a warning each time.
        Err(e) => {
            tracing::debug!(error = %e, "the runtime's pod sandbox stats could not be read");
            Vec::new()
        }
    }
}

/// The image filesystem, with the size of the filesystem it is on.
async fn image_fs(
    runtime: &dyn Runtime,
) -> Option<(
    podvisor_cri::FsSample,
    Option<podvisor_core::stats::FsStats>,
)> {
    let fs = match runtime.image_fs().await {
        Ok(mut all) if !all.is_empty() => all.swap_remove(0),
        Ok(_) => return None,
        Err(e) => {
            warn!(error = %e, "the runtime's image filesystem could not be read");
            return None;
        }
    };
    let at = podvisor_core::time::now();
    let on = disk::filesystem(std::path::Path::new(&fs.mountpoint), &at);
    Some((fs, on))
}

/// The local storage of `pods`, walked on a blocking thread.
async fn walk(paths: Paths, pods: &[podvisor_cri::Pod]) -> Option<local::DiskSample> {
    let refs: Vec<_> = pods.iter().map(|p| p.pod.clone()).collect();
    let at = podvisor_core::time::now();
    tokio::task::spawn_blocking(move || local::read(&paths, &refs, &at))
        .await
        .ok()
}

/// How many samples a question needs first, given the newest one's age and how many were
/// taken: none while a rate is fresh; one while the newest is recent enough for a rate
/// over at most two periods; otherwise two, a second apart. A book left from sampling that
/// stopped (a minute after the last question) would give the CPU rate averaged over all
/// the time nobody asked.
fn samples_needed(age: Option<Duration>, taken: u64) -> u8 {
    match age {
        Some(age) if age < PERIOD && taken >= 2 => 0,
        Some(age) if age < 2 * PERIOD && taken >= 1 => 1,
        _ => 2,
    }
}

impl Handler<GetSummary> for StatsCollector {
    type Result = ResponseActFuture<Self, Option<Summary>>;

    fn handle(&mut self, _: GetSummary, ctx: &mut Context<Self>) -> Self::Result {
        self.watched_until = Some(Instant::now() + WATCHED_FOR);
        self.keep_sampling(ctx);
        let age = self.last_sample.map(|t| t.elapsed());
        let samples = samples_needed(age, self.book.samples());
        // Made only when taken: making one marks the local storage walked.
        let first = (samples >= 1).then(|| self.sample());
        let second = (samples == 2).then(|| self.sample());
        let work = async move {
            let mut out = Vec::new();
            if let Some(first) = first {
                out.push(first.await);
            }
            if let Some(second) = second {
                tokio::time::sleep(WARM_UP).await;
                out.push(second.await);
            }
            out
        };
        Box::pin(work.into_actor(self).map(|sampled, act, _| {
            for s in sampled {
                act.record(s);
            }
            (act.book.samples() > 0).then(|| act.book.summary(&act.node))
        }))
    }
}

impl Handler<SampleNow> for StatsCollector {
    type Result = ResponseActFuture<Self, Option<Summary>>;

    fn handle(&mut self, msg: SampleNow, _: &mut Context<Self>) -> Self::Result {
        if msg.disk {
            self.disk_at = None;
        }
        Box::pin(self.sample().into_actor(self).map(|sampled, act, _| {
            act.record(sampled);
            (act.book.samples() > 0).then(|| act.book.summary(&act.node))
        }))
    }
}

impl Handler<GetNodeStats> for StatsCollector {
    type Result = ResponseFuture<NodeNow>;

    fn handle(&mut self, _: GetNodeStats, _: &mut Context<Self>) -> Self::Result {
        let (runtime, node, paths) = (self.runtime.clone(), self.node.clone(), self.paths.clone());
        Box::pin(async move { now::measure(&*runtime, &node, &paths).await })
    }
}

impl Actor for StatsCollector {
    type Context = Context<Self>;
}

impl SupervisedActor for StatsCollector {
    const KIND: &'static str = "stats";
    type Summary = StatsSummary;

    fn rebuild(&mut self, _: &mut Context<Self>, _: &StartInfo<Self>) {}

    fn summary(&self) -> StatsSummary {
        StatsSummary {
            sampling: self.timer.is_some(),
            samples: self.book.samples(),
            failures: self.failures,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_after_sampling_stopped_takes_two_fresh_samples() {
        let s = Duration::from_secs;
        assert_eq!(samples_needed(None, 0), 2, "nothing yet");
        assert_eq!(samples_needed(Some(s(3)), 2), 0, "a fresh rate");
        assert_eq!(samples_needed(Some(s(3)), 1), 1, "one more for a rate");
        assert_eq!(
            samples_needed(Some(s(15)), 9),
            1,
            "a rate over 15 s at most"
        );
        assert_eq!(
            samples_needed(Some(s(3600)), 9),
            2,
            "not a rate over the hour nobody asked"
        );
    }
}
