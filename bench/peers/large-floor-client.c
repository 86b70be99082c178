/*
 * Why this exists: it is the floor for a client driving LARGE messages on this machine, the
 * yardstick bench/large.sh sets beside `wsbench run throughput --frames-per-send 1` (goal: the
 * wsbench client's CPU per MB within 1.3x of this), and the load that drives the floor server
 * (bench/peers/large-floor-server.c). It does the least such a client can do: raw TCP (no
 * WebSocket framing, no masking), one thread, level-triggered epoll, nonblocking sockets with
 * TCP_NODELAY; every connection sends one MESSAGE-byte block from one buffer shared by all
 * connections (never copied by this program), reads MESSAGE bytes back into one 1 MiB scratch
 * buffer (read and dropped: no check, no copy), then sends the next: one message in flight per
 * connection, reading while it sends (the echo starts before the message is all sent).
 *
 * Usage: large-floor-client HOST PORT CONNECTIONS MESSAGE SECONDS [--warmup SECONDS]
 *                           [--server-pid PID]
 *   CONNECTIONS 1 to 10000, MESSAGE 1 to 1073741824 bytes, SECONDS > 0 (at most 3600).
 *   Once all connections are up it runs --warmup seconds (default 0) without counting, then
 *   measures for SECONDS and prints one line on stdout:
 *     round_trips_per_sec=R mb_per_sec=M cpu_us_per_mb=C server_cpu_us_per_mb=S round_trips=N seconds=T
 *   R: messages whose whole echo came back in the window, per second; M: echoed bytes received
 *   in the window ÷ 1e6, per second; C: this process's CPU (getrusage, user + system) over the
 *   window per MB received in it; S: the same for process PID (from /proc/PID/stat, clock
 *   ticks), or "-" without --server-pid. Details go to stderr. Exit 1 on any error (refused,
 *   closed by the server, more bytes than were sent), 2 on bad arguments.
 *
 * Build: cc -O2 -Wall -o large-floor-client large-floor-client.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROGRAM "large-floor-client"
#include "floor-client.h"

#define SCRATCH (1 << 20)
#define MAX_EVENTS 256
#define CONNECT_TIMEOUT 30.0

struct conn {
    int fd;
    size_t sent, got; /* bytes of the message in flight written, and of its echo read */
    uint32_t events;  /* what the connection waits for now */
};

static struct conn *conns;
static int nconns, epfd;
static size_t message;
static char *block;
static char scratch[SCRATCH];
static unsigned long long round_trips, bytes_in; /* counted from the window's start */

static void want(int i, uint32_t events) {
    if (conns[i].events == events) return;
    struct epoll_event ev = {.events = events, .data.u32 = (uint32_t)i};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, conns[i].fd, &ev) < 0) die_errno("epoll_ctl", i);
    conns[i].events = events;
}

