// wsbench fleet: a WebSocket echo server on gorilla/websocket.
//
// Usage: echo-server PORT. Listens on 127.0.0.1:PORT, echoes every message with its opcode
// (text stays text, binary stays binary), answers pings with pongs and completes the closing
// handshake (gorilla's default handlers), and answers a plain HTTP GET with 200. Run it with
// GOMAXPROCS=1 for one core, as the manifest does. The listen backlog is the kernel's
// net.core.somaxconn (Go reads it). Exits on SIGTERM or SIGINT.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/gorilla/websocket"
)

// Large enough for 16 MiB messages, capped like wsbench serve's default.
const maxMessage = 128 << 20

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	CheckOrigin:     func(*http.Request) bool { return true },
	// WSBENCH_DEFLATE=1 (set by `wsbench compare --compression deflate`): permessage-deflate,
	// which gorilla supports without context takeover only; off otherwise, gorilla's default.
	EnableCompression: os.Getenv("WSBENCH_DEFLATE") == "1",
}

func handle(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has already answered with an HTTP error.
	}
	defer conn.Close()
	conn.SetReadLimit(maxMessage)
	if pubsubMode {
		servePubSub(conn)
		return
	}
	for {
		// A protocol error, a close frame or a read limit ends only this connection.
		opcode, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if err := conn.WriteMessage(opcode, data); err != nil {
			return
		}
	}
}

func main() {
	pubsubMode = os.Getenv("WSBENCH_PUBSUB") == "1"
	port := "0"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo-server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("listening on ws://%s\n", ln.Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		os.Exit(0)
	}()

	if err := http.Serve(ln, http.HandlerFunc(handle)); err != nil {
		fmt.Fprintf(os.Stderr, "echo-server: %v\n", err)
		os.Exit(1)
	}
}
