package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"sort"
)

// ReplicaSample is one member's state digest (or whole snapshot bytes) at
// an applied index.
type ReplicaSample struct {
	Member uint64
	Index  uint64
	Digest []byte
}

// ReplicasAgree checks that all samples at an equal applied index carry
// equal digests, including two samples of one member. The lowest index
// that disagrees is reported.
func ReplicasAgree(samples []ReplicaSample) error {
	byIndex := make(map[uint64][]ReplicaSample)
	for _, s := range samples {
		byIndex[s.Index] = append(byIndex[s.Index], s)
	}
	indexes := make([]uint64, 0, len(byIndex))
	for i := range byIndex {
		indexes = append(indexes, i)
	}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i] < indexes[j] })
	for _, index := range indexes {
		ss := byIndex[index]
		for _, s := range ss[1:] {
			if !bytes.Equal(s.Digest, ss[0].Digest) {
				return violationf(CheckerReplicasAgree, "at applied index %d member %d has state %s but member %d has %s",
					index, ss[0].Member, shortDigest(ss[0].Digest), s.Member, shortDigest(s.Digest))
			}
		}
	}
	return nil
}

// shortDigest prints a digest, or the hash of longer snapshot bytes.
func shortDigest(b []byte) string {
	if len(b) <= 16 {
		return hex.EncodeToString(b)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8])
}
