//! The kubelet's own flags, under its names, on `podvisor run` (and on `podvisor` with no
//! subcommand, as a kubelet's systemd unit starts it: `$KUBELET_KUBEADM_ARGS` and the
//! rest): each one sets the key of podvisor's configuration it means, over the file's
//! value, as the kubelet's flags win over its config file. A kubelet flag podvisor does not
//! take is refused by clap with its name; the two below it takes only to refuse say why.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

use crate::agent::AgentConfig;
use crate::agent::config::{CgroupDriver, parse_node_labels, verbosity_filter};

#[derive(Debug, Default, Args)]
pub struct KubeletFlags {
    /// The node's kubeconfig (the kubelet's `--kubeconfig`): used to join when it exists,
    /// else `--bootstrap-kubeconfig` is (podvisor keeps the credentials it is issued in
    /// `<state_dir>/cluster`).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// A bootstrap kubeconfig (a bootstrap token), the kubelet's `--bootstrap-kubeconfig`.
    #[arg(long)]
    pub bootstrap_kubeconfig: Option<PathBuf>,
    /// The node's address (`[node] address`), the kubelet's `--node-ip`.
    #[arg(long)]
    pub node_ip: Option<IpAddr>,
    /// Taints the Node registers with, `key=value:Effect,...` (`[node] taints`).
    #[arg(long, value_delimiter = ',')]
    pub register_with_taints: Vec<String>,
    /// Labels the Node registers with, `key=value,...` (`[node] labels`).
    #[arg(long)]
    pub node_labels: Option<String>,
    /// Pods the node takes at most (`[allocatable] pods`).
    #[arg(long)]
    pub max_pods: Option<usize>,
    /// `cgroupfs` or `systemd` (`[node] cgroup_driver`).
    #[arg(long)]
    pub cgroup_driver: Option<String>,
    /// The cluster's DNS servers, `ip,...` (`[node] cluster_dns`).
    #[arg(long, value_delimiter = ',')]
    pub cluster_dns: Vec<String>,
    /// The cluster's domain (`[node] cluster_domain`).
    #[arg(long)]
    pub cluster_domain: Option<String>,
    /// Refused: podvisor's :10250 serves a certificate the cluster signs or its own.
    #[arg(long, hide = true)]
    pub tls_cert_file: Option<PathBuf>,
    /// Refused, as `--tls-cert-file`.
    #[arg(long, hide = true)]
    pub tls_private_key_file: Option<PathBuf>,
    /// Rotate the client certificate (podvisor always does: `false` is refused).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub rotate_certificates: Option<bool>,
    /// The kubelet's log verbosity: 0–1 info, 2–4 debug, 5+ trace (`[log] filter`).
    #[arg(long = "v", short = 'v')]
    pub verbosity: Option<u32>,
}

impl KubeletFlags {
    /// Sets what the flags given say, over `cfg`.
    pub fn apply(self, cfg: &mut AgentConfig) -> anyhow::Result<()> {
        if self.tls_cert_file.is_some() || self.tls_private_key_file.is_some() {
            bail!(
                "--tls-cert-file and --tls-private-key-file are not honoured: podvisor's :10250 \
                 serves a certificate the cluster signs (serverTLSBootstrap) or one it makes"
            );
        }
        if self.rotate_certificates == Some(false) {
            bail!(
                "--rotate-certificates=false is not honoured: podvisor always renews its client certificate"
            );
        }
        if let Some(k) = join_kubeconfig(self.kubeconfig, self.bootstrap_kubeconfig) {
            cfg.cluster.kubeconfig = Some(super::run::absolute(k)?);
        }
        if let Some(ip) = self.node_ip {
            cfg.node.address = Some(ip);
        }
        if !self.register_with_taints.is_empty() {
            cfg.node.taints = self.register_with_taints;
        }
        if let Some(l) = self.node_labels {
            let labels =
                parse_node_labels(&l).map_err(|e| anyhow::anyhow!("--node-labels: {e}"))?;
            cfg.node.labels.extend(labels);
        }
        if let Some(n) = self.max_pods {
            cfg.allocatable.pods = n;
        }
        if let Some(d) = self.cgroup_driver {
            cfg.node.cgroup_driver = Some(match d.as_str() {
                "cgroupfs" => CgroupDriver::Cgroupfs,
                "systemd" => CgroupDriver::Systemd,
                other => bail!("--cgroup-driver {other:?}: cgroupfs or systemd"),
            });
        }
        if !self.cluster_dns.is_empty() {
            cfg.node.cluster_dns = self.cluster_dns;
        }
        if let Some(d) = self.cluster_domain {
            cfg.node.cluster_domain = d;
        }
        if let Some(v) = self.verbosity {
            cfg.log.filter = verbosity_filter(v).into();
        }
        Ok(())
    }
}

