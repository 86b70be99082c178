/*
 * Why this exists: it is the floor for a server echoing LARGE messages over TLS on this
 * machine, the yardstick bench/tls-large.sh sets beside `wsbench serve --tls` (as
 * large-floor-server.c is for plain TCP). It does the least a TLS server can do: a TLS echo (no
 * WebSocket framing, no unmasking, no message assembly) with OpenSSL 3, one thread,
 * level-triggered epoll, nonblocking sockets with TCP_NODELAY, TLS 1.3 with the cipher suite
 * rustls negotiates by default with `wsbench run` (TLS_AES_256_GCM_SHA384), and per connection
 * one buffer of up to 1 MiB, allocated on its first read and reused: it reads up to 1 MiB of
 * plaintext with SSL_read (record by record, until the buffer is full or no whole record is
 * left), writes it back with SSL_write (partial writes kept, the rest written on EPOLLOUT), and
 * reads again only once all of it is written. OpenSSL reads ahead into a 64 KiB record buffer
 * (few read syscalls), decrypts there and copies the plaintext out; SSL_write copies the
 * plaintext into its record buffer, encrypts it there and sends each record. So besides the
 * kernel's two copies and the cipher's two passes, OpenSSL itself copies each byte about three
 * times (a profile: 17 % of this server's CPU in memmove); a floor for TLS as servers commonly
 * do it, not the least TLS could cost.
 *
 * With --ktls it asks OpenSSL for kernel TLS (SSL_OP_ENABLE_KTLS: the kernel encrypts on send
 * and decrypts on receive, after the handshake) and prints on stderr, for the first connection
 * whose handshake completes, whether the kernel took each direction:
 *   tls-floor-server: TLSv1.3 TLS_AES_256_GCM_SHA384, kTLS send yes|no, receive yes|no
 * (without --ktls the same line says "kTLS off").
 *
 * Usage: tls-floor-server PORT CERT KEY [--ktls]   (0 picks a free port; CERT, KEY: PEM files)
 *   Listens on 127.0.0.1:PORT and prints `listening on tls://127.0.0.1:PORT` once ready.
 *   Runs until killed. Exit 2 on bad arguments, 1 if it cannot listen or load CERT/KEY.
 *
 * Build: cc -O2 -Wall -o tls-floor-server tls-floor-server.c -lssl -lcrypto
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define BUFFER (1 << 20)
/* OpenSSL's record buffer: it reads ahead this much at most. Larger costs more: OpenSSL moves
 * the partial record left at its end to its start before each read (a 1 MiB one spent 44 % of
 * the server's CPU in memmove); 16 KiB to 256 KiB measured alike here. */
#define READ_AHEAD (64 * 1024)

/* One connection: data[off..len) is plaintext read but not yet written back. */
struct conn {
    SSL *ssl;
    char *data;
    size_t len, off;
    uint32_t events; /* what it waits for now */
};

static struct conn *conns; /* indexed by fd */
static int epfd, ktls, reported;

static void close_conn(int fd) {
    SSL_free(conns[fd].ssl);
    free(conns[fd].data);
    conns[fd] = (struct conn){0};
    close(fd); /* also removes it from the epoll set */
}

static void want(int fd, uint32_t events) {
    if (conns[fd].events == events) return;
    struct epoll_event ev = {.events = events, .data.fd = fd};
    epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
    conns[fd].events = events;
}

/* After an SSL call returned r <= 0: waits for what OpenSSL wants (returns 0), or closes the
 * connection (returns -1). */
static int blocked(int fd, int r) {
    switch (SSL_get_error(conns[fd].ssl, r)) {
    case SSL_ERROR_WANT_READ: want(fd, EPOLLIN); return 0;
    case SSL_ERROR_WANT_WRITE: want(fd, EPOLLOUT); return 0;
    default: ERR_clear_error(); close_conn(fd); return -1;
    }
}

static void report(SSL *ssl) {
    reported = 1;
    char how[64] = "kTLS off";
    if (ktls)
        snprintf(how, sizeof how, "kTLS send %s, receive %s", BIO_get_ktls_send(SSL_get_wbio(ssl)) ? "yes" : "no",
                 BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? "yes" : "no");
    fprintf(stderr, "tls-floor-server: %s %s, %s\n", SSL_get_version(ssl), SSL_get_cipher_name(ssl), how);
}

/* Echoes what it can: writes what is pending, then reads up to BUFFER bytes of plaintext, and
 * so on until OpenSSL needs the socket to become readable or writable. */
static void service(int fd) {
    struct conn *c = &conns[fd];
    for (;;) {
        while (c->off < c->len) {
            int r = SSL_write(c->ssl, c->data + c->off, (int)(c->len - c->off));
            if (r <= 0) {
                blocked(fd, r);
                return;
            }
            c->off += (size_t)r;
        }
        c->off = c->len = 0;
        if (!c->data && !(c->data = malloc(BUFFER))) {
            close_conn(fd);
            return;
        }
        int r = 1;
        while (c->len < BUFFER && (r = SSL_read(c->ssl, c->data + c->len, (int)(BUFFER - c->len))) > 0)
            c->len += (size_t)r;
        if (!reported && SSL_is_init_finished(c->ssl)) report(c->ssl);
        if (c->len == 0) {
            blocked(fd, r);
            return;
        }
    }
}

static void on_accept(int lfd, size_t max_fds, SSL_CTX *ctx) {
    int one = 1;
    for (;;) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
                perror("tls-floor-server: accept");
                if (errno == EMFILE || errno == ENFILE) usleep(10000);
            }
            return;
        }
        SSL *ssl = (size_t)cfd < max_fds ? SSL_new(ctx) : NULL;
        if (!ssl || !SSL_set_fd(ssl, cfd)) {
            SSL_free(ssl);
            close(cfd);
            continue;
        }
        SSL_set_accept_state(ssl);
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conns[cfd] = (struct conn){.ssl = ssl, .events = EPOLLIN};
        struct epoll_event cev = {.events = EPOLLIN, .data.fd = cfd};
        epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev);
    }
}

static SSL_CTX *context(const char *cert, const char *key) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
        !SSL_CTX_set_ciphersuites(ctx, "TLS_AES_256_GCM_SHA384") ||
        SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        char why[256];
        ERR_error_string_n(ERR_get_error(), why, sizeof why);
        fprintf(stderr, "tls-floor-server: cannot set up TLS with %s and %s: %s\n", cert, key, why);
        exit(1);
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, READ_AHEAD);
    SSL_CTX_set_num_tickets(ctx, 0);
    if (ktls) SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
    return ctx;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[4], "--ktls") == 0) ktls = 1;
    else if (argc != 4) {
        fprintf(stderr, "usage: tls-floor-server PORT CERT KEY [--ktls]   (0 picks a free port)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    SSL_CTX *ctx = context(argv[2], argv[3]);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    size_t max_fds = rl.rlim_cur == RLIM_INFINITY ? 1048576 : (size_t)rl.rlim_cur;
    conns = calloc(max_fds, sizeof *conns);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!conns || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 4096) < 0) {
        fprintf(stderr, "tls-floor-server: cannot listen on 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    printf("listening on tls://127.0.0.1:%u\n", ntohs(addr.sin_port));
    fflush(stdout);

    epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(epfd, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("tls-floor-server: epoll_wait");
            return 1;
        }
        for (int e = 0; e < n; e++) {
            int fd = events[e].data.fd;
            if (fd == lfd) on_accept(lfd, max_fds, ctx);
            else if (conns[fd].ssl) service(fd);
        }
    }
}
