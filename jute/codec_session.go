package jute

// This file holds the session-level records: the handshake, the headers,
// notifications, auth and watch re-registration.

// Encode implements Record. The readOnly byte is written only if HasReadOnly.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.WriteInt(r.ProtocolVersion)
	e.WriteLong(r.LastZxidSeen)
	e.WriteInt(r.TimeOut)
	e.WriteLong(r.SessionID)
	e.WriteBuffer(r.Passwd)
	if r.HasReadOnly {
		e.WriteBool(r.ReadOnly)
	}
}

// Decode implements Record. The trailing readOnly byte is optional (older
// clients and go-zookeeper omit it): it is read if at least one byte remains,
// and HasReadOnly records whether it was there.
func (r *ConnectRequest) Decode(d *Decoder) error {
	r.ProtocolVersion = d.ReadInt()
	r.LastZxidSeen = d.ReadLong()
	r.TimeOut = d.ReadInt()
	r.SessionID = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.ReadOnly, r.HasReadOnly = readOptionalBool(d)
	return d.Err()
}

// Encode implements Record. The readOnly byte is written only if HasReadOnly.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.WriteInt(r.ProtocolVersion)
	e.WriteInt(r.TimeOut)
	e.WriteLong(r.SessionID)
	e.WriteBuffer(r.Passwd)
	if r.HasReadOnly {
		e.WriteBool(r.ReadOnly)
	}
}

// Decode implements Record; the readOnly byte is read if one remains.
func (r *ConnectResponse) Decode(d *Decoder) error {
	r.ProtocolVersion = d.ReadInt()
	r.TimeOut = d.ReadInt()
	r.SessionID = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.ReadOnly, r.HasReadOnly = readOptionalBool(d)
	return d.Err()
}

// readOptionalBool reads a trailing boolean if the input has a byte left and
// no error happened before it.
func readOptionalBool(d *Decoder) (v, present bool) {
	if d.Err() != nil || d.Remaining() < 1 {
		return false, false
	}
	return d.ReadBool(), true
}

// Encode implements Record.
func (r *RequestHeader) Encode(e *Encoder) {
	e.WriteInt(r.Xid)
	e.WriteInt(r.Type)
}

// Decode implements Record.
func (r *RequestHeader) Decode(d *Decoder) error {
	r.Xid = d.ReadInt()
	r.Type = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *ReplyHeader) Encode(e *Encoder) {
	e.WriteInt(r.Xid)
	e.WriteLong(r.Zxid)
	e.WriteInt(r.Err)
}

// Decode implements Record.
func (r *ReplyHeader) Decode(d *Decoder) error {
	r.Xid = d.ReadInt()
	r.Zxid = d.ReadLong()
	r.Err = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.WriteInt(r.Type)
	e.WriteInt(r.State)
	e.WriteString(r.Path)
}

// Decode implements Record.
func (r *WatcherEvent) Decode(d *Decoder) error {
	r.Type = d.ReadInt()
	r.State = d.ReadInt()
	r.Path = d.ReadString()
	return d.Err()
}

// Encode implements Record.
func (r *MultiHeader) Encode(e *Encoder) {
	e.WriteInt(r.Type)
	e.WriteBool(r.Done)
	e.WriteInt(r.Err)
}

// Decode implements Record.
func (r *MultiHeader) Decode(d *Decoder) error {
	r.Type = d.ReadInt()
	r.Done = d.ReadBool()
	r.Err = d.ReadInt()
	return d.Err()
}

// Encode implements Record.
func (r *AuthPacket) Encode(e *Encoder) {
	e.WriteInt(r.Type)
	e.WriteString(r.Scheme)
	e.WriteBuffer(r.Auth)
}

// Decode implements Record.
func (r *AuthPacket) Decode(d *Decoder) error {
	r.Type = d.ReadInt()
	r.Scheme = d.ReadString()
	r.Auth = d.ReadBuffer()
	return d.Err()
}

// Encode implements Record.
func (r *SetWatches) Encode(e *Encoder) {
	e.WriteLong(r.RelativeZxid)
	e.WriteStrings(r.DataWatches)
	e.WriteStrings(r.ExistWatches)
	e.WriteStrings(r.ChildWatches)
}

// Decode implements Record.
func (r *SetWatches) Decode(d *Decoder) error {
	r.RelativeZxid = d.ReadLong()
	r.DataWatches = d.ReadStrings()
	r.ExistWatches = d.ReadStrings()
	r.ChildWatches = d.ReadStrings()
	return d.Err()
}

// Encode implements Record.
func (r *SetWatches2) Encode(e *Encoder) {
	e.WriteLong(r.RelativeZxid)
	e.WriteStrings(r.DataWatches)
	e.WriteStrings(r.ExistWatches)
	e.WriteStrings(r.ChildWatches)
	e.WriteStrings(r.PersistentWatches)
	e.WriteStrings(r.PersistentRecursiveWatches)
}

// Decode implements Record.
func (r *SetWatches2) Decode(d *Decoder) error {
	r.RelativeZxid = d.ReadLong()
	r.DataWatches = d.ReadStrings()
	r.ExistWatches = d.ReadStrings()
	r.ChildWatches = d.ReadStrings()
	r.PersistentWatches = d.ReadStrings()
	r.PersistentRecursiveWatches = d.ReadStrings()
	return d.Err()
}

// Encode implements Record.
func (r *WhoAmIResponse) Encode(e *Encoder) { writeRecords(e, r.ClientInfo) }

// Decode implements Record.
func (r *WhoAmIResponse) Decode(d *Decoder) error {
	r.ClientInfo = readRecords[ClientInfo](d, minClientInfoSize, "vector<ClientInfo>")
	return d.Err()
}

// Encode implements Record.
func (r *BufferRecord) Encode(e *Encoder) { e.WriteBuffer(r.Token) }

// Decode implements Record.
func (r *BufferRecord) Decode(d *Decoder) error {
	r.Token = d.ReadBuffer()
	return d.Err()
}
