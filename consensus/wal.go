package consensus

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The write-ahead log: raft entries and hard states, appended to segment
// files <DataDir>/wal/<seq>.wal (seq as 16 hex digits, consecutive).
//
// Segment header (little-endian), then records (wal_record.go) from offset
// walHeaderSize:
//
//	0:8    magic      "ZKRWAL01"
//	8:16   seq        the number in the file name
//	16:24  base index } the logical log's last entry when the segment was
//	24:32  base term  } created: its first record continues after it
//	32:36  salt       random; seeds every record's crc32c
//	36:40  crc32c     Castagnoli checksum of bytes 0:36
//
// Preallocation: a segment takes its records in place of zeros written
// (real zeros, fdatasync'd: not fallocate's unwritten extents, not a sparse
// hole) before its header, up to the rotation size (a new log's first
// segment up to walFirstSegmentBytes; it rotates when its zeros run out,
// and the next segments grow to the rotation size by walSpareGrowth).
// A record's write then overwrites allocated, initialized blocks without
// changing the file's size, so its fdatasync flushes the data only,
// without an ext4 journal commit (measured on ext4: 106-111 µs against
// 170-200 µs for an append of 1.6 KB). The zeros of the next segment are
// written off the write path, by a goroutine the wal owns (walSpare), into
// spare.wal.tmp, which rotate turns into the next segment. Some segments
// are not preallocated (records appended, as before preallocation): the
// segments after the first of a log upgraded from bbolt (initWALDir), the
// segments of a log written before preallocation, and a segment rotate
// created while the spare was still being zero-filled (it does not wait
// for 64 MiB of zeros: the write that rotates would).
//
// Invariants:
//   - A segment exists only with a complete, durable header: it is written
//     to <seq>.wal.tmp (or spare.wal.tmp), fdatasync'd, renamed and the
//     directory fsync'd. Leftover .tmp files are removed on open.
//   - Records are written only at the end of the last record (pwrite at
//     w.size, over zeros or past the end of the file), one per Write,
//     with one write and one fdatasync; Write returns after the fdatasync.
//     Only the last segment is ever written; a segment is closed for good
//     before the next is created: rotate truncates it to the end of its
//     last record (cutting the preallocated zeros left) and fdatasyncs it,
//     so a closed segment has nothing after its last record (one journal
//     commit per segment). Seqs are consecutive.
//   - The last segment's valid records are followed by zeros to the end of
//     the file, or nothing: the zeros are its clean end, kept on open.
//   - Replaying the records in order yields the logical log: a contiguous
//     run of entries after a base position, and the last hard state.
//     Segment i+1's base equals the logical log's last position after
//     segment i, which replay checks.
//   - On open, before the log is used, the last segment is fdatasync'd and
//     the directory fsync'd: a record or a removal a crashed process left
//     only in the page cache is durable before raft relies on it.
//   - On open, the first undecodable record of the last segment ends the
//     log if no valid record follows it (a write torn by a crash, never
//     acknowledged): it is cut and the cut fdatasync'd. In a preallocated
//     segment (as long as the rotation size, zeros after the damage) its
//     bytes up to the last non-zero byte are overwritten with zeros, which
//     keeps the preallocation; otherwise the file is truncated there. An
//     all-zero record never decodes (its type byte is 0), so zeros are
//     never taken for a record. The
//     search for a valid record after it is bounded (checkTornTail): it
//     skips the bad record's own payload when its header is plausible, and
//     gives up after a budget of checksum work (proportional to the
//     non-zero bytes after the bad record; bytes a candidate claims in the
//     zeros after them cost nothing), deciding for a torn write
//     only when the bad header claims more bytes than the file has. (Damage
//     to the last record after it was acknowledged looks the same and is
//     cut the same way; a member of a group gets it again from the
//     leader.) Any other
//     bad record (one followed by a valid record, a bad segment header, a
//     bad record or zeros in a segment that is not the last, a gap in seqs, a
//     record that does not fit the logical log) is ErrCorruptLog: the
//     member stops rather than skip or guess.
//   - Segments are deleted only from the front, oldest first, each removal
//     fsync'd, so the files left always form a consecutive run. A segment
//     holding the last hard state record is deleted only after that hard
//     state was written again (durably) to the last segment.
const (
	walMagic        = "ZKRWAL01"
	walHeaderSize   = 40
	walSuffix       = ".wal"
	walSegmentBytes = 64 << 20
	// walFirstSegmentBytes bounds the preallocation of a new log's first
	// segment (written while the data directory is created, before the
	// member starts): every member started, each test's included, writes
	// it, and a spare of the full size is zero-filled only once a log has
	// used half of it.
	walFirstSegmentBytes = 4 << 20
)

