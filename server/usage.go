package server

import "fmt"

// usage is what a cluster holds, as the holding limits count it (see
// Limits): the cluster itself, its nodes and reduce slots, its unfinished
// jobs and the tasks of its heartbeat ledger's active jobs.
type usage struct {
	clusters, nodes, slots, jobs, tasks int
}

func (u usage) plus(o usage) usage {
	return usage{u.clusters + o.clusters, u.nodes + o.nodes, u.slots + o.slots, u.jobs + o.jobs, u.tasks + o.tasks}
}

func (u usage) minus(o usage) usage {
	return usage{u.clusters - o.clusters, u.nodes - o.nodes, u.slots - o.slots, u.jobs - o.jobs, u.tasks - o.tasks}
}

// usageOf is what cluster c holds.
func usageOf(c *cluster) usage {
	u := usage{clusters: 1, nodes: len(c.st.Cluster.Nodes), slots: len(c.st.Cluster.Slots), jobs: len(c.st.Jobs)}
	if c.sched != nil {
		u.tasks = c.sched.Ledger.Tasks()
	}
	return u
}

// checkCluster refuses a cluster that would hold more than the per-cluster
// limits of its jobs and tasks.
func (l Limits) checkCluster(u usage) error {
	switch {
	case u.jobs > l.MaxJobs:
		return exhausted("the cluster's unfinished jobs", u.jobs, "limits.max_jobs", l.MaxJobs)
	case u.tasks > l.MaxClusterTasks:
		return exhausted("the tasks of the cluster's active jobs", u.tasks, "limits.max_cluster_tasks", l.MaxClusterTasks)
	}
	return nil
}

// checkTotal refuses a total over the server-wide limits.
func (l Limits) checkTotal(t usage) error {
	switch {
	case t.clusters > l.MaxClusters:
		return exhausted("the clusters", t.clusters, "limits.max_clusters", l.MaxClusters)
	case t.nodes > l.MaxTotalNodes:
		return exhausted("the nodes of all clusters", t.nodes, "limits.max_total_nodes", l.MaxTotalNodes)
	case t.slots > l.MaxTotalSlots:
		return exhausted("the reduce slots of all clusters", t.slots, "limits.max_total_slots", l.MaxTotalSlots)
	case t.jobs > l.MaxTotalJobs:
		return exhausted("the unfinished jobs of all clusters", t.jobs, "limits.max_total_jobs", l.MaxTotalJobs)
	case t.tasks > l.MaxTotalTasks:
		return exhausted("the tasks of all clusters' active jobs", t.tasks, "limits.max_total_tasks", l.MaxTotalTasks)
	}
	return nil
}

// reserve counts delta more for entry e if the cluster (e's usage plus
// delta) and the server (the total plus delta) stay within their limits;
// else it changes nothing and returns the ResourceExhausted error naming
// the limit. Reserving before a change makes the limits hold under
// concurrent calls on different clusters; settle then corrects the
// reservation to what the change actually left.
func (s *ClusterService) reserve(e *clusterEntry, delta usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.limits.checkCluster(e.usage.plus(delta)); err != nil {
		return err
	}
	if err := s.limits.checkTotal(s.total.plus(delta)); err != nil {
		return err
	}
	s.total, e.usage = s.total.plus(delta), e.usage.plus(delta)
	return nil
}

// settle sets entry e's usage to u (what its cluster holds after a call or
// a load) in the total.
func (s *ClusterService) settle(e *clusterEntry, u usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total, e.usage = s.total.minus(e.usage).plus(u), u
}

// usageString is a usage for the log.
func (u usage) String() string {
	return fmt.Sprintf("%d clusters, %d nodes, %d slots, %d jobs, %d tasks", u.clusters, u.nodes, u.slots, u.jobs, u.tasks)
}
