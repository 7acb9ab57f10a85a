#!/usr/bin/env bash
# SHA256SUMS of every file in DIR (not of itself), in the format `sha256sum -c` reads: "<64 hex>  <file name>",
# sorted by name, names without a directory, so that `cd DIR && sha256sum -c SHA256SUMS` checks a download
# of the release's assets wherever it sits.
#
#   scripts/release/checksums.sh DIR
set -euo pipefail
dir=$1
cd "$dir"
sums=$(find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\0' | LC_ALL=C sort -z | xargs -0 -r sha256sum --)
printf '%s\n' "$sums" > SHA256SUMS
sha256sum --quiet -c SHA256SUMS
