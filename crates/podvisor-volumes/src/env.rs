//! A container's environment as the kubelet makes it (`makeEnvironmentVariables`): the
//! Services' variables (`services.rs`), then `envFrom` (each ConfigMap's or Secret's keys,
//! with the prefix; keys that are not variable names are skipped and reported), then `env`
//! in order, a later name replacing an earlier one. A value's `$(VAR)` references expand
//! to what is defined before it; a `valueFrom` reads the downward API, a ConfigMap key or a
//! Secret key. A required object or key that does not exist fails the container's start
//! (`CreateContainerConfigError`).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{ConfigMap, Container, EnvFromSource, EnvVar};
use podvisor_core::expand::expand;

use crate::downward::{For, PodFacts, field_value, resource_value};
use crate::error::{SourceError, VolumeError};
use crate::payload::secret_data;
use crate::services::service_env;
use crate::source::ObjectSource;

/// The variables in the order they were first defined.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Environment {
    pub vars: Vec<(String, String)>,
    index: HashMap<String, usize>,
    /// `envFrom` keys that are not valid variable names (the kubelet's
    /// `InvalidEnvironmentVariableNames` event lists them).
    pub skipped: Vec<String>,
    /// Why the Services' variables are missing: the cluster could not be asked.
    pub services_unavailable: Option<String>,
}

