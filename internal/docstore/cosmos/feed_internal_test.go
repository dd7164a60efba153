package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/openhcp/openhcp/internal/docstore"
)

// fakeFeed stands in for the SDK's change feed over a container split into several physical
// partitions (feed ranges), which neither emulator here can present. Each range has its own
// LSNs, as in Cosmos, so LSNs of different ranges say nothing about order. Like the SDK, a read
// starts from a FeedRange covering the container or from a continuation token the fake issued
// (its own format: the store must pass it back untouched), takes the ranges in turn, answers
// with the first range that has changes, and returns a token for every range's position.
type fakeFeed struct {
	mu     sync.Mutex
	ranges []fakeRange
	next   int // the range the next read starts at
}

type fakeRange struct {
	r     azcosmos.FeedRange
	items []item
}

type fakeToken struct {
	Fake []int `json:"fake"` // per range: how many of its items were read
	Next int   `json:"next"`
}

func (f *fakeFeed) ReadFeedRanges(context.Context, *azcosmos.FeedRangesOptions) ([]azcosmos.FeedRange, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []azcosmos.FeedRange
	for _, r := range f.ranges {
		out = append(out, r.r)
	}
	return out, nil
}

func (f *fakeFeed) Read(context.Context, *azcosmos.ReadContainerOptions) (azcosmos.ContainerResponse, error) {
	return azcosmos.ContainerResponse{ContainerProperties: &azcosmos.ContainerProperties{ID: "Resources", ResourceID: "rid=="}}, nil
}

func (f *fakeFeed) ReadChangeFeed(_ context.Context, o *azcosmos.ChangeFeedOptions) (azcosmos.ChangeFeedResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := fakeToken{Fake: make([]int, len(f.ranges))}
	switch {
	case o.Continuation != nil:
		if err := json.Unmarshal([]byte(*o.Continuation), &tok); err != nil || len(tok.Fake) != len(f.ranges) {
			return azcosmos.ChangeFeedResponse{}, fmt.Errorf("fake feed: continuation %q is not one it issued", *o.Continuation)
		}
	case o.FeedRange != nil:
		if o.FeedRange.MinInclusive != "" || o.FeedRange.MaxExclusive != "FF" {
			return azcosmos.ChangeFeedResponse{}, fmt.Errorf("fake feed: feed range %+v is not the whole container", *o.FeedRange)
		}
	default:
		return azcosmos.ChangeFeedResponse{}, fmt.Errorf("fake feed: neither a feed range nor a continuation")
	}
	var resp azcosmos.ChangeFeedResponse
	for i := range f.ranges {
		r := (tok.Next + i) % len(f.ranges)
		pending := f.ranges[r].items[tok.Fake[r]:]
		if len(pending) == 0 {
			continue
		}
		n := min(len(pending), int(o.MaxItemCount))
		for _, it := range pending[:n] {
			raw, _ := json.Marshal(it)
			resp.Items = append(resp.Items, raw)
		}
		tok.Fake[r] += n
		tok.Next = (r + 1) % len(f.ranges)
		break
	}
	b, _ := json.Marshal(tok)
	resp.ContinuationToken = string(b)
	resp.Count = len(resp.Items)
	return resp, nil
}

// write appends a change to range r with this LSN.
func (f *fakeFeed) write(r int, key string, lsn int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranges[r].items = append(f.ranges[r].items, item{ID: key, Key: key, PartitionKey: "p" + key, DocType: "resource", Properties: json.RawMessage(`{}`), LSN: lsn})
}

func twoRangeFeed() *fakeFeed {
	return &fakeFeed{ranges: []fakeRange{
		{r: azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "7F"}},
		{r: azcosmos.FeedRange{MinInclusive: "7F", MaxExclusive: "FF"}},
	}}
}

// TestChangesFollowsAFeedOfSeveralRanges: a container split into two feed ranges, whose LSNs
// overlap and interleave, is followed with the checkpoint the store returns: every change of
// every range exactly once, in pages no larger than the limit, including a change written later
// to the range with the lower LSNs.
func TestChangesFollowsAFeedOfSeveralRanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
	}{
		{"pages_of_one", 1},
		{"pages_of_two", 2},
		{"one_large_page_per_range", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := twoRangeFeed()
			for i, lsn := range []int64{100, 101, 102} {
				f.write(0, fmt.Sprintf("a%d", i), lsn)
			}
			for i, lsn := range []int64{3, 4} {
				f.write(1, fmt.Sprintf("b%d", i), lsn)
			}
			s := &Store{feed: f, opts: Options{PollInterval: 1}}
			ctx := context.Background()
			cp, got := follow(t, ctx, s, "", tc.limit)
			want := []string{"a0", "a1", "a2", "b0", "b1"}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("followed %q, want %q", got, want)
			}
			f.write(1, "b2", 5) // below every LSN of range 0
			f.write(0, "a3", 103)
			_, later := follow(t, ctx, s, cp, tc.limit)
			slices.Sort(later)
			if !slices.Equal(later, []string{"a3", "b2"}) {
				t.Fatalf("after the checkpoint: %q, want [a3 b2]", later)
			}
		})
	}
}

func TestChangesRefusesACheckpointThatIsNoContinuationToken(t *testing.T) {
	s := &Store{feed: twoRangeFeed()}
	for _, cp := range []docstore.Checkpoint{"{not json", "lsn 42"} {
		if _, err := s.Changes(context.Background(), cp, 1); !errors.Is(err, docstore.ErrInvalidCheckpoint) {
			t.Errorf("checkpoint %q: got %v, want ErrInvalidCheckpoint", cp, err)
		}
	}
}

// TestWaitForChangesWakesOnAWriteToAnyRange: a waiter on a two-range feed sleeps while nothing
// is new, and wakes for a write to either range, whatever its LSN.
func TestWaitForChangesWakesOnAWriteToAnyRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		rng  int
		lsn  int64
	}{
		{"write_to_the_range_with_higher_lsns", 0, 101},
		{"write_to_the_range_with_lower_lsns", 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := twoRangeFeed()
			f.write(0, "a0", 100)
			f.write(1, "b0", 1)
			s := &Store{feed: f, opts: Options{PollInterval: time.Millisecond}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cp, _ := follow(t, ctx, s, "", 10)
			short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancelShort()
			if err := s.WaitForChanges(short, cp); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("wait with nothing new: %v, want deadline exceeded", err)
			}
			f.write(tc.rng, "new", tc.lsn)
			if err := s.WaitForChanges(ctx, cp); err != nil {
				t.Fatalf("wait after a write: %v", err)
			}
		})
	}
}

// TestChangesMovesPastExpiredDocuments: a page of only logically expired documents reports no
// change but a checkpoint past them, so a follower does not read them again.
func TestChangesMovesPastExpiredDocuments(t *testing.T) {
	f := twoRangeFeed()
	f.write(0, "expired", 7)
	f.mu.Lock()
	f.ranges[0].items[0].ExpiresAt = time.Now().Add(-time.Minute).UnixMilli()
	f.mu.Unlock()
	s := &Store{feed: f}
	ctx := context.Background()
	page, err := s.Changes(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Changes) != 0 || page.Next == "" {
		t.Fatalf("page = %+v, want no changes and a checkpoint", page)
	}
	f.write(1, "live", 3)
	_, got := follow(t, ctx, s, page.Next, 10)
	if !slices.Equal(got, []string{"live"}) {
		t.Fatalf("after the expired page: %q, want [live]", got)
	}
}
