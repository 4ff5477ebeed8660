"""The Python `kubernetes` client on the workload kinds: a Job run to completion (read
through a watch), a Deployment brought up, its image patched and rolled out, then scaled
through its scale subresource. Prints one line per fact for the Rust test to check; exits
non-zero on any error."""

import sys
import time

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
image, image2 = sys.argv[2], sys.argv[3]
batch, apps = client.BatchV1Api(), client.AppsV1Api()
ns = "default"
shell = ["/bin/sh", "-c"]


def container(command):
    return client.V1Container(name="main", image=image, command=shell + [command])


job = client.V1Job(
    metadata=client.V1ObjectMeta(name="py-job"),
    spec=client.V1JobSpec(
        completions=2,
        parallelism=2,
        template=client.V1PodTemplateSpec(
            spec=client.V1PodSpec(restart_policy="Never", containers=[container("exit 0")])
        ),
    ),
)
batch.create_namespaced_job(ns, job)
w = watch.Watch()
for event in w.stream(batch.list_namespaced_job, ns, field_selector="metadata.name=py-job", timeout_seconds=90):
    status = event["object"].status
    if any(c.type == "Complete" and c.status == "True" for c in status.conditions or []):
        print("job complete succeeded", status.succeeded)
        w.stop()


def wait_deployment(name, check, what):
    deadline = time.time() + 120
    while time.time() < deadline:
        d = apps.read_namespaced_deployment(name, ns)
        if d.status.observed_generation == d.metadata.generation and check(d.status):
            return d
        time.sleep(0.3)
    raise SystemExit(f"deployment {name}: {what} never happened: {d.status}")


serve = "trap 'exit 0' TERM; while true; do sleep 0.2; done"
deployment = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="py-web"),
    spec=client.V1DeploymentSpec(
        replicas=2,
        selector=client.V1LabelSelector(match_labels={"app": "py-web"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "py-web"}),
            spec=client.V1PodSpec(termination_grace_period_seconds=1, containers=[container(serve)]),
        ),
    ),
)
apps.create_namespaced_deployment(ns, deployment)
wait_deployment("py-web", lambda s: (s.available_replicas or 0) == 2, "2 available")
print("deployment available 2")
patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image2}]}}}}
apps.patch_namespaced_deployment("py-web", ns, patch)
wait_deployment(
    "py-web",
    lambda s: s.updated_replicas == 2 and s.replicas == 2 and (s.available_replicas or 0) == 2,
    "the rollout",
)
sets = apps.list_namespaced_replica_set(ns, label_selector="app=py-web").items
print("rolled out", sorted(rs.spec.replicas for rs in sets))
scale = apps.read_namespaced_deployment_scale("py-web", ns)
scale.spec.replicas = 3
apps.replace_namespaced_deployment_scale("py-web", ns, scale)
wait_deployment("py-web", lambda s: (s.ready_replicas or 0) == 3, "3 ready")
print("scaled", apps.read_namespaced_deployment_scale("py-web", ns).status.replicas)

# The deprecated orphanDependents still orphans (clients send it), and is refused beside a
# propagationPolicy, as kube-apiserver refuses it.
try:
    apps.delete_namespaced_deployment(
        "py-web", ns, body=client.V1DeleteOptions(orphan_dependents=True, propagation_policy="Background")
    )
    print("orphanDependents with a policy accepted")
except client.ApiException as e:
    print("orphanDependents with a policy refused", e.status)
apps.delete_namespaced_deployment("py-web", ns, body=client.V1DeleteOptions(orphan_dependents=True))
deadline = time.time() + 30
while time.time() < deadline:
    gone = not apps.list_namespaced_deployment(ns, field_selector="metadata.name=py-web").items
    sets = apps.list_namespaced_replica_set(ns, label_selector="app=py-web").items
    if gone and all(not rs.metadata.owner_references for rs in sets):
        break
    time.sleep(0.3)
print("orphaned", len(sets), "owned", sum(1 for rs in sets if rs.metadata.owner_references))
