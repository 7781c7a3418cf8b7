package jute

// Record is implemented by every jute record. Encode appends the record's
// wire form; Decode reads it and returns the Decoder's first error.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder) error
}

// Id is an authentication identity: scheme ("world", "digest", "ip", ...) and id.
type Id struct {
	Scheme string
	ID     string
}

// ACL is one access-control entry.
type ACL struct {
	Perms int32
	ID    Id
}

// Stat is a znode's metadata, 68 bytes on the wire, in this field order.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// ConnectRequest opens or resumes a session. HasReadOnly records whether the
// optional trailing readOnly byte was present (decode) or is to be written (encode).
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// ConnectResponse answers a ConnectRequest. The readOnly byte is written only
// when HasReadOnly is set (reply with it only if the request had it).
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid  int32
	Type int32
}

// ReplyHeader precedes every reply and notification.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  int32
}

// WatcherEvent is a notification body (sent with xid -1).
type WatcherEvent struct {
	Type  int32
	State int32
	Path  string
}

// MultiHeader precedes each op of a multi request/response; the list ends with
// {Type: -1, Done: true, Err: -1}.
type MultiHeader struct {
	Type int32
	Done bool
	Err  int32
}

// AuthPacket is the auth (100) request.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// CreateRequest is the body of create (1), create2 (15) and createContainer (19).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// CreateTTLRequest is the body of createTTL (21).
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// CreateResponse answers create (1).
type CreateResponse struct{ Path string }

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// DeleteRequest is the body of delete (2).
type DeleteRequest struct {
	Path    string
	Version int32
}

// PathWatchRequest is the body of exists (3), getData (4), getChildren (8)
// and getChildren2 (12).
type PathWatchRequest struct {
	Path  string
	Watch bool
}

// PathRequest is the body of getACL (6), sync (9), getEphemerals (103) and
// getAllChildrenNumber (104); also SyncResponse.
type PathRequest struct{ Path string }

// StatResponse answers exists, setData and is the stat-only body.
type StatResponse struct{ Stat Stat }

// GetDataResponse answers getData (and reconfig).
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// SetDataRequest is the body of setData (5).
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// GetACLResponse answers getACL (6).
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// SetACLRequest is the body of setACL (7); Version is the expected aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// GetChildrenResponse answers getChildren (8).
type GetChildrenResponse struct{ Children []string }

// GetChildren2Response answers getChildren2 (12).
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// CheckVersionRequest is the body of check (13), valid only inside multi.
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// ReconfigRequest is the body of reconfig (16). Null strings decode as "".
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// WatchesRequest is the body of checkWatches (17) and removeWatches (18).
type WatchesRequest struct {
	Path string
	Type int32
}

// SetWatches is the body of setWatches (101).
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// SetWatches2 is the body of setWatches2 (105).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// StringsResponse answers getEphemerals (103): a vector of strings.
type StringsResponse struct{ Strings []string }

// IntResponse answers getAllChildrenNumber (104).
type IntResponse struct{ Value int32 }

// AddWatchRequest is the body of addWatch (106).
type AddWatchRequest struct {
	Path string
	Mode int32
}

// ErrorResponse is the 4-byte body of addWatch's reply and of a failed op in a multi.
type ErrorResponse struct{ Err int32 }

// ClientInfo is one entry of a whoAmI reply.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// WhoAmIResponse answers whoAmI (107).
type WhoAmIResponse struct{ ClientInfo []ClientInfo }

// BufferRecord is GetSASLRequest / SetSASLResponse: one buffer.
type BufferRecord struct{ Token []byte }

// MultiOp is one op of a multi (14) or multiRead (22) request. Exactly one of
// the pointers matches Type:
//   - Create for 1, 15, 19; CreateTTL for 21; Delete for 2; SetData for 5;
//     Check for 13; Read (path + ignored watch flag) for 4 and 8.
type MultiOp struct {
	Type      int32
	Create    *CreateRequest
	CreateTTL *CreateTTLRequest
	Delete    *DeleteRequest
	SetData   *SetDataRequest
	Check     *CheckVersionRequest
	Read      *PathWatchRequest
}

// MultiRequest is the body of multi (14) and multiRead (22). Decoding fails
// with ErrUnknownMultiOp for an op type it does not know.
type MultiRequest struct{ Ops []MultiOp }

// MultiResult is one result of a multi response. Type is the result type:
// 1 (Path), 15 (Path, Stat), 2, 13 (no body), 5 (Stat), 4 (Data, Stat),
// 8 (Children), -1 (Err: ErrorResponse; the header's err holds Err too).
type MultiResult struct {
	Type     int32
	Err      int32
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
}

// MultiResponse answers multi and multiRead.
type MultiResponse struct{ Results []MultiResult }
