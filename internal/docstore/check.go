package docstore

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Check is what every store requires of a document it writes: a partition key, an ID, a type
// and a body of valid JSON.
func Check(doc *Document) error {
	switch {
	case doc == nil:
		return errors.New("document is nil")
	case doc.PartitionKey == "":
		return errors.New("document has no partition key")
	case doc.ID == "":
		return errors.New("document has no id")
	case doc.Type == "":
		return fmt.Errorf("document %s has no type", doc.ID)
	case !json.Valid(doc.Body):
		return fmt.Errorf("document %s: body is not valid JSON", doc.ID)
	}
	return nil
}

// CheckTransaction is what every store requires of a transaction before it runs a step: at most
// MaxTransactSteps steps (ErrTooManySteps), each a known kind with a document in partition that
// Check accepts for a write, and an ETag for a replace or a delete (ErrETagRequired).
func CheckTransaction(partition string, ops []TxOp) error {
	if len(ops) > MaxTransactSteps {
		return fmt.Errorf("transaction of %d steps: %w (at most %d)", len(ops), ErrTooManySteps, MaxTransactSteps)
	}
	for i, op := range ops {
		if op.Doc == nil {
			return fmt.Errorf("transaction step %d: no document", i)
		}
		if op.Doc.PartitionKey != partition {
			return fmt.Errorf("transaction step %d: document partition %q is not the transaction's %q", i, op.Doc.PartitionKey, partition)
		}
		switch op.Kind {
		case TxCreate, TxReplace:
			if err := Check(op.Doc); err != nil {
				return fmt.Errorf("transaction step %d: %w", i, err)
			}
			if op.Kind == TxReplace && op.IfMatch == "" {
				return fmt.Errorf("transaction step %d: %w", i, ErrETagRequired)
			}
		case TxDelete:
			if op.IfMatch == "" {
				return fmt.Errorf("transaction step %d: %w", i, ErrETagRequired)
			}
		default:
			return fmt.Errorf("transaction step %d: unknown kind %d", i, op.Kind)
		}
	}
	return nil
}
