//! Static pod manifests: reading a directory's YAML and JSON files into pods, validating
//! them, and giving each the identity the kubelet would: a UID derived from the node, the
//! file and the content (an edit makes a new pod), and the node name appended to its name.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Pod, Toleration};
use podvisor_core::pod::CONFIG_SOURCE_ANNOTATION;
use podvisor_core::validation::{FieldError, FieldErrors, FieldPath, names, validate_pod};
use podvisor_core::{PodExt, SharedPod};
use sha2::{Digest, Sha256};

use super::stamp::Stamp;

/// Files larger than this are refused (a manifest is a few KB; this stops a stray log).
pub(crate) const MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
pub(crate) const CONFIG_HASH_ANNOTATION: &str = "kubernetes.io/config.hash";
pub(crate) const MANIFEST_ANNOTATION: &str = "podvisor.io/manifest";

/// Why a manifest file, or one document of it, cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestFileError {
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    #[error("file is {0} bytes, larger than the 10 MiB limit")]
    TooLarge(u64),
    #[error("invalid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// Not YAML, or YAML that expands beyond its budget (aliases).
    #[error("invalid YAML: {0}")]
    Yaml(#[source] podvisor_core::decode::DecodeError),
    #[error("no pod in file")]
    Empty,
    #[error("expected apiVersion v1 and kind Pod, found {api:?} {kind:?}")]
    NotAPod { api: String, kind: String },
    #[error("not a valid Pod: {0}")]
    Schema(#[source] serde_json::Error),
    /// The pod breaks the API's rules or asks what podvisor cannot do; each error names
    /// the field.
    #[error("{0}")]
    Invalid(#[from] FieldErrors),
    #[error("document {doc}: {error}")]
    InDocument {
        doc: usize,
        error: Box<ManifestFileError>,
    },
}

impl ManifestFileError {
    fn in_document(doc: usize) -> impl FnOnce(ManifestFileError) -> ManifestFileError {
        move |e| ManifestFileError::InDocument {
            doc,
            error: Box::new(e),
        }
    }
}

/// The pods each file gave at the last scan. A file that stops parsing keeps these
/// running: a typo in an edit must not take down the pod the file described before.
pub(crate) type LastGood = BTreeMap<PathBuf, Good>;

/// What one file gave: its pods, and the stamp of the version they came from (`None`: read
/// it again at the next scan). A file whose stamp has not moved gives the same pods, the
/// same shared copies, without being read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Good {
    pub stamp: Option<Stamp>,
    pub pods: Vec<SharedPod>,
}

/// One scan of the directory: the pods to run, why files (or documents) were refused, and
/// what to remember for the next scan.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub pods: Vec<SharedPod>,
    pub errors: Vec<(PathBuf, String)>,
    pub good: LastGood,
    /// The directory itself could not be read: this scan says nothing about what is
    /// wanted, and must not be taken as "no pods" (that would stop every pod).
    pub unreadable: bool,
}

/// The file-source pods among `desired`, by the manifest they came from: what a restarted
/// source remembers, so a file that broke before the restart keeps its pods after it.
pub(crate) fn last_good_from(desired: &[SharedPod]) -> LastGood {
    let mut out = LastGood::new();
    for p in desired {
        let ann = p.metadata.annotations.as_ref();
        let from_file = ann
            .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
            .is_some_and(|s| s == "file");
        if let Some(path) = ann.and_then(|a| a.get(MANIFEST_ANNOTATION))
            && from_file
        {
            out.entry(PathBuf::from(path))
                .or_default()
                .pods
                .push(p.clone());
        }
    }
    out
}

/// Like [`scan`], but a file that cannot be used now and gave pods before (`last`) keeps
/// giving those pods, reported as an error until it is fixed or removed.
pub(crate) fn scan_keeping(dir: &Path, node: &str, last: &LastGood) -> Scan {
    scan_at(dir, node, last, std::time::SystemTime::now())
}

