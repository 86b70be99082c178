// WSBENCH_PUBSUB=1 (set by `wsbench compare --scenario pubsub`): the pub/sub protocol of
// wsbench's docs/protocols.md instead of echo. A publish is encoded once as a gorilla
// PreparedMessage and written to every subscriber of its topic from the publisher's
// goroutine (each connection's writes are serialised by its own mutex; a subscriber that
// does not read slows its publishers down instead of being skipped).
package main

import (
	"encoding/json"
	"sync"

	"github.com/gorilla/websocket"
)

var pubsubMode = false

type client struct {
	conn *websocket.Conn
	mu   sync.Mutex
}

func (c *client) write(pm *websocket.PreparedMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn.WritePreparedMessage(pm)
}

func (c *client) writeMessage(opcode int, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn.WriteMessage(opcode, data)
}

var (
	topicsMu sync.RWMutex
	topics   = map[string]map[*client]struct{}{}
)

type command struct {
	Sub *string `json:"sub"`
	Pub *string `json:"pub"`
}

func servePubSub(conn *websocket.Conn) {
	c := &client{conn: conn}
	var subscribed []string
	defer func() {
		topicsMu.Lock()
		for _, topic := range subscribed {
			delete(topics[topic], c)
		}
		topicsMu.Unlock()
	}()
	for {
		opcode, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var cmd command
		if opcode != websocket.TextMessage || json.Unmarshal(data, &cmd) != nil {
			cmd = command{}
		}
		switch {
		case cmd.Sub != nil:
			topicsMu.Lock()
			if topics[*cmd.Sub] == nil {
				topics[*cmd.Sub] = map[*client]struct{}{}
			}
			topics[*cmd.Sub][c] = struct{}{}
			topicsMu.Unlock()
			subscribed = append(subscribed, *cmd.Sub)
			ack, _ := json.Marshal(map[string]string{"subscribed": *cmd.Sub})
			err = c.writeMessage(websocket.TextMessage, ack)
		case cmd.Pub != nil:
			err = publish(*cmd.Pub, data)
		default:
			err = c.writeMessage(opcode, data)
		}
		if err != nil {
			return
		}
	}
}

// publish writes data to every subscriber of topic; a failed subscriber is its own
// goroutine's to clean up, so errors here are ignored.
func publish(topic string, data []byte) error {
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, data)
	if err != nil {
		return err
	}
	topicsMu.RLock()
	subscribers := make([]*client, 0, len(topics[topic]))
	for s := range topics[topic] {
		subscribers = append(subscribers, s)
	}
	topicsMu.RUnlock()
	for _, s := range subscribers {
		_ = s.write(pm)
	}
	return nil
}
