//! The real control plane the cluster tests join (`scripts/cluster-up`, which
//! `scripts/test` starts): its admin kubeconfig and the bootstrap kubeconfig nodes join
//! with, from the environment, and a TCP proxy that can cut a node off from it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::kubectl::Kubectl;

fn env_path(var: &str) -> PathBuf {
    let v = std::env::var_os(var).unwrap_or_else(|| {
        panic!(
            "{var} must name a kubeconfig of a running control plane: run scripts/cluster-up \
             (scripts/test does), which prints both paths"
        )
    });
    PathBuf::from(v)
}

pub fn admin_kubeconfig() -> PathBuf {
    env_path("PODVISOR_TEST_CLUSTER_KUBECONFIG")
}

pub fn bootstrap_kubeconfig() -> PathBuf {
    env_path("PODVISOR_TEST_CLUSTER_BOOTSTRAP_KUBECONFIG")
}

/// kubectl as the cluster's admin.
pub fn admin() -> Kubectl {
    Kubectl::with(admin_kubeconfig())
}

fn read_yaml(path: &std::path::Path) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A copy of the bootstrap kubeconfig in `dir` whose server is `server` (a proxy's).
pub fn bootstrap_via(dir: &std::path::Path, server: &str) -> PathBuf {
    let mut config = read_yaml(&bootstrap_kubeconfig());
    for c in config["clusters"].as_sequence_mut().unwrap() {
        c["cluster"]["server"] = server.into();
    }
    let path = dir.join("bootstrap.kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    path
}

/// The API server's address, from the admin kubeconfig (`host:port`).
pub fn apiserver_address() -> String {
    let config = read_yaml(&admin_kubeconfig());
    let server = config["clusters"][0]["cluster"]["server"].as_str().unwrap();
    server.trim_start_matches("https://").to_string()
}

/// A TCP proxy to the API server that can cut every connection and refuse new ones (a
/// partition between a node and its control plane) and let them through again.
pub struct Proxy {
    pub address: String,
    open: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
}

impl Proxy {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let open = Arc::new(AtomicBool::new(true));
        let (cut, _) = watch::channel(0u64);
        let (o, c, upstream) = (open.clone(), cut.clone(), apiserver_address());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !o.load(Ordering::SeqCst) {
                    continue; // dropped: the connection closes at once
                }
                let (upstream, mut cuts) = (upstream.clone(), c.subscribe());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (mut a, mut b) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut a, &mut b) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Self { address, open, cut }
    }

    pub fn server(&self) -> String {
        format!("https://{}", self.address)
    }

    /// Cuts every connection and refuses new ones.
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.cut.send_modify(|n| *n += 1);
    }

    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

/// The control plane's state directory (`scripts/cluster-up`'s `PODVISOR_CLUSTER_DIR`):
/// the admin kubeconfig is `<dir>/pki/admin.kubeconfig`.
pub fn dir() -> PathBuf {
    let admin = admin_kubeconfig();
    admin
        .parent()
        .and_then(|p| p.parent())
        .unwrap()
        .to_path_buf()
}

/// The whole control plane stopped (SIGSTOP: etcd, kube-apiserver, the controller manager
/// and the scheduler) until dropped, when it continues. Dropped on a failed test too, so
/// no test leaves the control plane stopped.
pub struct Stopped(Vec<String>);

fn signal(sig: &str, pids: &[String]) {
    for pid in pids {
        let ok = std::process::Command::new("kill")
            .args([sig, pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok || sig == "-CONT", "kill {sig} {pid} failed");
    }
}

impl Stopped {
    pub fn now() -> Self {
        let components = [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "etcd",
        ];
        let pids: Vec<String> = components
            .iter()
            .map(|c| {
                let f = dir().join(format!("{c}.pid"));
                std::fs::read_to_string(&f)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                    .trim()
                    .to_string()
            })
            .collect();
        signal("-STOP", &pids);
        Self(pids)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal("-CONT", &self.0);
    }
}
