//! Credentials for one image pull (from a pod's `imagePullSecrets`), as CRI's `AuthConfig`
//! carries them. Never printed: `Debug` names the registry only.

/// A registry login: a user name and password, or their base64 `auth`, or a token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RegistryAuth {
    pub username: String,
    pub password: String,
    /// base64 of `username:password`, as Docker's config files keep it.
    pub auth: String,
    pub server_address: String,
    pub identity_token: String,
    pub registry_token: String,
}

impl std::fmt::Debug for RegistryAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryAuth")
            .field("server_address", &self.server_address)
            .finish_non_exhaustive()
    }
}

impl From<&RegistryAuth> for crate::proto::AuthConfig {
    fn from(a: &RegistryAuth) -> Self {
        Self {
            username: a.username.clone(),
            password: a.password.clone(),
            auth: a.auth.clone(),
            server_address: a.server_address.clone(),
            identity_token: a.identity_token.clone(),
            registry_token: a.registry_token.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret_parts() {
        let a = RegistryAuth {
            username: "alice".into(),
            password: "s3cret".into(),
            auth: "YWxpY2U6czNjcmV0".into(),
            server_address: "localhost:5000".into(),
            ..RegistryAuth::default()
        };
        let shown = format!("{a:?}");
        assert!(shown.contains("localhost:5000"));
        assert!(!shown.contains("s3cret") && !shown.contains("alice") && !shown.contains("YWxp"));
    }
}
