package check

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// OpKind is the kind of a register operation on one znode.
type OpKind int

// The operations of the versioned-register model of a znode.
const (
	// OpCreate creates the znode with Data (version 0). Its parent is assumed
	// to exist for the whole history; the znode must not be sequential.
	OpCreate OpKind = iota + 1
	// OpSet is setData(Data, Version) where Version -1 matches any version.
	OpSet
	// OpGet is getData, answering RespData and RespVersion.
	OpGet
	// OpDelete is delete(Version) where Version -1 matches any version.
	OpDelete
)

func (k OpKind) String() string {
	switch k {
	case OpCreate:
		return "create"
	case OpSet:
		return "set"
	case OpGet:
		return "get"
	case OpDelete:
		return "delete"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Status is the outcome of a register operation as the client saw it.
type Status int

// Outcomes of a register operation.
const (
	// StatusOK: the operation succeeded.
	StatusOK Status = iota + 1
	// StatusNoNode: the znode did not exist.
	StatusNoNode
	// StatusNodeExists: a create found the znode present.
	StatusNodeExists
	// StatusBadVersion: the expected version did not match.
	StatusBadVersion
	// StatusUnknown: no answer (timeout, connection loss, session expired
	// while in flight). The operation may have taken effect at any instant
	// after its invocation, or never. A read with unknown outcome constrains
	// nothing and is ignored.
	StatusUnknown
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusNoNode:
		return "NoNode"
	case StatusNodeExists:
		return "NodeExists"
	case StatusBadVersion:
		return "BadVersion"
	case StatusUnknown:
		return "unknown"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// RegisterOp is one recorded operation on one znode.
type RegisterOp struct {
	// Client identifies the client (session) that issued the operation:
	// small non-negative integers, used in explanations, in the
	// visualization (one row per client) and by SessionReads, which assumes
	// a client's operations are listed in the order it issued them.
	Client int
	// Path of the znode; the history is checked path by path.
	Path string
	Kind OpKind
	// Data written by OpCreate and OpSet.
	Data string
	// Version expected by OpSet and OpDelete; -1 matches any version.
	Version int32
	// Linearizable marks an OpGet issued after a sync on the same session
	// (a sync+read is an ordinary linearizable read). Plain reads
	// (Linearizable false) are checked by SessionReads only.
	Linearizable bool
	// Call is the instant the client sent the request. For a Linearizable
	// read it is the instant the client sent the sync before it: a read that
	// follows a sync reflects a state at least as new as the sync, which may
	// take effect anywhere between its invocation and its response, so the
	// read's window must start there or correct histories are rejected.
	Call int64
	// Return is the instant the client received the answer. For
	// StatusUnknown it is optional: the latest instant the operation can have
	// taken effect when the caller knows one (for example the close of its
	// session), or Never, or any value below Call (such as 0) when the
	// operation may take effect at any time up to the end of the history.
	Return int64
	// Status is the outcome the client saw.
	Status Status
	// RespData is the data an OpGet read (StatusOK).
	RespData string
	// RespVersion is the data version an OpGet read, or the new version an
	// OpSet produced (StatusOK). Ignored for OpCreate (always 0).
	RespVersion int32
	// RespMzxid is the optional mzxid of the znode in the reply of an OpGet
	// or OpSet with StatusOK; 0 means not recorded. SessionReads and
	// NoLostWrites use it when present because, unlike the version, it
	// keeps growing across a delete and re-create.
	RespMzxid int64
}

func (op RegisterOp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client %d %s %s", op.Client, op.Kind, op.Path)
	switch op.Kind {
	case OpCreate:
		fmt.Fprintf(&b, "(%q)", op.Data)
	case OpSet:
		fmt.Fprintf(&b, "(%q, %s)", op.Data, fmtVersion(op.Version))
	case OpDelete:
		fmt.Fprintf(&b, "(%s)", fmtVersion(op.Version))
	case OpGet:
		if op.Linearizable {
			b.WriteString(" after sync")
		}
	}
	b.WriteString(" -> ")
	switch {
	case op.Status == StatusOK && op.Kind == OpGet:
		fmt.Fprintf(&b, "(%q, v%d)", op.RespData, op.RespVersion)
	case op.Status == StatusOK && op.Kind == OpSet:
		fmt.Fprintf(&b, "ok v%d", op.RespVersion)
	default:
		b.WriteString(op.Status.String())
	}
	switch {
	case op.Status == StatusUnknown && op.Return >= op.Call && op.Return != Never:
		fmt.Fprintf(&b, " [call %d, in effect by %d if ever]", op.Call, op.Return)
	case op.Status == StatusUnknown:
		fmt.Fprintf(&b, " [call %d]", op.Call)
	default:
		fmt.Fprintf(&b, " [call %d, return %d]", op.Call, op.Return)
	}
	return b.String()
}

func fmtVersion(v int32) string {
	if v == -1 {
		return "any version"
	}
	return fmt.Sprintf("v%d", v)
}

// Register is the state of one znode as a versioned register.
type Register struct {
	Exists  bool
	Data    string
	Version int32
	// Mzxid is optional (0 = unknown); the linearizability model ignores it.
	Mzxid int64
}

func (r Register) String() string {
	if !r.Exists {
		return "absent"
	}
	return fmt.Sprintf("(%q, v%d)", r.Data, r.Version)
}

// regState is the porcupine model state: comparable, Mzxid dropped.
type regState struct {
	exists  bool
	data    string
	version int32
}

func (s regState) String() string {
	return Register{Exists: s.exists, Data: s.data, Version: s.version}.String()
}

// LinearizableOptions tunes Linearizable.
type LinearizableOptions struct {
	// Initial is the state of each path before the history; a path not
	// listed starts absent.
	Initial map[string]Register
	// Timeout bounds the whole search (wall clock); 0 means no bound. When it
	// runs out the result is a Violation with Inconclusive set.
	Timeout time.Duration
	// VisualizationPath, when set, receives porcupine's HTML visualization of
	// the path that violates linearizability (nothing is written when the
	// history is linearizable).
	VisualizationPath string
}

// stepRegister applies op to s. ok is false when the outcome op reports is
// impossible in state s; why then says what the state was.
func stepRegister(s regState, op *RegisterOp) (ok bool, next regState, why string) {
	versionMatches := op.Version == -1 || op.Version == s.version
	switch op.Kind {
	case OpCreate:
		switch op.Status {
		case StatusOK:
			if s.exists {
				return false, s, "the znode already exists " + s.String()
			}
			return true, regState{exists: true, data: op.Data}, ""
		case StatusNodeExists:
			if !s.exists {
				return false, s, "the znode is absent"
			}
			return true, s, ""
		case StatusUnknown:
			if !s.exists {
				return true, regState{exists: true, data: op.Data}, ""
			}
			return true, s, ""
		}
	case OpSet:
		switch op.Status {
		case StatusOK:
			if !s.exists {
				return false, s, "the znode is absent"
			}
			if !versionMatches {
				return false, s, "the znode is at " + s.String()
			}
			if op.RespVersion != s.version+1 {
				return false, s, fmt.Sprintf("the znode is at %s, so the new version is v%d", s, s.version+1)
			}
			return true, regState{exists: true, data: op.Data, version: s.version + 1}, ""
		case StatusNoNode:
			if s.exists {
				return false, s, "the znode exists " + s.String()
			}
			return true, s, ""
		case StatusBadVersion:
			if !s.exists || versionMatches {
				return false, s, "the znode is " + s.String()
			}
			return true, s, ""
		case StatusUnknown:
			if s.exists && versionMatches {
				return true, regState{exists: true, data: op.Data, version: s.version + 1}, ""
			}
			return true, s, ""
		}
	case OpDelete:
		switch op.Status {
		case StatusOK:
			if !s.exists || !versionMatches {
				return false, s, "the znode is " + s.String()
			}
			return true, regState{}, ""
		case StatusNoNode:
			if s.exists {
				return false, s, "the znode exists " + s.String()
			}
			return true, s, ""
		case StatusBadVersion:
			if !s.exists || versionMatches {
				return false, s, "the znode is " + s.String()
			}
			return true, s, ""
		case StatusUnknown:
			if s.exists && versionMatches {
				return true, regState{}, ""
			}
			return true, s, ""
		}
	case OpGet:
		switch op.Status {
		case StatusOK:
			if !s.exists || s.data != op.RespData || s.version != op.RespVersion {
				return false, s, "the znode is " + s.String()
			}
			return true, s, ""
		case StatusNoNode:
			if s.exists {
				return false, s, "the znode exists " + s.String()
			}
			return true, s, ""
		}
	}
	return false, s, fmt.Sprintf("%s cannot answer %s", op.Kind, op.Status)
}

// regInput is a porcupine operation's input: the recorded operation, and
// whether it may have had no effect although it must be linearized before a
// finite bound (an unknown-outcome operation whose bound the caller gave).
// An unknown-outcome operation open to the end of the history needs no such
// branch: linearized last, it is as if it never took effect.
type regInput struct {
	op       *RegisterOp
	optional bool
}

// stepStates applies in to each of the possible states, deduplicated in
// first-seen order.
func stepStates(states []regState, in regInput) []regState {
	var out []regState
	add := func(s regState) {
		for _, o := range out {
			if o == s {
				return
			}
		}
		out = append(out, s)
	}
	for _, s := range states {
		ok, next, _ := stepRegister(s, in.op)
		if !ok {
			continue
		}
		add(next)
		if in.optional {
			add(s)
		}
	}
	return out
}

func registerModel(initial regState) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init: func() []any { return []any{initial} },
		Step: func(state, input, _ any) []any {
			var out []any
			for _, s := range stepStates([]regState{state.(regState)}, input.(regInput)) {
				out = append(out, s)
			}
			return out
		},
		DescribeOperation: func(input, _ any) string {
			s := input.(regInput).op.String()
			// The visualization shows the times itself.
			if i := strings.LastIndex(s, " ["); i >= 0 {
				s = s[:i]
			}
			return s
		},
		DescribeState: func(state any) string { return state.(regState).String() },
		Hash: func(state any) uint64 {
			s := state.(regState)
			h := fnv.New64a()
			_, _ = h.Write([]byte(s.data))
			v := uint64(uint32(s.version))
			if s.exists {
				v |= 1 << 32
			}
			return h.Sum64() ^ v*0x9e3779b97f4a7c15
		},
	}
	return m.ToModel()
}

func validateRegisterOp(i int, op *RegisterOp) error {
	if op.Kind < OpCreate || op.Kind > OpDelete {
		return fmt.Errorf("check: register op %d: invalid kind %d", i, op.Kind)
	}
	if op.Status < StatusOK || op.Status > StatusUnknown {
		return fmt.Errorf("check: register op %d (%s): invalid status %d", i, op.Kind, op.Status)
	}
	if op.Status != StatusUnknown && op.Return < op.Call {
		return fmt.Errorf("check: register op %d (%s): returns at %d before its call at %d", i, op, op.Return, op.Call)
	}
	if op.Client < 0 {
		return fmt.Errorf("check: register op %d: negative client %d", i, op.Client)
	}
	return nil
}

// groupByPath returns the paths of history in sorted order and, per path,
// the indexes of its operations.
func groupByPath(history []RegisterOp) ([]string, map[string][]int) {
	byPath := make(map[string][]int)
	for i := range history {
		byPath[history[i].Path] = append(byPath[history[i].Path], i)
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, byPath
}

// Linearizable checks that the history, path by path, is linearizable with
// respect to a versioned register: writes of every status and the reads
// marked Linearizable take part; plain reads and reads with unknown outcome
// are left out. An operation with StatusUnknown may take effect at any
// instant after its invocation and before its bound (see RegisterOp.Return),
// or not at all. When exactly one write on a path could have written some
// data and a read (plain or not) returned that data, the write took effect
// before that read returned, and its bound is tightened to that instant:
// histories whose writes carry unique data check much faster.
//
// Operations of unknown outcome that may stay open to the end make the
// search exponential in their number; histories of many thousands of
// operations per path with many of them are best checked with a Timeout.
// When the time budget runs out on a path and no other path violates
// linearizability, the result is an Inconclusive violation; its detail then
// says whether the path fails on the assumption that the unknown-outcome
// writes no read observed never took effect.
//
// On a violation the explanation names the path, the longest prefix that
// could be linearized, the state it ends in, and why none of the operations
// that could come next is possible in that state. Among several violating
// paths the one whose violation shows earliest is reported.
func Linearizable(history []RegisterOp, opts LinearizableOptions) error {
	var end int64
	for i := range history {
		op := &history[i]
		if err := validateRegisterOp(i, op); err != nil {
			return err
		}
		end = max(end, op.Call)
		if op.Status != StatusUnknown {
			end = max(end, op.Return)
		}
	}
	end++

	var deadline time.Time
	if opts.Timeout > 0 {
		deadline = time.Now().Add(opts.Timeout)
	}
	type failure struct {
		at     int64
		detail string
		model  porcupine.Model
		info   porcupine.LinearizationInfo
	}
	var first *failure
	var inconclusive []string
	paths, byPath := groupByPath(history)
	for pi, path := range paths {
		init := opts.Initial[path]
		ops := pathOperations(history, byPath[path], init, end)
		if len(ops) == 0 {
			continue
		}
		initState := regState{exists: init.Exists, data: init.Data, version: init.Version}
		model := registerModel(initState)
		// Each path left gets an equal share of the budget left; a quarter of
		// it is kept for the reduced history below.
		var share time.Duration
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				inconclusive = append(inconclusive, fmt.Sprintf("path %s not checked", path))
				continue
			}
			share = max(left/time.Duration(len(paths)-pi), 1)
		}
		res, info := porcupine.CheckOperationsVerbose(model, ops, share-share/4)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			note := fmt.Sprintf("path %s (%d operations)", path, len(ops))
			if reduced := withoutUnobservedWrites(history, byPath[path], ops); len(reduced) < len(ops) {
				switch res, info := porcupine.CheckOperationsVerbose(model, reduced, max(share/4, 1)); res {
				case porcupine.Ok:
					note += fmt.Sprintf(", which is linearizable if the %d unknown-outcome writes no read observed never took effect", len(ops)-len(reduced))
				case porcupine.Illegal:
					_, d := explainRegister(path, initState, reduced, info)
					note += fmt.Sprintf(", which is not linearizable even if the %d unknown-outcome writes no read observed never took effect: %s", len(ops)-len(reduced), d)
				}
			}
			inconclusive = append(inconclusive, note)
			continue
		}
		at, detail := explainRegister(path, initState, ops, info)
		if first == nil || at < first.at {
			first = &failure{at: at, detail: detail, model: model, info: info}
		}
	}
	if first == nil {
		if len(inconclusive) > 0 {
			return &Violation{Checker: CheckerLinearizable, Inconclusive: true,
				Detail: fmt.Sprintf("the search ran out of its time budget %s on %s", opts.Timeout, strings.Join(inconclusive, "; "))}
		}
		return nil
	}
	v := violationf(CheckerLinearizable, "%s", first.detail)
	if opts.VisualizationPath != "" {
		if err := porcupine.VisualizePath(first.model, first.info, opts.VisualizationPath); err != nil {
			v.Detail += fmt.Sprintf(" (writing the visualization to %s failed: %v)", opts.VisualizationPath, err)
		} else {
			v.Detail += " (visualization in " + opts.VisualizationPath + ")"
		}
	}
	return v
}

