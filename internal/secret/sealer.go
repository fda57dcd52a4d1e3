package secret

// Sealer encrypts secrets at rest and opens them again. *Keyring implements it; the services
// that keep secrets (sandbox session keys, settings, provider tokens, conversation requests)
// take one.
type Sealer interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

var _ Sealer = (*Keyring)(nil)
