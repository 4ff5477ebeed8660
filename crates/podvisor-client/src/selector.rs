//! Label and field selectors, in the string forms the API takes (`app=web,tier!=db`,
//! `env in (a,b)`, `!canary`, `spec.nodeName=n1`): parsed, rendered back, and matched;
//! and the fields of each kind a field selector may name, as kube-apiserver allows them.

use std::fmt;

use podvisor_core::Kind;

use crate::error::Error;
use crate::object::AnyObject;

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

fn bad(what: &str, s: &str) -> Error {
    Error::BadRequest(format!("unable to parse {what} selector {s:?}"))
}

fn set_values(rest: &str, all: &str) -> Result<Vec<String>, Error> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad("label", all))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

fn requirement(t: &str, all: &str) -> Result<Requirement, Error> {
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
    pub fn parse(s: &str) -> Result<Self, Error> {
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

    /// Whether an object whose labels `get` answers is selected.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector: only `=`, `==` and `!=`, as the API allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(s: &str, kind: Kind, known: impl Fn(&str) -> bool) -> Result<Self, Error> {
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
                return Err(Error::BadRequest(format!(
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

    /// Whether an object whose field values `get` answers is selected.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0
            .iter()
            .all(|(k, eq, v)| (get(k).unwrap_or_default() == v) == *eq)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self
            .0
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => format!("{k}={v}"),
                Requirement::NotEquals(k, v) => format!("{k}!={v}"),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::NotExists(k) => format!("!{k}"),
            })
            .collect();
        f.write_str(&terms.join(","))
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self
            .0
            .iter()
            .map(|(k, eq, v)| format!("{k}{}{v}", if *eq { "=" } else { "!=" }))
            .collect();
        f.write_str(&terms.join(","))
    }
}

impl FieldSelector {
    /// Parses a selector for `kind`, refusing fields the API does not let it name.
    pub fn parse_for(kind: Kind, s: &str) -> Result<Self, Error> {
        let common = ["metadata.name", "metadata.namespace"];
        Self::parse(s, kind, |f| {
            common.contains(&f) || selectable(kind).contains(&f)
        })
    }
}

/// The fields a field selector may name for each kind beyond `metadata.name` and
/// `metadata.namespace` (the common ones kube-apiserver allows).
pub fn selectable(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Pod => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
        ],
        Kind::Node => &["spec.unschedulable"],
        Kind::Namespace => &["status.phase"],
        Kind::Secret => &["type"],
        Kind::Event => &[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
        ],
        Kind::ConfigMap
        | Kind::ReplicaSet
        | Kind::ServiceAccount
        | Kind::Role
        | Kind::RoleBinding
        | Kind::ClusterRole
        | Kind::ClusterRoleBinding
        | Kind::Deployment
        | Kind::Job => &[],
    }
}

fn text(v: Option<&String>) -> String {
    v.cloned().unwrap_or_default()
}

/// The values of the selectable fields of `o` beyond its name and namespace, as a field
/// selector compares them ("" for an absent field, `true`/`false` for a flag).
pub fn field_values(o: &AnyObject) -> Vec<(&'static str, String)> {
    match o {
        AnyObject::Pod(p) => {
            let spec = p.spec.as_ref();
            let status = p.status.as_ref();
            vec![
                (
                    "spec.nodeName",
                    text(spec.and_then(|s| s.node_name.as_ref())),
                ),
                (
                    "spec.restartPolicy",
                    text(spec.and_then(|s| s.restart_policy.as_ref())),
                ),
                (
                    "spec.schedulerName",
                    text(spec.and_then(|s| s.scheduler_name.as_ref())),
                ),
                (
                    "spec.serviceAccountName",
                    text(spec.and_then(|s| s.service_account_name.as_ref())),
                ),
                ("status.phase", text(status.and_then(|s| s.phase.as_ref()))),
                ("status.podIP", text(status.and_then(|s| s.pod_ip.as_ref()))),
            ]
        }
        AnyObject::Node(n) => {
            let cordoned = n.spec.as_ref().and_then(|s| s.unschedulable);
            vec![(
                "spec.unschedulable",
                cordoned.map(|b| b.to_string()).unwrap_or_default(),
            )]
        }
        AnyObject::Namespace(n) => {
            let phase = n.status.as_ref().and_then(|s| s.phase.as_ref());
            vec![("status.phase", text(phase))]
        }
        AnyObject::Secret(s) => vec![("type", text(s.type_.as_ref()))],
        AnyObject::Event(e) => {
            let i = &e.involved_object;
            vec![
                ("involvedObject.kind", text(i.kind.as_ref())),
                ("involvedObject.name", text(i.name.as_ref())),
                ("involvedObject.namespace", text(i.namespace.as_ref())),
                ("involvedObject.uid", text(i.uid.as_ref())),
                ("reason", text(e.reason.as_ref())),
                ("type", text(e.type_.as_ref())),
            ]
        }
        AnyObject::ConfigMap(_)
        | AnyObject::ReplicaSet(_)
        | AnyObject::ServiceAccount(_)
        | AnyObject::Role(_)
        | AnyObject::RoleBinding(_)
        | AnyObject::ClusterRole(_)
        | AnyObject::ClusterRoleBinding(_)
        | AnyObject::Deployment(_)
        | AnyObject::Job(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |k| pairs.iter().find(|(a, _)| *a == k).map(|(_, v)| *v)
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

    #[test]
    fn selectors_render_back_to_what_parses_the_same() {
        for s in ["app=web,tier!=db", "env in (a,b),!canary,app"] {
            let l = LabelSelector::parse(s).unwrap();
            assert_eq!(LabelSelector::parse(&l.to_string()).unwrap(), l);
        }
        let f =
            FieldSelector::parse_for(Kind::Pod, "spec.nodeName=n1,status.phase!=Failed").unwrap();
        assert_eq!(f.to_string(), "spec.nodeName=n1,status.phase!=Failed");
        assert!(FieldSelector::parse_for(Kind::ConfigMap, "spec.nodeName=n1").is_err());
    }
}
