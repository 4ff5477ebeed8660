//! Label selectors (`matchLabels` and `matchExpressions`), as the ReplicaSet controller
//! matches pods with them and the API validates a ReplicaSet's template against its own.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `labels` match `selector`. An empty selector matches nothing here: a
/// ReplicaSet's selector is never empty (the API refuses one), and one that somehow was
/// must not take every pod of its namespace.
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let exact = selector.match_labels.as_ref().filter(|m| !m.is_empty());
    let exprs = selector.match_expressions.as_deref().unwrap_or(&[]);
    if exact.is_none() && exprs.is_empty() {
        return false;
    }
    let exact_ok = exact
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    exact_ok
        && exprs.iter().all(|r| {
            let have = labels.get(&r.key);
            let values = r.values.as_deref().unwrap_or(&[]);
            match r.operator.as_str() {
                "In" => have.is_some_and(|v| values.contains(v)),
                "NotIn" => have.is_none_or(|v| !values.contains(v)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
}

/// `a=b,c in (d,e)`: a selector as the scale subresource and kubectl show it.
pub fn selector_string(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for r in selector.match_expressions.iter().flatten() {
        let values = r.values.clone().unwrap_or_default().join(",");
        parts.push(match r.operator.as_str() {
            "In" => format!("{} in ({values})", r.key),
            "NotIn" => format!("{} notin ({values})", r.key),
            "Exists" => r.key.clone(),
            _ => format!("!{}", r.key),
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_labels_and_expressions_and_empty_matches_nothing() {
        let sel = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            }]),
        };
        assert!(selects(&sel, &labels(&[("app", "web"), ("tier", "a")])));
        assert!(!selects(&sel, &labels(&[("app", "web"), ("tier", "c")])));
        assert!(!selects(&sel, &labels(&[("tier", "a")])));
        assert_eq!(selector_string(&sel), "app=web,tier in (a,b)");
        assert!(!selects(
            &LabelSelector::default(),
            &labels(&[("app", "web")])
        ));
    }
}
