// Package models holds optd's domain types and workload laws.
//
//   - Cluster, nodes, racks and reduce slots with their fetching cost H(v)
//     (Tan et al., INFOCOM 2013, §II-B); resource vectors (YARN containers) and
//     typed MRv1 slots; jobs, tasks, phases and Hadoop's progress score.
//   - Workloads: the law of a job's (X, R), X = its intermediate (shuffle) data
//     and R = its number of ReduceTasks, as docs/formats.md#workload specifies, either as
//     independent marginals or a discrete joint law. Every data law gives its
//     CDF, P[a ≤ X < b], the partial expectation E[X·1{a ≤ X < b}] (closed form
//     for uniform, exponential, lognormal, gamma and Pareto; exact sums for
//     discrete and empirical laws) and seeded sampling. The conditional law of
//     Y = X/R given R = r ([Workload.Conditionals]) is what the threshold
//     recursion of package thresholds needs.
//   - Trace readers live in the leaf subpackage models/trace; an empirical
//     workload may name a trace file as its sample file.
//
// Validation errors name the field and the value and wrap a package sentinel
// (ErrInvalidWorkload, ErrInvalidCluster, ErrInvalidJob, ...).
package models
