"""The Python `kubernetes` client on the verbs kubectl does not use by default: paged lists
(limit/continue), a selecting watch that sees an object leave its selection, watch
bookmarks, a JSON patch, and deletecollection. Prints one line per fact for the Rust test
to check; exits non-zero on any error."""

import sys

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
ns = "default"

for i in range(7):
    core.create_namespaced_config_map(
        ns,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"page-{i}", labels={"set": "paged"}), data={"i": str(i)}
        ),
    )

names, pages, token, rvs = [], 0, None, set()
while True:
    page = core.list_namespaced_config_map(ns, label_selector="set=paged", limit=3, _continue=token)
    pages += 1
    names += [c.metadata.name for c in page.items]
    rvs.add(page.metadata.resource_version)
    token = page.metadata._continue
    if not token:
        break
print("paged", pages, "pages", len(names), "items", len(rvs), "revisions")
rv = rvs.pop()

# page-0 leaves the selection by a label change (JSON patch), page-1 is relabelled by a
# strategic merge patch that keeps it in; the selecting watch from the list sees the first
# as DELETED, not as MODIFIED.
core.patch_namespaced_config_map(
    "page-0", ns, [{"op": "replace", "path": "/metadata/labels/set", "value": "gone"}]
)
core.patch_namespaced_config_map("page-1", ns, {"metadata": {"labels": {"extra": "yes"}}})
seen = []
for ev in watch.Watch().stream(
    core.list_namespaced_config_map,
    ns,
    label_selector="set=paged",
    resource_version=rv,
    allow_watch_bookmarks=True,
    timeout_seconds=2,
):
    seen.append(f"{ev['type']}:{ev['object'].metadata.name}")
print("watch", " ".join(seen))
print("json-patched", core.read_namespaced_config_map("page-0", ns).metadata.labels["set"])

core.delete_collection_namespaced_config_map(ns, label_selector="set=paged")
left = core.list_namespaced_config_map(ns, label_selector="set in (paged,gone)")
print("after deletecollection", " ".join(c.metadata.name for c in left.items) or "-")
