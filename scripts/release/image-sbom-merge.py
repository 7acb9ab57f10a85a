#!/usr/bin/env python3
"""The CycloneDX SBOM of the whole image, read from the image archive itself (what a registry hands out):

  - the Java libraries: the SBOM the image carries at usr/share/doc/egress-service-agent/sbom.cdx.json
    (scripts/image/image-sbom.py: the project's cyclonedx-maven-plugin SBOM narrowed to the jars the image holds),
    with its dependency graph; every jar under opt/egress-service-agent/lib must have a component there;
  - the Java runtime: the jlink'ed JRE's `release` file (jlink writes JAVA_VERSION and MODULES there) as one
    component of type platform; --jdk-package names the Debian package of the JDK it was jlink'ed from (its purl,
    so that a scanner matches Debian's advisories for openjdk-17), whose version must be of that JAVA_VERSION;
  - the base layer's Debian packages: var/lib/dpkg/status.d/<package> (base-rootfs.sh writes each package's
    control fields there, as distroless does), as pkg:deb/<ID>/<name>@<version>?arch=<arch>&distro=<ID>-<VERSION_ID>
    from the image's etc/os-release, with their Depends among themselves; and the operating system itself.

  image-sbom-merge.py IMAGE.oci.tar [--jdk-package NAME=VERSION] [--repository REPO] > IMAGE.sbom.cdx.json

The image is the document's subject (metadata.component, type container, its purl pkg:oci/...@<manifest digest>),
and depends on the application, the runtime, the operating system and every package. Deterministic: the serial
number is derived from the manifest digest, the timestamp is the image's created time. Fails, naming what, when
the archive lacks a part (no Java SBOM, no runtime, no packages, a jar without a component).
"""
import argparse
import json
import re
import sys
import tarfile
import uuid
from urllib.parse import quote

APP_SBOM = "usr/share/doc/egress-service-agent/sbom.cdx.json"
JRE_RELEASE = re.compile(r"^opt/[^/]+/jre/release$")
LIB_JAR = re.compile(r"^opt/[^/]+/lib/([^/]+\.jar)$")
STATUS = re.compile(r"^var/lib/dpkg/status\.d/([^/]+)$")
OS_RELEASE = ("etc/os-release", "usr/lib/os-release")


def fail(message):
    sys.exit(f"image-sbom-merge: {message}")


def read_image(path):
    """The image's manifest digest, config, and the files this SBOM reads, with later layers winning."""
    files, jars = {}, set()
    with tarfile.open(path) as archive:
        def blob(digest):
            return archive.extractfile("blobs/sha256/" + digest.split(":", 1)[1])
        index = json.load(archive.extractfile("index.json"))
        digest = index["manifests"][0]["digest"]
        manifest = json.load(blob(digest))
        config = json.load(blob(manifest["config"]["digest"]))
        for layer in manifest["layers"]:
            with tarfile.open(fileobj=blob(layer["digest"]), mode="r:gz") as tar:
                for member in tar:
                    name = member.name[2:] if member.name.startswith("./") else member.name
                    jar = LIB_JAR.match(name)
                    if jar:
                        jars.add(jar.group(1))
                    elif member.isfile() and (name == APP_SBOM or name in OS_RELEASE or JRE_RELEASE.match(name)
                                              or STATUS.match(name)):
                        files[name] = tar.extractfile(member).read().decode("utf-8")
    return digest, config, files, jars


def shell_assignments(text):
    """KEY=value and KEY="value" lines (os-release, the JDK's release file)."""
    values = {}
    for line in text.splitlines():
        m = re.match(r'^([A-Z_][A-Z0-9_]*)=(.*)$', line.strip())
        if m:
            values[m.group(1)] = m.group(2).strip().strip('"')
    return values


def control_fields(text):
    """A Debian control paragraph: Field: value, continuation lines folded into the field."""
    fields, last = {}, None
    for line in text.splitlines():
        if line[:1] in (" ", "\t") and last:
            fields[last] += "\n" + line.strip()
        elif ":" in line:
            last, value = line.split(":", 1)
            fields[last] = value.strip()
    return fields


def purl_version(version):
    # purl: the version is percent-encoded ('+' -> %2B; ':' of an epoch and '~' stay as they are)
    return quote(version, safe=":~")


