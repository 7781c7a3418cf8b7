package jute

// This file holds the request and response bodies of the ordinary opcodes.

// Encode implements Record.
func (r *CreateRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	writeRecords(e, r.ACL)
	e.WriteInt(r.Flags)
}

// Decode implements Record: DecodeReusing into a new ACL vector.
func (r *CreateRequest) Decode(d *Decoder) error {
	r.ACL = nil
	return r.DecodeReusing(d)
}

// DecodeReusing is Decode with the ACL vector decoded into r.ACL's backing
// array when it has room: a decoder of request after request into one
// record allocates the vector once. The caller must not have kept r.ACL.
func (r *CreateRequest) DecodeReusing(d *Decoder) error {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.ACL = readRecordsInto[ACL](d, r.ACL, minACLSize, "vector<ACL>")
	r.Flags = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	writeRecords(e, r.ACL)
	e.WriteInt(r.Flags)
	e.WriteLong(r.TTL)
}

// Decode implements Record.
func (r *CreateTTLRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.ACL = readRecords[ACL](d, minACLSize, "vector<ACL>")
	r.Flags = d.ReadInt()
	r.TTL = d.ReadLong()
	return d.Err()
}

// Encode implements Record.
func (r *CreateResponse) Encode(e *Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *CreateResponse) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	return d.Err()
}

// Encode implements Record.
func (r *Create2Response) Encode(e *Encoder) {
	e.WriteString(r.Path)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *Create2Response) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	return r.Stat.Decode(d)
}

// Encode implements Record.
func (r *DeleteRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *DeleteRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Version = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *PathWatchRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode implements Record.
func (r *PathWatchRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
	return d.Err()
}

// Encode implements Record.
func (r *PathRequest) Encode(e *Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *PathRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	return d.Err()
}

// Encode implements Record.
func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode implements Record.
func (r *StatResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// Encode implements Record.
func (r *GetDataResponse) Encode(e *Encoder) {
	e.WriteBuffer(r.Data)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetDataResponse) Decode(d *Decoder) error {
	r.Data = d.ReadBuffer()
	return r.Stat.Decode(d)
}

// Encode implements Record.
func (r *SetDataRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *SetDataRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.Version = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *GetACLResponse) Encode(e *Encoder) {
	writeRecords(e, r.ACL)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetACLResponse) Decode(d *Decoder) error {
	r.ACL = readRecords[ACL](d, minACLSize, "vector<ACL>")
	return r.Stat.Decode(d)
}

// Encode implements Record.
func (r *SetACLRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	writeRecords(e, r.ACL)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *SetACLRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.ACL = readRecords[ACL](d, minACLSize, "vector<ACL>")
	r.Version = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *GetChildrenResponse) Encode(e *Encoder) { e.WriteStrings(r.Children) }

// Decode implements Record.
func (r *GetChildrenResponse) Decode(d *Decoder) error {
	r.Children = d.ReadStrings()
	return d.Err()
}

// Encode implements Record.
func (r *GetChildren2Response) Encode(e *Encoder) {
	e.WriteStrings(r.Children)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetChildren2Response) Decode(d *Decoder) error {
	r.Children = d.ReadStrings()
	return r.Stat.Decode(d)
}

// Encode implements Record.
func (r *CheckVersionRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *CheckVersionRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Version = d.ReadInt()
	return d.Err()
}

// Encode implements Record. Empty strings are written as length 0, not null.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.WriteString(r.JoiningServers)
	e.WriteString(r.LeavingServers)
	e.WriteString(r.NewMembers)
	e.WriteLong(r.CurConfigID)
}

// Decode implements Record.
func (r *ReconfigRequest) Decode(d *Decoder) error {
	r.JoiningServers = d.ReadString()
	r.LeavingServers = d.ReadString()
	r.NewMembers = d.ReadString()
	r.CurConfigID = d.ReadLong()
	return d.Err()
}

// Encode implements Record.
func (r *WatchesRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Type)
}

// Decode implements Record.
func (r *WatchesRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Type = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *StringsResponse) Encode(e *Encoder) { e.WriteStrings(r.Strings) }

// Decode implements Record.
func (r *StringsResponse) Decode(d *Decoder) error {
	r.Strings = d.ReadStrings()
	return d.Err()
}

// Encode implements Record.
func (r *IntResponse) Encode(e *Encoder) { e.WriteInt(r.Value) }

// Decode implements Record.
func (r *IntResponse) Decode(d *Decoder) error {
	r.Value = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *AddWatchRequest) Encode(e *Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Mode)
}

// Decode implements Record.
func (r *AddWatchRequest) Decode(d *Decoder) error {
	r.Path = d.ReadString()
	r.Mode = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *ErrorResponse) Encode(e *Encoder) { e.WriteInt(r.Err) }

// Decode implements Record.
func (r *ErrorResponse) Decode(d *Decoder) error {
	r.Err = d.ReadInt()
	return d.Err()
}
