/*
 * Why this exists: it is the floor for a client driving LARGE messages over TLS on this
 * machine, the yardstick bench/tls-large.sh sets beside `wsbench run throughput wss://…
 * --frames-per-send 1`, and the load that drives the TLS floor server (bench/peers/
 * tls-floor-server.c). It does the least such a client can do: TLS with OpenSSL 3 (no
 * WebSocket framing, no masking; TLS 1.3 with TLS_AES_256_GCM_SHA384, the suite rustls
 * negotiates by default; the server's certificate is not checked, as `wsbench run --insecure`
 * does not), one thread, level-triggered epoll, nonblocking sockets with TCP_NODELAY; every
 * connection sends one MESSAGE-byte block from one buffer shared by all connections
 * (SSL_write encrypts straight from it), reads MESSAGE bytes back with SSL_read into one 1 MiB
 * scratch buffer (read and dropped: no check, no copy), then sends the next: one message in
 * flight per connection, reading while it sends (the echo starts before the message is all
 * sent). OpenSSL reads ahead into a 64 KiB record buffer. The handshakes are done before the
 * warm-up.
 *
 * Usage: tls-floor-client HOST PORT CONNECTIONS MESSAGE SECONDS [--warmup SECONDS]
 *                         [--server-pid PID] [--ktls]
 *   CONNECTIONS 1 to 10000, MESSAGE 1 to 1073741824 bytes, SECONDS > 0 (at most 3600).
 *   Once all connections are up it runs --warmup seconds (default 0) without counting, then
 *   measures for SECONDS and prints one line on stdout:
 *     round_trips_per_sec=R mb_per_sec=M cpu_us_per_mb=C server_cpu_us_per_mb=S round_trips=N seconds=T
 *   R: messages whose whole echo came back in the window, per second; M: echoed plaintext
 *   bytes received in the window ÷ 1e6, per second; C: this process's CPU (getrusage, user +
 *   system) over the window per MB received in it; S: the same for process PID (from
 *   /proc/PID/stat, clock ticks), or "-" without --server-pid. --ktls asks OpenSSL for kernel
 *   TLS and says on stderr whether the kernel took each direction of the first connection.
 *   Details go to stderr. Exit 1 on any error (refused, TLS failure, closed by the server,
 *   more bytes than were sent), 2 on bad arguments.
 *
 * Build: cc -O2 -Wall -o tls-floor-client tls-floor-client.c -lssl -lcrypto
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
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

#define PROGRAM "tls-floor-client"
#include "floor-client.h"

#define SCRATCH (1 << 20)
/* OpenSSL's record buffer: it reads ahead this much at most. Larger costs more: OpenSSL moves
 * the partial record left at its end to its start before each read (a 1 MiB one spent 44 % of
 * the server's CPU in memmove); 16 KiB to 256 KiB measured alike here. */
#define READ_AHEAD (64 * 1024)
#define MAX_EVENTS 256
#define CONNECT_TIMEOUT 30.0

struct conn {
    int fd;
    SSL *ssl;
    size_t sent, got; /* plaintext bytes of the message in flight written, and of its echo read */
    int write_blocked; /* the last SSL call wants the socket writable */
    uint32_t events;   /* what the connection waits for now */
};

static struct conn *conns;
static int nconns, epfd;
static size_t message;
static char *block;
static char scratch[SCRATCH];
static unsigned long long round_trips, bytes_in; /* counted from the window's start */

/* After an SSL call on connection i returned r <= 0: 1 if it only has to wait for the socket
 * (write_blocked says which way), else it dies naming the cause. */
static int wait_or_die(int i, int r, const char *call) {
    int err = SSL_get_error(conns[i].ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        conns[i].write_blocked = err == SSL_ERROR_WANT_WRITE;
        return 1;
    }
    char msg[320], why[256] = "";
    if (err == SSL_ERROR_ZERO_RETURN) snprintf(why, sizeof why, "closed by the server");
    else if (err == SSL_ERROR_SYSCALL) snprintf(why, sizeof why, "%s", errno ? strerror(errno) : "closed by the server");
    else ERR_error_string_n(ERR_get_error(), why, sizeof why);
    snprintf(msg, sizeof msg, "%s: %s", call, why);
    die(msg, i);
    return 0;
}

static void want(int i) {
    struct conn *c = &conns[i];
    uint32_t events = EPOLLIN | (c->sent < message || c->write_blocked ? EPOLLOUT : 0);
    if (c->events == events) return;
    struct epoll_event ev = {.events = events, .data.u32 = (uint32_t)i};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die_errno("epoll_ctl", i);
    c->events = events;
}

/* Writes what TLS takes of the message in flight. */
static void on_writable(int i) {
    struct conn *c = &conns[i];
    c->write_blocked = 0;
    while (c->sent < message) {
        size_t left = message - c->sent;
        int r = SSL_write(c->ssl, block + c->sent, left > INT32_MAX ? INT32_MAX : (int)left);
        if (r <= 0) {
            wait_or_die(i, r, "SSL_write");
            break;
        }
        c->sent += (size_t)r;
    }
}

/* Reads every whole record there is (OpenSSL's read-ahead buffer holds records epoll cannot
 * see); once a whole echo is in, counts it and sends the next message. */
