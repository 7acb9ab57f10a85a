#!/usr/bin/env bash
# The image's runtime: a JRE jlink'ed from a JDK 17 with the modules the agent's jars need.
# Shared by scripts/build-image.sh and the Dockerfile, so both images carry the same runtime.
#
#   scripts/image/jre.sh APP_JAR LIB_DIR OUT_DIR
#
# jdeps on the application jar and its dependencies printed (JDK 17.0.15):
#   java.base,java.desktop,java.naming,java.net.http,java.sql,jdk.httpserver,jdk.management,jdk.unsupported
# (jdk.unsupported: sun.misc.Unsafe for JNA and Jackson; jdk.management: com.sun.management's process CPU and
# memory for the jvm_* and process_* metrics.)
# Added by hand, as jdeps cannot see them: jdk.crypto.ec (the SunEC provider: ECDHE and EC certificates on
# the TLS connection to the API server, loaded as a security provider, not linked).
#
# Left out: java.desktop, 5.8 MB of the compressed image (AWT, Swing, java.beans). Only three optional uses link
# it, each loaded only by a path the agent never takes: Jackson's Java7SupportImpl (java.beans annotations;
# jackson-databind's module declares java.desktop "requires static", and no class here carries those annotations),
# JNA's Native$AWT (window handles) and SnakeYAML's bean introspector (jackson-dataformat-yaml uses only its
# parser). Any other class that links java.desktop fails this script, so that a new need is seen at build time.
#
# --compress=0: the layer is gzip'ed anyway; an uncompressed jimage gzips to 25 MB where a zip-compressed
# one (--compress=2) stays at 32 MB (JDK 17.0.15), at the cost of 26 MB more on disk.
# strip --strip-unneeded afterwards: the JDK's libraries keep their full symbol tables (1.2 MB of libjvm.so,
# gzip'ed; jlink's --strip-native-debug-symbols drops only debug sections); a crash report of the JVM itself
# still names its frames through the exported (dynamic) symbols.
# No --generate-cds-archive: the entrypoint maps the agent's own archive (agent.jsa, which holds the JDK's
# classes too), so the JDK's default archive would be 13 MB never read.
set -euo pipefail
jar=$1 lib=$2 out=$3
allowed='^(com\.fasterxml\.jackson\.databind\.ext\.Java7SupportImpl|com\.sun\.jna\.Native|com\.sun\.jna\.Native\$AWT|org\.yaml\.snakeyaml\.introspector\.MethodProperty)$'
desktop_users=$(jdeps --multi-release 17 --ignore-missing-deps -verbose:class -cp "$lib/*" "$jar" "$lib"/*.jar \
  | awk '$2 == "->" && $4 == "java.desktop" { print $1 }' | sort -u)
unexpected=$(grep -Ev "$allowed" <<<"$desktop_users" || true)
if [ -n "$unexpected" ]; then
  echo "jre.sh: these classes link java.desktop, which the image's runtime leaves out (see this script):" >&2
  echo "$unexpected" >&2
  exit 1
fi
modules="$(jdeps --multi-release 17 --print-module-deps --ignore-missing-deps "$jar" "$lib"/*.jar | tr , '\n' \
  | grep -vx java.desktop | paste -sd,),jdk.crypto.ec"
echo "jlink modules: $modules"
rm -rf "$out"
jlink --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=0 --output "$out"
find "$out" -type f \( -name '*.so' -o -path "$out/bin/*" \) -exec strip --strip-unneeded {} +
