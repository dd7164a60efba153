package frontend

import (
	"net/http"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// subscriptionAPIVersion is the version ARM uses for subscription lifecycle notifications.
const subscriptionAPIVersion = "2.0"

// apiVersionMiddleware requires api-version (400 InvalidParameter) and a served one (400
// InvalidResourceType).
func (s *Server) apiVersionMiddleware(o routeOptions) middleware {
	return func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
		v := r.URL.Query().Get("api-version")
		if v == "" {
			s.report(w, r, cloudError(http.StatusBadRequest, "InvalidParameter", "api-version",
				"The api-version query parameter (?api-version=) is required for all requests."))
			return
		}
		ri := info(r)
		ri.apiVersion = v
		if o.subscriptionAPI {
			if v != subscriptionAPIVersion {
				s.report(w, r, cloudError(http.StatusBadRequest, "InvalidResourceType", "api-version",
					"The api-version '%s' is not supported for subscriptions; use '%s'.", v, subscriptionAPIVersion))
				return
			}
			next(w, r)
			return
		}
		ver, ok := api.Lookup(v)
		if !ok {
			s.report(w, r, cloudError(http.StatusBadRequest, "InvalidResourceType", "api-version",
				"The resource type could not be found in the namespace 'Microsoft.RedHatOpenShift' for api version '%s'. The supported api-versions are '%s'.",
				v, servedVersions()))
			return
		}
		ri.version = ver.WithRoleSets(s.cfg.RoleSets)
		next(w, r)
	}
}
