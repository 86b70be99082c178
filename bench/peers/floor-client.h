/*
 * Why this exists: what the two large-message floor clients (large-floor-client.c over TCP,
 * tls-floor-client.c over TLS) share: the clock, dying with a one-line error, the CPU time of
 * this process and of the server, and bounded numbers from the command line. Each client
 * defines PROGRAM (its name, for its messages) before including it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int i) {
    if (i >= 0) fprintf(stderr, PROGRAM ": connection %d: %s\n", i, what);
    else fprintf(stderr, PROGRAM ": %s\n", what);
    exit(1);
}

static void die_errno(const char *what, int i) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
    die(msg, i);
}

static double cpu_self(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Process PID's CPU seconds (utime + stime of /proc/PID/stat), or -1 if unreadable. */
static double cpu_of(long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long utime, stime;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static double number(const char *s, const char *name, double lo, double hi) {
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s || !(v >= lo && v <= hi)) {
        fprintf(stderr, PROGRAM ": %s must be %g to %g, not %s\n", name, lo, hi, s);
        exit(2);
    }
    return v;
}
