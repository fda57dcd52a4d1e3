package runtime

import (
	"fmt"
	"strings"
	"sync"
)

// cappedBuffer keeps the first limit bytes written to it and drops the rest, while still
// accepting every write so the command never blocks on a full pipe.
type cappedBuffer struct {
	mu        sync.Mutex
	buf       []byte
	limit     int
	truncated bool
	// onKeep, when set, is given each piece of output as it is kept, in order.
	onKeep func([]byte)
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := p
	if room := b.limit - len(b.buf); len(p) > room {
		b.truncated = true
		kept = p[:max(room, 0)]
	}
	b.buf = append(b.buf, kept...)
	if b.onKeep != nil && len(kept) > 0 {
		b.onKeep(kept)
	}
	return len(p), nil
}

// result returns the kept output as valid UTF-8 (a cut may split a character) and whether
// anything was dropped.
func (b *cappedBuffer) result() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "\uFFFD"), b.truncated
}

// headTailBuffer keeps the first and the last half of limit bytes written to it, and
// accepts every write so the command never blocks on a full pipe. What it drops in between
// is replaced by a line that says how much.
type headTailBuffer struct {
	mu      sync.Mutex
	limit   int
	head    []byte
	tail    []byte // a window over the last bytes written after head filled
	dropped int64
}

func (b *headTailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.limit/2 - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	keep := b.limit - b.limit/2
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - keep; over > 0 {
		b.dropped += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

// String returns the kept output as valid UTF-8 (a cut may split a character).
func (b *headTailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.head)
	if b.dropped > 0 {
		s += fmt.Sprintf("\n[... %d bytes of output dropped ...]\n", b.dropped)
	}
	return strings.ToValidUTF8(s+string(b.tail), "\uFFFD")
}