static void on_readable(int i, int counting) {
    struct conn *c = &conns[i];
    for (;;) {
        size_t room = message - c->got < SCRATCH ? message - c->got : SCRATCH;
        int r = SSL_read(c->ssl, scratch, (int)room);
        if (r <= 0) {
            wait_or_die(i, r, "SSL_read");
            return;
        }
        if (c->got + (size_t)r > c->sent) die("more bytes back than were sent", i);
        c->got += (size_t)r;
        if (counting) bytes_in += (unsigned long long)r;
        if (c->got < message) continue;
        if (counting) round_trips++;
        c->got = c->sent = 0;
        on_writable(i);
    }
}

static SSL_CTX *context(int ktls) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_ciphersuites(ctx, "TLS_AES_256_GCM_SHA384"))
        die("cannot set up TLS", -1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, READ_AHEAD);
    if (ktls) SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
    return ctx;
}

/* Connects every connection (TCP, then the TLS handshake, blocking, with a timeout), then
 * makes them nonblocking. */
static void connect_all(const char *host, const char *port, SSL_CTX *ctx, int ktls) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "tls-floor-client: %s:%s: %s\n", host, port, gai_strerror(rc));
        exit(1);
    }
    int one = 1;
    for (int i = 0; i < nconns; i++) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) die_errno("socket", i);
        struct timeval tv = {.tv_sec = (time_t)CONNECT_TIMEOUT};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) die_errno("connect", i);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        SSL *ssl = SSL_new(ctx);
        if (!ssl || !SSL_set_fd(ssl, fd)) die("SSL_new", i);
        conns[i] = (struct conn){.fd = fd, .ssl = ssl, .events = EPOLLIN | EPOLLOUT};
        int r = SSL_connect(ssl);
        if (r != 1) {
            errno = 0;
            wait_or_die(i, r, "TLS handshake");
            die("TLS handshake: timed out", i);
        }
        if (i == 0)
            fprintf(stderr, "tls-floor-client: %s %s, %s%s%s%s\n", SSL_get_version(ssl), SSL_get_cipher_name(ssl),
                    ktls ? "kTLS send " : "kTLS off", ktls ? (BIO_get_ktls_send(SSL_get_wbio(ssl)) ? "yes" : "no") : "",
                    ktls ? ", receive " : "", ktls ? (BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? "yes" : "no") : "");
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die_errno("set nonblocking", i);
        struct epoll_event ev = {.events = conns[i].events, .data.u32 = (uint32_t)i};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die_errno("epoll_ctl", i);
    }
    freeaddrinfo(ai);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: tls-floor-client HOST PORT CONNECTIONS MESSAGE SECONDS [--warmup SECONDS] [--server-pid PID] [--ktls]\n");
        return 2;
    }
    nconns = (int)number(argv[3], "CONNECTIONS", 1, 10000);
    message = (size_t)number(argv[4], "MESSAGE", 1, 1 << 30);
    double seconds = number(argv[5], "SECONDS", 0.001, 3600), warmup = 0;
    long server_pid = 0;
    int ktls = 0;
    for (int a = 6; a < argc; a++) {
        if (strcmp(argv[a], "--warmup") == 0 && a + 1 < argc) warmup = number(argv[++a], "--warmup", 0, 3600);
        else if (strcmp(argv[a], "--server-pid") == 0 && a + 1 < argc) server_pid = (long)number(argv[++a], "--server-pid", 1, 1 << 30);
        else if (strcmp(argv[a], "--ktls") == 0) ktls = 1;
        else {
            fprintf(stderr, "tls-floor-client: unknown argument %s\n", argv[a]);
            return 2;
        }
    }
    if (server_pid && cpu_of(server_pid) < 0) {
        fprintf(stderr, "tls-floor-client: cannot read /proc/%ld/stat (is --server-pid a running process?)\n", server_pid);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    block = malloc(message);
    conns = calloc((size_t)nconns, sizeof *conns);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!block || !conns || epfd < 0) die_errno("set-up", -1);
    memset(block, 'x', message); /* touch every page before the window */
    connect_all(argv[1], argv[2], context(ktls), ktls);

    /* Warm-up, then the window: the same loop, counting only inside the window. */
    struct epoll_event events[MAX_EVENTS];
    double t = now(), until = t + warmup, cpu0 = 0, server0 = 0, start = t;
    int counting = 0;
    for (int i = 0; i < nconns; i++) {
        on_writable(i);
        want(i);
    }
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
            if ((ev & EPOLLOUT) && (conns[i].sent < message || conns[i].write_blocked)) on_writable(i);
            want(i);
        }
        t = now();
    }
    double cpu = cpu_self() - cpu0, server = server_pid ? cpu_of(server_pid) - server0 : 0, elapsed = t - start;
    if (server_pid && server < 0) die("the server process went away during the window", -1);
    double mb = (double)bytes_in / 1e6;
    fprintf(stderr, "tls-floor-client: %d connections, %zu-byte messages: %llu round trips, %.1f MB back in %.3f s; CPU %.3f s here, %.3f s in the server\n",
            nconns, message, round_trips, mb, elapsed, cpu, server);
    if (bytes_in == 0) die("no echo came back in the window", -1);
    char server_field[64] = "-";
    if (server_pid) snprintf(server_field, sizeof server_field, "%.1f", server * 1e6 / mb);
    printf("round_trips_per_sec=%.3f mb_per_sec=%.1f cpu_us_per_mb=%.1f server_cpu_us_per_mb=%s round_trips=%llu seconds=%.3f\n",
           (double)round_trips / elapsed, mb / elapsed, cpu * 1e6 / mb, server_field, round_trips, elapsed);
    return 0;
}
