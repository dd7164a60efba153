package server

import (
	"context"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// ListVersions implements csv1.VersionsServer.
func (s *Server) ListVersions(_ context.Context, req *csv1.ListVersionsRequest) (*csv1.ListVersionsResponse, error) {
	groups := s.cfg.Versions.Groups()
	if g := req.GetChannelGroup(); g != "" {
		if _, ok := s.cfg.Versions.Versions(g); !ok {
			var v violations
			v.add("channel_group", "channel group %q does not exist; use one of %v", g, groups)
			return nil, v.err()
		}
		groups = []string{g}
	}
	sort.Strings(groups)
	resp := &csv1.ListVersionsResponse{}
	for _, g := range groups {
		vs, _ := s.cfg.Versions.Versions(g)
		for _, v := range vs {
			resp.Versions = append(resp.Versions, versionProto(g, v))
		}
	}
	return resp, nil
}

// GetVersion implements csv1.VersionsServer.
func (s *Server) GetVersion(_ context.Context, req *csv1.GetVersionRequest) (*csv1.Version, error) {
	g := req.GetChannelGroup()
	if g == "" {
		g = model.DefaultChannelGroup
	}
	if req.GetId() == "" {
		var v violations
		v.add("id", "is required")
		return nil, v.err()
	}
	v, ok := s.cfg.Versions.Get(g, req.GetId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "version %s is not in channel group %s", req.GetId(), g)
	}
	return versionProto(g, v), nil
}

func versionProto(group string, v versions.Version) *csv1.Version {
	return &csv1.Version{Id: v.ID, ChannelGroup: group, Enabled: v.Enabled, EndOfLife: timestamppb.New(v.EndOfLife),
		AvailableUpgrades: append([]string(nil), v.Upgrades...)}
}
