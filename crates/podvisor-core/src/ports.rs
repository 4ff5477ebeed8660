//! A probe's or hook's port as its container names it: a number, or the name of one of the
//! container's ports (the kubelet's `ResolveContainerPort`).

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("port {0:?} not found in the container's ports")]
    NotFound(String),
    #[error("invalid port number: {0}")]
    OutOfRange(i64),
}

/// The port number `port` stands for in container `c`.
pub fn resolve(c: &Container, port: &IntOrString) -> Result<u16, PortError> {
    let n = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => match c
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
        {
            Some(p) => i64::from(p.container_port),
            None => name
                .parse::<i64>()
                .map_err(|_| PortError::NotFound(name.clone()))?,
        },
    };
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .ok_or(PortError::OutOfRange(n))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ContainerPort;

    use super::*;

    #[test]
    fn numbers_and_names_resolve_and_the_rest_is_refused() {
        let c = Container {
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(resolve(&c, &IntOrString::Int(80)), Ok(80));
        assert_eq!(resolve(&c, &IntOrString::String("http".into())), Ok(8080));
        assert_eq!(resolve(&c, &IntOrString::String("81".into())), Ok(81));
        assert_eq!(
            resolve(&c, &IntOrString::String("grpc".into())),
            Err(PortError::NotFound("grpc".into()))
        );
        assert_eq!(
            resolve(&c, &IntOrString::Int(0)),
            Err(PortError::OutOfRange(0))
        );
        assert_eq!(
            resolve(&c, &IntOrString::Int(70000)),
            Err(PortError::OutOfRange(70000))
        );
    }
}
