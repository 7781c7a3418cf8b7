package jute

import (
	"reflect"
)

// sample is one record value used by the round-trip, truncation, fuzz and
// coverage tests.
type sample struct {
	name string
	rec  Record
	// optionalTail is the number of trailing bytes that may be missing
	// without a decode error (the optional readOnly byte).
	optionalTail int
}

// newLike returns a new zero record of rec's type.
func newLike(rec Record) Record {
	return reflect.New(reflect.TypeOf(rec).Elem()).Interface().(Record)
}

var testStat = Stat{
	Czxid:          0x0000000100000002,
	Mzxid:          0x0000000100000003,
	Ctime:          1700000000000,
	Mtime:          1700000000123,
	Version:        7,
	Cversion:       -2,
	Aversion:       1,
	EphemeralOwner: 0x0123456789abcdef,
	DataLength:     5,
	NumChildren:    2,
	Pzxid:          0x0000000100000004,
}

var worldACL = []ACL{{Perms: PermAll, ID: Id{Scheme: "world", ID: "anyone"}}}

func passwd16() []byte {
	p := make([]byte, 16)
	for i := range p {
		p[i] = byte(0xa0 + i)
	}
	return p
}

// samples returns fresh record values covering every record type, with nil
// and empty buffers and vectors kept apart.
func samples() []sample {
	return []sample{
		{name: "Id", rec: &Id{Scheme: "digest", ID: "bob:hash"}},
		{name: "Id/empty", rec: &Id{}},
		{name: "ACL", rec: &ACL{Perms: PermRead | PermWrite, ID: Id{Scheme: "ip", ID: "127.0.0.1"}}},
		{name: "Stat", rec: &Stat{}},
		{name: "Stat/full", rec: ptr(testStat)},
		{name: "ClientInfo", rec: &ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}},

		{name: "ConnectRequest/readOnly", rec: &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 12, TimeOut: 30000, SessionID: 0x77, Passwd: passwd16(), ReadOnly: true, HasReadOnly: true}, optionalTail: 1},
		{name: "ConnectRequest/readOnlyFalse", rec: &ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16), HasReadOnly: true}, optionalTail: 1},
		{name: "ConnectRequest/noReadOnly", rec: &ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16)}},
		{name: "ConnectRequest/nilPasswd", rec: &ConnectRequest{SessionID: -1}},
		{name: "ConnectRequest/emptyPasswd", rec: &ConnectRequest{Passwd: []byte{}}},
		{name: "ConnectResponse/readOnly", rec: &ConnectResponse{TimeOut: 40000, SessionID: 0x1234, Passwd: passwd16(), HasReadOnly: true}, optionalTail: 1},
		{name: "ConnectResponse/noReadOnly", rec: &ConnectResponse{TimeOut: 40000, SessionID: 0x1234, Passwd: passwd16()}},

		{name: "RequestHeader", rec: &RequestHeader{Xid: -2, Type: OpPing}},
		{name: "ReplyHeader", rec: &ReplyHeader{Xid: -1, Zxid: -1, Err: ErrNoNode}},
		{name: "WatcherEvent", rec: &WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: "/a/b"}},
		{name: "MultiHeader", rec: &MultiHeader{Type: -1, Done: true, Err: -1}},
		{name: "AuthPacket", rec: &AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("bob:secret")}},
		{name: "AuthPacket/nilAuth", rec: &AuthPacket{Scheme: "x"}},
		{name: "AuthPacket/emptyAuth", rec: &AuthPacket{Scheme: "x", Auth: []byte{}}},

		{name: "CreateRequest", rec: &CreateRequest{Path: "/a", Data: []byte("hi"), ACL: worldACL, Flags: FlagEphemeralSequential}},
		{name: "CreateRequest/nilDataNilACL", rec: &CreateRequest{Path: "/a"}},
		{name: "CreateRequest/emptyDataEmptyACL", rec: &CreateRequest{Path: "/a", Data: []byte{}, ACL: []ACL{}}},
		{name: "CreateRequest/unicode", rec: &CreateRequest{Path: "/ünï/\u4e16", Data: []byte{0, 0xff}, ACL: []ACL{worldACL[0], {Perms: 1, ID: Id{Scheme: "auth"}}}}},
		{name: "CreateRequest/invalidUTF8", rec: &CreateRequest{Path: "/\xed\xa0\x80\xff", Data: nil, ACL: nil}},
		{name: "CreateTTLRequest", rec: &CreateTTLRequest{Path: "/t", Data: []byte("x"), ACL: worldACL, Flags: FlagPersistentWithTTL, TTL: 60000}},
		{name: "CreateResponse", rec: &CreateResponse{Path: "/a0000000001"}},
		{name: "Create2Response", rec: &Create2Response{Path: "/a", Stat: testStat}},
		{name: "DeleteRequest", rec: &DeleteRequest{Path: "/a", Version: -1}},
		{name: "PathWatchRequest", rec: &PathWatchRequest{Path: "/a", Watch: true}},
		{name: "PathRequest", rec: &PathRequest{Path: "/zookeeper/config"}},
		{name: "PathRequest/empty", rec: &PathRequest{}},
		{name: "StatResponse", rec: &StatResponse{Stat: testStat}},
		{name: "GetDataResponse", rec: &GetDataResponse{Data: []byte("hello"), Stat: testStat}},
		{name: "GetDataResponse/nil", rec: &GetDataResponse{Stat: testStat}},
		{name: "GetDataResponse/empty", rec: &GetDataResponse{Data: []byte{}}},
		{name: "SetDataRequest", rec: &SetDataRequest{Path: "/a", Data: []byte("v2"), Version: 3}},
		{name: "SetDataRequest/nil", rec: &SetDataRequest{Path: "/a", Version: -1}},
		{name: "GetACLResponse", rec: &GetACLResponse{ACL: worldACL, Stat: testStat}},
		{name: "GetACLResponse/nil", rec: &GetACLResponse{}},
		{name: "SetACLRequest", rec: &SetACLRequest{Path: "/a", ACL: worldACL, Version: 0}},
		{name: "SetACLRequest/empty", rec: &SetACLRequest{Path: "/a", ACL: []ACL{}, Version: -1}},
		{name: "GetChildrenResponse", rec: &GetChildrenResponse{Children: []string{"a", "", "zookeeper"}}},
		{name: "GetChildrenResponse/nil", rec: &GetChildrenResponse{}},
		{name: "GetChildrenResponse/empty", rec: &GetChildrenResponse{Children: []string{}}},
		{name: "GetChildren2Response", rec: &GetChildren2Response{Children: []string{"x"}, Stat: testStat}},
		{name: "CheckVersionRequest", rec: &CheckVersionRequest{Path: "/c", Version: 4}},
		{name: "ReconfigRequest", rec: &ReconfigRequest{JoiningServers: "server.4=h:2888:3888", NewMembers: "", CurConfigID: -1}},
		{name: "WatchesRequest", rec: &WatchesRequest{Path: "/w", Type: WatcherTypeAny}},
		{name: "SetWatches", rec: &SetWatches{RelativeZxid: 99, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: nil}},
		{name: "SetWatches2", rec: &SetWatches2{RelativeZxid: 5, DataWatches: []string{"/a", "/b"}, PersistentWatches: []string{}, PersistentRecursiveWatches: []string{"/"}}},
		{name: "StringsResponse", rec: &StringsResponse{Strings: []string{"/e1", "/e2"}}},
		{name: "StringsResponse/nil", rec: &StringsResponse{}},
		{name: "IntResponse", rec: &IntResponse{Value: 42}},
		{name: "AddWatchRequest", rec: &AddWatchRequest{Path: "/", Mode: AddWatchModePersistentRecursive}},
		{name: "ErrorResponse", rec: &ErrorResponse{Err: 0}},
		{name: "WhoAmIResponse", rec: &WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "digest", User: "bob"}, {AuthScheme: "ip", User: "127.0.0.1"}}}},
		{name: "WhoAmIResponse/nil", rec: &WhoAmIResponse{}},
		{name: "WhoAmIResponse/empty", rec: &WhoAmIResponse{ClientInfo: []ClientInfo{}}},
		{name: "BufferRecord", rec: &BufferRecord{Token: []byte{1, 2, 3}}},
		{name: "BufferRecord/nil", rec: &BufferRecord{}},
		{name: "BufferRecord/empty", rec: &BufferRecord{Token: []byte{}}},

		{name: "MultiRequest/empty", rec: &MultiRequest{}},
		{name: "MultiRequest/allOps", rec: &MultiRequest{Ops: []MultiOp{
			{Type: OpCreate, Create: &CreateRequest{Path: "/a", Data: []byte("x"), ACL: worldACL}},
			{Type: OpCreate2, Create: &CreateRequest{Path: "/b", ACL: worldACL, Flags: FlagEphemeral}},
			{Type: OpCreateContainer, Create: &CreateRequest{Path: "/c", Data: []byte{}, ACL: worldACL, Flags: FlagContainer}},
			{Type: OpCreateTTL, CreateTTL: &CreateTTLRequest{Path: "/d", ACL: worldACL, Flags: FlagPersistentWithTTL, TTL: 1000}},
			{Type: OpDelete, Delete: &DeleteRequest{Path: "/e", Version: -1}},
			{Type: OpSetData, SetData: &SetDataRequest{Path: "/a", Data: []byte("y"), Version: 0}},
			{Type: OpCheck, Check: &CheckVersionRequest{Path: "/a", Version: 1}},
		}}},
		{name: "MultiRequest/reads", rec: &MultiRequest{Ops: []MultiOp{
			{Type: OpGetData, Read: &PathWatchRequest{Path: "/a"}},
			{Type: OpGetChildren, Read: &PathWatchRequest{Path: "/", Watch: true}},
		}}},
		{name: "MultiResponse/empty", rec: &MultiResponse{}},
		{name: "MultiResponse/allResults", rec: &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Path: "/a"},
			{Type: OpCreate2, Path: "/b", Stat: testStat},
			{Type: OpDelete},
			{Type: OpSetData, Stat: testStat},
			{Type: OpCheck},
			{Type: OpError, Err: ErrBadVersion},
			{Type: OpError, Err: ErrRuntimeInconsistency},
		}}},
		{name: "MultiResponse/reads", rec: &MultiResponse{Results: []MultiResult{
			{Type: OpGetData, Data: []byte("d"), Stat: testStat},
			{Type: OpGetData, Data: nil},
			{Type: OpGetData, Data: []byte{}},
			{Type: OpGetChildren, Children: []string{"x", "y"}},
			{Type: OpGetChildren, Children: nil},
			{Type: OpGetChildren, Children: []string{}},
			{Type: OpError, Err: ErrNoNode},
		}}},
	}
}

func ptr[T any](v T) *T { return &v }
