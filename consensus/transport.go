package consensus

import (
	"context"

	pb "go.etcd.io/raft/v3/raftpb"
)

// Transport carries raft messages between members. A nil Transport in
// Config means a single-member group with no network.
type Transport interface {
	// Send queues msgs for delivery, best effort, and is safe for
	// concurrent use. It is called from the Core's goroutine (Node's loop)
	// after the Ready's state is durable, or, with
	// CoreOptions.ParallelApply, from the goroutine that wrote it (while
	// the loop applies entries), and by Node.Propose on a follower, which
	// forwards a proposal (MsgProp) itself. It must not block for long: implementations marshal the messages inside
	// Send (raft messages must not be read after Send returns, because raft
	// may reuse their entries) and drop on a full queue, reporting the peer
	// unreachable. A transport that delivers a MsgSnap must call
	// MessageHandler.ReportSnapshot once the send finished or failed, also
	// when it drops it unsent.
	Send(msgs []*pb.Message)
	// Start begins accepting messages and hands every received message to h.
	Start(h MessageHandler) error
	// Stop closes connections and waits for the transport's goroutines. It
	// is called once, when the node stops.
	Stop()
}

// MessageHandler receives what the transport learns; *Node implements it.
// All methods are safe to call from any goroutine.
type MessageHandler interface {
	// Step hands a message received from a peer to raft. It must not block
	// for long: the transport calls it from the reader of the connection the
	// message came on, and that peer's later messages wait behind it.
	Step(ctx context.Context, m *pb.Message) error
	// ReportUnreachable tells raft that the last message to id could not be
	// delivered, so the leader probes instead of streaming to it.
	ReportUnreachable(id uint64)
	// ReportSnapshot tells raft whether a MsgSnap to id was delivered.
	ReportSnapshot(id uint64, failed bool)
}

// PeerUpdater is implemented by transports that learn about members added
// or removed at run time (see AddMember/RemoveMember). The node calls it from
// its loop goroutine when a conf change carrying a peer address is applied.
type PeerUpdater interface {
	AddPeer(p Peer)
	RemovePeer(id uint64)
}
