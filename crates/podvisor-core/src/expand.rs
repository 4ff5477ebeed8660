//! `$(VAR)` references in a command, as Kubernetes expands them: `$(NAME)` becomes the
//! variable's value when it is defined and stays as written when it is not; `$$` is a
//! literal `$`. An exec probe's command is expanded with the container's literal `env`
//! values only (the kubelet's `ExpandContainerCommandOnlyStatic`).

use k8s_openapi::api::core::v1::EnvVar;

/// `s` with every reference `lookup` knows replaced.
pub fn expand(s: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match lookup(name) {
                Some(v) => out.push_str(&v),
                None => out.push_str(&rest[i..i + 2 + end + 1]),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `command` expanded with the literal values of `env` (a later definition wins, as in a
/// container's environment); references to anything else stay as written.
pub fn expand_static(command: &[String], env: &[EnvVar]) -> Vec<String> {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|e| e.name == name && e.value_from.is_none())
            .map(|e| e.value.clone().unwrap_or_default())
    };
    command.iter().map(|s| expand(s, lookup)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: Some(value.into()),
            ..Default::default()
        }
    }

    #[test]
    fn references_expand_escapes_stay_literal_and_unknown_ones_stay() {
        let env = [env("PORT", "8080"), env("A", "1"), env("A", "2")];
        let cmd = [
            "wget -q http://127.0.0.1:$(PORT)/healthz".to_string(),
            "$(A)$$(A)$(B) $ x $(".to_string(),
        ];
        assert_eq!(
            expand_static(&cmd, &env),
            ["wget -q http://127.0.0.1:8080/healthz", "2$(A)$(B) $ x $(",]
        );
    }
}
