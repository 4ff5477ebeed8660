//! The status the cluster had for a pod when the replica made its first copy, handed to
//! the uplink: a new pod's store copy then needs no write back (the cluster has that very
//! status), and the node's first status for it is a patch from it, not a read of the pod
//! from the cluster and a patch (one request per pod fewer, in a burst a second of the API
//! server's CPU per hundred pods).
//!
//! Handed over before the copy is written, so the uplink, which sees the copy through the
//! store's watch, finds it there. Taken once; one nobody takes (the copy was not written,
//! or the uplink already knew the pod) is dropped at a later hand-over once a minute old,
//! so the map holds about a burst's pods at most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::PodStatus;

/// How long a status handed over waits to be taken.
const MAX_AGE: Duration = Duration::from_secs(60);

/// Fewest entries before a hand-over drops the old ones.
const SWEEP_MIN: usize = 32;

/// A status handed over, and when.
type HandedOver = (Arc<PodStatus>, Instant);

#[derive(Clone, Default)]
pub struct FirstCopies(Arc<Mutex<HashMap<String, HandedOver>>>);

impl FirstCopies {
    /// Pod `uid`'s first copy is about to be written with the cluster's `status` as is.
    pub(crate) fn hand_over(&self, uid: &str, status: Arc<PodStatus>) {
        self.hand_over_at(uid, status, Instant::now());
    }

    fn hand_over_at(&self, uid: &str, status: Arc<PodStatus>, now: Instant) {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if m.len() >= SWEEP_MIN {
            m.retain(|_, (_, at)| now.saturating_duration_since(*at) < MAX_AGE);
        }
        m.insert(uid.to_string(), (status, now));
    }

    /// The cluster's status of pod `uid`'s first copy, if one was handed over.
    pub(crate) fn take(&self, uid: &str) -> Option<Arc<PodStatus>> {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        m.remove(uid).map(|(s, _)| s)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_taken_once() {
        let f = FirstCopies::default();
        let s: Arc<PodStatus> = Arc::default();
        f.hand_over("u1", s.clone());
        assert!(Arc::ptr_eq(&f.take("u1").unwrap(), &s));
        assert!(f.take("u1").is_none(), "taken once");
        assert!(f.take("u2").is_none());
    }

    #[test]
    fn what_nobody_takes_goes_once_a_minute_old() {
        let f = FirstCopies::default();
        let t0 = Instant::now();
        for i in 0..SWEEP_MIN {
            f.hand_over_at(&format!("old{i}"), Arc::default(), t0);
        }
        let later = t0 + MAX_AGE / 2;
        f.hand_over_at("young", Arc::default(), later);
        assert_eq!(f.len(), SWEEP_MIN + 1, "none old enough yet");
        f.hand_over_at("new", Arc::default(), t0 + MAX_AGE);
        assert_eq!(f.len(), 2, "the minute-old ones went");
        assert!(f.take("young").is_some() && f.take("new").is_some());
    }
}
