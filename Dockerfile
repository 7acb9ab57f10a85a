# syntax=docker/dockerfile:1
# egress-service-agent image: distroless-style (no shell, no package manager), in four layers ordered from
# the one that changes least to the one that changes with every version (docs/image.md):
#   base (C libraries from Debian bookworm) / runtime (jlink'ed JRE) / dependencies (jars) / application
# so that an upgrade of the agent pulls only the application layers.
#   docker build -t ghcr.io/egress-service-agent/egress-service-agent:dev \
#     --build-arg VERSION=... --build-arg GIT_COMMIT=$(git rev-parse HEAD) --build-arg CREATED=... .
# scripts/build-image.sh builds the same image without a container engine (and reads its config from here).

# --- 1. the jars from sources (target/ is never sent: see .dockerignore) ---
# On the builder's own platform: the jars are the same for every platform, and Maven under emulation (arm64
# on an amd64 runner) would take many times as long.
FROM --platform=$BUILDPLATFORM maven:3-eclipse-temurin-17 AS build
WORKDIR /src
COPY pom.xml ./
COPY crds ./crds
COPY netlink ./netlink
COPY api ./api
COPY agent ./agent
# the reactor reads every module's pom; only the agent and what it needs are built
COPY testbed/pom.xml ./testbed/pom.xml
# No .git is sent (.dockerignore): the commit that --version and build_info show comes in as a build
# argument, e.g. --build-arg GIT_COMMIT=$(git rev-parse HEAD); empty shows none.
ARG GIT_COMMIT=
# package: target/egress-service-agent-image.jar (the agent, Class-Path: lib/...), target/image/lib/ (its
# dependencies) and target/egress-service-agent-sbom.json (CycloneDX).
RUN --mount=type=cache,target=/root/.m2 mvn -B -Psbom -DskipTests -pl agent -am package -Dgit.commit="${GIT_COMMIT}"

# --- 2. the runtime, the base and the application tree, from Debian bookworm's packages ---
FROM debian:bookworm-slim AS assemble
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless libnftables1 gcc libc6-dev binutils python3
WORKDIR /src
COPY scripts/image ./scripts/image
COPY scripts/kubectl-egress_service ./scripts/kubectl-egress_service
COPY agent/src/main/image ./agent/src/main/image
COPY --from=build /src/target/egress-service-agent-image.jar /src/target/egress-service-agent-sbom.json ./target/
COPY --from=build /src/target/image/lib ./target/image/lib
# The same steps as scripts/build-image.sh: the JRE (jre.sh), the launcher on PATH, the base (base-rootfs.sh:
# the C libraries that the JRE, libnftables.so.1 and the launcher load, unpacked from their packages), the SBOM of
# the jars the image holds (image-sbom.py).
RUN scripts/image/jre.sh target/egress-service-agent-image.jar target/image/lib /out/runtime/opt/egress-service-agent/jre \
 && mkdir -p /out/application/usr/local/bin /out/application/opt/egress-service-agent /out/application/usr/share/doc/egress-service-agent \
 && gcc -Os -Wall -Wextra -Werror -o /out/application/usr/local/bin/egress-service-agent agent/src/main/image/launcher.c \
 && strip /out/application/usr/local/bin/egress-service-agent \
 && scripts/image/base-rootfs.sh /out/runtime/opt/egress-service-agent/jre /out/base /out/application/usr/local/bin/egress-service-agent \
 && cp target/egress-service-agent-image.jar /out/application/opt/egress-service-agent/egress-service-agent.jar \
 && python3 scripts/image/image-sbom.py target/egress-service-agent-sbom.json target/image/lib \
      > /out/application/usr/share/doc/egress-service-agent/sbom.cdx.json
# The bash completion and the man page, generated from the command line's model by the agent itself on the JRE
# just made (its `completion` and `man` commands), and the kubectl plugin, into their usual places in the
# application tree (scripts/image/cli-files.sh, which scripts/build-image.sh runs too). SOURCE_DATE_EPOCH (BuildKit
# passes it when set) dates the man page, so one commit gives the same layer on any day.
ARG SOURCE_DATE_EPOCH
RUN scripts/image/cli-files.sh /out/runtime/opt/egress-service-agent/jre/bin/java \
      "target/egress-service-agent-image.jar:target/image/lib/*" /out/application

