package models

// Occupancy is what the running task attempts of a node hold: the sums of
// their requested and granted resources and the typed slots they occupy.
type Occupancy struct {
	Requested, Granted    Resources
	MapSlots, ReduceSlots int
}

// NewOccupancy returns an empty occupancy over dims resources.
func NewOccupancy(dims int) Occupancy {
	return Occupancy{Requested: make(Resources, dims), Granted: make(Resources, dims)}
}

// Add counts one attempt that requested and holds granted (each with the
// occupancy's dimensions) in a typed slot of type slot (0: none).
func (o *Occupancy) Add(requested, granted Resources, slot TaskType) {
	for p := range o.Requested {
		o.Requested[p] += requested[p]
		o.Granted[p] += granted[p]
	}
	switch slot {
	case MapTask:
		o.MapSlots++
	case ReduceTask:
		o.ReduceSlots++
	}
}

// Remove uncounts one attempt that Add counted.
func (o *Occupancy) Remove(requested, granted Resources, slot TaskType) {
	for p := range o.Requested {
		o.Requested[p] -= requested[p]
		o.Granted[p] -= granted[p]
	}
	switch slot {
	case MapTask:
		o.MapSlots--
	case ReduceTask:
		o.ReduceSlots--
	}
}
