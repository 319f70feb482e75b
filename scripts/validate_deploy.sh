#!/usr/bin/env bash
# Validate the Helm chart offline (CI: `make validate-deploy`, run by `make test`):
#   helm lint + helm template with the three value sets in helm/brain-search/ci/, the rendered
#   manifests checked against the Kubernetes JSON schemas, each role's pods checked to reach only
#   their own Secret (and only the gateway the TLS key), a render without secrets that must
#   fail (there are no default secrets), and the safe defaults: an open engine refused unless
#   `insecure: true`, network policies on, no Ingress path to /metrics or /docs.
# docker-compose.yml is checked by tests/unit/test_deploy_compose.py (Compose schema).
#
# Tools are installed once, outside the repository, under $BRAIN_TOOLS_DIR
# (default: ~/.cache/brain-search-tools):
#   helm                 go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (Go module proxy)
#   kubernetes-validate  from PyPI, into its own virtualenv; the package ships the Kubernetes
#                        schemas. kubeconform is not used: it downloads its schemas from GitHub
#                        at run time, which CI cannot reach.
#
# The chart's optional dependency (the official OpenSearch chart) lives in a chart repository CI
# cannot reach either, so unless `helm dependency build` has put it in charts/, the chart is
# rendered from a copy whose Chart.yaml omits it: our templates for the bundled-OpenSearch mode
# are still rendered and validated, the dependency's own manifests are not.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=${HELM_VERSION:-v3.22.0}
KUBERNETES_VALIDATE_VERSION=${KUBERNETES_VALIDATE_VERSION:-1.37.0}
# the Kubernetes version the manifests must be valid for (the chart's kubeVersion floor is 1.27)
KUBE_VERSION=${KUBE_VERSION:-1.33.0}
TOOLS=${BRAIN_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/brain-search-tools}
CHART=helm/brain-search
# kinds of CRDs whose schemas no offline package ships (KEDA, prometheus-operator, cert-manager):
# rendered, not schema-checked
NO_SCHEMA_KINDS="ScaledObject TriggerAuthentication ServiceMonitor Certificate"

