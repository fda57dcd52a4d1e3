package secret

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpenRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring.json")
	k, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := k.Seal([]byte("ghp_supersecret"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("supersecret")) {
		t.Fatal("sealed value contains the plaintext")
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("keyring mode = %v, want 0600", st.Mode().Perm())
	}
	// A second load of the same file opens values sealed by the first.
	k2, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := k2.Open(sealed)
	if err != nil || string(plain) != "ghp_supersecret" {
		t.Fatalf("Open = %q, %v", plain, err)
	}
}

func TestOpenRejectsTampering(t *testing.T) {
	k, err := LoadOrCreate(filepath.Join(t.TempDir(), "k.json"))
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := k.Seal([]byte("value"))
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := k.Open(bad); err == nil {
			t.Fatalf("tampered byte %d still opened", i)
		}
	}
	if _, err := k.Open(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(nil) = %v, want ErrCorrupt", err)
	}
	other, _ := LoadOrCreate(filepath.Join(t.TempDir(), "other.json"))
	if _, err := other.Open(sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("other keyring Open = %v, want ErrUnknownKey", err)
	}
}

// memResealer keeps sealed values in memory and applies fn to all or none.
type memResealer struct{ vals [][]byte }

func (m *memResealer) Reseal(_ context.Context, fn func([]byte) ([]byte, error)) error {
	out := make([][]byte, len(m.vals))
	for i, v := range m.vals {
		n, err := fn(v)
		if err != nil {
			return err
		}
		out[i] = n
	}
	m.vals = out
	return nil
}

func TestRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.json")
	k, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	oldID := k.ActiveKeyID()
	s1, _ := k.Seal([]byte("one"))
	s2, _ := k.Seal([]byte("two"))
	store := &memResealer{vals: [][]byte{s1, s2}}
	newID, err := k.Rotate(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if newID == oldID {
		t.Fatal("rotation kept the old key id")
	}
	// Only the new key remains, in memory and on disk.
	k2, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"one", "two"} {
		got, err := k2.Open(store.vals[i])
		if err != nil || string(got) != want {
			t.Fatalf("value %d after rotation = %q, %v", i, got, err)
		}
	}
	if _, err := k2.Open(s1); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old sealed value opened after rotation: %v", err)
	}
}

func TestRotateFailureKeepsOldKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.json")
	k, _ := LoadOrCreate(path)
	s1, _ := k.Seal([]byte("one"))
	store := &memResealer{vals: [][]byte{s1, []byte("garbage")}}
	if _, err := k.Rotate(context.Background(), store); err == nil {
		t.Fatal("rotation over a corrupt value succeeded")
	}
	k2, _ := LoadOrCreate(path)
	if got, err := k2.Open(s1); err != nil || string(got) != "one" {
		t.Fatalf("value after failed rotation = %q, %v", got, err)
	}
}
