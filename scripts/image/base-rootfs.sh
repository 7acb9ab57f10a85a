#!/usr/bin/env bash
# The image's base layer, distroless-style: the C libraries that the runtime (JRE_DIR), libnftables.so.1 and
# the given ELF files load, taken from the Debian packages that hold them on this (Debian) system and
# unpacked without dpkg; no shell, no package manager, no login tools. Shared by scripts/build-image.sh
# and the Dockerfile.
#
#   scripts/image/base-rootfs.sh JRE_DIR OUT_DIR [ELF...]
#
# Needs a Debian system with libnftables1 installed (its packages are what ldd resolves against), apt-get
# with package lists (apt-get download) and dpkg-deb. Prints the packages it took.
#
# What the base holds:
#   - the shared objects (*.so*) of those packages and their copyright files, nothing else of them (no
#     gconv modules: neither the JVM nor libnftables calls iconv);
#   - /var/lib/dpkg/status.d/<package>: each package's control fields, as distroless writes them, so that
#     image scanners see exactly these packages and their versions (there is no dpkg database);
#   - netbase's /etc/protocols and /etc/services (libnftables resolves protocol and service names there);
#   - /etc/os-release (from this system: the Debian release the packages are from), /etc/passwd and
#     /etc/group with root (0) and nonroot (65532), /etc/nsswitch.conf, /tmp (1777: JNA unpacks its
#     native library there);
#   - bookworm's merged /usr: /lib and /lib64 are links into /usr.
set -euo pipefail
jre=$1 out=$2
shift 2
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
nftables=/usr/lib/$arch/libnftables.so.1
[ -e "$nftables" ] || { echo "base-rootfs: $nftables is missing: apt-get install libnftables1" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- 1. the shared objects the ELF files load (ldd resolves the whole closure), and their packages ---
{ find "$jre" -type f \( -name '*.so' -o -path '*/bin/*' \); echo "$nftables"; printf '%s\n' "$@"; } \
  | xargs ldd 2>/dev/null \
  | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' > "$work/objects"
echo "$nftables" >> "$work/objects"
sort -u -o "$work/objects" "$work/objects"
if grep -q 'not found' <(find "$jre" -type f -name '*.so' -not -name 'libjvm.so' -print0 | xargs -0 ldd 2>/dev/null \
    | grep -v 'libjvm.so'); then
  echo "base-rootfs: a library of the runtime needs a shared object this system does not have" >&2
  exit 1
fi
owner() {
  # dpkg records merged-/usr files under the path its package ships them at (/lib/... or /usr/lib/...).
  local path=$1 alt
  case "$path" in /usr/*) alt=${path#/usr} ;; *) alt=/usr$path ;; esac
  { dpkg -S "$path" 2>/dev/null || dpkg -S "$alt" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null; } \
    | head -n1 | cut -d: -f1
}
: > "$work/packages"
jre_real=$(readlink -f "$jre")
while read -r object; do
  case "$(readlink -f "$object")" in "$jre_real"/*) continue ;; esac  # the runtime's own libraries
  package=$(owner "$object")
  [ -n "$package" ] || { echo "base-rootfs: no Debian package holds $object" >&2; exit 1; }
  echo "$package" >> "$work/packages"
done < "$work/objects"
echo netbase >> "$work/packages"
sort -u -o "$work/packages" "$work/packages"
echo "base-rootfs: packages: $(tr '\n' ' ' < "$work/packages")"

# --- 2. download (the installed version: the one ldd resolved against) and unpack without dpkg ---
mkdir -p "$work/debs" "$work/root"
while read -r package; do
  version=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || true)
  (cd "$work/debs" && { apt-get download -q "$package${version:+=$version}" >/dev/null 2>&1 \
    || apt-get download -q "$package" >/dev/null; })
done < "$work/packages"
rm -rf "$out"
mkdir -p "$out/usr/lib" "$out/var/lib/dpkg/status.d" "$out/etc" "$out/tmp"
for deb in "$work"/debs/*.deb; do
  package=$(dpkg-deb -f "$deb" Package)
  stage=$work/root/$package
  dpkg-deb -x "$deb" "$stage"
  { dpkg-deb -f "$deb"; echo "Status: install ok installed"; } > "$out/var/lib/dpkg/status.d/$package"
  # Keep the shared objects (files and their links), the copyright and netbase's tables; drop the rest.
  (cd "$stage" && find . \( -type f -o -type l \) \( -name '*.so' -o -name '*.so.*' \
      -o -path './usr/share/doc/*/copyright' -o -path './etc/protocols' -o -path './etc/services' \) \
      -not -path '*/gconv/*' -not -path './usr/share/gdb/*' -print0 | tar --null -T - -cf - | tar -C "$out" -xf -)
done
# bookworm's merged /usr: everything under /lib and /lib64 moves below /usr, with links in their place.
for dir in lib lib64; do
  if [ -d "$out/$dir" ] && [ ! -L "$out/$dir" ]; then
    mkdir -p "$out/usr/$dir"
    cp -a "$out/$dir/." "$out/usr/$dir/"
    rm -rf "${out:?}/$dir"
  fi
  ln -sfn "usr/$dir" "$out/$dir"
done

# --- 3. the few files a process expects ---
cp /usr/lib/os-release "$out/etc/os-release"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$out/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$out/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$out/etc/nsswitch.conf"
chmod 1777 "$out/tmp"
