package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// The headers of a delivery.
const (
	HeaderEvent     = "X-Agentd-Event"
	HeaderDelivery  = "X-Agentd-Delivery"
	HeaderTimestamp = "X-Agentd-Timestamp"
	HeaderSignature = "X-Agentd-Signature"
)

// SignaturePrefix starts the signature header's value.
const SignaturePrefix = "sha256="

// secretPrefix marks agentd's webhook secrets, so that one found in a file says what it is.
const secretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: 32 random bytes, base64url, after a prefix.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Sign is the signature header's value for a delivery sent at unix time ts: HMAC-SHA256,
// keyed with the secret's text, of the timestamp, a dot and the body, in hex after "sha256=".
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return SignaturePrefix + hex.EncodeToString(m.Sum(nil))
}
