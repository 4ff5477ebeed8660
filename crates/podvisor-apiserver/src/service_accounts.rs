//! The ServiceAccount admission of a node standing alone, as kube-apiserver's plugin: a new
//! pod runs as `default` unless it names an account, the account must exist, and unless
//! the pod or its account opts out (`automountServiceAccountToken: false`) it gets the
//! `kube-api-access-*` projected volume (a bound token, the API's CA from the namespace's
//! `kube-root-ca.crt`, the namespace) mounted read-only in every container at
//! `/var/run/secrets/kubernetes.io/serviceaccount`; the account's `imagePullSecrets` are the
//! pod's when it has none. Mirror pods (the node's static pods) are left alone, as there.

use k8s_openapi::api::core::v1::{
    ConfigMapProjection, Container, DownwardAPIProjection, DownwardAPIVolumeFile, KeyToPath,
    ObjectFieldSelector, Pod, PodSpec, ProjectedVolumeSource, ServiceAccount,
    ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
};
use podvisor_client::{AnyObject, Error, Subresource};
use podvisor_core::Kind;
use podvisor_store::{Admission, Objects, Resource, StoredObject};

/// Where in-cluster clients read the token, CA and namespace.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The kubelet's token lifetime for this volume (an hour and a bit, as kube-apiserver sets).
const TOKEN_SECONDS: i64 = 3607;
const ROOT_CA: &str = "kube-root-ca.crt";

pub struct ServiceAccounts;

fn account(store: &dyn Objects, ns: &str, name: &str) -> Result<ServiceAccount, Error> {
    let missing = || Error::Forbidden {
        resource: "pods".into(),
        name: String::new(),
        cause: "ServiceAccount".into(),
        message: format!(
            "error looking up service account {ns}/{name}: serviceaccount {name:?} not found"
        ),
    };
    match store.get(Kind::ServiceAccount, ns, name) {
        Some(stored) => Ok((*stored.typed::<ServiceAccount>()?).clone()),
        // A namespace made a moment ago may not have its `default` account yet (the
        // accounts controller makes it): the pod is admitted as `default` with nothing more
        // to add, and its token is issued once the account exists.
        None if name == "default" => Ok(ServiceAccount::default()),
        None => Err(missing()),
    }
}

/// A name no other volume of the pod has: `kube-api-access-` and five characters.
fn volume_name(spec: &PodSpec) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    loop {
        let bytes = uuid::Uuid::new_v4().into_bytes();
        let suffix: String = bytes[..5]
            .iter()
            .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
            .collect();
        let name = format!("kube-api-access-{suffix}");
        let taken = spec.volumes.iter().flatten().any(|v| v.name == name);
        if !taken {
            return name;
        }
    }
}

fn projected(name: String) -> Volume {
    let token = VolumeProjection {
        service_account_token: Some(ServiceAccountTokenProjection {
            expiration_seconds: Some(TOKEN_SECONDS),
            path: "token".into(),
            audience: None,
            user: None,
        }),
        ..VolumeProjection::default()
    };
    let ca = VolumeProjection {
        config_map: Some(ConfigMapProjection {
            name: ROOT_CA.into(),
            items: Some(vec![KeyToPath {
                key: "ca.crt".into(),
                path: "ca.crt".into(),
                mode: None,
                user: None,
            }]),
            optional: None,
        }),
        ..VolumeProjection::default()
    };
    let namespace = VolumeProjection {
        downward_api: Some(DownwardAPIProjection {
            items: Some(vec![DownwardAPIVolumeFile {
                path: "namespace".into(),
                field_ref: Some(ObjectFieldSelector {
                    api_version: Some("v1".into()),
                    field_path: "metadata.namespace".into(),
                }),
                ..DownwardAPIVolumeFile::default()
            }]),
        }),
        ..VolumeProjection::default()
    };
    Volume {
        name,
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o644),
            default_user: None,
            sources: Some(vec![token, ca, namespace]),
        }),
        ..Volume::default()
    }
}

/// Mounts `volume` where no mount is yet; whether any container took it.
fn mount(containers: &mut [Container], volume: &str) -> bool {
    let mut took = false;
    for c in containers {
        let mounts = c.volume_mounts.get_or_insert_with(Vec::new);
        if mounts.iter().any(|m| m.mount_path == MOUNT_PATH) {
            continue;
        }
        mounts.push(VolumeMount {
            name: volume.into(),
            mount_path: MOUNT_PATH.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
        took = true;
    }
    took
}

fn automount(spec: &PodSpec, sa: &ServiceAccount) -> bool {
    spec.automount_service_account_token
        .or(sa.automount_service_account_token)
        .unwrap_or(true)
}

fn admit_pod(store: &dyn Objects, pod: &mut Pod) -> Result<(), Error> {
    let ns = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    // `serviceAccount` is the deprecated spelling: either names the account; both are set.
    let name = podvisor_core::pod::service_account(Some(spec)).to_string();
    spec.service_account_name = Some(name.clone());
    spec.service_account = Some(name.clone());
    let sa = account(store, &ns, &name)?;
    if spec.image_pull_secrets.as_ref().is_none_or(Vec::is_empty) {
        spec.image_pull_secrets = sa.image_pull_secrets.clone().filter(|s| !s.is_empty());
    }
    if !automount(spec, &sa) {
        return Ok(());
    }
    let volume = volume_name(spec);
    let init = mount(
        spec.init_containers.as_deref_mut().unwrap_or_default(),
        &volume,
    );
    let main = mount(&mut spec.containers, &volume);
    if init || main {
        spec.volumes
            .get_or_insert_with(Vec::new)
            .push(projected(volume));
    }
    Ok(())
}

impl Admission for ServiceAccounts {
    fn admit(
        &self,
        store: &dyn Objects,
        _: &Resource,
        object: &mut AnyObject,
        old: Option<&StoredObject>,
        _: Subresource,
    ) -> Result<(), Error> {
        let AnyObject::Pod(pod) = object else {
            return Ok(());
        };
        let mirror = crate::admission::is_mirror(pod);
        if old.is_some() || mirror {
            return Ok(());
        }
        let mut typed = (**pod).clone();
        admit_pod(store, &mut typed)?;
        *pod = std::sync::Arc::new(typed);
        Ok(())
    }
}
