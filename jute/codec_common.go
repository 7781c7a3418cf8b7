package jute

// This file holds the records that other records nest: Id, ACL, Stat and
// ClientInfo, plus the vector helpers for them.

// Minimum encoded sizes, used to bound vector counts before allocating.
const (
	minIDSize         = 4 + 4         // two empty ustrings
	minACLSize        = 4 + minIDSize // perms + Id
	minClientInfoSize = 4 + 4         // two empty ustrings
)

// Encode implements Record.
func (r *Id) Encode(e *Encoder) {
	e.WriteString(r.Scheme)
	e.WriteString(r.ID)
}

// Decode implements Record. The schemes and ids nearly every ACL carries
// (world:anyone, auth, digest, ip, ...) are not copied: a create's ACL is
// decoded at every apply, and these two strings were two of its
// allocations.
func (r *Id) Decode(d *Decoder) error {
	r.Scheme = d.readCommonString(commonIDString)
	r.ID = d.readCommonString(commonIDString)
	return d.Err()
}

// commonIDString is s's constant when s is a scheme or id most ACLs
// carry; ok false otherwise. The switch compares bytes without
// converting them.
func commonIDString(p []byte) (s string, ok bool) {
	switch string(p) {
	case "world":
		return "world", true
	case "anyone":
		return "anyone", true
	case "auth":
		return "auth", true
	case "digest":
		return "digest", true
	case "ip":
		return "ip", true
	case "x509":
		return "x509", true
	case "sasl":
		return "sasl", true
	case "super":
		return "super", true
	}
	return "", false
}

// Encode implements Record.
func (r *ACL) Encode(e *Encoder) {
	e.WriteInt(r.Perms)
	r.ID.Encode(e)
}

// Decode implements Record.
func (r *ACL) Decode(d *Decoder) error {
	r.Perms = d.ReadInt()
	return r.ID.Decode(d)
}

// Encode implements Record. It writes exactly 68 bytes.
func (r *Stat) Encode(e *Encoder) {
	e.WriteLong(r.Czxid)
	e.WriteLong(r.Mzxid)
	e.WriteLong(r.Ctime)
	e.WriteLong(r.Mtime)
	e.WriteInt(r.Version)
	e.WriteInt(r.Cversion)
	e.WriteInt(r.Aversion)
	e.WriteLong(r.EphemeralOwner)
	e.WriteInt(r.DataLength)
	e.WriteInt(r.NumChildren)
	e.WriteLong(r.Pzxid)
}

// Decode implements Record.
func (r *Stat) Decode(d *Decoder) error {
	r.Czxid = d.ReadLong()
	r.Mzxid = d.ReadLong()
	r.Ctime = d.ReadLong()
	r.Mtime = d.ReadLong()
	r.Version = d.ReadInt()
	r.Cversion = d.ReadInt()
	r.Aversion = d.ReadInt()
	r.EphemeralOwner = d.ReadLong()
	r.DataLength = d.ReadInt()
	r.NumChildren = d.ReadInt()
	r.Pzxid = d.ReadLong()
	return d.Err()
}

// Encode implements Record.
func (r *ClientInfo) Encode(e *Encoder) {
	e.WriteString(r.AuthScheme)
	e.WriteString(r.User)
}

// Decode implements Record.
func (r *ClientInfo) Decode(d *Decoder) error {
	r.AuthScheme = d.ReadString()
	r.User = d.ReadString()
	return d.Err()
}

// recordPtr is a pointer to a record type T, for the vector helpers.
type recordPtr[T any] interface {
	*T
	Record
}

// writeRecords writes a vector of records; nil is count -1.
func writeRecords[T any, P recordPtr[T]](e *Encoder, v []T) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for i := range v {
		P(&v[i]).Encode(e)
	}
}

// readRecordsInto is readRecords decoding into dst's backing array when it
// has room for the vector (every element is overwritten), so that a caller
// decoding request after request into one record allocates the vector
// once.
func readRecordsInto[T any, P recordPtr[T]](d *Decoder, dst []T, minSize int, what string) []T {
	n := d.readCount(minSize, what)
	if n < 0 {
		return nil
	}
	v := dst[:0]
	if cap(v) < n || v == nil {
		v = make([]T, n)
	} else {
		v = v[:n]
	}
	for i := range v {
		if P(&v[i]).Decode(d) != nil {
			return nil
		}
	}
	return v
}

// readRecords reads a vector of records each at least minSize bytes long;
// count -1 gives nil. what names the vector in errors.
func readRecords[T any, P recordPtr[T]](d *Decoder, minSize int, what string) []T {
	return readRecordsInto[T, P](d, nil, minSize, what)
}
