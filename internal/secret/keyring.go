// Package secret seals secrets at rest with AES-256-GCM under server keys kept in a keyring
// file in the data directory, rotates those keys, and redacts known secret values from text.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// sealVersion is the first byte of every sealed value; it names the format.
const sealVersion = 1

// ErrUnknownKey: a sealed value names a key the keyring does not hold.
var ErrUnknownKey = errors.New("sealed with a key this keyring does not hold")

// ErrCorrupt: a sealed value is malformed or fails authentication.
var ErrCorrupt = errors.New("sealed value is corrupt")

type keyEntry struct {
	ID        string    `json:"id"`
	Key       []byte    `json:"key"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
}

type keyFile struct {
	Keys []keyEntry `json:"keys"`
}

// Keyring holds the server keys. The active key seals; any held key opens. Safe for concurrent
// use.
type Keyring struct {
	path string // "" for a keyring given as content (Parse)

	mu     sync.RWMutex
	keys   map[string]cipher.AEAD
	active string
	file   keyFile
	raw    []byte // the file's content as last read or written, to tell a change (Reload)
}

// LoadOrCreate reads the keyring at path, creating it with one fresh key (mode 0600) when the
// file does not exist.
func LoadOrCreate(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k := &Keyring{path: path}
		if _, err := k.addKey(true); err != nil {
			return nil, err
		}
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read keyring: %w", err)
	}
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse keyring %s: %w", path, err)
	}
	k := &Keyring{path: path, raw: data}
	if err := k.setFile(f); err != nil {
		return nil, fmt.Errorf("keyring %s: %w", path, err)
	}
	return k, nil
}

func (k *Keyring) setFile(f keyFile) error {
	keys := make(map[string]cipher.AEAD, len(f.Keys))
	active := ""
	for _, e := range f.Keys {
		if len(e.Key) != 32 {
			return fmt.Errorf("key %q is not 32 bytes", e.ID)
		}
		block, err := aes.NewCipher(e.Key)
		if err != nil {
			return err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return err
		}
		keys[e.ID] = aead
		if e.Active {
			active = e.ID
		}
	}
	if active == "" {
		return errors.New("no active key")
	}
	k.mu.Lock()
	k.keys, k.active, k.file = keys, active, f
	k.mu.Unlock()
	return nil
}

// addKey adds a new random key, the active one if activate, and writes the file.
func (k *Keyring) addKey(activate bool) (string, error) {
	raw := make([]byte, 32)
	idb := make([]byte, 4)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	if _, err := rand.Read(idb); err != nil {
		return "", err
	}
	// Hexadecimal: an id never begins with a dash, which a command line would take for a flag.
	id := hex.EncodeToString(idb)
	k.mu.RLock()
	f := keyFile{Keys: append([]keyEntry(nil), k.file.Keys...)}
	k.mu.RUnlock()
	if activate {
		for i := range f.Keys {
			f.Keys[i].Active = false
		}
	}
	f.Keys = append(f.Keys, keyEntry{ID: id, Key: raw, Active: activate, CreatedAt: time.Now().UTC()})
	if err := k.write(f); err != nil {
		return "", err
	}
	return id, nil
}

// write writes f to the keyring's file and takes its keys.
func (k *Keyring) write(f keyFile) error {
	if k.path == "" {
		return ErrNoFile
	}
	data, err := writeFile(k.path, f)
	if err != nil {
		return err
	}
	if err := k.setFile(f); err != nil {
		return err
	}
	k.mu.Lock()
	k.raw = data
	k.mu.Unlock()
	return nil
}

// writeFile replaces the keyring file atomically (write, fsync, rename) and returns what it
// wrote.
func writeFile(path string, f keyFile) ([]byte, error) {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keyring-*")
	if err != nil {
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("write keyring: %w", err)
	}
	return data, nil
}

// Seal encrypts plaintext with the active key. The result names the key, so values sealed
// before a rotation still open.
func (k *Keyring) Seal(plaintext []byte) ([]byte, error) {
	k.mu.RLock()
	id, aead := k.active, k.keys[k.active]
	k.mu.RUnlock()
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := make([]byte, 0, 2+len(id)+len(nonce)+len(plaintext)+aead.Overhead())
	out = append(out, sealVersion, byte(len(id)))
	out = append(out, id...)
	out = append(out, nonce...)
	// The key id is authenticated too, so a value cannot be moved to another key's slot.
	return aead.Seal(out, nonce, plaintext, out[:2+len(id)]), nil
}

// Open decrypts a value sealed by any key the keyring holds.
func (k *Keyring) Open(sealed []byte) ([]byte, error) {
	if len(sealed) < 2 || sealed[0] != sealVersion {
		return nil, ErrCorrupt
	}
	n := int(sealed[1])
	if len(sealed) < 2+n {
		return nil, ErrCorrupt
	}
	k.mu.RLock()
	aead, ok := k.keys[string(sealed[2:2+n])]
	k.mu.RUnlock()
	if !ok {
		return nil, ErrUnknownKey
	}
	rest := sealed[2+n:]
	if len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrCorrupt
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], sealed[:2+n])
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

// SealString and OpenString are conveniences for string secrets.
func (k *Keyring) SealString(s string) ([]byte, error) { return k.Seal([]byte(s)) }

// OpenString opens a value sealed by SealString.
func (k *Keyring) OpenString(sealed []byte) (string, error) {
	b, err := k.Open(sealed)
	return string(b), err
}

// ActiveKeyID names the key that seals new values.
func (k *Keyring) ActiveKeyID() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.active
}
