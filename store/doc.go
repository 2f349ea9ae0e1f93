// Package store will persist cluster state (clusters, jobs, slot occupancy,
// estimator windows) in an embedded bbolt database so that every acknowledged
// change survives a crash.
//
// It is filled by the gRPC service issue; it has no code yet.
package store