# --- 3. the image ---
FROM scratch
COPY --from=assemble /out/base/ /
COPY --from=assemble /out/runtime/ /
COPY --from=build /src/target/image/lib/ /opt/egress-service-agent/lib/
COPY --from=assemble /out/application/ /
# AppCDS: the classes the agent loads (agent/src/main/appcds/agent.classlist, from a training run of the real
# process: bench/agent-latency.sh classlist) are parsed once, here, into an archive that every start maps
# instead of parsing them into metaspace: 4.4 MiB less RSS with 1,000 services, a faster start (bench/README.md,
# "Memory"). The dump must run against these very jars at these very paths (the JVM checks their paths, sizes
# and mtimes); a list that has gone stale only archives fewer classes, and a missing or unusable archive only
# costs that memory back (-Xshare:auto, the default: the JVM then starts without it and says so). Exec form: the
# image has no shell. The class list is bind-mounted, so it stays in no layer.
RUN --mount=type=bind,source=agent/src/main/appcds/agent.classlist,target=/tmp/agent.classlist \
    ["/opt/egress-service-agent/jre/bin/java", "-Xshare:dump", "-Xlog:cds=error", "-XX:SharedClassListFile=/tmp/agent.classlist", "-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa", "-cp", "/opt/egress-service-agent/egress-service-agent.jar"]

ARG VERSION=dev
ARG GIT_COMMIT=
ARG CREATED=
LABEL org.opencontainers.image.title="egress-service-agent" \
      org.opencontainers.image.description="Kubernetes node agent implementing the k8s.ovn.org/v1 EgressService API with Linux policy routing and nftables" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${GIT_COMMIT}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/egress-service-agent/egress-service-agent" \
      org.opencontainers.image.url="https://github.com/egress-service-agent/egress-service-agent" \
      org.opencontainers.image.documentation="https://github.com/egress-service-agent/egress-service-agent/blob/main/docs/image.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="egress-service-agent" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"

# /usr/local/bin/egress-service-agent (agent/src/main/image/launcher.c) is the entrypoint and the command on PATH: it
# execs the JVM, -jar the agent, with the arguments it was given appended, so `kubectl exec POD -- egress-service-agent
# status` runs the same JVM, flags and jar as the container's own process.
ENV PATH=/usr/local/bin:/opt/egress-service-agent/jre/bin

# Not root by default: the allocator (deploy/allocator.yaml) runs as this uid, with no capability. The node
# agent runs as root (uid 0) with only CAP_NET_ADMIN, both set by the DaemonSet (deploy/daemonset.yaml).
# JNA needs a writable jna.tmpdir; the DaemonSet mounts an emptyDir at /tmp and sets
# EGRESS_AGENT_JVM_OPTIONS="-XX:+ExitOnOutOfMemoryError -XX:MaxRAMPercentage=70 -Xms16m -Xmn12m -XX:MinHeapFreeRatio=25
#   -XX:MaxHeapFreeRatio=40 -XX:-ShrinkHeapInSteps -XX:+UseSerialGC -XX:TieredStopAtLevel=1
#   -XX:ReservedCodeCacheSize=32m
#   -XX:TrimNativeHeapInterval=10000 -Xss512k -Dsun.reflect.inflationThreshold=2147483647 -Djna.tmpdir=/tmp"
# and MALLOC_ARENA_MAX=2 (bench/README.md, "Memory"): the heap ceiling is 70 % of the container's memory limit.
# TrimNativeHeapInterval needs a JDK 17.0.9 or later. The launcher puts those words on java's command line: in
# JAVA_TOOL_OPTIONS (which works too) the JVM would first print "Picked up JAVA_TOOL_OPTIONS: ..." on stderr, a line
# that is not JSON under EGRESS_AGENT_LOG_FORMAT=json.
# The launcher itself passes -XX:+ExitOnOutOfMemoryError after those options, so that options of one's own cannot
# lose it: out of heap, the process exits (status 3) and is restarted, instead of staying up with a dead thread.
# This stage is the one definition of the image's config: scripts/build-image.sh reads its ENTRYPOINT, ENV, USER and
# LABEL (scripts/image/dockerfile-config.py); the JVM's own command line is in the launcher
# (io.egressservice.deploy.ImageEntrypointTest checks both).
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/egress-service-agent"]
