// Package optdv1 will hold the versioned gRPC API optd.v1 (.proto and the generated
// Go, checked in).
//
// It is filled by the gRPC service issue; it has no code yet.
package optdv1
