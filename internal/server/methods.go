package server

import (
	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
)

// Methods names the operation each method of the API asks for: the gRPC
// front's half of auth's one table of operations and groups (give it to
// auth.Guard.Methods). Health is not here: it is always open.
var Methods = map[string]auth.Operation{
	routerv1.SkillRouter_ListSkills_FullMethodName:                   auth.OpListSkills,
	routerv1.SkillRouter_GetSkill_FullMethodName:                     auth.OpGetSkill,
	routerv1.SkillRouter_Status_FullMethodName:                       auth.OpStatus,
	routerv1.SkillRouter_Match_FullMethodName:                        auth.OpMatch,
	routerv1.SkillRouter_Load_FullMethodName:                         auth.OpLoad,
	routerv1.SkillRouter_AuthorizeExec_FullMethodName:                auth.OpAuthorizeExec,
	routerv1.SkillRouter_ReportExecResult_FullMethodName:             auth.OpReportExecResult,
	routerv1.SkillRouter_CallTool_FullMethodName:                     auth.OpCallTool,
	routerv1.SkillRouter_Reindex_FullMethodName:                      auth.OpReindex,
	"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo":      auth.OpDescribeAPI,
	"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": auth.OpDescribeAPI,
}
