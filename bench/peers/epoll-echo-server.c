/*
 * Why this exists: it is the practical limit for an echo SERVER on this machine, the
 * yardstick for `wsbench serve` (goal: wsbench serve >= 0.95x this when both are driven by
 * bench/peers/epoll-client.c). It does the least a server can do: a raw TCP echo (no
 * WebSocket parsing, no unmasking), one thread, level-triggered epoll, nonblocking sockets
 * with TCP_NODELAY, one shared read buffer and no per-connection memory unless a write is
 * partial.
 *
 * Usage: epoll-echo-server PORT   (0 picks a free port)
 *   Listens on 127.0.0.1:PORT and prints `listening on tcp://127.0.0.1:PORT` once ready.
 *   Runs until killed.
 *
 * Build: cc -O2 -o epoll-echo-server epoll-echo-server.c
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

#define MAX_EVENTS 1024
#define READ_BUF (64 * 1024)

/* Bytes read but not yet written back (only when the client does not read fast enough). */
struct pending {
    char *data;
    size_t len, off;
};

static struct pending *pending; /* indexed by fd */
static int epfd;

static void close_conn(int fd) {
    free(pending[fd].data);
    pending[fd] = (struct pending){0};
    close(fd); /* also removes it from the epoll set */
}

static void set_events(int fd, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.fd = fd};
    epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}

/* Writes buf; keeps what does not fit and waits for EPOLLOUT. Returns -1 if the conn closed. */
static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            close_conn(fd);
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    if (len > 0) {
        struct pending *p = &pending[fd];
        p->data = malloc(len);
        if (!p->data) {
            close_conn(fd);
            return -1;
        }
        memcpy(p->data, buf, len);
        p->len = len;
        p->off = 0;
        set_events(fd, EPOLLOUT); /* stop reading until the backlog is written */
    }
    return 0;
}

static void on_writable(int fd) {
    struct pending *p = &pending[fd];
    while (p->off < p->len) {
        ssize_t n = send(fd, p->data + p->off, p->len - p->off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            close_conn(fd);
            return;
        }
        p->off += (size_t)n;
    }
    free(p->data);
    *p = (struct pending){0};
    set_events(fd, EPOLLIN);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: epoll-echo-server PORT   (0 picks a free port)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    size_t max_fds = rl.rlim_cur == RLIM_INFINITY ? 1048576 : (size_t)rl.rlim_cur;
    pending = calloc(max_fds, sizeof *pending);

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 65535) < 0) {
        fprintf(stderr, "epoll-echo-server: cannot listen on 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
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
    static char buf[READ_BUF];

    for (;;) {
        int n = epoll_wait(epfd, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("epoll-echo-server: epoll_wait");
            return 1;
        }
        for (int e = 0; e < n; e++) {
            int fd = events[e].data.fd;
            if (fd == lfd) {
                for (;;) {
                    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (cfd < 0) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
                            perror("epoll-echo-server: accept");
                            if (errno == EMFILE || errno == ENFILE) usleep(10000);
                        }
                        break;
                    }
                    if ((size_t)cfd >= max_fds) {
                        close(cfd);
                        continue;
                    }
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = cfd};
                    epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev);
                }
                continue;
            }
            if (events[e].events & EPOLLOUT) {
                on_writable(fd);
                continue;
            }
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r > 0) write_all(fd, buf, (size_t)r);
            else if (r == 0 || (errno != EAGAIN && errno != EINTR)) close_conn(fd);
        }
    }
}
