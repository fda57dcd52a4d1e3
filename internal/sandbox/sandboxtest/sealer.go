package sandboxtest

import (
	"bytes"
	"errors"
	"slices"
)

// Sealer is a reversible stand-in for the server keyring. Its output differs from its input,
// so a test can tell that a value was sealed, but it protects nothing.
type Sealer struct{}

var sealPrefix = []byte("sealed:")

// Seal returns the plaintext reversed behind a marker.
func (Sealer) Seal(plaintext []byte) ([]byte, error) {
	out := slices.Clone(plaintext)
	slices.Reverse(out)
	return append(slices.Clone(sealPrefix), out...), nil
}

// Open undoes Seal.
func (Sealer) Open(sealed []byte) ([]byte, error) {
	if !bytes.HasPrefix(sealed, sealPrefix) {
		return nil, errors.New("open: not sealed by sandboxtest.Sealer")
	}
	out := slices.Clone(sealed[len(sealPrefix):])
	slices.Reverse(out)
	return out, nil
}