log() { printf '· %s\n' "$*"; }
fail() { printf '✗ %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- tools (idempotent)
mkdir -p "$TOOLS/bin"
HELM="$TOOLS/bin/helm"
# a go-installed helm reports only "v3.22" (no release ldflags), hence a stamp of what was asked for
# (and, for the same reason, its default Kubernetes version is old: always pass --kube-version)
if ! [ -x "$HELM" ] || [ "$(cat "$TOOLS/bin/.helm-version" 2>/dev/null)" != "$HELM_VERSION" ]; then
  command -v go >/dev/null || fail "go is needed to install helm ($HELM_VERSION)"
  log "installing helm $HELM_VERSION into $TOOLS/bin (go install; first time: several minutes)"
  GOBIN="$TOOLS/bin" GOFLAGS=-buildvcs=false go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  echo "$HELM_VERSION" >"$TOOLS/bin/.helm-version"
fi
KV_VENV="$TOOLS/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
KV="$KV_VENV/bin/kubernetes-validate"
if ! [ -x "$KV" ]; then
  log "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $KV_VENV"
  rm -rf "$KV_VENV"
  python3 -m venv "$KV_VENV"
  "$KV_VENV/bin/pip" install -q "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi
PY="$KV_VENV/bin/python"   # has PyYAML (a dependency of kubernetes-validate)

# ---------------------------------------------------------------- the chart to render
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$CHART" "$work/chart"
if ls "$CHART"/charts/opensearch-*.tgz >/dev/null 2>&1; then
  log "rendering with the OpenSearch dependency from charts/"
else
  log "the OpenSearch chart dependency is not in charts/ (no route to its repository): rendering without it"
  "$PY" - "$work/chart/Chart.yaml" <<'EOF'
import sys, yaml
path = sys.argv[1]
chart = yaml.safe_load(open(path))
chart["dependencies"] = [d for d in chart.get("dependencies", []) if d["name"] != "opensearch"]
if not chart["dependencies"]:
    del chart["dependencies"]
yaml.safe_dump(chart, open(path, "w"), sort_keys=False)
EOF
fi

# ---------------------------------------------------------------- lint, render, validate
failed=0
for values in "$CHART"/ci/*-values.yaml; do
  name=$(basename "$values" -values.yaml)
  log "helm lint ($name)"
  "$HELM" lint --strict "$work/chart" -f "$values" --kube-version "$KUBE_VERSION" >"$work/lint-$name.txt" 2>&1 \
    || { cat "$work/lint-$name.txt"; failed=1; continue; }
  out="$work/$name.yaml"
  "$HELM" template brain "$work/chart" -f "$values" --namespace brain --kube-version "$KUBE_VERSION" >"$out" \
    || { failed=1; continue; }
  kinds=$("$PY" -c 'import sys, yaml; print(" ".join(sorted(d["kind"] for d in yaml.safe_load_all(open(sys.argv[1])) if d)))' "$out")
  log "  rendered: $kinds"
  "$KV" --strict --quiet -k "$KUBE_VERSION" "$out" >"$work/kv-$name.txt" 2>&1 || failed=1
  # a kind without a schema is only a warning to kubernetes-validate: allow the known CRDs only
  grep -v -E "^WARN .*Couldn't find schema for kind ($(echo "$NO_SCHEMA_KINDS" | tr ' ' '|')) " "$work/kv-$name.txt" \
    | grep -E '^(ERROR|WARN|FATAL)' && failed=1
  log "  $(wc -w <<<"$kinds") manifests checked against the Kubernetes $KUBE_VERSION schemas (strict)"
  "$PY" - "$out" <<'EOF' || failed=1
# Each role's pods see only their own Secret: the workers neither the admin key nor the API's,
# the gateway's or the index set-up's Secret, the API neither of the last two; only the gateway
# mounts the TLS Secret whole (tls.key), the others its ca.crt alone.
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
pods = {d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]: d["spec"]["template"]["spec"]
        for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job")}
def refs(pod):
    out = set()
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        out |= {e["secretRef"]["name"] for e in c.get("envFrom", []) if "secretRef" in e}
        out |= {e["valueFrom"]["secretKeyRef"]["name"] for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
    return out
def secret_volumes(pod):
    return [v["secret"] for v in pod.get("volumes", []) if "secret" in v]
missing = {"api", "worker", "gateway", "index-setup"} - pods.keys()
if missing:
    sys.exit(f"✗ not rendered: {sorted(missing)}")
problems = []
others = {r: refs(pods[r]) for r in ("api", "gateway", "index-setup")}
for role, banned in (("worker", others["api"] | others["gateway"] | others["index-setup"]),
                     ("api", others["gateway"] | others["index-setup"])):
    if refs(pods[role]) & banned:
        problems.append(f"{role} pods reference {sorted(refs(pods[role]) & banned)}")
    for name in refs(pods[role]) & secrets.keys():  # the chart's own Secret of the role
        data = secrets[name].get("stringData", {})
        bad = {k for k in data if k.startswith("BRAIN_GATEWAY_") or (role == "worker" and k == "BRAIN_ADMIN_KEY")}
        if bad or data.get("BRAIN_OPENSEARCH_USER") != role:
            problems.append(f"{role} Secret {name}: user {data.get('BRAIN_OPENSEARCH_USER')}, holds {sorted(bad)}")
if "BRAIN_ADMIN_KEY" in str(pods["worker"]):
    problems.append("worker pods name BRAIN_ADMIN_KEY")
tls = {v["secretName"] for v in secret_volumes(pods["gateway"]) if "items" not in v}
for role, pod in pods.items():
    for v in secret_volumes(pod):
        keys = {i["key"] for i in v.get("items", [])}
        if role != "gateway" and v["secretName"] in tls and keys != {"ca.crt"}:
            problems.append(f"{role} pods mount {v['secretName']} beyond ca.crt")
if problems:
    sys.exit("✗ " + "; ".join(problems))
roles = ", ".join(f"{r}: {' '.join(sorted(refs(p)))}" for r, p in sorted(pods.items()))
print(f"·   own Secrets only ({roles}); the TLS key only in the gateway")
EOF
done

# no default secrets: without them the render must fail, and say why
log "render without secrets must fail"
if err=$("$HELM" template brain "$work/chart" --set externalOpenSearch.url=https://os:9200 2>&1); then
  echo "$err" | head -20
  fail "the chart rendered without any secret"
fi
grep -q "adminKey" <<<"$err" || { echo "$err"; fail "the failure does not name the missing secret"; }
log "  refused: $(grep -o 'secrets[^:]*adminKey[^,]*' <<<"$err" | head -1)"

# safe defaults: an open engine is refused unless `insecure: true`, network policies are on, and
# the Ingress routes neither /metrics nor /docs (issue 54, item 13)
minimal="$CHART/ci/minimal-values.yaml"
refused() {  # refused WHAT MESSAGE ARGS...: the render must fail and say MESSAGE
  local what=$1 message=$2
  shift 2
  if err=$("$HELM" template brain "$work/chart" -f "$minimal" --kube-version "$KUBE_VERSION" "$@" 2>&1); then
    echo "$err" | head -5
    fail "rendered: $what"
  fi
  grep -q "$message" <<<"$err" || { echo "$err" | tail -5; fail "$what: the failure does not say '$message'"; }
  log "  refused: $what"
}
log "an open engine is refused unless insecure: true"
refused "the bundled OpenSearch without insecure: true" "an open engine" --set insecure=false
refused "an http:// external OpenSearch" "an open engine" --set insecure=false \
  --set opensearch.enabled=false --set externalOpenSearch.url=http://os-0:9200
refused "an external OpenSearch without the gateway's engine user" "an open engine" --set insecure=false \
  --set opensearch.enabled=false --set externalOpenSearch.url=https://os-0:9200
"$HELM" template brain "$work/chart" -f "$minimal" --kube-version "$KUBE_VERSION" --set insecure=false \
  --set opensearch.enabled=false --set externalOpenSearch.url=https://os-0:9200 \
  --set-string secrets.opensearchUsername=brain-gateway --set-string secrets.opensearchPassword=ci-placeholder-0001 \
  >/dev/null || fail "an https:// OpenSearch with the gateway's engine user did not render"
log "a move's Job: rendered on demand, with the index set-up's (admin) Secret, reaching the gateway"
"$HELM" template brain "$work/chart" -f "$minimal" --kube-version "$KUBE_VERSION" --set move.enabled=true \
  --set 'move.args={tenant-index,acme}' >"$work/move.yaml" || fail "a move's Job did not render"
"$KV" --strict --quiet -k "$KUBE_VERSION" "$work/move.yaml" >/dev/null 2>&1 || fail "a move's Job: schema"
"$PY" - "$work/move.yaml" <<'EOF3' || failed=1
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
jobs = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in docs if d["kind"] == "Job"}
move, setup = jobs.get("move"), jobs.get("index-setup")
if not move or not setup:
    sys.exit(f"✗ jobs rendered: {sorted(jobs)}")
c, s = move["spec"]["template"]["spec"]["containers"][0], setup["spec"]["template"]["spec"]["containers"][0]
if c["command"] + c["args"] != ["brain-search", "tenant-index", "acme"] or c["envFrom"] != s["envFrom"]:
    sys.exit(f"✗ the move's Job runs {c['command'] + c['args']} with {c['envFrom']}")
allowed = [e for d in docs if d["kind"] == "NetworkPolicy" for r in d["spec"].get("ingress", [])
           for f in r.get("from", []) for e in f.get("podSelector", {}).get("matchExpressions", [])
           if e["key"] == "app.kubernetes.io/component" and "move" in e["values"]]
if not allowed:
    sys.exit("✗ no NetworkPolicy lets the move's Job reach the gateway")
print("·   the move's Job: brain-search tenant-index acme, the index set-up's Secret, the gateway reachable")
EOF3
refused "a move without its arguments" "move.enabled needs move.args" --set move.enabled=true
log "network policies by default; the Ingress routes neither /metrics nor /docs"
refused "an Ingress path / (Prefix)" "must not be public" --set api.ingress.enabled=true \
  --set "api.ingress.paths[0].path=/"
refused "an Ingress path /metrics (Exact)" "must not be public" --set api.ingress.enabled=true \
  --set "api.ingress.paths[0].path=/metrics" --set "api.ingress.paths[0].pathType=Exact"
"$HELM" template brain "$work/chart" -f "$minimal" --kube-version "$KUBE_VERSION" --set api.ingress.enabled=true \
  >"$work/defaults.yaml" || fail "the minimal values with the Ingress on did not render"
"$PY" - "$work/defaults.yaml" <<'EOF2' || failed=1
# Kubernetes' own matching: Exact is the whole path, Prefix whole path elements
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
if not [d for d in docs if d["kind"] == "NetworkPolicy"]:
    sys.exit("✗ the default values render no NetworkPolicy")
paths = [p for d in docs if d["kind"] == "Ingress" for r in d["spec"]["rules"] for p in r["http"]["paths"]]
def routes(p, url):
    if p["pathType"] == "Exact":
        return url == p["path"]
    base = p["path"].rstrip("/")
    return url == base or url.startswith(base + "/")
problems = [f"{p['path']} ({p['pathType']}) routes {u}" for p in paths
            for u in ("/metrics", "/docs", "/redoc", "/openapi.json") if routes(p, u)]
missing = [u for u in ("/v1/recall", "/mcp/", "/") if not any(routes(p, u) for p in paths)]
if problems or missing or not paths:
    sys.exit(f"✗ Ingress: {problems}, not routed: {missing}")
print(f"·   {len([d for d in docs if d['kind'] == 'NetworkPolicy'])} NetworkPolicies by default; the Ingress routes "
      + ", ".join(f"{p['path']} ({p['pathType']})" for p in paths))
EOF2

[ "$failed" = 0 ] || fail "deployment validation failed"
log "helm chart: lint, 3 value sets rendered and valid, safe defaults enforced"
