package httpapi_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// clientFrame is a frame as a client writes it: masked (with a fixed key), its first byte
// (FIN, RSV and opcode) as given.
func clientFrame(b0 byte, payload []byte) []byte {
	out := []byte{b0, 0x80 | byte(len(payload))} // payloads here are short
	key := [4]byte{0x1f, 0x2e, 0x3d, 0x4c}
	out = append(out, key[:]...)
	for i, c := range payload {
		out = append(out, c^key[i%4])
	}
	return out
}

// TestEventSocketMalformedFrames: a frame that breaks the WebSocket protocol is answered
// with a close frame whose code says how (1002, or 1007 for a text frame that is not UTF-8)
// and whose reason is not empty, before the connection ends: a client learns why it was cut
// off.
func TestEventSocketMalformedFrames(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	u, err := url.Parse(c.socketURL(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		code  int
	}{
		{"unmasked", []byte{0x81, 0x02, 'h', 'i'}, 1002},
		{"text not UTF-8", clientFrame(0x81, []byte{'{', 0xff, 0xfe, '}'}), 1007},
		{"reserved bits", clientFrame(0xC1, []byte("hi")), 1002},
		{"reserved opcode", clientFrame(0x83, []byte("hi")), 1002},
		{"fragmented ping", clientFrame(0x09, nil), 1002},
		{"continuation without a start", clientFrame(0x80, []byte("x")), 1002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(socketWait))
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
				"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Session-API-Key: %s\r\n\r\n",
				u.RequestURI(), u.Host, c.sessionKey)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("handshake: %v %v", resp, err)
			}
			if _, err := conn.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			// The server's frames (the conversation's state and events) until its close.
			for {
				var h [2]byte
				if _, err := io.ReadFull(br, h[:]); err != nil {
					t.Fatalf("the connection ended without a close frame: %v", err)
				}
				n := int(h[1] & 0x7f)
				switch n {
				case 126:
					var x [2]byte
					io.ReadFull(br, x[:])
					n = int(binary.BigEndian.Uint16(x[:]))
				case 127:
					var x [8]byte
					io.ReadFull(br, x[:])
					n = int(binary.BigEndian.Uint64(x[:]))
				}
				payload := make([]byte, n)
				if _, err := io.ReadFull(br, payload); err != nil {
					t.Fatal(err)
				}
				if h[0]&0x0f != 0x8 {
					continue
				}
				if n < 3 || int(binary.BigEndian.Uint16(payload)) != tc.code {
					t.Fatalf("close frame %q, want code %d and a reason", payload, tc.code)
				}
				t.Logf("closed %d %q", tc.code, payload[2:])
				return
			}
		})
	}
}
