package runtime

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestListenTLS: the runtime serves TLS with a key that is root's alone and commands that run
// as another uid; a key others may read, or commands of the runtime's own uid, are refused.
func TestListenTLS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the key's owner must be root: the test needs root")
	}
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir)
	for _, tt := range []struct {
		mode os.FileMode
		uid  int
		ok   bool
	}{
		{0o400, 2000000000, true},
		{0o440, 2000000000, false},
		{0o400, 0, false},
	} {
		if err := os.Chmod(keyFile, tt.mode); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		tl, err := listenTLS(ln, certFile, keyFile, tt.uid)
		if (err == nil) != tt.ok {
			t.Errorf("mode %v, sandbox uid %d: %v, want ok %v", tt.mode, tt.uid, err, tt.ok)
		}
		if tl != nil {
			tl.Close()
		}
	}
}

func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"runtime"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
