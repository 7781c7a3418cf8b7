package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
)

// Snapshot file format (all integers big-endian):
//
//	magic    8 bytes  "ZKRSNAP1"
//	crc32c   4 bytes  Castagnoli checksum of payload
//	length   8 bytes  len(payload)
//	payload  length bytes, exactly what StateMachine.Snapshot returned
//	         (or a SnapshotFreezer's function wrote)
//
// Files are named <term>-<index>.snap with both numbers as 16 hex digits, so
// lexical order is log order. A file is written to <name>.tmp (the payload
// streamed, the header written last at offset 0), fsync'd,
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
	// written back to disk (see paceWriteback): the most a raft log
	// fdatasync queues behind while a snapshot is written, as walZeroChunk
	// for the log's zero-fill. It was 8 MiB: on this project's VM disk a log
	// fdatasync during a 384 MiB snapshot write took a median p90 of 5.9 ms
	// and p99 of 21.5 ms over six runs, against 2.5 and 9.6 ms with 1 MiB,
	// with the snapshot written in about the same time (0.62 against 0.67 s;
	// a throwaway program, shared machine).
	snapWriteChunk = 1 << 20
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
	_, err := writeSnapFileFrom(dir, term, index, writeBytes(payload))
	return err
}

// snapWriteBuf is the size of snapWriter's buffer: writes reach the file
// in pieces of about this size.
const snapWriteBuf = 1 << 20

// snapWriteFault, set by tests, fails the snapshot file's write of the
// bytes at payload offset off (a full disk or an I/O error mid-stream).
var snapWriteFault func(off int64) error

// writebackFault, set by tests, is asked before each paceWriteback of the
// file named name and fails it with what it returns (a device's EIO, which
// the final fsync would not report again). Atomic: the log's spare-segment
// goroutine may be zero-filling while a test sets it.
var writebackFault atomic.Pointer[func(name string) error]

// writeback is paceWriteback, unless writebackFault fails it.
func writeback(f *os.File, off, n int64) error {
	if fault := writebackFault.Load(); fault != nil {
		if err := (*fault)(f.Name()); err != nil {
			return err
		}
	}
	return paceWriteback(f, off, n)
}

// writeSnapFileFrom durably writes what write writes as the payload of the
// snapshot at (term, index), streaming it into the file: the payload never
// exists in memory as a whole. It returns the payload's length.
//
// The file is byte-identical to one written from the whole payload: a
// placeholder header first, the payload through snapWriter (buffered, the
// CRC32C and length computed as bytes go by, written back in snapWriteChunk
// steps as before), then the real header at offset 0 (pwrite), then fsync,
// rename and directory fsync, in that order. If write or the file fails,
// the .tmp file is removed and nothing is renamed: the snapshot is either
// complete under its name or absent (a crash mid-way leaves a .tmp, which
// cleanSnapDir removes at start).
func writeSnapFileFrom(dir string, term, index uint64, write func(io.Writer) error) (int64, error) {
	name := filepath.Join(dir, snapFileName(term, index))
	tmp := name + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		err = fmt.Errorf("create snapshot file: %w", err)
		// write is called once whatever happens: what it holds (the
		// state machine's frozen view) ends with it.
		_ = write(failedWriter{err})
		return 0, err
	}
	sw := &snapWriter{f: f, off: int64(snapHeaderSize), paced: int64(snapHeaderSize)}
	var hdr [snapHeaderSize]byte
	_, err = f.Write(hdr[:]) // placeholder: the header needs the payload's length and CRC
	if err != nil {
		_ = write(failedWriter{err})
	} else {
		if err = write(sw); err != nil {
			err = fmt.Errorf("encode snapshot: %w", err)
		} else if err = sw.flush(); err != nil {
			err = fmt.Errorf("write: %w", err)
		}
	}
	if err == nil {
		copy(hdr[:], snapMagic)
		binary.BigEndian.PutUint32(hdr[len(snapMagic):], sw.crc)
		binary.BigEndian.PutUint64(hdr[len(snapMagic)+4:], uint64(sw.n))
		_, err = f.WriteAt(hdr[:], 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("write snapshot file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return 0, fmt.Errorf("rename snapshot file: %w", err)
	}
	return sw.n, syncDir(dir)
}

// failedWriter fails every write with err: what a snapshot encoder is
// given when its file could not be made, so that it still runs once and
// ends at its first write.
type failedWriter struct{ err error }

func (w failedWriter) Write([]byte) (int, error) { return 0, w.err }

// snapWriter is the io.Writer a snapshot payload is streamed through into
// its file: it buffers, keeps the CRC32C and length of all it accepted,
// and writes the file back to disk each snapWriteChunk bytes
// (paceWriteback), as a payload written from memory was. After a write
// error every Write fails with it.
type snapWriter struct {
	f     *os.File
	buf   []byte // capacity snapWriteBuf, made at the first small write
	crc   uint32
	n     int64 // payload bytes accepted
	off   int64 // file offset of buf[0]: the header and all flushed bytes precede it
	paced int64 // file offset up to which the file was written back
	err   error
}

func (w *snapWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	w.crc = crc32.Update(w.crc, crc32c, p)
	w.n += int64(n)
	for len(p) > 0 {
		if len(w.buf) == 0 && len(p) >= snapWriteBuf {
			// A whole buffer's worth straight from p, uncopied (a payload
			// written from memory).
			if err := w.writeFile(p[:snapWriteBuf]); err != nil {
				return 0, err
			}
			p = p[snapWriteBuf:]
			continue
		}
		if w.buf == nil {
			w.buf = make([]byte, 0, snapWriteBuf)
		}
		k := min(len(p), snapWriteBuf-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == snapWriteBuf {
			if err := w.writeFile(w.buf); err != nil {
				return 0, err
			}
			w.buf = w.buf[:0]
		}
	}
	return n, nil
}

// writeFile writes b at the file's end and paces the writeback each
// snapWriteChunk bytes.
func (w *snapWriter) writeFile(b []byte) error {
	if snapWriteFault != nil {
		w.err = snapWriteFault(w.off - int64(snapHeaderSize))
	}
	if w.err == nil {
		_, w.err = w.f.Write(b)
	}
	if w.err != nil {
		return w.err
	}
	w.off += int64(len(b))
	if w.off-w.paced >= snapWriteChunk {
		return w.writeBack()
	}
	return nil
}

// writeBack writes the file back to disk up to what was written.
func (w *snapWriter) writeBack() error {
	if err := writeback(w.f, w.paced, w.off-w.paced); err != nil {
		w.err = fmt.Errorf("write back: %w", err)
		return w.err
	}
	w.paced = w.off
	return nil
}

// flush writes what is buffered and writes back the rest of the file. It
// returns the first write error, also one a caller of Write ignored.
func (w *snapWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 {
		if err := w.writeFile(w.buf); err != nil {
			return err
		}
		w.buf = w.buf[:0]
	}
	if w.off > w.paced {
		return w.writeBack()
	}
	return nil
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