/* Writes what the socket takes of the message in flight. */
static void on_writable(int i) {
    struct conn *c = &conns[i];
    while (c->sent < message) {
        ssize_t n = send(c->fd, block + c->sent, message - c->sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            die_errno("send", i);
        }
        c->sent += (size_t)n;
    }
    want(i, c->sent < message ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

/* Reads echo bytes; once the whole echo is in, counts it and sends the next message. */
static void on_readable(int i, int counting) {
    struct conn *c = &conns[i];
    size_t room = message - c->got < SCRATCH ? message - c->got : SCRATCH;
    ssize_t n = recv(c->fd, scratch, room, 0);
    if (n == 0) die("closed by the server", i);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        die_errno("recv", i);
    }
    if (c->got + (size_t)n > c->sent) die("more bytes back than were sent", i);
    c->got += (size_t)n;
    if (counting) bytes_in += (unsigned long long)n;
    if (c->got < message) return;
    if (counting) round_trips++;
    c->got = c->sent = 0;
    on_writable(i);
}

static void connect_all(const char *host, const char *port) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "large-floor-client: %s:%s: %s\n", host, port, gai_strerror(rc));
        exit(1);
    }
    int one = 1;
    for (int i = 0; i < nconns; i++) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) die_errno("socket", i);
        struct timeval tv = {.tv_sec = (time_t)CONNECT_TIMEOUT};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) die_errno("connect", i);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die_errno("set nonblocking", i);
        conns[i] = (struct conn){.fd = fd, .events = EPOLLIN | EPOLLOUT};
        struct epoll_event ev = {.events = conns[i].events, .data.u32 = (uint32_t)i};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die_errno("epoll_ctl", i);
    }
    freeaddrinfo(ai);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: large-floor-client HOST PORT CONNECTIONS MESSAGE SECONDS [--warmup SECONDS] [--server-pid PID]\n");
        return 2;
    }
    nconns = (int)number(argv[3], "CONNECTIONS", 1, 10000);
    message = (size_t)number(argv[4], "MESSAGE", 1, 1 << 30);
    double seconds = number(argv[5], "SECONDS", 0.001, 3600), warmup = 0;
    long server_pid = 0;
    for (int a = 6; a < argc; a++) {
        if (strcmp(argv[a], "--warmup") == 0 && a + 1 < argc) warmup = number(argv[++a], "--warmup", 0, 3600);
        else if (strcmp(argv[a], "--server-pid") == 0 && a + 1 < argc) server_pid = (long)number(argv[++a], "--server-pid", 1, 1 << 30);
        else {
            fprintf(stderr, "large-floor-client: unknown argument %s\n", argv[a]);
            return 2;
        }
    }
    if (server_pid && cpu_of(server_pid) < 0) {
        fprintf(stderr, "large-floor-client: cannot read /proc/%ld/stat (is --server-pid a running process?)\n", server_pid);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    block = malloc(message);
    conns = calloc((size_t)nconns, sizeof *conns);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!block || !conns || epfd < 0) die_errno("set-up", -1);
    memset(block, 'x', message); /* touch every page before the window */
    connect_all(argv[1], argv[2]);

    /* Warm-up, then the window: the same loop, counting only inside the window. */
    struct epoll_event events[MAX_EVENTS];
    double t = now(), until = t + warmup, cpu0 = 0, server0 = 0, start = t;
    int counting = 0;
    for (;;) {
        if (t >= until) {
            if (counting) break;
            counting = 1;
            start = t;
            until = t + seconds;
            cpu0 = cpu_self();
            server0 = server_pid ? cpu_of(server_pid) : 0;
        }
        int n = epoll_wait(epfd, events, MAX_EVENTS, 50);
        if (n < 0 && errno != EINTR) die_errno("epoll_wait", -1);
        for (int e = 0; e < n; e++) {
            int i = (int)events[e].data.u32;
            uint32_t ev = events[e].events;
            if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(i, counting);
            if ((ev & EPOLLOUT) && conns[i].sent < message) on_writable(i);
        }
        t = now();
    }
    double cpu = cpu_self() - cpu0, server = server_pid ? cpu_of(server_pid) - server0 : 0, elapsed = t - start;
    if (server_pid && server < 0) die("the server process went away during the window", -1);
    double mb = (double)bytes_in / 1e6;
    fprintf(stderr, "large-floor-client: %d connections, %zu-byte messages: %llu round trips, %.1f MB back in %.3f s; CPU %.3f s here, %.3f s in the server\n",
            nconns, message, round_trips, mb, elapsed, cpu, server);
    if (bytes_in == 0) die("no echo came back in the window", -1);
    char server_field[64] = "-";
    if (server_pid) snprintf(server_field, sizeof server_field, "%.1f", server * 1e6 / mb);
    printf("round_trips_per_sec=%.3f mb_per_sec=%.1f cpu_us_per_mb=%.1f server_cpu_us_per_mb=%s round_trips=%llu seconds=%.3f\n",
           (double)round_trips / elapsed, mb / elapsed, cpu * 1e6 / mb, server_field, round_trips, elapsed);
    return 0;
}
