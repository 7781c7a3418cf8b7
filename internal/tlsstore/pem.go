// Package tlsstore reads the PEM key and trust stores ZooKeeper 3.8's
// ssl.keyStore.* and ssl.trustStore.* keys name, and writes a certificate
// subject as the RFC 2253 distinguished name Java's
// X500Principal.getName() gives (the id of ZooKeeper's x509 scheme).
//
// A key store holds one private key: PKCS#8, PKCS#8 encrypted with PBES2
// (PBKDF2 with HMAC-SHA1/224/256/384/512, AES-CBC) and the store's password,
// PKCS#1 or SEC 1; and its certificate chain, leaf first. A trust store holds
// certificates. JKS, PKCS12 and BCFKS stores are refused with an error that
// says how to convert them.
//
// Invariants: the package is pure apart from reading the store files; it
// never logs, keeps no state, and every error names the file or the
// structure that is wrong.
package tlsstore

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Key and trust stores, as ZooKeeper 3.8's PEM stores: a key store file
// holds one private key (PKCS#8 "PRIVATE KEY", or "ENCRYPTED PRIVATE KEY"
// decrypted with the store's password; zkraft also takes PKCS#1 and SEC 1
// keys) and the certificate chain, leaf first; a trust store file holds the
// trusted certificates. The type comes from *.type or, when unset, from the
// file name (.pem, .jks, .p12/.pfx, .bcfks) as ZooKeeper infers it.

// storeType resolves a store's type; only PEM is supported.
func storeType(typ, path string) error {
	t := strings.ToUpper(strings.TrimSpace(typ))
	if t == "" {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".pem", ".crt", ".cer", ".key":
			t = "PEM"
		case ".jks":
			t = "JKS"
		case ".p12", ".pfx":
			t = "PKCS12"
		case ".bcfks":
			t = "BCFKS"
		default:
			return fmt.Errorf("cannot tell the type of %s from its name: set the store's type to PEM", path)
		}
	}
	switch t {
	case "PEM":
		return nil
	case "JKS", "PKCS12", "BCFKS":
		return fmt.Errorf("%s stores are not supported by zkraft: convert %s to PEM "+
			"(keytool -importkeystore -deststoretype PKCS12, then openssl pkcs12 -nodes) and set the type to PEM", t, path)
	}
	return fmt.Errorf("unknown store type %q (zkraft supports PEM)", typ)
}

// LoadKeyStore reads a PEM key store into a certificate with its key.
func LoadKeyStore(path, password, typ string) (tls.Certificate, error) {
	if err := storeType(typ, path); err != nil {
		return tls.Certificate{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("read: %w", err)
	}
	var certPEM []byte
	var keyDER []byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			if keyDER != nil {
				return tls.Certificate{}, fmt.Errorf("%s holds more than one private key", path)
			}
			if keyDER, err = toPKCS8(b); err != nil {
				return tls.Certificate{}, fmt.Errorf("%s: %w", path, err)
			}
		case "ENCRYPTED PRIVATE KEY":
			if keyDER != nil {
				return tls.Certificate{}, fmt.Errorf("%s holds more than one private key", path)
			}
			if password == "" {
				return tls.Certificate{}, fmt.Errorf("%s: the private key is encrypted and no keyStore.password is set", path)
			}
			if keyDER, err = decryptPKCS8(b.Bytes, []byte(password)); err != nil {
				return tls.Certificate{}, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	if keyDER == nil {
		return tls.Certificate{}, fmt.Errorf("%s holds no private key", path)
	}
	if certPEM == nil {
		return tls.Certificate{}, fmt.Errorf("%s holds no certificate", path)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", path, err)
	}
	return cert, nil
}

// toPKCS8 returns an unencrypted key block as PKCS#8 DER.
func toPKCS8(b *pem.Block) ([]byte, error) {
	if len(b.Headers) > 0 {
		return nil, errors.New("legacy encrypted PEM keys (Proc-Type headers) are not supported: use PKCS#8 (openssl pkcs8 -topk8)")
	}
	var key any
	var err error
	switch b.Type {
	case "PRIVATE KEY":
		if _, err = x509.ParsePKCS8PrivateKey(b.Bytes); err != nil {
			return nil, fmt.Errorf("parse private key: %w", err)
		}
		return b.Bytes, nil
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	default:
		key, err = x509.ParseECPrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	return x509.MarshalPKCS8PrivateKey(key)
}

// LoadTrustStore reads the certificates of a PEM trust store.
func LoadTrustStore(path, typ string) (*x509.CertPool, error) {
	if err := storeType(typ, path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	pool := x509.NewCertPool()
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	return pool, nil
}
