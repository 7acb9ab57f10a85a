# syntax=docker/dockerfile:1
# egress-service-agent image: the node jar (no demo) on a jlink'ed JRE with an AppCDS archive, on Debian
# with libnftables.
#   docker build -t ghcr.io/egress-service-agent/egress-service-agent:dev .

# --- 1. build the jars from sources (target/ is never sent: see .dockerignore) ---
# On the builder's own platform: the jar is the same for every platform, and Maven under emulation (arm64
# on an amd64 runner) would take many times as long.
FROM --platform=$BUILDPLATFORM maven:3-eclipse-temurin-17 AS build
WORKDIR /src
COPY pom.xml ./
COPY crds ./crds
COPY src ./src
# No .git is sent (.dockerignore): the commit that --version and build_info show comes in as a build
# argument, e.g. --build-arg GIT_COMMIT=$(git rev-parse --short=12 HEAD); empty shows none.
ARG GIT_COMMIT=
RUN --mount=type=cache,target=/root/.m2 mvn -B -DskipTests package -Dgit.commit="${GIT_COMMIT}"

# --- 2. a JRE with only the modules the jar needs ---
FROM maven:3-eclipse-temurin-17 AS jre
COPY --from=build /src/target/egress-service-agent-node.jar /tmp/agent.jar
# jdeps on the node jar printed (JDK 17.0.15):
#   java.base,java.desktop,java.naming,java.net.http,java.sql,jdk.httpserver,jdk.management,jdk.unsupported
# (jdk.management: com.sun.management's process CPU and memory, for the jvm_* and process_* metrics)
# Added by hand, as jdeps cannot see them: jdk.crypto.ec (SunEC provider: ECDHE/EC certificates
# on the TLS connection to the API server, loaded as a security provider, not linked).
RUN modules="$(jdeps --multi-release 17 --print-module-deps --ignore-missing-deps /tmp/agent.jar),jdk.crypto.ec" \
 && echo "jlink modules: ${modules}" \
 && jlink --add-modules "${modules}" --strip-debug --no-man-pages --no-header-files --compress=2 \
          --generate-cds-archive --output /opt/egress-service-agent

# --- 3. runtime ---
FROM debian:bookworm-slim
# libnftables1: the agent drives nftables through libnftables.so.1 (JNA). The JRE is glibc-linked
# and JNA unpacks libjnidispatch at run time, hence not distroless/static. No shell is needed at
# run time but debian-slim keeps one for debugging.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libnftables1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=jre /opt/egress-service-agent /opt/egress-service-agent
# The node jar: everything but the demo's embedded API server (Vert.x, Netty, BouncyCastle), whose zip
# index alone stayed in the agent's heap for its whole life.
COPY --from=build /src/target/egress-service-agent-node.jar /opt/egress-service-agent/egress-service-agent.jar
# AppCDS: the classes the agent loads (src/main/appcds/agent.classlist, from a training run of the real
# process: bench/agent-latency.sh classlist) are parsed once, here, into an archive that every start maps
# instead of parsing them into metaspace: 4.4 MiB less RSS with 1,000 services (9.5 with the fat jar), a faster start
# (bench/README.md, "Memory"). The dump must run against this very jar at this very path (the JVM checks
# both); a list that has gone stale only archives fewer classes, and a missing or unusable archive only
# costs that memory back (-Xshare:auto, the default: the JVM then starts without it and says so).
COPY src/main/appcds/agent.classlist /tmp/agent.classlist
RUN /opt/egress-service-agent/bin/java -Xshare:dump -Xlog:cds=error -XX:SharedClassListFile=/tmp/agent.classlist \
      -XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa -cp /opt/egress-service-agent/egress-service-agent.jar \
 && rm /tmp/agent.classlist

LABEL org.opencontainers.image.source="https://github.com/egress-service-agent/egress-service-agent" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.title="egress-service-agent" \
      org.opencontainers.image.description="Kubernetes node agent implementing the k8s.ovn.org/v1 EgressService API with Linux policy routing and nftables"

# Not root by default: the allocator (deploy/allocator.yaml) runs as this uid, with no capability. The node
# agent runs as root (uid 0) with only CAP_NET_ADMIN, both set by the DaemonSet (deploy/daemonset.yaml).
# JNA needs a writable jna.tmpdir; the DaemonSet mounts an emptyDir at /tmp and sets
# JAVA_TOOL_OPTIONS="-XX:+ExitOnOutOfMemoryError -XX:MaxRAMPercentage=70 -Xms16m -Xmn12m -XX:MinHeapFreeRatio=25
#   -XX:MaxHeapFreeRatio=40 -XX:-ShrinkHeapInSteps -XX:+UseSerialGC -XX:TieredStopAtLevel=1
#   -XX:ReservedCodeCacheSize=32m
#   -XX:TrimNativeHeapInterval=10000 -Xss512k -Dsun.reflect.inflationThreshold=2147483647 -Djna.tmpdir=/tmp"
# and MALLOC_ARENA_MAX=2 (bench/README.md, "Memory"): the heap ceiling is 70 % of the container's memory limit.
# TrimNativeHeapInterval needs a JDK 17.0.9 or later.
# The entrypoint itself says -XX:+ExitOnOutOfMemoryError, so that a JAVA_TOOL_OPTIONS of one's own cannot lose it:
# out of heap, the process exits (status 3) and is restarted, instead of staying up with a dead thread.
# --generate-cds-archive: the JRE gets the JDK's default class-data archive, as a full JDK has; the
# entrypoint's agent.jsa (above) holds those classes too and the agent's own, and is the one in use.
USER 65532:65532
ENTRYPOINT ["/opt/egress-service-agent/bin/java", "-XX:+ExitOnOutOfMemoryError", "-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa", "-jar", "/opt/egress-service-agent/egress-service-agent.jar"]
