#!/usr/bin/env bash
# Everything a release attaches, made in one step into one directory (docs/install.md, "Release artifacts"):
#
#   egress-service-agent-<version>-linux-<arch>.oci.tar          the image (scripts/build-image.sh, checked by running it)
#   egress-service-agent-<version>-linux-<arch>.oci.tar.digest   its manifest digest (what a registry names it by)
#   egress-service-agent-<version>-linux-<arch>.sbom.cdx.json    CycloneDX SBOM of the whole image: the jars, the
#                                                                 jlink'ed JRE, the base layer's Debian packages
#   egress-service-agent-<version>.tgz                           the Helm chart package
#   install-<preset>.yaml                                         deploy/ with each preset's components, rendered
#   <crd>.yaml                                                    the CRDs of crds/
#   SHA256SUMS                                                    of all of the above (sha256sum -c)
#
#   sudo scripts/release.sh [OUT_DIR]       default OUT_DIR: target/release/<version>
#
# Needs what scripts/build-image.sh needs (root, a Debian bookworm system with apt package lists, libnftables1,
# a JDK 17, gcc, python3, Maven), plus kubectl (its built-in kustomize renders the manifests). Unlike
# build-image.sh it never skips: a missing tool fails the release. Takes a few minutes (the image build and the
# test classes' compilation); the parts that are cheap are tested in the suite (ReleaseArtifactsTest), the full
# run is this command.
#
# Environment: MVN_ARGS (passed to Maven, e.g. -o), SOURCE_DATE_EPOCH (build-image.sh), RELEASE_IMAGE (an
# archive scripts/build-image.sh already made from this commit: used instead of building the image again).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
fail() { echo "release: FAILED: $*" >&2; exit 1; }
step() { echo "release: [$(( $(date +%s) - started )) s] $*"; }
started=$(date +%s)

for tool in kubectl python3 sha256sum mvn java; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed"
done
version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -n1)
[ -n "$version" ] || fail "no version in pom.xml"
OUT=${1:-target/release/$version}
WORK=$ROOT/target/release-work
rm -rf "$WORK" "$OUT"
mkdir -p "$WORK" "$OUT"
OUT=$(cd "$OUT" && pwd)

# --- the image ---
if [ -n "${RELEASE_IMAGE:-}" ]; then
  step "image: $RELEASE_IMAGE (RELEASE_IMAGE, not rebuilt)"
  cp "$RELEASE_IMAGE" "$WORK/image.oci.tar"
else
  # The jars name their commit (--version): built from another commit, they are built again, even where their
  # sources did not change (build-image.sh reuses jars newer than their sources).
  built=$(sed -n 's/^commit=//p' agent/target/classes/io/egressservice/buildinfo/build-info.properties 2>/dev/null || true)
  if [ "$built" != "$(git rev-parse --short=12 HEAD)" ]; then
    rm -f target/egress-service-agent-image.jar
  fi
  [ -z "$(git status --porcelain --untracked-files=no)" ] || echo "release: WARNING: the work tree has uncommitted changes"
  step "image: scripts/build-image.sh"
  REQUIRE_IMAGE_BUILD=1 scripts/build-image.sh "$WORK/image.oci.tar" | sed -u 's/^/  /' \
    || fail "scripts/build-image.sh failed"
fi
read -r arch digest < <(python3 - "$WORK/image.oci.tar" <<'PY'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    index = json.load(t.extractfile("index.json"))
    digest = index["manifests"][0]["digest"]
    manifest = json.load(t.extractfile("blobs/sha256/" + digest.split(":", 1)[1]))
    config = json.load(t.extractfile("blobs/sha256/" + manifest["config"]["digest"].split(":", 1)[1]))
    print(config["architecture"], digest)
PY
)
[ -n "${digest:-}" ] || fail "$WORK/image.oci.tar: no image manifest in its index.json"
image=egress-service-agent-$version-linux-$arch
cp "$WORK/image.oci.tar" "$OUT/$image.oci.tar"
echo "$digest" > "$OUT/$image.oci.tar.digest"

# --- the SBOM of the whole image, read from the archive ---
step "SBOM: scripts/release/image-sbom-merge.py"
jdk_package=
jlink_path=$(readlink -f "$(command -v jlink)")
if owner=$(dpkg-query -S "$jlink_path" 2>/dev/null); then
  name=${owner%%:*}
  jdk_package="$name=$(dpkg-query -W -f='${Version}' "$name")"
fi
repository=$(sed -n 's/^ *- name: *\(.*\)$/\1/p' deploy/kustomization.yaml | head -n1)
python3 scripts/release/image-sbom-merge.py "$OUT/$image.oci.tar" ${jdk_package:+--jdk-package "$jdk_package"} \
  ${repository:+--repository "$repository"} > "$OUT/$image.sbom.cdx.json"

# --- the chart package and the install manifests (Helm's and kustomize's own code), and the SBOM's schema check ---
step "chart, install manifests, SBOM schema: io.egressservice.deploy.ReleaseArtifacts (agent test classpath)"
# shellcheck disable=SC2086
mvn -B -q ${MVN_ARGS:-} -pl agent -am test-compile dependency:build-classpath@release-classpath
classpath="agent/target/test-classes:agent/target/classes:netlink/target/classes:api/target/classes"
classpath="$classpath:$(cat agent/target/release-classpath.txt)"
java -cp "$classpath" io.egressservice.deploy.ReleaseArtifacts "$OUT" "$OUT/$image.sbom.cdx.json" 2>&1 \
  | sed -u '/^SLF4J/d; /UnknownKeywordFactory/d; s/^/  /' || fail "ReleaseArtifacts failed"

step "CRDs: crds/"
cp crds/*.yaml "$OUT/"

step "SHA256SUMS"
scripts/release/checksums.sh "$OUT"

step "OK: $OUT"
(cd "$OUT" && for f in *; do
  printf '  %-60s %10s  sha256:%s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum < "$f" | cut -c1-64)"
done)
echo "  image $image: $digest"
