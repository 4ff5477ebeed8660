//! What the API server checks of a streaming request against the pod, as kube-apiserver
//! does before it calls the node: a finished pod has nothing to exec into, and a request
//! that names no container gets the pod's only one or a list to choose from.

use k8s_openapi::api::core::v1::Pod;
use podvisor_streaming::{Session, StreamError, Verb};

pub(super) fn session_for(pod: &Pod, verb: Verb, session: Session) -> Result<Session, StreamError> {
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    if verb != Verb::PortForward && matches!(phase, "Succeeded" | "Failed") {
        let what = if verb == Verb::Exec {
            "exec into"
        } else {
            "attach to"
        };
        return Err(StreamError::BadRequest(format!(
            "cannot {what} a container in a completed pod; current phase is {phase}"
        )));
    }
    if verb == Verb::PortForward {
        return Ok(session);
    }
    let container = container_for(pod, session.container())
        .map_err(|e| StreamError::BadRequest(e.to_string()))?;
    Ok(session.with_container(&container))
}

/// Why a request's container cannot be had, as kube-apiserver words it (for logs too).
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum NoContainer {
    #[error("container {container} is not valid for pod {pod}")]
    NotInPod { container: String, pod: String },
    #[error("a container name must be specified for pod {pod}, choose one of: [{}]{}", main.join(" "), init_choice(init))]
    Unnamed {
        pod: String,
        main: Vec<String>,
        init: Vec<String>,
    },
}

fn init_choice(init: &[String]) -> String {
    if init.is_empty() {
        return String::new();
    }
    format!(" or one of the init containers: [{}]", init.join(" "))
}

/// The container a request names, or the pod's only one.
pub(crate) fn container_for(pod: &Pod, asked: Option<&str>) -> Result<String, NoContainer> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let main: Vec<String> = spec
        .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    let init: Vec<String> = spec
        .and_then(|s| s.init_containers.as_ref())
        .map(|cs| cs.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    let ephemeral = spec.and_then(|s| s.ephemeral_containers.as_ref());
    let is_ephemeral = |c: &str| ephemeral.is_some_and(|e| e.iter().any(|ec| ec.name == c));
    match asked {
        Some(c) if main.iter().chain(&init).any(|n| n == c) || is_ephemeral(c) => Ok(c.to_string()),
        Some(c) => Err(NoContainer::NotInPod {
            container: c.to_string(),
            pod: name,
        }),
        None if main.len() == 1 => Ok(main[0].clone()),
        None => Err(NoContainer::Unnamed {
            pod: name,
            main,
            init,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: &[&str], phase: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {
                "containers": containers.iter().map(|c| serde_json::json!({"name": c})).collect::<Vec<_>>(),
                "initContainers": [{"name": "setup"}],
            },
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    fn exec(query: &str) -> Session {
        Session::parse(Verb::Exec, query).unwrap()
    }

    #[test]
    fn the_only_container_is_the_default() {
        let s = session_for(
            &pod(&["app"], "Running"),
            Verb::Exec,
            exec("command=ls&stdout=1"),
        );
        assert_eq!(s.unwrap().container(), Some("app"));
    }

    #[test]
    fn with_several_the_client_must_choose_from_a_list() {
        let p = pod(&["app", "side"], "Running");
        let e = session_for(&p, Verb::Exec, exec("command=ls&stdout=1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a container name must be specified for pod web, choose one of: [app side] or one of the init containers: [setup]"
        );
        let ok = session_for(&p, Verb::Exec, exec("command=ls&stdout=1&container=setup"));
        assert_eq!(ok.unwrap().container(), Some("setup"));
        let e =
            session_for(&p, Verb::Exec, exec("command=ls&stdout=1&container=nope")).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            (400, "container nope is not valid for pod web")
        );
    }

    #[test]
    fn a_completed_pod_takes_no_exec_or_attach() {
        let p = pod(&["app"], "Succeeded");
        let e = session_for(&p, Verb::Exec, exec("command=ls&stdout=1")).unwrap_err();
        assert!(e.to_string().contains("current phase is Succeeded"), "{e}");
        let attach = Session::parse(Verb::Attach, "stdout=1").unwrap();
        assert!(session_for(&p, Verb::Attach, attach).is_err());
    }
}
