//! The strategic-merge facts of the kinds podvisor serves, as their Go types declare them
//! (`patchMergeKey` and `patchStrategy` tags): one table for every place that applies a
//! strategic merge (the store) or builds one (the node's status writer), so the two cannot
//! disagree on a list.

/// The merge key of a list field, by its name; `None` for a list that is replaced whole.
pub fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "ports" => "containerPort",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        // PodSpec.hostAliases, PodStatus.podIPs and hostIPs.
        "hostAliases" | "podIPs" | "hostIPs" => "ip",
        "conditions" | "addresses" => "type",
        "ownerReferences" => "uid",
        _ => return None,
    })
}

/// Lists of scalars merged as sets (`patchStrategy:"merge"` without a key).
pub fn merges_as_set(field: &str) -> bool {
    field == "finalizers"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_ip_lists_merge_by_address_as_the_go_types_say() {
        assert_eq!(merge_key("podIPs"), Some("ip"));
        assert_eq!(merge_key("hostIPs"), Some("ip"));
        assert_eq!(merge_key("conditions"), Some("type"));
        assert_eq!(merge_key("containerStatuses"), None, "replaced whole");
        assert!(merges_as_set("finalizers"));
        assert!(!merges_as_set("args"));
    }
}
