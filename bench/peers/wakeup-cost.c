/*
 * Why this exists: an open-loop client sleeps between the sends it paces, and every sleep
 * ends in a wake-up whose CPU cost is the machine's, not the client's: on bare metal a few
 * microseconds; in a virtual machine, where arming the timer, halting the idle CPU and the
 * timer's interrupt are each an exit to the hypervisor (two levels of them when nested),
 * tens. bench/client-cost.sh prints it beside the open loop's cost per paced message, so a
 * reader can tell how much of that cost any client would pay on this machine.
 *
 * It does nothing but sleep: COUNT times, to an absolute deadline GAP_US after the last
 * (CLOCK_MONOTONIC, timer slack 1 ns as the wait of wsbench's io_uring worker has none),
 * and prints one line on stdout:
 *   cpu_us_per_wakeup=X overshoot_p50_us=Y overshoot_p99_us=Z
 * its own CPU time (user + system) over the wake-ups, and how late it woke after each
 * deadline. Exit 1 on a bad argument.
 *
 * Usage: wakeup-cost GAP_US COUNT     (GAP_US 10..1000000, COUNT 100..100000)
 * Build: cc -O2 -o wakeup-cost wakeup-cost.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static long long ns_of(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    long gap_us = argc == 3 ? atol(argv[1]) : 0;
    long count = argc == 3 ? atol(argv[2]) : 0;
    if (gap_us < 10 || gap_us > 1000000 || count < 100 || count > 100000) {
        fprintf(stderr, "usage: wakeup-cost GAP_US COUNT (GAP_US 10..1000000, COUNT 100..100000)\n");
        return 1;
    }
    long long *late = malloc(sizeof *late * count);
    if (!late) return 1;
    prctl(PR_SET_TIMERSLACK, 1UL);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long deadline = ns_of(now);
    for (long i = 0; i < count; i++) {
        deadline += gap_us * 1000LL;
        struct timespec at = {deadline / 1000000000LL, deadline % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        late[i] = ns_of(now) - deadline;
        // A wake-up later than the gap would make the next deadline already past: start the
        // schedule again from now, so that every iteration sleeps.
        if (late[i] > gap_us * 1000LL) deadline = ns_of(now);
    }
    getrusage(RUSAGE_SELF, &after);
    double cpu_us = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e6 +
                    (after.ru_utime.tv_usec - before.ru_utime.tv_usec) +
                    (after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e6 +
                    (after.ru_stime.tv_usec - before.ru_stime.tv_usec);
    qsort(late, count, sizeof *late, by_value);
    printf("cpu_us_per_wakeup=%.1f overshoot_p50_us=%lld overshoot_p99_us=%lld\n", cpu_us / count,
           late[count / 2] / 1000, late[count * 99 / 100] / 1000);
    free(late);
    return 0;
}
