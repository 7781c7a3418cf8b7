package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Snapshot file format (all integers big-endian):
//
//	magic    8 bytes  "ZKRSNAP1"
//	crc32c   4 bytes  Castagnoli checksum of payload
//	length   8 bytes  len(payload)
//	payload  length bytes, exactly what StateMachine.Snapshot returned
//
// Files are named <term>-<index>.snap with both numbers as 16 hex digits, so
// lexical order is log order. A file is written to <name>.tmp, fsync'd,
// renamed and the directory fsync'd before bbolt records it as the current
// snapshot: a crash can leave a stray newer file (deleted on the next start)
// but never a recorded snapshot that is not on disk.
const (
	snapMagic      = "ZKRSNAP1"
	snapHeaderSize = len(snapMagic) + 4 + 8
	snapSuffix     = ".snap"
	tmpSuffix      = ".tmp"
	// snapFilesKept is how many snapshot files survive retention: the
	// current one and its predecessor.
	snapFilesKept = 2
	// snapWriteChunk is how much of a snapshot file is written before it is
	// written back to disk (see paceWriteback).
	snapWriteChunk = 8 << 20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func snapFileName(term, index uint64) string {
	return fmt.Sprintf("%016x-%016x%s", term, index, snapSuffix)
}

// parseSnapFileName is the inverse of snapFileName.
func parseSnapFileName(name string) (term, index uint64, ok bool) {
	if !strings.HasSuffix(name, snapSuffix) {
		return 0, 0, false
	}
	var t, i uint64
	if n, err := fmt.Sscanf(strings.TrimSuffix(name, snapSuffix), "%016x-%016x", &t, &i); err != nil || n != 2 {
		return 0, 0, false
	}
	if snapFileName(t, i) != name {
		return 0, 0, false
	}
	return t, i, true
}

// writeSnapFile durably writes payload as the snapshot at (term, index).
func writeSnapFile(dir string, term, index uint64, payload []byte) error {
	name := filepath.Join(dir, snapFileName(term, index))
	tmp := name + tmpSuffix
	var hdr [snapHeaderSize]byte
	copy(hdr[:], snapMagic)
	binary.BigEndian.PutUint32(hdr[len(snapMagic):], crc32.Checksum(payload, crc32c))
	binary.BigEndian.PutUint64(hdr[len(snapMagic)+4:], uint64(len(payload)))

	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create snapshot file: %w", err)
	}
	_, err = f.Write(hdr[:])
	// In chunks, each written back before the next (paceWriteback): at a
	// million znodes the payload is hundreds of MB.
	for off := 0; err == nil && off < len(payload); off += snapWriteChunk {
		end := min(off+snapWriteChunk, len(payload))
		if _, err = f.Write(payload[off:end]); err == nil {
			paceWriteback(f, int64(snapHeaderSize+off), int64(end-off))
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write snapshot file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename snapshot file: %w", err)
	}
	return syncDir(dir)
}

// readSnapFile reads and verifies the snapshot at (term, index).
func readSnapFile(dir string, term, index uint64) ([]byte, error) {
	name := filepath.Join(dir, snapFileName(term, index))
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read snapshot file: %w", err)
	}
	return decodeSnapFile(name, b)
}

func decodeSnapFile(name string, b []byte) ([]byte, error) {
	if len(b) < snapHeaderSize || !bytes.Equal(b[:len(snapMagic)], []byte(snapMagic)) {
		return nil, fmt.Errorf("%w: %s: bad header", ErrCorruptSnapshot, name)
	}
	want := binary.BigEndian.Uint32(b[len(snapMagic):])
	n := binary.BigEndian.Uint64(b[len(snapMagic)+4:])
	payload := b[snapHeaderSize:]
	if uint64(len(payload)) != n {
		return nil, fmt.Errorf("%w: %s: length %d in header, %d bytes in file (truncated?)",
			ErrCorruptSnapshot, name, n, len(payload))
	}
	if got := crc32.Checksum(payload, crc32c); got != want {
		return nil, fmt.Errorf("%w: %s: checksum mismatch: header crc32c %08x, payload crc32c %08x",
			ErrCorruptSnapshot, name, want, got)
	}
	return payload, nil
}

type snapFile struct {
	name        string
	term, index uint64
}

// listSnapFiles returns the snapshot files in dir, oldest first.
func listSnapFiles(dir string) ([]snapFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshot dir: %w", err)
	}
	var out []snapFile
	for _, e := range ents {
		if t, i, ok := parseSnapFileName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, snapFile{name: e.Name(), term: t, index: i})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].index < out[b].index })
	return out, nil
}

// cleanSnapDir removes leftover temporary files and snapshot files newer
// than the recorded snapshot (written before a crash that came before bbolt
// recorded them). It runs once at start, before any new snapshot is written.
func cleanSnapDir(dir string, recordedIndex uint64) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshot dir: %w", err)
	}
	var removed []string
	for _, e := range ents {
		_, i, ok := parseSnapFileName(e.Name())
		if strings.HasSuffix(e.Name(), tmpSuffix) || (ok && i > recordedIndex) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, fmt.Errorf("remove stray snapshot file: %w", err)
			}
			removed = append(removed, e.Name())
		}
	}
	return removed, nil
}

// pruneSnapFiles keeps only the newest snapFilesKept snapshot files.
func pruneSnapFiles(dir string) error {
	files, err := listSnapFiles(dir)
	if err != nil {
		return err
	}
	for len(files) > snapFilesKept {
		if err := os.Remove(filepath.Join(dir, files[0].name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old snapshot file: %w", err)
		}
		files = files[1:]
	}
	return nil
}

// syncDir fsyncs a directory so a rename or create in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
