package tlsstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestX509ID(t *testing.T) {
	tests := []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "client"}, "CN=client"},
		{pkix.Name{CommonName: "client", Organization: []string{"zkraft"}, Country: []string{"US"}}, "CN=client,O=zkraft,C=US"},
		{pkix.Name{CommonName: "a,b+c", OrganizationalUnit: []string{" x "}}, `CN=a\,b\+c,OU=\ x\ `},
		{pkix.Name{CommonName: "#1=2"}, `CN=\#1\=2`},
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: []int{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b"},
			{Type: []int{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"},
		}}, "DC=example,1.2.840.113549.1.9.1=#0C03614062"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			raw, err := asn1MarshalName(tt.name)
			require.NoError(t, err)
			got, err := X509ID(raw)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func asn1MarshalName(n pkix.Name) ([]byte, error) {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: n, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return c.RawSubject, nil
}