def deb_purl(distro_id, name, version, arch, distro):
    return f"pkg:deb/{distro_id}/{name}@{purl_version(version)}?arch={arch}&distro={distro}"


def depends_names(field):
    """The package names of a Depends/Pre-Depends field (every alternative: the graph keeps those present)."""
    names = []
    for clause in filter(None, (c.strip() for c in field.split(","))):
        for alternative in clause.split("|"):
            names.append(re.split(r"[\s(:]", alternative.strip(), maxsplit=1)[0])
    return names


def merge(archive, jdk_package=None, repository=None):
    digest, config, files, jars = read_image(archive)
    if APP_SBOM not in files:
        fail(f"{archive} has no /{APP_SBOM} (the Java libraries' SBOM)")
    sbom = json.loads(files[APP_SBOM])
    jre = next((shell_assignments(files[n]) for n in sorted(files) if JRE_RELEASE.match(n)), None)
    if not jre or not jre.get("JAVA_VERSION"):
        fail(f"{archive} has no Java runtime (opt/.../jre/release with JAVA_VERSION)")
    os_release = next((shell_assignments(files[n]) for n in OS_RELEASE if n in files), None)
    if not os_release or "ID" not in os_release or "VERSION_ID" not in os_release:
        fail(f"{archive} has no /etc/os-release with ID and VERSION_ID")
    statuses = {STATUS.match(n).group(1): control_fields(t) for n, t in files.items() if STATUS.match(n)}
    if not statuses:
        fail(f"{archive} has no /var/lib/dpkg/status.d (the base layer's Debian packages)")

    described = {f"{c['name']}-{c['version']}" for c in sbom["components"]}
    undescribed = sorted(j for j in jars if not any(j == d + ".jar" or j.startswith(d + "-") for d in described))
    if undescribed:
        fail(f"no component of /{APP_SBOM} describes the image's {', '.join(undescribed)}")

    architecture = config.get("architecture", "")
    labels = config.get("config", {}).get("Labels") or {}
    version = labels.get("org.opencontainers.image.version", "")
    created = config.get("created") or labels.get("org.opencontainers.image.created")
    distro_id, distro = os_release["ID"], f"{os_release['ID']}-{os_release['VERSION_ID']}"
    repository = repository or "egress-service-agent"
    image_ref = "image"
    image = {
        "type": "container", "bom-ref": image_ref, "name": "egress-service-agent", "version": version,
        "description": "the egress-service-agent image (OCI), " + architecture,
        "purl": f"pkg:oci/egress-service-agent@{quote(digest, safe='')}?arch={architecture}"
                f"&repository_url={quote(repository, safe='/')}" + (f"&tag={version}" if version else ""),
        "hashes": [{"alg": "SHA-256", "content": digest.split(":", 1)[1]}],
        "properties": [{"name": "org.opencontainers.image." + k.split("org.opencontainers.image.", 1)[1], "value": v}
                       for k, v in sorted(labels.items()) if k.startswith("org.opencontainers.image.")],
    }

    os_ref = f"os:{distro}"
    os_component = {"type": "operating-system", "bom-ref": os_ref, "name": distro_id,
                    "version": os_release["VERSION_ID"],
                    "description": os_release.get("PRETTY_NAME", distro) + ": the release the base layer's "
                                   "packages are from (no package manager and no dpkg database in the image)"}

    jre_version = jre["JAVA_VERSION"]
    jre_component = {
        "type": "platform", "name": "openjdk", "version": jre_version,
        "description": "the Java runtime, jlink'ed" + (f" from {jdk_package}" if jdk_package else "")
                       + " with the modules " + jre.get("MODULES", ""),
        "properties": [{"name": "java.version", "value": jre_version},
                       {"name": "java.modules", "value": jre.get("MODULES", "")}],
    }
    if jdk_package:
        name, _, deb_version = jdk_package.partition("=")
        if not deb_version:
            fail(f"--jdk-package {jdk_package}: expected NAME=VERSION")
        if not re.match(re.escape(jre_version) + r"(\+|$)", deb_version.split(":")[-1]):
            fail(f"--jdk-package {jdk_package} is not the JDK of the image's runtime (JAVA_VERSION {jre_version})")
        jre_component["purl"] = deb_purl(distro_id, name, deb_version, architecture, distro)
        jre_component["properties"].append({"name": "jdk.package", "value": jdk_package})
    else:
        jre_component["purl"] = f"pkg:generic/openjdk@{purl_version(jre_version)}"
    jre_component["bom-ref"] = "jre:" + jre_component["purl"]

    packages, refs = [], {}
    for name in sorted(statuses):
        f = statuses[name]
        for field in ("Package", "Version", "Architecture"):
            if not f.get(field):
                fail(f"/var/lib/dpkg/status.d/{name} has no {field}")
        purl = deb_purl(distro_id, f["Package"], f["Version"], f["Architecture"], distro)
        refs[f["Package"]] = purl
        component = {"type": "library", "bom-ref": purl, "name": f["Package"], "version": f["Version"],
                     "purl": purl, "properties": [{"name": "deb.architecture", "value": f["Architecture"]}]}
        if f.get("Maintainer"):
            component["publisher"] = f["Maintainer"]
        if f.get("Description"):
            component["description"] = f["Description"].splitlines()[0]
        if f.get("Source"):
            component["properties"].append({"name": "deb.source", "value": f["Source"].split(" ")[0]})
        packages.append(component)

    # the project's component (the plugin calls it a library): in the image, it is the application that runs
    app = {**sbom["metadata"]["component"], "type": "application"}
    app_ref = app["bom-ref"]
    dependencies = {d["ref"]: d for d in sbom.get("dependencies", [])}
    dependencies[image_ref] = {"ref": image_ref, "dependsOn": [app_ref, jre_component["bom-ref"], os_ref]
                               + [p["bom-ref"] for p in packages]}
    dependencies[jre_component["bom-ref"]] = {"ref": jre_component["bom-ref"], "dependsOn": sorted(
        {refs[n] for n in ("libc6", "zlib1g") if n in refs})}
    for name in sorted(statuses):
        f = statuses[name]
        wanted = depends_names(f.get("Pre-Depends", "") + "," + f.get("Depends", ""))
        dependencies[refs[f["Package"]]] = {"ref": refs[f["Package"]], "dependsOn": sorted(
            {refs[n] for n in wanted if n in refs and n != f["Package"]})}
    dependencies.setdefault(app_ref, {"ref": app_ref, "dependsOn": []})
    dependencies[app_ref]["dependsOn"] = list(dict.fromkeys(dependencies[app_ref].get("dependsOn", [])
                                                            + [jre_component["bom-ref"]]))

    tools = sbom["metadata"].get("tools", {})
    if isinstance(tools, dict):
        tools = {**tools, "components": tools.get("components", []) + [
            {"type": "application", "name": "image-sbom-merge.py", "group": "egress-service-agent",
             "description": "scripts/release/image-sbom-merge.py: this document, from the image archive"}]}
    return {
        "bomFormat": "CycloneDX",
        "specVersion": sbom["specVersion"],
        "serialNumber": "urn:uuid:" + str(uuid.uuid5(uuid.NAMESPACE_URL, "oci:" + digest)),
        "version": 1,
        "metadata": {**{k: v for k, v in sbom["metadata"].items() if k not in ("component", "tools", "timestamp")},
                     **({"timestamp": created} if created else {}), "tools": tools, "component": image},
        "components": [app] + [jre_component, os_component] + packages + sbom["components"],
        "dependencies": list(dependencies.values()),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("archive")
    p.add_argument("--jdk-package", help="NAME=VERSION: the Debian package of the JDK the runtime was jlink'ed from")
    p.add_argument("--repository", help="the image's repository, for its purl (default egress-service-agent)")
    args = p.parse_args()
    bom = merge(args.archive, args.jdk_package, args.repository)
    json.dump(bom, sys.stdout, indent=2)
    print()
    kinds = {}
    for c in bom["components"]:
        kinds[c["type"]] = kinds.get(c["type"], 0) + 1
    print("image-sbom-merge: " + ", ".join(f"{n} {t}" for t, n in sorted(kinds.items())) + " components", file=sys.stderr)


if __name__ == "__main__":
    main()
