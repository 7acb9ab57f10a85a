#!/usr/bin/env bash
# What a user's shell, man and kubectl read, installed into an image tree: the bash completion and the man page,
# generated from the command line's own model (the agent's `completion` and `man` commands, picocli), so they never
# list an option the agent does not have; and the kubectl plugin (scripts/kubectl-egress_service). Shared by
# scripts/build-image.sh and the Dockerfile, so both images carry the same files.
#
#   scripts/image/cli-files.sh JAVA CLASSPATH DEST
#
# JAVA: the image's own runtime (the commands run on the JRE that ships them); CLASSPATH: the agent's jar and its
# dependencies. Writes, in the usual places:
#   DEST/usr/share/bash-completion/completions/egress-service-agent  (bash-completion loads it by the command's name)
#   DEST/usr/share/man/man8/egress-service-agent.8                   (section 8, as the page's .TH says: administration)
#   DEST/usr/local/bin/kubectl-egress_service                        (mode 0755; the image has no shell to run it:
#                                                                     it is there to be copied out to a workstation)
# The man page is dated SOURCE_DATE_EPOCH when set, so one commit gives the same file on any day.
set -euo pipefail
java=$1 classpath=$2 dest=$3
here=$(cd "$(dirname "$0")/../.." && pwd)

# generate FILE COMMAND: the command's output, or the build fails (an empty file would hide a broken command)
generate() {
  local file=$1; shift
  mkdir -p "$(dirname "$file")"
  # C1 only: two short runs, which the JIT's second tier would only slow down
  "$java" -XX:TieredStopAtLevel=1 -cp "$classpath" io.egressservice.cli.Main "$@" > "$file.tmp"
  [ -s "$file.tmp" ] || { echo "cli-files: egress-service-agent $* printed nothing" >&2; exit 1; }
  mv "$file.tmp" "$file"
}
generate "$dest/usr/share/bash-completion/completions/egress-service-agent" completion
generate "$dest/usr/share/man/man8/egress-service-agent.8" man
install -D -m 0755 "$here/scripts/kubectl-egress_service" "$dest/usr/local/bin/kubectl-egress_service"
