use k8s_openapi::ByteString;
use serde_json::json;

use super::*;

fn secret(type_: &str, key: &str, config: serde_json::Value) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some("pull".into());
    s.type_ = Some(type_.into());
    let raw = serde_json::to_vec(&config).unwrap();
    s.data = Some(BTreeMap::from([(key.to_string(), ByteString(raw))]));
    s
}

fn config_json(auths: serde_json::Value) -> Secret {
    secret(
        "kubernetes.io/dockerconfigjson",
        ".dockerconfigjson",
        json!({ "auths": auths }),
    )
}

fn users(k: &Keyring, image: &str) -> Vec<String> {
    k.lookup(image).into_iter().map(|a| a.username).collect()
}

#[test]
fn entries_give_a_login_from_auth_or_from_user_and_password() {
    let mut k = Keyring::default();
    let auth = base64::engine::general_purpose::STANDARD.encode("alice:pa:ss");
    k.add(&config_json(json!({
        "localhost:5000": {"auth": auth},
        "https://registry.example.com/v1/": {"username": "bob", "password": "pw"}})))
        .unwrap();
    let a = &k.lookup("localhost:5000/private/busybox:1")[0];
    assert_eq!(
        (a.username.as_str(), a.password.as_str()),
        ("alice", "pa:ss")
    );
    assert_eq!(a.server_address, "", "as the kubelet sends it");
    assert_eq!(
        users(&k, "registry.example.com/team/app@sha256:00"),
        ["bob"]
    );
    assert!(
        k.lookup("localhost:5001/private/busybox:1").is_empty(),
        "another port"
    );
    assert!(k.lookup("busybox").is_empty());
}

#[test]
fn the_most_specific_key_comes_first_and_globs_match_one_label() {
    let mut k = Keyring::default();
    k.add(&config_json(json!({
        "example.com": {"username": "any"},
        "example.com/team": {"username": "team"},
        "*.example.com": {"username": "glob"}})))
        .unwrap();
    assert_eq!(users(&k, "example.com/team/app:1"), ["team", "any"]);
    assert_eq!(users(&k, "example.com/other:1"), ["any"]);
    assert_eq!(users(&k, "eu.example.com/app"), ["glob"]);
    assert!(
        users(&k, "a.eu.example.com/app").is_empty(),
        "one label only"
    );
}

#[test]
fn docker_hub_s_key_serves_images_without_a_registry() {
    let mut k = Keyring::default();
    k.add(&secret(
        "kubernetes.io/dockercfg",
        ".dockercfg",
        json!({"https://index.docker.io/v1/": {"username": "hub"}}),
    ))
    .unwrap();
    assert_eq!(users(&k, "busybox:1.36"), ["hub"]);
    assert_eq!(users(&k, "someone/app"), ["hub"]);
    assert_eq!(users(&k, "docker.io/library/busybox"), ["hub"]);
    assert!(users(&k, "quay.io/someone/app").is_empty());
}

#[test]
fn other_secrets_add_nothing_and_broken_ones_are_errors() {
    let mut k = Keyring::default();
    k.add(&secret(
        "Opaque",
        ".dockerconfigjson",
        json!({"auths": {"x.io": {}}}),
    ))
    .unwrap();
    assert!(k.lookup("x.io/app").is_empty());
    let mut broken = config_json(json!({}));
    broken.data = Some(BTreeMap::from([(
        ".dockerconfigjson".into(),
        ByteString(b"{not json".to_vec()),
    )]));
    assert!(k.add(&broken).is_err());
    let bad_auth = config_json(json!({"x.io": {"auth": "%%%"}}));
    let e = k.add(&bad_auth).unwrap_err().to_string();
    assert!(e.contains("base64") && !e.contains("%%%"), "{e}");
}

#[test]
fn repositories_drop_tags_and_digests_and_name_the_hub() {
    assert_eq!(repository("busybox"), "docker.io/library/busybox");
    assert_eq!(repository("busybox:1.36"), "docker.io/library/busybox");
    assert_eq!(repository("localhost:5000/a/b:1"), "localhost:5000/a/b");
    assert_eq!(
        repository("localhost/podvisor/busybox:test"),
        "localhost/podvisor/busybox"
    );
    assert_eq!(repository("quay.io/x/y@sha256:ab"), "quay.io/x/y");
    assert_eq!(repository("someone/app:2"), "docker.io/someone/app");
}

#[test]
fn globs_match_as_patterns_do_and_a_hostile_one_costs_nothing() {
    for (g, t, m) in [
        ("*", "eu", true),
        ("e?", "eu", true),
        ("*u", "eu", true),
        ("a*b*c", "axxbyyc", true),
        ("a*b*c", "axxbyy", false),
        ("", "", true),
        ("x", "", false),
    ] {
        assert_eq!(glob_match(g.as_bytes(), t.as_bytes()), m, "{g} ~ {t}");
    }
    let hostile = "*a".repeat(200);
    let label = "a".repeat(63) + "b";
    let t0 = std::time::Instant::now();
    assert!(!glob_match(hostile.as_bytes(), label.as_bytes()));
    assert!(t0.elapsed() < std::time::Duration::from_millis(100));
}
