//! What serde cannot check: values that parse but make no sense, each refused with its key.

use podvisor_core::quantity;
use std::time::Duration;

use super::{AgentConfig, ConfigError};

fn refuse(key: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        key,
        message: message.into(),
    }
}

/// A quantity, when set: in thousandths (`milli`, for CPU) or in units.
fn quantity(key: &'static str, v: Option<&String>, milli: bool) -> Result<(), ConfigError> {
    let Some(q) = v else { return Ok(()) };
    let parsed = if milli {
        quantity::parse_milli(q)
    } else {
        quantity::parse_units(q)
    };
    parsed.map(|_| ()).map_err(|e| refuse(key, e.to_string()))
}

fn at_least_one(pairs: &[(&'static str, usize)]) -> Result<(), ConfigError> {
    match pairs.iter().find(|(_, n)| *n == 0) {
        Some((key, _)) => Err(refuse(key, "must be at least 1")),
        None => Ok(()),
    }
}

impl AgentConfig {
    /// Checks what serde cannot: values that parse but make no sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_node()?;
        self.check_paths()?;
        self.check_limits()?;
        self.check_logs()?;
        self.check_supervisor()?;
        self.check_debug()?;
        self.check_eviction()?;
        tracing_subscriber::EnvFilter::try_new(&self.log.filter)
            .map(|_| ())
            .map_err(|e| refuse("log.filter", e.to_string()))
    }

    fn check_eviction(&self) -> Result<(), ConfigError> {
        self.eviction
            .config()
            .map_err(|e| refuse("eviction", e.to_string()))?;
        if self.eviction.max_pod_grace_period < 0 {
            return Err(refuse(
                "eviction.max_pod_grace_period",
                "must not be negative",
            ));
        }
        self.image_gc
            .policy()
            .check()
            .map_err(|e| refuse("image_gc", e.to_string()))
    }

    fn check_node(&self) -> Result<(), ConfigError> {
        super::node_labels::check(&self.node.labels).map_err(|e| refuse("node.labels", e))?;
        for t in &self.node.taints {
            podvisor_core::taints::parse(t).map_err(|e| refuse("node.taints", e.to_string()))?;
        }
        for ip in &self.node.cluster_dns {
            ip.parse::<std::net::IpAddr>()
                .map_err(|e| refuse("node.cluster_dns", format!("{ip:?}: {e}")))?;
        }
        podvisor_core::validation::names::subdomain(
            &podvisor_core::validation::FieldPath::new("node.cluster_domain"),
            &self.node.cluster_domain,
        )
        .map_or(Ok(()), |e| {
            Err(refuse("node.cluster_domain", e.to_string()))
        })?;
        let root = &self.node.cgroup_root;
        if !root.starts_with('/') || root.split('/').any(|s| s == "..") {
            return Err(refuse(
                "node.cgroup_root",
                format!("{root:?}: must be an absolute cgroup path without \"..\""),
            ));
        }
        quantity("allocatable.cpu", self.allocatable.cpu.as_ref(), true)?;
        quantity(
            "allocatable.memory",
            self.allocatable.memory.as_ref(),
            false,
        )?;
        let c = &self.cluster;
        if !(c.rotate_after > 0.0 && c.rotate_after < 1.0) {
            return Err(refuse(
                "cluster.rotate_after",
                format!("{} is not between 0 and 1", c.rotate_after),
            ));
        }
        if c.lifetime().is_some_and(|l| l < Duration::from_secs(600)) {
            return Err(refuse(
                "cluster.certificate_lifetime",
                "the API's least is 10m",
            ));
        }
        if self.server.client_ca_file.is_some() && c.kubeconfig.is_none() {
            return Err(refuse(
                "server.client_ca_file",
                "takes effect in a cluster only: a node standing alone takes its own token",
            ));
        }
        if !self.node_name.is_empty() {
            podvisor_core::validation::names::node_name(&self.node_name)
                .map_err(|e| refuse("node_name", e.to_string()))?;
        }
        Ok(())
    }

    fn check_paths(&self) -> Result<(), ConfigError> {
        podvisor_cri::Endpoint::parse(&self.runtime_endpoint)
            .map_err(|e| refuse("runtime_endpoint", e.to_string()))?;
        for (key, p) in [
            ("manifest_dir", &self.manifest_dir),
            ("state_dir", &self.state_dir),
            ("pod_log_dir", &self.pod_log_dir),
        ] {
            if !p.is_absolute() {
                return Err(refuse(
                    key,
                    format!("{} must be an absolute path", p.display()),
                ));
            }
        }
        Ok(())
    }

    fn check_limits(&self) -> Result<(), ConfigError> {
        at_least_one(&[
            (
                "runtime.max_mutations_in_flight",
                self.runtime.max_mutations_in_flight,
            ),
            ("allocatable.pods", self.allocatable.pods),
            ("probes.max_in_flight", self.probes.max_in_flight),
            ("probes.max_exec_in_flight", self.probes.max_exec_in_flight),
        ])
    }

    fn check_logs(&self) -> Result<(), ConfigError> {
        let size = quantity::parse_units(&self.logs.max_size);
        if !size.as_ref().is_ok_and(|b| *b > 0) {
            let message = format!(
                "{:?} is not a positive quantity like \"10Mi\"",
                self.logs.max_size
            );
            return Err(refuse("logs.max_size", message));
        }
        if self.logs.max_files < 2 {
            return Err(refuse(
                "logs.max_files",
                "must be at least 2 (the live log and one rotated)",
            ));
        }
        Ok(())
    }

    fn check_supervisor(&self) -> Result<(), ConfigError> {
        let s = &self.supervisor;
        if s.restart_backoff > s.restart_backoff_max {
            return Err(refuse(
                "supervisor.restart_backoff",
                "must not exceed supervisor.restart_backoff_max",
            ));
        }
        if s.max_restarts == 0 {
            return Err(refuse("supervisor.max_restarts", "must be at least 1"));
        }
        Ok(())
    }

    fn check_debug(&self) -> Result<(), ConfigError> {
        let d = &self.debug;
        if d.fault_injection && !cfg!(feature = "fault-injection") {
            return Err(refuse(
                "debug.fault_injection",
                "this build has no fault injection (build with --features fault-injection)",
            ));
        }
        if d.fault_injection && !d.address.ip().is_loopback() && d.token.is_none() {
            return Err(refuse(
                "debug.fault_injection",
                "crashing actors from off the loopback needs debug.token",
            ));
        }
        if d.token.as_deref() == Some("") {
            return Err(refuse(
                "debug.token",
                "must not be empty (leave it out instead)",
            ));
        }
        Ok(())
    }
}
