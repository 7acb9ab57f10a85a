#!/usr/bin/env python3
"""Writes an OCI image archive (an OCI image layout in a tar, what `skopeo copy oci-archive:...`,
`podman load` and `docker load` read) from directories, one layer each, in the order given.

Layers are reproducible: entries sorted, owner 0:0, each file's own mtime (which the caller fixes), gzip
without a name or a time. The same directory therefore gives the same layer digest in every build, so a registry and a node
that already hold the base, runtime or dependency layer of an earlier version never fetch it again.

  oci-archive.py OUT --created RFC3339 --architecture ARCH --config CONFIG.json
                 --ref-name TAG --layer 'DESCRIPTION=DIR'...

CONFIG.json is the image config's "config" object (User, Env, Entrypoint, Labels, ...), as
dockerfile-config.py prints it; its Labels are also the manifest's annotations.

Prints one line per layer: the digest, compressed and unpacked sizes, and the description.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import sys
import tarfile
import tempfile


def layer_tar(directory, out):
    """A tar of directory's tree (not the directory itself) written to out."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(directory):
            dirs.sort()
            for name in sorted(dirs + files):
                path = os.path.join(root, name)
                info = tar.gettarinfo(path, arcname=os.path.relpath(path, directory))
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = int(info.mtime)
                if info.isreg():
                    with open(path, "rb") as content:
                        tar.addfile(info, content)
                else:
                    tar.addfile(info)
            # os.walk does not descend into links to directories; they are entries like any link.


class Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what goes through it to the next stream."""

    def __init__(self, sink):
        self.sink, self.sha, self.size = sink, hashlib.sha256(), 0

    def writable(self):
        return True

    def tell(self):
        return self.size

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        if self.sink is not None:
            self.sink.write(data)
        return len(data)


def write_blob(blobs, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest, len(data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--created", required=True)
    p.add_argument("--architecture", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--ref-name", required=True)
    p.add_argument("--layer", action="append", required=True)
    a = p.parse_args()

    with open(a.config) as f:
        image_config = json.load(f)
    labels = image_config.get("Labels", {})
    staging = tempfile.mkdtemp(prefix="oci-archive-")
    try:
        blobs = os.path.join(staging, "blobs", "sha256")
        os.makedirs(blobs)
        layers, diff_ids, history = [], [], []
        for spec in a.layer:
            description, directory = spec.rsplit("=", 1)
            with tempfile.NamedTemporaryFile(dir=staging, delete=False) as compressed:
                packed = Hashing(compressed)
                with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=packed, mtime=0) as gz:
                    unpacked = Hashing(gz)
                    layer_tar(directory, unpacked)
            digest = packed.sha.hexdigest()
            os.rename(compressed.name, os.path.join(blobs, digest))
            layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                           "digest": "sha256:" + digest, "size": packed.size,
                           "annotations": {"org.opencontainers.image.title": description}})
            diff_ids.append("sha256:" + unpacked.sha.hexdigest())
            history.append({"created": a.created, "created_by": description})
            print(f"layer sha256:{digest[:12]} {packed.size:>10} bytes gzip {unpacked.size:>10} bytes tar  {description}")

        config = {
            "created": a.created, "architecture": a.architecture, "os": "linux",
            "config": image_config,
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": history,
        }
        config_digest, config_size = write_blob(blobs, json.dumps(config, sort_keys=True).encode())
        manifest = {
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": config_size},
            "layers": layers, "annotations": labels,
        }
        manifest_digest, manifest_size = write_blob(blobs, json.dumps(manifest, sort_keys=True).encode())
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                 "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                "digest": manifest_digest, "size": manifest_size,
                                "annotations": {"org.opencontainers.image.ref.name": a.ref_name}}]}
        with open(os.path.join(staging, "index.json"), "w") as f:
            json.dump(index, f, sort_keys=True)
        with open(os.path.join(staging, "oci-layout"), "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)
        tmp_out = a.out + ".part"
        with tarfile.open(tmp_out, "w", format=tarfile.PAX_FORMAT) as tar:
            for name in ("oci-layout", "index.json", "blobs"):
                tar.add(os.path.join(staging, name), arcname=name)
        os.replace(tmp_out, a.out)
        total = sum(l["size"] for l in layers) + config_size + manifest_size
        print(f"image {manifest_digest}: {total} bytes compressed ({total / 1048576:.1f} MiB), "
              f"{sum(1 for _ in layers)} layers")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
