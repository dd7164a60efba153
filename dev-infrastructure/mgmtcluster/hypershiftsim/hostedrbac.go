package hypershiftsim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openhcp/openhcp/internal/hostedrbac"
)

func (s *hostedAPIServer) restConfig() *rest.Config {
	return &rest.Config{Host: s.url(), TLSClientConfig: rest.TLSClientConfig{
		CAData: s.adminRoot, CertData: s.adminPEM.cert, KeyData: s.adminPEM.key}}
}

// createSRERBAC creates (or corrects) the SRE break-glass RBAC in a hosted cluster: each
// break-glass group may only impersonate, openhcp:sre:admin is cluster-admin, and
// openhcp:sre:read-only may get, list and watch every resource the apiserver serves but
// Secrets. There is no kube-controller-manager in a hosted control plane here, so the aggregated
// view role would be empty; the read-only rules come from the apiserver's own discovery.
func createSRERBAC(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	readOnly, err := readOnlyRules(cs)
	if err != nil {
		return err
	}
	roles := []*rbacv1.ClusterRole{{
		ObjectMeta: metav1.ObjectMeta{Name: hostedrbac.SREReadOnlyClusterRole},
		Rules:      readOnly,
	}}
	bindings := []*rbacv1.ClusterRoleBinding{
		binding(hostedrbac.SREReadOnlyClusterRole, hostedrbac.SREReadOnlyClusterRole, hostedrbac.SREReadOnlyGroup),
		binding(hostedrbac.SREAdminClusterRoleBinding, hostedrbac.ClusterAdminClusterRole, hostedrbac.SREAdminGroup),
	}
	for group, imp := range hostedrbac.SREImpersonatedGroups {
		roles = append(roles, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: imp.ClusterRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}},
				{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: imp.Groups},
			},
		})
		bindings = append(bindings, binding(imp.ClusterRole, imp.ClusterRole, group))
	}
	// Each object is read first and written only if it is missing or differs: a restarted
	// apiserver whose etcd is full (its customer filled the space quota) refuses every write,
	// a create of an object that exists included, and the RBAC is already there
	// (TestRBACOfAFullHostedEtcdIsNotWrittenAgain).
	roleAPI := cs.RbacV1().ClusterRoles()
	for _, want := range roles {
		have, err := roleAPI.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := roleAPI.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create ClusterRole %s: %w", want.Name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("get ClusterRole %s: %w", want.Name, err)
		}
		if equality.Semantic.DeepEqual(have.Rules, want.Rules) {
			continue
		}
		have.Rules = want.Rules
		if _, err := roleAPI.Update(ctx, have, metav1.UpdateOptions{}); err != nil { // conditional on its resourceVersion
			return fmt.Errorf("update ClusterRole %s: %w", want.Name, err)
		}
	}
	bindingAPI := cs.RbacV1().ClusterRoleBindings()
	for _, want := range bindings {
		have, err := bindingAPI.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := bindingAPI.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create ClusterRoleBinding %s: %w", want.Name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("get ClusterRoleBinding %s: %w", want.Name, err)
		}
		if have.RoleRef != want.RoleRef { // roleRef is immutable: replace the binding
			if err := bindingAPI.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID}}); err != nil {
				return fmt.Errorf("replace ClusterRoleBinding %s: %w", want.Name, err)
			}
			if _, err := bindingAPI.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create ClusterRoleBinding %s: %w", want.Name, err)
			}
			continue
		}
		if equality.Semantic.DeepEqual(have.Subjects, want.Subjects) {
			continue
		}
		have.Subjects = want.Subjects
		if _, err := bindingAPI.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update ClusterRoleBinding %s: %w", want.Name, err)
		}
	}
	return nil
}

func binding(name, role, group string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
}

// readOnlyRules lists, per API group the apiserver serves, the resources that can be read
// (get, list or watch), leaving out core Secrets: one rule per group, sorted, so the role is
// the same on every run.
func readOnlyRules(cs kubernetes.Interface) ([]rbacv1.PolicyRule, error) {
	lists, err := cs.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover the hosted apiserver's resources: %w", err)
	}
	byGroup := map[string]sets.Set[string]{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name == "secrets") {
				continue
			}
			if !slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "get" || v == "list" || v == "watch" }) {
				continue
			}
			if byGroup[gv.Group] == nil {
				byGroup[gv.Group] = sets.New[string]()
			}
			byGroup[gv.Group].Insert(r.Name)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: sets.List(byGroup[g]), Verbs: []string{"get", "list", "watch"}})
	}
	return rules, nil
}
