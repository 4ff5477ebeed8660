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

fn entries(live: &Value) -> Result<BTreeMap<String, Entry>, Error> {
    let list = live["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for e in &list {
        let Some(manager) = e["manager"].as_str() else {
            continue;
        };
        let entry = Entry {
            operation: e["operation"].as_str().unwrap_or("Apply").to_string(),
            api_version: e["apiVersion"].as_str().unwrap_or_default().to_string(),
            time: e["time"].clone(),
            fields: fields::from_v1(&e["fieldsV1"])?,
        };
        out.insert(manager.to_string(), entry);
    }
    Ok(out)
}

/// Checks a configuration before anything is merged: an object of this kind, named as the
/// request, its `metadata` an object, and no patch directives (`$patch`, `$retainKeys`...:
/// an apply states intent, it does not edit).
pub(crate) fn check(
    config: &Value,
    api_version: &str,
    kind: &str,
    name: &str,
) -> Result<(), Error> {
    let bad = |why: String| Err(Error::BadRequest(why));
    let Some(m) = config.as_object() else {
        return bad("an apply configuration must be an object".into());
    };
    if m.get("apiVersion").and_then(Value::as_str) != Some(api_version)
        || m.get("kind").and_then(Value::as_str) != Some(kind)
    {
        return bad(format!(
            "an apply configuration here must be apiVersion {api_version}, kind {kind}"
        ));
    }
    let named = |meta: &serde_json::Map<String, Value>| {
        meta.get("name").and_then(Value::as_str) == Some(name)
    };
    match m.get("metadata") {
        None => {}
        Some(Value::Object(meta)) if meta.get("name").is_none() || named(meta) => {}
        Some(Value::Object(_)) => {
            return bad(format!(
                "the configuration's name is not the request's ({name})"
            ));
        }
        Some(_) => return bad("metadata must be an object".into()),
    }
    if has_directive(config, 0) {
        return bad(
            "an apply configuration may not hold patch directives ($patch, $retainKeys, ...)"
                .into(),
        );
    }
    Ok(())
}

fn has_directive(v: &Value, depth: usize) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, x)| k.starts_with('$') || (depth < 256 && has_directive(x, depth + 1))),
        Value::Array(a) => a.iter().any(|x| depth < 256 && has_directive(x, depth + 1)),
        _ => false,
    }
}

/// After an update that is not an apply (`was` → `now`): the fields it changed go to
/// `writer` (an `Update` entry) and leave every other manager; whether `now` changed.
pub(crate) fn take_changed(
    was: &Value,
    now: &mut Value,
    writer: &str,
    time: Value,
) -> Result<bool, Error> {
    let (before, after) = (fields::of(was)?, fields::of(now)?);
    let changed: FieldSet = after
        .iter()
        .filter(|p| get(was, p) != get(now, p))
        .chain(before.iter().filter(|p| get(now, p).is_none()))
        .cloned()
        .collect();
    if changed.is_empty() {
        return Ok(false);
    }
    let mut all = entries(was)?;
    for (m, e) in all.iter_mut() {
        if m != writer {
            e.fields.retain(|p| !changed.contains(p));
        }
    }
    let api_version = now["apiVersion"].as_str().unwrap_or_default().to_string();
    let mine = all.entry(writer.to_string()).or_insert_with(|| Entry {
        operation: "Update".into(),
        api_version,
        time: time.clone(),
        fields: FieldSet::new(),
    });
    mine.time = time;
    mine.fields
        .extend(changed.into_iter().filter(|p| get(now, p).is_some()));
    now["metadata"]["managedFields"] = to_json(&all);
    Ok(true)
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
    let set = fields::of(a.config)?;
    let api_version = a.config["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut all = match live {
        Some(l) => entries(l)?,
        None => BTreeMap::new(),
    };
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
    if !merged["metadata"].is_object() {
        merged["metadata"] = json!({});
    }
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
