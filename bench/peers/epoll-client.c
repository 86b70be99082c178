/*
 * Why this exists: it is the practical limit for a WebSocket echo CLIENT on this machine,
 * the yardstick for `wsbench run` (goal: wsbench run >= 0.95x this). It does the least a
 * client can do: one thread, level-triggered epoll, nonblocking sockets with TCP_NODELAY,
 * one precomputed masked frame, no allocation, no latency histogram, no clock reads per
 * message. bench/run.sh also uses it (with --raw) to drive the raw TCP echo server, so that
 * `wsbench serve` can be compared with bench/peers/epoll-echo-server.c.
 *
 * Usage: epoll-client HOST PORT CONNECTIONS SECONDS [--raw] [--warmup SECONDS]
 *   Opens CONNECTIONS connections (WebSocket: HTTP upgrade, the answer must be "101"; --raw:
 *   plain TCP, no upgrade, but one echo of the frame before the connection counts as up, so
 *   that the server has surely accepted it), then runs a closed loop: every connection sends a 20-byte binary
 *   frame (masked, 26 bytes on the wire), waits for the whole echo (2 + 20 bytes from a
 *   WebSocket server; the same 26 bytes from a raw TCP echo server with --raw) and sends the
 *   next. Once all connections are up it runs for --warmup seconds (default 0) without
 *   counting, then counts completed echoes for SECONDS and prints one line on stdout:
 *   echoes_per_sec=N
 *   and a second: cpu_us_per_echo=X user_s=U system_s=S (its CPU over every echo, warm-up and
 *   connect phase included, as wsbench's client.cpu_us_per_round_trip counts).
 *   Details (connect time, counts) go to stderr. Exit 1 on any error (refused, bad reply,
 *   a connection closed by the server).
 *
 * Build: cc -O2 -o epoll-client epoll-client.c
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

#define PAYLOAD_LEN 20
#define FRAME_LEN (2 + 4 + PAYLOAD_LEN) /* masked client frame: 26 bytes */
#define WS_REPLY_LEN (2 + PAYLOAD_LEN)  /* unmasked server frame: 22 bytes */
#define MAX_EVENTS 1024
#define MAX_CONNECTING 512  /* connects + upgrades in flight at once, to stay under the backlog */
#define CONNECT_TIMEOUT 60.0 /* seconds for all connections to come up */
#define HANDSHAKE_BUF 1024

enum phase { CONNECTING, UPGRADING, RUNNING };

struct conn {
    int fd;
    enum phase phase;
    uint16_t got;  /* reply bytes received for the message in flight (or handshake bytes) */
    uint16_t sent; /* bytes of the current request written (partial writes are rare) */
    char *hs;      /* handshake response buffer, freed once upgraded */
};

static struct conn *conns;
static int nconns, epfd, raw_mode;
static unsigned char frame[FRAME_LEN];
static char request[512];
static size_t request_len;
static size_t reply_len;
static int counting;
static unsigned long long echoes;
static unsigned long long all_echoes; /* warm-up included: the basis of cpu_us_per_echo */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int index) {
    if (index >= 0)
        fprintf(stderr, "epoll-client: connection %d: %s\n", index, what);
    else
        fprintf(stderr, "epoll-client: %s\n", what);
    exit(1);
}

static void die_errno(const char *what, int index) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
    die(msg, index);
}

static void modify(int i, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.u32 = (uint32_t)i};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, conns[i].fd, &ev) < 0) die_errno("epoll_ctl", i);
}

/* Writes (the rest of) the current request: the upgrade request or the frame. Returns 1 when
 * all of it is written, 0 when the socket is full (EPOLLOUT is then armed). */
static int send_rest(int i) {
    struct conn *c = &conns[i];
    const char *buf = c->phase == UPGRADING && !raw_mode ? request : (const char *)frame;
    size_t len = c->phase == UPGRADING && !raw_mode ? request_len : FRAME_LEN;
    while (c->sent < len) {
        ssize_t n = send(c->fd, buf + c->sent, len - c->sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                modify(i, EPOLLIN | EPOLLOUT);
                return 0;
            }
            if (errno == EINTR) continue;
            die_errno("send", i);
        }
        c->sent += (uint16_t)n;
    }
    return 1;
}

