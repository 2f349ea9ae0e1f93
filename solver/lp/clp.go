package lp

/*
#cgo pkg-config: clp
#include <coin/Clp_C_Interface.h>
*/
import "C"

import (
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// This file is the only place that calls Clp. Every function takes the model as
// an unsafe.Pointer because Clp_Simplex is an opaque `void` in the C API.
//
// Memory: Clp copies everything it is given (Clp_loadProblem and the Clp_chg*
// functions copy their arrays), so Go slices of C-compatible element types are
// passed directly for the duration of a call, as the cgo pointer rules allow (the
// memory holds no Go pointers and C does not keep it). Arrays Clp returns point into
// the model and are copied into Go slices before the next call.

// liveModels counts Clp models that have been created and not yet deleted; tests
// use it to check that Close and the cleanup backstop free every model.
var liveModels atomic.Int64

// Clp's status codes (Clp_status).
const (
	clpOptimal          = 0
	clpPrimalInfeasible = 1
	clpDualInfeasible   = 2
	clpStopped          = 3 // on iterations or time; 4 is "stopped on errors"
)

// clpInfinity is COIN_DBL_MAX, Clp's representation of an infinite bound.
const clpInfinity = math.MaxFloat64

// Version returns the version of the linked Clp library, e.g. "1.17.6".
func Version() string { return C.GoString(C.Clp_Version()) }

// clpNew creates a silent Clp model holding p (which must be valid).
func clpNew(p *Problem) unsafe.Pointer {
	ptr := C.Clp_newModel()
	liveModels.Add(1)
	C.Clp_setLogLevel(ptr, 0)

	m, n := p.NumRows(), p.NumCols()
	start := make([]C.CoinBigIndex, n+1) // all zero when n = 0
	for j := 1; j <= n && len(p.ColStart) > 0; j++ {
		start[j] = C.CoinBigIndex(p.ColStart[j])
	}
	index := make([]C.int, max(len(p.RowIndex), 1))
	for k, i := range p.RowIndex {
		index[k] = C.int(i)
	}
	value := make([]C.double, max(len(p.Value), 1))
	for k, v := range p.Value {
		value[k] = C.double(v)
	}
	colLower, colUpper := toClpBounds(p.ColLower), toClpBounds(p.ColUpper)
	rowLower, rowUpper := toClpBounds(p.RowLower), toClpBounds(p.RowUpper)
	obj := toClp(p.Obj)
	C.Clp_loadProblem(ptr, C.int(n), C.int(m),
		&start[0], &index[0], &value[0],
		&colLower[0], &colUpper[0], &obj[0],
		&rowLower[0], &rowUpper[0])
	clpSetSense(ptr, p.Sense)
	return ptr
}

// clpDelete frees a model created by clpNew.
func clpDelete(ptr unsafe.Pointer) {
	C.Clp_deleteModel(ptr)
	liveModels.Add(-1)
}

func clpSetSense(ptr unsafe.Pointer, s Sense) {
	dir := 1.0 // Clp: 1 minimize, -1 maximize
	if s == Maximize {
		dir = -1
	}
	C.Clp_setOptimizationDirection(ptr, C.double(dir))
}

// toClp copies v into a C array of length max(len(v), 1) (a non-nil pointer even
// for empty problems).
func toClp(v []float64) []C.double {
	out := make([]C.double, max(len(v), 1))
	for k, x := range v {
		out[k] = C.double(x)
	}
	return out
}

// toClpBounds is toClp with ±Inf mapped to ±COIN_DBL_MAX.
func toClpBounds(v []float64) []C.double {
	out := toClp(v)
	for k, x := range v {
		switch {
		case math.IsInf(x, 1):
			out[k] = clpInfinity
		case math.IsInf(x, -1):
			out[k] = -clpInfinity
		}
	}
	return out
}

func clpChgObj(ptr unsafe.Pointer, obj []float64) {
	c := toClp(obj)
	C.Clp_chgObjCoefficients(ptr, &c[0])
}

func clpChgColBounds(ptr unsafe.Pointer, lo, hi []float64) {
	l, h := toClpBounds(lo), toClpBounds(hi)
	C.Clp_chgColumnLower(ptr, &l[0])
	C.Clp_chgColumnUpper(ptr, &h[0])
}

func clpChgRowBounds(ptr unsafe.Pointer, lo, hi []float64) {
	l, h := toClpBounds(lo), toClpBounds(hi)
	C.Clp_chgRowLower(ptr, &l[0])
	C.Clp_chgRowUpper(ptr, &h[0])
}

// clpScaling returns the model's scaling mode (0 off, 1 equilibrium, 2 geometric,
// 3 auto, 4 dynamic).
func clpScaling(ptr unsafe.Pointer) int { return int(C.Clp_scalingFlag(ptr)) }

func clpSetScaling(ptr unsafe.Pointer, mode int) { C.Clp_scaling(ptr, C.int(mode)) }

// clpRun runs one simplex call from the model's current basis, at most maxIter
// iterations, and returns Clp's status, secondary status and iteration count.
func clpRun(ptr unsafe.Pointer, alg Algorithm, maxIter int) (status, secondary, iterations int) {
	C.Clp_setMaximumIterations(ptr, C.int(maxIter))
	if alg == Primal {
		C.Clp_primal(ptr, 0)
	} else {
		C.Clp_dual(ptr, 0)
	}
	return int(C.Clp_status(ptr)), int(C.Clp_secondaryStatus(ptr)), int(C.Clp_numberIterations(ptr))
}

// clpClearStop removes any time limit from the model.
func clpClearStop(ptr unsafe.Pointer) { C.Clp_setMaximumSeconds(ptr, -1) }

// clpRequestStop asks a simplex call running on another thread to stop at its
// next limit check (Clp checks between iterations, roughly once per
// refactorization), which then returns status 3 with secondary status 9.
//
// It sets the model's CPU-time limit to "now" (Clp_setMaximumSeconds(0) stores
// CoinCpuTime()+0). The running solver only reads that double, in
// ClpModel::hitMaximumIterations, a function compiled in another translation unit
// and therefore re-read on every check; the store is a single aligned 8-byte write.
// If the solver nevertheless misses it, the call simply runs to completion: the
// caller never relies on the stop for correctness, only for latency.
func clpRequestStop(ptr unsafe.Pointer) { C.Clp_setMaximumSeconds(ptr, 0) }

// Clp basis statuses (Clp_getColumnStatus, Clp_getRowStatus).
const (
	clpStatusFree       = 0
	clpStatusAtUpper    = 2
	clpStatusAtLower    = 3
	clpStatusSuperbasic = 4
)

// farNonbasic is the magnitude from which a free or superbasic variable is taken to
// sit at one of the dual simplex's artificial bounds (Clp_dualBound, 1e10 by
// default) rather than at a meaningful value.
const farNonbasic = 1e9

// clpResetFarNonbasics looks for nonbasic variables (columns and row activities)
// that the dual simplex left free or superbasic at an artificial bound, which it
// does on an unbounded optimal face (for example when adding a constant to some
// free variables changes neither feasibility nor cost). It moves each to its finite
// bound nearest zero, or to zero when it has none, and reports whether it moved any;
// a primal simplex from the resulting basis then restores feasibility at ordinary
// magnitudes with the same optimal objective.
func clpResetFarNonbasics(ptr unsafe.Pointer, m, n int) bool {
	moved := false
	if n > 0 {
		x := unsafe.Slice(C.Clp_primalColumnSolution(ptr), n)
		lo := unsafe.Slice(C.Clp_columnLower(ptr), n)
		hi := unsafe.Slice(C.Clp_columnUpper(ptr), n)
		for j := range n {
			st := int(C.Clp_getColumnStatus(ptr, C.int(j)))
			if (st == clpStatusFree || st == clpStatusSuperbasic) && math.Abs(float64(x[j])) >= farNonbasic {
				v, status := resetValue(float64(lo[j]), float64(hi[j]))
				x[j] = C.double(v)
				C.Clp_setColumnStatus(ptr, C.int(j), C.int(status))
				moved = true
			}
		}
	}
	if m > 0 {
		r := unsafe.Slice(C.Clp_primalRowSolution(ptr), m)
		lo := unsafe.Slice(C.Clp_rowLower(ptr), m)
		hi := unsafe.Slice(C.Clp_rowUpper(ptr), m)
		for i := range m {
			st := int(C.Clp_getRowStatus(ptr, C.int(i)))
			if (st == clpStatusFree || st == clpStatusSuperbasic) && math.Abs(float64(r[i])) >= farNonbasic {
				v, status := resetValue(float64(lo[i]), float64(hi[i]))
				r[i] = C.double(v)
				C.Clp_setRowStatus(ptr, C.int(i), C.int(status))
				moved = true
			}
		}
	}
	return moved
}

// resetValue returns the finite bound of [lo, hi] nearest zero with its status, or
// zero with status free when both bounds are infinite.
func resetValue(lo, hi float64) (float64, int) {
	loFinite, hiFinite := lo > -clpInfinity, hi < clpInfinity
	switch {
	case loFinite && (!hiFinite || math.Abs(lo) <= math.Abs(hi)):
		return lo, clpStatusAtLower
	case hiFinite:
		return hi, clpStatusAtUpper
	default:
		return 0, clpStatusFree
	}
}

// clpPrimalDual copies the current column solution x and row duals y out of the
// model.
func clpPrimalDual(ptr unsafe.Pointer, m, n int) (x, y []float64) {
	x, y = make([]float64, n), make([]float64, m)
	copyOut(x, C.Clp_getColSolution(ptr))
	copyOut(y, C.Clp_getRowPrice(ptr))
	return x, y
}

func copyOut(dst []float64, src *C.double) {
	if len(dst) == 0 || src == nil {
		return
	}
	for k, v := range unsafe.Slice(src, len(dst)) {
		dst[k] = float64(v)
	}
}

// modelHandle ties a Clp model's lifetime to a Go object: Close frees it
// deterministically and the runtime cleanup is only a backstop.
type modelHandle struct {
	ptr     unsafe.Pointer
	cleanup runtime.Cleanup
}

func newHandle[T any](owner *T, ptr unsafe.Pointer) modelHandle {
	return modelHandle{ptr: ptr, cleanup: runtime.AddCleanup(owner, clpDelete, ptr)}
}

// free deletes the model once; later calls do nothing.
func (h *modelHandle) free() {
	if h.ptr == nil {
		return
	}
	h.cleanup.Stop()
	clpDelete(h.ptr)
	h.ptr = nil
}
