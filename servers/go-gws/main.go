// wsbench fleet: a WebSocket echo server on lxzan/gws.
//
// Usage: echo-server PORT. Listens on 127.0.0.1:PORT, echoes every message with its opcode
// (text stays text, binary stays binary), answers pings with pongs carrying the ping's payload,
// completes the closing handshake (gws echoes the close frame), and answers a plain HTTP GET
// with 200. Run it with GOMAXPROCS=1 for one core, as the manifest does. The listen backlog is
// the kernel's net.core.somaxconn (Go reads it). Exits on SIGTERM or SIGINT.
//
// gws's defaults are kept otherwise: no permessage-deflate, messages handled in order on each
// connection's read goroutine (ParallelEnabled false), and no UTF-8 check of text messages
// (CheckUtf8Enabled false, gws's default for speed).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/lxzan/gws"
)

// Large enough for 16 MiB messages, capped like wsbench serve's default (gws's default limit,
// 16 MiB for reading and for writing, is exactly the size of the largest message checked).
const maxMessage = 128 << 20

type echoHandler struct {
	gws.BuiltinEventHandler
}

// The built-in handler answers a ping with an empty pong; RFC 6455 asks for the ping's payload.
func (echoHandler) OnPing(socket *gws.Conn, payload []byte) {
	_ = socket.WritePong(payload)
}

func (echoHandler) OnMessage(socket *gws.Conn, message *gws.Message) {
	defer message.Close() // returns the buffer to gws's pool; WriteMessage has copied it by then
	_ = socket.WriteMessage(message.Opcode, message.Bytes())
}

func main() {
	port := "0"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}

	upgrader := gws.NewUpgrader(echoHandler{}, &gws.ServerOption{
		ReadMaxPayloadSize:  maxMessage,
		WriteMaxPayloadSize: maxMessage,
		// WSBENCH_DEFLATE=1 (set by `wsbench compare --compression deflate`): permessage-deflate
		// with context takeover both ways; off otherwise, gws's default.
		PermessageDeflate: gws.PermessageDeflate{
			Enabled:               os.Getenv("WSBENCH_DEFLATE") == "1",
			ServerContextTakeover: true,
			ClientContextTakeover: true,
		},
	})
	handle := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		socket, err := upgrader.Upgrade(w, r)
		if err != nil {
			return // Upgrade has already answered with an HTTP error.
		}
		// A protocol error or a close frame ends only this connection's read loop.
		go socket.ReadLoop()
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
