package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// ErrNoFile: the keyring was given as content (Parse), so it has no file to rotate or read
// again.
var ErrNoFile = errors.New("the keyring has no file")

// Load reads the keyring file at path, which must exist: the keyring every replica of one
// database shares, made by Create. Reload reads it again.
func Load(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("keyring file %s does not exist (agentd keyring create makes one)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read keyring: %w", err)
	}
	k, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("keyring %s: %w", path, err)
	}
	k.path, k.raw = path, data
	return k, nil
}

// Parse reads a keyring from the content of a keyring file (a keyring given in the
// environment). It has no file: Rotate and Reload fail with ErrNoFile.
func Parse(data []byte) (*Keyring, error) {
	k, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return k, nil
}

func parse(data []byte) (*Keyring, error) {
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, errors.New("not a keyring file (JSON with its keys)")
	}
	k := &Keyring{}
	if err := k.setFile(f); err != nil {
		return nil, err
	}
	return k, nil
}

// Create writes a new keyring file at path with one fresh key, mode 0600. It refuses a path
// that exists.
func Create(path string) (*Keyring, error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("keyring file %s exists already", path)
	}
	k := &Keyring{path: path}
	if _, err := k.addKey(true); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the keyring's file again and takes its keys if the file changed: the way a
// running server learns of a key added or activated by another. A file that cannot be read
// or parsed leaves the keyring as it was. It reports whether the keys changed.
func (k *Keyring) Reload() (bool, error) {
	if k.path == "" {
		return false, ErrNoFile
	}
	data, err := os.ReadFile(k.path)
	if err != nil {
		return false, fmt.Errorf("read keyring: %w", err)
	}
	k.mu.RLock()
	same := bytes.Equal(data, k.raw)
	k.mu.RUnlock()
	if same {
		return false, nil
	}
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return false, fmt.Errorf("keyring %s: not a keyring file", k.path)
	}
	if err := k.setFile(f); err != nil {
		return false, fmt.Errorf("keyring %s: %w", k.path, err)
	}
	k.mu.Lock()
	k.raw = data
	k.mu.Unlock()
	return true, nil
}

// KeyIDs returns the ids of the keys the keyring holds, sorted.
func (k *Keyring) KeyIDs() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// AddKey adds a new key to the keyring's file, not active: every replica reads it (Reload)
// and can open what it will seal before any seals with it (Activate). It returns the key's id.
func (k *Keyring) AddKey() (string, error) {
	if k.path == "" {
		return "", ErrNoFile
	}
	return k.addKey(false)
}

// ErrNoSuchKey: the keyring holds no key of that id.
var ErrNoSuchKey = errors.New("the keyring holds no such key")

// Activate makes the key id the one that seals, in the keyring's file.
func (k *Keyring) Activate(id string) error {
	k.mu.RLock()
	f := keyFile{Keys: slices.Clone(k.file.Keys)}
	k.mu.RUnlock()
	found := false
	for i := range f.Keys {
		f.Keys[i].Active = f.Keys[i].ID == id
		found = found || f.Keys[i].ID == id
	}
	if !found {
		return fmt.Errorf("activate key %s: %w", id, ErrNoSuchKey)
	}
	return k.write(f)
}

// Prune drops every key but the active one from the keyring's file, and returns their ids.
// Values sealed under them no longer open: the caller resealed them first.
func (k *Keyring) Prune() ([]string, error) {
	k.mu.RLock()
	var f keyFile
	var dropped []string
	for _, e := range k.file.Keys {
		if e.ID == k.active {
			f.Keys = append(f.Keys, e)
		} else {
			dropped = append(dropped, e.ID)
		}
	}
	k.mu.RUnlock()
	if len(dropped) == 0 {
		return nil, nil
	}
	return dropped, k.write(f)
}

// KeyIDOf is the id of the key a sealed value names; "" for a value that is not sealed.
func KeyIDOf(sealed []byte) string {
	if len(sealed) < 2 || sealed[0] != sealVersion || len(sealed) < 2+int(sealed[1]) {
		return ""
	}
	return string(sealed[2 : 2+int(sealed[1])])
}