// pathOperations turns one path's operations into porcupine operations:
// plain reads and reads of unknown outcome are left out, and an
// unknown-outcome operation returns at its bound (see RegisterOp.Return) or
// at end. The bound of an unknown-outcome write is tightened to the earliest
// return of a read that saw its data, when no other write (nor the initial
// state) can have produced that data.
func pathOperations(history []RegisterOp, idx []int, init Register, end int64) []porcupine.Operation {
	writers := make(map[string]int)
	firstRead := make(map[string]int64)
	if init.Exists {
		writers[init.Data]++
	}
	for _, i := range idx {
		op := &history[i]
		switch {
		case (op.Kind == OpCreate || op.Kind == OpSet) && (op.Status == StatusOK || op.Status == StatusUnknown):
			writers[op.Data]++
		case op.Kind == OpGet && op.Status == StatusOK:
			if r, seen := firstRead[op.RespData]; !seen || op.Return < r {
				firstRead[op.RespData] = op.Return
			}
		}
	}
	var ops []porcupine.Operation
	for _, i := range idx {
		op := &history[i]
		if op.Kind == OpGet && (!op.Linearizable || op.Status == StatusUnknown) {
			continue
		}
		ret := op.Return
		optional := false
		if op.Status == StatusUnknown {
			if ret < op.Call || ret > end {
				ret = end
			}
			optional = ret < end
			if op.Kind != OpDelete && writers[op.Data] == 1 {
				if r, seen := firstRead[op.Data]; seen && r >= op.Call {
					// It happened, by the time the read returned: the read
					// saw what only it wrote.
					ret, optional = min(ret, r), false
				}
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: regInput{op: op, optional: optional}, Call: op.Call, Return: ret})
	}
	return ops
}

