#!/usr/bin/env bash
# Builds the agent's image without a container engine or a registry, into an OCI archive, with the
# Dockerfile's layout, entrypoint, user, PATH and labels; then checks the archive by running it (chroot).
#
#   sudo scripts/build-image.sh [OUTPUT]      default OUTPUT: target/egress-service-agent-image.oci.tar
#   scripts/build-image.sh --print-config     prints the image config it writes (no root, builds nothing)
#
# Layers, in the order a new version changes them least to most (docs/image.md):
#   1. base          the C libraries the JRE and libnftables load, from Debian's packages (scripts/image/base-rootfs.sh)
#   2. runtime       the jlink'ed JRE (scripts/image/jre.sh)
#   3. dependencies  the Java dependencies, one jar each (target/image/lib, from mvn package)
#   4. application   the agent's jar, its AppCDS archive, the egress-service-agent launcher on PATH, the SBOM,
#                    the bash completion and man page generated from the command line's model, and the kubectl
#                    plugin (scripts/image/cli-files.sh)
# Each layer is reproducible (scripts/image/oci-archive.py; the base, runtime and dependency layers do not depend on
# the commit), so an upgrade that changes only the agent pulls only the application layer.
#
# Needs root (chroot, mount namespaces, a scratch network namespace for the check), a Debian system with
# apt package lists, dpkg-deb and libnftables1 (the base is made from its packages), a JDK 17 (jlink, jdeps),
# gcc, python3 and Maven (or a built target/). Where something is missing it prints
# "build-image: SKIPPED: <why>" and exits 0 (REQUIRE_IMAGE_BUILD=1 makes that exit 1). Not part of the
# test command: CI builds the Dockerfile itself with buildx (.github/workflows/ci.yml).
#
# The image's config (entrypoint, PATH, user, OCI annotations) is the Dockerfile's last stage, read by
# scripts/image/dockerfile-config.py: one definition for both builds (io.egressservice.deploy.ImageEntrypointTest
# compares them, and the launcher's copy of the entrypoint).
#
# Environment: MVN_ARGS (e.g. -o; but offline Maven skips the SBOM, whose plugin needs it online),
# SOURCE_DATE_EPOCH (default: the commit's time; the image's created time and the application layer's mtimes).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-target/egress-service-agent-image.oci.tar}
WORK=$ROOT/target/image-build
APP=/opt/egress-service-agent

# image_config VERSION REVISION CREATED: the OCI config JSON, from the Dockerfile with these build arguments.
image_config() {
  python3 scripts/image/dockerfile-config.py Dockerfile --arg "VERSION=$1" --arg "GIT_COMMIT=$2" --arg "CREATED=$3"
}
if [ "${1:-}" = --print-config ]; then
  image_config "$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -n1)" \
    "$(git rev-parse HEAD 2>/dev/null || true)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  exit 0
fi

skip() {
  echo "build-image: SKIPPED: $*"
  [ "${REQUIRE_IMAGE_BUILD:-0}" = 1 ] && exit 1
  exit 0
}
fail() { echo "build-image: FAILED: $*" >&2; exit 1; }
step() { echo "build-image: [$(( $(date +%s) - ${started:-$(date +%s)} )) s] $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount namespaces and a scratch network namespace for the checks)"
for tool in jlink jdeps java gcc python3 dpkg-deb apt-get unshare chroot ip; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (apt-get install -y openjdk-17-jdk-headless gcc python3 iproute2)"
done
[ -e /usr/lib/"$(gcc -print-multiarch)"/libnftables.so.1 ] || skip "libnftables1 is not installed (apt-get install -y libnftables1)"
jdk=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[ "$jdk" = 17 ] || skip "the JDK is $jdk; the image's JRE is jlink'ed from a JDK 17 (set JAVA_HOME and PATH to one)"

started=$(date +%s)
rm -rf "$WORK"
mkdir -p "$WORK"

# --- 1. the jars (the Dockerfile's build stage) ---
JAR=target/egress-service-agent-image.jar
if [ ! -f "$JAR" ] || [ ! -d target/image/lib ] || [ ! -f target/egress-service-agent-sbom.json ] \
   || [ -n "$(find netlink/src/main agent/src/main api crds pom.xml */pom.xml -newer "$JAR" -print -quit)" ] \
   || [ pom.xml -nt target/egress-service-agent-sbom.json ]; then
  command -v mvn >/dev/null 2>&1 || skip "no $JAR and no mvn to build it"
  step "building the jars: mvn -B -q ${MVN_ARGS:-} -Psbom -DskipTests package"
  # shellcheck disable=SC2086
  mvn -B -q ${MVN_ARGS:-} -Psbom -DskipTests package
fi
version=$(sed -n 's/^version=//p' agent/target/classes/io/egressservice/buildinfo/build-info.properties)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

image_config "$version" "$revision" "$created" > "$WORK/config.json"
image_path=$(python3 -c 'import json,sys; print(next(e for e in json.load(sys.stdin)["Env"] if e.startswith("PATH=")))' \
  < "$WORK/config.json")
user=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["User"])' < "$WORK/config.json")

