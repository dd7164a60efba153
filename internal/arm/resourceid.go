// Package arm holds the Azure Resource Manager conventions shared by the frontend and the
// backend: resource IDs, the CloudError shape and writer, api-versions, ARM header names and
// systemData.
package arm

import (
	"fmt"
	"strings"
)

// ResourceID is a parsed ARM resource ID. Keywords (subscriptions, resourceGroups, providers)
// match case-insensitively; names keep the caller's casing, and String returns the ID exactly
// as it was given.
type ResourceID struct {
	original string

	SubscriptionID string
	// ResourceGroup is empty for subscription-level IDs.
	ResourceGroup string
	// Provider is the resource provider namespace, e.g. Microsoft.RedHatOpenShift; empty for a
	// subscription or resource group ID.
	Provider string
	// Types are the resource type segments below the provider, e.g. [hcpOpenShiftClusters
	// nodePools]; Names are the matching names.
	Types []string
	Names []string
}

// Kinds of ID without a provider.
const (
	subscriptionsKeyword  = "subscriptions"
	resourceGroupsKeyword = "resourcegroups"
	providersKeyword      = "providers"
)

// maxResourceIDSegments bounds the segments of an ID: a scope (6 segments with a resource group
// and provider) and 29 type/name pairs, where ARM's resource types nest a few levels deep.
const maxResourceIDSegments = 64

// ParseResourceID parses id. It accepts a subscription, a resource group, and provider
// resources at any depth, at resource group or subscription scope.
func ParseResourceID(id string) (*ResourceID, error) {
	if !strings.HasPrefix(id, "/") {
		return nil, fmt.Errorf("resource ID %q does not start with '/'", id)
	}
	// Counted before anything is split or case-folded: an ID can come from a body as a 4 MiB
	// string of a million segments.
	if n := strings.Count(id, "/"); n > maxResourceIDSegments+1 { // +1: a trailing slash
		return nil, fmt.Errorf("resource ID of %d bytes has more than %d segments", len(id), maxResourceIDSegments)
	}
	// IDs are compared case-insensitively (EqualFold) and keyed by Lower(); a character whose
	// lower case does not fold back to it (e.g. U+0130 'İ', which lowercases to "i̇") would make
	// those two disagree, so such IDs are refused rather than stored under a key that no
	// case-insensitive lookup finds.
	if !strings.EqualFold(id, strings.ToLower(id)) {
		return nil, fmt.Errorf("resource ID %q contains characters without a consistent case-insensitive form", id)
	}
	segs := strings.Split(strings.TrimPrefix(id, "/"), "/")
	if n := len(segs); n > 0 && segs[n-1] == "" {
		// One trailing slash is tolerated, as ARM does.
		segs = segs[:n-1]
	}
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("resource ID %q has an empty segment", id)
		}
	}
	r := &ResourceID{original: id}
	if len(segs) < 2 || !strings.EqualFold(segs[0], subscriptionsKeyword) {
		return nil, fmt.Errorf("resource ID %q does not start with /subscriptions/{subscriptionId}", id)
	}
	r.SubscriptionID = segs[1]
	rest := segs[2:]
	if len(rest) >= 1 && strings.EqualFold(rest[0], resourceGroupsKeyword) {
		if len(rest) < 2 {
			return nil, fmt.Errorf("resource ID %q has no resource group name", id)
		}
		r.ResourceGroup = rest[1]
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return r, nil
	}
	if !strings.EqualFold(rest[0], providersKeyword) || len(rest) < 2 {
		return nil, fmt.Errorf("resource ID %q: expected /providers/{namespace} after the scope", id)
	}
	r.Provider = rest[1]
	rest = rest[2:]
	if len(rest) == 0 || len(rest)%2 != 0 {
		return nil, fmt.Errorf("resource ID %q: resource types and names must come in pairs", id)
	}
	for i := 0; i < len(rest); i += 2 {
		r.Types = append(r.Types, rest[i])
		r.Names = append(r.Names, rest[i+1])
	}
	return r, nil
}

// String returns the ID as the caller spelled it.
func (r *ResourceID) String() string { return r.original }

// Lower is the case-folded ID used as a document key and for comparisons.
func (r *ResourceID) Lower() string { return strings.ToLower(r.original) }

// Name is the last name segment: the resource's own name.
func (r *ResourceID) Name() string {
	switch {
	case len(r.Names) > 0:
		return r.Names[len(r.Names)-1]
	case r.ResourceGroup != "":
		return r.ResourceGroup
	}
	return r.SubscriptionID
}

// ResourceType is the full type, e.g. Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools,
// or Microsoft.Resources/subscriptions and Microsoft.Resources/resourceGroups.
func (r *ResourceID) ResourceType() string {
	switch {
	case r.Provider != "":
		return r.Provider + "/" + strings.Join(r.Types, "/")
	case r.ResourceGroup != "":
		return "Microsoft.Resources/resourceGroups"
	}
	return "Microsoft.Resources/subscriptions"
}

// Parent is the ID one level up: a child resource's parent resource, a top-level resource's
// resource group (or subscription), a resource group's subscription. A subscription has none.
func (r *ResourceID) Parent() *ResourceID {
	segs := strings.Split(strings.TrimSuffix(r.original, "/"), "/")
	switch {
	case len(r.Names) > 1:
		p, _ := ParseResourceID(strings.Join(segs[:len(segs)-2], "/"))
		return p
	case len(r.Names) == 1:
		// Drop /providers/{ns}/{type}/{name}.
		p, _ := ParseResourceID(strings.Join(segs[:len(segs)-4], "/"))
		return p
	case r.ResourceGroup != "":
		p, _ := ParseResourceID(strings.Join(segs[:len(segs)-2], "/"))
		return p
	}
	return nil
}

// EqualFold reports whether two IDs name the same resource.
func (r *ResourceID) EqualFold(o *ResourceID) bool {
	return o != nil && strings.EqualFold(r.original, o.original)
}
