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

// Decode implements Record.
func (r *Id) Decode(d *Decoder) error {
	r.Scheme = d.ReadString()
	r.ID = d.ReadString()
	return d.Err()
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

// writeACLs writes a vector<ACL>; nil is count -1.
func writeACLs(e *Encoder, v []ACL) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

// readACLs reads a vector<ACL>; count -1 gives nil.
func readACLs(d *Decoder) []ACL {
	n := d.readCount(minACLSize, "vector<ACL>")
	if n < 0 {
		return nil
	}
	v := make([]ACL, n)
	for i := range v {
		if v[i].Decode(d) != nil {
			return nil
		}
	}
	return v
}

// writeClientInfos writes a vector<ClientInfo>; nil is count -1.
func writeClientInfos(e *Encoder, v []ClientInfo) {
	if v == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

// readClientInfos reads a vector<ClientInfo>; count -1 gives nil.
func readClientInfos(d *Decoder) []ClientInfo {
	n := d.readCount(minClientInfoSize, "vector<ClientInfo>")
	if n < 0 {
		return nil
	}
	v := make([]ClientInfo, n)
	for i := range v {
		if v[i].Decode(d) != nil {
			return nil
		}
	}
	return v
}
