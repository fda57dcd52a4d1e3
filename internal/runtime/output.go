package runtime

import (
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
