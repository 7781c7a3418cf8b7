// Package zkimport turns an Apache ZooKeeper 3.5–3.8 data directory into a
// zkraft one (zkraft import). It reads the newest complete snapshot and
// every transaction logged after it (package zkdisk), replays them with
// ZooKeeper's own rules, drops the ephemeral nodes of the old sessions, and
// seeds a zkraft data directory whose raft log starts at an index at or above
// ZooKeeper's last zxid, so zxids keep growing for clients.
//
// Everything is read and checked before anything is written: bad input
// leaves the target directory as it was.
package zkimport

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zkraft/zkraft/internal/zkimport/zkdisk"
)

// Source is what Load read.
type Source struct {
	Snapshot string // the snapshot file used
	SnapZxid int64  // its zxid (from its name)
	Logs     []string
	Txns     int      // transactions replayed after the snapshot
	Torn     []string // log files whose last record was cut short
	LastZxid int64    // the highest zxid the result holds
	Skipped  []string // incomplete snapshots skipped (newer than the one used)
	Sessions int      // sessions the old server still had (their ephemerals are dropped)
}

// fileZxid parses "<prefix>.<hex zxid>[.suffix]" as ZooKeeper's Util.getZxidFromName.
func fileZxid(name, prefix string) (int64, bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 || parts[0] != prefix {
		return 0, false
	}
	z, err := strconv.ParseUint(parts[1], 16, 64)
	if err != nil {
		return 0, false
	}
	return int64(z), true
}

type zfile struct {
	path string
	zxid int64
}

// listFiles returns dir's files named prefix.<zxid>, sorted by zxid.
func listFiles(dir, prefix string) ([]zfile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var out []zfile
	for _, e := range ents {
		if z, ok := fileZxid(e.Name(), prefix); ok && e.Type().IsRegular() {
			out = append(out, zfile{filepath.Join(dir, e.Name()), z})
		}
	}
	slices.SortFunc(out, func(a, b zfile) int {
		if a.zxid != b.zxid {
			if a.zxid < b.zxid {
				return -1
			}
			return 1
		}
		return strings.Compare(a.path, b.path)
	})
	return out, nil
}

// versionDir returns dir/version-2, accepting dir itself when it is one.
func versionDir(dir string) (string, error) {
	if filepath.Base(filepath.Clean(dir)) == "version-2" {
		return dir, nil
	}
	v := filepath.Join(dir, "version-2")
	if st, err := os.Stat(v); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s has no version-2 directory: not a ZooKeeper 3.5–3.8 data directory", dir)
	}
	return v, nil
}

// readSnapFile reads a snapshot file, uncompressing .gz ones.
func readSnapFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", zkdisk.ErrCorrupt, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%w: %v", zkdisk.ErrCorrupt, err)
		}
	case strings.HasSuffix(path, ".snappy"):
		return nil, errors.New("snappy-compressed snapshots are not supported: restart ZooKeeper with snapshot.compression.method unset to write an uncompressed one")
	}
	return b, nil
}

// Load reads ZooKeeper's data: snapDir (dataDir) and logDir (dataLogDir, or
// "" for dataDir), each either the directory holding version-2 or
// version-2 itself.
func Load(snapDir, logDir string) (*dataTree, *Source, error) {
	if logDir == "" {
		logDir = snapDir
	}
	sd, err := versionDir(snapDir)
	if err != nil {
		return nil, nil, err
	}
	ld, err := versionDir(logDir)
	if err != nil {
		return nil, nil, err
	}
	snaps, err := listFiles(sd, "snapshot")
	if err != nil {
		return nil, nil, err
	}
	src := &Source{}
	var snap *zkdisk.Snapshot
	for i := len(snaps) - 1; i >= 0 && snap == nil; i-- {
		f := snaps[i]
		b, err := readSnapFile(f.path)
		if err != nil {
			return nil, nil, fmt.Errorf("snapshot %s: %w", f.path, err)
		}
		if !strings.HasSuffix(f.path, ".gz") && !zkdisk.LooksComplete(b) {
			// ZooKeeper skips a snapshot that was not finished.
			src.Skipped = append(src.Skipped, f.path)
			continue
		}
		if snap, err = zkdisk.ReadSnapshot(b); err != nil {
			return nil, nil, fmt.Errorf("snapshot %s: %w", f.path, err)
		}
		src.Snapshot, src.SnapZxid = f.path, f.zxid
	}
	if snap == nil {
		if len(src.Skipped) > 0 {
			return nil, nil, fmt.Errorf("%w: no complete snapshot.* file in %s: %s cut short (no final checksum)",
				zkdisk.ErrCorrupt, sd, strings.Join(src.Skipped, ", "))
		}
		return nil, nil, fmt.Errorf("no snapshot.* file in %s (ZooKeeper writes one when it first starts)", sd)
	}
	t, err := newDataTree(snap, src.SnapZxid)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w: %w", src.Snapshot, zkdisk.ErrCorrupt, err)
	}
	for s := range snap.Sessions {
		t.sessions[s] = struct{}{}
	}

	logs, err := listFiles(ld, "log")
	if err != nil {
		return nil, nil, err
	}
	// FileTxnLog.getLogFiles: the last log starting at or before the
	// snapshot's next zxid, and every later one.
	from := 0
	for i, f := range logs {
		if f.zxid <= src.SnapZxid+1 {
			from = i
		}
	}
	if len(logs) > 0 {
		logs = logs[from:]
	}
	next := src.SnapZxid + 1
	for _, f := range logs {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, nil, fmt.Errorf("txn log %s: %w", f.path, err)
		}
		recs, torn, err := zkdisk.LogRecords(b)
		if err != nil {
			return nil, nil, fmt.Errorf("txn log %s: %w", f.path, err)
		}
		src.Logs = append(src.Logs, f.path)
		if torn {
			src.Torn = append(src.Torn, f.path)
		}
		for i, r := range recs {
			tx, err := zkdisk.DecodeTxn(r)
			if err != nil {
				return nil, nil, fmt.Errorf("txn log %s, record %d: %w", f.path, i, err)
			}
			if tx.Header.Zxid < next {
				continue
			}
			t.apply(tx)
			src.Txns++
		}
	}
	src.LastZxid = t.lastZxid
	src.Sessions = len(t.sessions)
	return t, src, nil
}
