#!/usr/bin/env bash
# Builds the one image of the platform (gateway, operator, portal, portal worker, simulator) from
# deploy/Dockerfile, reproducibly:
# - the Node base image is pinned by digest: resolved once and kept in deploy/base-image.lock
#   (commit it; BASE_IMAGE=... ./deploy/build-image.sh --resolve-base refreshes it);
# - dependencies from package-lock.json only (`npm ci`, production ones in the runtime stage);
# - file times and the image's creation time from the commit (SOURCE_DATE_EPOCH), so the same
#   commit and base give the same layers.
# Usage: deploy/build-image.sh [--push] [--resolve-base] [IMAGE]   (IMAGE default svc-gateway:<git describe>)
# Environment: BASE_IMAGE (node:22-slim), PLATFORMS (linux/amd64,linux/arm64 when pushing).
set -euo pipefail

cd "$(dirname "$0")/.."
push=false
resolve=false
image=""
for arg in "$@"; do
  case "$arg" in
    --push) push=true ;;
    --resolve-base) resolve=true ;;
    -*) echo "unknown option $arg" >&2; exit 2 ;;
    *) image="$arg" ;;
  esac
done
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
image="${image:-svc-gateway:${version}}"
lock=deploy/base-image.lock

if $resolve || [ ! -s "$lock" ]; then
  base="${BASE_IMAGE:-node:22-slim}"
  digest="$(docker buildx imagetools inspect "$base" --format '{{json .Manifest.Digest}}' | tr -d '"')"
  [ -n "$digest" ] || { echo "could not resolve the digest of $base" >&2; exit 1; }
  echo "${base%%@*}@${digest}" > "$lock"
  echo "pinned the base image: $(cat "$lock") (commit $lock)"
fi
base_ref="$(cat "$lock")"
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || date +%s)"

args=(
  --file deploy/Dockerfile
  --build-arg "BASE_IMAGE=${base_ref}"
  --build-arg "SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}"
  --label "org.opencontainers.image.source=$(git config --get remote.origin.url 2>/dev/null || echo unknown)"
  --label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  --label "org.opencontainers.image.version=${version}"
  --label "org.opencontainers.image.base.name=${base_ref}"
  --tag "$image"
)
if $push; then
  docker buildx build "${args[@]}" --platform "${PLATFORMS:-linux/amd64,linux/arm64}" --output "type=registry,rewrite-timestamp=true" .
else
  docker buildx build "${args[@]}" --output "type=docker,rewrite-timestamp=true" .
fi
echo "built $image from $base_ref"
