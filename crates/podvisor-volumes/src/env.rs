//! A container's environment as the kubelet makes it (`makeEnvironmentVariables`): the
//! Services' variables (`services.rs`), then `envFrom` (each ConfigMap's or Secret's keys,
//! with the prefix; keys that are not variable names are skipped and reported), then `env`
//! in order, a later name replacing an earlier one. A value's `$(VAR)` references expand
//! to what is defined before it; a `valueFrom` reads the downward API, a ConfigMap key or a
//! Secret key. A required object or key that does not exist fails the container's start
//! (`CreateContainerConfigError`).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{ConfigMap, Container, EnvFromSource, EnvVar};
use podvisor_core::expand::{MAX_STRING, MAX_TOTAL, TooLong, expand};

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
    /// Every `NAME=value` together, held under the kernel's `execve` limit
    /// (`podvisor_core::expand`): a pod's spec cannot make the agent hold more.
    bytes: usize,
    /// `envFrom` keys that are not valid variable names (the kubelet's
    /// `InvalidEnvironmentVariableNames` event lists them).
    pub skipped: Vec<String>,
    /// Why the Services' variables are missing: the cluster could not be asked.
    pub services_unavailable: Option<String>,
}

impl Environment {
    /// Defines `name` (a later definition replaces an earlier one), unless `NAME=value`
    /// or the whole environment would pass what a process can be given.
    pub fn set(&mut self, name: String, value: String) -> Result<(), TooLong> {
        let len = name.len() + value.len() + 2;
        if len > MAX_STRING {
            return Err(TooLong::String);
        }
        let old = self.index.get(&name).map_or(0, |&i| {
            let (n, v) = &self.vars[i];
            n.len() + v.len() + 2
        });
        let bytes = self.bytes - old + len;
        if bytes > MAX_TOTAL {
            return Err(TooLong::Total);
        }
        self.bytes = bytes;
        match self.index.get(&name) {
            Some(&i) => self.vars[i].1 = value,
            None => {
                self.index.insert(name.clone(), self.vars.len());
                self.vars.push((name, value));
            }
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.index.get(name).map(|&i| self.vars[i].1.as_str())
    }

    /// `s` with `$(VAR)` references to defined variables expanded, no longer than a
    /// process can be given.
    pub fn expand(&self, s: &str) -> Result<String, TooLong> {
        expand(s, |n| self.get(n), MAX_STRING)
    }

    /// Variables in order, a later name replacing an earlier one.
    pub fn of(vars: impl IntoIterator<Item = (String, String)>) -> Result<Self, TooLong> {
        let mut env = Self::default();
        for (k, v) in vars {
            env.set(k, v)?;
        }
        Ok(env)
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
    let mut env =
        Environment::of(service_env(&services)).map_err(too_long("the Services' variables"))?;
    env.services_unavailable = unavailable;
    for from in c.env_from.iter().flatten() {
        env_from(source, f, from, &mut env).await?;
    }
    for e in c.env.iter().flatten() {
        if let Some(v) = var_value(source, f, c, e, &env).await? {
            env.set(e.name.clone(), v)
                .map_err(too_long(&format!("env {}", e.name)))?;
        }
    }
    Ok(env)
}

/// A variable past the kernel's limits: the container cannot start with it.
fn too_long(what: &str) -> impl FnOnce(TooLong) -> VolumeError + '_ {
    move |e| VolumeError::TooLong {
        what: what.to_string(),
        source: e,
    }
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
            let value = String::from_utf8_lossy(&v).into_owned();
            env.set(name, value).map_err(too_long("envFrom"))?;
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
        let value = env.expand(e.value.as_deref().unwrap_or(""));
        return value
            .map(Some)
            .map_err(too_long(&format!("env {}", e.name)));
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
