package jute

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// unhex turns a hand-written fixture into bytes: one field per line, hex
// digits with optional spaces, and a '#' comment naming the field.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var digits strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("bad fixture: %v", err)
	}
	return b
}

// TestGolden checks encodings against bytes written out by hand from the
// protocol description (zookeeper.jute field order, big-endian), so a wrong
// field order or width fails here even if encode and decode agree.
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		hex  string
	}{
		{
			name: "ConnectRequest",
			rec: &ConnectRequest{
				ProtocolVersion: 0, LastZxidSeen: 0x0102030405060708, TimeOut: 30000,
				SessionID: 0x1122334455667788, Passwd: passwd16(), ReadOnly: true, HasReadOnly: true,
			},
			hex: `
				00000000                          # protocolVersion
				0102030405060708                  # lastZxidSeen
				00007530                          # timeOut 30000
				1122334455667788                  # sessionId
				00000010                          # passwd length 16
				a0a1a2a3a4a5a6a7a8a9aaabacadaeaf  # passwd
				01                                # readOnly`,
		},
		{
			name: "ConnectResponse/noReadOnly",
			rec:  &ConnectResponse{ProtocolVersion: 0, TimeOut: 4000, SessionID: -2, Passwd: make([]byte, 16)},
			hex: `
				00000000                          # protocolVersion
				00000fa0                          # timeOut 4000
				fffffffffffffffe                  # sessionId -2
				00000010                          # passwd length
				00000000000000000000000000000000  # passwd`,
		},
		{
			name: "RequestHeader",
			rec:  &RequestHeader{Xid: -2, Type: OpPing},
			hex:  `fffffffe 0000000b # xid -2, type 11`,
		},
		{
			name: "ReplyHeader",
			rec:  &ReplyHeader{Xid: 5, Zxid: 0x100000002, Err: ErrNoNode},
			hex: `
				00000005          # xid
				0000000100000002  # zxid
				ffffff9b          # err -101`,
		},
		{
			name: "Stat",
			rec:  ptr(testStat),
			hex: `
				0000000100000002  # czxid
				0000000100000003  # mzxid
				0000018bcfe56800  # ctime 1700000000000
				0000018bcfe5687b  # mtime 1700000000123
				00000007          # version
				fffffffe          # cversion -2
				00000001          # aversion
				0123456789abcdef  # ephemeralOwner
				00000005          # dataLength
				00000002          # numChildren
				0000000100000004  # pzxid`,
		},
		{
			name: "CreateRequest",
			rec:  &CreateRequest{Path: "/a", Data: []byte("hi"), ACL: worldACL, Flags: FlagEphemeralSequential},
			hex: `
				00000002 2f61          # path "/a"
				00000002 6869          # data "hi"
				00000001               # acl count
				0000001f               #   perms ALL
				00000005 776f726c64    #   scheme "world"
				00000006 616e796f6e65  #   id "anyone"
				00000003               # flags EPHEMERAL_SEQUENTIAL`,
		},
		{
			name: "CreateRequest/null",
			rec:  &CreateRequest{Path: "", Data: nil, ACL: nil},
			hex: `
				00000000  # path ""
				ffffffff  # data null
				ffffffff  # acl null
				00000000  # flags`,
		},
		{
			name: "GetDataResponse/null",
			rec:  &GetDataResponse{Data: nil, Stat: Stat{Pzxid: 1}},
			hex: `
				ffffffff  # data null
				0000000000000000 0000000000000000 0000000000000000 0000000000000000  # czxid mzxid ctime mtime
				00000000 00000000 00000000   # version cversion aversion
				0000000000000000             # ephemeralOwner
				00000000 00000000            # dataLength numChildren
				0000000000000001             # pzxid`,
		},
		{
			name: "GetChildrenResponse",
			rec:  &GetChildrenResponse{Children: []string{"a", "bc"}},
			hex:  `00000002  00000001 61  00000002 6263`,
		},
		{
			name: "WatcherEvent",
			rec:  &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/x"},
			hex:  `00000003 00000003 00000002 2f78`,
		},
		{
			name: "MultiRequest",
			rec: &MultiRequest{Ops: []MultiOp{
				{Type: OpCreate, Create: &CreateRequest{Path: "/a", Data: []byte{}, ACL: []ACL{}, Flags: 0}},
				{Type: OpDelete, Delete: &DeleteRequest{Path: "/b", Version: -1}},
				{Type: OpCheck, Check: &CheckVersionRequest{Path: "/c", Version: 3}},
			}},
			hex: `
				00000001 00 ffffffff  # header: create, done=false, err=-1
				00000002 2f61         #   path "/a"
				00000000              #   data empty
				00000000              #   acl empty
				00000000              #   flags
				00000002 00 ffffffff  # header: delete
				00000002 2f62         #   path "/b"
				ffffffff              #   version -1
				0000000d 00 ffffffff  # header: check
				00000002 2f63         #   path "/c"
				00000003              #   version 3
				ffffffff 01 ffffffff  # terminator`,
		},
		{
			name: "MultiResponse",
			rec: &MultiResponse{Results: []MultiResult{
				{Type: OpCreate, Path: "/a"},
				{Type: OpDelete},
				{Type: OpError, Err: ErrNoNode},
			}},
			hex: `
				00000001 00 00000000  # header: create, err 0
				00000002 2f61         #   path "/a"
				00000002 00 00000000  # header: delete, no body
				ffffffff 00 ffffff9b  # header: error, err -101
				ffffff9b              #   ErrorResponse{-101}
				ffffffff 01 ffffffff  # terminator`,
		},
		{
			name: "MultiResponse/reads",
			rec: &MultiResponse{Results: []MultiResult{
				{Type: OpGetData, Data: []byte("z"), Stat: Stat{}},
				{Type: OpGetChildren, Children: []string{"k"}},
			}},
			hex: `
				00000004 00 00000000  # header: getData
				00000001 7a           #   data "z"
				` + strings.Repeat("00", 68) + ` # stat
				00000008 00 00000000  # header: getChildren
				00000001 00000001 6b  #   children ["k"]
				ffffffff 01 ffffffff  # terminator`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			if got := Marshal(tt.rec); !bytes.Equal(got, want) {
				t.Errorf("Marshal = %x\nwant      %x", got, want)
			}
			got := newLike(tt.rec)
			if err := Unmarshal(want, got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("Unmarshal = %#v; want %#v", got, tt.rec)
			}
		})
	}
}
