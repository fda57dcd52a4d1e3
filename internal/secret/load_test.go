package secret

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSharedKeyringFile: a keyring file made by Create is read by Load on another replica
// and given as content by Parse, and all three open what one sealed; Create refuses a file
// that exists, Load one that does not.
func TestSharedKeyringFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring.json")
	a, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("Create over a keyring: %v", err)
	}
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := a.Seal([]byte("token"))
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]*Keyring{"loaded": b, "parsed": c} {
		if plain, err := k.Open(sealed); err != nil || string(plain) != "token" {
			t.Fatalf("%s keyring opens %q, %v", name, plain, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "agentd keyring create") {
		t.Fatalf("Load of a missing file: %v", err)
	}
	if _, err := Parse([]byte("hunter2")); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Parse of a non-keyring: %v", err)
	}
	if _, err := c.Rotate(t.Context(), &memResealer{}); !errors.Is(err, ErrNoFile) {
		t.Fatalf("Rotate of a parsed keyring: %v", err)
	}
}

// TestReload: a replica reading the file again takes a key another added to it (and can then
// open what that key sealed), and keeps its keys when the file is broken.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring.json")
	if _, err := Create(path); err != nil {
		t.Fatal(err)
	}
	replica, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := replica.Reload(); err != nil || changed {
		t.Fatalf("reload of an unchanged file: %v, %v", changed, err)
	}
	admin, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := admin.addKey(true)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := admin.Seal([]byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Open(sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("before the reload the replica opens the new key's value: %v", err)
	}
	if changed, err := replica.Reload(); err != nil || !changed {
		t.Fatalf("reload after a key was added: %v, %v", changed, err)
	}
	if plain, err := replica.Open(sealed); err != nil || string(plain) != "new" {
		t.Fatalf("after the reload: %q, %v", plain, err)
	}
	if !slices.Contains(replica.KeyIDs(), id) || replica.ActiveKeyID() != id {
		t.Fatalf("keys %v, active %s; want %s among them and active", replica.KeyIDs(), replica.ActiveKeyID(), id)
	}
	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Reload(); err == nil {
		t.Fatal("a broken file reloaded")
	}
	if plain, err := replica.Open(sealed); err != nil || string(plain) != "new" {
		t.Fatalf("after a failed reload: %q, %v", plain, err)
	}
}

// TestAddActivatePrune: a key added stays inactive (the keyring seals with the old one) until
// activated; pruning then drops the old key, after which what it sealed no longer opens.
func TestAddActivatePrune(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring.json")
	k, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	old := k.ActiveKeyID()
	before, _ := k.Seal([]byte("before"))
	id, err := k.AddKey()
	if err != nil {
		t.Fatal(err)
	}
	if k.ActiveKeyID() != old {
		t.Fatal("an added key became active")
	}
	if s, _ := k.Seal([]byte("x")); KeyIDOf(s) != old {
		t.Fatalf("sealed under %s before the activation, want %s", KeyIDOf(s), old)
	}
	if err := k.Activate("nope"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("activate an unknown key: %v", err)
	}
	if err := k.Activate(id); err != nil {
		t.Fatal(err)
	}
	after, _ := k.Seal([]byte("after"))
	if KeyIDOf(after) != id || KeyIDOf(before) != old || KeyIDOf([]byte("plain")) != "" {
		t.Fatalf("key ids: %q %q", KeyIDOf(after), KeyIDOf(before))
	}
	replica, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if replica.ActiveKeyID() != id {
		t.Fatal("the file does not name the activated key")
	}
	dropped, err := k.Prune()
	if err != nil || !slices.Equal(dropped, []string{old}) {
		t.Fatalf("prune: %v %v", dropped, err)
	}
	if _, err := k.Open(before); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a value of a pruned key opens: %v", err)
	}
	if plain, err := k.Open(after); err != nil || string(plain) != "after" {
		t.Fatalf("after the prune: %q %v", plain, err)
	}
}

// TestKeyIDsAreArguments: a key's id can follow `agentd keyring activate` as it is: never a
// dash first, which the command line would take for a flag (one id in 64 began with one when
// ids were base64).
func TestKeyIDsAreArguments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring.json")
	k, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		id, err := k.AddKey()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Trim(id, "0123456789abcdef") != "" || id == "" {
			t.Fatalf("key id %q is not hexadecimal", id)
		}
	}
}