/// [`scan_keeping`] as of `now` (which decides whose stamps have settled).
pub(crate) fn scan_at(dir: &Path, node: &str, last: &LastGood, now: std::time::SystemTime) -> Scan {
    let mut out = Scan::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.errors.push((
                dir.to_path_buf(),
                format!("cannot read the manifest directory: {e}"),
            ));
            out.good = last.clone();
            out.unreadable = true;
            return out;
        }
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_manifest(p))
        .collect();
    files.sort();
    let mut names: HashSet<podvisor_core::ObjectKey> = HashSet::new();
    for path in files {
        let Some((stamp, pods)) = file_pods(&path, node, last.get(&path), now, &mut out.errors)
        else {
            continue;
        };
        let mut used = Vec::with_capacity(pods.len());
        for p in pods {
            if !names.insert(p.key()) {
                out.errors.push((
                    path.clone(),
                    format!(
                        "pod {}/{} is already defined by another manifest",
                        p.namespace(),
                        p.name()
                    ),
                ));
                continue;
            }
            used.push(p.clone());
            out.pods.push(p);
        }
        out.good.insert(path, Good { stamp, pods: used });
    }
    out
}

/// One file's pods and the stamp of the version they came from: unread if its stamp has
/// not moved; its last good version (and an error) if it cannot be used now; `None` (and
/// an error) if it never could.
fn file_pods(
    path: &Path,
    node: &str,
    previous: Option<&Good>,
    now: std::time::SystemTime,
    errors: &mut Vec<(PathBuf, String)>,
) -> Option<(Option<Stamp>, Vec<SharedPod>)> {
    // Taken before reading: a change after it moves the stamp, and is read next time.
    let stamp = Stamp::settled(path, now);
    let read = match previous.filter(|g| stamp.is_some() && g.stamp == stamp) {
        Some(unchanged) => Ok(unchanged.pods.clone()),
        None => read_file(path, node).map(|pods| same_as_before(pods, previous)),
    };
    match (read, previous) {
        (Ok(pods), _) => Some((stamp, pods)),
        (Err(why), Some(previous)) => {
            errors.push((
                path.to_path_buf(),
                format!("{why} (its last valid version keeps running)"),
            ));
            Some((previous.stamp, previous.pods.clone()))
        }
        (Err(why), None) => {
            errors.push((path.to_path_buf(), why.to_string()));
            None
        }
    }
}

/// `pods`, each that equals one the file gave before replaced by that shared copy: a file
/// written moments ago is read at every scan of a burst, and each read's copy would
/// otherwise be kept by whoever got it (the sync loop, the pod's worker): two live copies
/// a pod in a burst of 500.
fn same_as_before(pods: Vec<SharedPod>, previous: Option<&Good>) -> Vec<SharedPod> {
    let before = previous.map_or(&[][..], |g| &g.pods);
    pods.into_iter()
        .map(|p| before.iter().find(|b| **b == p).cloned().unwrap_or(p))
        .collect()
}

fn is_manifest(p: &Path) -> bool {
    is_manifest_name(p) && p.is_file()
}

/// Whether a file of this name would be read: not hidden, ending in .yaml, .yml or .json.
pub(crate) fn is_manifest_name(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    !name.starts_with('.')
        && matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        )
}

/// Every pod in one file, or the first reason the file cannot be used. A file is taken
/// whole or not at all, so a half-valid file never runs half its pods.
pub(crate) fn read_file(path: &Path, node: &str) -> Result<Vec<SharedPod>, ManifestFileError> {
    use ManifestFileError as E;
    let size = std::fs::metadata(path).map_err(E::Read)?.len();
    if size > MAX_FILE_SIZE {
        return Err(E::TooLarge(size));
    }
    let text = std::fs::read_to_string(path).map_err(E::Read)?;
    let docs: Vec<serde_json::Value> = if path.extension().and_then(|e| e.to_str()) == Some("json")
    {
        vec![serde_json::from_str(&text).map_err(E::Json)?]
    } else {
        // On a budget: aliases cannot expand a small file into gigabytes.
        podvisor_core::decode::yaml_documents(&text).map_err(E::Yaml)?
    };
    if docs.is_empty() {
        return Err(E::Empty);
    }
    let many = docs.len() > 1;
    docs.into_iter()
        .enumerate()
        .map(|(i, doc)| {
            pod_from_document(doc, path, node)
                .map_err(|e| if many { E::in_document(i + 1)(e) } else { e })
        })
        .collect()
}

