#!/usr/bin/env bash
# Builds the agent's image without a container engine: the Dockerfile's layout (a jlink'ed JRE with the
# AppCDS archive, the node jar, libnftables1 on Debian bookworm, the same entrypoint, labels and user)
# with buildah, on a base that debootstrap makes from Debian's packages, into an OCI archive; then runs
# the image's --version and a plan of examples/ inside it (buildah run, chroot isolation).
#
#   sudo scripts/build-image.sh [OUTPUT]      default OUTPUT: target/egress-service-agent-image.oci.tar
#
# Needs root, buildah and debootstrap (apt-get install -y buildah debootstrap), a JDK 17 with jlink and
# jdeps, and Maven (or a built target/egress-service-agent-node.jar). Takes a few minutes (debootstrap);
# the base is kept in target/image-build/ and reused. Where something is missing it prints
# "build-image: SKIPPED: <why>" and exits 0 (REQUIRE_IMAGE_BUILD=1 makes that exit 1). Not part of the
# test command: CI builds the Dockerfile itself with buildx (.github/workflows/ci.yml).
#
# Environment: DEBIAN_SUITE (bookworm), DEBOOTSTRAP_MIRROR (default: the first Debian URI of this
# machine's apt sources, else debootstrap's own default), MVN_ARGS (-o: Maven offline).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-target/egress-service-agent-image.oci.tar}
SUITE=${DEBIAN_SUITE:-bookworm}
WORK=$ROOT/target/image-build
APP=/opt/egress-service-agent
JAR=$ROOT/target/egress-service-agent-node.jar

