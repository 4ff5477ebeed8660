//! The nested fields of a `KubeletConfiguration`: `authentication`, `authorization` and
//! `logging`, each field named by its path in errors (`authentication.anonymous.enabled`).

use serde_json::{Map, Value};

use super::kubelet::{API_VERSION, KIND, duration, refuse, typed};
use super::sections::LogFormat;
use super::{AgentConfig, ConfigError};

/// The fields of `v` (a nested object), `field` naming it in errors.
fn object<'a>(field: &str, v: &'a Value) -> Result<&'a Map<String, Value>, ConfigError> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(&EMPTY),
        other => Err(refuse(field, format!("{other} is not an object"))),
    }
}

/// `authentication`: x509 client certificates against a CA file (honoured), bearer tokens
/// through TokenReview (what podvisor does in a cluster), never anonymous.
pub(super) fn authentication(cfg: &mut AgentConfig, v: &Value) -> Result<(), ConfigError> {
    for (k, v) in object("authentication", v)? {
        let field = format!("authentication.{k}");
        for (k2, v2) in object(&field, v)? {
            let field = format!("{field}.{k2}");
            match (k.as_str(), k2.as_str()) {
                ("x509", "clientCAFile") => {
                    let p: String = typed(&field, v2)?;
                    cfg.server.client_ca_file = (!p.is_empty()).then(|| p.into());
                }
                ("webhook", "enabled") if v2 == &Value::Bool(true) => {}
                ("webhook", "cacheTTL") => accept_zero_duration(&field, v2)?,
                ("anonymous", "enabled") if v2 == &Value::Bool(false) => {}
                ("webhook", "enabled") | ("anonymous", "enabled") => {
                    return Err(refuse(
                        &field,
                        format!(
                            "{v2} is not honoured: podvisor's :10250 takes client \
                             certificates and, in a cluster, bearer tokens it asks the \
                             API server about (TokenReview); never anonymous requests"
                        ),
                    ));
                }
                _ => {
                    return Err(refuse(
                        &field,
                        format!("not a field of {API_VERSION} {KIND}"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `authorization`: `Webhook` (SubjectAccessReview), what podvisor does in a cluster.
pub(super) fn authorization(v: &Value) -> Result<(), ConfigError> {
    for (k, v) in object("authorization", v)? {
        let field = format!("authorization.{k}");
        match k.as_str() {
            "mode" if matches!(v.as_str(), Some("Webhook" | "")) => {}
            "mode" => {
                return Err(refuse(
                    &field,
                    format!(
                        "{v} is not honoured: podvisor asks the API server whether a client \
                         may act on the node (Webhook), as kubeadm configures the kubelet"
                    ),
                ));
            }
            "webhook" => {
                for (k2, v2) in object(&field, v)? {
                    let field = format!("{field}.{k2}");
                    match k2.as_str() {
                        "cacheAuthorizedTTL" | "cacheUnauthorizedTTL" => {
                            accept_zero_duration(&field, v2)?;
                        }
                        _ => return Err(refuse(&field, format!("not a field of {KIND}"))),
                    }
                }
            }
            _ => {
                return Err(refuse(
                    &field,
                    format!("not a field of {API_VERSION} {KIND}"),
                ));
            }
        }
    }
    Ok(())
}

/// A cache period podvisor does not keep: only zero (the kubelet's default) is accepted.
fn accept_zero_duration(field: &str, v: &Value) -> Result<(), ConfigError> {
    match duration(field, v)? {
        None => Ok(()),
        Some(d) => Err(refuse(
            field,
            format!(
                "{d:?} is not honoured: podvisor asks the API server each time and keeps no answers"
            ),
        )),
    }
}

/// `logging`: the format (`text` or `json`) and the verbosity (as `--v`).
pub(super) fn logging(cfg: &mut AgentConfig, v: &Value) -> Result<(), ConfigError> {
    for (k, v) in object("logging", v)? {
        let field = format!("logging.{k}");
        match k.as_str() {
            "format" => match v.as_str() {
                Some("" | "text") => cfg.log.format = LogFormat::Human,
                Some("json") => cfg.log.format = LogFormat::Json,
                _ => return Err(refuse(&field, format!("{v}: text or json"))),
            },
            "verbosity" => cfg.log.filter = verbosity_filter(typed(&field, v)?).into(),
            // How often the kubelet's log buffer is flushed, and the buffers of its two
            // formats: podvisor writes every line as it comes.
            "flushFrequency" | "options" => {}
            _ => {
                return Err(refuse(
                    &field,
                    format!("not a field of {API_VERSION} {KIND}"),
                ));
            }
        }
    }
    Ok(())
}

/// The kubelet's `--v` levels as a tracing filter: 0–1 info, 2–4 debug for podvisor's own
/// crates, 5 and up trace for them.
pub fn verbosity_filter(v: u32) -> &'static str {
    match v {
        0 | 1 => "info",
        2..=4 => "info,podvisor=debug,podvisor_kubelet=debug,podvisor_node=debug",
        _ => "info,podvisor=trace,podvisor_kubelet=trace,podvisor_node=trace",
    }
}
