"""POSTs a file's bytes, as they are, to the agent's API: what a hostile client sends.

usage: raw_post.py KUBECONFIG PATH CONTENT_TYPE FILE
Prints the HTTP status code the API answered.
"""
import ssl
import sys
import urllib.error
import urllib.request

from kubernetes import client, config

kubeconfig, path, content_type, body_file = sys.argv[1:5]
cfg = client.Configuration()
config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
with open(body_file, "rb") as f:
    body = f.read()
# The client keeps the kubeconfig's token under a name that changed between its versions.
auth = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
req = urllib.request.Request(
    cfg.host + path,
    data=body,
    method="POST",
    headers={"Content-Type": content_type, "Authorization": auth},
)
try:
    with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
