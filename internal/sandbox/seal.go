package sandbox

// Sealer encrypts secrets at rest (the runtime session keys). secret.Keyring implements it.
type Sealer interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}
