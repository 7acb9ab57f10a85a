/*
 * egress-service-agent: the command on the image's PATH (/usr/local/bin), so that
 * `kubectl exec POD -- egress-service-agent status` works in an image without a shell.
 *
 * It replaces itself (execv) with the image's entrypoint, the arguments it was given appended: the same
 * JVM, flags and jar as the container's own process. ENTRYPOINT below must equal the Dockerfile's
 * ENTRYPOINT word for word; io.egressservice.deploy.ImageEntrypointTest compares them. A symlink to java
 * cannot do this (java needs "-jar FILE" in front of the arguments), and neither can JDK_JAVA_OPTIONS
 * (the java launcher refuses -jar there).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const ENTRYPOINT[] = {
    "/opt/egress-service-agent/jre/bin/java",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa",
    "-jar",
    "/opt/egress-service-agent/egress-service-agent.jar",
};

int main(int argc, char **argv) {
    size_t fixed = sizeof ENTRYPOINT / sizeof ENTRYPOINT[0];
    char **args = calloc(fixed + (size_t)argc, sizeof *args);
    if (args == NULL) {
        fputs("egress-service-agent: out of memory\n", stderr);
        return 127;
    }
    for (size_t i = 0; i < fixed; i++) {
        args[i] = (char *)ENTRYPOINT[i];
    }
    for (int i = 1; i < argc; i++) {
        args[fixed + (size_t)i - 1] = argv[i];
    }
    execv(ENTRYPOINT[0], args);
    fprintf(stderr, "egress-service-agent: cannot run %s: %s\n", ENTRYPOINT[0], strerror(errno));
    return 127;
}
