# syntax=docker/dockerfile:1
# egress-service-agent image: the fat jar on a jlink'ed JRE, on Debian with libnftables.
#   docker build -t ghcr.io/egress-service-agent/egress-service-agent:dev .

# --- 1. build the fat jar from sources (target/ is never sent: see .dockerignore) ---
FROM maven:3-eclipse-temurin-17 AS build
WORKDIR /src
COPY pom.xml ./
COPY crds ./crds
COPY src ./src
RUN --mount=type=cache,target=/root/.m2 mvn -B -DskipTests package

# --- 2. a JRE with only the modules the jar needs ---
FROM maven:3-eclipse-temurin-17 AS jre
COPY --from=build /src/target/egress-service-agent.jar /tmp/agent.jar
# jdeps on the fat jar printed (JDK 17.0.15):
#   java.base,java.compiler,java.desktop,java.naming,java.sql,jdk.httpserver,jdk.unsupported
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
COPY --from=build /src/target/egress-service-agent.jar /opt/egress-service-agent/egress-service-agent.jar

LABEL org.opencontainers.image.source="https://github.com/egress-service-agent/egress-service-agent" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.title="egress-service-agent" \
      org.opencontainers.image.description="Kubernetes node agent implementing the k8s.ovn.org/v1 EgressService API with Linux policy routing and nftables"

# Runs as root (uid 0) with only CAP_NET_ADMIN, granted by the DaemonSet (deploy/daemonset.yaml).
# JNA needs a writable jna.tmpdir; the DaemonSet mounts an emptyDir at /tmp and sets
# JAVA_TOOL_OPTIONS="-Xms16m -Xmx96m -Xmn16m -XX:MinHeapFreeRatio=25 -XX:MaxHeapFreeRatio=40
#   -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=32m -XX:TrimNativeHeapInterval=10000 -Xss512k -Djna.tmpdir=/tmp"
# and MALLOC_ARENA_MAX=2 (bench/README.md, "Memory"). TrimNativeHeapInterval needs a JDK 17.0.9 or later.
# --generate-cds-archive: the JRE gets the JDK's default class-data archive, as a full JDK has (without it
# the agent measured about 3 MiB more RSS, -Xshare:off, and starts slower).
ENTRYPOINT ["/opt/egress-service-agent/bin/java", "-jar", "/opt/egress-service-agent/egress-service-agent.jar"]
