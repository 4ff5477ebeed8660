//! Fields an object's type does not know, as serde_ignored finds them while decoding: the
//! store's strict decoding refuses them, the cluster client names a pod's for the node to
//! refuse.

/// A field's path as the API names it: `spec.containers[0].image`.
pub fn field_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => match field_path(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => field_path(parent),
    }
}
