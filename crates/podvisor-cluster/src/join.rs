//! Joining a cluster with the kubeconfig a user gives: one that already acts as the node
//! (a client certificate) is used as it is; a bootstrap kubeconfig (a token, as
//! `scripts/cluster-up` and kubeadm hand out) is exchanged for the node's own credentials
//! first (`node_credentials`), and those are what the node acts with from then on.

use std::path::Path;
use std::time::Duration;

use kube::config::Kubeconfig;

use crate::RemoteClient;
use crate::bootstrap::{BootstrapError, node_credentials};

/// Whether the kubeconfig's current user has a client certificate of its own.
fn has_certificate(config: &Kubeconfig) -> bool {
    let context = config
        .contexts
        .iter()
        .find(|c| Some(&c.name) == config.current_context.as_ref())
        .or_else(|| config.contexts.first())
        .and_then(|c| c.context.as_ref());
    let user = context.and_then(|c| c.user.as_ref());
    config
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == user)
        .and_then(|a| a.auth_info.as_ref())
        .is_some_and(|a| a.client_certificate.is_some() || a.client_certificate_data.is_some())
}

/// A client acting as `node` in the cluster `kubeconfig` names; node credentials made by
/// bootstrapping are kept in `dir` (and reused by later starts).
/// What joining made: the client, and whether its credentials are the node's own (made by
/// bootstrapping, in `dir`, so the node rotates them).
pub struct Joined {
    pub remote: RemoteClient,
    pub own_credentials: bool,
}

pub async fn join(
    kubeconfig: &Path,
    node: &str,
    dir: &Path,
    (wait, lifetime): (Duration, Option<Duration>),
) -> Result<Joined, BootstrapError> {
    let config =
        Kubeconfig::read_from(kubeconfig).map_err(|source| BootstrapError::Kubeconfig {
            path: kubeconfig.display().to_string(),
            source,
        })?;
    let own_credentials = !has_certificate(&config);
    let path = if !own_credentials {
        kubeconfig.to_path_buf()
    } else {
        std::fs::create_dir_all(dir).map_err(|source| BootstrapError::Write {
            path: dir.display().to_string(),
            source,
        })?;
        node_credentials(kubeconfig, node, dir, (wait, lifetime)).await?
    };
    let remote = RemoteClient::from_kubeconfig(&path).await?;
    // Aside, never in the way: a node joins (and runs its pods) while the cluster is away.
    tokio::spawn(say_skew(remote.kube()));
    Ok(Joined {
        remote,
        own_credentials,
    })
}

/// Logs, once, whether the API server's version is one podvisor supports (`skew`).
async fn say_skew(client: kube::Client) {
    let asked = tokio::time::timeout(Duration::from_secs(60), client.apiserver_version()).await;
    match asked {
        Ok(Ok(v)) => match crate::skew(&v.major, &v.minor) {
            Some(said) => tracing::warn!(server = %v.git_version, "{said}"),
            None => {
                tracing::info!(server = %v.git_version, "the API server's version is supported")
            }
        },
        Ok(Err(e)) => tracing::warn!(error = %e, "the API server's version is unknown"),
        Err(_) => tracing::warn!("the API server did not say its version within a minute"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(user: &str) -> Kubeconfig {
        serde_yaml_ng::from_str(&format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             contexts: [{{name: c, context: {{cluster: k, user: {user}}}}}]\n\
             clusters: [{{name: k, cluster: {{server: 'https://127.0.0.1:1'}}}}]\n\
             users:\n- {{name: boot, user: {{token: abcdef.0123456789abcdef}}}}\n\
             - {{name: node, user: {{client-certificate: /x.pem, client-key: /x.pem}}}}\n"
        ))
        .unwrap()
    }

    #[test]
    fn a_token_user_bootstraps_and_a_certificate_user_is_used_as_it_is() {
        assert!(!has_certificate(&config("boot")));
        assert!(has_certificate(&config("node")));
    }
}
