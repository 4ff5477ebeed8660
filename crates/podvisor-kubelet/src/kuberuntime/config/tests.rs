use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, HostPathVolumeSource, Pod, PodSpec,
    ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use podvisor_cri::labels;
use podvisor_cri::proto::{DnsConfig, NamespaceMode};
use podvisor_cri::{ContainerState, ContainerStatus};

use super::backoff::BACKOFF_BASE;
use super::container::resources;
use super::*;
use crate::kuberuntime::actions::{CONTAINER_HASH, container_hash};
use podvisor_volumes::Environment;

/// One instance's config, as the syncer asks for it.
fn config_of(
    pod: &Pod,
    container: &Container,
    image: &str,
    attempt: u32,
    backoff_base: u32,
    env: &[(&str, &str)],
) -> Result<podvisor_cri::proto::ContainerConfig, ConfigError> {
    let env = Environment::of(env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .expect("a small environment");
    let i = Instance {
        pod,
        container,
        image,
        attempt,
        backoff_base,
        env: &env,
        etc_hosts: None,
        termination_log: None,
    };
    container_config(&node(), &i)
}

fn node() -> NodeConfig {
    NodeConfig {
        node_name: "node-a".into(),
        pod_log_dir: "/var/log/pods".into(),
        pod_dir: "/var/lib/podvisor/pods".into(),
        dns: Some(DnsConfig {
            servers: vec!["10.0.0.1".into()],
            searches: vec![],
            options: vec![],
        }),
        cluster_dns: Vec::new(),
        cluster_domain: "cluster.local".into(),
        memory_capacity: 4 << 30,
        pod_cgroups: None,
        container_links_dir: None,
    }
}

fn app() -> Container {
    Container {
        name: "app".into(),
        image: Some("busybox".into()),
        ..Default::default()
    }
}

fn pod_with(c: Container, volumes: Vec<Volume>) -> Pod {
    let mut p = Pod::default();
    p.metadata.uid = Some("u1".into());
    p.metadata.name = Some("web-node-a".into());
    p.metadata.namespace = Some("default".into());
    p.spec = Some(PodSpec {
        containers: vec![c],
        volumes: Some(volumes),
        ..Default::default()
    });
    p
}

#[test]
fn the_environment_is_given_in_order_and_expands_command_and_args() {
    let mut c = app();
    c.command = Some(vec!["/bin/echo".into(), "$(GREETING)".into()]);
    c.args = Some(vec!["$(NAME)-$(UNSET)".into(), "$$(NAME)".into()]);
    let p = pod_with(c.clone(), vec![]);
    let env = [("GREETING", "hello"), ("NAME", "web")];
    let cfg = config_of(&p, &c, "busybox", 0, 0, &env).unwrap();
    let vars: Vec<(String, String)> = cfg.envs.into_iter().map(|kv| (kv.key, kv.value)).collect();
    assert_eq!(
        vars,
        [
            ("GREETING".into(), "hello".into()),
            ("NAME".into(), "web".into())
        ]
    );
    assert_eq!(cfg.command, ["/bin/echo", "hello"]);
    assert_eq!(cfg.args, ["web-$(UNSET)", "$(NAME)"]);
}

#[test]
fn empty_dir_and_host_path_volumes_are_mounted() {
    let mut c = app();
    c.volume_mounts = Some(vec![
        VolumeMount {
            name: "scratch".into(),
            mount_path: "/data".into(),
            ..Default::default()
        },
        VolumeMount {
            name: "host".into(),
            mount_path: "/host".into(),
            read_only: Some(true),
            sub_path: Some("etc".into()),
            ..Default::default()
        },
    ]);
    let volumes = vec![
        Volume {
            name: "scratch".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        },
        Volume {
            name: "host".into(),
            host_path: Some(HostPathVolumeSource {
                path: "/srv".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
    ];
    let p = pod_with(c.clone(), volumes);
    let cfg = config_of(&p, &c, "busybox", 2, 1, &[]).unwrap();
    assert_eq!(
        cfg.mounts[0].host_path,
        "/var/lib/podvisor/pods/u1/volumes/empty-dir/scratch"
    );
    assert_eq!(cfg.mounts[0].container_path, "/data");
    // The subPath is never joined onto the volume: the runtime gets podvisor's bind of
    // what it resolved beneath `/srv`.
    assert_eq!(
        (cfg.mounts[1].host_path.as_str(), cfg.mounts[1].readonly),
        ("/var/lib/podvisor/pods/u1/volume-subpaths/host/app/1", true)
    );
    let subs = super::sub_paths(&node(), &p, &c).unwrap();
    assert_eq!(
        (subs.len(), subs[0].root.to_str(), subs[0].sub.as_str()),
        (1, Some("/srv"), "etc")
    );
    assert_eq!(
        subs[0].target.to_str(),
        Some(cfg.mounts[1].host_path.as_str())
    );
    assert_eq!(cfg.log_path, "app/2.log");
    assert_eq!(cfg.metadata.unwrap().attempt, 2);
    assert_eq!(cfg.annotations[BACKOFF_BASE], "1");
    assert_eq!(cfg.annotations[CONTAINER_HASH], container_hash(&c));
    let mut missing = app();
    missing.volume_mounts = Some(vec![VolumeMount {
        name: "nope".into(),
        mount_path: "/x".into(),
        ..Default::default()
    }]);
    let p = pod_with(missing.clone(), vec![]);
    assert!(matches!(
        config_of(&p, &missing, "b", 0, 0, &[]),
        Err(ConfigError::MissingVolume { .. })
    ));
}

#[test]
fn resources_become_shares_quota_and_memory_limit() {
    let mut c = app();
    c.resources = Some(ResourceRequirements {
        requests: Some(BTreeMap::from([("cpu".into(), Quantity("250m".into()))])),
        limits: Some(BTreeMap::from([
            ("cpu".into(), Quantity("500m".into())),
            ("memory".into(), Quantity("64Mi".into())),
        ])),
        ..Default::default()
    });
    let p = pod_with(c.clone(), vec![]);
    let r = config_of(&p, &c, "b", 0, 0, &[])
        .unwrap()
        .linux
        .unwrap()
        .resources
        .unwrap();
    assert_eq!(
        (r.cpu_shares, r.cpu_period, r.cpu_quota),
        (256, 100_000, 50_000)
    );
    assert_eq!(r.memory_limit_in_bytes, 64 << 20);
    // Burstable, asking 64 MiB (its limit) of the node's 4 GiB: 1000 - 15.
    assert_eq!(r.oom_score_adj, 985);
    // A container that asks for nothing weighs the least, not the runtime's default.
    let bare = app();
    let r = config_of(&pod_with(bare.clone(), vec![]), &bare, "b", 0, 0, &[])
        .unwrap()
        .linux
        .unwrap()
        .resources
        .unwrap();
    assert_eq!(
        (
            r.cpu_shares,
            r.cpu_quota,
            r.memory_limit_in_bytes,
            r.oom_score_adj
        ),
        (2, 0, 0, 1000)
    );
}

/// The values floating point got wrong: 102m was 10300 µs and 105 shares.
#[test]
fn millicores_become_the_kubelet_s_exact_shares_and_quota() {
    for (cpu, shares, quota) in [
        ("102m", 104, 10_200),
        ("9m", 9, 1000),
        ("2.007", 2055, 200_700),
    ] {
        let mut c = app();
        c.resources = Some(ResourceRequirements {
            requests: Some(BTreeMap::from([("cpu".into(), Quantity(cpu.into()))])),
            limits: Some(BTreeMap::from([("cpu".into(), Quantity(cpu.into()))])),
            ..Default::default()
        });
        let p = pod_with(c.clone(), vec![]);
        let r = config_of(&p, &c, "b", 0, 0, &[])
            .unwrap()
            .linux
            .unwrap()
            .resources
            .unwrap();
        assert_eq!((r.cpu_shares, r.cpu_quota), (shares, quota), "{cpu}");
    }
}

#[test]
fn sandbox_config_follows_the_pod_network_and_ports() {
    let mut c = app();
    c.ports = Some(vec![ContainerPort {
        container_port: 80,
        host_port: Some(8080),
        ..Default::default()
    }]);
    let mut p = pod_with(c, vec![]);
    let cfg = sandbox_config(&node(), &p, 3);
    assert_eq!(cfg.hostname, "web-node-a");
    assert_eq!(cfg.log_directory, "/var/log/pods/default_web-node-a_u1");
    assert_eq!(cfg.metadata.as_ref().unwrap().attempt, 3);
    assert_eq!(cfg.port_mappings[0].host_port, 8080);
    assert_eq!(cfg.labels[labels::MANAGED_BY], "node-a");
    assert!(cfg.dns_config.is_some());
    p.spec.as_mut().unwrap().host_network = Some(true);
    let cfg = sandbox_config(&node(), &p, 0);
    assert_eq!(
        cfg.hostname, "",
        "host-network pods share the node's hostname"
    );
    let ns = cfg
        .linux
        .unwrap()
        .security_context
        .unwrap()
        .namespace_options
        .unwrap();
    assert_eq!(ns.network, NamespaceMode::Node as i32);
}

#[test]
fn every_container_is_told_the_pods_namespaces_with_a_pid_namespace_of_its_own() {
    let container_ns = |p: &Pod| {
        let c = p.spec.as_ref().unwrap().containers[0].clone();
        let cfg = config_of(p, &c, "busybox", 0, 0, &[]).unwrap();
        cfg.linux
            .unwrap()
            .security_context
            .unwrap()
            .namespace_options
            .unwrap()
    };
    let mut p = pod_with(app(), vec![]);
    let ns = container_ns(&p);
    assert_eq!(
        (ns.network, ns.pid, ns.ipc),
        (
            NamespaceMode::Pod as i32,
            NamespaceMode::Container as i32,
            NamespaceMode::Pod as i32
        )
    );
    let spec = p.spec.as_mut().unwrap();
    spec.share_process_namespace = Some(true);
    spec.host_ipc = Some(true);
    spec.host_network = Some(true);
    let ns = container_ns(&p);
    assert_eq!(
        (ns.network, ns.pid, ns.ipc),
        (
            NamespaceMode::Node as i32,
            NamespaceMode::Pod as i32,
            NamespaceMode::Node as i32
        )
    );
    p.spec.as_mut().unwrap().host_pid = Some(true);
    assert_eq!(container_ns(&p).pid, NamespaceMode::Node as i32);
}

fn exited(attempt: u32, base: u32, ran_secs: i64) -> ContainerStatus {
    ContainerStatus {
        id: "c".into(),
        sandbox_id: String::new(),
        name: "app".into(),
        attempt,
        state: ContainerState::Exited,
        created_at: 0,
        started_at: 1_000_000_000,
        finished_at: 1_000_000_000 + ran_secs * 1_000_000_000,
        exit_code: 1,
        image: String::new(),
        image_ref: String::new(),
        reason: String::new(),
        message: String::new(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::from([(BACKOFF_BASE.to_string(), base.to_string())]),
        log_path: String::new(),
        user: None,
        resources: None,
    }
}

#[test]
fn crash_loop_backoff_doubles_from_10s_to_5min_and_resets_after_a_long_run() {
    let waits: Vec<u64> = (0..8)
        .map(|a| crash_backoff(&exited(a, 0, 1)).as_secs())
        .collect();
    assert_eq!(waits, [0, 10, 20, 40, 80, 160, 300, 300]);
    assert_eq!(
        crash_backoff(&exited(5, 0, 600)),
        Duration::ZERO,
        "ran 10 minutes"
    );
    assert_eq!(next_attempt(None), (0, 0));
    assert_eq!(next_attempt(Some(&exited(5, 0, 1))), (6, 0));
    assert_eq!(
        next_attempt(Some(&exited(5, 0, 600))),
        (6, 6),
        "the long run resets the count"
    );
    // After the reset the next quick crash waits 0, then 10 s again.
    assert_eq!(crash_backoff(&exited(6, 6, 1)), Duration::ZERO);
    assert_eq!(crash_backoff(&exited(7, 6, 1)), Duration::from_secs(10));
}

#[test]
fn what_is_left_of_a_backoff_counts_from_the_exit() {
    let c = exited(2, 0, 1); // owes 20 s from its exit at 2 s
    let at = |secs: i64| backoff_left(&c, secs * 1_000_000_000);
    assert_eq!(at(2), Some(Duration::from_secs(20)));
    assert_eq!(at(17), Some(Duration::from_secs(5)));
    assert_eq!(at(22), None, "ran out");
    assert_eq!(at(30), None);
    assert_eq!(
        at(0),
        Some(Duration::from_secs(22)),
        "before the exit: all of it"
    );
    let first = exited(0, 0, 1);
    assert_eq!(
        backoff_left(&first, 2_000_000_000),
        None,
        "the first restart owes nothing"
    );
    let running = ContainerStatus {
        state: ContainerState::Running,
        ..exited(3, 0, 1)
    };
    assert_eq!(backoff_left(&running, 0), None);
}

#[test]
fn resolv_conf_is_read() {
    let dir = std::env::temp_dir().join(format!("podvisor-dns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("resolv.conf");
    std::fs::write(&f, "# comment\nnameserver 1.1.1.1\nnameserver 8.8.8.8\nsearch a.local b.local\noptions ndots:2\n").unwrap();
    let dns = read_dns(&f).unwrap();
    assert_eq!(dns.servers, ["1.1.1.1", "8.8.8.8"]);
    assert_eq!(dns.searches, ["a.local", "b.local"]);
    assert_eq!(dns.options, ["ndots:2"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_long_pod_name_becomes_a_hostname_the_kernel_accepts() {
    let mut p = pod_with(app(), vec![]);
    // 62 characters then a '-': cut at 63, then the trailing '-' goes.
    let long = format!("{}-{}", "a".repeat(62), "b".repeat(100));
    p.metadata.name = Some(long);
    let cfg = sandbox_config(&node(), &p, 0);
    assert_eq!(cfg.hostname, "a".repeat(62));
    p.metadata.name = Some("short".into());
    assert_eq!(sandbox_config(&node(), &p, 0).hostname, "short");
    // Validation refuses such a hostname; were one to slip through, the cut must not
    // land inside a character (that panicked the pod worker on every sync).
    p.spec.as_mut().unwrap().hostname = Some("é".repeat(32));
    assert_eq!(sandbox_config(&node(), &p, 0).hostname, "é".repeat(31));
}

#[test]
fn huge_cpu_values_stay_in_the_kernel_s_ranges() {
    let mut c = app();
    c.resources = Some(ResourceRequirements {
        requests: Some(BTreeMap::from([("cpu".into(), Quantity("1000000".into()))])),
        limits: Some(BTreeMap::from([("cpu".into(), Quantity("1000000".into()))])),
        ..Default::default()
    });
    let r = resources(&c, 1000).unwrap();
    assert_eq!(r.cpu_shares, 262_144);
    assert_eq!(r.cpu_quota, 100_000_000_000);
}

#[test]
fn security_contexts_become_the_runtimes_with_proc_masked_unless_privileged() {
    use podvisor_cri::proto::security_profile::ProfileType;
    let sec = |json: serde_json::Value, pod_sc: serde_json::Value, host_apparmor: bool| {
        let mut c = app();
        c.security_context = Some(serde_json::from_value(json).unwrap());
        let mut p = pod_with(c.clone(), vec![]);
        p.spec.as_mut().unwrap().security_context = Some(serde_json::from_value(pod_sc).unwrap());
        super::security::container_security(&p, &c, host_apparmor)
    };
    let none = serde_json::json!({});
    let s = sec(
        serde_json::json!({"capabilities": {"add": ["NET_ADMIN", "CAP_SYS_TIME"], "drop": ["ALL"]}}),
        serde_json::json!({"seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 2000, "supplementalGroups": [3000]}),
        false,
    )
    .unwrap();
    let caps = s.capabilities.unwrap();
    assert_eq!(caps.add_capabilities, ["NET_ADMIN", "SYS_TIME"]);
    assert_eq!(caps.drop_capabilities, ["ALL"]);
    assert_eq!(
        s.seccomp.unwrap().profile_type,
        ProfileType::RuntimeDefault as i32
    );
    assert_eq!(s.supplemental_groups, [3000, 2000]);
    assert!(s.masked_paths.contains(&"/proc/kcore".to_string()));
    assert!(s.readonly_paths.contains(&"/proc/sys".to_string()));
    assert_eq!(s.apparmor, None, "no AppArmor on the node, none asked for");
    // Privileged: nothing masked, unconfined.
    let p = sec(
        serde_json::json!({"privileged": true}),
        serde_json::json!({"seccompProfile": {"type": "RuntimeDefault"}}),
        true,
    )
    .unwrap();
    assert!(p.masked_paths.is_empty() && p.readonly_paths.is_empty());
    assert_eq!(
        p.seccomp.unwrap().profile_type,
        ProfileType::Unconfined as i32
    );
    assert_eq!(p.apparmor, None);
    // Nothing said: unconfined seccomp; the runtime's AppArmor profile where the node has it.
    let d = sec(none.clone(), none.clone(), true).unwrap();
    assert_eq!(
        d.seccomp.unwrap().profile_type,
        ProfileType::Unconfined as i32
    );
    assert_eq!(
        d.apparmor.unwrap().profile_type,
        ProfileType::RuntimeDefault as i32
    );
    // A profile the node cannot enforce is refused with the reason.
    let e = sec(
        serde_json::json!({"appArmorProfile": {"type": "RuntimeDefault"}}),
        none.clone(),
        false,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("AppArmor is not enabled on this node"),
        "{e}"
    );
    let u = sec(
        serde_json::json!({"appArmorProfile": {"type": "Unconfined"}}),
        none,
        false,
    )
    .unwrap();
    assert_eq!(
        u.apparmor.unwrap().profile_type,
        ProfileType::Unconfined as i32
    );
}

#[test]
fn run_as_non_root_without_a_user_is_checked_against_the_image() {
    use podvisor_cri::ImageUser;
    assert!(check_image_user(&ImageUser::Uid(1000)).is_ok());
    for root in [
        ImageUser::Uid(0),
        ImageUser::Name(String::new()),
        ImageUser::Name("root".into()),
    ] {
        assert!(
            check_image_user(&root)
                .unwrap_err()
                .to_string()
                .contains("will run as root")
        );
    }
    let named = check_image_user(&ImageUser::Name("app".into())).unwrap_err();
    assert!(
        named.to_string().contains("non-numeric user (app)"),
        "{named}"
    );
    let mut c = app();
    c.security_context =
        Some(serde_json::from_value(serde_json::json!({"runAsNonRoot": true})).unwrap());
    let mut p = pod_with(c.clone(), vec![]);
    assert!(must_check_image_user(&p, &c));
    p.spec.as_mut().unwrap().security_context =
        Some(serde_json::from_value(serde_json::json!({"runAsUser": 1000})).unwrap());
    assert!(
        !must_check_image_user(&p, &c),
        "a runAsUser says who it runs as"
    );
}

/// runAsNonRoot with runAsUser 0, the pod's or the container's: the node refuses the
/// container with the kubelet's message; another user, or no policy, passes.
#[test]
fn an_explicit_root_user_breaks_the_non_root_policy() {
    use k8s_openapi::api::core::v1::{PodSecurityContext, SecurityContext};
    let mut c = app();
    c.security_context = Some(SecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(0),
        ..Default::default()
    });
    let p = pod_with(c.clone(), vec![]);
    let e = super::check_explicit_user(&p, &c).unwrap_err().to_string();
    assert!(
        e.contains("container's runAsUser breaks non-root policy"),
        "{e}"
    );
    assert!(e.contains(&format!("container: {}", c.name)), "{e}");
    // The pod's policy with the container's user.
    let mut c = app();
    c.security_context = Some(SecurityContext {
        run_as_user: Some(0),
        ..Default::default()
    });
    let mut p = pod_with(c.clone(), vec![]);
    p.spec.as_mut().unwrap().security_context = Some(PodSecurityContext {
        run_as_non_root: Some(true),
        ..Default::default()
    });
    assert!(super::check_explicit_user(&p, &c).is_err());
    c.security_context.as_mut().unwrap().run_as_user = Some(1000);
    assert!(super::check_explicit_user(&p, &c).is_ok());
    p.spec.as_mut().unwrap().security_context = None;
    c.security_context.as_mut().unwrap().run_as_user = Some(0);
    assert!(
        super::check_explicit_user(&p, &c).is_ok(),
        "root without the policy"
    );
}
