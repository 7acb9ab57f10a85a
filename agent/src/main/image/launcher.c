/*
 * egress-service-agent: the image's entrypoint, and the command on its PATH (/usr/local/bin), so that
 * `kubectl exec POD -- egress-service-agent status` runs the same JVM, flags and jar in an image without a shell.
 *
 * It replaces itself (execv) with ENTRYPOINT, the words of EGRESS_AGENT_JVM_OPTIONS (split on white space) after the
 * java path and the arguments it was given at the end. The DaemonSet and the allocator pass their JVM options that
 * way, on java's command line, and not in JAVA_TOOL_OPTIONS or JDK_JAVA_OPTIONS: for those two the JVM (or the java
 * launcher) prints "Picked up JAVA_TOOL_OPTIONS: ..." on stderr before any of the agent's code runs, a line that is
 * not JSON when EGRESS_AGENT_LOG_FORMAT=json says every line is. The options come before ENTRYPOINT's own flags,
 * where JAVA_TOOL_OPTIONS would be read: the entrypoint's -XX:+ExitOnOutOfMemoryError cannot be turned off by them.
 * No quoting: a quote in the variable is refused, as a word with a space in it is no option the agent needs.
 * A symlink to java cannot do this (java needs "-jar FILE" in front of the arguments), and neither can
 * JDK_JAVA_OPTIONS (the java launcher refuses -jar there). io.egressservice.deploy.ImageEntrypointTest checks the
 * Dockerfile's ENTRYPOINT names this program, and LauncherTest runs it.
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

static const char *const OPTIONS_VARIABLE = "EGRESS_AGENT_JVM_OPTIONS";
static const char *const WHITE_SPACE = " \t\n\r\f\v";

int main(int argc, char **argv) {
    size_t fixed = sizeof ENTRYPOINT / sizeof ENTRYPOINT[0];
    const char *set = getenv(OPTIONS_VARIABLE);
    char *options = strdup(set == NULL ? "" : set);
    if (options == NULL) {
        fputs("egress-service-agent: out of memory\n", stderr);
        return 127;
    }
    if (strpbrk(options, "'\"") != NULL) {
        fprintf(stderr, "egress-service-agent: %s has a quote: its options are split on white space, unquoted\n",
                OPTIONS_VARIABLE);
        return 127;
    }
    size_t words = 0;
    for (size_t i = 0; options[i] != '\0'; i++) {
        if (strchr(WHITE_SPACE, options[i]) == NULL && (i == 0 || strchr(WHITE_SPACE, options[i - 1]) != NULL)) {
            words++;
        }
    }
    char **args = calloc(fixed + words + (size_t)argc, sizeof *args);
    if (args == NULL) {
        fputs("egress-service-agent: out of memory\n", stderr);
        return 127;
    }
    size_t n = 0;
    args[n++] = (char *)ENTRYPOINT[0];
    for (char *word = strtok(options, WHITE_SPACE); word != NULL; word = strtok(NULL, WHITE_SPACE)) {
        args[n++] = word;
    }
    for (size_t i = 1; i < fixed; i++) {
        args[n++] = (char *)ENTRYPOINT[i];
    }
    for (int i = 1; i < argc; i++) {
        args[n++] = argv[i];
    }
    execv(ENTRYPOINT[0], args);
    fprintf(stderr, "egress-service-agent: cannot run %s: %s\n", ENTRYPOINT[0], strerror(errno));
    return 127;
}
