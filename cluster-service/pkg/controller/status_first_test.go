package controller

import (
	"slices"
	"testing"
)

func TestStatusChangesGoFirst(t *testing.T) {
	tests := []struct {
		name    string
		inOrder bool
		want    []string
	}{
		{name: "status_events_first", want: []string{nodePoolKey("p"), "c2", "c1", "c3"}},
		{name: "in_arrival_order_baseline", inOrder: true, want: []string{"c1", "c2", "c3", nodePoolKey("p")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(nil, nil, Config{StatusEventsInOrder: tt.inOrder}, nil)
			defer c.queue.ShutDown()
			c.queue.Add("c1") // a create, say
			c.queue.Add("c2")
			c.queue.Add("c3")
			c.addStatusChange(nodePoolKey("p"))
			c.addStatusChange("c2") // waiting already: moves up unless in order
			var got []string
			for c.queue.Len() > 0 {
				k, _ := c.queue.Get()
				c.queue.Done(k)
				got = append(got, k)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