// wal is the open write-ahead log. It is not safe for concurrent use; the
// diskStore serializes calls.
type wal struct {
	dir      string
	segBytes int64 // the rotation size (and the size spares are zero-filled to)
	// rotateAt is the size at which the last segment rotates: segBytes,
	// or less for a segment preallocated to less (the first segment of a
	// new log, walFirstSegmentBytes): it rotates when its zeros run out.
	rotateAt int64
	segs     []walSeg // consecutive seqs, the last one open for writing
	f        *os.File // the last segment
	size     int64    // where the last segment's records end
	alloc    int64    // the last segment's file size (>= size; zeros after size)
	// prealloc is the size the spare segment is zero-filled to (0: none,
	// the wal initWALDir writes with).
	prealloc int64
	// spare is the next segment being zero-filled (or ready), nil if none
	// was started: it is started once the last segment is half full, and
	// close stops it and waits for its goroutine.
	spare    *walSpare
	last     walPos // the logical log's last entry (or base)
	buf      []byte // reused encoding buffer
	broken   error  // a failed write: every later write fails with it
	resetSeq uint64 // the segment holding the last reset record
	// hardState is the last hard state written or replayed, hardStateSeq
	// the segment holding it (deleteBefore keeps it in a kept segment).
	hardState    *pb.HardState
	hardStateSeq uint64
	torn         tornTail // what open cut off the last segment, for the log
	syncFile     func(*os.File) error
}

// walSeg is one segment file.
type walSeg struct {
	seq  uint64
	base walPos
	salt uint32
	path string
}

// tornTail describes a torn tail cut off on open.
type tornTail struct {
	path        string
	offset, len int64
	// cause is why the first record cut did not decode: errRecordBad
	// (a complete record that does not verify, or a garbage header) is
	// damage, possibly to an acknowledged record; the others are a write
	// torn by a crash (errRecordTorn: a record that does not verify but
	// ends in the zeros of sectors a torn write left unwritten, tornCause).
	cause error
}

// log reports the cut: a torn write at warn level, a damaged record at
// error level (it may have been acknowledged; this member lost it).
func (t tornTail) log(lg zerolog.Logger) {
	if t.len == 0 {
		return
	}
	ev, msg := lg.Warn(), "cut a write torn by a crash off the raft log's tail"
	if errors.Is(t.cause, errRecordBad) {
		ev, msg = lg.Error(), "cut a damaged record off the raft log's tail: if it was acknowledged, this member lost it "+
			"(a leader sends it again; check the disk)"
	}
	ev.Str("segment", t.path).Int64("offset", t.offset).Int64("bytes", t.len).AnErr("cause", t.cause).Msg(msg)
}

func walSegName(seq uint64) string { return fmt.Sprintf("%016x%s", seq, walSuffix) }

func parseWALSegName(name string) (uint64, bool) {
	if !strings.HasSuffix(name, walSuffix) {
		return 0, false
	}
	var seq uint64
	if n, err := fmt.Sscanf(strings.TrimSuffix(name, walSuffix), "%016x", &seq); err != nil || n != 1 {
		return 0, false
	}
	return seq, walSegName(seq) == name
}

func encodeWALHeader(seq uint64, base walPos, salt uint32) []byte {
	h := make([]byte, walHeaderSize)
	copy(h, walMagic)
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint64(h[16:], base.index)
	binary.LittleEndian.PutUint64(h[24:], base.term)
	binary.LittleEndian.PutUint32(h[32:], salt)
	binary.LittleEndian.PutUint32(h[36:], crc32.Checksum(h[:36], crc32c))
	return h
}

func decodeWALHeader(h []byte) (seq uint64, base walPos, salt uint32, err error) {
	if len(h) < walHeaderSize || string(h[:len(walMagic)]) != walMagic {
		return 0, walPos{}, 0, errors.New("bad segment header magic")
	}
	if got, want := crc32.Checksum(h[:36], crc32c), binary.LittleEndian.Uint32(h[36:]); got != want {
		return 0, walPos{}, 0, fmt.Errorf("segment header crc32c %08x, header says %08x", got, want)
	}
	seq = binary.LittleEndian.Uint64(h[8:])
	base = walPos{binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:])}
	return seq, base, binary.LittleEndian.Uint32(h[32:]), nil
}

// walSpareName is the file a spare segment is zero-filled in. It names no
// seq: a spare not ready at one rotation is used at the next.
const walSpareName = "spare" + walSuffix + tmpSuffix

// walZeroChunk is the size of each write of zeros (and of each paced
// writeback) when a segment is preallocated.
const walZeroChunk = 1 << 20

// errSpareStopped is what a spare's fill returns when close stopped it.
var errSpareStopped = errors.New("wal spare segment: stopped")

// walSpare is a spare segment file being zero-filled by a goroutine. f and
// err belong to the goroutine until done is closed, then to the wal.
type walSpare struct {
	path string
	size int64
	stop atomic.Bool
	done chan struct{}
	f    *os.File // the zero-filled, fdatasync'd file, open for writing
	err  error
}

