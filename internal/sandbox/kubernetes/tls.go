package kubernetes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// The runtime of each sandbox serves TLS with a certificate made for it at its start: a
// self-signed ECDSA P-256 certificate whose key goes into the sandbox's Secret (readable by
// the runtime alone inside the pod) and whose public key's digest goes into the Instance,
// which the control plane stores. A client pins that digest, so it talks to that sandbox's
// runtime and no other, whichever address or path (pod IP, port forwarding) leads to it, with
// no certificate authority to run or trust; and since the Instance is in the store, every
// replica pins the same key. The certificate lives as long as the sandbox (resumed pods mount
// the same Secret); its validity covers that with a margin, and pinning, not the dates, is
// what the client checks.

// certValidity is long: the key is the sandbox's, and the sandbox may live for years.
const certValidity = 100 * 365 * 24 * time.Hour

// runtimeCert is a new certificate and key for sandbox id, in PEM, and the pin of its key.
func runtimeCert(id string, now time.Time) (certPEM, keyPEM []byte, pin string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: certName(id)},
		DNSNames:     []string{certName(id)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, "", err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, "", err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		pinOf(cert), nil
}

// pinOf is the base64 SHA-256 digest of the certificate's public key (as HPKP pinned them).
func pinOf(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// pinnedTLS trusts the one certificate whose key has the digest pin, whatever its names and
// dates: the chain is not verified against authorities, the key is.
func pinnedTLS(pin string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Verification is VerifyConnection's: the pin.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the runtime sent no certificate")
			}
			got := pinOf(cs.PeerCertificates[0])
			if subtle.ConstantTimeCompare([]byte(got), []byte(pin)) != 1 {
				return fmt.Errorf("the runtime's certificate has key %s, not the sandbox's %s", got, pin)
			}
			return nil
		},
	}
}
