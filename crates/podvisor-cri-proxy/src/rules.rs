//! Which calls a test wants disturbed, and how: plain data, decided per call.

use std::time::Duration;

/// What the proxy does to a call a fault matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Wait this long, then forward the call.
    Delay(Duration),
    /// Answer with this gRPC status code and message without forwarding the call.
    Fail { code: i32, message: String },
    /// Never answer and never forward: the runtime never hears of the call.
    Hang,
    /// Forward the call and wait for the runtime's whole answer, then never pass it on:
    /// the runtime did the work, the caller times out (a create whose answer was lost).
    Drop,
    /// Answer `GetContainerEvents` from the proxy itself: a stream that carries only what
    /// the test injects (`CriProxy::inject_events`), on any runtime.
    ServeEvents,
}

impl Action {
    /// The runtime is gone, as a client sees it (gRPC `UNAVAILABLE`).
    pub fn unavailable() -> Self {
        Self::Fail {
            code: 14,
            message: "injected: runtime unavailable".into(),
        }
    }

    /// The runtime failed the call (gRPC `UNKNOWN`, as containerd reports most errors).
    pub fn error(message: &str) -> Self {
        Self::Fail {
            code: 2,
            message: message.into(),
        }
    }
}

/// One rule: which calls (a method, or every method with `"*"`; optionally only calls
/// whose request carries some bytes, such as a pod UID or a container id), what to do, and
/// how many times (`None`: until removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub method: String,
    pub body_contains: Option<Vec<u8>>,
    pub action: Action,
    pub times: Option<u32>,
}

impl Fault {
    /// Every call of `method` (`"*"` for all), until the fault is removed.
    pub fn on(method: &str, action: Action) -> Self {
        Self {
            method: method.to_string(),
            body_contains: None,
            action,
            times: None,
        }
    }

    /// Only calls whose request holds `needle` (strings are stored verbatim in protobuf,
    /// so a pod UID or a container id finds the calls about that pod or container).
    pub fn about(mut self, needle: &str) -> Self {
        self.body_contains = Some(needle.as_bytes().to_vec());
        self
    }

    /// Only the next `n` matching calls.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    fn matches(&self, method: &str, body: &[u8]) -> bool {
        (self.method == "*" || self.method == method)
            && self.times != Some(0)
            && self
                .body_contains
                .as_deref()
                .is_none_or(|needle| contains(body, needle))
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// A handle to remove one fault again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FaultId(u64);

/// The faults in force, first added first matched.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    next: u64,
    faults: Vec<(FaultId, Fault)>,
}

impl Rules {
    pub(crate) fn add(&mut self, fault: Fault) -> FaultId {
        self.next += 1;
        let id = FaultId(self.next);
        self.faults.push((id, fault));
        id
    }

    pub(crate) fn remove(&mut self, id: FaultId) {
        self.faults.retain(|(i, _)| *i != id);
    }

    pub(crate) fn clear(&mut self) {
        self.faults.clear();
    }

    /// What to do with one call: the first matching fault's action (using up one of its
    /// times), or `None` to forward it untouched.
    pub(crate) fn decide(&mut self, method: &str, body: &[u8]) -> Option<Action> {
        let (_, fault) = self
            .faults
            .iter_mut()
            .find(|(_, f)| f.matches(method, body))?;
        if let Some(n) = fault.times.as_mut() {
            *n -= 1;
        }
        Some(fault.action.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_fault_decides_and_counted_faults_run_out() {
        let mut rules = Rules::default();
        rules.add(Fault::on("CreateContainer", Action::Hang).times(1));
        rules.add(Fault::on("*", Action::Delay(Duration::from_millis(5))));
        assert_eq!(rules.decide("CreateContainer", b""), Some(Action::Hang));
        assert_eq!(
            rules.decide("CreateContainer", b""),
            Some(Action::Delay(Duration::from_millis(5)))
        );
        assert_eq!(
            rules.decide("Version", b""),
            Some(Action::Delay(Duration::from_millis(5)))
        );
    }

    #[test]
    fn a_fault_about_a_pod_matches_only_requests_that_name_it() {
        let mut rules = Rules::default();
        let id = rules.add(Fault::on("ListContainers", Action::Hang).about("uid-1"));
        assert_eq!(rules.decide("ListContainers", b"\x0a\x05uid-2"), None);
        assert_eq!(
            rules.decide("ListContainers", b"\x0a\x05uid-1\x10"),
            Some(Action::Hang)
        );
        assert_eq!(rules.decide("ListPodSandbox", b"\x0a\x05uid-1"), None);
        rules.remove(id);
        assert_eq!(rules.decide("ListContainers", b"\x0a\x05uid-1"), None);
    }

    #[test]
    fn cleared_rules_forward_everything() {
        let mut rules = Rules::default();
        rules.add(Fault::on("*", Action::unavailable()));
        assert!(rules.decide("Status", b"").is_some());
        rules.clear();
        assert_eq!(rules.decide("Status", b""), None);
    }
}
