package frontend

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestSubscriptionStateError is the lifecycle's table, state by method: the status and code of
// each refusal, or "" when the method is allowed.
func TestSubscriptionStateError(t *testing.T) {
	methods := []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodPost}
	all := func(status int) map[string]int {
		m := map[string]int{}
		for _, x := range methods {
			m[x] = status
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		sub     *armdoc.SubscriptionDocument
		refused map[string]int // method -> status; absent means allowed
	}{
		{"Registered", &armdoc.SubscriptionDocument{State: armdoc.SubscriptionRegistered}, nil},
		{"Warned", &armdoc.SubscriptionDocument{State: armdoc.SubscriptionWarned}, map[string]int{"PUT": 409, "PATCH": 409, "POST": 409}},
		{"Suspended", &armdoc.SubscriptionDocument{State: armdoc.SubscriptionSuspended}, map[string]int{"PUT": 409, "PATCH": 409, "POST": 409}},
		{"Unregistered", &armdoc.SubscriptionDocument{State: armdoc.SubscriptionUnregistered}, all(400)},
		{"Deleted", &armdoc.SubscriptionDocument{State: armdoc.SubscriptionDeleted}, all(400)},
		{"unknown_subscription", nil, all(400)},
	} {
		for _, m := range methods {
			t.Run(tc.name+"/"+m, func(t *testing.T) {
				err := subscriptionStateError("sub", tc.sub, m)
				want, refused := tc.refused[m]
				if !refused {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var ce *arm.CloudError
				if !errors.As(err, &ce) || ce.StatusCode != want || ce.Code != arm.CodeInvalidSubscriptionState {
					t.Fatalf("got %v, want %d InvalidSubscriptionState", err, want)
				}
			})
		}
	}
	t.Run("state_this_version_does_not_know_is_refused_as_internal", func(t *testing.T) {
		err := subscriptionStateError("sub", &armdoc.SubscriptionDocument{State: "SomeFutureState"}, http.MethodGet)
		var ce *arm.CloudError
		if err == nil || errors.As(err, &ce) {
			t.Fatalf("got %v, want an internal error (500, detail in the log)", err)
		}
	})
}

// TestSubscriptionStateAnswers sends every method of a resource route, and the reads of lists
// and operation statuses, into a subscription in each state: what is refused gets the status
// and code of the lifecycle's table (subscriptionStateError), what is allowed reaches the handler.
func TestSubscriptionStateAnswers(t *testing.T) {
	e := newEnv(t)
	subs := map[string]string{}
	for i, st := range []armdoc.SubscriptionState{armdoc.SubscriptionRegistered, armdoc.SubscriptionWarned,
		armdoc.SubscriptionSuspended, armdoc.SubscriptionUnregistered, armdoc.SubscriptionDeleted} {
		sub := fmt.Sprintf("5D3E5C2A-0000-4000-8000-00000000000%d", i)
		e.registerSubscription(sub, st)
		subs[string(st)] = sub
	}
	subs["unknown"] = "5D3E5C2A-0000-4000-8000-0000000000FF" // never registered

	type call struct{ method, path string }
	type namedCall struct {
		name string
		call
	}
	// In this order: the PUT, last, is the only call that creates something.
	calls := func(sub string) []namedCall {
		cluster := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
		return []namedCall{
			{"GET", call{"GET", cluster}},
			{"GET_list", call{"GET", "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"}},
			{"GET_op", call{"GET", "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/locations/" + testLocation + "/hcpOperationStatuses/00000000-0000-4000-8000-000000000001"}},
			{"POST_preflight", call{"POST", "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/deployments/d1/preflight?api-version=2020-06-01"}},
			{"PATCH", call{"PATCH", cluster}},
			{"DELETE", call{"DELETE", cluster}},
			{"PUT", call{"PUT", cluster}},
		}
	}
	// What the handler answers when the subscription lets the call through (nothing exists).
	served := map[string]int{"POST_preflight": 200, "GET": 404, "GET_list": 200, "GET_op": 404, "PUT": 201, "PATCH": 404, "DELETE": 204}
	type refusal struct {
		status int
		code   string
	}
	unregistered := refusal{400, "InvalidSubscriptionState"}
	conflict := refusal{409, "InvalidSubscriptionState"}
	for _, tc := range []struct {
		state   string
		refused map[string]refusal // by call; absent means served
	}{
		{"Registered", nil},
		{"Warned", map[string]refusal{"PUT": conflict, "PATCH": conflict, "POST_preflight": conflict}},
		{"Suspended", map[string]refusal{"PUT": conflict, "PATCH": conflict, "POST_preflight": conflict}},
		{"Unregistered", map[string]refusal{"POST_preflight": unregistered, "GET": unregistered, "GET_list": unregistered, "GET_op": unregistered, "PUT": unregistered, "PATCH": unregistered, "DELETE": unregistered}},
		{"Deleted", map[string]refusal{"POST_preflight": unregistered, "GET": unregistered, "GET_list": unregistered, "GET_op": unregistered, "PUT": unregistered, "PATCH": unregistered, "DELETE": unregistered}},
		{"unknown", map[string]refusal{"POST_preflight": unregistered, "GET": unregistered, "GET_list": unregistered, "GET_op": unregistered, "PUT": unregistered, "PATCH": unregistered, "DELETE": unregistered}},
	} {
		sub := subs[tc.state]
		for _, c := range calls(sub) {
			name := c.name
			t.Run(tc.state+"/"+name, func(t *testing.T) {
				var body []byte
				switch c.method {
				case "PUT":
					body = mustJSON(set(minimalBody(), "properties.platform.subnetId", "/subscriptions/"+sub+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s"))
				case "PATCH":
					body = []byte(`{"tags":{"a":"b"}}`)
				case "POST":
					body = []byte(`{"resources":[]}`)
				}
				resp := e.do(c.method, c.path, body, nil)
				want, refused := tc.refused[name]
				if !refused {
					if resp.code != served[name] {
						t.Fatalf("%s %s: %d %s, want it served (%d)", c.method, c.path, resp.code, resp.body, served[name])
					}
					return
				}
				if code, _ := resp.armError(t); resp.code != want.status || code != want.code {
					t.Fatalf("%s %s: %d %s, want %d %s", c.method, c.path, resp.code, code, want.status, want.code)
				}
			})
		}
	}
}
