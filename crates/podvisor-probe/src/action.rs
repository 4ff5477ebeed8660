//! What a probe or a hook does, resolved against its container once (port names, the
//! API's defaults, `$(VAR)` in an exec command): an [`Action`], ready to run.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, HTTPGetAction, LifecycleHandler, Probe};
use podvisor_core::expand::expand_static;
use podvisor_core::ports::{self, PortError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// An HTTP GET, from the node to the pod (or to `host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpGet {
    pub scheme: Scheme,
    /// `None`: the pod's IP.
    pub host: Option<String>,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    pub headers: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A command run in the container (CRI `ExecSync`); exit code 0 is success.
    Exec(Vec<String>),
    HttpGet(HttpGet),
    /// A TCP connection to the port; connecting is success.
    Tcp {
        host: Option<String>,
        port: u16,
    },
    /// `grpc.health.v1.Health/Check` on the pod's port; `SERVING` is success.
    Grpc {
        port: u16,
        service: String,
    },
    /// A hook that waits.
    Sleep(Duration),
}

/// Why a probe or hook cannot be run (validation refuses all of these; a pod that got
/// past it anyway is reported, never run blind).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("no handler")]
    NoHandler,
    #[error(transparent)]
    Port(#[from] PortError),
    #[error("tcpSocket is not a lifecycle handler")]
    TcpHook,
    #[error("the command {0}")]
    TooLong(#[from] podvisor_core::expand::TooLong),
}

fn http_get(c: &Container, h: &HTTPGetAction) -> Result<HttpGet, ActionError> {
    let path = h.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("/");
    Ok(HttpGet {
        scheme: match h.scheme.as_deref() {
            Some("HTTPS") => Scheme::Https,
            _ => Scheme::Http,
        },
        host: h.host.clone().filter(|h| !h.is_empty()),
        port: ports::resolve(c, &h.port)?,
        path: if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        },
        headers: h
            .http_headers
            .iter()
            .flatten()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
    })
}

fn exec(c: &Container, command: Option<&Vec<String>>) -> Result<Action, ActionError> {
    let command = command.map_or(&[][..], Vec::as_slice);
    let expanded = expand_static(command, c.env.as_deref().unwrap_or(&[]))?;
    Ok(Action::Exec(expanded))
}

impl Action {
    /// The action of container `c`'s probe `p`.
    pub fn of_probe(c: &Container, p: &Probe) -> Result<Self, ActionError> {
        if let Some(e) = &p.exec {
            return exec(c, e.command.as_ref());
        }
        if let Some(h) = &p.http_get {
            return Ok(Action::HttpGet(http_get(c, h)?));
        }
        if let Some(t) = &p.tcp_socket {
            return Ok(Action::Tcp {
                host: t.host.clone().filter(|h| !h.is_empty()),
                port: ports::resolve(c, &t.port)?,
            });
        }
        if let Some(g) = &p.grpc {
            let port = u16::try_from(g.port)
                .ok()
                .filter(|p| *p > 0)
                .ok_or(PortError::OutOfRange(g.port.into()))?;
            return Ok(Action::Grpc {
                port,
                service: g.service.clone().unwrap_or_default(),
            });
        }
        Err(ActionError::NoHandler)
    }

    /// The action of container `c`'s hook `h`.
    pub fn of_hook(c: &Container, h: &LifecycleHandler) -> Result<Self, ActionError> {
        if let Some(e) = &h.exec {
            return exec(c, e.command.as_ref());
        }
        if let Some(g) = &h.http_get {
            return Ok(Action::HttpGet(http_get(c, g)?));
        }
        if let Some(s) = &h.sleep {
            return Ok(Action::Sleep(Duration::from_secs(
                s.seconds.max(0).unsigned_abs(),
            )));
        }
        if h.tcp_socket.is_some() {
            return Err(ActionError::TcpHook);
        }
        Err(ActionError::NoHandler)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerPort, EnvVar, ExecAction, GRPCAction, SleepAction};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;

    fn container() -> Container {
        Container {
            name: "app".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..Default::default()
            }]),
            env: Some(vec![EnvVar {
                name: "FILE".into(),
                value: Some("/tmp/ok".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn probes_resolve_ports_defaults_and_static_variables() {
        let c = container();
        let p = Probe {
            http_get: Some(HTTPGetAction {
                port: IntOrString::String("http".into()),
                path: Some("healthz?x=1".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let Action::HttpGet(h) = Action::of_probe(&c, &p).unwrap() else {
            panic!("an HTTP GET");
        };
        assert_eq!(
            (h.port, h.path.as_str(), h.scheme),
            (8080, "/healthz?x=1", Scheme::Http)
        );
        let p = Probe {
            exec: Some(ExecAction {
                command: Some(vec!["cat".into(), "$(FILE)".into()]),
            }),
            ..Default::default()
        };
        assert_eq!(
            Action::of_probe(&c, &p).unwrap(),
            Action::Exec(vec!["cat".into(), "/tmp/ok".into()])
        );
        let p = Probe {
            grpc: Some(GRPCAction {
                port: 9090,
                service: None,
                mode: None,
            }),
            ..Default::default()
        };
        assert_eq!(
            Action::of_probe(&c, &p).unwrap(),
            Action::Grpc {
                port: 9090,
                service: String::new()
            }
        );
        assert_eq!(
            Action::of_probe(&c, &Probe::default()),
            Err(ActionError::NoHandler)
        );
        let h = LifecycleHandler {
            sleep: Some(SleepAction { seconds: 3 }),
            ..Default::default()
        };
        assert_eq!(
            Action::of_hook(&c, &h).unwrap(),
            Action::Sleep(Duration::from_secs(3))
        );
    }
}
