//! subPath against containerd, through a real agent, with a pod that attacks its own
//! volume: an init container plants symlinks out of an emptyDir (`/`, `/etc`, `../..`);
//! a container mounting one of them with `subPath` is refused with the reason and never
//! runs, while subPaths that stay inside (a directory, a file, a symlink within the
//! volume, a directory that did not exist) are mounted; the pod's removal takes its
//! mounts with it and leaves the volume's targets alone.

mod common;

use std::time::Duration;

use common::agent::Agent;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

const IMAGE: &str = "localhost/podvisor/busybox:test";

fn status<'a>(p: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|s| s.name == name)
}

fn waiting(p: &Pod, name: &str) -> Option<(String, String)> {
    let w = status(p, name)?.state.as_ref()?.waiting.as_ref()?;
    Some((w.reason.clone()?, w.message.clone().unwrap_or_default()))
}

/// The manifest: `plant` prepares the volume; `good` mounts what stays inside and copies
/// what it sees to `/out`; `evil` mounts `x`, a symlink to `/` (or what `sub` names).
fn manifest(out: &std::path::Path, sub: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: sp}}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {{name: data, emptyDir: {{}}}}
  - {{name: out, hostPath: {{path: {out}}}}}
  initContainers:
  - name: plant
    image: {IMAGE}
    volumeMounts: [{{name: data, mountPath: /data}}]
    command: ["sh", "-c", "mkdir -p /data/dir && echo inside > /data/dir/f && echo file > /data/file && ln -s dir /data/link && ln -s / /data/x && ln -s /etc /data/etc && ln -s ../.. /data/up"]
  containers:
  - name: good
    image: {IMAGE}
    volumeMounts:
    - {{name: out, mountPath: /out}}
    - {{name: data, mountPath: /d, subPath: dir}}
    - {{name: data, mountPath: /f, subPath: file}}
    - {{name: data, mountPath: /l, subPath: link}}
    - {{name: data, mountPath: /n, subPath: new/deep}}
    command: ["sh", "-c", "cat /d/f /f /l/f > /out/seen.tmp; ls -a /n >> /out/seen.tmp; mv /out/seen.tmp /out/seen; exec sleep 3600"]
  - name: evil
    image: {IMAGE}
    volumeMounts:
    - {{name: out, mountPath: /out}}
    - {{name: data, mountPath: /host, subPath: "{sub}"}}
    command: ["sh", "-c", "ls /host > /out/evil; exec sleep 3600"]
"#,
        out = out.display()
    )
}

fn mounts_under(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(String::from))
        .filter(|m| m.starts_with(&*dir.to_string_lossy()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subpath_never_leaves_its_volume() {
    let agent = Agent::start("subpath").await;
    let out = agent.out_dir();
    for (round, sub) in ["x", "etc/hostname", "up", "x/tmp/planted"]
        .iter()
        .enumerate()
    {
        agent.write("sp.yaml", &manifest(&out, sub));
        let p = agent
            .wait_pod("sp", "evil refused", Duration::from_secs(60), |p| {
                waiting(p, "evil").is_some_and(|(r, _)| r == "CreateContainerConfigError")
            })
            .await;
        let (_, message) = waiting(&p, "evil").unwrap();
        assert!(
            message.contains(sub) && message.contains("outside the volume"),
            "round {round}: {message}"
        );
        let seen = common::eventually("good's view", Duration::from_secs(30), || async {
            std::fs::read_to_string(out.join("seen")).ok()
        })
        .await;
        assert_eq!(seen, "inside\nfile\ninside\n.\n..\n", "round {round}");
        assert!(
            !out.join("evil").exists(),
            "round {round}: evil ran and saw {:?}",
            std::fs::read_to_string(out.join("evil"))
        );
        assert!(
            !std::path::Path::new("/tmp/planted").exists(),
            "round {round}: a directory was made outside the volume"
        );
        assert_eq!(
            mounts_under(&agent.state_dir()).len(),
            4,
            "round {round}: good's four subPaths are bound under the pod's directory"
        );
        agent.remove("sp.yaml");
        common::eventually("the pod gone", Duration::from_secs(60), || async {
            agent.pod("sp").await.is_none().then_some(())
        })
        .await;
        assert_eq!(
            mounts_under(&agent.state_dir()),
            Vec::<String>::new(),
            "round {round}: the pod's removal unmounts its subPaths"
        );
        std::fs::remove_file(out.join("seen")).unwrap();
    }
    assert!(std::path::Path::new("/etc/hostname").exists());
}