// fillSpareFile creates path and zero-fills it to size bytes (durably),
// stopping early when stop is set; tests replace it.
var fillSpareFile = func(path string, size int64, stop *atomic.Bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create wal spare segment: %w", err)
	}
	err = zeroFill(f, size, stop)
	if err == nil {
		err = fdatasync(f)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("zero-fill wal spare segment %s: %w", path, err)
	}
	return f, nil
}

// zeroFill writes zeros over [0, size) of f, in chunks each written back
// before the next (paceWriteback), so that the log's own fdatasyncs never
// queue behind more than one chunk. It stops with errSpareStopped when
// stop (if not nil) is set. It does not sync.
func zeroFill(f *os.File, size int64, stop *atomic.Bool) error {
	zeros := make([]byte, min(size, walZeroChunk))
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if stop != nil && stop.Load() {
			return errSpareStopped
		}
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		if err := writeback(f, off, n); err != nil {
			return fmt.Errorf("write back zeros: %w", err)
		}
	}
	return nil
}

// walSpareGrowth bounds a spare's size to this many times the last
// segment's: after a new log's small first segment, segments grow to the
// rotation size in steps (4, 16, 64 MiB), so that each spare is ready
// before the segment before it is full: it is zero-filled while half a
// segment of records is written, at most 8 times as many bytes, at the
// disk's sequential speed (the records' pace is bounded by an fdatasync
// each).
const walSpareGrowth = 4

// startSpare starts zero-filling the spare segment on a goroutine, if
// preallocation is on, none is under way and the last segment is half
// full (so that 64 MiB of zeros are written once per segment, well before
// rotate wants them, and not by every short-lived store).
func (w *wal) startSpare() {
	if w.prealloc <= walHeaderSize || w.spare != nil || w.size < w.rotateAt/2 {
		return
	}
	size := min(w.prealloc, walSpareGrowth*w.rotateAt)
	sp := &walSpare{path: filepath.Join(w.dir, walSpareName), size: size, done: make(chan struct{})}
	w.spare = sp
	fill := fillSpareFile // read here: tests replace it between stores
	go func() {
		defer close(sp.done)
		sp.f, sp.err = fill(sp.path, sp.size, &sp.stop)
	}()
}

// takeSpare returns the spare if it is ready, nil otherwise (not started,
// still filling, or failed: then it is dropped and a new one starts once
// the next segment is half full).
func (w *wal) takeSpare() *walSpare {
	sp := w.spare
	if sp == nil {
		return nil
	}
	select {
	case <-sp.done:
	default:
		return nil // still filling: it serves the next rotation
	}
	w.spare = nil
	if sp.err != nil {
		return nil
	}
	return sp
}

// stopSpare stops the spare's goroutine, waits for it and removes the
// spare's file.
func (w *wal) stopSpare() {
	sp := w.spare
	if sp == nil {
		return
	}
	w.spare = nil
	sp.stop.Store(true)
	<-sp.done
	if sp.f != nil {
		_ = sp.f.Close()
	}
	_ = os.Remove(sp.path)
}

func randomSalt() (uint32, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("wal salt: %w", err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// createWALSegment durably creates segment seq in dir (see the
// invariants), zero-filled to prealloc bytes first if prealloc exceeds the
// header, and returns it open for writing.
func createWALSegment(dir string, seq uint64, base walPos, prealloc int64, sync func(*os.File) error) (walSeg, *os.File, error) {
	tmp := filepath.Join(dir, walSegName(seq)) + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return walSeg{}, nil, fmt.Errorf("create wal segment: %w", err)
	}
	if prealloc > walHeaderSize {
		if err := zeroFill(f, prealloc, nil); err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			return walSeg{}, nil, fmt.Errorf("zero-fill wal segment %s: %w", tmp, err)
		}
	}
	seg, err := installWALSegment(f, tmp, dir, seq, base, sync)
	if err != nil {
		_ = f.Close()
		return walSeg{}, nil, err
	}
	return seg, f, nil
}

// installWALSegment turns the file f at tmp (empty or zero-filled) into
// segment seq of dir: it writes the header at offset 0, fdatasyncs f,
// renames tmp to the segment's name and fsyncs dir. On failure the caller
// closes f; tmp is removed unless the rename happened.
func installWALSegment(f *os.File, tmp, dir string, seq uint64, base walPos, sync func(*os.File) error) (walSeg, error) {
	salt, err := randomSalt()
	if err != nil {
		_ = os.Remove(tmp)
		return walSeg{}, err
	}
	_, err = f.WriteAt(encodeWALHeader(seq, base, salt), 0)
	if err == nil {
		err = sync(f)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return walSeg{}, fmt.Errorf("write wal segment %s: %w", tmp, err)
	}
	path := filepath.Join(dir, walSegName(seq))
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return walSeg{}, fmt.Errorf("rename wal segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return walSeg{}, err
	}
	return walSeg{seq: seq, base: base, salt: salt, path: path}, nil
}

