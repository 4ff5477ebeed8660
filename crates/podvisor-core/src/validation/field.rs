//! Field errors as Kubernetes reports them: a path into the object (`spec.containers[0].image`),
//! what kind of problem it is, the offending value and why. The API answers them as the
//! causes of a 422 `Invalid`; a manifest's refusal prints them the way `kubectl` does.

use std::fmt;

/// Kubernetes' `field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    Duplicate,
    NotSupported,
    NotFound,
    Forbidden,
    TooLong,
}

impl FieldErrorKind {
    /// The cause's `reason` in a `Status` body.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::Duplicate => "FieldValueDuplicate",
            Self::NotSupported => "FieldValueNotSupported",
            Self::NotFound => "FieldValueNotFound",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid => "Invalid value",
            Self::Duplicate => "Duplicate value",
            Self::NotSupported => "Unsupported value",
            Self::NotFound => "Not found",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
        }
    }
}

/// A path into an object, built as the validation descends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    pub fn new(root: &str) -> Self {
        Self(root.to_string())
    }

    pub fn child(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    pub fn key(&self, k: &str) -> Self {
        Self(format!("{}[{k}]", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    /// The offending value, as the API quotes it (a string quoted, a number bare).
    pub value: Option<String>,
    pub detail: String,
}

impl FieldError {
    fn new(kind: FieldErrorKind, path: &FieldPath, value: Option<String>, detail: &str) -> Self {
        Self {
            kind,
            field: path.as_str().to_string(),
            value,
            detail: detail.to_string(),
        }
    }

    pub fn required(path: &FieldPath, detail: &str) -> Self {
        Self::new(FieldErrorKind::Required, path, None, detail)
    }

    /// An invalid string value (quoted in the message).
    pub fn invalid(path: &FieldPath, value: &str, detail: &str) -> Self {
        Self::new(FieldErrorKind::Invalid, path, Some(quote(value)), detail)
    }

    /// An invalid number (bare in the message).
    pub fn invalid_number(path: &FieldPath, value: i64, detail: &str) -> Self {
        Self::new(
            FieldErrorKind::Invalid,
            path,
            Some(value.to_string()),
            detail,
        )
    }

    pub fn duplicate(path: &FieldPath, value: &str) -> Self {
        Self::new(FieldErrorKind::Duplicate, path, Some(quote(value)), "")
    }

    pub fn not_supported(path: &FieldPath, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        let detail = format!("supported values: {}", list.join(", "));
        Self::new(
            FieldErrorKind::NotSupported,
            path,
            Some(quote(value)),
            &detail,
        )
    }

    pub fn not_found(path: &FieldPath, value: &str) -> Self {
        Self::new(FieldErrorKind::NotFound, path, Some(quote(value)), "")
    }

    pub fn forbidden(path: &FieldPath, detail: &str) -> Self {
        Self::new(FieldErrorKind::Forbidden, path, None, detail)
    }
}

/// Values are quoted, and long ones cut, so an error stays one readable line.
fn quote(v: &str) -> String {
    const MAX: usize = 64;
    match v.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}...", &v[..cut]),
        None => format!("{v:?}"),
    }
}

/// `spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and
/// 65535, inclusive`, as `kubectl` prints it.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind.describe())?;
        if let Some(v) = &self.value {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Every problem found in one object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    pub fn into_result(self) -> Result<(), FieldErrors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }
}

/// One error as itself, several as `[a, b]` (the API server's aggregate).
impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", parts.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_kubectl_prints_them() {
        let c = FieldPath::new("spec").child("containers").index(0);
        let port = c.child("ports").index(0).child("containerPort");
        let e = FieldError::invalid_number(&port, 70000, "must be between 1 and 65535, inclusive");
        assert_eq!(
            e.to_string(),
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
        let r = FieldError::required(&c.child("image"), "");
        assert_eq!(r.to_string(), "spec.containers[0].image: Required value");
        assert_eq!(r.kind.reason(), "FieldValueRequired");
        let p = FieldPath::new("spec").child("restartPolicy");
        let n = FieldError::not_supported(&p, "Sometimes", &["Always", "Never"]);
        assert_eq!(
            n.to_string(),
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""
        );
        let all = FieldErrors(vec![r.clone(), n]);
        assert!(
            all.to_string()
                .starts_with("[spec.containers[0].image: Required value, ")
        );
        assert_eq!(
            FieldErrors(vec![r]).to_string(),
            "spec.containers[0].image: Required value"
        );
        let long = FieldError::invalid(&p, &"é".repeat(100), "x");
        assert!(long.to_string().len() < 200, "{long}");
    }
}
