/*
 * Why this exists: it is the floor for a server echoing LARGE messages on this machine, the
 * yardstick bench/large.sh sets beside `wsbench serve` (goal: serve's CPU per MB within 1.3x of
 * this). It does the least such a server can do: a raw TCP echo (no WebSocket framing, no
 * unmasking, no message assembly), one thread, level-triggered epoll, nonblocking sockets with
 * TCP_NODELAY, and per connection one buffer of up to 1 MiB, allocated on its first read and
 * reused: it reads up to 1 MiB, writes that back, and reads again only once all of it is
 * written (a partial write keeps its rest in place and waits for EPOLLOUT). Every byte is
 * copied in and out by the kernel once and never by this program. (bench/peers/
 * epoll-echo-server.c is the small-message floor: 64 KiB reads into one shared buffer.)
 *
 * Usage: large-floor-server PORT [READ_BYTES]   (0 picks a free port; READ_BYTES: the most one
 *   read takes, default 1048576, 4096 to 67108864)
 *   Listens on 127.0.0.1:PORT and prints `listening on tcp://127.0.0.1:PORT` once ready.
 *   Runs until killed.
 *
 * Build: cc -O2 -Wall -o large-floor-server large-floor-server.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 256

/* One connection's buffer: data[off..len) is read but not yet written back. */
struct conn {
    char *data;
    size_t len, off;
};

static struct conn *conns; /* indexed by fd */
static size_t read_bytes = 1 << 20;
static int epfd;

static void close_conn(int fd) {
    free(conns[fd].data);
    conns[fd] = (struct conn){0};
    close(fd); /* also removes it from the epoll set */
}

static void set_events(int fd, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.fd = fd};
    epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}

/* Writes what is pending. Returns 1 when all of it is written, 0 when the socket is full
 * (EPOLLOUT is then armed, reading stops), -1 when the connection closed. */
static int flush(int fd, int armed) {
    struct conn *c = &conns[fd];
    while (c->off < c->len) {
        ssize_t n = send(fd, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!armed) set_events(fd, EPOLLOUT);
                return 0;
            }
            close_conn(fd);
            return -1;
        }
        c->off += (size_t)n;
    }
    c->off = c->len = 0;
    if (armed) set_events(fd, EPOLLIN);
    return 1;
}

static void on_readable(int fd) {
    struct conn *c = &conns[fd];
    if (!c->data && !(c->data = malloc(read_bytes))) {
        close_conn(fd);
        return;
    }
    ssize_t r = recv(fd, c->data, read_bytes, 0);
    if (r > 0) {
        c->len = (size_t)r;
        c->off = 0;
        flush(fd, 0);
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_conn(fd);
    }
}

static void on_accept(int lfd, size_t max_fds) {
    int one = 1;
    for (;;) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
                perror("large-floor-server: accept");
                if (errno == EMFILE || errno == ENFILE) usleep(10000);
            }
            return;
        }
        if ((size_t)cfd >= max_fds) {
            close(cfd);
            continue;
        }
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct epoll_event cev = {.events = EPOLLIN, .data.fd = cfd};
        epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev);
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: large-floor-server PORT [READ_BYTES]   (0 picks a free port)\n");
        return 2;
    }
    if (argc == 3) {
        char *end;
        unsigned long long v = strtoull(argv[2], &end, 10);
        if (*end || v < 4096 || v > (64u << 20)) {
            fprintf(stderr, "large-floor-server: READ_BYTES must be 4096 to 67108864, not %s\n", argv[2]);
            return 2;
        }
        read_bytes = (size_t)v;
    }
    signal(SIGPIPE, SIG_IGN);
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
        fprintf(stderr, "large-floor-server: cannot listen on 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    printf("listening on tcp://127.0.0.1:%u\n", ntohs(addr.sin_port));
    fflush(stdout);

    epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(epfd, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("large-floor-server: epoll_wait");
            return 1;
        }
        for (int e = 0; e < n; e++) {
            int fd = events[e].data.fd;
            if (fd == lfd) on_accept(lfd, max_fds);
            else if (conns[fd].off < conns[fd].len) flush(fd, 1);
            else on_readable(fd);
        }
    }
}
