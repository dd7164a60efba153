package server

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore"
)

// Bounds of a must-gather: matching log lines kept per log file, and the whole tarball before
// compression.
const (
	mustGatherLogBytes   = 8 << 20
	mustGatherTotalBytes = 256 << 20
)

// mustGather serves GET /admin/v1/must-gather/{id...}: one tarball (gzip) with everything
// about a cluster the region holds — see docs/sre.md for its layout.
func (s *Server) mustGather(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r, "correlationId..."); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*s.cfg.Timeout)
	defer cancel()
	d, c, doc, err := s.describe(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	g := &gather{root: "must-gather-" + c.GetId() + "/"}
	g.json("describe.json", d)

	// ARM: every document under the cluster's resource ID (itself, node pools, external auths,
	// their operations).
	ids := logIDs{clusterIDs: []string{strings.ToLower(c.GetId())}, armIDs: []string{strings.ToLower(c.GetArmResourceId())}}
	var recorded []string // the correlation IDs of the cluster's operations
	if doc != nil {
		docs, err := s.armDocuments(ctx, doc)
		if err != nil {
			g.unavailable("arm/documents.json: %v", err)
		} else {
			g.json("arm/documents.json", docs)
			for _, d := range docs {
				ids.armIDs = append(ids.armIDs, strings.ToLower(d.ResourceID))
				if d.Type == docstore.TypeOperation {
					var op struct{ ID, CorrelationID string }
					if json.Unmarshal(d.Body, &op) == nil {
						ids.operationIDs = append(ids.operationIDs, strings.ToLower(op.ID))
						recorded = append(recorded, op.CorrelationID)
					}
				}
			}
		}
	} else {
		g.unavailable("arm/documents.json: no ARM resource document")
	}

	// Cluster Service: the cluster, and everything it holds for it.
	g.proto("clusterservice/cluster.json", c)
	if nps, err := s.cfg.NodePools.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: c.GetId()}); err != nil {
		g.unavailable("clusterservice/nodepools.json: %v", err)
	} else {
		g.proto("clusterservice/nodepools.json", nps)
		for _, np := range nps.GetNodePools() {
			ids.clusterIDs = append(ids.clusterIDs, strings.ToLower(np.GetId()))
		}
	}
	if s.cfg.ExternalAuths != nil {
		if eas, err := s.cfg.ExternalAuths.ListExternalAuths(ctx, &csv1.ListExternalAuthsRequest{ClusterId: c.GetId()}); err != nil {
			g.unavailable("clusterservice/externalauths.json: %v", err)
		} else {
			g.proto("clusterservice/externalauths.json", eas)
		}
	}
	if s.cfg.UpgradePolicies != nil {
		if ups, err := s.cfg.UpgradePolicies.ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: c.GetId()}); err != nil {
			g.unavailable("clusterservice/upgradepolicies.json: %v", err)
		} else {
			g.proto("clusterservice/upgradepolicies.json", ups)
		}
	}

	// Maestro: the bundles (ManifestWorks) with their status and feedback, as in describe.
	g.json("maestro/bundles.json", d.Maestro)

	// The management cluster: the HostedCluster and NodePools as they are there now (not as
	// last reported through Maestro), and the events of their namespaces.
	s.gatherManagementCluster(ctx, g, c)

	// The admin calls about this cluster.
	var calls []audit.Entry
	for _, target := range []string{c.GetId(), strings.TrimPrefix(c.GetArmResourceId(), "/")} {
		got, _, err := s.cfg.Audit.Query(ctx, audit.Filter{Target: target, Limit: 1000})
		if err != nil {
			g.unavailable("audit.json: %v", err)
			break
		}
		calls = append(calls, got...)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].ID < calls[j].ID })
	g.json("audit.json", calls)

	// Logs: every line of every service that names one of the cluster's IDs.
	refused, err := ids.correlations(recorded, r.URL.Query()["correlationId"])
	if err != nil {
		return err
	}
	ids = ids.compact()
	if s.cfg.LogDir == "" {
		g.unavailable("logs/: the admin API was started without --log-dir (in Azure, query the logs by these IDs in Kusto)")
	} else if err := g.logs(s.cfg.LogDir, ids); err != nil {
		g.unavailable("logs/: %v", err)
	}
	g.json("ids.json", map[string]any{"searchedFor": ids.all(), "correlationIds": ids.correlationIDs, "refusedCorrelationIds": refused})
	g.readme(d.Unavailable)

	b, err := g.finish()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="must-gather-%s.tar.gz"`, c.GetId()))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(b)
	return err
}

// armDocuments returns the documents of doc's partition whose resource ID is doc's or below it.
func (s *Server) armDocuments(ctx context.Context, doc *docstore.Document) ([]*docstore.Document, error) {
	var out []*docstore.Document
	token := ""
	for {
		page, err := s.cfg.Store.Query(ctx, docstore.Query{Partition: doc.PartitionKey, ResourceIDPrefix: doc.ID, Continuation: token})
		if err != nil {
			return nil, fmt.Errorf("query documents under %s: %w", doc.ID, err)
		}
		for _, d := range page.Documents {
			if d.ResourceID == doc.ID || strings.HasPrefix(d.ResourceID, doc.ID+"/") {
				out = append(out, d)
			}
		}
		if token = page.Continuation; token == "" {
			return out, nil
		}
	}
}

func compact(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// gather builds the tarball in memory, so an error becomes a JSON answer, not a cut stream.
type gather struct {
	root    string
	files   []gatherFile
	size    int
	missing []string
	err     error
}

type gatherFile struct {
	name string
	data []byte
}

func (g *gather) add(name string, data []byte) {
	if g.err != nil {
		return
	}
	g.size += len(data)
	if g.size > mustGatherTotalBytes {
		g.err = fmt.Errorf("must-gather larger than %d bytes", mustGatherTotalBytes)
		return
	}
	g.files = append(g.files, gatherFile{name, data})
}

func (g *gather) json(name string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		g.unavailable("%s: %v", name, err)
		return
	}
	g.add(name, append(b, '\n'))
}

func (g *gather) proto(name string, m proto.Message) {
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
	if err != nil {
		g.unavailable("%s: %v", name, err)
		return
	}
	g.add(name, append(b, '\n'))
}

func (g *gather) unavailable(format string, args ...any) {
	g.missing = append(g.missing, fmt.Sprintf(format, args...))
}

// logs adds, for each *.log file in dir, the lines about the cluster (ids.match), at most
// mustGatherLogBytes per file.
func (g *gather) logs(dir string, ids logIDs) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			g.unavailable("logs/%s: %v", filepath.Base(p), err)
			continue
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		truncated := false
		for sc.Scan() {
			line := sc.Bytes()
			if !ids.match(line) {
				continue
			}
			if out.Len()+len(line) > mustGatherLogBytes {
				truncated = true
				break
			}
			out.Write(line)
			out.WriteByte('\n')
		}
		if err := sc.Err(); err != nil {
			g.unavailable("logs/%s: read: %v", filepath.Base(p), err)
		}
		f.Close()
		if truncated {
			g.unavailable("logs/%s: truncated at %d bytes of matching lines", filepath.Base(p), mustGatherLogBytes)
		}
		if out.Len() > 0 {
			g.add("logs/"+filepath.Base(p), out.Bytes())
		}
	}
	return nil
}

func (g *gather) readme(describeUnavailable []string) {
	var b strings.Builder
	b.WriteString("OpenHCP must-gather (docs/sre.md)\n\n")
	for _, f := range g.files {
		fmt.Fprintf(&b, "  %s (%d bytes)\n", f.name, len(f.data))
	}
	missing := append(append([]string(nil), describeUnavailable...), g.missing...)
	if len(missing) > 0 {
		b.WriteString("\nNot included:\n")
		for _, m := range missing {
			b.WriteString("  " + m + "\n")
		}
	}
	g.add("README.txt", []byte(b.String()))
}

func (g *gather) finish() ([]byte, error) {
	if g.err != nil {
		return nil, g.err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	now := time.Now()
	for _, f := range g.files {
		if err := tw.WriteHeader(&tar.Header{Name: g.root + f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return nil, fmt.Errorf("must-gather: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("must-gather: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("must-gather: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("must-gather: %w", err)
	}
	return buf.Bytes(), nil
}
