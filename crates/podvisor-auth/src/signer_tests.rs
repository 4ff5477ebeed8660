use super::*;
use crate::claims::{Private, Ref};

fn claims(exp: i64) -> Claims {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    Claims {
        iss: ISSUER.into(),
        sub: "system:serviceaccount:ns:sa".into(),
        aud: vec![ISSUER.into()],
        exp: now + exp,
        iat: now,
        nbf: now,
        jti: "j".into(),
        kubernetes: Private {
            namespace: "ns".into(),
            serviceaccount: Ref {
                name: "sa".into(),
                uid: "u".into(),
            },
            pod: None,
            node: None,
        },
    }
}

#[test]
fn a_key_survives_a_restart_and_signs_tokens_only_it_accepts() {
    let dir = std::env::temp_dir().join(format!("podvisor-signer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = Signer::load_or_make(&dir).unwrap();
    let again = Signer::load_or_make(&dir).unwrap();
    let token = first.sign(&claims(600)).unwrap();
    assert_eq!(again.verify(&token).unwrap(), claims(600));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.join("sa.key")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let other = std::env::temp_dir().join(format!("podvisor-signer-b-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&other);
    assert!(
        Signer::load_or_make(&other)
            .unwrap()
            .verify(&token)
            .is_err()
    );
    assert!(first.verify("not.a.token").is_err());
    assert!(first.verify(&"x".repeat(100_000)).is_err());
}

#[test]
fn an_expired_token_or_another_issuer_s_is_refused() {
    let dir = std::env::temp_dir().join(format!("podvisor-signer-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = Signer::load_or_make(&dir).unwrap();
    let old = s.sign(&claims(-120)).unwrap();
    assert!(s.verify(&old).is_err());
    let mut foreign = claims(600);
    foreign.iss = "https://elsewhere".into();
    assert!(s.verify(&s.sign(&foreign).unwrap()).is_err());
}
