//! A private registry on loopback for the image-pull tests: Debian's docker-registry (the
//! CNCF distribution registry, `PODVISOR_REGISTRY`, installed by `scripts/test-deps`) with
//! an htpasswd login, and the test image pushed into it with skopeo (`PODVISOR_SKOPEO`).
//! containerd pulls from a `localhost` registry over plain HTTP.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const USER: &str = "alice";
pub const PASSWORD: &str = "s3cret-pw";

fn tool(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is unset: run the tests with scripts/test (scripts/test-deps installs it)")
    })
}

pub struct Registry {
    pub port: u16,
    dir: PathBuf,
    child: Child,
}

impl Registry {
    /// Starts a registry that wants `USER`'s login, and waits until it answers.
    pub async fn start(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("podvisor-registry-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let hash = bcrypt::hash(PASSWORD, 4).unwrap();
        std::fs::write(dir.join("htpasswd"), format!("{USER}:{hash}\n")).unwrap();
        let port = {
            let l = super::agent::below_ephemeral();
            l.local_addr().unwrap().port()
        };
        let config = format!(
            "version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {d}/data}}}}\n\
             http: {{addr: \"127.0.0.1:{port}\"}}\nauth: {{htpasswd: {{realm: podvisor, path: {d}/htpasswd}}}}\n",
            d = dir.display()
        );
        std::fs::write(dir.join("config.yml"), config).unwrap();
        let log = std::fs::File::create(dir.join("registry.log")).unwrap();
        let child = Command::new(tool("PODVISOR_REGISTRY"))
            .arg("serve")
            .arg(dir.join("config.yml"))
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("the registry starts");
        let r = Self { port, dir, child };
        super::wait_for("the registry answering", Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
        .await;
        r
    }

    /// Pushes the test image as `repo:tag`; its reference for pods.
    pub fn push(&self, repo: &str, tag: &str) -> String {
        let archive = super::containerd::dir().join("images").join("busybox.tar");
        let image = format!("localhost:{}/{repo}:{tag}", self.port);
        let out = Command::new(tool("PODVISOR_SKOPEO"))
            .args([
                "copy",
                "--insecure-policy",
                "--dest-tls-verify=false",
                "--dest-creds",
            ])
            .arg(format!("{USER}:{PASSWORD}"))
            .arg(format!("oci-archive:{}", archive.display()))
            .arg(format!("docker://{image}"))
            .output()
            .unwrap();
        super::succeeded(out);
        image
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