// walReplay is the logical log a replay found.
type walReplay struct {
	segs      []walSeg
	base      walPos // entries follow base.index
	baseKnown bool   // base.term is known (a truncation below the oldest kept segment forgets it)
	entries   []*pb.Entry
	hardState *pb.HardState
	// hardStateSeq is the segment holding hardState's record, resetSeq
	// the one holding the last reset record.
	hardStateSeq, resetSeq uint64
	// end is the offset in the last segment where the valid records end;
	// fileSize its size; dirtyEnd the end of its last non-zero byte (at
	// least end). dirtyEnd > end: a torn tail; the zeros from dirtyEnd to
	// fileSize are the clean end of a preallocated segment.
	end, dirtyEnd, fileSize int64
	// scanned is the number of bytes checkTornTail checksummed.
	scanned int64
	// records is the number of records replayed.
	records int
	// tailErr is why the record at end did not decode (end < fileSize).
	tailErr error
}

func (r *walReplay) last() walPos {
	if n := len(r.entries); n > 0 {
		return walPos{r.entries[n-1].GetIndex(), r.entries[n-1].GetTerm()}
	}
	return r.base
}

// apply adds one batch to the logical log, checking that it fits.
func (r *walReplay) apply(b *walBatch) error {
	if b.reset != nil {
		r.entries, r.base, r.baseKnown = nil, *b.reset, true
	}
	if t := b.truncateFrom; t > 0 {
		last := r.last().index
		switch {
		case t > last:
			return fmt.Errorf("truncation from %d beyond the last entry %d", t, last)
		case t <= r.base.index:
			// Entries of a deleted segment: the log now starts after t-1,
			// whose term is not on disk.
			r.entries, r.base, r.baseKnown = nil, walPos{index: t - 1}, false
		default:
			r.entries = r.entries[:t-r.base.index-1]
		}
	}
	if len(b.entries) > 0 {
		if first, last := b.entries[0].GetIndex(), r.last().index; first != last+1 {
			return fmt.Errorf("entries from %d do not follow the last entry %d", first, last)
		}
		r.entries = append(r.entries, b.entries...)
	}
	if b.hardState != nil {
		r.hardState = b.hardState
	}
	return nil
}

// listWALSegs lists dir's segments in seq order, removing leftover .tmp
// files when clean is set.
func listWALSegs(dir string, clean bool) ([]walSeg, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read wal dir: %w", err)
	}
	var segs []walSeg
	for _, de := range des {
		name := de.Name()
		if strings.HasSuffix(name, walSuffix+tmpSuffix) {
			if clean {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					return nil, fmt.Errorf("remove unfinished wal segment: %w", err)
				}
			}
			continue
		}
		if seq, ok := parseWALSegName(name); ok {
			segs = append(segs, walSeg{seq: seq, path: filepath.Join(dir, name)})
		}
	}
	slices.SortFunc(segs, func(a, b walSeg) int { return cmp.Compare(a.seq, b.seq) })
	if len(segs) == 0 {
		return nil, fmt.Errorf("%w: no wal segment in %s", ErrCorruptLog, dir)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].seq != segs[i-1].seq+1 {
			return nil, fmt.Errorf("%w: wal segments %s and %s are not consecutive", ErrCorruptLog,
				filepath.Base(segs[i-1].path), filepath.Base(segs[i].path))
		}
	}
	return segs, nil
}

// replayWAL reads every segment of dir. It does not change any file.
func replayWAL(dir string, clean bool) (*walReplay, error) {
	segs, err := listWALSegs(dir, clean)
	if err != nil {
		return nil, err
	}
	r := &walReplay{}
	for i := range segs {
		s := &segs[i]
		data, err := os.ReadFile(s.path)
		if err != nil {
			return nil, fmt.Errorf("read wal segment: %w", err)
		}
		seq, base, salt, err := decodeWALHeader(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorruptLog, s.path, err)
		}
		if seq != s.seq {
			return nil, fmt.Errorf("%w: %s: header names segment %d", ErrCorruptLog, s.path, seq)
		}
		s.base, s.salt = base, salt
		if i == 0 {
			r.base, r.baseKnown = base, true
		} else if l := r.last(); base.index != l.index || (base.term != l.term && (r.baseKnown || len(r.entries) > 0)) {
			return nil, fmt.Errorf("%w: %s starts after entry %d (term %d), the log before it ends at %d (term %d)",
				ErrCorruptLog, s.path, base.index, base.term, l.index, l.term)
		}
		lastSeg := i == len(segs)-1
		off := walHeaderSize
		for off < len(data) {
			_, payload, n, derr := decodeRecord(data[off:], salt)
			if derr != nil {
				if !lastSeg {
					// A closed segment was truncated to its last record
					// and fdatasync'd before the next was created: even
					// zeros after its last record are damage.
					return nil, fmt.Errorf("%w: %s offset %d (not the last segment): %w", ErrCorruptLog, s.path, off, derr)
				}
				work, cause, err := checkTornTail(data, off, salt, derr)
				r.scanned += work
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %w", ErrCorruptLog, s.path, err)
				}
				r.tailErr = cause
				break
			}
			b, err := decodeBatch(payload)
			if err == nil {
				err = r.apply(b)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %s offset %d: %w", ErrCorruptLog, s.path, off, err)
			}
			r.records++
			if b.hardState != nil {
				r.hardStateSeq = s.seq
			}
			if b.reset != nil {
				r.resetSeq = s.seq
			}
			off += n
		}
		if lastSeg {
			r.end, r.fileSize = int64(off), int64(len(data))
			r.dirtyEnd = r.end + int64(nonZeroLen(data[off:]))
		}
	}
	r.segs = segs
	return r, nil
}

