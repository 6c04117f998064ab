// spawn-bench: median wall time of a few commands, run interleaved in a random order each round.
//
// Not a test: a measuring tool for start-up costs of a few milliseconds, where a Python harness's own
// fork and pipes (about 0.5 ms in the development VM) would blur the difference between two builds.
// Each round runs every command once, in a fresh random order (a fixed seed, so two runs of the tool
// use the same orders), with stdin, stdout and stderr on /dev/null, and times posix_spawn to waitpid
// on CLOCK_MONOTONIC. Prints, per command, the median and quartiles in milliseconds, and the number
// of runs that did not exit 0 (launchguard check exits 1 on a warning: that is not an error here).
//
// Build and run (from the repository root):
//   cc -O2 -Wall -o /tmp/spawn-bench scripts/spawn-bench.c
//   /tmp/spawn-bench 400 /bin/true 'target/release/launchguard --version' 'target/release/launchguard check --json'
//   /tmp/spawn-bench 200 'LG_X=1 /path/to/build-a check --json' '/path/to/build-b check --json'
//
// A command is split at spaces (no quoting); leading NAME=VALUE words are added to its environment.
// The program is run by path (no PATH search). Exit status: 0, or 2 on bad arguments or a failed
// spawn.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { MAX_CMDS = 16, MAX_WORDS = 64 };

struct cmd {
    const char *text;
    char *argv[MAX_WORDS + 1];
    char **envp;
    double *ms;
    int nonzero;
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Splits `text` into argv words and extra NAME=VALUE environment words; 0 on success.
static int parse(struct cmd *c, const char *text) {
    size_t nenv = 0;
    while (environ[nenv])
        nenv++;
    c->text = text;
    c->envp = calloc(nenv + MAX_WORDS + 1, sizeof(char *));
    char *copy = strdup(text);
    if (!c->envp || !copy)
        return -1;
    memcpy(c->envp, environ, nenv * sizeof(char *));
    int na = 0;
    for (char *w = strtok(copy, " "); w; w = strtok(NULL, " ")) {
        if (na == MAX_WORDS)
            return -1;
        if (na == 0 && strchr(w, '=') && w[0] != '/' && w[0] != '.') {
            size_t name = strchr(w, '=') - w + 1, e = 0;
            while (e < nenv && strncmp(c->envp[e], w, name) != 0)
                e++;
            c->envp[e] = w; // replaces the inherited value, else appends
            if (e == nenv)
                nenv++;
        } else
            c->argv[na++] = w;
    }
    return na == 0 ? -1 : 0;
}

int main(int argc, char **argv) {
    int rounds = argc > 2 ? atoi(argv[1]) : 0;
    int k = argc - 2;
    if (rounds < 1 || k < 1 || k > MAX_CMDS) {
        fprintf(stderr, "usage: %s ROUNDS 'CMD ARGS' ['CMD ARGS' ...]  (1 to %d commands)\n", argv[0],
                MAX_CMDS);
        return 2;
    }
    struct cmd cmds[MAX_CMDS] = {0};
    for (int j = 0; j < k; j++) {
        if (parse(&cmds[j], argv[j + 2]) != 0) {
            fprintf(stderr, "spawn-bench: cannot use command '%s' (empty, or over %d words)\n",
                    argv[j + 2], MAX_WORDS);
            return 2;
        }
        cmds[j].ms = calloc(rounds, sizeof(double));
        if (!cmds[j].ms) {
            perror("spawn-bench: calloc");
            return 2;
        }
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) {
        perror("spawn-bench: /dev/null");
        return 2;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; fd < 3; fd++)
        posix_spawn_file_actions_adddup2(&fa, null_fd, fd);
    srand(33);
    for (int i = 0; i < rounds; i++) {
        int order[MAX_CMDS];
        for (int j = 0; j < k; j++)
            order[j] = j;
        for (int j = k - 1; j > 0; j--) {
            int r = rand() % (j + 1), x = order[j];
            order[j] = order[r];
            order[r] = x;
        }
        for (int q = 0; q < k; q++) {
            struct cmd *c = &cmds[order[q]];
            pid_t pid;
            double t0 = now_ms();
            int err = posix_spawn(&pid, c->argv[0], &fa, NULL, c->argv, c->envp);
            if (err != 0) {
                fprintf(stderr, "spawn-bench: %s: %s\n", c->argv[0], strerror(err));
                return 2;
            }
            int status;
            while (waitpid(pid, &status, 0) < 0) {
                if (errno != EINTR) {
                    perror("spawn-bench: waitpid");
                    return 2;
                }
            }
            c->ms[i] = now_ms() - t0;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                c->nonzero++;
        }
    }
    printf("%d rounds, a random order each\n%9s %9s %9s  %s\n", rounds, "median ms", "p25", "p75",
           "command (runs not exiting 0)");
    for (int j = 0; j < k; j++) {
        struct cmd *c = &cmds[j];
        qsort(c->ms, rounds, sizeof(double), by_value);
        printf("%9.3f %9.3f %9.3f  %s (%d)\n", c->ms[rounds / 2], c->ms[rounds / 4],
               c->ms[3 * rounds / 4], c->text, c->nonzero);
    }
    return 0;
}
