package consensus

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestApplyErrorStopsNode: an entry the state machine refuses stops the
// node. Nothing after it is applied, the applied index stays just below it,
// Err names it, and a restart from the same log stops at the same entry
// again rather than skipping it.
func TestApplyErrorStopsNode(t *testing.T) {
	dir := t.TempDir()
	sm := newLogSM()
	sm.refuse = "bad"
	tn, err := tryStartTestNodeSM(t, dir, sm)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tn.Stop() })
	tn.waitLeader(t)
	good := tn.proposeEach(t, "ok", 2)
	// proposeEach returns once the state machine saw the entries; the
	// node's applied index moves just after Apply returns, so take the
	// refused entry's index from the state machine and let the node catch up.
	ctx := testCtx(t)
	idx := sm.state().indexes
	lastGood := idx[len(idx)-1]
	require.NoError(t, tn.WaitApplied(ctx, lastGood))
	badIndex := lastGood + 1
	require.NoError(t, tn.Propose(ctx, []byte("bad")))
	_ = tn.Propose(ctx, []byte("after")) // may find the node stopped already

	select {
	case <-tn.Done():
	case <-ctx.Done():
		t.Fatal("node did not stop after the state machine refused an entry")
	}
	require.ErrorContains(t, tn.Err(), "cannot apply")
	require.Equal(t, badIndex-1, tn.AppliedIndex(), "applied index moved past the refused entry")
	require.Equal(t, good, sm.state().datas, "nothing applied after the refused entry")
	require.Empty(t, sm.violations())
	require.NoError(t, tn.Stop())

	// Restart: the log replays up to the refused entry and stops there again.
	sm2 := newLogSM()
	sm2.refuse = "bad"
	tn2, err := tryStartTestNodeSM(t, dir, sm2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tn2.Stop() })
	select {
	case <-tn2.Done():
	case <-ctx.Done():
		t.Fatal("restarted node did not stop at the refused entry")
	}
	require.ErrorContains(t, tn2.Err(), "cannot apply")
	require.Equal(t, badIndex-1, tn2.AppliedIndex())
	require.Equal(t, good, sm2.state().datas)
}