// walScanBudget is the least checksum work (bytes) checkTornTail may do
// looking for a valid record after a bad one; the budget is the larger of
// it and 4 times the bytes after the bad record up to the segment's last
// non-zero byte (not the zeros of a preallocated segment after it). Bytes
// inside an entry (client data) can look like record headers at every
// aligned offset, each claiming up to all the bytes after it: checking
// every one would be quadratic in the tail's size. A candidate's bytes in
// the zeros after the last non-zero byte cost nothing: its checksum is
// extended over them by crc32cZeros (nextValidRecord), so fake headers
// claiming megabytes of a preallocated segment's zeros cost no more than
// the non-zero bytes they cover.
const walScanBudget int64 = 64 << 20

// checkTornTail decides whether the record at off of the last segment,
// which decodeRecord rejected with derr, starts a torn tail (nil) or is
// damage followed by a valid record (an error). work is the number of
// bytes it checksummed; cause is why the tail is cut, for the log: derr,
// or errRecordTorn for a record that does not verify but ends as only a
// torn write leaves it (tornCause).
//
//   - Zeros to the end: a torn tail, nothing to scan.
//   - A plausible header whose record extends past the end (derr is
//     errRecordShort): a torn write. Valid records after it exist only if
//     its length was damaged: they are searched for from the next aligned
//     offset, within the budget; a search that runs out of budget ends in
//     favour of the torn write.
//   - A plausible header whose record fits but does not verify: records of
//     later writes can only start after its claimed end, so the search
//     starts there (not among the bytes of its own payload).
//   - Any other header (garbage, or zeros followed by data): the search
//     starts at the next aligned offset.
//
// In the last two cases, a search that runs out of budget is an error: the
// member stops rather than guess that nothing acknowledged follows.
func checkTornTail(data []byte, off int, salt uint32, derr error) (work int64, cause, err error) {
	nzEnd := off + nonZeroLen(data[off:])
	if nzEnd == off {
		return 0, derr, nil
	}
	budget := max(walScanBudget, 4*int64(nzEnd-off))
	from, favourTorn := off+recAlign, errors.Is(derr, errRecordShort)
	if !favourTorn && len(data)-off >= recHeaderSize {
		if length, ok := plausibleHeader(data[off:]); ok {
			from = off + recPadded(recHeaderSize+length)
		}
	}
	next, work, exhausted := nextValidRecord(data, from, nzEnd, salt, budget)
	switch {
	case next >= 0:
		return work, nil, fmt.Errorf("bad record at offset %d followed by a valid record at offset %d: %w", off, next, derr)
	case exhausted && !favourTorn:
		return work, nil, fmt.Errorf("bad record at offset %d (%w): gave up after checksumming %d bytes looking for a valid record after it",
			off, derr, work)
	}
	return work, tornCause(data, off, nzEnd, derr), nil
}

// walSectorSize is the smallest unit a disk writes whole or not at all
// (larger sectors and pages are multiples of it).
const walSectorSize = 512

