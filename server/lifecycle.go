package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// DeleteCluster implements optd.v1.ClusterService: the cluster and all it
// stored are removed durably, and what it held no longer counts against
// the limits. Deleting a cluster that does not exist (a retry) succeeds
// with existed false.
func (s *ClusterService) DeleteCluster(ctx context.Context, req *optdv1.DeleteClusterRequest) (*optdv1.DeleteClusterResponse, error) {
	id := req.GetClusterId()
	if err := checkID("cluster_id", id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	e, ok := s.clusters[id]
	s.mu.Unlock()
	if !ok {
		return &optdv1.DeleteClusterResponse{}, nil
	}
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.lock }()
	if e.deleted {
		return &optdv1.DeleteClusterResponse{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %q: not started: %w", id, err)
	}
	// The store deletes after every change queued before (its group commit
	// keeps their order), so no acknowledged change outlives the cluster.
	if err := s.store.Delete(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	e.deleted, e.c = true, nil
	s.settle(e, usage{})
	s.mu.Lock()
	delete(s.clusters, id)
	s.mu.Unlock()
	s.log.InfoContext(ctx, "cluster deleted", "cluster_id", id)
	return &optdv1.DeleteClusterResponse{Existed: true}, nil
}

// ListClusters page sizes.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// ListClusters implements optd.v1.ClusterService: the clusters in order of
// id after page_token (the last id of the previous page), with what each
// holds as last counted (after its last call).
func (s *ClusterService) ListClusters(_ context.Context, req *optdv1.ListClustersRequest) (*optdv1.ListClustersResponse, error) {
	size := int(req.GetPageSize())
	switch {
	case size < 0 || size > maxPageSize:
		return nil, invalid("page_size", size, "must be in [0, %d] (0: %d)", maxPageSize, defaultPageSize)
	case size == 0:
		size = defaultPageSize
	}
	after := req.GetPageToken()
	s.mu.Lock()
	ids := make([]string, 0, len(s.clusters))
	for id := range s.clusters {
		if id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	resp := &optdv1.ListClustersResponse{}
	for _, id := range ids[:min(size, len(ids))] {
		u := s.clusters[id].usage
		resp.Clusters = append(resp.Clusters, &optdv1.ClusterSummary{ClusterId: id, Nodes: int32(u.nodes), Slots: int32(u.slots),
			UnfinishedJobs: int32(u.jobs), Tasks: int64(u.tasks)})
	}
	s.mu.Unlock()
	if len(ids) > size {
		resp.NextPageToken = ids[size-1]
	}
	return resp, nil
}
