package jute

// OpCode is ZooKeeper's request type (ZooDefs.OpCode).
const (
	OpNotification         int32 = 0
	OpCreate               int32 = 1
	OpDelete               int32 = 2
	OpExists               int32 = 3
	OpGetData              int32 = 4
	OpSetData              int32 = 5
	OpGetACL               int32 = 6
	OpSetACL               int32 = 7
	OpGetChildren          int32 = 8
	OpSync                 int32 = 9
	OpPing                 int32 = 11
	OpGetChildren2         int32 = 12
	OpCheck                int32 = 13
	OpMulti                int32 = 14
	OpCreate2              int32 = 15
	OpReconfig             int32 = 16
	OpCheckWatches         int32 = 17
	OpRemoveWatches        int32 = 18
	OpCreateContainer      int32 = 19
	OpDeleteContainer      int32 = 20
	OpCreateTTL            int32 = 21
	OpMultiRead            int32 = 22
	OpAuth                 int32 = 100
	OpSetWatches           int32 = 101
	OpSASL                 int32 = 102
	OpGetEphemerals        int32 = 103
	OpGetAllChildrenNumber int32 = 104
	OpSetWatches2          int32 = 105
	OpAddWatch             int32 = 106
	OpWhoAmI               int32 = 107
	OpCreateSession        int32 = -10
	OpCloseSession         int32 = -11
	OpError                int32 = -1
)

// Special xids.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Error codes (KeeperException.Code).
const (
	ErrOk                      int32 = 0
	ErrSystemError             int32 = -1
	ErrRuntimeInconsistency    int32 = -2
	ErrDataInconsistency       int32 = -3
	ErrConnectionLoss          int32 = -4
	ErrMarshallingError        int32 = -5
	ErrUnimplemented           int32 = -6
	ErrOperationTimeout        int32 = -7
	ErrBadArguments            int32 = -8
	ErrUnknownSession          int32 = -12
	ErrNewConfigNoQuorum       int32 = -13
	ErrReconfigInProgress      int32 = -14
	ErrAPIError                int32 = -100
	ErrNoNode                  int32 = -101
	ErrNoAuth                  int32 = -102
	ErrBadVersion              int32 = -103
	ErrNoChildrenForEphemerals int32 = -108
	ErrNodeExists              int32 = -110
	ErrNotEmpty                int32 = -111
	ErrSessionExpired          int32 = -112
	ErrInvalidCallback         int32 = -113
	ErrInvalidACL              int32 = -114
	ErrAuthFailed              int32 = -115
	ErrSessionMoved            int32 = -118
	ErrNotReadOnly             int32 = -119
	ErrEphemeralOnLocalSession int32 = -120
	ErrNoWatcher               int32 = -121
	ErrRequestTimeout          int32 = -122
	ErrReconfigDisabled        int32 = -123
	// ErrSessionClosedRequireAuth (SESSIONCLOSEDREQUIRESASLAUTH): the server
	// requires authentication (sessionRequireClientSASLAuth, enforce.auth.*)
	// and closes the connection.
	ErrSessionClosedRequireAuth int32 = -124
	ErrQuotaExceeded            int32 = -125
	ErrThrottledOp              int32 = -127
)

// Watch event types (Watcher.Event.EventType) sent by the server.
const (
	EventNone                int32 = -1
	EventNodeCreated         int32 = 1
	EventNodeDeleted         int32 = 2
	EventNodeDataChanged     int32 = 3
	EventNodeChildrenChanged int32 = 4
)

// StateSyncConnected is the only KeeperState a server sends.
const StateSyncConnected int32 = 3

// Permission bits.
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// Create flags (CreateMode).
const (
	FlagPersistent                  int32 = 0
	FlagEphemeral                   int32 = 1
	FlagPersistentSequential        int32 = 2
	FlagEphemeralSequential         int32 = 3
	FlagContainer                   int32 = 4
	FlagPersistentWithTTL           int32 = 5
	FlagPersistentSequentialWithTTL int32 = 6
)

// Watcher types for checkWatches/removeWatches, and addWatch modes.
const (
	WatcherTypeChildren int32 = 1
	WatcherTypeData     int32 = 2
	WatcherTypeAny      int32 = 3

	AddWatchModePersistent          int32 = 0
	AddWatchModePersistentRecursive int32 = 1
)

// DefaultMaxBuffer is jute.maxbuffer's default (0xfffff).
const DefaultMaxBuffer = 0xfffff
