package logattr

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
)

// names are the shared attribute names with the other spellings seen for each, beyond those
// that differ only in case, '_' or '-' (normalize): a word alone ("operation") also names the
// ID in logs, and an HTTP header or gRPC metadata name is not an attribute name.
var names = map[string][]string{
	KeyCorrelationRequestID: {"correlationID", "correlation", "x-ms-correlation-request-id"},
	KeyClientRequestID:      {"x-ms-client-request-id"},
	KeyRequestID:            {"x-ms-request-id"},
	KeyResourceID:           {"resource", "armResourceID"},
	KeySubscriptionID:       {"subscription"},
	KeyOperationID:          {"operation"},
	KeyClusterID:            nil,
	KeyNodePoolID:           nil,
	KeyExternalAuthID:       nil,
	KeyCredentialID:         nil,
	KeyRevocationID:         nil,
	KeyUpgradePolicyID:      nil,
	KeySessionID:            nil,
	KeyPerson:               {"srePerson"},
	KeyApprover:             {"sreApprover"},
	KeyAccess:               {"sreAccess"},
}

// canonical maps every normalized spelling to its attribute name.
var canonical = func() map[string]string {
	m := map[string]string{}
	for name, others := range names {
		m[normalize(name)] = name
		for _, o := range others {
			m[normalize(o)] = name
		}
	}
	return m
}()

func normalize(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// Finding is a slog call that spells a shared attribute another way.
type Finding struct {
	Pos  token.Position
	Got  string
	Want string
}

// loggerMethods are the *slog.Logger methods that take key-value pairs, with the number of
// arguments before the first pair (ctx, level, message).
var loggerMethods = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "With": 0,
}

// attrFuncs are the slog functions whose first argument is an attribute name.
var attrFuncs = map[string]bool{
	"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true, "Bool": true,
	"Time": true, "Duration": true, "Any": true, "Group": true,
}

// CheckFile reports the string literals in f's slog calls that spell a shared attribute name
// another way. Without type information, a logger call is recognised by its method name;
// calls on t, b and tb (testing) and on the errors and strings packages are not logger calls.
// Every string literal among a call's key-value arguments is checked, so a value that is
// literally "cluster_id" is reported too: no such value is logged.
func CheckFile(fset *token.FileSet, f *ast.File) []Finding {
	var out []Finding
	check := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return
		}
		if want, ok := canonical[normalize(s)]; ok && s != want {
			out = append(out, Finding{Pos: fset.Position(lit.Pos()), Got: s, Want: want})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		recv, _ := sel.X.(*ast.Ident)
		if recv != nil && recv.Name == "slog" && attrFuncs[sel.Sel.Name] && len(call.Args) > 0 {
			check(call.Args[0])
			return true
		}
		skip, ok := loggerMethods[sel.Sel.Name]
		if !ok || (recv != nil && (recv.Name == "t" || recv.Name == "b" || recv.Name == "tb" || recv.Name == "errors" || recv.Name == "strings")) {
			return true
		}
		for i := skip; i < len(call.Args); i++ {
			check(call.Args[i])
		}
		return true
	})
	return out
}
