/* bench/peers/uws-echo/EchoServer.cpp: uWebSockets' own examples/EchoServer.cpp (uWebSockets
 * 66dcff3dd48f0c19dd1703426365d062039321d0), the yardstick bench/large.sh sets beside `wsbench
 * serve` for large messages: the library's author's echo server, built here from source (no
 * package of it runs on this machine). Changed from upstream, and only this:
 *   - the port comes from argv[1] (0 picks a free port), it listens on 127.0.0.1 only, prints
 *     "Listening on port N" with the port it got, and exits 1 if it cannot listen;
 *   - maxPayloadLength and maxBackpressure raised from 100 MiB to 128 MiB, so that a 100 MiB
 *     (104,857,600-byte) message and its echo fit with room to spare, as in uWebSockets' "huge
 *     message" benchmark;
 *   - compression off (upstream asks for dedicated permessage-deflate; the benchmark measures
 *     plain echo, and wsbench does not offer the extension);
 *   - idleTimeout 960 s (the most uWS allows) instead of 16, so that no slow round trip of a
 *     large message on a busy machine closes the connection.
 *
 * Usage: uws-echo PORT
 * Build: bench/peers/uws-echo/build.sh (g++ -O3, C++20, no SSL; into bench/.build/)
 */
/* We simply call the root header file "App.h", giving you uWS::App and uWS::SSLApp */
#include "App.h"

#include <cstdlib>

/* This is a simple WebSocket echo server example.
 * You may compile it with "WITH_OPENSSL=1 make" or with "make" */

int main(int argc, char **argv) {
    if (argc != 2) {
        std::cerr << "usage: uws-echo PORT   (0 picks a free port)" << std::endl;
        return 2;
    }
    int port = std::atoi(argv[1]);
    /* ws->getUserData returns one of these */
    struct PerSocketData {
        /* Fill with user data */
    };

    /* Keep in mind that uWS::SSLApp({options}) is the same as uWS::App() when compiled without SSL support.
     * You may swap to using uWS:App() if you don't need SSL */
    uWS::App({
        /* There are example certificates in uWebSockets.js repo */
        .key_file_name = "misc/key.pem",
        .cert_file_name = "misc/cert.pem",
        .passphrase = "1234"
    }).ws<PerSocketData>("/*", {
        /* Settings */
        .compression = uWS::DISABLED,
        .maxPayloadLength = 128 * 1024 * 1024,
        .idleTimeout = 960,
        .maxBackpressure = 128 * 1024 * 1024,
        .closeOnBackpressureLimit = false,
        .resetIdleTimeoutOnSend = false,
        .sendPingsAutomatically = true,
        /* Handlers */
        .upgrade = nullptr,
        .open = [](auto */*ws*/) {
            /* Open event here, you may access ws->getUserData() which points to a PerSocketData struct */

        },
        .message = [](auto *ws, std::string_view message, uWS::OpCode opCode) {
            /* This is the opposite of what you probably want; compress if message is LARGER than 16 kb
             * the reason we do the opposite here; compress if SMALLER than 16 kb is to allow for 
             * benchmarking of large message sending without compression */

             /* Never mind, it changed back to never compressing for now */
            ws->send(message, opCode, false);
        },
        .dropped = [](auto */*ws*/, std::string_view /*message*/, uWS::OpCode /*opCode*/) {
            /* A message was dropped due to set maxBackpressure and closeOnBackpressureLimit limit */
        },
        .drain = [](auto */*ws*/) {
            /* Check ws->getBufferedAmount() here */
        },
        .ping = [](auto */*ws*/, std::string_view) {
            /* Not implemented yet */
        },
        .pong = [](auto */*ws*/, std::string_view) {
            /* Not implemented yet */
        },
        .close = [](auto */*ws*/, int /*code*/, std::string_view /*message*/) {
            /* You may access ws->getUserData() here */
        }
    }).listen("127.0.0.1", port, [port](auto *listen_socket) {
        if (listen_socket) {
            std::cout << "Listening on port " << us_socket_local_port(0, (struct us_socket_t *) listen_socket) << std::endl;
        } else {
            std::cerr << "uws-echo: cannot listen on 127.0.0.1:" << port << std::endl;
            std::exit(1);
        }
    }).run();
}
