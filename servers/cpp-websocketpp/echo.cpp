// Why this exists: WebSocket++ 0.8.2 (Boost.Asio, no TLS) as a WebSocket echo server for
// `wsbench compare`. One thread runs the io_service, like the seeds' single-threaded servers.
// Messages are echoed with their own opcode; WebSocket++ answers pings with pongs, completes
// the close handshake and fails (closes) only the connection that sent a bad frame. A plain
// HTTP GET gets 200 (for the rtt scenario's HTTP row).
//
// Logging is off (WebSocket++ logs every connection by default), the listen backlog is raised
// before listen(), and messages up to 128 MiB are accepted (the default is 32 MB).
//
// Usage: build/echo PORT   (0 picks a free port)
// Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.

#include <cstdio>
#include <cstdlib>
#include <string>

#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>

using server = websocketpp::server<websocketpp::config::asio>;

static const size_t max_message_bytes = size_t(128) << 20;
static const int listen_backlog = 4096;

int main(int argc, char **argv) {
    char *end = nullptr;
    long port = argc == 2 ? std::strtol(argv[1], &end, 10) : -1;
    if (argc != 2 || *end != '\0' || port < 0 || port > 65535) {
        std::fprintf(stderr, "usage: %s PORT   (0 picks a free port)\n", argv[0]);
        return 2;
    }
    server echo;
    echo.clear_access_channels(websocketpp::log::alevel::all);
    echo.clear_error_channels(websocketpp::log::elevel::all);
    echo.init_asio();
    echo.set_reuse_addr(true);
    echo.set_listen_backlog(listen_backlog);
    echo.set_max_message_size(max_message_bytes);
    echo.set_socket_init_handler([](websocketpp::connection_hdl, boost::asio::ip::tcp::socket &s) {
        boost::system::error_code ignored;
        s.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    });
    echo.set_message_handler([&echo](websocketpp::connection_hdl hdl, server::message_ptr msg) {
        websocketpp::lib::error_code ignored; // the peer may already be gone
        echo.send(hdl, msg->get_payload(), msg->get_opcode(), ignored);
    });
    echo.set_http_handler([&echo](websocketpp::connection_hdl hdl) {
        server::connection_ptr con = echo.get_con_from_hdl(hdl);
        con->set_status(websocketpp::http::status_code::ok);
        con->replace_header("Content-Type", "text/plain");
        con->set_body("ok\n");
    });

    websocketpp::lib::error_code ec;
    echo.listen("127.0.0.1", std::to_string(port), ec);
    if (!ec) echo.start_accept(ec);
    if (ec) {
        std::fprintf(stderr, "cpp-websocketpp: cannot listen on 127.0.0.1:%ld: %s\n", port, ec.message().c_str());
        return 1;
    }
    boost::system::error_code asio_ec;
    std::printf("listening on ws://127.0.0.1:%u\n", unsigned(echo.get_local_endpoint(asio_ec).port()));
    std::fflush(stdout);
    echo.run();
    return 0;
}
