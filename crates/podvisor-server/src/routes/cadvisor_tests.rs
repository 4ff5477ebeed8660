use std::collections::HashMap;

use podvisor_core::stats::Summary;

use super::*;
use crate::sources::Machine;

fn input(systemd: bool) -> Cadvisor {
    let summary: Summary = serde_json::from_value(serde_json::json!({
        "node": {"nodeName": "n1",
                 "cpu": {"time": "2026-11-26T10:00:00Z", "usageCoreNanoSeconds": 4_000_000_000u64},
                 "memory": {"time": "2026-11-26T10:00:00Z", "workingSetBytes": 2048}},
        "pods": [{"podRef": {"name": "web", "namespace": "default", "uid": "u-1"},
                  "cpu": {"time": "2026-11-26T10:00:00Z", "usageCoreNanoSeconds": 1_500_000_000u64},
                  "memory": {"time": "2026-11-26T10:00:00Z", "workingSetBytes": 77, "usageBytes": 99},
                  "network": {"time": "2026-11-26T10:00:00Z", "name": "eth0", "rxBytes": 10, "txBytes": 20,
                              "interfaces": [{"name": "eth0", "rxBytes": 10, "txBytes": 20}]},
                  "process_stats": {"process_count": 3},
                  "containers": [{"name": "app", "startTime": "2026-11-26T09:00:00Z",
                                  "cpu": {"time": "2026-11-26T10:00:00Z", "usageCoreNanoSeconds": 1_500_000_000u64},
                                  "memory": {"time": "2026-11-26T10:00:00Z", "workingSetBytes": 77}}]}]
    }))
    .unwrap();
    let mut summary = summary;
    summary.pods[0].containers[0].runtime_id = "c0ffee".into();
    let cgroup = if systemd {
        "kubepods-burstable-podu_1.slice"
    } else {
        "/kubepods/burstable/podu-1"
    };
    Cadvisor {
        summary,
        pods: HashMap::from([(
            "u-1".to_string(),
            Placement {
                cgroup: cgroup.into(),
                images: HashMap::from([(
                    "app".to_string(),
                    "docker.io/library/nginx:1".to_string(),
                )]),
            },
        )]),
        systemd,
        machine: Machine {
            cpu_cores: 2,
            memory_bytes: 1 << 30,
            boot_id: "b".into(),
            machine_id: "m".into(),
            system_uuid: String::new(),
        },
    }
}

#[test]
fn containers_pods_and_the_machine_have_cadvisors_names_and_labels() {
    let text = render(&input(false));
    let has = |line: &str| assert!(text.contains(line), "no {line:?} in:\n{text}");
    has("# TYPE container_cpu_usage_seconds_total counter\n");
    has(
        r#"container_cpu_usage_seconds_total{container="",cpu="total",id="/",image="",name="",namespace="",pod=""} 4 1795687200000"#,
    );
    has(
        r#"container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/burstable/podu-1/c0ffee",image="docker.io/library/nginx:1",name="c0ffee",namespace="default",pod="web"} 1.5 "#,
    );
    has(
        r#"container_memory_working_set_bytes{container="",id="/kubepods/burstable/podu-1",image="",name="",namespace="default",pod="web"} 77 "#,
    );
    has(
        r#"container_memory_usage_bytes{container="",id="/kubepods/burstable/podu-1",image="",name="",namespace="default",pod="web"} 99 "#,
    );
    has(
        r#"container_network_receive_bytes_total{container="",id="/kubepods/burstable/podu-1",image="",interface="eth0",name="",namespace="default",pod="web"} 10 "#,
    );
    has(
        r#"container_network_transmit_bytes_total{container="",id="/kubepods/burstable/podu-1",image="",interface="eth0",name="",namespace="default",pod="web"} 20 "#,
    );
    has(
        r#"container_processes{container="",id="/kubepods/burstable/podu-1",image="",name="",namespace="default",pod="web"} 3"#,
    );
    has(r#"container_start_time_seconds{container="app","#);
    has("machine_cpu_cores{boot_id=\"b\",machine_id=\"m\",system_uuid=\"\"} 2\n");
    has("machine_memory_bytes{boot_id=\"b\",machine_id=\"m\",system_uuid=\"\"} 1073741824\n");
    assert!(
        !text.contains("container_memory_rss"),
        "no RSS was measured"
    );
}

#[test]
fn under_systemd_pods_are_slices_and_containers_scopes() {
    assert_eq!(
        cgroup_path("kubepods-burstable-podu_1.slice", true),
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice"
    );
    assert_eq!(
        cgroup_path("kubepods-podu_1.slice", true),
        "/kubepods.slice/kubepods-podu_1.slice"
    );
    let text = render(&input(true));
    assert!(
        text.contains(r#"id="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice/cri-containerd-c0ffee.scope""#),
        "{text}"
    );
}
