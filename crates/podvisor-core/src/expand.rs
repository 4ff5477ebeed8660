//! `$(VAR)` references in a command, as Kubernetes expands them: `$(NAME)` becomes the
//! variable's value when it is defined and stays as written when it is not; `$$` is a
//! literal `$`. An exec probe's command is expanded with the container's literal `env`
//! values only (the kubelet's `ExpandContainerCommandOnlyStatic`).
//!
//! Beyond the kubelet, every expansion is bounded: a value may refer to earlier expanded
//! ones, so a few kilobytes of spec (each variable eight copies of the one before) would
//! otherwise expand to gigabytes inside the agent. The bounds are the kernel's own: no
//! argument or environment string longer than [`MAX_STRING`] and no more than
//! [`MAX_TOTAL`] of them together ever reach a process (`execve` answers `E2BIG`), so a
//! container refused for them could never have started.

use k8s_openapi::api::core::v1::EnvVar;

/// The longest string `execve` takes, argument or `NAME=value` (`MAX_ARG_STRLEN`, 32
/// pages of 4 KiB, its terminating NUL included).
pub const MAX_STRING: usize = 32 * 4096 - 1;

/// The most arguments and environment `execve` takes together, whatever the stack limit
/// (three quarters of `_STK_LIM`, 8 MiB).
pub const MAX_TOTAL: usize = 6 * 1024 * 1024;

/// An expansion past [`MAX_STRING`], or strings together past [`MAX_TOTAL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooLong {
    #[error("expands to more than {MAX_STRING} bytes, the longest string a process can be given")]
    String,
    #[error("expands to more than {MAX_TOTAL} bytes together, more than a process can be given")]
    Total,
}

/// Strings made one after another, refused once together they pass [`MAX_TOTAL`].
#[derive(Debug, Default)]
pub struct Budget {
    used: usize,
}

impl Budget {
    /// Counts `len` bytes (and a separator) against the budget.
    pub fn take(&mut self, len: usize) -> Result<(), TooLong> {
        self.used = self.used.saturating_add(len + 1);
        if self.used > MAX_TOTAL {
            return Err(TooLong::Total);
        }
        Ok(())
    }

    /// The longest string that may still be made: what is left, and no more than
    /// [`MAX_STRING`].
    pub fn room(&self) -> usize {
        MAX_TOTAL.saturating_sub(self.used).min(MAX_STRING)
    }

    /// `s` expanded within the budget, and counted against it.
    pub fn expand<V: AsRef<str>>(
        &mut self,
        s: &str,
        lookup: impl Fn(&str) -> Option<V>,
    ) -> Result<String, TooLong> {
        let room = self.room();
        let out = expand(s, lookup, room).map_err(|e| match room < MAX_STRING {
            true => TooLong::Total,
            false => e,
        })?;
        self.take(out.len())?;
        Ok(out)
    }
}

/// `s` with every reference `lookup` knows replaced, or [`TooLong`] as soon as the result
/// would pass `limit` bytes (nothing longer is ever held).
pub fn expand<V: AsRef<str>>(
    s: &str,
    lookup: impl Fn(&str) -> Option<V>,
    limit: usize,
) -> Result<String, TooLong> {
    let mut out = Bounded {
        text: String::with_capacity(s.len().min(limit)),
        limit,
    };
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push(&rest[..i])?;
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push("$")?;
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            match lookup(&inner[..end]) {
                Some(v) => out.push(v.as_ref())?,
                None => out.push(&rest[i..i + 2 + end + 1])?,
            }
            rest = &inner[end + 1..];
        } else {
            out.push("$")?;
            rest = after;
        }
    }
    out.push(rest)?;
    Ok(out.text)
}

/// A string that refuses to grow past its limit.
struct Bounded {
    text: String,
    limit: usize,
}

impl Bounded {
    fn push(&mut self, s: &str) -> Result<(), TooLong> {
        if self.text.len() + s.len() > self.limit {
            return Err(TooLong::String);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// `command` expanded with the literal values of `env` (a later definition wins, as in a
/// container's environment); references to anything else stay as written.
pub fn expand_static(command: &[String], env: &[EnvVar]) -> Result<Vec<String>, TooLong> {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|e| e.name == name && e.value_from.is_none())
            .map(|e| e.value.as_deref().unwrap_or_default())
    };
    let mut budget = Budget::default();
    command.iter().map(|s| budget.expand(s, lookup)).collect()
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
            expand_static(&cmd, &env).unwrap(),
            ["wget -q http://127.0.0.1:8080/healthz", "2$(A)$(B) $ x $(",]
        );
    }

    #[test]
    fn an_expansion_stops_at_its_limit_without_growing_past_it() {
        let big = "x".repeat(1000);
        let eight = "$(V)".repeat(8);
        let lookup = |_: &str| Some(big.as_str());
        assert_eq!(expand(&eight, lookup, 8000).unwrap().len(), 8000);
        assert_eq!(expand(&eight, lookup, 7999), Err(TooLong::String));
        let bomb = vec![env("V", &big), env("W", &"$(V)".repeat(200))];
        let e = expand_static(&["$(W)".to_string()], &bomb).unwrap();
        assert_eq!(
            e[0],
            "$(V)".repeat(200),
            "static values are not re-expanded"
        );
        let huge = vec![env("V", &"y".repeat(MAX_STRING))];
        assert_eq!(
            expand_static(&["$(V)$(V)".into()], &huge),
            Err(TooLong::String)
        );
    }

    #[test]
    fn many_strings_stop_at_the_total() {
        let half = vec![env("V", &"y".repeat(MAX_STRING / 2))];
        let many = vec!["$(V)".to_string(); 2 * MAX_TOTAL / MAX_STRING + 2];
        assert_eq!(expand_static(&many, &half), Err(TooLong::Total));
        let few = vec!["$(V)".to_string(); 10];
        assert_eq!(expand_static(&few, &half).unwrap().len(), 10);
    }
}
