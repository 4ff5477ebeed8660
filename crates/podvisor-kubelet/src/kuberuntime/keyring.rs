//! Registry credentials from a pod's `imagePullSecrets`, as the kubelet's credential
//! provider reads and matches them: `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`,
//! `{"auths": {...}}`) and `kubernetes.io/dockercfg` (`.dockercfg`) Secrets; each entry
//! keyed by a registry (a scheme and a `/v1/` or `/v2/` path are dropped), matched against
//! the image's repository by host (`*` globs a label), port and path prefix, the most
//! specific keys first; Docker Hub's key serves images without a registry.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use podvisor_cri::RegistryAuth;
use serde::Deserialize;

const DEFAULT_REGISTRY: &str = "index.docker.io";

#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error("secret {0:?} holds no valid Docker config: {1}")]
    Malformed(String, String),
}

#[derive(Deserialize, Default)]
struct Entry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
}

#[derive(Deserialize)]
struct ConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

/// Credentials by registry key, from any number of secrets.
#[derive(Default)]
pub(crate) struct Keyring {
    creds: Vec<(String, RegistryAuth)>,
}

impl Keyring {
    /// Adds a secret's entries; a secret of another type adds nothing.
    pub(crate) fn add(&mut self, secret: &Secret) -> Result<(), KeyringError> {
        let name = secret.metadata.name.clone().unwrap_or_default();
        let bad = |e: String| KeyringError::Malformed(name.clone(), e);
        let data = |k: &str| secret.data.as_ref().and_then(|d| d.get(k)).map(|b| &b.0);
        let entries = match (
            secret.type_.as_deref(),
            data(".dockerconfigjson"),
            data(".dockercfg"),
        ) {
            (Some("kubernetes.io/dockerconfigjson"), Some(raw), _) => {
                serde_json::from_slice::<ConfigJson>(raw)
                    .map_err(|e| bad(e.to_string()))?
                    .auths
            }
            (Some("kubernetes.io/dockercfg"), _, Some(raw)) => {
                serde_json::from_slice::<BTreeMap<String, Entry>>(raw)
                    .map_err(|e| bad(e.to_string()))?
            }
            _ => return Ok(()),
        };
        // No server address goes with a login, as from the kubelet: containerd drops a
        // login whose address does not parse as a URL with the image's host.
        for (registry, e) in entries {
            let auth = login(e).map_err(|e| bad(e.to_string()))?;
            self.creds.push((key_of(&registry), auth));
        }
        Ok(())
    }

    /// The credentials to try for `image`, in order: those of every matching key, the
    /// most specific first; else Docker Hub's for a Hub image.
    pub(crate) fn lookup(&self, image: &str) -> Vec<RegistryAuth> {
        let repo = repository(image);
        let mut keys: Vec<&String> = self.creds.iter().map(|(k, _)| k).collect();
        keys.sort_by(|a, b| b.cmp(a));
        keys.dedup();
        let found: Vec<RegistryAuth> = keys
            .iter()
            .filter(|k| matches(k, &repo))
            .flat_map(|k| self.of(k))
            .collect();
        if found.is_empty() && is_hub(&repo) {
            return self.of(DEFAULT_REGISTRY);
        }
        found
    }

    fn of(&self, key: &str) -> Vec<RegistryAuth> {
        let mine = self.creds.iter().filter(|(k, _)| k == key);
        mine.map(|(_, a)| a.clone()).collect()
    }
}

/// Why an entry's `auth` gives no login.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum AuthField {
    #[error("auth is not base64")]
    NotBase64,
    #[error("auth is not text")]
    NotText,
    #[error("auth is not user:password")]
    NoColon,
}

/// An entry's user and password: from `auth` (base64 `user:password`) when set.
fn login(e: Entry) -> Result<RegistryAuth, AuthField> {
    let (username, password) = if e.auth.is_empty() {
        (e.username, e.password)
    } else {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(e.auth.trim())
            .map_err(|_| AuthField::NotBase64)?;
        let text = String::from_utf8(raw).map_err(|_| AuthField::NotText)?;
        let (u, p) = text.split_once(':').ok_or(AuthField::NoColon)?;
        (u.to_string(), p.to_string())
    };
    Ok(RegistryAuth {
        username,
        password,
        ..RegistryAuth::default()
    })
}

/// A registry key without its scheme, and without Docker's `/v1/` or `/v2/` API path.
fn key_of(registry: &str) -> String {
    let s = registry
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let (host, path) = s.split_once('/').unwrap_or((s, ""));
    let path = ["v1/", "v2/"]
        .iter()
        .find_map(|api| path.strip_prefix(api))
        .unwrap_or(path);
    if path.is_empty() {
        host.to_string()
    } else {
        format!("{host}/{path}")
    }
}

/// An image's repository, with Docker Hub's host and `library/` made explicit: the
/// reference without its tag or digest.
fn repository(image: &str) -> String {
    let no_digest = image.split('@').next().unwrap_or(image);
    let last_slash = no_digest.rfind('/').map_or(0, |i| i + 1);
    let repo = match no_digest[last_slash..].rfind(':') {
        Some(i) => &no_digest[..last_slash + i],
        None => no_digest,
    };
    let first = repo.split('/').next().unwrap_or_default();
    if repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost") {
        repo.to_string()
    } else if repo.contains('/') {
        format!("docker.io/{repo}")
    } else {
        format!("docker.io/library/{repo}")
    }
}

fn is_hub(repo: &str) -> bool {
    let host = repo.split('/').next().unwrap_or_default();
    host == "docker.io" || host == DEFAULT_REGISTRY
}

/// Whether the key `glob` serves the repository `target`: the same number of host labels,
/// each matching (`*` and `?` globs), the same port, and the key's path a prefix.
fn matches(glob: &str, target: &str) -> bool {
    let split = |s: &str| {
        let (hostport, path) = s.split_once('/').map_or((s, ""), |(h, p)| (h, p));
        let (host, port) = hostport.split_once(':').unwrap_or((hostport, ""));
        (host.to_string(), port.to_string(), path.to_string())
    };
    let (gh, gp, gpath) = split(glob);
    let (th, tp, tpath) = split(target);
    let (gl, tl): (Vec<&str>, Vec<&str>) = (gh.split('.').collect(), th.split('.').collect());
    gp == tp
        && gl.len() == tl.len()
        && tpath.starts_with(&gpath)
        && gl
            .iter()
            .zip(&tl)
            .all(|(g, t)| glob_match(g.as_bytes(), t.as_bytes()))
}

/// `*` (any run) and `?` (one byte) globbing, in time bounded by the product of the two
/// lengths whatever the pattern (a Secret's key is anyone's input): on a mismatch, the
/// last `*` takes one byte more.
fn glob_match(g: &[u8], t: &[u8]) -> bool {
    let (mut gi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match g.get(gi) {
            Some(b'*') => {
                star = Some((gi, ti));
                gi += 1;
            }
            Some(&c) if c == b'?' || c == t[ti] => {
                gi += 1;
                ti += 1;
            }
            _ => match star {
                Some((s, m)) => {
                    gi = s + 1;
                    ti = m + 1;
                    star = Some((s, m + 1));
                }
                None => return false,
            },
        }
    }
    g[gi.min(g.len())..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
#[path = "keyring_tests.rs"]
mod tests;
