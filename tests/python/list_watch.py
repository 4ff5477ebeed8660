"""A second client library against podvisor's API: the Python `kubernetes` package lists
pods, patches one, creates a configmap, and watches both from the list's resourceVersion.
Prints one line per fact for the Rust test to check; exits non-zero on any error."""

import sys

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
pod_name = sys.argv[2]
core = client.CoreV1Api()

pods = core.list_namespaced_pod("default")
print("listed", " ".join(p.metadata.name for p in pods.items))
rv = pods.metadata.resource_version

core.patch_namespaced_pod(pod_name, "default", {"metadata": {"labels": {"seen-by": "python"}}})
core.create_namespaced_config_map(
    "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="from-python"), data={"k": "v"})
)

w = watch.Watch()
for ev in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5):
    labels = ev["object"].metadata.labels or {}
    print("pod", ev["type"], ev["object"].metadata.name, labels.get("seen-by", "-"))
    if labels.get("seen-by") == "python":
        w.stop()

cms = core.list_namespaced_config_map("default")
for ev in watch.Watch().stream(
    core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2
):
    print("configmap", ev["type"], ev["object"].metadata.name)
print("configmaps", " ".join(c.metadata.name for c in cms.items))
