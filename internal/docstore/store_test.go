package docstore

import (
	"context"
	"testing"
)

// heads is a HeadQuerier store; plain and wrapper are stores that are not one, wrapper saying
// what it wraps. Only their types matter here.
type heads struct{ Store }

func (heads) QueryHeads(context.Context, Query) (Page, error) { return Page{}, nil }
func (heads) GetUnlessETag(context.Context, string, string, string) (*Document, error) {
	return nil, nil
}
func (heads) GetMany(context.Context, string, string, []string) ([]*Document, error) {
	return nil, nil
}

type plain struct{ Store }

type wrapper struct{ Store }

func (w wrapper) Unwrap() Store { return w.Store }

func TestHeadsOfFindsAHeadQuerierUnderWrappers(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Store
		want bool
	}{
		{"the_store_itself", heads{}, true},
		{"under_one_wrapper", wrapper{heads{}}, true},
		{"under_two_wrappers", wrapper{wrapper{heads{}}}, true},
		{"a_store_without_heads", plain{}, false},
		{"a_wrapper_of_a_store_without_heads", wrapper{plain{}}, false},
		{"a_wrapper_that_does_not_unwrap", plain{heads{}}, false},
		{"a_wrapper_of_nothing", wrapper{}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := HeadsOf(tc.s); got != tc.want {
				t.Fatalf("HeadsOf(%T) found one: %v, want %v", tc.s, got, tc.want)
			}
		})
	}
}