# --- 2. the layers' trees ---
L=$WORK/layers
mkdir -p "$L/runtime$APP" "$L/dependencies$APP/lib" "$L/application$APP" "$L/application/usr/local/bin" \
  "$L/application/usr/share/doc/egress-service-agent"
step "runtime: scripts/image/jre.sh"
scripts/image/jre.sh "$JAR" target/image/lib "$L/runtime$APP/jre"
gcc -Os -Wall -Wextra -Werror -o "$L/application/usr/local/bin/egress-service-agent" agent/src/main/image/launcher.c
strip "$L/application/usr/local/bin/egress-service-agent"
step "base: scripts/image/base-rootfs.sh"
scripts/image/base-rootfs.sh "$L/runtime$APP/jre" "$L/base" "$L/application/usr/local/bin/egress-service-agent"
cp target/image/lib/*.jar "$L/dependencies$APP/lib/"
cp "$JAR" "$L/application$APP/egress-service-agent.jar"
python3 scripts/image/image-sbom.py target/egress-service-agent-sbom.json target/image/lib \
  > "$L/application/usr/share/doc/egress-service-agent/sbom.cdx.json"
step "bash completion, man page, kubectl plugin: scripts/image/cli-files.sh"
SOURCE_DATE_EPOCH=$epoch scripts/image/cli-files.sh "$L/runtime$APP/jre/bin/java" "$JAR:target/image/lib/*" \
  "$L/application"

# Fixed mtimes, the ones the layers carry: base, runtime and dependencies get one constant (1980-01-01, zip's
# epoch), so that their layers keep their digests from one commit to the next and an upgrade of the agent pulls
# only the application layer; the application gets the commit's time. Set before the AppCDS dump: the archive
# records its jars' mtimes, and the JVM refuses it when they differ.
for layer in base runtime dependencies; do
  find "$L/$layer" -exec touch -h -d @315532800 {} +
done
find "$L/application" -exec touch -h -d "@$epoch" {} +

# --- 3. the AppCDS archive, dumped in the assembled image (the JVM checks the paths and jars it names) ---
# in_root ROOTFS USER ENV... -- COMMAND...: runs COMMAND chrooted in ROOTFS as USER with only ENV, in its
# own mount and pid namespaces (/proc and /dev mounted there; nothing stays mounted afterwards).
in_root() {
  local root=$1 user=$2; shift 2
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  mkdir -p "$root/proc" "$root/dev"
  unshare --mount --pid --fork --kill-child -- bash -c '
    set -e; root=$1; shift
    mount --make-rprivate /
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    [ -z "${EXAMPLES:-}" ] || { mkdir -p "$root/examples"; mount --bind -o ro "$EXAMPLES" "$root/examples"; }
    exec "$@"' _ "$root" env -i "${env[@]}" "$(command -v chroot)" --userspec="$user" "$root" "$@"
}
assembled=$WORK/assembled
mkdir -p "$assembled"
for layer in base runtime dependencies application; do cp -a "$L/$layer/." "$assembled/"; done
cp agent/src/main/appcds/agent.classlist "$assembled/tmp/agent.classlist"
step "AppCDS archive: java -Xshare:dump in the assembled image"
in_root "$assembled" 0:0 -- "$APP/jre/bin/java" -Xshare:dump -Xlog:cds=error \
  -XX:SharedClassListFile=/tmp/agent.classlist -XX:SharedArchiveFile="$APP/agent.jsa" -cp "$APP/egress-service-agent.jar"
cp "$assembled$APP/agent.jsa" "$L/application$APP/agent.jsa"
touch -d "@$epoch" "$L/application$APP/agent.jsa"
rm -rf "$assembled"

# --- 4. the archive ---
mkdir -p "$(dirname "$OUT")"
step "writing $OUT"
python3 scripts/image/oci-archive.py "$OUT" --created "$created" \
  --architecture "$(dpkg --print-architecture)" --config "$WORK/config.json" --ref-name "$version" \
  --layer "base: C libraries from Debian bookworm packages=$L/base" \
  --layer "runtime: jlink'ed JRE 17=$L/runtime" \
  --layer "dependencies: Java libraries=$L/dependencies" \
  --layer "application: egress-service-agent $version=$L/application" | tee "$WORK/layers.txt"

# --- 5. the checks: the archive as a registry would hand it out, unpacked layer by layer, run as its user ---
check=$WORK/check
mkdir -p "$check"
step "check: the archive's config and annotations, and its layers unpacked in order"
python3 - "$OUT" "$check" <<'PY'
import json, sys, tarfile
archive, root = sys.argv[1], sys.argv[2]
with tarfile.open(archive) as t:
    blob = lambda d: t.extractfile("blobs/sha256/" + d.split(":", 1)[1])
    index = json.load(t.extractfile("index.json"))
    manifest = json.load(blob(index["manifests"][0]["digest"]))
    config = json.load(blob(manifest["config"]["digest"]))["config"]
    print("  entrypoint:", json.dumps(config["Entrypoint"]))
    print("  user:", config["User"], " env:", " ".join(config["Env"]))
    for key, value in sorted(manifest["annotations"].items()):
        print(f"  {key}={value}")
    for layer in manifest["layers"]:
        with tarfile.open(fileobj=blob(layer["digest"]), mode="r:gz") as lt:
            lt.extractall(root, numeric_owner=True)
PY
run_as() { # run_as USER COMMAND...: in the unpacked image, with the image's PATH
  local user=$1; shift
  in_root "$check" "$user" "$image_path" HOME=/ -- "$@"
}
step "check: contents"
for absent in /bin/sh /usr/bin/sh /bin/bash /usr/bin/bash /bin/busybox /usr/bin/apt /usr/bin/apt-get /usr/bin/dpkg \
    /var/lib/dpkg/status /bin/login /usr/bin/login /usr/bin/passwd /usr/bin/su /etc/shadow; do
  [ ! -e "$check$absent" ] && [ ! -L "$check$absent" ] || fail "the image has $absent"
done
packages=$(find "$check/var/lib/dpkg/status.d" -type f | wc -l)
echo "  no shell, no package manager (no dpkg database), no login tools; $packages packages (status.d):" \
  "$(cd "$check/var/lib/dpkg/status.d" && ls | tr '\n' ' ')"
echo "  $(find "$check" -type f | wc -l) files, $(du -sh --apparent-size "$check" | cut -f1) unpacked"
step "check: every shared object resolves (ld.so --list, inside the image)"
for object in /usr/lib/x86_64-linux-gnu/libnftables.so.1 "$APP/jre/lib/server/libjvm.so" "$APP/jre/bin/java" \
    /usr/local/bin/egress-service-agent; do
  resolved=$(run_as "$user" /lib64/ld-linux-x86-64.so.2 --list "$object")
  ! grep -q 'not found' <<<"$resolved" || { echo "$resolved"; fail "$object: a shared object is missing"; }
done
echo "  libnftables.so.1, libjvm.so, java, egress-service-agent: all found"
step "check: egress-service-agent --version (found on PATH, as $user)"
out=$(run_as "$user" egress-service-agent --version)
echo "  $out"
case "$out" in egress-service-agent\ *) ;; *) fail "unexpected --version output" ;; esac
step "check: egress-service-agent status --help"
run_as "$user" egress-service-agent status --help | head -n 3 | sed 's/^/  /'
step "check: plan --objects examples --node node-a (-Xshare:on: fails unless the AppCDS archive maps)"
EXAMPLES=$ROOT/examples in_root "$check" "$user" "$image_path" JAVA_TOOL_OPTIONS=-Xshare:on -- \
  egress-service-agent plan --objects /examples --node node-a --service-cidr 172.30.0.0/16 > "$WORK/plan.txt"
head -n 8 "$WORK/plan.txt" | sed 's/^/  /'
echo "  ... $(wc -l < "$WORK/plan.txt") lines"
# libnftables and netlink through JNA, as root (the DaemonSet's user) in a scratch network namespace: an
# empty status. The namespace is this script's own and removed on every exit path.
netns=esa-image-check-$$
trap 'ip netns del "$netns" 2>/dev/null || true' EXIT
ip netns add "$netns"
step "check: egress-service-agent status in a scratch network namespace (libnftables and netlink via JNA, as root)"
ip netns exec "$netns" bash -c "$(declare -f in_root); in_root \"\$@\"" _ "$check" 0:0 "$image_path" -- \
  egress-service-agent status | head -n 5 | sed 's/^/  /'
ip netns del "$netns"
trap - EXIT
rm -rf "$check"
step "layers (compressed, unpacked):"
sed 's/^/  /' "$WORK/layers.txt"
# The SBOM next to the image, as the release attaches it to the image and the GitHub release.
sbom=${OUT%.tar}; sbom=${sbom%.oci}.sbom.cdx.json
cp "$L/application/usr/share/doc/egress-service-agent/sbom.cdx.json" "$sbom"
step "OK in $(( $(date +%s) - started )) s: $OUT, SBOM $sbom ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["components"]))' "$sbom") components)"
