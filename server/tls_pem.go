package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
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

// loadKeyStore reads a PEM key store into a certificate with its key.
func loadKeyStore(path, password, typ string) (tls.Certificate, error) {
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

// loadTrustStore reads the certificates of a PEM trust store.
func loadTrustStore(path, _, typ string) (*x509.CertPool, error) {
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

// readPasswordFile reads a *.passwordPath file; a final line break is not
// part of the password.
func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// Encrypted PKCS#8 (RFC 5958, RFC 8018): PBES2 with PBKDF2 and AES-CBC,
// what openssl and Java write by default.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo into PKCS#8 DER.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("parse encrypted private key: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key uses %v: zkraft supports PBES2 (openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("parse PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("PBES2 key derivation %v is not supported (want PBKDF2)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("parse PBKDF2 parameters: %w", err)
	}
	var prf func() hash.Hash
	switch p := kdf.PRF.Algorithm; {
	case len(p) == 0 || p.Equal(oidHMACSHA1):
		prf = sha1.New
	case p.Equal(oidHMACSHA224):
		prf = sha256.New224
	case p.Equal(oidHMACSHA256):
		prf = sha256.New
	case p.Equal(oidHMACSHA384):
		prf = sha512.New384
	case p.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2 function %v is not supported", p)
	}
	var keyLen int
	switch a := params.EncryptionScheme.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen = 16
	case a.Equal(oidAES192CBC):
		keyLen = 24
	case a.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("cipher %v is not supported (want AES-CBC)", a)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("bad AES-CBC parameters")
	}
	if kdf.IterationCount <= 0 || kdf.IterationCount > 10_000_000 {
		return nil, fmt.Errorf("bad PBKDF2 iteration count %d", kdf.IterationCount)
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted private key has a bad length")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > aes.BlockSize {
		return nil, errors.New("cannot decrypt the private key: wrong keyStore.password?")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("cannot decrypt the private key: wrong keyStore.password?")
		}
	}
	out = out[:len(out)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(out); err != nil {
		return nil, errors.New("cannot decrypt the private key: wrong keyStore.password?")
	}
	return out, nil
}
