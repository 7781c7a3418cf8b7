package tlsstore

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"
)

// X509ID is the id of a client certificate under the x509 scheme: its
// subject distinguished name as Java's X500Principal.getName() writes it
// (RFC 2253), which is what ZooKeeper's X509AuthenticationProvider uses.
//
// RFC 2253: RDNs from last to first, joined by ','; the attributes of one
// RDN joined by '+'; the keywords CN, C, L, ST, O, OU, STREET, DC and UID,
// other attributes as their dotted OID with '#' and the hex of their DER
// value; the characters ,=+<>#;"\ escaped with '\', and so are a leading
// and trailing space.
func X509ID(rawSubject []byte) (string, error) {
	var rdns []asn1.RawValue
	rest, err := asn1.Unmarshal(rawSubject, &rdns)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", errors.New("trailing data after the subject")
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		var atvs []struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}
		if _, err := asn1.UnmarshalWithParams(rdns[i].FullBytes, &atvs, "set"); err != nil {
			return "", err
		}
		avas := make([]string, 0, len(atvs))
		for _, a := range atvs {
			avas = append(avas, formatAVA(a.Type, a.Value))
		}
		parts = append(parts, strings.Join(avas, "+"))
	}
	return strings.Join(parts, ","), nil
}

// rfc2253Keywords are the attribute names RFC 2253 (and Java) write.
var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
	"2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1": "UID",
}

func formatAVA(oid asn1.ObjectIdentifier, v asn1.RawValue) string {
	name, known := rfc2253Keywords[oid.String()]
	if known {
		if s, ok := directoryString(v); ok {
			return name + "=" + escapeDNValue(s)
		}
	} else {
		name = oid.String()
	}
	return name + "=#" + strings.ToUpper(hex.EncodeToString(v.FullBytes))
}

// directoryString decodes the string types a DN value may have.
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, 26 /* VisibleString */ :
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

func escapeDNValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(",=+<>#;\"\\", r):
			b.WriteByte('\\')
		case r == ' ' && (i == 0 || i == len(s)-1):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