/// The kubeconfig to join with: the node's own once it exists (after a bootstrap, or
/// written by an installer), else the bootstrap one, as the kubelet picks.
fn join_kubeconfig(own: Option<PathBuf>, bootstrap: Option<PathBuf>) -> Option<PathBuf> {
    match (own, bootstrap) {
        (Some(own), Some(bootstrap)) if !own.exists() => Some(bootstrap),
        (own, bootstrap) => own.or(bootstrap),
    }
}

/// `podvisor FLAGS...` as `podvisor run FLAGS...`: a kubelet's unit starts the binary
/// with flags only. Anything else (a subcommand, `--help`, `--version`) is left as it is.
pub fn default_to_run(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or_default();
    let own = ["-h", "--help", "-V", "--version"];
    let global = first == "--log" || first.starts_with("--log=");
    if first.starts_with('-') && !own.contains(&first) && !global {
        args.insert(1, "run".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        kubelet: KubeletFlags,
    }

    /// The flags kubeadm 1.37 writes to /var/lib/kubelet/kubeadm-flags.env
    /// (cmd/kubeadm/app/phases/kubelet/flags.go: the runtime endpoint, and the node IP and
    /// labels when the init configuration gives them), split as systemd splits
    /// `$KUBELET_KUBEADM_ARGS`.
    const KUBEADM_FLAGS_ENV: &str = include_str!("../../tests/fixtures/kubeadm-flags.env");

    fn kubeadm_args() -> Vec<String> {
        let line = KUBEADM_FLAGS_ENV
            .lines()
            .find_map(|l| l.strip_prefix("KUBELET_KUBEADM_ARGS="))
            .unwrap();
        line.trim_matches('"')
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    #[derive(Debug, Parser)]
    struct Run {
        #[command(flatten)]
        run: crate::cli::run::RunArgs,
    }

    #[test]
    fn a_kubeadm_flags_line_sets_what_it_says() {
        let mut argv = vec!["podvisor".to_string()];
        argv.extend(kubeadm_args());
        let cfg = Run::try_parse_from(argv).unwrap().run.config().unwrap();
        assert_eq!(cfg.node_name, "worker-1");
        assert_eq!(cfg.node.address, Some("192.0.2.10".parse().unwrap()));
        assert_eq!(
            cfg.node.labels.get("example.com/pool").map(String::as_str),
            Some("blue")
        );
        assert_eq!(cfg.node.taints, ["example.com/dedicated=infra:NoSchedule"]);
    }

    #[test]
    fn a_flag_podvisor_does_not_take_is_refused_by_name() {
        let e = Flags::try_parse_from(["podvisor", "--pod-infra-container-image=pause:3.10"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--pod-infra-container-image"), "{e}");
        let flags = Flags::try_parse_from(["podvisor", "--tls-cert-file=/x.crt"]).unwrap();
        let e = flags
            .kubelet
            .apply(&mut AgentConfig::default())
            .unwrap_err();
        assert!(e.to_string().contains("--tls-cert-file"), "{e}");
        let flags = Flags::try_parse_from(["podvisor", "--rotate-certificates=false"]).unwrap();
        assert!(flags.kubelet.apply(&mut AgentConfig::default()).is_err());
        let flags = Flags::try_parse_from(["podvisor", "--rotate-certificates"]).unwrap();
        assert!(flags.kubelet.apply(&mut AgentConfig::default()).is_ok());
    }

    #[test]
    fn the_own_kubeconfig_is_used_once_it_exists_else_the_bootstrap_one() {
        let dir = std::env::temp_dir().join(format!("podvisor-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (own, boot) = (dir.join("kubelet.conf"), dir.join("bootstrap-kubelet.conf"));
        assert_eq!(
            join_kubeconfig(Some(own.clone()), Some(boot.clone())),
            Some(boot.clone())
        );
        std::fs::write(&own, "").unwrap();
        assert_eq!(join_kubeconfig(Some(own.clone()), Some(boot)), Some(own));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn flags_alone_mean_run_and_a_subcommand_or_help_is_left_alone() {
        let args = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            default_to_run(args(&["podvisor", "--config=/c.yaml"])),
            args(&["podvisor", "run", "--config=/c.yaml"])
        );
        for kept in [
            &["podvisor", "get", "pods"][..],
            &["podvisor", "--help"],
            &["podvisor", "--log", "x", "get"],
        ] {
            assert_eq!(default_to_run(args(kept)), args(kept));
        }
    }
}
