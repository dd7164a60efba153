package frontend

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
)

// FuzzPutClusterBody sends arbitrary bodies through the whole handler (middlewares, decoder,
// validation, store, fake Cluster Service) in any of the served api-versions. Whatever comes in,
// every answer keeps checkARMAnswer's promises (schema, never a 5xx, an ARM error body whose
// field errors carry a target), and a body that creates the cluster round-trips through GET
// (checkRoundTrip), whose answer is never a 5xx either.
func FuzzPutClusterBody(f *testing.F) {
	f.Add(mustJSON(minimalBody()), uint8(0))
	f.Add(mustJSON(set(minimalBody(), "tags", map[string]any{"team": "a", "cost": "b"})), uint8(0))
	f.Add(mustJSON(set(minimalBody(), "properties.network", map[string]any{"hostPrefix": 24, "podCidr": "10.132.0.0/14"})), uint8(0))
	f.Add([]byte(`{"location":"eastus","properties":{"platform":{}}}`), uint8(1))
	f.Add([]byte(`{"location":"eastus","tags":{"a":1}}`), uint8(2))
	f.Add([]byte(`null`), uint8(3))
	f.Add([]byte(`{"properties":{"network":{"hostPrefix":1e99}}}`), uint8(0))
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte, v uint8) { putClusterBody(t, e, body, v) })
}

// putClusterBody is one input of FuzzPutClusterBody: body as a cluster PUT in the api-version v
// picks (0 is testVersion).
func putClusterBody(t *testing.T, e *env, body []byte, v uint8) {
	ver := testVersion
	if v != 0 {
		ver = specVersions[int(v)%len(specVersions)]
	}
	path := clusterPath("rg", "fuzz")
	target := path + "?api-version=" + ver
	resp := serve(e, "PUT", target, body)
	checkARMAnswer(t, "PUT", target, body, resp)
	if resp.code == 201 {
		checkRoundTrip(t, e, path, ver, body)
		e.forget(t, path, resp)
	} else {
		get := serve(e, "GET", target, nil)
		checkARMAnswer(t, "GET", target, nil, get)
	}
}

// forget removes what a fuzz input's create left behind, so the next input creates again
// instead of meeting the running operation, and a long run does not grow: the resource and its
// operation documents (a read of each, one transaction) and the fake Cluster Service's cluster and
// request records. Nothing here is a check; it costs three store round trips where a DELETE
// through the handler, a purge and a read and delete cost six or more.
func (e *env) forget(t *testing.T, path string, created response) {
	t.Helper()
	ctx := t.Context()
	part := strings.ToLower(testSub)
	var ops []docstore.TxOp
	for _, want := range []struct{ typ, id string }{
		{docstore.TypeResource, strings.ToLower(path)},
		{docstore.TypeOperation, opIDFrom(t, created.header.Get("Azure-AsyncOperation"))},
	} {
		docs, err := e.store.GetMany(ctx, part, want.typ, []string{want.id})
		if err != nil {
			t.Fatalf("read what the create wrote: %v", err)
		}
		if len(docs) != 1 {
			t.Fatalf("the create wrote no %s document %s", want.typ, want.id)
		}
		ops = append(ops, docstore.TxOp{Kind: docstore.TxDelete, Doc: docs[0], IfMatch: docs[0].ETag})
	}
	if _, err := e.store.Transact(ctx, part, ops); err != nil {
		t.Fatalf("remove the created cluster: %v", err)
	}
	e.cs.forgetCluster(path)
}
