//! Which resource a request path names: `/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]`
//! and the same under `/apis/{group}/v1`.

use podvisor_store::Resource;

#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub resource: Resource,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

fn resolve(group: &str, segs: &[&str]) -> Option<Target> {
    let (namespace, rest) = match segs {
        // A namespace itself, or its status: /namespaces/{name}[/status].
        ["namespaces", name] => (None, vec!["namespaces", name]),
        ["namespaces", name, sub] if Resource::find(group, sub).is_none() => {
            (None, vec!["namespaces", name, sub])
        }
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest.to_vec()),
        rest => (None, rest.to_vec()),
    };
    let (plural, name, sub) = match rest.as_slice() {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    let resource = Resource::find(group, plural)?;
    if namespace.is_some() && !resource.namespaced() {
        return None;
    }
    Some(Target {
        resource,
        namespace,
        name,
        subresource: sub,
    })
}

/// `None` for paths that name no served resource.
pub fn parse(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", "v1", rest @ ..] => resolve("", rest),
        ["apis", group, "v1", rest @ ..] => resolve(group, rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podvisor_core::Kind;

    #[test]
    fn paths_name_resources_namespaces_and_subresources() {
        let t = parse("/api/v1/namespaces/default/pods/web/log").unwrap();
        assert_eq!(
            (
                t.resource.kind,
                t.namespace.as_deref(),
                t.name.as_deref(),
                t.subresource.as_deref()
            ),
            (Kind::Pod, Some("default"), Some("web"), Some("log"))
        );
        let t = parse("/api/v1/pods").unwrap();
        assert_eq!(
            (t.resource.kind, t.namespace, t.name),
            (Kind::Pod, None, None)
        );
        let t = parse("/api/v1/namespaces/kube-system").unwrap();
        assert_eq!(
            (t.resource.kind, t.name.as_deref()),
            (Kind::Namespace, Some("kube-system"))
        );
        let t = parse("/api/v1/namespaces/x/status").unwrap();
        assert_eq!(
            (t.resource.kind, t.subresource.as_deref()),
            (Kind::Namespace, Some("status"))
        );
        let t = parse("/apis/apps/v1/namespaces/default/replicasets/rs/scale").unwrap();
        assert_eq!(t.resource.kind, Kind::ReplicaSet);
        assert!(parse("/api/v1/namespaces/default/nodes").is_none());
        assert!(parse("/api/v1/widgets").is_none());
        assert_eq!(
            parse("/apis/batch/v1/jobs").unwrap().resource.kind,
            Kind::Job
        );
        assert!(parse("/apis/batch/v2/jobs").is_none());
    }
}
