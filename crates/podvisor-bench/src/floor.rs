//! The raw-CRI floor: starting and tearing down a one-container pod with exactly the CRI
//! calls podvisor makes, and nothing else. Whatever podvisor adds on top is measured
//! against this, in the same run.

use std::time::{Duration, Instant};

use podvisor_cri::CriClient;
use podvisor_cri::sample::{container_config, sandbox_config};

/// Timings of one raw pod start.
#[derive(Debug, Clone, Copy)]
pub struct PodStart {
    pub sandbox: Duration,
    pub container: Duration,
}

impl PodStart {
    pub fn total(&self) -> Duration {
        self.sandbox + self.container
    }
}

/// A pod started by [`start_pod`]; pass it to [`teardown_pod`].
#[derive(Debug, Clone)]
pub struct RawPod {
    pub uid: String,
    pub sandbox_id: String,
    pub container_id: String,
}

/// RunPodSandbox, then CreateContainer + StartContainer of one `sleep` container.
pub async fn start_pod(
    cri: &CriClient,
    uid: &str,
    host_network: bool,
    log_dir: &str,
) -> anyhow::Result<(RawPod, PodStart)> {
    let sandbox = sandbox_config(uid, &format!("bench-{uid}"), host_network, log_dir);
    let t0 = Instant::now();
    let sandbox_id = cri.run_pod_sandbox(sandbox.clone(), "").await?;
    let t1 = Instant::now();
    let container = container_config(&sandbox, "main", &["/bin/sleep", "3600"]);
    let container_id = cri
        .create_container(&sandbox_id, container, sandbox)
        .await?;
    cri.start_container(&container_id).await?;
    let t2 = Instant::now();
    Ok((
        RawPod {
            uid: uid.to_string(),
            sandbox_id,
            container_id,
        },
        PodStart {
            sandbox: t1 - t0,
            container: t2 - t1,
        },
    ))
}

/// StopContainer (no grace), RemoveContainer, StopPodSandbox, RemovePodSandbox: the
/// kubelet's teardown order.
pub async fn teardown_pod(cri: &CriClient, pod: &RawPod) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    cri.stop_container(&pod.container_id, Duration::ZERO)
        .await?;
    cri.remove_container(&pod.container_id).await?;
    cri.stop_pod_sandbox(&pod.sandbox_id).await?;
    cri.remove_pod_sandbox(&pod.sandbox_id).await?;
    Ok(t0.elapsed())
}

/// Starts `n` pods with at most `parallelism` starts in flight; returns the pods and the
/// wall time until the last one ran.
pub async fn start_pods_parallel(
    cri: &CriClient,
    prefix: &str,
    n: usize,
    parallelism: usize,
    host_network: bool,
    log_dir: &str,
) -> anyhow::Result<(Vec<RawPod>, Duration)> {
    start_parallel(cri, n, parallelism, |i| {
        let uid = format!("{prefix}-{i}");
        async move { start_pod(cri, &uid, host_network, log_dir).await }
    })
    .await
}

/// Starts `n` pods, the `i`th by `start(i)`, with at most `parallelism` in flight; returns
/// the pods and the wall time until the last one ran. On a failure the pods that did start
/// are torn down and the first error returned.
pub async fn start_parallel<F, Fut>(
    cri: &CriClient,
    n: usize,
    parallelism: usize,
    start: F,
) -> anyhow::Result<(Vec<RawPod>, Duration)>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(RawPod, PodStart)>>,
{
    use futures_util::StreamExt;
    let t0 = Instant::now();
    let results: Vec<_> = futures_util::stream::iter(0..n)
        .map(start)
        .buffer_unordered(parallelism.max(1))
        .collect()
        .await;
    let elapsed = t0.elapsed();
    let mut pods = Vec::with_capacity(n);
    let mut first_error = None;
    for r in results {
        match r {
            Ok((pod, _)) => pods.push(pod),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        // The pods that did start are not left behind.
        for pod in &pods {
            let _ = teardown_pod(cri, pod).await;
        }
        return Err(e);
    }
    Ok((pods, elapsed))
}

/// Stops and removes every sandbox whose pod UID begins with `prefix` (and so its
/// containers): what a failed start, or an earlier run killed half way, left.
pub async fn remove_leftovers(cri: &CriClient, prefix: &str) -> anyhow::Result<usize> {
    let mut removed = 0;
    for s in cri.list_pod_sandbox(None).await? {
        if s.metadata
            .as_ref()
            .is_some_and(|m| m.uid.starts_with(prefix))
        {
            cri.stop_pod_sandbox(&s.id).await?;
            cri.remove_pod_sandbox(&s.id).await?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Tears `pods` down with at most `parallelism` in flight.
pub async fn teardown_parallel(
    cri: &CriClient,
    pods: &[RawPod],
    parallelism: usize,
) -> anyhow::Result<Duration> {
    use futures_util::StreamExt;
    let t0 = Instant::now();
    let results: Vec<anyhow::Result<Duration>> = futures_util::stream::iter(pods)
        .map(|p| teardown_pod(cri, p))
        .buffer_unordered(parallelism.max(1))
        .collect()
        .await;
    results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    Ok(t0.elapsed())
}
