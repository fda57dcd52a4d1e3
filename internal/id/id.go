// Package id makes the random identifiers and keys agentd hands out.
package id

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"time"
)

// New returns a random UUID (version 4) as 32 lowercase hex characters without dashes, the
// form OpenHands V1 uses on the wire.
func New() string {
	var b [16]byte
	rand.Read(b[:])
	return stamp(b[:], 4)
}

// Ordered returns a new UUID (version 7, RFC 9562) in its canonical dashed form, as event
// ids use: its first 48 bits are the Unix time in milliseconds and the other 74 (but for the
// version and variant) random, so that ids made later sort after those made before (to the
// millisecond). The store's index on event ids then grows at its end, where the last events
// went, rather than at a random place for every event: an agent step writes one page of it,
// already in the cache, instead of reading and writing one anywhere in it per event.
func Ordered() string {
	var b [16]byte
	rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	return dashed(stamp(b[:], 7))
}

// Named returns the dashed UUID (version 8, RFC 9562) that name always maps to: the id of a
// thing that must exist once, such as an event a restart may try to record again.
func Named(name string) string {
	sum := sha256.Sum256([]byte(name))
	return dashed(stamp(sum[:16], 8))
}

// stamp sets the version and the RFC 9562 variant of the UUID b and returns it as 32
// lowercase hex digits.
func stamp(b []byte, version byte) string {
	b[6] = b[6]&0x0f | version<<4
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b)
}

// dashed is the canonical form of the UUID of 32 hex digits h.
func dashed(h string) string {
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Key returns a random secret of n bytes of entropy spelled in base62.
func Key(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	v := new(big.Int).SetBytes(b)
	out := make([]byte, 0, n*4/3+2)
	base := big.NewInt(62)
	mod := new(big.Int)
	for v.Sign() > 0 {
		v.DivMod(v, base, mod)
		out = append(out, base62[mod.Int64()])
	}
	for len(out) < n*4/3 { // keep the length steady when leading bytes are zero
		out = append(out, '0')
	}
	return string(out)
}