// tornCause returns why the bad record at off of the last segment (derr),
// with nothing valid after it, is cut: errRecordTorn if it ends as only a
// write torn by a crash leaves a record, derr otherwise. nzEnd is the end
// of the segment's last non-zero byte.
//
// A record whose header is plausible and whose claimed bytes fit the file
// but do not verify (errRecordBad) is either a complete record damaged
// later (possibly acknowledged: logged at error level) or a write torn by
// a crash over a preallocated segment's zeros (never acknowledged: its
// fdatasync did not return): in a segment without preallocation the
// second is usually short (errRecordShort), in a preallocated one its
// unwritten bytes read as zeros and it fits. A crash
// tears a write at sector boundaries: the sectors that did not reach the
// disk keep their zeros. If its last sectors are among them, the record's
// bytes from a sector boundary before its payload's end onwards are zeros,
// and so is everything after it (no later write began: a write returns
// before the next starts). A complete record keeps its last bytes: its
// zeros from nzEnd on reach past a sector boundary only if its payload
// itself ends in that many zeros: the one damage this takes for a torn
// write (logged at warn level, cut all the same). A torn write that lost
// other sectors than its last, or wrote half a header (not plausible),
// stays at error level: louder than needed. (A lost header sector leaves
// a zero header, errRecordEnd: a torn write already.)
func tornCause(data []byte, off, nzEnd int, derr error) error {
	if !errors.Is(derr, errRecordBad) || len(data)-off < recHeaderSize {
		return derr
	}
	length, ok := plausibleHeader(data[off:])
	if !ok {
		return derr
	}
	// The first sector boundary at or after nzEnd: the zeros from there
	// on are whole sectors.
	sector := (nzEnd + walSectorSize - 1) &^ (walSectorSize - 1)
	if sector >= off+recHeaderSize+length {
		return derr
	}
	return fmt.Errorf("%w: the record's bytes from offset %d on are zeros (%v)", errRecordTorn, sector, derr)
}

// nextValidRecord returns the offset of the first record at or after from
// (at an aligned offset) that decodes with salt, or -1. nzEnd is the end
// of data's last non-zero byte: data[nzEnd:] is zeros. It checksums at
// most budget bytes (work) and reports whether it stopped for that.
//
// A candidate whose payload reaches past nzEnd is checksummed over its
// bytes before nzEnd only, then extended over the zeros after them
// (crc32cZeros); its padding is zeros by construction. That is the same
// verdict decodeRecord gives on the same bytes, at the cost of the
// non-zero part.
func nextValidRecord(data []byte, from, nzEnd int, salt uint32, budget int64) (next int, work int64, exhausted bool) {
	// A header's type byte (offset 8) is not zero: no record starts at or
	// after nzEnd-8.
	for o := from; o+recHeaderSize <= len(data) && o+8 < nzEnd; o += recAlign {
		// Cheap rejects before the checksum.
		length, ok := plausibleHeader(data[o:])
		if !ok || o+recPadded(recHeaderSize+length) > len(data) {
			continue
		}
		payload := data[o+recHeaderSize : o+recHeaderSize+length]
		nonZero := min(length, max(0, nzEnd-(o+recHeaderSize))) // payload bytes before nzEnd
		cost := int64(nonZero) + 8                              // the checksum covers 8 header bytes and the payload
		if work+cost > budget {
			return -1, work, true
		}
		work += cost
		if nonZero == length {
			if _, _, _, err := decodeRecord(data[o:], salt); err == nil {
				return o, work, false
			}
			continue
		}
		crc := crc32.Update(salt, crc32c, data[o+8:o+recHeaderSize])
		crc = crc32.Update(crc, crc32c, payload[:nonZero])
		crc = crc32cZeros(crc, length-nonZero)
		if crc == binary.LittleEndian.Uint32(data[o+4:o+8]) {
			return o, work, false
		}
	}
	return -1, work, false
}

// openSync holds the syncs open makes so that what it replayed is durable
// (openWAL: the last segment and the directory; openDiskStore: bbolt);
// tests replace them to count the calls.
var openSync = struct {
	file func(*os.File) error
	dir  func(string) error
	db   func(*bolt.DB) error
}{fdatasync, syncDir, (*bolt.DB).Sync}

// openWAL replays dir, cuts a torn tail off the last segment, makes the
// last segment and dir durable and opens the last segment for writing at
// the end of its records. Spare segments it starts are segBytes long.
func openWAL(dir string, segBytes int64) (*wal, *walReplay, error) {
	r, err := replayWAL(dir, true)
	if err != nil {
		return nil, nil, err
	}
	w := &wal{dir: dir, segBytes: segBytes, prealloc: segBytes, segs: r.segs, last: r.last(), syncFile: fdatasync,
		hardState: r.hardState, hardStateSeq: r.hardStateSeq, resetSeq: r.resetSeq}
	lastSeg := r.segs[len(r.segs)-1]
	f, err := os.OpenFile(lastSeg.path, os.O_WRONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open wal segment: %w", err)
	}
	alloc := r.fileSize
	if r.dirtyEnd > r.end {
		// A write torn by a crash: it never returned, so nothing
		// acknowledged is lost by cutting it. In a preallocated segment
		// (zeros after the torn bytes, a file at least as long as a first
		// segment's preallocation) the cut overwrites the torn bytes with
		// zeros and keeps the zeros after them; otherwise the file is
		// truncated at end (either cut is correct; this one keeps a
		// segment written before preallocation as it was). Either way
		// what follows end is then zeros or nothing, the clean end of the
		// log; a crash during the cut leaves torn bytes the next open cuts
		// the same way.
		if r.dirtyEnd < r.fileSize && r.fileSize >= min(segBytes, walFirstSegmentBytes) {
			w.torn = tornTail{path: lastSeg.path, offset: r.end, len: r.dirtyEnd - r.end, cause: r.tailErr}
			_, err = f.WriteAt(make([]byte, r.dirtyEnd-r.end), r.end)
		} else {
			w.torn = tornTail{path: lastSeg.path, offset: r.end, len: r.fileSize - r.end, cause: r.tailErr}
			err, alloc = f.Truncate(r.end), r.end
		}
		if err == nil {
			err = fdatasync(f)
		}
		if err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("cut torn tail of %s at %d: %w", lastSeg.path, r.end, err)
		}
	}
	// What replay read may be only in the page cache (a process crash
	// after a record's write, before its fdatasync; or after a segment's
	// removal, before the directory's fsync): make it durable before
	// anything relies on it (raft acknowledges and votes with what Load
	// returns). Only the last segment can hold unsynced records.
	if err := openSync.file(f); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("sync wal segment %s: %w", lastSeg.path, err)
	}
	if err := openSync.dir(dir); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	w.f, w.size, w.alloc = f, r.end, alloc
	w.rotateAt = segBytes
	if alloc > r.end {
		w.rotateAt = alloc // preallocated: rotate when the zeros run out
	}
	w.startSpare()
	return w, r, nil
}

