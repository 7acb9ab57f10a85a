#!/usr/bin/env python3
"""The image's SBOM: the project's CycloneDX SBOM (mvn package, cyclonedx-maven-plugin) narrowed to the Java
libraries the image ships, the jars in LIB_DIR (target/image/lib). makeBom has no way to leave out the demo's
embedded API server (Vert.x, Netty, BouncyCastle, the mock server), which the image does not carry; a scanner
reading an SBOM that lists them would report their advisories against the image.

  image-sbom.py SBOM.json LIB_DIR > IMAGE-SBOM.json

The project's own modules (group io.egressservice: netlink, api) are kept too: the image jar carries their classes.
Fails when a jar of LIB_DIR has no component in the SBOM: the SBOM must describe every jar the image holds.
"""
import json
import os
import sys


def main():
    sbom_path, lib = sys.argv[1], sys.argv[2]
    with open(sbom_path) as f:
        sbom = json.load(f)
    jars = {name for name in os.listdir(lib) if name.endswith(".jar")}
    # copy-dependencies names each jar artifactId-version[-classifier].jar, as the SBOM's name and version do.
    kept = [c for c in sbom["components"] if f"{c['name']}-{c['version']}.jar" in jars
            or any(j.startswith(f"{c['name']}-{c['version']}-") for j in jars)
            or c.get("group") == "io.egressservice"]
    described = {f"{c['name']}-{c['version']}" for c in kept}
    missing = sorted(j for j in jars if not any(j == d + ".jar" or j.startswith(d + "-") for d in described))
    if missing:
        sys.exit(f"image-sbom: no component of {sbom_path} describes {', '.join(missing)}")
    refs = {c["bom-ref"] for c in kept} | {sbom["metadata"]["component"]["bom-ref"]}
    sbom["components"] = kept
    sbom["dependencies"] = [{**d, "dependsOn": [r for r in d.get("dependsOn", []) if r in refs]}
                            for d in sbom.get("dependencies", []) if d["ref"] in refs]
    json.dump(sbom, sys.stdout, indent=2)
    print()
    print(f"image-sbom: {len(kept)} of the SBOM's components, {len(jars)} jars", file=sys.stderr)


if __name__ == "__main__":
    main()
