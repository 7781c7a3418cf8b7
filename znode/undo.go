package znode

// undoOp is the kind of change an undoRec reverts.
type undoOp uint8

const (
	undoInsert undoOp = iota // n was inserted under parent: remove it
	undoRemove               // n was removed from parent: insert it back
	undoMeta                 // n's meta was changed: restore saved
)

// undoRec is one entry of a multi's undo log.
type undoRec struct {
	op     undoOp
	n      *node
	parent *node
	saved  meta
}

// begin starts recording an undo log.
func (t *Tree) begin() {
	t.recording = true
	t.undo = t.undo[:0]
}

// commit stops recording and forgets the log.
func (t *Tree) commit() {
	t.recording = false
	clear(t.undo) // drop node pointers
	t.undo = t.undo[:0]
}

// rollback reverts every change recorded since begin, newest first.
func (t *Tree) rollback() {
	t.recording = false
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := &t.undo[i]
		switch u.op {
		case undoInsert:
			t.remove(u.n, u.parent)
		case undoRemove:
			t.insert(u.n, u.parent)
		case undoMeta:
			delta := int64(u.saved.dlen) - int64(u.n.dlen)
			t.dataSize += delta
			t.charge(u.n.path(), 0, delta)
			// The node is in the tree (it was when its meta was saved,
			// and the later changes are undone): its ACL counts move.
			// No multi op changes an ACL today; this keeps the table
			// right (acllist.go) if one does.
			if u.saved.acl != u.n.acl {
				u.saved.acl = t.acquire(u.saved.acl)
				t.release(u.n.acl)
			}
			u.n.restore(&u.saved)
		}
	}
	// The restored metas hold the stats nodes' old data already.
	clear(t.quotaDirty)
	t.quotaDirty = t.quotaDirty[:0]
	t.commit()
}
