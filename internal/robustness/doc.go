// Package robustness holds optd's robustness harness, in the manner of
// etcd's robustness tests: a real `optd serve` process (the test binary
// running the CLI) takes changes from 16 concurrent clients and is killed
// with SIGKILL at random moments (sometimes during its startup, sometimes
// stopped with SIGTERM instead), restarted on the same data directory, and
// checked: every client keeps a model of the changes the server
// acknowledged and compares it with what the restarted server serves,
// allowing the one call each client had in flight either way. Nothing
// acknowledged may be lost and nothing may appear that no call asked for.
//
// After a kill, copies of the data directory are damaged as the storage
// issue measured (truncation at a random offset and at a record boundary,
// one flipped bit anywhere or within the records, 4 KiB zeroed, a file
// deleted) in a randomly chosen file, and a server is started on each copy:
// it must refuse to start with a message naming the damage (and `optd store
// check` must report it), or serve exactly the state of the undamaged
// directory. A panic or a fault is a failure either way.
//
// `go test ./internal/robustness` runs a short version (a few cycles, well
// under a minute); `make robustness` runs 100 cycles
// (OPTD_ROBUSTNESS_CYCLES). The figures are logged, and written as JSON to
// OPTD_ROBUSTNESS_REPORT if set.
package robustness
