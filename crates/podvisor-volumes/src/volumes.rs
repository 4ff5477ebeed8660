//! A pod's API-object volumes: what each holds now (its payload, read from the objects),
//! where it lives (`<pod dir>/volumes/kubernetes.io~<kind>/<name>`, as the kubelet places
//! it), and setting them up: secrets, tokens and the downward API on a tmpfs of their own,
//! never on disk; each written atomically, at every sync of the pod, so a changed object
//! reaches the files (a subPath mount keeps what it bound).

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{
    ConfigMapProjection, DownwardAPIVolumeFile, SecretProjection, Volume, VolumeProjection,
};

use crate::downward::{For, PodFacts, field_value, resource_value};
use crate::env::{fetch_error, not_found};
use crate::error::VolumeError;
use crate::payload::{
    DEFAULT_MODE, FileProjection, Payload, config_map_data, keys_payload, merge, mode, secret_data,
};
use crate::source::{ObjectSource, TokenSpec};

/// A token's life when the projection does not say (the API's default).
const TOKEN_SECONDS: i64 = 3600;

/// The kubelet's plugin directory name of a volume podvisor fills from objects.
fn plugin(v: &Volume) -> Option<&'static str> {
    if v.config_map.is_some() {
        Some("kubernetes.io~configmap")
    } else if v.secret.is_some() {
        Some("kubernetes.io~secret")
    } else if v.downward_api.is_some() {
        Some("kubernetes.io~downward-api")
    } else if v.projected.is_some() {
        Some("kubernetes.io~projected")
    } else {
        None
    }
}

/// Where volume `v` of the pod whose volumes are under `volumes_dir` lives, if podvisor
/// fills it from objects.
pub fn volume_dir(volumes_dir: &Path, v: &Volume) -> Option<PathBuf> {
    plugin(v).map(|p| volumes_dir.join(p).join(&v.name))
}

/// Whether the volume is kept in memory only: everything but a configMap's files.
pub fn in_memory(v: &Volume) -> bool {
    v.secret.is_some() || v.downward_api.is_some() || v.projected.is_some()
}

fn namespace<'a>(f: &'a PodFacts) -> &'a str {
    f.pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// What volume `v` holds now; `None` for a volume not filled from objects.
pub async fn payload(
    source: &dyn ObjectSource,
    f: &PodFacts<'_>,
    v: &Volume,
) -> Result<Option<Payload>, VolumeError> {
    let ns = namespace(f);
    let p = if let Some(s) = &v.config_map {
        let cm = ConfigMapProjection {
            name: s.name.clone(),
            items: s.items.clone(),
            optional: s.optional,
        };
        config_map(source, ns, &cm, mode(s.default_mode, DEFAULT_MODE)).await?
    } else if let Some(s) = &v.secret {
        let name = s.secret_name.clone().unwrap_or_default();
        let sp = SecretProjection {
            name,
            items: s.items.clone(),
            optional: s.optional,
        };
        secret(source, ns, &sp, mode(s.default_mode, DEFAULT_MODE)).await?
    } else if let Some(d) = &v.downward_api {
        let items = d.items.as_deref().unwrap_or(&[]);
        downward(f, items, mode(d.default_mode, DEFAULT_MODE))?
    } else if let Some(p) = &v.projected {
        let default_mode = mode(p.default_mode, DEFAULT_MODE);
        projected(source, f, p.sources.as_deref().unwrap_or(&[]), default_mode).await?
    } else {
        return Ok(None);
    };
    Ok(Some(p))
}

async fn config_map(
    source: &dyn ObjectSource,
    ns: &str,
    s: &ConfigMapProjection,
    default_mode: u32,
) -> Result<Payload, VolumeError> {
    let optional = s.optional == Some(true);
    let found = source
        .config_map(ns, &s.name)
        .await
        .map_err(|e| fetch_error("configmap", ns, &s.name, e))?;
    let Some(cm) = found else {
        return if optional {
            Ok(Payload::new())
        } else {
            Err(not_found("configmap", ns, &s.name))
        };
    };
    let what = format!("configmap {ns}/{}", s.name);
    keys_payload(
        &what,
        &config_map_data(&cm),
        s.items.as_deref(),
        default_mode,
        optional,
    )
}

async fn secret(
    source: &dyn ObjectSource,
    ns: &str,
    s: &SecretProjection,
    default_mode: u32,
) -> Result<Payload, VolumeError> {
    let optional = s.optional == Some(true);
    let found = source
        .secret(ns, &s.name)
        .await
        .map_err(|e| fetch_error("secret", ns, &s.name, e))?;
    let Some(sec) = found else {
        return if optional {
            Ok(Payload::new())
        } else {
            Err(not_found("secret", ns, &s.name))
        };
    };
    let what = format!("secret {ns}/{}", s.name);
    keys_payload(
        &what,
        &secret_data(&sec),
        s.items.as_deref(),
        default_mode,
        optional,
    )
}

fn downward(
    f: &PodFacts,
    items: &[DownwardAPIVolumeFile],
    default_mode: u32,
) -> Result<Payload, VolumeError> {
    let mut out = Payload::new();
    for item in items {
        let value = match (&item.field_ref, &item.resource_field_ref) {
            (Some(r), _) => field_value(f, &r.field_path, For::File)?,
            (None, Some(r)) => resource_value(f, r, None)?,
            (None, None) => String::new(),
        };
        let file = FileProjection {
            data: value.into_bytes(),
            mode: mode(item.mode, default_mode),
            group: None,
        };
        out.insert(item.path.clone(), file);
    }
    Ok(out)
}

async fn projected(
    source: &dyn ObjectSource,
    f: &PodFacts<'_>,
    sources: &[VolumeProjection],
    default_mode: u32,
) -> Result<Payload, VolumeError> {
    let ns = namespace(f);
    let mut out = Payload::new();
    for s in sources {
        let part = if let Some(cm) = &s.config_map {
            config_map(source, ns, cm, default_mode).await?
        } else if let Some(sec) = &s.secret {
            secret(source, ns, sec, default_mode).await?
        } else if let Some(d) = &s.downward_api {
            downward(f, d.items.as_deref().unwrap_or(&[]), default_mode)?
        } else if let Some(t) = &s.service_account_token {
            let spec = token_spec(f, t.audience.clone(), t.expiration_seconds);
            let token = source.token(&spec).await.map_err(|e| VolumeError::Token {
                service_account: spec.service_account.clone(),
                source: e,
            })?;
            let file = FileProjection {
                data: token.into_bytes(),
                mode: default_mode,
                group: None,
            };
            Payload::from([(t.path.clone(), file)])
        } else {
            return Err(VolumeError::Unsupported(
                "a projection other than configMap, secret, downwardAPI or serviceAccountToken"
                    .into(),
            ));
        };
        merge(&mut out, part)?;
    }
    Ok(out)
}

fn token_spec(f: &PodFacts, audience: Option<String>, seconds: Option<i64>) -> TokenSpec {
    let spec = f.pod.spec.as_ref();
    TokenSpec {
        namespace: namespace(f).to_string(),
        service_account: podvisor_core::pod::service_account(spec).to_string(),
        pod_name: f.pod.metadata.name.clone().unwrap_or_default(),
        pod_uid: f.pod.metadata.uid.clone().unwrap_or_default(),
        audience: audience.filter(|a| !a.is_empty()),
        expiration_seconds: seconds.unwrap_or(TOKEN_SECONDS),
    }
}

#[cfg(test)]
#[path = "volumes_tests.rs"]
mod tests;
