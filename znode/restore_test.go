package znode

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/zkraft/zkraft/jute"
)

// A multi rolled back while a frozen encoder sorts: meta.restore must not
// write plen, which sortPath reads without synchronization (-race reports
// it otherwise).
func TestRollbackRacesFrozenSort(t *testing.T) {
	tree := mustNewTree(t)
	c := newClient(t, tree)
	for i := range 3000 {
		c.mk(fmt.Sprintf("/b%d", i), []byte("data"), 0)
	}
	f := tree.Freeze()
	done := make(chan error, 1)
	go func() {
		defer f.Release()
		done <- f.WriteSnapshot(&bytes.Buffer{})
	}()
	for i := range 3000 {
		r, _ := c.apply(multiW(opSetData(fmt.Sprintf("/b%d", i), "x", -1), opCheck("/b0", 99)))
		require.Equal(t, jute.ErrBadVersion, r.Multi[1].Err)
	}
	require.NoError(t, <-done)
}

// restore copies every field of meta but plen (which never changes): a
// field added to meta and forgotten in restore fails here.
func TestRestoreCopiesEveryField(t *testing.T) {
	var s meta
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int32, reflect.Int64, reflect.Uint8:
			if f.CanInt() {
				f.SetInt(int64(i + 1))
			} else {
				f.SetUint(uint64(i + 1))
			}
		case reflect.Uint32:
			f.SetUint(uint64(i + 1))
		default:
			t.Fatalf("field %s of kind %s", v.Type().Field(i).Name, f.Kind())
		}
	}
	m := meta{plen: s.plen}
	m.restore(&s)
	require.Equal(t, s, m)
}