static int start_connect(int i, const struct sockaddr_storage *addr, socklen_t addrlen) {
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die_errno("socket (raise the open-file limit?)", i);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[i] = (struct conn){.fd = fd, .phase = CONNECTING};
    struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = (uint32_t)i};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die_errno("epoll_ctl", i);
    if (connect(fd, (const struct sockaddr *)addr, addrlen) < 0 && errno != EINPROGRESS)
        die_errno("connect", i);
    return fd;
}

/* The socket is connected: send the upgrade request (with --raw: the first frame). */
static void on_connected(int i) {
    struct conn *c = &conns[i];
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
        errno = err;
        die_errno("connect", i);
    }
    c->sent = 0;
    c->phase = UPGRADING;
    c->hs = malloc(HANDSHAKE_BUF);
    if (!c->hs) die("out of memory", i);
    modify(i, EPOLLIN);
    send_rest(i);
}

/* Reads the upgrade response; on a complete "101" the connection is up. With --raw the
 * "upgrade" is one echo of the frame: a raw TCP connection is only known to be accepted by
 * the server (not just queued in its listen backlog) once something came back. */
static void on_handshake_readable(int i, int *up) {
    struct conn *c = &conns[i];
    ssize_t n = recv(c->fd, c->hs + c->got, HANDSHAKE_BUF - 1 - c->got, 0);
    if (n == 0) die("closed by the server during the upgrade", i);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        die_errno("recv (upgrade)", i);
    }
    c->got += (uint16_t)n;
    c->hs[c->got] = 0;
    if (raw_mode) {
        if (c->got < FRAME_LEN) return;
        if (c->got > FRAME_LEN || memcmp(c->hs, frame, FRAME_LEN) != 0) die("the echo differs from the frame sent", i);
        free(c->hs);
        c->hs = NULL;
        c->got = 0;
        c->sent = 0;
        c->phase = RUNNING;
        (*up)++;
        return;
    }
    char *end = strstr(c->hs, "\r\n\r\n");
    if (!end) {
        if (c->got >= HANDSHAKE_BUF - 1) die("upgrade response too long", i);
        return;
    }
    if (strncmp(c->hs, "HTTP/1.1 101", 12) != 0) {
        char *eol = strstr(c->hs, "\r\n");
        if (eol) *eol = 0;
        fprintf(stderr, "epoll-client: connection %d: upgrade refused: %s\n", i, c->hs);
        exit(1);
    }
    if (end + 4 != c->hs + c->got) die("data after the 101 response", i);
    free(c->hs);
    c->hs = NULL;
    c->got = 0;
    c->sent = 0;
    c->phase = RUNNING;
    (*up)++;
}

/* Reads echo bytes; once the whole reply is in, counts it and sends the next frame. */
static void on_echo_readable(int i) {
    struct conn *c = &conns[i];
    unsigned char buf[64];
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n == 0) die("closed by the server", i);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        die_errno("recv", i);
    }
    if (c->got == 0 && !raw_mode && (buf[0] != 0x82 || (n > 1 && buf[1] != PAYLOAD_LEN)))
        die("the echo is not a 20-byte binary frame", i);
    if (c->got + (size_t)n > reply_len) die("more bytes than one echo (one message is in flight)", i);
    c->got += (uint16_t)n;
    if (c->got < reply_len) return;
    c->got = 0;
    if (counting) echoes++;
    all_echoes++;
    c->sent = 0;
    send_rest(i);
}