impl Environment {
    fn set(&mut self, name: String, value: String) {
        match self.index.get(&name) {
            Some(&i) => self.vars[i].1 = value,
            None => {
                self.index.insert(name.clone(), self.vars.len());
                self.vars.push((name, value));
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.index.get(name).map(|&i| self.vars[i].1.as_str())
    }

    /// `s` with `$(VAR)` references to defined variables expanded.
    pub fn expand(&self, s: &str) -> String {
        expand(s, |n| self.get(n).map(str::to_string))
    }
}

/// Variables in order, a later name replacing an earlier one.
impl FromIterator<(String, String)> for Environment {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut env = Self::default();
        for (k, v) in iter {
            env.set(k, v);
        }
        env
    }
}

/// A variable name as Kubernetes accepts it: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
pub fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "-._".contains(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
}

/// Container `c`'s environment.
pub async fn container_env(
    source: &dyn ObjectSource,
    f: &PodFacts<'_>,
    c: &Container,
) -> Result<Environment, VolumeError> {
    // The Services' variables first: anything the container defines replaces them, and
    // its values may refer to them.
    let ns = f.pod.metadata.namespace.as_deref().unwrap_or("default");
    let links = f.pod.spec.as_ref().and_then(|s| s.enable_service_links) != Some(false);
    // Beyond the kubelet, which would hold the container: a cluster that cannot be reached
    // (and was not read since the agent started) does not keep a container from
    // restarting; it starts without the Services' variables, and says so.
    let (services, unavailable) = match source.services(ns, links).await {
        Ok(s) => (s, None),
        Err(SourceError::Unavailable(why)) => (Vec::new(), Some(why)),
        Err(e) => return Err(fetch_error("services", ns, "", e)),
    };
    let mut env: Environment = service_env(&services).into_iter().collect();
    env.services_unavailable = unavailable;
    for from in c.env_from.iter().flatten() {
        env_from(source, f, from, &mut env).await?;
    }
    for e in c.env.iter().flatten() {
        if let Some(v) = var_value(source, f, c, e, &env).await? {
            env.set(e.name.clone(), v);
        }
    }
    Ok(env)
}

async fn env_from(
    source: &dyn ObjectSource,
    f: &PodFacts<'_>,
    from: &EnvFromSource,
    env: &mut Environment,
) -> Result<(), VolumeError> {
    let ns = f.pod.metadata.namespace.as_deref().unwrap_or("default");
    let data: Option<BTreeMap<String, Vec<u8>>> = if let Some(r) = &from.config_map_ref {
        let found = source
            .config_map(ns, &r.name)
            .await
            .map_err(|e| fetch_error("configmap", ns, &r.name, e))?;
        match found {
            Some(cm) => Some(strings(&cm)),
            None if r.optional == Some(true) => None,
            None => return Err(not_found("configmap", ns, &r.name)),
        }
    } else if let Some(r) = &from.secret_ref {
        let found = source
            .secret(ns, &r.name)
            .await
            .map_err(|e| fetch_error("secret", ns, &r.name, e))?;
        match found {
            Some(s) => Some(secret_data(&s)),
            None if r.optional == Some(true) => None,
            None => return Err(not_found("secret", ns, &r.name)),
        }
    } else {
        None
    };
    let prefix = from.prefix.as_deref().unwrap_or("");
    for (k, v) in data.into_iter().flatten() {
        let name = format!("{prefix}{k}");
        if is_env_name(&name) {
            env.set(name, String::from_utf8_lossy(&v).into_owned());
        } else {
            env.skipped.push(name);
        }
    }
    Ok(())
}

/// A ConfigMap's `data` (the environment never reads `binaryData`).
fn strings(cm: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    cm.data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect()
}

pub(crate) fn not_found(kind: &'static str, ns: &str, name: &str) -> VolumeError {
    VolumeError::NotFound {
        kind,
        namespace: ns.to_string(),
        name: name.to_string(),
    }
}

pub(crate) fn fetch_error(
    kind: &'static str,
    ns: &str,
    name: &str,
    source: crate::error::SourceError,
) -> VolumeError {
    VolumeError::Source {
        kind,
        namespace: ns.to_string(),
        name: name.to_string(),
        source,
    }
}

/// One `env` entry's value; `None`: an optional reference that does not resolve (the
/// variable is not set).
async fn var_value(
    source: &dyn ObjectSource,
    f: &PodFacts<'_>,
    c: &Container,
    e: &EnvVar,
    env: &Environment,
) -> Result<Option<String>, VolumeError> {
    let Some(from) = &e.value_from else {
        return Ok(Some(env.expand(e.value.as_deref().unwrap_or(""))));
    };
    let ns = f.pod.metadata.namespace.as_deref().unwrap_or("default");
    if let Some(r) = &from.field_ref {
        return field_value(f, &r.field_path, For::Env).map(Some);
    }
    if let Some(r) = &from.resource_field_ref {
        return resource_value(f, r, Some(&c.name)).map(Some);
    }
    if let Some(r) = &from.config_map_key_ref {
        let found = source
            .config_map(ns, &r.name)
            .await
            .map_err(|e| fetch_error("configmap", ns, &r.name, e))?;
        let data = found.map(|cm| strings(&cm));
        return key_value(
            data,
            "configmap",
            ns,
            &r.name,
            &r.key,
            r.optional == Some(true),
        );
    }
    if let Some(r) = &from.secret_key_ref {
        let found = source
            .secret(ns, &r.name)
            .await
            .map_err(|e| fetch_error("secret", ns, &r.name, e))?;
        let data = found.map(|s| secret_data(&s));
        return key_value(
            data,
            "secret",
            ns,
            &r.name,
            &r.key,
            r.optional == Some(true),
        );
    }
    Err(VolumeError::FieldPath(format!(
        "env {}: an unsupported valueFrom",
        e.name
    )))
}

fn key_value(
    data: Option<BTreeMap<String, Vec<u8>>>,
    kind: &'static str,
    ns: &str,
    name: &str,
    key: &str,
    optional: bool,
) -> Result<Option<String>, VolumeError> {
    let Some(data) = data else {
        return if optional {
            Ok(None)
        } else {
            Err(not_found(kind, ns, name))
        };
    };
    match data.get(key) {
        Some(v) => Ok(Some(String::from_utf8_lossy(v).into_owned())),
        None if optional => Ok(None),
        None => Err(VolumeError::MissingKey {
            what: format!("{kind} {ns}/{name}"),
            key: key.to_string(),
        }),
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
