use std::time::Duration;

use super::duration::parse_duration;
use super::*;

#[test]
fn the_documented_file_is_the_defaults() {
    let documented = include_str!("../../../config/podvisor.toml");
    let parsed = AgentConfig::parse(documented).unwrap();
    let default = AgentConfig::default();
    assert_eq!(format!("{parsed:?}"), format!("{default:?}"));
    parsed.validate().unwrap();
}

#[test]
fn unknown_keys_and_bad_values_name_the_key_and_the_reason() {
    let e = AgentConfig::parse("relist_perod = \"1s\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `relist_perod`"), "{e}");
    let e = AgentConfig::parse("relist_period = \"fast\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("relist_period") && e.contains("invalid duration \"fast\""),
        "{e}"
    );
    let e = AgentConfig::parse("[debug]\naddress = \"nowhere\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("address") && e.contains("invalid socket address"),
        "{e}"
    );
    let e = AgentConfig::parse("[log]\nformat = \"xml\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("format") && e.contains("unknown variant `xml`"),
        "{e}"
    );
    let c = AgentConfig::parse("[allocatable]\ncpu = \"lots\"").unwrap();
    let e = c.validate().unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid setting allocatable.cpu: invalid quantity \"lots\""
    );
    let c = AgentConfig::parse("node_name = \"My_Node\"").unwrap();
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.starts_with("invalid setting node_name") && e.contains("RFC 1123 subdomain"),
        "{e}"
    );
    let e = AgentConfig::parse("[pleg]\nmode = \"psychic\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("mode") && e.contains("unknown variant"), "{e}");
    let c =
        AgentConfig::parse("[supervisor]\nrestart_backoff = \"10s\"\nrestart_backoff_max = \"1s\"")
            .unwrap();
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .starts_with("invalid setting supervisor.restart_backoff")
    );
    let c = AgentConfig::parse("[node]\ntaints = [\"gpu=yes:NoExecute\", \"bad\"]").unwrap();
    let e = c.validate().unwrap_err().to_string();
    assert!(
        e.starts_with("invalid setting node.taints") && e.contains("\"bad\""),
        "{e}"
    );
    let c = AgentConfig::parse("state_dir = \"relative/dir\"").unwrap();
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .starts_with("invalid setting state_dir")
    );
}

#[test]
fn durations() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert!(parse_duration("0s").is_err());
    assert!(parse_duration("5").is_err());
    // Would overflow Duration (a panic) or the timers: refused with the reason.
    let huge = parse_duration("99999999999999999999999h").unwrap_err();
    assert!(huge.to_string().contains("at most 24h"), "{huge}");
    assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
}

#[test]
fn a_rotation_share_outside_0_to_1_and_a_certificate_under_10_minutes_are_refused() {
    let bad = AgentConfig::parse("[cluster]\nrotate_after = 1.5").unwrap();
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("cluster.rotate_after"), "{e}");
    let short = AgentConfig::parse("[cluster]\ncertificate_lifetime = \"1m\"").unwrap();
    let e = short.validate().unwrap_err().to_string();
    assert!(e.contains("cluster.certificate_lifetime"), "{e}");
    let ok = AgentConfig::parse("[cluster]\ncertificate_lifetime = \"10m\"").unwrap();
    assert_eq!(ok.cluster.lifetime(), Some(Duration::from_secs(600)));
    ok.validate().unwrap();
}