/// A static pod projects no service-account token: its mirror is another incarnation than
/// the pod a token would be bound to, so none could be issued (kube-apiserver refuses such
/// mirror pods too). Refused with the field, not left waiting for ever.
fn no_tokens(pod: &Pod) -> Result<(), FieldErrors> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref());
    let mut errs = Vec::new();
    for (i, v) in volumes.unwrap_or(&[]).iter().enumerate() {
        let sources = v.projected.as_ref().and_then(|p| p.sources.as_deref());
        for (j, s) in sources.unwrap_or(&[]).iter().enumerate() {
            if s.service_account_token.is_some() {
                let at = FieldPath::new("spec").child("volumes").index(i);
                let at = at.child("projected").child("sources").index(j);
                errs.push(FieldError::forbidden(
                    &at.child("serviceAccountToken"),
                    "a static pod may not use service-account tokens",
                ));
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(FieldErrors(errs))
    }
}

fn pod_from_document(
    doc: serde_json::Value,
    path: &Path,
    node: &str,
) -> Result<SharedPod, ManifestFileError> {
    let kind = doc.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let api = doc.get("apiVersion").and_then(|k| k.as_str()).unwrap_or("");
    if kind != "Pod" || api != "v1" {
        return Err(ManifestFileError::NotAPod {
            api: api.into(),
            kind: kind.into(),
        });
    }
    let mut pod: Pod = serde_json::from_value(doc.clone()).map_err(ManifestFileError::Schema)?;
    validate_pod(&pod)?;
    no_tokens(&pod)?;
    let uid = derive_uid(node, path, &doc);
    let node = node.to_lowercase();
    let name = format!("{}-{node}", pod.name());
    // The node name is appended, as the kubelet does: the result must still be a name.
    if let Some(e) = names::subdomain(&FieldPath::new("metadata.name"), &name) {
        return Err(FieldErrors(vec![e]).into());
    }
    pod.metadata.name = Some(name);
    pod.metadata
        .namespace
        .get_or_insert_with(|| "default".into());
    pod.metadata.uid = Some(uid.clone());
    let ann = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    ann.insert(CONFIG_SOURCE_ANNOTATION.into(), "file".into());
    ann.insert(CONFIG_HASH_ANNOTATION.into(), uid);
    ann.insert(MANIFEST_ANNOTATION.into(), path.display().to_string());
    let Some(spec) = pod.spec.as_mut() else {
        let e = FieldError::required(&FieldPath::new("spec"), "");
        return Err(FieldErrors(vec![e]).into());
    };
    spec.node_name = Some(node);
    spec.restart_policy.get_or_insert_with(|| "Always".into());
    spec.termination_grace_period_seconds.get_or_insert(30);
    // Static pods tolerate every NoExecute taint, as with the kubelet.
    spec.tolerations
        .get_or_insert_with(Vec::new)
        .push(Toleration {
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            ..Default::default()
        });
    SharedPod::new(pod).map_err(|_| {
        let e = FieldError::required(&FieldPath::new("metadata.uid"), "");
        FieldErrors(vec![e]).into()
    })
}

/// A UID that is the same every time the same file with the same content is read on the
/// same node, and different as soon as any of the three changes.
pub(crate) fn derive_uid(node: &str, path: &Path, doc: &serde_json::Value) -> String {
    let mut h = Sha256::new();
    h.update(format!("host:{node}\0file:{}\0", path.display()));
    // serde_json's maps are ordered, so the same content always serializes the same way.
    h.update(serde_json::to_vec(doc).unwrap_or_default());
    let d = h.finalize();
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
