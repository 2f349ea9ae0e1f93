// Package errkind marks errors with what the caller can do about them: fix
// the input, look for something else, retry later. It is the one marker
// every package's sentinel errors carry, so that a boundary (the gRPC
// server's status codes, a command's exit message) classifies an error by
// its kind, never by a list of sentinels that a new error would escape.
//
// A sentinel is made with [New] and matched as before, by identity with
// errors.Is; [Of] finds the kind of any error that wraps one, however deep.
package errkind

import (
	"errors"
	"fmt"
	"regexp"
)

// Kind is the class of a failure.
type Kind uint8

// The kinds. The zero Kind is "unclassified", which a boundary treats as
// Internal.
const (
	// Invalid: the input is wrong (a field, a value, a name, a size); the
	// message names it. Fix the input.
	Invalid Kind = iota + 1
	// NotFound: no cluster, job, node or attempt with that id.
	NotFound
	// Conflict: it already exists (a cluster or job id taken).
	Conflict
	// Precondition: the input is valid but the current state cannot serve
	// it (not enough free slots, an infeasible trace).
	Precondition
	// Exhausted: a configured limit is reached (or the disk's free space
	// has fallen below the store's reserve).
	Exhausted
	// Unavailable: optd cannot serve it now for a failure of its
	// environment that it will not retry by itself (a failed write or sync
	// of the store); the message says what the operator must do.
	Unavailable
	// DataLoss: stored data failed its checks; the message names the file
	// and the offset or key.
	DataLoss
	// Internal: a failure of optd or of its environment (a bug, a
	// database another process holds, a solver that did not converge), not
	// of the request.
	Internal
)

var names = [...]string{Invalid: "invalid", NotFound: "not found", Conflict: "conflict",
	Precondition: "precondition", Exhausted: "exhausted", Unavailable: "unavailable",
	DataLoss: "data loss", Internal: "internal"}

func (k Kind) String() string {
	if k >= Invalid && k <= Internal {
		return names[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Marked is implemented by every error that carries a kind: the sentinels
// of New, and typed errors such as a request's field error.
type Marked interface {
	error
	Kind() Kind
}

// sentinel is an error of New.
type sentinel struct {
	kind Kind
	msg  string
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Kind() Kind    { return e.kind }

// New returns a sentinel error of kind k with the message msg (by
// convention "package: what went wrong"). Each call returns a distinct
// error, as errors.New does.
func New(k Kind, msg string) error { return &sentinel{kind: k, msg: msg} }

// Of returns the kind of the first error in err's tree (as errors.As walks
// it) that carries one, and 0 if none does.
func Of(err error) Kind {
	var m Marked
	if errors.As(err, &m) {
		return m.Kind()
	}
	return 0
}

// packagePrefix matches the name of one of optd's library packages that a
// sentinel error carries for Go callers ("sim: invalid scenario"), at the
// start of the message or of a ": "-separated part of it.
var packagePrefix = regexp.MustCompile(`(^|: )(?:models|trace|sim|solver|lp|mdp|search|policy|bound|thresholds|ledger|store|config): `)

// UserText is msg without the package names of the library's sentinel
// errors, which tell a Go caller where an error comes from but tell a user
// nothing (the field path, value and limit do): what a boundary (the
// command line's exit message, the server's status message) shows.
func UserText(msg string) string {
	for {
		next := packagePrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			return msg
		}
		msg = next
	}
}
