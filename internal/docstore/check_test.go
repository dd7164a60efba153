package docstore

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckTransaction: every store refuses the same transactions, before any step runs.
func TestCheckTransaction(t *testing.T) {
	doc := func(partition string) *Document {
		return &Document{PartitionKey: partition, ID: "a", Type: TypeResource, Body: []byte(`{}`)}
	}
	tooMany := make([]TxOp, MaxTransactSteps+1)
	for i := range tooMany {
		tooMany[i] = TxOp{Kind: TxCreate, Doc: doc("p")}
	}
	for _, tc := range []struct {
		name    string
		ops     []TxOp
		wantIs  error
		wantMsg string // "" with wantIs nil: accepted
	}{
		{name: "create, replace and delete", ops: []TxOp{{Kind: TxCreate, Doc: doc("p")}, {Kind: TxReplace, Doc: doc("p"), IfMatch: "e"}, {Kind: TxDelete, Doc: doc("p"), IfMatch: "e"}}},
		{name: "as many steps as a Cosmos batch", ops: tooMany[:MaxTransactSteps]},
		{name: "one step too many", ops: tooMany, wantIs: ErrTooManySteps},
		{name: "no document", ops: []TxOp{{Kind: TxCreate}}, wantMsg: "transaction step 0: no document"},
		{name: "another partition", ops: []TxOp{{Kind: TxCreate, Doc: doc("p")}, {Kind: TxCreate, Doc: doc("q")}}, wantMsg: `transaction step 1: document partition "q" is not the transaction's "p"`},
		{name: "replace without an etag", ops: []TxOp{{Kind: TxReplace, Doc: doc("p")}}, wantIs: ErrETagRequired},
		{name: "delete without an etag", ops: []TxOp{{Kind: TxDelete, Doc: doc("p")}}, wantIs: ErrETagRequired},
		{name: "a write of a document without a type", ops: []TxOp{{Kind: TxCreate, Doc: &Document{PartitionKey: "p", ID: "a", Body: []byte(`{}`)}}}, wantMsg: "transaction step 0: document a has no type"},
		{name: "a write of a body that is not JSON", ops: []TxOp{{Kind: TxCreate, Doc: &Document{PartitionKey: "p", ID: "a", Type: TypeResource, Body: []byte(`{`)}}}, wantMsg: "body is not valid JSON"},
		{name: "an unknown kind", ops: []TxOp{{Kind: 9, Doc: doc("p")}}, wantMsg: "transaction step 0: unknown kind 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTransaction("p", tc.ops)
			switch {
			case tc.wantIs == nil && tc.wantMsg == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case tc.wantIs != nil && !errors.Is(err, tc.wantIs):
				t.Fatalf("error %v, want %v", err, tc.wantIs)
			case tc.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMsg)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantMsg)
			}
		})
	}
}
