package server

import (
	"testing"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
)

// Every method of the API asks for an operation a group grants: a method
// added to the API without one would be let through to any token.
func TestEveryMethodHasAnOperation(t *testing.T) {
	sd := routerv1.SkillRouter_ServiceDesc
	for _, m := range sd.Methods {
		full := "/" + sd.ServiceName + "/" + m.MethodName
		op, ok := Methods[full]
		if !ok {
			t.Errorf("%s has no operation", full)
			continue
		}
		if _, ok := auth.GroupOf(op); !ok {
			t.Errorf("%s asks for %s, which no group grants", full, op)
		}
	}
	if len(sd.Streams) > 0 {
		t.Errorf("the API has streams %v; name their operations too", sd.Streams)
	}
}