// walInitChunk bounds the entry bytes of one record initWALDir writes
// (tests lower it).
var walInitChunk = 16 << 20

// initWALDir durably creates dir holding the log that continues after base
// with first's entries and hard state (first may be nil): dir is built as
// dir.tmp and renamed, so it exists only complete. The entries are written
// in records of about walInitChunk bytes (a version-1 log can be far above
// maxRecordSize), the hard state with the last one, in segments of
// walSegmentSize. Segment 0 is zero-filled to prealloc bytes first (a new
// member's first writes are as cheap as later ones; the wal opened next
// rotates it when its zeros run out; 0: not preallocated); the segments
// after it, written only when a large log is upgraded, are not (the wal
// opened next preallocates the ones it creates).
func initWALDir(dir string, base walPos, first *walBatch, prealloc int64) error {
	tmp := dir + tmpSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove unfinished wal dir: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create wal dir: %w", err)
	}
	seg, f, err := createWALSegment(tmp, 0, base, prealloc, fdatasync)
	if err != nil {
		return err
	}
	w := &wal{dir: tmp, segBytes: walSegmentSize, rotateAt: walSegmentSize, segs: []walSeg{seg}, f: f, size: walHeaderSize,
		alloc: max(prealloc, walHeaderSize), last: base, syncFile: fdatasync}
	if first != nil {
		err = appendChunked(w, first, walInitChunk)
	}
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("rename wal dir: %w", err)
	}
	return syncDir(filepath.Dir(dir))
}

// appendChunked appends b's entries in records of at most chunk entry
// bytes (at least one entry each), b's hard state with the last record.
func appendChunked(w *wal, b *walBatch, chunk int) error {
	ents := b.entries
	for {
		n, size := 0, 0
		for n < len(ents) && (n == 0 || size+marshalAppend.Size(ents[n]) <= chunk) {
			size += marshalAppend.Size(ents[n])
			n++
		}
		part := &walBatch{entries: ents[:n]}
		ents = ents[n:]
		if len(ents) == 0 {
			part.hardState = b.hardState
		}
		if err := w.append(part); err != nil {
			return err
		}
		if len(ents) == 0 {
			return nil
		}
	}
}

// append writes b as one record with one write and one fdatasync. A reset
// starts a new segment first (unless the last one is empty), so that every
// older segment can be deleted once it is durable.
func (w *wal) append(b *walBatch) error {
	if w.broken != nil {
		return fmt.Errorf("wal failed earlier: %w", w.broken)
	}
	if b.reset != nil && w.size > walHeaderSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	if len(b.entries) > 0 {
		first := b.entries[0].GetIndex()
		last := w.last.index
		if b.reset != nil {
			last = b.reset.index
		}
		switch {
		case first > last+1 || (b.reset != nil && first != last+1):
			return fmt.Errorf("append entries from %d after the last entry %d: a gap", first, last)
		case first <= last:
			b.truncateFrom = first // raft's contract: entries >= first are replaced
		}
	}
	seg := w.segs[len(w.segs)-1]
	var err error
	if w.buf, err = appendBatchRecord(w.buf[:0], seg.salt, b); err != nil {
		return err
	}
	// At w.size, not appended: over the preallocated zeros, the file's
	// size does not change.
	if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
		w.broken = err
		return fmt.Errorf("write wal: %w", err)
	}
	if err := w.syncFile(w.f); err != nil {
		w.broken = err
		return fmt.Errorf("sync wal: %w", err)
	}
	w.size += int64(len(w.buf))
	w.alloc = max(w.alloc, w.size)
	if cap(w.buf) > 4<<20 {
		w.buf = nil // do not pin a huge batch's buffer
	}
	if b.reset != nil {
		w.last = *b.reset
		w.resetSeq = seg.seq
	}
	if b.hardState != nil {
		w.hardState, w.hardStateSeq = b.hardState, seg.seq
	}
	if n := len(b.entries); n > 0 {
		w.last = walPos{b.entries[n-1].GetIndex(), b.entries[n-1].GetTerm()}
	}
	if w.size >= w.rotateAt {
		return w.rotate()
	}
	w.startSpare()
	return nil
}