static void on_writable(int i) {
    if (send_rest(i)) modify(i, EPOLLIN);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: epoll-client HOST PORT CONNECTIONS SECONDS [--raw] [--warmup SECONDS]\n");
        return 2;
    }
    const char *host = argv[1], *port = argv[2];
    nconns = atoi(argv[3]);
    double seconds = atof(argv[4]), warmup = 0;
    for (int a = 5; a < argc; a++) {
        if (strcmp(argv[a], "--raw") == 0) raw_mode = 1;
        else if (strcmp(argv[a], "--warmup") == 0 && a + 1 < argc) warmup = atof(argv[++a]);
        else {
            fprintf(stderr, "epoll-client: unknown argument %s\n", argv[a]);
            return 2;
        }
    }
    if (nconns <= 0 || seconds <= 0) die("CONNECTIONS and SECONDS must be positive", -1);
    signal(SIGPIPE, SIG_IGN);

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "epoll-client: %s:%s: %s\n", host, port, gai_strerror(rc));
        return 1;
    }
    struct sockaddr_storage addr;
    socklen_t addrlen = ai->ai_addrlen;
    memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);

    /* The frame: FIN + binary, MASK + length 20, a fixed mask, the masked payload. */
    static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
    frame[0] = 0x82;
    frame[1] = 0x80 | PAYLOAD_LEN;
    memcpy(frame + 2, mask, 4);
    for (int k = 0; k < PAYLOAD_LEN; k++) frame[6 + k] = (unsigned char)('a' + k) ^ mask[k & 3];
    reply_len = raw_mode ? FRAME_LEN : WS_REPLY_LEN;
    request_len = (size_t)snprintf(request, sizeof request,
                                   "GET / HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\n"
                                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                   "Sec-WebSocket-Version: 13\r\n\r\n",
                                   host, port);

    conns = calloc((size_t)nconns, sizeof *conns);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!conns || epfd < 0) die_errno("set-up", -1);
    struct epoll_event events[MAX_EVENTS];

    /* Phase 1: open every connection, at most MAX_CONNECTING in progress at a time. */
    double t0 = now();
    int started = 0, up = 0;
    while (up < nconns) {
        while (started < nconns && started - up < MAX_CONNECTING) start_connect(started++, &addr, addrlen);
        int n = epoll_wait(epfd, events, MAX_EVENTS, 100);
        if (n < 0 && errno != EINTR) die_errno("epoll_wait", -1);
        for (int e = 0; e < n; e++) {
            int i = (int)events[e].data.u32;
            struct conn *c = &conns[i];
            if (c->phase == CONNECTING) on_connected(i);
            else if (c->phase == UPGRADING && (events[e].events & EPOLLOUT) && !(events[e].events & EPOLLIN))
                on_writable(i);
            else if (c->phase == UPGRADING) on_handshake_readable(i, &up);
            else die("data or a close from the server before the first message", i);
        }
        if (now() - t0 > CONNECT_TIMEOUT) {
            fprintf(stderr, "epoll-client: only %d of %d connections up after %.0f s\n", up, nconns,
                    CONNECT_TIMEOUT);
            return 1;
        }
    }
    double t_up = now();
    fprintf(stderr, "epoll-client: %d connections up in %.3f s (%s)\n", nconns, t_up - t0,
            raw_mode ? "raw TCP" : "WebSocket");

    /* Phase 2: closed loop, one message in flight per connection. */
    for (int i = 0; i < nconns; i++) {
        conns[i].sent = 0;
        send_rest(i);
    }
    double start = t_up, end = t_up + warmup + seconds;
    if (warmup <= 0) {
        counting = 1;
    }
    double t = now(), count_start = t;
    while (t < end) {
        int n = epoll_wait(epfd, events, MAX_EVENTS, 50);
        if (n < 0 && errno != EINTR) die_errno("epoll_wait", -1);
        for (int e = 0; e < n; e++) {
            int i = (int)events[e].data.u32;
            uint32_t ev = events[e].events;
            if (ev & EPOLLIN) on_echo_readable(i);
            else if (ev & EPOLLOUT) on_writable(i);
            else if (ev & (EPOLLERR | EPOLLHUP)) die("connection error", i);
        }
        t = now();
        if (!counting && t >= start + warmup) {
            counting = 1;
            count_start = t;
            end = t + seconds;
        }
    }
    double elapsed = t - count_start;
    fprintf(stderr, "epoll-client: %llu echoes in %.3f s\n", echoes, elapsed);
    printf("echoes_per_sec=%.0f\n", (double)echoes / elapsed);
    /* The process's CPU (user + system, connect phase included) over every echo it received,
     * the same basis as wsbench's client.cpu_us_per_round_trip. */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    if (all_echoes > 0)
        printf("cpu_us_per_echo=%.3f user_s=%.3f system_s=%.3f\n", (user + sys) * 1e6 / (double)all_echoes, user,
               sys);
    fflush(stdout);
    return 0;
}