// withoutUnobservedWrites drops from ops the unknown-outcome creates and
// sets whose data no read of the path returned.
func withoutUnobservedWrites(history []RegisterOp, idx []int, ops []porcupine.Operation) []porcupine.Operation {
	read := make(map[string]bool)
	for _, i := range idx {
		if op := &history[i]; op.Kind == OpGet && op.Status == StatusOK {
			read[op.RespData] = true
		}
	}
	var out []porcupine.Operation
	for _, o := range ops {
		op := o.Input.(regInput).op
		if op.Status == StatusUnknown && op.Kind != OpDelete && op.Kind != OpGet && !read[op.Data] {
			continue
		}
		out = append(out, o)
	}
	return out
}

// explainRegister describes why the operations of one path cannot be
// linearized, and returns the instant the search got stuck at.
func explainRegister(path string, init regState, ops []porcupine.Operation, info porcupine.LinearizationInfo) (int64, string) {
	var longest []porcupine.Operation
	for _, partial := range info.PartialLinearizationsOperations() {
		for _, l := range partial {
			if len(l) > len(longest) || (len(l) == len(longest) && lessLinearization(l, longest)) {
				longest = l
			}
		}
	}
	states := []regState{init}
	done := make(map[*RegisterOp]bool, len(longest))
	for _, o := range longest {
		in := o.Input.(regInput)
		states = stepStates(states, in)
		done[in.op] = true
	}
	// The operations that could be linearized next: not yet linearized, and
	// invoked no later than the earliest response among those left.
	var rest []porcupine.Operation
	stuck := int64(Never)
	for _, o := range ops {
		if !done[o.Input.(regInput).op] {
			rest = append(rest, o)
			stuck = min(stuck, o.Return)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].Call < rest[j].Call })
	var b strings.Builder
	fmt.Fprintf(&b, "path %s: not linearizable; at most %d of its %d operations linearize", path, len(longest), len(ops))
	if n := len(longest); n > 0 {
		fmt.Fprintf(&b, ", the last being %s", longest[n-1].Input.(regInput).op)
	}
	if len(states) == 1 {
		fmt.Fprintf(&b, ", leaving the znode %s", states[0])
	} else {
		names := make([]string, len(states))
		for i, st := range states {
			names[i] = st.String()
		}
		fmt.Fprintf(&b, ", leaving the znode %s (one of these, depending on operations of unknown outcome)", strings.Join(names, " or "))
	}
	b.WriteString("; none of the operations that must come next can:")
	const maxShown = 4
	shown := 0
	for _, o := range rest {
		if o.Call > stuck {
			break
		}
		if shown == maxShown {
			b.WriteString("; ...")
			break
		}
		in := o.Input.(regInput)
		why := ""
		if len(stepStates(states, in)) > 0 {
			why = "it is possible here, but then later operations are not"
		} else if len(states) == 1 {
			_, _, why = stepRegister(states[0], in.op)
		} else {
			why = "it is possible in none of these states"
		}
		if shown > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s: %s", in.op, why)
		shown++
	}
	return stuck, b.String()
}

func lessLinearization(a, b []porcupine.Operation) bool {
	for i := range a {
		if a[i].Call != b[i].Call {
			return a[i].Call < b[i].Call
		}
	}
	return false
}
