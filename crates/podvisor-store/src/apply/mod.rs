//! Server-side apply (`kubectl apply --server-side`): each field manager owns the fields
//! its last applied configuration set (`metadata.managedFields`, `FieldsV1`). An apply
//! merges the configuration into the live object as a strategic merge patch would, takes
//! away the fields the manager set last time and no longer sets (unless another manager
//! owns them too), and refuses (409) to change a field another manager owns to another
//! value unless forced, which moves the field to it. Writes that are not applies do not
//! record managers (see ARCHITECTURE.md).

pub(crate) mod fields;

use std::collections::BTreeMap;

use podvisor_client::Error;
use serde_json::{Value, json};

use fields::{FieldSet, Path, Step};

/// One manager's fields, as `managedFields` lists them.
#[derive(Debug, Clone)]
struct Entry {
    operation: String,
    api_version: String,
    time: Value,
    fields: FieldSet,
}

fn entries(live: &Value) -> BTreeMap<String, Entry> {
    let list = live["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter()
        .filter_map(|e| {
            let manager = e["manager"].as_str()?.to_string();
            let entry = Entry {
                operation: e["operation"].as_str().unwrap_or("Apply").to_string(),
                api_version: e["apiVersion"].as_str().unwrap_or_default().to_string(),
                time: e["time"].clone(),
                fields: fields::from_v1(&e["fieldsV1"]),
            };
            Some((manager, entry))
        })
        .collect()
}

fn to_json(all: &BTreeMap<String, Entry>) -> Value {
    let list: Vec<Value> = all
        .iter()
        .filter(|(_, e)| !e.fields.is_empty())
        .map(|(m, e)| {
            json!({"manager": m, "operation": e.operation, "apiVersion": e.api_version,
                "time": e.time, "fieldsType": "FieldsV1", "fieldsV1": fields::to_v1(&e.fields)})
        })
        .collect();
    Value::Array(list)
}

/// The value at `path` in `v`.
fn get<'a>(v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    let mut at = v;
    for step in path {
        at = match step {
            Step::Field(f) => at.get(f)?,
            Step::Key(k) => {
                let key: Value = serde_json::from_str(k).ok()?;
                let (name, want) = key.as_object()?.iter().next()?;
                at.as_array()?.iter().find(|i| i.get(name) == Some(want))?
            }
            Step::Value(x) => {
                let want: Value = serde_json::from_str(x).ok()?;
                at.as_array()?.iter().find(|i| **i == want)?
            }
        };
    }
    Some(at)
}

/// Takes `path` out of `v` (a field, a list item, a set member).
fn remove(v: &mut Value, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut at = v;
    for step in parent {
        let next = match step {
            Step::Field(f) => at.get_mut(f),
            Step::Key(_) | Step::Value(_) => {
                let found = get(at, std::slice::from_ref(step)).cloned();
                at.as_array_mut()
                    .and_then(|a| a.iter_mut().find(|i| Some(&**i) == found.as_ref()))
            }
        };
        let Some(n) = next else { return };
        at = n;
    }
    match last {
        Step::Field(f) => drop(at.as_object_mut().and_then(|m| m.remove(f))),
        Step::Key(_) | Step::Value(_) => {
            let found = get(at, std::slice::from_ref(last)).cloned();
            if let Some(a) = at.as_array_mut() {
                a.retain(|i| Some(i) != found.as_ref());
            }
        }
    }
}

/// What an apply asks.
pub(crate) struct Apply<'a> {
    pub config: &'a Value,
    pub manager: &'a str,
    pub force: bool,
    pub now: Value,
}

/// Fields owned by others that the configuration would change.
fn conflicts(
    live: &Value,
    a: &Apply<'_>,
    set: &FieldSet,
    all: &BTreeMap<String, Entry>,
) -> Vec<(String, Path)> {
    let mut out = Vec::new();
    for (manager, e) in all.iter().filter(|(m, _)| m.as_str() != a.manager) {
        for p in set.intersection(&e.fields) {
            let leaf = !matches!(p.last(), Some(Step::Key(_) | Step::Value(_)));
            if leaf && get(live, p).is_some_and(|l| Some(l) != get(a.config, p)) {
                out.push((manager.clone(), p.clone()));
            }
        }
    }
    out
}

/// The object an apply leaves (`live`: the stored one, if any), with its managers.
pub(crate) fn apply(
    live: Option<&Value>,
    a: &Apply<'_>,
    resource: &str,
    name: &str,
) -> Result<Value, Error> {
    let set = fields::of(a.config);
    let api_version = a.config["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut all = live.map(entries).unwrap_or_default();
    let mut merged = live.cloned().unwrap_or_else(|| json!({}));
    if let Some(l) = live {
        let found = conflicts(l, a, &set, &all);
        if !found.is_empty() && !a.force {
            return Err(conflict_error(&found, &api_version, resource, name));
        }
        for (manager, p) in found {
            if let Some(e) = all.get_mut(&manager) {
                e.fields.remove(&p);
            }
        }
    }
    let mut config = a.config.clone();
    if let Some(m) = config["metadata"].as_object_mut() {
        m.remove("managedFields");
    }
    crate::patch::strategic_merge(&mut merged, &config)?;
    let before = all
        .get(a.manager)
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut gone: Vec<&Path> = before.difference(&set).collect();
    gone.sort_by_key(|p| p.len());
    for p in gone {
        let shared = all
            .iter()
            .any(|(m, e)| m != a.manager && e.fields.contains(p));
        if !shared {
            remove(&mut merged, p);
        }
    }
    let entry = Entry {
        operation: "Apply".into(),
        api_version,
        time: a.now.clone(),
        fields: set,
    };
    all.insert(a.manager.to_string(), entry);
    merged["metadata"]["managedFields"] = to_json(&all);
    Ok(merged)
}

fn conflict_error(
    found: &[(String, Path)],
    api_version: &str,
    resource: &str,
    name: &str,
) -> Error {
    let lines: Vec<String> = found
        .iter()
        .map(|(m, p)| {
            format!(
                "conflict with \"{m}\" using {api_version}: {}",
                fields::display(p)
            )
        })
        .collect();
    let n = found.len();
    let plural = if n == 1 { "" } else { "s" };
    let message = if n == 1 {
        format!("Apply failed with 1 conflict: {}", lines[0])
    } else {
        format!(
            "Apply failed with {n} conflict{plural}: {}",
            lines.join("\n")
        )
    };
    Error::ApplyConflict {
        resource: resource.to_string(),
        name: name.to_string(),
        message,
        causes: found
            .iter()
            .map(|(m, p)| (format!("conflict with \"{m}\""), fields::display(p)))
            .collect(),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
