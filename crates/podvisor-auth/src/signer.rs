//! The node's token signing key (ECDSA P-256, ES256 as kube-apiserver signs with an EC
//! key) and the JWTs it signs and checks. The key is made at first start and kept in
//! `<pki>/sa.key` (0600), so tokens survive the agent's restart.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

use crate::claims::Claims;
use crate::error::AuthError;

/// Who the node's tokens say issued them, and the audience the node's API accepts (the
/// issuer, as kube-apiserver's `--api-audiences` default to it).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

pub struct Signer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The key's ID (`kid`): a digest of the public key, as kube-apiserver names its keys.
    kid: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("kid", &self.kid).finish()
    }
}

/// Why a PEM is no signing key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(transparent)]
    Pem(#[from] rcgen::Error),
    #[error(transparent)]
    Jwt(#[from] jsonwebtoken::errors::Error),
}

fn key_error(path: &Path, reason: impl ToString) -> AuthError {
    AuthError::Key {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl Signer {
    /// The key in `dir/sa.key`, made first if there is none.
    pub fn load_or_make(dir: &Path) -> Result<Signer, AuthError> {
        let path = dir.join("sa.key");
        let pem = match std::fs::read_to_string(&path) {
            Ok(pem) => pem,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = rcgen::KeyPair::generate().map_err(|e| key_error(&path, e))?;
                let pem = key.serialize_pem();
                std::fs::create_dir_all(dir).map_err(|e| key_error(&path, e))?;
                podvisor_core::private_file::write(&path, pem.as_bytes())
                    .map_err(|e| key_error(&path, e))?;
                pem
            }
            Err(e) => return Err(key_error(&path, e)),
        };
        Self::from_pem(&pem).map_err(|e| key_error(&path, e))
    }

    /// A signer of a PKCS#8 PEM EC P-256 private key.
    pub fn from_pem(pem: &str) -> Result<Signer, KeyError> {
        let key = rcgen::KeyPair::from_pem(pem)?;
        let public = key.public_key_pem();
        let encoding = EncodingKey::from_ec_pem(pem.as_bytes())?;
        let decoding = DecodingKey::from_ec_pem(public.as_bytes())?;
        let digest = ring::digest::digest(&ring::digest::SHA256, key.public_key_raw());
        Ok(Signer {
            encoding,
            decoding,
            kid: URL_SAFE_NO_PAD.encode(digest.as_ref()),
        })
    }

    pub fn sign(&self, claims: &Claims) -> Result<String, AuthError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|e| AuthError::Invalid(format!("cannot sign the token: {e}")))
    }

    /// The claims of a token this key signed, checked: signature, issuer, not expired and
    /// not before its time (a minute's leeway, as Kubernetes allows). The audience is the
    /// caller's to check.
    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        let mut v = Validation::new(Algorithm::ES256);
        v.set_issuer(&[ISSUER]);
        v.validate_aud = false;
        v.validate_nbf = true;
        v.set_required_spec_claims(&["exp", "iss", "sub", "nbf"]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &v)
            .map(|d| d.claims)
            .map_err(|e| AuthError::Unauthenticated(format!("invalid bearer token: {e}")))
    }
}

#[cfg(test)]
#[path = "signer_tests.rs"]
mod tests;
