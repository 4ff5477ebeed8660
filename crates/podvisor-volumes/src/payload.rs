//! What a volume's files are: relative path → content and mode, made from a ConfigMap, a
//! Secret, the downward API or a projection of them, as the kubelet's volume plugins make
//! their payloads (`MakePayload`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, KeyToPath, Secret};

use crate::error::VolumeError;

/// The mode of a file when neither the item nor the volume gives one (the API's default
/// `defaultMode` for every kind of volume here).
pub const DEFAULT_MODE: u32 = 0o644;

/// One file of a volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProjection {
    pub data: Vec<u8>,
    pub mode: u32,
    /// The group the file is given (the pod's `fsGroup`), if any.
    pub group: Option<u32>,
}

/// A volume's files by their path inside the volume.
pub type Payload = BTreeMap<String, FileProjection>;

/// A mode as the API gives it (`int32`), as a file mode: only the permission bits count;
/// setuid, setgid and sticky bits never reach a file (validation refuses them, and a pod
/// stored before it did still gets none).
pub(crate) fn mode(m: Option<i32>, default: u32) -> u32 {
    m.and_then(|m| u32::try_from(m).ok())
        .map_or(default, |m| m & 0o777)
}

/// The key-value pairs of a ConfigMap or a Secret, as bytes.
pub(crate) fn config_map_data(cm: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = cm
        .binary_data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect();
    for (k, v) in cm.data.iter().flatten() {
        out.insert(k.clone(), v.clone().into_bytes());
    }
    out
}

/// A Secret's data, `stringData` included (a client may write it; the API folds it into
/// `data`, which wins on a clash as it was written last).
pub(crate) fn secret_data(s: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = s
        .string_data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect();
    for (k, v) in s.data.iter().flatten() {
        out.insert(k.clone(), v.0.clone());
    }
    out
}

/// What an object (a ConfigMap or a Secret) gives a volume: every key under its own name
/// with `default_mode`, or only `items`, each at its path (a missing key is an error
/// unless the volume is optional, when it is skipped).
pub(crate) fn keys_payload(
    what: &str,
    data: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    default_mode: u32,
    optional: bool,
) -> Result<Payload, VolumeError> {
    let items = items.unwrap_or(&[]);
    if items.is_empty() {
        return Ok(data
            .iter()
            .map(|(k, v)| {
                let file = FileProjection {
                    data: v.clone(),
                    mode: default_mode,
                    group: None,
                };
                (k.clone(), file)
            })
            .collect());
    }
    let mut out = Payload::new();
    for item in items {
        let Some(v) = data.get(&item.key) else {
            if optional {
                continue;
            }
            return Err(VolumeError::MissingKey {
                what: what.to_string(),
                key: item.key.clone(),
            });
        };
        let file = FileProjection {
            data: v.clone(),
            mode: mode(item.mode, default_mode),
            group: None,
        };
        out.insert(item.path.clone(), file);
    }
    Ok(out)
}

/// With an `fsGroup`, every file belongs to it and its members may read it (the kubelet's
/// ownership change for a read-only volume: group, and `0440` added to the mode).
pub(crate) fn with_group(payload: &mut Payload, fs_group: Option<u32>) {
    let Some(gid) = fs_group else { return };
    for f in payload.values_mut() {
        f.group = Some(gid);
        f.mode |= 0o440;
    }
}

/// Adds `more` to `into`; a path given twice is an error (a projected volume's sources
/// must not overlap).
pub(crate) fn merge(into: &mut Payload, more: Payload) -> Result<(), VolumeError> {
    for (path, file) in more {
        if into.insert(path.clone(), file).is_some() {
            return Err(VolumeError::Conflict(path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn cm() -> ConfigMap {
        ConfigMap {
            data: Some(BTreeMap::from([
                ("a".into(), "1".into()),
                ("b".into(), "2".into()),
            ])),
            binary_data: Some(BTreeMap::from([("bin".into(), ByteString(vec![0, 1]))])),
            ..Default::default()
        }
    }

    fn item(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
        KeyToPath {
            key: key.into(),
            path: path.into(),
            mode,
            user: None,
        }
    }

    #[test]
    fn every_key_with_the_default_mode_without_items() {
        let p = keys_payload(
            "configmap default/c",
            &config_map_data(&cm()),
            None,
            0o400,
            false,
        )
        .unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p["a"].data, b"1");
        assert_eq!(p["bin"].data, [0, 1]);
        assert!(p.values().all(|f| f.mode == 0o400));
    }

    #[test]
    fn items_choose_keys_paths_and_modes() {
        let items = [
            item("a", "dir/first", Some(0o600)),
            item("b", "second", None),
        ];
        let p = keys_payload(
            "x",
            &config_map_data(&cm()),
            Some(&items),
            DEFAULT_MODE,
            false,
        )
        .unwrap();
        assert_eq!(p.keys().collect::<Vec<_>>(), ["dir/first", "second"]);
        assert_eq!(p["dir/first"].mode, 0o600);
        assert_eq!(p["second"].mode, DEFAULT_MODE);
    }

    #[test]
    fn a_missing_key_fails_unless_optional() {
        let items = [item("nope", "n", None)];
        let data = config_map_data(&cm());
        let e = keys_payload(
            "configmap default/c",
            &data,
            Some(&items),
            DEFAULT_MODE,
            false,
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "configmap default/c has no key \"nope\""
        );
        let ok = keys_payload("x", &data, Some(&items), DEFAULT_MODE, true).unwrap();
        assert!(ok.is_empty());
    }

    #[test]
    fn secret_data_wins_over_string_data() {
        let s = Secret {
            data: Some(BTreeMap::from([("k".into(), ByteString(b"data".to_vec()))])),
            string_data: Some(BTreeMap::from([
                ("k".into(), "string".into()),
                ("only".into(), "s".into()),
            ])),
            ..Default::default()
        };
        let d = secret_data(&s);
        assert_eq!(d["k"], b"data");
        assert_eq!(d["only"], b"s");
    }

    #[test]
    fn modes_keep_only_permission_bits() {
        assert_eq!(mode(Some(0o100_644), 0), 0o644);
        assert_eq!(mode(Some(-1), 0o600), 0o600);
        assert_eq!(mode(None, 0o640), 0o640);
    }

    #[test]
    fn overlapping_projections_are_refused() {
        let f = FileProjection {
            data: vec![],
            mode: 0,
            group: None,
        };
        let mut p = Payload::from([("x".to_string(), f.clone())]);
        assert!(merge(&mut p, Payload::from([("y".to_string(), f.clone())])).is_ok());
        let e = merge(&mut p, Payload::from([("x".to_string(), f)])).unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
    }
}
