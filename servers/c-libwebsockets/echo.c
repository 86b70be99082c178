/*
 * Why this exists: libwebsockets 4.1 (Debian's libwebsockets-dev) as a WebSocket echo server
 * for `wsbench compare`. One lws_service loop on one thread, like the seeds' servers.
 *
 * lws hands a message over in chunks: they are collected until lws_is_final_fragment() and
 * lws_remaining_packet_payload() == 0, then the whole message is queued and written back with
 * its own opcode, only from LWS_CALLBACK_SERVER_WRITEABLE and with LWS_PRE bytes of headroom
 * (lws writes the frame header there). lws answers pings, completes the close handshake and
 * checks UTF-8 (LWS_SERVER_OPTION_VALIDATE_UTF8); a bad frame closes only its connection.
 * A plain HTTP GET gets 200 (for the rtt scenario's HTTP row).
 *
 * Messages above 128 MiB are refused with 1009. While a connection has more than 32 MiB of
 * echoes waiting to be written, reading from it pauses (so a fast sender cannot grow memory
 * without bound).
 *
 * Usage: build/echo PORT   (0 picks a free port)
 * Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.
 */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGE_BYTES ((size_t)128 << 20)
#define MAX_QUEUED_BYTES ((size_t)32 << 20)

/* One complete message waiting to be echoed; payload starts at data + LWS_PRE. */
struct echo_msg {
    struct echo_msg *next;
    size_t len;
    int binary;
    unsigned char data[];
};

struct session {
    struct echo_msg *incoming; /* the message being collected */
    size_t incoming_cap;
    struct echo_msg *head, *tail; /* echoes waiting for SERVER_WRITEABLE */
    size_t queued_bytes;
    int rx_paused;
};

static volatile sig_atomic_t stopping;
static struct lws_context *context;

static void on_sigterm(int sig) {
    (void)sig;
    stopping = 1;
    lws_cancel_service(context);
}

static void free_session(struct session *s) {
    free(s->incoming);
    s->incoming = NULL;
    while (s->head) {
        struct echo_msg *m = s->head;
        s->head = m->next;
        free(m);
    }
    s->tail = NULL;
    s->queued_bytes = 0;
}

/* Appends one chunk to the message being collected; 0 on success, -1 if it is too large. */
static int collect(struct session *s, const void *in, size_t len, int binary) {
    size_t have = s->incoming ? s->incoming->len : 0;
    if (have + len > MAX_MESSAGE_BYTES)
        return -1;
    if (!s->incoming || have + len > s->incoming_cap) {
        size_t cap = s->incoming ? s->incoming_cap * 2 : 256;
        while (cap < have + len)
            cap *= 2;
        struct echo_msg *grown = realloc(s->incoming, sizeof(*grown) + LWS_PRE + cap);
        if (!grown)
            return -1;
        if (!s->incoming) {
            grown->len = 0;
            grown->next = NULL;
            grown->binary = binary;
        }
        s->incoming = grown;
        s->incoming_cap = cap;
    }
    memcpy(s->incoming->data + LWS_PRE + s->incoming->len, in, len);
    s->incoming->len += len;
    return 0;
}

static int http_ok(struct lws *wsi) {
    unsigned char buf[LWS_PRE + 512];
    unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, "text/plain", 3, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return 1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int http_body(struct lws *wsi) {
    unsigned char buf[LWS_PRE + 3];
    memcpy(buf + LWS_PRE, "ok\n", 3);
    if (lws_write(wsi, buf + LWS_PRE, 3, LWS_WRITE_HTTP_FINAL) != 3)
        return 1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int callback_echo(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct session *s = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return http_ok(wsi);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return http_body(wsi);
    case LWS_CALLBACK_ESTABLISHED:
        memset(s, 0, sizeof(*s));
        return 0;
    case LWS_CALLBACK_RECEIVE:
        if (collect(s, in, len, lws_frame_is_binary(wsi))) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
            return -1;
        }
        if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
            struct echo_msg *m = s->incoming;
            s->incoming = NULL;
            s->incoming_cap = 0;
            if (s->tail)
                s->tail->next = m;
            else
                s->head = m;
            s->tail = m;
            s->queued_bytes += m->len;
            if (s->queued_bytes > MAX_QUEUED_BYTES && !s->rx_paused) {
                s->rx_paused = 1;
                lws_rx_flow_control(wsi, 0);
            }
            lws_callback_on_writable(wsi);
        }
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        struct echo_msg *m = s->head;
        if (!m)
            return 0;
        int n = lws_write(wsi, m->data + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
        if (n < (int)m->len)
            return -1;
        s->head = m->next;
        if (!s->head)
            s->tail = NULL;
        s->queued_bytes -= m->len;
        free(m);
        if (s->rx_paused && s->queued_bytes <= MAX_QUEUED_BYTES / 2) {
            s->rx_paused = 0;
            lws_rx_flow_control(wsi, 1);
        }
        if (s->head)
            lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_CLOSED:
        free_session(s);
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols protocols[] = {
    {"echo", callback_echo, sizeof(struct session), 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

int main(int argc, char **argv) {
    char *end = NULL;
    long port = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (argc != 2 || *end != '\0' || port < 0 || port > 65535) {
        fprintf(stderr, "usage: %s PORT   (0 picks a free port)\n", argv[0]);
        return 2;
    }
    lws_set_log_level(LLL_ERR, NULL);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.port = (int)port;
    info.iface = "127.0.0.1";
    info.protocols = protocols;
    info.gid = -1;
    info.uid = -1;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_DISABLE_IPV6;
    info.count_threads = 1;
    context = lws_create_context(&info);
    if (!context) {
        fprintf(stderr, "c-libwebsockets: cannot listen on 127.0.0.1:%ld\n", port);
        return 1;
    }
    struct lws_vhost *vhost = lws_get_vhost_by_name(context, "default");
    printf("listening on ws://127.0.0.1:%d\n", vhost ? lws_get_vhost_listen_port(vhost) : (int)port);
    fflush(stdout);

    signal(SIGTERM, on_sigterm);
    signal(SIGINT, on_sigterm);
    while (!stopping && lws_service(context, 0) >= 0) {
    }
    lws_context_destroy(context);
    return 0;
}