skip() {
  echo "build-image: SKIPPED: $*"
  [ "${REQUIRE_IMAGE_BUILD:-0}" = 1 ] && exit 1
  exit 0
}
step() { echo "build-image: $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap and buildah's chroot isolation)"
for tool in buildah debootstrap jlink jdeps java; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (apt-get install -y buildah debootstrap openjdk-17-jdk-headless)"
done
jdk=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[ "$jdk" = 17 ] || skip "the JDK is $jdk; the image's JRE is jlink'ed from a JDK 17 (set JAVA_HOME and PATH to one)"

mkdir -p "$WORK"
started=$(date +%s)

# --- 1. the jar (the Dockerfile's build stage) ---
if [ ! -f "$JAR" ] || [ -n "$(find src pom.xml -newer "$JAR" -print -quit)" ]; then
  command -v mvn >/dev/null 2>&1 || skip "no target/egress-service-agent-node.jar and no mvn to build it"
  step "building the jar: mvn -B -q ${MVN_ARGS:--o} -DskipTests package"
  # shellcheck disable=SC2086
  mvn -B -q ${MVN_ARGS:--o} -DskipTests -Dgit.commit="$(git rev-parse --short=12 HEAD 2>/dev/null || true)" package
fi

# --- 2. the JRE (the Dockerfile's jre stage) ---
jre=$WORK/jre
rm -rf "$jre"
modules="$(jdeps --multi-release 17 --print-module-deps --ignore-missing-deps "$JAR"),jdk.crypto.ec"
step "jlink modules: $modules"
jlink --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=2 \
  --generate-cds-archive --output "$jre"

# --- 3. the base (debian:bookworm-slim's part): minbase plus libnftables1, no apt lists or caches ---
base=$WORK/base-$SUITE.tar
if [ ! -f "$base" ]; then
  mirror=${DEBOOTSTRAP_MIRROR:-$(grep -rhoE '^(URIs:|deb) +[a-z]+://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
    | head -n1 | awk '{print $2}' || true)}
  rootfs=$WORK/rootfs
  rm -rf "$rootfs"
  step "debootstrap --variant=minbase --include=libnftables1 $SUITE ${mirror:-(the default mirror of debootstrap)}"
  # shellcheck disable=SC2086
  debootstrap --variant=minbase --include=libnftables1 "$SUITE" "$rootfs" $mirror > "$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log"; skip "debootstrap failed (log: $WORK/debootstrap.log)"; }
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/*.log
  tar -C "$rootfs" --numeric-owner -cf "$base" .
  rm -rf "$rootfs"
fi

# --- 4. the image: base + JRE + jar, the AppCDS archive dumped inside, the Dockerfile's config ---
# A private store, vfs (works without overlayfs), so nothing of the machine's own containers is touched.
bh() { buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs "$@"; }
ctr=$(bh from scratch)
check_ctr=
cleanup() {
  bh umount "$ctr" >/dev/null 2>&1 || true
  bh rm "$ctr" >/dev/null 2>&1 || true
  [ -z "$check_ctr" ] || bh rm "$check_ctr" >/dev/null 2>&1 || true
  # The store is this script's own: the image it pulled back for the check is not kept (the archive is).
  bh rmi --all --force >/dev/null 2>&1 || true
}
trap cleanup EXIT
mnt=$(bh mount "$ctr")
tar -C "$mnt" --numeric-owner -xf "$base"
mkdir -p "$mnt$APP"
cp -a "$jre/." "$mnt$APP/"
cp "$JAR" "$mnt$APP/egress-service-agent.jar"
cp src/main/appcds/agent.classlist "$mnt/tmp/agent.classlist"
step "AppCDS archive: java -Xshare:dump (buildah run, chroot isolation)"
bh run --isolation chroot "$ctr" -- "$APP/bin/java" -Xshare:dump -Xlog:cds=error \
  -XX:SharedClassListFile=/tmp/agent.classlist -XX:SharedArchiveFile="$APP/agent.jsa" -cp "$APP/egress-service-agent.jar"
rm -f "$mnt/tmp/agent.classlist"
bh umount "$ctr" >/dev/null
bh config \
  --entrypoint "[\"$APP/bin/java\", \"-XX:SharedArchiveFile=$APP/agent.jsa\", \"-jar\", \"$APP/egress-service-agent.jar\"]" \
  --cmd "" --user 65532:65532 --workingdir / \
  --label org.opencontainers.image.source=https://github.com/egress-service-agent/egress-service-agent \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label org.opencontainers.image.title=egress-service-agent \
  --label "org.opencontainers.image.description=Kubernetes node agent implementing the k8s.ovn.org/v1 EgressService API with Linux policy routing and nftables" \
  "$ctr"
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
bh commit --format oci --disable-compression=false --quiet "$ctr" "oci-archive:$OUT" >/dev/null
step "wrote $OUT ($(du -h "$OUT" | cut -f1))"

# --- 5. the check: the archive, as a registry would hand it out, runs its own entrypoint as its own user ---
check_ctr=$(bh from --quiet "oci-archive:$OUT")
mapfile -t entrypoint < <(bh inspect --format '{{range .OCIv1.Config.Entrypoint}}{{.}}{{"\n"}}{{end}}' "$check_ctr")
step "image config: user $(bh inspect --format '{{.OCIv1.Config.User}}' "$check_ctr"), entrypoint ${entrypoint[*]}"
step "check: egress-service-agent --version"
version=$(bh run --isolation chroot "$check_ctr" -- "${entrypoint[@]}" --version)
echo "$version"
case "$version" in egress-service-agent\ *) ;; *) echo "build-image: FAILED: unexpected --version output" >&2; exit 1 ;; esac
step "check: plan --objects examples --node node-a (-Xshare:on: fails unless the AppCDS archive maps)"
bh run --isolation chroot -v "$ROOT/examples:/examples:ro" --env JAVA_TOOL_OPTIONS=-Xshare:on "$check_ctr" -- \
  "${entrypoint[@]}" plan --objects /examples --node node-a --service-cidr 172.30.0.0/16 | head -n 12
step "OK in $(( $(date +%s) - started )) s: $OUT"
