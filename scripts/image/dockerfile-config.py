#!/usr/bin/env python3
"""Prints the image config that the Dockerfile's last stage declares (USER, ENV, ENTRYPOINT, LABEL, with the
stage's ARGs substituted), as the JSON of an OCI image config's "config" object.

scripts/build-image.sh writes exactly this into its image, so the two builds cannot drift apart: the
Dockerfile is the one definition of the entrypoint, PATH, user and annotations.

  dockerfile-config.py DOCKERFILE [--arg NAME=VALUE]...

Reads only the instruction forms the Dockerfile uses (one instruction per line or continued with a trailing
backslash; ENV and LABEL as KEY=VALUE pairs, values plain or double-quoted; ENTRYPOINT in exec form) and
fails on anything else in those instructions rather than guessing.
"""
import argparse
import json
import re
import shlex
import sys


def instructions(text):
    """(keyword, arguments) of each instruction, continuation lines joined, comments dropped."""
    logical = ""
    for line in text.splitlines():
        if not logical and (line.lstrip().startswith("#") or not line.strip()):
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        keyword, _, rest = logical.strip().partition(" ")
        yield keyword.upper(), rest.strip()
        logical = ""


def substitute(value, args):
    def one(match):
        name = match.group(1) or match.group(2)
        if name not in args:
            raise SystemExit(f"dockerfile-config: ${name} is not an ARG of the last stage")
        return args[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, value)


def pairs(rest, args, keyword):
    result = {}
    for word in shlex.split(rest):
        if "=" not in word:
            raise SystemExit(f"dockerfile-config: {keyword} {word}: only KEY=VALUE is read")
        key, value = word.split("=", 1)
        result[key] = substitute(value, args)
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dockerfile")
    p.add_argument("--arg", action="append", default=[], help="NAME=VALUE, as docker build --build-arg")
    a = p.parse_args()
    given = dict(kv.split("=", 1) for kv in a.arg)
    with open(a.dockerfile) as f:
        stages = []
        for keyword, rest in instructions(f.read()):
            if keyword == "FROM":
                stages.append([])
            elif stages:
                stages[-1].append((keyword, rest))
    args, config = {}, {"User": "", "Env": [], "Entrypoint": None, "Labels": {}, "WorkingDir": "/"}
    for keyword, rest in stages[-1]:
        if keyword == "ARG":
            name, _, default = rest.partition("=")
            args[name] = given.get(name, default)
        elif keyword == "ENV":
            config["Env"] += [f"{k}={v}" for k, v in pairs(rest, args, keyword).items()]
        elif keyword == "LABEL":
            config["Labels"].update(pairs(rest, args, keyword))
        elif keyword == "USER":
            config["User"] = substitute(rest, args)
        elif keyword == "ENTRYPOINT":
            config["Entrypoint"] = json.loads(rest)  # exec form only: the image has no shell
    if not config["Entrypoint"]:
        raise SystemExit("dockerfile-config: the last stage has no ENTRYPOINT in exec form")
    json.dump(config, sys.stdout, indent=2, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
