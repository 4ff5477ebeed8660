//! Label and field selectors, in the string forms the API takes (`app=web,tier!=db`,
//! `env in (a,b)`, `!canary`, `spec.nodeName=n1`), and the watch/list filter built of them.

use podvisor_core::Kind;

use crate::error::StoreError;
use crate::object::{Change, ChangeType, StoredObject};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas that are not inside parentheses.
fn terms(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.into_iter().filter(|t| !t.is_empty()).collect()
}

fn bad(what: &str, s: &str) -> StoreError {
    StoreError::BadRequest(format!("unable to parse {what} selector {s:?}"))
}

fn set_values(rest: &str, all: &str) -> Result<Vec<String>, StoreError> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad("label", all))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

fn requirement(t: &str, all: &str) -> Result<Requirement, StoreError> {
    if let Some(k) = t.strip_prefix('!') {
        return Ok(Requirement::NotExists(k.trim().to_string()));
    }
    if let Some((k, v)) = t.split_once("!=") {
        return Ok(Requirement::NotEquals(k.trim().into(), v.trim().into()));
    }
    if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
        return Ok(Requirement::Equals(k.trim().into(), v.trim().into()));
    }
    if let Some((k, rest)) = t.split_once(" notin ") {
        return Ok(Requirement::NotIn(k.trim().into(), set_values(rest, all)?));
    }
    if let Some((k, rest)) = t.split_once(" in ") {
        return Ok(Requirement::In(k.trim().into(), set_values(rest, all)?));
    }
    if t.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        return Ok(Requirement::Exists(t.to_string()));
    }
    Err(bad("label", all))
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        terms(s)
            .into_iter()
            .map(|t| requirement(t, s))
            .collect::<Result<_, _>>()
            .map(LabelSelector)
    }

    /// From equality pairs (a ReplicaSet's `matchLabels`).
    pub fn equals<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        LabelSelector(
            pairs
                .into_iter()
                .map(|(k, v)| Requirement::Equals(k.into(), v.into()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k).as_deref() == Some(v),
            Requirement::NotEquals(k, v) => get(k).as_deref() != Some(v),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector: only `=`, `==` and `!=`, as the API allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(s: &str, kind: Kind, known: impl Fn(&str) -> bool) -> Result<Self, StoreError> {
        let mut out = Vec::new();
        for t in terms(s) {
            let (k, eq, v) = if let Some((k, v)) = t.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                (k, true, v)
            } else {
                return Err(bad("field", s));
            };
            let k = k.trim();
            if !known(k) {
                return Err(StoreError::BadRequest(format!(
                    "field label not supported: {k} (for {kind})"
                )));
            }
            out.push((k.to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    /// `field=value`.
    pub fn equals(field: &str, value: &str) -> Self {
        FieldSelector(vec![(field.into(), true, value.into())])
    }

    pub fn matches(&self, o: &StoredObject) -> bool {
        self.0
            .iter()
            .all(|(k, eq, v)| (o.field(k).unwrap_or_default() == v) == *eq)
    }
}

/// Which objects a list or watch wants.
#[derive(Debug, Clone)]
pub struct Selector {
    pub kind: Kind,
    /// `None`: all namespaces.
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selector {
    pub fn all(kind: Kind) -> Self {
        Self {
            kind,
            namespace: None,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
        }
    }

    pub fn in_namespace(mut self, ns: Option<&str>) -> Self {
        self.namespace = ns.map(str::to_string);
        self
    }

    pub fn matches(&self, o: &StoredObject) -> bool {
        o.kind == self.kind
            && self.namespace.as_ref().is_none_or(|ns| *ns == o.namespace)
            && self.fields.matches(o)
            && self.labels.matches(|k| o.label(k).map(str::to_string))
    }

    /// The change as a watcher with this selector sees it, as kube-apiserver words it: an
    /// object that comes into the selection is ADDED, one that leaves it DELETED (with its
    /// new state), one that stays MODIFIED; `None` when it was never in it.
    pub fn view(&self, c: &Change) -> Option<Change> {
        let was = match c.kind {
            ChangeType::Added => false,
            ChangeType::Deleted => self.matches(c.prev.as_deref().unwrap_or(&c.object)),
            ChangeType::Modified => match &c.prev {
                Some(p) => self.matches(p),
                None => self.matches(&c.object),
            },
        };
        let is = c.kind != ChangeType::Deleted && self.matches(&c.object);
        let kind = match (was, is) {
            (false, false) => return None,
            (false, true) => ChangeType::Added,
            (true, true) => ChangeType::Modified,
            (true, false) => ChangeType::Deleted,
        };
        Some(Change { kind, ..c.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(a, _)| *a == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn label_selectors_parse_every_operator() {
        let labels = [("app", "web"), ("tier", "front"), ("env", "prod")];
        let yes = [
            "app=web",
            "app==web,tier!=db",
            "env in (prod, staging)",
            "env notin (dev),app",
            "!canary",
            "",
        ];
        for s in yes {
            assert!(
                LabelSelector::parse(s).unwrap().matches(get(&labels)),
                "{s}"
            );
        }
        let no = ["app=db", "tier!=front", "env in (dev)", "canary", "!app"];
        for s in no {
            assert!(
                !LabelSelector::parse(s).unwrap().matches(get(&labels)),
                "{s}"
            );
        }
        assert!(LabelSelector::parse("env in prod").is_err());
        assert!(LabelSelector::parse("a b").is_err());
    }

    #[test]
    fn field_selectors_refuse_unknown_fields() {
        let known = |k: &str| k == "spec.nodeName" || k == "metadata.name";
        assert!(FieldSelector::parse("spec.nodeName=n1", Kind::Pod, known).is_ok());
        let e = FieldSelector::parse("spec.foo=x", Kind::Pod, known).unwrap_err();
        assert!(e.to_string().contains("spec.foo"), "{e}");
        assert!(FieldSelector::parse("nonsense", Kind::Pod, known).is_err());
    }
}