// rotate closes the last segment (its records are durable already) and
// starts the next: the zero-filled spare if it is ready, otherwise a new
// file without preallocation. Waiting for the spare instead would put up
// to a whole segment of zeros (64 MiB) on the write that rotates; without
// it that write pays one file creation, and the appends to the segment
// cost what they did before preallocation. A spare still being filled
// serves the next rotation.
func (w *wal) rotate() error {
	if err := w.rotateTo(w.takeSpare()); err != nil {
		w.broken = err
		return err
	}
	w.startSpare()
	return nil
}

func (w *wal) rotateTo(sp *walSpare) error {
	if sp != nil {
		defer func() {
			if sp.f != nil { // not installed
				_ = sp.f.Close()
				_ = os.Remove(sp.path)
			}
		}()
	}
	// Closed segments have nothing after their last record (replay
	// treats anything there, zeros included, as damage): cut the zeros
	// left of the preallocation, durably, before the next segment exists.
	if w.alloc > w.size {
		err := w.f.Truncate(w.size)
		if err == nil {
			err = w.syncFile(w.f)
		}
		if err != nil {
			return fmt.Errorf("truncate closed wal segment: %w", err)
		}
		w.alloc = w.size
	}
	seq := w.segs[len(w.segs)-1].seq + 1
	var (
		seg      walSeg
		f        *os.File
		alloc    int64 = walHeaderSize
		rotateAt       = w.segBytes
		err      error
	)
	if sp != nil {
		if seg, err = installWALSegment(sp.f, sp.path, w.dir, seq, w.last, w.syncFile); err != nil {
			return err
		}
		f, sp.f, alloc = sp.f, nil, max(sp.size, walHeaderSize)
		rotateAt = min(alloc, w.segBytes) // a growing spare (walSpareGrowth) is full before segBytes
	} else if seg, f, err = createWALSegment(w.dir, seq, w.last, 0, w.syncFile); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		_ = f.Close()
		return fmt.Errorf("close wal segment: %w", err)
	}
	w.f, w.size, w.alloc, w.rotateAt = f, walHeaderSize, alloc, rotateAt
	w.segs = append(w.segs, seg)
	return nil
}

// deleteBefore removes, oldest first, the segments that hold only entries
// below index (segment i holds no entry above segment i+1's base) and,
// with afterReset set, every segment before the one holding the last reset
// record (nothing before a reset is part of the log). The last segment is
// never removed. If the last hard state is in a segment to be removed, it
// is first written again to the last segment: a hard state is kept until a
// newer one replaces it, whatever the entries around it.
func (w *wal) deleteBefore(index uint64, afterReset bool) error {
	paths, err := w.detachBefore(index, afterReset)
	if err != nil {
		return err
	}
	return removeWALSegments(w.dir, paths)
}

// detachBefore is deleteBefore without the removals: it drops the
// segments from w and returns their paths, oldest first, for
// removeWALSegments, which the caller may run without holding what
// serializes w's other calls as long as removals run one at a time, in
// the order detachBefore returned them.
func (w *wal) detachBefore(index uint64, afterReset bool) ([]string, error) {
	n := 0
	for n < len(w.segs)-1 && ((afterReset && w.segs[n].seq < w.resetSeq) || w.segs[n+1].base.index < index) {
		n++
	}
	if n == 0 {
		return nil, nil
	}
	if w.hardState != nil && w.hardStateSeq < w.segs[n].seq {
		if err := w.append(&walBatch{hardState: w.hardState}); err != nil {
			return nil, fmt.Errorf("keep the hard state: %w", err)
		}
	}
	paths := make([]string, n)
	for i, seg := range w.segs[:n] {
		paths[i] = seg.path
	}
	w.segs = slices.Clone(w.segs[n:])
	return paths, nil
}

// removeSync syncs the directory after each removal; tests replace it.
var removeSync = syncDir

// removeWALSegments removes the segment files at paths, in order, each
// removal durable before the next, so that a crash leaves a consecutive
// run of segments. It stops at the first failure (the files left are
// still a consecutive run; the next open replays them).
func removeWALSegments(dir string, paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove wal segment: %w", err)
		}
		if err := removeSync(dir); err != nil {
			return err
		}
	}
	return nil
}

// close stops and waits for the spare's goroutine, removes the spare and
// closes the last segment.
func (w *wal) close() error {
	w.stopSpare()
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close wal: %w", err)
	}
	return nil
}
