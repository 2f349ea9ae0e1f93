package sim

import "math/rand/v2"

// Stream identifies one independent random stream of a replication. Every
// source of randomness has its own stream, so that what one consumer draws
// never shifts what another sees: common random numbers across policies
// (every policy of a replication sees the same arrivals, works and (X, R),
// whatever the policy itself draws).
type Stream uint64

// The streams of the placement model.
const (
	// StreamSlots draws the slot costs of a scenario (from the scenario's
	// seed, not a replication's, so all replications share the slots).
	StreamSlots Stream = iota + 1
	// StreamArrivals draws inter-arrival times.
	StreamArrivals
	// StreamWorks draws the map work B of each job.
	StreamWorks
	// StreamJobs draws each job's (X, R).
	StreamJobs
	// StreamPolicy seeds the placement policy's own randomness.
	StreamPolicy
)

// NewRand returns the generator of stream s under seed: a PCG generator
// (math/rand/v2) with the seed as state and the stream as increment, so
// distinct streams of one seed are independent sequences.
func NewRand(seed uint64, s Stream) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(s)))
}

// ReplicationSeed derives the seed of replication rep from a scenario seed
// by the SplitMix64 finalizer of seed + (rep+1)·γ (γ the golden-ratio
// increment), so that consecutive replications get unrelated seeds and the
// mapping is the same on every machine and in every shard.
func ReplicationSeed(seed uint64, rep int) uint64 {
	return splitmix64(seed + uint64(rep+1)*0x9e3779b97f4a7c15)
}

// PolicySeed derives the seed a policy's randomness uses in a replication.
func PolicySeed(repSeed uint64) uint64 {
	return splitmix64(repSeed ^ 0xd1b54a32d192ed03)
}

func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
