//! The kubelet server's pod paths: `/{verb}/{namespace}/{pod}[/{uid}]/{container}` for
//! exec, attach, run and containerLogs, `/portForward/{namespace}/{pod}[/{uid}]`.

use podvisor_streaming::{PodTarget, Verb};

/// A pod (and maybe one of its containers) as a path names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodPath {
    pub(crate) pod: PodTarget,
    pub(crate) container: Option<String>,
}

/// A streaming path: its verb and pod.
pub(crate) fn streaming(path: &str) -> Option<(Verb, PodPath)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (verb, container) = match *segs.first()? {
        "exec" => (Verb::Exec, true),
        "attach" => (Verb::Attach, true),
        "portForward" => (Verb::PortForward, false),
        _ => return None,
    };
    Some((verb, pod_path(&segs[1..], container)?))
}

/// `{namespace}/{pod}[/{uid}]` and, if `container`, `/{container}` last.
pub(crate) fn pod_path(segs: &[&str], container: bool) -> Option<PodPath> {
    if segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    let (rest, name) = match container {
        true => (
            &segs[..segs.len().checked_sub(1)?],
            segs.last().map(|c| c.to_string()),
        ),
        false => (segs, None),
    };
    let (namespace, pod, uid) = match rest {
        [ns, pod] => (ns, pod, ""),
        [ns, pod, uid] => (ns, pod, *uid),
        _ => return None,
    };
    Some(PodPath {
        pod: PodTarget {
            namespace: namespace.to_string(),
            name: pod.to_string(),
            uid: uid.to_string(),
        },
        container: name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_paths_name_pod_uid_and_container() {
        let (verb, p) = streaming("/exec/default/web/app").unwrap();
        assert_eq!(verb, Verb::Exec);
        assert_eq!(
            (
                p.pod.namespace.as_str(),
                p.pod.name.as_str(),
                p.pod.uid.as_str()
            ),
            ("default", "web", "")
        );
        assert_eq!(p.container.as_deref(), Some("app"));
        let (_, p) = streaming("/attach/default/web/u-1/app").unwrap();
        assert_eq!(
            (p.pod.uid.as_str(), p.container.as_deref()),
            ("u-1", Some("app"))
        );
        let (verb, p) = streaming("/portForward/default/web").unwrap();
        assert_eq!((verb, p.container), (Verb::PortForward, None));
        assert_eq!(
            streaming("/portForward/default/web/u-1").unwrap().1.pod.uid,
            "u-1"
        );
    }

    #[test]
    fn other_or_malformed_paths_are_not_streams() {
        for p in [
            "/pods",
            "/exec/default",
            "/exec/default/web",
            "/exec//web/c",
            "/exec/a/b/c/d/e",
            "/portForward/a",
        ] {
            assert!(streaming(p).is_none(), "{p}");
        }
    }
}
