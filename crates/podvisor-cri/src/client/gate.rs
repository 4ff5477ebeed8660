//! The bound on mutations in flight, served by stage rather than by arrival: a call that
//! finishes a pod already under way (its containers' create and start) goes before one
//! that tears a pod down, which goes before one that begins another pod (its sandbox).
//!
//! First come, first served, 100 pods bound at once queued 100 sandbox creations, and the
//! first pod whose sandbox was ready then waited behind the other 99 for its container:
//! nothing Running for six seconds, though one pod alone starts in 150 ms. By stage, a pod
//! whose sandbox is ready waits only for the next call in flight to end.
//!
//! A later stage waits while earlier ones have work queued: a burst of starts delays new
//! sandboxes by at most the work those starts are (their pods' containers).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// Where a call stands in a pod's life, in the order waiting calls are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Creating or starting a container: a pod whose sandbox is ready.
    Finish = 0,
    /// Stopping or removing: what frees the runtime's resources.
    Teardown = 1,
    /// Creating a sandbox: a pod not yet begun.
    Begin = 2,
}

impl Stage {
    const COUNT: usize = 3;

    /// The stage of CRI call `op`, if it is bounded.
    pub(crate) fn of(op: &str) -> Option<Stage> {
        Some(match op {
            "CreateContainer" | "StartContainer" => Stage::Finish,
            "StopContainer" | "RemoveContainer" | "StopPodSandbox" | "RemovePodSandbox" => {
                Stage::Teardown
            }
            "RunPodSandbox" => Stage::Begin,
            _ => return None,
        })
    }
}

#[derive(Debug)]
struct State {
    free: usize,
    waiting: [VecDeque<oneshot::Sender<Permit>>; Stage::COUNT],
}

impl State {
    fn next_waiter(&mut self) -> Option<oneshot::Sender<Permit>> {
        self.waiting.iter_mut().find_map(VecDeque::pop_front)
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // Nothing panics while holding it; a poisoned lock still holds consistent counts.
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// At most `n` holders of a [`Permit`] at once; waiters served by [`Stage`], then in
/// arrival order.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    state: Arc<Mutex<State>>,
}

/// One place in the gate, given back when dropped (to the first waiter of the earliest
/// stage, or to the free count).
#[derive(Debug)]
pub(crate) struct Permit {
    state: Option<Arc<Mutex<State>>>,
}

impl Gate {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                free: n.max(1),
                waiting: Default::default(),
            })),
        }
    }

    /// A place, once one is free and no earlier stage (nor earlier caller of the same
    /// stage) waits for it. `None` only if the gate went away meanwhile, which its holder
    /// (the client, borrowed here) rules out.
    pub(crate) async fn acquire(&self, stage: Stage) -> Option<Permit> {
        let rx = {
            let mut s = lock(&self.state);
            if s.free > 0 {
                s.free -= 1;
                return Some(self.permit());
            }
            let (tx, rx) = oneshot::channel();
            s.waiting[stage as usize].push_back(tx);
            rx
        };
        rx.await.ok()
    }

    fn permit(&self) -> Permit {
        Permit {
            state: Some(self.state.clone()),
        }
    }

    /// How many callers wait, by stage (for tests).
    #[cfg(test)]
    fn waiting(&self) -> [usize; Stage::COUNT] {
        let s = lock(&self.state);
        [0, 1, 2].map(|i| s.waiting[i].len())
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        loop {
            let tx = {
                let mut s = lock(&state);
                match s.next_waiter() {
                    Some(tx) => tx,
                    None => {
                        s.free += 1;
                        return;
                    }
                }
            };
            // A waiter that gave up (its call was dropped) hands the place on; a permit
            // sent but never received is dropped with the channel, and so given back.
            match tx.send(Permit {
                state: Some(state.clone()),
            }) {
                Ok(()) => return,
                Err(mut unsent) => unsent.state = None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    /// Every stage's waiters queued, then places freed one at a time: finishing calls
    /// first, then teardown, then new sandboxes, each in arrival order.
    #[tokio::test]
    async fn waiters_are_served_by_stage_then_by_arrival() {
        let gate = Gate::new(1);
        let held = gate.acquire(Stage::Begin).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let order = [
            (Stage::Begin, "sandbox-1"),
            (Stage::Begin, "sandbox-2"),
            (Stage::Teardown, "stop-1"),
            (Stage::Finish, "create-1"),
            (Stage::Finish, "start-1"),
        ];
        for (stage, name) in order {
            let (gate, tx) = (gate.clone(), tx.clone());
            tokio::spawn(async move {
                let p = gate.acquire(stage).await;
                let _ = tx.send(name);
                tokio::time::sleep(Duration::from_millis(1)).await;
                drop(p);
            });
            settle().await;
        }
        assert_eq!(gate.waiting(), [2, 1, 2]);
        drop(held);
        let mut served = Vec::new();
        for _ in 0..order.len() {
            served.push(rx.recv().await.unwrap());
        }
        assert_eq!(
            served,
            ["create-1", "start-1", "stop-1", "sandbox-1", "sandbox-2"]
        );
    }

    /// A waiter that gives up does not take a place with it: the next one gets it, and
    /// with nobody left the place is free again.
    #[tokio::test]
    async fn a_waiter_that_gives_up_passes_its_turn_on() {
        let gate = Gate::new(1);
        let held = gate.acquire(Stage::Finish).await;
        let quitter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.acquire(Stage::Finish).await.is_some() })
        };
        settle().await;
        let next = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.acquire(Stage::Begin).await.is_some() })
        };
        settle().await;
        quitter.abort();
        drop(held);
        assert!(next.await.unwrap());
        let again = tokio::time::timeout(Duration::from_secs(1), gate.acquire(Stage::Begin));
        assert!(again.await.unwrap().is_some(), "the place was lost");
    }

    /// The calls bounded are the mutations and StopContainer, and no other.
    #[test]
    fn every_mutation_has_a_stage_and_reads_have_none() {
        for op in super::super::MUTATIONS.iter().chain(&["StopContainer"]) {
            assert!(Stage::of(op).is_some(), "{op}");
        }
        for op in [
            "ListContainers",
            "PodSandboxStatus",
            "ExecSync",
            "PullImage",
        ] {
            assert_eq!(Stage::of(op), None, "{op}");
        }
    }

    /// At most `n` hold a place at once, whatever the mix of stages.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_than_n_hold_a_place() {
        let gate = Gate::new(3);
        let holding = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..60 {
            let (gate, holding, most) = (gate.clone(), holding.clone(), most.clone());
            let stage = [Stage::Finish, Stage::Teardown, Stage::Begin][i % 3];
            tasks.push(tokio::spawn(async move {
                use std::sync::atomic::Ordering::SeqCst;
                let p = gate.acquire(stage).await;
                let now = holding.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
                holding.fetch_sub(1, SeqCst);
                drop(p);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(gate.waiting(), [0, 0, 0]);
    }
}
