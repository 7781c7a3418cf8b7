package tlsstore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// selfSigned makes a key (ECDSA, or RSA when rsaKey) and a self-signed
// certificate for 127.0.0.1.
func selfSigned(t *testing.T, rsaKey bool) (key any, certPEM []byte) {
	t.Helper()
	var pub any
	if rsaKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		key, pub = k, &k.PublicKey
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		key, pub = k, &k.PublicKey
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	require.NoError(t, err)
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return der
}

// encryptPKCS8 writes keyDER as openssl pkcs8 -topk8 -v2 aes-256-cbc
// -v2prf hmacWithSHA256 does.
func encryptPKCS8(t *testing.T, keyDER []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, aes.BlockSize)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	require.NoError(t, err)
	pad := aes.BlockSize - len(keyDER)%aes.BlockSize
	plain := append(append([]byte(nil), keyDER...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)
	mustRaw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		require.NoError(t, err)
		return asn1.RawValue{FullBytes: b}
	}
	kdf := pbkdf2Params{Salt: salt, IterationCount: 2048, PRF: algorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}}
	params := pbes2Params{
		KeyDerivationFunc: algorithmIdentifier{Algorithm: oidPBKDF2, Parameters: mustRaw(kdf)},
		EncryptionScheme:  algorithmIdentifier{Algorithm: oidAES256CBC, Parameters: mustRaw(iv)},
	}
	der, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm: algorithmIdentifier{Algorithm: oidPBES2, Parameters: mustRaw(params)}, EncryptedData: enc})
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}

// handshake runs a TLS handshake over a pipe with cert on the server side
// and the certificate trusted by the client: it proves the key matches.
func handshake(t *testing.T, cert tls.Certificate, roots *x509.CertPool) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errC := make(chan error, 1)
	go func() {
		errC <- tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert}}).Handshake()
	}()
	require.NoError(t, tls.Client(b, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}).Handshake())
	require.NoError(t, <-errC)
}

// TestEncryptedKeyStore reads a PBES2-encrypted PKCS#8 key with its
// password, and refuses it with a wrong or missing one.
func TestEncryptedKeyStore(t *testing.T) {
	key, certPEM := selfSigned(t, false)
	encrypted := writeFile(t, "enc.pem", append(encryptPKCS8(t, pkcs8(t, key), "pa55"), certPEM...))

	cert, err := LoadKeyStore(encrypted, "pa55", "PEM")
	require.NoError(t, err)
	roots, err := LoadTrustStore(writeFile(t, "ca.pem", certPEM), "")
	require.NoError(t, err)
	handshake(t, cert, roots)

	_, err = LoadKeyStore(encrypted, "wrong", "PEM")
	require.ErrorContains(t, err, "wrong keyStore.password")
	_, err = LoadKeyStore(encrypted, "", "")
	require.ErrorContains(t, err, "no keyStore.password")
}

// TestKeyStoreKeyFormats reads each unencrypted key format a key store may
// hold, and refuses what zkraft does not read.
func TestKeyStoreKeyFormats(t *testing.T) {
	ecKey, ecCert := selfSigned(t, false)
	rsaKey, rsaCert := selfSigned(t, true)
	ecDER, err := x509.MarshalECPrivateKey(ecKey.(*ecdsa.PrivateKey))
	require.NoError(t, err)
	block := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	tests := []struct {
		name    string
		file    string
		data    []byte
		typ     string
		wantErr string
	}{
		{name: "pkcs8", file: "ks.pem", data: append(block("PRIVATE KEY", pkcs8(t, ecKey)), ecCert...)},
		{name: "sec1", file: "ks.pem", data: append(block("EC PRIVATE KEY", ecDER), ecCert...)},
		{name: "pkcs1", file: "ks.pem", data: append(block("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey.(*rsa.PrivateKey))), rsaCert...)},
		{name: "chain first", file: "ks.crt", data: append(append([]byte{}, ecCert...), block("PRIVATE KEY", pkcs8(t, ecKey))...)},
		{name: "no key", file: "ks.pem", data: ecCert, wantErr: "holds no private key"},
		{name: "no certificate", file: "ks.pem", data: block("PRIVATE KEY", pkcs8(t, ecKey)), wantErr: "holds no certificate"},
		{name: "two keys", file: "ks.pem", data: append(block("PRIVATE KEY", pkcs8(t, ecKey)), block("PRIVATE KEY", pkcs8(t, ecKey))...), wantErr: "more than one private key"},
		{name: "key of another certificate", file: "ks.pem", data: append(block("PRIVATE KEY", pkcs8(t, rsaKey)), ecCert...), wantErr: "ks.pem"},
		{name: "legacy encrypted", file: "ks.pem",
			data:    append(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}}), ecCert...),
			wantErr: "legacy encrypted PEM keys"},
		{name: "jks by name", file: "ks.jks", data: []byte("x"), wantErr: "JKS stores are not supported"},
		{name: "pkcs12 by type", file: "ks.pem", data: []byte("x"), typ: "PKCS12", wantErr: "PKCS12 stores are not supported"},
		{name: "unknown type", file: "ks.pem", data: []byte("x"), typ: "XYZ", wantErr: `unknown store type "XYZ"`},
		{name: "no type, no extension", file: "ks", data: []byte("x"), wantErr: "cannot tell the type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadKeyStore(writeFile(t, tt.file, tt.data), "", tt.typ)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestTrustStore(t *testing.T) {
	key, certPEM := selfSigned(t, false)
	_, err := LoadTrustStore(writeFile(t, "ca.pem", certPEM), "PEM")
	require.NoError(t, err)
	_, err = LoadTrustStore(writeFile(t, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(t, key)})), "")
	require.ErrorContains(t, err, "holds no certificate")
	_, err = LoadTrustStore(filepath.Join(t.TempDir(), "none.pem"), "")
	require.ErrorContains(t, err, "no such file")
}
