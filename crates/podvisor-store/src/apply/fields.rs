//! Field sets as server-side apply tracks them (`FieldsV1`): the paths of the leaves a
//! configuration sets, through maps (`f:name`), lists merged by a key (`k:{"name":"main"}`,
//! with `.` for the item itself), and lists of scalars merged as sets (`v:"x"`); other
//! lists are atomic leaves. What the server sets (status, identity, bookkeeping) is not a
//! field anyone owns.

use std::collections::BTreeSet;

use podvisor_client::Error;
use serde_json::{Map, Value};

use crate::patch::{merge_key, merges_as_set};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Field(String),
    /// A list item by its merge key, as compact JSON (`{"name":"main"}`).
    Key(String),
    /// A set member, as JSON (`"kubernetes.io/x"`).
    Value(String),
}

pub(crate) type Path = Vec<Step>;
pub(crate) type FieldSet = BTreeSet<Path>;

/// Top-level and `metadata` fields that are the server's.
const SERVER_FIELDS: [&str; 3] = ["apiVersion", "kind", "status"];
const SERVER_METADATA: [&str; 10] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The most paths, and bytes of path, one field set may hold: a body of deeply nested long
/// keys must not expand into gigabytes of paths (3 MiB bodies are allowed).
const MAX_PATHS: usize = 20_000;
const MAX_PATH_BYTES: usize = 8 << 20;

fn too_large() -> Error {
    Error::BadRequest(format!(
        "the object has too many fields for server-side apply to track (at most {MAX_PATHS} paths of {} MiB in all)",
        MAX_PATH_BYTES >> 20
    ))
}

fn path_bytes(p: &Path) -> usize {
    p.iter()
        .map(|s| match s {
            Step::Field(x) | Step::Key(x) | Step::Value(x) => x.len() + 2,
        })
        .sum()
}

/// Within the budget, or why not.
fn checked(set: FieldSet) -> Result<FieldSet, Error> {
    if set.len() > MAX_PATHS || set.iter().map(path_bytes).sum::<usize>() > MAX_PATH_BYTES {
        return Err(too_large());
    }
    Ok(set)
}

/// The field set `config` sets.
pub(crate) fn of(config: &Value) -> Result<FieldSet, Error> {
    checked(of_unchecked(config)?)
}

fn of_unchecked(config: &Value) -> Result<FieldSet, Error> {
    let mut out = Budgeted::default();
    if let Value::Object(m) = config {
        for (k, v) in m {
            if SERVER_FIELDS.contains(&k.as_str()) {
                continue;
            }
            let path = vec![Step::Field(k.clone())];
            if k == "metadata"
                && let Value::Object(meta) = v
            {
                let owned = meta
                    .iter()
                    .filter(|(k, _)| !SERVER_METADATA.contains(&k.as_str()));
                for (mk, mv) in owned {
                    walk(
                        mk,
                        mv,
                        [path.clone(), vec![Step::Field(mk.clone())]].concat(),
                        &mut out,
                    );
                }
                continue;
            }
            walk(k, v, path, &mut out);
        }
    }
    out.finish()
}

/// A set being built, refused as soon as it passes the budget (not after).
#[derive(Default)]
struct Budgeted {
    set: FieldSet,
    bytes: usize,
    over: bool,
}

impl Budgeted {
    fn insert(&mut self, p: Path) {
        if self.over {
            return;
        }
        self.bytes += path_bytes(&p);
        self.set.insert(p);
        self.over = self.set.len() > MAX_PATHS || self.bytes > MAX_PATH_BYTES;
    }

    fn finish(self) -> Result<FieldSet, Error> {
        if self.over {
            Err(too_large())
        } else {
            Ok(self.set)
        }
    }
}

/// The merge key of a list item, as compact JSON.
pub(crate) fn item_key(key: &str, item: &Value) -> Option<String> {
    let k = item.get(key)?;
    let mut m = Map::new();
    m.insert(key.to_string(), k.clone());
    Some(Value::Object(m).to_string())
}

fn walk(name: &str, v: &Value, path: Path, out: &mut Budgeted) {
    if out.over {
        return;
    }
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                let mut p = path.clone();
                p.push(Step::Field(k.clone()));
                walk(k, x, p, out);
            }
        }
        Value::Array(items) if merges_as_set(name) => {
            for item in items {
                let mut p = path.clone();
                p.push(Step::Value(item.to_string()));
                out.insert(p);
            }
        }
        Value::Array(items) if merge_key(name).is_some() && items.iter().all(Value::is_object) => {
            let key = merge_key(name).unwrap_or_default();
            for item in items {
                let Some(k) = item_key(key, item) else {
                    out.insert(path.clone());
                    continue;
                };
                let mut p = path.clone();
                p.push(Step::Key(k));
                out.insert(p.clone());
                if let Value::Object(m) = item {
                    for (f, x) in m {
                        let mut q = p.clone();
                        q.push(Step::Field(f.clone()));
                        walk(f, x, q, out);
                    }
                }
            }
        }
        _ => {
            out.insert(path);
        }
    }
}

fn label(s: &Step) -> String {
    match s {
        Step::Field(f) => format!("f:{f}"),
        Step::Key(k) => format!("k:{k}"),
        Step::Value(v) => format!("v:{v}"),
    }
}

/// The set as `FieldsV1` JSON.
pub(crate) fn to_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for (i, step) in path.iter().enumerate() {
            let entry = node
                .entry(label(step))
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(m) = entry else { break };
            if i + 1 == path.len() && matches!(step, Step::Key(_)) {
                m.insert(".".into(), Value::Object(Map::new()));
            }
            node = m;
        }
    }
    Value::Object(root)
}

fn step_of(label: &str) -> Option<Step> {
    let (kind, rest) = label.split_at_checked(2)?;
    Some(match kind {
        "f:" => Step::Field(rest.to_string()),
        "k:" => Step::Key(rest.to_string()),
        "v:" => Step::Value(rest.to_string()),
        _ => return None,
    })
}

/// A set from `FieldsV1` JSON (what cannot be read is left out), within the budget.
pub(crate) fn from_v1(v: &Value) -> Result<FieldSet, Error> {
    let mut out = Budgeted::default();
    read(v, &mut Vec::new(), &mut out);
    out.finish()
}

fn read(v: &Value, path: &mut Path, out: &mut Budgeted) {
    if out.over {
        return;
    }
    let Value::Object(m) = v else { return };
    let children: Vec<_> = m.iter().filter(|(k, _)| k.as_str() != ".").collect();
    if (children.is_empty() || m.contains_key(".")) && !path.is_empty() {
        out.insert(path.clone());
    }
    for (k, x) in children {
        let Some(step) = step_of(k) else { continue };
        path.push(step);
        read(x, path, out);
        path.pop();
    }
}

/// `.spec.replicas`, `.spec.template.spec.containers[name="main"].image`: a path as
/// Kubernetes' conflict messages print it.
pub(crate) fn display(path: &Path) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            Step::Key(k) => {
                let v: Value = serde_json::from_str(k).unwrap_or_default();
                let pairs = v.as_object().into_iter().flatten();
                let shown: Vec<String> = pairs.map(|(a, b)| format!("{a}={b}")).collect();
                s.push_str(&format!("[{}]", shown.join(",")));
            }
            Step::Value(x) => s.push_str(&format!("[{x}]")),
        }
    }
    s
}
