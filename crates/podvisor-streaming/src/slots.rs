//! Who may hold a connection to a server, and how many: a common pool, a cap per client
//! address so one client cannot take the pool, and a reserve only for clients whose TLS
//! certificate the server verified (a cluster's kube-apiserver, on :10250), so a flood of
//! anonymous connections never locks the control plane out of its node.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many connections a server holds, in what pools.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once, all pools together.
    pub total: usize,
    /// Of them, kept for verified clients.
    pub reserved: usize,
    /// Connections one client address may hold in the common pool.
    pub per_client: usize,
    /// Handshakes at once on the way to the reserve (who is verified is known only once
    /// the handshake is done), all clients together and per client.
    pub trials: usize,
    pub trials_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            total: 4096,
            reserved: 256,
            per_client: 256,
            trials: 64,
            trials_per_client: 4,
        }
    }
}

/// Connections by client address, counted while their guards live.
#[derive(Debug, Default)]
struct Counts(Mutex<HashMap<IpAddr, usize>>);

impl Counts {
    /// One more for `ip`, unless it holds `max` already.
    fn add(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<Counted> {
        let mut map = self.0.lock().ok()?;
        let n = map.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Counted {
            counts: self.clone(),
            ip,
        })
    }
}

/// One connection counted against its client; uncounted when dropped.
#[derive(Debug)]
struct Counted {
    counts: Arc<Counts>,
    ip: IpAddr,
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let Ok(mut map) = self.counts.0.lock()
            && let Some(n) = map.get_mut(&self.ip)
        {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// A server's connection slots.
#[derive(Debug)]
pub(crate) struct Slots {
    common: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    trials: Arc<Semaphore>,
    clients: Arc<Counts>,
    on_trial: Arc<Counts>,
    limits: Limits,
}

/// A slot held for a connection's life.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    _client: Option<Counted>,
}

/// What a new connection gets.
#[derive(Debug)]
pub(crate) enum Admitted {
    /// A slot: serve it.
    Slot(Slot),
    /// None in the common pool for it: it is kept only if its handshake shows a verified
    /// certificate ([`Slots::confirm`]).
    Trial(Trial),
}

#[derive(Debug)]
pub(crate) struct Trial {
    _permit: OwnedSemaphorePermit,
    _client: Counted,
}

impl Slots {
    pub(crate) fn new(limits: Limits) -> Self {
        Slots {
            common: Arc::new(Semaphore::new(limits.total - limits.reserved)),
            reserve: Arc::new(Semaphore::new(limits.reserved)),
            trials: Arc::new(Semaphore::new(limits.trials)),
            clients: Arc::default(),
            on_trial: Arc::default(),
            limits,
        }
    }

    /// What a connection from `ip` gets; `None`: close it at once.
    pub(crate) fn admit(&self, ip: IpAddr) -> Option<Admitted> {
        if let Some(client) = self.clients.add(ip, self.limits.per_client)
            && let Ok(permit) = self.common.clone().try_acquire_owned()
        {
            return Some(Admitted::Slot(Slot {
                _permit: permit,
                _client: Some(client),
            }));
        }
        let client = self.on_trial.add(ip, self.limits.trials_per_client)?;
        let permit = self.trials.clone().try_acquire_owned().ok()?;
        Some(Admitted::Trial(Trial {
            _permit: permit,
            _client: client,
        }))
    }

    /// A connection on trial whose handshake is done: a reserved slot if its client
    /// presented a certificate the server verified.
    pub(crate) fn confirm(&self, trial: Trial, verified: bool) -> Option<Slot> {
        drop(trial);
        if !verified {
            return None;
        }
        let permit = self.reserve.clone().try_acquire_owned().ok()?;
        Some(Slot {
            _permit: permit,
            _client: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Slots {
        Slots::new(Limits {
            total: 6,
            reserved: 2,
            per_client: 2,
            trials: 2,
            trials_per_client: 1,
        })
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn one_client_holds_its_share_and_the_reserve_is_for_the_verified() {
        let s = small();
        let a1 = s.admit(ip(2)).unwrap();
        let a2 = s.admit(ip(2)).unwrap();
        assert!(matches!((&a1, &a2), (Admitted::Slot(_), Admitted::Slot(_))));
        // Its third goes on trial; a fourth finds its one trial taken.
        let Some(Admitted::Trial(t)) = s.admit(ip(2)) else {
            panic!("on trial")
        };
        assert!(s.admit(ip(2)).is_none());
        assert!(s.confirm(t, false).is_none(), "anonymous: closed");
        // Others still get the common pool, until it is empty.
        let b1 = s.admit(ip(3)).unwrap();
        let b2 = s.admit(ip(4)).unwrap();
        assert!(matches!((&b1, &b2), (Admitted::Slot(_), Admitted::Slot(_))));
        let Some(Admitted::Trial(t)) = s.admit(ip(5)) else {
            panic!("the pool is full: on trial")
        };
        let kept = s.confirm(t, true).expect("verified: a reserved slot");
        drop(a1);
        assert!(matches!(s.admit(ip(2)), Some(Admitted::Slot(_))), "freed");
        drop(kept);
    }
}
